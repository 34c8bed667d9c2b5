//! Reads for the layers above: one redb read transaction, so everything a search reads
//! comes from one committed state.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Arc;

use redb::{ReadOnlyTable, ReadTransaction};
use roaring::RoaringBitmap;

use crate::filter::{Filter, MetadataValue};
use crate::index::SearchOptions;
use crate::index::SegmentIndex;
use crate::index::{ChildSearch, QueryVector};
use crate::storage::error::{ReadError, StorageError};
use crate::storage::file::records::{ChildRecord, DocChunks, ParentRecord};
use crate::storage::file::rows::{read_child_in, read_parent_in, read_revision, read_text};
use crate::storage::file::sealed::Sealed;
use crate::storage::file::tables::{CHILDREN, PARENTS};
use crate::storage::read::state::{read_doc_chunks, Access, IndexState, VersionView};
use crate::storage::read::targets::{self, Target};

/// A child chunk as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredChild {
    /// The child number in the index.
    pub number: u32,
    /// The parent's number in the index.
    pub parent: u32,
    /// The parent's ordinal within the document.
    pub parent_ordinal: u32,
    /// The document revision the chunk was cut from.
    pub rev: u64,
    /// The child's ordinal within the document.
    pub ordinal: u32,
    /// Byte span in the revision's text: start.
    pub start: usize,
    /// Byte span in the revision's text: end.
    pub end: usize,
    /// The headings above the chunk.
    pub section_path: Vec<String>,
    /// Longer than the spec's target: a code block, table or row run kept whole (the pieces
    /// it was split into for the model keep the flag).
    pub oversized: bool,
}

/// A parent chunk as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredParent {
    /// The parent number in the index.
    pub number: u32,
    /// The document revision the chunk was cut from.
    pub rev: u64,
    /// The parent's ordinal within the document.
    pub ordinal: u32,
    /// Byte span in the revision's text: start.
    pub start: usize,
    /// Byte span in the revision's text: end.
    pub end: usize,
    /// The headings above the chunk.
    pub section_path: Vec<String>,
}

/// The parts of a document revision a result shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocView {
    /// The document id.
    pub doc_id: String,
    /// Its title.
    pub title: String,
    /// Where it came from.
    pub source_uri: String,
    /// Publication date, when known.
    pub published_at: Option<String>,
    /// Last update, when known.
    pub updated_at: Option<String>,
    /// How its text is read.
    pub format: crate::chunk::SourceFormat,
    /// The revision's text.
    pub text: String,
    /// Its typed metadata.
    pub metadata: BTreeMap<String, MetadataValue>,
}

/// The chunk numbers one document revision has in one index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkRanges {
    /// Its parents' numbers.
    pub parents: std::ops::Range<u32>,
    /// Its children's numbers.
    pub children: std::ops::Range<u32>,
}

/// One version of an index as searches read it ([`crate::Store::vectors`]).
#[derive(Clone)]
pub struct VersionVectors {
    /// The version number.
    pub version: u64,
    /// The child numbers live in this version, before any access filter.
    pub live: RoaringBitmap,
    /// The segments' vector indexes, in order: the stored vectors (normalised, for
    /// cosine) under global child numbers, the graph when a segment has one, its search.
    /// A compressed index's segments come as copies with their rows read from the file.
    pub segments: Vec<Arc<SegmentIndex>>,
}

/// One consistent read of a store ([`crate::Store::snapshot`]): every version it resolves,
/// every visible set, chunk and document it reads comes from one committed state, however
/// many commits other handles make meanwhile. The query path reads through it.
pub struct Snapshot<'s> {
    /// Borrows the handle it was begun on, which outlives it.
    store: PhantomData<&'s ()>,
    txn: ReadTransaction,
    /// The index states that go with `txn` (see `Catalog::snapshot`).
    indexes: BTreeMap<String, Arc<IndexState>>,
    children: ReadOnlyTable<(u32, u32), Sealed>,
    parents: ReadOnlyTable<(u32, u32), Sealed>,
    docs: RefCell<HashMap<u64, Rc<DocView>>>,
}

impl<'s> Snapshot<'s> {
    /// A read of `txn`, with the index states that go with it.
    pub(crate) fn new(
        txn: ReadTransaction,
        indexes: BTreeMap<String, Arc<IndexState>>,
    ) -> Result<Snapshot<'s>, ReadError> {
        let children = txn.open_table(CHILDREN)?;
        let parents = txn.open_table(PARENTS)?;
        Ok(Snapshot {
            store: PhantomData,
            txn,
            indexes,
            children,
            parents,
            docs: RefCell::new(HashMap::new()),
        })
    }
}

impl Snapshot<'_> {
    /// The read transaction everything comes from.
    pub(crate) fn txn(&self) -> &ReadTransaction {
        &self.txn
    }

    /// `name`, `name@version`, `name@tag` or an alias: the index and version it names. A
    /// bare index name means its serving version (the head unless rolled back); an alias
    /// with several routes picks one by the empty key (see [`Snapshot::resolve_for`]).
    pub fn resolve(&self, target: &str) -> Result<(Arc<IndexState>, Arc<VersionView>), ReadError> {
        self.resolve_for(target, b"")
    }

    /// Like [`Snapshot::resolve`], routing an alias that splits traffic by `route_key`: the
    /// same key always gets the same version (see [`crate::store::route_bucket`]).
    pub fn resolve_for(
        &self,
        target: &str,
        route_key: &[u8],
    ) -> Result<(Arc<IndexState>, Arc<VersionView>), ReadError> {
        let Target { index, version } =
            targets::resolve(&self.txn, &self.indexes, target, route_key)?;
        let state = self
            .indexes
            .values()
            .find(|s| s.id() == index)
            .cloned()
            .ok_or_else(|| {
                StorageError::corrupt(format!("`{target}` names index id {index}, which is gone"))
            })?;
        let view = state.version(&self.txn, version)?;
        Ok((state, view))
    }

    /// The `options.k` best children in `visible` for `query` (prepared once for the
    /// index's metric), over every segment of `view`, a version this snapshot resolved:
    /// `options.ef` is the graph breadth (the planner's when `None`), `rescore` a compressed
    /// segment's re-score width (its index's when `None`).
    pub fn search_children(
        &self,
        view: &VersionView,
        query: &QueryVector,
        options: SearchOptions,
        rescore: Option<usize>,
        visible: &RoaringBitmap,
    ) -> Result<ChildSearch, StorageError> {
        view.search_children(&self.txn, query, options, rescore, visible)
    }

    /// The best `k` children in `visible` for the text `query` by BM25, over every segment
    /// of `view`, a version this snapshot resolved: best first (ties by child number), only
    /// children holding a query term, `N` and document frequencies counted in `visible`
    /// (see [`crate::index::lexical`]). The query is analysed in the index's language. A
    /// segment's postings are read by the first search that needs them (mapped from a
    /// shared postings file where shared files are on, else decoded from the store) and
    /// kept by the handle.
    pub fn search_lexical(
        &self,
        view: &VersionView,
        query: &str,
        visible: &RoaringBitmap,
        k: usize,
    ) -> Result<ChildSearch, StorageError> {
        let state = self.state_of(view)?;
        super::lexical::search_lexical(&self.txn, state, view, query, visible, k)
    }

    /// The children `access` may see in `view`: what the version showed them, less what
    /// has been revoked or deleted since (see `current.rs`).
    pub fn visible(&self, view: &VersionView, access: &Access) -> Result<RoaringBitmap, ReadError> {
        Ok(self.state_of(view)?.visible(&self.txn, view, access)?)
    }

    /// The index `view`, a version this snapshot resolved, belongs to.
    fn state_of(&self, view: &VersionView) -> Result<&Arc<IndexState>, StorageError> {
        self.indexes
            .values()
            .find(|s| s.id() == view.index_id())
            .ok_or_else(|| StorageError::corrupt(format!("index id {} is gone", view.index_id())))
    }

    /// The children of `state` that `filter` matches, in any of its versions (so
    /// intersected with a version's visible set, it is that version's answer).
    pub fn matching(
        &self,
        state: &IndexState,
        filter: &Filter,
    ) -> Result<Arc<RoaringBitmap>, StorageError> {
        state.matching(&self.txn, filter)
    }

    /// Child `number` of `state`'s index as stored.
    pub fn child(&self, state: &IndexState, number: u32) -> Result<StoredChild, StorageError> {
        let c: ChildRecord = read_child_in(&self.children, state.id(), number)?;
        Ok(StoredChild {
            number,
            parent: c.parent,
            parent_ordinal: c.parent_ordinal,
            rev: c.rev,
            ordinal: c.ordinal,
            start: c.start as usize,
            end: c.end as usize,
            section_path: c.section_path,
            oversized: c.oversized,
        })
    }

    /// Parent `number` of `state`'s index as stored.
    pub fn parent(&self, state: &IndexState, number: u32) -> Result<StoredParent, StorageError> {
        let p: ParentRecord = read_parent_in(&self.parents, state.id(), number)?;
        Ok(StoredParent {
            number,
            rev: p.rev,
            ordinal: p.ordinal,
            start: p.start as usize,
            end: p.end as usize,
            section_path: p.section_path,
        })
    }

    /// The chunk numbers, in the version `child` was found in, of the document revision
    /// `child` belongs to. A revision's children are contiguous and in ordinal order in
    /// every version (a compaction moves them together), so they start at
    /// `number - ordinal`; parents are never renumbered.
    pub fn chunk_ranges(
        &self,
        state: &IndexState,
        child: &StoredChild,
    ) -> Result<ChunkRanges, StorageError> {
        let rev = child.rev;
        let chunks: DocChunks = read_doc_chunks(&self.txn, state.id(), rev)?.ok_or_else(|| {
            StorageError::corrupt(format!(
                "revision {rev} has no chunks in `{}`",
                state.name()
            ))
        })?;
        let first = child
            .number
            .checked_sub(child.ordinal)
            .filter(|_| child.ordinal < chunks.children)
            .ok_or_else(|| {
                StorageError::corrupt(format!(
                    "child {} (ordinal {}) does not fit revision {rev}",
                    child.number, child.ordinal
                ))
            })?;
        Ok(ChunkRanges {
            parents: chunks.first_parent..chunks.first_parent.saturating_add(chunks.parents),
            children: first..first.saturating_add(chunks.children),
        })
    }

    /// The document of revision `rev`, without reading its text.
    pub fn doc_id(&self, rev: u64) -> Result<String, StorageError> {
        match self.docs.borrow().get(&rev) {
            Some(doc) => Ok(doc.doc_id.clone()),
            None => Ok(read_revision(&self.txn, rev)?.doc_id),
        }
    }

    /// Document revision `rev` (read once per reader).
    pub fn doc(&self, rev: u64) -> Result<Rc<DocView>, StorageError> {
        if let Some(doc) = self.docs.borrow().get(&rev) {
            return Ok(doc.clone());
        }
        let record = read_revision(&self.txn, rev)?;
        let doc = Rc::new(DocView {
            doc_id: record.doc_id,
            title: record.title,
            source_uri: record.source_uri,
            published_at: record.published_at,
            updated_at: record.updated_at,
            format: record.format,
            text: read_text(&self.txn, rev)?,
            metadata: record
                .metadata
                .into_iter()
                .map(|(k, v)| (k, v.into()))
                .collect(),
        });
        self.docs.borrow_mut().insert(rev, doc.clone());
        Ok(doc)
    }
}
