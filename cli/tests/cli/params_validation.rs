//! No input can brick a store (issue 11, item 3): every parameter a decoder bounds is
//! refused where it enters, with a typed error and nothing written, and a store whose index
//! does not load (one an older folio bricked) still opens for `index drop`, `check`, `stats`
//! and searches of its other indexes.

use std::path::{Path, PathBuf};

use crate::folio;
use folio::chunk::{ChildStrategy, ChunkSpec, ParentStrategy, SizeUnit, SourceFormat};
use folio::document::Document;
use folio::embed::Embedder;
use folio::index::Metric;
use folio::query::{Expand, SearchRequest};
use folio::store::{
    GraphParams, IndexConfig, IndexEmbedder, IndexError, OpenError, ReadError, Store, WriteError,
};
use folio::QueryError;
use folio_testkit::cli::{stderr, stdout, utf8};

/// A store with two small documents in a temporary directory.
fn small_store(dir: &Path) -> (Store, PathBuf) {
    let path = dir.join("s.folio");
    let store = Store::open_or_create(&path).expect("create");
    let mut batch = store.batch();
    batch.upsert(Document::new(
        "falcon",
        SourceFormat::Markdown,
        "# Falcon\n\nThe falcon budget is 40 thousand euros.\n",
    ));
    batch.upsert(Document::new(
        "lunch",
        SourceFormat::Text,
        "Lunch is served at noon.",
    ));
    batch.commit().expect("commit");
    (store, path)
}

fn config(spec: ChunkSpec, graph: GraphParams) -> IndexConfig {
    IndexConfig {
        spec,
        embedder: IndexEmbedder::Registered(folio::embed::default_embedder().name().to_string()),
        graph,
        vectors: Default::default(),
        lexical: Default::default(),
    }
}

/// The parameter an error names, if it is an `InvalidParameter`.
fn refused_parameter(e: &IndexError) -> Option<&'static str> {
    match e {
        IndexError::InvalidParameter(p) => Some(p.name),
        _ => None,
    }
}

#[test]
fn index_parameters_a_decoder_bounds_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (store, path) = small_store(dir.path());
    let graph = GraphParams {
        min_graph_size: 1,
        ..GraphParams::default()
    };
    let spec = ChunkSpec::default();
    let structure = |target, overlap| ChunkSpec {
        child: ChildStrategy::Structure { target, overlap },
        ..spec
    };
    let cases: Vec<(IndexConfig, &str)> = vec![
        (config(spec, GraphParams { m: 2000, ..graph }), "m"),
        (config(spec, GraphParams { m: 1, ..graph }), "m"),
        (
            config(
                spec,
                GraphParams {
                    ef_construction: 0,
                    ..graph
                },
            ),
            "ef_construction",
        ),
        (
            config(
                spec,
                GraphParams {
                    ef_construction: u32::MAX,
                    ..graph
                },
            ),
            "ef_construction",
        ),
        (config(structure(0, 0), graph), "chunk size"),
        (config(structure(300, 300), graph), "overlap"),
        (
            config(
                ChunkSpec {
                    child: ChildStrategy::Fixed {
                        size: 100,
                        overlap: 150,
                        unit: SizeUnit::Tokens,
                    },
                    ..spec
                },
                graph,
            ),
            "overlap",
        ),
        (
            config(
                ChunkSpec {
                    parent: ParentStrategy::Section { max: 0 },
                    ..spec
                },
                graph,
            ),
            "parent size",
        ),
        (
            IndexConfig {
                spec,
                embedder: IndexEmbedder::VectorsOnly {
                    name: "mine".into(),
                    dimension: 100_000,
                    metric: Metric::Cosine,
                },
                graph,
                vectors: Default::default(),
                lexical: Default::default(),
            },
            "dimension",
        ),
    ];
    let before = store.indexes().list().expect("list");
    for (i, (config, name)) in cases.into_iter().enumerate() {
        let e = store
            .indexes()
            .create(&format!("bad{i}"), config)
            .expect_err("refused");
        assert_eq!(refused_parameter(&e), Some(name), "case {i}: {e}");
        assert!(e.to_string().contains(name), "{e}");
    }
    // Nothing was written: the same index, at the same version, and a clean check.
    assert_eq!(store.indexes().list().expect("list"), before);
    assert!(store.check_integrity_ok());
    drop(store);

    // An embedder whose dimension no graph can decode never builds an index either.
    struct Wide;
    impl Embedder for Wide {
        fn name(&self) -> &str {
            "wide"
        }
        fn fingerprint(&self) -> String {
            "wide".into()
        }
        fn dimension(&self) -> usize {
            70_000
        }
        fn metric(&self) -> Metric {
            Metric::Dot
        }
        fn max_input_tokens(&self) -> usize {
            0
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<f32>, folio::embed::EmbedError> {
            Ok(vec![1.0; texts.len() * 70_000])
        }
    }
    let store = Store::open(&path).expect("reopen");
    store
        .register_embedder(std::sync::Arc::new(Wide))
        .expect("register");
    let wide = IndexConfig {
        embedder: IndexEmbedder::Registered("wide".into()),
        ..config(spec, GraphParams::default())
    };
    let e = store.indexes().create("wide", wide).expect_err("refused");
    assert_eq!(refused_parameter(&e), Some("dimension"), "{e}");
    assert!(store.check_integrity_ok());
}

/// `check_integrity` needs `&mut`; a clone is enough for these tests.
trait CheckOk {
    fn check_integrity_ok(&self) -> bool;
}

impl CheckOk for Store {
    fn check_integrity_ok(&self) -> bool {
        let mut handle = self.clone();
        handle
            .check_integrity()
            .map(|r| r.is_consistent())
            .unwrap_or(false)
    }
}

#[test]
fn a_new_store_with_out_of_range_options_is_refused_before_the_file_exists() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("new.folio");
    let options = Store::builder().create(true).graph(GraphParams {
        m: 5000,
        ..GraphParams::default()
    });
    match options.open(&path) {
        Err(OpenError::InvalidParameter(p)) => assert_eq!(p.name, "m"),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a store with m = 5000 was created"),
    }
    assert!(!path.exists(), "the refused store left a file");
}

#[test]
fn the_command_line_refuses_what_would_brick_the_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (store, path) = small_store(dir.path());
    drop(store);
    let path = utf8(&path);
    for args in [
        &["--m", "2000", "--min-graph-size", "1"][..],
        &["--ef-construction", "0"],
        &["--vectors", "mine:100000"],
        &["--chunking", "fixed:100/100"],
        &["--chunking", "structure:0"],
    ] {
        let mut all = vec!["index", "create", path, "bad"];
        all.extend_from_slice(args);
        let out = folio(&all);
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    }
    let out = folio(&["index", "create", path, "bad", "--m", "2000"]);
    assert!(
        stderr(&out).contains("m 2000 is out of range (allowed: 2..=1024)"),
        "{}",
        stderr(&out)
    );
    // Every command still works, and nothing was created.
    let out = folio(&["check", path]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = folio(&["index", "list", path]);
    assert!(out.status.success() && !stdout(&out).contains("bad"));
}

#[test]
fn a_window_is_kept_or_refused_never_silently_dropped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (store, path) = small_store(dir.path());
    drop(store);
    let path = utf8(&path);
    let out = folio(&["index", "create", path, "w", "--chunking", "window:300/1"]);
    assert!(!out.status.success(), "the window was dropped silently");
    assert!(
        stderr(&out).contains("--expand window:1"),
        "{}",
        stderr(&out)
    );
    let out = folio(&["index", "list", path]);
    assert!(!stdout(&out).contains("w:"), "{}", stdout(&out));

    // A window wider than child numbers reach is refused, not truncated.
    let out = folio(&["search", path, "falcon", "--expand", "window:99999999999"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("window 99999999999 is out of range"));
    let out = folio(&["search", path, "falcon", "--expand", "window:3"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[cfg(target_pointer_width = "64")]
#[test]
fn the_library_refuses_a_window_that_does_not_fit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (store, _) = small_store(dir.path());
    let request = SearchRequest::text("falcon").expand(Expand::Window(u32::MAX as usize + 1));
    match store.search(&request) {
        Err(QueryError::Read(ReadError::InvalidParameter(p))) => assert_eq!(p.name, "window"),
        other => panic!("not refused: {:?}", other.map(|r| r.results.len())),
    }
    let widest = SearchRequest::text("falcon").expand(Expand::Window(u32::MAX as usize));
    assert!(!store.search(&widest).expect("search").results.is_empty());
}

/// `tests/fixtures/bricked_m2000.folio`: written by folio before this change with
/// `folio ingest` (3 documents), `folio index create fine --chunking fixed:100` and
/// `folio index create wide --m 2000 --min-graph-size 1`, after which every command failed.
fn bricked_copy(dir: &Path) -> PathBuf {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/bricked_m2000.folio");
    let path = dir.join("bricked.folio");
    std::fs::copy(fixture, &path).expect("copy fixture");
    path
}

#[test]
fn a_store_whose_index_does_not_load_still_opens() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = bricked_copy(dir.path());
    let store = Store::open(&path).expect("opens despite the bad index");
    assert_eq!(store.index_names(), ["default", "fine"]);
    let unavailable = store.unavailable_indexes();
    assert_eq!(unavailable.len(), 1);
    assert_eq!(unavailable[0].name, "wide");
    assert!(unavailable[0].reason.contains("m 2000"), "{unavailable:?}");
    let stats = store.stats().expect("stats");
    assert_eq!(stats.documents, 3);
    assert_eq!(stats.unavailable, unavailable);

    // The other indexes answer; the bad one says why it cannot.
    for index in ["default", "fine"] {
        let hits = store
            .search(&SearchRequest::text("falcon budget").target(index))
            .expect("search");
        assert_eq!(hits.results[0].doc_id, "falcon.md", "{index}");
    }
    for target in ["wide", "wide@1"] {
        match store.search(&SearchRequest::text("falcon").target(target)) {
            Err(QueryError::Read(ReadError::IndexUnavailable { index, .. })) => {
                assert_eq!(index, "wide")
            }
            other => panic!("{target}: {:?}", other.map(|r| r.index)),
        }
    }
    // Writes that must update every index wait for the drop; the check names the index.
    let e = store
        .upsert(Document::new("new", SourceFormat::Text, "A new document."))
        .expect_err("refused");
    assert!(
        matches!(&e, WriteError::IndexUnavailable { index, .. } if index == "wide"),
        "{e}"
    );
    let mut handle = store.clone();
    let report = handle.check_integrity().expect("check runs");
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert!(report.problems[0].contains("`wide`"));
    drop(handle);

    store.indexes().drop("wide").expect("drop the bad index");
    assert!(store.unavailable_indexes().is_empty());
    store
        .upsert(Document::new("new", SourceFormat::Text, "A new document."))
        .expect("writable again");
    assert!(store.check_integrity_ok());
    drop(store);
    let store = Store::open(&path).expect("reopen");
    assert!(store.unavailable_indexes().is_empty());
    assert_eq!(store.stats().expect("stats").documents, 4);
}

#[test]
fn the_command_line_recovers_a_bricked_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = bricked_copy(dir.path());
    let path = utf8(&path);
    let out = folio(&["stats", path]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("index wide: could not be loaded"));
    let out = folio(&["search", path, "falcon budget", "--index", "fine"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = folio(&["check", path]);
    assert!(!out.status.success(), "a bad index is a problem");
    assert!(stdout(&out).contains("index `wide` could not be loaded"));
    let out = folio(&["index", "drop", path, "wide"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = folio(&["check", path]);
    assert!(out.status.success(), "{}", stderr(&out));
}
