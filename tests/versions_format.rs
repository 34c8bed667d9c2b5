//! Files of older and other format versions: read (version 1 is upgraded in place), or
//! refused with a message naming the versions. The fixtures are small stores written by
//! folio builds of each format; `regenerate_format2_fixture` rewrites the current one.

mod versions_support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use folio::chunk::{ChildStrategy, ChunkSpec, ParentStrategy, SourceFormat};
use folio::document::Document;
use folio::embed::{EmbedError, Embedder, HashEmbedder};
use folio::index::Metric;
use folio::retrieve::SearchRequest;
use folio::store::{Access, GraphParams, OpenError, Rating, Store, StoreOptions, FORMAT_VERSION};
use redb::{ReadableDatabase, TableDefinition};
use versions_support::{config_like_default, route};

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

/// Opens fixtures without embedding anything, so they stay readable whatever becomes of
/// the built-in embedder's settings.
struct NoEmbedder;

impl Embedder for NoEmbedder {
    fn name(&self) -> &str {
        "fixture-reader"
    }
    fn fingerprint(&self) -> String {
        "none".into()
    }
    fn dimension(&self) -> usize {
        1
    }
    fn metric(&self) -> Metric {
        Metric::Cosine
    }
    fn max_input_tokens(&self) -> usize {
        0
    }
    fn embed(&self, _: &[&str]) -> Result<Vec<f32>, EmbedError> {
        Err(EmbedError::Failed(
            "the fixture reader embeds nothing".into(),
        ))
    }
}

fn reader_options() -> StoreOptions {
    StoreOptions {
        embedder: Arc::new(NoEmbedder),
        ..StoreOptions::default()
    }
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A copy of a fixture in a temporary directory: opening upgrades files in place.
fn copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(name);
    std::fs::copy(fixture(name), &path).expect("copy fixture");
    (dir, path)
}

fn stored_format(path: &Path) -> u32 {
    let db = redb::Database::open(path).expect("redb open");
    let txn = db.begin_read().expect("read");
    let meta = txn.open_table(META).expect("meta");
    let bytes = meta.get("format_version").expect("get").expect("present");
    u32::from_le_bytes(bytes.value().try_into().expect("4 bytes"))
}

/// The best unit for the stored vector of the first child of `target`'s first segment.
fn self_match(store: &Store, target: &str) -> (String, f32) {
    let reader = store.reader().expect("reader");
    let (_, view) = reader.resolve(target).expect("resolve");
    let segment = &view.segments()[0];
    let vector = segment.vectors()[..segment.dimension()].to_vec();
    drop(reader);
    let response = store
        .search(
            &SearchRequest::vector(vector)
                .access(Access::Unrestricted)
                .target(target)
                .k(1),
        )
        .expect("vector search");
    let hit = &response.results[0];
    (hit.children[0].chunk_id.clone(), hit.children[0].score)
}

#[test]
fn a_format1_file_is_upgraded_and_reads_as_before() {
    let (_dir, path) = copy("format1.folio");
    assert_eq!(stored_format(&path), 1);
    let mut store = Store::open_with(&path, reader_options()).expect("open v1");
    let versions = store.versions("default").expect("versions");
    let changes: Vec<&str> = versions.iter().map(|v| v.change.as_str()).collect();
    assert_eq!(changes, ["create", "upsert 3", "upsert 1, delete 1"]);
    assert_eq!(store.document_ids().expect("ids"), ["handbook", "runbook"]);
    let handbook = store.document("handbook").expect("read").expect("stored");
    assert!(handbook.text.contains("30 days"));
    let runbook = store.document("runbook").expect("read").expect("stored");
    assert_eq!(runbook.acl, ["eng"]);
    let (chunk, score) = self_match(&store, "default@1");
    assert!(chunk.ends_with("#c0"), "{chunk}");
    assert!((score - 1.0).abs() < 1e-4);
    let report = store.check_integrity().expect("check");
    assert!(report.is_consistent(), "{:?}", report.problems);
    // Version 2 features work on the upgraded file.
    store.tag("default", 1, "before-upgrade").expect("tag");
    store
        .set_alias("prod", &[route("default", 2, 100)])
        .expect("alias");
    drop(store);
    assert_eq!(stored_format(&path), FORMAT_VERSION);
}

#[test]
fn the_current_format_fixture_reads() {
    let (_dir, path) = copy("format2.folio");
    let mut store = Store::open_with(&path, reader_options()).expect("open v2");
    let indexes = store.list_indexes().expect("indexes");
    let names: Vec<(&str, u64, u64)> = indexes
        .iter()
        .map(|i| (i.name.as_str(), i.head, i.serving))
        .collect();
    assert_eq!(names, [("default", 3, 3), ("small", 2, 1)]);
    let versions = store.versions("default").expect("versions");
    assert_eq!(versions[1].tags, ["first"]);
    assert_eq!(versions[2].aliases, ["prod", "split"]);
    assert!(versions[3].change.starts_with("compact 2 segments"));
    assert_eq!(versions[3].segments, 1);
    let aliases = store.aliases().expect("aliases");
    assert_eq!(aliases[1].name, "split");
    assert_eq!(aliases[1].routes.len(), 2);
    let log = store.log_entries().expect("log");
    assert_eq!(log.len(), 1);
    assert_eq!(
        log[0].request.feedback.as_ref().and_then(|f| f.rating),
        Some(Rating::Up)
    );
    assert_eq!(store.document_ids().expect("ids"), ["handbook", "runbook"]);
    for target in ["default@1", "default@first", "prod", "default", "small"] {
        let (_, score) = self_match(&store, target);
        assert!((score - 1.0).abs() < 1e-4, "{target}: {score}");
    }
    let report = store.check_integrity().expect("check");
    assert!(report.is_consistent(), "{:?}", report.problems);
}

#[test]
fn other_format_versions_are_refused_by_name() {
    let (_dir, path) = copy("format2.folio");
    {
        let db = redb::Database::open(&path).expect("redb open");
        let txn = db.begin_write().expect("write");
        txn.open_table(META)
            .expect("meta")
            .insert("format_version", 99u32.to_le_bytes().as_slice())
            .expect("insert");
        txn.commit().expect("commit");
    }
    let refused = Store::open_with(&path, reader_options());
    let Err(e) = refused else {
        panic!("a format 99 file was opened")
    };
    assert!(matches!(e, OpenError::UnsupportedFormat { found: 99, .. }));
    let message = e.to_string();
    assert!(
        message.contains("format version 99") && message.contains("versions 1 to 2"),
        "{message}"
    );
    // Nothing was written to the refused file.
    assert_eq!(stored_format(&path), 99);

    let plain = path.with_file_name("plain.redb");
    drop(redb::Database::create(&plain).expect("plain redb"));
    assert!(matches!(
        Store::open_with(&plain, reader_options()),
        Err(OpenError::NotAStore { .. })
    ));
}

/// Rewrites `tests/fixtures/format2.folio`; run it when the format changes (and bump
/// `FORMAT_VERSION`, keeping the old fixture and a test that reads or refuses it).
#[test]
#[ignore = "writes the fixture"]
fn regenerate_format2_fixture() {
    let path = fixture("format2.folio");
    let _ = std::fs::remove_file(&path);
    let options = StoreOptions {
        embedder: Arc::new(HashEmbedder::new(8).expect("embedder")),
        graph: GraphParams {
            min_graph_size: u32::MAX,
            ..GraphParams::default()
        },
        merge: folio::store::MergePolicy::never(),
        log_requests: true,
        ..StoreOptions::create()
    };
    let store = Store::open_with(&path, options).expect("create");
    let mut batch = store.batch();
    batch.upsert(
        Document::new(
            "runbook",
            SourceFormat::Markdown,
            "# Deploys\n\n## Rollback\n\nRun `release rollback` to undo a bad deploy.\n",
        )
        .with_acl(["eng"]),
    );
    batch.upsert(Document::new(
        "handbook",
        SourceFormat::Markdown,
        "# Handbook\n\n## Vacation\n\nEveryone gets 25 days of paid vacation.\n",
    ));
    batch.upsert(Document::new(
        "lunch",
        SourceFormat::Text,
        "Lunch is at noon.",
    ));
    batch.commit().expect("v1");
    let spec = ChunkSpec {
        child: ChildStrategy::Structure {
            target: 30,
            overlap: 0,
        },
        parent: ParentStrategy::Child,
        heading_depth: 1,
    };
    store
        .create_index("small", config_like_default(&store, spec))
        .expect("small");
    let mut batch = store.batch();
    batch.upsert(Document::new(
        "handbook",
        SourceFormat::Markdown,
        "# Handbook\n\n## Vacation\n\nEveryone gets 30 days of paid vacation.\n",
    ));
    batch.delete("lunch");
    batch.commit().expect("v2");
    store.compact("default").expect("compact").expect("merged");
    store.tag("default", 1, "first").expect("tag");
    store
        .set_alias("prod", &[route("default", 2, 100)])
        .expect("prod");
    store
        .set_alias("split", &[route("default", 1, 50), route("default", 2, 50)])
        .expect("split");
    store.rollback("small", 1).expect("pin");
    let response = store
        .search(&SearchRequest::text("vacation days").target("prod"))
        .expect("search");
    store
        .feedback(
            response.request_id.expect("logged"),
            Some(Rating::Up),
            Some("fixture".into()),
        )
        .expect("feedback");
}
