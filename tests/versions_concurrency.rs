//! Searches on many threads while a writer commits batches, merges, moves an alias and
//! collects garbage: every search succeeds and sees one whole version, never a part of
//! a batch.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod versions_support;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use folio::store::MergePolicy;
use versions_support::{doc, everything, route, small_options, temp_store};

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
