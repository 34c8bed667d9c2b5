//! The second stage: reading what reading units are made of. A unit is built from a child
//! record (its parent, ordinal, span), the records around it (the parents of its section,
//! the children of its window) and its document revision (text, title, fields). [`Chunks`]
//! is that read; `SnapshotChunks` does it on a [`Snapshot`] of the store, and an engine
//! that holds the chunks elsewhere implements it once to reuse grouping, expansion, the
//! budget and near-duplicate removal (`collect.rs`, `assemble.rs`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use super::QueryError;
use crate::storage::read::snapshot::{ChunkRanges, DocView, Snapshot, StoredChild, StoredParent};
use crate::storage::read::state::IndexState;

/// The chunk records and document revisions of one version of an index, as a search reads
/// them. Numbers are the version's child and parent numbers (those a [`super::Rank`]
/// ranks). Reads take `&self`: an implementation caches what is read more than once.
pub trait Chunks {
    /// Child `number`.
    fn child(&self, number: u32) -> Result<Rc<StoredChild>, QueryError>;

    /// Parent `number`.
    fn parent(&self, number: u32) -> Result<StoredParent, QueryError>;

    /// The parent and child numbers of the document revision `child` was cut from:
    /// contiguous, in source order.
    fn chunk_ranges(&self, child: &StoredChild) -> Result<ChunkRanges, QueryError>;

    /// Document revision `rev`: its id, text and fields.
    fn doc(&self, rev: u64) -> Result<Rc<DocView>, QueryError>;
}

/// [`Chunks`] of one index read through a [`Snapshot`]: each child record is read from the
/// file once per search however many times it is asked for (a widening asks again for the
/// children it already ranked), each document revision once per snapshot.
pub(crate) struct SnapshotChunks<'a> {
    snapshot: &'a Snapshot<'a>,
    state: &'a IndexState,
    children: RefCell<HashMap<u32, Rc<StoredChild>>>,
}

impl<'a> SnapshotChunks<'a> {
    /// The chunks of `state`'s index in `snapshot`.
    pub(crate) fn new(snapshot: &'a Snapshot<'a>, state: &'a IndexState) -> Self {
        SnapshotChunks {
            snapshot,
            state,
            children: RefCell::new(HashMap::new()),
        }
    }
}

impl Chunks for SnapshotChunks<'_> {
    fn child(&self, number: u32) -> Result<Rc<StoredChild>, QueryError> {
        if let Some(child) = self.children.borrow().get(&number) {
            return Ok(child.clone());
        }
        let child = Rc::new(self.snapshot.child(self.state, number)?);
        self.children.borrow_mut().insert(number, child.clone());
        Ok(child)
    }

    fn parent(&self, number: u32) -> Result<StoredParent, QueryError> {
        Ok(self.snapshot.parent(self.state, number)?)
    }

    fn chunk_ranges(&self, child: &StoredChild) -> Result<ChunkRanges, QueryError> {
        Ok(self.snapshot.chunk_ranges(self.state, child)?)
    }

    fn doc(&self, rev: u64) -> Result<Rc<DocView>, QueryError> {
        Ok(self.snapshot.doc(rev)?)
    }
}
