//! Metadata filters through the whole store, at 50%, 10%, 1% and 0.1% selectivity:
//! recall@10 of the planner (graph, two-hop, top-up or exact, as it chooses) against the
//! exact top 10 of the matching documents, and the search's cost. A group of its own, so
//! `cargo bench --bench metadata_filter` builds only its store.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use std::collections::{BTreeMap, BTreeSet};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use folio::chunk::SourceFormat;
use folio::document::Document;
use folio::embed::HashEmbedder;
use folio::filter::Filter;
use folio::index::{exact_search, Metric, VectorSet};
use folio::query::SearchRequest;
use folio::store::{Access, MergePolicy, Store};
use folio::MetadataValue;
use folio_testkit::vectors::Blobs;
use roaring::RoaringBitmap;

/// Metadata filters through the whole store: `FOLIO_BENCH_N` (default 100k) one-chunk
/// documents of 64-d clustered vectors (one segment with its graph), each with a number
/// `bucket` = i mod 1000, searched with `bucket < t` at 50%, 10%, 1% and 0.1%
/// selectivity. Prints recall@10 against the exact top 10 of the matching documents (200
/// queries), the planner's paths, and the first (uncached) and later costs of the filter;
/// then criterion times the searches.
fn metadata_filter(c: &mut Criterion) {
    let n: usize = std::env::var("FOLIO_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let dim = 64;
    // 100 Gaussian clusters; 200 queries from the same clusters.
    let mut blobs = Blobs::new(1, dim, 100, 3.0);
    let (mut data, _) = blobs.take(n);
    let queries: Vec<Vec<f32>> = (0..200).map(|_| blobs.take(1).0).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.folio");
    let options = || {
        Store::builder()
            .embedder(Arc::new(HashEmbedder::new(dim).unwrap()))
            .merge(MergePolicy::never())
    };
    {
        let store = options().create(true).open(&path).unwrap();
        let mut batch = store.batch();
        for (i, row) in data.chunks_exact(dim).enumerate() {
            let doc = Document::new(format!("d{i}"), SourceFormat::Text, format!("Item {i}."))
                .with_metadata("bucket", MetadataValue::Number((i % 1000) as f64));
            batch.upsert_with_vectors(doc, BTreeMap::from([("default".to_string(), row.to_vec())]));
        }
        batch.commit().unwrap();
    }
    // The oracle: cosine, so the exact scan runs on normalised rows.
    for row in data.chunks_exact_mut(dim) {
        folio::index::distance::normalize(row);
    }
    let vectors = VectorSet::new(&data, dim, Metric::Dot).unwrap();
    let store = options().open(&path).unwrap();
    let mut group = c.benchmark_group(format!("metadata_filter/{}k_x_{dim}", n / 1000));
    println!(
        "| selectivity | filter | matching | recall@10 | paths | first search | later searches |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (label, t) in [("50%", 500), ("10%", 100), ("1%", 10), ("0.1%", 1)] {
        let text = format!("bucket < {t}");
        let filter = Filter::parse(&text).unwrap();
        let matching: RoaringBitmap = (0..n as u32).filter(|i| i % 1000 < t).collect();
        let request = |q: &[f32]| {
            SearchRequest::vector(q.to_vec())
                .access(Access::Unrestricted)
                .k(10)
                .no_dedup()
                .filter(filter.clone())
        };
        let started = Instant::now();
        store.search(&request(&queries[0])).unwrap();
        let first = started.elapsed();
        let (mut found, mut paths) = (0usize, BTreeSet::new());
        let started = Instant::now();
        for q in &queries {
            let response = store.search(&request(q)).unwrap();
            paths.extend(
                response
                    .stats
                    .paths
                    .iter()
                    .map(|p| format!("{p:?}").to_lowercase()),
            );
            let got: BTreeSet<u32> = response
                .results
                .iter()
                .map(|h| h.doc_id[1..].parse().unwrap())
                .collect();
            let mut query = q.clone();
            folio::index::distance::normalize(&mut query);
            let truth = exact_search(vectors, 0, &query, 10, &matching);
            found += truth.iter().filter(|nb| got.contains(&nb.id)).count();
        }
        let later = started.elapsed() / queries.len() as u32;
        let recall = found as f64 / (10 * queries.len()) as f64;
        println!(
            "| {label} | `{text}` | {} | {recall:.3} | {} | {:.2} ms | {:.3} ms |",
            matching.len(),
            paths.into_iter().collect::<Vec<_>>().join(", "),
            first.as_secs_f64() * 1000.0,
            later.as_secs_f64() * 1000.0
        );
        let mut q = queries.iter().cycle();
        group.bench_function(format!("search/{label}"), |b| {
            b.iter(|| {
                store
                    .search(black_box(&request(q.next().unwrap())))
                    .unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, metadata_filter);
criterion_main!(benches);
