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
mod codec;
pub(crate) mod quant;
pub(crate) mod search;

use std::sync::atomic::{AtomicU32, Ordering};

pub use codec::GraphDecodeError;

use super::vectors::{ShapeError, VectorSet};
use super::Metric;
use quant::Codes;

/// Highest level a node can get; the chance of reaching it at M=16 is 16^-15.
pub(crate) const MAX_LEVEL: u8 = 15;

/// Graph construction parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HnswParams {
    /// Links per node on upper layers (layer 0 has `2 * m`); at least 2.
    pub m: usize,
    /// Candidate list size while inserting: higher builds slower and a better graph.
    pub ef_construction: usize,
    /// Seed of the level draws.
    pub seed: u64,
}

impl Default for HnswParams {
    fn default() -> Self {
        HnswParams {
            m: 16,
            ef_construction: 200,
            seed: 0x5eed_f011_0000_0001,
        }
    }
}

/// The top of the hierarchy, where every search starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) id: u32,
    pub(crate) level: u8,
}

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
    /// Builds a graph over all of `vectors` on the current rayon pool, reporting the number
    /// of inserted nodes to `progress` now and then (and once at the end). With a
    /// one-thread pool the result is deterministic.
    pub fn build(
        vectors: VectorSet<'_>,
        params: HnswParams,
        progress: &(dyn Fn(usize) + Sync),
    ) -> Graph {
        let mut graph = Graph::empty(vectors, params);
        build::insert_rows(&mut graph, vectors, progress);
        graph
    }

    /// Inserts the rows of `vectors` past [`Graph::len`] (vectors appended to the segment
    /// since the graph was built); the earlier rows must be unchanged.
    pub fn insert(
        &mut self,
        vectors: VectorSet<'_>,
        progress: &(dyn Fn(usize) + Sync),
    ) -> Result<(), ShapeError> {
        if vectors.dim() != self.dim
            || vectors.metric() != self.metric
            || vectors.len() < self.len()
        {
            return Err(self.mismatch(vectors));
        }
        build::insert_rows(self, vectors, progress);
        Ok(())
    }

    /// A graph with no nodes yet, its quantiser fitted to `vectors`.
    fn empty(vectors: VectorSet<'_>, params: HnswParams) -> Graph {
        let params = HnswParams {
            m: params.m.max(2),
            ef_construction: params.ef_construction.max(1),
            ..params
        };
        Graph {
            metric: vectors.metric(),
            dim: vectors.dim(),
            params,
            entry: None,
            levels: Vec::new(),
            links: Links::new(params.m),
            codes: Codes::fit(vectors),
        }
    }

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

/// The level of node `id`: geometric with ratio `1/m`, from a hash of `(seed, id)`.
pub(crate) fn draw_level(seed: u64, id: u32, m: usize) -> u8 {
    let bits = splitmix64(seed ^ u64::from(id).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    // Uniform in (0, 1]: 53 random bits, never zero.
    let unit = ((bits >> 11) + 1) as f64 / (1u64 << 53) as f64;
    let level = (-unit.ln() / (m as f64).ln()).floor();
    level.min(f64::from(MAX_LEVEL)) as u8
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A link slot: plain `u32` in a finished graph, atomic while threads build it.
pub(crate) trait Slot: Sync {
    fn get(&self) -> u32;
    /// Reads a list's count; pairs with the release store of the writer, so the ids it
    /// covers are visible.
    fn count(&self) -> u32;
}

impl Slot for u32 {
    #[inline(always)]
    fn get(&self) -> u32 {
        *self
    }
    #[inline(always)]
    fn count(&self) -> u32 {
        *self
    }
}

impl Slot for AtomicU32 {
    #[inline(always)]
    fn get(&self) -> u32 {
        self.load(Ordering::Relaxed)
    }
    #[inline(always)]
    fn count(&self) -> u32 {
        self.load(Ordering::Acquire)
    }
}

/// Adjacency lists of all layers. A list is `[count, id_0, .., id_{w-1}]`; `w` is `m0` on
/// layer 0 and `m` above.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Links<S> {
    pub(crate) m: usize,
    pub(crate) m0: usize,
    /// `n` lists of `1 + m0` slots.
    pub(crate) layer0: Vec<S>,
    /// Node by node, `level` lists of `1 + m` slots (layer 1 first).
    pub(crate) upper: Vec<S>,
    /// Per node, the index of its first upper list in `upper` (in lists); `n + 1` entries.
    pub(crate) upper_start: Vec<usize>,
}

impl<S: Slot> Links<S> {
    fn new(m: usize) -> Self {
        Links {
            m,
            m0: 2 * m,
            layer0: Vec::new(),
            upper: Vec::new(),
            upper_start: vec![0],
        }
    }

    /// The raw list (count slot first) of `node` on `layer`. The caller guarantees the
    /// node exists on that layer.
    #[inline(always)]
    pub(crate) fn list(&self, node: u32, layer: usize) -> &[S] {
        if layer == 0 {
            let w = 1 + self.m0;
            let start = node as usize * w;
            &self.layer0[start..start + w]
        } else {
            let w = 1 + self.m;
            let start = (self.upper_start[node as usize] + layer - 1) * w;
            &self.upper[start..start + w]
        }
    }

    /// The neighbour slots of `node` on `layer`.
    #[inline(always)]
    pub(crate) fn neighbours(&self, node: u32, layer: usize) -> &[S] {
        let list = self.list(node, layer);
        let count = (list[0].count() as usize).min(list.len() - 1);
        &list[1..1 + count]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_geometric_and_deterministic() {
        let levels: Vec<u8> = (0..100_000).map(|i| draw_level(7, i, 16)).collect();
        let above = levels.iter().filter(|&&l| l >= 1).count() as f64 / 1e5;
        assert!((above - 1.0 / 16.0).abs() < 0.01, "{above}");
        assert_eq!(
            levels,
            (0..100_000)
                .map(|i| draw_level(7, i, 16))
                .collect::<Vec<_>>()
        );
        assert_ne!(
            levels,
            (0..100_000)
                .map(|i| draw_level(8, i, 16))
                .collect::<Vec<_>>()
        );
    }
}
