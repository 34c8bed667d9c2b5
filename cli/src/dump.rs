//! Copies of what a store holds, each from one committed state while a writer may run:
//! `folio dump STORE [--out FILE]`, every document as one JSON Lines record (id, title,
//! source, format, text, ACL, dates, metadata) that `folio ingest` reads back; `folio backup
//! STORE DEST`, the whole store (versions, tags, aliases, request log) as a new file; `folio
//! recover DAMAGED NEW`, what a damaged store still holds, into a new store.

use std::io::{BufWriter, Write};
use std::ops::ControlFlow;
use std::path::Path;

use folio::store::Store;

use crate::common::{open_untouched, EmbedArgs};
use crate::output::{err, CliResult};

/// Writes the dump to `out` (replaced only once every record is written: a failed dump
/// leaves no half file), or to standard output; the count goes to standard error.
pub(crate) fn dump(store: &Path, out: Option<&Path>) -> CliResult {
    let store = open_untouched(store)?;
    let count = match out {
        None => write_records(&store, std::io::stdout().lock())?,
        Some(path) => {
            // Written beside the target and renamed over it: one filesystem, one rename.
            let mut partial = path.as_os_str().to_owned();
            partial.push(format!(".partial-{}", std::process::id()));
            let partial = std::path::PathBuf::from(partial);
            let cannot = |e: std::io::Error| format!("cannot write {}: {e}", partial.display());
            let written = std::fs::File::create(&partial)
                .map_err(cannot)
                .and_then(|file| {
                    let count = write_records(&store, &file)?;
                    file.sync_all().map_err(cannot)?;
                    Ok(count)
                });
            let renamed = written.and_then(|count| {
                std::fs::rename(&partial, path)
                    .map(|()| count)
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))
            });
            if renamed.is_err() {
                let _ = std::fs::remove_file(&partial);
            }
            renamed?
        }
    };
    eprintln!("{count} documents dumped");
    Ok(())
}

fn write_records(store: &folio::store::Store, to: impl Write) -> Result<usize, String> {
    let mut to = BufWriter::new(to);
    let mut count = 0;
    let mut failed = None;
    store
        .for_each_document(|doc| {
            let line = serde_json::to_writer(&mut to, &doc)
                .and_then(|()| to.write_all(b"\n").map_err(serde_json::Error::io));
            match line {
                Ok(()) => {
                    count += 1;
                    ControlFlow::Continue(())
                }
                Err(e) => {
                    failed = Some(e);
                    ControlFlow::Break(())
                }
            }
        })
        .map_err(err)?;
    if let Some(e) = failed {
        return Err(format!("cannot write the dump: {e}"));
    }
    to.flush()
        .map_err(|e| format!("cannot write the dump: {e}"))?;
    Ok(count)
}

/// `folio backup STORE DEST`: the whole store, as committed now, copied to the new file DEST.
pub(crate) fn backup(store: &Path, dest: &Path, json: bool) -> CliResult {
    let report = open_untouched(store)?.backup(dest).map_err(err)?;
    if json {
        return crate::output::print_json(&report);
    }
    println!(
        "{}: {} rows of {} tables, {} bytes",
        dest.display(),
        report.rows,
        report.tables,
        report.bytes
    );
    Ok(())
}

/// Copies what `damaged` still holds into the new store `dest`; prints what was copied (the
/// history too when the store was copied whole) and, one a line, what could not be read.
pub(crate) fn recover(damaged: &Path, dest: &Path, json: bool, embed: &EmbedArgs) -> CliResult {
    let (options, _) = embed.options(Store::builder())?;
    let report = Store::recover(damaged, dest, options).map_err(err)?;
    if json {
        return crate::output::print_json(&report);
    }
    println!(
        "{}: {} documents, indexes {}",
        dest.display(),
        report.documents,
        report.indexes.join(", ")
    );
    if report.whole {
        println!("  copied whole, history included");
        for (index, versions) in &report.versions {
            let numbers: Vec<String> = versions.iter().map(u64::to_string).collect();
            println!("  versions of {index}: {}", numbers.join(", "));
        }
        if !report.tags.is_empty() {
            println!("  tags: {}", report.tags.join(", "));
        }
        if !report.aliases.is_empty() {
            println!("  aliases: {}", report.aliases.join(", "));
        }
    }
    for what in &report.lost {
        println!("  lost: {what}");
    }
    Ok(())
}
