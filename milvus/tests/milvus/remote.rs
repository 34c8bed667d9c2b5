//! Issue 17's must-show: a store with three principals and two versions published to
//! milvus-lite on 127.0.0.1 (exact FLAT collections), its alias moved, an ACL changed and a
//! document deleted, the collections synced; then every principal asks the same questions of
//! folio (local, exact) and of folio through Milvus. The remote answers are the local ones
//! (ids and order), no hidden chunk appears, and every answer holds min(k, visible units).
//! Then a revocation not synced yet: Milvus still returns the row, folio's check hides it,
//! and the answer is topped up to the same as the local one.

use crate::common;

use std::collections::BTreeSet;

use folio::store::NoProgress;
use folio::{Document, SearchRequest, SearchResponse, SourceFormat, Store};
use folio_milvus::{AliasOutcome, PublishOptions, Remote, VectorIndex};

pub(crate) const PRINCIPALS: [&str; 3] = ["alice", "bob", "carol"];
const WORDS: [&str; 24] = [
    "invoice", "refund", "card", "travel", "visa", "laptop", "printer", "password", "badge",
    "parking", "salary", "pension", "holiday", "train", "hotel", "meal", "contract", "vendor",
    "audit", "budget", "server", "backup", "network", "license",
];
pub(crate) const QUERIES: [&str; 6] = [
    "refund a card invoice",
    "travel visa hotel",
    "reset my password badge",
    "pension and salary",
    "server backup network",
    "vendor contract audit budget",
];

/// SplitMix64: the test's documents and ACLs, the same every run.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn words(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| WORDS[(self.next() % WORDS.len() as u64) as usize])
            .collect::<Vec<_>>()
            .join(" ")
    }
}

pub(crate) fn document(rng: &mut Rng, i: usize) -> Document {
    let text = format!(
        "# Guide {i}\n\n## {}\n\n{}.\n\n{}.\n\n## {}\n\n{}.\n",
        rng.words(2),
        rng.words(14),
        rng.words(10),
        rng.words(2),
        rng.words(16)
    );
    let acl: Vec<&str> = match rng.next() % 5 {
        0 => vec![],
        1 => vec!["alice"],
        2 => vec!["bob", "carol"],
        3 => vec!["carol"],
        _ => vec!["alice", "bob"],
    };
    Document::new(format!("doc-{i}"), SourceFormat::Markdown, text).with_acl(acl)
}

pub(crate) fn flat() -> PublishOptions {
    PublishOptions {
        batch: 64,
        index: VectorIndex::Flat,
        ..PublishOptions::default()
    }
}

/// What an answer is, for comparison: the version, and each unit's parent with its
/// children in order.
pub(crate) fn shape(response: &SearchResponse) -> (String, u64, Vec<(String, Vec<String>)>) {
    (
        response.index.clone(),
        response.version,
        response
            .results
            .iter()
            .map(|h| {
                (
                    h.parent_id.clone(),
                    h.children.iter().map(|c| c.chunk_id.clone()).collect(),
                )
            })
            .collect(),
    )
}

/// The units `principals` may see in `target`'s version now, from the export (both the
/// version's audience and the document's current one must admit them): the oracle of
/// "filled to min(k, visible)", and of "nothing hidden".
pub(crate) fn visible_parents(
    store: &Store,
    target: &str,
    principals: &[&str],
) -> BTreeSet<String> {
    let export = store.export(target).unwrap();
    let admits = |a: &folio::store::Audience| {
        a.public
            || a.principals
                .iter()
                .any(|p| principals.contains(&p.as_str()))
    };
    export
        .children()
        .iter()
        .map(|n| export.child(n).unwrap())
        .filter(|c| admits(&c.frozen) && admits(&c.current))
        .map(|c| c.parent_id)
        .collect()
}

/// Local and remote answers to every query as every principal (and as nobody), at `k`
/// 3 and 100, compared; each answer checked against the oracle.
pub(crate) fn compare(store: &Store, remote: &Remote, target: &str) -> usize {
    let mut askers: Vec<Vec<&str>> = PRINCIPALS.iter().map(|p| vec![*p]).collect();
    askers.push(vec![]);
    askers.push(vec!["alice", "carol"]);
    let mut compared = 0;
    for principals in &askers {
        let visible = visible_parents(store, target, principals);
        for query in QUERIES {
            for k in [3, 100] {
                let request = SearchRequest::text(query)
                    .as_principals(principals.iter().copied())
                    .target(target)
                    .k(k)
                    .no_dedup();
                let local = store.search(&request).unwrap();
                let (through, _) = remote.search(store, &request, "folio").unwrap();
                assert_eq!(
                    shape(&through),
                    shape(&local),
                    "{query:?} as {principals:?} at k={k} on {target}"
                );
                for (a, b) in through.results.iter().zip(&local.results) {
                    assert!((a.score - b.score).abs() < 1e-4, "{} {}", a.score, b.score);
                    assert_eq!(a.text, b.text);
                }
                assert_eq!(
                    through.results.len(),
                    k.min(visible.len()),
                    "{query:?} as {principals:?}"
                );
                for hit in &through.results {
                    assert!(
                        visible.contains(&hit.parent_id),
                        "{} shown to {principals:?}",
                        hit.parent_id
                    );
                }
                compared += 1;
            }
        }
    }
    compared
}

#[test]
fn remote_answers_are_the_local_answers_for_every_principal() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::builder()
        .create(true)
        .log_requests(true)
        .open(dir.path().join("kb.folio"))
        .unwrap();
    let mut rng = Rng(17);
    let mut batch = store.batch();
    for i in 0..40 {
        batch.upsert(document(&mut rng, i));
    }
    let v1 = batch.commit().unwrap().versions["default"];
    let mut batch = store.batch();
    for i in 40..60 {
        batch.upsert(document(&mut rng, i));
    }
    batch.upsert(document(&mut rng, 3));
    let v2 = batch.commit().unwrap().versions["default"];
    assert!(v2 > v1);

    let server = common::LiteServer::start();
    let remote = Remote::connect(&server.uri()).unwrap();
    for version in [v1, v2] {
        let report = remote
            .publish(&store, &format!("default@{version}"), &flat(), &NoProgress)
            .unwrap();
        assert!(remote.is_complete(&report.collection).unwrap());
    }

    // The alias: set on v1, moved to v2 (folio and Milvus in one call each).
    let set = remote
        .set_alias(&store, "prod", "default", v1, "folio")
        .unwrap();
    assert_eq!(set.outcome, AliasOutcome::Moved);
    let moved = remote
        .set_alias(&store, "prod", "default", v2, "folio")
        .unwrap();
    assert_eq!(
        (moved.outcome, moved.collection.as_deref()),
        (
            AliasOutcome::Moved,
            Some(format!("folio_default_v{v2}").as_str())
        )
    );

    // An ACL change and a delete: new versions in folio, not published.
    let changed: Vec<String> = (0..60)
        .map(|i| format!("doc-{i}"))
        .filter(|id| {
            store
                .document(id)
                .unwrap()
                .is_some_and(|d| d.acl == ["alice"])
        })
        .take(2)
        .collect();
    assert_eq!(changed.len(), 2, "the seed gives documents only alice sees");
    let mut batch = store.batch();
    batch.set_acl(&changed[0], ["bob"]);
    batch.set_acl(&changed[1], Vec::<String>::new());
    batch.delete("doc-5");
    let v3 = batch.commit().unwrap().versions["default"];

    // v3 adds no segment: v2's collection serves it, and the Milvus alias names that.
    let onto_v3 = remote
        .set_alias(&store, "prod", "default", v3, "folio")
        .unwrap();
    assert_eq!(
        onto_v3.collection.as_deref(),
        Some(format!("folio_default_v{v2}").as_str())
    );
    // A version with new documents has a segment no collection holds: refused, nothing moves.
    let v4 = store.upsert(document(&mut rng, 60)).unwrap().versions["default"];
    let refused = remote.set_alias(&store, "prod", "default", v4, "folio");
    assert!(
        matches!(refused, Err(folio_milvus::Error::NotPublished { version, .. }) if version == v4),
        "{refused:?}"
    );
    assert_eq!(store.aliases().list().unwrap()[0].routes[0].version, v3);
    // Rollback moves both; to an unpublished version it is refused.
    let back = remote.rollback(&store, "prod", v1, "folio").unwrap();
    assert_eq!(back.outcome, AliasOutcome::Moved);
    assert!(remote.rollback(&store, "prod", v4, "folio").is_err());
    assert_eq!(store.aliases().list().unwrap()[0].routes[0].version, v1);
    remote
        .set_alias(&store, "prod", "default", v2, "folio")
        .unwrap();

    // The sync: deleted rows gone, changed ACLs upserted, in both collections.
    let reports = remote.sync(&store, "folio", 16).unwrap();
    assert_eq!(reports.len(), 2);
    for report in &reports {
        assert!(report.deleted > 0, "{report:?}");
        assert!(report.updated > 0, "{report:?}");
        let live = store
            .export(&format!("default@{}", report.version))
            .unwrap()
            .children()
            .len();
        assert_eq!(remote.rows(&report.collection).unwrap(), live);
    }
    let again = remote.sync(&store, "folio", 16).unwrap();
    assert!(
        again.iter().all(|r| (r.updated, r.deleted) == (0, 0)),
        "{again:?}"
    );
    let aliases = remote.sync_aliases(&store, "folio").unwrap();
    assert_eq!(aliases[0].outcome, AliasOutcome::Unchanged);

    let mut compared = 0;
    for target in ["prod", &format!("default@{v1}")] {
        compared += compare(&store, &remote, target);
    }
    assert_eq!(compared, 2 * 5 * QUERIES.len() * 2);

    // The request log names the version that answered and the remote target.
    let logged = store.log().entries().unwrap();
    let remote_logged: Vec<_> = logged
        .iter()
        .filter(|e| e.request.target == "milvus:prod")
        .collect();
    assert!(!remote_logged.is_empty());
    assert!(remote_logged.iter().all(|e| e.request.version == v2));

    // The command: the same answer, and a sync with nothing left to do.
    let cli = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_folio-milvus"))
            .args(args)
            .args(["--milvus", &server.uri()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let path = dir.path().join("kb.folio");
    let path = path.to_str().unwrap();
    let json = cli(&[
        "search",
        path,
        QUERIES[0],
        "--index",
        "milvus:prod",
        "--as",
        "alice",
        "--json",
    ]);
    let answer: serde_json::Value = serde_json::from_str(&json).unwrap();
    let request = SearchRequest::text(QUERIES[0])
        .as_principals(["alice"])
        .target("prod");
    let local = store.search(&request).unwrap();
    let parents: Vec<&str> = answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["parent_id"].as_str().unwrap())
        .collect();
    assert_eq!(answer["version"], v2);
    assert_eq!(
        parents,
        local
            .results
            .iter()
            .map(|h| h.parent_id.as_str())
            .collect::<Vec<_>>()
    );
    let synced = cli(&["sync", path]);
    assert!(synced.contains("0 rows updated, 0 deleted"), "{synced}");
    assert!(
        synced.contains("alias prod (folio_prod): Unchanged"),
        "{synced}"
    );

    // A revocation not synced: Milvus still holds alice on the row, folio hides it and tops up.
    let export = store.export("prod").unwrap();
    let revoked = export
        .children()
        .iter()
        .map(|n| export.child(n).unwrap())
        .find(|c| c.current.principals == ["alice"] && !c.current.public && c.frozen == c.current)
        .expect("a child only alice sees");
    drop(export);
    store.set_acl(&revoked.doc_id, ["carol"]).unwrap();
    let request = SearchRequest::vector(revoked.vector.clone())
        .as_principals(["alice"])
        .target("prod")
        .k(5)
        .no_dedup();
    let local = store.search(&request).unwrap();
    let (through, calls) = remote.search(&store, &request, "folio").unwrap();
    assert!(calls.hidden > 0, "{calls:?}");
    assert_eq!(shape(&through), shape(&local));
    assert!(through.results.iter().all(|h| h.doc_id != revoked.doc_id));
    let visible = visible_parents(&store, "prod", &["alice"]);
    assert_eq!(through.results.len(), 5.min(visible.len()));
}

/// The figures of `docs/milvus.md` (`cargo test --release -p folio-milvus --test milvus --
/// --ignored --nocapture measure_publish_and_search`): publish throughput, then the same 120
/// filtered searches (k = 5, three principals in turn) through folio and Milvus, through
/// pymilvus alone (`scripts/bench/milvus_direct.py` with milvus-lite's own Python: the query
/// vectors, expressions and limits folio sent, at the same `Strong` consistency) and in folio
/// alone. Prints a table; asserts that the answers agree in size, that both Milvus sides
/// returned rows, and that a search after the first makes one Milvus call.
#[test]
#[ignore]
fn measure_publish_and_search() {
    use folio::filter::Filter;
    use folio::query::{Ask, Candidate, ChildSource, SourceError};
    use std::time::{Duration, Instant};

    /// What folio asks a source for: the query vector and the number of children.
    struct Asked(Vec<f32>, usize);
    impl ChildSource for Asked {
        fn name(&self) -> &str {
            "asked"
        }
        fn children(&mut self, ask: &Ask<'_>) -> Result<Vec<Candidate>, SourceError> {
            *self = Asked(ask.query().to_vec(), ask.wanted());
            Ok(Vec::new())
        }
    }

    let dir = tempfile::tempdir().unwrap();
    let store = Store::builder()
        .create(true)
        .open(dir.path().join("kb.folio"))
        .unwrap();
    let mut rng = Rng(7);
    let mut batch = store.batch();
    for i in 0..3_000 {
        batch.upsert(document(&mut rng, i));
    }
    batch.commit().unwrap();
    let server = common::LiteServer::start();
    let remote = Remote::connect(&server.uri()).unwrap();
    let started = Instant::now();
    let report = remote
        .publish(&store, "default", &PublishOptions::default(), &NoProgress)
        .unwrap();
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "publish: {} rows in {seconds:.1} s = {:.0} rows/s (batch {}, HNSW)",
        report.rows,
        report.rows as f64 / seconds,
        folio_milvus::DEFAULT_BATCH
    );

    let filter: Filter = r#"doc_id ^= "doc-1""#.parse().unwrap();
    let requests: Vec<SearchRequest> = (0..20)
        .flat_map(|round| {
            let filter = filter.clone();
            QUERIES.iter().enumerate().map(move |(i, query)| {
                SearchRequest::text(*query)
                    .as_principals([PRINCIPALS[(round + i) % 3]])
                    .filter(filter.clone())
                    .k(5)
            })
        })
        .collect();
    // The first search of a connection finds the collection; every later one only searches.
    let (_, first) = remote.search(&store, &requests[0], "folio").unwrap();
    for request in &requests[..6] {
        store.search(request).unwrap();
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (mut local, mut total, mut own, mut calls) = (vec![], vec![], vec![], vec![]);
    let mut direct = Vec::new();
    for request in &requests {
        let t = Instant::now();
        let a = store.search(request).unwrap();
        local.push(ms(t.elapsed()));
        let t = Instant::now();
        let (b, made) = remote.search(&store, request, "folio").unwrap();
        let elapsed = t.elapsed();
        total.push(ms(elapsed));
        own.push(ms(elapsed - made.in_milvus));
        calls.push(made.milvus_calls());
        assert_eq!(a.results.len(), b.results.len());
        assert_eq!(made.milvus_calls(), 1, "{made:?}");
        let mut asked = Asked(Vec::new(), 0);
        store.search_through(request, &mut asked).unwrap();
        direct.push(serde_json::json!({
            "vector": asked.0,
            "expr": made.expression,
            "limit": asked.1,
        }));
    }
    let collection = report.collection.clone();
    let spec = serde_json::json!({
        "uri": server.uri(),
        "collection": collection,
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
    let (l50, l95) = percentiles(&mut local);
    let (t50, t95) = percentiles(&mut total);
    let (o50, o95) = percentiles(&mut own);
    let per_search = calls.iter().sum::<usize>() as f64 / calls.len() as f64;
    println!(
        "{} searches, k = 5, filter `{filter}`, Strong consistency, {} rows in `{collection}`",
        requests.len(),
        report.rows
    );
    println!("| path | p50 ms | p95 ms | Milvus calls per search |");
    println!("|---|---|---|---|");
    println!("| folio through Milvus, total | {t50:.2} | {t95:.2} | {per_search:.2} (the connection's first search: {}) |", first.milvus_calls());
    println!("| folio through Milvus, folio's own time (total − time in Milvus calls) | {o50:.2} | {o95:.2} | |");
    println!(
        "| pymilvus alone, same vectors, expressions, limits | {:.2} | {:.2} | 1 |",
        pymilvus["p50_ms"].as_f64().unwrap(),
        pymilvus["p95_ms"].as_f64().unwrap()
    );
    println!("| folio local | {l50:.2} | {l95:.2} | 0 |");
}
