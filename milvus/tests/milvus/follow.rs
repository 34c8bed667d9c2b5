//! Following a store (issue 33, step 4): revocations, grants, deletes and alias moves of a
//! published index reach Milvus through the outbox and a follower, which a direct Milvus
//! query then shows (the principal's expression, the rows, the alias). A follower stopped
//! after applying some entries but before acknowledging them, a follower process killed
//! mid-drain, and a server killed with changes pending all converge: every collection's
//! rows equal the store's state exactly, no row missing, none twice.

use crate::common;
use crate::remote::{document, flat, Rng};

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use folio::store::{NoProgress, Route};
use folio::Store;
use folio_milvus::schema::{collection_name, visible_now_to};
use folio_milvus::{DrainReport, Error, Follower, Remote};
use milvus::v2::prelude::*;

/// Sets its flag when dropped: a follower thread in a scope ends when the test panics.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A row as a follower leaves it: (child, public now, principals now, sorted).
type Row = (i64, bool, Vec<String>);

/// Every row of `collection`, by chunk id.
fn rows(uri: &str, collection: &str) -> BTreeMap<String, Row> {
    query(uri, collection, "child >= 0")
}

fn query(uri: &str, collection: &str, filter: &str) -> BTreeMap<String, Row> {
    let mut out = BTreeMap::new();
    let found = &mut out;
    common::with_client(uri, |client| async move {
        let response = client
            .query(
                QueryRequest::builder()
                    .collection_name(collection)
                    .filter(filter)
                    .output_fields(["id", "child", "public_now", "acl_now"])
                    .limit(16_384)
                    .consistency_level(ConsistencyLevel::Strong)
                    .build()
                    .unwrap(),
            )
            .await
            .unwrap();
        for row in response.results().rows().unwrap() {
            let mut acl = row.get_array_varchar("acl_now").unwrap().to_vec();
            acl.sort();
            found.insert(
                row.get_str("id").unwrap().to_string(),
                (
                    row.get_i64("child").unwrap(),
                    row.get_bool("public_now").unwrap(),
                    acl,
                ),
            );
        }
    });
    out
}

/// The documents whose rows `principal`'s expression admits now, as a direct client of
/// Milvus filters them.
fn seen_by(uri: &str, collection: &str, principal: &str) -> BTreeSet<String> {
    query(uri, collection, &visible_now_to(&[principal.to_string()]))
        .keys()
        .map(|id| id.split('#').next().unwrap().to_string())
        .collect()
}

/// What the rows of `index@version`'s collection must be: one per child the version still
/// shows, with its document's audience now.
fn expected(store: &Store, index: &str, version: u64) -> BTreeMap<String, Row> {
    let export = store.export(&format!("{index}@{version}")).unwrap();
    export
        .children()
        .iter()
        .map(|n| {
            let child = export.child(n).unwrap();
            let mut acl = child.current.principals.clone();
            acl.sort();
            (child.chunk_id, (i64::from(n), child.current.public, acl))
        })
        .collect()
}

/// The Milvus aliases on `collection`.
fn aliases_of(uri: &str, collection: &str) -> Vec<String> {
    let mut out = Vec::new();
    let found = &mut out;
    common::with_client(uri, |client| async move {
        *found = client
            .list_aliases(
                ListAliasesRequest::builder()
                    .collection_name(collection)
                    .build()
                    .unwrap(),
            )
            .await
            .unwrap()
            .aliases()
            .to_vec();
    });
    out
}

fn kinds(store: &Store) -> Vec<&'static str> {
    store
        .outbox()
        .pending(usize::MAX)
        .unwrap()
        .iter()
        .map(|e| e.change.kind())
        .collect()
}

/// A store of 30 documents at `path`, published (exact search) to the server at `uri`.
fn published(path: &Path, remote: &Remote) -> (Store, u64) {
    let store = Store::builder().create(true).open(path).unwrap();
    let mut rng = Rng(4);
    let mut batch = store.batch();
    for i in 0..30 {
        batch.upsert(document(&mut rng, i));
    }
    let v1 = batch.commit().unwrap().versions["default"];
    remote
        .publish(&store, "default", &flat(), &NoProgress)
        .unwrap();
    (store, v1)
}

/// A document whose ACL is exactly `acl`.
fn with_acl(store: &Store, acl: &[&str]) -> String {
    (0..30)
        .map(|i| format!("doc-{i}"))
        .find(|id| {
            store
                .document(id)
                .unwrap()
                .is_some_and(|d| d.acl == acl && !d.acl.is_empty())
        })
        .unwrap_or_else(|| panic!("no document for {acl:?}"))
}

#[test]
fn revocations_grants_deletes_and_alias_moves_reach_milvus_through_the_follower() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::LiteServer::start();
    let uri = server.uri();
    let remote = Remote::connect(&uri).unwrap();
    let (store, v1) = published(&dir.path().join("kb.folio"), &remote);
    let c1 = collection_name("folio", "default", v1);
    let marks = store.outbox().published().unwrap();
    assert_eq!(
        marks
            .iter()
            .map(|m| (m.index.as_str(), m.uri.as_str(), m.prefix.as_str()))
            .collect::<Vec<_>>(),
        [("default", uri.as_str(), "folio")],
        "a publish marks its index"
    );
    assert_eq!(rows(&uri, &c1), expected(&store, "default", v1));

    // Plain folio commands, no Milvus call: an alias, a revocation, a grant, a delete.
    store
        .aliases()
        .set(
            "prod",
            &[Route {
                index: "default".into(),
                version: v1,
                weight: 100,
            }],
        )
        .unwrap();
    let revoked = with_acl(&store, &["alice"]);
    store.set_acl(&revoked, ["carol"]).unwrap();
    let granted = with_acl(&store, &["carol"]);
    store.set_acl(&granted, ["carol", "bob"]).unwrap();
    store.delete("doc-7").unwrap();
    assert_eq!(kinds(&store), ["alias", "audience", "audience", "deleted"]);
    // Milvus has not heard of them yet: alice's expression still admits her revoked
    // document, and doc-7's rows are there.
    assert!(seen_by(&uri, &c1, "alice").contains(&revoked));
    assert!(rows(&uri, &c1).keys().any(|id| id.starts_with("doc-7#")));

    let follower = Follower::new(&store, &remote);
    let report = follower.drain_once().unwrap();
    let doc7_rows = rows(&uri, &c1)
        .keys()
        .filter(|id| id.starts_with("doc-7#"))
        .count();
    assert_eq!(doc7_rows, 0, "deleted rows are gone");
    assert_eq!((report.entries, report.pending), (4, 0), "{report:?}");
    assert!(
        report.rows_deleted > 0 && report.rows_updated > 0,
        "{report:?}"
    );
    assert_eq!(report.aliases_moved, 1);
    assert_eq!(rows(&uri, &c1), expected(&store, "default", v1));
    assert!(!seen_by(&uri, &c1, "alice").contains(&revoked));
    assert!(seen_by(&uri, &c1, "carol").contains(&revoked));
    assert!(seen_by(&uri, &c1, "bob").contains(&granted));
    assert_eq!(aliases_of(&uri, &c1), ["folio_prod"]);
    assert!(store.outbox().pending(usize::MAX).unwrap().is_empty());

    // Nothing pending: a drain changes nothing.
    assert_eq!(follower.drain_once().unwrap(), DrainReport::default());

    // A second collection (a version with a new segment), the alias moved to it and back
    // with plain `alias set` and `rollback`, a revocation reaching both collections.
    let v2 = store.upsert(document(&mut Rng(99), 40)).unwrap().versions["default"];
    remote
        .publish(&store, "default", &flat(), &NoProgress)
        .unwrap();
    let c2 = collection_name("folio", "default", v2);
    store
        .aliases()
        .set(
            "prod",
            &[Route {
                index: "default".into(),
                version: v2,
                weight: 100,
            }],
        )
        .unwrap();
    follower.drain_once().unwrap();
    assert_eq!(aliases_of(&uri, &c2), ["folio_prod"]);
    assert!(aliases_of(&uri, &c1).is_empty());
    store.rollback("prod", v1).unwrap();
    let bob = with_acl(&store, &["alice", "bob"]);
    store.set_acl(&bob, ["alice"]).unwrap();
    let report = follower.drain_once().unwrap();
    assert_eq!(report.entries, 2, "{report:?}");
    assert_eq!(aliases_of(&uri, &c1), ["folio_prod"]);
    for (collection, version) in [(&c1, v1), (&c2, v2)] {
        assert_eq!(rows(&uri, collection), expected(&store, "default", version));
        assert!(!seen_by(&uri, collection, "bob").contains(&bob));
    }
    store.aliases().remove("prod").unwrap();
    let report = follower.drain_once().unwrap();
    assert_eq!(report.aliases_dropped, 1, "{report:?}");
    assert!(aliases_of(&uri, &c1).is_empty() && aliases_of(&uri, &c2).is_empty());

    // The commands: status reads the outbox without a server, follow --once drains it.
    store.delete("doc-9").unwrap();
    let cli = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_folio-milvus"))
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let path = store.path().to_str().unwrap().to_string();
    let status: serde_json::Value =
        serde_json::from_str(&cli(&["status", &path, "--json"])).unwrap();
    assert_eq!(status["pending"], 1);
    assert_eq!(status["by_kind"]["deleted"], 1);
    assert!(status["lag_ms"].as_u64().is_some());
    assert_eq!(status["published"][0]["index"], "default");
    let drained: serde_json::Value = serde_json::from_str(&cli(&[
        "follow", &path, "--once", "--json", "--milvus", &uri,
    ]))
    .unwrap();
    assert_eq!(
        (drained["entries"].as_u64(), drained["pending"].as_u64()),
        (Some(1), Some(0))
    );
    assert!(cli(&["status", &path]).contains("pending: 0"));
    for (collection, version) in [(&c1, v1), (&c2, v2)] {
        assert_eq!(rows(&uri, collection), expected(&store, "default", version));
    }
}

/// Stopped after applying some entries, before acknowledging any (a crash between the two):
/// the entries stay, the next follower applies them again and the rows are exact.
#[test]
fn a_follower_stopped_before_acknowledging_converges() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::LiteServer::start();
    let uri = server.uri();
    let remote = Remote::connect(&uri).unwrap();
    let (store, v1) = published(&dir.path().join("kb.folio"), &remote);
    let c1 = collection_name("folio", "default", v1);
    let before = rows(&uri, &c1);
    for i in [1, 2, 3] {
        store.set_acl(&format!("doc-{i}"), ["dave"]).unwrap();
    }
    store.delete("doc-4").unwrap();
    store.delete("doc-5").unwrap();
    let entries = store.outbox().pending(usize::MAX).unwrap();
    assert_eq!(entries.len(), 5);
    {
        let crashed = Follower::new(&store, &remote);
        let mut report = DrainReport::default();
        assert_eq!(crashed.apply(&entries[..3], &mut report).unwrap(), None);
        assert_eq!(
            report.rows_updated as usize,
            rows_of(&before, &["doc-1", "doc-2", "doc-3"])
        );
    }
    assert_eq!(
        store.outbox().pending(usize::MAX).unwrap(),
        entries,
        "nothing acknowledged"
    );
    let report = Follower::new(&store, &remote).drain_once().unwrap();
    assert_eq!((report.entries, report.pending), (5, 0));
    // The first three were applied already: only the deletes change rows now.
    assert_eq!(report.rows_updated, 0, "{report:?}");
    assert_eq!(
        report.rows_deleted as usize,
        rows_of(&before, &["doc-4", "doc-5"])
    );
    let now = rows(&uri, &c1);
    assert_eq!(now, expected(&store, "default", v1));
    assert_eq!(
        now.len() as u64,
        store
            .export(&format!("default@{v1}"))
            .unwrap()
            .children()
            .len()
    );
    // Applying every entry again changes nothing.
    let mut again = DrainReport::default();
    Follower::new(&store, &remote)
        .apply(&entries, &mut again)
        .unwrap();
    assert_eq!((again.rows_updated, again.rows_deleted), (0, 0));
    assert_eq!(rows(&uri, &c1), now);
}

/// How many of `rows` belong to documents `ids`.
fn rows_of(rows: &BTreeMap<String, Row>, ids: &[&str]) -> usize {
    rows.keys()
        .filter(|id| ids.contains(&id.split('#').next().unwrap()))
        .count()
}

/// A `folio milvus follow` process killed (SIGKILL) at a random point while commits keep
/// coming, then `follow --once`: nothing lost, the rows exact.
#[test]
fn a_follow_process_killed_mid_drain_converges() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::LiteServer::start();
    let uri = server.uri();
    let remote = Remote::connect(&uri).unwrap();
    let (store, v1) = published(&dir.path().join("kb.folio"), &remote);
    let c1 = collection_name("folio", "default", v1);
    let path = store.path().to_str().unwrap().to_string();
    let principals = ["alice", "bob", "carol", "dave"];
    let change = |i: usize| {
        let id = format!("doc-{i}");
        if i % 6 == 5 {
            store.delete(&id).unwrap();
        } else {
            store.set_acl(&id, [principals[i % 4]]).unwrap();
        }
        std::thread::sleep(Duration::from_millis(15));
    };
    let mut follow = std::process::Command::new(env!("CARGO_BIN_EXE_folio-milvus"))
        .args(["follow", &path, "--interval", "20ms", "--milvus", &uri])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    (0..12).for_each(change);
    // Once it has acknowledged some entries, it is killed while commits keep coming.
    let started = Instant::now();
    let acknowledged = || {
        store
            .outbox()
            .pending(1)
            .unwrap()
            .first()
            .is_none_or(|e| e.seq > 1)
    };
    while !acknowledged() && started.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(10));
    }
    (12..18).for_each(change);
    follow.kill().unwrap();
    follow.wait().unwrap();
    assert!(acknowledged(), "the follower never acknowledged an entry");
    (18..24).for_each(change);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_folio-milvus"))
        .args(["follow", &path, "--once", "--milvus", &uri])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(store.outbox().pending(usize::MAX).unwrap().is_empty());
    assert_eq!(rows(&uri, &c1), expected(&store, "default", v1));
}

/// The server killed with changes pending: drains fail with `Unreachable` and are retried
/// with back-off by `Follower::run`, which converges once the server is back on its data.
#[test]
fn milvus_killed_with_changes_pending_converges_once_it_is_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = common::LiteServer::start();
    let uri = server.uri();
    let remote = Remote::connect(&uri).unwrap();
    remote.retry_for(Duration::from_secs(2));
    let (store, v1) = published(&dir.path().join("kb.folio"), &remote);
    let c1 = collection_name("folio", "default", v1);
    server.kill();
    store.set_acl("doc-1", ["erin"]).unwrap();
    store.delete("doc-2").unwrap();
    let failed = Follower::new(&store, &remote).drain_once();
    assert!(
        matches!(
            failed,
            Err(Error::Unreachable { .. } | Error::Timeout { .. })
        ),
        "{failed:?}"
    );
    assert_eq!(
        kinds(&store),
        ["audience", "deleted"],
        "nothing acknowledged"
    );
    let stop = AtomicBool::new(false);
    let retried = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        // Dropped as a failing assertion unwinds, before the scope waits for the follower.
        let _stop = StopOnDrop(&stop);
        let running = scope.spawn(|| {
            Follower::new(&store, &remote).run(Duration::from_millis(100), &stop, |drained| {
                if drained.is_err() {
                    retried.fetch_add(1, Ordering::Relaxed);
                }
            })
        });
        while retried.load(Ordering::Relaxed) == 0 {
            std::thread::sleep(Duration::from_millis(50));
        }
        store.set_acl("doc-3", ["erin"]).unwrap();
        server.restart();
        let started = Instant::now();
        // Until drained, or the follower stopped on a failure it does not retry (the join
        // below reports it).
        while !store.outbox().pending(usize::MAX).unwrap().is_empty() && !running.is_finished() {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "never drained"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        stop.store(true, Ordering::Relaxed);
        running.join().unwrap().unwrap();
    });
    assert!(retried.load(Ordering::Relaxed) >= 1);
    assert_eq!(rows(&uri, &c1), expected(&store, "default", v1));
    assert!(seen_by(&uri, &c1, "erin")
        .is_superset(&BTreeSet::from(["doc-1".to_string(), "doc-3".to_string()])));
}

/// `gc` collects a published version: the follower drops its collection, and keeps the one
/// of the version still retained.
#[test]
fn the_collection_of_a_collected_version_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::LiteServer::start();
    let uri = server.uri();
    let remote = Remote::connect(&uri).unwrap();
    let (store, v1) = published(&dir.path().join("kb.folio"), &remote);
    let v2 = store.upsert(document(&mut Rng(7), 50)).unwrap().versions["default"];
    remote
        .publish(&store, "default", &flat(), &NoProgress)
        .unwrap();
    let (c1, c2) = (
        collection_name("folio", "default", v1),
        collection_name("folio", "default", v2),
    );
    store.gc(1).unwrap();
    assert_eq!(kinds(&store), ["collected"]);
    let report = Follower::new(&store, &remote).drain_once().unwrap();
    assert_eq!(
        report.collections_dropped,
        std::slice::from_ref(&c1),
        "{report:?}"
    );
    assert!(!remote.has_collection(&c1).unwrap());
    assert!(remote.has_collection(&c2).unwrap());
    assert_eq!(rows(&uri, &c2), expected(&store, "default", v2));
}

/// The synchronous mode: a revocation followed by `Outbox::wait_acknowledged` is already
/// applied in Milvus when the wait returns, with no polling of Milvus.
#[test]
fn a_revocation_waited_for_is_in_milvus_when_the_wait_returns() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::LiteServer::start();
    let uri = server.uri();
    let remote = Remote::connect(&uri).unwrap();
    let (store, v1) = published(&dir.path().join("kb.folio"), &remote);
    let c1 = collection_name("folio", "default", v1);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        // Dropped as a failing assertion unwinds, before the scope waits for the follower.
        let _stop = StopOnDrop(&stop);
        let running = scope
            .spawn(|| Follower::new(&store, &remote).run(Duration::from_millis(50), &stop, |_| {}));
        for (acl, principal) in [
            (&["alice"][..], "alice"),
            (&["carol"], "carol"),
            (&["bob", "carol"], "bob"),
        ] {
            let id = with_acl(&store, acl);
            assert!(seen_by(&uri, &c1, principal).contains(&id));
            store.set_acl(&id, ["zoe"]).unwrap();
            assert!(store
                .outbox()
                .wait_acknowledged(Duration::from_secs(60))
                .unwrap());
            assert!(!seen_by(&uri, &c1, principal).contains(&id), "{id}");
            assert!(seen_by(&uri, &c1, "zoe").contains(&id), "{id}");
        }
        stop.store(true, Ordering::Relaxed);
        running.join().unwrap().unwrap();
    });
    assert_eq!(rows(&uri, &c1), expected(&store, "default", v1));
}

/// Staleness, commit to remote visibility: a follower runs (`Follower::run`, every 100 ms),
/// 40 revocations are committed one at a time, and after each a direct Milvus query of the
/// revoked principal's expression is repeated until the document is gone. Prints p50 and
/// p95 (the figures of `docs/milvus.md`, "Following a store").
#[test]
#[ignore = "measures; prints figures"]
fn measure_staleness() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::LiteServer::start();
    let uri = server.uri();
    let remote = Remote::connect(&uri).unwrap();
    let store = Store::builder()
        .create(true)
        .open(dir.path().join("kb.folio"))
        .unwrap();
    let mut rng = Rng(40);
    let mut batch = store.batch();
    for i in 0..200 {
        batch.upsert(document(&mut rng, i).with_acl(["alice", "bob"]));
    }
    let v1 = batch.commit().unwrap().versions["default"];
    remote
        .publish(&store, "default", &flat(), &NoProgress)
        .unwrap();
    let c1 = collection_name("folio", "default", v1);
    let stop = AtomicBool::new(false);
    let mut lags = Vec::new();
    let mut polls = 0usize;
    std::thread::scope(|scope| {
        // Dropped as a failing assertion unwinds, before the scope waits for the follower.
        let _stop = StopOnDrop(&stop);
        let running = scope.spawn(|| {
            Follower::new(&store, &remote).run(Duration::from_millis(100), &stop, |_| {})
        });
        for i in 0..40 {
            let id = format!("doc-{i}");
            let committed = Instant::now();
            store.set_acl(&id, ["bob"]).unwrap();
            loop {
                polls += 1;
                let alice = query(
                    &uri,
                    &c1,
                    &format!(
                        "({}) and doc_id == \"{id}\"",
                        visible_now_to(&["alice".to_string()])
                    ),
                );
                if alice.is_empty() {
                    break;
                }
                assert!(
                    committed.elapsed() < Duration::from_secs(60),
                    "never applied"
                );
            }
            lags.push(committed.elapsed());
        }
        stop.store(true, Ordering::Relaxed);
        running.join().unwrap().unwrap();
    });
    lags.sort();
    let at = |q: f64| lags[((lags.len() - 1) as f64 * q).round() as usize];
    println!(
        "staleness, commit to remote visibility, {} revocations, follower every 100 ms: p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms ({:.1} polls each)",
        lags.len(),
        at(0.5).as_secs_f64() * 1000.0,
        at(0.95).as_secs_f64() * 1000.0,
        lags[lags.len() - 1].as_secs_f64() * 1000.0,
        polls as f64 / lags.len() as f64
    );
}
