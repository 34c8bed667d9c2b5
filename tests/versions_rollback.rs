//! A rollback writes the same bytes whatever the size of the index: it rewrites one small
//! record (an alias, or a serving pin), never the index. Measured with a backend that
//! counts what redb writes.

mod versions_support;

use std::sync::atomic::Ordering;

use folio::store::Store;
use versions_support::{rollback_setup, small_options, version_of, TestBackend};

/// Bytes written to the file by each of `rounds` alias rollbacks and pin rollbacks on an
/// index of `chunks` one-chunk documents, and the largest file growth any of them caused.
fn rollback_bytes(chunks: usize, rounds: usize) -> (Vec<u64>, Vec<u64>, u64) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.folio");
    let backend = TestBackend::open(&path);
    let written = backend.written.clone();
    let store = Store::open_with_backend(&path, backend, small_options()).expect("create");
    let head = rollback_setup(&store, chunks);
    assert_eq!(version_of(&store, "prod"), head);
    let size = || std::fs::metadata(&path).expect("size").len();
    let (mut alias, mut pin, mut growth) = (Vec::new(), Vec::new(), 0);
    for round in 0..rounds {
        let target = if round % 2 == 0 { head - 1 } else { head };
        for (name, out) in [("prod", &mut alias), ("default", &mut pin)] {
            let (before, file) = (written.load(Ordering::SeqCst), size());
            store.rollback(name, target).expect("rollback");
            out.push(written.load(Ordering::SeqCst) - before);
            growth = growth.max(size() - file);
        }
        assert_eq!(version_of(&store, "prod"), target);
        assert_eq!(version_of(&store, "default"), target);
    }
    (alias, pin, growth)
}

#[test]
fn rollback_bytes_do_not_grow_with_the_index() {
    let (small_alias, small_pin, small_growth) = rollback_bytes(1_000, 6);
    let (large_alias, large_pin, large_growth) = rollback_bytes(100_000, 6);
    println!(
        "rollback bytes written: 1k chunks alias {small_alias:?} pin {small_pin:?}; \
         100k chunks alias {large_alias:?} pin {large_pin:?}; file growth {small_growth} / {large_growth}"
    );
    // The same pages are rewritten (a leaf of the small table, the table directory,
    // redb's commit header and free-page bookkeeping) whatever the index holds.
    let max = |v: &[u64]| v.iter().copied().max().unwrap_or(0);
    assert!(max(&large_alias) <= max(&small_alias) + 4096, "alias");
    assert!(max(&large_pin) <= max(&small_pin) + 4096, "pin");
    assert!(max(&large_alias) <= 64 * 1024 && max(&large_pin) <= 64 * 1024);
    assert_eq!(
        (small_growth, large_growth),
        (0, 0),
        "a rollback never grows the file"
    );
}
