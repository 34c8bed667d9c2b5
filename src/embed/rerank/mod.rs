//! Rerankers: a cross-encoder reads the query and each candidate text together and scores
//! how well the text answers it. The search runs one after grouping, over the best units'
//! texts (`crate::query`'s rerank stage); implementations live beside the embedders that
//! share their models, tokenizers and transports.

#[cfg(feature = "models")]
mod cross;

#[cfg(feature = "models")]
pub use cross::CrossEncoder;
mod command;
#[cfg(feature = "http")]
mod http;
mod spec;

pub use command::CommandReranker;
#[cfg(feature = "http")]
pub use http::{HttpRerankOptions, HttpReranker, RerankApi};
pub use spec::RerankerSpec;

use super::EmbedError;

/// Scores candidate texts against a query. Implement it to bring your own cross-encoder.
pub trait Reranker: Send + Sync {
    /// A stable name, shown in search responses and written to the request log.
    fn name(&self) -> &str;
    /// One score per text, in the order given; higher means more relevant. Scores are the
    /// model's raw relevance (a logit for a cross-encoder), comparable within one call.
    fn score(&self, query: &str, texts: &[&str]) -> Result<Vec<f32>, EmbedError>;
}
