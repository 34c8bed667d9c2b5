//! A purpose-built HNSW graph over flat arrays.
//!
//! The vectors are not owned: every operation takes the segment's [`VectorSet`] (local ids
//! `0..n`). Adjacency is stored as fixed-width lists `[count, id_0, .., id_{w-1}]` of `u32`:
//! layer 0 in one contiguous array of `n` lists of width `2M`, upper layers in a second
//! array of width-`M` lists, node by node. Node levels are drawn from a hash of
//! `(seed, id)`, so they do not depend on build order or thread count. Queries walk the
//! graph on 8-bit codes of the vectors (module `quant`) and re-score the final
//! candidates on the f32 vectors.

mod build;
pub(crate) mod codec;
pub(crate) mod layers;
mod params;
pub(crate) mod quant;
pub(crate) mod search;

pub use codec::GraphDecodeError;
pub use params::{HnswParams, DEFAULT_EF_CONSTRUCTION, DEFAULT_M};

use super::metric::Metric;
use super::vectors::{ShapeError, VectorSet};
use layers::{Entry, Links};
use quant::Codes;

/// An HNSW graph over one segment's vectors. Built with [`Graph::build`], grown with
/// [`Graph::insert`], persisted with [`Graph::encode`] / [`Graph::decode`], searched
/// through [`super::planner`].
#[derive(Debug, Clone, PartialEq)]
pub struct Graph {
    pub(crate) metric: Metric,
    pub(crate) dim: usize,
    pub(crate) params: HnswParams,
    pub(crate) entry: Option<Entry>,
    pub(crate) levels: Vec<u8>,
    pub(crate) links: Links<u32>,
    pub(crate) codes: Codes,
}

impl Graph {
    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.levels.len()
    }

    /// Whether the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }

    /// Dimension of the vectors it was built over.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Metric it was built with.
    pub fn metric(&self) -> Metric {
        self.metric
    }

    /// Construction parameters.
    pub fn params(&self) -> HnswParams {
        self.params
    }

    /// Heap bytes held (the encoded size is about the same).
    pub fn memory_bytes(&self) -> usize {
        self.levels.len()
            + 4 * (self.links.layer0.len() + self.links.upper.len())
            + std::mem::size_of::<usize>() * self.links.upper_start.len()
            + self.codes.memory_bytes()
    }

    /// Measures the next `rows` (whole rows, in id order) against their walk codes into
    /// `residuals`, for scans that score the codes and score few rows exactly; a graph
    /// decoded by [`Graph::decode_links`] gets their codes first. One block at a time, so
    /// each row is read once while in cache.
    pub(crate) fn code_and_measure(&mut self, residuals: &mut quant::Residuals, rows: &[f32]) {
        if !self.has_codes() {
            let missing = (self.len() * self.dim).saturating_sub(self.codes.bytes.len());
            self.codes.bytes.reserve(missing);
            self.codes.push_rows(rows);
        }
        residuals.extend(&self.codes, rows);
    }

    /// Whether every node has its walk code.
    pub(crate) fn has_codes(&self) -> bool {
        self.codes.bytes.len() == self.len() * self.dim
    }

    /// Checks that this graph was built over `vectors` (same size, dimension and metric).
    pub fn check_vectors(&self, vectors: VectorSet<'_>) -> Result<(), ShapeError> {
        if vectors.len() == self.len()
            && vectors.dim() == self.dim
            && vectors.metric() == self.metric
        {
            Ok(())
        } else {
            Err(self.mismatch(vectors))
        }
    }

    fn mismatch(&self, vectors: VectorSet<'_>) -> ShapeError {
        ShapeError::GraphMismatch {
            graph_len: self.len(),
            graph_dim: self.dim,
            graph_metric: self.metric,
            len: vectors.len(),
            dim: vectors.dim(),
            metric: vectors.metric(),
        }
    }
}
