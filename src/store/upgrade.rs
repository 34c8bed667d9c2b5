//! Upgrading files of older format versions in place, when they are opened.
//!
//! Format 1 lacks the tables format 2 added; formats 1 and 2 store records with bincode's
//! fixed-width integers, format 3 with its variable-width ones (`records::config`). The
//! whole upgrade is one redb write transaction: a crash, a full disk or a failed write
//! leaves the file as it was (redb falls back to the last committed header), and the
//! commit switches it to format 3 at once. See `storage-format.md`, "Format versions".

use redb::{Key, ReadableTable, TableDefinition, TableHandle, WriteTransaction};

use super::error::StorageError;
use super::log::LoggedRequest;
use super::records::{
    decode_legacy, encode, AliasRecord, ChildRecord, DocChunks, DocEntry, IndexRecord,
    ParentRecord, RevisionRecord, SegmentRecord, VersionRecord,
};
use super::tables::*;

/// Brings a file of format `from` (1 or 2) to [`FORMAT_VERSION`] inside `txn`; the caller
/// commits. Every table whose values are bincode records is rewritten; the others (`meta`,
/// `rev_text`, `segment_vectors`, `segment_graphs`, `acl`, `tags`, `serving`) hold raw
/// bytes, f32 rows, graph blobs, roaring bitmaps and redb integers, which did not change.
/// No key is a bincode record (keys are redb's own integer, string and tuple types).
pub(crate) fn upgrade(txn: &WriteTransaction, from: u32) -> Result<(), StorageError> {
    if from < 2 {
        super::versions::create_tables(txn)?;
    }
    reencode::<&str, DocEntry>(txn, DOCS, "doc entry")?;
    reencode::<u64, RevisionRecord>(txn, REVISIONS, "revision")?;
    reencode::<&str, IndexRecord>(txn, INDEXES, "index record")?;
    reencode::<(u32, u64), DocChunks>(txn, DOC_CHUNKS, "doc chunks")?;
    reencode::<(u32, u32), ParentRecord>(txn, PARENTS, "parent record")?;
    reencode::<(u32, u32), ChildRecord>(txn, CHILDREN, "child record")?;
    reencode::<(u32, u32), SegmentRecord>(txn, SEGMENTS, "segment record")?;
    reencode::<(u32, u64), VersionRecord>(txn, VERSIONS, "version record")?;
    reencode::<&str, AliasRecord>(txn, ALIASES, "alias record")?;
    reencode::<u64, LoggedRequest>(txn, REQUEST_LOG, "logged request")?;
    txn.open_table(META)?
        .insert("format_version", FORMAT_VERSION.to_le_bytes().as_slice())?;
    Ok(())
}

/// Decodes every value of `definition` as a format 1/2 `T` and writes it, in the current
/// encoding and in key order, to a new table that then replaces the old one. Rewriting the
/// values in place would keep every leaf page (redb does not merge leaves whose values
/// shrank), so the file would not get smaller; a table filled in key order packs its pages
/// like a freshly written store. A value that does not decode is corruption: the upgrade
/// stops and nothing is committed.
fn reencode<K: Key + 'static, T: bincode::Encode + bincode::Decode<()>>(
    txn: &WriteTransaction,
    definition: TableDefinition<K, &'static [u8]>,
    what: &str,
) -> Result<(), StorageError> {
    let name = format!("upgrade.{}", definition.name());
    let rebuilt: TableDefinition<K, &[u8]> = TableDefinition::new(&name);
    txn.delete_table(rebuilt)?;
    {
        let old = txn.open_table(definition)?;
        let mut new = txn.open_table(rebuilt)?;
        for entry in old.iter()? {
            let (key, value) = entry?;
            let record: T = decode_legacy(value.value(), what)?;
            new.insert(key.value(), encode(&record).as_slice())?;
        }
    }
    txn.delete_table(definition)?;
    txn.rename_table(rebuilt, definition)?;
    Ok(())
}
