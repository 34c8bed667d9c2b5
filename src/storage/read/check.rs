//! The integrity check: redb's own, then folio's invariants over every retained version.

use std::collections::{BTreeMap, HashMap, HashSet};

use redb::{ReadTransaction, ReadableTable};
use roaring::RoaringBitmap;

use crate::storage::error::{ReadError, StorageError};
use crate::storage::file::current::principals_of;
use crate::storage::file::current::read_all;
use crate::storage::file::current::PUBLIC;
use crate::storage::file::records::{
    decode, decode_bitmap, AliasRecord, ChildRecord, DocChunks, DocEntry, IndexRecord,
    ParentRecord, RevisionRecord, VersionRecord,
};
use crate::storage::file::rows::{read_text, slice_text};
use crate::storage::file::segment::Segment;
use crate::storage::file::tables::*;
use crate::storage::read::catalog::Catalog;
use crate::storage::read::state::{doc_chunks_in, principals_in, read_acl, IndexState};

/// Problems beyond this many are counted, not listed.
const MAX_PROBLEMS: usize = 200;

/// redb's own check of the file (page checksums, allocator state).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RedbCheck {
    /// Run now, and passed.
    Passed,
    /// Run now: the file was damaged and redb repaired it (a problem is listed too).
    Repaired,
    /// Run now: the file is damaged beyond repair (a problem says how); nothing else was
    /// checked.
    Failed,
    /// Not run now because other handles share this store; it ran when the store opened.
    #[default]
    AtOpen,
    /// Not run: the store is open for reading only, and redb's check may repair the file,
    /// which writes. Every open for writing runs it.
    ReadOnly,
}

/// What [`crate::Store::check_integrity`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct IntegrityReport {
    /// What redb's own check of its pages and trees found.
    pub redb: RedbCheck,
    /// Documents stored.
    pub documents: u64,
    /// Indexes checked.
    pub indexes: u64,
    /// Retained versions, over all indexes.
    pub versions: u64,
    /// Segments used by retained versions, over all indexes.
    pub segments: u64,
    /// Distinct children live in some retained version, over all indexes.
    pub children: u64,
    /// Every inconsistency found (at most 200 listed; `unlisted` counts the rest).
    pub problems: Vec<String>,
    /// Problems found beyond those listed.
    pub unlisted: u64,
}

impl IntegrityReport {
    /// `true` when nothing is wrong.
    pub fn is_consistent(&self) -> bool {
        self.problems.is_empty()
    }

    fn problem(&mut self, what: String) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(what);
        } else {
            self.unlisted += 1;
        }
    }
}

impl Catalog {
    /// redb's own check, run on a handle that has the file to itself (`None` when others
    /// share it: it ran when the store opened).
    pub(crate) fn redb_check(exclusive: Option<&mut Catalog>) -> IntegrityReport {
        let mut report = IntegrityReport::default();
        let Some(catalog) = exclusive else {
            return report;
        };
        if catalog.is_read_only() {
            report.redb = RedbCheck::ReadOnly;
        } else if let Some(db) = catalog.db_mut() {
            match db.check_integrity() {
                Ok(true) => report.redb = RedbCheck::Passed,
                Ok(false) => {
                    report.redb = RedbCheck::Repaired;
                    report.problem("redb found damaged pages and repaired the file".into());
                }
                Err(e) => {
                    report.redb = RedbCheck::Failed;
                    report.problem(format!("redb: {e}"));
                }
            }
        }
        report
    }

    /// folio's invariants over every retained version, after [`Catalog::redb_check`]
    /// (nothing more is checked when redb's check failed).
    pub(crate) fn check_integrity(
        &self,
        mut report: IntegrityReport,
    ) -> Result<IntegrityReport, ReadError> {
        if report.redb == RedbCheck::Failed {
            return Ok(report);
        }
        if self.is_read_only() {
            report.redb = RedbCheck::ReadOnly;
        }
        let (txn, indexes) = self.snapshot()?;
        let docs = check_documents(&txn, &mut report)?;
        let mut names: HashMap<u32, HashSet<u64>> = HashMap::new();
        let stored = txn.open_table(INDEXES)?;
        for (name, state) in &indexes {
            let record: Option<IndexRecord> = match stored.get(name.as_str())? {
                Some(v) => Some(decode(v.value(), "index record")?),
                None => None,
            };
            if record.as_ref() != Some(state.record()) {
                report.problem(format!("index `{name}`: its record changed or vanished"));
                continue;
            }
            let versions = check_index(&txn, state, &docs, &mut report)?;
            names.insert(state.id(), versions);
        }
        for bad in self.unavailable_indexes() {
            report.problem(format!(
                "index `{}` could not be loaded: {} (`folio index drop` removes it)",
                bad.name, bad.reason
            ));
        }
        report.indexes = indexes.len() as u64;
        check_names(&txn, &names, &mut report)?;
        Ok(report)
    }
}

/// Every document's revision and text exist; returns the documents' entries.
fn check_documents(
    txn: &ReadTransaction,
    report: &mut IntegrityReport,
) -> Result<Vec<(String, DocEntry)>, StorageError> {
    let revisions = txn.open_table(REVISIONS)?;
    let mut out = Vec::new();
    for entry in txn.open_table(DOCS)?.iter()? {
        let (id, value) = entry?;
        let id = id.value().to_string();
        let entry: DocEntry = match decode(value.value(), "doc entry") {
            Ok(e) => e,
            Err(e) => {
                report.problem(format!("document `{id}`: {e}"));
                continue;
            }
        };
        if revisions.get(entry.rev)?.is_none() {
            report.problem(format!("document `{id}`: revision {} missing", entry.rev));
        }
        if let Err(e) = read_text(txn, entry.rev) {
            report.problem(format!("document `{id}`: {e}"));
        }
        out.push((id, entry));
    }
    report.documents = out.len() as u64;
    Ok(out)
}

/// One index: its versions, segments, live children and head bitmaps. Returns the
/// retained version numbers.
fn check_index(
    txn: &ReadTransaction,
    state: &IndexState,
    docs: &[(String, DocEntry)],
    report: &mut IntegrityReport,
) -> Result<HashSet<u64>, StorageError> {
    let record = state.record();
    let (id, name) = (record.id, state.name());
    let mut versions = HashSet::new();
    let mut segments: HashMap<u32, Option<std::ops::Range<u32>>> = HashMap::new();
    let mut all_live = RoaringBitmap::new();
    for entry in txn
        .open_table(VERSIONS)?
        .range((id, 0u64)..=(id, u64::MAX))?
    {
        let (key, value) = entry?;
        let v = key.value().1;
        versions.insert(v);
        if v > record.head {
            report.problem(format!("{name}@{v}: newer than the head {}", record.head));
        }
        let stored: VersionRecord = match decode(value.value(), "version record") {
            Ok(r) => r,
            Err(e) => {
                report.problem(format!("{name}@{v}: {e}"));
                continue;
            }
        };
        let live = match decode_bitmap(&stored.live, "live bitmap") {
            Ok(l) => l,
            Err(e) => {
                report.problem(format!("{name}@{v}: {e}"));
                continue;
            }
        };
        let mut covered = RoaringBitmap::new();
        for s in &stored.segments {
            let range =
                segments
                    .entry(*s)
                    .or_insert_with(|| match Segment::load(txn, record, *s, None) {
                        Ok(segment) => Some(segment.ids()),
                        Err(e) => {
                            report.problem(format!("{name} segment {s}: {e}"));
                            None
                        }
                    });
            if let Some(range) = range {
                if range.end > record.next_child || *s >= record.next_segment {
                    report.problem(format!("{name} segment {s}: beyond the index's counters"));
                }
                covered.insert_range(range.clone());
            }
        }
        let uncovered = &live - &covered;
        if !uncovered.is_empty() {
            report.problem(format!(
                "{name}@{v}: {} live children are in none of its segments (first {:?})",
                uncovered.len(),
                uncovered.min()
            ));
        }
        all_live |= live;
    }
    if !versions.contains(&record.head) {
        report.problem(format!("{name}: head version {} missing", record.head));
    }
    report.versions += versions.len() as u64;
    report.segments += segments.len() as u64;
    report.children += all_live.len();
    check_children(txn, state, &all_live, report)?;
    check_head_acl(txn, state, docs, report)?;
    check_current(txn, state, docs, report)?;
    Ok(versions)
}

/// Each document's child runs are its own revisions' children, hold its head children and
/// no other document's, and the current-ACL bitmaps are exactly the runs of the documents
/// that admit each principal.
fn check_current(
    txn: &ReadTransaction,
    state: &IndexState,
    docs: &[(String, DocEntry)],
    report: &mut IntegrityReport,
) -> Result<(), StorageError> {
    let (id, name) = (state.id(), state.name());
    let doc_chunks = txn.open_table(DOC_CHUNKS)?;
    let children = txn.open_table(CHILDREN)?;
    let revisions = txn.open_table(REVISIONS)?;
    let mut claimed = RoaringBitmap::new();
    let mut expected: BTreeMap<String, RoaringBitmap> = BTreeMap::new();
    for (doc_id, entry) in docs {
        let mine = entry.children_in(id);
        if !(&claimed & &mine).is_empty() {
            report.problem(format!(
                "{name}: document `{doc_id}` lists children another document lists"
            ));
        }
        claimed |= &mine;
        if let Some(chunks) = doc_chunks_in(&doc_chunks, id, entry.rev)? {
            if mine.range_cardinality(chunks.child_range()) != u64::from(chunks.children) {
                report.problem(format!(
                    "{name}: document `{doc_id}` does not list its head children"
                ));
            }
        }
        for run in entry.runs(id) {
            let owner = children
                .get((id, run.first))?
                .and_then(|v| decode::<ChildRecord>(v.value(), "child record").ok())
                .filter(|c| c.ordinal == 0)
                .and_then(|c| {
                    let chunks = doc_chunks_in(&doc_chunks, id, c.rev).ok().flatten()?;
                    let rev = revisions.get(c.rev).ok().flatten()?;
                    let rev: RevisionRecord = decode(rev.value(), "revision").ok()?;
                    Some((rev.doc_id, chunks.children))
                });
            if owner != Some((doc_id.clone(), run.count)) {
                report.problem(format!(
                    "{name}: document `{doc_id}` lists children {}..{}, which are not one \
                     of its revisions",
                    run.first,
                    run.first.saturating_add(run.count)
                ));
            }
        }
        for principal in principals_of(&entry.acl) {
            *expected.entry(principal).or_default() |= &mine;
        }
    }
    for (principal, stored) in read_all(&txn.open_table(ACL_CURRENT)?, id)? {
        let wanted = expected.remove(&principal).unwrap_or_default();
        if stored != wanted {
            report.problem(format!(
                "{name}: current bitmap of {} has {} children, the documents say {}",
                shown(&principal),
                stored.len(),
                wanted.len()
            ));
        }
    }
    for (principal, wanted) in expected {
        if !wanted.is_empty() {
            report.problem(format!(
                "{name}: current bitmap of {} is missing ({} children)",
                shown(&principal),
                wanted.len()
            ));
        }
    }
    Ok(())
}

/// A principal as problems name it.
fn shown(principal: &str) -> &str {
    if principal.is_empty() {
        "public"
    } else {
        principal
    }
}

/// Each child live in some version has its record, its parent, its revision and text.
fn check_children(
    txn: &ReadTransaction,
    state: &IndexState,
    live: &RoaringBitmap,
    report: &mut IntegrityReport,
) -> Result<(), StorageError> {
    let (id, name) = (state.id(), state.name());
    let children = txn.open_table(CHILDREN)?;
    let parents = txn.open_table(PARENTS)?;
    let mut parents_ok: HashSet<u32> = HashSet::new();
    let mut texts: HashMap<u64, Option<String>> = HashMap::new();
    for number in live {
        let child: ChildRecord = match children.get((id, number))? {
            Some(v) => match decode(v.value(), "child record") {
                Ok(c) => c,
                Err(e) => {
                    report.problem(format!("{name} child {number}: {e}"));
                    continue;
                }
            },
            None => {
                report.problem(format!("{name} child {number}: record missing"));
                continue;
            }
        };
        if parents_ok.insert(child.parent) {
            match parents.get((id, child.parent))? {
                Some(v) => {
                    if let Err(e) = decode::<ParentRecord>(v.value(), "parent record") {
                        report.problem(format!("{name} parent {}: {e}", child.parent));
                    }
                }
                None => report.problem(format!(
                    "{name} child {number}: parent {} missing",
                    child.parent
                )),
            }
        }
        let text = texts
            .entry(child.rev)
            .or_insert_with(|| read_text(txn, child.rev).ok());
        match text {
            Some(text) => {
                if let Err(e) = slice_text(text, child.start, child.end) {
                    report.problem(format!("{name} child {number}: {e}"));
                }
            }
            None => report.problem(format!(
                "{name} child {number}: revision {} or its text missing",
                child.rev
            )),
        }
    }
    Ok(())
}

/// The head's live children and principal bitmaps are exactly what the documents' current
/// revisions and ACLs say.
fn check_head_acl(
    txn: &ReadTransaction,
    state: &IndexState,
    docs: &[(String, DocEntry)],
    report: &mut IntegrityReport,
) -> Result<(), StorageError> {
    let (id, name) = (state.id(), state.name());
    let head = state.head();
    let doc_chunks = txn.open_table(DOC_CHUNKS)?;
    let children = txn.open_table(CHILDREN)?;
    let mut live = RoaringBitmap::new();
    let mut expected: BTreeMap<String, RoaringBitmap> = BTreeMap::new();
    for (doc_id, entry) in docs {
        let Some(chunks): Option<DocChunks> = doc_chunks_in(&doc_chunks, id, entry.rev)? else {
            report.problem(format!("{name}: document `{doc_id}` has no chunks"));
            continue;
        };
        let range = chunks.child_range();
        if let Some(first) = range.clone().next() {
            let rev = children
                .get((id, first))?
                .and_then(|v| decode::<ChildRecord>(v.value(), "child record").ok())
                .map(|c| (c.rev, c.ordinal));
            if rev != Some((entry.rev, 0)) {
                report.problem(format!(
                    "{name}: document `{doc_id}` does not start at child {first}"
                ));
            }
        }
        live.insert_range(range.clone());
        for principal in principals_of(&entry.acl) {
            expected
                .entry(principal)
                .or_default()
                .insert_range(range.clone());
        }
    }
    if &live != head.live() {
        report.problem(format!(
            "{name}@{}: live children differ from the documents' ({} vs {})",
            head.version(),
            head.live().len(),
            live.len()
        ));
    }
    let acl = txn.open_table(ACL)?;
    let mut principals = principals_in(&acl, id)?;
    principals.push(PUBLIC.to_string());
    principals.extend(expected.keys().cloned());
    principals.sort();
    principals.dedup();
    for principal in principals {
        let stored = read_acl(&acl, id, &principal, head.version())?;
        let wanted = expected.remove(&principal).unwrap_or_default();
        if stored != wanted {
            report.problem(format!(
                "{name}@{}: bitmap of {} has {} children, the ACLs say {}",
                head.version(),
                shown(&principal),
                stored.len(),
                wanted.len()
            ));
        }
    }
    Ok(())
}

/// Tags, aliases and serving pins name retained versions of existing indexes.
fn check_names(
    txn: &ReadTransaction,
    versions: &HashMap<u32, HashSet<u64>>,
    report: &mut IntegrityReport,
) -> Result<(), StorageError> {
    let exists = |index: u32, v: u64| versions.get(&index).is_some_and(|s| s.contains(&v));
    for entry in txn.open_table(TAGS)?.iter()? {
        let (key, v) = entry?;
        let (index, tag) = key.value();
        if !exists(index, v.value()) {
            report.problem(format!(
                "tag `{tag}` of index {index} names missing version {}",
                v.value()
            ));
        }
    }
    for entry in txn.open_table(SERVING)?.iter()? {
        let (index, v) = entry?;
        if !exists(index.value(), v.value()) {
            report.problem(format!(
                "index {} serves missing version {}",
                index.value(),
                v.value()
            ));
        }
    }
    for entry in txn.open_table(ALIASES)?.iter()? {
        let (name, value) = entry?;
        let name = name.value();
        let record: AliasRecord = match decode(value.value(), "alias record") {
            Ok(r) => r,
            Err(e) => {
                report.problem(format!("alias `{name}`: {e}"));
                continue;
            }
        };
        if record.routes.iter().map(|r| r.weight).sum::<u32>() != 100 {
            report.problem(format!("alias `{name}`: weights do not sum to 100"));
        }
        for route in &record.routes {
            if !exists(route.index, route.version) {
                report.problem(format!(
                    "alias `{name}` routes to missing version {} of index {}",
                    route.version, route.index
                ));
            }
        }
    }
    Ok(())
}
