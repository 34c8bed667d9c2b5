//! Store creation is atomic, and names are checked under the writer lock.
//!
//! Creating a store takes several writes: redb sizes the file, writes its header, then its
//! magic number, and folio's first transaction writes its tables. A fault at each of them
//! (every write, sync and resize after it fails too, as after a kill) leaves a file that
//! holds no store (an open that may create makes one) or a whole empty store, never a file
//! every open refuses.

use std::sync::atomic::Ordering;
use std::time::Duration;

use folio::chunk::ChunkSpec;
use folio::store::{IndexError, NameKind, OpenError, Store, StoreBuilder};
use folio_testkit::versions::{config_like_default, doc, route, small_options, TestBackend};

fn no_create() -> StoreBuilder {
    small_options().create(false)
}

#[test]
fn a_fault_at_every_step_of_creation_leaves_no_store_or_a_whole_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("new.folio");
    let (mut empty, mut whole) = (0, 0);
    for n in 0.. {
        let _ = std::fs::remove_file(&path);
        let backend = TestBackend::open(&path);
        let (budget, failed) = (backend.budget.clone(), backend.failed.clone());
        budget.store(n, Ordering::SeqCst);
        let result = small_options().open_with_backend(&path, backend);
        let hit = failed.load(Ordering::SeqCst);
        if let Ok(store) = result {
            drop(store);
            if hit == 0 {
                assert!(empty + whole > 3, "creation took only {n} steps");
                break;
            }
        } else {
            assert_ne!(
                hit,
                0,
                "creation failed without a fault: {:?}",
                result.err()
            );
        }
        // What the fault left: no store at all, or the whole empty one.
        let len = std::fs::metadata(&path).map_or(0, |m| m.len());
        match no_create().open(&path) {
            Ok(store) => {
                assert_eq!(store.index_names(), ["default"]);
                whole += 1;
            }
            Err(OpenError::NotFound(_)) => empty += 1,
            Err(e) => panic!("fault at step {n} (kind {hit}, {len} bytes left): {e}"),
        }
        let read_only = no_create().read_only(true);
        match read_only.open(&path) {
            Ok(_) | Err(OpenError::NotFound(_)) => {}
            Err(e) => panic!("fault at step {n}: a read-only open says {e}"),
        }
        // An open that may create makes (or opens) the store in that file.
        let mut store = small_options()
            .open(&path)
            .unwrap_or_else(|e| panic!("fault at step {n} (kind {hit}): create: {e}"));
        let report = store.check_integrity().expect("check");
        assert!(report.is_consistent(), "step {n}: {:?}", report.problems);
        let mut batch = store.batch();
        batch.upsert(doc("d", "A document after the interrupted creation."));
        assert_eq!(batch.commit().expect("commit").versions["default"], 1);
    }
    println!("creation faults: {empty} left no store, {whole} a whole one");
    assert!(empty > 0 && whole > 0);
}

#[test]
fn an_empty_file_or_an_unfinished_redb_creation_becomes_a_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.folio");
    std::fs::write(&path, b"").expect("empty file");
    assert!(matches!(
        no_create().open(&path),
        Err(OpenError::NotFound(_))
    ));
    drop(
        small_options()
            .open(&path)
            .expect("an empty file becomes a store"),
    );
    no_create().open(&path).expect("and stays one");

    // What redb leaves when it stops before its magic number: a header without it, zeros.
    let mut unfinished = vec![0u8; 1 << 20];
    unfinished[9..40].fill(0x5A);
    std::fs::write(&path, &unfinished).expect("write");
    assert!(matches!(
        no_create().open(&path),
        Err(OpenError::NotFound(_))
    ));
    drop(small_options().open(&path).expect("creation starts over"));

    // A file with data in it is never taken for one: with data past a header whose magic
    // number is zeros, it is a redb file whose first page was damaged.
    let mut data = unfinished.clone();
    data[4096] = 1;
    std::fs::write(&path, &data).expect("write");
    assert!(matches!(
        small_options().open(&path),
        Err(OpenError::Damaged { .. })
    ));
    assert_eq!(
        std::fs::read(&path).expect("read"),
        data,
        "and it is not touched"
    );
    std::fs::write(&path, b"# Notes\n\nA Markdown file given as the store.\n").expect("write");
    assert!(matches!(
        small_options().open(&path),
        Err(OpenError::NotAStore { .. })
    ));
}

/// Claims the name `twin` as an index or as an alias.
fn claim(store: &Store, as_index: bool) -> Result<(), IndexError> {
    if as_index {
        let config = config_like_default(store, ChunkSpec::default());
        store.indexes().create("twin", config).map(drop)
    } else {
        store.aliases().set("twin", &[route("default", 1, 100)])
    }
}

/// While one claim of a name commits (its syncs slowed, so it holds the writer for a
/// second), a claim of the same name as the other kind starts: it must be refused. A
/// check made before the second claim takes the writer would see nothing committed yet,
/// and both would get the name.
fn second_claim_while_the_first_commits(first_as_index: bool) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.folio");
    let backend = TestBackend::open(&path);
    let (syncs, delay) = (backend.syncs.clone(), backend.sync_delay_ms.clone());
    let store = small_options()
        .open_with_backend(&path, backend)
        .expect("create");
    store
        .upsert(doc("d1", "Deploys and rollbacks."))
        .expect("upsert");
    delay.store(500, Ordering::SeqCst);
    let before = syncs.load(Ordering::SeqCst);
    let (first, second) = std::thread::scope(|scope| {
        let first = scope.spawn(|| claim(&store, first_as_index));
        // One sync of the first claim's commit is done; the next one sleeps too.
        while syncs.load(Ordering::SeqCst) == before {
            std::thread::sleep(Duration::from_millis(5));
        }
        let second = claim(&store, !first_as_index);
        (first.join().expect("first claim"), second)
    });
    delay.store(0, Ordering::SeqCst);
    assert!(first.is_ok(), "the first claim takes the name: {first:?}");
    let kind = if first_as_index {
        NameKind::Index
    } else {
        NameKind::Alias
    };
    assert!(
        matches!(&second, Err(IndexError::NameTaken { name, other }) if name == "twin" && *other == kind),
        "the second claim is refused: {second:?}"
    );
    let indexed = store.index_names().iter().any(|n| n == "twin");
    let aliased = store
        .aliases()
        .list()
        .expect("aliases")
        .iter()
        .any(|a| a.name == "twin");
    assert_eq!((indexed, aliased), (first_as_index, !first_as_index));
}

#[test]
fn an_alias_cannot_take_the_name_of_an_index_being_committed() {
    second_claim_while_the_first_commits(true);
}

#[test]
fn an_index_cannot_take_the_name_of_an_alias_being_committed() {
    second_claim_while_the_first_commits(false);
}
