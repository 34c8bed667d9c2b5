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
mod file;
mod gc;
mod identity;
mod indexes;
mod log;
mod options;
mod prepare;
mod progress;
mod read;
mod records;
mod rows;
mod segment;
mod state;
mod tables;
mod unavailable;
mod upgrade;
mod versions;
mod write;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use redb::{
    Database, ReadTransaction, ReadableDatabase, ReadableTable, StorageBackend, WriteTransaction,
};

pub use check::IntegrityReport;
pub use compact::Compaction;
pub(crate) use docs::{chunk_id, parent_id};
pub use docs::{ChunkInfo, PlannedChunk};
pub use error::{
    CompactFileError, DocumentProblem, IndexError, NameKind, NameRule, OpenError, Piece, ReadError,
    StorageError, WriteError,
};
pub use file::{FileCompaction, IndexStats, StoreStats};
pub use gc::GcReport;
pub use identity::EmbedderIdentity;
pub use indexes::{IndexConfig, IndexEmbedder, IndexInfo};
pub use log::{Feedback, LogEntry, LoggedQuery, LoggedRequest, Rating};
pub use options::{MergePolicy, StoreBuilder, DEFAULT_MAX_DEAD_FRACTION, DEFAULT_MAX_SEGMENTS};
pub use progress::{NoProgress, Progress};
pub use read::VersionVectors;
pub(crate) use read::{Reader, StoredChild};
pub use records::{GraphParams, DEFAULT_MIN_GRAPH_SIZE};
pub(crate) use rows::slice_text;
pub use state::Access;
pub(crate) use state::IndexState;
#[cfg(feature = "eval")]
pub(crate) use state::VersionView;
pub use tables::{FORMAT_VERSION, OLDEST_FORMAT_VERSION};
pub use unavailable::UnavailableIndex;

pub(crate) use records::now_ms;
pub use versions::{route_bucket, AliasInfo, Rollback, Route, VersionInfo};
pub use write::{Batch, CommitReceipt};

use crate::embed::{Embedder, Truncation};
use identity::identity_of;
use records::{decode, IndexRecord};
use tables::*;

/// redb's page cache. folio keeps vectors and graphs in its own memory once loaded, so
/// redb's 1 GiB default only doubled the resident size after a reopen (measured: +486 MiB
/// for 148 MiB of data, +187 MiB with 16 MiB of cache).
const REDB_CACHE_BYTES: usize = 64 << 20;

/// The index every store starts with.
pub const DEFAULT_INDEX: &str = "default";

/// A handle on an open store. Cheap to clone; share it across threads.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    db: Database,
    path: PathBuf,
    embedders: RwLock<HashMap<String, Arc<dyn Embedder>>>,
    /// Readers take this lock only to pair a read transaction with the index states (see
    /// [`Store::snapshot`]); writers that delete records commit while holding it for writing.
    indexes: RwLock<BTreeMap<String, Arc<IndexState>>>,
    /// Indexes that failed to load: the store still opens, to drop them or use the others.
    unavailable: RwLock<BTreeMap<String, UnavailableIndex>>,
    /// Serialises writers so the in-memory state is swapped in commit order.
    writer: Mutex<()>,
    merge: MergePolicy,
    log_requests: bool,
    truncation: Truncation,
    /// Request-log commits made without an fsync since the last durable one.
    log_unsynced: AtomicU32,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Makes the last request-log entries durable; a failure here cannot be reported and
        // loses only those entries (see storage-format.md, "Request log").
        if *self.log_unsynced.get_mut() > 0 {
            if let Ok(txn) = self.db.begin_write() {
                let _ = txn.commit();
            }
        }
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

    /// Opens (or, with `options.create`, creates) the store at `path`.
    fn open_with(path: &Path, options: StoreBuilder) -> Result<Store, OpenError> {
        let path = path.to_path_buf();
        // A zero-byte file (from `touch` or `mktemp`) holds nothing: it becomes a new store.
        let exists = std::fs::metadata(&path).is_ok_and(|m| m.len() > 0);
        if !exists && !options.create {
            return Err(OpenError::NotFound(path));
        }
        if !exists {
            options.validate()?;
            if let Some(folder) = path.parent().filter(|f| !f.as_os_str().is_empty()) {
                if !folder.is_dir() {
                    return Err(OpenError::MissingFolder {
                        folder: folder.to_path_buf(),
                        path,
                    });
                }
            }
        }
        // A file damaged outside redb can make a trusting open panic; the integrity check
        // (every page checksum, about one sequential read of the file) reports it instead.
        let db = if exists {
            Database::builder()
                .set_check_integrity_on_open(true)
                .set_cache_size(REDB_CACHE_BYTES)
                .open(&path)
        } else {
            Database::builder()
                .set_cache_size(REDB_CACHE_BYTES)
                .create(&path)
        };
        let db = db.map_err(|e| open_error(&path, e))?;
        Store::from_db(db, path, !exists, options)
    }

    fn open_with_backend(
        path: &Path,
        backend: impl StorageBackend,
        options: StoreBuilder,
    ) -> Result<Store, OpenError> {
        let path = path.to_path_buf();
        let fresh = backend.len().map_err(|e| open_error(&path, e.into()))? == 0;
        if fresh && !options.create {
            return Err(OpenError::NotFound(path));
        }
        if fresh {
            options.validate()?;
        }
        let db = Database::builder()
            .set_check_integrity_on_open(!fresh)
            .create_with_backend(backend)
            .map_err(|e| open_error(&path, e))?;
        Store::from_db(db, path, fresh, options)
    }

    fn from_db(
        db: Database,
        path: PathBuf,
        fresh: bool,
        options: StoreBuilder,
    ) -> Result<Store, OpenError> {
        if fresh {
            initialise(&db, &options)?;
        } else {
            check_format(&db, &path)?;
        }
        let (indexes, unavailable) = load_indexes(&db)?;
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
                indexes: RwLock::new(indexes),
                unavailable: RwLock::new(unavailable),
                writer: Mutex::new(()),
                merge: options.merge,
                log_requests: options.log_requests,
                truncation: options.truncation,
                log_unsynced: AtomicU32::new(0),
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

    pub(crate) fn db(&self) -> &Database {
        &self.inner.db
    }

    /// The names of the indexes, sorted.
    pub fn index_names(&self) -> Vec<String> {
        self.inner.indexes.read().keys().cloned().collect()
    }

    /// The current state of index `name` (its newest version and loaded segments).
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
    pub(crate) fn snapshot(
        &self,
    ) -> Result<(ReadTransaction, BTreeMap<String, Arc<IndexState>>), StorageError> {
        let indexes = self.inner.indexes.read();
        let txn = self.db().begin_read()?;
        Ok((txn, indexes.clone()))
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

    pub(crate) fn lock_writer(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.inner.writer.lock()
    }
}
fn open_error(path: &Path, e: redb::DatabaseError) -> OpenError {
    match e {
        redb::DatabaseError::DatabaseAlreadyOpen => OpenError::Locked(path.to_path_buf()),
        redb::DatabaseError::UpgradeRequired(v) => OpenError::NotAStore {
            path: path.to_path_buf(),
            reason: format!("redb file format {v} needs an upgrade"),
        },
        other => OpenError::NotAStore {
            path: path.to_path_buf(),
            reason: other.to_string(),
        },
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

/// Refuses a file that is not a folio store or has a format this build does not read, and
/// upgrades a file of an older format in place, in one write transaction (`upgrade.rs`:
/// version 1 lacks the tables version 2 added; versions 1 and 2 store records with
/// fixed-width integers).
fn check_format(db: &Database, path: &Path) -> Result<(), OpenError> {
    let found = read_meta_u32(&db.begin_read()?, "format_version")?;
    match found {
        None => Err(OpenError::NotAStore {
            path: path.to_path_buf(),
            reason: "a redb file without folio's meta table".into(),
        }),
        Some(FORMAT_VERSION) => Ok(()),
        Some(from @ OLDEST_FORMAT_VERSION..FORMAT_VERSION) => {
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
        Some(found) => Err(OpenError::UnsupportedFormat {
            path: path.to_path_buf(),
            found,
            oldest: OLDEST_FORMAT_VERSION,
            supported: FORMAT_VERSION,
        }),
    }
}

/// The indexes that loaded, and those that did not.
type LoadedIndexes = (
    BTreeMap<String, Arc<IndexState>>,
    BTreeMap<String, UnavailableIndex>,
);

/// The indexes that load, and those that do not (a damaged segment, or graph parameters an
/// older folio accepted and no decoder reads): a store with one bad index still opens.
fn load_indexes(db: &Database) -> Result<LoadedIndexes, OpenError> {
    let txn = db.begin_read()?;
    let mut out = BTreeMap::new();
    let mut unavailable = BTreeMap::new();
    let table = txn.open_table(INDEXES)?;
    for entry in table.iter()? {
        let (name, value) = entry?;
        let name = name.value().to_string();
        let record: IndexRecord = decode(value.value(), "index record")?;
        let id = record.id;
        // Graph parameters an older folio accepted would fail at the next graph build.
        let loaded = match record.graph.validate() {
            Ok(()) => IndexState::load(&txn, &name, record).map_err(|e| e.to_string()),
            Err(e) => Err(format!("its graph parameter {e}")),
        };
        match loaded {
            Ok(state) => {
                out.insert(name, Arc::new(state));
            }
            Err(reason) => {
                unavailable.insert(name.clone(), UnavailableIndex { name, id, reason });
            }
        }
    }
    Ok((out, unavailable))
}
