//! Indexes that failed to load. The store opens without them, so the others stay
//! searchable and `drop_index`, `check_integrity` and `stats` still work; writes that would
//! have to update every index are refused until the index is dropped.

use super::error::{ReadError, WriteError};
use super::versions::read_alias;
use super::Store;

/// An index the store could not load: a damaged segment, or graph parameters that an older
/// folio accepted and no decoder reads. Drop it ([`Store::drop_index`]) and create it again.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UnavailableIndex {
    /// The index's name.
    pub name: String,
    #[serde(skip)]
    pub(crate) id: u32,
    /// Why it could not be loaded.
    pub reason: String,
}

impl Store {
    /// The indexes that could not be loaded when the store opened, by name.
    pub fn unavailable_indexes(&self) -> Vec<UnavailableIndex> {
        self.inner.unavailable.read().values().cloned().collect()
    }

    pub(crate) fn unavailable(&self, name: &str) -> Option<UnavailableIndex> {
        self.inner.unavailable.read().get(name).cloned()
    }

    pub(crate) fn forget_unavailable(&self, name: &str) {
        self.inner.unavailable.write().remove(name);
    }

    /// Refuses a write that must update every index while one could not be loaded.
    pub(crate) fn check_writable(&self) -> Result<(), WriteError> {
        match self.inner.unavailable.read().values().next() {
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
        let unavailable = self.inner.unavailable.read();
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
}
