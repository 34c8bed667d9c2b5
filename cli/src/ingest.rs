//! `folio ingest`: add, replace or leave documents as they are, and say which.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::common::{check_embedders, report_lines, EmbedArgs};
use crate::output::{err, CliResult};
use crate::{output, progress};
use folio::document::{principals, Document};
use folio::embed::TruncationReport;
use folio::input::{FileRoot, InputError, Outside};
use folio::store::{OpenError, Progress, Store};

/// What an ingest did, as `--json` prints it.
#[derive(Serialize)]
struct IngestReport {
    store: PathBuf,
    /// Documents that were not in the store.
    added: usize,
    /// Stored documents whose text, fields or ACL changed.
    replaced: usize,
    /// Stored documents given again exactly as they are (not rewritten).
    unchanged: usize,
    /// Documents deleted because their file is gone (`--prune`).
    pruned: Vec<String>,
    /// The folder file ids are relative to (see docs/cli.md, "Document ids").
    root: PathBuf,
    /// Files found in the folders given that lie outside the root: not read.
    outside_root: Vec<PathBuf>,
    /// Child chunks written, over all indexes.
    chunks: usize,
    /// Replaced documents whose ACL changed: who may see them now differs.
    acl_changes: Vec<AclChange>,
    /// Stored documents given without an ACL of their own that kept their stored one
    /// (neither --acl nor --public was given).
    acl_kept: Vec<String>,
    /// Ids the input held more than once (the last one was kept).
    repeated: Vec<String>,
    /// The version each index now serves (after any automatic merge).
    versions: BTreeMap<String, u64>,
    /// Per commit and index with a model: the chunks' counts in its tokens, and every chunk
    /// above its limit.
    tokens: Vec<TruncationReport>,
    /// Nothing was embedded or written: the figures say what an ingest would do.
    dry_run: bool,
}

#[derive(Serialize)]
struct AclChange {
    doc_id: String,
    /// Principals before and after; empty = public.
    before: Vec<String>,
    after: Vec<String>,
}

/// How `folio ingest` reads and writes.
pub(crate) struct Options {
    /// Every file read as this format.
    pub(crate) format: Option<folio::input::FileKind>,
    /// The folder file ids are relative to (`--root`); recorded in the store.
    pub(crate) root: Option<PathBuf>,
    /// Who may see the documents (empty: their own ACLs, or the stored ones, or public).
    pub(crate) acl: Vec<String>,
    /// Every document public, restricted ones included.
    pub(crate) public: bool,
    /// Delete the documents of files gone from the folders given.
    pub(crate) prune: bool,
    /// Documents per commit.
    pub(crate) batch: usize,
    /// Cut and count only: nothing embedded or written.
    pub(crate) dry_run: bool,
    pub(crate) json: bool,
}

pub(crate) fn run(
    path: PathBuf,
    paths: &[PathBuf],
    options: Options,
    embed: &EmbedArgs,
) -> CliResult {
    let Options {
        format,
        root,
        acl,
        public,
        prune,
        batch: batch_size,
        dry_run,
        json,
    } = options;
    let folder = store_folder(&path)?;
    // An existing store is opened first, for the root its file ids are relative to; a new one
    // is created only once everything is read: a file refused means nothing written.
    let existing = match (has_store(&path), dry_run) {
        (false, _) => None,
        (true, false) => Some(embed.open(&path, Store::builder())?),
        (true, true) => Some(embed.open(&path, Store::builder().read_only(true))?),
    };
    let root = choose_root(existing.as_ref(), root.as_deref(), &folder)?;
    let read = folio::input::read_paths(paths, &root.root, format).map_err(refused)?;
    // Only files have ids relative to the root: a note about it is for ingests of files.
    if let Some(note) = root.note.as_ref().filter(|_| read.files > 0) {
        eprintln!("{note}");
    }
    let root_shown = output::escape(&root.root.path.display().to_string());
    for file in &read.outside_root {
        eprintln!(
            "warning: {} is outside {root_shown}, the folder file ids are relative to; not \
             read ({ROOT_HINT})",
            output::escape(&file.display().to_string()),
        );
    }
    if read.documents.is_empty() && !read.outside_root.is_empty() {
        return Err(format!(
            "every file found is outside {root_shown}, the folder file ids are relative to; \
             nothing was ingested ({ROOT_HINT})"
        ));
    }
    if read.documents.is_empty() {
        return Err(
            "no documents found (expected .md, .markdown, .txt, .html, .csv, .tsv or .jsonl)"
                .into(),
        );
    }
    let (mut docs, repeated) = last_of_each(read.documents);
    if !acl.is_empty() || public {
        for doc in &mut docs {
            doc.acl = acl.to_vec();
        }
    }
    let store = match existing {
        Some(store) => store,
        None if dry_run => embed.open_in_memory()?,
        None => embed.open(&path, Store::builder().create(true))?,
    };
    check_embedders(&store)?;
    if root.record && read.files > 0 && !dry_run {
        store.set_file_root(&root.root).map_err(err)?;
    }
    let bar = progress::Bar::new();
    let mut report = IngestReport {
        store: path.clone(),
        added: 0,
        replaced: 0,
        unchanged: 0,
        pruned: Vec::new(),
        root: root.root.path.clone(),
        outside_root: read.outside_root.clone(),
        chunks: 0,
        acl_changes: Vec::new(),
        acl_kept: Vec::new(),
        repeated,
        versions: BTreeMap::new(),
        tokens: Vec::new(),
        dry_run,
    };
    if prune {
        report.pruned = gone(&store, paths, &docs, &read.outside_root)?;
    }
    let changed = compare(&store, docs, !acl.is_empty() || public, &mut report, &bar)?;
    for batch_docs in changed.chunks(batch_size.max(1)) {
        let mut batch = store.batch();
        for doc in batch_docs {
            batch.upsert(doc.clone());
        }
        let truncation = if dry_run {
            let planned = batch.dry_run_with(&bar).map_err(err)?;
            report.chunks += planned.children.values().sum::<usize>();
            planned.truncation
        } else {
            let receipt = batch.commit_with(&bar).map_err(err)?;
            report.chunks += receipt.children;
            if let Some(e) = receipt.merge_error {
                bar.println(&format!("warning: {e}"));
            }
            receipt.truncation
        };
        // On stderr even without a terminal: truncation is never silent.
        for line in truncation.iter().flat_map(report_lines) {
            bar.suspend(|| eprintln!("{line}"));
        }
        report.tokens.extend(truncation);
    }
    if !report.pruned.is_empty() && !dry_run {
        let mut batch = store.batch();
        for id in &report.pruned {
            batch.delete(id);
        }
        batch.commit_with(&bar).map_err(err)?;
    }
    bar.finish();
    if let Some(note) = embed.uncounted().filter(|_| report.chunks > 0) {
        eprintln!("{note}");
    }
    if !dry_run {
        report.versions = output::serving_versions(&store)?;
    }
    for id in &report.repeated {
        eprintln!(
            "warning: `{}` appears more than once in the input; the last one was kept",
            output::escape(id)
        );
    }
    for id in &report.acl_kept {
        eprintln!(
            "`{}` keeps who may see it (it was given no ACL); --acl or --public changes that",
            output::escape(id)
        );
    }
    let now = if dry_run { "would be" } else { "now" };
    for change in &report.acl_changes {
        eprintln!(
            "warning: `{}` was visible to {}, {now} to {}",
            output::escape(&change.doc_id),
            who(&change.before),
            who(&change.after)
        );
    }
    if json {
        return output::print_json(&report);
    }
    if dry_run {
        println!(
            "{} (dry run, nothing written): {} would be added, {} replaced, {} unchanged ({} chunks)",
            path.display(),
            report.added,
            report.replaced,
            report.unchanged,
            report.chunks,
        );
        return Ok(());
    }
    let pruned = if prune {
        format!(", {} pruned", report.pruned.len())
    } else {
        String::new()
    };
    println!(
        "{}: {} added, {} replaced, {} unchanged{pruned} ({} chunks written); {}",
        path.display(),
        report.added,
        report.replaced,
        report.unchanged,
        report.chunks,
        output::versions_line(&report.versions)
    );
    Ok(())
}

/// The stored documents read from a file under one of the folders of `paths` (by their
/// `file://` source) that none of `docs` (what was read now) comes from and that is not one
/// of `outside_root` (files still there, left out as outside the root): their files are
/// gone, or no longer read.
fn gone(
    store: &Store,
    paths: &[PathBuf],
    docs: &[Document],
    outside_root: &[PathBuf],
) -> Result<Vec<String>, String> {
    let folders: Vec<PathBuf> = paths
        .iter()
        .filter(|p| p.is_dir())
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    let mut present: BTreeSet<PathBuf> = docs
        .iter()
        .filter_map(|d| d.source_uri.strip_prefix("file://").map(PathBuf::from))
        .collect();
    present.extend(
        outside_root
            .iter()
            .filter_map(|p| std::fs::canonicalize(p).ok()),
    );
    Ok(stored_files(store)?
        .into_iter()
        .filter(|(_, file)| folders.iter().any(|f| file.starts_with(f)) && !present.contains(file))
        .map(|(id, _)| id)
        .collect())
}

/// The stored documents read from a file (a `file://` source), with that file's path.
fn stored_files(store: &Store) -> Result<Vec<(String, PathBuf)>, String> {
    let mut out = Vec::new();
    for id in store.document_ids().map_err(err)? {
        let Some(stored) = store.document(&id).map_err(err)? else {
            continue;
        };
        if let Some(file) = stored.source_uri.strip_prefix("file://") {
            out.push((id, PathBuf::from(file)));
        }
    }
    Ok(out)
}

/// The root file ids are relative to in this ingest.
struct Root {
    root: FileRoot,
    /// It is not the one the store records.
    record: bool,
    /// What to tell the user about it.
    note: Option<String>,
}

/// The root of this ingest: `--root` when given; else the one the store records while that
/// folder exists; else, for a store of older folio (file documents, no recorded root), the
/// store's folder, files outside it keeping their absolute ids; else the current folder.
fn choose_root(
    store: Option<&Store>,
    given: Option<&Path>,
    store_folder: &Path,
) -> Result<Root, String> {
    let recorded = match store {
        Some(store) => store.file_root().map_err(err)?,
        None => None,
    };
    let legacy = match (store, &recorded) {
        (Some(store), None) => !stored_files(store)?.is_empty(),
        _ => false,
    };
    let outside = match &recorded {
        Some(recorded) => recorded.outside,
        None if legacy => Outside::AbsoluteId,
        None => Outside::Refused,
    };
    let (path, note) = match (given, &recorded) {
        (Some(given), _) => (real_folder(given).map_err(|e| format!("--root {e}"))?, None),
        (None, Some(recorded)) if recorded.path.is_dir() => (recorded.path.clone(), None),
        (None, Some(recorded)) => {
            let cwd = current_folder()?;
            let note = format!(
                "note: {}, the folder the store's file ids were relative to, is gone; they are \
                 now relative to the current folder, {}",
                recorded.path.display(),
                cwd.display()
            );
            (cwd, Some(note))
        }
        (None, None) if legacy => {
            let folder = real_folder(store_folder)?;
            let note = format!(
                "note: this store's file ids were made relative to its folder, {}, which is \
                 now recorded as the folder they are relative to (files outside it keep \
                 their absolute paths as ids)",
                folder.display()
            );
            (folder, Some(note))
        }
        (None, None) => (current_folder()?, None),
    };
    let root = FileRoot { path, outside };
    let note = match &recorded {
        Some(recorded) if recorded.path != root.path && note.is_none() => Some(format!(
            "note: file ids are now relative to {} (they were relative to {})",
            root.path.display(),
            recorded.path.display()
        )),
        _ => note,
    };
    Ok(Root {
        record: recorded.as_ref() != Some(&root),
        root,
        note,
    })
}

/// `folder`'s real path; refused unless it is a folder.
fn real_folder(folder: &Path) -> Result<PathBuf, String> {
    match std::fs::canonicalize(folder) {
        Ok(real) if real.is_dir() => Ok(real),
        Ok(_) => Err(format!("{}: not a folder", folder.display())),
        Err(e) => Err(format!("{}: {e}", folder.display())),
    }
}

fn current_folder() -> Result<PathBuf, String> {
    std::env::current_dir()
        .and_then(std::fs::canonicalize)
        .map_err(|e| format!("the current folder: {e}"))
}

/// What to do about a file outside the root.
const ROOT_HINT: &str = "--root DIR makes file ids relative to DIR, a folder holding them";

/// Why nothing was ingested: the reading error, with what to do about a file outside the root.
fn refused(e: InputError) -> String {
    match e {
        InputError::OutsideRoot { .. } => format!("{e}; nothing was ingested ({ROOT_HINT})"),
        e => format!("{e}; nothing was ingested"),
    }
}

/// Whether `path` holds a store to compare against (a missing or zero-byte file does not).
fn has_store(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() > 0)
}

/// The folder that holds the store (it must exist; older folio made file ids relative to it).
fn store_folder(store: &Path) -> Result<PathBuf, String> {
    let folder = match store.parent() {
        Some(f) if !f.as_os_str().is_empty() => f.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !folder.is_dir() {
        return Err(err(OpenError::MissingFolder {
            path: store.to_path_buf(),
            folder,
        }));
    }
    Ok(folder)
}

/// Each id once, at the place of its last occurrence, and the ids that repeated.
fn last_of_each(docs: Vec<Document>) -> (Vec<Document>, Vec<String>) {
    let mut last: BTreeMap<String, usize> = BTreeMap::new();
    for (i, doc) in docs.iter().enumerate() {
        last.insert(doc.doc_id.clone(), i);
    }
    let mut repeated = BTreeSet::new();
    let kept = docs
        .into_iter()
        .enumerate()
        .filter_map(|(i, doc)| {
            if last.get(&doc.doc_id) == Some(&i) {
                Some(doc)
            } else {
                repeated.insert(doc.doc_id.clone());
                None
            }
        })
        .collect();
    (kept, repeated.into_iter().collect())
}

/// Sorts `docs` into added, replaced and unchanged against the store; returns the ones to
/// write. Without `acl_given` (--acl or --public), a stored document given without an ACL
/// keeps its stored one.
fn compare(
    store: &Store,
    docs: Vec<Document>,
    acl_given: bool,
    report: &mut IngestReport,
    bar: &progress::Bar,
) -> Result<Vec<Document>, String> {
    bar.stage("compare", docs.len() as u64);
    let mut changed = Vec::with_capacity(docs.len());
    for mut doc in docs {
        bar.advance(1);
        let Some(stored) = store.document(&doc.doc_id).map_err(err)? else {
            report.added += 1;
            changed.push(doc);
            continue;
        };
        let keep = !acl_given && doc.inherit_acl(&stored);
        if doc.unchanged_from(&stored) {
            report.unchanged += 1;
            continue;
        }
        report.replaced += 1;
        if keep {
            report.acl_kept.push(doc.doc_id.clone());
        }
        let (before, after) = (principals(&stored.acl), principals(&doc.acl));
        if before != after {
            report.acl_changes.push(AclChange {
                doc_id: doc.doc_id.clone(),
                before,
                after,
            });
        }
        changed.push(doc);
    }
    Ok(changed)
}

fn who(principals: &[String]) -> String {
    if principals.is_empty() {
        "everyone (public)".to_string()
    } else {
        output::escape(&principals.join(", "))
    }
}
