//! [`Error`]: every failure of every operation in one matchable enum, for applications
//! that handle them in one place. Each operation returns the error of its family
//! ([`OpenError`], [`WriteError`], [`IndexError`], [`ReadError`], [`CompactFileError`]);
//! `?` turns any of them into an [`Error`] with the same variant name and fields, as redb's
//! `Error` gathers its per-operation errors.

use std::path::PathBuf;
use std::time::Duration;

use crate::embed::{EmbedError, VectorError};
use crate::index::ShapeError;
use crate::ingest::DocumentProblem;
use crate::limits::InvalidParameter;
use crate::query::QueryError;
use crate::store::{
    CompactFileError, EmbedderIdentity, IndexError, NameKind, NameRule, OpenError, ReadError,
    StorageError, WriteError,
};

/// Any failure of a folio operation. The variants carry the same fields as those of the
/// per-operation enums they come from; see those for when each occurs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// [`OpenError::NotFound`].
    #[error("no store at {0} (create one with `folio ingest`)")]
    NotFound(PathBuf),
    /// [`OpenError::MissingFolder`].
    #[error("cannot create {path}: the folder {folder} does not exist")]
    MissingFolder {
        /// The store's path.
        path: PathBuf,
        /// The folder that does not exist.
        folder: PathBuf,
    },
    /// [`OpenError::Damaged`].
    #[error("{path} is damaged: {reason}")]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What was found damaged.
        reason: String,
    },
    /// [`OpenError::NotAStore`].
    #[error("{path} is not a folio store: {reason}")]
    NotAStore {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// [`OpenError::UnsupportedFormat`].
    #[error(
        "{path} has store format version {found}; this folio reads versions {oldest} to {supported} \
         (a newer folio wrote it, or it is damaged)"
    )]
    UnsupportedFormat {
        /// The file.
        path: PathBuf,
        /// What was found.
        found: u32,
        /// The oldest format version this build reads.
        oldest: u32,
        /// The format version this build writes.
        supported: u32,
    },
    /// [`OpenError::Upgrade`].
    #[error(
        "upgrading {path} from store format version {from} to {to} failed (the file still \
         holds a whole store of one of the two; opening it again retries): {source}"
    )]
    Upgrade {
        /// The file.
        path: PathBuf,
        /// The format version the file had.
        from: u32,
        /// The format version being written.
        to: u32,
        /// What failed.
        source: StorageError,
    },
    /// [`OpenError::Locked`].
    #[error("{path} is open for writing in another process (waited {waited:.1?})")]
    Locked {
        /// The file.
        path: PathBuf,
        /// How long the open waited for the writer to close it.
        waited: Duration,
    },
    /// [`OpenError::UpgradeNeeded`].
    #[error(
        "{path} has store format version {found}; opening it for writing once upgrades it to \
         {current} (a read-only open does not write)"
    )]
    UpgradeNeeded {
        /// The file.
        path: PathBuf,
        /// The format version the file records.
        found: u32,
        /// The format version this build writes.
        current: u32,
    },
    /// [`OpenError::NeedsRecovery`].
    #[error(
        "{path} was not closed by the process that last wrote it; an open for writing \
         recovers it (a read-only open cannot, and the file is not writable here)"
    )]
    NeedsRecovery {
        /// The file.
        path: PathBuf,
    },
    /// [`OpenError::ReadOnlyLog`].
    #[error("{path} is not writable here, so a read-only open cannot keep the request log")]
    ReadOnlyLog {
        /// The file.
        path: PathBuf,
    },
    /// [`OpenError::Io`].
    #[error("cannot open {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// [`OpenError::EmbedderMismatch`].
    #[error(
        "index `{index}` was built with embedder {stored}, but the store was opened with {given}"
    )]
    EmbedderMismatch {
        /// The index.
        index: String,
        /// The embedder the index was built with.
        stored: Box<EmbedderIdentity>,
        /// The embedder given now.
        given: Box<EmbedderIdentity>,
    },
    /// [`IndexError::UnknownIndex`], [`ReadError::UnknownIndex`].
    #[error("no index `{name}`")]
    UnknownIndex {
        /// The name.
        name: String,
    },
    /// [`IndexError::UnknownVersion`], [`ReadError::UnknownVersion`].
    #[error("index `{index}` has no retained version {version}")]
    UnknownVersion {
        /// The index.
        index: String,
        /// The version.
        version: u64,
    },
    /// [`IndexError::UnknownTag`], [`ReadError::UnknownTag`].
    #[error("index `{index}` has no tag `{tag}`")]
    UnknownTag {
        /// The index.
        index: String,
        /// The tag.
        tag: String,
    },
    /// [`IndexError::UnknownAlias`], [`ReadError::UnknownAlias`].
    #[error("no alias `{name}`")]
    UnknownAlias {
        /// The name.
        name: String,
    },
    /// [`IndexError::UnknownTarget`], [`ReadError::UnknownTarget`].
    #[error("no index or alias `{name}`")]
    UnknownTarget {
        /// The name.
        name: String,
    },
    /// [`WriteError::UnknownDocument`].
    #[error("no document `{doc_id}`")]
    UnknownDocument {
        /// The document.
        doc_id: String,
    },
    /// [`WriteError::UnknownRequest`].
    #[error("no logged request {id}")]
    UnknownRequest {
        /// The request id.
        id: u64,
    },
    /// [`IndexError::IndexExists`].
    #[error("index `{name}` already exists")]
    IndexExists {
        /// The name.
        name: String,
    },
    /// [`IndexError::TagExists`].
    #[error("tag `{tag}` of index `{index}` already names version {version}")]
    TagExists {
        /// The index.
        index: String,
        /// The tag.
        tag: String,
        /// The version.
        version: u64,
    },
    /// [`IndexError::NameTaken`].
    #[error("`{name}` already names an {other}")]
    NameTaken {
        /// The name.
        name: String,
        /// What it names already.
        other: NameKind,
    },
    /// [`IndexError::InvalidName`].
    #[error("invalid name `{name}`: {kind} {rule}")]
    InvalidName {
        /// The name.
        name: String,
        /// What it would have named.
        kind: NameKind,
        /// The rule it breaks.
        rule: NameRule,
    },
    /// [`IndexError::IndexInUse`].
    #[error("index `{index}` is served by alias `{alias}`: point the alias elsewhere first")]
    IndexInUse {
        /// The index.
        index: String,
        /// The alias.
        alias: String,
    },
    /// [`IndexError::DefaultIndex`].
    #[error("the default index cannot be dropped (searches without an index use it)")]
    DefaultIndex,
    /// [`IndexError::NeedsEmbedder`].
    #[error(
        "index `{index}` has no embedder, and the store has {documents} documents it could not \
         embed: create it before ingesting, or register an embedder"
    )]
    NeedsEmbedder {
        /// The index.
        index: String,
        /// The documents stored.
        documents: usize,
    },
    /// [`IndexError::DuplicateRoute`].
    #[error("alias `{alias}` names {index}@{version} twice")]
    DuplicateRoute {
        /// The alias.
        alias: String,
        /// The index.
        index: String,
        /// The version.
        version: u64,
    },
    /// [`IndexError::SplitAlias`].
    #[error("alias `{alias}` routes to several indexes: set its routes instead")]
    SplitAlias {
        /// The alias.
        alias: String,
    },
    /// [`IndexError::Exhausted`].
    #[error("index `{index}`: no {what} left")]
    Exhausted {
        /// The index.
        index: String,
        /// What is used up.
        what: &'static str,
    },
    /// [`WriteError::InvalidDocument`].
    #[error("document `{doc_id}` is invalid: {problem}")]
    InvalidDocument {
        /// The document.
        doc_id: String,
        /// What is wrong with it.
        problem: DocumentProblem,
    },
    /// [`WriteError::EmbedderNotRegistered`], [`IndexError::EmbedderNotRegistered`],
    /// [`ReadError::EmbedderNotRegistered`].
    #[error("index `{index}` embeds with `{embedder}`, which is not registered")]
    EmbedderNotRegistered {
        /// The index.
        index: String,
        /// The embedder's name.
        embedder: String,
    },
    /// [`ReadError::DimensionMismatch`].
    #[error("the query vector has {found} dimensions, the index {expected}")]
    DimensionMismatch {
        /// What was expected.
        expected: usize,
        /// What was found.
        found: usize,
    },
    /// [`QueryError::Remote`].
    #[error("search through `{source_name}`: {error}")]
    Remote {
        /// The source.
        source_name: String,
        /// What went wrong.
        error: crate::query::SourceError,
    },
    /// [`QueryError::Rerank`].
    #[error("rerank with `{reranker}`: {error}")]
    Rerank {
        /// The reranker.
        reranker: String,
        /// What went wrong (boxed: it is large, and rare).
        error: Box<EmbedError>,
    },
    /// [`ReadError::ZeroVector`].
    #[error("a zero query vector has no cosine")]
    ZeroVector,
    /// `InvalidParameter` of every family.
    #[error(transparent)]
    InvalidParameter(#[from] InvalidParameter),
    /// `IndexUnavailable` of [`WriteError`], [`IndexError`] and [`ReadError`].
    #[error("index `{index}` could not be loaded ({reason}); drop it with `folio index drop`")]
    IndexUnavailable {
        /// The index.
        index: String,
        /// Why.
        reason: String,
    },
    /// [`CompactFileError::InUse`].
    #[error("the store has {others} other open handle(s); drop them before compacting the file")]
    StoreInUse {
        /// The other open handles.
        others: usize,
    },
    /// [`CompactFileError::TransactionInProgress`].
    #[error("a transaction is still in progress; finish it before compacting the file")]
    TransactionInProgress,
    /// `Vectors` of [`WriteError`] and [`ReadError`].
    #[error("vectors refused: {0}")]
    Vectors(#[from] VectorError),
    /// `Shape` of [`WriteError`] and [`IndexError`].
    #[error("vector matrix refused: {0}")]
    Shape(#[from] ShapeError),
    /// `Embed` of [`WriteError`] and [`ReadError`].
    #[error("embedding failed: {0}")]
    Embed(#[from] EmbedError),
    /// `Storage` of every family: the file could not be read or written.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl From<OpenError> for Error {
    fn from(e: OpenError) -> Self {
        match e {
            OpenError::NotFound(path) => Error::NotFound(path),
            OpenError::MissingFolder { path, folder } => Error::MissingFolder { path, folder },
            OpenError::NotAStore { path, reason } => Error::NotAStore { path, reason },
            OpenError::Damaged { path, reason } => Error::Damaged { path, reason },
            OpenError::UnsupportedFormat {
                path,
                found,
                oldest,
                supported,
            } => Error::UnsupportedFormat {
                path,
                found,
                oldest,
                supported,
            },
            OpenError::Upgrade {
                path,
                from,
                to,
                source,
            } => Error::Upgrade {
                path,
                from,
                to,
                source,
            },
            OpenError::Locked { path, waited } => Error::Locked { path, waited },
            OpenError::UpgradeNeeded {
                path,
                found,
                current,
            } => Error::UpgradeNeeded {
                path,
                found,
                current,
            },
            OpenError::NeedsRecovery { path } => Error::NeedsRecovery { path },
            OpenError::ReadOnlyLog { path } => Error::ReadOnlyLog { path },
            OpenError::Io { path, source } => Error::Io { path, source },
            OpenError::EmbedderMismatch {
                index,
                stored,
                given,
            } => Error::EmbedderMismatch {
                index,
                stored,
                given,
            },
            OpenError::InvalidParameter(e) => Error::InvalidParameter(e),
            OpenError::Storage(e) => Error::Storage(e),
        }
    }
}

impl From<WriteError> for Error {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::InvalidDocument { doc_id, problem } => {
                Error::InvalidDocument { doc_id, problem }
            }
            WriteError::UnknownDocument { doc_id } => Error::UnknownDocument { doc_id },
            WriteError::EmbedderNotRegistered { index, embedder } => {
                Error::EmbedderNotRegistered { index, embedder }
            }
            WriteError::UnknownRequest { id } => Error::UnknownRequest { id },
            WriteError::IndexUnavailable { index, reason } => {
                Error::IndexUnavailable { index, reason }
            }
            WriteError::InvalidParameter(e) => Error::InvalidParameter(e),
            WriteError::Vectors(e) => Error::Vectors(e),
            WriteError::Shape(e) => Error::Shape(e),
            WriteError::Embed(e) => Error::Embed(e),
            WriteError::Storage(e) => Error::Storage(e),
        }
    }
}

impl From<IndexError> for Error {
    fn from(e: IndexError) -> Self {
        match e {
            IndexError::UnknownIndex { name } => Error::UnknownIndex { name },
            IndexError::UnknownVersion { index, version } => {
                Error::UnknownVersion { index, version }
            }
            IndexError::UnknownTag { index, tag } => Error::UnknownTag { index, tag },
            IndexError::UnknownAlias { name } => Error::UnknownAlias { name },
            IndexError::UnknownTarget { name } => Error::UnknownTarget { name },
            IndexError::IndexExists { name } => Error::IndexExists { name },
            IndexError::TagExists {
                index,
                tag,
                version,
            } => Error::TagExists {
                index,
                tag,
                version,
            },
            IndexError::NameTaken { name, other } => Error::NameTaken { name, other },
            IndexError::InvalidName { name, kind, rule } => Error::InvalidName { name, kind, rule },
            IndexError::IndexInUse { index, alias } => Error::IndexInUse { index, alias },
            IndexError::DefaultIndex => Error::DefaultIndex,
            IndexError::NeedsEmbedder { index, documents } => {
                Error::NeedsEmbedder { index, documents }
            }
            IndexError::EmbedderNotRegistered { index, embedder } => {
                Error::EmbedderNotRegistered { index, embedder }
            }
            IndexError::DuplicateRoute {
                alias,
                index,
                version,
            } => Error::DuplicateRoute {
                alias,
                index,
                version,
            },
            IndexError::Exhausted { index, what } => Error::Exhausted { index, what },
            IndexError::SplitAlias { alias } => Error::SplitAlias { alias },
            IndexError::InvalidParameter(e) => Error::InvalidParameter(e),
            IndexError::IndexUnavailable { index, reason } => {
                Error::IndexUnavailable { index, reason }
            }
            IndexError::Shape(e) => Error::Shape(e),
            IndexError::Build(e) => Error::from(*e),
            IndexError::Storage(e) => Error::Storage(e),
        }
    }
}

impl From<ReadError> for Error {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::UnknownIndex { name } => Error::UnknownIndex { name },
            ReadError::UnknownVersion { index, version } => {
                Error::UnknownVersion { index, version }
            }
            ReadError::UnknownTag { index, tag } => Error::UnknownTag { index, tag },
            ReadError::UnknownAlias { name } => Error::UnknownAlias { name },
            ReadError::UnknownTarget { name } => Error::UnknownTarget { name },
            ReadError::EmbedderNotRegistered { index, embedder } => {
                Error::EmbedderNotRegistered { index, embedder }
            }
            ReadError::DimensionMismatch { expected, found } => {
                Error::DimensionMismatch { expected, found }
            }
            ReadError::ZeroVector => Error::ZeroVector,
            ReadError::InvalidParameter(e) => Error::InvalidParameter(e),
            ReadError::IndexUnavailable { index, reason } => {
                Error::IndexUnavailable { index, reason }
            }
            ReadError::Vectors(e) => Error::Vectors(e),
            ReadError::Embed(e) => Error::Embed(e),
            ReadError::Storage(e) => Error::Storage(e),
        }
    }
}

impl From<QueryError> for Error {
    fn from(e: QueryError) -> Self {
        match e {
            QueryError::Read(e) => e.into(),
            QueryError::Remote { source_name, error } => Error::Remote { source_name, error },
            QueryError::Rerank { reranker, error } => Error::Rerank { reranker, error },
        }
    }
}

impl From<CompactFileError> for Error {
    fn from(e: CompactFileError) -> Self {
        match e {
            CompactFileError::InUse { others } => Error::StoreInUse { others },
            CompactFileError::TransactionInProgress => Error::TransactionInProgress,
            CompactFileError::Storage(e) => Error::Storage(e),
        }
    }
}
