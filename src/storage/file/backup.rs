//! A consistent copy of a live store (`folio backup`): every table of one committed state
//! (a read transaction: the writer's later commits do not change what it reads) written
//! into a new file in one write transaction, durably committed, then renamed to its name.
//! A copy cut short leaves no file under that name. The copy is packed (tables written in
//! key order) and holds nothing of the source's free pages.

use std::path::{Path, PathBuf};

use redb::{
    Key, ReadTransaction, ReadableTableMetadata, TableDefinition, TableHandle, WriteTransaction,
};

use crate::storage::error::{BackupError, StorageError};
use crate::storage::file::open::writer_at;
use crate::storage::file::sealed::{contain, ReadSealed, Sealed, WriteSealed};
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

/// Every table of the file, once: `tables!(name)` their names, `tables!(f(a, b))` the
/// results of `f(a, b, TABLE)` for each. A table the source holds and this list lacks (a
/// newer format's) stops the backup rather than be left out.
macro_rules! tables {
    (@each [name] $($table:ident),*) => { [$($table.name()),*] };
    (@each [$f:ident($from:expr, $to:expr, $spare:expr)] $($table:ident),*) => {
        [$($f($from, $to, $spare, $table)),*]
    };
    ($($call:tt)*) => {
        tables!(@each [$($call)*] META, DOCS, REVISIONS, REV_TEXT, INDEXES, DOC_CHUNKS, PARENTS,
            CHILDREN, SEGMENTS, SEGMENT_VECTORS, SEGMENT_GRAPHS, SEGMENT_POSTINGS, VERSIONS, ACL,
            ACL_CURRENT, TAGS,
            ALIASES, SERVING, REQUEST_LOG, PUBLISHED, OUTBOX)
    };
}

/// Copies the state `from` reads into a new store at `dest`, which must not exist.
pub(crate) fn backup(from: &ReadTransaction, dest: &Path) -> Result<BackupReport, BackupError> {
    copy_file(from, dest, None)
}

/// Whether no other row depends on the rows of table `name` (the request log, tags,
/// aliases): a recovery leaves out their damaged rows and copies the rest of the store.
fn spared(name: &str) -> bool {
    [REQUEST_LOG.name(), TAGS.name(), ALIASES.name()].contains(&name)
}

/// Copies the state `from` reads into a new store at `dest`, which must not exist. A
/// damaged row stops the copy, except in the [`spared`] tables when `spared` is given (a
/// recovery): their damaged rows are left out and named there, and `meta.log_bytes`
/// counts the log entries copied.
pub(crate) fn copy_file(
    from: &ReadTransaction,
    dest: &Path,
    mut spared: Option<&mut Vec<String>>,
) -> Result<BackupReport, BackupError> {
    if dest.exists() {
        return Err(BackupError::Exists(dest.to_path_buf()));
    }
    let mut partial = dest.as_os_str().to_owned();
    partial.push(format!(".partial-{}", std::process::id()));
    let partial = PathBuf::from(partial);
    // A copy this process left when it was cut short would be opened, not made anew.
    let _ = std::fs::remove_file(&partial);
    let copied = copy_to(from, &partial, &mut spared);
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

fn copy_to(
    from: &ReadTransaction,
    path: &Path,
    lost: &mut Option<&mut Vec<String>>,
) -> Result<(usize, u64), BackupError> {
    let db = writer_at(path, true, false, || Ok(()))?;
    let txn = db.begin_write().map_err(StorageError::from)?;
    let known = tables!(name);
    // The source may be damaged: redb's panics on its pages become errors.
    let tables = contain(|| Ok::<_, StorageError>(from.list_tables()?.collect::<Vec<_>>()))?;
    for table in tables {
        if !known.contains(&table.name()) {
            return Err(BackupError::UnknownTable(table.name().to_string()));
        }
    }
    let rows = contain(|| {
        tables!(copy(from, &txn, lost))
            .into_iter()
            .sum::<Result<u64, StorageError>>()
    })?;
    txn.commit().map_err(StorageError::from)?;
    Ok((known.len(), rows))
}

/// Copies one table's rows in key order (a table missing from the source is damage), each
/// verified: a damaged store is refused rather than copied with its damage, and so is a
/// table yielding fewer rows than redb records for it (a damaged page that lost entries).
/// A [`spared`] table is the exception when `lost` is given.
fn copy<K: Key + 'static>(
    from: &ReadTransaction,
    to: &WriteTransaction,
    lost: &mut Option<&mut Vec<String>>,
    definition: TableDefinition<K, Sealed>,
) -> Result<u64, StorageError> {
    let mut target = to.open_table(definition)?;
    let source = from.open_table(definition)?;
    let mut leave_out = match lost {
        Some(lost) if spared(definition.name()) => Some(&mut **lost),
        _ => None,
    };
    let recorded = source.len()?;
    let (mut rows, mut bytes) = (0, 0);
    for entry in source.all()? {
        let e = match entry {
            Ok((key, value)) => {
                target.put(key.value(), value.value())?;
                rows += 1;
                bytes += value.value().len() as u64;
                continue;
            }
            Err(e) => e,
        };
        match leave_out.as_deref_mut() {
            Some(lost) if matches!(e, StorageError::Damaged { .. }) => lost.push(e.to_string()),
            // The rest of the table is behind a page redb cannot follow: counted below.
            Some(_) if e.is_damage() => break,
            _ => return Err(e),
        }
    }
    // Without `lost`, a table short of the rows redb records for it has already failed:
    // its rows end with a `DamagedPage` error (`sealed::Rows`).
    match leave_out {
        None => Ok(rows),
        Some(lost) => {
            if rows != recorded {
                lost.push(format!(
                    "table `{}`: {} of its {recorded} rows not copied",
                    definition.name(),
                    recorded.saturating_sub(rows)
                ));
            }
            if definition.name() == REQUEST_LOG.name() {
                to.open_table(META)?
                    .put("log_bytes", bytes.to_le_bytes().as_slice())?;
            }
            Ok(rows)
        }
    }
}
