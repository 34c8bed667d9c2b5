//! A consistent copy of a live store (`folio backup`): every table of one committed state
//! (a read transaction: the writer's later commits do not change what it reads) written
//! into a new file in one write transaction, durably committed, then renamed to its name.
//! A copy cut short leaves no file under that name. The copy is packed (tables written in
//! key order) and holds nothing of the source's free pages.

use std::path::{Path, PathBuf};

use redb::{Key, ReadTransaction, TableDefinition, TableHandle, Value, WriteTransaction};

use crate::storage::error::{BackupError, StorageError};
use crate::storage::file::open::writer_at;
use crate::storage::file::tables::*;

/// What a backup copied.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct BackupReport {
    /// The new file.
    pub path: PathBuf,
    /// Tables copied.
    pub tables: usize,
    /// Rows copied, every table together.
    pub rows: u64,
    /// The new file's size.
    pub bytes: u64,
}

/// Copies the state `from` reads into a new store at `dest`, which must not exist.
pub(crate) fn backup(from: &ReadTransaction, dest: &Path) -> Result<BackupReport, BackupError> {
    if dest.exists() {
        return Err(BackupError::Exists(dest.to_path_buf()));
    }
    let mut partial = dest.as_os_str().to_owned();
    partial.push(format!(".partial-{}", std::process::id()));
    let partial = PathBuf::from(partial);
    // A copy this process left when it was cut short would be opened, not made anew.
    let _ = std::fs::remove_file(&partial);
    let copied = copy_to(from, &partial);
    let renamed = copied.and_then(|(tables, rows)| {
        std::fs::rename(&partial, dest).map_err(|source| BackupError::Io {
            path: dest.to_path_buf(),
            source,
        })?;
        let bytes = std::fs::metadata(dest).map(|m| m.len()).unwrap_or(0);
        Ok(BackupReport {
            path: dest.to_path_buf(),
            tables,
            rows,
            bytes,
        })
    });
    if renamed.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    renamed
}

fn copy_to(from: &ReadTransaction, path: &Path) -> Result<(usize, u64), BackupError> {
    let db = writer_at(path, true, || Ok(()))?;
    let txn = db.begin_write().map_err(StorageError::from)?;
    let known = known_tables();
    for table in from.list_tables().map_err(StorageError::from)? {
        if !known.contains(&table.name()) {
            return Err(BackupError::UnknownTable(table.name().to_string()));
        }
    }
    let mut rows = 0;
    rows += copy(from, &txn, META)?;
    rows += copy(from, &txn, DOCS)?;
    rows += copy(from, &txn, REVISIONS)?;
    rows += copy(from, &txn, REV_TEXT)?;
    rows += copy(from, &txn, INDEXES)?;
    rows += copy(from, &txn, DOC_CHUNKS)?;
    rows += copy(from, &txn, PARENTS)?;
    rows += copy(from, &txn, CHILDREN)?;
    rows += copy(from, &txn, SEGMENTS)?;
    rows += copy(from, &txn, SEGMENT_VECTORS)?;
    rows += copy(from, &txn, SEGMENT_GRAPHS)?;
    rows += copy(from, &txn, VERSIONS)?;
    rows += copy(from, &txn, ACL)?;
    rows += copy(from, &txn, ACL_CURRENT)?;
    rows += copy(from, &txn, TAGS)?;
    rows += copy(from, &txn, ALIASES)?;
    rows += copy(from, &txn, SERVING)?;
    rows += copy(from, &txn, REQUEST_LOG)?;
    txn.commit().map_err(StorageError::from)?;
    Ok((known.len(), rows))
}

/// The names of the tables [`copy_to`] copies: a table of another name (a newer format's)
/// stops the backup rather than be left out.
fn known_tables() -> [&'static str; 18] {
    [
        META.name(),
        DOCS.name(),
        REVISIONS.name(),
        REV_TEXT.name(),
        INDEXES.name(),
        DOC_CHUNKS.name(),
        PARENTS.name(),
        CHILDREN.name(),
        SEGMENTS.name(),
        SEGMENT_VECTORS.name(),
        SEGMENT_GRAPHS.name(),
        VERSIONS.name(),
        ACL.name(),
        ACL_CURRENT.name(),
        TAGS.name(),
        ALIASES.name(),
        SERVING.name(),
        REQUEST_LOG.name(),
    ]
}

/// Copies one table's rows in key order (a table the source lacks is made empty).
fn copy<K: Key + 'static, V: Value + 'static>(
    from: &ReadTransaction,
    to: &WriteTransaction,
    definition: TableDefinition<K, V>,
) -> Result<u64, StorageError> {
    let mut target = to.open_table(definition)?;
    let source = match from.open_table(definition) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    let mut rows = 0;
    for entry in redb::ReadableTable::iter(&source)? {
        let (key, value) = entry?;
        target.insert(key.value(), value.value())?;
        rows += 1;
    }
    Ok(rows)
}
