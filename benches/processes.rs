//! What sharing the file between processes costs: a search on the writing handle and on a
//! read-only one (which checks per search whether the writer committed), the first search
//! after a commit (the read-only handle loads the new version), a read-only search while
//! the writer commits one document after another (each search that follows a commit loads
//! it), and a one-document commit
//! in redb's shared mode (two-phase: two syncs) against its exclusive mode (one sync), the
//! mode a backend without range locks gets; and a logging search on a read-only handle
//! beside a plain one while another handle ingests batches (p50 and p99 printed).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use folio::chunk::SourceFormat;
use folio::document::Document;
use folio::embed::HashEmbedder;
use folio::query::SearchRequest;
use folio::store::{Access, Store, StoreBuilder};
use redb::backends::FileBackend;
use redb::StorageBackend;

const DOCS: usize = 2_000;

fn options() -> StoreBuilder {
    Store::builder().create(true).embedder(std::sync::Arc::new(
        HashEmbedder::new(64).expect("embedder"),
    ))
}

fn doc(i: usize) -> Document {
    Document::new(
        format!("d{i}"),
        SourceFormat::Text,
        format!(
            "Document {i} about deploys, hotels and budgets, item {}.",
            i * 7
        ),
    )
}

fn fill(store: &Store) {
    let mut batch = store.batch();
    for i in 0..DOCS {
        batch.upsert(doc(i));
    }
    batch.commit().expect("fill");
}

fn request() -> SearchRequest {
    SearchRequest::text("deploy budget").access(Access::Unrestricted)
}

fn searches(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.folio");
    let writer = options().open(&path).expect("writer");
    fill(&writer);
    let reader = options()
        .read_only(true)
        .create(false)
        .open(&path)
        .expect("reader");
    let mut group = c.benchmark_group(format!("search/{DOCS}_docs"));
    group.bench_function("writer", |b| {
        b.iter(|| writer.search(&request()).expect("search"))
    });
    group.bench_function("read_only", |b| {
        b.iter(|| reader.search(&request()).expect("search"))
    });
    let mut next = DOCS;
    group.bench_function("read_only_after_a_commit", |b| {
        b.iter_batched(
            || {
                let mut batch = writer.batch();
                batch.upsert(doc(next));
                next += 1;
                batch.commit().expect("commit");
            },
            |()| reader.search(&request()).expect("search"),
            BatchSize::PerIteration,
        )
    });
    // The writer commits without pause on another thread: as another process would, it
    // shares the file with the read-only handle only through redb's file locks.
    let stop = Arc::new(AtomicBool::new(false));
    let commits = Arc::new(AtomicU64::new(0));
    let committer = {
        let (writer, stop, commits) = (writer.clone(), stop.clone(), commits.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let mut batch = writer.batch();
                batch.upsert(doc(next));
                next += 1;
                batch.commit().expect("commit");
                commits.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let started = std::time::Instant::now();
    group.bench_function("read_only_while_the_writer_commits", |b| {
        b.iter(|| reader.search(&request()).expect("search"))
    });
    stop.store(true, Ordering::Relaxed);
    committer.join().expect("committer");
    let elapsed = started.elapsed().as_secs_f64();
    let commits = commits.load(Ordering::Relaxed);
    println!(
        "the writer committed {commits} times meanwhile ({:.0} commits/s)",
        commits as f64 / elapsed
    );
    group.finish();
}

/// A file backend without range locks: redb then opens it in its exclusive mode.
#[derive(Debug)]
struct Unshared(FileBackend);

impl StorageBackend for Unshared {
    fn len(&self) -> io::Result<u64> {
        self.0.len()
    }
    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        self.0.read(offset, out)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.0.write(offset, data)
    }
    fn close(&self) -> io::Result<()> {
        self.0.close()
    }
}

fn commits(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let shared = options()
        .open(dir.path().join("shared.folio"))
        .expect("shared");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.path().join("exclusive.folio"))
        .expect("file");
    let exclusive = options()
        .open_with_backend(
            dir.path().join("exclusive.folio"),
            Unshared(FileBackend::new(file).expect("backend")),
        )
        .expect("exclusive");
    let mut group = c.benchmark_group("commit/one_document");
    group.sample_size(30);
    for (name, store) in [
        ("shared_two_phase", &shared),
        ("exclusive_one_phase", &exclusive),
    ] {
        let mut i = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut batch = store.batch();
                batch.upsert(doc(i));
                i += 1;
                batch.commit().expect("commit")
            })
        });
    }
    group.finish();
}

/// Searches timed one by one for the percentiles.
const TIMED: usize = 4_000;

/// The latency at quantile `q` of `times` (sorted here).
fn quantile(times: &mut [std::time::Duration], q: f64) -> std::time::Duration {
    times.sort();
    times[((times.len() - 1) as f64 * q) as usize]
}

fn logging_searches(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.folio");
    let writer = options().open(&path).expect("writer");
    fill(&writer);
    let read_only = options().read_only(true).create(false);
    let plain = read_only.clone().open(&path).expect("plain");
    let logging = read_only.log_requests(true).open(&path).expect("logging");
    // Another handle ingests batches without pause: as another process would, it shares
    // the file with the searching handles only through redb's file locks.
    let stop = Arc::new(AtomicBool::new(false));
    let ingester = {
        let (writer, stop) = (writer.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut next = DOCS;
            while !stop.load(Ordering::Relaxed) {
                let mut batch = writer.batch();
                for _ in 0..20 {
                    batch.upsert(doc(next));
                    next += 1;
                }
                batch.commit().expect("commit");
            }
        })
    };
    let mut group = c.benchmark_group("search/while_another_handle_ingests");
    for (name, store) in [("plain", &plain), ("logging", &logging)] {
        group.bench_function(name, |b| {
            b.iter(|| store.search(&request()).expect("search"))
        });
    }
    group.finish();
    // Interleaved, so both see the same ingest.
    let (mut plain_times, mut logging_times) = (Vec::new(), Vec::new());
    for _ in 0..TIMED {
        for (store, times) in [(&plain, &mut plain_times), (&logging, &mut logging_times)] {
            let started = std::time::Instant::now();
            store.search(&request()).expect("search");
            times.push(started.elapsed());
        }
    }
    stop.store(true, Ordering::Relaxed);
    ingester.join().expect("ingester");
    for (name, times) in [("plain", &mut plain_times), ("logging", &mut logging_times)] {
        println!(
            "{name} search while another handle ingests: p50 {:?}, p99 {:?} ({TIMED} searches)",
            quantile(times, 0.5),
            quantile(times, 0.99)
        );
    }
}

criterion_group!(benches, searches, commits, logging_searches);
criterion_main!(benches);
