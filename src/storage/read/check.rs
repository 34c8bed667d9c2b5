//! The integrity check: redb's own (on a copy of the file, so the original is never
//! written), every value's checksum, then folio's invariants over every retained version.

use std::collections::{BTreeMap, HashMap, HashSet};

use std::path::Path;

use redb::{Key, ReadTransaction, TableDefinition, TableHandle};
use roaring::RoaringBitmap;

use crate::storage::error::{ReadError, StorageError};
use crate::storage::file::current::principals_of;
use crate::storage::file::current::read_all;
use crate::storage::file::current::PUBLIC;
use crate::storage::file::open::stray_header_flags;
use crate::storage::file::postings::read_postings;
use crate::storage::file::records::{
    decode, decode_bitmap, decode_u64, AliasRecord, ChildRecord, DocChunks, DocEntry, IndexRecord,
    ParentRecord, RevisionRecord, VersionRecord,
};
use crate::storage::file::rows::{read_text, slice_text};
use crate::storage::file::sealed::ReadSealed;
use crate::storage::file::sealed::{contain, Sealed};
use crate::storage::file::segment::Segment;
use crate::storage::file::tables::*;
use crate::storage::file::temp_copy::TempCopy;
use crate::storage::read::catalog::{Catalog, States};
use crate::storage::read::state::{doc_chunks_in, principals_in, read_acl, IndexState};

/// Problems beyond this many are counted, not listed.
const MAX_PROBLEMS: usize = 200;

/// redb's own check of the file (page checksums, allocator state). A store in a file is
/// checked on a copy of it: redb's check repairs what it can, and `check` never writes the
/// file it checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RedbCheck {
    /// Run now, and passed.
    Passed,
    /// Run now on a store not in a file (a backend of the caller's, memory): the storage was
    /// damaged and redb repaired it (a problem is listed too).
    Repaired,
    /// Run now: redb found the file damaged (a problem says how). On a copy of the file,
    /// whatever redb repaired was the copy's.
    Failed,
    /// Not run now: a store not in a file, shared with other handles; it ran when the store
    /// opened.
    #[default]
    AtOpen,
    /// Not run: a store not in a file, open for reading only (redb's check may repair,
    /// which writes).
    ReadOnly,
    /// Not run: no copy of the file could be made (a note says why); the values'
    /// checksums and folio's invariants were still checked.
    NoCopy,
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
    /// Stored values that fail their checksum (each is also a problem).
    pub damaged: Vec<DamagedValue>,
    /// Every inconsistency found (at most 200 listed; `unlisted` counts the rest).
    pub problems: Vec<String>,
    /// What could not be checked, and why (not problems).
    pub notes: Vec<String>,
    /// Problems found beyond those listed.
    pub unlisted: u64,
    /// The file needed redb's recovery (its last writer died without closing it, or its
    /// header is damaged) and was left as it was: what was checked is a recovered copy of it
    /// (a note says so too). Not a problem by itself: a writer's open recovers it the same
    /// way.
    pub needs_recovery: bool,
}

/// A stored value that fails its checksum: nothing is answered from it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DamagedValue {
    /// The table.
    pub table: String,
    /// The key, as folio prints it (a string quoted, a tuple in parentheses).
    pub key: String,
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
    /// redb's own check: on a copy of the file when the store is in one, else on a handle
    /// that has the storage to itself (`None` when others share it: it ran at open).
    pub(crate) fn redb_check(path: &Path, exclusive: Option<&mut Catalog>) -> IntegrityReport {
        let mut report = IntegrityReport::default();
        if path.is_file() {
            match stray_header_flags(path) {
                Ok(Some(flags)) => report.problem(format!(
                    "redb's header is damaged: its flag byte is {flags:#04x}, with bits redb \
                     never writes (which commit is current, and whether the file needs \
                     recovery, are in doubt)"
                )),
                Ok(None) => {}
                Err(e) => report.problem(format!("redb's header could not be read: {e}")),
            }
            match TempCopy::new(path) {
                Ok(copy) => match redb_check_copy(&copy) {
                    Ok(()) => report.redb = RedbCheck::Passed,
                    Err(what) => {
                        report.redb = RedbCheck::Failed;
                        report.problem(format!("redb, on a copy of the file: {what}"));
                    }
                },
                Err(e) => {
                    report.redb = RedbCheck::NoCopy;
                    report.notes.push(format!(
                        "redb's check did not run: no copy of the file could be made in {} ({e})",
                        std::env::temp_dir().display()
                    ));
                }
            }
            return report;
        }
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

    /// Every value's checksum, then folio's invariants over every retained version, after
    /// [`Catalog::redb_check`]. Damage that stops a step is a problem, not an error.
    pub(crate) fn check_integrity(
        &self,
        mut report: IntegrityReport,
    ) -> Result<IntegrityReport, ReadError> {
        if self.db().reads_recovered_copy() {
            report.needs_recovery = true;
            report.notes.push(
                "the file needs redb's recovery (its last writer did not close it, or its header \
                 is damaged): it was left as it was, and a recovered copy of it was checked"
                    .into(),
            );
        }
        let (txn, indexes) = match contain(|| self.snapshot()) {
            Ok(read) => read,
            Err(e) if e.is_damage() => {
                report.problem(format!("the file could not be read: {e}"));
                return Ok(report);
            }
            Err(e) => return Err(e.into()),
        };
        match contain(|| check_values(&txn, &mut report)) {
            Err(e) if e.is_damage() => report.problem(format!("reading every value: {e}")),
            other => other?,
        }
        match contain(|| self.check_invariants(&txn, &indexes, &mut report)) {
            Err(ReadError::Storage(e)) if e.is_damage() => {
                report.problem(format!("folio's check stopped at damage: {e}"))
            }
            other => other?,
        }
        Ok(report)
    }

    fn check_invariants(
        &self,
        txn: &ReadTransaction,
        indexes: &States,
        report: &mut IntegrityReport,
    ) -> Result<(), ReadError> {
        let docs = check_documents(txn, report)?;
        let mut names: HashMap<u32, HashSet<u64>> = HashMap::new();
        let stored = txn.open_table(INDEXES)?;
        for (name, state) in indexes {
            let record: Option<IndexRecord> = match stored.read(name.as_str())? {
                Some(v) => Some(decode(v.value(), "index record")?),
                None => None,
            };
            if record.as_ref() != Some(state.record()) {
                report.problem(format!("index `{name}`: its record changed or vanished"));
                continue;
            }
            let versions = check_index(txn, state, &docs, report)?;
            names.insert(state.id(), versions);
        }
        for bad in self.unavailable_indexes() {
            report.problem(format!(
                "index `{}` could not be loaded: {} (`folio index drop` removes it)",
                bad.name, bad.reason
            ));
        }
        report.indexes = indexes.len() as u64;
        check_names(txn, &names, report)?;
        Ok(())
    }
}

/// Reads every value of every table, each verified against its checksum: a damaged one is
/// listed (and reading goes on), and a table yielding fewer rows than redb records for it
/// (a damaged page that lost entries) is a problem.
fn check_values(txn: &ReadTransaction, report: &mut IntegrityReport) -> Result<(), StorageError> {
    check_table(txn, META, report)?;
    check_table(txn, DOCS, report)?;
    check_table(txn, REVISIONS, report)?;
    check_table(txn, REV_TEXT, report)?;
    check_table(txn, INDEXES, report)?;
    check_table(txn, DOC_CHUNKS, report)?;
    check_table(txn, PARENTS, report)?;
    check_table(txn, CHILDREN, report)?;
    check_table(txn, SEGMENTS, report)?;
    check_table(txn, SEGMENT_VECTORS, report)?;
    check_table(txn, SEGMENT_GRAPHS, report)?;
    check_table(txn, SEGMENT_POSTINGS, report)?;
    check_table(txn, VERSIONS, report)?;
    check_table(txn, ACL, report)?;
    check_table(txn, ACL_CURRENT, report)?;
    check_table(txn, TAGS, report)?;
    check_table(txn, ALIASES, report)?;
    check_table(txn, SERVING, report)?;
    check_table(txn, REQUEST_LOG, report)?;
    check_table(txn, PUBLISHED, report)?;
    check_table(txn, OUTBOX, report)
}

fn check_table<K: Key + 'static>(
    txn: &ReadTransaction,
    definition: TableDefinition<K, Sealed>,
    report: &mut IntegrityReport,
) -> Result<(), StorageError> {
    // A table missing from redb's list is damage too (`StorageError`'s `From`).
    let table = match txn.open_table(definition).map_err(StorageError::from) {
        Ok(table) => table,
        Err(e) if e.is_damage() => {
            report.problem(format!("table `{}`: {e}", definition.name()));
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    // A table that yields fewer (or more) rows than redb records for it ends its rows with
    // a `DamagedPage` error (`sealed::Rows`).
    for row in table.all()? {
        match row {
            Ok(_) => {}
            Err(StorageError::Damaged { table, key }) => {
                report.problem(format!(
                    "table `{table}`, key {key}: the value fails its checksum"
                ));
                report.damaged.push(DamagedValue { table, key });
            }
            Err(e) if e.is_damage() => {
                report.problem(format!("table `{}`: {e}", definition.name()));
                return Ok(());
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// redb's check of a copy of the file (redb's check repairs what it can, so the original is
/// never given to it); `Err` says what redb found.
fn redb_check_copy(copy: &TempCopy) -> Result<(), String> {
    let opened = contain::<_, StorageError>(|| {
        Ok(redb::Database::builder()
            .set_cache_size(COPY_CACHE_BYTES)
            .create(copy.path()))
    })
    .map_err(|e| e.to_string())?;
    let mut db = opened.map_err(|e| e.to_string())?;
    match contain::<_, StorageError>(|| Ok(db.check_integrity())).map_err(|e| e.to_string())? {
        Ok(true) => Ok(()),
        Ok(false) => Err("damaged pages (redb repaired the copy; the file is as it was)".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// redb's page cache while it checks a copy: the check reads each page once.
const COPY_CACHE_BYTES: usize = 16 << 20;

/// Every document's revision and text exist; returns the documents' entries.
fn check_documents(
    txn: &ReadTransaction,
    report: &mut IntegrityReport,
) -> Result<Vec<(String, DocEntry)>, StorageError> {
    let revisions = txn.open_table(REVISIONS)?;
    let mut out = Vec::new();
    for entry in txn.open_table(DOCS)?.all()? {
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
        .rows((id, 0u64)..=(id, u64::MAX))?
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
            let range = segments.entry(*s).or_insert_with(|| {
                let loaded = Segment::load(txn, record, *s, None).and_then(|segment| {
                    // The postings decode whole (the codec checks them).
                    read_postings(txn, record.id, *s)?;
                    Ok(segment)
                });
                match loaded {
                    Ok(segment) => Some(segment.ids()),
                    Err(e) => {
                        report.problem(format!("{name} segment {s}: {e}"));
                        None
                    }
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
                .read((id, run.first))?
                .and_then(|v| decode::<ChildRecord>(v.value(), "child record").ok())
                .filter(|c| c.ordinal == 0)
                .and_then(|c| {
                    let chunks = doc_chunks_in(&doc_chunks, id, c.rev).ok().flatten()?;
                    let rev = revisions.read(c.rev).ok().flatten()?;
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
        let child: ChildRecord = match children.read((id, number))? {
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
            match parents.read((id, child.parent))? {
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
                .read((id, first))?
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
    for entry in txn.open_table(TAGS)?.all()? {
        let (key, v) = entry?;
        let (index, tag) = key.value();
        let v = decode_u64(v.value(), "tag")?;
        if !exists(index, v) {
            report.problem(format!(
                "tag `{tag}` of index {index} names missing version {v}"
            ));
        }
    }
    for entry in txn.open_table(SERVING)?.all()? {
        let (index, v) = entry?;
        let v = decode_u64(v.value(), "serving pin")?;
        if !exists(index.value(), v) {
            report.problem(format!(
                "index {} serves missing version {v}",
                index.value()
            ));
        }
    }
    for entry in txn.open_table(ALIASES)?.all()? {
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
