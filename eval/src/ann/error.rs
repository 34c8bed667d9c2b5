//! Why the benchmark could not run.

use std::path::PathBuf;

use super::files::FileError;
use folio::store::{OpenError, ReadError, StorageError, WriteError};

/// The benchmark could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnnError {
    /// A kit file could not be read.
    #[error(transparent)]
    File(#[from] FileError),
    /// The dataset's metadata file is not valid JSON of the kit's layout.
    #[error("{path}: {source}")]
    Meta {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: serde_json::Error,
    },
    /// The kit's files do not fit together (row counts, dimensions).
    #[error("the dataset is inconsistent: {0}")]
    Dataset(String),
    /// A filter was asked for that the dataset does not have.
    #[error("no filter `{name}` in the dataset (it has: {available})")]
    UnknownFilter {
        /// The filter asked for.
        name: String,
        /// The filters there are, comma-separated.
        available: String,
    },
    /// The settings are out of range.
    #[error("invalid benchmark settings: {0}")]
    Config(String),
    /// The store path exists, and reusing it was not asked for.
    #[error("{0} already exists: pass --reuse-store to search it, or remove it")]
    StoreExists(PathBuf),
    /// A reused store does not hold the dataset.
    #[error("the store does not hold the dataset as built: {0}")]
    StoreMismatch(String),
    /// A file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// The build's thread pool could not start.
    #[error("build thread pool: {0}")]
    Pool(#[from] rayon::ThreadPoolBuildError),
    /// The store could not be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// Ingest failed.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A search failed.
    #[error(transparent)]
    Search(#[from] ReadError),
    /// The file could not be read or written.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A scale-curve point file is not valid JSON of the shape `scripts/bench/scale_curve.sh`
    /// writes.
    #[error("{path}: not a scale-curve point file: {source}")]
    PointFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: serde_json::Error,
    },
}
