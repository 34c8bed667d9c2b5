//! Filtered search: the exact scan over 100k x 384 vectors (the planner's fallback and its
//! cost floor), and planner searches over an HNSW graph at 100%, 10% and 1% of ids
//! visible, on synthetic clustered data; and the cost of the live permission check (an
//! older version is filtered by the documents' current ACLs, the head is not), on a store.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use folio::index::{
    exact_search, exact_search_all, search_with, Graph, HnswParams, Metric, SearchOptions,
    Strategy, VectorSet,
};
use folio_testkit::vectors::Blobs;
use roaring::RoaringBitmap;

/// `n` points in 100 Gaussian clusters, plus `queries` more from the same clusters.
fn clustered(n: usize, queries: usize, dim: usize) -> (Vec<f32>, Vec<Vec<f32>>) {
    let mut blobs = Blobs::new(1, dim, 100, 3.0);
    let (data, _) = blobs.take(n);
    let queries = (0..queries).map(|_| blobs.take(1).0).collect();
    (data, queries)
}

fn every(step: u32, n: usize) -> RoaringBitmap {
    (0..n as u32)
        .filter(|i| i.wrapping_mul(2_654_435_761) % step == 0)
        .collect()
}

fn exact_scan(c: &mut Criterion) {
    let (n, dim) = (100_000, 384);
    let (data, queries) = clustered(n, 16, dim);
    let vectors = VectorSet::new(&data, dim, Metric::Dot).unwrap();
    let mut group = c.benchmark_group("exact_scan/100k_x_384");
    group.throughput(Throughput::Elements(n as u64));
    group.sample_size(20);
    let mut q = queries.iter().cycle();
    group.bench_function("all", |b| {
        b.iter(|| exact_search_all(vectors, 0, black_box(q.next().unwrap()), 10))
    });
    let visible = every(10, n);
    group.throughput(Throughput::Elements(visible.len()));
    group.bench_function("10%_visible", |b| {
        b.iter(|| exact_search(vectors, 0, black_box(q.next().unwrap()), 10, &visible))
    });
    group.finish();
}

fn graph_search(c: &mut Criterion) {
    let (n, dim) = (20_000, 128);
    let (data, queries) = clustered(n, 256, dim);
    let vectors = VectorSet::new(&data, dim, Metric::L2).unwrap();
    let graph = Graph::build(vectors, HnswParams::default(), &|_| {});
    let mut group = c.benchmark_group("filtered_search/20k_x_128");
    for (label, step) in [("100%", 1), ("10%", 10), ("1%", 100)] {
        let visible = every(step, n);
        for (name, strategy) in [
            ("planner", Strategy::Auto),
            ("graph", Strategy::GraphTwoHop),
            ("exact", Strategy::Exact),
        ] {
            let strategy = if step == 1 && strategy == Strategy::GraphTwoHop {
                Strategy::Graph
            } else {
                strategy
            };
            let options = SearchOptions {
                k: 10,
                ef: Some(64),
                strategy,
            };
            let mut q = queries.iter().cycle();
            group.bench_function(format!("{label}/{name}"), |b| {
                b.iter(|| {
                    search_with(
                        vectors,
                        Some(&graph),
                        0,
                        black_box(q.next().unwrap()),
                        &visible,
                        options,
                    )
                })
            });
        }
    }
    group.finish();
}

/// The live permission check: the same 20k one-chunk documents (10% public, the rest
/// shared with 2 of 100 principals) searched at the head, which uses only its own bitmaps
/// (the search as it was before format 4), and at version 1, identical in content, which
/// also intersects with the current-ACL bitmaps. `visible` is the bitmap work alone,
/// `search` a whole store search for 10 units.
fn live_acl(c: &mut Criterion) {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use folio::chunk::SourceFormat;
    use folio::document::Document;
    use folio::embed::HashEmbedder;
    use folio::query::SearchRequest;
    use folio::store::{Access, MergePolicy, Store};

    let (n, dim) = (20_000, 64);
    let (data, queries) = clustered(n, 64, dim);
    let dir = tempfile::tempdir().unwrap();
    let options = Store::builder()
        .create(true)
        .embedder(Arc::new(HashEmbedder::new(dim).unwrap()))
        .merge(MergePolicy::never());
    let store = options.open(dir.path().join("s.folio")).unwrap();
    let acl = |i: usize| -> Vec<String> {
        if i.is_multiple_of(10) {
            Vec::new()
        } else {
            vec![format!("p{}", i % 100), format!("p{}", (i * 7 + 3) % 100)]
        }
    };
    let mut batch = store.batch();
    for (i, row) in data.chunks_exact(dim).enumerate() {
        let doc = Document::new(format!("d{i}"), SourceFormat::Text, format!("Item {i}."));
        let vectors = BTreeMap::from([("default".to_string(), row.to_vec())]);
        batch.upsert_with_vectors(doc.with_acl(acl(i)), vectors);
    }
    batch.commit().unwrap();
    // Version 2: the same documents and ACLs.
    store.set_acl("d1", acl(1)).unwrap();
    let access = Access::principals(["p3"]);
    let mut group = c.benchmark_group("live_acl/20k_x_64");
    // Each visible set is computed in a read transaction of its own, the target resolved.
    assert_eq!(
        store.visible("default", &access).unwrap(),
        store.visible("default@1", &access).unwrap()
    );
    group.bench_function("visible/head (own bitmaps)", |b| {
        b.iter(|| store.visible(black_box("default"), &access).unwrap())
    });
    group.bench_function("visible/@1 (+ current ACL)", |b| {
        b.iter(|| store.visible(black_box("default@1"), &access).unwrap())
    });
    // `@2` names the head by number, so it resolves like `@1` (the bare name reads the
    // serving pin instead); all three answer the same units.
    for (label, target) in [
        ("@1 (+ current ACL)", "default@1"),
        ("@2 = head (own bitmaps)", "default@2"),
        ("head (own bitmaps)", "default"),
    ] {
        let mut q = queries.iter().cycle();
        group.bench_function(format!("search/{label}"), |b| {
            b.iter(|| {
                let request = SearchRequest::vector(q.next().unwrap().clone())
                    .access(access.clone())
                    .target(target)
                    .k(10);
                store.search(black_box(&request)).unwrap()
            })
        });
    }
    // An alias pinned at version 1, searched by callers whose principal lists the mask
    // cache (256 lists, wiped by every commit) already holds, or never saw: a user's own
    // name beside a shared group, new on every query, as a web app's per-user lists are.
    store
        .aliases()
        .set(
            "pinned",
            &[folio::store::Route {
                index: "default".to_string(),
                version: 1,
                weight: 100,
            }],
        )
        .unwrap();
    let mut user = 0u64;
    for (label, fresh) in [("cached list", false), ("a new list each query", true)] {
        let mut q = queries.iter().cycle();
        group.bench_function(format!("search/alias pinned at @1, {label}"), |b| {
            b.iter(|| {
                user += u64::from(fresh);
                let access = Access::principals(["p3".to_string(), format!("user{user}")]);
                let request = SearchRequest::vector(q.next().unwrap().clone())
                    .access(access)
                    .target("pinned")
                    .k(10);
                store.search(black_box(&request)).unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, exact_scan, graph_search, live_acl);
criterion_main!(benches);
