//! Garbage collection: deletes the versions nobody keeps and every record only they used.
//!
//! Retained per index: the newest `keep_newest` versions (the head always among them), and
//! every version a tag, an alias route or the serving pin names. Then the segments, child,
//! parent, `doc_chunks` and principal-bitmap records those versions do not need go, and the
//! revisions (with their text) that no retained version of any index and no document
//! uses. redb reuses the freed pages, so under a steady load the file stops growing.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use redb::{ReadTransaction, ReadableTable};
use roaring::RoaringBitmap;

use crate::limits::InvalidParameter;
use crate::storage::error::{IndexError, StorageError};
use crate::storage::file::current;
use crate::storage::file::outbox::{append, published_ids, ChangeRecord};
use crate::storage::file::records::{
    decode, decode_bitmap, ChildRecord, DocChunks, DocEntry, Retention, VersionRecord,
};
use crate::storage::file::rows::read_retention;
use crate::storage::file::sealed::{ReadSealed, WriteSealed};
use crate::storage::file::tables::*;
use crate::storage::read::state::IndexState;
use crate::storage::read::targets::named_versions;
use crate::storage::write::writer::Writer;

/// What a garbage collection deleted, and what it kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct GcReport {
    /// The retained versions of each index.
    pub retained: BTreeMap<String, Vec<u64>>,
    /// Versions deleted.
    pub versions: u64,
    /// Segments deleted.
    pub segments: u64,
    /// Child records deleted.
    pub children: u64,
    /// Parent records deleted.
    pub parents: u64,
    /// Per-document chunk ranges deleted.
    pub doc_chunks: u64,
    /// Principal bitmaps deleted.
    pub acl_entries: u64,
    /// Document revisions deleted.
    pub revisions: u64,
}

/// The keys one index's collection deletes.
#[derive(Default)]
struct IndexGarbage {
    retained: BTreeSet<u64>,
    versions: Vec<u64>,
    segments: Vec<u32>,
    children: Vec<u32>,
    parents: Vec<u32>,
    doc_chunks: Vec<u64>,
    acl: Vec<(String, u64)>,
    /// Revisions the retained versions still use.
    revisions: HashSet<u64>,
    /// The children live in some retained version: all the current-ACL bitmaps and the
    /// documents' child runs still need.
    kept: RoaringBitmap,
}

impl Writer<'_> {
    /// Deletes every version of every index except the newest `keep_newest` and those a
    /// tag, alias or serving pin names, and everything only the deleted versions used. A
    /// retained version answers exactly as before.
    pub(crate) fn gc(&self, keep_newest: usize) -> Result<GcReport, IndexError> {
        if keep_newest == 0 {
            return Err(InvalidParameter::new("keep_newest", 0, "at least 1").into());
        }
        self.collect(Retention::KeepLast(keep_newest))
    }

    /// Records the store's retention policy, applied after every commit from now on (by
    /// every process that writes the store).
    pub(crate) fn set_retention(&self, policy: Retention) -> Result<(), IndexError> {
        validate(policy)?;
        self.check_writable()?;
        let mut turn = self.lock_writer()?;
        let txn = turn.txn()?;
        {
            let mut meta = txn.open_table(META)?;
            match policy.encode() {
                Some(value) => meta.put(RETENTION, value.as_slice())?,
                None => {
                    meta.remove(RETENTION)?;
                }
            }
        }
        txn.commit().map_err(StorageError::from)?;
        Ok(())
    }

    /// Collects what the store's retention policy lets go, after a commit: `None` when the
    /// policy is off or nothing was old enough.
    pub(crate) fn apply_retention(&self) -> Result<Option<GcReport>, IndexError> {
        let policy = read_retention(&self.db().begin_read()?)?;
        if policy == Retention::Off {
            return Ok(None);
        }
        let report = self.collect(policy)?;
        Ok((report.versions > 0).then_some(report))
    }

    /// Deletes every version `policy` lets go (the head and named versions always stay)
    /// and everything only those versions used.
    fn collect(&self, policy: Retention) -> Result<GcReport, IndexError> {
        let mut turn = self.lock_writer()?;
        // An index that did not load would keep nothing it uses (checked on the file's
        // newest commit, which the turn brought the states up to).
        self.check_writable()?;
        let indexes = self.indexes();
        // Planned on a read transaction: with the writer lock held, nothing it reads can
        // change before the write transaction below.
        let (garbage, current) = {
            let txn = self.db().begin_read()?;
            let named = named_versions(&txn)?;
            let current = current_revisions(&txn)?;
            let mut garbage = Vec::with_capacity(indexes.len());
            for state in indexes.values() {
                let names = named.get(&state.id()).cloned().unwrap_or_default();
                garbage.push(plan(&txn, state, policy, &names, &current)?);
            }
            (garbage, current)
        };
        let mut report = GcReport::default();
        let txn = turn.txn()?;
        {
            let mut versions = txn.open_table(VERSIONS)?;
            let mut segments = txn.open_table(SEGMENTS)?;
            let mut vectors = txn.open_table(SEGMENT_VECTORS)?;
            let mut graphs = txn.open_table(SEGMENT_GRAPHS)?;
            let mut postings = txn.open_table(SEGMENT_POSTINGS)?;
            let mut children = txn.open_table(CHILDREN)?;
            let mut parents = txn.open_table(PARENTS)?;
            let mut doc_chunks = txn.open_table(DOC_CHUNKS)?;
            let mut acl = txn.open_table(ACL)?;
            for (state, g) in indexes.values().zip(&garbage) {
                let id = state.id();
                for v in &g.versions {
                    versions.remove((id, *v))?;
                }
                for s in &g.segments {
                    segments.remove((id, *s))?;
                    let blocks = (id, *s, 0u32)..=(id, *s, u32::MAX);
                    vectors.retain_in(blocks.clone(), |_, _| false)?;
                    graphs.retain_in(blocks.clone(), |_, _| false)?;
                    postings.retain_in(blocks, |_, _| false)?;
                }
                for c in &g.children {
                    children.remove((id, *c))?;
                }
                for p in &g.parents {
                    parents.remove((id, *p))?;
                }
                for rev in &g.doc_chunks {
                    doc_chunks.remove((id, *rev))?;
                }
                for (principal, v) in &g.acl {
                    acl.remove((id, principal.as_str(), *v))?;
                }
                report.versions += g.versions.len() as u64;
                report.segments += g.segments.len() as u64;
                report.children += g.children.len() as u64;
                report.parents += g.parents.len() as u64;
                report.doc_chunks += g.doc_chunks.len() as u64;
                report.acl_entries += g.acl.len() as u64;
                report.retained.insert(
                    state.name().to_string(),
                    g.retained.iter().copied().collect(),
                );
            }
            let used: HashSet<u64> = garbage
                .iter()
                .flat_map(|g| g.revisions.iter().copied())
                .chain(current)
                .collect();
            let mut revisions = txn.open_table(REVISIONS)?;
            let mut texts = txn.open_table(REV_TEXT)?;
            let mut unused = Vec::new();
            for entry in revisions.iter()? {
                let rev = entry?.0.value();
                if !used.contains(&rev) {
                    unused.push(rev);
                }
            }
            for rev in &unused {
                revisions.remove(*rev)?;
                texts.remove(*rev)?;
            }
            report.revisions = unused.len() as u64;
        }
        // A published index's collected versions: their collections serve nothing now.
        let published = published_ids(&txn)?;
        append(
            &txn,
            indexes
                .values()
                .zip(&garbage)
                .filter(|(state, g)| published.contains(&state.id()) && !g.versions.is_empty())
                .map(|(state, g)| (state.id(), ChangeRecord::Collected(g.versions.clone())))
                .collect(),
        )?;
        let kept: HashMap<u32, &RoaringBitmap> = indexes
            .values()
            .zip(&garbage)
            .map(|(state, g)| (state.id(), &g.kept))
            .collect();
        for (id, kept) in &kept {
            current::prune(&txn, *id, kept)?;
        }
        // A run is one revision's children, live or dead together in every version.
        current::retain_doc_runs(&txn, |index, run| {
            kept.get(&index)
                .is_none_or(|k| k.range_cardinality(run.range()) > 0)
        })?;
        let retained: HashMap<String, BTreeSet<u64>> = indexes
            .values()
            .zip(garbage)
            .map(|(state, g)| (state.name().to_string(), g.retained))
            .collect();
        self.commit_deleting(txn, |states| {
            for (name, state) in states.iter_mut() {
                if let Some(keep) = retained.get(name) {
                    *state = Arc::new(state.retain(keep));
                }
            }
        })?;
        Ok(report)
    }
}

/// The revisions the `docs` table points at.
fn current_revisions(txn: &ReadTransaction) -> Result<HashSet<u64>, StorageError> {
    let mut out = HashSet::new();
    for entry in txn.open_table(DOCS)?.all()? {
        let entry: DocEntry = decode(entry?.1.value(), "doc entry")?;
        out.insert(entry.rev);
    }
    Ok(out)
}

/// What collecting `state`'s index deletes, given the versions named elsewhere and the
/// documents' current revisions (whose chunk records every index keeps).
fn plan(
    txn: &ReadTransaction,
    state: &IndexState,
    policy: Retention,
    named: &BTreeSet<u64>,
    current: &HashSet<u64>,
) -> Result<IndexGarbage, StorageError> {
    let id = state.id();
    let head = state.head().version();
    let mut g = IndexGarbage::default();
    let mut all = Vec::new();
    let mut young = Vec::new();
    let since = match policy {
        Retention::YoungerThan(age) => {
            let age = u64::try_from(age.as_millis()).unwrap_or(u64::MAX);
            Some(crate::storage::file::records::now_ms().saturating_sub(age))
        }
        _ => None,
    };
    for entry in txn
        .open_table(VERSIONS)?
        .rows((id, 0u64)..=(id, u64::MAX))?
    {
        let (key, value) = entry?;
        let version = key.value().1;
        if let Some(since) = since {
            let record: VersionRecord = decode(value.value(), "version record")?;
            if record.created_ms >= since {
                young.push(version);
            }
        }
        all.push(version);
    }
    g.retained = match policy {
        Retention::KeepLast(n) => all.iter().rev().take(n).copied().collect(),
        Retention::YoungerThan(_) => young.into_iter().collect(),
        // Never planned: an off policy collects nothing.
        Retention::Off => all.iter().copied().collect(),
    };
    g.retained.insert(head);
    g.retained.extend(named.iter().filter(|v| all.contains(v)));
    g.versions = all
        .into_iter()
        .filter(|v| !g.retained.contains(v))
        .collect();

    let mut segments_used = HashSet::new();
    let mut live = RoaringBitmap::new();
    {
        let versions = txn.open_table(VERSIONS)?;
        for v in &g.retained {
            let value = versions.read((id, *v))?.ok_or_else(|| {
                StorageError::corrupt(format!("version {v} of index {id} missing"))
            })?;
            let record: VersionRecord = decode(value.value(), "version record")?;
            segments_used.extend(record.segments);
            live |= decode_bitmap(&record.live, "live bitmap")?;
        }
    }
    for entry in txn
        .open_table(SEGMENTS)?
        .range((id, 0u32)..=(id, u32::MAX))?
    {
        let segment = entry?.0.value().1;
        if !segments_used.contains(&segment) {
            g.segments.push(segment);
        }
    }

    g.revisions = current.clone();
    g.kept = live.clone();
    for entry in txn
        .open_table(CHILDREN)?
        .rows((id, 0u32)..=(id, u32::MAX))?
    {
        let (key, value) = entry?;
        let number = key.value().1;
        if live.contains(number) {
            let child: ChildRecord = decode(value.value(), "child record")?;
            g.revisions.insert(child.rev);
        } else {
            g.children.push(number);
        }
    }

    // A kept revision keeps all its parents: section expansion walks them.
    let mut parents_used = RoaringBitmap::new();
    for entry in txn
        .open_table(DOC_CHUNKS)?
        .rows((id, 0u64)..=(id, u64::MAX))?
    {
        let (key, value) = entry?;
        let rev = key.value().1;
        if g.revisions.contains(&rev) {
            let chunks: DocChunks = decode(value.value(), "doc chunks")?;
            parents_used.insert_range(
                chunks.first_parent..chunks.first_parent.saturating_add(chunks.parents),
            );
        } else {
            g.doc_chunks.push(rev);
        }
    }
    for entry in txn
        .open_table(PARENTS)?
        .range((id, 0u32)..=(id, u32::MAX))?
    {
        let number = entry?.0.value().1;
        if !parents_used.contains(number) {
            g.parents.push(number);
        }
    }

    // Per principal, a retained version reads the newest entry at or before it.
    let mut entries: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for entry in txn
        .open_table(ACL)?
        .range((id, "", 0u64)..(id.saturating_add(1), "", 0u64))?
    {
        let (principal, _, v) = entry?.0.value();
        entries.entry(principal.to_string()).or_default().push(v);
    }
    for (principal, versions) in entries {
        let needed: HashSet<u64> = g
            .retained
            .iter()
            .filter_map(|r| versions.iter().rev().find(|v| *v <= r).copied())
            .collect();
        g.acl.extend(
            versions
                .into_iter()
                .filter(|v| !needed.contains(v))
                .map(|v| (principal.clone(), v)),
        );
    }
    Ok(g)
}

fn validate(policy: Retention) -> Result<(), InvalidParameter> {
    match policy {
        Retention::KeepLast(0) => Err(InvalidParameter::new("keep_last", 0, "at least 1")),
        Retention::YoungerThan(age) if age.is_zero() => Err(InvalidParameter::new(
            "younger_than",
            "0 s",
            "longer than 0",
        )),
        _ => Ok(()),
    }
}
