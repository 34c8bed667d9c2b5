//! The one-file store: binds chunking, embedding and the vector index to a redb file.
//!
//! Layout of the file: see `storage-format.md`. In memory a [`Store`] keeps, per index,
//! the loaded segments (vectors and graphs) of the versions in use and swaps a new
//! [`IndexState`] in atomically after each commit, so readers on other threads always see
//! a whole version.

mod check;
mod compact;
mod error;
mod gc;
mod indexes;
mod log;
mod read;
mod records;
mod segment;
mod state;
mod tables;
mod upgrade;
mod versions;
mod write;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use redb::{
    Database, ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata,
    StorageBackend, WriteTransaction,
};

pub use check::IntegrityReport;
pub use compact::{Compaction, MergePolicy};
pub use error::{CheckError, CompactFileError, OpenError, SearchError, StorageError, WriteError};
pub use gc::GcReport;
pub use indexes::{IndexConfig, IndexEmbedder, IndexInfo};
pub use log::{Feedback, LogEntry, LoggedQuery, LoggedRequest, Rating};
pub use read::{ChunkRanges, DocView, Reader, StoredChild, StoredParent};
pub use records::{EmbedderIdentity, GraphParams};
pub use segment::Segment;
pub use state::{Access, ChildSearch, IndexState, VersionView};
pub use versions::{route_bucket, AliasInfo, Rollback, Route, VersionInfo};
pub use write::{Batch, CommitReceipt, NoProgress, Progress};

use crate::chunk::ChunkSpec;
use crate::embed::{default_embedder, Embedder};
use records::{decode, ChildRecord, DocEntry, IndexRecord, ParentRecord, RevisionRecord};
use tables::*;

/// The version of the file layout this build reads and writes. Independent of the crate
/// version; bumped whenever a table, key or value changes meaning.
pub const FORMAT_VERSION: u32 = 3;

/// The oldest layout this build opens; older supported files are upgraded in place on open
/// (see `storage-format.md`, "Format versions").
pub const OLDEST_FORMAT_VERSION: u32 = 1;

/// redb's page cache. folio keeps vectors and graphs in its own memory once loaded, so
/// redb's 1 GiB default only doubled the resident size after a reopen (measured: +486 MiB
/// for 148 MiB of data, +187 MiB with 16 MiB of cache).
const REDB_CACHE_BYTES: usize = 64 << 20;

/// The index every store starts with.
pub const DEFAULT_INDEX: &str = "default";

/// How to open or create a store.
#[derive(Clone)]
pub struct StoreOptions {
    /// Used for text queries and ingest of indexes built with an embedder of the same name.
    pub embedder: Arc<dyn Embedder>,
    /// The chunking of the `default` index, when the store is created.
    pub spec: ChunkSpec,
    /// The graph parameters of the `default` index, when the store is created.
    pub graph: GraphParams,
    /// Create the file when it does not exist.
    pub create: bool,
    /// When segments are merged after a commit (see [`MergePolicy`]).
    pub merge: MergePolicy,
    /// Record every search in the file's request log (see [`Store::log_entries`]).
    pub log_requests: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            embedder: Arc::new(default_embedder()),
            spec: ChunkSpec::default(),
            graph: GraphParams::default(),
            create: false,
            merge: MergePolicy::default(),
            log_requests: false,
        }
    }
}

impl StoreOptions {
    /// Default options that create the file when it is missing.
    pub fn create() -> Self {
        StoreOptions {
            create: true,
            ..Self::default()
        }
    }
}

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
    /// Serialises writers so the in-memory state is swapped in commit order.
    writer: Mutex<()>,
    merge: MergePolicy,
    log_requests: bool,
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

/// A summary of a store, as `folio stats` prints it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StoreStats {
    pub path: PathBuf,
    pub format_version: u32,
    pub file_bytes: u64,
    pub documents: u64,
    pub indexes: Vec<IndexStats>,
}

/// What [`Store::compact_file`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FileCompaction {
    /// Whether redb moved or released any page (`false`: nothing to give back).
    pub compacted: bool,
    /// The file's size before and after (0 when the store is not a file, see
    /// [`Store::open_with_backend`]).
    pub bytes_before: u64,
    pub bytes_after: u64,
}

/// One index in [`StoreStats`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct IndexStats {
    pub name: String,
    pub version: u64,
    pub embedder: EmbedderIdentity,
    pub spec: ChunkSpec,
    pub live_children: u64,
    pub segments: usize,
    pub graph_segments: usize,
    pub principals: Vec<String>,
}

/// One child chunk as stored, for applications and tools.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ChunkInfo {
    /// The child number in the index's newest version (a compaction gives live chunks new ones).
    pub number: u32,
    pub chunk_id: String,
    pub parent_id: String,
    pub doc_id: String,
    pub section_path: Vec<String>,
    pub start: usize,
    pub end: usize,
    pub text: String,
    /// What the embedder sees: the heading path, then the text.
    pub embed_text: String,
    pub oversized: bool,
}

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// `doc#c3`: the id of a document's fourth child chunk.
pub fn chunk_id(doc_id: &str, ordinal: u32) -> String {
    format!("{doc_id}#c{ordinal}")
}

/// `doc#p0`: the id of a document's first parent chunk.
pub fn parent_id(doc_id: &str, ordinal: u32) -> String {
    format!("{doc_id}#p{ordinal}")
}

impl Store {
    /// Opens the store at `path` with the default (built-in) embedder; the file must exist.
    pub fn open(path: impl AsRef<Path>) -> Result<Store, OpenError> {
        Store::open_with(path, StoreOptions::default())
    }

    /// Opens the store at `path`, creating it with the default settings when missing.
    pub fn open_or_create(path: impl AsRef<Path>) -> Result<Store, OpenError> {
        Store::open_with(path, StoreOptions::create())
    }

    /// Opens (or, with `options.create`, creates) the store at `path`.
    pub fn open_with(path: impl AsRef<Path>, options: StoreOptions) -> Result<Store, OpenError> {
        let path = path.as_ref().to_path_buf();
        let exists = path.exists();
        if !exists && !options.create {
            return Err(OpenError::NotFound(path));
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

    /// Opens (or creates, when its storage is empty) a store on a redb storage backend of
    /// your own: a wrapper that injects faults or counts bytes, say. `path` only labels the
    /// store (errors, [`Store::path`], the file size in [`Store::stats`]).
    pub fn open_with_backend(
        path: impl AsRef<Path>,
        backend: impl StorageBackend,
        options: StoreOptions,
    ) -> Result<Store, OpenError> {
        let path = path.as_ref().to_path_buf();
        let fresh = backend.len().map_err(|e| open_error(&path, e.into()))? == 0;
        if fresh && !options.create {
            return Err(OpenError::NotFound(path));
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
        options: StoreOptions,
    ) -> Result<Store, OpenError> {
        if fresh {
            initialise(&db, &options)?;
        } else {
            check_format(&db, &path)?;
        }
        let indexes = load_indexes(&db)?;
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
                writer: Mutex::new(()),
                merge: options.merge,
                log_requests: options.log_requests,
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

    pub(crate) fn embedder(&self, name: &str) -> Option<Arc<dyn Embedder>> {
        self.inner.embedders.read().get(name).cloned()
    }

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
    pub fn index(&self, name: &str) -> Option<Arc<IndexState>> {
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

    pub(crate) fn lock_writer(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.inner.writer.lock()
    }

    /// Counts and settings, for `folio stats`.
    pub fn stats(&self) -> Result<StoreStats, SearchError> {
        let txn = self.db().begin_read()?;
        let documents = txn.open_table(DOCS)?.len()?;
        let mut indexes = Vec::new();
        for (name, state) in self.indexes() {
            let view = state.head();
            indexes.push(IndexStats {
                name,
                version: view.version(),
                embedder: state.record().embedder.clone(),
                spec: state.record().spec,
                live_children: view.live().len(),
                segments: view.segments().len(),
                graph_segments: view.segments().iter().filter(|s| s.has_graph()).count(),
                principals: state::principals(&txn, state.id())?,
            });
        }
        let file_bytes = file_len(self.path());
        Ok(StoreStats {
            path: self.path().to_path_buf(),
            format_version: FORMAT_VERSION,
            file_bytes,
            documents,
            indexes,
        })
    }

    /// Gives the file back its free space: redb's [`Database::compact`], which moves the
    /// pages in use towards the start of the file and truncates the free tail. redb grows
    /// the file ahead of its allocations and keeps pages freed by deletions (`gc`, merges)
    /// for reuse, so after a large ingest the file can be a third larger than the data it
    /// holds (measured: 272 MiB for 206 MiB of pages in use, 200k x 128 vectors in one
    /// batch). Every stored byte reads the same afterwards, so searches answer identically.
    ///
    /// It needs the store to itself: it takes `&mut self` and fails with
    /// [`CompactFileError::InUse`] while other clones of this handle exist (drop them,
    /// or let their threads finish). It is crash safe (a sequence of ordinary durable redb
    /// commits that move pages but change no table; see `storage-format.md`), and it
    /// makes pending request-log entries durable. After a storage error the file still
    /// holds the same store, but redb may refuse further work on this handle: reopen it.
    pub fn compact_file(&mut self) -> Result<FileCompaction, CompactFileError> {
        let bytes_before = file_len(self.path());
        let others = Arc::strong_count(&self.inner).saturating_sub(1);
        let inner = Arc::get_mut(&mut self.inner).ok_or(CompactFileError::InUse { others })?;
        // Only this handle is left, so no writer holds `inner.writer` and no reader holds
        // a transaction (a `Reader` borrows the store).
        let compacted = inner.db.compact()?;
        // Its commits are durable, which makes the request log's unsynced ones durable too.
        *inner.log_unsynced.get_mut() = 0;
        Ok(FileCompaction {
            compacted,
            bytes_before,
            bytes_after: file_len(self.path()),
        })
    }

    /// The ids of the stored documents, sorted.
    pub fn document_ids(&self) -> Result<Vec<String>, SearchError> {
        let txn = self.db().begin_read()?;
        let table = txn.open_table(DOCS)?;
        let mut ids = Vec::new();
        for entry in table.iter()? {
            ids.push(entry?.0.value().to_string());
        }
        Ok(ids)
    }

    /// The stored document `doc_id` (current revision), or `None`.
    pub fn document(&self, doc_id: &str) -> Result<Option<crate::document::Document>, SearchError> {
        let txn = self.db().begin_read()?;
        let Some(entry) = read_doc_entry(&txn, doc_id)? else {
            return Ok(None);
        };
        Ok(Some(read_document(&txn, entry)?))
    }

    /// The child chunks of `doc_id` in index `index` (newest version), with their
    /// `embed_text`: what an application embeds itself to bring its own vectors.
    pub fn chunks(&self, index: &str, doc_id: &str) -> Result<Vec<ChunkInfo>, SearchError> {
        let state = self
            .index(index)
            .ok_or_else(|| SearchError::UnknownIndex(index.into()))?;
        let txn = self.db().begin_read()?;
        let Some(entry) = read_doc_entry(&txn, doc_id)? else {
            return Ok(Vec::new());
        };
        let Some(chunks) = state::read_doc_chunks(&txn, state.id(), entry.rev)? else {
            return Ok(Vec::new());
        };
        let text = read_text(&txn, entry.rev)?;
        let children = txn.open_table(CHILDREN)?;
        let mut out = Vec::with_capacity(chunks.children as usize);
        for number in chunks.child_range() {
            let child = read_child_in(&children, state.id(), number)?;
            out.push(chunk_info(&state, number, doc_id, &child, &text)?);
        }
        Ok(out)
    }
}

impl Store {
    /// How index `index` would chunk `doc`: its child chunks with their `embed_text`, in the
    /// order [`Batch::upsert_with_vectors`] expects vectors. Nothing is written.
    pub fn plan(
        &self,
        index: &str,
        doc: &crate::document::Document,
    ) -> Result<Vec<PlannedChunk>, SearchError> {
        let state = self
            .index(index)
            .ok_or_else(|| SearchError::UnknownIndex(index.into()))?;
        let spec = state.record().spec;
        let chunked = crate::chunk::chunk_document(&doc.text, doc.format, &spec);
        Ok(chunked
            .children
            .iter()
            .enumerate()
            .map(|(ordinal, c)| PlannedChunk {
                chunk_id: chunk_id(&doc.doc_id, ordinal as u32),
                start: c.span.start,
                end: c.span.end,
                embed_text: crate::chunk::embed_text(
                    &c.section_path,
                    &doc.text[c.span.start..c.span.end],
                    spec.heading_depth,
                ),
            })
            .collect())
    }
}

/// A child chunk an index would create, before anything is written.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PlannedChunk {
    pub chunk_id: String,
    pub start: usize,
    pub end: usize,
    pub embed_text: String,
}

fn chunk_info(
    state: &IndexState,
    number: u32,
    doc_id: &str,
    child: &ChildRecord,
    text: &str,
) -> Result<ChunkInfo, SearchError> {
    let body = slice_text(text, child.start, child.end)?.to_string();
    let embed_text = crate::chunk::embed_text(
        &child.section_path,
        &body,
        state.record().spec.heading_depth,
    );
    Ok(ChunkInfo {
        number,
        chunk_id: chunk_id(doc_id, child.ordinal),
        parent_id: parent_id(doc_id, child.parent_ordinal),
        doc_id: doc_id.to_string(),
        section_path: child.section_path.clone(),
        start: child.start as usize,
        end: child.end as usize,
        text: body,
        embed_text,
        oversized: child.oversized,
    })
}

/// A stored span of a stored text; a span that does not fit is corruption, not a panic.
pub fn slice_text(text: &str, start: u64, end: u64) -> Result<&str, StorageError> {
    usize::try_from(start)
        .ok()
        .zip(usize::try_from(end).ok())
        .and_then(|(s, e)| text.get(s..e))
        .ok_or_else(|| StorageError::corrupt(format!("span {start}..{end} outside its text")))
}

/// Scales `v` to unit length; `false` (and `v` untouched) when it has no direction.
pub fn normalise(v: &mut [f32]) -> bool {
    let norm = crate::index::distance::dot(v, v);
    if !(norm.is_finite() && norm > 0.0) {
        return false;
    }
    crate::index::distance::normalize(v);
    true
}

pub(crate) fn identity_of(embedder: &dyn Embedder) -> EmbedderIdentity {
    EmbedderIdentity {
        name: embedder.name().to_string(),
        fingerprint: embedder.fingerprint(),
        dimension: embedder.dimension() as u32,
        metric: embedder.metric(),
    }
}

/// The size of the file at `path`, or 0 (the store may live on another backend).
fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
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
fn initialise(db: &Database, options: &StoreOptions) -> Result<(), OpenError> {
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
        write::create_index_tables(&txn, DEFAULT_INDEX, &record)?;
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

fn load_indexes(db: &Database) -> Result<BTreeMap<String, Arc<IndexState>>, OpenError> {
    let txn = db.begin_read()?;
    let mut out = BTreeMap::new();
    let table = txn.open_table(INDEXES)?;
    for entry in table.iter()? {
        let (name, value) = entry?;
        let record: IndexRecord = decode(value.value(), "index record")?;
        let state = IndexState::load(&txn, name.value(), record)?;
        out.insert(name.value().to_string(), Arc::new(state));
    }
    Ok(out)
}

pub(crate) fn read_doc_entry(
    txn: &ReadTransaction,
    doc_id: &str,
) -> Result<Option<DocEntry>, StorageError> {
    let table = txn.open_table(DOCS)?;
    let Some(value) = table.get(doc_id)? else {
        return Ok(None);
    };
    Ok(Some(decode(value.value(), "doc entry")?))
}

/// The document `entry` is the current state of: its revision, text and ACL.
pub(crate) fn read_document(
    txn: &ReadTransaction,
    entry: DocEntry,
) -> Result<crate::document::Document, StorageError> {
    let rev = read_revision(txn, entry.rev)?;
    let text = read_text(txn, entry.rev)?;
    Ok(crate::document::Document {
        doc_id: rev.doc_id,
        title: rev.title,
        source_uri: rev.source_uri,
        format: rev.format,
        text,
        acl: entry.acl,
        published_at: rev.published_at,
        updated_at: rev.updated_at,
        metadata: rev.metadata.into_iter().collect(),
    })
}

pub(crate) fn read_revision(
    txn: &ReadTransaction,
    rev: u64,
) -> Result<RevisionRecord, StorageError> {
    let table = txn.open_table(REVISIONS)?;
    let value = table
        .get(rev)?
        .ok_or_else(|| StorageError::corrupt(format!("revision {rev} missing")))?;
    decode(value.value(), "revision")
}

pub(crate) fn read_text(txn: &ReadTransaction, rev: u64) -> Result<String, StorageError> {
    let table = txn.open_table(REV_TEXT)?;
    let value = table
        .get(rev)?
        .ok_or_else(|| StorageError::corrupt(format!("text of revision {rev} missing")))?;
    String::from_utf8(value.value().to_vec())
        .map_err(|_| StorageError::corrupt(format!("text of revision {rev} is not UTF-8")))
}

pub(crate) fn read_child_in(
    table: &impl ReadableTable<(u32, u32), &'static [u8]>,
    index: u32,
    number: u32,
) -> Result<ChildRecord, StorageError> {
    let value = table
        .get((index, number))?
        .ok_or_else(|| StorageError::corrupt(format!("child {number} of index {index} missing")))?;
    decode(value.value(), "child record")
}

pub(crate) fn read_parent_in(
    table: &impl ReadableTable<(u32, u32), &'static [u8]>,
    index: u32,
    number: u32,
) -> Result<ParentRecord, StorageError> {
    let value = table.get((index, number))?.ok_or_else(|| {
        StorageError::corrupt(format!("parent {number} of index {index} missing"))
    })?;
    decode(value.value(), "parent record")
}
