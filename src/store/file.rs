//! The store as a whole: its summary (`folio stats`) and giving the file back its free
//! space.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::ReadableTableMetadata;

use super::error::{CompactFileError, ReadError, StorageError};
use super::identity::EmbedderIdentity;
use super::state;
use super::tables::{DOCS, FORMAT_VERSION};
use super::{Store, UnavailableIndex};
use crate::chunk::ChunkSpec;

/// A summary of a store, as `folio stats` prints it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StoreStats {
    /// The store's path.
    pub path: PathBuf,
    /// The file's store format version.
    pub format_version: u32,
    /// The file's size in bytes (0 when the store is not a file).
    pub file_bytes: u64,
    /// Documents stored.
    pub documents: u64,
    /// Each loaded index, by name.
    pub indexes: Vec<IndexStats>,
    /// Indexes that could not be loaded (see [`Store::unavailable_indexes`]).
    pub unavailable: Vec<UnavailableIndex>,
}

/// What [`Store::compact_file`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FileCompaction {
    /// Whether redb moved or released any page (`false`: nothing to give back).
    pub compacted: bool,
    /// The file's size before and after (0 when the store is not a file, see
    /// [`StoreBuilder::open_with_backend`](super::StoreBuilder::open_with_backend)).
    pub bytes_before: u64,
    /// The file's size after.
    pub bytes_after: u64,
}

/// One index in [`StoreStats`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct IndexStats {
    /// Its name.
    pub name: String,
    /// Its newest version.
    pub version: u64,
    /// Who made its vectors.
    pub embedder: EmbedderIdentity,
    /// How it chunks documents.
    pub spec: ChunkSpec,
    /// Children live in its newest version.
    pub live_children: u64,
    /// Segments in its newest version.
    pub segments: usize,
    /// Those of them with a graph.
    pub graph_segments: usize,
    /// Principals named by the ACLs of its documents.
    pub principals: Vec<String>,
}

impl Store {
    /// Counts and settings, for `folio stats`.
    pub fn stats(&self) -> Result<StoreStats, ReadError> {
        let (txn, states) = self.snapshot()?;
        let documents = txn.open_table(DOCS)?.len()?;
        let mut indexes = Vec::new();
        for (name, state) in states {
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
            unavailable: self.unavailable_indexes(),
        })
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
    /// holds the same store, but redb may refuse further work on this handle: reopen it.
    pub fn compact_file(&mut self) -> Result<FileCompaction, CompactFileError> {
        let bytes_before = file_len(self.path());
        let others = Arc::strong_count(&self.inner).saturating_sub(1);
        let inner = Arc::get_mut(&mut self.inner).ok_or(CompactFileError::InUse { others })?;
        inner.log.flush(&inner.db)?;
        // Only this handle is left, so no writer holds `inner.writer` and no reader holds
        // a transaction (a `Reader` borrows the store).
        let db = inner.db.writer().ok_or(StorageError::ReadOnly)?;
        let compacted = db.compact()?;
        Ok(FileCompaction {
            compacted,
            bytes_before,
            bytes_after: file_len(self.path()),
        })
    }
}

/// The size of the file at `path`, or 0 (the store may live on another backend).
fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}
