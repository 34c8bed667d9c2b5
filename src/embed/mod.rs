//! Embedders: text in, vectors out.

mod hash;

pub use hash::{HashConfig, HashConfigError, HashEmbedder, DEFAULT_DIMENSION, MAX_DIMENSION};

use crate::index::Metric;

/// Why an embedder could not embed a batch.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The model failed; the text says why.
    #[error("embedder failed: {0}")]
    Failed(String),
}

/// Turns a batch of texts into vectors. Implement it to bring your own model.
pub trait Embedder: Send + Sync {
    /// A stable name, stored in the file; a store refuses an embedder with another name.
    fn name(&self) -> &str;
    /// Settings that change the vectors (stored beside the name).
    fn fingerprint(&self) -> String;
    /// The length of its vectors.
    fn dimension(&self) -> usize;
    /// How its vectors are compared.
    fn metric(&self) -> Metric;
    /// Inputs longer than this are truncated by the model.
    fn max_input_tokens(&self) -> usize;
    /// Embeds `texts` into a row-major `texts.len() x dimension()` matrix.
    fn embed(&self, texts: &[&str]) -> Result<Vec<f32>, EmbedError>;
}

/// The embedder a store uses when the application brings none.
pub fn default_embedder() -> HashEmbedder {
    HashEmbedder::default()
}

/// Why a batch of vectors cannot be stored.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum VectorError {
    /// The dimension is 0.
    #[error("vector dimension must be at least 1")]
    ZeroDimension,
    /// The values are not a whole number of rows.
    #[error("{len} values do not make whole rows of dimension {dim}")]
    Length {
        /// The values given.
        len: usize,
        /// The dimension.
        dim: usize,
    },
    /// A value is NaN or infinite.
    #[error("vector {row} has a non-finite value {value} at column {col}")]
    NotFinite {
        /// The row.
        row: usize,
        /// The column.
        col: usize,
        /// The value.
        value: f32,
    },
}

/// Checks a row-major batch of `dim`-dimensional vectors before anything is written:
/// whole rows only, and every value finite (one NaN would poison every distance to it).
pub fn validate(vectors: &[f32], dim: usize) -> Result<(), VectorError> {
    if dim == 0 {
        return Err(VectorError::ZeroDimension);
    }
    if !vectors.len().is_multiple_of(dim) {
        return Err(VectorError::Length {
            len: vectors.len(),
            dim,
        });
    }
    match vectors.iter().position(|v| !v.is_finite()) {
        Some(i) => Err(VectorError::NotFinite {
            row: i / dim,
            col: i % dim,
            value: vectors[i],
        }),
        None => Ok(()),
    }
}
