//! Writing the outbox's marks and acknowledgements, and the entries of alias changes (a
//! batch's document entries are gathered in `batch.rs`). See `storage-format.md`,
//! "Outbox".

use std::collections::BTreeSet;

use crate::storage::error::{IndexError, StorageError};
use crate::storage::file::outbox::{append, published_ids, ChangeRecord, PublishedRecord};
use crate::storage::file::records::{encode, now_ms, AliasRecord};
use crate::storage::file::sealed::WriteSealed;
use crate::storage::file::tables::{OUTBOX, PUBLISHED};
use crate::storage::write::writer::Writer;
use redb::WriteTransaction;

impl Writer<'_> {
    /// Marks `index` as published to `uri` under `prefix` (replacing an earlier mark): from
    /// this commit on, every commit that changes its documents' audiences, deletes one of
    /// them or moves one of its aliases records it in the outbox.
    pub(crate) fn mark_published(
        &self,
        index: &str,
        uri: &str,
        prefix: &str,
    ) -> Result<(), IndexError> {
        let mut turn = self.lock_writer()?;
        let state = self.index(index).ok_or_else(|| IndexError::UnknownIndex {
            name: index.to_string(),
        })?;
        let txn = turn.txn()?;
        let record = PublishedRecord {
            uri: uri.to_string(),
            prefix: prefix.to_string(),
            since_ms: now_ms(),
        };
        txn.open_table(PUBLISHED)?
            .put(state.id(), encode(&record).as_slice())?;
        txn.commit()?;
        Ok(())
    }

    /// Deletes every outbox entry up to and including `through` (a follower applied them);
    /// returns how many went. Entries are only ever appended after the highest number
    /// handed out, so an acknowledgement never removes one its follower has not read.
    pub(crate) fn acknowledge(&self, through: u64) -> Result<u64, IndexError> {
        let mut turn = self.lock_writer()?;
        let txn = turn.txn()?;
        let mut removed = 0;
        {
            let mut outbox = txn.open_table(OUTBOX)?;
            outbox.retain_in(..=through, |_, _| {
                removed += 1;
                false
            })?;
        }
        txn.commit()?;
        Ok(removed)
    }
}

/// Records an alias change for every published index its routes named before or name
/// now, in the transaction that changes it.
pub(crate) fn record_alias(
    txn: &WriteTransaction,
    alias: &str,
    before: Option<&AliasRecord>,
    after: Option<&AliasRecord>,
) -> Result<(), StorageError> {
    let published = published_ids(txn)?;
    if published.is_empty() {
        return Ok(());
    }
    let named: BTreeSet<u32> = [before, after]
        .into_iter()
        .flatten()
        .flat_map(|r| r.routes.iter().map(|route| route.index))
        .filter(|id| published.contains(id))
        .collect();
    append(
        txn,
        named
            .into_iter()
            .map(|id| (id, ChangeRecord::Alias(alias.to_string())))
            .collect(),
    )
}
