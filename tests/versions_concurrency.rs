//! Searches on many threads while a writer commits batches, merges, moves an alias and
//! collects garbage: every search succeeds and sees one whole version, never a part of
//! a batch. Logged searches, feedback, alias switches and rollbacks never wait for a
//! commit's graph build.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod versions_support;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use folio::retrieve::SearchRequest;
use folio::store::{Access, GraphParams, MergePolicy, Progress, Rating};
use versions_support::{doc, everything, head, route, small_options, temp_store, version_of};

const BATCHES: usize = 40;
const PER_BATCH: usize = 3;

#[test]
fn readers_see_whole_versions_while_a_writer_commits() {
    let options = small_options().merge(MergePolicy {
        max_segments: 4,
        max_dead_fraction: 0.3,
    });
    let (_dir, store) = temp_store(options);
    // version -> batches it holds, recorded by the writer.
    let made: Arc<Mutex<HashMap<u64, usize>>> = Arc::new(Mutex::new(HashMap::from([(0, 0)])));
    let done = Arc::new(AtomicBool::new(false));
    let prod = |version| [route("default", version, 100)];
    store.set_alias("prod", &prod(0)).expect("alias");

    let observed = std::thread::scope(|scope| {
        let readers: Vec<_> = (0..4)
            .map(|r| {
                let (store, done) = (store.clone(), done.clone());
                scope.spawn(move || {
                    let mut seen = Vec::new();
                    while !done.load(Ordering::SeqCst) {
                        let target = if seen.len() % 2 == r % 2 {
                            "default"
                        } else {
                            "prod"
                        };
                        let response = everything(&store, target, "marker item words");
                        let mut per_batch: BTreeMap<usize, usize> = BTreeMap::new();
                        for hit in &response.results {
                            let batch = hit.doc_id[1..4].parse::<usize>().expect("batch id");
                            *per_batch.entry(batch).or_default() += 1;
                        }
                        let batches = per_batch.len();
                        assert!(
                            per_batch.iter().all(|(_, n)| *n == PER_BATCH),
                            "a partial batch at {}@{}: {per_batch:?}",
                            response.index,
                            response.version
                        );
                        assert!(
                            per_batch.keys().copied().eq(1..=batches),
                            "batches are a prefix: {per_batch:?}"
                        );
                        seen.push((response.version, batches));
                    }
                    seen
                })
            })
            .collect();

        for b in 1..=BATCHES {
            let mut batch = store.batch();
            for i in 0..PER_BATCH {
                batch.upsert(doc(
                    &format!("b{b:03}-{i}"),
                    &format!("Batch marker {b}, item {i}: words words words."),
                ));
            }
            let receipt = batch.commit().expect("commit");
            {
                let mut made = made.lock().expect("lock");
                made.insert(receipt.versions["default"], b);
                for version in receipt.merged.values() {
                    made.insert(*version, b);
                }
            }
            store
                .set_alias("prod", &prod(receipt.versions["default"]))
                .expect("move alias");
            if b % 10 == 0 {
                if let Some(c) = store.compact("default").expect("compact") {
                    made.lock().expect("lock").insert(c.version, b);
                }
                store.gc(2).expect("gc");
            }
        }
        done.store(true, Ordering::SeqCst);
        readers
            .into_iter()
            .flat_map(|r| r.join().expect("reader"))
            .collect::<Vec<_>>()
    });

    let made = made.lock().expect("lock");
    assert!(
        observed.len() > 40,
        "readers ran {} searches",
        observed.len()
    );
    for (version, batches) in &observed {
        assert_eq!(
            made.get(version),
            Some(batches),
            "version {version} holds other batches"
        );
    }
    let distinct: std::collections::BTreeSet<_> = observed.iter().map(|(v, _)| v).collect();
    println!(
        "{} searches saw {} distinct versions",
        observed.len(),
        distinct.len()
    );
    let mut store = store;
    let report = store.check_integrity().expect("check");
    assert!(report.is_consistent(), "{:?}", report.problems);
}

/// Holds a commit's graph build until released, and tells when it starts.
struct HeldGraph {
    started: Mutex<Option<mpsc::Sender<()>>>,
    release: Mutex<mpsc::Receiver<()>>,
    /// Set when the guard below released the build instead of the test.
    released_by_guard: AtomicBool,
}

/// Only against a hang: the test releases the build long before this unless something
/// waited for it, which the test then reports.
const GUARD: Duration = Duration::from_secs(120);

impl Progress for HeldGraph {
    fn stage(&self, name: &str, _: u64) {
        if name != "graph" {
            return;
        }
        if let Some(started) = self.started.lock().expect("lock").take() {
            started.send(()).expect("test waits");
        }
        if self
            .release
            .lock()
            .expect("lock")
            .recv_timeout(GUARD)
            .is_err()
        {
            self.released_by_guard.store(true, Ordering::SeqCst);
        }
    }
    fn advance(&self, _: u64) {}
    fn set_done(&self, _: u64) {}
}

#[test]
fn logged_searches_feedback_aliases_and_rollback_never_wait_for_a_graph_build() {
    let options = small_options().log_requests(true).graph(GraphParams {
        min_graph_size: 1,
        ..GraphParams::default()
    });
    let (_dir, store) = temp_store(options);
    for v in 1..=2 {
        store
            .upsert(doc(&format!("old{v}"), "Older words about items."))
            .expect("upsert");
    }
    store
        .set_alias("prod", &[route("default", 2, 100)])
        .expect("alias");

    let (started, started_rx) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    let held = HeldGraph {
        started: Mutex::new(Some(started)),
        release: Mutex::new(release_rx),
        released_by_guard: AtomicBool::new(false),
    };
    let rated_id = std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            let mut batch = store.batch();
            for i in 0..20 {
                batch.upsert(doc(&format!("new{i}"), "New words about items."));
            }
            batch.commit_with(&held)
        });
        started_rx
            .recv()
            .expect("the commit reaches its graph build");

        // Past two request-log writes (64 entries each), a feedback that writes the rest,
        // an alias switch and a rollback, all while the graph build is held.
        let searches = 2 * 64 + 5;
        let mut ids = Vec::new();
        for _ in 0..searches {
            let request = SearchRequest::text("words")
                .access(Access::Unrestricted)
                .k(3);
            let response = store.search(&request).expect("search");
            assert_eq!(response.version, 2, "the held commit is not visible");
            ids.push(response.request_id.expect("logged"));
        }
        store
            .feedback(ids[7], Some(Rating::Up), Some("during a build".into()))
            .expect("feedback");
        store
            .set_alias("prod", &[route("default", 1, 100)])
            .expect("alias switch");
        store.rollback("default", 1).expect("rollback");
        assert_eq!(
            store.log_size().expect("log size").entries,
            searches as u64,
            "every logged search is written before the build ends"
        );

        release.send(()).expect("build waits");
        let receipt = writer.join().expect("writer").expect("commit");
        assert_eq!(receipt.versions["default"], 3);
        ids[7]
    });
    assert!(
        !held.released_by_guard.load(Ordering::SeqCst),
        "an operation waited for the graph build"
    );
    let rated = store
        .log_entries()
        .expect("log")
        .into_iter()
        .find(|e| e.request_id == rated_id)
        .and_then(|e| e.request.feedback);
    assert_eq!(rated.and_then(|f| f.rating), Some(Rating::Up));
    assert_eq!(version_of(&store, "prod"), 1);
    assert_eq!(
        version_of(&store, "default"),
        1,
        "the rollback pins the index"
    );
    assert_eq!(head(&store, "default"), 3);
}
