//! An owned segment: vectors with contiguous global ids and an optional graph.

use std::ops::Range;

use roaring::RoaringBitmap;

use super::distance::normalize;
use super::exact::Neighbor;
use super::hnsw::{Graph, HnswParams};
use super::planner::{self, SearchReport};
use super::vectors::{ShapeError, VectorSet};
use super::Metric;

/// `len()` vectors with global ids `base..base + len()` and, once built or loaded, a graph
/// over them. Immutable once built; the store rebuilds a segment to compact it.
#[derive(Debug, Clone)]
pub struct SegmentIndex {
    base: u32,
    dim: usize,
    metric: Metric,
    vectors: Vec<f32>,
    graph: Option<Graph>,
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
        let len = VectorSet::new(&vectors, dim, metric)?.len();
        if base.checked_add(len as u32).is_none() {
            return Err(ShapeError::IdOverflow { base, len });
        }
        if metric == Metric::Cosine {
            vectors.chunks_exact_mut(dim).for_each(normalize);
        }
        Ok(SegmentIndex {
            base,
            dim,
            metric,
            vectors,
            graph: None,
        })
    }

    /// Attaches a graph (built earlier or decoded from storage) after checking it fits.
    pub fn with_graph(mut self, graph: Graph) -> Result<Self, ShapeError> {
        graph.check_vectors(self.vectors())?;
        self.graph = Some(graph);
        Ok(self)
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
        // Shape checked in `new`.
        VectorSet::trusted(&self.vectors, self.dim, self.metric)
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
        self.vectors.len() / self.dim
    }

    /// Whether the segment holds no vectors.
    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
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
        let vectors = self.vectors();
        vectors.check_query(query)?;
        Ok(planner::search(
            vectors,
            self.graph.as_ref(),
            self.base,
            query,
            k,
            ef,
            visible,
        ))
    }
}
