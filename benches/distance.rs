//! Distance kernels: runtime-dispatched SIMD against the portable scalar code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use folio::index::distance::{dot, l2_sq, scalar};

fn vectors(dim: usize) -> (Vec<f32>, Vec<f32>) {
    let a = (0..dim)
        .map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0)
        .collect();
    let b = (0..dim)
        .map(|i| ((i * 53) % 97) as f32 / 48.0 - 1.0)
        .collect();
    (a, b)
}

fn kernels(c: &mut Criterion) {
    for dim in [128, 384, 768] {
        let (a, b) = vectors(dim);
        let mut group = c.benchmark_group(format!("distance/{dim}"));
        group.throughput(Throughput::Elements(dim as u64));
        group.bench_function("dot/simd", |bench| {
            bench.iter(|| dot(black_box(&a), black_box(&b)))
        });
        group.bench_function("dot/scalar", |bench| {
            bench.iter(|| scalar::dot(black_box(&a), black_box(&b)))
        });
        group.bench_function("l2/simd", |bench| {
            bench.iter(|| l2_sq(black_box(&a), black_box(&b)))
        });
        group.bench_function("l2/scalar", |bench| {
            bench.iter(|| scalar::l2_sq(black_box(&a), black_box(&b)))
        });
        group.finish();
    }
}

criterion_group!(benches, kernels);
criterion_main!(benches);
