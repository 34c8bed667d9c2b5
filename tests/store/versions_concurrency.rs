//! Searches on many threads while a writer commits batches, merges, moves an alias and
//! collects garbage: every search succeeds and sees one whole version, never a part of
//! a batch. Logged searches, feedback, alias switches and rollbacks never wait for a
//! commit's or a merge's graph build, and a merge lands whole on a head that a commit
//! changed while it was built. A commit waits for another handle's commit (as another
//! process's) up to its wait, then fails with `StorageError::Busy`.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use folio::query::SearchRequest;
use folio::store::{Access, GraphParams, IndexError, MergePolicy, Progress, Rating, StorageError};
use folio_testkit::versions::{
    answer, doc, everything, head, route, small_options, temp_store, version_of, TestBackend,
};

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
    store.aliases().set("prod", &prod(0)).expect("alias");

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
                .aliases()
                .set("prod", &prod(receipt.versions["default"]))
                .expect("move alias");
            if b % 10 == 0 {
                if let Some(c) = store.indexes().compact("default").expect("compact") {
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

/// Holds a commit's or a merge's graph build until released, and tells when it starts.
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
        .aliases()
        .set("prod", &[route("default", 2, 100)])
        .expect("alias");

    let (held, started_rx, release) = HeldGraph::new();
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
            .log()
            .feedback(ids[7], Some(Rating::Up), Some("during a build".into()))
            .expect("feedback");
        store
            .aliases()
            .set("prod", &[route("default", 1, 100)])
            .expect("alias switch");
        store.rollback("default", 1).expect("rollback");
        assert_eq!(
            store.log().size().expect("log size").entries,
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
        .log()
        .entries()
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

impl HeldGraph {
    /// A held build, the receiver told when it starts and the sender that releases it.
    fn new() -> (HeldGraph, mpsc::Receiver<()>, mpsc::Sender<()>) {
        let (started, started_rx) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        let held = HeldGraph {
            started: Mutex::new(Some(started)),
            release: Mutex::new(release_rx),
            released_by_guard: AtomicBool::new(false),
        };
        (held, started_rx, release)
    }
}

/// A store whose segments all have graphs, filled with documents `d0..d{batches*4}` in
/// `batches` commits (one segment each).
fn graphed_store(batches: usize, log: bool) -> (tempfile::TempDir, folio::store::Store) {
    let options = small_options().log_requests(log).graph(GraphParams {
        min_graph_size: 1,
        ..GraphParams::default()
    });
    let (dir, store) = temp_store(options);
    for b in 0..batches {
        let mut batch = store.batch();
        for i in b * 4..(b + 1) * 4 {
            batch.upsert(doc(
                &format!("d{i}"),
                &format!("Item {i}: words about items."),
            ));
        }
        batch.commit().expect("fill");
    }
    (dir, store)
}

#[test]
fn logged_searches_feedback_aliases_and_rollback_never_wait_for_a_merge() {
    let (_dir, store) = graphed_store(4, true);
    store.delete("d1").expect("delete");
    store.delete("d6").expect("delete");
    let before = head(&store, "default");
    store
        .aliases()
        .set("prod", &[route("default", before, 100)])
        .expect("alias");
    let answer_before = answer(&store, &format!("default@{before}"), "words items");

    let (held, started, release) = HeldGraph::new();
    let (merged, rated_id) = std::thread::scope(|scope| {
        let merger = scope.spawn(|| store.indexes().compact_with("default", &held));
        started.recv().expect("the merge reaches its graph build");

        // Past two request-log writes, a feedback, an alias switch and a rollback, all
        // while the merge's graph build is held.
        let searches = 2 * 64 + 5;
        let mut ids = Vec::new();
        for _ in 0..searches {
            let request = SearchRequest::text("words")
                .access(Access::Unrestricted)
                .k(3);
            let response = store.search(&request).expect("search");
            assert_eq!(response.version, before, "the held merge is not visible");
            ids.push(response.request_id.expect("logged"));
        }
        store
            .log()
            .feedback(ids[7], Some(Rating::Up), Some("during a merge".into()))
            .expect("feedback");
        store
            .aliases()
            .set("prod", &[route("default", 1, 100)])
            .expect("alias switch");
        store.rollback("default", before).expect("rollback");
        assert_eq!(
            store.log().size().expect("log size").entries,
            searches as u64 + 1,
            "every logged search (and the one before) is written before the merge ends"
        );

        release.send(()).expect("build waits");
        (merger.join().expect("merger").expect("compact"), ids[7])
    });
    assert!(
        !held.released_by_guard.load(Ordering::SeqCst),
        "an operation waited for the merge's graph build"
    );
    let merged = merged.expect("something to merge");
    assert_eq!(merged.version, before + 1);
    assert_eq!(merged.segments_merged, 4);
    assert_eq!((merged.rows_kept, merged.rows_dropped), (14, 2));
    let rated = store
        .log()
        .entries()
        .expect("log")
        .into_iter()
        .find(|e| e.request_id == rated_id)
        .and_then(|e| e.request.feedback);
    assert_eq!(rated.and_then(|f| f.rating), Some(Rating::Up));
    assert_eq!(version_of(&store, "prod"), 1);
    assert_eq!(version_of(&store, "default"), before, "the pin holds");
    let merged_at = format!("default@{}", merged.version);
    let answer_after = answer(&store, &merged_at, "words items");
    assert_eq!(answer_after.1, answer_before.1, "same units, same scores");
    let vectors = store.vectors(&merged_at).expect("merged version");
    assert_eq!(vectors.segments.len(), 1);
    let mut store = store;
    let report = store.check_integrity().expect("check");
    assert!(report.is_consistent(), "{:?}", report.problems);
}

/// The doc ids `target` shows for `access`, sorted, with the text of each unit.
fn shown(
    store: &folio::store::Store,
    target: &str,
    access: Access,
) -> BTreeMap<String, Vec<String>> {
    let mut request = SearchRequest::text("words items")
        .access(access)
        .k(100_000)
        .target(target);
    request.dedup = None;
    let mut shown: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for hit in store.search(&request).expect("search").results {
        shown.entry(hit.doc_id).or_default().push(hit.text);
    }
    shown
}

#[test]
fn a_merge_lands_on_a_head_that_a_commit_changed_while_it_was_built() {
    let (_dir, store) = graphed_store(3, false);
    let before = head(&store, "default");

    let (held, started, release) = HeldGraph::new();
    let (merged, changed) = std::thread::scope(|scope| {
        let merger = scope.spawn(|| store.indexes().compact_with("default", &held));
        started.recv().expect("the merge reaches its graph build");
        // Deletes and a replacement of children the merge copies, an ACL change of
        // another, and a new document, committed while the merge is built.
        let mut batch = store.batch();
        batch
            .delete("d1")
            .delete("d5")
            .upsert(doc("d2", "Replaced: other words about items."))
            .set_acl("d4", ["eng"])
            .upsert(doc("n0", "New words about items."));
        let receipt = batch.commit().expect("commit during the merge");
        release.send(()).expect("build waits");
        (
            merger.join().expect("merger").expect("compact"),
            receipt.versions["default"],
        )
    });
    assert!(!held.released_by_guard.load(Ordering::SeqCst));
    assert_eq!(changed, before + 1);
    let merged = merged.expect("the merge lands");
    assert_eq!(merged.version, changed + 1);
    assert_eq!(merged.segments_merged, 3);
    assert_eq!(
        (merged.rows_kept, merged.rows_dropped),
        (9, 3),
        "d1, d5 and d2's old text are dropped"
    );

    // The merge changes nothing any version shows: the commit's version and the merge's
    // answer alike, the version before both still shows what it showed.
    let unrestricted = shown(&store, "default", Access::Unrestricted);
    assert_eq!(
        unrestricted,
        shown(&store, &format!("default@{changed}"), Access::Unrestricted)
    );
    let ids: Vec<&str> = unrestricted.keys().map(String::as_str).collect();
    assert_eq!(
        ids,
        ["d0", "d10", "d11", "d2", "d3", "d4", "d6", "d7", "d8", "d9", "n0"],
        "no deleted child comes back, nothing is lost"
    );
    assert_eq!(unrestricted["d2"].len(), 1);
    assert!(unrestricted["d2"][0].starts_with("Replaced"));
    assert!(!shown(&store, "default", Access::public()).contains_key("d4"));
    assert!(shown(&store, "default", Access::Principals(vec!["eng".into()])).contains_key("d4"));
    let old = shown(&store, &format!("default@{before}"), Access::Unrestricted);
    // Deletes reach every version; the replaced text stays in the older one.
    assert_eq!(old.len(), 10);
    assert!(old["d2"][0].starts_with("Item 2"));

    // The moved children take further writes, and merge again.
    store.delete("d3").expect("delete a moved document");
    store.set_acl("d4", Vec::<String>::new()).expect("acl");
    assert!(!shown(&store, "default", Access::Unrestricted).contains_key("d3"));
    assert!(shown(&store, "default", Access::public()).contains_key("d4"));
    let again = store
        .indexes()
        .compact("default")
        .expect("compact")
        .expect("merged");
    assert_eq!(again.rows_kept, 10);
    let mut store = store;
    let report = store.check_integrity().expect("check");
    assert!(report.is_consistent(), "{:?}", report.problems);
}

/// How long each sync of the slow handle takes.
const SLOW_SYNC: Duration = Duration::from_millis(600);

/// Two handles on one file, as two processes (redb's locks are per open file): while one
/// is inside a slow commit, the other's commit waits its `wait` and fails with
/// `StorageError::Busy`; with a longer wait it lands once the first commit ended.
#[test]
fn a_commit_waits_for_another_handles_commit_then_fails_busy() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.folio");
    let options = small_options();
    drop(options.clone().open(&path).expect("create"));
    let backend = TestBackend::open(&path);
    let slow = backend.sync_delay_ms.clone();
    let first = options
        .clone()
        .create(false)
        .open_with_backend(&path, backend)
        .expect("first handle");
    let wait = Duration::from_millis(100);
    let second = options
        .clone()
        .create(false)
        .wait(wait)
        .open(&path)
        .expect("a second writing handle opens beside the first");
    let patient = options
        .create(false)
        .wait(Duration::from_secs(30))
        .open(&path)
        .expect("third handle");
    slow.store(SLOW_SYNC.as_millis() as u64, Ordering::SeqCst);
    let committing = std::thread::spawn(move || {
        let mut batch = first.batch();
        batch.upsert(doc("slow", "A commit whose syncs are slow."));
        batch.commit().expect("slow commit").versions["default"]
    });
    std::thread::sleep(Duration::from_millis(200));
    match second.aliases().set("prod", &[route("default", 0, 100)]) {
        Err(IndexError::Storage(StorageError::Busy { waited })) => {
            assert!(waited >= wait, "gave up after {waited:?}");
        }
        other => panic!("expected StorageError::Busy, got {other:?}"),
    }
    let started = std::time::Instant::now();
    patient
        .aliases()
        .set("prod", &[route("default", 0, 100)])
        .expect("waits for the slow commit, then commits");
    assert!(
        started.elapsed() >= SLOW_SYNC / 2,
        "the alias committed in {:?}, without waiting for the slow commit",
        started.elapsed()
    );
    assert_eq!(committing.join().expect("slow commit"), 1);
    assert_eq!(
        patient.aliases().list().expect("aliases").len(),
        1,
        "the alias is there"
    );
}
