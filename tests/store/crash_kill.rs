//! Crash safety: a child process commits batches, moves aliases, merges, collects garbage
//! and logs searches in a loop, printing a line after each commit returns; it is killed
//! with SIGKILL at random moments, over and over. After every kill the file opens, passes
//! the integrity check, holds every batch the child reported, and shows no partial batch,
//! neither in the documents nor in any version an alias serves.
//!
//! The child is this test binary itself, run with `FOLIO_CRASH_CHILD` set.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use folio::query::SearchRequest;
use folio::store::{Access, MergePolicy, Store, StoreBuilder};
use folio_testkit::spawn_child;
use folio_testkit::versions::{doc, everything, route, small_options};

const PER_BATCH: usize = 4;
const KILLS: usize = 120;

fn options() -> StoreBuilder {
    small_options()
        .merge(MergePolicy {
            max_segments: 4,
            max_dead_fraction: 0.3,
        })
        .log_requests(true)
}

fn doc_id(batch: u64, item: usize) -> String {
    format!("b{batch:06}-{item}")
}

fn batch_of(doc_id: &str) -> u64 {
    doc_id[1..7].parse().expect("batch number")
}

/// The writer, when this binary runs as the child. Never returns by itself.
#[test]
fn crash_child() {
    let Ok(path) = std::env::var("FOLIO_CRASH_CHILD") else {
        return;
    };
    let store = options().open(&path).expect("child open");
    let ids = store.document_ids().expect("ids");
    let mut b = ids.iter().map(|id| batch_of(id)).max().unwrap_or(0);
    let present: BTreeSet<u64> = ids.iter().map(|id| batch_of(id)).collect();
    let mut alive: Vec<u64> = present.into_iter().collect();

    loop {
        b += 1;
        let mut batch = store.batch();
        for i in 0..PER_BATCH {
            batch.upsert(doc(
                &doc_id(b, i),
                &format!("Batch {b} item {i}: alpha beta gamma {}.", b * 7 + i as u64),
            ));
        }
        // Every other batch also deletes a whole older batch, announced before the commit
        // so the parent knows it may be gone even if the commit line never comes.
        if b % 2 == 0 && alive.len() > 3 {
            let old = alive.remove(0);
            println!("DELETING {old}");
            for i in 0..PER_BATCH {
                batch.delete(&doc_id(old, i));
            }
        }
        let receipt = batch.commit().expect("child commit");
        alive.push(b);
        let version = receipt.versions["default"];
        println!("COMMIT {b}");
        store
            .aliases()
            .set("live", &[route("default", version, 100)])
            .expect("alias");
        println!("ALIAS {version}");
        if version > 1 {
            store
                .aliases()
                .set(
                    "split",
                    &[
                        route("default", version - 1, 50),
                        route("default", version, 50),
                    ],
                )
                .expect("split");
        }
        let _ = store
            .search(&SearchRequest::text(format!("batch {b}")).route_key("child"))
            .expect("logged search");
        if b % 5 == 0 {
            store.indexes().compact("default").expect("compact");
        }
        if b % 7 == 0 {
            store.gc(3).expect("gc");
        }
    }
}

/// Documents per batch in `target`'s version, from a search that sees everything.
fn batches_at(store: &Store, target: &str) -> (u64, BTreeMap<u64, usize>) {
    let response = everything(store, target, "batch item alpha beta gamma");
    let mut per_batch = BTreeMap::new();
    for hit in &response.results {
        *per_batch.entry(batch_of(&hit.doc_id)).or_default() += 1;
    }
    (response.version, per_batch)
}

#[test]
fn killed_writers_leave_whole_batches() {
    if std::env::var("FOLIO_CRASH_CHILD").is_ok() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("crash.folio");
    drop(options().open(&path).expect("create"));
    let mut committed: BTreeSet<u64> = BTreeSet::new();
    // Batches a child announced it was deleting (the deletion may or may not have committed).
    let mut deleted: BTreeSet<u64> = BTreeSet::new();
    let mut last_alias = 0u64;
    let mut rng = 0x5DEE_CE66_D1CE_4E5Bu64;
    let started = Instant::now();
    let (mut kills, mut mid_run) = (0, 0);
    while kills < KILLS {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let delay = Duration::from_millis(rng % 250);
        let mut child = spawn_child(module_path!(), "crash_child", ("FOLIO_CRASH_CHILD", &path));
        let stdout = child.stdout.take().expect("child stdout");
        let lines = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .collect::<Vec<_>>()
        });
        std::thread::sleep(delay);
        let exited = child.try_wait().expect("try_wait");
        assert!(exited.is_none(), "the child stopped by itself: {exited:?}");
        child.kill().expect("SIGKILL");
        child.wait().expect("reap");
        kills += 1;
        let lines = lines.join().expect("reader");
        let commits_before = committed.len();
        for line in &lines {
            // The harness prints `test crash_kill::crash_child ... ` before the first line, unbroken.
            let line = line.rsplit("... ").next().unwrap_or(line);
            let mut words = line.split_whitespace();
            match (
                words.next(),
                words.next().and_then(|n| n.parse::<u64>().ok()),
            ) {
                (Some("COMMIT"), Some(b)) => {
                    committed.insert(b);
                }
                (Some("DELETING"), Some(b)) => {
                    deleted.insert(b);
                }
                (Some("ALIAS"), Some(v)) => last_alias = v,
                _ => {}
            }
        }
        mid_run += usize::from(committed.len() > commits_before);

        let mut store = options().open(&path).expect("the file opens after a kill");
        let report = store.check_integrity().expect("integrity check runs");
        assert!(
            report.is_consistent(),
            "after kill {kills}: {:?}",
            report.problems
        );
        let mut per_batch: BTreeMap<u64, usize> = BTreeMap::new();
        for id in store.document_ids().expect("ids") {
            *per_batch.entry(batch_of(&id)).or_default() += 1;
        }
        for (b, n) in &per_batch {
            assert_eq!(*n, PER_BATCH, "after kill {kills}: batch {b} is partial");
        }
        for b in committed.difference(&deleted) {
            assert!(
                per_batch.contains_key(b),
                "after kill {kills}: reported batch {b} is missing; present {:?}; last run {lines:?}",
                per_batch.keys().collect::<Vec<_>>()
            );
        }
        for target in ["live", "split", "default"] {
            if target != "default" && store.aliases().route(target, "").is_err() {
                continue;
            }
            let (version, batches) = batches_at(&store, target);
            if target == "live" {
                assert!(
                    version >= last_alias,
                    "alias live went back from {last_alias} to {version}"
                );
            }
            assert!(
                batches.values().all(|n| *n == PER_BATCH),
                "after kill {kills}: {target}@{version} shows a partial batch: {batches:?}"
            );
        }
        let _ = store
            .search(&SearchRequest::text("batch").access(Access::Unrestricted))
            .expect("search after a kill");
    }
    println!(
        "{kills} kills survived in {:.1}s; {} batches reported, {mid_run} runs killed after \
         reporting a commit",
        started.elapsed().as_secs_f64(),
        committed.len()
    );
    assert!(
        committed.len() > 50,
        "the child committed too little to test"
    );
}
