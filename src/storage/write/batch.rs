//! Writes: batches of upserts, deletes and ACL changes, each committed in one redb write
//! transaction that also produces a new version of every index.

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Range;
use std::sync::Arc;

use redb::{ReadableTableMetadata, WriteTransaction};
use roaring::RoaringBitmap;

use crate::chunk::Chunked;
use crate::document::Document;
use crate::embed::{Truncation, TruncationReport};
use crate::index::SegmentIndex;
use crate::ingest::{dry_run, normalise_rows, prepare, IndexModel, Prepared, Upsert};
use crate::ingest::{DocumentProblem, Piece};
use crate::progress::{NoProgress, Progress};
use crate::storage::error::{StorageError, WriteError};
use crate::storage::file::current::principals_of;
use crate::storage::file::current::CurrentAcl;
use crate::storage::file::outbox::{append, published_ids, ChangeRecord};
use crate::storage::file::records::{
    decode, encode, encode_bitmap, ChildRecord, ChildRun, DocChunks, DocEntry, IndexRecord,
    ParentRecord, RevisionRecord,
};
use crate::storage::file::sealed::{ReadSealed, Sealed, WriteSealed};
use crate::storage::file::segment::Segment;
use crate::storage::file::tables::*;
use crate::storage::read::state::{doc_chunks_in, read_acl, IndexState, VersionView};
use crate::storage::write::commit::{
    build_segment, release_freed_heap, write_version, TRIM_AFTER_OPS,
};
use crate::storage::write::staged::StagedDocs;
use crate::storage::write::writer::Writer;

enum Op {
    /// A document and the chunks its application cut (every index takes them instead of
    /// its own spec), staged at this range of the batch's [`StagedDocs`].
    Upsert(Range<usize>),
    Delete(String),
    SetAcl(String, Vec<String>),
}

/// A set of changes committed atomically: all of them or none.
///
/// Operations apply in the order they were added, so an upsert followed by a delete of the
/// same document leaves it deleted.
pub struct Batch<'s> {
    store: Writer<'s>,
    ops: Vec<Op>,
    /// The upserts' documents and chunks.
    staged: StagedDocs,
    /// The vectors the application brought, per index.
    given: Vec<Given>,
    /// The first operation that could not be stored faithfully, found as it was added
    /// (the commit refuses the batch before any work).
    refused: Option<Refusal>,
}

/// Vectors the application brought for one index, concatenated in upsert order: one
/// allocation for the whole batch instead of one per document (each upsert's own vector is
/// freed at once and its memory reused by the next), borrowed by the commit, never copied
/// per document, and freed before the graph is built.
struct Given {
    index: String,
    data: Vec<f32>,
    /// Per upsert that brought vectors for this index, in op order: its op position and
    /// its floats in `data`.
    rows: Vec<(usize, Range<usize>)>,
}

impl Given {
    /// `ops`' upserts as index `self.index` sees them, with the vectors brought for it.
    fn upserts<'a>(
        given: Option<&'a Given>,
        ops: &'a [Op],
        staged: &'a StagedDocs,
    ) -> Vec<Upsert<'a>> {
        let mut rows = given
            .map_or(&[][..], |g| g.rows.as_slice())
            .iter()
            .peekable();
        ops.iter()
            .enumerate()
            .filter_map(|(i, op)| match op {
                Op::Upsert(at) => {
                    let vectors = rows
                        .next_if(|(op, _)| *op == i)
                        .and_then(|(_, range)| given.map(|g| &g.data[range.clone()]));
                    Some(Upsert {
                        op: i,
                        staged,
                        at: at.clone(),
                        vectors,
                    })
                }
                _ => None,
            })
            .collect()
    }
}

/// What a commit did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CommitReceipt {
    /// The new version of each index.
    pub versions: BTreeMap<String, u64>,
    /// Documents upserted.
    pub upserted: usize,
    /// Documents deleted.
    pub deleted: usize,
    /// Documents whose ACL changed.
    pub acl_changed: usize,
    /// Child chunks written, over all indexes.
    pub children: usize,
    /// The token counts of every index whose embedder has a tokenizer and a limit: chunks
    /// longer than the model reads are never embedded silently.
    pub truncation: Vec<TruncationReport>,
    /// The versions the merge policy made right after the commit, by index. The merges run
    /// after the commit released the writer lock (their graphs are built without it), so
    /// another writer's version may come between; an index whose merge another thread has
    /// under way is left to that merge.
    pub merged: BTreeMap<String, u64>,
    /// Why the merge policy failed after the commit, if it did. The batch itself is
    /// committed either way; the next commit (or [`crate::store::Indexes::compact`]) tries the merge again.
    pub merge_error: Option<String>,
    /// What the store's retention policy ([`crate::Store::set_retention`]) collected after
    /// the commit (and its merges), when it deleted any version.
    pub collected: Option<crate::storage::write::gc::GcReport>,
    /// Why the retention policy's collection failed after the commit, if it did (the batch
    /// is committed either way; the next commit collects again).
    pub retention_error: Option<String>,
}

/// What a batch would write, found without embedding or writing anything
/// ([`Batch::dry_run_with`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DryRun {
    /// Child chunks per index as a commit would cut them (oversized chunks split when the
    /// store's truncation setting says so).
    pub children: BTreeMap<String, usize>,
    /// The token counts of every index whose embedder has a tokenizer and a limit, as a
    /// commit would report them (a store that refuses oversized chunks reports them here
    /// instead of failing).
    pub truncation: Vec<TruncationReport>,
}

impl<'s> Writer<'s> {
    /// An empty batch.
    pub(crate) fn batch(&self) -> Batch<'s> {
        Batch {
            store: *self,
            ops: Vec::new(),
            staged: StagedDocs::default(),
            given: Vec::new(),
            refused: None,
        }
    }

    /// Adds or replaces one document (its old chunks and vectors go in the same commit).
    pub(crate) fn upsert(&self, doc: Document) -> Result<CommitReceipt, WriteError> {
        let mut batch = self.batch();
        batch.upsert(doc);
        batch.commit()
    }

    /// Deletes one document and its chunks.
    pub(crate) fn delete(&self, doc_id: &str) -> Result<CommitReceipt, WriteError> {
        let mut batch = self.batch();
        batch.delete(doc_id);
        batch.commit()
    }

    /// Changes who may see a document, without re-chunking or re-embedding it.
    pub(crate) fn set_acl<S: Into<String>>(
        &self,
        doc_id: &str,
        acl: impl IntoIterator<Item = S>,
    ) -> Result<CommitReceipt, WriteError> {
        let mut batch = self.batch();
        batch.set_acl(doc_id, acl);
        batch.commit()
    }
}

impl<'s> Batch<'s> {
    /// Adds or replaces `doc`; every index embeds its chunks with its own embedder.
    pub fn upsert(&mut self, doc: Document) -> &mut Self {
        self.upsert_prepared(doc, None, BTreeMap::new())
    }

    /// Adds or replaces `doc` with vectors the application computed itself: for each index
    /// named in `vectors`, one row per child chunk (in the order of [`crate::Store::plan`]),
    /// row-major. Indexes not named embed with their own embedder.
    pub fn upsert_with_vectors(
        &mut self,
        doc: Document,
        vectors: BTreeMap<String, Vec<f32>>,
    ) -> &mut Self {
        self.upsert_prepared(doc, None, vectors)
    }

    /// Adds or replaces `doc` cut into `chunks` by the application (another tool's chunker,
    /// say): every index stores these spans instead of cutting its own. Spans must lie on
    /// char boundaries inside the text, children inside their parents.
    pub fn upsert_chunked(&mut self, doc: Document, chunks: Chunked) -> &mut Self {
        self.upsert_prepared(doc, Some(chunks), BTreeMap::new())
    }

    /// The general upsert: application-cut `chunks` (or each index's own chunking when
    /// `None`) and application-computed `vectors` per index (or each index's embedder).
    pub fn upsert_prepared(
        &mut self,
        doc: Document,
        chunks: Option<Chunked>,
        vectors: BTreeMap<String, Vec<f32>>,
    ) -> &mut Self {
        let op = self.ops.len();
        for (index, rows) in vectors {
            let at = match self.given.iter().position(|g| g.index == index) {
                Some(at) => at,
                None => {
                    self.given.push(Given {
                        index,
                        data: Vec::new(),
                        rows: Vec::new(),
                    });
                    self.given.len() - 1
                }
            };
            let given = &mut self.given[at];
            let start = given.data.len();
            given.data.extend_from_slice(&rows);
            given.rows.push((op, start..given.data.len()));
        }
        self.check(validate_upsert(&doc, chunks.as_ref()));
        let at = self.staged.push(doc, chunks);
        self.ops.push(Op::Upsert(at));
        self
    }

    /// Keeps the first problem found.
    fn check(&mut self, result: Result<(), Refusal>) {
        if let (None, Err(problem)) = (&self.refused, result) {
            self.refused = Some(problem);
        }
    }

    /// The first operation that could not be stored faithfully, if any.
    fn refused(&self) -> Result<(), WriteError> {
        match &self.refused {
            Some((doc_id, problem)) => Err(invalid(doc_id, problem.clone())),
            None => Ok(()),
        }
    }

    /// Deletes document `doc_id` ([`WriteError::UnknownDocument`] at commit if there is none).
    pub fn delete(&mut self, doc_id: &str) -> &mut Self {
        self.check(validate_doc_id(doc_id));
        self.ops.push(Op::Delete(doc_id.to_string()));
        self
    }

    /// Replaces the ACL of document `doc_id` (empty: public), without re-embedding it.
    pub fn set_acl<S: Into<String>>(
        &mut self,
        doc_id: &str,
        acl: impl IntoIterator<Item = S>,
    ) -> &mut Self {
        let acl: Vec<String> = acl.into_iter().map(Into::into).collect();
        self.check(validate_acl(doc_id, &acl));
        self.ops.push(Op::SetAcl(doc_id.to_string(), acl));
        self
    }

    /// Operations in the batch.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the batch has no operation.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Commits every operation in one transaction.
    pub fn commit(self) -> Result<CommitReceipt, WriteError> {
        self.commit_with(&NoProgress)
    }

    /// Cuts every upserted document for every index and counts the chunks in each
    /// embedder's tokens, as [`Batch::commit_with`] would, but embeds and writes nothing:
    /// what a commit would store and whether any chunk is longer than its model reads. Works
    /// on a read-only store.
    pub fn dry_run_with(&self, progress: &dyn Progress) -> Result<DryRun, WriteError> {
        self.refused()?;
        let setting = self.store.truncation();
        // Refusing would stop at the first oversized chunk; a dry run reports them all.
        let truncation = match setting {
            Truncation::Refuse => Truncation::Warn,
            other => other,
        };
        let mut out = DryRun::default();
        for state in self.store.indexes().values() {
            let given = self.given.iter().find(|g| g.index == state.name());
            let upserts = Given::upserts(given, &self.ops, &self.staged);
            let (children, report) = dry_run(
                &self.store.models(state.record()),
                state.name(),
                &state.record().model(),
                &upserts,
                truncation,
                progress,
            )?;
            out.children.insert(state.name().to_string(), children);
            out.truncation
                .extend(report.map(|r| TruncationReport { setting, ..r }));
        }
        Ok(out)
    }

    /// Commits, reporting chunking, embedding and graph building to `progress`.
    ///
    /// Chunking, embedding and the graph build run before the writer lock is taken, so
    /// rollbacks, alias switches, request-log writes and feedback never wait for a model or
    /// a graph; an index that changed meanwhile (created, dropped, rebuilt) is prepared and
    /// built again under the lock.
    pub fn commit_with(self, progress: &dyn Progress) -> Result<CommitReceipt, WriteError> {
        self.refused()?;
        let Batch {
            store,
            ops,
            staged,
            mut given,
            refused: _,
        } = self;
        store.check_writable()?;
        let mut built = HashMap::new();
        for state in store.indexes().values() {
            let ready = Built::make(&store, state, (&ops, &staged), &mut given, progress)?;
            built.insert(state.name().to_string(), ready);
        }
        let mut turn = store.lock_writer()?;
        // Again on the file's newest commit: another process may have added an index
        // that does not load here.
        store.check_writable()?;
        let indexes = store.indexes();
        let mut plans = Vec::with_capacity(indexes.len());
        let mut truncation = Vec::new();
        for state in indexes.values() {
            let ready = match built.remove(state.name()) {
                Some(b) if b.key == state.record().model() => b,
                stale => {
                    if let Some(stale) = stale {
                        stale.give_back(&mut given);
                    }
                    Built::make(&store, state, (&ops, &staged), &mut given, progress)?
                }
            };
            truncation.extend(ready.report.clone());
            plans.push(IndexPlan::new(state, ready));
        }
        drop((built, given));
        let txn = turn.txn()?;
        let (mut receipt, documents, changes) = apply(&txn, &ops, &staged, &mut plans)?;
        // In the commit that makes the changes, so a follower never misses one.
        append(&txn, changes)?;
        let large = ops.len() >= TRIM_AFTER_OPS;
        // Freed before the segments are written: they pass through redb's cache.
        drop((ops, staged));
        if large {
            release_freed_heap();
        }
        let change = describe(&receipt);
        for plan in &mut plans {
            let version = plan.finish(&txn, documents, &change)?;
            receipt
                .versions
                .insert(plan.state.name().to_string(), version);
        }
        txn.commit()?;
        store.install(
            plans
                .into_iter()
                .filter_map(|p| p.into_state().map(Arc::new))
                .collect(),
        );
        drop(turn);
        receipt.truncation = truncation;
        (receipt.merged, receipt.merge_error) =
            crate::storage::write::compact::after_commit(&store, progress);
        match store.apply_retention() {
            Ok(collected) => receipt.collected = collected,
            Err(e) => receipt.retention_error = Some(format!("retention: {e}")),
        }
        if large {
            release_freed_heap();
        }
        Ok(receipt)
    }
}

/// The longest doc_id a store takes, in bytes.
const MAX_DOC_ID_BYTES: usize = 1024;

fn invalid(doc_id: &str, problem: DocumentProblem) -> WriteError {
    WriteError::InvalidDocument {
        doc_id: doc_id.to_string(),
        problem,
    }
}

/// A document that could not be stored faithfully, and why.
type Refusal = (String, DocumentProblem);

fn refuse(doc_id: &str, problem: DocumentProblem) -> Refusal {
    (doc_id.to_string(), problem)
}

/// Refuses an upsert that could not be stored faithfully.
fn validate_upsert(doc: &Document, chunks: Option<&Chunked>) -> Result<(), Refusal> {
    if let Some(chunks) = chunks {
        validate_chunks(&doc.text, chunks).map_err(|problem| refuse(&doc.doc_id, problem))?;
    }
    validate_acl(&doc.doc_id, &doc.acl)
}

/// Refuses a document id or ACL that could not be stored faithfully.
fn validate_acl(doc_id: &str, acl: &[String]) -> Result<(), Refusal> {
    validate_doc_id(doc_id)?;
    for principal in acl {
        if principal.trim().is_empty() {
            return Err(refuse(doc_id, DocumentProblem::EmptyPrincipal));
        }
    }
    Ok(())
}

/// Application-cut chunks must be stored faithfully: real spans of the text, children
/// inside existing parents.
fn validate_chunks(text: &str, chunks: &Chunked) -> Result<(), DocumentProblem> {
    let span_ok = |s: &crate::chunk::Span| {
        s.start < s.end
            && s.end <= text.len()
            && text.is_char_boundary(s.start)
            && text.is_char_boundary(s.end)
    };
    let bad_span = |piece, number, span: &crate::chunk::Span| DocumentProblem::BadSpan {
        piece,
        number,
        start: span.start,
        end: span.end,
    };
    for (i, p) in chunks.parents.iter().enumerate() {
        if !span_ok(&p.span) {
            return Err(bad_span(Piece::Parent, i, &p.span));
        }
    }
    for (i, c) in chunks.children.iter().enumerate() {
        if !span_ok(&c.span) {
            return Err(bad_span(Piece::Chunk, i, &c.span));
        }
        let parent = chunks
            .parents
            .get(c.parent)
            .ok_or(DocumentProblem::UnknownParent {
                chunk: i,
                parent: c.parent,
            })?;
        if c.span.start < parent.span.start || c.span.end > parent.span.end {
            return Err(DocumentProblem::OutsideParent { chunk: i });
        }
    }
    Ok(())
}

fn validate_doc_id(doc_id: &str) -> Result<(), Refusal> {
    if doc_id.is_empty() {
        return Err(refuse(doc_id, DocumentProblem::EmptyId));
    }
    if doc_id.len() > MAX_DOC_ID_BYTES {
        let problem = DocumentProblem::IdTooLong {
            len: doc_id.len(),
            max: MAX_DOC_ID_BYTES,
        };
        return Err(refuse(doc_id, problem));
    }
    Ok(())
}

/// One index's share of a batch made before the writer lock: its chunks and the new
/// segment over their vectors, graph included. Its child numbers are given under the lock.
struct Built {
    key: IndexModel,
    /// The chunks the index cut itself, by upsert op position, in op order (an upsert
    /// without its entry here takes the chunks its application cut).
    chunked: VecDeque<(usize, Chunked)>,
    /// The new segment (numbered from 0 until [`IndexPlan::finish`]), if the batch adds rows.
    segment: Option<SegmentIndex>,
    /// The index whose vectors the batch brought are the segment's rows, moved (see `Given`).
    given: Option<String>,
    report: Option<TruncationReport>,
}

impl Built {
    /// Chunks and embeds the batch's upserts for `state`, then builds the new segment: its
    /// rows copied together, or, when they are exactly the vectors the batch brought for
    /// the index, moved from the batch without a copy.
    fn make(
        store: &Writer<'_>,
        state: &IndexState,
        (ops, staged): (&[Op], &StagedDocs),
        given: &mut [Given],
        progress: &dyn Progress,
    ) -> Result<Built, WriteError> {
        let record = state.record();
        let (dim, metric) = (record.embedder.dimension as usize, record.embedder.metric);
        let slab = given.iter().position(|g| g.index == state.name());
        let ready = prepare(
            &store.models(record),
            state.name(),
            &record.model(),
            &Given::upserts(slab.map(|at| &given[at]), ops, staged),
            progress,
        )?;
        let whole =
            slab.is_some_and(|at| is_whole(&given[at].data, ready.docs.iter().map(|(_, _, v)| v)));
        let mut rows = Vec::new();
        if !whole {
            let floats: usize = ready.docs.iter().map(|(_, _, v)| v.len()).sum();
            // Construction reads rows at random: huge pages (see `index::pages`).
            rows = crate::index::pages::with_capacity(floats);
            for (_, _, v) in &ready.docs {
                rows.extend_from_slice(v);
            }
        }
        let Prepared { key, docs, report } = ready;
        let chunked = docs
            .into_iter()
            .filter_map(|(i, c, _)| Some((i, c?)))
            .collect();
        if let Some(at) = slab.filter(|_| whole) {
            let mut data = std::mem::take(&mut given[at].data);
            data.shrink_to_fit();
            rows = crate::index::pages::advise(data);
        }
        let segment = if rows.is_empty() {
            None
        } else {
            normalise_rows(&mut rows, dim, metric);
            Some(build_segment(record, 0, rows, progress)?)
        };
        Ok(Built {
            key,
            chunked,
            segment,
            given: whole.then(|| state.name().to_string()),
            report,
        })
    }

    /// Gives the batch back the vectors this build moved, for the index's new state to be
    /// prepared from (rows a cosine index normalised stay unit length).
    fn give_back(self, given: &mut [Given]) {
        let (Some(name), Some(segment)) = (self.given, self.segment) else {
            return;
        };
        if let Some(g) = given.iter_mut().find(|g| g.index == name) {
            g.data = segment.into_rows();
        }
    }
}

/// One index's share of a commit under the writer lock: what was built before it, then
/// the working state the transaction updates.
struct IndexPlan {
    state: Arc<IndexState>,
    record: IndexRecord,
    /// The chunks the index cut itself (see [`Built`]).
    chunked: VecDeque<(usize, Chunked)>,
    /// The new segment, numbered from `base` when written.
    segment: Option<SegmentIndex>,
    /// The child number of the first of its rows (`record.next_child` moves on as the
    /// commit writes the children).
    base: u32,
    live: RoaringBitmap,
    acl: HashMap<String, RoaringBitmap>,
    changed: Vec<String>,
    /// The current-ACL bitmaps the commit changes (see `current.rs`).
    current: CurrentAcl,
    /// What `finish` wrote of them.
    current_written: HashMap<String, RoaringBitmap>,
    version: Option<VersionView>,
}

impl IndexPlan {
    /// The plan of index `state` (as it is under the lock) from what was built for it.
    fn new(state: &Arc<IndexState>, built: Built) -> IndexPlan {
        let record = state.record().clone();
        IndexPlan {
            live: state.head().live().clone(),
            state: state.clone(),
            current: CurrentAcl::new(record.id),
            current_written: HashMap::new(),
            base: record.next_child,
            record,
            chunked: built.chunked,
            segment: built.segment,
            acl: HashMap::new(),
            changed: Vec::new(),
            version: None,
        }
    }

    /// The index state to install after the commit (`None` if the plan never finished).
    fn into_state(self) -> Option<IndexState> {
        let head = self.version?;
        Some(self.state.next(self.record, head, self.current_written))
    }
}

/// Whether `rows`, one after the other, are exactly `slab`, each borrowed from it in order.
fn is_whole<'a>(slab: &[f32], rows: impl Iterator<Item = &'a Cow<'a, [f32]>>) -> bool {
    let mut at = 0;
    for row in rows {
        let Cow::Borrowed(row) = row else {
            return false;
        };
        let same = slab
            .get(at..at + row.len())
            .is_some_and(|s| std::ptr::eq(s.as_ptr(), row.as_ptr()));
        if !same {
            return false;
        }
        at += row.len();
    }
    at == slab.len()
}

/// What a batch records in the outbox: (index id, change), for published indexes only.
type Changes = Vec<(u32, ChangeRecord)>;

/// Runs the operations inside `txn` (documents, chunks, ACLs); returns what they did, the
/// number of documents after them and the outbox entries they make. The new versions are
/// written after it.
fn apply(
    txn: &WriteTransaction,
    ops: &[Op],
    staged: &StagedDocs,
    plans: &mut [IndexPlan],
) -> Result<(CommitReceipt, u64, Changes), WriteError> {
    let published = published_ids(txn)?;
    let mut changes: Changes = Vec::new();
    let mut record = |change: fn(String) -> ChangeRecord, doc_id: &str| {
        for &index in &published {
            changes.push((index, change(doc_id.to_string())));
        }
    };
    let mut receipt = CommitReceipt {
        versions: BTreeMap::new(),
        upserted: 0,
        deleted: 0,
        acl_changed: 0,
        children: 0,
        truncation: Vec::new(),
        merged: BTreeMap::new(),
        merge_error: None,
        collected: None,
        retention_error: None,
    };
    let mut meta = txn.open_table(META)?;
    let mut next_rev = match meta.read("next_rev")? {
        Some(v) => u64::from_le_bytes(
            v.value()
                .try_into()
                .map_err(|_| StorageError::corrupt("meta next_rev is not 8 bytes"))?,
        ),
        None => return Err(StorageError::corrupt("meta next_rev missing").into()),
    };
    let mut docs = txn.open_table(DOCS)?;
    // This batch's `docs` entries, encoded (None: deleted), written in key order after the
    // loop: redb fills pages written in key order, while ingest order ("v0", "v1", ...,
    // "v10") left the table's pages half empty (7.1 of 14.9 MB on 200k documents).
    let mut pending: BTreeMap<Cow<'_, str>, Option<Vec<u8>>> = BTreeMap::new();
    let current = |pending: &BTreeMap<Cow<'_, str>, Option<Vec<u8>>>,
                   docs: &redb::Table<&str, Sealed>,
                   doc_id: &str|
     -> Result<Option<DocEntry>, WriteError> {
        let stored;
        let bytes = match pending.get(doc_id) {
            Some(None) => return Ok(None),
            Some(Some(bytes)) => bytes.as_slice(),
            None => match docs.read(doc_id)? {
                Some(v) => {
                    stored = v;
                    stored.value()
                }
                None => return Ok(None),
            },
        };
        Ok(Some(decode(bytes, "doc entry")?))
    };
    for (position, op) in ops.iter().enumerate() {
        match op {
            Op::Upsert(at) => {
                let (doc, given) = staged.get(at)?;
                let rev = next_rev;
                next_rev += 1;
                write_revision(txn, rev, &doc)?;
                let old = current(&pending, &docs, &doc.doc_id)?;
                // A replacement keeps the document's older children (older versions still
                // show that content), now under the new ACL.
                let mut entry = DocEntry {
                    rev,
                    acl: Vec::new(),
                    children: old.as_ref().map(|o| o.children.clone()).unwrap_or_default(),
                };
                for plan in plans.iter_mut() {
                    if let Some(old) = &old {
                        plan.remove_doc(txn, old)?;
                        let id = plan.record.id;
                        plan.current.move_children(
                            txn,
                            &old.children_in(id),
                            &old.acl,
                            &doc.acl,
                        )?;
                    }
                    let run = plan.add_doc(txn, position, &doc, given.as_ref(), rev)?;
                    receipt.children += run.count as usize;
                    entry.add_run(plan.record.id, run);
                }
                // Rows of its older children, published, now answer to the new ACL.
                if old
                    .as_ref()
                    .is_some_and(|o| principals_of(&o.acl) != principals_of(&doc.acl))
                {
                    record(ChangeRecord::Audience, &doc.doc_id);
                }
                entry.acl = doc.acl;
                pending.insert(Cow::Owned(doc.doc_id), Some(encode(&entry)));
                receipt.upserted += 1;
            }
            Op::Delete(doc_id) => {
                let old = current(&pending, &docs, doc_id)?.ok_or_else(|| {
                    WriteError::UnknownDocument {
                        doc_id: doc_id.clone(),
                    }
                })?;
                pending.insert(Cow::Borrowed(doc_id), None);
                for plan in plans.iter_mut() {
                    plan.remove_doc(txn, &old)?;
                    // Withdrawn from every version; a later upsert starts afresh.
                    let id = plan.record.id;
                    plan.current.revoke(txn, &old.children_in(id), &old.acl)?;
                }
                record(ChangeRecord::Deleted, doc_id);
                receipt.deleted += 1;
            }
            Op::SetAcl(doc_id, acl) => {
                let mut entry = current(&pending, &docs, doc_id)?.ok_or_else(|| {
                    WriteError::UnknownDocument {
                        doc_id: doc_id.clone(),
                    }
                })?;
                for plan in plans.iter_mut() {
                    plan.move_acl(txn, entry.rev, &entry.acl, acl)?;
                    let id = plan.record.id;
                    plan.current
                        .move_children(txn, &entry.children_in(id), &entry.acl, acl)?;
                }
                entry.acl = acl.clone();
                pending.insert(Cow::Borrowed(doc_id), Some(encode(&entry)));
                record(ChangeRecord::Audience, doc_id);
                receipt.acl_changed += 1;
            }
        }
    }
    for (doc_id, entry) in pending {
        match entry {
            Some(entry) => {
                docs.put(doc_id.as_ref(), entry.as_slice())?;
            }
            None => {
                docs.remove(doc_id.as_ref())?;
            }
        }
    }
    meta.put("next_rev", next_rev.to_le_bytes().as_slice())?;
    Ok((receipt, docs.len()?, changes))
}

fn describe(receipt: &CommitReceipt) -> String {
    let mut parts = Vec::new();
    for (n, what) in [
        (receipt.upserted, "upsert"),
        (receipt.deleted, "delete"),
        (receipt.acl_changed, "acl"),
    ] {
        if n > 0 {
            parts.push(format!("{what} {n}"));
        }
    }
    parts.join(", ")
}

fn write_revision(txn: &WriteTransaction, rev: u64, doc: &Document) -> Result<(), StorageError> {
    let record = RevisionRecord {
        doc_id: doc.doc_id.clone(),
        title: doc.title.clone(),
        source_uri: doc.source_uri.clone(),
        format: doc.format,
        published_at: doc.published_at.clone(),
        updated_at: doc.updated_at.clone(),
        metadata: doc
            .metadata
            .iter()
            .map(|(k, v)| (k.clone(), v.into()))
            .collect(),
    };
    txn.open_table(REVISIONS)?
        .put(rev, encode(&record).as_slice())?;
    txn.open_table(REV_TEXT)?.put(rev, doc.text.as_bytes())?;
    Ok(())
}

impl IndexPlan {
    /// The working bitmap of `principal`, read as of the head version on first use.
    fn acl_mut(
        &mut self,
        txn: &WriteTransaction,
        principal: &str,
    ) -> Result<&mut RoaringBitmap, StorageError> {
        let (index, head) = (self.record.id, self.record.head);
        match self.acl.entry(principal.to_string()) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(v) => {
                let bitmap = read_acl(&txn.open_table(ACL)?, index, principal, head)?;
                self.changed.push(principal.to_string());
                Ok(v.insert(bitmap))
            }
        }
    }

    fn doc_chunks(
        &self,
        txn: &WriteTransaction,
        rev: u64,
    ) -> Result<Option<DocChunks>, StorageError> {
        doc_chunks_in(&txn.open_table(DOC_CHUNKS)?, self.record.id, rev)
    }

    fn remove_doc(&mut self, txn: &WriteTransaction, old: &DocEntry) -> Result<(), StorageError> {
        let Some(chunks) = self.doc_chunks(txn, old.rev)? else {
            return Ok(());
        };
        let range = chunks.child_range();
        self.live.remove_range(range.clone());
        for principal in principals_of(&old.acl) {
            self.acl_mut(txn, &principal)?.remove_range(range.clone());
        }
        Ok(())
    }

    fn move_acl(
        &mut self,
        txn: &WriteTransaction,
        rev: u64,
        from: &[String],
        to: &[String],
    ) -> Result<(), StorageError> {
        let Some(chunks) = self.doc_chunks(txn, rev)? else {
            return Ok(());
        };
        let range = chunks.child_range();
        for principal in principals_of(from) {
            self.acl_mut(txn, &principal)?.remove_range(range.clone());
        }
        for principal in principals_of(to) {
            self.acl_mut(txn, &principal)?.insert_range(range.clone());
        }
        Ok(())
    }

    /// Writes the parents and children of upsert `position` (the index's own chunks, else
    /// `given`, the application's) with fresh numbers and grants them to the document's
    /// principals; returns the children's run.
    fn add_doc(
        &mut self,
        txn: &WriteTransaction,
        position: usize,
        doc: &Document,
        given: Option<&Chunked>,
        rev: u64,
    ) -> Result<ChildRun, StorageError> {
        let none = ChildRun {
            first: self.record.next_child,
            count: 0,
        };
        let own = match self.chunked.front() {
            Some((op, _)) if *op == position => self.chunked.pop_front().map(|(_, c)| c),
            _ => None,
        };
        let Some(chunked) = own.as_ref().or(given) else {
            return Ok(none);
        };
        let index = self.record.id;
        let chunks = DocChunks {
            first_parent: self.record.next_parent,
            parents: chunked.parents.len() as u32,
            first_child: self.record.next_child,
            children: chunked.children.len() as u32,
        };
        {
            let mut parents = txn.open_table(PARENTS)?;
            for (ordinal, p) in chunked.parents.iter().enumerate() {
                let record = ParentRecord {
                    rev,
                    ordinal: ordinal as u32,
                    start: p.span.start as u64,
                    end: p.span.end as u64,
                    section_path: p.section_path.clone(),
                };
                parents.put(
                    (index, chunks.first_parent + ordinal as u32),
                    encode(&record).as_slice(),
                )?;
            }
            let mut children = txn.open_table(CHILDREN)?;
            for (ordinal, c) in chunked.children.iter().enumerate() {
                let record = ChildRecord {
                    parent: chunks.first_parent + c.parent as u32,
                    parent_ordinal: c.parent as u32,
                    rev,
                    ordinal: ordinal as u32,
                    start: c.span.start as u64,
                    end: c.span.end as u64,
                    section_path: c.section_path.clone(),
                    oversized: c.oversized,
                };
                children.put(
                    (index, chunks.first_child + ordinal as u32),
                    encode(&record).as_slice(),
                )?;
            }
            txn.open_table(DOC_CHUNKS)?
                .put((index, rev), encode(&chunks).as_slice())?;
        }
        self.record.next_parent += chunks.parents;
        self.record.next_child += chunks.children;
        let range = chunks.child_range();
        self.live.insert_range(range.clone());
        for principal in principals_of(&doc.acl) {
            self.acl_mut(txn, &principal)?.insert_range(range.clone());
        }
        let children: RoaringBitmap = range.collect();
        self.current.grant(txn, &children, &doc.acl)?;
        Ok(ChildRun {
            first: chunks.first_child,
            count: chunks.children,
        })
    }

    /// Writes the new segment, the changed principal bitmaps and the new version record.
    fn finish(
        &mut self,
        txn: &WriteTransaction,
        documents: u64,
        change: &str,
    ) -> Result<u64, WriteError> {
        let index = self.record.id;
        let version = self.record.head + 1;
        let mut segments = self.state.head().segments().to_vec();
        if let Some(built) = self.segment.take() {
            let segment = Segment::new(self.record.next_segment, built.with_base(self.base)?);
            segments.push(Arc::new(segment).write(txn, &self.record)?);
            self.record.next_segment += 1;
        }
        {
            let mut acl = txn.open_table(ACL)?;
            for principal in &self.changed {
                let bitmap = &self.acl[principal];
                acl.put(
                    (index, principal.as_str(), version),
                    encode_bitmap(bitmap).as_slice(),
                )?;
            }
        }
        self.current_written = self.current.write(txn)?;
        let view = write_version(
            txn,
            self.state.name(),
            &mut self.record,
            segments,
            self.live.clone(),
            change,
            documents,
        )?;
        self.version = Some(view);
        Ok(version)
    }
}

/// A new index built over the stored documents: chunked and embedded before the write
/// transaction, like a batch of upserts that writes no revisions (they are stored already).
pub(crate) struct IndexBuild {
    ops: Vec<Op>,
    staged: StagedDocs,
    revs: Vec<u64>,
    plan: IndexPlan,
    /// The token counts of the build.
    pub(crate) report: Option<TruncationReport>,
}

impl IndexBuild {
    /// Chunks and embeds `docs` (each with its current revision) for `state`, still empty.
    pub fn prepare(
        store: &Writer<'_>,
        state: &Arc<IndexState>,
        docs: Vec<(u64, Document)>,
        progress: &dyn Progress,
    ) -> Result<IndexBuild, WriteError> {
        let mut staged = StagedDocs::default();
        let (revs, ops): (Vec<u64>, Vec<Op>) = docs
            .into_iter()
            .map(|(rev, doc)| (rev, Op::Upsert(staged.push(doc, None))))
            .unzip();
        let built = Built::make(store, state, (&ops, &staged), &mut [], progress)?;
        let report = built.report.clone();
        let plan = IndexPlan::new(state, built);
        Ok(IndexBuild {
            ops,
            staged,
            revs,
            plan,
            report,
        })
    }

    /// Writes the chunks, segment, bitmaps and version 1 (the caller wrote the index record
    /// and version 0 in `txn`); returns the state to install once `txn` commits.
    pub fn write(
        mut self,
        txn: &WriteTransaction,
        documents: u64,
    ) -> Result<IndexState, WriteError> {
        let index = self.plan.record.id;
        let mut docs = txn.open_table(DOCS)?;
        for (position, (op, rev)) in self.ops.iter().zip(&self.revs).enumerate() {
            if let Op::Upsert(at) = op {
                let (doc, _) = self.staged.get(at)?;
                let run = self.plan.add_doc(txn, position, &doc, None, *rev)?;
                // The document's entry lists its children in the new index too.
                let mut entry: DocEntry = match docs.read(doc.doc_id.as_str())? {
                    Some(v) => decode(v.value(), "doc entry")?,
                    None => {
                        return Err(StorageError::corrupt(format!(
                            "document `{}` vanished while index {index} was built",
                            doc.doc_id
                        ))
                        .into())
                    }
                };
                entry.add_run(index, run);
                docs.put(doc.doc_id.as_str(), encode(&entry).as_slice())?;
            }
        }
        drop(docs);
        self.plan.finish(txn, documents, "build")?;
        self.plan
            .into_state()
            .ok_or_else(|| StorageError::corrupt("a finished build has no version").into())
    }
}
