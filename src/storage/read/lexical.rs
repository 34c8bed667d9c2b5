//! The lexical (BM25) leg over a version's segments: each segment's [`LexicalSegment`] is
//! mapped from its shared postings file (`file/shared_segments.rs`) when the handle maps
//! its segments, else read from the store (`file/postings.rs`), the first time a search
//! needs it, and kept with the loaded segment (so every version and state sharing the
//! segment reuses it); a version's [`CorpusStats`] once per version view.

use redb::ReadTransaction;
use roaring::RoaringBitmap;

use crate::index::lexical::{search, Analyzer, CorpusStats, LexicalSegment};
use crate::index::ChildSearch;
use crate::storage::error::StorageError;
use crate::storage::file::postings::read_postings;
use crate::storage::file::records::IndexRecord;
use crate::storage::file::segment::Segment;
use crate::storage::file::shared_segments::SegmentFiles;
use crate::storage::read::state::{IndexState, VersionView};

/// The best `k` children of `visible` in `view` (a version of `state`'s index) for
/// `query` analysed in the index's language by BM25 (see
/// [`crate::index::lexical::search`]), reading what is not loaded yet from `txn`.
pub(crate) fn search_lexical(
    txn: &ReadTransaction,
    state: &IndexState,
    view: &VersionView,
    query: &str,
    visible: &RoaringBitmap,
    k: usize,
) -> Result<ChildSearch, StorageError> {
    let analyzer = Analyzer::new(state.record().lexical);
    let segments = view
        .segments()
        .iter()
        .map(|segment| postings(txn, state.record(), state.files(), segment))
        .collect::<Result<Vec<_>, _>>()?;
    let stats = view
        .lexical_stats()
        .get_or_init(|| CorpusStats::of_live(&segments, view.live()));
    Ok(ChildSearch {
        neighbors: search(&segments, query, &analyzer, visible, stats, k),
        paths: Vec::new(),
        distances: 0,
        rescored: 0,
        lists: 0,
    })
}

/// `segment`'s postings, on first use mapped from their shared file in `files` (made from
/// the store when missing or unusable), else read from the store. Two searches may load
/// them at once; the first to finish is kept (both hold the same postings).
pub(crate) fn postings<'s>(
    txn: &ReadTransaction,
    index: &IndexRecord,
    files: Option<&SegmentFiles>,
    segment: &'s Segment,
) -> Result<&'s LexicalSegment, StorageError> {
    if let Some(loaded) = segment.lexical().get() {
        return Ok(loaded);
    }
    let shared = match files {
        Some(files) => {
            let (mapped, identity) = files.open_postings(txn, index, segment.id())?;
            if let Some(mapped) = mapped {
                return Ok(segment.lexical().get_or_init(|| mapped));
            }
            Some((files, identity))
        }
        None => None,
    };
    let read = read_postings(txn, index.id, segment.id())?;
    let loaded = match shared {
        // This process holds the copy only until every process can map it.
        Some((files, identity)) => {
            match files.make_postings(index.id, segment.id(), identity, &read) {
                Ok(mapped) => mapped,
                Err(reason) => {
                    let _ = segment.lexical_refused().set(reason);
                    read
                }
            }
        }
        None => read,
    };
    Ok(segment.lexical().get_or_init(|| loaded))
}
#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: failing loudly is the point

    use std::path::Path;
    use std::sync::Arc;

    use crate::chunk::SourceFormat;
    use crate::document::Document;
    use crate::embed::HashEmbedder;
    use crate::query::{SearchMode, SearchRequest};
    use crate::storage::file::sealed::WriteSealed;
    use crate::storage::file::tables::REV_TEXT;
    use crate::store::{Access, Store, StoreBuilder};

    fn options() -> StoreBuilder {
        Store::builder().embedder(Arc::new(HashEmbedder::new(8).expect("embedder")))
    }

    /// The lexical hits for `query`: each document and the text it shows.
    fn search(store: &Store, query: &str) -> Vec<(String, String)> {
        let request = SearchRequest::text(query)
            .access(Access::Unrestricted)
            .mode(SearchMode::Lexical);
        let response = store.search(&request).expect("search");
        response
            .results
            .into_iter()
            .map(|h| (h.doc_id, h.text))
            .collect()
    }

    /// Commits one document and returns the new head version.
    fn commit(
        store: &Store,
        id: &str,
        text: &str,
    ) -> Arc<crate::storage::read::state::VersionView> {
        store
            .upsert(Document::new(id, SourceFormat::Text, text))
            .expect("upsert");
        let snapshot = store.snapshot().expect("snapshot");
        snapshot.resolve("default").expect("default").1
    }

    /// Overwrites revision `rev`'s stored text (sealed as folio seals it, so the file is
    /// whole) with `text`.
    fn overwrite_text(path: &Path, rev: u64, text: &str) {
        let db = redb::Database::open(path).expect("redb open");
        let txn = db.begin_write().expect("write");
        txn.open_table(REV_TEXT)
            .expect("rev_text")
            .put(rev, text.as_bytes())
            .expect("put");
        txn.commit().expect("commit");
    }

    /// The writer keeps the postings it wrote; another handle reads a segment's postings
    /// once, and the next version, which shares the segment, finds them loaded.
    #[test]
    fn postings_are_read_once_per_segment_and_shared_by_later_versions() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.folio");
        let writer = options().create(true).open(&path).expect("store");
        let written = commit(&writer, "lunch", "Lunch is served at noon.");
        assert!(
            written.segments()[0].lexical().get().is_some(),
            "kept by the writer"
        );

        let reader = options().read_only(true).open(&path).expect("reader");
        let first = reader
            .snapshot()
            .expect("snapshot")
            .resolve("default")
            .expect("default")
            .1;
        assert!(first.segments()[0].lexical().get().is_none());
        assert_eq!(search(&reader, "lunch")[0].0, "lunch");
        let loaded = first.segments()[0]
            .lexical()
            .get()
            .expect("read by the search");
        assert!(first.lexical_stats().get().is_some());

        commit(&writer, "hotel", "Hotel limits for travel.");
        let second = reader
            .snapshot()
            .expect("snapshot")
            .resolve("default")
            .expect("default")
            .1;
        assert!(Arc::ptr_eq(&first.segments()[0], &second.segments()[0]));
        assert!(second.segments()[1].lexical().get().is_none());
        assert!(second.lexical_stats().get().is_none());
        // Equal lengths and document frequencies: a tie, the smaller child first.
        let found: Vec<String> = search(&reader, "hotel lunch")
            .into_iter()
            .map(|h| h.0)
            .collect();
        assert_eq!(found, ["lunch", "hotel"]);
        let again = second.segments()[0].lexical().get().expect("still loaded");
        assert!(std::ptr::eq(loaded, again), "read again");
        assert!(second.segments()[1].lexical().get().is_some());
    }

    /// A search answers from the stored postings, not from the texts: with the text
    /// replaced under it (same length, so spans still fit), the old words still find the
    /// document (which shows its new text) and the new ones find nothing.
    #[test]
    fn lexical_answers_come_from_the_stored_postings() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.folio");
        let before = {
            let store = options().create(true).open(&path).expect("store");
            commit(&store, "lunch", "Lunch is served at noon.");
            search(&store, "served lunch")
        };
        assert_eq!(
            before,
            [("lunch".to_string(), "Lunch is served at noon.".to_string())]
        );
        overwrite_text(&path, 1, "Zebra xx zzzzzz zz zzzz.");
        for read_only in [true, false] {
            let store = options().read_only(read_only).open(&path).expect("reopen");
            assert_eq!(
                search(&store, "served lunch"),
                [("lunch".to_string(), "Zebra xx zzzzzz zz zzzz.".to_string())]
            );
            assert!(search(&store, "zebra").is_empty());
        }
    }
}
