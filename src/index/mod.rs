//! Vector search over flat arrays: distance kernels, the exact scan, the HNSW graph, the
//! filtered-search planner of one segment and [`search_segments`], the search across a
//! version's segments that the store's read path calls. Knows nothing of storage: a
//! segment's vectors come in as a row-major `&[f32]` with contiguous global ids
//! `base..base + n` (or are read through a [`RowSource`]), a visible set as a
//! [`roaring::RoaringBitmap`] of global ids (shared across segments). The lexical (BM25)
//! leg is [`lexical`], on the same child numbers and visible sets.

mod across;
mod coded;
pub mod distance;
pub mod exact;
mod flat;
mod gather;
pub mod hnsw;
pub mod lexical;
mod metric;
pub(crate) mod pages;
pub mod planner;
mod query_vector;
pub mod segment;
pub(crate) mod shared;
pub mod vectors;
mod visited;

pub use across::{search_segments, ChildSearch, PartError, SegmentPart};
pub use exact::{exact_search, exact_search_all, merge_top_k, Neighbor, TopK};
pub use hnsw::{Graph, GraphDecodeError, HnswParams, DEFAULT_EF_CONSTRUCTION, DEFAULT_M};
pub use lexical::{
    Analyzer, CorpusStats, LexicalBuildError, LexicalDecodeError, LexicalFlatError,
    LexicalLanguage, LexicalSegment,
};
pub use metric::Metric;
pub use planner::{search, search_with, SearchOptions, SearchPath, SearchReport, Strategy};
pub use query_vector::{QueryVector, ZeroQuery};
pub use segment::{SearchError, SegmentIndex};
pub(crate) use shared::Region;
pub use vectors::{RowError, RowSource, ShapeError, VectorSet};
