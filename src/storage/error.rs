//! Typed errors an application can match: one `#[non_exhaustive]` enum per family of
//! operations (opening, writing documents, managing indexes and versions, reading and
//! searching), each with structured variants, as in redb. [`crate::Error`] gathers them all.

use std::path::PathBuf;
use std::time::Duration;

use crate::embed::EmbedderIdentity;
use crate::embed::{EmbedError, VectorError};
use crate::index::ShapeError;
use crate::ingest::{DocumentProblem, IngestError};
use crate::limits::InvalidParameter;

/// A failure below folio's logic: the file, the disk, or bytes that do not decode.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// redb failed (I/O, a full disk).
    #[error("storage: {0}")]
    Redb(redb::Error),
    /// The file holds bytes folio cannot decode, or rows that disagree (a record names a row
    /// that is not there): every value verified, so a page lost whole entries, or something
    /// other than folio wrote the file. Damage either way.
    #[error("the store is damaged: {0}")]
    Corrupt(String),
    /// A stored value fails its checksum (`storage-format.md`, "Checksums"): the page that
    /// holds it was damaged after folio wrote it. Nothing was answered from it.
    #[error("the store is damaged: the value of table `{table}` at key {key} fails its checksum")]
    Damaged {
        /// The table.
        table: String,
        /// The key, as folio prints it.
        key: String,
    },
    /// redb met a page it cannot read (a tree that does not parse, or a panic inside redb
    /// that folio contained): the file was damaged.
    #[error("the store is damaged: {0}")]
    DamagedPage(String),
    /// A write on a store opened for reading only (`StoreBuilder::read_only`); nothing was
    /// done.
    #[error("the store is open for reading only")]
    ReadOnly,
    /// Another process was in a write transaction (a commit) for longer than the store's
    /// wait (`StoreBuilder::wait`); nothing was done.
    #[error("another process was committing to the store for {waited:.1?}; try again")]
    Busy {
        /// How long the write waited.
        waited: Duration,
    },
}

impl StorageError {
    pub(crate) fn corrupt(what: impl Into<String>) -> Self {
        StorageError::Corrupt(what.into())
    }

    /// Whether the file was found damaged (a checksum, a page redb cannot read, or rows that
    /// disagree).
    pub fn is_damage(&self) -> bool {
        matches!(
            self,
            StorageError::Damaged { .. } | StorageError::DamagedPage(_) | StorageError::Corrupt(_)
        )
    }
}

/// redb reports a page it cannot read as `Corrupted`, and a page past the end of a file cut
/// short as an I/O error (`UnexpectedEof`): both are damage, typed as such. So is a table
/// whose stored definition (type names, widths, kind) is not the one folio always opens it
/// with, or that is missing from the list: only a damaged page of the table list changes
/// it.
impl From<redb::Error> for StorageError {
    fn from(e: redb::Error) -> Self {
        match e {
            redb::Error::Corrupted(what) => StorageError::DamagedPage(what),
            // Every store holds all of folio's tables from its creation (or the upgrade that
            // added them), so a name redb's table list lacks was lost by a damaged page.
            redb::Error::TableDoesNotExist(name) => StorageError::DamagedPage(format!(
                "table `{name}` is missing from redb's list of tables"
            )),
            e @ (redb::Error::TableTypeMismatch { .. }
            | redb::Error::TypeDefinitionChanged { .. }
            | redb::Error::TableIsMultimap(_)
            | redb::Error::TableIsNotMultimap(_)) => {
                StorageError::DamagedPage(format!("a table's stored definition: {e}"))
            }
            redb::Error::Io(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                StorageError::DamagedPage(format!("the file ends before a page it holds ({e})"))
            }
            other => StorageError::Redb(other),
        }
    }
}

/// Opening or creating a store, or registering an embedder with it, failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// No store at the path (no file, or one that holds none yet: empty, or a creation cut
    /// short), and the options did not ask to create one.
    #[error("no store at {0} (create one with `folio ingest`)")]
    NotFound(PathBuf),
    /// A new store was asked for in a folder that does not exist (it is not created).
    #[error("cannot create {path}: the folder {folder} does not exist")]
    MissingFolder {
        /// The store's path.
        path: PathBuf,
        /// The folder that does not exist.
        folder: PathBuf,
    },
    /// The file is a folio store (or looks like a redb file) but is damaged: redb's check of
    /// its pages or folio's checksums failed. `folio recover` copies what can be read.
    #[error("{path} is damaged: {reason}")]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What was found damaged.
        reason: String,
    },
    /// The file is not a redb file, or a redb file without folio's tables.
    #[error("{path} is not a folio store: {reason}")]
    NotAStore {
        /// The file.
        path: PathBuf,
        /// What redb or folio found instead.
        reason: String,
    },
    /// The file's format version is outside `oldest..=supported`.
    #[error(
        "{path} has store format version {found}; this folio reads versions {oldest} to {supported} \
         (a newer folio wrote it, or it is damaged)"
    )]
    UnsupportedFormat {
        /// The file.
        path: PathBuf,
        /// The format version the file records.
        found: u32,
        /// The oldest format version this build reads (and upgrades).
        oldest: u32,
        /// The format version this build writes.
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
        /// The file.
        path: PathBuf,
        /// The format version the file had.
        from: u32,
        /// The format version the upgrade was writing.
        to: u32,
        /// What failed.
        source: StorageError,
    },
    /// Another process holds the store in a way this open cannot share, for longer than
    /// `StoreBuilder::wait`: an older folio, which kept the file to itself while open for
    /// writing, or a creation of the file under way.
    #[error("{path} is open for writing in another process (waited {waited:.1?})")]
    Locked {
        /// The file.
        path: PathBuf,
        /// How long the open waited for the writer to close it.
        waited: Duration,
    },
    /// A read-only open of a file of an older format, which only an open for writing
    /// upgrades (in place, see `storage-format.md`); nothing was written.
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
    /// A process writing the store stopped without closing it, and redb must recover the
    /// file before it can be read, which writes; the file is not writable here.
    #[error(
        "{path} was not closed by the process that last wrote it; an open for writing \
         recovers it (a read-only open cannot, and the file is not writable here)"
    )]
    NeedsRecovery {
        /// The file.
        path: PathBuf,
    },
    /// `StoreBuilder::log_requests` with `read_only` on a file this user or this mount may
    /// only read: the request log is written into the file.
    #[error("{path} is not writable here, so a read-only open cannot keep the request log")]
    ReadOnlyLog {
        /// The file.
        path: PathBuf,
    },
    /// The file could not be opened or created.
    #[error("cannot open {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// An embedder has the name an index was built with, but would make other vectors.
    #[error(
        "index `{index}` was built with embedder {stored}, but the store was opened with {given}"
    )]
    EmbedderMismatch {
        /// The index built with the stored embedder.
        index: String,
        /// The embedder the index was built with.
        stored: Box<EmbedderIdentity>,
        /// The embedder of the same name given now.
        given: Box<EmbedderIdentity>,
    },
    /// The options a new store would record are out of range; no file was created.
    #[error(transparent)]
    InvalidParameter(#[from] InvalidParameter),
    /// The file could not be read or written.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl OpenError {
    /// Damage a read of the file found while opening it, named as such ([`OpenError::Damaged`]).
    pub(crate) fn damage_at(self, path: &std::path::Path) -> Self {
        match self {
            OpenError::Storage(e) | OpenError::Upgrade { source: e, .. } if e.is_damage() => {
                OpenError::Damaged {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                }
            }
            other => other,
        }
    }
}

/// Writing documents (a batch of upserts, deletes and ACL changes, or feedback on a logged
/// request) failed; nothing was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// A document of the batch cannot be stored as given.
    #[error("document `{doc_id}` is invalid: {problem}")]
    InvalidDocument {
        /// The document.
        doc_id: String,
        /// What is wrong with it.
        problem: DocumentProblem,
    },
    /// A delete or ACL change names a document the store does not hold.
    #[error("no document `{doc_id}`")]
    UnknownDocument {
        /// The document.
        doc_id: String,
    },
    /// Chunks of `index` need embedding, but no embedder of that name is registered (see
    /// [`crate::Store::register_embedder`]); pass vectors, or register it.
    #[error("index `{index}` embeds with `{embedder}`, which is not registered; register it or pass vectors")]
    EmbedderNotRegistered {
        /// The index.
        index: String,
        /// The embedder's name.
        embedder: String,
    },
    /// Feedback names a request the log does not hold.
    #[error("no logged request {id}")]
    UnknownRequest {
        /// The request id.
        id: u64,
    },
    /// An index could not be loaded when the store opened, so a write that updates every
    /// index cannot run; dropping the index makes the store writable again.
    #[error(
        "index `{index}` could not be loaded ({reason}); drop it with `folio index drop` \
         (and create it again) before writing"
    )]
    IndexUnavailable {
        /// The index.
        index: String,
        /// Why it did not load.
        reason: String,
    },
    /// A parameter the store would record is out of range.
    #[error(transparent)]
    InvalidParameter(#[from] InvalidParameter),
    /// Vectors given or embedded are not finite or not of the index's dimension.
    #[error("vectors refused: {0}")]
    Vectors(#[from] VectorError),
    /// A vector matrix does not fit the segment it would join.
    #[error("vector matrix refused: {0}")]
    Shape(#[from] ShapeError),
    /// The embedder failed.
    #[error("embedding failed: {0}")]
    Embed(#[from] EmbedError),
    /// The file could not be read or written.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Managing indexes and versions (create or drop an index, tags, aliases, rollback,
/// pinning, merging segments, garbage collection) failed; nothing was changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// No index has this name.
    #[error("no index `{name}`")]
    UnknownIndex {
        /// The name.
        name: String,
    },
    /// The index does not retain this version (it never existed or was collected).
    #[error("index `{index}` has no retained version {version}")]
    UnknownVersion {
        /// The index.
        index: String,
        /// The version.
        version: u64,
    },
    /// The index has no tag of this name.
    #[error("index `{index}` has no tag `{tag}`")]
    UnknownTag {
        /// The index.
        index: String,
        /// The tag.
        tag: String,
    },
    /// No alias has this name.
    #[error("no alias `{name}`")]
    UnknownAlias {
        /// The name.
        name: String,
    },
    /// No index or alias has this name.
    #[error("no index or alias `{name}`")]
    UnknownTarget {
        /// The name.
        name: String,
    },
    /// An index of this name exists already.
    #[error("index `{name}` already exists")]
    IndexExists {
        /// The name.
        name: String,
    },
    /// The tag names a version already; remove it first to move it.
    #[error("tag `{tag}` of index `{index}` already names version {version}")]
    TagExists {
        /// The index.
        index: String,
        /// The tag.
        tag: String,
        /// The version it names.
        version: u64,
    },
    /// Index and alias names share one namespace.
    #[error("`{name}` already names an {other}")]
    NameTaken {
        /// The name.
        name: String,
        /// What it names already.
        other: NameKind,
    },
    /// A new index, alias or tag name breaks a naming rule.
    #[error("invalid name `{name}`: {kind} {rule}")]
    InvalidName {
        /// The name.
        name: String,
        /// What it would have named.
        kind: NameKind,
        /// The rule it breaks.
        rule: NameRule,
    },
    /// The index cannot be dropped while an alias routes to it.
    #[error("index `{index}` is served by alias `{alias}`: point the alias elsewhere first")]
    IndexInUse {
        /// The index.
        index: String,
        /// An alias that routes to it.
        alias: String,
    },
    /// Searches that name no index use the `default` index.
    #[error("the default index cannot be dropped (searches without an index use it)")]
    DefaultIndex,
    /// A vectors-only index cannot embed the documents already stored.
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
    /// The new index names an embedder that is not registered with the store.
    #[error("index `{index}` embeds with `{embedder}`, which is not registered with this store")]
    EmbedderNotRegistered {
        /// The index.
        index: String,
        /// The embedder's name.
        embedder: String,
    },
    /// An alias route names the same version twice.
    #[error("alias `{alias}` names {index}@{version} twice")]
    DuplicateRoute {
        /// The alias.
        alias: String,
        /// The index of the route.
        index: String,
        /// The version named twice.
        version: u64,
    },
    /// A 32-bit number space of the file (index ids, an index's child numbers) is used up.
    #[error("index `{index}`: no {what} left")]
    Exhausted {
        /// The index.
        index: String,
        /// The numbers used up.
        what: &'static str,
    },
    /// A rollback moves an alias to one index's version; this alias routes to several.
    #[error("alias `{alias}` routes to several indexes: set its routes instead")]
    SplitAlias {
        /// The alias.
        alias: String,
    },
    /// A parameter the index would record is out of range.
    #[error(transparent)]
    InvalidParameter(#[from] InvalidParameter),
    /// The index could not be loaded when the store opened; dropping it is all that works.
    #[error("index `{index}` could not be loaded ({reason}); drop it with `folio index drop`")]
    IndexUnavailable {
        /// The index.
        index: String,
        /// Why it did not load.
        reason: String,
    },
    /// A vector matrix does not fit the segment it would join.
    #[error("vector matrix refused: {0}")]
    Shape(#[from] ShapeError),
    /// Building the new index's chunks and vectors from the stored documents failed.
    #[error("building the index failed: {0}")]
    Build(Box<WriteError>),
    /// The file could not be read or written.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Which namespace a name belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameKind {
    /// An index name.
    Index,
    /// An alias name.
    Alias,
    /// A tag of an index version.
    Tag,
}

impl std::fmt::Display for NameKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NameKind::Index => "index",
            NameKind::Alias => "alias",
            NameKind::Tag => "tag",
        })
    }
}

/// The rule a name broke (in [`IndexError::InvalidName`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameRule {
    /// Names cannot be empty.
    #[error("names cannot be empty")]
    Empty,
    /// Names have a longest length.
    #[error("names are at most {max} bytes")]
    TooLong {
        /// The longest name in bytes.
        max: usize,
    },
    /// Names use only ASCII letters, digits, `-`, `_` and `.`.
    #[error("names use only letters, digits, `-`, `_` and `.`")]
    Characters,
    /// A name cannot be a number: it would read as a version.
    #[error("names cannot be a number (it would read as a version)")]
    Number,
}

/// Reading or searching failed (search, stats, documents, chunks, plans, versions,
/// vectors, aliases, routes, the request log, the integrity check).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// No index has this name.
    #[error("no index `{name}`")]
    UnknownIndex {
        /// The name.
        name: String,
    },
    /// The index does not retain this version (it never existed or was collected).
    #[error("index `{index}` has no retained version {version}")]
    UnknownVersion {
        /// The index.
        index: String,
        /// The version.
        version: u64,
    },
    /// The index has no tag of this name.
    #[error("index `{index}` has no tag `{tag}`")]
    UnknownTag {
        /// The index.
        index: String,
        /// The tag.
        tag: String,
    },
    /// No alias has this name.
    #[error("no alias `{name}`")]
    UnknownAlias {
        /// The name.
        name: String,
    },
    /// No index or alias has this name.
    #[error("no index or alias `{name}`")]
    UnknownTarget {
        /// The name.
        name: String,
    },
    /// A text query on an index whose embedder is not registered: pass a vector instead.
    #[error("index `{index}` embeds with `{embedder}`, which is not registered: pass a vector")]
    EmbedderNotRegistered {
        /// The index.
        index: String,
        /// The embedder's name.
        embedder: String,
    },
    /// A query vector's length differs from the index's dimension.
    #[error("the query vector has {found} dimensions, the index {expected}")]
    DimensionMismatch {
        /// The index's dimension.
        expected: usize,
        /// The query's length.
        found: usize,
    },
    /// A cosine index cannot rank against a zero query vector: it has no direction.
    #[error("a zero query vector has no cosine")]
    ZeroVector,
    /// A search parameter is out of range.
    #[error(transparent)]
    InvalidParameter(#[from] InvalidParameter),
    /// The index could not be loaded when the store opened; the other indexes work.
    #[error("index `{index}` could not be loaded ({reason}); drop it with `folio index drop`")]
    IndexUnavailable {
        /// The index.
        index: String,
        /// Why it did not load.
        reason: String,
    },
    /// The query vector is not finite.
    #[error("query vector refused: {0}")]
    Vectors(#[from] VectorError),
    /// The embedder failed on the query.
    #[error("embedding the query failed: {0}")]
    Embed(#[from] EmbedError),
    /// The file could not be read.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// [`crate::store::Store::backup`] wrote no copy (a copy cut short leaves no file under the
/// destination's name).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackupError {
    /// The destination exists; a backup never replaces a file.
    #[error("{} exists; a backup never replaces a file", .0.display())]
    Exists(std::path::PathBuf),
    /// The store holds a table this build does not know (a newer format's): copying the
    /// others would make an incomplete copy.
    #[error("the store has a table this build does not know ({0}); use the folio that wrote it")]
    UnknownTable(String),
    /// The new file could not be made.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The new file could not be renamed into place.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The destination.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The store could not be read or the copy written.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// [`crate::store::Store::recover`] made no new store, or stopped filling it (a new store
/// left part filled is at the destination; remove it and run again).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecoverError {
    /// The destination exists; recovery never replaces a file.
    #[error("{} exists; recovery never replaces a file", .0.display())]
    Exists(PathBuf),
    /// The damaged store could not be read at all: redb cannot open the file (its header
    /// is damaged), or it is not a store of this format (an older one is upgraded by an
    /// open for writing first).
    #[error("cannot read the damaged store: {0}")]
    Unreadable(Box<OpenError>),
    /// The default index was built with another embedder than the one given: its documents
    /// would be embedded by another model. Give the embedder it was built with.
    #[error(
        "the default index was built with embedder {stored}, but the recovery was given {given}"
    )]
    EmbedderMismatch {
        /// The embedder the index was built with.
        stored: Box<EmbedderIdentity>,
        /// The embedder given.
        given: Box<EmbedderIdentity>,
    },
    /// The new store could not be created.
    #[error("cannot create the new store: {0}")]
    Create(Box<OpenError>),
    /// The whole copy could not be written for another cause than damage (the new file
    /// could not be made or renamed into place, a table of a newer format).
    #[error("cannot copy the store: {0}")]
    Copy(Box<BackupError>),
    /// An index could not be defined again in the new store.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The documents could not be written to the new store.
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// [`crate::store::Store::compact_file`] did not run (nothing was changed), or failed part
/// way (the file is then still a consistent store: see `storage-format.md`, "Giving the
/// file back its free space").
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompactFileError {
    /// redb compacts only a database no one else is using: other handles (clones of the
    /// [`crate::store::Store`], including those held by other threads) must be dropped first.
    #[error("the store has {others} other open handle(s); drop them before compacting the file")]
    InUse {
        /// The other handles.
        others: usize,
    },
    /// A read or write transaction was still open inside redb.
    #[error("a transaction is still in progress; finish it before compacting the file")]
    TransactionInProgress,
    /// The file could not be read or written.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl From<redb::CompactionError> for CompactFileError {
    fn from(e: redb::CompactionError) -> Self {
        match e {
            redb::CompactionError::TransactionInProgress => CompactFileError::TransactionInProgress,
            // folio makes no savepoints; a file that has some came from elsewhere.
            other => CompactFileError::Storage(redb::Error::from(other).into()),
        }
    }
}

impl From<IngestError> for WriteError {
    fn from(e: IngestError) -> Self {
        match e {
            IngestError::InvalidDocument { doc_id, problem } => {
                WriteError::InvalidDocument { doc_id, problem }
            }
            IngestError::EmbedderNotRegistered { index, embedder } => {
                WriteError::EmbedderNotRegistered { index, embedder }
            }
            IngestError::Vectors(e) => WriteError::Vectors(e),
            IngestError::Embed(e) => WriteError::Embed(e),
            IngestError::Staged(what) => WriteError::Storage(StorageError::corrupt(what)),
        }
    }
}

impl From<WriteError> for IndexError {
    /// Building a new index runs the write path over the stored documents: what can fail
    /// there keeps its name, anything else is reported as a failed build.
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::EmbedderNotRegistered { index, embedder } => {
                IndexError::EmbedderNotRegistered { index, embedder }
            }
            WriteError::IndexUnavailable { index, reason } => {
                IndexError::IndexUnavailable { index, reason }
            }
            WriteError::InvalidParameter(e) => IndexError::InvalidParameter(e),
            WriteError::Shape(e) => IndexError::Shape(e),
            WriteError::Storage(e) => IndexError::Storage(e),
            other => IndexError::Build(Box::new(other)),
        }
    }
}

/// redb reports each operation's failure with its own type; folio folds them all into
/// [`StorageError`] so callers match on one variant.
macro_rules! from_redb {
    ($target:ty: $($source:ty),*) => {$(
        impl From<$source> for $target {
            fn from(e: $source) -> Self {
                StorageError::from(redb::Error::from(e)).into()
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
from_redb!(IndexError: redb::Error, redb::DatabaseError, redb::TransactionError,
    redb::TableError, redb::StorageError, redb::CommitError);
from_redb!(ReadError: redb::Error, redb::DatabaseError, redb::TransactionError,
    redb::TableError, redb::StorageError, redb::CommitError, redb::SetDurabilityError);
