//! Reading the outbox: which indexes are published, and the changes to them a follower
//! has not acknowledged (see `storage-format.md`, "Outbox").

use std::time::{Duration, Instant};

use crate::storage::error::ReadError;
use crate::storage::file::outbox::{decode_entry, decode_published, ChangeRecord};
use crate::storage::file::sealed::ReadSealed;
use crate::storage::file::tables::{OUTBOX, PUBLISHED};
use crate::storage::read::catalog::Catalog;
use crate::storage::read::targets::name_in;

/// An index marked as published ([`crate::store::Outbox::mark_published`]): commits that
/// change it record what changed in the outbox.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Published {
    /// The index.
    pub index: String,
    /// The server it was published to, as the publish named it.
    pub uri: String,
    /// The collection prefix it was published under.
    pub prefix: String,
    /// When it was marked (Unix milliseconds).
    pub since_ms: u64,
}

/// What a follower must bring up to date. It names a thing, not a value: the follower
/// reads the store's current state for it, so applying an entry twice changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
#[non_exhaustive]
pub enum Change {
    /// Who a document admits changed (an ACL change, or an upsert with another ACL).
    Audience {
        /// The document.
        doc_id: String,
    },
    /// A document was deleted.
    Deleted {
        /// The document.
        doc_id: String,
    },
    /// An alias was set, rolled back or removed.
    Alias {
        /// The alias.
        alias: String,
    },
    /// `gc` collected versions of the index: a copy of them elsewhere serves nothing now.
    Collected {
        /// The versions collected.
        versions: Vec<u64>,
    },
}

impl Change {
    /// `audience`, `deleted`, `alias` or `collected`: what `folio milvus status` counts by.
    pub fn kind(&self) -> &'static str {
        match self {
            Change::Audience { .. } => "audience",
            Change::Deleted { .. } => "deleted",
            Change::Alias { .. } => "alias",
            Change::Collected { .. } => "collected",
        }
    }
}

/// One change not yet acknowledged.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct OutboxEntry {
    /// Its place in the outbox: increasing in commit order, never reused.
    pub seq: u64,
    /// When the commit that made it was written (Unix milliseconds).
    pub time_ms: u64,
    /// The published index it changes; `None` once that index was dropped (nothing left
    /// to apply).
    pub index: Option<String>,
    /// What changed.
    pub change: Change,
}

impl Catalog {
    pub(crate) fn published(&self) -> Result<Vec<Published>, ReadError> {
        let (txn, indexes) = self.snapshot()?;
        let mut out = Vec::new();
        for row in txn.open_table(PUBLISHED)?.all()? {
            let (id, value) = row?;
            let record = decode_published(value.value())?;
            // A dropped index's mark names nothing any more.
            if let Some(index) = name_in(&indexes, id.value()) {
                out.push(Published {
                    index,
                    uri: record.uri,
                    prefix: record.prefix,
                    since_ms: record.since_ms,
                });
            }
        }
        Ok(out)
    }

    pub(crate) fn outbox(&self, limit: usize) -> Result<Vec<OutboxEntry>, ReadError> {
        let (txn, indexes) = self.snapshot()?;
        let mut out = Vec::new();
        for row in txn.open_table(OUTBOX)?.all()?.take(limit) {
            let (seq, value) = row?;
            let record = decode_entry(value.value())?;
            out.push(OutboxEntry {
                seq: seq.value(),
                time_ms: record.time_ms,
                index: name_in(&indexes, record.index),
                change: match record.change {
                    ChangeRecord::Audience(doc_id) => Change::Audience { doc_id },
                    ChangeRecord::Deleted(doc_id) => Change::Deleted { doc_id },
                    ChangeRecord::Alias(alias) => Change::Alias { alias },
                    ChangeRecord::Collected(versions) => Change::Collected { versions },
                },
            });
        }
        Ok(out)
    }

    pub(crate) fn wait_acknowledged(&self, timeout: Duration) -> Result<bool, ReadError> {
        // Every entry committed before this call is numbered at most `last`.
        let Some(last) = self.outbox(usize::MAX)?.last().map(|e| e.seq) else {
            return Ok(true);
        };
        let deadline = Instant::now() + timeout;
        loop {
            if self.outbox(1)?.first().is_none_or(|e| e.seq > last) {
                return Ok(true);
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            std::thread::sleep(WAIT_POLL);
        }
    }
}

/// How often [`Catalog::wait_acknowledged`] reads the outbox again.
const WAIT_POLL: Duration = Duration::from_millis(10);
