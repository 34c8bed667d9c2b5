//! Typed errors, one enum per operation (open, write, read/search), as in redb.

use std::path::PathBuf;

use super::identity::EmbedderIdentity;
use crate::embed::{EmbedError, VectorError};
use crate::limits::InvalidParameter;

/// A failure below folio's logic: the file, the disk, or bytes that do not decode.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("storage: {0}")]
    Redb(#[from] redb::Error),
    /// The file holds bytes folio cannot decode: it was damaged or written by something else.
    #[error("the store is corrupt: {0}")]
    Corrupt(String),
}

impl StorageError {
    pub(crate) fn corrupt(what: impl Into<String>) -> Self {
        StorageError::Corrupt(what.into())
    }
}

/// Opening or creating a store failed.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("no store at {0} (create one with `folio ingest`)")]
    NotFound(PathBuf),
    #[error("{path} is not a folio store: {reason}")]
    NotAStore { path: PathBuf, reason: String },
    #[error(
        "{path} has store format version {found}; this folio reads versions {oldest} to {supported} \
         (a newer folio wrote it, or it is damaged)"
    )]
    UnsupportedFormat {
        path: PathBuf,
        found: u32,
        oldest: u32,
        supported: u32,
    },
    /// Upgrading a file of an older format version in place failed. The upgrade is one
    /// write transaction, so the file still holds the whole old store (or, when the failure
    /// hit the final sync, the whole upgraded one); opening it again retries.
    #[error(
        "upgrading {path} from store format version {from} to {to} failed (the file still \
         holds a whole store of one of the two; opening it again retries): {source}"
    )]
    Upgrade {
        path: PathBuf,
        from: u32,
        to: u32,
        source: StorageError,
    },
    #[error("{0} is open in another process")]
    Locked(PathBuf),
    #[error(
        "index `{index}` was built with embedder {stored}, but the store was opened with {given}"
    )]
    EmbedderMismatch {
        index: String,
        stored: Box<EmbedderIdentity>,
        given: Box<EmbedderIdentity>,
    },
    /// The options a new store would record are out of range; no file was created.
    #[error("{0}")]
    InvalidParameter(#[from] InvalidParameter),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// A write (ingest, delete, ACL change, index or version operation) failed; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("document `{doc_id}` is invalid: {reason}")]
    InvalidDocument { doc_id: String, reason: String },
    #[error("no document `{0}`")]
    UnknownDocument(String),
    #[error("no index `{0}`")]
    UnknownIndex(String),
    /// An index could not be loaded when the store opened, so a write that updates every
    /// index cannot run; dropping the index makes the store writable again.
    #[error(
        "index `{index}` could not be loaded ({reason}); drop it with `folio index drop` \
         (and create it again) before writing"
    )]
    IndexUnavailable { index: String, reason: String },
    #[error("index `{0}` already exists")]
    IndexExists(String),
    #[error("invalid name `{name}`: {reason}")]
    InvalidName { name: String, reason: String },
    #[error("index `{index}` has no retained version {version}")]
    UnknownVersion { index: String, version: u64 },
    #[error("no alias `{0}`")]
    UnknownAlias(String),
    #[error("no index or alias `{0}`")]
    UnknownTarget(String),
    #[error("index `{index}` has no tag `{tag}`")]
    UnknownTag { index: String, tag: String },
    #[error("tag `{tag}` of index `{index}` already names version {version}")]
    TagExists {
        index: String,
        tag: String,
        version: u64,
    },
    #[error("index `{index}` is served by alias `{alias}`: point the alias elsewhere first")]
    IndexInUse { index: String, alias: String },
    #[error("no logged request {0}")]
    UnknownRequest(u64),
    #[error("{0}")]
    InvalidArgument(String),
    /// A parameter the store would record is out of range.
    #[error("{0}")]
    InvalidParameter(#[from] InvalidParameter),
    #[error("vectors refused: {0}")]
    Vectors(#[from] VectorError),
    #[error("embedding failed: {0}")]
    Embed(#[from] EmbedError),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// A read or a search failed.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("no index or alias `{0}`")]
    UnknownIndex(String),
    /// The index could not be loaded when the store opened; the other indexes work.
    #[error("index `{index}` could not be loaded ({reason}); drop it with `folio index drop`")]
    IndexUnavailable { index: String, reason: String },
    #[error("index `{index}` has no retained version {version}")]
    UnknownVersion { index: String, version: u64 },
    #[error("index `{index}` has no tag `{tag}`")]
    UnknownTag { index: String, tag: String },
    #[error("invalid query: {0}")]
    InvalidQuery(String),
    /// A search parameter is out of range.
    #[error("{0}")]
    InvalidParameter(#[from] InvalidParameter),
    #[error("query vector refused: {0}")]
    Vector(#[from] VectorError),
    #[error("embedding the query failed: {0}")]
    Embed(#[from] EmbedError),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// [`crate::store::Store::compact_file`] did not run (nothing was changed), or failed part
/// way (the file is then still a consistent store: see `storage-format.md`, "Giving the
/// file back its free space").
#[derive(Debug, thiserror::Error)]
pub enum CompactFileError {
    /// redb compacts only a database no one else is using: other handles (clones of the
    /// [`crate::store::Store`], including those held by other threads) must be dropped first.
    #[error("the store has {others} other open handle(s); drop them before compacting the file")]
    InUse { others: usize },
    /// A read or write transaction was still open inside redb.
    #[error("a transaction is still in progress; finish it before compacting the file")]
    TransactionInProgress,
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl From<redb::CompactionError> for CompactFileError {
    fn from(e: redb::CompactionError) -> Self {
        match e {
            redb::CompactionError::TransactionInProgress => CompactFileError::TransactionInProgress,
            // folio makes no savepoints; a file that has some came from elsewhere.
            other => CompactFileError::Storage(StorageError::Redb(other.into())),
        }
    }
}

/// The integrity check could not run to the end (what it found wrong is in its report).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// redb reports each operation's failure with its own type; folio folds them all into
/// [`StorageError`] so callers match on one variant.
macro_rules! from_redb {
    ($target:ty: $($source:ty),*) => {$(
        impl From<$source> for $target {
            fn from(e: $source) -> Self {
                StorageError::Redb(e.into()).into()
            }
        }
    )*};
}

from_redb!(StorageError: redb::DatabaseError, redb::TransactionError, redb::TableError,
    redb::StorageError, redb::CommitError, redb::SetDurabilityError);
from_redb!(OpenError: redb::Error, redb::TransactionError, redb::TableError,
    redb::StorageError, redb::CommitError);
from_redb!(WriteError: redb::Error, redb::DatabaseError, redb::TransactionError,
    redb::TableError, redb::StorageError, redb::CommitError);
from_redb!(SearchError: redb::Error, redb::DatabaseError, redb::TransactionError,
    redb::TableError, redb::StorageError, redb::CommitError, redb::SetDurabilityError);
from_redb!(CheckError: redb::DatabaseError, redb::TransactionError, redb::TableError,
    redb::StorageError);
