//! The outbox (format 11): which indexes are published elsewhere (`published`), and the
//! changes to them a follower has not acknowledged yet (`outbox`), appended by the commit
//! that makes each change. See `storage-format.md`, "Outbox".

use std::collections::BTreeSet;

use redb::WriteTransaction;

use crate::storage::error::StorageError;
use crate::storage::file::records::{decode, encode, now_ms};
use crate::storage::file::sealed::{ReadSealed, Sealed, WriteSealed};
use crate::storage::file::tables::{META, OUTBOX, PUBLISHED};

/// The `meta` key of the next outbox sequence number (u64 LE; absent = 1).
pub(crate) const NEXT_OUTBOX: &str = "next_outbox";

/// `published` value: where an index was published, as the publish named it.
#[derive(Debug, Clone, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct PublishedRecord {
    pub uri: String,
    pub prefix: String,
    pub since_ms: u64,
}

/// What an outbox entry asks a follower to bring up to date. Append only.
#[derive(Debug, Clone, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) enum ChangeRecord {
    /// 0: who a document admits changed.
    Audience(String),
    /// 1: a document was deleted.
    Deleted(String),
    /// 2: an alias was set, rolled back or removed.
    Alias(String),
    /// 3: `gc` collected these versions of the index.
    Collected(Vec<u64>),
}

/// `outbox` value.
#[derive(Debug, Clone, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct OutboxRecord {
    pub index: u32,
    pub time_ms: u64,
    pub change: ChangeRecord,
}

/// The ids of the published indexes, read inside a write so its entries are decided on
/// the marks that commit with them.
pub(crate) fn published_ids(txn: &WriteTransaction) -> Result<BTreeSet<u32>, StorageError> {
    let mut out = BTreeSet::new();
    for row in txn.open_table(PUBLISHED)?.all()? {
        out.insert(row?.0.value());
    }
    Ok(out)
}

/// Appends `changes` (index id, change) to the outbox, numbered from `meta.next_outbox`,
/// stamped with this commit's time. Nothing is written when there is none.
pub(crate) fn append(
    txn: &WriteTransaction,
    changes: Vec<(u32, ChangeRecord)>,
) -> Result<(), StorageError> {
    if changes.is_empty() {
        return Ok(());
    }
    let mut meta = txn.open_table(META)?;
    let mut next = read_next(&meta)?;
    let time_ms = now_ms();
    let mut outbox = txn.open_table(OUTBOX)?;
    for (index, change) in changes {
        let record = OutboxRecord {
            index,
            time_ms,
            change,
        };
        outbox.put(next, encode(&record).as_slice())?;
        next += 1;
    }
    meta.put(NEXT_OUTBOX, next.to_le_bytes().as_slice())?;
    Ok(())
}

fn read_next(meta: &redb::Table<&str, Sealed>) -> Result<u64, StorageError> {
    match meta.read(NEXT_OUTBOX)? {
        Some(v) => {
            let bytes: [u8; 8] = v
                .value()
                .try_into()
                .map_err(|_| StorageError::corrupt("meta next_outbox is not 8 bytes"))?;
            Ok(u64::from_le_bytes(bytes))
        }
        None => Ok(1),
    }
}

/// Decodes an `outbox` value.
pub(crate) fn decode_entry(bytes: &[u8]) -> Result<OutboxRecord, StorageError> {
    decode(bytes, "outbox entry")
}

/// Decodes a `published` value.
pub(crate) fn decode_published(bytes: &[u8]) -> Result<PublishedRecord, StorageError> {
    decode(bytes, "published mark")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes `storage-format.md` ("Outbox") shows.
    #[test]
    fn records_encode_as_documented() {
        let entry = OutboxRecord {
            index: 0,
            time_ms: 1_700_000_000_000,
            change: ChangeRecord::Audience("a".into()),
        };
        assert_eq!(
            encode(&entry),
            [0x00, 0xFD, 0x00, 0x68, 0xE5, 0xCF, 0x8B, 0x01, 0x00, 0x00, 0x00, 0x01, 0x61]
        );
        let alias = OutboxRecord {
            index: 2,
            time_ms: 5,
            change: ChangeRecord::Alias("prod".into()),
        };
        assert_eq!(
            encode(&alias),
            [0x02, 0x05, 0x02, 0x04, b'p', b'r', b'o', b'd']
        );
        let mark = PublishedRecord {
            uri: "http://h:1".into(),
            prefix: "folio".into(),
            since_ms: 7,
        };
        let mut expected = vec![10];
        expected.extend_from_slice(b"http://h:1");
        expected.push(5);
        expected.extend_from_slice(b"folio");
        expected.push(7);
        assert_eq!(encode(&mark), expected);
        assert_eq!(decode_entry(&encode(&entry)).expect("decode"), entry);
        let collected = OutboxRecord {
            index: 1,
            time_ms: 5,
            change: ChangeRecord::Collected(vec![3, 251]),
        };
        assert_eq!(
            encode(&collected),
            [0x01, 0x05, 0x03, 0x02, 0x03, 0xFB, 0xFB, 0x00]
        );
        // A change tag past the last one is damage, not a change.
        assert!(decode_entry(&[0x00, 0x05, 0x04, 0x00]).is_err());
    }
}
