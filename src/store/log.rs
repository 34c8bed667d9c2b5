//! The request log: one record per search (opt-in), with feedback added later by id.
//!
//! Log-only commits skip the fsync (`Durability::None`): redb keeps them consistent, and the
//! next durable commit (a batch, any version operation, every [`SYNC_EVERY`]th log entry,
//! or closing the store) makes them durable. A crash loses at most the entries since then.

use std::sync::atomic::Ordering;

use redb::{Durability, ReadableDatabase, ReadableTable};

use super::error::{ReadError, StorageError, WriteError};
use super::records::now_ms;
use super::records::{decode, encode};
use super::tables::{META, REQUEST_LOG};
use super::Store;

/// Every this many log entries, one is committed durably.
const SYNC_EVERY: u32 = 64;

/// What was asked.
#[derive(Debug, Clone, PartialEq, serde::Serialize, bincode::Encode, bincode::Decode)]
#[serde(rename_all = "lowercase")]
pub enum LoggedQuery {
    /// A text, as given.
    Text(String),
    /// A caller's vector: only its dimension is kept.
    Vector {
        /// The vector's length.
        dimension: u32,
    },
}

/// A thumb on an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, bincode::Encode, bincode::Decode)]
pub enum Rating {
    /// A thumb up.
    #[serde(rename = "thumb_up")]
    Up,
    /// A thumb down.
    #[serde(rename = "thumb_down")]
    Down,
}

/// Feedback on a logged request.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, bincode::Encode, bincode::Decode)]
pub struct Feedback {
    /// Thumb up or down, if given.
    pub rating: Option<Rating>,
    /// A free-text note, if given.
    pub note: Option<String>,
    /// Unix milliseconds; set when stored.
    pub time_ms: u64,
}

/// One search, as the request log keeps it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, bincode::Encode, bincode::Decode)]
pub struct LoggedRequest {
    /// Unix milliseconds.
    pub time_ms: u64,
    /// The query.
    pub query: LoggedQuery,
    /// Who asked; `None` for unrestricted tooling access.
    pub principals: Option<Vec<String>>,
    /// What the caller named (index, `index@version`, alias).
    pub target: String,
    /// The route key the caller gave (see [`crate::SearchRequest::route_key`]).
    pub route_key: Option<String>,
    /// The index and version that answered.
    pub index: String,
    /// The version that answered.
    pub version: u64,
    /// Matching child chunk ids with their scores, best unit first.
    pub children: Vec<(String, f32)>,
    /// Returned parent chunk ids with their units' scores.
    pub parents: Vec<(String, f32)>,
    /// Estimated tokens of the returned texts.
    pub context_tokens: u64,
    /// Time the search took, in microseconds.
    pub latency_us: u64,
    /// Feedback given later ([`Store::feedback`]).
    pub feedback: Option<Feedback>,
}

/// A request-log line of `folio log export`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LogEntry {
    /// The id [`Store::feedback`] takes.
    pub request_id: u64,
    /// The request.
    #[serde(flatten)]
    pub request: LoggedRequest,
}

impl Store {
    /// Appends `request` to the request log; returns its request id.
    pub fn log_request(&self, request: &LoggedRequest) -> Result<u64, StorageError> {
        let mut txn = self.db().begin_write()?;
        let unsynced = self.inner.log_unsynced.fetch_add(1, Ordering::Relaxed) + 1;
        let durable = unsynced >= SYNC_EVERY;
        if !durable {
            txn.set_durability(Durability::None)?;
        }
        let id = {
            let mut meta = txn.open_table(META)?;
            let id = match meta.get("next_request")? {
                Some(v) => u64::from_le_bytes(
                    v.value()
                        .try_into()
                        .map_err(|_| StorageError::corrupt("meta next_request is not 8 bytes"))?,
                ),
                None => 1,
            };
            meta.insert(
                "next_request",
                id.saturating_add(1).to_le_bytes().as_slice(),
            )?;
            txn.open_table(REQUEST_LOG)?
                .insert(id, encode(request).as_slice())?;
            id
        };
        txn.commit()?;
        if durable {
            self.inner.log_unsynced.store(0, Ordering::Relaxed);
        }
        Ok(id)
    }

    /// Sets (replaces) the feedback on logged request `request_id`.
    pub fn feedback(
        &self,
        request_id: u64,
        rating: Option<Rating>,
        note: Option<String>,
    ) -> Result<(), WriteError> {
        let txn = self.db().begin_write()?;
        {
            let mut log = txn.open_table(REQUEST_LOG)?;
            let mut request: LoggedRequest = match log.get(request_id)? {
                Some(v) => decode(v.value(), "logged request")?,
                None => return Err(WriteError::UnknownRequest { id: request_id }),
            };
            request.feedback = Some(Feedback {
                rating,
                note,
                time_ms: now_ms(),
            });
            log.insert(request_id, encode(&request).as_slice())?;
        }
        txn.commit()?;
        Ok(())
    }

    /// Every logged request, oldest first.
    pub fn log_entries(&self) -> Result<Vec<LogEntry>, ReadError> {
        let txn = self.db().begin_read()?;
        let mut out = Vec::new();
        for entry in txn.open_table(REQUEST_LOG)?.iter()? {
            let (id, value) = entry?;
            out.push(LogEntry {
                request_id: id.value(),
                request: decode(value.value(), "logged request")?,
            });
        }
        Ok(out)
    }
}
