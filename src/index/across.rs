//! One search across the segments of a version, the entry point the store's read path
//! calls: the query prepared once, each segment holding a visible child searched by the
//! planner (`planner.rs`), the per-segment lists merged into the version's top `k`.

use roaring::RoaringBitmap;

use super::exact::{merge_top_k, Neighbor};
use super::planner::{SearchOptions, SearchPath};
use super::query_vector::QueryVector;
use super::segment::{SearchError, SegmentIndex};
use super::vectors::RowSource;

/// One segment of a version, as [`search_segments`] reads it.
pub struct SegmentPart<'a> {
    /// Its vector index.
    pub index: &'a SegmentIndex,
    /// For a segment whose rows stay in storage (a compressed index): where its rows are
    /// read, and how many walk candidates are re-scored on them.
    pub stored: Option<(&'a dyn RowSource, usize)>,
}

/// What a search across segments found, and how.
#[derive(Debug, Clone, Default)]
pub struct ChildSearch {
    /// The best children, best first (global child numbers).
    pub neighbors: Vec<Neighbor>,
    /// The planner's path in each segment that had visible children.
    pub paths: Vec<SearchPath>,
    /// Distances computed (exact and approximate).
    pub distances: usize,
    /// Of `distances`, walk candidates re-scored on f32 rows.
    pub rescored: usize,
    /// Link lists the walks read.
    pub lists: usize,
}

/// The search of one segment failed: its position among the parts, and why.
#[derive(Debug, thiserror::Error)]
#[error("segment part {part}: {error}")]
pub struct PartError {
    /// The failed segment's position in the parts given.
    pub part: usize,
    /// Why.
    pub error: SearchError,
}

/// The `options.k` best children in `visible` over every part, best first (equal scores
/// by child number), with `min(k, visible)` of them: each segment's planner fills its own
/// list to `min(k, visible in it)`. A segment without a visible child is not searched; one
/// of another dimension than the query holds no match (the store embeds every query with
/// the index's own embedder).
pub fn search_segments<'a>(
    parts: impl IntoIterator<Item = SegmentPart<'a>>,
    query: &QueryVector,
    options: SearchOptions,
    visible: &RoaringBitmap,
) -> Result<ChildSearch, PartError> {
    let mut found = ChildSearch::default();
    let mut lists = Vec::new();
    for (part, segment) in parts.into_iter().enumerate() {
        if visible.range_cardinality(segment.index.ids()) == 0 {
            continue;
        }
        let (neighbors, report) =
            match segment
                .index
                .search_prepared(query, visible, options, segment.stored)
            {
                Ok(searched) => searched,
                Err(SearchError::Shape(_)) => continue,
                Err(error) => return Err(PartError { part, error }),
            };
        found.paths.push(report.path);
        found.distances += report.distances;
        found.rescored += report.rescored;
        found.lists += report.lists;
        lists.push(neighbors);
    }
    found.neighbors = merge_top_k(lists, options.k);
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{Metric, Strategy, ZeroQuery};

    fn segment(base: u32, rows: &[[f32; 2]]) -> SegmentIndex {
        let flat = rows.iter().flatten().copied().collect();
        SegmentIndex::new(base, 2, Metric::Cosine, flat).unwrap()
    }

    #[test]
    fn merges_the_visible_best_of_every_segment() {
        let first = segment(0, &[[1.0, 0.0], [0.0, 1.0]]);
        let second = segment(2, &[[1.0, 0.1], [-1.0, 0.0]]);
        let parts = || {
            [&first, &second].map(|index| SegmentPart {
                index,
                stored: None,
            })
        };
        let options = SearchOptions {
            k: 2,
            ef: None,
            strategy: Strategy::Auto,
        };
        // Unnormalised on purpose: prepared once, here.
        let query = QueryVector::new(vec![3.0, 0.0], Metric::Cosine).unwrap();
        assert_eq!(query.as_slice(), &[1.0, 0.0]);
        let all: RoaringBitmap = (0..4).collect();
        let ids = |found: ChildSearch| found.neighbors.iter().map(|n| n.id).collect::<Vec<_>>();
        assert_eq!(
            ids(search_segments(parts(), &query, options, &all).unwrap()),
            [0, 2]
        );
        // Child 0 hidden: the second best comes from the second segment, the third is filled in.
        let some: RoaringBitmap = [1, 2, 3].into_iter().collect();
        let found = search_segments(parts(), &query, options, &some).unwrap();
        assert_eq!(found.paths.len(), 2);
        assert_eq!(ids(found), [2, 1]);
        // Nothing visible in the first segment: it is not searched.
        let only_second: RoaringBitmap = [3].into_iter().collect();
        let found = search_segments(parts(), &query, options, &only_second).unwrap();
        assert_eq!((found.paths.len(), ids(found)), (1, vec![3]));
    }

    #[test]
    fn a_zero_cosine_query_is_refused() {
        assert_eq!(
            QueryVector::new(vec![0.0; 4], Metric::Cosine),
            Err(ZeroQuery)
        );
        assert!(QueryVector::new(vec![0.0; 4], Metric::Dot).is_ok());
    }
}
