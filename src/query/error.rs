//! What a search can fail on.

use crate::limits::InvalidParameter;
use crate::storage::error::{ReadError, StorageError};

/// A search failed ([`crate::Store::search`], [`crate::Store::search_through`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// Reading the store failed, or the request names something it does not hold (an
    /// index, version, tag or alias), or the query cannot be embedded or compared.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The source that ranks children elsewhere ([`crate::Store::search_through`]) failed,
    /// or answered with a child the version does not hold.
    #[error("search through `{source_name}`: {error}")]
    Remote {
        /// [`super::ChildSource::name`].
        source_name: String,
        /// What went wrong.
        error: super::SourceError,
    },
    /// The rerank stage's reranker failed, or answered other than one finite score per
    /// text.
    #[error("rerank with `{reranker}`: {error}")]
    Rerank {
        /// [`crate::embed::Reranker::name`].
        reranker: String,
        /// What went wrong (boxed: it is large, and rare).
        error: Box<crate::embed::EmbedError>,
    },
}

impl From<StorageError> for QueryError {
    fn from(e: StorageError) -> Self {
        QueryError::Read(e.into())
    }
}

impl From<InvalidParameter> for QueryError {
    fn from(e: InvalidParameter) -> Self {
        QueryError::Read(e.into())
    }
}
