//! A search node: a store with three principals' documents (some public) published to
//! milvus-lite, the file moved away, and `Searcher` (Milvus alone) asked what a local exact
//! search of the store answers: for every principal and the public, with and without a
//! metadata filter (one Milvus evaluates, one the node checks itself), for parent, section
//! and window units, the answers are equal (ids, order, texts, spans, scores to 1e-5) on a
//! FLAT publish; on the default HNSW publish, recall@10 against local exact is at least
//! 0.95. Then a revocation, a grant and a delete, synced: equal again, nothing hidden shown.
//! A query embedder with another fingerprint is refused, so is a collection published
//! before search nodes; and the command answers without a store. At 100:1 hidden to
//! visible, answers are filled; and with every change brought by the follower alone (a
//! revocation, a grant, a delete, a second version, an alias set and moved), equal to the
//! store's after each step on FLAT, recall@10 >= 0.95 on HNSW.

use crate::common;
use crate::remote::{flat, Rng};

use std::cell::Cell;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use folio::embed::{Embedder, HashConfig, HashEmbedder};
use folio::filter::{parse_date, MetadataValue};
use folio::query::{Expand, Hybrid};
use folio::store::{NoProgress, Route};
use folio::{
    Document, Filter, QueryError, ReadError, SearchMode, SearchRequest, SearchResponse,
    SourceFormat, Store,
};
use folio_milvus::{
    catalog_name, documents_name, Error, Follower, PublishOptions, Remote, Searcher,
};

const PRINCIPALS: [&str; 3] = ["alice", "bob", "carol"];
const WORDS: [&str; 20] = [
    "invoice", "refund", "card", "travel", "visa", "laptop", "printer", "password", "badge",
    "parking", "salary", "pension", "holiday", "hotel", "contract", "vendor", "audit", "budget",
    "server", "backup",
];
const QUERIES: [&str; 4] = [
    "refund a card invoice",
    "travel visa hotel",
    "reset my password badge",
    "server backup audit budget",
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

/// Filters: none, one Milvus evaluates exactly, one (a date ordering) the node checks.
const FILTERS: [Option<&str>; 3] = [None, Some(r#"team = "red""#), Some("due >= 2024-01-12")];

/// Who asks: each principal, and the public.
fn askers() -> Vec<Vec<&'static str>> {
    let mut askers: Vec<Vec<&str>> = PRINCIPALS.iter().map(|p| vec![*p]).collect();
    askers.push(vec![]);
    askers
}

fn request(
    query: &str,
    principals: &[&str],
    filter: Option<&str>,
    expand: Expand,
) -> SearchRequest {
    let mut request = SearchRequest::text(query)
        .as_principals(principals.iter().copied())
        .expand(expand)
        .k(5);
    if let Some(filter) = filter {
        request = request.filter(filter.parse::<Filter>().unwrap());
    }
    request
}

/// The node's answer is the local one: index, version, and every unit's ids, spans, texts,
/// fields and children, scores to 1e-5.
fn assert_same(node: &SearchResponse, local: &SearchResponse, case: &str) {
    assert_eq!(
        (&node.index, node.version),
        (&local.index, local.version),
        "{case}"
    );
    assert_eq!(node.results.len(), local.results.len(), "{case}");
    for (a, b) in node.results.iter().zip(&local.results) {
        assert_eq!(
            (&a.doc_id, &a.parent_id, &a.section_path, a.start, a.end),
            (&b.doc_id, &b.parent_id, &b.section_path, b.start, b.end),
            "{case}"
        );
        assert_eq!(a.text, b.text, "{case}");
        assert_eq!(
            (&a.title, &a.metadata, a.tokens),
            (&b.title, &b.metadata, b.tokens),
            "{case}"
        );
        assert!(
            (a.score - b.score).abs() < 1e-5,
            "{case}: {} {}",
            a.score,
            b.score
        );
        let ids = |h: &folio::Hit| {
            h.children
                .iter()
                .map(|c| (c.chunk_id.clone(), c.start, c.end))
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(a), ids(b), "{case}");
        for (x, y) in a.children.iter().zip(&b.children) {
            assert!((x.score - y.score).abs() < 1e-5, "{case}");
        }
    }
}

/// Every asker, query, filter and expansion: the node's answer equals the local one.
fn compare_all(store: &Store, node: &Searcher, expands: &[Expand]) -> usize {
    let mut compared = 0;
    for principals in askers() {
        for (q, query) in QUERIES.iter().enumerate() {
            for filter in FILTERS {
                for &expand in expands {
                    // Every expansion on the first query; the parent on the others.
                    if q > 0 && expand != Expand::Parent {
                        continue;
                    }
                    let request = request(query, &principals, filter, expand);
                    let local = store.search(&request).unwrap();
                    let answer = node.search(&request).unwrap();
                    let case = format!("{query:?} as {principals:?} where {filter:?}, {expand:?}");
                    assert!(!local.results.is_empty(), "{case}");
                    assert_same(&answer, &local, &case);
                    compared += 1;
                }
            }
        }
    }
    compared
}

/// Units (parent ids) of the node's top 10 that local exact search also returns, over all.
fn recall_at_10(store: &Store, node: &Searcher) -> f64 {
    let (mut found, mut total) = (0usize, 0usize);
    for principals in askers() {
        for query in QUERIES {
            let request = request(query, &principals, None, Expand::Parent)
                .k(10)
                .no_dedup();
            let local: BTreeSet<String> = store
                .search(&request)
                .unwrap()
                .results
                .into_iter()
                .map(|h| h.parent_id)
                .collect();
            let answer: BTreeSet<String> = node
                .search(&request)
                .unwrap()
                .results
                .into_iter()
                .map(|h| h.parent_id)
                .collect();
            found += local.intersection(&answer).count();
            total += local.len();
        }
    }
    found as f64 / total as f64
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
    // A node ranks by vector only: lexical and hybrid requests are refused, typed, naming the
    // mode (docs/milvus.md, "Hybrid on Milvus").
    let node = Searcher::connect(&server.uri(), "default").unwrap();
    for mode in [SearchMode::Lexical, SearchMode::Hybrid(Hybrid::default())] {
        let name = mode.name();
        let refused = node.search(&SearchRequest::text("refund").mode(mode));
        assert!(
            matches!(
                refused,
                Err(Error::Query(QueryError::Read(ReadError::InvalidParameter(ref p))))
                    if p.name == "mode" && p.value == name
            ),
            "{refused:?}"
        );
    }
    // A publish again writes nothing new: the same rows.
    remote
        .publish(&store, &format!("default@{v1}"), &flat(), &NoProgress)
        .unwrap();
    assert_eq!(remote.rows(&documents).unwrap(), 60);
}

#[test]
fn a_node_answers_as_the_store_without_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.folio");
    let (store, v1) = store_at(&path);
    let server = common::LiteServer::start();
    let remote = Remote::connect(&server.uri()).unwrap();
    remote
        .publish(&store, &format!("default@{v1}"), &flat(), &NoProgress)
        .unwrap();
    let hnsw = PublishOptions {
        prefix: "hnsw".to_string(),
        ..PublishOptions::default()
    };
    remote
        .publish(&store, &format!("default@{v1}"), &hnsw, &NoProgress)
        .unwrap();
    let windows = store
        .search(&request(QUERIES[0], &[], None, Expand::Window(1)))
        .unwrap();
    assert!(
        windows.results.iter().any(
            |h| h.children.len() == 1 && h.text.len() > h.children[0].end - h.children[0].start
        ),
        "windows are wider than their child"
    );

    // The file moved away: the node never had its path, and the store is opened again
    // only as the oracle.
    drop(store);
    let moved = dir.path().join("moved.folio");
    std::fs::rename(&path, &moved).unwrap();
    assert!(!path.exists());
    let store = Store::builder().open(&moved).unwrap();

    let node = Searcher::connect(&server.uri(), "default").unwrap();
    let expands = [Expand::Parent, Expand::Section, Expand::Window(1)];
    let compared = compare_all(&store, &node, &expands);
    assert_eq!(compared, 4 * (3 * 3 + 3 * 3));
    calls_per_search(&server.uri(), &store);

    let hnsw_node = Searcher::connect(&server.uri(), "default")
        .unwrap()
        .prefix("hnsw");
    let recall = recall_at_10(&store, &hnsw_node);
    eprintln!("HNSW recall@10 against local exact: {recall:.3}");
    assert!(recall >= 0.95, "HNSW recall@10 {recall}");

    // A revocation, a grant and a delete, committed in the store, then synced: the node
    // answers from the version they made, as the store does, and shows nothing hidden.
    let mut batch = store.batch();
    batch.set_acl("doc-1", ["bob"]); // alice loses it
    batch.set_acl("doc-3", ["carol", "alice"]); // alice gains it
    batch.delete("doc-5"); // public
    let changed = batch.commit().unwrap().versions["default"];
    assert!(changed > v1);
    remote.sync(&store, "folio", 512).unwrap();
    let compared = compare_all(&store, &node, &[Expand::Parent]);
    assert_eq!(compared, 4 * 4 * 3);
    for principals in askers() {
        let request = request("guide", &principals, None, Expand::Parent).k(100);
        let answer = node.search(&request).unwrap();
        assert_eq!(answer.version, changed);
        let docs: BTreeSet<String> = answer.results.iter().map(|h| h.doc_id.clone()).collect();
        assert!(!docs.contains("doc-5"), "{principals:?}");
        assert_eq!(
            docs.contains("doc-1"),
            principals.contains(&"bob"),
            "{principals:?}"
        );
        assert_eq!(
            docs.contains("doc-3"),
            principals.iter().any(|p| ["alice", "carol"].contains(p)),
            "{principals:?}"
        );
    }

    // Aliases: one moved with `folio milvus alias`, one splitting traffic between the two
    // versions (set in the store, published by the next sync): the node routes each key to
    // the version the store routes it to. Searchers kept open follow the move as their
    // catalog age allows, and what it costs in calls.
    remote
        .set_alias(&store, "prod", "default", v1, "folio")
        .unwrap();
    let on_prod = request(QUERIES[2], &["carol"], None, Expand::Parent).target("prod");
    let fresh = Searcher::connect(&server.uri(), "prod").unwrap();
    let stale = Searcher::connect(&server.uri(), "prod")
        .unwrap()
        .catalog_max_age(Duration::from_secs(3600));
    let bounded = Searcher::connect(&server.uri(), "prod")
        .unwrap()
        .catalog_max_age(Duration::from_millis(1500));
    for node in [&fresh, &stale, &bounded] {
        assert_eq!(node.search(&on_prod).unwrap().version, v1);
    }
    // The version prod moves to, searched directly first: its records are kept.
    let direct = on_prod.clone().target(format!("default@{changed}"));
    assert_eq!(fresh.search(&direct).unwrap().version, changed);
    let bounded_read = std::time::Instant::now();
    remote
        .set_alias(&store, "prod", "default", changed, "folio")
        .unwrap();
    // Read at every search: the move is seen at once; `changed` is served by v1's
    // collection (an ACL change and a delete add no segment), whose records are kept, so
    // the move costs no call beyond a search of that version: the catalog and the search.
    let (answer, calls) = fresh.search_counted(&on_prod).unwrap();
    assert_eq!(answer.version, changed);
    assert_same(&answer, &store.search(&on_prod).unwrap(), "prod moved");
    assert_eq!(calls.milvus_calls(), 2, "{calls:?}");
    // An hour's catalog: still the version it read, in one call (the search).
    let (answer, calls) = stale.search_counted(&on_prod).unwrap();
    assert_eq!(answer.version, v1);
    assert_eq!(calls.milvus_calls(), 1, "{calls:?}");
    // Past its age, the bounded one reads the catalog again and follows.
    let left = Duration::from_millis(1500).saturating_sub(bounded_read.elapsed());
    std::thread::sleep(left + Duration::from_millis(50));
    assert_eq!(bounded.search(&on_prod).unwrap().version, changed);
    let split = |version, weight| Route {
        index: "default".to_string(),
        version,
        weight,
    };
    store
        .aliases()
        .set("gray", &[split(v1, 50), split(changed, 50)])
        .unwrap();
    store.versions("default").tag(v1, "first").unwrap();
    remote.sync(&store, "folio", 512).unwrap();
    let tagged = request(QUERIES[3], &["bob"], None, Expand::Parent).target("default@first");
    let answer = node.search(&tagged).unwrap();
    assert_eq!(answer.version, v1);
    assert_same(&answer, &store.search(&tagged).unwrap(), "a tag");
    let mut versions = BTreeSet::new();
    for key in ["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"] {
        for target in ["prod", "gray"] {
            let request = request(QUERIES[2], &["alice"], None, Expand::Parent)
                .target(target)
                .route_key(key);
            let local = store.search(&request).unwrap();
            assert_same(
                &node.search(&request).unwrap(),
                &local,
                &format!("{target} {key}"),
            );
            versions.insert(local.version);
        }
    }
    assert_eq!(versions, BTreeSet::from([v1, changed]), "both routes taken");

    // A query embedder of the same name and dimension but other settings: refused.
    let other = HashEmbedder::with_config(HashConfig {
        word_weight: 0.75,
        ..HashConfig::default()
    })
    .unwrap();
    let refused = Searcher::connect(&server.uri(), "default")
        .unwrap()
        .with_embedder(Arc::new(other))
        .search(&SearchRequest::text("refund"));
    assert!(
        matches!(refused, Err(Error::EmbedderMismatch { ref index, .. }) if index == "default"),
        "{refused:?}"
    );
    // The same embedder is accepted.
    let same = Searcher::connect(&server.uri(), "default")
        .unwrap()
        .with_embedder(Arc::new(HashEmbedder::default()))
        .search(&request(QUERIES[0], &["alice"], None, Expand::Parent))
        .unwrap();
    assert_same(
        &same,
        &store
            .search(&request(QUERIES[0], &["alice"], None, Expand::Parent))
            .unwrap(),
        "with the embedder given",
    );

    // The CLI, without a store.
    cli_answers_without_a_store(&store, &server.uri());

    // Published before search nodes: no documents collection, no catalog.
    let collection = format!("folio_default_v{v1}");
    common::with_client(&server.uri(), |client| async move {
        for name in [format!("{collection}_docs"), "folio__node".to_string()] {
            client
                .drop_collection(
                    milvus::v2::prelude::DropCollectionRequest::builder()
                        .collection_name(name)
                        .build()
                        .unwrap(),
                )
                .await
                .unwrap();
        }
    });
    let refused = node.search(&SearchRequest::text("refund"));
    match &refused {
        Err(
            e @ Error::PublishedBeforeNodes {
                collection: None,
                target,
                ..
            },
        ) => {
            assert_eq!(target, "default");
            assert!(
                e.to_string()
                    .contains("run `folio publish STORE default --milvus"),
                "{e}"
            );
        }
        other => panic!("{other:?}"),
    }
    // The catalog back (a sync writes it), the documents still missing: named.
    remote.sync(&store, "folio", 512).unwrap();
    let refused = node.search(&SearchRequest::text("refund"));
    match &refused {
        Err(
            e @ Error::PublishedBeforeNodes {
                collection: Some(c),
                ..
            },
        ) => {
            assert_eq!(c, &format!("folio_default_v{v1}"));
            assert!(
                e.to_string()
                    .contains(&format!("run `folio publish STORE default@{v1} --milvus")),
                "{e}"
            );
        }
        other => panic!("{other:?}"),
    }
    // The publish it names, run: the node answers again.
    remote
        .publish(&store, &format!("default@{v1}"), &flat(), &NoProgress)
        .unwrap();
    let request = request(QUERIES[1], &["carol"], None, Expand::Section);
    assert_same(
        &node.search(&request).unwrap(),
        &store.search(&request).unwrap(),
        "published again",
    );
}

/// The Milvus calls of a searcher kept open: its first search reads the catalog (one
/// query), ranks (one search) and fetches the documents (a query per 32); the same search
/// again makes two calls (catalog, search), the records kept; with a catalog allowed to be
/// an hour old, one (the search). A searcher that keeps no records fetches them again.
fn calls_per_search(uri: &str, store: &Store) {
    let request = request(QUERIES[1], &["bob"], None, Expand::Section);
    let local = store.search(&request).unwrap();
    let node = Searcher::connect(uri, "default").unwrap();
    let (first, calls) = node.search_counted(&request).unwrap();
    assert_same(&first, &local, "first search");
    assert_eq!((calls.has_collection, calls.searches), (0, 1), "{calls:?}");
    let documents = calls.queries - 1;
    assert!(documents >= 1, "{calls:?}");
    assert!(calls.in_milvus > Duration::ZERO);
    assert_eq!(calls.short, None);
    let (again, calls) = node.search_counted(&request).unwrap();
    assert_same(&again, &local, "second search");
    assert_eq!((calls.queries, calls.searches), (1, 1), "{calls:?}");
    let cached = Searcher::connect(uri, "default")
        .unwrap()
        .catalog_max_age(Duration::from_secs(3600));
    cached.search(&request).unwrap();
    let (answer, calls) = cached.search_counted(&request).unwrap();
    assert_same(&answer, &local, "catalog cached");
    assert_eq!(calls.milvus_calls(), 1, "{calls:?}");
    let forgetful = Searcher::connect(uri, "default")
        .unwrap()
        .documents_cache(0);
    forgetful.search(&request).unwrap();
    let (answer, calls) = forgetful.search_counted(&request).unwrap();
    assert_same(&answer, &local, "no records kept");
    assert_eq!(calls.queries, 1 + documents, "{calls:?}");
}

/// `folio milvus search --milvus URI --index default QUERY`: no store, the local answer.
fn cli_answers_without_a_store(store: &Store, uri: &str) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_folio-milvus"))
        .args([
            "search",
            QUERIES[0],
            "--index",
            "default",
            "--as",
            "alice",
            "--where",
            r#"team = "red""#,
            "--expand",
            "window:1",
            "--k",
            "4",
            "--json",
            "--milvus",
            uri,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let local = store
        .search(
            &request(
                QUERIES[0],
                &["alice"],
                Some(r#"team = "red""#),
                Expand::Window(1),
            )
            .k(4),
        )
        .unwrap();
    let texts = |results: &serde_json::Value| -> Vec<String> {
        results
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["text"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        texts(&json["results"]),
        local
            .results
            .iter()
            .map(|h| h.text.clone())
            .collect::<Vec<_>>()
    );
    assert_eq!(json["version"], local.version);
    // Plain text names the version and says it came from a node.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_folio-milvus"))
        .args(["search", QUERIES[0], "--index", "default", "--milvus", uri])
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        printed.starts_with(&format!("default@{} (search node)", local.version)),
        "{printed}"
    );
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

/// Note `i` of the 100:1 stores: `dave` sees one in a hundred, `erin` one in a thousand,
/// `alice` the rest; a team and a due date to filter on.
fn note(rng: &mut Rng, i: usize, acl: &str) -> Document {
    let text = format!("# Note {i}\n\n{}.\n", words(rng, 12));
    Document::new(format!("note-{i}"), SourceFormat::Markdown, text)
        .with_acl([acl])
        .with_metadata(
            "team",
            MetadataValue::String(["red", "blue"][(i / 100 + i % 7) % 2].to_string()),
        )
        .with_metadata(
            "due",
            MetadataValue::Date(
                parse_date("2024-01-01").unwrap() + ((i / 100) % 30) as i64 * DAY_MS,
            ),
        )
}

/// 3,000 notes at `path`, hidden rows outnumbering `dave`'s visible ones 99 to 1.
fn notes_at(path: &std::path::Path) -> (Store, u64) {
    let store = Store::builder().create(true).open(path).unwrap();
    let mut rng = Rng(100);
    let mut batch = store.batch();
    for i in 0..3_000usize {
        let acl = if i % 100 == 0 {
            "dave"
        } else if i % 1_000 == 7 {
            "erin"
        } else {
            "alice"
        };
        batch.upsert(note(&mut rng, i, acl));
    }
    let version = batch.commit().unwrap().versions["default"];
    (store, version)
}

/// Hidden rows outnumber the asker's visible ones about 100 to 1: 3,000 one-paragraph notes,
/// `dave` sees 30 (one in a hundred), `erin` 3, `alice` the rest. On a FLAT publish, for
/// each query, with no filter, a filter Milvus evaluates and one the node checks alone, the
/// node's answer is the local exact one (ids, order, texts, scores), filled to min(k,
/// visible) and not marked short; when it holds fewer children than asked, the node
/// counted, and its count is the store's visible set.
#[test]
fn a_node_fills_answers_at_100_to_1() {
    let dir = tempfile::tempdir().unwrap();
    let (store, version) = notes_at(&dir.path().join("kb.folio"));
    let server = common::LiteServer::start();
    let remote = Remote::connect(&server.uri()).unwrap();
    remote
        .publish(&store, &format!("default@{version}"), &flat(), &NoProgress)
        .unwrap();
    let node = Searcher::connect(&server.uri(), "default").unwrap();
    let everything = store
        .search(&SearchRequest::text("note").as_principals(["dave"]).k(1))
        .unwrap();
    let hidden = 3_000 - everything.stats.visible;
    assert_eq!(everything.stats.visible, 30);
    assert!(hidden >= 99 * everything.stats.visible, "{hidden} hidden");

    let k = 20;
    let mut counted = 0;
    for query in QUERIES {
        for principals in [vec!["dave"], vec!["erin"], vec!["alice"], vec![]] {
            for filter in FILTERS {
                let request = request(query, &principals, filter, Expand::Parent).k(k);
                let local = store.search(&request).unwrap();
                let (answer, calls) = node.search_counted(&request).unwrap();
                let case = format!("{query:?} as {principals:?} where {filter:?}");
                assert_same(&answer, &local, &case);
                // One child a unit: filled means min(k, visible) units.
                let visible = local.stats.visible;
                assert_eq!(answer.results.len() as u64, visible.min(k as u64), "{case}");
                assert_eq!(calls.short, None, "{case}: {calls:?}");
                if let Some(seen) = calls.visible {
                    assert_eq!(seen, visible, "{case}: the node's count");
                    assert_eq!(answer.stats.visible, visible, "{case}");
                    counted += 1;
                } else {
                    assert!(answer.results.len() == k, "{case}: full, not counted");
                }
            }
        }
    }
    // Every answer below k was counted: dave's and erin's filtered ones, erin's, the public.
    assert!(counted >= 4 * 6, "{counted} counted");

    // The default HNSW publish: an approximate index under a 1% audience misses rows (on
    // milvus-lite 3.2.2, most of these answers at the index's default width). The node
    // counts, searches again wider, and every answer is then filled to min(k, visible) or
    // marked short, with the reason `IndexMissed` and Milvus's count as what is visible
    // (an upper bound when the node checks a filter test alone: such an answer may be
    // filled and still marked).
    let hnsw = PublishOptions {
        prefix: "hnsw".to_string(),
        ..PublishOptions::default()
    };
    remote
        .publish(&store, &format!("default@{version}"), &hnsw, &NoProgress)
        .unwrap();
    let node = Searcher::connect(&server.uri(), "default")
        .unwrap()
        .prefix("hnsw");
    let (mut filled, mut marked, mut widened) = (0, 0, 0);
    for query in QUERIES {
        for principals in [vec!["dave"], vec!["erin"]] {
            for filter in FILTERS {
                let request = request(query, &principals, filter, Expand::Parent).k(k);
                let local = store.search(&request).unwrap();
                let (answer, calls) = node.search_counted(&request).unwrap();
                let case = format!("HNSW: {query:?} as {principals:?} where {filter:?}");
                let wanted = local.stats.visible.min(k as u64);
                let full = answer.results.len() as u64 == wanted;
                assert!(answer.results.len() as u64 <= wanted, "{case}");
                match &calls.short {
                    None => assert!(full, "{case}: short, not marked"),
                    Some(short) => {
                        assert_eq!(
                            short.reason,
                            folio_milvus::ShortReason::IndexMissed,
                            "{case}"
                        );
                        assert!((short.found as u64) < short.visible, "{case}: {short:?}");
                        // Filled yet marked: only when a filter test the node checks alone
                        // makes Milvus's count an upper bound of what is visible.
                        assert!(!full || filter == FILTERS[2], "{case}: {short:?}");
                        marked += 1;
                    }
                }
                filled += usize::from(full);
                if calls.widened {
                    assert!(calls.searches >= 2, "{case}: {calls:?}");
                    widened += 1;
                }
            }
        }
    }
    eprintln!(
        "HNSW at 100:1: {filled} of 24 answers filled, {marked} marked short, {widened} searched again wider"
    );
    assert!(
        widened > 0,
        "no answer needed a wider search: the case is not exercised"
    );
}

/// The issue's case for a node with no file: the 100:1 notes (`notes_at`) published, the
/// file moved away, and every change made by plain store commands and brought to Milvus by
/// the follower alone (`Follower::drain_once`: rows and the catalog): a revocation, a grant
/// and a delete, a second version with new notes (published), an alias set and moved. After
/// each drain, for `dave` (1 in 100), `erin`, `alice` and the public, with and without a
/// filter (one Milvus evaluates, one the node checks alone), through the index and through
/// the alias, the node names the store's version and shows no hidden chunk; on a FLAT
/// publish its answer is the local exact one (ids, order, texts, scores) and holds min(k,
/// visible) units, unmarked.
#[test]
fn a_node_follows_the_publisher_at_100_to_1() {
    follow_at_100_to_1(&flat(), Compare::Exact);
}

/// The same on the default HNSW publish: every answer filled to min(k, visible) or marked
/// short, and recall@10 against local exact at least 0.95 over every stage's answers.
#[test]
fn a_node_follows_the_publisher_at_100_to_1_on_hnsw() {
    let recall = follow_at_100_to_1(&PublishOptions::default(), Compare::Recall);
    eprintln!("HNSW at 100:1, followed: recall@10 against local exact {recall:.3}");
    assert!(recall >= 0.95, "HNSW recall@10 {recall}");
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Compare {
    /// Equal to the local answer, filled, unmarked.
    Exact,
    /// Filled or marked short; units counted against local exact (k = 10).
    Recall,
}

/// Runs the followed 100:1 case on a publish with `options`; returns the units of local
/// exact answers the node also returned, over all of them.
fn follow_at_100_to_1(options: &PublishOptions, compare: Compare) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.folio");
    let (store, v1) = notes_at(&path);
    let server = common::LiteServer::start();
    let remote = Remote::connect(&server.uri()).unwrap();
    remote
        .publish(&store, "default", options, &NoProgress)
        .unwrap();
    drop(store);
    let moved = dir.path().join("moved.folio");
    std::fs::rename(&path, &moved).unwrap();
    // The store, opened again, makes the changes; the node never had its path.
    let store = Store::builder().open(&moved).unwrap();
    let node = Searcher::connect(&server.uri(), "default").unwrap();
    let follower = Follower::new(&store, &remote);
    let k = match compare {
        Compare::Exact => 20,
        Compare::Recall => 10,
    };
    let (found, total) = (Cell::new(0usize), Cell::new(0usize));
    // Two queries a stage (a node search waits for Milvus's strong consistency).
    let same = |target: &str, stage: &str| {
        for query in &QUERIES[..2] {
            for principals in [vec!["dave"], vec!["erin"], vec!["alice"], vec![]] {
                for filter in FILTERS {
                    let request = request(query, &principals, filter, Expand::Parent)
                        .k(k)
                        .target(target);
                    let local = store.search(&request).unwrap();
                    let (answer, calls) = node.search_counted(&request).unwrap();
                    let case =
                        format!("{stage}: {target} {query:?} as {principals:?} where {filter:?}");
                    assert_eq!(answer.version, local.version, "{case}");
                    for hit in &answer.results {
                        let acl = store.document(&hit.doc_id).unwrap().unwrap().acl;
                        assert!(
                            acl.iter().any(|p| principals.contains(&p.as_str())),
                            "{case}: {} is hidden from the asker",
                            hit.doc_id
                        );
                    }
                    let wanted = local.stats.visible.min(k as u64);
                    let filled = answer.results.len() as u64 == wanted;
                    match compare {
                        Compare::Exact => {
                            assert_same(&answer, &local, &case);
                            assert!(filled, "{case}");
                            assert_eq!(calls.short, None, "{case}");
                        }
                        Compare::Recall => {
                            assert!(filled || calls.short.is_some(), "{case}: short, not marked");
                            let units = |r: &SearchResponse| -> BTreeSet<String> {
                                r.results.iter().map(|h| h.parent_id.clone()).collect()
                            };
                            let local = units(&local);
                            found.set(found.get() + local.intersection(&units(&answer)).count());
                            total.set(total.get() + local.len());
                        }
                    }
                }
            }
        }
    };
    let dave_sees = |target: &str| -> BTreeSet<String> {
        let request = SearchRequest::text("note")
            .as_principals(["dave"])
            .k(100)
            .target(target);
        node.search(&request)
            .unwrap()
            .results
            .into_iter()
            .map(|h| h.doc_id)
            .collect()
    };
    let exact = compare == Compare::Exact;
    same("default", "published");
    assert!(!exact || dave_sees("default").len() == 30);

    // A revocation, a grant and a delete: in the outbox, not yet in Milvus.
    store.set_acl("note-100", ["alice"]).unwrap();
    store.set_acl("note-5", ["alice", "dave"]).unwrap();
    store.delete("note-200").unwrap();
    let before = dave_sees("default");
    assert!(!exact || (before.contains("note-100") && before.contains("note-200")));
    assert!(!before.contains("note-5"));
    let report = follower.drain_once().unwrap();
    assert_eq!((report.entries, report.pending), (3, 0), "{report:?}");
    let after = dave_sees("default");
    assert!(!after.contains("note-100") && !after.contains("note-200"));
    assert!(!exact || after.contains("note-5"));
    same("default", "revoked, granted, deleted");
    let v_changed = store
        .versions("default")
        .list()
        .unwrap()
        .iter()
        .map(|v| v.version)
        .max()
        .unwrap();
    assert!(v_changed > v1);

    // A second version with a new segment (new notes, dave's among them), published; an
    // alias on the changed version, then moved to the new one, by plain store commands.
    let mut rng = Rng(7);
    let mut batch = store.batch();
    for i in 3_000..3_300usize {
        batch.upsert(note(
            &mut rng,
            i,
            if i % 100 == 0 { "dave" } else { "alice" },
        ));
    }
    let v2 = batch.commit().unwrap().versions["default"];
    remote
        .publish(&store, "default", options, &NoProgress)
        .unwrap();
    let route = |version| Route {
        index: "default".into(),
        version,
        weight: 100,
    };
    store.aliases().set("prod", &[route(v_changed)]).unwrap();
    follower.drain_once().unwrap();
    same("default", "second version");
    same("prod", "alias set");
    assert!(!exact || dave_sees("prod").len() == 29);
    store.aliases().set("prod", &[route(v2)]).unwrap();
    follower.drain_once().unwrap();
    same("prod", "alias moved");
    assert!(!exact || dave_sees("prod").len() == 32);
    found.get() as f64 / total.get().max(1) as f64
}

/// Peak resident memory (VmHWM, KiB) of `program args`, run as a child of milvus-lite's
/// Python (its `RUSAGE_CHILDREN` maximum is that one child's); fails when the run fails.
fn peak_kib(program: &std::path::Path, args: &[&str]) -> u64 {
    let script = "import resource, subprocess, sys\n\
        done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n\
        assert done.returncode == 0, done\n\
        print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)";
    let out = std::process::Command::new(common::python())
        .args(["-c", script])
        .arg(program)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{program:?} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// The figures of `docs/milvus.md`, "Search nodes, measured", in one run (release build):
/// a store of 3,000 two-section documents published with the default HNSW index; the peak
/// memory of one `folio milvus search` without STORE (a node), the same search with STORE,
/// and a local `folio search`, each a process of its own; then 40 searches (four queries,
/// ten rounds, the three principals in turn, k = 5, a filter pushed down) on a node kept
/// open, and on one whose catalog may be a minute old: latency,
/// the node's own time outside Milvus calls, calls per search; beside pymilvus alone with
/// the node's vectors, expressions and limits at the same `Strong` consistency, and local
/// search. Prints a table; asserts the node's answers equal local ones in size and its
/// calls per search after the first.
#[test]
#[ignore]
fn measure_a_node() {
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.folio");
    let store = Store::builder().create(true).open(&path).unwrap();
    let mut rng = Rng(3_000);
    let mut batch = store.batch();
    for i in 0..3_000 {
        batch.upsert(document(&mut rng, i));
    }
    batch.commit().unwrap();
    let server = common::LiteServer::start();
    let uri = server.uri();
    let remote = Remote::connect(&uri).unwrap();
    let started = Instant::now();
    let report = remote
        .publish(&store, "default", &PublishOptions::default(), &NoProgress)
        .unwrap();
    let seconds = started.elapsed().as_secs_f64();
    let file_bytes = std::fs::metadata(&path).unwrap().len();
    println!(
        "store: 3,000 documents, {} children, {:.1} MB file; publish (HNSW, children, documents, catalog): {:.1} s, {:.0} child rows/s",
        report.rows,
        file_bytes as f64 / 1e6,
        seconds,
        report.rows as f64 / seconds
    );

    // Memory: one search a process.
    let filter = r#"team = "red""#;
    let milvus_bin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_folio-milvus"));
    let folio_bin = milvus_bin.with_file_name("folio");
    assert!(
        folio_bin.exists(),
        "build folio beside folio-milvus: cargo build --release -p folio-cli"
    );
    let store_arg = path.to_str().unwrap();
    let common_args = [
        QUERIES[0], "--index", "default", "--as", "alice", "--where", filter, "--k", "5",
    ];
    let mut node_args = vec!["search"];
    node_args.extend(common_args);
    node_args.extend(["--milvus", &uri]);
    let mut through_args = vec!["search", store_arg];
    through_args.extend(common_args);
    through_args.extend(["--milvus", &uri]);
    let mut local_args = vec!["search", store_arg];
    local_args.extend(common_args);
    let median = |mut v: Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let node_kib = median((0..3).map(|_| peak_kib(&milvus_bin, &node_args)).collect());
    let through_kib = median(
        (0..3)
            .map(|_| peak_kib(&milvus_bin, &through_args))
            .collect(),
    );
    let local_kib = median((0..3).map(|_| peak_kib(&folio_bin, &local_args)).collect());

    // Latency on a node kept open.
    let requests: Vec<SearchRequest> = (0..10)
        .flat_map(|round| {
            QUERIES.iter().enumerate().map(move |(i, query)| {
                request(
                    query,
                    &[PRINCIPALS[(round + i) % 3]],
                    Some(filter),
                    Expand::Parent,
                )
            })
        })
        .collect();
    let node = Searcher::connect(&uri, "default").unwrap();
    let (_, first) = node.search_counted(&requests[0]).unwrap();
    for request in &requests {
        node.search(request).unwrap();
        store.search(request).unwrap();
    }
    let aged = Searcher::connect(&uri, "default")
        .unwrap()
        .catalog_max_age(Duration::from_secs(60));
    for request in &requests[..4] {
        aged.search(request).unwrap();
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (mut local, mut total, mut own, mut calls) = (vec![], vec![], vec![], vec![]);
    let (mut aged_total, mut aged_own, mut aged_calls) = (vec![], vec![], vec![]);
    let mut direct = Vec::new();
    for request in &requests {
        let t = Instant::now();
        let a = store.search(request).unwrap();
        local.push(ms(t.elapsed()));
        let t = Instant::now();
        let (b, made) = node.search_counted(request).unwrap();
        let elapsed = t.elapsed();
        total.push(ms(elapsed));
        own.push(ms(elapsed - made.in_milvus));
        calls.push(made.milvus_calls());
        assert_eq!(a.results.len(), b.results.len());
        assert_eq!(made.milvus_calls(), 2, "{made:?}");
        let t = Instant::now();
        let (_, made_aged) = aged.search_counted(request).unwrap();
        let elapsed = t.elapsed();
        aged_total.push(ms(elapsed));
        aged_own.push(ms(elapsed - made_aged.in_milvus));
        aged_calls.push(made_aged.milvus_calls());
        let query = HashEmbedder::default()
            .embed_queries(&[request_text(request)])
            .unwrap();
        direct.push(serde_json::json!({
            "vector": query,
            "expr": made.expression,
            "limit": made.limit,
            "output_fields": ["child", "doc_id"],
        }));
    }
    let spec = serde_json::json!({
        "uri": uri,
        "collection": report.collection,
        "rounds": 1,
        "searches": direct,
    });
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/bench/milvus_direct.py");
    let mut python = std::process::Command::new(common::python())
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    serde_json::to_writer(python.stdin.take().unwrap(), &spec).unwrap();
    let output = python.wait_with_output().unwrap();
    assert!(output.status.success(), "milvus_direct.py failed");
    let pymilvus: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let rows = pymilvus["rows"].as_array().unwrap();
    assert_eq!(rows.len(), requests.len());
    assert!(rows.iter().all(|r| r.as_u64().unwrap() > 0), "{pymilvus}");

    let percentiles = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[v.len() * 95 / 100])
    };
    let per = |v: &[usize]| v.iter().sum::<usize>() as f64 / v.len() as f64;
    let (l50, l95) = percentiles(&mut local);
    let (t50, t95) = percentiles(&mut total);
    let (o50, o95) = percentiles(&mut own);
    let (a50, a95) = percentiles(&mut aged_total);
    let (ao50, ao95) = percentiles(&mut aged_own);
    let mb = |kib: u64| kib as f64 / 1024.0;
    println!(
        "peak resident memory (VmHWM, median of 3 runs), one search `{}` as alice where {filter}, k = 5:",
        QUERIES[0]
    );
    println!("| process | MiB |");
    println!("|---|---|");
    println!(
        "| `folio milvus search` without STORE (search node) | {:.1} |",
        mb(node_kib)
    );
    println!(
        "| `folio milvus search STORE` (through the store) | {:.1} |",
        mb(through_kib)
    );
    println!("| `folio search STORE` (local) | {:.1} |", mb(local_kib));
    println!(
        "{} searches, k = 5, filter `{filter}`, Strong consistency, {} child rows in `{}`",
        requests.len(),
        report.rows,
        report.collection
    );
    println!("| path | p50 ms | p95 ms | Milvus calls per search |");
    println!("|---|---|---|---|");
    println!(
        "| node, total | {t50:.2} | {t95:.2} | {:.2} (its first search: {}) |",
        per(&calls),
        first.milvus_calls()
    );
    println!("| node, own time (total − time in Milvus calls) | {o50:.2} | {o95:.2} | |");
    println!(
        "| node with a 60 s catalog age, total | {a50:.2} | {a95:.2} | {:.2} |",
        per(&aged_calls)
    );
    println!("| node with a 60 s catalog age, own time | {ao50:.2} | {ao95:.2} | |");
    println!(
        "| pymilvus alone, the node's vectors, expressions, limits | {:.2} | {:.2} | 1 |",
        pymilvus["p50_ms"].as_f64().unwrap(),
        pymilvus["p95_ms"].as_f64().unwrap()
    );
    println!("| folio local | {l50:.2} | {l95:.2} | 0 |");
}

/// The text of a text request.
fn request_text(request: &SearchRequest) -> &str {
    match &request.query {
        folio::query::Query::Text(text) => text,
        folio::query::Query::Vector(_) => panic!("a text request"),
    }
}
