//! Named indexes, immutable versions, tags, aliases, rollback, routing, compaction, gc and
//! the request log, through the library API.

use folio::chunk::{ChildStrategy, ChunkSpec, ParentStrategy, SourceFormat};
use folio::document::Document;
use folio::query::{Expand, SearchRequest};
use folio::store::{
    route_bucket, Access, GraphParams, IndexConfig, IndexEmbedder, IndexError, MergePolicy, Rating,
    ReadError, Store, WriteError,
};
use folio::QueryError;
use folio_testkit::versions::{
    answer, config_like_default, doc, everything, route, small_options, temp_store,
};

fn markdown(id: &str, text: &str) -> Document {
    Document::new(id, SourceFormat::Markdown, text)
}

fn seed(store: &Store) {
    let mut batch = store.batch();
    batch.upsert(markdown(
        "runbook",
        "# Deploys\n\n## Rollback\n\nRun `release rollback` to undo a bad deploy. Check the \
         dashboards first.\n\n## Canary\n\nShip to one percent of hosts first, then wait.\n",
    ));
    batch.upsert(markdown(
        "handbook",
        "# Handbook\n\n## Vacation\n\nEveryone gets 25 days of paid vacation.\n",
    ));
    batch.upsert(doc(
        "lunch",
        "Lunch is served at noon. The cafeteria closes at three.",
    ));
    batch.commit().expect("seed");
}

fn small_spec() -> ChunkSpec {
    ChunkSpec {
        child: ChildStrategy::Structure {
            target: 40,
            overlap: 0,
        },
        parent: ParentStrategy::Child,
        heading_depth: 1,
        ..ChunkSpec::default()
    }
}

#[test]
fn named_indexes_share_one_document_set() {
    let (_dir, store) = temp_store(Store::builder().create(true));
    seed(&store);
    let config = config_like_default(&store, small_spec());
    assert_eq!(
        store
            .indexes()
            .create("small", config.clone())
            .expect("create"),
        1
    );
    assert!(matches!(
        store.indexes().create("small", config.clone()),
        Err(IndexError::IndexExists { .. })
    ));
    for bad in ["", "a@b", "x:y", "12", "has space"] {
        assert!(
            matches!(
                store.indexes().create(bad, config.clone()),
                Err(IndexError::InvalidName { .. })
            ),
            "{bad:?}"
        );
    }
    // The new index covers every stored document with its own chunking.
    let small = everything(&store, "small", "vacation");
    assert_eq!(small.index, "small");
    assert_eq!(small.version, 1);
    let docs: std::collections::BTreeSet<_> =
        small.results.iter().map(|h| h.doc_id.as_str()).collect();
    assert_eq!(docs.len(), 3);
    assert!(
        store.chunks("small", "runbook").expect("chunks").len()
            > store.chunks("default", "runbook").expect("chunks").len()
    );

    // Ingest updates every index.
    let receipt = store
        .upsert(doc("parking", "Parking is in the basement."))
        .expect("upsert");
    assert_eq!(receipt.versions.get("default"), Some(&2));
    assert_eq!(receipt.versions.get("small"), Some(&2));
    assert_eq!(store.chunks("small", "parking").expect("chunks").len(), 1);

    let list = store.indexes().list().expect("list");
    assert_eq!(
        list.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(),
        ["default", "small"]
    );
    let small_info = &list[1];
    assert_eq!((small_info.head, small_info.versions), (2, 3));
    assert_eq!(small_info.spec, small_spec());
    assert!(!small_info.embedder.fingerprint.is_empty());

    // Dropping is refused while an alias routes to the index.
    store
        .aliases()
        .set("exp", &[route("small", 2, 100)])
        .expect("alias");
    assert!(matches!(
        store.indexes().drop("small"),
        Err(IndexError::IndexInUse { .. })
    ));
    assert!(matches!(
        store.indexes().create("exp", config.clone()),
        Err(IndexError::NameTaken { .. })
    ));
    store.aliases().remove("exp").expect("remove alias");
    store.indexes().drop("small").expect("drop");
    assert!(store.indexes().drop("default").is_err());
    assert!(matches!(
        store.search(&SearchRequest::text("x").target("small")),
        Err(QueryError::Read(ReadError::UnknownTarget { .. }))
    ));
    let mut store = store;
    let report = store.check_integrity().expect("check");
    assert!(report.is_consistent(), "{:?}", report.problems);
    // The documents are still stored once, and reachable by the default index.
    assert_eq!(store.document_ids().expect("ids").len(), 4);
}

#[test]
fn vectors_only_indexes_need_an_empty_store_or_vectors() {
    let (_dir, store) = temp_store(small_options());
    let config = IndexConfig {
        spec: ChunkSpec::default(),
        embedder: IndexEmbedder::VectorsOnly {
            name: "mine".into(),
            dimension: 3,
            metric: folio::index::Metric::Dot,
        },
        graph: GraphParams::default(),
        vectors: Default::default(),
        lexical: Default::default(),
    };
    store
        .indexes()
        .create("byo", config.clone())
        .expect("empty store");
    // An upsert without vectors for `byo` cannot be embedded there.
    assert!(store.upsert(doc("a", "Alpha.")).is_err());
    let mut batch = store.batch();
    batch.upsert_with_vectors(
        doc("a", "Alpha."),
        [("byo".to_string(), vec![1.0, 0.0, 0.0])].into(),
    );
    batch.commit().expect("with vectors");
    assert!(
        store.indexes().create("byo2", config).is_err(),
        "documents exist"
    );
    let hit = store
        .search(&SearchRequest::vector(vec![1.0, 0.0, 0.0]).target("byo"))
        .expect("vector search");
    assert_eq!(hit.results[0].doc_id, "a");
}

#[test]
fn versions_never_change_and_are_listed() {
    let (_dir, store) = temp_store(small_options());
    seed(&store);
    let v1 = answer(&store, "default", "deploy vacation lunch");
    assert_eq!(v1.0, 1);
    store
        .upsert(markdown(
            "handbook",
            "# Handbook\n\n## Vacation\n\n30 days now.\n",
        ))
        .expect("update");
    let v2 = answer(&store, "default@2", "deploy vacation lunch");
    store.delete("lunch").expect("delete");
    store.set_acl("runbook", ["eng"]).expect("acl");
    // Versions keep their content and ranking; a document deleted since leaves them all.
    let without_lunch = |(version, units): (u64, Vec<(String, String, u32)>)| {
        let units: Vec<_> = units.into_iter().filter(|u| u.0 != "lunch").collect();
        (version, units)
    };
    assert!(v1.1.iter().any(|u| u.0 == "lunch"));
    assert_eq!(
        answer(&store, "default@1", "deploy vacation lunch"),
        without_lunch(v1.clone())
    );
    assert_eq!(
        answer(&store, "default@2", "deploy vacation lunch"),
        without_lunch(v2)
    );
    let head = answer(&store, "default", "deploy vacation lunch");
    assert_eq!(head.0, 4);
    assert_ne!(head, v1);
    // A revocation reaches older versions too: the runbook was public at version 2, and
    // is no longer public there.
    let public_v2 = store
        .search(
            &SearchRequest::text("deploy rollback")
                .access(Access::public())
                .target("default@2"),
        )
        .expect("search");
    assert!(public_v2.results.iter().all(|h| h.doc_id != "runbook"));
    let eng_v2 = store
        .search(
            &SearchRequest::text("deploy rollback")
                .as_principals(["eng"])
                .target("default@2"),
        )
        .expect("search");
    assert!(eng_v2.results.iter().any(|h| h.doc_id == "runbook"));
    let public_v4 = store
        .search(&SearchRequest::text("deploy rollback").access(Access::public()))
        .expect("search");
    assert!(public_v4.results.iter().all(|h| h.doc_id != "runbook"));

    let versions = store.versions("default").list().expect("versions");
    let rows: Vec<(u64, &str, u64)> = versions
        .iter()
        .map(|v| (v.version, v.change.as_str(), v.documents))
        .collect();
    assert_eq!(
        rows,
        [
            (0, "create", 0),
            (1, "upsert 3", 3),
            (2, "upsert 1", 3),
            (3, "delete 1", 2),
            (4, "acl 1", 2)
        ]
    );
    assert!(versions[4].head && versions[4].serving);
    assert!(matches!(
        store.search(&SearchRequest::text("x").target("default@9")),
        Err(QueryError::Read(ReadError::UnknownVersion {
            version: 9,
            ..
        }))
    ));
}

#[test]
fn tags_aliases_rollback_and_pins() {
    let (_dir, store) = temp_store(small_options());
    seed(&store);
    store
        .upsert(doc("parking", "Parking is in the basement."))
        .expect("v2");
    store
        .versions("default")
        .tag(1, "release-2026-11")
        .expect("tag");
    store
        .versions("default")
        .tag(1, "release-2026-11")
        .expect("same tag again");
    assert!(matches!(
        store.versions("default").tag(2, "release-2026-11"),
        Err(IndexError::TagExists { version: 1, .. })
    ));
    assert!(matches!(
        store.versions("default").tag(7, "later"),
        Err(IndexError::UnknownVersion { .. })
    ));
    assert_eq!(
        answer(&store, "default@release-2026-11", "parking lunch"),
        answer(&store, "default@1", "parking lunch")
    );

    store
        .aliases()
        .set("prod", &[route("default", 2, 100)])
        .expect("prod");
    assert!(store
        .aliases()
        .set("default", &[route("default", 2, 100)])
        .is_err());
    assert!(store
        .aliases()
        .set("bad", &[route("default", 1, 60), route("default", 2, 30)])
        .is_err());
    assert!(store
        .aliases()
        .set("bad", &[route("default", 9, 100)])
        .is_err());
    assert_eq!(everything(&store, "prod", "parking").version, 2);

    // Rollback of an alias: O(1), to an earlier version.
    let done = store.rollback("prod", 1).expect("rollback");
    assert!(done.alias);
    assert_eq!(everything(&store, "prod", "parking").version, 1);
    // Rollback of a bare index name pins what it serves; writes still build on the head.
    store.rollback("default", 1).expect("pin");
    assert_eq!(everything(&store, "default", "parking").version, 1);
    let receipt = store
        .upsert(doc("garden", "The garden opens in May."))
        .expect("v3");
    assert_eq!(receipt.versions["default"], 3);
    assert_eq!(everything(&store, "default", "garden").version, 1);
    assert_eq!(everything(&store, "default@3", "garden").version, 3);
    assert_eq!(store.versions("default").unpin().expect("unpin"), Some(1));
    assert_eq!(everything(&store, "default", "garden").version, 3);
    assert!(matches!(
        store.rollback("nothing", 1),
        Err(IndexError::UnknownTarget { .. })
    ));

    let versions = store.versions("default").list().expect("versions");
    assert_eq!(versions[1].tags, ["release-2026-11"]);
    assert_eq!(versions[1].aliases, ["prod"]);
    let aliases = store.aliases().list().expect("aliases");
    assert_eq!(aliases[0].routes, [route("default", 1, 100)]);
}

#[test]
fn split_aliases_route_by_a_stable_key() {
    let (_dir, store) = temp_store(small_options());
    seed(&store);
    store
        .upsert(doc("parking", "Parking is in the basement."))
        .expect("v2");
    store
        .aliases()
        .set("prod", &[route("default", 1, 90), route("default", 2, 10)])
        .expect("split");
    let mut to_v2 = 0;
    for user in 0..1000 {
        let key = format!("user-{user}");
        let mut request = SearchRequest::text("parking")
            .access(Access::Unrestricted)
            .target("prod")
            .route_key(&key);
        request.k = 1;
        let version = store.search(&request).expect("search").version;
        // Same key, same version, and `route` agrees with the search.
        assert_eq!(store.search(&request).expect("again").version, version);
        assert_eq!(
            store.aliases().route("prod", &key).expect("route").version,
            version
        );
        assert_eq!(version == 2, route_bucket("prod", key.as_bytes()) >= 90);
        to_v2 += usize::from(version == 2);
    }
    assert!(
        (60..140).contains(&to_v2),
        "{to_v2} of 1000 went to the 10% route"
    );
    // Without a key the query text routes.
    let by_text = |q: &str| everything(&store, "prod", q).version;
    assert_eq!(by_text("parking basement"), by_text("parking basement"));
}

#[test]
fn compaction_renumbers_but_answers_the_same() {
    let (_dir, store) = temp_store(small_options());
    for round in 0..6 {
        let mut batch = store.batch();
        for i in 0..5 {
            batch.upsert(markdown(
                &format!("doc{i}"),
                &format!(
                    "# Doc {i}\n\n## Part A\n\nRound {round} text about deploys and item {i}. \
                     More words here.\n\n## Part B\n\nBudgets and hotels, item {i}.\n"
                ),
            ));
        }
        batch.commit().expect("round");
    }
    store.versions("default").tag(3, "old").expect("tag");
    let head = store.vectors("default").expect("vectors");
    assert_eq!(head.segments.len(), 6);
    let before = answer(&store, "default", "deploys budgets hotels item");
    let old = answer(&store, "default@old", "deploys budgets hotels item");
    let windows = |target: &str| {
        let mut request = SearchRequest::text("hotels item 3")
            .access(Access::Unrestricted)
            .expand(Expand::Window(1))
            .target(target);
        request.k = 3;
        store
            .search(&request)
            .expect("window search")
            .results
            .iter()
            .map(|h| (h.doc_id.clone(), h.start, h.end, h.text.clone()))
            .collect::<Vec<_>>()
    };
    let windows_before = windows("default");
    let done = store
        .indexes()
        .compact("default")
        .expect("compact")
        .expect("merged");
    assert_eq!(done.segments_merged, 6);
    assert_eq!(done.rows_dropped, done.rows_kept * 5);
    let head = store.vectors("default").expect("vectors");
    assert_eq!(head.segments.len(), 1);
    assert_eq!(head.version, done.version);
    let after = answer(&store, "default", "deploys budgets hotels item");
    assert_eq!(after.1, before.1, "same units, same scores");
    assert_eq!(windows("default"), windows_before);
    assert_eq!(
        answer(&store, "default@old", "deploys budgets hotels item"),
        old
    );
    // A compacted head takes further writes: the bitmaps and chunk ranges moved with it.
    store
        .set_acl("doc1", ["eng"])
        .expect("acl after compaction");
    store.delete("doc2").expect("delete after compaction");
    let public = store
        .search(&SearchRequest::text("item").k(50))
        .expect("search");
    assert!(public
        .results
        .iter()
        .all(|h| h.doc_id != "doc1" && h.doc_id != "doc2"));
    assert!(store
        .indexes()
        .compact("default")
        .expect("compact")
        .is_some());
    assert!(
        store
            .indexes()
            .compact("default")
            .expect("compact")
            .is_none(),
        "nothing left to do"
    );
    let mut store = store;
    let report = store.check_integrity().expect("check");
    assert!(report.is_consistent(), "{:?}", report.problems);
}

#[test]
fn the_merge_policy_runs_after_commits() {
    let options = small_options().merge(MergePolicy::default());
    let (_dir, store) = temp_store(options);
    let mut merged = 0;
    for round in 0..30 {
        let receipt = store
            .upsert(doc(
                &format!("d{}", round % 4),
                &format!("Round {round} words."),
            ))
            .expect("upsert");
        assert_eq!(receipt.merge_error, None);
        merged += receipt.merged.len();
        assert!(store.vectors("default").expect("vectors").segments.len() <= 8);
    }
    assert!(merged > 0);
}

#[test]
fn gc_keeps_named_versions_and_their_answers() {
    let (_dir, store) = temp_store(small_options());
    seed(&store);
    for i in 0..6 {
        store
            .upsert(doc("lunch", &format!("Lunch is at {i} o'clock.")))
            .expect("update");
    }
    store.versions("default").tag(2, "kept").expect("tag");
    store
        .aliases()
        .set("prod", &[route("default", 4, 100)])
        .expect("alias");
    let kept = answer(&store, "default@2", "lunch deploy");
    let aliased = answer(&store, "prod", "lunch deploy");
    let report = store.gc(2).expect("gc");
    assert_eq!(report.retained["default"], [2, 4, 6, 7]);
    assert_eq!(report.versions, 4);
    assert!(report.revisions > 0 && report.children > 0);
    assert_eq!(answer(&store, "default@2", "lunch deploy"), kept);
    assert_eq!(answer(&store, "prod", "lunch deploy"), aliased);
    assert!(matches!(
        store.search(&SearchRequest::text("x").target("default@3")),
        Err(QueryError::Read(ReadError::UnknownVersion { .. }))
    ));
    assert!(store.gc(0).is_err());
    let path = store.path().to_path_buf();
    drop(store);
    let mut store = small_options().open(&path).expect("reopen");
    assert_eq!(answer(&store, "default@kept", "lunch deploy"), kept);
    let report = store.check_integrity().expect("check");
    assert!(report.is_consistent(), "{:?}", report.problems);
}

#[test]
fn the_request_log_records_searches_and_feedback() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.folio");
    let options = small_options().log_requests(true);
    let store = options.clone().open(&path).expect("create");
    seed(&store);
    let response = store
        .search(
            &SearchRequest::text("rollback deploy")
                .as_principals(["eng"])
                .route_key("tenant-7"),
        )
        .expect("search");
    let id = response.request_id.expect("logged");
    let second = store
        .search(&SearchRequest::text("vacation"))
        .expect("search");
    assert_eq!(second.request_id, Some(id + 1));
    store
        .log()
        .feedback(id, Some(Rating::Down), Some("stale answer".into()))
        .expect("feedback");
    assert!(matches!(
        store.log().feedback(999, Some(Rating::Up), None),
        Err(WriteError::UnknownRequest { id: 999 })
    ));
    drop(store);
    // Closing the store made the unsynced entries durable.
    let store = options.open(&path).expect("reopen");
    let log = store.log().entries().expect("log");
    assert_eq!(log.len(), 2);
    let first = &log[0];
    assert_eq!(first.request_id, id);
    assert_eq!(first.request.index, "default");
    assert_eq!(first.request.version, response.version);
    assert_eq!(first.request.principals, Some(vec!["eng".to_string()]));
    assert_eq!(first.request.route_key.as_deref(), Some("tenant-7"));
    assert_eq!(
        first.request.parents.len(),
        response.results.len(),
        "one parent per returned unit"
    );
    assert_eq!(
        first.request.context_tokens,
        response
            .results
            .iter()
            .map(|h| h.tokens as u64)
            .sum::<u64>()
    );
    let feedback = first.request.feedback.as_ref().expect("feedback");
    assert_eq!(feedback.rating, Some(Rating::Down));
    let line = serde_json::to_value(first).expect("json");
    assert_eq!(line["feedback"]["rating"], "thumb_down");
    assert_eq!(line["request_id"], id);
    // Logging is opt-in.
    drop(store);
    let quiet = small_options().open(&path).expect("reopen");
    assert_eq!(
        quiet
            .search(&SearchRequest::text("vacation"))
            .expect("search")
            .request_id,
        None
    );
}
