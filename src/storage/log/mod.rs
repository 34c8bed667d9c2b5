//! The request log: one record per search (opt-in), with what the application attaches
//! later by id, retention (trim, size cap), and the review of `crate::review` over it.
//!
//! Entries are kept in memory and written by a thread behind the searches (`flusher.rs`),
//! in one durable commit when [`WRITE_EVERY`] wait and at least every second (and when the
//! store closes, and with an annotation, a trim or a file compaction): a commit per search
//! would cost two fsyncs, since redb's multi-process mode commits in two phases and
//! refuses commits without one. A search only appends to memory; it commits itself only
//! to reserve its handle's first block of ids, or when the thread has fallen
//! [`WRITE_INLINE`] entries behind. No write holds the entries' lock across its commit: it
//! copies them, commits, and forgets those it copied. A crash loses at most the entries
//! not written yet, never an id: ids are reserved [`RESERVE_IDS`] at a time from the
//! file's counter before any is handed out (the thread reserves the next block when half
//! of one is left), so a lost entry's id is a gap, not the next request's, and two
//! processes logging at once never share one. This handle's
//! [`crate::store::Log::entries`] includes its pending entries; other processes see them
//! once written.
//!
//! Trimming deletes at most [`TRIM_BATCH`] entries per write transaction, so the writes
//! that share the file wait at most one short commit; searches read snapshots and never
//! wait.

use std::ops::Range;
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, MutexGuard};
use redb::{ReadableTableMetadata, WriteTransaction};

use crate::review::{
    Annotation, Feedback, GroupBy, LogEntry, LogReport, LoggedRequest, Rating, Selection,
};
use crate::storage::error::{ReadError, StorageError, WriteError};
use crate::storage::file::open::Db;
use crate::storage::file::records::now_ms;
use crate::storage::file::records::{decode, encode};
use crate::storage::file::sealed::{ReadSealed, WriteSealed};
use crate::storage::file::tables::{META, REQUEST_LOG};
use crate::storage::read::catalog::{Catalog, States};

mod flusher;

use flusher::Wake;

/// Log entries are written this many at a time.
const WRITE_EVERY: usize = 64;

/// Request ids are reserved this many at a time, durably, before any of them is handed
/// out: after a crash the next id is past every id a caller may hold (the unwritten
/// entries leave a gap), so an annotation by id never lands on another request.
const RESERVE_IDS: u64 = 256;

/// At most this many entries are deleted per write transaction (trim, size cap).
pub const TRIM_BATCH: usize = 256;

/// A search writes the pending entries itself only when this many wait: the flusher
/// thread is not keeping up (or could not start).
const WRITE_INLINE: usize = 4 * WRITE_EVERY;

/// Logged requests not written yet, and who writes them.
#[derive(Default)]
pub(crate) struct RequestLog {
    pending: Mutex<Pending>,
    /// Held (before `pending`) by whoever writes or removes pending entries, so the
    /// entries a write took are still the oldest pending ones when it has committed.
    writing: Mutex<()>,
    /// Wakes the thread that writes the entries behind the searches (see `flusher.rs`).
    wake: Arc<Wake>,
}

#[derive(Default)]
struct Pending {
    /// The ids this handle reserved and has not handed out yet: durable in the file
    /// (`meta.next_request` is past them), so handed out freely.
    ids: Range<u64>,
    /// A further block, reserved ahead by a background write (another process may have
    /// reserved between, so it need not follow `ids`).
    spare: Option<Range<u64>>,
    entries: Vec<(u64, LoggedRequest)>,
}

impl Pending {
    /// The entries as written.
    fn encoded(&self) -> Vec<(u64, Vec<u8>)> {
        let entries = self.entries.iter().map(|(id, r)| (*id, encode(r)));
        entries.collect()
    }

    /// The next id, if one is reserved.
    fn take_id(&mut self) -> Option<u64> {
        if self.ids.is_empty() {
            self.ids = self.spare.take()?;
        }
        self.ids.next()
    }

    /// Whether a background write should reserve the next block now: less than half a
    /// block left, and none spare.
    fn wants_ids(&self) -> bool {
        self.spare.is_none() && self.ids.end > 0 && self.ids.end - self.ids.start < RESERVE_IDS / 2
    }

    /// Takes a block the flusher reserved: it extends the current one, or waits as the
    /// spare when another process reserved between. A search that ran out meanwhile has
    /// reserved past it: then it is dropped (a gap), so ids only grow with time.
    fn add_ids(&mut self, block: Range<u64>) {
        if block.start == self.ids.end {
            self.ids.end = block.end;
        } else if block.start > self.ids.end {
            self.spare = Some(block);
        }
    }
}

impl RequestLog {
    /// Writes every pending entry now (a close, a trim, a file compaction).
    pub fn flush(&self, db: &Db) -> Result<(), StorageError> {
        let writing = self.writing.lock();
        self.commit_pending(&writing, db, |_| Ok(()))
    }

    /// Commits the pending entries, with what `also` writes in the same transaction,
    /// without holding the entries' lock across the commit: searches go on logging
    /// meanwhile, and only the entries taken are forgotten after it (none on a failure).
    /// The caller holds `writing`, so no other write takes or changes them meanwhile.
    fn commit_pending<E: From<StorageError>>(
        &self,
        _writing: &MutexGuard<'_, ()>,
        db: &Db,
        also: impl FnOnce(&WriteTransaction) -> Result<(), E>,
    ) -> Result<(), E> {
        let entries = self.pending.lock().encoded();
        let txn = db.begin_write()?;
        also(&txn)?;
        write_pending(&txn, &entries)?;
        txn.commit().map_err(StorageError::from)?;
        // New entries only go at the end.
        self.pending.lock().entries.drain(..entries.len());
        Ok(())
    }

    /// Keeps the flusher out while held: it takes the file's handle only under this lock,
    /// so a caller that needs the handle to itself (a file compaction, redb's check)
    /// finds it free.
    pub(crate) fn quiet(&self) -> MutexGuard<'_, ()> {
        self.writing.lock()
    }

    /// The flusher's write: the pending entries, and the next block of ids when this
    /// handle is running short, so searches seldom reserve one themselves. `false` once
    /// the store is gone.
    pub(crate) fn write_behind(&self, db: &Weak<Db>) -> bool {
        let writing = self.writing.lock();
        let Some(db) = db.upgrade() else {
            return false;
        };
        // A failed write leaves the entries pending for the next one.
        let _ = self.write_behind_holding(&writing, &db);
        // The handle is let go before the lock: see `quiet`.
        drop(db);
        true
    }

    fn write_behind_holding(
        &self,
        writing: &MutexGuard<'_, ()>,
        db: &Db,
    ) -> Result<(), StorageError> {
        let (waiting, from) = {
            let pending = self.pending.lock();
            let from = pending.wants_ids().then_some(pending.ids.end);
            (pending.entries.len(), from)
        };
        if waiting == 0 && from.is_none() {
            return Ok(());
        }
        let mut block = None;
        self.commit_pending(writing, db, |txn| {
            if let Some(from) = from {
                block = Some(reserve_in(txn, from)?);
            }
            Ok::<_, StorageError>(())
        })?;
        if let Some(block) = block {
            self.pending.lock().add_ids(block);
        }
        Ok(())
    }

    /// Starts the thread that writes the entries behind the searches into `db`, until
    /// the store is gone.
    pub(crate) fn start_flusher(self: &Arc<Self>, db: Weak<Db>) {
        let log = self.clone();
        flusher::start(self.wake.clone(), move || log.write_behind(&db));
    }

    /// Wakes the flusher, so it finds the store gone and ends.
    pub(crate) fn stop_flusher(&self) {
        self.wake.ring();
    }
}

/// The request log of one open store: its pending entries and the file they go to.
#[derive(Clone, Copy)]
pub(crate) struct Logbook<'s> {
    log: &'s RequestLog,
    catalog: &'s Catalog,
}

impl<'s> Logbook<'s> {
    pub(crate) fn new(log: &'s RequestLog, catalog: &'s Catalog) -> Self {
        Logbook { log, catalog }
    }

    fn db(&self) -> &'s Db {
        self.catalog.db()
    }

    fn is_read_only(&self) -> bool {
        self.catalog.is_read_only()
    }

    /// Whether this handle can write log entries: a read-only store can, when it opened
    /// its file writable (`StoreBuilder::log_requests`).
    fn can_log(&self) -> bool {
        self.db().can_write()
    }

    fn snapshot(&self) -> Result<(redb::ReadTransaction, States), StorageError> {
        self.catalog.snapshot()
    }
}

/// Which logged requests [`crate::store::Log::trim`] deletes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Trim {
    /// Those logged before this time (Unix milliseconds).
    Before(u64),
    /// All but the newest this many.
    Keep(u64),
}

/// What a trim did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct TrimReport {
    /// Entries deleted.
    pub removed: u64,
    /// Entries left.
    pub kept: u64,
    /// Write transactions it took.
    pub commits: u64,
}

/// The request log's size and cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct LogSize {
    /// Entries written.
    pub entries: u64,
    /// Bytes of their records (`meta.log_bytes`).
    pub bytes: u64,
    /// The size cap in record bytes, if set.
    pub cap: Option<u64>,
}

impl Logbook<'_> {
    /// Appends `request` to the request log; returns its request id.
    pub(crate) fn log_request(&self, request: &LoggedRequest) -> Result<u64, StorageError> {
        if !self.can_log() {
            return Err(StorageError::ReadOnly);
        }
        let log = &self.log;
        let mut pending = log.pending.lock();
        let id = match pending.take_id() {
            Some(id) => id,
            None => {
                // At a handle's first search, or when the flusher fell a block behind: a
                // short durable commit, under the entries' lock so no id is handed out
                // before its reservation is durable.
                let from = pending.ids.end;
                pending.ids = reserve_ids(self.db(), from)?;
                pending
                    .take_id()
                    .ok_or_else(|| StorageError::corrupt("request ids ran out"))?
            }
        };
        pending.entries.push((id, request.clone()));
        let waiting = pending.entries.len();
        drop(pending);
        if waiting >= WRITE_INLINE {
            log.flush(self.db())?;
        } else if waiting >= WRITE_EVERY {
            log.wake.ring();
        }
        Ok(id)
    }

    /// Sets (replaces) the rating and note on logged request `request_id`; writes the log
    /// entries not written yet too.
    pub(crate) fn feedback(
        &self,
        request_id: u64,
        rating: Option<Rating>,
        note: Option<String>,
    ) -> Result<(), WriteError> {
        self.update_request(request_id, |request| {
            let time_ms = now_ms();
            let feedback = request.feedback.get_or_insert_with(Feedback::default);
            feedback.rating = rating;
            feedback.note = note;
            feedback.time_ms = time_ms;
        })
    }

    /// Attaches `annotation` (session, answer, prompt tokens, rerank scores, feedback,
    /// verdict, gold evidence) to logged request `request_id`, at any time after it; writes
    /// the log entries not written yet too.
    pub(crate) fn annotate(
        &self,
        request_id: u64,
        annotation: &Annotation,
    ) -> Result<(), WriteError> {
        self.update_request(request_id, |request| annotation.apply(request, now_ms()))
    }

    fn update_request(
        &self,
        request_id: u64,
        change: impl FnOnce(&mut LoggedRequest),
    ) -> Result<(), WriteError> {
        let log = &self.log;
        let writing = log.writing.lock();
        {
            let mut pending = log.pending.lock();
            if let Some((_, request)) = pending.entries.iter_mut().find(|(id, _)| *id == request_id)
            {
                change(request);
                drop(pending);
                return Ok(log.commit_pending(&writing, self.db(), |_| Ok::<_, StorageError>(()))?);
            }
        }
        // Not pending, and only holders of `writing` move entries to the file: it is there
        // or nowhere.
        log.commit_pending(&writing, self.db(), |txn| {
            let mut table = txn.open_table(REQUEST_LOG)?;
            let (old, mut request): (usize, LoggedRequest) = match table.read(request_id)? {
                Some(v) => (v.value().len(), decode(v.value(), "logged request")?),
                None => return Err(WriteError::UnknownRequest { id: request_id }),
            };
            change(&mut request);
            let bytes = encode(&request);
            table.put(request_id, bytes.as_slice())?;
            drop(table);
            add_bytes(txn, bytes.len() as i64 - old as i64)?;
            Ok(())
        })
    }

    /// Every logged request, oldest first.
    pub(crate) fn log_entries(&self) -> Result<Vec<LogEntry>, ReadError> {
        // The pending entries copied with the snapshot taken: a write of them that commits
        // in between is in both (and told by its ids), one that commits after in neither
        // but the copy.
        let (txn, pending) = {
            let pending = self.log.pending.lock();
            (self.snapshot()?.0, pending.entries.clone())
        };
        let mut out = Vec::new();
        for entry in txn.open_table(REQUEST_LOG)?.all()? {
            let (id, value) = entry?;
            out.push(LogEntry {
                request_id: id.value(),
                request: decode(value.value(), "logged request")?,
            });
        }
        // Ids grow, so those not written yet are newer than every written one.
        let written = out.last().map_or(0, |e| e.request_id);
        out.extend(pending.into_iter().filter(|(id, _)| *id > written).map(
            |(request_id, request)| LogEntry {
                request_id,
                request,
            },
        ));
        Ok(out)
    }

    /// The logged requests `selection` picks (failures, a window), oldest first.
    pub(crate) fn log_select(&self, selection: &Selection) -> Result<Vec<LogEntry>, ReadError> {
        let entries = self.log_entries()?;
        Ok(selection.apply(&entries).into_iter().cloned().collect())
    }

    /// Online metrics of the log's requests by `by`, with 95% intervals; `compare` names
    /// the groups A and B to set side by side (two versions by version are compared
    /// without it). A follow-up is a next request of the same session within
    /// `follow_up_secs`.
    pub(crate) fn log_report(
        &self,
        by: GroupBy,
        follow_up_secs: u64,
        compare: Option<(&str, &str)>,
    ) -> Result<LogReport, ReadError> {
        let entries = self.log_entries()?;
        Ok(crate::review::report(&entries, by, follow_up_secs, compare))
    }

    /// Deletes logged requests by `trim`, oldest first, in commits of at most
    /// [`TRIM_BATCH`] deletions (searches never wait; other writes wait one short commit).
    pub(crate) fn trim_log(&self, trim: Trim) -> Result<TrimReport, WriteError> {
        if self.is_read_only() {
            return Err(StorageError::ReadOnly.into());
        }
        self.log.flush(self.db())?;
        let mut report = TrimReport {
            removed: 0,
            kept: 0,
            commits: 0,
        };
        loop {
            let txn = self.db().begin_write()?;
            let (removed, left) = {
                let log = txn.open_table(REQUEST_LOG)?;
                let len = log.len()?;
                let limit = match trim {
                    Trim::Keep(keep) => len.saturating_sub(keep).min(TRIM_BATCH as u64),
                    Trim::Before(_) => TRIM_BATCH as u64,
                };
                drop(log);
                let removed = delete_oldest(&txn, limit, |request, _| match trim {
                    Trim::Before(t) => request.time_ms < t,
                    Trim::Keep(_) => true,
                })?;
                (removed, len - removed)
            };
            report.kept = left;
            if removed == 0 {
                return Ok(report);
            }
            txn.commit()?;
            report.removed += removed;
            report.commits += 1;
        }
    }

    /// Sets the request log's size cap in record bytes (`None` removes it). Each write of
    /// log entries then deletes the oldest, at most [`TRIM_BATCH`] per commit, while the
    /// log is larger.
    pub(crate) fn set_log_cap(&self, cap: Option<u64>) -> Result<(), WriteError> {
        if self.is_read_only() {
            return Err(StorageError::ReadOnly.into());
        }
        let writing = self.log.writing.lock();
        self.log.commit_pending(&writing, self.db(), |txn| {
            let mut meta = txn.open_table(META)?;
            match cap {
                Some(cap) => meta.put("log_cap", cap.to_le_bytes().as_slice())?,
                None => {
                    meta.remove("log_cap")?;
                }
            }
            Ok::<_, WriteError>(())
        })
    }

    /// The log's entries and record bytes as written, and its cap.
    pub(crate) fn log_size(&self) -> Result<LogSize, ReadError> {
        let (txn, _) = self.snapshot()?;
        let meta = txn.open_table(META)?;
        Ok(LogSize {
            entries: txn.open_table(REQUEST_LOG)?.len()?,
            bytes: read_u64(&meta, "log_bytes")?.unwrap_or(0),
            cap: read_u64(&meta, "log_cap")?,
        })
    }
}

/// Reserves [`RESERVE_IDS`] ids in one durable commit (see [`reserve_in`]).
fn reserve_ids(db: &Db, from: u64) -> Result<Range<u64>, StorageError> {
    let txn = db.begin_write()?;
    let block = reserve_in(&txn, from)?;
    txn.commit()?;
    Ok(block)
}

/// Reserves [`RESERVE_IDS`] ids from `meta.next_request` (other processes reserve from it
/// too), at `from` or after: durable once `txn` commits.
fn reserve_in(txn: &WriteTransaction, from: u64) -> Result<Range<u64>, StorageError> {
    let mut meta = txn.open_table(META)?;
    let start = from.max(read_u64(&meta, "next_request")?.unwrap_or(1));
    let end = start.saturating_add(RESERVE_IDS);
    meta.put("next_request", end.to_le_bytes().as_slice())?;
    Ok(start..end)
}

/// Writes encoded entries, then holds the size cap (deleting at most [`TRIM_BATCH`]).
fn write_pending(txn: &WriteTransaction, entries: &[(u64, Vec<u8>)]) -> Result<(), StorageError> {
    if entries.is_empty() {
        return Ok(());
    }
    let mut added = 0i64;
    {
        let mut log = txn.open_table(REQUEST_LOG)?;
        for (id, bytes) in entries {
            added += bytes.len() as i64;
            if let Some(old) = log.take(*id)? {
                added -= old.len() as i64;
            }
            log.put(*id, bytes.as_slice())?;
        }
    }
    let total = add_bytes(txn, added)?;
    // `meta.next_request` is past every entry's id already: each was reserved.
    let meta = txn.open_table(META)?;
    if let Some(cap) = read_u64(&meta, "log_cap")? {
        drop(meta);
        let mut over = total.saturating_sub(cap);
        if over > 0 {
            delete_oldest(txn, TRIM_BATCH as u64, |_, size| {
                let take = over > 0;
                over = over.saturating_sub(size);
                take
            })?;
        }
    }
    Ok(())
}

/// Deletes up to `limit` of the oldest entries while `take` (given an entry and its stored
/// size in bytes) says so; returns how many, keeping `meta.log_bytes` up to date.
fn delete_oldest(
    txn: &WriteTransaction,
    limit: u64,
    mut take: impl FnMut(&LoggedRequest, u64) -> bool,
) -> Result<u64, StorageError> {
    let mut doomed = Vec::new();
    let mut freed = 0i64;
    {
        let log = txn.open_table(REQUEST_LOG)?;
        for entry in log.all()?.take(limit as usize) {
            let (id, value) = entry?;
            let request: LoggedRequest = decode(value.value(), "logged request")?;
            let size = value.value().len();
            if !take(&request, size as u64) {
                break;
            }
            freed += size as i64;
            doomed.push(id.value());
        }
    }
    let mut log = txn.open_table(REQUEST_LOG)?;
    for id in &doomed {
        log.remove(id)?;
    }
    drop(log);
    add_bytes(txn, -freed)?;
    Ok(doomed.len() as u64)
}

/// Adds `delta` to `meta.log_bytes`; returns the new total.
fn add_bytes(txn: &WriteTransaction, delta: i64) -> Result<u64, StorageError> {
    let mut meta = txn.open_table(META)?;
    let total = read_u64(&meta, "log_bytes")?
        .unwrap_or(0)
        .saturating_add_signed(delta);
    meta.put("log_bytes", total.to_le_bytes().as_slice())?;
    Ok(total)
}

/// A `u64` LE value of `meta`, if present.
fn read_u64(meta: &impl ReadSealed<&'static str>, key: &str) -> Result<Option<u64>, StorageError> {
    match meta.read(key)? {
        Some(v) => Ok(Some(u64::from_le_bytes(v.value().try_into().map_err(
            |_| StorageError::corrupt(format!("meta {key} is not 8 bytes")),
        )?))),
        None => Ok(None),
    }
}
