//! The lexical (BM25) leg of hybrid retrieval, knowing nothing of storage: an
//! [`Analyzer`] cuts texts into terms for an index's [`LexicalLanguage`]; a
//! [`LexicalSegment`] holds one segment's postings (children as global child numbers, as
//! on the vector side) and its bytes; [`search`] ranks a version's segments for a query
//! among the caller's visible children (a [`roaring::RoaringBitmap`]).
//!
//! **What the statistics count.** BM25 weighs a term by how many documents hold it (`df`,
//! out of `N`). Counted over the whole index, a caller's scores would move with documents
//! the caller cannot see: asking for a term and watching the score change across queries
//! tells whether hidden documents hold it (the known side channel of document-level
//! security under BM25). So `N` is the number of visible children of the segments and
//! `df` the number of visible children holding the term (`|postings ∩ visible|`, summed
//! over segments): a score depends only on what the caller can see, and on `avgdl`.
//! `avgdl`, the mean length of the version's live children ([`CorpusStats::of_live`]),
//! counts terms but names none, so it reveals no hidden term; it is a property of the
//! version, computed once rather than per caller. The visible set is applied to the
//! postings before scoring, never to the results after.
//!
//! A query term repeated in the query counts once: queries are short, and repeating a
//! word is seldom a request to weigh it more.

mod analyzer;
mod bm25;
mod codec;
mod flat;
mod language;
mod saturation;
mod segment;

pub use analyzer::{Analyzer, MAX_TERM_BYTES};
pub use bm25::{search, CorpusStats};
pub use codec::LexicalDecodeError;
pub use flat::LexicalFlatError;
pub use language::LexicalLanguage;
pub use saturation::{B, K1};
pub use segment::{LexicalBuildError, LexicalSegment};

#[cfg(test)]
mod tests;
