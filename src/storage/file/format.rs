//! What a file holds and what this build makes of it: a new file initialised, this
//! format checked, an older one upgraded in place.

use std::path::Path;

use redb::{
    Database, ReadTransaction, ReadableDatabase, ReadableTable, TableDefinition, TableHandle,
    WriteTransaction,
};

use crate::chunk::ChunkSpec;
use crate::embed::EmbedderIdentity;
use crate::index::lexical::LexicalLanguage;
use crate::storage::error::{OpenError, StorageError};
use crate::storage::file::open::Db;
use crate::storage::file::records::{now_ms, IndexRecord};
use crate::storage::file::records::{GraphParams, VectorStorage};
use crate::storage::file::sealed::{contain, ReadSealed, WriteSealed};
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
    pub lexical: LexicalLanguage,
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

/// Contained (`sealed::contain`): the first read of a file that may be damaged.
fn read_format(txn: &ReadTransaction) -> Result<Format, StorageError> {
    contain(|| {
        if let Some(version) = read_format_version(txn)? {
            return Ok(Format::Version(version));
        }
        let blank =
            txn.list_tables()?.next().is_none() && txn.list_multimap_tables()?.next().is_none();
        Ok(if blank {
            Format::Blank
        } else {
            Format::Foreign
        })
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
        if meta.read("format_version")?.is_some() {
            return Ok(());
        }
        meta.put("format_version", FORMAT_VERSION.to_le_bytes().as_slice())?;
        meta.put("next_rev", 1u64.to_le_bytes().as_slice())?;
        meta.put("next_index", 1u32.to_le_bytes().as_slice())?;
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
            lexical: first.lexical,
        };
        create_index_tables(&txn, DEFAULT_INDEX, &record)?;
        create_tables(&txn)?;
    }
    txn.commit()?;
    Ok(())
}

/// The `format_version` the meta table records. Until format 8 its values were redb byte
/// strings without checksums (`upgrade.rs`), which redb reports as another value type.
fn read_format_version(txn: &ReadTransaction) -> Result<Option<u32>, StorageError> {
    const KEY: &str = "format_version";
    let bytes = match txn.open_table(META) {
        Ok(meta) => meta.read(KEY)?.map(|v| v.value().to_vec()),
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(redb::TableError::TableTypeMismatch { .. }) => {
            let unsealed: TableDefinition<&str, &[u8]> = TableDefinition::new(META.name());
            let meta = txn.open_table(unsealed)?;
            let value = meta.get(KEY)?;
            value.map(|v| v.value().to_vec())
        }
        Err(e) => return Err(e.into()),
    };
    let Some(bytes) = bytes else {
        return Ok(None);
    };
    let bytes: [u8; 4] = bytes
        .try_into()
        .map_err(|_| StorageError::corrupt(format!("meta `{KEY}` is not 4 bytes")))?;
    Ok(Some(u32::from_le_bytes(bytes)))
}

/// Whether another process upgraded the file since its format was read as `from`: its
/// `meta` table records another version (sealed since format 9, unsealed before).
fn upgraded_meanwhile(txn: &WriteTransaction, from: u32) -> Result<bool, StorageError> {
    match txn.open_table(META) {
        Ok(meta) => {
            let found = meta.read("format_version")?.map(|v| v.value().to_vec());
            Ok(found.as_deref() != Some(from.to_le_bytes().as_slice()))
        }
        Err(redb::TableError::TableTypeMismatch { .. }) => {
            let unsealed: TableDefinition<&str, &[u8]> = TableDefinition::new(META.name());
            let meta = txn.open_table(unsealed)?;
            let found = meta.get("format_version")?.map(|v| v.value().to_vec());
            Ok(found.as_deref() != Some(from.to_le_bytes().as_slice()))
        }
        Err(e) => Err(e.into()),
    }
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
                if upgraded_meanwhile(&txn, from)? {
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
