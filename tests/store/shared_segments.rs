//! Shared segment files (`STORE.segments/`): a read-only handle maps each segment from a
//! file made from the store, answers exactly as a handle that reads the segments into its
//! own memory, never uses a damaged or foreign file (it makes it again), falls back to its
//! own copy where the folder cannot be written, and a collection removes the files of the
//! segments it deleted.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use folio::store::Store;
use folio_testkit::versions::{
    bulk_with_vectors, graph_options, shared_files, shared_folder as folder,
    shared_reader as reader, small_options, vector_answers as answers,
};

/// The shared segment files beside the store (the stats also map, and make, the postings'
/// files: `shared_postings.rs`).
fn files(path: &Path) -> BTreeSet<String> {
    shared_files(path, ".seg")
}

/// A store of three segments with graphs (one with deletions) and one without, closed.
fn filled(dir: &Path) -> PathBuf {
    let path = dir.join("s.folio");
    let store = graph_options().open(&path).expect("create");
    bulk_with_vectors(&store, "a", 3000, 8, 3000);
    bulk_with_vectors(&store, "b", 400, 8, 200);
    bulk_with_vectors(&store, "c", 10, 8, 10);
    let mut batch = store.batch();
    for i in (0..3000).step_by(3) {
        batch.delete(&format!("a{i}"));
    }
    batch.commit().expect("deletes");
    path
}

/// When each of the files `names` was last written.
fn modified(path: &Path, names: &BTreeSet<String>) -> Vec<std::time::SystemTime> {
    names
        .iter()
        .map(|f| {
            let meta = std::fs::metadata(folder(path).join(f)).expect("meta");
            meta.modified().expect("time")
        })
        .collect()
}

/// (mapped segments, segments, the reason one is not mapped) of the default index.
fn sharing(store: &Store) -> (usize, usize, Option<String>) {
    let stats = store.stats().expect("stats");
    let index = &stats.indexes[0];
    (
        index.mapped_segments,
        index.segments,
        index.shared_refused.clone(),
    )
}

#[test]
fn readers_map_the_files_and_answer_as_a_resident_load() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = filled(dir.path());
    let resident = reader(&path, false);
    assert_eq!(sharing(&resident), (0, 4, None));
    assert!(files(&path).is_empty(), "a resident load makes no file");
    let first = reader(&path, true);
    assert_eq!(sharing(&first), (4, 4, None));
    let made = files(&path);
    assert_eq!(made.len(), 4, "one file per segment: {made:?}");
    let stamps = modified(&path, &made);
    // The default for a read-only open.
    let second = small_options()
        .create(false)
        .read_only(true)
        .open(&path)
        .expect("second reader");
    assert_eq!(sharing(&second), (4, 4, None));
    assert_eq!(
        stamps,
        modified(&path, &made),
        "the second reader maps the files, it does not make them"
    );
    let want = answers(&resident);
    assert_eq!(answers(&first), want);
    assert_eq!(answers(&second), want);
    // The vectors and graphs are the same, bit for bit.
    let mapped = second.vectors("default").expect("vectors");
    let own = resident.vectors("default").expect("vectors");
    for (m, o) in mapped.segments.iter().zip(&own.segments) {
        assert!(m.is_mapped() && !o.is_mapped());
        assert_eq!(m.rows(), o.rows());
        assert_eq!(m.graph(), o.graph());
    }
}

/// Changes a file's bytes, given a foreign file of the same name.
type Damage = fn(&mut Vec<u8>, &[u8]);

#[test]
fn a_damaged_or_foreign_file_is_refused_and_made_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = filled(dir.path());
    let want = answers(&reader(&path, false));
    drop(reader(&path, true));
    let names: Vec<String> = files(&path).into_iter().collect();
    let pristine: Vec<Vec<u8>> = names
        .iter()
        .map(|n| std::fs::read(folder(&path).join(n)).expect("read"))
        .collect();
    // Another store's files under this store's names: same shapes, other rows.
    let other_dir = tempfile::tempdir().expect("temp dir");
    let other = other_dir.path().join("s.folio");
    {
        let store = graph_options().open(&other).expect("create other");
        bulk_with_vectors(&store, "z", 3000, 8, 3000);
    }
    drop(reader(&other, true));
    let damages: [(&str, Damage); 4] = [
        ("a flipped body byte", |bytes, _| {
            let at = bytes.len() / 2;
            bytes[at] ^= 0x40;
        }),
        ("a flipped header byte", |bytes, _| bytes[3] ^= 1),
        ("cut short", |bytes, _| bytes.truncate(bytes.len() - 100)),
        ("another store's", |bytes, foreign| {
            *bytes = foreign.to_vec()
        }),
    ];
    let foreign = std::fs::read(folder(&other).join(&names[0])).expect("foreign file");
    for (what, damage) in damages {
        for (name, good) in names.iter().zip(&pristine) {
            let mut bytes = good.clone();
            damage(&mut bytes, &foreign);
            std::fs::write(folder(&path).join(name), &bytes).expect("damage");
        }
        let store = reader(&path, true);
        assert_eq!(sharing(&store), (4, 4, None), "{what}");
        assert_eq!(answers(&store), want, "{what}");
        for (name, good) in names.iter().zip(&pristine) {
            let now = std::fs::read(folder(&path).join(name)).expect("read");
            assert!(now == *good, "{what}: {name} made again as it was");
        }
    }
}

#[test]
fn a_folder_that_cannot_be_made_leaves_each_reader_its_own_copy() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = filled(dir.path());
    let want = answers(&reader(&path, false));
    // A file where the folder would be: nothing can be written in it, even by root.
    std::fs::write(folder(&path), b"in the way").expect("block");
    let store = reader(&path, true);
    let (mapped, segments, refused) = sharing(&store);
    assert_eq!((mapped, segments), (0, 4));
    assert!(refused.is_some_and(|r| r.contains("writing it")));
    assert_eq!(answers(&store), want);
}

#[test]
fn a_collection_removes_the_files_of_the_segments_it_deleted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = filled(dir.path());
    let watching = reader(&path, true);
    let before = files(&path);
    assert_eq!(before.len(), 4);
    let writer = graph_options().create(false).open(&path).expect("writer");
    writer.indexes().compact("default").expect("merge");
    let report = writer.gc(1).expect("gc");
    assert!(report.segments >= 2, "{report:?}");
    let after = files(&path);
    assert_eq!(
        before.len() - after.len(),
        report.segments as usize,
        "{before:?} -> {after:?}"
    );
    // The reader follows the collection: the merged segment gets its file, and it answers
    // as a fresh resident load does.
    let want = answers(&reader(&path, false));
    assert_eq!(answers(&watching), want);
    assert_eq!(sharing(&watching), (after.len() + 1, after.len() + 1, None));
    assert_eq!(files(&path).len(), after.len() + 1);
}
