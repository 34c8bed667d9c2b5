//! Measures the merge policy under a steady update load: segments per version, dead rows
//! in the head, rows rewritten per row ingested, and graph recall, against never merging.
//! The defaults in `MergePolicy` are chosen from these numbers (see storage-format.md).

use folio::embed::{Embedder, HashEmbedder};
use folio::index::merge_top_k;
use folio::store::{Access, GraphParams, MergePolicy, Store};
use folio_testkit::versions::{doc, temp_store};

const DOCS: usize = 300;
const COMMITS: usize = 150;
const WORDS: &[&str] = &[
    "deploy", "rollback", "budget", "hotel", "vacation", "kernel", "invoice", "laptop", "badge",
    "incident", "travel", "salary", "cluster", "backup", "office", "printer", "canary", "ledger",
];

struct Measure {
    max_segments: usize,
    max_dead: f64,
    amplification: f64,
    recall: f64,
}

fn words(seed: &mut u64, n: usize) -> String {
    (0..n)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            WORDS[(*seed % WORDS.len() as u64) as usize]
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn run(policy: MergePolicy) -> Measure {
    let options = Store::builder()
        .create(true)
        .embedder(std::sync::Arc::new(
            HashEmbedder::new(16).expect("embedder"),
        ))
        .graph(GraphParams {
            min_graph_size: 64,
            m: 8,
            ef_construction: 64,
        })
        .merge(policy);
    let (_dir, store) = temp_store(options);
    let mut seed = 0x1234_5678_9abc_def1u64;
    let mut batch = store.batch();
    for d in 0..DOCS {
        batch.upsert(doc(&format!("d{d}"), &format!("{}.", words(&mut seed, 12))));
    }
    let mut ingested = batch.commit().expect("initial").children as u64;
    let (mut max_segments, mut max_dead) = (0, 0f64);
    for _ in 0..COMMITS {
        let mut batch = store.batch();
        for _ in 0..6 {
            let d = (seed % DOCS as u64) as usize;
            batch.upsert(doc(&format!("d{d}"), &format!("{}.", words(&mut seed, 12))));
        }
        ingested += batch.commit().expect("update").children as u64;
        let head = store.vectors("default").expect("vectors");
        let rows: usize = head.segments.iter().map(|s| s.len()).sum();
        max_segments = max_segments.max(head.segments.len());
        max_dead = max_dead.max(1.0 - head.live.len() as f64 / rows as f64);
    }
    let merged: u64 = store
        .versions("default")
        .list()
        .expect("versions")
        .iter()
        .filter_map(|v| {
            let rest = v.change.strip_prefix("compact ")?;
            rest.split(": ")
                .nth(1)?
                .split(' ')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum();
    Measure {
        max_segments,
        max_dead,
        amplification: (ingested + merged) as f64 / ingested as f64,
        recall: recall(&store, &mut seed),
    }
}

/// Recall@10 of the head's children search against an exact scan of its live rows.
fn recall(store: &Store, seed: &mut u64) -> f64 {
    let embedder = HashEmbedder::new(16).expect("embedder");
    let head = store.vectors("default").expect("vectors");
    let visible = store
        .visible("default", &Access::Unrestricted)
        .expect("visible");
    let (mut found, mut total) = (0usize, 0usize);
    for _ in 0..100 {
        let mut q = embedder.embed(&[&words(seed, 3)]).expect("embed");
        folio::index::distance::normalize(&mut q);
        let mut exact: Vec<(f32, u32)> = Vec::new();
        for segment in &head.segments {
            let dim = segment.dim();
            for (row, v) in segment.rows().chunks_exact(dim).enumerate() {
                let id = segment.base() + row as u32;
                if visible.contains(id) {
                    exact.push((v.iter().zip(&q).map(|(a, b)| a * b).sum(), id));
                }
            }
        }
        exact.sort_by(|a, b| b.0.total_cmp(&a.0));
        let cutoff = exact.get(9).map_or(f32::MIN, |e| e.0);
        // The head's children search: each segment with visible children, merged.
        let lists: Vec<_> = head
            .segments
            .iter()
            .filter(|s| visible.range_cardinality(s.ids()) > 0)
            .map(|s| s.search(&q, 10, Some(16), &visible).expect("search").0)
            .collect();
        let got = merge_top_k(lists, 10);
        total += 10;
        found += got.iter().filter(|n| n.score >= cutoff - 1e-6).count();
    }
    found as f64 / total as f64
}

#[test]
fn the_default_policy_bounds_segments_and_dead_rows_cheaply() {
    let policy = run(MergePolicy::default());
    let never = run(MergePolicy::never());
    for (label, m) in [("merge policy", &policy), ("never merging", &never)] {
        println!(
            "{label}: max {} segments, max {:.0}% dead rows, {:.2} rows written per row \
             ingested, recall@10 {:.3} (ef 16)",
            m.max_segments,
            m.max_dead * 100.0,
            m.amplification,
            m.recall
        );
    }
    assert!(policy.max_segments <= 8);
    assert!(policy.max_dead < 0.5, "{}", policy.max_dead);
    assert!(policy.amplification < 4.0, "{}", policy.amplification);
    assert!(never.max_segments > 100 && never.max_dead > 0.5);
    assert!(policy.recall >= 0.9, "{}", policy.recall);
}
