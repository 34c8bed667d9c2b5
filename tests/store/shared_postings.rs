//! Shared postings files (`STORE.segments/<index>-<segment>.lex`): a read-only handle
//! maps each segment's lexical postings from a file made from the store by the first
//! lexical search (or the stats), answers exactly as a handle that decodes them into its own memory,
//! never uses a damaged, cut or foreign file (it makes it again), falls back to its own
//! copy where the folder cannot be written, and a collection removes the files of the
//! segments it deleted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use folio::query::{SearchMode, SearchRequest};
use folio::store::{Access, Store};
use folio_testkit::versions::{
    doc, graph_options, shared_files, shared_folder as folder, shared_reader as reader,
    small_options,
};

const WORDS: [&str; 10] = [
    "lunch", "hotel", "travel", "limits", "noon", "served", "refund", "policy", "desk", "badge",
];

/// The text of document `i`: a few words drawn from `WORDS` by `i`.
fn text(i: usize) -> String {
    (0..1 + i % 5)
        .map(|j| WORDS[(i * 7 + j * (i % 3 + 1)) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

/// A store of three segments (one with deletions), closed.
fn filled(dir: &Path, prefix: &str) -> PathBuf {
    let path = dir.join("s.folio");
    let store = graph_options().open(&path).expect("create");
    for (start, count) in [(0, 300), (300, 120), (420, 10)] {
        let mut batch = store.batch();
        for i in start..start + count {
            let vector: Vec<f32> = (0..8).map(|j| ((i * 8 + j) % 11) as f32 - 5.0).collect();
            batch.upsert_with_vectors(
                doc(&format!("{prefix}{i}"), &text(i)),
                BTreeMap::from([("default".to_string(), vector)]),
            );
        }
        batch.commit().expect("commit");
    }
    let mut batch = store.batch();
    for i in (0..300).step_by(4) {
        batch.delete(&format!("{prefix}{i}"));
    }
    batch.commit().expect("deletes");
    path
}

/// Per query, the lexical hits with their score bits.
fn answers(store: &Store) -> Vec<Vec<(String, u32)>> {
    let queries = [
        "lunch",
        "hotel travel",
        "refund policy desk",
        "badge noon served",
    ];
    queries
        .iter()
        .map(|query| {
            let request = SearchRequest::text(*query)
                .access(Access::Unrestricted)
                .mode(SearchMode::Lexical)
                .k(15);
            let response = store.search(&request).expect("search");
            response
                .results
                .iter()
                .map(|h| (h.doc_id.clone(), h.score.to_bits()))
                .collect()
        })
        .collect()
}

/// The shared postings files beside the store.
fn postings_files(path: &Path) -> BTreeSet<String> {
    shared_files(path, ".lex")
}

/// (segments whose postings are mapped, segments, the reason one is not shared).
fn sharing(store: &Store) -> (usize, usize, Option<String>) {
    let stats = store.stats().expect("stats");
    let index = &stats.indexes[0];
    (
        index.mapped_postings,
        index.segments,
        index.shared_refused.clone(),
    )
}

#[test]
fn readers_map_the_postings_and_answer_as_a_resident_load() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = filled(dir.path(), "d");
    let resident = reader(&path, false);
    let want = answers(&resident);
    assert!(want.iter().all(|hits| !hits.is_empty()), "{want:?}");
    assert_eq!(sharing(&resident), (0, 3, None));
    assert!(
        postings_files(&path).is_empty(),
        "a resident load makes none"
    );

    let first = reader(&path, true);
    assert!(
        postings_files(&path).is_empty(),
        "made by the first search, not the open"
    );
    assert_eq!(answers(&first), want);
    let made = postings_files(&path);
    assert_eq!(made.len(), 3, "one file per segment: {made:?}");
    assert_eq!(sharing(&first), (3, 3, None));
    let stamps: Vec<_> = made
        .iter()
        .map(|name| {
            let meta = std::fs::metadata(folder(&path).join(name)).expect("meta");
            meta.modified().expect("time")
        })
        .collect();

    // Another handle, and the default of a read-only open.
    let second = small_options()
        .create(false)
        .read_only(true)
        .open(&path)
        .expect("second reader");
    assert_eq!(
        sharing(&second),
        (3, 3, None),
        "the stats load them as a search would"
    );
    assert_eq!(answers(&second), want);
    let again: Vec<_> = made
        .iter()
        .map(|name| {
            let meta = std::fs::metadata(folder(&path).join(name)).expect("meta");
            meta.modified().expect("time")
        })
        .collect();
    assert_eq!(
        stamps, again,
        "the second reader maps the files, it does not make them"
    );
}

/// Changes a file's bytes, given a foreign file of the same name.
type Damage = fn(&mut Vec<u8>, &[u8]);

#[test]
fn a_damaged_cut_or_foreign_postings_file_is_refused_and_made_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = filled(dir.path(), "d");
    let want = answers(&reader(&path, false));
    answers(&reader(&path, true));
    let names: Vec<String> = postings_files(&path).into_iter().collect();
    assert_eq!(names.len(), 3);
    let pristine: Vec<Vec<u8>> = names
        .iter()
        .map(|n| std::fs::read(folder(&path).join(n)).expect("read"))
        .collect();
    // Another store's files under the same names: same shapes, other documents.
    let other_dir = tempfile::tempdir().expect("temp dir");
    let other = filled(other_dir.path(), "z");
    answers(&reader(&other, true));
    let damages: [(&str, Damage); 5] = [
        ("a flipped body byte", |bytes, _| {
            let at = bytes.len() / 2;
            bytes[at] ^= 0x40;
        }),
        ("a flipped header byte", |bytes, _| bytes[3] ^= 1),
        ("cut short", |bytes, _| bytes.truncate(bytes.len() - 100)),
        ("emptied", |bytes, _| bytes.clear()),
        ("another store's", |bytes, foreign| {
            *bytes = foreign.to_vec()
        }),
    ];
    for (what, damage) in damages {
        for (name, good) in names.iter().zip(&pristine) {
            let foreign = std::fs::read(folder(&other).join(name)).expect("foreign file");
            assert_ne!(&foreign, good);
            let mut bytes = good.clone();
            damage(&mut bytes, &foreign);
            std::fs::write(folder(&path).join(name), &bytes).expect("damage");
        }
        let store = reader(&path, true);
        assert_eq!(answers(&store), want, "{what}");
        assert_eq!(sharing(&store), (3, 3, None), "{what}");
        for (name, good) in names.iter().zip(&pristine) {
            let now = std::fs::read(folder(&path).join(name)).expect("read");
            assert!(now == *good, "{what}: {name} made again as it was");
        }
    }
}

#[test]
fn a_folder_that_cannot_be_made_leaves_each_reader_its_own_postings() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = filled(dir.path(), "d");
    let want = answers(&reader(&path, false));
    std::fs::write(folder(&path), b"in the way").expect("block");
    let store = reader(&path, true);
    assert_eq!(answers(&store), want);
    let (mapped, segments, refused) = sharing(&store);
    assert_eq!((mapped, segments), (0, 3));
    assert!(refused.is_some_and(|r| r.contains("writing it")));
}

#[test]
fn a_collection_removes_the_postings_files_of_the_segments_it_deleted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = filled(dir.path(), "d");
    let watching = reader(&path, true);
    answers(&watching);
    let before = postings_files(&path);
    assert_eq!(before.len(), 3);
    let writer = graph_options().create(false).open(&path).expect("writer");
    writer.indexes().compact("default").expect("merge");
    let report = writer.gc(1).expect("gc");
    assert!(report.segments >= 2, "{report:?}");
    let after = postings_files(&path);
    assert_eq!(
        before.len() - after.len(),
        report.segments as usize,
        "{before:?} -> {after:?}"
    );
    // The reader follows the collection: the merged segment's postings get their file.
    let want = answers(&reader(&path, false));
    assert_eq!(answers(&watching), want);
    assert_eq!(postings_files(&path).len(), after.len() + 1);
    let (mapped, segments, refused) = sharing(&watching);
    assert_eq!((mapped, refused), (segments, None));
}

/// A compressed index's segments have no shared segment file (their rows stay in the
/// store), but their postings are shared as any other's.
#[test]
fn a_compressed_index_shares_its_postings() {
    use folio::store::{VectorStorage, DEFAULT_RESCORE};
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.folio");
    let compressed = VectorStorage::Compressed {
        rescore: DEFAULT_RESCORE,
    };
    {
        let store = graph_options()
            .vectors(compressed)
            .open(&path)
            .expect("create");
        for start in [0, 200] {
            let mut batch = store.batch();
            for i in start..start + 200 {
                let vector: Vec<f32> = (0..8).map(|j| ((i * 8 + j) % 13) as f32 - 6.0).collect();
                batch.upsert_with_vectors(
                    doc(&format!("c{i}"), &text(i)),
                    BTreeMap::from([("default".to_string(), vector)]),
                );
            }
            batch.commit().expect("commit");
        }
    }
    let want = answers(&reader(&path, false));
    let store = reader(&path, true);
    assert_eq!(answers(&store), want);
    assert_eq!(sharing(&store), (2, 2, None));
    assert_eq!(postings_files(&path).len(), 2);
    let all = std::fs::read_dir(folder(&path)).expect("folder").count();
    assert_eq!(all, 2, "no shared segment file for a compressed segment");
}
