//! Reading single rows of the tables, with a missing or malformed row reported as
//! corruption.

use redb::ReadTransaction;

use crate::storage::error::StorageError;
use crate::storage::file::records::{
    decode, ChildRecord, DocEntry, ParentRecord, Retention, RevisionRecord,
};
use crate::storage::file::sealed::ReadSealed;
use crate::storage::file::tables::{DOCS, META, RETENTION, REVISIONS, REV_TEXT};

pub(crate) fn read_doc_entry(
    txn: &ReadTransaction,
    doc_id: &str,
) -> Result<Option<DocEntry>, StorageError> {
    let table = txn.open_table(DOCS)?;
    let Some(value) = table.read(doc_id)? else {
        return Ok(None);
    };
    Ok(Some(decode(value.value(), "doc entry")?))
}

/// The document `entry` is the current state of: its revision, text and ACL.
pub(crate) fn read_document(
    txn: &ReadTransaction,
    entry: DocEntry,
) -> Result<crate::document::Document, StorageError> {
    let rev = read_revision(txn, entry.rev)?;
    let text = read_text(txn, entry.rev)?;
    Ok(crate::document::Document {
        doc_id: rev.doc_id,
        title: rev.title,
        source_uri: rev.source_uri,
        format: rev.format,
        text,
        acl: entry.acl,
        published_at: rev.published_at,
        updated_at: rev.updated_at,
        metadata: rev
            .metadata
            .into_iter()
            .map(|(k, v)| (k, v.into()))
            .collect(),
    })
}

pub(crate) fn read_revision(
    txn: &ReadTransaction,
    rev: u64,
) -> Result<RevisionRecord, StorageError> {
    let table = txn.open_table(REVISIONS)?;
    let value = table
        .read(rev)?
        .ok_or_else(|| StorageError::corrupt(format!("revision {rev} missing")))?;
    decode(value.value(), "revision")
}

pub(crate) fn read_text(txn: &ReadTransaction, rev: u64) -> Result<String, StorageError> {
    let table = txn.open_table(REV_TEXT)?;
    let value = table
        .read(rev)?
        .ok_or_else(|| StorageError::corrupt(format!("text of revision {rev} missing")))?;
    String::from_utf8(value.value().to_vec())
        .map_err(|_| StorageError::corrupt(format!("text of revision {rev} is not UTF-8")))
}

pub(crate) fn read_child_in(
    table: &impl ReadSealed<(u32, u32)>,
    index: u32,
    number: u32,
) -> Result<ChildRecord, StorageError> {
    let value = table
        .read((index, number))?
        .ok_or_else(|| StorageError::corrupt(format!("child {number} of index {index} missing")))?;
    decode(value.value(), "child record")
}

pub(crate) fn read_parent_in(
    table: &impl ReadSealed<(u32, u32)>,
    index: u32,
    number: u32,
) -> Result<ParentRecord, StorageError> {
    let value = table.read((index, number))?.ok_or_else(|| {
        StorageError::corrupt(format!("parent {number} of index {index} missing"))
    })?;
    decode(value.value(), "parent record")
}

/// A stored span of a stored text; a span that does not fit is corruption, not a panic.
pub(crate) fn slice_text(text: &str, start: u64, end: u64) -> Result<&str, StorageError> {
    usize::try_from(start)
        .ok()
        .zip(usize::try_from(end).ok())
        .and_then(|(s, e)| text.get(s..e))
        .ok_or_else(|| StorageError::corrupt(format!("span {start}..{end} outside its text")))
}

/// The store's retention policy, as recorded (`Off` without one).
pub(crate) fn read_retention(txn: &ReadTransaction) -> Result<Retention, StorageError> {
    match txn.open_table(META)?.read(RETENTION)? {
        Some(value) => Retention::decode(value.value()),
        None => Ok(Retention::Off),
    }
}
