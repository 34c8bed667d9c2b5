//! The open file and what is loaded from it: the registered embedders and, per index, the
//! loaded segments of the versions in use. A new `IndexState` is swapped in atomically
//! after each commit, so readers on other threads always see a whole version.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use parking_lot::RwLock;
use redb::{ReadTransaction, WriteTransaction};

use crate::embed::identity_of;
use crate::embed::Embedder;
use crate::storage::error::{OpenError, ReadError, StorageError, WriteError};
use crate::storage::file::open::Db;
use crate::storage::file::sealed::contain;
use crate::storage::file::shared_segments::SegmentFiles;
use crate::storage::read::follow::{self, Follow};
use crate::storage::read::snapshot::Snapshot;
use crate::storage::read::state::IndexState;
use crate::storage::read::targets::read_alias;
use crate::storage::read::unavailable::UnavailableIndex;

/// Where a store is, as its shared segment files go.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Sharing {
    /// On a backend of the caller's: no files beside it.
    Backend,
    /// A file: its shared segment files are swept after deletions, and mapped when `map`.
    File { map: bool },
}

/// The index states that go with one read transaction.
pub(crate) type States = BTreeMap<String, Arc<IndexState>>;

/// The open file, its embedders and its loaded index states.
pub(crate) struct Catalog {
    /// Shared (weakly) with the request log's flusher thread, which must not keep the
    /// file open once the store is dropped.
    db: Arc<Db>,
    path: PathBuf,
    embedders: RwLock<HashMap<String, Arc<dyn Embedder>>>,
    /// Readers take this lock only to pair a read transaction with the index states (see
    /// [`Catalog::snapshot`]); writers that delete records commit while holding it for writing.
    indexes: RwLock<States>,
    /// Indexes that failed to load: the store still opens, to drop them or use the others.
    unavailable: RwLock<BTreeMap<String, UnavailableIndex>>,
    /// The record of the file state the index states were loaded from: other processes
    /// may commit at any time, read-only or not.
    follow: Follow,
    /// Opened with `StoreBuilder::read_only`: every write refused (the request log aside,
    /// when the file can be written).
    read_only: bool,
    /// A file store's shared segment files (`None` on a backend): swept after deletions.
    files: Option<Arc<SegmentFiles>>,
    /// Whether this process maps its segments from them (`StoreBuilder::shared_segments`).
    map_segments: bool,
}

impl Catalog {
    /// Loads the index states of an open file (this build's format) and registers `embedder`;
    /// segments are mapped from shared files beside it when `sharing` says so.
    pub(crate) fn load(
        db: Db,
        path: PathBuf,
        embedder: Arc<dyn Embedder>,
        read_only: bool,
        sharing: Sharing,
    ) -> Result<Catalog, OpenError> {
        let files = match sharing {
            Sharing::Backend => None,
            Sharing::File { .. } => Some(Arc::new(SegmentFiles::beside(&path))),
        };
        let map_segments = matches!(sharing, Sharing::File { map: true });
        let txn = db.begin_read()?;
        let mapped = files.as_ref().filter(|_| map_segments);
        let loaded = contain(|| follow::load(&txn, &BTreeMap::new(), mapped))?;
        drop(txn);
        let catalog = Catalog {
            db: Arc::new(db),
            path,
            embedders: RwLock::new(HashMap::new()),
            indexes: RwLock::new(loaded.states),
            unavailable: RwLock::new(loaded.unavailable),
            follow: Follow::new(loaded.seen),
            read_only,
            files,
            map_segments,
        };
        catalog.register_embedder(embedder)?;
        Ok(catalog)
    }

    /// Refuses an embedder whose name matches an index's but whose vectors would differ.
    fn check_embedder(&self, embedder: &Arc<dyn Embedder>) -> Result<(), OpenError> {
        let given = identity_of(embedder.as_ref());
        for (name, index) in self.indexes.read().iter() {
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

    pub(crate) fn register_embedder(&self, embedder: Arc<dyn Embedder>) -> Result<(), OpenError> {
        self.check_embedder(&embedder)?;
        self.embedders
            .write()
            .insert(embedder.name().to_string(), embedder);
        Ok(())
    }

    pub(crate) fn embedder_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.embedders.read().keys().cloned().collect();
        names.sort();
        names
    }

    /// The registered embedder `name`; an index of application vectors (`vectors:DIM`)
    /// needs none registered: its name is all there is to it.
    pub(crate) fn embedder(&self, name: &str) -> Option<Arc<dyn Embedder>> {
        let registered = self.embedders.read().get(name).cloned();
        registered.or_else(|| {
            crate::embed::GivenVectors::from_name(name).map(|e| Arc::new(e) as Arc<dyn Embedder>)
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn db(&self) -> &Db {
        &self.db
    }

    /// The open file, for the request log's flusher thread.
    pub(crate) fn db_weak(&self) -> Weak<Db> {
        Arc::downgrade(&self.db)
    }

    /// The writing redb handle, for what needs the file to itself (redb's check,
    /// compaction); `None` on a read-only store.
    pub(crate) fn db_mut(&mut self) -> Option<&mut redb::Database> {
        if self.read_only {
            return None;
        }
        // None while the request log's flusher writes (see `RequestLog::quiet`).
        Arc::get_mut(&mut self.db)?.writer()
    }

    pub(crate) fn is_read_only(&self) -> bool {
        self.read_only
    }

    pub(crate) fn index_names(&self) -> Vec<String> {
        self.indexes.read().keys().cloned().collect()
    }

    /// The current state of index `name` (its newest version and loaded segments); on a
    /// read-only store, as of its last read.
    pub(crate) fn index(&self, name: &str) -> Option<Arc<IndexState>> {
        self.indexes.read().get(name).cloned()
    }

    pub(crate) fn indexes(&self) -> States {
        self.indexes.read().clone()
    }

    pub(crate) fn unavailable_indexes(&self) -> Vec<UnavailableIndex> {
        self.unavailable.read().values().cloned().collect()
    }

    pub(crate) fn unavailable(&self, name: &str) -> Option<UnavailableIndex> {
        self.unavailable.read().get(name).cloned()
    }

    pub(crate) fn forget_unavailable(&self, name: &str) {
        self.unavailable.write().remove(name);
    }

    /// A read transaction and the index states that go with it. Taken under the states'
    /// lock, so the transaction never predates the states: a commit that adds records is
    /// installed after it commits (its new versions are simply not used yet), and one that
    /// deletes records commits and installs under the write lock ([`Catalog::commit_deleting`]).
    /// When a commit (another process's, or this handle's own: it does not record what it
    /// wrote) changed the file since the states were loaded, they are brought up to the
    /// transaction first ([`follow`]).
    pub(crate) fn snapshot(&self) -> Result<(ReadTransaction, States), StorageError> {
        {
            let indexes = self.indexes.read();
            let txn = self.db.begin_read()?;
            if !self.follow.moved(&txn)? {
                return Ok((txn, indexes.clone()));
            }
        }
        let _one = self.follow.lock();
        self.catch_up()
    }

    /// Brings the states up to the file's newest commit, for a write about to plan its
    /// changes: the caller holds a write transaction, so no commit can land meanwhile.
    pub(crate) fn catch_up_to_write(&self) -> Result<(), StorageError> {
        let _one = self.follow.lock();
        let txn = self.db.begin_read()?;
        if self.follow.moved(&txn)? {
            drop(txn);
            self.catch_up()?;
        }
        Ok(())
    }

    /// Loads what was committed since the states were loaded: new versions of the indexes
    /// (only their new segments are read), new indexes, and drops what is gone. The caller
    /// holds the follow lock: one catch-up at a time, each on a transaction begun after
    /// the previous one installed.
    fn catch_up(&self) -> Result<(ReadTransaction, States), StorageError> {
        let txn = self.db.begin_read()?;
        let mapped = self.files.as_ref().filter(|_| self.map_segments);
        let loaded = contain(|| follow::load(&txn, &self.indexes(), mapped))?;
        let mut indexes = self.indexes.write();
        *indexes = loaded.states.clone();
        *self.unavailable.write() = loaded.unavailable;
        self.follow.saw(loaded.seen);
        Ok((txn, loaded.states))
    }

    /// Installs the states a commit of this handle made, under the follow lock so no
    /// catch-up begun before the commit installs older states after them.
    pub(crate) fn install(&self, states: Vec<Arc<IndexState>>) {
        let _one = self.follow.lock();
        let mut indexes = self.indexes.write();
        for state in states {
            indexes.insert(state.name().to_string(), state);
        }
    }

    /// Commits a transaction that deletes records, and applies `update` to the in-memory
    /// states, with no reader able to pair the new file state with the old states between.
    pub(crate) fn commit_deleting(
        &self,
        txn: WriteTransaction,
        update: impl FnOnce(&mut States),
    ) -> Result<(), StorageError> {
        let _one = self.follow.lock();
        let mut indexes = self.indexes.write();
        txn.commit()?;
        update(&mut indexes);
        drop(indexes);
        // The shared files of the segments it deleted go too.
        if let Some(files) = &self.files {
            files.sweep(&self.db.begin_read()?)?;
        }
        Ok(())
    }

    /// Refuses a write that must update every index while one could not be loaded.
    pub(crate) fn check_writable(&self) -> Result<(), WriteError> {
        match self.unavailable.read().values().next() {
            Some(bad) => Err(WriteError::IndexUnavailable {
                index: bad.name.clone(),
                reason: bad.reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Explains a failed resolution of `target` (`index`, `index@version`, `index@tag` or an
    /// alias) when what it names is an unavailable index; otherwise returns `error`.
    pub(crate) fn explain_unresolved(&self, target: &str, error: ReadError) -> ReadError {
        let unavailable = self.unavailable.read();
        if unavailable.is_empty() {
            return error;
        }
        let name = target.rsplit_once('@').map_or(target, |(name, _)| name);
        let found = unavailable.get(name).cloned().or_else(|| {
            let txn = self.db().begin_read().ok()?;
            let alias = read_alias(&txn, target).ok()??;
            unavailable
                .values()
                .find(|u| alias.routes.iter().any(|r| r.index == u.id))
                .cloned()
        });
        match found {
            Some(bad) => ReadError::IndexUnavailable {
                index: bad.name,
                reason: bad.reason,
            },
            None => error,
        }
    }

    /// Begins a read: everything read through it comes from one committed state.
    pub(crate) fn reader(&self) -> Result<Snapshot<'_>, ReadError> {
        let (txn, indexes) = self.snapshot()?;
        Snapshot::new(txn, indexes)
    }
}
