//! Embedders: text in, vectors out.

use crate::index::Metric;

/// Why an embedder could not embed a batch.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("embedder failed: {0}")]
    Failed(String),
}

/// Turns a batch of texts into vectors. Implement it to bring your own model.
pub trait Embedder: Send + Sync {
    /// A stable name, stored in the file; a store refuses an embedder with another name.
    fn name(&self) -> &str;
    /// Settings that change the vectors (stored beside the name).
    fn fingerprint(&self) -> String;
    fn dimension(&self) -> usize;
    fn metric(&self) -> Metric;
    /// Inputs longer than this are truncated by the model.
    fn max_input_tokens(&self) -> usize;
    /// Embeds `texts` into a row-major `texts.len() x dimension()` matrix.
    fn embed(&self, texts: &[&str]) -> Result<Vec<f32>, EmbedError>;
}
