//! The request log: one record per search (opt-in), with feedback added later by id.
//!
//! Entries are kept in memory and written [`WRITE_EVERY`] at a time in one durable commit
//! (and when the store closes, and before feedback or a file compaction): a commit per
//! search would cost two fsyncs, since redb's multi-process mode commits in two phases
//! and refuses commits without one. A crash loses at most the entries not written yet.
//! This handle's [`Store::log_entries`] includes them; other processes see them once
//! written.

use redb::ReadableTable;

use super::error::{ReadError, StorageError, WriteError};
use super::open::Db;
use super::records::now_ms;
use super::records::{decode, encode};
use super::tables::{META, REQUEST_LOG};
use super::Store;

/// Log entries are written this many at a time.
const WRITE_EVERY: usize = 64;

/// Logged requests not written yet.
#[derive(Default)]
pub(crate) struct Pending {
    /// The id the next entry gets, once known (read from `meta.next_request` at the first).
    next: Option<u64>,
    entries: Vec<(u64, LoggedRequest)>,
}

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
        if self.is_read_only() {
            return Err(StorageError::ReadOnly);
        }
        let mut pending = self.inner.log.lock();
        let id = match pending.next {
            Some(id) => id,
            None => next_request(&self.db().begin_read()?.open_table(META)?)?,
        };
        pending.next = Some(id.saturating_add(1));
        pending.entries.push((id, request.clone()));
        if pending.entries.len() >= WRITE_EVERY {
            flush(self.db(), &mut pending)?;
        }
        Ok(id)
    }

    /// Sets (replaces) the feedback on logged request `request_id`; writes the log entries
    /// not written yet too.
    pub fn feedback(
        &self,
        request_id: u64,
        rating: Option<Rating>,
        note: Option<String>,
    ) -> Result<(), WriteError> {
        let feedback = Feedback {
            rating,
            note,
            time_ms: now_ms(),
        };
        let mut pending = self.inner.log.lock();
        if let Some((_, request)) = pending.entries.iter_mut().find(|(id, _)| *id == request_id) {
            request.feedback = Some(feedback);
            flush(self.db(), &mut pending)?;
            return Ok(());
        }
        let txn = self.db().begin_write()?;
        {
            let mut log = txn.open_table(REQUEST_LOG)?;
            let mut request: LoggedRequest = match log.get(request_id)? {
                Some(v) => decode(v.value(), "logged request")?,
                None => return Err(WriteError::UnknownRequest { id: request_id }),
            };
            request.feedback = Some(feedback);
            log.insert(request_id, encode(&request).as_slice())?;
        }
        write_pending(&txn, &pending)?;
        txn.commit()?;
        pending.entries.clear();
        Ok(())
    }

    /// Every logged request, oldest first.
    pub fn log_entries(&self) -> Result<Vec<LogEntry>, ReadError> {
        let (txn, _) = self.snapshot()?;
        let mut out = Vec::new();
        for entry in txn.open_table(REQUEST_LOG)?.iter()? {
            let (id, value) = entry?;
            out.push(LogEntry {
                request_id: id.value(),
                request: decode(value.value(), "logged request")?,
            });
        }
        // Not written yet, so newer than every written one.
        out.extend(
            self.inner
                .log
                .lock()
                .entries
                .iter()
                .map(|(id, request)| LogEntry {
                    request_id: *id,
                    request: request.clone(),
                }),
        );
        Ok(out)
    }
}

/// Writes the pending entries in one durable commit.
pub(crate) fn flush(db: &Db, pending: &mut Pending) -> Result<(), StorageError> {
    if pending.entries.is_empty() {
        return Ok(());
    }
    let txn = db.begin_write()?;
    write_pending(&txn, pending)?;
    txn.commit()?;
    pending.entries.clear();
    Ok(())
}

fn write_pending(txn: &redb::WriteTransaction, pending: &Pending) -> Result<(), StorageError> {
    let Some(next) = pending.next.filter(|_| !pending.entries.is_empty()) else {
        return Ok(());
    };
    let mut log = txn.open_table(REQUEST_LOG)?;
    for (id, request) in &pending.entries {
        log.insert(*id, encode(request).as_slice())?;
    }
    txn.open_table(META)?
        .insert("next_request", next.to_le_bytes().as_slice())?;
    Ok(())
}

/// `meta.next_request`: the id the next logged request gets (1 in a store that never
/// logged one).
fn next_request(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
) -> Result<u64, StorageError> {
    match meta.get("next_request")? {
        Some(v) => Ok(u64::from_le_bytes(v.value().try_into().map_err(|_| {
            StorageError::corrupt("meta next_request is not 8 bytes")
        })?)),
        None => Ok(1),
    }
}
