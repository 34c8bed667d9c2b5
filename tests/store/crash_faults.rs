//! Fault injection in the commit path: a storage backend fails the Nth write, sync or
//! resize of an operation, for every N until the operation fits. The operation returns an
//! error, and the file, reopened with the real backend in the same process, is consistent
//! and holds the previous state. (When the fault hits the operation's last sync, the data
//! may have reached the file anyway, and once that sync is done the commit is durable
//! (redb's shared mode still writes the header once more): then the state is the previous
//! one or the complete new one.)

use std::path::Path;
use std::sync::atomic::Ordering;

use folio::chunk::ChunkSpec;
use folio::query::SearchRequest;
use folio::store::{Route, Store};
use folio_testkit::versions::{
    answer, config_like_default, doc, route, small_options, TestBackend,
};

type Operation = fn(&Store) -> Result<(), String>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn prod(version: u64) -> [Route; 1] {
    [route("default", version, 100)]
}

const OPERATIONS: &[(&str, Operation)] = &[
    ("batch", |s| {
        let mut batch = s.batch();
        batch.upsert(doc("n1", "A new document about printers."));
        batch.upsert(doc("d1", "The first document, rewritten about hotels."));
        batch.delete("d2");
        batch.set_acl("d3", ["eng"]);
        batch.commit().map(drop).map_err(err)
    }),
    ("alias", |s| s.aliases().set("prod", &prod(1)).map_err(err)),
    ("rollback", |s| {
        s.rollback("default", 2).map(drop).map_err(err)
    }),
    ("tag", |s| s.versions("default").tag(2, "t2").map_err(err)),
    ("compact", |s| {
        s.indexes().compact("default").map(drop).map_err(err)
    }),
    ("gc", |s| s.gc(1).map(drop).map_err(err)),
    ("create_index", |s| {
        let config = config_like_default(s, ChunkSpec::default());
        s.indexes().create("second", config).map(drop).map_err(err)
    }),
    ("drop_index", |s| s.indexes().drop("extra").map_err(err)),
];

/// What must survive a failed operation unchanged (no timestamps).
fn state(store: &Store) -> String {
    let versions: Vec<_> = store
        .indexes()
        .list()
        .expect("indexes")
        .iter()
        .map(|i| {
            let v: Vec<_> = store
                .versions(&i.name)
                .list()
                .expect("versions")
                .into_iter()
                .map(|v| (v.version, v.change, v.documents, v.live_children, v.tags))
                .collect();
            (i.name.clone(), i.serving, v)
        })
        .collect();
    format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
        store.document_ids().expect("ids"),
        versions,
        store.aliases().list().expect("aliases"),
        answer(store, "default", "document hotels printers"),
        answer(store, "prod", "document hotels printers"),
        // gc deletes version 1: what a search of it says is part of the state.
        store
            .search(&SearchRequest::text("document").target("default@1"))
            .map(|r| r.results.len())
            .map_err(|e| e.to_string()),
    )
}

fn base(path: &Path) {
    let store = small_options().open(path).expect("create");
    for round in 0..3 {
        let mut batch = store.batch();
        for i in 0..4 {
            batch.upsert(doc(
                &format!("d{i}"),
                &format!("Document {i}, round {round}, about deploys and hotels."),
            ));
        }
        batch.commit().expect("base batch");
    }
    let config = config_like_default(&store, ChunkSpec::default());
    store.indexes().create("extra", config).expect("extra");
    store.aliases().set("prod", &prod(2)).expect("prod");
}

#[test]
fn a_failed_commit_leaves_the_previous_state() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pristine = dir.path().join("base.folio");
    base(&pristine);
    let work = dir.path().join("work.folio");
    let mut summary = Vec::new();
    for (name, operation) in OPERATIONS {
        // The state the operation leads to, and how many syncs it makes, without faults.
        std::fs::copy(&pristine, &work).expect("copy");
        let (after, syncs) = {
            let backend = TestBackend::open(&work);
            let syncs = backend.syncs.clone();
            let store = small_options()
                .open_with_backend(&work, backend)
                .expect("open");
            let before = syncs.load(Ordering::SeqCst);
            operation(&store).expect("operation succeeds without faults");
            (state(&store), syncs.load(Ordering::SeqCst) - before)
        };
        let mut failures = 0;
        let mut late_hits = 0;
        for n in 0.. {
            std::fs::copy(&pristine, &work).expect("copy");
            let backend = TestBackend::open(&work);
            let (budget, failed) = (backend.budget.clone(), backend.failed.clone());
            let synced = backend.syncs.clone();
            let store = small_options()
                .open_with_backend(&work, backend)
                .expect("open");
            let before = state(&store);
            let first = synced.load(Ordering::SeqCst);
            budget.store(n, Ordering::SeqCst);
            let result = operation(&store);
            let hit = failed.load(Ordering::SeqCst);
            let synced = synced.load(Ordering::SeqCst) - first;
            drop(store);
            if result.is_ok() {
                assert_eq!(hit, 0, "{name}: a fault was swallowed");
                break;
            }
            assert_ne!(hit, 0, "{name} failed without a fault: {result:?}");
            failures += 1;
            let mut reopened = small_options()
                .open(&work)
                .unwrap_or_else(|e| panic!("{name}, fault at call {n}: reopen: {e}"));
            let report = reopened.check_integrity().expect("check");
            assert!(
                report.is_consistent(),
                "{name}, fault at call {n}: {:?}",
                report.problems
            );
            let now = state(&reopened);
            // At the last sync, or after it (every sync done).
            let late = synced == syncs || (hit == 2 && synced + 1 == syncs);
            if late && now == after {
                late_hits += 1;
            } else {
                assert_eq!(now, before, "{name}, fault at call {n} (kind {hit})");
            }
        }
        assert!(failures > 0, "{name} never failed");
        summary.push(format!("{name}: {failures} faults"));
        if late_hits > 0 {
            summary.push(format!(
                "({late_hits} at or after the last sync left the new state)"
            ));
        }
    }
    println!("{}", summary.join(", "));
}
