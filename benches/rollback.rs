//! Rollback cost against index size: an alias repointed, and an index name pinned, on
//! indexes of 1k and 100k chunks. Both rewrite one small record, so the times match.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use folio::store::Store;
use folio_testkit::versions::{rollback_setup, small_options};

fn build(chunks: usize) -> (tempfile::TempDir, Store, u64) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = small_options()
        .open(dir.path().join("s.folio"))
        .expect("create store");
    let head = rollback_setup(&store, chunks);
    (dir, store, head)
}

fn rollback(c: &mut Criterion) {
    let mut group = c.benchmark_group("rollback");
    group.sample_size(30);
    for chunks in [1_000, 100_000] {
        let (_dir, store, head) = build(chunks);
        for target in ["prod", "default"] {
            let kind = if target == "prod" { "alias" } else { "pin" };
            let mut back = false;
            group.bench_with_input(BenchmarkId::new(kind, chunks), &chunks, |b, _| {
                b.iter(|| {
                    back = !back;
                    let version = if back { head - 1 } else { head };
                    store.rollback(target, version).expect("rollback")
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, rollback);
criterion_main!(benches);
