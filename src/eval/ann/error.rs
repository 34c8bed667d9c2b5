//! Why the benchmark could not run.

use std::path::PathBuf;

use super::files::FileError;
use crate::store::{OpenError, ReadError, StorageError, WriteError};

/// The benchmark could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnnError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("{path}: {source}")]
    Meta {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("the dataset is inconsistent: {0}")]
    Dataset(String),
    #[error("no filter `{name}` in the dataset (it has: {available})")]
    UnknownFilter { name: String, available: String },
    #[error("invalid benchmark settings: {0}")]
    Config(String),
    #[error("{0} already exists: pass --reuse-store to search it, or remove it")]
    StoreExists(PathBuf),
    #[error("the store does not hold the dataset as built: {0}")]
    StoreMismatch(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("build thread pool: {0}")]
    Pool(#[from] rayon::ThreadPoolBuildError),
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    Search(#[from] ReadError),
    #[error(transparent)]
    Storage(#[from] StorageError),
}
