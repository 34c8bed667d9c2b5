//! The [`Store`] handle: every operation on a store, each delegating to the layer that does
//! it (`storage::read`, `storage::write`, `storage::log`, `query`). Types an application
//! meets through it are re-exported here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::embed::EmbedderIdentity;
pub use crate::index::ChildSearch;
pub use crate::ingest::{DocumentProblem, Piece};
pub use crate::input::{FileRoot, Outside};
pub use crate::progress::{NoProgress, Progress};
pub use crate::review::{
    Annotation, Feedback, GoldEvidence, LogEntry, LoggedQuery, LoggedRequest, Outcome, Rating,
    Verdict,
};
pub use crate::storage::error::{
    BackupError, CompactFileError, IndexError, NameKind, NameRule, OpenError, ReadError,
    RecoverError, StorageError, WriteError,
};
pub use crate::storage::file::backup::BackupReport;
pub use crate::storage::file::open::StorageBackend;
pub use crate::storage::file::records::{
    GraphParams, Retention, VectorStorage, DEFAULT_MIN_GRAPH_SIZE, DEFAULT_RESCORE,
};
pub use crate::storage::file::recover::RecoveryReport;
pub use crate::storage::file::tables::{DEFAULT_INDEX, FORMAT_VERSION, OLDEST_FORMAT_VERSION};
pub use crate::storage::log::{LogSize, Trim, TrimReport, TRIM_BATCH};
pub use crate::storage::options::{
    MergePolicy, StoreBuilder, DEFAULT_MAX_DEAD_FRACTION, DEFAULT_MAX_SEGMENTS, DEFAULT_WAIT,
};
pub use crate::storage::read::check::{IntegrityReport, RedbCheck};
pub use crate::storage::read::docs::{chunk_id, parent_id, ChunkInfo};
pub use crate::storage::read::export::{Audience, Export, ExportedChild};
pub use crate::storage::read::outbox::{Change, OutboxEntry, Published};
pub use crate::storage::read::snapshot::{
    ChunkRanges, DocView, Snapshot, StoredChild, StoredParent, VersionVectors,
};
pub use crate::storage::read::state::{Access, IndexState, VersionView};
pub use crate::storage::read::stats::{FileCompaction, IndexStats, StoreStats};
pub use crate::storage::read::targets::{route_bucket, AliasInfo, Rollback, Route, VersionInfo};
pub use crate::storage::read::unavailable::UnavailableIndex;
pub use crate::storage::write::batch::{Batch, CommitReceipt, DryRun};
pub use crate::storage::write::compact::Compaction;
pub use crate::storage::write::gc::GcReport;
pub use crate::storage::write::indexes::{IndexConfig, IndexEmbedder, IndexInfo};
pub use crate::storage::write::plan::PlannedChunk;

use roaring::RoaringBitmap;

use crate::document::Document;
use crate::embed::identity_of;
use crate::embed::{Embedder, TruncationReport};
use crate::query::{self, ChildSource, QueryError, SearchRequest, SearchResponse};
use crate::review::{GroupBy, LogReport, Selection};
use crate::storage::file::format::{self, FirstIndex};
use crate::storage::file::open::{self, Db};
use crate::storage::file::recover;
// The reads below run under `contain`: redb can panic on a damaged page, and a damaged file
// gives an error (`StorageError::DamagedPage`), never a panic.
use crate::storage::file::sealed::contain;
use crate::storage::log::{Logbook, RequestLog};
use crate::storage::read::catalog::{Catalog, Sharing};
use crate::storage::write::writer::{WriteLocks, Writer};

/// Documents a recovery writes per commit.
const RECOVERY_BATCH: usize = 256;

/// What a recovery that cannot copy the store whole loses besides damaged rows.
const HISTORY: &str = "history (versions, tags, aliases, serving pins, the request log)";

/// A handle on an open store. Cheap to clone; share it across threads.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    catalog: Catalog,
    writes: WriteLocks,
    /// Request-log entries not written yet (see `storage/log`); shared with the thread
    /// that writes them.
    log: Arc<RequestLog>,
    log_requests: bool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.log.stop_flusher();
        // Writes the last request-log entries; a failure here cannot be reported and
        // loses only those entries (see storage-format.md, "Request log").
        let _ = self.log.flush(self.catalog.db());
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
        Store::open_with_backend(Path::new(":memory:"), open::in_memory_backend(), options)
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
    /// Any number of processes may have a store open, for writing or with
    /// [`StoreBuilder::read_only`]: a handle takes the file's writer lock only for a
    /// commit, which waits up to [`StoreBuilder::wait`] for another process's commit
    /// ([`StorageError::Busy`] after that). A read-only handle that logs requests opens the
    /// file writable, to write its log entries only. Creation is crash safe: a file whose
    /// creation was cut short holds no store, and the next open with `create` makes one in
    /// it.
    fn open_with(path: &Path, options: StoreBuilder) -> Result<Store, OpenError> {
        let path = path.to_path_buf();
        open::waiting(&path, options.wait, || {
            let db = match (options.read_only, options.log_requests) {
                (true, false) if options.recover_in_place => Db::Reader(open::reader_at(&path)?),
                (true, false) => open::untouched_reader_at(&path)?,
                // The log's writes are all this handle writes: no integrity check, which
                // would read the whole file under the writer lock at every open.
                (true, true) => Db::Writer {
                    db: open::writer_at(&path, false, false, || Ok(())).map_err(|e| match e {
                        OpenError::Io { source, .. } if open::cannot_write(&source) => {
                            OpenError::ReadOnlyLog { path: path.clone() }
                        }
                        e => e,
                    })?,
                    wait: options.wait,
                },
                (false, _) => {
                    let validate = || Ok(options.validate()?);
                    Db::Writer {
                        db: open::writer_at(&path, options.create, true, validate)?,
                        wait: options.wait,
                    }
                }
            };
            let sharing = Sharing::File {
                map: options.shares_segments(),
            };
            Store::from_db(db, path.clone(), options.clone(), sharing)
        })
    }
    /// A backend that supports redb's range locks is shared with other processes as a
    /// file is; one that does not is this handle's alone. The wait setting applies to
    /// commits only: the backend is opened once.
    fn open_with_backend(
        path: &Path,
        backend: impl StorageBackend,
        options: StoreBuilder,
    ) -> Result<Store, OpenError> {
        let path = path.to_path_buf();
        let db = if options.read_only && !options.log_requests {
            Db::Reader(open::reader(&path, backend)?)
        } else {
            let create = options.create && !options.read_only;
            let validate = || Ok(options.validate()?);
            Db::Writer {
                db: open::writer(&path, backend, create, !options.read_only, validate)?,
                wait: options.wait,
            }
        };
        // A backend's path need not be a folder files can be made beside.
        Store::from_db(db, path, options, Sharing::Backend)
    }
    fn from_db(
        db: Db,
        path: PathBuf,
        options: StoreBuilder,
        sharing: Sharing,
    ) -> Result<Store, OpenError> {
        let named = path.clone();
        Store::prepared(db, path, options, sharing).map_err(|e| e.damage_at(&named))
    }
    fn prepared(
        db: Db,
        path: PathBuf,
        options: StoreBuilder,
        sharing: Sharing,
    ) -> Result<Store, OpenError> {
        match &db {
            Db::Writer { db, .. } if !options.read_only => {
                format::prepare(db, &path, options.create, || {
                    options.validate()?;
                    Ok(FirstIndex {
                        spec: options.spec,
                        embedder: identity_of(options.embedder.as_ref()),
                        graph: options.graph,
                        vectors: options.vectors,
                        lexical: options.lexical,
                    })
                })?
            }
            _ => format::check_readable(&db, &path)?,
        }
        let catalog = Catalog::load(
            db,
            path,
            options.embedder.clone(),
            options.read_only,
            sharing,
        )?;
        let store = Store {
            inner: Arc::new(Inner {
                catalog,
                writes: WriteLocks::new(options.merge, options.truncation),
                log: Arc::default(),
                log_requests: options.log_requests,
            }),
        };
        if options.log_requests {
            // The thread holds the file weakly: it ends once the store is dropped, whose
            // own last write (on the dropping thread) then finds nothing left.
            let db = store.inner.catalog.db_weak();
            store.inner.log.start_flusher(db);
        }
        Ok(store)
    }
    /// Makes `embedder` available to the indexes built with its name.
    pub fn register_embedder(&self, embedder: Arc<dyn Embedder>) -> Result<(), OpenError> {
        self.inner.catalog.register_embedder(embedder)
    }
    /// The names of the registered embedders, sorted: what text queries and ingest can use.
    pub fn embedder_names(&self) -> Vec<String> {
        self.inner.catalog.embedder_names()
    }
    /// The registered embedder named `name` ([`EmbedderIdentity::name`] of an index's
    /// embedder), if any.
    pub fn registered_embedder(&self, name: &str) -> Option<Arc<dyn Embedder>> {
        self.inner.catalog.embedder(name)
    }
    /// The path the store was opened at.
    pub fn path(&self) -> &Path {
        self.inner.catalog.path()
    }
    /// Whether the store was opened for reading only ([`StoreBuilder::read_only`]).
    pub fn is_read_only(&self) -> bool {
        self.inner.catalog.is_read_only()
    }
    /// Whether the store reads a recovered copy of its file, which needed redb's recovery
    /// and was left as it was ([`StoreBuilder::recover_in_place`]).
    pub fn reads_recovered_copy(&self) -> bool {
        self.inner.catalog.db().reads_recovered_copy()
    }
    /// The names of the indexes, sorted. A read-only store reports them as of its last
    /// read (a search, [`Store::stats`], …), each of which follows the writer's commits.
    pub fn index_names(&self) -> Vec<String> {
        self.inner.catalog.index_names()
    }
    /// Whether searches are recorded in the request log.
    pub fn logs_requests(&self) -> bool {
        self.inner.log_requests
    }
    /// Searches: children by vector, by BM25 or both fused ([`SearchRequest::mode`]),
    /// grouped into reading units, best first.
    pub fn search(&self, request: &SearchRequest) -> Result<SearchResponse, QueryError> {
        let response = contain(|| query::search(&self.snapshot()?, self, request))?;
        self.logged(request, None, response)
    }
    /// Searches with the children ranked by `source` (a copy of the version elsewhere):
    /// folio resolves the target and embeds the query, asks `source` for the best visible
    /// children, drops any the caller may not see now or that the version does not hold,
    /// then groups, expands, budgets and removes near-duplicates as [`Store::search`]
    /// does, asking again for more when the units fall short. The response names the
    /// version that answered; the request log records the target as `NAME:TARGET`. Only
    /// the dense mode: another is `InvalidParameter` (`mode`).
    pub fn search_through(
        &self,
        request: &SearchRequest,
        source: &mut dyn ChildSource,
    ) -> Result<SearchResponse, QueryError> {
        let response = contain(|| query::search_through(&self.snapshot()?, self, request, source))?;
        let name = source.name().to_string();
        self.logged(request, Some(&name), response)
    }
    /// Records a search in the request log when the store logs requests.
    fn logged(
        &self,
        request: &SearchRequest,
        source: Option<&str>,
        mut response: SearchResponse,
    ) -> Result<SearchResponse, QueryError> {
        if self.logs_requests() {
            let entry = query::logged(request, source, &response);
            response.request_id = Some(
                self.logbook()
                    .log_request(&entry)
                    .map_err(ReadError::from)?,
            );
        }
        Ok(response)
    }
    /// Gives the file back its free space: redb's compaction, which moves the pages in use
    /// towards the start of the file and truncates the free tail. redb grows the file ahead
    /// of its allocations and keeps pages freed by deletions (`gc`, merges) for reuse, so
    /// after a large ingest the file can be a third larger than the data it holds
    /// (measured: 272 MiB for 206 MiB of pages in use, 200k x 128 vectors in one batch).
    /// Every stored byte reads the same afterwards, so searches answer identically.
    ///
    /// It needs the store to itself: it takes `&mut self` and fails with
    /// [`CompactFileError::InUse`] while other clones of this handle exist (drop them,
    /// or let their threads finish). It is crash safe (a sequence of ordinary durable redb
    /// commits that move pages but change no table; see `storage-format.md`), and it
    /// writes pending request-log entries first. It needs the writer's handle
    /// ([`StorageError::ReadOnly`] otherwise), and redb refuses it while a reader in
    /// another process is in the middle of a read. After a storage error the file still
    /// holds the same store, but redb may refuse further work on this handle: reopen it.
    pub fn compact_file(&mut self) -> Result<crate::store::FileCompaction, CompactFileError> {
        let others = Arc::strong_count(&self.inner).saturating_sub(1);
        let inner = Arc::get_mut(&mut self.inner).ok_or(CompactFileError::InUse { others })?;
        inner.log.flush(inner.catalog.db())?;
        let _quiet = inner.log.quiet();
        // Only this handle is left, so no writer holds the write lock and no reader holds
        // a transaction (a snapshot borrows the store).
        inner.catalog.compact_file()
    }
    /// Copies the store as it is now committed into a new file `dest` (which must not
    /// exist) while writers go on: every table read in one read transaction, written in one
    /// durable commit to a file beside `dest`, then renamed to it, so a copy cut short
    /// leaves nothing under that name. A writing handle saves its pending request-log
    /// entries first. The copy is a store of this format, packed (no free pages), that
    /// answers as the source did at that commit.
    pub fn backup(&self, dest: impl AsRef<std::path::Path>) -> Result<BackupReport, BackupError> {
        if !self.inner.catalog.is_read_only() {
            self.inner.log.flush(self.inner.catalog.db())?;
        }
        self.inner.catalog.backup(dest.as_ref())
    }
    /// Copies what is reachable in the damaged store at `damaged` into a new store at
    /// `dest` (which must not exist), made with `options` (whose embedder must be the one
    /// the default index was built with). When every row of every table verifies (damaged
    /// log entries, tags and aliases aside) and the copy passes the integrity check, the
    /// store is copied whole, history included (versions, tags, aliases, serving pins, the
    /// request log, the file root, the retention policy). Otherwise every index definition
    /// and every document (text, title, source, format, ACL, dates, metadata) found through
    /// redb's trees whose rows verify is written in new commits (the documents re-embedded
    /// by the indexes' embedders; another index is defined again when built with the given
    /// embedder too), and history is lost. The report lists what was carried and what could
    /// not be read (`storage-format.md`, "Recovering a damaged store").
    pub fn recover(
        damaged: impl AsRef<Path>,
        dest: impl AsRef<Path>,
        options: StoreBuilder,
    ) -> Result<RecoveryReport, RecoverError> {
        let dest = dest.as_ref();
        if dest.exists() {
            return Err(RecoverError::Exists(dest.to_path_buf()));
        }
        let damaged = damaged.as_ref();
        let unreadable = |e| RecoverError::Unreadable(Box::new(e));
        let source = recover::open(damaged).map_err(unreadable)?;
        let found = recover::reachable(&source, damaged).map_err(unreadable)?;
        let given = identity_of(options.embedder.as_ref());
        let mut lost = found.lost;
        let mut options = options.create(true).read_only(false).log_requests(false);
        match found.indexes.iter().find(|(name, _)| name == DEFAULT_INDEX) {
            Some((_, record)) if record.embedder != given => {
                return Err(RecoverError::EmbedderMismatch {
                    stored: Box::new(record.embedder.clone()),
                    given: Box::new(given),
                })
            }
            Some((_, record)) => {
                options = options
                    .spec(record.spec)
                    .graph(record.graph)
                    .vectors(record.vectors);
            }
            None => lost.push(format!(
                "index `{DEFAULT_INDEX}`: no definition could be read; made with the options given"
            )),
        }
        match recover::copy_whole(&source, damaged, dest) {
            Ok(spared) => match carried(dest, options.clone(), spared) {
                Ok(report) => return Ok(report),
                Err(why) => lost.push(format!("{HISTORY} not carried: the whole copy {why}")),
            },
            // The open checked the format is this build's, so a table it does not know is a
            // damaged name in redb's list of tables, not a newer format's.
            Err(e)
                if matches!(&e, BackupError::Open(OpenError::Damaged { .. }))
                    || matches!(&e, BackupError::Storage(s) if s.is_damage())
                    || matches!(&e, BackupError::UnknownTable(_)) =>
            {
                lost.push(format!("{HISTORY} not carried: {e}"))
            }
            Err(e) => return Err(RecoverError::Copy(Box::new(e))),
        }
        // A whole copy that could not be removed is never filled on top of.
        if dest.exists() {
            return Err(RecoverError::Exists(dest.to_path_buf()));
        }
        let store = options
            .open(dest)
            .map_err(|e| RecoverError::Create(Box::new(e)))?;
        let mut indexes = vec![DEFAULT_INDEX.to_string()];
        for (name, record) in found.indexes {
            if name == DEFAULT_INDEX {
                continue;
            }
            if record.embedder != given {
                lost.push(format!(
                    "index `{name}`: built with embedder {}, not the one given",
                    record.embedder
                ));
                continue;
            }
            let config = IndexConfig {
                spec: record.spec,
                embedder: IndexEmbedder::Registered(record.embedder.name),
                graph: record.graph,
                vectors: record.vectors,
                lexical: record.lexical,
            };
            store.indexes().create(&name, config)?;
            indexes.push(name);
        }
        let documents = found.documents.len() as u64;
        for part in found.documents.chunks(RECOVERY_BATCH) {
            let mut batch = store.batch();
            for document in part {
                batch.upsert(document.clone());
            }
            batch.commit()?;
        }
        Ok(RecoveryReport {
            path: dest.to_path_buf(),
            indexes,
            documents,
            lost,
            ..RecoveryReport::default()
        })
    }
    /// Checks the whole store: redb's check (when this is the only handle), then that every
    /// version's segments load (graphs decode with every link in range and one node per
    /// row), the segments cover the live children, each live child has its record, parent,
    /// revision and text, the head's principal bitmaps match the documents' ACLs, and every
    /// tag, alias and serving pin names a retained version. A store that reads a recovered
    /// copy of its file ([`StoreBuilder::recover_in_place`]) checks the copy and says so
    /// ([`IntegrityReport::needs_recovery`]).
    pub fn check_integrity(&mut self) -> Result<IntegrityReport, ReadError> {
        let path = self.path().to_path_buf();
        let report = match Arc::get_mut(&mut self.inner) {
            Some(inner) => {
                let _quiet = inner.log.quiet();
                Catalog::redb_check(&path, Some(&mut inner.catalog))
            }
            None => Catalog::redb_check(&path, None),
        };
        self.inner.catalog.check_integrity(report)
    }
    /// Begins a read: everything read through the snapshot comes from one committed state
    /// (the query path, tools that inspect versions). A read-only handle first follows the
    /// writer's commits.
    pub fn snapshot(&self) -> Result<Snapshot<'_>, ReadError> {
        self.inner.catalog.reader()
    }
    pub(crate) fn writer(&self) -> Writer<'_> {
        Writer::new(&self.inner.catalog, &self.inner.writes)
    }
    pub(crate) fn logbook(&self) -> Logbook<'_> {
        Logbook::new(&self.inner.log, &self.inner.catalog)
    }
    /// The ids of the stored documents, sorted.
    pub fn document_ids(&self) -> Result<Vec<String>, ReadError> {
        contain(|| self.inner.catalog.document_ids())
    }
    /// Every stored document (current revision) in id order, all read from one committed
    /// state (a writer may commit meanwhile), until `visit` returns
    /// [`std::ops::ControlFlow::Break`]: what `folio dump` writes.
    pub fn for_each_document(
        &self,
        visit: impl FnMut(crate::document::Document) -> std::ops::ControlFlow<()>,
    ) -> Result<(), ReadError> {
        contain(|| self.inner.catalog.for_each_document(visit))
    }
    /// The stored document `doc_id` (current revision), or `None`.
    pub fn document(&self, doc_id: &str) -> Result<Option<crate::document::Document>, ReadError> {
        contain(|| self.inner.catalog.document(doc_id))
    }
    /// The child chunks of `doc_id` in index `index` (newest version), with their
    /// `embed_text`: what an application embeds itself to bring its own vectors.
    pub fn chunks(&self, index: &str, doc_id: &str) -> Result<Vec<ChunkInfo>, ReadError> {
        contain(|| self.inner.catalog.chunks(index, doc_id))
    }
    /// How index `index` would cut `doc` into parents and children, as a commit would store
    /// it (chunks longer than the index's model reads split, see
    /// [`super::StoreBuilder::truncation`]).
    pub fn plan_chunked(
        &self,
        index: &str,
        doc: &crate::document::Document,
    ) -> Result<crate::chunk::Chunked, ReadError> {
        self.writer().plan_chunked(index, doc)
    }
    /// How index `index` would chunk `doc`: its child chunks with their `embed_text`, in the
    /// order [`Batch::upsert_with_vectors`](crate::Batch::upsert_with_vectors) expects vectors
    /// (chunks longer than the index's model reads already split). Nothing is written.
    pub fn plan(
        &self,
        index: &str,
        doc: &crate::document::Document,
    ) -> Result<Vec<PlannedChunk>, ReadError> {
        self.writer().plan(index, doc)
    }
    /// Reads `target`'s version (`index`, `index@version`, `index@tag` or an alias) for
    /// export. Its children are the live ones whose document still exists, what an
    /// unrestricted search of the version sees.
    pub fn export(&self, target: &str) -> Result<Export<'_>, ReadError> {
        contain(|| self.inner.catalog.export(target))
    }
    /// The folder the store's file documents' ids are relative to, as recorded by
    /// [`Store::set_file_root`] (`folio ingest` records it at the first ingest of files);
    /// `None` when none was recorded.
    pub fn file_root(&self) -> Result<Option<FileRoot>, ReadError> {
        contain(|| self.inner.catalog.file_root())
    }
    /// Records the folder file documents' ids are relative to (an absolute path in UTF-8,
    /// else [`WriteError::InvalidParameter`]), in a commit of its own. The library keeps it
    /// for the application: no document changes, and no search reads it.
    pub fn set_file_root(&self, root: &FileRoot) -> Result<(), WriteError> {
        self.writer().set_file_root(root)
    }
    /// Counts and settings, for `folio stats`.
    pub fn stats(&self) -> Result<StoreStats, ReadError> {
        contain(|| self.inner.catalog.stats())
    }
    /// Gives the file back its free space: redb's [`Database::compact`](redb::Database::compact), which moves the
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
    /// writes pending request-log entries first. It needs the writer's handle
    /// ([`StorageError::ReadOnly`] otherwise), and redb refuses it while a reader in
    /// another process is in the middle of a read. After a storage error the file still
    /// Deletes every version of every index except the newest `keep_newest` and those a
    /// tag, alias or serving pin names, and everything only the deleted versions used. A
    /// retained version answers exactly as before.
    pub fn gc(&self, keep_newest: usize) -> Result<GcReport, IndexError> {
        self.writer().gc(keep_newest)
    }
    /// Records the store's retention policy: after every commit from now on (by any process
    /// that writes the store), a garbage collection deletes the versions it lets go (the
    /// head and every version a tag, alias route or serving pin names always stay), and
    /// the commit's receipt says what was collected. [`Retention::Off`] (the default)
    /// collects nothing unless [`Store::gc`] is called. Shown in [`Store::stats`].
    pub fn set_retention(&self, policy: Retention) -> Result<(), IndexError> {
        self.writer().set_retention(policy)
    }
    /// The names of the indexes, sorted. A read-only store reports them as of its last
    /// Every live chunk of `index`'s newest version counted in its embedder's own tokens
    /// (`folio stats`): `None` when the embedder is not registered, has no tokenizer or no
    /// The vectors a search of `target` (`index`, `index@version`, `index@tag` or an alias,
    /// as in [`crate::SearchRequest::target`]) reads, for inspecting or exporting them.
    pub fn vectors(&self, target: &str) -> Result<VersionVectors, ReadError> {
        contain(|| self.inner.catalog.vectors(target))
    }
    /// The child numbers live in `target`'s version as it was committed, without reading its
    /// vectors: before any access filter, and still holding the children of documents
    /// deleted since (which [`Store::visible`] leaves out). A copy of the version elsewhere
    /// (a Milvus collection) holds rows of exactly these until it is synced.
    pub fn live(&self, target: &str) -> Result<RoaringBitmap, ReadError> {
        contain(|| self.inner.catalog.live(target))
    }
    /// The child numbers `access` may see in `target`'s version: what a search of it is
    /// filtered by (revocations and deletions made since that version included).
    pub fn visible(&self, target: &str, access: &Access) -> Result<RoaringBitmap, ReadError> {
        contain(|| self.inner.catalog.visible(target, access))
    }
    /// The indexes that could not be loaded when the store opened, by name.
    pub fn unavailable_indexes(&self) -> Vec<UnavailableIndex> {
        self.inner.catalog.unavailable_indexes()
    }
    /// Serves an earlier (or any retained) version, in O(1): for an alias, all its traffic
    /// goes to `version` of its index; for an index name, `version` becomes the version its
    /// bare name serves (writes still build on the head; [`Versions::unpin`] undoes it).
    pub fn rollback(&self, target: &str, version: u64) -> Result<Rollback, IndexError> {
        self.writer().rollback(target, version)
    }
    /// An empty batch.
    pub fn batch(&self) -> Batch<'_> {
        self.writer().batch()
    }
    /// Adds or replaces one document (its old chunks and vectors go in the same commit).
    pub fn upsert(&self, doc: Document) -> Result<CommitReceipt, WriteError> {
        self.writer().upsert(doc)
    }
    /// Deletes one document and its chunks.
    pub fn delete(&self, doc_id: &str) -> Result<CommitReceipt, WriteError> {
        self.writer().delete(doc_id)
    }
    /// Changes who may see a document, without re-chunking or re-embedding it.
    pub fn set_acl<S: Into<String>>(
        &self,
        doc_id: &str,
        acl: impl IntoIterator<Item = S>,
    ) -> Result<CommitReceipt, WriteError> {
        self.writer().set_acl(doc_id, acl)
    }

    /// The named indexes: create, drop, list, merge segments, count tokens.
    pub fn indexes(&self) -> Indexes<'_> {
        Indexes { store: self }
    }

    /// The retained versions of index `index`: list them, tag them, pin the bare name.
    pub fn versions<'s>(&'s self, index: &'s str) -> Versions<'s> {
        Versions { store: self, index }
    }

    /// The aliases: list, set (one version or a traffic split), remove, route a key.
    pub fn aliases(&self) -> Aliases<'_> {
        Aliases { store: self }
    }

    /// The request log: record, annotate, read, select, report, trim.
    pub fn log(&self) -> Log<'_> {
        Log { store: self }
    }

    /// The outbox of changes to published indexes: mark an index published, read what a
    /// follower has not applied yet, acknowledge what it applied.
    pub fn outbox(&self) -> Outbox<'_> {
        Outbox { store: self }
    }
}

/// The outbox of a store ([`Store::outbox`]; `storage-format.md`, "Outbox"): once an
/// index is marked published, every commit that changes a document's audience, deletes a
/// document or moves an alias of it appends an entry in the same transaction, until a
/// follower acknowledges it.
#[derive(Clone, Copy)]
pub struct Outbox<'s> {
    store: &'s Store,
}

impl Outbox<'_> {
    /// Marks `index` as published to `uri` under collection prefix `prefix`, replacing an
    /// earlier mark. Mark before reading what to publish: a change committed after the
    /// mark is recorded, one before it is in what the publish reads.
    pub fn mark_published(&self, index: &str, uri: &str, prefix: &str) -> Result<(), IndexError> {
        self.store.writer().mark_published(index, uri, prefix)
    }

    /// The published indexes, by index name.
    pub fn published(&self) -> Result<Vec<Published>, ReadError> {
        self.store.inner.catalog.published()
    }

    /// The oldest `limit` entries not yet acknowledged, in commit order.
    pub fn pending(&self, limit: usize) -> Result<Vec<OutboxEntry>, ReadError> {
        self.store.inner.catalog.outbox(limit)
    }

    /// Waits until every entry committed before this call is acknowledged (a follower
    /// applied it), up to `timeout`; returns whether they were. The synchronous mode: a
    /// revocation followed by this call is visible on the remote copy when it returns
    /// `true`. Reads the outbox every 10 ms; returns `true` at once when nothing is pending.
    pub fn wait_acknowledged(&self, timeout: std::time::Duration) -> Result<bool, ReadError> {
        self.store.inner.catalog.wait_acknowledged(timeout)
    }

    /// Removes every entry numbered `through` or lower: its changes were applied. Returns
    /// how many were removed.
    pub fn acknowledge(&self, through: u64) -> Result<u64, IndexError> {
        self.store.writer().acknowledge(through)
    }
}

/// The named indexes of a store ([`Store::indexes`]).
#[derive(Clone, Copy)]
pub struct Indexes<'s> {
    store: &'s Store,
}

impl Indexes<'_> {
    /// Creates index `name` and builds it over every stored document as its version 1.
    pub fn create(&self, name: &str, config: IndexConfig) -> Result<u64, IndexError> {
        self.store.writer().create_index(name, config)
    }

    /// Like [`Indexes::create`], reporting chunking, embedding and graph building.
    pub fn create_with(
        &self,
        name: &str,
        config: IndexConfig,
        progress: &dyn Progress,
    ) -> Result<u64, IndexError> {
        self.store
            .writer()
            .create_index_with(name, config, progress)
    }

    /// Like [`Indexes::create_with`], also returning the token counts of the build (for
    /// an embedder with a tokenizer and an input limit).
    ///
    /// The documents are chunked and embedded before the writer lock is taken, so other
    /// writers, rollbacks and alias switches do not wait for the model; when a commit changed
    /// the documents meanwhile, the build runs again (the last time under the lock), so the
    /// index covers exactly the stored documents.
    pub fn create_reporting(
        &self,
        name: &str,
        config: IndexConfig,
        progress: &dyn Progress,
    ) -> Result<(u64, Option<TruncationReport>), IndexError> {
        self.store
            .writer()
            .create_index_reporting(name, config, progress)
    }

    /// Deletes index `name` and everything only it holds (chunks, segments, versions,
    /// bitmaps, tags, its serving pin). Documents stay; revisions only its versions used
    /// go at the next `gc`. Refused for `default` and while an alias routes to it.
    pub fn drop(&self, name: &str) -> Result<(), IndexError> {
        self.store.writer().drop_index(name)
    }

    /// Every index with its settings, head and number of retained versions, by name.
    pub fn list(&self) -> Result<Vec<IndexInfo>, ReadError> {
        self.store.writer().list_indexes()
    }

    /// Checks the whole store: redb's check (when this is the only handle), then that every
    /// version's segments load (graphs decode with every link in range and one node per
    /// row), the segments cover the live children, each live child has its record, parent,
    /// revision and text, the head's principal bitmaps match the documents' ACLs, and every
    /// Merges every segment of `index`'s head into one holding only its live children, as
    /// a new version; `None` when there is nothing to gain (one segment, no dead rows) or
    /// the index was dropped and created again while the merge was built.
    pub fn compact(&self, index: &str) -> Result<Option<Compaction>, IndexError> {
        self.store.writer().compact(index)
    }

    /// Like [`Indexes::compact`], reporting the graph build. The merged segment (its graph
    /// included) is built without the writer lock, so searches, request-log writes,
    /// feedback, alias switches, rollbacks and batches never wait for it; it waits for a
    /// merge of the same index already under way.
    pub fn compact_with(
        &self,
        index: &str,
        progress: &dyn Progress,
    ) -> Result<Option<Compaction>, IndexError> {
        self.store.writer().compact_with(index, progress)
    }

    /// Every live chunk of `index`'s newest version counted in its embedder's own tokens
    /// (`folio stats`): `None` when the embedder is not registered, has no tokenizer or no
    /// input limit. `over` names chunks by their position in the document as stored.
    pub fn token_report(&self, index: &str) -> Result<Option<TruncationReport>, ReadError> {
        self.store
            .inner
            .catalog
            .token_report(index, self.store.writer().truncation())
    }
}

/// The retained versions of one index ([`Store::versions`]).
#[derive(Clone, Copy)]
pub struct Versions<'s> {
    store: &'s Store,
    index: &'s str,
}

impl Versions<'_> {
    /// The retained versions of `index`, oldest first.
    pub fn list(&self) -> Result<Vec<VersionInfo>, ReadError> {
        self.store.inner.catalog.versions(self.index)
    }

    /// The ids of the segments version `version` of `index` ranks. A segment's children
    /// never come back to life in a later version (a replaced, deleted or compacted child
    /// is gone from it for good) and segment ids are never reused, so a later version whose
    /// segments all belong to an earlier one holds a subset of that one's children: what
    /// lets a copy of the earlier version elsewhere serve the later one.
    pub fn segments(&self, version: u64) -> Result<Vec<u32>, ReadError> {
        self.store
            .inner
            .catalog
            .version_segments(self.index, version)
    }

    /// Names version `version` of `index` `tag`. Tags are permanent names: tagging another
    /// version with a taken tag is refused (remove it first); the same version is a no-op.
    pub fn tag(&self, version: u64, tag: &str) -> Result<(), IndexError> {
        self.store.writer().tag(self.index, version, tag)
    }

    /// Removes a tag; returns the version it named (which a later `gc` may now delete).
    pub fn remove_tag(&self, tag: &str) -> Result<u64, IndexError> {
        self.store.writer().remove_tag(self.index, tag)
    }

    /// Makes the bare index name serve the head again; returns the version it was pinned to.
    pub fn unpin(&self) -> Result<Option<u64>, IndexError> {
        self.store.writer().unpin(self.index)
    }
}

/// The aliases of a store ([`Store::aliases`]).
#[derive(Clone, Copy)]
pub struct Aliases<'s> {
    store: &'s Store,
}

impl Aliases<'_> {
    /// Every alias and its routes, by name.
    pub fn list(&self) -> Result<Vec<AliasInfo>, ReadError> {
        self.store.inner.catalog.aliases()
    }

    /// Points `alias` at one version (weight 100) or splits its traffic between several
    /// (weights 1..=100 summing to 100), atomically: a search sees the old routes or the
    /// new ones. Routes may name versions of different indexes.
    pub fn set(&self, alias: &str, routes: &[Route]) -> Result<(), IndexError> {
        self.store.writer().set_alias(alias, routes)
    }

    /// Deletes an alias (the versions it named stay until a `gc` finds them unnamed).
    pub fn remove(&self, alias: &str) -> Result<(), IndexError> {
        self.store.writer().remove_alias(alias)
    }

    /// The route of `alias` that `key` takes (what a search with that route key uses).
    pub fn route(&self, alias: &str, key: &str) -> Result<Route, ReadError> {
        self.store.inner.catalog.route(alias, key)
    }
}

/// The request log of a store ([`Store::log`]): opt-in ([`StoreBuilder::log_requests`]),
/// one record per search, what the application attaches later by id, retention.
#[derive(Clone, Copy)]
pub struct Log<'s> {
    store: &'s Store,
}

impl Log<'_> {
    /// Appends `request` to the request log; returns its request id.
    pub fn record(&self, request: &LoggedRequest) -> Result<u64, StorageError> {
        self.store.logbook().log_request(request)
    }

    /// Writes the entries not written yet now, in one durable commit. Without it they are
    /// written behind the searches, once 64 wait and at least every second, and when the
    /// store closes; other processes see them once written.
    pub fn flush(&self) -> Result<(), StorageError> {
        self.store.inner.log.flush(self.store.inner.catalog.db())
    }

    /// Sets (replaces) the rating and note on logged request `request_id`; writes the log
    /// entries not written yet too.
    pub fn feedback(
        &self,
        request_id: u64,
        rating: Option<Rating>,
        note: Option<String>,
    ) -> Result<(), WriteError> {
        self.store.logbook().feedback(request_id, rating, note)
    }

    /// Attaches `annotation` (session, answer, prompt tokens, rerank scores, feedback,
    /// verdict, gold evidence) to logged request `request_id`, at any time after it; writes
    /// the log entries not written yet too.
    pub fn annotate(&self, request_id: u64, annotation: &Annotation) -> Result<(), WriteError> {
        self.store.logbook().annotate(request_id, annotation)
    }

    /// Every logged request, oldest first.
    pub fn entries(&self) -> Result<Vec<LogEntry>, ReadError> {
        self.store.logbook().log_entries()
    }

    /// The logged requests `selection` picks (failures, a window), oldest first.
    pub fn select(&self, selection: &Selection) -> Result<Vec<LogEntry>, ReadError> {
        self.store.logbook().log_select(selection)
    }

    /// Online metrics of the log's requests by `by`, with 95% intervals; `compare` names
    /// the groups A and B to set side by side (two versions by version are compared
    /// without it). A follow-up is a next request of the same session within
    /// `follow_up_secs`.
    pub fn report(
        &self,
        by: GroupBy,
        follow_up_secs: u64,
        compare: Option<(&str, &str)>,
    ) -> Result<LogReport, ReadError> {
        self.store.logbook().log_report(by, follow_up_secs, compare)
    }

    /// Deletes logged requests by `trim`, oldest first, in commits of at most
    /// [`TRIM_BATCH`] deletions (searches never wait; other writes wait one short commit).
    pub fn trim(&self, trim: Trim) -> Result<TrimReport, WriteError> {
        self.store.logbook().trim_log(trim)
    }

    /// Sets the request log's size cap in record bytes (`None` removes it). Each write of
    /// log entries then deletes the oldest, at most [`TRIM_BATCH`] per commit, while the
    /// log is larger.
    pub fn set_cap(&self, cap: Option<u64>) -> Result<(), WriteError> {
        self.store.logbook().set_log_cap(cap)
    }

    /// The log's entries and record bytes as written, and its cap.
    pub fn size(&self) -> Result<LogSize, ReadError> {
        self.store.logbook().log_size()
    }
}

/// The query path looks embedders and unloadable indexes up through the handle.
impl query::Handle for Store {
    fn embedder(&self, name: &str) -> Option<Arc<dyn Embedder>> {
        self.inner.catalog.embedder(name)
    }

    fn explain_unresolved(&self, target: &str, error: ReadError) -> ReadError {
        self.inner.catalog.explain_unresolved(target, error)
    }
}

/// The report of a whole copy at `dest`, opened with `options` and checked; `Err` says why
/// the copy cannot stand (it is then removed, and the recovery ingests the documents).
fn carried(
    dest: &Path,
    options: StoreBuilder,
    lost: Vec<String>,
) -> Result<RecoveryReport, String> {
    let read = || -> Result<RecoveryReport, String> {
        let mut store = options
            .create(false)
            .read_only(true)
            .log_requests(false)
            .open(dest)
            .map_err(|e| format!("does not open: {e}"))?;
        let check = store.check_integrity().map_err(|e| e.to_string())?;
        if !check.is_consistent() {
            return Err(format!("fails the check: {}", check.problems.join("; ")));
        }
        let mut report = RecoveryReport {
            path: dest.to_path_buf(),
            indexes: store.index_names(),
            documents: store.document_ids().map_err(|e| e.to_string())?.len() as u64,
            whole: true,
            lost,
            ..RecoveryReport::default()
        };
        for index in &report.indexes {
            let versions = store.versions(index).list().map_err(|e| e.to_string())?;
            report.tags.extend(
                versions
                    .iter()
                    .flat_map(|v| v.tags.iter().map(|tag| format!("{index}@{tag}"))),
            );
            let numbers = versions.iter().map(|v| v.version).collect();
            report.versions.insert(index.clone(), numbers);
        }
        let aliases = store.aliases().list().map_err(|e| e.to_string())?;
        report.aliases = aliases.into_iter().map(|a| a.name).collect();
        Ok(report)
    };
    let report = read();
    if report.is_err() {
        let _ = std::fs::remove_file(dest);
    }
    report
}
