//! Merging segments. The live children of some segments of the head version are copied,
//! with fresh contiguous child numbers (same parents), into one new segment whose graph is
//! rebuilt; the live bitmap and every principal bitmap are remapped; the result is a new
//! version. Older versions keep their segments and numbers, so they answer as before.
//!
//! Why: every commit appends a segment, and updates leave dead rows behind. Many small
//! segments cost one planner call each per query, and dead rows in a graph make filtered
//! search walk nodes it may not return, which lowers recall at a fixed breadth. Merging
//! also lets `gc` free the old segments once no retained version names them.

use std::sync::Arc;

use redb::ReadableTable;
use roaring::RoaringBitmap;

use super::commit::{build_segment, write_version};
use super::current::CurrentAcl;
use super::error::{IndexError, StorageError};
use super::options::MergePolicy;
use super::progress::{NoProgress, Progress};
use super::records::{
    decode, encode, encode_bitmap, ChildRecord, ChildRun, DocEntry, RevisionRecord,
};
use super::segment::Segment;
use super::state::{doc_chunks_in, principals_in, read_acl, IndexState, VersionView, PUBLIC};
use super::tables::{ACL, CHILDREN, DOCS, DOC_CHUNKS, REVISIONS};
use super::Store;

impl MergePolicy {
    /// The segments of `head` to merge now (none when the policy is content).
    fn choose(&self, head: &VersionView) -> Vec<Arc<Segment>> {
        let segments = head.segments();
        let live = |s: &Segment| head.live().range_cardinality(s.ids());
        let mut chosen: Vec<bool> = segments
            .iter()
            .map(|s| {
                let rows = s.len() as u64;
                rows > 0 && (rows - live(s)) as f32 > self.max_dead_fraction * rows as f32
            })
            .collect();
        let rest = chosen.iter().filter(|c| !**c).count();
        let after = rest + usize::from(chosen.iter().any(|c| *c));
        if after > self.max_segments {
            // Tiered: fold the smallest segments together until half the limit remains, so
            // a large segment is rewritten only once enough others have grown as large.
            let target = (self.max_segments / 2).max(1);
            let mut smallest: Vec<usize> = (0..segments.len()).filter(|&i| !chosen[i]).collect();
            smallest.sort_by_key(|&i| live(&segments[i]));
            for i in smallest.into_iter().take((rest + 1).saturating_sub(target)) {
                chosen[i] = true;
            }
        }
        let picked: Vec<Arc<Segment>> = segments
            .iter()
            .zip(&chosen)
            .filter(|(_, c)| **c)
            .map(|(s, _)| s.clone())
            .collect();
        worth_merging(&picked, head)
    }
}

/// `segments`, unless merging them would change nothing (one segment without dead rows).
fn worth_merging(segments: &[Arc<Segment>], head: &VersionView) -> Vec<Arc<Segment>> {
    match segments {
        [] => Vec::new(),
        [one] if head.live().range_cardinality(one.ids()) == one.len() as u64 => Vec::new(),
        _ => segments.to_vec(),
    }
}

/// What a merge did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Compaction {
    /// The index merged.
    pub index: String,
    /// The version the merge made.
    pub version: u64,
    /// Segments merged into one.
    pub segments_merged: usize,
    /// Live rows copied into the new segment.
    pub rows_kept: u64,
    /// Dead rows left behind (freed by `gc` once no retained version uses them).
    pub rows_dropped: u64,
}

impl Store {
    /// Merges every segment of `index`'s head into one holding only its live children, as
    /// a new version; `None` when there is nothing to gain (one segment, no dead rows).
    pub fn compact(&self, index: &str) -> Result<Option<Compaction>, IndexError> {
        self.compact_with(index, &NoProgress)
    }

    /// Like [`Store::compact`], reporting the graph build.
    pub fn compact_with(
        &self,
        index: &str,
        progress: &dyn Progress,
    ) -> Result<Option<Compaction>, IndexError> {
        let _writer = self.lock_writer()?;
        let state = self.index(index).ok_or_else(|| IndexError::UnknownIndex {
            name: index.to_string(),
        })?;
        let head = state.head();
        let chosen = worth_merging(head.segments(), &head);
        if chosen.is_empty() {
            return Ok(None);
        }
        merge(self, &state, chosen, progress).map(Some)
    }
}

/// Runs the merge policy on every index after a commit (the caller holds the writer lock):
/// the versions made, and the first error, which stops the policy until the next commit.
pub(crate) fn after_commit(
    store: &Store,
    progress: &dyn Progress,
) -> (std::collections::BTreeMap<String, u64>, Option<String>) {
    let policy = store.merge_policy();
    let mut made = std::collections::BTreeMap::new();
    for (name, state) in store.indexes() {
        let chosen = policy.choose(&state.head());
        if chosen.is_empty() {
            continue;
        }
        match merge(store, &state, chosen, progress) {
            Ok(done) => {
                made.insert(name, done.version);
            }
            Err(e) => return (made, Some(format!("merging segments of `{name}`: {e}"))),
        }
    }
    (made, None)
}

/// Merges `chosen` (segments of the head of `state`) into one; the caller holds the writer
/// lock.
fn merge(
    store: &Store,
    state: &Arc<IndexState>,
    mut chosen: Vec<Arc<Segment>>,
    progress: &dyn Progress,
) -> Result<Compaction, IndexError> {
    let head = state.head();
    let mut record = state.record().clone();
    let id = record.id;
    let dim = record.embedder.dimension as usize;
    chosen.sort_by_key(|s| s.base());
    // The live rows, in child-number order: their new numbers follow the same order, so a
    // revision's children stay contiguous and in ordinal order.
    let mut moved = RoaringBitmap::new();
    let live: u64 = chosen
        .iter()
        .map(|s| head.live().range_cardinality(s.ids()))
        .sum();
    let mut data = crate::index::pages::with_capacity(live as usize * dim);
    // A compressed segment's rows are read from the file: the head's segments are in
    // every snapshot from the head's commit on.
    let read = store.db().begin_read()?;
    for segment in &chosen {
        let locals: Vec<u32> = head
            .live()
            .range(segment.ids())
            .map(|number| number - segment.base())
            .collect();
        segment.read_rows(&read, &locals, &mut data)?;
        moved.extend(locals.iter().map(|local| local + segment.base()));
    }
    drop(read);
    let kept = moved.len();
    let rows: u64 = chosen.iter().map(|s| s.len() as u64).sum();
    let base = record.next_child;
    let end = u32::try_from(kept)
        .ok()
        .and_then(|k| base.checked_add(k))
        .ok_or_else(|| IndexError::Exhausted {
            index: state.name().to_string(),
            what: "child numbers",
        })?;
    let segment = if kept == 0 {
        None
    } else {
        let index = build_segment(&record, base, data, progress)?;
        Some(Arc::new(Segment::new(record.next_segment, index)))
    };
    let version = record.head + 1;
    let txn = store.db().begin_write()?;
    let mut current = CurrentAcl::new(id);
    {
        let mut children = txn.open_table(CHILDREN)?;
        let mut doc_chunks = txn.open_table(DOC_CHUNKS)?;
        // The documents of the moved revisions: their entries list the copies too.
        let mut docs: std::collections::BTreeMap<String, DocEntry> = Default::default();
        for (new, old) in (base..end).zip(moved.iter()) {
            let bytes = children
                .get((id, old))?
                .ok_or_else(|| StorageError::corrupt(format!("child {old} of index {id} missing")))?
                .value()
                .to_vec();
            let child: ChildRecord = decode(&bytes, "child record")?;
            if child.ordinal == 0 {
                // `doc_chunks` follows the head's numbering: later writes find the
                // revision's children there.
                let mut chunks = doc_chunks_in(&doc_chunks, id, child.rev)?.ok_or_else(|| {
                    StorageError::corrupt(format!("revision {} has no chunks", child.rev))
                })?;
                chunks.first_child = new;
                doc_chunks.insert((id, child.rev), encode(&chunks).as_slice())?;
                let run = ChildRun {
                    first: new,
                    count: chunks.children,
                };
                copied_run(&txn, &mut docs, &mut current, id, child.rev, run)?;
            }
            children.insert((id, new), bytes.as_slice())?;
        }
        let mut table = txn.open_table(DOCS)?;
        for (doc_id, entry) in &docs {
            table.insert(doc_id.as_str(), encode(entry).as_slice())?;
        }
        let mut acl = txn.open_table(ACL)?;
        let mut principals = principals_in(&acl, id)?;
        principals.push(PUBLIC.to_string());
        for principal in principals {
            let bitmap = read_acl(&acl, id, &principal, head.version())?;
            let inside = &bitmap & &moved;
            if inside.is_empty() {
                continue;
            }
            let mut remapped = &bitmap - &moved;
            let mut numbers = (base..end).zip(moved.iter());
            for old in &inside {
                if let Some((new, _)) = numbers.find(|(_, m)| *m == old) {
                    remapped.insert(new);
                }
            }
            acl.insert(
                (id, principal.as_str(), version),
                encode_bitmap(&remapped).as_slice(),
            )?;
        }
    }
    let mut segments: Vec<Arc<Segment>> = head
        .segments()
        .iter()
        .filter(|s| !chosen.iter().any(|c| c.id() == s.id()))
        .cloned()
        .collect();
    if let Some(segment) = segment {
        segments.push(segment.write(&txn, id, record.vectors)?);
        record.next_segment += 1;
    }
    record.next_child = end;
    let mut live = head.live() - &moved;
    live.insert_range(base..end);
    let plural = if chosen.len() == 1 { "" } else { "s" };
    let change = format!(
        "compact {} segment{plural}: {kept} rows kept, {} dropped",
        chosen.len(),
        rows - kept
    );
    let view = write_version(
        &txn,
        state.name(),
        &mut record,
        segments,
        live,
        &change,
        head.documents(),
    )?;
    let current = current.write(&txn)?;
    txn.commit()?;
    store.install(vec![Arc::new(state.next(record, view, current))]);
    Ok(Compaction {
        index: state.name().to_string(),
        version,
        segments_merged: chosen.len(),
        rows_kept: kept,
        rows_dropped: rows - kept,
    })
}

/// Records `run`, a compaction's copy of revision `rev`'s children, in its document's entry
/// (read into `docs` once) and grants it to the document's current principals: the copies
/// are the same chunks, so whoever may see the document now may see them.
fn copied_run(
    txn: &redb::WriteTransaction,
    docs: &mut std::collections::BTreeMap<String, DocEntry>,
    current: &mut CurrentAcl,
    index: u32,
    rev: u64,
    run: ChildRun,
) -> Result<(), StorageError> {
    let doc_id = {
        let revisions = txn.open_table(REVISIONS)?;
        let value = revisions
            .get(rev)?
            .ok_or_else(|| StorageError::corrupt(format!("revision {rev} missing")))?;
        decode::<RevisionRecord>(value.value(), "revision")?.doc_id
    };
    if !docs.contains_key(&doc_id) {
        let table = txn.open_table(DOCS)?;
        let value = table.get(doc_id.as_str())?.ok_or_else(|| {
            StorageError::corrupt(format!(
                "revision {rev} is live in the head, but its document `{doc_id}` is gone"
            ))
        })?;
        let entry: DocEntry = decode(value.value(), "doc entry")?;
        drop(value);
        docs.insert(doc_id.clone(), entry);
    }
    if let Some(entry) = docs.get_mut(&doc_id) {
        entry.add_run(index, run);
        current.grant(txn, &run.range().collect(), &entry.acl)?;
    }
    Ok(())
}
