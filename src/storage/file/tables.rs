//! The tables of the file. `storage-format.md` documents each key and value.

use redb::{TableDefinition, WriteTransaction};
use roaring::RoaringBitmap;

use crate::storage::error::StorageError;
use crate::storage::file::records::{encode, encode_bitmap, IndexRecord, VersionRecord};
use crate::storage::file::sealed::{Sealed, WriteSealed};

/// The version of the file layout this build reads and writes. Independent of the crate
/// version; bumped whenever a table, key or value changes meaning.
pub const FORMAT_VERSION: u32 = 11;

/// The oldest layout this build opens; older supported files are upgraded in place on open
/// (see `storage-format.md`, "Format versions").
pub const OLDEST_FORMAT_VERSION: u32 = 1;

/// The index every store starts with.
pub const DEFAULT_INDEX: &str = "default";

/// Store-wide settings: `format_version` (u32 LE), `next_rev` (u64 LE), `next_index` (u32 LE),
/// `next_request` (u64 LE, absent until the first logged request), `log_bytes` (u64 LE, the
/// request log's record bytes), `log_cap` (u64 LE, absent without a size cap), `file_root`
/// ([`FILE_ROOT`]), `retention` ([`RETENTION`]).
pub(crate) const META: TableDefinition<&str, Sealed> = TableDefinition::new("meta");
/// The `meta` key of the folder file documents' ids are relative to (absent = none
/// recorded; see `records::encode_file_root`).
pub(crate) const FILE_ROOT: &str = "file_root";
/// The `meta` key of the store's retention policy (absent = off; see
/// `write::gc::Retention::encode`).
pub(crate) const RETENTION: &str = "retention";
/// doc_id -> [`DocEntry`](crate::storage::file::records::DocEntry).
pub(crate) const DOCS: TableDefinition<&str, Sealed> = TableDefinition::new("docs");
/// rev -> [`RevisionRecord`](crate::storage::file::records::RevisionRecord).
pub(crate) const REVISIONS: TableDefinition<u64, Sealed> = TableDefinition::new("revisions");
/// rev -> the revision's source text, raw UTF-8.
pub(crate) const REV_TEXT: TableDefinition<u64, Sealed> = TableDefinition::new("rev_text");
/// index name -> [`IndexRecord`](crate::storage::file::records::IndexRecord).
pub(crate) const INDEXES: TableDefinition<&str, Sealed> = TableDefinition::new("indexes");
/// (index id, rev) -> [`DocChunks`](crate::storage::file::records::DocChunks).
pub(crate) const DOC_CHUNKS: TableDefinition<(u32, u64), Sealed> =
    TableDefinition::new("doc_chunks");
/// (index id, parent number) -> [`ParentRecord`](crate::storage::file::records::ParentRecord).
pub(crate) const PARENTS: TableDefinition<(u32, u32), Sealed> = TableDefinition::new("parents");
/// (index id, child number) -> [`ChildRecord`](crate::storage::file::records::ChildRecord).
pub(crate) const CHILDREN: TableDefinition<(u32, u32), Sealed> = TableDefinition::new("children");
/// (index id, segment id) -> [`SegmentRecord`](crate::storage::file::records::SegmentRecord).
pub(crate) const SEGMENTS: TableDefinition<(u32, u32), Sealed> = TableDefinition::new("segments");
/// (index id, segment id, block) -> rows of f32 LE.
pub(crate) const SEGMENT_VECTORS: TableDefinition<(u32, u32, u32), Sealed> =
    TableDefinition::new("segment_vectors");
/// (index id, segment id, block) -> a slice of the encoded graph.
pub(crate) const SEGMENT_GRAPHS: TableDefinition<(u32, u32, u32), Sealed> =
    TableDefinition::new("segment_graphs");
/// (index id, segment id, block) -> a slice of the segment's lexical postings, in
/// `LexicalSegment::to_bytes`'s layout (format 10; `postings.rs`).
pub(crate) const SEGMENT_POSTINGS: TableDefinition<(u32, u32, u32), Sealed> =
    TableDefinition::new("segment_postings");
/// (index id, version) -> [`VersionRecord`](crate::storage::file::records::VersionRecord).
pub(crate) const VERSIONS: TableDefinition<(u32, u64), Sealed> = TableDefinition::new("versions");
/// (index id, principal, version) -> roaring bitmap of the children the principal sees from
/// that version on (until a later entry). The public principal is the empty string.
pub(crate) const ACL: TableDefinition<(u32, &str, u64), Sealed> = TableDefinition::new("acl");
/// (index id, principal) -> roaring bitmap of every child number, in any version, whose
/// document currently admits the principal (format 4; `current.rs`). Older versions are
/// searched through it, so revocations and deletions reach them.
pub(crate) const ACL_CURRENT: TableDefinition<(u32, &str), Sealed> =
    TableDefinition::new("acl_current");
/// (index id, tag) -> the version the tag names (u64 LE).
pub(crate) const TAGS: TableDefinition<(u32, &str), Sealed> = TableDefinition::new("tags");
/// alias name -> [`AliasRecord`](crate::storage::file::records::AliasRecord).
pub(crate) const ALIASES: TableDefinition<&str, Sealed> = TableDefinition::new("aliases");
/// index id -> the version a bare index name serves (u64 LE, after a rollback); absent = the
/// head.
pub(crate) const SERVING: TableDefinition<u32, Sealed> = TableDefinition::new("serving");
/// request id -> [`LoggedRequest`](crate::storage::log::LoggedRequest).
pub(crate) const REQUEST_LOG: TableDefinition<u64, Sealed> = TableDefinition::new("request_log");

/// index id -> [`PublishedRecord`](crate::storage::file::outbox::PublishedRecord): the
/// index is published elsewhere, so commits that change it record what in `outbox`
/// (format 11).
pub(crate) const PUBLISHED: TableDefinition<u32, Sealed> = TableDefinition::new("published");
/// sequence number -> [`OutboxRecord`](crate::storage::file::outbox::OutboxRecord): a change
/// to a published index not yet acknowledged by its follower (format 11).
pub(crate) const OUTBOX: TableDefinition<u64, Sealed> = TableDefinition::new("outbox");

/// Opens the tables format version 2 added, so readers never meet a missing one.
pub(crate) fn create_tables(txn: &WriteTransaction) -> Result<(), StorageError> {
    txn.open_table(TAGS)?;
    txn.open_table(ALIASES)?;
    txn.open_table(SERVING)?;
    txn.open_table(REQUEST_LOG)?;
    create_outbox_tables(txn)
}

/// Opens the tables format version 11 added.
pub(crate) fn create_outbox_tables(txn: &WriteTransaction) -> Result<(), StorageError> {
    txn.open_table(PUBLISHED)?;
    txn.open_table(OUTBOX)?;
    Ok(())
}

/// Writes a new index's record and its empty version 0.
pub(crate) fn create_index_tables(
    txn: &WriteTransaction,
    name: &str,
    record: &IndexRecord,
) -> Result<(), StorageError> {
    let stored = empty_version(record.created_ms);
    txn.open_table(VERSIONS)?
        .put((record.id, record.head), &encode(&stored))?;
    txn.open_table(INDEXES)?.put(name, &encode(record))?;
    // Open every table once so readers of a new store never meet a missing table.
    txn.open_table(DOCS)?;
    txn.open_table(REVISIONS)?;
    txn.open_table(REV_TEXT)?;
    txn.open_table(DOC_CHUNKS)?;
    txn.open_table(PARENTS)?;
    txn.open_table(CHILDREN)?;
    txn.open_table(SEGMENTS)?;
    txn.open_table(SEGMENT_VECTORS)?;
    txn.open_table(SEGMENT_GRAPHS)?;
    txn.open_table(SEGMENT_POSTINGS)?;
    txn.open_table(ACL)?;
    txn.open_table(ACL_CURRENT)?;
    Ok(())
}

/// Version 0 of every index: nothing in it.
pub(crate) fn empty_version(created_ms: u64) -> VersionRecord {
    VersionRecord {
        segments: Vec::new(),
        live: encode_bitmap(&RoaringBitmap::new()),
        created_ms,
        change: "create".to_string(),
        documents: 0,
    }
}
