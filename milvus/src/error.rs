//! What can go wrong between folio and Milvus.

/// A publish or a remote search failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading the folio store failed.
    #[error(transparent)]
    Folio(#[from] folio::ReadError),
    /// A search through Milvus failed in folio, or Milvus answered what the version does
    /// not hold.
    #[error(transparent)]
    Query(#[from] folio::QueryError),
    /// Changing the folio store failed (an alias set or rolled back).
    #[error(transparent)]
    Index(#[from] folio::IndexError),
    /// Milvus refused a request, or could not be reached.
    #[error("milvus: {0}")]
    Milvus(Box<milvus::v2::error::Error>),
    /// The async runtime the client runs on could not start.
    #[error("could not start the client's runtime: {0}")]
    Runtime(#[from] std::io::Error),
    /// A collection holds what folio did not publish, or lacks what it did.
    #[error("collection `{collection}`: {problem}")]
    Collection {
        /// The collection.
        collection: String,
        /// What is wrong with it.
        problem: String,
    },
}

impl From<milvus::v2::error::Error> for Error {
    fn from(e: milvus::v2::error::Error) -> Self {
        // Boxed: the client's error is large, and every call returns this one.
        Error::Milvus(Box::new(e))
    }
}
