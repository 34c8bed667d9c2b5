//! `folio ingest`: add, replace or leave documents as they are, and say which.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::common::{check_embedders, report_lines, EmbedArgs};
use crate::output::{err, CliResult};
use crate::{output, progress};
use folio::document::{principals, Document};
use folio::embed::TruncationReport;
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
        acl,
        public,
        prune,
        batch: batch_size,
        dry_run,
        json,
    } = options;
    let folder = store_folder(&path)?;
    // Everything is read before the store is opened: a file refused means nothing written.
    let docs = folio::input::read_paths(paths, &folder, format)
        .map_err(|e| format!("{e}; nothing was ingested"))?;
    if docs.is_empty() {
        return Err(
            "no documents found (expected .md, .markdown, .txt, .html, .csv, .tsv or .jsonl)"
                .into(),
        );
    }
    let (mut docs, repeated) = last_of_each(docs);
    if !acl.is_empty() || public {
        for doc in &mut docs {
            doc.acl = acl.to_vec();
        }
    }
    let store = match (dry_run, has_store(&path)) {
        (false, _) => embed.open(&path, Store::builder().create(true))?,
        (true, true) => embed.open(&path, Store::builder().read_only(true))?,
        (true, false) => embed.open_in_memory()?,
    };
    check_embedders(&store)?;
    let bar = progress::Bar::new();
    let mut report = IngestReport {
        store: path.clone(),
        added: 0,
        replaced: 0,
        unchanged: 0,
        pruned: Vec::new(),
        chunks: 0,
        acl_changes: Vec::new(),
        acl_kept: Vec::new(),
        repeated,
        versions: BTreeMap::new(),
        tokens: Vec::new(),
        dry_run,
    };
    if prune {
        report.pruned = gone(&store, paths, &docs)?;
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
/// `file://` source) that none of `docs` (what was read now) comes from: their files are
/// gone, or no longer read.
fn gone(store: &Store, paths: &[PathBuf], docs: &[Document]) -> Result<Vec<String>, String> {
    let folders: Vec<PathBuf> = paths
        .iter()
        .filter(|p| p.is_dir())
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    let read: BTreeSet<&str> = docs.iter().map(|d| d.source_uri.as_str()).collect();
    let mut out = Vec::new();
    for id in store.document_ids().map_err(err)? {
        let Some(stored) = store.document(&id).map_err(err)? else {
            continue;
        };
        let Some(file) = stored.source_uri.strip_prefix("file://") else {
            continue;
        };
        let under = folders.iter().any(|f| Path::new(file).starts_with(f));
        if under && !read.contains(stored.source_uri.as_str()) {
            out.push(id);
        }
    }
    Ok(out)
}

/// Whether `path` holds a store to compare against (a missing or zero-byte file does not).
fn has_store(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() > 0)
}

/// The folder that holds the store: file ids are relative to it.
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
