//! What `Store::recover` can read from a damaged store, the file opened for reading only
//! and never written (a file that needs redb's recovery is read from a recovered copy): the
//! whole store when every row verifies (copied as a backup is), else every index definition
//! and every document that is **reachable**, that is found through redb's trees of the last
//! commit and whose rows verify (a document: its `docs` entry, its current revision record
//! and its text). See `storage-format.md`, "Recovering a damaged store".

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use redb::{Key, ReadTransaction, TableDefinition, TableHandle};

use crate::document::Document;
use crate::storage::error::{BackupError, OpenError, StorageError};
use crate::storage::file::backup::copy_file;
use crate::storage::file::format::check_readable;
use crate::storage::file::open::{untouched_reader_at, Db};
use crate::storage::file::records::{decode, DocEntry, IndexRecord};
use crate::storage::file::rows::read_document;
use crate::storage::file::sealed::{contain, ReadSealed, Sealed};
use crate::storage::file::tables::{DOCS, INDEXES};

/// What [`crate::Store::recover`] copied into the new store, and what it could not.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecoveryReport {
    /// The new store.
    pub path: PathBuf,
    /// The indexes defined again in it, by name.
    pub indexes: Vec<String>,
    /// The documents copied (text, title, source, format, ACL, dates, metadata).
    pub documents: u64,
    /// The store was copied whole (every row verified, the damaged entries of the request
    /// log, tags and aliases aside, and the copy passed the integrity check): every version,
    /// tag, alias, serving pin, the request log, the file root and the retention policy
    /// came along (but the damaged entries, listed in `lost`). Otherwise the documents
    /// were ingested again, and history is among the losses.
    pub whole: bool,
    /// The versions carried, per index (none unless `whole`).
    pub versions: BTreeMap<String, Vec<u64>>,
    /// The tags carried, as `index@tag`.
    pub tags: Vec<String>,
    /// The aliases carried.
    pub aliases: Vec<String>,
    /// What could not be copied: damaged rows (table and key), documents whose revision
    /// or text is damaged (by id), indexes that could not be defined again, the history
    /// (and why) when the store could not be copied whole, the damaged entries of the
    /// request log, tags and aliases a whole copy left out.
    pub lost: Vec<String>,
}

/// The reachable definitions and documents of a damaged store, and what was lost reading
/// them.
pub(crate) struct Reachable {
    pub(crate) indexes: Vec<(String, IndexRecord)>,
    pub(crate) documents: Vec<Document>,
    pub(crate) lost: Vec<String>,
}

/// Reads what is reachable in the store at `path`, opened with [`open`].
pub(crate) fn reachable(db: &Db, path: &Path) -> Result<Reachable, OpenError> {
    let txn = begin(db, path)?;
    let mut found = Reachable {
        indexes: Vec::new(),
        documents: Vec::new(),
        lost: Vec::new(),
    };
    each_row(
        &txn,
        INDEXES,
        &mut found.lost,
        |name, bytes, lost| match decode::<IndexRecord>(bytes, "index record") {
            Ok(record) => found.indexes.push((name.to_string(), record)),
            Err(e) => lost.push(format!("index `{name}`: {e}")),
        },
    )?;
    let mut entries = Vec::new();
    each_row(
        &txn,
        DOCS,
        &mut found.lost,
        |doc_id, bytes, lost| match decode::<DocEntry>(bytes, "doc entry") {
            Ok(entry) => entries.push((doc_id.to_string(), entry)),
            Err(e) => lost.push(format!("document `{doc_id}`: {e}")),
        },
    )?;
    for (doc_id, entry) in entries {
        match contain(|| read_document(&txn, entry)) {
            Ok(document) => found.documents.push(document),
            Err(e) => found
                .lost
                .push(format!("document `{doc_id}`: its current revision: {e}")),
        }
    }
    Ok(found)
}

/// Copies the store at `path` whole into a new store at `dest`, every row verified (a
/// damaged one, or a table short of the rows redb records, stops the copy and leaves no
/// file at `dest`), but for the damaged rows of the request log, tags and aliases: left
/// out, and returned.
pub(crate) fn copy_whole(db: &Db, path: &Path, dest: &Path) -> Result<Vec<String>, BackupError> {
    let txn = begin(db, path)?;
    let mut spared = Vec::new();
    copy_file(&txn, dest, Some(&mut spared))?;
    Ok(spared)
}

/// The store at `path`, opened for reading only and never written (a file whose last
/// writer died is read from a recovered copy), when it is a store of this format.
pub(crate) fn open(path: &Path) -> Result<Db, OpenError> {
    let db = untouched_reader_at(path)?;
    check_readable(&db, path).map_err(|e| e.damage_at(path))?;
    Ok(db)
}

fn begin(db: &Db, path: &Path) -> Result<ReadTransaction, OpenError> {
    db.begin_read()
        .map_err(|e| OpenError::from(StorageError::from(e)).damage_at(path))
}

/// Hands `take` each row of `definition` that verifies; a damaged row is lost (by table
/// and key), and a page redb cannot follow loses the rest of the table.
fn each_row<K: Key + 'static>(
    txn: &ReadTransaction,
    definition: TableDefinition<K, Sealed>,
    lost: &mut Vec<String>,
    mut take: impl FnMut(K::SelfType<'_>, &[u8], &mut Vec<String>),
) -> Result<(), StorageError> {
    let table = match contain(|| Ok::<_, StorageError>(txn.open_table(definition)?)) {
        Ok(table) => table,
        Err(e) if e.is_damage() => {
            lost.push(format!("table `{}`: {e}", definition.name()));
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    for row in table.all()? {
        match row {
            Ok((key, value)) => take(key.value(), value.value(), lost),
            Err(e @ StorageError::Damaged { .. }) => lost.push(e.to_string()),
            Err(e) if e.is_damage() => {
                lost.push(format!("the rest of table `{}`: {e}", definition.name()));
                break;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
