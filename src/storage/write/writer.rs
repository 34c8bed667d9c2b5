//! What every write of a handle shares: the turn that serialises its commits (and, through
//! redb's writer byte, every process's), the locks that keep two merges of one index
//! apart, and the settings writes follow.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use redb::{ReadTransaction, WriteTransaction};

use crate::embed::{Embedder, Truncation};
use crate::ingest::Models;
use crate::storage::error::{StorageError, WriteError};
use crate::storage::file::open::Db;
use crate::storage::file::records::IndexRecord;
use crate::storage::options::MergePolicy;
use crate::storage::read::catalog::{Catalog, States};
use crate::storage::read::state::IndexState;
use crate::storage::read::unavailable::UnavailableIndex;

/// The write side of one open store.
pub(crate) struct WriteLocks {
    /// Serialises writers so the in-memory state is swapped in commit order.
    writer: Mutex<()>,
    /// Per index name, held by a merge from its choice of segments until it lands (see
    /// `compact.rs`): merges build without the writer lock, and two of one index must not
    /// both land.
    merging: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    merge: MergePolicy,
    truncation: Truncation,
}

impl WriteLocks {
    pub(crate) fn new(merge: MergePolicy, truncation: Truncation) -> Self {
        WriteLocks {
            writer: Mutex::new(()),
            merging: Mutex::default(),
            merge,
            truncation,
        }
    }
}

/// A write's turn (see [`Writer::lock_writer`]): the handle's writer lock and the write
/// transaction begun under it.
pub(crate) struct Turn<'s> {
    _serial: MutexGuard<'s, ()>,
    txn: Option<WriteTransaction>,
    db: &'s Db,
}

impl Turn<'_> {
    /// The write transaction the turn began: the one a write commits; a later one (a write
    /// in several commits) begins afresh, still in this handle's turn.
    pub(crate) fn txn(&mut self) -> Result<WriteTransaction, StorageError> {
        match self.txn.take() {
            Some(txn) => Ok(txn),
            None => self.db.begin_write(),
        }
    }
}

/// A write in progress: the catalog it changes and the handle's write locks.
#[derive(Clone, Copy)]
pub(crate) struct Writer<'s> {
    catalog: &'s Catalog,
    locks: &'s WriteLocks,
}

impl<'s> Writer<'s> {
    pub(crate) fn new(catalog: &'s Catalog, locks: &'s WriteLocks) -> Self {
        Writer { catalog, locks }
    }

    /// This write's turn: after this handle's other writers, a write transaction (waiting
    /// for another process's commit up to the store's wait), and the index states brought
    /// up to the file's newest commit, which no process can change until the turn ends, so
    /// what the write plans from them stays true. [`StorageError::ReadOnly`] on a read-only
    /// store, before any work is done.
    pub(crate) fn lock_writer(&self) -> Result<Turn<'s>, StorageError> {
        if self.catalog.is_read_only() {
            return Err(StorageError::ReadOnly);
        }
        let serial = self.locks.writer.lock();
        let txn = self.catalog.db().begin_write()?;
        self.catalog.catch_up_to_write()?;
        Ok(Turn {
            _serial: serial,
            txn: Some(txn),
            db: self.catalog.db(),
        })
    }

    /// The lock that serialises the merges of index `name`.
    pub(crate) fn merge_lock(&self, name: &str) -> Arc<Mutex<()>> {
        self.locks
            .merging
            .lock()
            .entry(name.to_string())
            .or_default()
            .clone()
    }

    pub(crate) fn merge_policy(&self) -> MergePolicy {
        self.locks.merge
    }

    /// What writes do with chunks longer than the model reads.
    pub(crate) fn truncation(&self) -> Truncation {
        self.locks.truncation
    }

    /// What preparing documents for an index of `record` needs: its embedder, the
    /// truncation setting.
    pub(crate) fn models(&self, record: &IndexRecord) -> Models {
        Models {
            embedder: self.embedder(&record.embedder.name),
            truncation: self.truncation(),
        }
    }

    pub(crate) fn db(&self) -> &'s Db {
        self.catalog.db()
    }

    pub(crate) fn is_read_only(&self) -> bool {
        self.catalog.is_read_only()
    }

    pub(crate) fn index(&self, name: &str) -> Option<Arc<IndexState>> {
        self.catalog.index(name)
    }

    pub(crate) fn indexes(&self) -> States {
        self.catalog.indexes()
    }

    pub(crate) fn embedder(&self, name: &str) -> Option<Arc<dyn Embedder>> {
        self.catalog.embedder(name)
    }

    pub(crate) fn snapshot(&self) -> Result<(ReadTransaction, States), StorageError> {
        self.catalog.snapshot()
    }

    pub(crate) fn install(&self, states: Vec<Arc<IndexState>>) {
        self.catalog.install(states)
    }

    pub(crate) fn commit_deleting(
        &self,
        txn: WriteTransaction,
        update: impl FnOnce(&mut States),
    ) -> Result<(), StorageError> {
        self.catalog.commit_deleting(txn, update)
    }

    pub(crate) fn unavailable(&self, name: &str) -> Option<UnavailableIndex> {
        self.catalog.unavailable(name)
    }

    pub(crate) fn forget_unavailable(&self, name: &str) {
        self.catalog.forget_unavailable(name)
    }

    pub(crate) fn check_writable(&self) -> Result<(), WriteError> {
        self.catalog.check_writable()
    }
}
