//! Following a store: the entries its commits append to the outbox (`Store::outbox`) for
//! published indexes, applied to Milvus in order and acknowledged once applied. An entry
//! names a document or an alias; what is applied is the store's state *now* for it (rows of
//! the document's children deleted when the version no longer shows them, `acl_now` and
//! `public_now` rewritten where they differ, the Milvus alias pointed where the folio alias
//! points), so applying an entry twice changes nothing and a crash between applying and
//! acknowledging only applies it again. See `docs/milvus.md`, "Following a store".

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::sleep;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use folio::store::{Audience, Change, OutboxEntry, Published};
use folio::Store;
use milvus::v2::prelude::*;
use serde::Serialize;
use std::result::Result;

use crate::error::Error;
use crate::publish::{delete, flush, upsert, COMPLETE, DEFAULT_BATCH, PAGE};
use crate::remote::Remote;
use crate::schema::{self, alias_name, collection_name, ACL_NOW, CHILD, ID, PUBLIC_NOW};
use crate::sync::same;

/// Entries read and applied per step of a drain (each step acknowledged on its own).
pub const DEFAULT_DRAIN_BATCH: usize = 256;
/// How long [`Follower::run`] waits between two drains.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
/// The longest wait between two attempts while Milvus is down or silent.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Documents named in one Milvus query (the expression lists their ids).
const DOCS_PER_QUERY: usize = 256;

/// What one drain did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DrainReport {
    /// Entries applied and acknowledged.
    pub entries: u64,
    /// The highest sequence number acknowledged, if any.
    pub through: Option<u64>,
    /// Rows whose `acl_now`/`public_now` were rewritten (upserted whole).
    pub rows_updated: u64,
    /// Rows deleted: their document was deleted.
    pub rows_deleted: u64,
    /// Milvus aliases created or moved.
    pub aliases_moved: u64,
    /// Milvus aliases dropped (their folio alias was removed).
    pub aliases_dropped: u64,
    /// Aliases whose version no complete collection serves: left where they were (publish
    /// the version, then `folio milvus sync`).
    pub aliases_unpublished: Vec<String>,
    /// Collections dropped: the store collected (`gc`) the version each was published for,
    /// so none serves anything.
    pub collections_dropped: Vec<String>,
    /// Collections of collected versions left in place because a Milvus alias still names
    /// them (its folio alias's version is not published): drop them by hand once moved.
    pub collections_aliased: Vec<String>,
    /// A collection still being published: the drain stopped before it, nothing from that
    /// step acknowledged, and the next drain tries again (its rows are written from the
    /// store as it was when that publish read it).
    pub waiting_for: Option<String>,
    /// Entries left in the outbox after the drain.
    pub pending: u64,
    /// How long ago the oldest entry left was committed (milliseconds): the lag.
    pub lag_ms: Option<u64>,
}

/// What `folio milvus status` shows: the published indexes, and the outbox's entries by
/// kind with the age of the oldest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FollowStatus {
    /// The published indexes: where, under which prefix, since when.
    pub published: Vec<Published>,
    /// Entries not acknowledged yet.
    pub pending: u64,
    /// Of those, how many of each kind (`audience`, `deleted`, `alias`).
    pub by_kind: BTreeMap<String, u64>,
    /// When the oldest of them was committed (Unix milliseconds).
    pub oldest_ms: Option<u64>,
    /// How long ago that was (milliseconds): the lag.
    pub lag_ms: Option<u64>,
}

/// The outbox of `store`: what is published, what is pending, and the lag.
pub fn follow_status(store: &Store) -> Result<FollowStatus, Error> {
    let entries = store.outbox().pending(usize::MAX)?;
    let mut by_kind = BTreeMap::new();
    for entry in &entries {
        *by_kind.entry(entry.change.kind().to_string()).or_insert(0) += 1;
    }
    let oldest_ms = entries.first().map(|e| e.time_ms);
    Ok(FollowStatus {
        published: store.outbox().published()?,
        pending: entries.len() as u64,
        by_kind,
        oldest_ms,
        lag_ms: oldest_ms.map(age_ms),
    })
}

fn age_ms(time_ms: u64) -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    now.saturating_sub(time_ms)
}

/// Applies a store's outbox to the Milvus server of a [`Remote`]: what a long-running
/// `folio milvus follow` runs, and what an application can run on a thread of its own.
///
/// The store must be open for writing (acknowledging removes entries); a writing handle
/// holds no lock while idle, so other processes keep writing the file while a follower
/// keeps it open (`storage-format.md`, "Processes").
pub struct Follower<'a> {
    store: &'a Store,
    remote: &'a Remote,
    batch: usize,
}

impl<'a> Follower<'a> {
    /// A follower of `store`'s outbox on `remote`, [`DEFAULT_DRAIN_BATCH`] entries a step.
    pub fn new(store: &'a Store, remote: &'a Remote) -> Follower<'a> {
        Follower {
            store,
            remote,
            batch: DEFAULT_DRAIN_BATCH,
        }
    }

    /// Reads and applies `batch` entries a step (at least 1).
    pub fn batch(mut self, batch: usize) -> Self {
        self.batch = batch.max(1);
        self
    }

    /// Applies every pending entry in order, a step of entries at a time, each step
    /// acknowledged once Milvus has applied and flushed it. Stops early, acknowledging
    /// nothing more, when a collection it would change is still being published
    /// ([`DrainReport::waiting_for`]). A failure leaves the unacknowledged entries for the
    /// next drain.
    pub fn drain_once(&self) -> Result<DrainReport, Error> {
        let mut report = DrainReport::default();
        loop {
            let entries = self.store.outbox().pending(self.batch)?;
            let Some(last) = entries.last().map(|e| e.seq) else {
                break;
            };
            if let Some(collection) = self.apply(&entries, &mut report)? {
                report.waiting_for = Some(collection);
                break;
            }
            self.store.outbox().acknowledge(last)?;
            report.entries += entries.len() as u64;
            report.through = Some(last);
        }
        let status = follow_status(self.store)?;
        report.pending = status.pending;
        report.lag_ms = status.lag_ms;
        Ok(report)
    }

    /// Drains every `interval` until `stop` is set, retrying after a server that is down
    /// or silent ([`Error::Unreachable`], [`Error::Timeout`]) with a back-off that doubles
    /// from `interval` up to [`MAX_BACKOFF`]; any other failure ends it. `each` sees every
    /// drain's report or retried failure.
    pub fn run(
        &self,
        interval: Duration,
        stop: &AtomicBool,
        mut each: impl FnMut(Result<&DrainReport, &Error>),
    ) -> Result<(), Error> {
        let mut wait = interval;
        while !stop.load(Ordering::Relaxed) {
            match self.drain_once() {
                Ok(report) => {
                    each(Ok(&report));
                    wait = interval;
                }
                Err(e @ (Error::Unreachable { .. } | Error::Timeout { .. })) => {
                    each(Err(&e));
                    wait = (wait * 2).clamp(interval, MAX_BACKOFF.max(interval));
                }
                Err(e) => return Err(e),
            }
            pause(wait, stop);
        }
        Ok(())
    }

    /// Applies `entries` to Milvus without acknowledging them (what [`Follower::drain_once`]
    /// does before it acknowledges): returns the collection still being published that
    /// held it back, if one did. Applying entries again, or older ones after newer ones,
    /// changes nothing: each is the store's state now.
    pub fn apply(
        &self,
        entries: &[OutboxEntry],
        report: &mut DrainReport,
    ) -> Result<Option<String>, Error> {
        let marks: HashMap<String, Published> = self
            .store
            .outbox()
            .published()?
            .into_iter()
            .map(|m| (m.index.clone(), m))
            .collect();
        let mut documents: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        let mut aliases: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        let mut collected: BTreeMap<&str, BTreeSet<u64>> = BTreeMap::new();
        let mut touched: BTreeSet<&str> = BTreeSet::new();
        for entry in entries {
            // An index dropped since, or no longer marked: nothing left to apply.
            let Some(mark) = entry.index.as_ref().and_then(|i| marks.get(i)) else {
                continue;
            };
            if mark.uri != self.remote.uri() {
                return Err(Error::PublishedElsewhere {
                    index: mark.index.clone(),
                    published_to: mark.uri.clone(),
                    following: self.remote.uri().to_string(),
                });
            }
            touched.insert(&mark.prefix);
            match &entry.change {
                Change::Audience { doc_id } | Change::Deleted { doc_id } => {
                    documents.entry(&mark.index).or_default().insert(doc_id);
                }
                Change::Alias { alias } => {
                    aliases.entry(&mark.index).or_default().insert(alias);
                }
                Change::Collected { versions } => {
                    collected
                        .entry(&mark.index)
                        .or_default()
                        .extend(versions.iter().copied());
                }
                _ => {}
            }
        }
        for (index, doc_ids) in documents {
            let prefix = &marks[index].prefix;
            let collections = match self.collections(index, prefix)? {
                Ok(collections) => collections,
                Err(unfinished) => return Ok(Some(unfinished)),
            };
            let doc_ids: Vec<&str> = doc_ids.into_iter().collect();
            for (collection, version) in collections {
                self.bring_documents(&collection, index, version, &doc_ids, report)?;
            }
        }
        for (index, names) in aliases {
            let prefix = &marks[index].prefix;
            for alias in names {
                if let Some(unfinished) = self.bring_alias(index, prefix, alias, report)? {
                    return Ok(Some(unfinished));
                }
            }
        }
        // Last: an alias moved above no longer holds a collection back.
        for (index, versions) in collected {
            let prefix = &marks[index].prefix;
            for version in versions {
                self.drop_collected(&collection_name(prefix, index, version), report)?;
            }
        }
        // Search nodes read versions, tags and aliases from the catalog: every change above
        // made a new version or moved an alias.
        for prefix in touched {
            self.remote.write_catalog(self.store, prefix)?;
        }
        Ok(None)
    }

    /// Drops collection `name` of a collected version, unless a Milvus alias still names it.
    fn drop_collected(&self, name: &str, report: &mut DrainReport) -> Result<(), Error> {
        if !self.remote.has_collection(name)? {
            return Ok(());
        }
        let client = &self.remote.client;
        let aliased = self.remote.run_on(name, async {
            Ok(!client
                .list_aliases(
                    ListAliasesRequest::builder()
                        .collection_name(name)
                        .build()?,
                )
                .await?
                .aliases()
                .is_empty())
        })?;
        if aliased {
            report.collections_aliased.push(name.to_string());
            return Ok(());
        }
        self.remote.run_on(name, async {
            client
                .drop_collection(
                    DropCollectionRequest::builder()
                        .collection_name(name)
                        .build()?,
                )
                .await?;
            Ok(())
        })?;
        report.collections_dropped.push(name.to_string());
        Ok(())
    }

    /// The collections of `index` under `prefix` of a version the store keeps, with the
    /// version each holds; `Err(name)` when one of them is still being published.
    fn collections(
        &self,
        index: &str,
        prefix: &str,
    ) -> Result<Result<Vec<(String, u64)>, String>, Error> {
        let mut out = Vec::new();
        for info in self.store.versions(index).list()? {
            let name = collection_name(prefix, index, info.version);
            if !self.remote.has_collection(&name)? {
                continue;
            }
            let properties = self.remote.properties(&name)?;
            self.remote
                .check_names(&properties, &name, index, info.version)?;
            if properties.get(COMPLETE).map(String::as_str) != Some("true") {
                return Ok(Err(name));
            }
            out.push((name, info.version));
        }
        Ok(Ok(out))
    }

    /// The rows of `doc_ids` in collection `name` (a publish of `index@version`) brought to
    /// the store now: rows of children the version no longer shows (deleted documents)
    /// deleted, rows whose audience differs upserted whole; flushed when anything changed.
    fn bring_documents(
        &self,
        name: &str,
        index: &str,
        version: u64,
        doc_ids: &[&str],
        report: &mut DrainReport,
    ) -> Result<(), Error> {
        let target = format!("{index}@{version}");
        let export = match self.store.export(&target) {
            Ok(export) => export,
            // Collected by `gc` since the collection list was read: nothing serves it.
            Err(folio::ReadError::UnknownVersion { .. }) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        // Every row of the collection is a child live in the version it was published for.
        let end = self
            .store
            .live(&target)?
            .max()
            .map_or(0, |last| u64::from(last) + 1);
        // A server restarted since the publish may hold the collection released (milvus-lite
        // does); loading a loaded collection is a no-op.
        self.remote.run_on(name, async {
            self.remote
                .client
                .load_collection(
                    LoadCollectionRequest::builder()
                        .collection_name(name)
                        .build()?,
                )
                .await?;
            Ok(())
        })?;
        let (mut stale, mut changed) = (Vec::new(), Vec::new());
        for ids in doc_ids.chunks(DOCS_PER_QUERY) {
            let docs = format!(
                "doc_id in {}",
                crate::expr::string_list(ids.iter().copied())
            );
            for start in (0..end).step_by(PAGE as usize) {
                let rows = self.remote.run_on(
                    name,
                    rows_of(
                        &self.remote.client,
                        name,
                        &docs,
                        start,
                        start + u64::from(PAGE),
                    ),
                )?;
                for (child, id, audience) in rows {
                    let Ok(number) = u32::try_from(child) else {
                        continue;
                    };
                    if !export.children().contains(number) {
                        stale.push(id);
                    } else if !same(&audience, &export.current(number)) {
                        changed.push(number);
                    }
                }
            }
        }
        for ids in stale.chunks(DEFAULT_BATCH) {
            self.remote
                .run_on(name, delete(&self.remote.client, name, ids))?;
        }
        for numbers in changed.chunks(DEFAULT_BATCH) {
            let rows = numbers
                .iter()
                .map(|&n| Ok(schema::row(&export.child(n)?)))
                .collect::<Result<Vec<_>, Error>>()?;
            self.remote
                .run_on(name, upsert(&self.remote.client, name, rows))?;
        }
        if !stale.is_empty() || !changed.is_empty() {
            self.remote.run_on(name, flush(&self.remote.client, name))?;
        }
        report.rows_deleted += stale.len() as u64;
        report.rows_updated += changed.len() as u64;
        Ok(())
    }

    /// The Milvus alias of `alias` brought to where the folio alias points now: moved to
    /// the collection serving its version, dropped when the folio alias is gone; left for
    /// a split alias (folio routes it) and for one now on another index (that index's
    /// entry moves it). `Some(collection)` when that collection is still being published.
    fn bring_alias(
        &self,
        index: &str,
        prefix: &str,
        alias: &str,
        report: &mut DrainReport,
    ) -> Result<Option<String>, Error> {
        let info = self
            .store
            .aliases()
            .list()?
            .into_iter()
            .find(|a| a.name == alias);
        let Some(info) = info else {
            let milvus_alias = alias_name(prefix, alias);
            if let Some(collection) = self
                .remote
                .milvus_aliases(self.store, prefix)?
                .get(&milvus_alias)
            {
                self.remote.run_on(collection, async {
                    self.remote
                        .client
                        .drop_alias(DropAliasRequest::builder().alias(&milvus_alias).build()?)
                        .await?;
                    Ok(())
                })?;
                report.aliases_dropped += 1;
            }
            return Ok(None);
        };
        let [route] = info.routes.as_slice() else {
            return Ok(None);
        };
        if route.index != index {
            return Ok(None);
        }
        match self
            .remote
            .collection_for(self.store, prefix, index, route.version)
        {
            Ok(served) => {
                let moved = self
                    .remote
                    .point(self.store, prefix, alias, &served.collection)?;
                if moved.outcome == crate::AliasOutcome::Moved {
                    report.aliases_moved += 1;
                }
                Ok(None)
            }
            Err(Error::NotPublished { .. }) => {
                report.aliases_unpublished.push(alias.to_string());
                Ok(None)
            }
            Err(Error::Incomplete { collection, .. }) => Ok(Some(collection)),
            Err(e) => Err(e),
        }
    }
}

/// Sleeps `wait`, waking early once `stop` is set.
fn pause(wait: Duration, stop: &AtomicBool) {
    let step = Duration::from_millis(50);
    let mut left = wait;
    while !left.is_zero() && !stop.load(Ordering::Relaxed) {
        let now = left.min(step);
        sleep(now);
        left -= now;
    }
}

/// (child, chunk id, audience now) of the rows of the documents `docs` selects with
/// `start <= child < end`.
async fn rows_of(
    client: &ClientV2,
    name: &str,
    docs: &str,
    start: u64,
    end: u64,
) -> Result<Vec<(i64, String, Audience)>, Error> {
    let response = client
        .query(
            QueryRequest::builder()
                .collection_name(name)
                .filter(format!(
                    "({docs}) and {CHILD} >= {start} and {CHILD} < {end}"
                ))
                .output_fields([CHILD, ID, ACL_NOW, PUBLIC_NOW])
                .limit(i64::from(PAGE))
                .consistency_level(ConsistencyLevel::Strong)
                .build()?,
        )
        .await?;
    let mut out = Vec::new();
    for row in response.results().rows()? {
        out.push((
            row.get_i64(CHILD)?,
            row.get_str(ID)?.to_string(),
            Audience {
                public: row.get_bool(PUBLIC_NOW)?,
                principals: row.get_array_varchar(ACL_NOW)?.to_vec(),
            },
        ));
    }
    Ok(out)
}
