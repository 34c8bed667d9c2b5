//! The lexical (BM25) leg over a version's segments, before the file holds postings: each
//! segment's [`LexicalSegment`] is built from its children's texts the first time a search
//! needs it and kept with the loaded segment (so every version and state sharing the
//! segment reuses it), and a version's [`CorpusStats`] once per version view.
//!
//! A child's text is the one a hit shows: the document's source text over the child's span,
//! an HTML or PDF span as its visible text ([`crate::chunk::visible_text_of`]), without the
//! heading path its embedded text carries (re-chunking to get it back would cost a cut of
//! every document). Every index is analysed as [`LexicalLanguage::Auto`] until its record
//! carries its language.

use redb::ReadTransaction;
use roaring::RoaringBitmap;

use crate::chunk::visible_text_of;
use crate::index::lexical::{search, Analyzer, CorpusStats, LexicalLanguage, LexicalSegment};
use crate::index::ChildSearch;
use crate::storage::error::StorageError;
use crate::storage::file::records::{decode, ChildRecord};
use crate::storage::file::rows::{read_revision, read_text};
use crate::storage::file::sealed::ReadSealed;
use crate::storage::file::segment::Segment;
use crate::storage::file::tables::CHILDREN;
use crate::storage::read::state::VersionView;

/// The language every index is analysed in for now.
pub(crate) const LANGUAGE: LexicalLanguage = LexicalLanguage::Auto;

/// The best `k` children of `visible` in `view` for `query` by BM25 (see
/// [`crate::index::lexical::search`]), building what is not built yet from `txn`.
pub(crate) fn search_lexical(
    txn: &ReadTransaction,
    view: &VersionView,
    query: &str,
    visible: &RoaringBitmap,
    k: usize,
) -> Result<ChildSearch, StorageError> {
    let analyzer = Analyzer::new(LANGUAGE);
    let segments = view
        .segments()
        .iter()
        .map(|segment| postings(txn, view.index_id(), segment, &analyzer))
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

/// `segment`'s postings, built from its children's texts on first use. Two searches may
/// build them at once; the first to finish is kept (both built the same postings).
fn postings<'s>(
    txn: &ReadTransaction,
    index: u32,
    segment: &'s Segment,
    analyzer: &Analyzer,
) -> Result<&'s LexicalSegment, StorageError> {
    if let Some(built) = segment.lexical().get() {
        return Ok(built);
    }
    let built = build(txn, index, segment, analyzer)?;
    Ok(segment.lexical().get_or_init(|| built))
}

fn build(
    txn: &ReadTransaction,
    index: u32,
    segment: &Segment,
    analyzer: &Analyzer,
) -> Result<LexicalSegment, StorageError> {
    let table = txn.open_table(CHILDREN)?;
    let mut texts: Vec<(u32, String)> = Vec::with_capacity(segment.len());
    // A revision's children are contiguous, so its text is read once for all of them.
    let mut current: Option<(u64, String, crate::chunk::SourceFormat)> = None;
    for number in segment.ids() {
        // A child without a record is dead in every retained version (`gc` removed it),
        // so no search can see it and no version counts it.
        let Some(value) = table.read((index, number))? else {
            continue;
        };
        let child: ChildRecord = decode(value.value(), "child record")?;
        let (rev, text, format) = match current.take() {
            Some(same) if same.0 == child.rev => same,
            _ => (
                child.rev,
                read_text(txn, child.rev)?,
                read_revision(txn, child.rev)?.format,
            ),
        };
        let span = text
            .get(child.start as usize..child.end as usize)
            .ok_or_else(|| {
                StorageError::corrupt(format!(
                    "child {number} of index {index} spans past revision {rev}'s text"
                ))
            })?;
        texts.push((number, visible_text_of(span, format).into_owned()));
        current = Some((rev, text, format));
    }
    LexicalSegment::build(
        texts.iter().map(|(number, text)| (*number, text.as_str())),
        analyzer,
    )
    .map_err(|e| StorageError::corrupt(format!("segment {}: {e}", segment.id())))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: failing loudly is the point

    use std::sync::Arc;

    use crate::chunk::SourceFormat;
    use crate::document::Document;
    use crate::embed::HashEmbedder;
    use crate::query::{SearchMode, SearchRequest};
    use crate::store::{Access, Store};

    /// A handle builds a segment's postings once: the next version, which shares the
    /// segment, finds them built and builds only its new segment's.
    #[test]
    fn postings_are_built_once_per_segment_and_shared_by_later_versions() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::builder()
            .embedder(Arc::new(HashEmbedder::new(8).expect("embedder")))
            .create(true)
            .open(dir.path().join("s.folio"))
            .expect("store");
        let search = |query: &str| {
            let request = SearchRequest::text(query)
                .access(Access::Unrestricted)
                .mode(SearchMode::Lexical);
            let response = store.search(&request).expect("search");
            response
                .results
                .into_iter()
                .map(|h| h.doc_id)
                .collect::<Vec<_>>()
        };
        // Commits one document and returns the new head version.
        let commit = |id: &str, text: &str| {
            store
                .upsert(Document::new(id, SourceFormat::Text, text))
                .expect("upsert");
            let snapshot = store.snapshot().expect("snapshot");
            snapshot.resolve("default").expect("default").1
        };
        let first = commit("lunch", "Lunch is served at noon.");
        assert!(first.segments()[0].lexical().get().is_none());
        assert_eq!(search("lunch"), ["lunch"]);
        let built = first.segments()[0]
            .lexical()
            .get()
            .expect("built by the search");
        assert!(first.lexical_stats().get().is_some());

        let second = commit("hotel", "Hotel limits for travel.");
        assert!(Arc::ptr_eq(&first.segments()[0], &second.segments()[0]));
        assert!(second.segments()[1].lexical().get().is_none());
        assert!(second.lexical_stats().get().is_none());
        // Equal lengths and document frequencies: a tie, the smaller child first.
        assert_eq!(search("hotel lunch"), ["lunch", "hotel"]);
        let again = second.segments()[0].lexical().get().expect("still built");
        assert!(std::ptr::eq(built, again), "built again");
        assert!(second.segments()[1].lexical().get().is_some());
    }
}
