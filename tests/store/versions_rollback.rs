//! A rollback writes the same bytes whatever the size of the index: it rewrites one small
//! record (an alias, or a serving pin), never the index. Measured with a backend that
//! counts what redb writes, on a 1k-chunk and a 100k-chunk index rolled back in turn.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use folio::store::Store;
use folio_testkit::versions::{rollback_setup, small_options, version_of, TestBackend};

struct Indexed {
    _dir: tempfile::TempDir,
    path: PathBuf,
    store: Store,
    written: Arc<AtomicU64>,
    head: u64,
}

fn indexed(chunks: usize) -> Indexed {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.folio");
    let backend = TestBackend::open(&path);
    let written = backend.written.clone();
    let store = small_options()
        .open_with_backend(&path, backend)
        .expect("create");
    let head = rollback_setup(&store, chunks);
    assert_eq!(version_of(&store, "prod"), head);
    Indexed {
        _dir: dir,
        path,
        store,
        written,
        head,
    }
}

/// Bytes written, file growth and time of one rollback of `target` to `version`.
fn rollback(index: &Indexed, target: &str, version: u64) -> (u64, u64, Duration) {
    let size = || std::fs::metadata(&index.path).expect("size").len();
    let (before, file) = (index.written.load(Ordering::SeqCst), size());
    let started = Instant::now();
    index.store.rollback(target, version).expect("rollback");
    let took = started.elapsed();
    assert_eq!(version_of(&index.store, target), version);
    (
        index.written.load(Ordering::SeqCst) - before,
        size() - file,
        took,
    )
}

#[test]
fn rollback_bytes_do_not_grow_with_the_index() {
    let sizes = [1_000, 100_000];
    let indexes: Vec<Indexed> = sizes.iter().map(|n| indexed(*n)).collect();
    // (bytes, growth, times) per index and kind; the two indexes take turns, so a busy
    // machine slows both alike.
    let mut seen = vec![[(Vec::new(), 0u64, Vec::new()), (Vec::new(), 0, Vec::new())]; 2];
    for round in 0..40 {
        for (index, seen) in indexes.iter().zip(seen.iter_mut()) {
            let version = if round % 2 == 0 {
                index.head - 1
            } else {
                index.head
            };
            for (kind, target) in ["prod", "default"].iter().enumerate() {
                let (bytes, growth, took) = rollback(index, target, version);
                seen[kind].0.push(bytes);
                seen[kind].1 = seen[kind].1.max(growth);
                seen[kind].2.push(took);
            }
        }
    }
    let max = |v: &[u64]| v.iter().copied().max().unwrap_or(0);
    let median = |v: &[Duration]| {
        let mut v = v.to_vec();
        v.sort();
        v[v.len() / 2]
    };
    for (n, seen) in sizes.iter().zip(&seen) {
        for (kind, (bytes, growth, times)) in ["alias", "pin"].iter().zip(seen) {
            println!(
                "{n} chunks, {kind} rollback: {} to {} bytes written, file growth {growth}, \
                 median {:?}",
                bytes.iter().min().unwrap_or(&0),
                max(bytes),
                median(times)
            );
        }
    }
    for (kind, (small, large)) in seen[0].iter().zip(&seen[1]).enumerate() {
        // The same pages are rewritten (a leaf of the small table, the table directory,
        // redb's commit header and free-page bookkeeping) whatever the index holds.
        assert!(max(&large.0) <= max(&small.0) + 4096, "kind {kind}");
        assert!(max(&large.0) <= 64 * 1024);
        assert_eq!(
            (small.1, large.1),
            (0, 0),
            "a rollback never grows the file"
        );
    }
}
