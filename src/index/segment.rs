//! An owned segment: vectors with contiguous global ids and an optional graph.

use std::ops::Range;

use roaring::RoaringBitmap;

use super::distance::normalize;
use super::exact::Neighbor;
use super::gather::GatherCache;
use super::hnsw::quant::Residuals;
use super::hnsw::{Graph, HnswParams};
use super::metric::Metric;
use super::planner::{self, SearchOptions, SearchReport, Strategy};
use super::query_vector::QueryVector;
use super::shared::Slab;
use super::vectors::{RowError, RowSource, ShapeError, VectorSet};

/// `len()` vectors with global ids `base..base + len()` and, once built or loaded, a graph
/// over them. Immutable once built; the store rebuilds a segment to compact it. Searches
/// may run from many threads at once.
#[derive(Debug, Clone)]
pub struct SegmentIndex {
    base: u32,
    metric: Metric,
    rows: Rows,
    graph: Option<Graph>,
    /// Each row's distance from its walk code, measured when a graph with codes is
    /// attached (4 bytes a row): exact scans then run on the codes (`coded.rs`).
    residuals: Residuals,
    /// Gathered codes of recent small visible sets (see `gather.rs`).
    gathered: GatherCache,
}

/// Where a segment's f32 rows are.
#[derive(Debug, Clone)]
enum Rows {
    /// One row of `dim` floats per vector, contiguous (unit length for cosine): owned, or
    /// a view of a file several processes map.
    Resident { data: Slab<f32>, dim: usize },
    /// Compressed: the rows stay in the store's file; walks and exact scans read the
    /// graph's 8-bit codes and searches read rows through a [`RowSource`].
    Stored { len: usize, dim: usize },
}

impl SegmentIndex {
    /// A segment without a graph over `vectors` (row-major, `dim` floats each). For
    /// [`Metric::Cosine`] the rows are normalised here.
    pub fn new(
        base: u32,
        dim: usize,
        metric: Metric,
        mut vectors: Vec<f32>,
    ) -> Result<Self, ShapeError> {
        if metric == Metric::Cosine && dim > 0 {
            vectors.chunks_exact_mut(dim).for_each(|v| {
                normalize(v);
            });
        }
        Self::prepared(base, dim, metric, vectors)
    }

    /// [`SegmentIndex::new`] over rows already as compared (unit length for cosine), e.g.
    /// as read back from storage: kept bit for bit.
    pub fn prepared(
        base: u32,
        dim: usize,
        metric: Metric,
        vectors: Vec<f32>,
    ) -> Result<Self, ShapeError> {
        Self::over_rows(base, dim, metric, vectors.into())
    }

    /// [`SegmentIndex::prepared`] over rows owned or in a shared region.
    pub(crate) fn over_rows(
        base: u32,
        dim: usize,
        metric: Metric,
        rows: Slab<f32>,
    ) -> Result<Self, ShapeError> {
        let len = VectorSet::new(&rows, dim, metric)?.len();
        if base.checked_add(len as u32).is_none() {
            return Err(ShapeError::IdOverflow { base, len });
        }
        Ok(SegmentIndex {
            base,
            metric,
            rows: Rows::Resident { data: rows, dim },
            graph: None,
            residuals: Residuals::default(),
            gathered: GatherCache::default(),
        })
    }

    /// Attaches a graph with its walk codes and the rows' residuals, both computed before
    /// (a mapped segment's), without reading the rows.
    pub(crate) fn with_parts(
        mut self,
        graph: Graph,
        residuals: Residuals,
    ) -> Result<Self, ShapeError> {
        graph.check_vectors(self.vectors())?;
        if !graph.has_codes() {
            return Err(ShapeError::NoWalkCodes);
        }
        self.graph = Some(graph);
        self.residuals = residuals;
        Ok(self)
    }

    /// Each row's distance from its walk code (empty without a graph).
    pub(crate) fn residuals(&self) -> &Residuals {
        &self.residuals
    }

    /// A compressed segment of `graph.len()` rows of `graph.dim()` floats whose rows
    /// stay in storage: searches read them through a [`RowSource`]. The graph must hold
    /// every node's walk code, `residuals` every row's distance from it
    /// ([`Graph::measure`]; a row not measured is read by every exact scan).
    pub(crate) fn stored(
        base: u32,
        graph: Graph,
        residuals: Residuals,
    ) -> Result<Self, ShapeError> {
        let (len, dim) = (graph.len(), graph.dim());
        if base.checked_add(len as u32).is_none() || u32::try_from(len).is_err() {
            return Err(ShapeError::IdOverflow { base, len });
        }
        if !graph.has_codes() {
            return Err(ShapeError::NoWalkCodes);
        }
        Ok(SegmentIndex {
            base,
            metric: graph.metric(),
            rows: Rows::Stored { len, dim },
            graph: Some(graph),
            residuals,
            gathered: GatherCache::default(),
        })
    }

    /// This segment with its f32 rows dropped from memory, when it has a graph to walk
    /// (a segment without one stays as it is): the caller keeps the rows where a
    /// [`RowSource`] given to [`SegmentIndex::search_stored`] reads them.
    pub fn without_rows(self) -> Self {
        let rows = match (self.rows, &self.graph) {
            (Rows::Resident { data, dim }, Some(g)) if g.has_codes() => Rows::Stored {
                len: data.len() / dim,
                dim,
            },
            (rows, _) => rows,
        };
        SegmentIndex { rows, ..self }
    }

    /// Whether the f32 rows are in memory (else [`SegmentIndex::rows`] is empty and
    /// searches go through [`SegmentIndex::search_stored`]).
    pub fn is_resident(&self) -> bool {
        matches!(self.rows, Rows::Resident { .. })
    }

    /// Whether the rows are a view of a shared region (a mapped file) rather than this
    /// process's own memory.
    pub fn is_mapped(&self) -> bool {
        matches!(&self.rows, Rows::Resident { data, .. } if data.is_mapped())
    }

    /// Attaches a graph (built earlier, or decoded from storage without its walk codes)
    /// after checking it fits.
    pub fn with_graph(mut self, graph: Graph) -> Result<Self, ShapeError> {
        graph.check_vectors(self.vectors())?;
        self.attach(graph);
        Ok(self)
    }

    /// Keeps `graph` (checked to fit), its walk codes computed if it came without them
    /// (decoded from storage), and measures the rows against them.
    fn attach(&mut self, mut graph: Graph) {
        /// Rows coded and measured together: 1 MiB of f32, read once while in cache.
        const BLOCK_FLOATS: usize = 1 << 18;
        let mut residuals = Residuals::default();
        let block = BLOCK_FLOATS.div_ceil(self.dim().max(1)) * self.dim().max(1);
        for rows in self.rows().chunks(block) {
            graph.code_and_measure(&mut residuals, rows);
        }
        self.residuals = residuals;
        // Sets gathered from other codes.
        self.gathered = GatherCache::default();
        self.graph = Some(graph);
    }

    /// The same segment with global ids from `base` (the graph numbers rows locally), so
    /// it can be built before its ids are known.
    pub fn with_base(mut self, base: u32) -> Result<Self, ShapeError> {
        let len = self.len();
        if base.checked_add(len as u32).is_none() {
            return Err(ShapeError::IdOverflow { base, len });
        }
        self.base = base;
        Ok(self)
    }

    /// The rows, row-major, the graph dropped (none for a compressed segment).
    pub fn into_rows(self) -> Vec<f32> {
        match self.rows {
            Rows::Resident { data, .. } => data.into_vec(),
            Rows::Stored { .. } => Vec::new(),
        }
    }

    /// Builds the graph on the current rayon pool; see [`Graph::build`].
    pub fn build_graph(&mut self, params: HnswParams, progress: &(dyn Fn(usize) + Sync)) {
        let graph = Graph::build(self.vectors(), params, progress);
        self.attach(graph);
    }

    /// The graph, if any.
    pub fn graph(&self) -> Option<&Graph> {
        self.graph.as_ref()
    }

    /// The (normalised, for cosine) vectors; none for a compressed segment.
    pub fn vectors(&self) -> VectorSet<'_> {
        // Shape checked in `prepared`.
        VectorSet::trusted(self.rows(), self.dim(), self.metric)
    }

    /// The vectors as one row-major slice; empty for a compressed segment.
    pub fn rows(&self) -> &[f32] {
        match &self.rows {
            Rows::Resident { data, .. } => data,
            Rows::Stored { .. } => &[],
        }
    }

    /// Global id of the first vector.
    pub fn base(&self) -> u32 {
        self.base
    }

    /// Global ids held.
    pub fn ids(&self) -> Range<u32> {
        self.base..self.base + self.len() as u32
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        match &self.rows {
            // `dim` is at least 1 (checked by `VectorSet::new` or the mapped layout).
            Rows::Resident { data, dim } => data.len() / dim,
            Rows::Stored { len, .. } => *len,
        }
    }

    /// Whether the segment holds no vectors.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Floats per vector.
    pub fn dim(&self) -> usize {
        match &self.rows {
            Rows::Resident { dim, .. } => *dim,
            Rows::Stored { dim, .. } => *dim,
        }
    }

    /// How the rows are compared.
    pub fn metric(&self) -> Metric {
        self.metric
    }

    /// Top-`k` among the global ids in `visible`; see [`planner::search`]. Fails on a
    /// query of the wrong dimension.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        ef: Option<usize>,
        visible: &RoaringBitmap,
    ) -> Result<(Vec<Neighbor>, SearchReport), ShapeError> {
        let options = SearchOptions {
            k,
            ef,
            strategy: Strategy::Auto,
        };
        self.search_with(query, visible, options)
    }

    /// [`SegmentIndex::search`] with a [`Strategy`]; with a graph, exact scans run on its
    /// walk codes and score exactly only the rows that may rank.
    pub fn search_with(
        &self,
        query: &[f32],
        visible: &RoaringBitmap,
        options: SearchOptions,
    ) -> Result<(Vec<Neighbor>, SearchReport), ShapeError> {
        let query = planner::prepare_query(self.metric, query);
        self.search_resident(&query, visible, options)
    }

    /// [`SegmentIndex::search_with`] for any segment: a compressed one walks its codes and
    /// reads from `rows` the f32 rows of the best `rescore` candidates (at least `k`) and,
    /// when the planner scans instead, of the visible ids. A resident one ignores `rows`.
    pub fn search_stored(
        &self,
        query: &[f32],
        visible: &RoaringBitmap,
        options: SearchOptions,
        rescore: usize,
        rows: &dyn RowSource,
    ) -> Result<(Vec<Neighbor>, SearchReport), SearchError> {
        let query = planner::prepare_query(self.metric, query);
        self.search_any(&query, visible, options, Some((rows, rescore)))
    }

    /// The search of [`super::search_segments`]: `query` is already prepared for this
    /// segment's metric, unless made for another.
    pub(crate) fn search_prepared(
        &self,
        query: &QueryVector,
        visible: &RoaringBitmap,
        options: SearchOptions,
        stored: Option<(&dyn RowSource, usize)>,
    ) -> Result<(Vec<Neighbor>, SearchReport), SearchError> {
        if query.metric() == self.metric {
            self.search_any(query.as_slice(), visible, options, stored)
        } else {
            let query = planner::prepare_query(self.metric, query.as_slice());
            self.search_any(&query, visible, options, stored)
        }
    }

    /// A prepared `query` over the rows in memory.
    fn search_resident(
        &self,
        query: &[f32],
        visible: &RoaringBitmap,
        options: SearchOptions,
    ) -> Result<(Vec<Neighbor>, SearchReport), ShapeError> {
        let vectors = self.vectors();
        if !self.is_resident() {
            // No rows to scan or re-score with: the caller should have used
            // `search_stored`.
            return Err(ShapeError::RowsNotResident);
        }
        vectors.check_query(query)?;
        Ok(planner::search_cached(
            vectors,
            self.graph.as_ref(),
            self.base,
            query,
            visible,
            options,
            Some(planner::CodeScan {
                residuals: &self.residuals,
                gathered: &self.gathered,
            }),
        ))
    }

    /// A prepared `query` over a compressed segment's codes and `stored` rows, or over the
    /// rows in memory.
    fn search_any(
        &self,
        query: &[f32],
        visible: &RoaringBitmap,
        options: SearchOptions,
        stored: Option<(&dyn RowSource, usize)>,
    ) -> Result<(Vec<Neighbor>, SearchReport), SearchError> {
        match (&self.rows, &self.graph, stored) {
            (Rows::Stored { len, dim }, Some(graph), Some((rows, rescore))) => {
                if query.len() != *dim {
                    return Err(ShapeError::DimMismatch {
                        expected: *dim,
                        got: query.len(),
                    }
                    .into());
                }
                let stored = planner::Stored {
                    graph,
                    residuals: &self.residuals,
                    gathered: &self.gathered,
                    len: *len,
                    rows,
                    rescore,
                };
                Ok(planner::search_stored(
                    &stored, self.base, query, visible, options,
                )?)
            }
            _ => Ok(self.search_resident(query, visible, options)?),
        }
    }
}

/// Why a search of a segment failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The query does not fit the segment.
    #[error(transparent)]
    Shape(#[from] ShapeError),
    /// A compressed segment's rows could not be read.
    #[error(transparent)]
    Rows(#[from] RowError),
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: failing loudly is the point

    use super::*;

    /// A 64-row segment with a graph (and its walk codes).
    fn graphed() -> SegmentIndex {
        let rows: Vec<f32> = (0..64 * 4).map(|i| ((i * 37) % 101) as f32).collect();
        let mut segment = SegmentIndex::new(0, 4, Metric::L2, rows).expect("segment");
        segment.build_graph(HnswParams::default(), &|_| {});
        segment
    }

    #[test]
    fn a_compressed_segment_says_its_rows_are_not_in_memory() {
        let segment = graphed().without_rows();
        let options = SearchOptions {
            k: 3,
            ef: None,
            strategy: Strategy::Auto,
        };
        let visible: RoaringBitmap = (0..64).collect();
        let got = segment.search_with(&[1.0; 4], &visible, options);
        assert_eq!(got.err(), Some(ShapeError::RowsNotResident));
    }

    #[test]
    fn a_stored_segment_needs_walk_codes() {
        let graph = graphed().graph.expect("graph");
        assert!(SegmentIndex::stored(0, graph.clone(), Residuals::default()).is_ok());
        let mut bare = graph;
        bare.codes = Default::default();
        assert_eq!(
            SegmentIndex::stored(0, bare, Residuals::default()).err(),
            Some(ShapeError::NoWalkCodes)
        );
    }
}
