//! How a handle follows the commits of other processes (and, after one of its own, itself):
//! each read begins a transaction and compares the `indexes` table with the one its index
//! states were loaded from. The states are a function of those records (every version,
//! segment and bitmap a record leads to is immutable), so equal records mean the states
//! are current; that comparison is the whole cost of a read when nothing changed. When the
//! table moved on, the states are brought up to it, reading only new versions and
//! segments.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use redb::ReadTransaction;

use crate::storage::error::StorageError;
use crate::storage::file::records::{decode, IndexRecord};
use crate::storage::file::sealed::{contain, ReadSealed};
use crate::storage::file::shared_segments::SegmentFiles;
use crate::storage::file::tables::INDEXES;
use crate::storage::read::state::IndexState;
use crate::storage::read::unavailable::UnavailableIndex;

/// The `indexes` table's entries (name, record bytes), in key order.
pub(crate) type Seen = Vec<(String, Vec<u8>)>;

/// A store's record of the file state its index states were loaded from.
pub(crate) struct Follow {
    /// Read under the store's states lock, replaced under its write lock.
    seen: Mutex<Seen>,
    /// Held while catching up, and while a commit of this handle installs its states, so
    /// the installed states only move forward.
    catching_up: Mutex<()>,
}

impl Follow {
    pub(crate) fn new(seen: Seen) -> Self {
        Follow {
            seen: Mutex::new(seen),
            catching_up: Mutex::new(()),
        }
    }

    /// Whether `txn`'s `indexes` table differs from the one the states were loaded from.
    pub(crate) fn moved(&self, txn: &ReadTransaction) -> Result<bool, StorageError> {
        let seen = self.seen.lock();
        let mut expected = seen.iter();
        for entry in txn.open_table(INDEXES)?.all()? {
            let (name, value) = entry?;
            match expected.next() {
                Some((n, bytes)) if n == name.value() && bytes == value.value() => {}
                _ => return Ok(true),
            }
        }
        Ok(expected.next().is_some())
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, ()> {
        self.catching_up.lock()
    }

    pub(crate) fn saw(&self, seen: Seen) {
        *self.seen.lock() = seen;
    }
}

/// What [`load`] found: the index states, the indexes that did not load, and the
/// `indexes` table's entries (for [`Follow::moved`]).
pub(crate) struct Loaded {
    pub(crate) states: BTreeMap<String, Arc<IndexState>>,
    pub(crate) unavailable: BTreeMap<String, UnavailableIndex>,
    pub(crate) seen: Seen,
}

/// The index states of `txn`'s `indexes` table, reusing `current`'s: an index whose record
/// is unchanged keeps its state, one with a new head advances (see
/// [`IndexState::advance`]), a new one is loaded, and one no longer listed is dropped. An
/// index that does not load (a damaged segment, or graph parameters an older folio
/// accepted and no decoder reads) is set aside, so a store with one bad index still opens.
pub(crate) fn load(
    txn: &ReadTransaction,
    current: &BTreeMap<String, Arc<IndexState>>,
    files: Option<&Arc<SegmentFiles>>,
) -> Result<Loaded, StorageError> {
    let mut loaded = Loaded {
        states: BTreeMap::new(),
        unavailable: BTreeMap::new(),
        seen: Vec::new(),
    };
    for entry in txn.open_table(INDEXES)?.all()? {
        let (name, value) = entry?;
        let (name, bytes) = (name.value(), value.value());
        let record: IndexRecord = decode(bytes, "index record")?;
        loaded.seen.push((name.to_string(), bytes.to_vec()));
        let id = record.id;
        let state = match (current.get(name), record.graph.validate()) {
            (Some(state), _) if *state.record() == record => Ok(state.clone()),
            // Graph parameters an older folio accepted would fail at the next graph build.
            (_, Err(e)) => Err(format!("its graph parameter {e}")),
            (Some(state), Ok(())) if state.id() == id => contain(|| state.advance(txn, record))
                .map(Arc::new)
                .map_err(|e| e.to_string()),
            (_, Ok(())) => contain(|| IndexState::load(txn, name, record, files.cloned()))
                .map(Arc::new)
                .map_err(|e| e.to_string()),
        };
        match state {
            Ok(state) => {
                loaded.states.insert(name.to_string(), state);
            }
            Err(reason) => {
                let name = name.to_string();
                loaded
                    .unavailable
                    .insert(name.clone(), UnavailableIndex { name, id, reason });
            }
        }
    }
    Ok(loaded)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: failing loudly is the point

    use std::sync::Arc;

    use crate::chunk::SourceFormat;
    use crate::document::Document;
    use crate::embed::HashEmbedder;
    use crate::query::SearchRequest;
    use crate::store::{Access, Store};

    fn commit(store: &Store, id: &str, text: &str) {
        let mut batch = store.batch();
        batch.upsert(Document::new(id, SourceFormat::Text, text));
        batch.commit().expect("commit");
    }

    /// A reader that follows a commit of another handle reads only the new segment: the
    /// new head shares the segment the reader had loaded.
    #[test]
    fn a_followed_commit_reuses_the_loaded_segments() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.folio");
        let builder = Store::builder().embedder(Arc::new(HashEmbedder::new(8).expect("embedder")));
        let writer = builder.clone().create(true).open(&path).expect("writer");
        commit(&writer, "lunch", "Lunch is served at noon.");
        let reader = builder.read_only(true).open(&path).expect("reader");
        let before = reader
            .snapshot()
            .expect("snapshot")
            .resolve("default")
            .expect("default")
            .1;
        commit(&writer, "hotel", "Hotel limits for travel.");
        let request = SearchRequest::text("hotel").access(Access::Unrestricted);
        assert_eq!(reader.search(&request).expect("search").version, 2);
        let after = reader
            .snapshot()
            .expect("snapshot")
            .resolve("default")
            .expect("default")
            .1;
        assert_eq!((before.segments().len(), after.segments().len()), (1, 2));
        assert!(Arc::ptr_eq(&before.segments()[0], &after.segments()[0]));
    }
}
