//! Merging segments. The live children of some segments of the head version are copied,
//! with fresh contiguous child numbers (same parents), into one new segment whose graph is
//! rebuilt; the live bitmap and every principal bitmap are remapped; the result is a new
//! version. Older versions keep their segments and numbers, so they answer as before.
//!
//! Why: every commit appends a segment, and updates leave dead rows behind. Many small
//! segments cost one planner call each per query, and dead rows in a graph make filtered
//! search walk nodes it may not return, which lowers recall at a fixed breadth. Merging
//! also lets `gc` free the old segments once no retained version names them.
//!
//! Like a batch, a merge reads its rows and builds the new segment (graph included) from a
//! snapshot without the writer lock, so nothing that takes the lock waits for a graph;
//! under the lock it lands on the head as it is then, in one short write transaction.
//! Merges of one index are serialised by their own lock ([`crate::Store::merge_lock`]).

use std::sync::Arc;

use redb::ReadTransaction;
use roaring::RoaringBitmap;

use crate::index::SegmentIndex;
use crate::progress::{NoProgress, Progress};
use crate::storage::error::{IndexError, StorageError};
use crate::storage::file::current::CurrentAcl;
use crate::storage::file::current::PUBLIC;
use crate::storage::file::records::{
    decode, encode, encode_bitmap, ChildRecord, ChildRun, DocEntry, RevisionRecord,
};
use crate::storage::file::sealed::{ReadSealed, WriteSealed};
use crate::storage::file::segment::Segment;
use crate::storage::file::tables::{ACL, CHILDREN, DOCS, DOC_CHUNKS, REVISIONS};
use crate::storage::options::MergePolicy;
use crate::storage::read::state::{
    doc_chunks_in, principals_in, read_acl, IndexState, VersionView,
};
use crate::storage::write::commit::{build_segment, write_version};
use crate::storage::write::writer::Writer;

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
    /// Rows of the merged segments live in the new version (copied into the new segment).
    pub rows_kept: u64,
    /// Rows of the merged segments not live in the new version: dead rows left behind
    /// (freed by `gc` once no retained version uses them), and rows a commit deleted while
    /// the merge was built, which the new segment holds as dead rows.
    pub rows_dropped: u64,
}

impl Writer<'_> {
    /// Merges every segment of `index`'s head into one holding only its live children, as
    /// a new version; `None` when there is nothing to gain (one segment, no dead rows) or
    /// the index was dropped and created again while the merge was built.
    pub(crate) fn compact(&self, index: &str) -> Result<Option<Compaction>, IndexError> {
        self.compact_with(index, &NoProgress)
    }

    /// Like [`crate::store::Indexes::compact`], reporting the graph build. The merged segment (its graph
    /// included) is built without the writer lock, so searches, request-log writes,
    /// feedback, alias switches, rollbacks and batches never wait for it; it waits for a
    /// merge of the same index already under way.
    pub(crate) fn compact_with(
        &self,
        index: &str,
        progress: &dyn Progress,
    ) -> Result<Option<Compaction>, IndexError> {
        if self.is_read_only() {
            return Err(StorageError::ReadOnly.into());
        }
        merge_index(self, index, Wait::Yes, progress, |head| {
            worth_merging(head.segments(), head)
        })
    }
}

/// Runs the merge policy on every index after a commit (the caller released the writer
/// lock): the versions made, and the first error, which stops the policy until the next
/// commit. An index already being merged is skipped: that merge, or the policy after the
/// next commit, takes care of it.
pub(crate) fn after_commit(
    store: &Writer<'_>,
    progress: &dyn Progress,
) -> (std::collections::BTreeMap<String, u64>, Option<String>) {
    let policy = store.merge_policy();
    let mut made = std::collections::BTreeMap::new();
    for name in store.indexes().into_keys() {
        match merge_index(store, &name, Wait::No, progress, |head| policy.choose(head)) {
            Ok(Some(done)) => {
                made.insert(name, done.version);
            }
            // Nothing to merge, a merge of it under way, or dropped since the commit.
            Ok(None) | Err(IndexError::UnknownIndex { .. }) => {}
            Err(e) => return (made, Some(format!("merging segments of `{name}`: {e}"))),
        }
    }
    (made, None)
}

/// Whether [`merge_index`] waits for a merge of the same index under way, or skips.
enum Wait {
    Yes,
    No,
}

/// Merges the segments `choose` picks in the head of index `name`, holding the index's
/// merge lock so no other merge of it is built or lands meanwhile: built from a snapshot
/// without the writer lock, then landed under it ([`Merge::land`]).
fn merge_index(
    store: &Writer<'_>,
    name: &str,
    wait: Wait,
    progress: &dyn Progress,
    choose: impl FnOnce(&VersionView) -> Vec<Arc<Segment>>,
) -> Result<Option<Compaction>, IndexError> {
    let lock = store.merge_lock(name);
    let _merging = match wait {
        Wait::Yes => lock.lock(),
        Wait::No => match lock.try_lock() {
            Some(guard) => guard,
            None => return Ok(None),
        },
    };
    // The snapshot holds the head's segments (a compressed segment's rows are read from
    // it) however the head moves on meanwhile.
    let (read, states) = store.snapshot()?;
    let state = states.get(name).ok_or_else(|| IndexError::UnknownIndex {
        name: name.to_string(),
    })?;
    let chosen = choose(&state.head());
    if chosen.is_empty() {
        return Ok(None);
    }
    let merge = Merge::build(read, state, chosen, progress)?;
    drop(states);
    merge.land(store)
}

/// A merge built from a head version without the writer lock: the rows of the chosen
/// segments live in that head, and the new segment over them, graph included.
struct Merge {
    state: Arc<IndexState>,
    chosen: Vec<Arc<Segment>>,
    /// The old numbers of the new segment's rows, in order.
    moved: RoaringBitmap,
    /// Rows of the chosen segments, dead ones included.
    rows: u64,
    /// Numbered from 0 until it lands.
    segment: Option<SegmentIndex>,
}

impl Merge {
    /// Reads the live rows of `chosen` (segments of the head of `state`) through `read`,
    /// ends it (no transaction is held while the graph is built), and builds the segment
    /// over them.
    fn build(
        read: ReadTransaction,
        state: &Arc<IndexState>,
        mut chosen: Vec<Arc<Segment>>,
        progress: &dyn Progress,
    ) -> Result<Merge, IndexError> {
        let head = state.head();
        let record = state.record();
        chosen.sort_by_key(|s| s.base());
        // The live rows, in child-number order: their new numbers follow the same order,
        // so a revision's children stay contiguous and in ordinal order.
        let mut moved = RoaringBitmap::new();
        let live: u64 = chosen
            .iter()
            .map(|s| head.live().range_cardinality(s.ids()))
            .sum();
        let mut data =
            crate::index::pages::with_capacity(live as usize * record.embedder.dimension as usize);
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
        let segment = if moved.is_empty() {
            None
        } else {
            Some(build_segment(record, 0, data, progress)?)
        };
        Ok(Merge {
            state: state.clone(),
            rows: chosen.iter().map(|s| s.len() as u64).sum(),
            chosen,
            moved,
            segment,
        })
    }

    /// Writes the merge as a new version in one short write transaction under the writer
    /// lock, on the head as it is then. Only commits can have moved the head on (merges of
    /// the index wait for the merge lock), and a commit only adds segments and takes rows
    /// out of the live set: rows deleted or replaced meanwhile stay in the new segment as
    /// dead rows, never live again, their records not copied. `None` if the index was
    /// dropped (and created again) meanwhile.
    fn land(self, store: &Writer<'_>) -> Result<Option<Compaction>, IndexError> {
        let mut turn = store.lock_writer()?;
        let Some(state) = store.index(self.state.name()).filter(|now| {
            let head = now.head();
            now.id() == self.state.id()
                && self
                    .chosen
                    .iter()
                    .all(|c| head.segments().iter().any(|s| s.id() == c.id()))
        }) else {
            return Ok(None);
        };
        let head = state.head();
        let still = &self.moved & head.live();
        // Rows all deleted meanwhile: the merge only drops the chosen segments.
        let segment = self.segment.filter(|_| !still.is_empty());
        let numbered = if segment.is_some() {
            self.moved.len()
        } else {
            0
        };
        let mut record = state.record().clone();
        let id = record.id;
        let base = record.next_child;
        let end = u32::try_from(numbered)
            .ok()
            .and_then(|k| base.checked_add(k))
            .ok_or_else(|| IndexError::Exhausted {
                index: state.name().to_string(),
                what: "child numbers",
            })?;
        // (new number, old number) of the rows still live.
        let renumbered: Vec<(u32, u32)> = (base..end)
            .zip(self.moved.iter())
            .filter(|(_, old)| still.contains(*old))
            .collect();
        let version = record.head + 1;
        let txn = turn.txn()?;
        let mut current = CurrentAcl::new(id);
        {
            let mut children = txn.open_table(CHILDREN)?;
            let mut doc_chunks = txn.open_table(DOC_CHUNKS)?;
            // The documents of the moved revisions: their entries list the copies too.
            let mut docs: std::collections::BTreeMap<String, DocEntry> = Default::default();
            for &(new, old) in &renumbered {
                let bytes = children
                    .read((id, old))?
                    .ok_or_else(|| {
                        StorageError::corrupt(format!("child {old} of index {id} missing"))
                    })?
                    .value()
                    .to_vec();
                let child: ChildRecord = decode(&bytes, "child record")?;
                if child.ordinal == 0 {
                    // `doc_chunks` follows the head's numbering: later writes find the
                    // revision's children there.
                    let mut chunks =
                        doc_chunks_in(&doc_chunks, id, child.rev)?.ok_or_else(|| {
                            StorageError::corrupt(format!("revision {} has no chunks", child.rev))
                        })?;
                    chunks.first_child = new;
                    doc_chunks.put((id, child.rev), encode(&chunks).as_slice())?;
                    let run = ChildRun {
                        first: new,
                        count: chunks.children,
                    };
                    copied_run(&txn, &mut docs, &mut current, id, child.rev, run)?;
                }
                children.put((id, new), bytes.as_slice())?;
            }
            let mut table = txn.open_table(DOCS)?;
            for (doc_id, entry) in &docs {
                table.put(doc_id.as_str(), encode(entry).as_slice())?;
            }
            let mut acl = txn.open_table(ACL)?;
            let mut principals = principals_in(&acl, id)?;
            principals.push(PUBLIC.to_string());
            for principal in principals {
                let bitmap = read_acl(&acl, id, &principal, head.version())?;
                let inside = &bitmap & &still;
                if inside.is_empty() {
                    continue;
                }
                let mut remapped = &bitmap - &self.moved;
                remapped.extend(
                    renumbered
                        .iter()
                        .filter(|(_, old)| inside.contains(*old))
                        .map(|(new, _)| *new),
                );
                acl.put(
                    (id, principal.as_str(), version),
                    encode_bitmap(&remapped).as_slice(),
                )?;
            }
        }
        let mut segments: Vec<Arc<Segment>> = head
            .segments()
            .iter()
            .filter(|s| !self.chosen.iter().any(|c| c.id() == s.id()))
            .cloned()
            .collect();
        if let Some(built) = segment {
            let segment = Segment::new(record.next_segment, built.with_base(base)?);
            segments.push(Arc::new(segment).write(&txn, &record)?);
            record.next_segment += 1;
        }
        record.next_child = end;
        let mut live = head.live() - &self.moved;
        live.extend(renumbered.iter().map(|(new, _)| *new));
        let kept = renumbered.len() as u64;
        let merged = self.chosen.len();
        let plural = if merged == 1 { "" } else { "s" };
        let change = format!(
            "compact {merged} segment{plural}: {kept} rows kept, {} dropped",
            self.rows - kept
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
        Ok(Some(Compaction {
            index: state.name().to_string(),
            version,
            segments_merged: merged,
            rows_kept: kept,
            rows_dropped: self.rows - kept,
        }))
    }
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
            .read(rev)?
            .ok_or_else(|| StorageError::corrupt(format!("revision {rev} missing")))?;
        decode::<RevisionRecord>(value.value(), "revision")?.doc_id
    };
    if !docs.contains_key(&doc_id) {
        let table = txn.open_table(DOCS)?;
        let value = table.read(doc_id.as_str())?.ok_or_else(|| {
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
