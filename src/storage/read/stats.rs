//! The store as a whole: its summary (`folio stats`) and giving the file back its free
//! space.

use std::path::{Path, PathBuf};

use redb::{ReadTransaction, ReadableTableMetadata};

use crate::chunk::ChunkSpec;
use crate::embed::EmbedderIdentity;
use crate::input::FileRoot;
use crate::storage::error::{BackupError, CompactFileError, ReadError, StorageError};
use crate::storage::file::backup::{self, BackupReport};
use crate::storage::file::records::{decode_file_root, Retention};
use crate::storage::file::rows::read_retention;
use crate::storage::file::sealed::ReadSealed;
use crate::storage::file::shared_segments::Sharing::{Mapped, Refused};
use crate::storage::file::tables::{DOCS, FILE_ROOT, FORMAT_VERSION, META};
use crate::storage::read::catalog::Catalog;
use crate::storage::read::lexical;
use crate::storage::read::state;
use crate::storage::read::unavailable::UnavailableIndex;

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
    /// The folder file documents' ids are relative to (see [`crate::Store::file_root`]).
    pub file_root: Option<FileRoot>,
    /// Each loaded index, by name.
    pub indexes: Vec<IndexStats>,
    /// Indexes that could not be loaded (see [`crate::Store::unavailable_indexes`]).
    pub unavailable: Vec<UnavailableIndex>,
    /// The retention policy applied after each commit ([`crate::Store::set_retention`]).
    pub retention: Retention,
}

/// What [`crate::Store::compact_file`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FileCompaction {
    /// Whether redb moved or released any page (`false`: nothing to give back).
    pub compacted: bool,
    /// The file's size before and after (0 when the store is not a file, see
    /// [`StoreBuilder::open_with_backend`](crate::store::StoreBuilder::open_with_backend)).
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
    /// Those of them mapped from shared segment files (see
    /// [`StoreBuilder::shared_segments`](crate::store::StoreBuilder::shared_segments)).
    pub mapped_segments: usize,
    /// Those of them whose lexical postings are mapped from shared postings files (where
    /// shared files are on, the stats load the postings as a lexical search would, making
    /// missing files).
    pub mapped_postings: usize,
    /// Why a segment or its postings are in this process's memory though shared files are
    /// on, or why its postings could not be read (the first such reason), if one is.
    pub shared_refused: Option<String>,
    /// Principals named by the ACLs of its documents.
    pub principals: Vec<String>,
}

impl Catalog {
    /// Counts and settings, for `folio stats`.
    pub(crate) fn stats(&self) -> Result<StoreStats, ReadError> {
        let (txn, states) = self.snapshot()?;
        let documents = txn.open_table(DOCS)?.len()?;
        let file_root = read_file_root(&txn)?;
        let mut indexes = Vec::new();
        for (name, state) in states {
            let view = state.head();
            let segments = view.segments();
            // Where postings are shared, they are loaded as a lexical search would load
            // them, so the counts say what searches will read (and the files exist after);
            // postings that cannot be read are reported, not fatal to the summary.
            let mut unreadable = None;
            if let Some(files) = state.files() {
                for segment in segments {
                    let loaded = lexical::postings(&txn, state.record(), Some(files), segment);
                    if let (Err(e), None) = (loaded, &unreadable) {
                        unreadable = Some(format!("segment {} postings: {e}", segment.id()));
                    }
                }
            }
            indexes.push(IndexStats {
                name,
                version: view.version(),
                embedder: state.record().embedder.clone(),
                spec: state.record().spec,
                live_children: view.live().len(),
                segments: view.segments().len(),
                graph_segments: view.segments().iter().filter(|s| s.has_graph()).count(),
                mapped_segments: segments.iter().filter(|s| *s.sharing() == Mapped).count(),
                mapped_postings: segments
                    .iter()
                    .filter(|s| s.lexical().get().is_some_and(|l| l.is_mapped()))
                    .count(),
                shared_refused: segments
                    .iter()
                    .find_map(|s| match s.sharing() {
                        Refused(reason) => Some(format!("segment {}: {reason}", s.id())),
                        _ => (s.lexical_refused().get())
                            .map(|reason| format!("segment {} postings: {reason}", s.id())),
                    })
                    .or(unreadable),
                principals: state::principals(&txn, state.id())?,
            });
        }
        let file_bytes = file_len(self.path());
        Ok(StoreStats {
            path: self.path().to_path_buf(),
            format_version: FORMAT_VERSION,
            file_bytes,
            documents,
            file_root,
            indexes,
            unavailable: self.unavailable_indexes(),
            retention: read_retention(&txn)?,
        })
    }

    /// The folder file documents' ids are relative to, as recorded.
    pub(crate) fn file_root(&self) -> Result<Option<FileRoot>, ReadError> {
        let (txn, _) = self.snapshot()?;
        Ok(read_file_root(&txn)?)
    }

    /// A consistent copy of the committed state at `dest` (see [`crate::Store::backup`]).
    pub(crate) fn backup(&self, dest: &Path) -> Result<BackupReport, BackupError> {
        let (txn, _) = self.snapshot()?;
        backup::backup(&txn, dest)
    }

    /// Gives the file back its free space (see [`crate::Store::compact_file`]): needs the
    /// writer's handle, held by no one else.
    pub(crate) fn compact_file(&mut self) -> Result<FileCompaction, CompactFileError> {
        let bytes_before = file_len(self.path());
        let db = self.db_mut().ok_or(StorageError::ReadOnly)?;
        let compacted = db.compact()?;
        Ok(FileCompaction {
            compacted,
            bytes_before,
            bytes_after: file_len(self.path()),
        })
    }
}

fn read_file_root(txn: &ReadTransaction) -> Result<Option<FileRoot>, StorageError> {
    let meta = txn.open_table(META)?;
    let Some(value) = meta.read(FILE_ROOT)? else {
        return Ok(None);
    };
    Ok(Some(decode_file_root(value.value())?))
}

/// The size of the file at `path`, or 0 (the store may live on another backend).
fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}
