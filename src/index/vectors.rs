//! A borrowed, validated view of a segment's vectors.

use super::distance::Scorer;
use super::metric::Metric;

/// Why a set of vectors, a query or a graph does not fit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShapeError {
    /// Vectors must have at least one dimension.
    #[error("vector dimension must be at least 1")]
    ZeroDim,
    /// The flat array does not split into whole rows.
    #[error("{len} floats do not split into rows of {dim}")]
    Ragged {
        /// Floats given.
        len: usize,
        /// The dimension.
        dim: usize,
    },
    /// Ids are `u32`; a segment cannot hold more rows.
    #[error("{rows} rows do not fit in u32 ids")]
    TooMany {
        /// Rows given.
        rows: usize,
    },
    /// A query or vector of the wrong length.
    #[error("expected dimension {expected}, got {got}")]
    DimMismatch {
        /// The dimension of the vectors.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// A graph built for other vectors.
    #[error("graph over {graph_len} x {graph_dim} ({graph_metric:?}) does not match vectors {len} x {dim} ({metric:?})")]
    GraphMismatch {
        /// The graph's node count.
        graph_len: usize,
        /// The dimension it was built for.
        graph_dim: usize,
        /// The metric it was built for.
        graph_metric: Metric,
        /// The vectors' row count.
        len: usize,
        /// Their dimension.
        dim: usize,
        /// Their metric.
        metric: Metric,
    },
    /// The segment's ids would overflow `u32`.
    #[error("base {base} + {len} rows overflows u32 ids")]
    IdOverflow {
        /// The first id.
        base: u32,
        /// The rows.
        len: usize,
    },
    /// A search that needs the f32 rows in memory, of a compressed segment whose rows stay
    /// in storage (search it with [`super::SegmentIndex::search_stored`]).
    #[error("the segment's rows are in storage, not in memory: search it with a row source")]
    RowsNotResident,
    /// A compressed segment over a graph without the walk codes of all its nodes.
    #[error("a compressed segment needs its graph's walk codes, and the graph has none")]
    NoWalkCodes,
}

/// `len()` vectors of `dim()` floats, row-major, compared under `metric()`.
#[derive(Clone, Copy, Debug)]
pub struct VectorSet<'a> {
    data: &'a [f32],
    dim: usize,
    metric: Metric,
}

impl<'a> VectorSet<'a> {
    /// Views `data` as rows of `dim` floats. For [`Metric::Cosine`] the rows must already be
    /// normalised (see [`super::distance::normalize`]).
    pub fn new(data: &'a [f32], dim: usize, metric: Metric) -> Result<Self, ShapeError> {
        if dim == 0 {
            return Err(ShapeError::ZeroDim);
        }
        if !data.len().is_multiple_of(dim) {
            return Err(ShapeError::Ragged {
                len: data.len(),
                dim,
            });
        }
        let rows = data.len() / dim;
        if u32::try_from(rows).is_err() {
            return Err(ShapeError::TooMany { rows });
        }
        Ok(VectorSet { data, dim, metric })
    }

    /// A view whose shape the caller has already checked with [`VectorSet::new`]; a
    /// wrong shape would only make `row` panic.
    pub(crate) fn trusted(data: &'a [f32], dim: usize, metric: Metric) -> Self {
        debug_assert!(dim > 0 && data.len().is_multiple_of(dim));
        VectorSet { data, dim, metric }
    }

    /// Number of vectors.
    #[inline]
    pub fn len(&self) -> usize {
        self.data.len() / self.dim
    }

    /// Whether there are no vectors.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Floats per vector.
    #[inline]
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// How vectors are compared.
    pub fn metric(&self) -> Metric {
        self.metric
    }

    /// The flat row-major array.
    pub fn as_slice(&self) -> &'a [f32] {
        self.data
    }

    /// Vector `i` (local id). Panics if `i >= len()`: callers index with validated ids.
    #[inline(always)]
    pub fn row(&self, i: u32) -> &'a [f32] {
        let start = i as usize * self.dim;
        &self.data[start..start + self.dim]
    }

    /// The kernel for this set's metric.
    pub(crate) fn scorer(&self) -> Scorer {
        Scorer::new(self.metric)
    }

    /// Checks that `query` has this set's dimension.
    pub(crate) fn check_query(&self, query: &[f32]) -> Result<(), ShapeError> {
        if query.len() == self.dim {
            Ok(())
        } else {
            Err(ShapeError::DimMismatch {
                expected: self.dim,
                got: query.len(),
            })
        }
    }
}

/// Rows a compressed segment left in storage could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("segment rows unreadable: {0}")]
pub struct RowError(pub String);

/// Where a compressed segment's f32 rows are read from (its store's file): only the walk's
/// final candidates and the exact scans of small visible sets read them, so they never
/// need to be resident.
pub trait RowSource {
    /// Appends rows `ids` (local ids below the segment's length), in that order, to `out`.
    fn read(&self, ids: &[u32], out: &mut Vec<f32>) -> Result<(), RowError>;
}
