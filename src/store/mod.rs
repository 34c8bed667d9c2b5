//! The one-file store: binds chunking, embedding and the vector index to a redb file.
//!
//! Layout of the file: see `storage-format.md`. In memory a [`Store`] keeps, per index,
//! the loaded segments (vectors and graphs) of the versions in use and swaps a new
//! `IndexState` in atomically after each commit, so readers on other threads always see
//! a whole version.

mod check;
mod commit;
mod compact;
mod current;
mod docs;
mod error;
mod export;
mod file;
mod filters;
mod follow;
mod gc;
mod identity;
mod indexes;
mod log;
mod open;
mod options;
mod prepare;
mod progress;
mod read;
mod records;
mod rows;
mod segment;
mod staged;
mod state;
mod tables;
mod unavailable;
mod upgrade;
mod versions;
mod write;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use redb::{Database, ReadTransaction, ReadableDatabase, StorageBackend, WriteTransaction};

pub use crate::review::{
    Annotation, Feedback, GoldEvidence, LogEntry, LoggedQuery, LoggedRequest, Outcome, Rating,
    Verdict,
};
pub use check::IntegrityReport;
pub use compact::Compaction;
pub(crate) use docs::{chunk_id, parent_id};
pub use docs::{ChunkInfo, PlannedChunk};
pub use error::{
    CompactFileError, DocumentProblem, IndexError, NameKind, NameRule, OpenError, Piece, ReadError,
    StorageError, WriteError,
};
pub use export::{Audience, Export, ExportedChild};
pub use file::{FileCompaction, IndexStats, StoreStats};
pub use gc::GcReport;
pub use identity::EmbedderIdentity;
pub use indexes::{IndexConfig, IndexEmbedder, IndexInfo};
pub use log::{LogSize, Trim, TrimReport, TRIM_BATCH};
pub use options::{
    MergePolicy, StoreBuilder, DEFAULT_MAX_DEAD_FRACTION, DEFAULT_MAX_SEGMENTS, DEFAULT_WAIT,
};
pub use progress::{NoProgress, Progress};
pub use read::VersionVectors;
pub(crate) use read::{Reader, StoredChild};
pub use records::{GraphParams, VectorStorage, DEFAULT_MIN_GRAPH_SIZE, DEFAULT_RESCORE};
pub(crate) use rows::slice_text;
pub use state::Access;
pub(crate) use state::{ChildSearch, IndexState, VersionView};
pub use tables::{FORMAT_VERSION, OLDEST_FORMAT_VERSION};
pub use unavailable::UnavailableIndex;

pub(crate) use records::now_ms;
pub use versions::{route_bucket, AliasInfo, Rollback, Route, VersionInfo};
pub use write::{Batch, CommitReceipt, DryRun};

use crate::embed::{Embedder, Truncation};
use follow::Follow;
use identity::identity_of;
use open::Db;
use records::IndexRecord;
use tables::*;

/// The index every store starts with.
pub const DEFAULT_INDEX: &str = "default";

/// A handle on an open store. Cheap to clone; share it across threads.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    db: Db,
    path: PathBuf,
    embedders: RwLock<HashMap<String, Arc<dyn Embedder>>>,
    /// Readers take this lock only to pair a read transaction with the index states (see
    /// [`Store::snapshot`]); writers that delete records commit while holding it for writing.
    indexes: RwLock<BTreeMap<String, Arc<IndexState>>>,
    /// Indexes that failed to load: the store still opens, to drop them or use the others.
    unavailable: RwLock<BTreeMap<String, UnavailableIndex>>,
    /// Serialises writers so the in-memory state is swapped in commit order.
    writer: Mutex<()>,
    /// Per index name, held by a merge from its choice of segments until it lands (see
    /// `compact.rs`): merges build without the writer lock, and two of one index must not
    /// both land.
    merging: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    merge: MergePolicy,
    log_requests: bool,
    truncation: Truncation,
    /// Request-log entries not written yet (see `log.rs`).
    log: log::RequestLog,
    /// A read-only store's record of the file state its index states were loaded from.
    follow: Option<Follow>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Writes the last request-log entries; a failure here cannot be reported and
        // loses only those entries (see storage-format.md, "Request log").
        let _ = self.log.flush(&self.db);
    }
}

impl StoreBuilder {
    /// Opens the store at `path` (creates it, when [`StoreBuilder::create`] says so).
    pub fn open(self, path: impl AsRef<Path>) -> Result<Store, OpenError> {
        Store::open_with(path.as_ref(), self)
    }

    /// Opens (or creates, when its storage is empty) a store on a redb storage backend of
    /// your own: a wrapper that injects faults or counts bytes, say. `path` only labels the
    /// store (errors, [`Store::path`], the file size in [`Store::stats`]).
    pub fn open_with_backend(
        self,
        path: impl AsRef<Path>,
        backend: impl StorageBackend,
    ) -> Result<Store, OpenError> {
        Store::open_with_backend(path.as_ref(), backend, self)
    }

    /// Creates a store that lives in memory only and is gone when dropped (a dry run of a
    /// new store, or a test): every setting applies as for a file.
    pub fn open_in_memory(self) -> Result<Store, OpenError> {
        let options = StoreBuilder {
            create: true,
            read_only: false,
            ..self
        };
        Store::open_with_backend(
            Path::new(":memory:"),
            redb::backends::InMemoryBackend::new(),
            options,
        )
    }
}

impl Store {
    /// How to open or create a store, with every setting at its default (see
    /// [`StoreBuilder`]'s "Defaults").
    pub fn builder() -> StoreBuilder {
        StoreBuilder::default()
    }

    /// Opens the store at `path` with the default settings; the file must exist.
    pub fn open(path: impl AsRef<Path>) -> Result<Store, OpenError> {
        Store::builder().open(path)
    }

    /// Opens the store at `path`, creating it with the default settings when missing.
    pub fn open_or_create(path: impl AsRef<Path>) -> Result<Store, OpenError> {
        Store::builder().create(true).open(path)
    }

    /// Opens the store at `path` for reading only (see [`StoreBuilder::read_only`]).
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Store, OpenError> {
        Store::builder().read_only(true).open(path)
    }

    /// Opens (or, with `options.create`, creates) the store at `path`.
    ///
    /// One process at a time may have a store open for writing; any number may open it
    /// with [`StoreBuilder::read_only`] meanwhile. A writing open that finds another writer
    /// waits up to [`StoreBuilder::wait`], then fails with [`OpenError::Locked`]. Creation
    /// is crash safe: a file whose creation was cut short holds no store, and the next
    /// open with `create` makes one in it.
    fn open_with(path: &Path, options: StoreBuilder) -> Result<Store, OpenError> {
        let path = path.to_path_buf();
        open::waiting(&path, options.wait, || {
            let db = if options.read_only {
                Db::Reader(open::reader_at(&path)?)
            } else {
                let validate = || Ok(options.validate()?);
                Db::Writer(open::writer_at(&path, options.create, validate)?)
            };
            Store::from_db(db, path.clone(), options.clone())
        })
    }

    /// A backend that supports redb's range locks is shared with other processes as a
    /// file is; one that does not is this handle's alone. The wait setting does not apply:
    /// the backend is used once.
    fn open_with_backend(
        path: &Path,
        backend: impl StorageBackend,
        options: StoreBuilder,
    ) -> Result<Store, OpenError> {
        let path = path.to_path_buf();
        let db = if options.read_only {
            Db::Reader(open::reader(&path, backend)?)
        } else {
            let validate = || Ok(options.validate()?);
            Db::Writer(open::writer(&path, backend, options.create, validate)?)
        };
        Store::from_db(db, path, options)
    }

    fn from_db(db: Db, path: PathBuf, options: StoreBuilder) -> Result<Store, OpenError> {
        if options.read_only && options.log_requests {
            return Err(OpenError::ReadOnlyLog { path });
        }
        match &db {
            Db::Writer(writer) => prepare(writer, &path, &options)?,
            Db::Reader(_) => check_readable(&db, &path)?,
        }
        let txn = db.begin_read()?;
        let loaded = follow::load(&txn, &BTreeMap::new())?;
        drop(txn);
        let follow = db.is_reader().then(|| Follow::new(loaded.seen));
        let mut embedders = HashMap::new();
        embedders.insert(
            options.embedder.name().to_string(),
            options.embedder.clone(),
        );
        let store = Store {
            inner: Arc::new(Inner {
                db,
                path,
                embedders: RwLock::new(embedders),
                indexes: RwLock::new(loaded.states),
                unavailable: RwLock::new(loaded.unavailable),
                writer: Mutex::new(()),
                merging: Mutex::default(),
                merge: options.merge,
                log_requests: options.log_requests,
                truncation: options.truncation,
                log: log::RequestLog::default(),
                follow,
            }),
        };
        store.check_embedder(&options.embedder)?;
        Ok(store)
    }

    /// Refuses an embedder whose name matches an index's but whose vectors would differ.
    fn check_embedder(&self, embedder: &Arc<dyn Embedder>) -> Result<(), OpenError> {
        let given = identity_of(embedder.as_ref());
        for (name, index) in self.inner.indexes.read().iter() {
            let stored = &index.record().embedder;
            if stored.name == given.name && *stored != given {
                return Err(OpenError::EmbedderMismatch {
                    index: name.clone(),
                    stored: Box::new(stored.clone()),
                    given: Box::new(given),
                });
            }
        }
        Ok(())
    }

    /// Makes `embedder` available to the indexes built with its name.
    pub fn register_embedder(&self, embedder: Arc<dyn Embedder>) -> Result<(), OpenError> {
        self.check_embedder(&embedder)?;
        self.inner
            .embedders
            .write()
            .insert(embedder.name().to_string(), embedder);
        Ok(())
    }

    /// The names of the registered embedders, sorted: what text queries and ingest can use.
    pub fn embedder_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.inner.embedders.read().keys().cloned().collect();
        names.sort();
        names
    }

    pub(crate) fn embedder(&self, name: &str) -> Option<Arc<dyn Embedder>> {
        self.inner.embedders.read().get(name).cloned()
    }

    /// The path the store was opened at.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    pub(crate) fn db(&self) -> &Db {
        &self.inner.db
    }

    /// Whether the store was opened for reading only ([`StoreBuilder::read_only`]).
    pub fn is_read_only(&self) -> bool {
        self.inner.db.is_reader()
    }

    /// The names of the indexes, sorted. A read-only store reports them as of its last
    /// read (a search, [`Store::stats`], …), each of which follows the writer's commits.
    pub fn index_names(&self) -> Vec<String> {
        self.inner.indexes.read().keys().cloned().collect()
    }

    /// The current state of index `name` (its newest version and loaded segments); on a
    /// read-only store, as of its last read (see [`Store::index_names`]).
    pub(crate) fn index(&self, name: &str) -> Option<Arc<IndexState>> {
        self.inner.indexes.read().get(name).cloned()
    }

    pub(crate) fn indexes(&self) -> BTreeMap<String, Arc<IndexState>> {
        self.inner.indexes.read().clone()
    }

    /// A read transaction and the index states that go with it. Taken under the states'
    /// lock, so the transaction never predates the states: a commit that adds records is
    /// installed after it commits (its new versions are simply not used yet), and one that
    /// deletes records commits and installs under the write lock ([`Store::commit_deleting`]).
    /// A read-only store whose writer (another process) committed since its states were
    /// loaded brings them up to the transaction first ([`follow`]).
    pub(crate) fn snapshot(
        &self,
    ) -> Result<(ReadTransaction, BTreeMap<String, Arc<IndexState>>), StorageError> {
        {
            let indexes = self.inner.indexes.read();
            let txn = self.db().begin_read()?;
            match &self.inner.follow {
                Some(follow) if follow.moved(&txn)? => {}
                _ => return Ok((txn, indexes.clone())),
            }
        }
        self.catch_up()
    }

    /// Loads what the writer committed since this read-only store's states were loaded:
    /// new versions of the indexes (only their new segments are read), new indexes, and
    /// drops what is gone.
    fn catch_up(
        &self,
    ) -> Result<(ReadTransaction, BTreeMap<String, Arc<IndexState>>), StorageError> {
        let Some(follow) = &self.inner.follow else {
            return Err(StorageError::corrupt(
                "only a read-only store follows a writer",
            ));
        };
        // One catch-up at a time, each on a transaction begun after the previous one
        // installed: the installed states only ever move forward.
        let _one = follow.lock();
        let txn = self.db().begin_read()?;
        let loaded = follow::load(&txn, &self.indexes())?;
        let mut indexes = self.inner.indexes.write();
        *indexes = loaded.states.clone();
        *self.inner.unavailable.write() = loaded.unavailable;
        follow.saw(loaded.seen);
        Ok((txn, loaded.states))
    }

    pub(crate) fn install(&self, states: Vec<Arc<IndexState>>) {
        let mut indexes = self.inner.indexes.write();
        for state in states {
            indexes.insert(state.name().to_string(), state);
        }
    }

    /// Commits a transaction that deletes records, and applies `update` to the in-memory
    /// states, with no reader able to pair the new file state with the old states between.
    pub(crate) fn commit_deleting(
        &self,
        txn: WriteTransaction,
        update: impl FnOnce(&mut BTreeMap<String, Arc<IndexState>>),
    ) -> Result<(), StorageError> {
        let mut indexes = self.inner.indexes.write();
        txn.commit()?;
        update(&mut indexes);
        Ok(())
    }

    /// The lock that serialises the merges of index `name`.
    pub(crate) fn merge_lock(&self, name: &str) -> Arc<Mutex<()>> {
        self.inner
            .merging
            .lock()
            .entry(name.to_string())
            .or_default()
            .clone()
    }

    pub(crate) fn merge_policy(&self) -> MergePolicy {
        self.inner.merge
    }

    /// Whether searches are recorded in the request log.
    pub fn logs_requests(&self) -> bool {
        self.inner.log_requests
    }

    /// What writes do with chunks longer than the model reads.
    pub(crate) fn truncation(&self) -> Truncation {
        self.inner.truncation
    }

    /// Serialises this handle's writers; [`StorageError::ReadOnly`] on a read-only store,
    /// before any work is done.
    pub(crate) fn lock_writer(&self) -> Result<parking_lot::MutexGuard<'_, ()>, StorageError> {
        if self.is_read_only() {
            return Err(StorageError::ReadOnly);
        }
        Ok(self.inner.writer.lock())
    }
}

/// Makes the writer's file a store of this build's format: a file with no table yet (a
/// new file, or one whose creation was cut short before folio's tables were written) is
/// initialised when `options.create` (else it holds no store: [`OpenError::NotFound`]); an
/// older format is upgraded in place.
fn prepare(db: &Database, path: &Path, options: &StoreBuilder) -> Result<(), OpenError> {
    match read_format(&db.begin_read()?)? {
        Format::Blank if options.create => {
            options.validate()?;
            initialise(db, options)
        }
        Format::Blank => Err(OpenError::NotFound(path.to_path_buf())),
        Format::Version(found) => check_format(db, path, found),
        Format::Foreign => Err(not_a_store(path)),
    }
}

/// What a read-only open can read: this build's format, nothing older (upgrading writes).
fn check_readable(db: &Db, path: &Path) -> Result<(), OpenError> {
    match read_format(&db.begin_read()?)? {
        Format::Blank => Err(OpenError::NotFound(path.to_path_buf())),
        Format::Version(FORMAT_VERSION) => Ok(()),
        Format::Version(found @ OLDEST_FORMAT_VERSION..FORMAT_VERSION) => {
            Err(OpenError::UpgradeNeeded {
                path: path.to_path_buf(),
                found,
                current: FORMAT_VERSION,
            })
        }
        Format::Version(found) => Err(unsupported(path, found)),
        Format::Foreign => Err(not_a_store(path)),
    }
}

/// What a redb file holds.
enum Format {
    /// No table at all: a store whose creation stopped before folio's tables were written.
    Blank,
    /// A folio store of this format version.
    Version(u32),
    /// Tables, but not folio's.
    Foreign,
}

fn read_format(txn: &ReadTransaction) -> Result<Format, StorageError> {
    if let Some(version) = read_meta_u32(txn, "format_version")? {
        return Ok(Format::Version(version));
    }
    let blank = txn.list_tables()?.next().is_none() && txn.list_multimap_tables()?.next().is_none();
    Ok(if blank {
        Format::Blank
    } else {
        Format::Foreign
    })
}

fn not_a_store(path: &Path) -> OpenError {
    OpenError::NotAStore {
        path: path.to_path_buf(),
        reason: "a redb file without folio's meta table".into(),
    }
}

fn unsupported(path: &Path, found: u32) -> OpenError {
    OpenError::UnsupportedFormat {
        path: path.to_path_buf(),
        found,
        oldest: OLDEST_FORMAT_VERSION,
        supported: FORMAT_VERSION,
    }
}

/// Writes the meta table and the empty `default` index (version 0) of a new file.
fn initialise(db: &Database, options: &StoreBuilder) -> Result<(), OpenError> {
    let txn = db.begin_write()?;
    {
        let mut meta = txn.open_table(META)?;
        meta.insert("format_version", FORMAT_VERSION.to_le_bytes().as_slice())?;
        meta.insert("next_rev", 1u64.to_le_bytes().as_slice())?;
        meta.insert("next_index", 1u32.to_le_bytes().as_slice())?;
        let record = IndexRecord {
            id: 0,
            spec: options.spec,
            embedder: identity_of(options.embedder.as_ref()),
            graph: options.graph,
            head: 0,
            next_child: 0,
            next_parent: 0,
            next_segment: 0,
            created_ms: now_ms(),
            vectors: options.vectors,
        };
        commit::create_index_tables(&txn, DEFAULT_INDEX, &record)?;
        versions::create_tables(&txn)?;
    }
    txn.commit()?;
    Ok(())
}

fn read_meta_u32(txn: &ReadTransaction, key: &str) -> Result<Option<u32>, StorageError> {
    let meta = match txn.open_table(META) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let Some(value) = meta.get(key)? else {
        return Ok(None);
    };
    let bytes: [u8; 4] = value
        .value()
        .try_into()
        .map_err(|_| StorageError::corrupt(format!("meta `{key}` is not 4 bytes")))?;
    Ok(Some(u32::from_le_bytes(bytes)))
}

/// Refuses a format this build does not read, and upgrades a file of an older format in
/// place, in one write transaction (`upgrade.rs`: versions before 4 lack what later ones
/// added, see `storage-format.md`, "Format versions").
fn check_format(db: &Database, path: &Path, found: u32) -> Result<(), OpenError> {
    match found {
        FORMAT_VERSION => Ok(()),
        from @ OLDEST_FORMAT_VERSION..FORMAT_VERSION => {
            let upgraded = (|| -> Result<(), StorageError> {
                let txn = db.begin_write()?;
                upgrade::upgrade(&txn, from)?;
                txn.commit()?;
                Ok(())
            })();
            upgraded.map_err(|source| OpenError::Upgrade {
                path: path.to_path_buf(),
                from,
                to: FORMAT_VERSION,
                source,
            })
        }
        found => Err(unsupported(path, found)),
    }
}
