//! Errors an application can match: the structured variants of each operation family, and
//! the same variants with the same fields in the umbrella `folio::Error`.

use std::collections::BTreeMap;

use folio::chunk::{ChunkSpec, SourceFormat};
use folio::document::Document;
use folio::index::Metric;
use folio::query::SearchRequest;
use folio::store::{
    DocumentProblem, GraphParams, IndexConfig, IndexEmbedder, IndexError, NameKind, NameRule,
    ReadError, Store, WriteError,
};
use folio::QueryError;

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open_or_create(dir.path().join("errors.folio")).expect("create");
    (dir, store)
}

fn vectors_only(dimension: u32) -> IndexConfig {
    IndexConfig {
        spec: ChunkSpec::default(),
        embedder: IndexEmbedder::VectorsOnly {
            name: "app-model".into(),
            dimension,
            metric: Metric::Cosine,
        },
        graph: GraphParams::default(),
        vectors: Default::default(),
        lexical: Default::default(),
    }
}

#[test]
fn a_query_vector_of_the_wrong_dimension_names_both_dimensions() {
    let (_dir, store) = store();
    let dimension = store
        .indexes()
        .list()
        .expect("indexes")
        .into_iter()
        .find(|i| i.name == "default")
        .expect("default")
        .embedder
        .dimension as usize;
    let e = store
        .search(&SearchRequest::vector(vec![0.5; dimension + 3]))
        .unwrap_err();
    assert!(
        matches!(e, QueryError::Read(ReadError::DimensionMismatch { expected, found })
            if expected == dimension && found == dimension + 3),
        "{e:?}"
    );
    let e = store
        .search(&SearchRequest::vector(vec![0.5; 2 * dimension]))
        .unwrap_err();
    assert!(
        matches!(folio::Error::from(e), folio::Error::DimensionMismatch { found, .. } if found == 2 * dimension)
    );
}

#[test]
fn document_vectors_that_are_not_one_row_per_chunk_are_refused() {
    let (_dir, store) = store();
    store
        .indexes()
        .create("app", vectors_only(4))
        .expect("create");
    let doc = Document::new("d", SourceFormat::Text, "One short paragraph.");
    let chunks = store.plan("app", &doc).expect("plan").len();
    let mut batch = store.batch();
    let wrong = vec![0.25; chunks * 4 + 1];
    batch.upsert_with_vectors(doc, BTreeMap::from([("app".to_string(), wrong)]));
    let e = batch.commit().unwrap_err();
    match e {
        WriteError::InvalidDocument {
            doc_id,
            problem:
                DocumentProblem::VectorCount {
                    index,
                    chunks: c,
                    dimension: 4,
                    expected,
                    found,
                },
        } => {
            assert_eq!((doc_id.as_str(), index.as_str()), ("d", "app"));
            assert_eq!((c, expected, found), (chunks, chunks * 4, chunks * 4 + 1));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        store.document("d").expect("read").is_none(),
        "nothing was written"
    );
}

#[test]
fn unknown_targets_are_named() {
    let (_dir, store) = store();
    let e = store
        .search(&SearchRequest::text("x").target("nowhere"))
        .unwrap_err();
    assert!(
        matches!(&e, QueryError::Read(ReadError::UnknownTarget { name }) if name == "nowhere"),
        "{e:?}"
    );
    let e = store
        .search(&SearchRequest::text("x").target("nowhere@3"))
        .unwrap_err();
    assert!(
        matches!(&e, QueryError::Read(ReadError::UnknownIndex { name }) if name == "nowhere"),
        "{e:?}"
    );
    let e = store.rollback("nowhere", 1).unwrap_err();
    assert!(
        matches!(&e, IndexError::UnknownTarget { name } if name == "nowhere"),
        "{e:?}"
    );
    // One match arm catches the condition whatever operation reported it.
    for e in [
        folio::Error::from(store.rollback("nowhere", 1).unwrap_err()),
        folio::Error::from(
            store
                .search(&SearchRequest::text("x").target("nowhere"))
                .unwrap_err(),
        ),
    ] {
        assert!(
            matches!(&e, folio::Error::UnknownTarget { name } if name == "nowhere"),
            "{e}"
        );
    }
}

#[test]
fn invalid_parameters_and_names_say_which_and_why() {
    let (_dir, store) = store();
    match store.gc(0).unwrap_err() {
        IndexError::InvalidParameter(p) => {
            assert_eq!((p.name, p.value.as_str()), ("keep_newest", "0"));
            assert_eq!(p.allowed, "at least 1");
        }
        other => panic!("{other:?}"),
    }
    let e = store.indexes().create("12", vectors_only(4)).unwrap_err();
    assert!(
        matches!(
            &e,
            IndexError::InvalidName { name, kind: NameKind::Index, rule: NameRule::Number }
                if name == "12"
        ),
        "{e:?}"
    );
    let e = folio::Error::from(store.indexes().create("app", vectors_only(0)).unwrap_err());
    assert!(
        matches!(&e, folio::Error::InvalidParameter(p) if p.name == "dimension"),
        "{e}"
    );
}

#[test]
fn an_unregistered_embedder_is_named_with_its_index() {
    let (_dir, store) = store();
    store
        .indexes()
        .create("app", vectors_only(4))
        .expect("create");
    let e = store
        .search(&SearchRequest::text("anything").target("app"))
        .unwrap_err();
    assert!(
        matches!(&e, QueryError::Read(ReadError::EmbedderNotRegistered { index, embedder })
            if index == "app" && embedder == "app-model"),
        "{e:?}"
    );
    // A text upsert cannot embed the document for `app` either; nothing is written.
    let e = store
        .upsert(Document::new("d", SourceFormat::Text, "Some text."))
        .unwrap_err();
    assert!(
        matches!(&e, WriteError::EmbedderNotRegistered { index, embedder }
            if index == "app" && embedder == "app-model"),
        "{e:?}"
    );
    let config = IndexConfig {
        embedder: IndexEmbedder::Registered("nobody".into()),
        ..vectors_only(4)
    };
    let e = folio::Error::from(store.indexes().create("other", config).unwrap_err());
    assert!(
        matches!(&e, folio::Error::EmbedderNotRegistered { index, embedder }
            if index == "other" && embedder == "nobody"),
        "{e}"
    );
}

/// `?` gathers every family into `folio::Error`.
#[test]
fn question_mark_converts_every_family() {
    fn run(store: &Store) -> Result<(), folio::Error> {
        store.upsert(Document::new("a", SourceFormat::Text, "Text."))?;
        store.search(&SearchRequest::text("text"))?;
        store.versions("default").tag(0, "first")?;
        store.versions("default").tag(1, "first")?;
        Ok(())
    }
    let (_dir, store) = store();
    let e = run(&store).unwrap_err();
    assert!(
        matches!(&e, folio::Error::TagExists { index, tag, version: 0 }
            if index == "default" && tag == "first"),
        "{e}"
    );
}
