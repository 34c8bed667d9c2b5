//! What a search node reads, published: a store of 60 documents (three principals', some
//! public) published to milvus-lite with its documents collection (one record per
//! document, complete) and the prefix's catalog; the records' bytes measured against the
//! texts (the figure of `docs/milvus.md`), and a publish again writing nothing new.

use crate::common;
use crate::remote::{flat, Rng};

use std::collections::BTreeSet;

use folio::filter::{parse_date, MetadataValue};
use folio::store::NoProgress;
use folio::{Document, SourceFormat, Store};
use folio_milvus::{catalog_name, documents_name, Remote};

const WORDS: [&str; 20] = [
    "invoice", "refund", "card", "travel", "visa", "laptop", "printer", "password", "badge",
    "parking", "salary", "pension", "holiday", "hotel", "contract", "vendor", "audit", "budget",
    "server", "backup",
];
const DAY_MS: i64 = 86_400_000;

/// `n` words drawn by a linear congruential step over `rng`'s state.
fn words(rng: &mut Rng, n: usize) -> String {
    (0..n)
        .map(|_| {
            rng.0 = rng
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            WORDS[((rng.0 >> 33) % WORDS.len() as u64) as usize]
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Document `i`: two sections of several paragraphs (children smaller than a section, so
/// windows and sections are units of their own), public or seen by one or two principals,
/// with a team and a date.
fn document(rng: &mut Rng, i: usize) -> Document {
    let paragraph = |rng: &mut Rng| format!("{}.", words(rng, 40));
    let text = format!(
        "# Guide {i}\n\n## {}\n\n{}\n\n{}\n\n{}\n\n## {}\n\n{}\n\n{}\n",
        words(rng, 2),
        paragraph(rng),
        paragraph(rng),
        paragraph(rng),
        words(rng, 2),
        paragraph(rng),
        paragraph(rng),
    );
    let acl: Vec<&str> = match i % 5 {
        0 => vec![],
        1 => vec!["alice"],
        2 => vec!["bob", "carol"],
        3 => vec!["carol"],
        _ => vec!["alice", "bob"],
    };
    Document::new(format!("doc-{i}"), SourceFormat::Markdown, text)
        .with_acl(acl)
        .with_metadata(
            "team",
            MetadataValue::String(["red", "blue"][i % 2].to_string()),
        )
        .with_metadata(
            "due",
            MetadataValue::Date(parse_date("2024-01-01").unwrap() + (i % 30) as i64 * DAY_MS),
        )
}

/// The test's store at `path`: 60 documents, one version (returned).
fn store_at(path: &std::path::Path) -> (Store, u64) {
    let store = Store::builder().create(true).open(path).unwrap();
    let mut rng = Rng(33);
    let mut batch = store.batch();
    for i in 0..60 {
        batch.upsert(document(&mut rng, i));
    }
    let version = batch.commit().unwrap().versions["default"];
    (store, version)
}

#[test]
fn what_a_node_reads_is_published() {
    let dir = tempfile::tempdir().unwrap();
    let (store, v1) = store_at(&dir.path().join("kb.folio"));
    let server = common::LiteServer::start();
    let remote = Remote::connect(&server.uri()).unwrap();
    remote
        .publish(&store, &format!("default@{v1}"), &flat(), &NoProgress)
        .unwrap();
    let documents = documents_name(&format!("folio_default_v{v1}"));
    assert!(remote.is_complete(&documents).unwrap());
    assert!(remote.has_collection(&catalog_name("folio")).unwrap());
    published_bytes(&store, &server.uri(), v1);
    // A publish again writes nothing new: the same rows.
    remote
        .publish(&store, &format!("default@{v1}"), &flat(), &NoProgress)
        .unwrap();
    assert_eq!(remote.rows(&documents).unwrap(), 60);
}

/// What a node reads costs: the documents collection's records against the documents'
/// texts, and the catalog. Printed (`--nocapture`) for `docs/milvus.md`, "Search nodes".
fn published_bytes(store: &Store, uri: &str, version: u64) {
    let export = store.export(&format!("default@{version}")).unwrap();
    let mut texts = 0usize;
    let mut docs = BTreeSet::new();
    let snapshot = store.snapshot().unwrap();
    let (state, _) = snapshot.resolve(&format!("default@{version}")).unwrap();
    for n in export.children().iter() {
        let child = snapshot.child(&state, n).unwrap();
        if docs.insert(child.rev) {
            texts += snapshot.doc(child.rev).unwrap().text.len();
        }
    }
    let children = export.children().len() as usize;
    let collection = format!("folio_default_v{version}_docs");
    let mut measured = (0usize, 0usize, 0usize);
    let out = &mut measured;
    common::with_client(uri, |client| async move {
        use milvus::v2::prelude::*;
        let query = |name: &str, field: &str| {
            QueryRequest::builder()
                .collection_name(name)
                .filter(format!("{field} != \"\""))
                .output_fields([field])
                .limit(16_384)
                .consistency_level(ConsistencyLevel::Strong)
                .build()
                .unwrap()
        };
        let data = client.query(query(&collection, "data")).await.unwrap();
        for row in data.results().rows().unwrap() {
            out.0 += 1;
            out.1 += row.get_str("data").unwrap().len();
        }
        let entries = client.query(query("folio__node", "value")).await.unwrap();
        for row in entries.results().rows().unwrap() {
            out.2 += row.get_str("value").unwrap().len();
        }
    });
    let (rows, bytes, catalog) = measured;
    eprintln!(
        "documents: {} ({children} children), texts {texts} bytes; documents collection: {rows} rows, \
         {bytes} bytes of records ({:.2}x the texts, {} bytes a document, {} a child); catalog {catalog} bytes",
        docs.len(),
        bytes as f64 / texts as f64,
        bytes / docs.len(),
        bytes / children,
    );
    assert_eq!(
        rows,
        docs.len(),
        "one row a document (each under one piece)"
    );
    assert!(
        bytes > texts && bytes < 3 * texts,
        "{bytes} bytes for {texts} of text"
    );
    assert!(catalog > 0);
}
