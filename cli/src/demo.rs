//! `folio demo`: a store built from the sample corpus in `demo/` (compiled into the
//! binary, so it runs anywhere with no downloads), searched as different principals.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::common::open_store;
use crate::output::err;
use crate::output::print_response;
use folio::chunk::SourceFormat;
use folio::document::Document;
use folio::query::SearchRequest;
use folio::store::{Access, Store};

const MANIFEST: &str = include_str!("../../demo/manifest.json");

/// The corpus files, by the name the manifest uses.
const FILES: &[(&str, &str)] = &[
    ("handbook.md", include_str!("../../demo/handbook.md")),
    (
        "office-it-guide.md",
        include_str!("../../demo/office-it-guide.md"),
    ),
    (
        "deploy-runbook.md",
        include_str!("../../demo/deploy-runbook.md"),
    ),
    (
        "incident-2024-03-postmortem.md",
        include_str!("../../demo/incident-2024-03-postmortem.md"),
    ),
    (
        "expense-policy.md",
        include_str!("../../demo/expense-policy.md"),
    ),
    (
        "budget-q3-2024.md",
        include_str!("../../demo/budget-q3-2024.md"),
    ),
];

#[derive(Deserialize)]
struct Entry {
    file: String,
    title: String,
    acl: Vec<String>,
}

/// The searches the demo shows: a query, and who asks.
const SEARCHES: &[(&str, &[&str])] = &[
    ("how do I roll back a bad deploy", &["engineering"]),
    ("how do I roll back a bad deploy", &[]),
    ("what is the hotel limit per night", &["finance"]),
    ("what is the hotel limit per night", &["engineering"]),
    ("how many vacation days do I get", &[]),
];

fn corpus() -> Result<Vec<Document>, String> {
    let manifest: Vec<Entry> =
        serde_json::from_str(MANIFEST).map_err(|e| format!("demo manifest: {e}"))?;
    manifest
        .into_iter()
        .map(|entry| {
            let text = FILES
                .iter()
                .find(|(name, _)| *name == entry.file)
                .map(|(_, text)| *text)
                .ok_or_else(|| {
                    format!("demo manifest names `{}`, which is not bundled", entry.file)
                })?;
            let mut doc =
                Document::new(entry.file.clone(), SourceFormat::Markdown, text).with_acl(entry.acl);
            doc.title = entry.title;
            doc.source_uri = format!("demo/{}", entry.file);
            Ok(doc)
        })
        .collect()
}

/// Whether the store at `path` holds the demo corpus and nothing else: the only kind of
/// file the demo replaces.
fn made_by_demo(path: &Path) -> bool {
    let Ok(store) = open_store(path, Store::builder()) else {
        return false;
    };
    let Ok(ids) = store.document_ids() else {
        return false;
    };
    !ids.is_empty()
        && ids.iter().all(|id| {
            FILES.iter().any(|(name, _)| name == id)
                && store
                    .document(id)
                    .ok()
                    .flatten()
                    .is_some_and(|doc| doc.source_uri == format!("demo/{id}"))
        })
}

pub(crate) fn run(store_path: Option<PathBuf>) -> Result<(), String> {
    let path = match store_path {
        Some(path) => path,
        None => std::env::temp_dir().join("folio-demo.folio"),
    };
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > 0) {
        if !made_by_demo(&path) {
            return Err(format!(
                "{} exists and was not made by `folio demo`; it is left as it is (pass \
                 another --store path)",
                path.display()
            ));
        }
        std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let store = Store::builder().create(true).open(&path).map_err(err)?;
    let docs = corpus()?;
    println!(
        "folio demo: {} Markdown documents, two principals (engineering, finance)\n",
        docs.len()
    );
    for doc in &docs {
        let who = if doc.acl.is_empty() {
            "public".to_string()
        } else {
            doc.acl.join(", ")
        };
        println!("  {:<34} {:<48} {who}", doc.doc_id, doc.title);
    }
    let mut batch = store.batch();
    for doc in docs {
        batch.upsert(doc);
    }
    let receipt = batch.commit().map_err(err)?;
    let stats = store.stats().map_err(err)?;
    println!(
        "\ningested into {}: {} chunks, {} bytes, {}\n",
        path.display(),
        receipt.children,
        stats.file_bytes,
        crate::output::versions_line(&crate::output::serving_versions(&store)?)
    );
    for (query, principals) in SEARCHES {
        let who = if principals.is_empty() {
            "anyone (public only)".to_string()
        } else {
            principals.join(", ")
        };
        println!("─── \"{query}\" as {who}");
        let request = SearchRequest::text(*query)
            .access(Access::principals(principals.iter().copied()))
            .k(3);
        print_response(&store.search(&request).map_err(err)?);
        println!();
    }
    println!(
        "Try it yourself: cargo run --release -- search {} \"QUERY\" --as engineering",
        path.display()
    );
    Ok(())
}
