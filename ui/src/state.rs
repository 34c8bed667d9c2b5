//! What every page reads: the store, opened on first use, and the files given at start.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use folio::store::Store;
use parking_lot::Mutex;

use crate::error::PageError;

/// Opens the store for the pages (the command line's embedder options go in it); called
/// again on a later request while it fails, so a store that appears or is repaired later is
/// picked up.
pub type Opener = Arc<dyn Fn(&Path) -> Result<Store, String> + Send + Sync>;

/// What `folio ui` serves.
pub struct Options {
    /// The store file.
    pub store: PathBuf,
    /// Where to listen; `127.0.0.1:0` picks a free port on loopback.
    pub addr: SocketAddr,
    /// Files of `folio eval --jsonl` or `folio replay --jsonl` the evaluation page lists.
    pub evals: Vec<PathBuf>,
    /// PNG charts of `folio eval --plot` the evaluation page shows.
    pub plots: Vec<PathBuf>,
    /// How the store is opened.
    pub open: Opener,
}

/// What every page reads.
pub(crate) struct State {
    pub(crate) store_path: PathBuf,
    open: Opener,
    store: Mutex<Option<Arc<Store>>>,
    pub(crate) evals: Vec<PathBuf>,
    pub(crate) plots: Vec<PathBuf>,
}

impl State {
    pub(crate) fn new(options: Options) -> State {
        State {
            store_path: options.store,
            open: options.open,
            store: Mutex::new(None),
            evals: options.evals,
            plots: options.plots,
        }
    }

    /// The open store, opening it on first use (or again after a failure).
    pub(crate) fn store(&self) -> Result<Arc<Store>, PageError> {
        let mut slot = self.store.lock();
        if let Some(store) = slot.as_ref() {
            return Ok(store.clone());
        }
        let store = (self.open)(&self.store_path).map_err(PageError::Store)?;
        let store = Arc::new(store);
        *slot = Some(store.clone());
        Ok(store)
    }
}
