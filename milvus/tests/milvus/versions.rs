//! Issue 33's reported failure: after an ACL change and a delete (new folio versions that add
//! no segment), a remote search of the index's head answers from the collection published
//! for the version they derive from, equal to the local exact answer once synced; a
//! compaction (children renumbered into a new segment) needs a publish of its own, and
//! until then the search fails with the typed error naming what to run.

use crate::common;
use crate::remote::{compare, document, flat, shape, visible_parents, Rng};

use folio::store::NoProgress;
use folio::{SearchRequest, Store};
use folio_milvus::{Error, Remote};

#[test]
fn versions_without_new_segments_are_served_by_the_collection_they_derive_from() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.folio");
    let store = Store::builder().create(true).open(&path).unwrap();
    let mut rng = Rng(33);
    let mut batch = store.batch();
    for i in 0..40 {
        batch.upsert(document(&mut rng, i));
    }
    let v1 = batch.commit().unwrap().versions["default"];
    let server = common::LiteServer::start();
    let remote = Remote::connect(&server.uri()).unwrap();
    let published = remote
        .publish(&store, "default", &flat(), &NoProgress)
        .unwrap();
    assert_eq!(published.collection, format!("folio_default_v{v1}"));

    // An ACL change (alice loses a document, carol gains it), then a delete.
    let moved = (0..40)
        .map(|i| format!("doc-{i}"))
        .find(|id| {
            store
                .document(id)
                .unwrap()
                .is_some_and(|d| d.acl == ["alice"])
        })
        .expect("the seed gives a document only alice sees");
    let v2 = store.set_acl(&moved, ["carol"]).unwrap().versions["default"];
    let v3 = store.delete("doc-7").unwrap().versions["default"];
    assert!(v1 < v2 && v2 < v3);
    let segments = |v| store.versions("default").segments(v).unwrap();
    assert_eq!(segments(v3), segments(v1), "neither commit adds a segment");
    let served = remote
        .collection_for(&store, "folio", "default", v3)
        .unwrap();
    assert_eq!(
        (served.collection.as_str(), served.published),
        (published.collection.as_str(), v1)
    );

    // The command as a user runs it: the index's head answers through v1's collection.
    let cli = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_folio-milvus"))
            .args(args)
            .args(["--milvus", &server.uri()])
            .output()
            .unwrap()
    };
    let path_str = path.to_str().unwrap();
    let out = cli(&[
        "search",
        path_str,
        "refund a card invoice",
        "--index",
        "default",
        "--as",
        "carol",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["version"], v3);

    // Before a sync the deleted document's rows are still in Milvus: folio's check drops them.
    assert_eq!(remote.rows(&published.collection).unwrap(), published.rows);
    for principals in [vec!["alice"], vec!["bob"], vec!["carol"], vec![]] {
        let visible = visible_parents(&store, "default", &principals);
        let request = SearchRequest::text("guide")
            .as_principals(principals.iter().copied())
            .target("default")
            .k(100)
            .no_dedup();
        let (through, _) = remote.search(&store, &request, "folio").unwrap();
        assert_eq!(through.version, v3);
        assert!(through.results.iter().all(|h| h.doc_id != "doc-7"));
        assert!(through
            .results
            .iter()
            .all(|h| visible.contains(&h.parent_id)));
    }

    // The sync updates v1's rows in place: the deleted rows go, the changed ACL is written.
    let reports = remote.sync(&store, "folio", 16).unwrap();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert!(
        reports[0].deleted > 0 && reports[0].updated > 0,
        "{reports:?}"
    );
    // Every principal's answers, of the head and of the version between, equal local ones.
    let mut compared = compare(&store, &remote, "default");
    compared += compare(&store, &remote, &format!("default@{v2}"));
    compared += compare(&store, &remote, &format!("default@{v1}"));
    assert_eq!(compared, 3 * 5 * crate::remote::QUERIES.len() * 2);

    // A compaction renumbers the live children into a new segment: nothing published holds
    // them, and the search says which version to publish.
    let v4 = store
        .indexes()
        .compact("default")
        .unwrap()
        .expect("the delete left dead rows to merge away")
        .version;
    let request = SearchRequest::text("guide").target("default");
    let refused = remote.search(&store, &request, "folio");
    let Err(error) = refused else {
        panic!("a compacted version answered from an older collection");
    };
    let message = error.to_string();
    match &error {
        Error::NotPublished {
            version, nearest, ..
        } => {
            assert_eq!(*version, v4);
            assert_eq!(nearest, &Some((published.collection.clone(), v1)));
        }
        other => panic!("{other:?}"),
    }
    let run = format!(
        "run `folio publish STORE default@{v4} --milvus {}`",
        server.uri()
    );
    assert!(message.contains(&run), "{message}");
    let out = cli(&["search", path_str, "guide", "--index", "default"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&run), "{stderr}");
    assert!(!stderr.contains("does not exist"), "{stderr}");

    // Published, the compacted version answers as the local search does.
    remote
        .publish(&store, "default", &flat(), &NoProgress)
        .unwrap();
    assert_eq!(
        compare(&store, &remote, "default"),
        5 * crate::remote::QUERIES.len() * 2
    );
}

/// A collection published before collections recorded their segments (no `folio.segments`)
/// serves its own version only; publishing that version again records them, and then it
/// serves the versions that derive from it without new segments too.
#[test]
fn a_collection_without_recorded_segments_serves_its_own_version_only() {
    use milvus::v2::prelude::DropCollectionPropertiesRequest;

    let dir = tempfile::tempdir().unwrap();
    let store = Store::builder()
        .create(true)
        .open(dir.path().join("kb.folio"))
        .unwrap();
    let mut rng = Rng(5);
    let mut batch = store.batch();
    for i in 0..12 {
        batch.upsert(document(&mut rng, i));
    }
    let v1 = batch.commit().unwrap().versions["default"];
    let server = common::LiteServer::start();
    let remote = Remote::connect(&server.uri()).unwrap();
    let published = remote
        .publish(&store, "default", &flat(), &NoProgress)
        .unwrap();
    let collection = &published.collection;
    common::with_client(&server.uri(), |client| async move {
        client
            .drop_collection_properties(
                DropCollectionPropertiesRequest::builder()
                    .collection_name(collection)
                    .property_key("folio.segments")
                    .build()
                    .unwrap(),
            )
            .await
            .unwrap();
    });

    let v2 = store.delete("doc-3").unwrap().versions["default"];
    let own = remote
        .collection_for(&store, "folio", "default", v1)
        .unwrap();
    assert_eq!(
        (own.collection.as_str(), own.published),
        (published.collection.as_str(), v1)
    );
    let refused = remote.collection_for(&store, "folio", "default", v2);
    assert!(
        matches!(refused, Err(Error::NotPublished { version, .. }) if version == v2),
        "{refused:?}"
    );

    let again = remote
        .publish(&store, &format!("default@{v1}"), &flat(), &NoProgress)
        .unwrap();
    assert_eq!(again.written, 0, "the rows were all there");
    let served = remote
        .collection_for(&store, "folio", "default", v2)
        .unwrap();
    assert_eq!(
        (served.collection.as_str(), served.published),
        (published.collection.as_str(), v1)
    );
    let request = SearchRequest::text("refund a card invoice")
        .k(100)
        .no_dedup();
    let (through, _) = remote.search(&store, &request, "folio").unwrap();
    let local = store.search(&request).unwrap();
    assert_eq!(crate::remote::shape(&through), crate::remote::shape(&local));
}

/// Issue 33's latency: a search finds the collection that serves its version once per
/// connection; later searches of the same version make one Milvus call each (the search),
/// with the same answers. A collection dropped after that is the typed error, not Milvus's
/// refusal, and a version the connection has not searched yet is resolved afresh.
#[test]
fn a_steady_stream_of_searches_makes_one_milvus_call_each() {
    use milvus::v2::prelude::DropCollectionRequest;
    use std::time::Instant;

    let dir = tempfile::tempdir().unwrap();
    let store = Store::builder()
        .create(true)
        .open(dir.path().join("kb.folio"))
        .unwrap();
    let mut rng = Rng(11);
    let mut batch = store.batch();
    for i in 0..30 {
        batch.upsert(document(&mut rng, i));
    }
    let v1 = batch.commit().unwrap().versions["default"];
    let server = common::LiteServer::start();
    let remote = Remote::connect(&server.uri()).unwrap();
    let published = remote
        .publish(&store, "default", &flat(), &NoProgress)
        .unwrap();
    let request = SearchRequest::text("refund a card invoice")
        .as_principals(["alice"])
        .k(5)
        .no_dedup();
    let local = store.search(&request).unwrap();

    let (first, calls) = remote.search(&store, &request, "folio").unwrap();
    assert_eq!(shape(&first), shape(&local));
    assert!(
        calls.has_collection >= 1 && calls.describe_collection >= 1,
        "{calls:?}"
    );
    assert_eq!(calls.searches, 1, "{calls:?}");
    for _ in 0..3 {
        let started = Instant::now();
        let (again, calls) = remote.search(&store, &request, "folio").unwrap();
        let total = started.elapsed();
        assert_eq!(shape(&again), shape(&local));
        assert_eq!(
            (
                calls.has_collection,
                calls.describe_collection,
                calls.searches
            ),
            (0, 0, 1),
            "{calls:?}"
        );
        assert_eq!(calls.milvus_calls(), 1);
        assert!(
            calls.in_milvus > std::time::Duration::ZERO && calls.in_milvus <= total,
            "{calls:?} in {total:?}"
        );
        assert!(calls
            .expression
            .as_deref()
            .is_some_and(|e| e.contains("alice")));
    }

    // A delete makes v2, which the connection has not searched: resolved afresh, served
    // by v1's collection.
    let v2 = store.delete("doc-3").unwrap().versions["default"];
    let (after, calls) = remote.search(&store, &request, "folio").unwrap();
    assert_eq!(after.version, v2);
    assert_eq!(shape(&after), shape(&store.search(&request).unwrap()));
    assert!(calls.has_collection >= 1, "{calls:?}");

    // The collection dropped behind the connection's back: the next search of each version
    // names what to run.
    common::with_client(&server.uri(), |client| async move {
        client
            .drop_collection(
                DropCollectionRequest::builder()
                    .collection_name(&published.collection)
                    .build()
                    .unwrap(),
            )
            .await
            .unwrap();
    });
    for target in [format!("default@{v1}"), format!("default@{v2}")] {
        let refused = remote.search(&store, &request.clone().target(target.as_str()), "folio");
        assert!(
            matches!(refused, Err(Error::NotPublished { .. })),
            "{target}: {refused:?}"
        );
    }
}
