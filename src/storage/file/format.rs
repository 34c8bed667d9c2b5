//! What a file holds and what this build makes of it: a new file initialised, this
//! format checked, an older one upgraded in place.

use std::path::Path;

use redb::{Database, ReadTransaction, ReadableDatabase, ReadableTable};

use crate::chunk::ChunkSpec;
use crate::embed::EmbedderIdentity;
use crate::storage::error::{OpenError, StorageError};
use crate::storage::file::open::Db;
use crate::storage::file::records::{now_ms, IndexRecord};
use crate::storage::file::records::{GraphParams, VectorStorage};
use crate::storage::file::tables::{
    create_index_tables, create_tables, DEFAULT_INDEX, FORMAT_VERSION, META, OLDEST_FORMAT_VERSION,
};
use crate::storage::file::upgrade::upgrade;

/// The settings of a new store's `default` index.
pub(crate) struct FirstIndex {
    pub spec: ChunkSpec,
    pub embedder: EmbedderIdentity,
    pub graph: GraphParams,
    pub vectors: VectorStorage,
}

/// Makes the writer's file a store of this build's format: a file with no table yet (a
/// new file, or one whose creation was cut short before folio's tables were written) is
/// initialised when `options.create` (else it holds no store: [`OpenError::NotFound`]); an
/// older format is upgraded in place.
pub(crate) fn prepare(
    db: &Database,
    path: &Path,
    create: bool,
    first_index: impl FnOnce() -> Result<FirstIndex, OpenError>,
) -> Result<(), OpenError> {
    match read_format(&db.begin_read()?)? {
        Format::Blank if create => initialise(db, first_index()?),
        Format::Blank => Err(OpenError::NotFound(path.to_path_buf())),
        Format::Version(found) => check_format(db, path, found),
        Format::Foreign => Err(not_a_store(path)),
    }
}

/// What a read-only open can read: this build's format, nothing older (upgrading writes).
pub(crate) fn check_readable(db: &Db, path: &Path) -> Result<(), OpenError> {
    match read_format(&db.begin_read()?)? {
        Format::Blank => Err(OpenError::NotFound(path.to_path_buf())),
        Format::Version(FORMAT_VERSION) => Ok(()),
        Format::Version(found @ OLDEST_FORMAT_VERSION..FORMAT_VERSION) => {
            Err(OpenError::UpgradeNeeded {
                path: path.to_path_buf(),
                found,
                current: FORMAT_VERSION,
            })
        }
        Format::Version(found) => Err(unsupported(path, found)),
        Format::Foreign => Err(not_a_store(path)),
    }
}

/// What a redb file holds.
enum Format {
    /// No table at all: a store whose creation stopped before folio's tables were written.
    Blank,
    /// A folio store of this format version.
    Version(u32),
    /// Tables, but not folio's.
    Foreign,
}

fn read_format(txn: &ReadTransaction) -> Result<Format, StorageError> {
    if let Some(version) = read_meta_u32(txn, "format_version")? {
        return Ok(Format::Version(version));
    }
    let blank = txn.list_tables()?.next().is_none() && txn.list_multimap_tables()?.next().is_none();
    Ok(if blank {
        Format::Blank
    } else {
        Format::Foreign
    })
}

fn not_a_store(path: &Path) -> OpenError {
    OpenError::NotAStore {
        path: path.to_path_buf(),
        reason: "a redb file without folio's meta table".into(),
    }
}

fn unsupported(path: &Path, found: u32) -> OpenError {
    OpenError::UnsupportedFormat {
        path: path.to_path_buf(),
        found,
        oldest: OLDEST_FORMAT_VERSION,
        supported: FORMAT_VERSION,
    }
}

/// Writes the meta table and the empty `default` index (version 0) of a new file.
fn initialise(db: &Database, first: FirstIndex) -> Result<(), OpenError> {
    let txn = db.begin_write()?;
    {
        let mut meta = txn.open_table(META)?;
        // Another process may have created the store since it was read blank.
        if read_meta_u32_in(&meta, "format_version")?.is_some() {
            return Ok(());
        }
        meta.insert("format_version", FORMAT_VERSION.to_le_bytes().as_slice())?;
        meta.insert("next_rev", 1u64.to_le_bytes().as_slice())?;
        meta.insert("next_index", 1u32.to_le_bytes().as_slice())?;
        let record = IndexRecord {
            id: 0,
            spec: first.spec,
            embedder: first.embedder,
            graph: first.graph,
            head: 0,
            next_child: 0,
            next_parent: 0,
            next_segment: 0,
            created_ms: now_ms(),
            vectors: first.vectors,
        };
        create_index_tables(&txn, DEFAULT_INDEX, &record)?;
        create_tables(&txn)?;
    }
    txn.commit()?;
    Ok(())
}

fn read_meta_u32(txn: &ReadTransaction, key: &str) -> Result<Option<u32>, StorageError> {
    match txn.open_table(META) {
        Ok(meta) => read_meta_u32_in(&meta, key),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn read_meta_u32_in(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
    key: &str,
) -> Result<Option<u32>, StorageError> {
    let Some(value) = meta.get(key)? else {
        return Ok(None);
    };
    let bytes: [u8; 4] = value
        .value()
        .try_into()
        .map_err(|_| StorageError::corrupt(format!("meta `{key}` is not 4 bytes")))?;
    Ok(Some(u32::from_le_bytes(bytes)))
}

/// Refuses a format this build does not read, and upgrades a file of an older format in
/// place, in one write transaction (`upgrade.rs`: versions before 4 lack what later ones
/// added, see `storage-format.md`, "Format versions").
fn check_format(db: &Database, path: &Path, found: u32) -> Result<(), OpenError> {
    match found {
        FORMAT_VERSION => Ok(()),
        from @ OLDEST_FORMAT_VERSION..FORMAT_VERSION => {
            let upgraded = (|| -> Result<(), StorageError> {
                let txn = db.begin_write()?;
                // Another process may have upgraded it since it was read.
                if read_meta_u32_in(&txn.open_table(META)?, "format_version")? != Some(from) {
                    return Ok(());
                }
                upgrade(&txn, from)?;
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
        found => Err(unsupported(path, found)),
    }
}
