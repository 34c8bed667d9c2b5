//! An owned segment: vectors with contiguous global ids and an optional graph.

use std::ops::Range;

use ndarray::Array2;
use roaring::RoaringBitmap;

use super::distance::normalize;
use super::exact::Neighbor;
use super::gather::GatherCache;
use super::hnsw::{Graph, HnswParams};
use super::metric::Metric;
use super::planner::{self, SearchOptions, SearchReport, Strategy};
use super::vectors::{ShapeError, VectorSet};

/// `len()` vectors with global ids `base..base + len()` and, once built or loaded, a graph
/// over them. Immutable once built; the store rebuilds a segment to compact it. Searches
/// may run from many threads at once.
#[derive(Debug, Clone)]
pub struct SegmentIndex {
    base: u32,
    metric: Metric,
    /// One row per vector, contiguous (unit length for cosine).
    vectors: Array2<f32>,
    graph: Option<Graph>,
    /// Copies of recent small visible sets (see `gather.rs`).
    gathered: GatherCache,
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
        let len = VectorSet::new(&vectors, dim, metric)?.len();
        if base.checked_add(len as u32).is_none() {
            return Err(ShapeError::IdOverflow { base, len });
        }
        let vectors =
            Array2::from_shape_vec((len, dim), vectors).map_err(|_| ShapeError::Ragged {
                len: len * dim,
                dim,
            })?;
        Ok(SegmentIndex {
            base,
            metric,
            vectors,
            graph: None,
            gathered: GatherCache::default(),
        })
    }

    /// Attaches a graph (built earlier or decoded from storage) after checking it fits.
    pub fn with_graph(mut self, graph: Graph) -> Result<Self, ShapeError> {
        graph.check_vectors(self.vectors())?;
        self.graph = Some(graph);
        Ok(self)
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

    /// The rows, row-major, the graph dropped.
    pub fn into_rows(self) -> Vec<f32> {
        // Standard layout (see `rows`): the offset is 0.
        self.vectors.into_raw_vec_and_offset().0
    }

    /// Builds the graph on the current rayon pool; see [`Graph::build`].
    pub fn build_graph(&mut self, params: HnswParams, progress: &(dyn Fn(usize) + Sync)) {
        self.graph = Some(Graph::build(self.vectors(), params, progress));
    }

    /// The graph, if any.
    pub fn graph(&self) -> Option<&Graph> {
        self.graph.as_ref()
    }

    /// The (normalised, for cosine) vectors.
    pub fn vectors(&self) -> VectorSet<'_> {
        // Shape checked in `prepared`.
        VectorSet::trusted(self.rows(), self.dim(), self.metric)
    }

    /// The vectors as one row-major slice.
    pub fn rows(&self) -> &[f32] {
        // Built by `from_shape_vec`, so standard (row-major, contiguous) layout.
        self.vectors.as_slice().unwrap_or(&[])
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
        self.vectors.nrows()
    }

    /// Whether the segment holds no vectors.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Floats per vector.
    pub fn dim(&self) -> usize {
        self.vectors.ncols()
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

    /// [`SegmentIndex::search`] with a [`Strategy`]; exact scans of a small visible set
    /// (at most 1/32 of the rows) run over a gathered copy of its rows, kept for the next
    /// search with the same set.
    pub fn search_with(
        &self,
        query: &[f32],
        visible: &RoaringBitmap,
        options: SearchOptions,
    ) -> Result<(Vec<Neighbor>, SearchReport), ShapeError> {
        let vectors = self.vectors();
        vectors.check_query(query)?;
        Ok(planner::search_cached(
            vectors,
            self.graph.as_ref(),
            self.base,
            query,
            visible,
            options,
            Some(&self.gathered),
        ))
    }
}
