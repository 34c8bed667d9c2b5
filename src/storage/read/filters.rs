//! Filter evaluation over an index's children, for every version at once.
//!
//! What a filter tests of a child never changes: its revision (and so the document's
//! fields and metadata) and its section path are fixed when the child is written, and
//! child numbers are never reused. So the children a filter matches form one bitmap over
//! all child numbers, valid for every version; a search intersects it with the version's
//! visible set. Each index keeps, in memory and shared by all its states, a column per
//! child: the *cell* (revision, section path) it belongs to. A filter is evaluated once per
//! cell and the result cached under its canonical text; commits only append children, so
//! both the columns and the cached bitmaps are extended with the new children alone.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;
use redb::ReadTransaction;
use roaring::RoaringBitmap;

use crate::filter::{Attributes, Filter, MetadataValue};
use crate::storage::error::StorageError;
use crate::storage::file::records::{decode, ChildRecord, RevisionRecord};
use crate::storage::file::sealed::ReadSealed;
use crate::storage::file::tables::{CHILDREN, REVISIONS};

/// At most this many filters keep a cached bitmap per index; the cache starts over when full.
const CACHED: usize = 256;

/// A child number no cell holds (its record was collected, or it was never written).
const NONE: u32 = u32::MAX;

/// One revision's fields a filter reads.
struct Revision {
    doc_id: String,
    title: String,
    source_uri: String,
    published_at: Option<String>,
    updated_at: Option<String>,
    metadata: BTreeMap<String, MetadataValue>,
}

/// The filter columns of one index, and the bitmaps of the filters asked so far.
#[derive(Default)]
pub(crate) struct Filtering {
    /// Children numbered below this have their cell in `cell_of`.
    covered: u32,
    cell_of: Vec<u32>,
    /// (revision, path) by cell number.
    cells: Vec<(u32, u32)>,
    cell_index: HashMap<(u32, u32), u32>,
    revisions: Vec<Revision>,
    revision_index: HashMap<u64, u32>,
    paths: Vec<Vec<String>>,
    path_index: HashMap<Vec<String>, u32>,
    /// By canonical filter text: the matching children below `covered` when computed.
    results: HashMap<String, (u32, Arc<RoaringBitmap>)>,
}

/// Shared by every state of one index (see the module documentation).
pub(crate) type SharedFiltering = Arc<Mutex<Filtering>>;

impl Filtering {
    /// The children numbered below `upto` that match `filter` (any version: intersect with
    /// a visible set). Reads from `txn` only the children not seen before, and their
    /// revisions.
    pub fn matching(
        &mut self,
        txn: &ReadTransaction,
        index: u32,
        upto: u32,
        filter: &Filter,
    ) -> Result<Arc<RoaringBitmap>, StorageError> {
        self.extend(txn, index, upto)?;
        let key = filter.to_string();
        if let Some((done, bitmap)) = self.results.get(&key) {
            if *done == self.covered {
                return Ok(bitmap.clone());
            }
        }
        let (from, mut bitmap) = match self.results.remove(&key) {
            Some((done, bitmap)) => (done, Arc::unwrap_or_clone(bitmap)),
            None => (0, RoaringBitmap::new()),
        };
        self.evaluate(filter, from, &mut bitmap);
        let bitmap = Arc::new(bitmap);
        if self.results.len() >= CACHED {
            self.results.clear();
        }
        self.results.insert(key, (self.covered, bitmap.clone()));
        Ok(bitmap)
    }

    /// Adds to `out` the children from `from` to `covered` that match, testing each cell once.
    fn evaluate(&self, filter: &Filter, from: u32, out: &mut RoaringBitmap) {
        // 0: not tested yet, 1: no, 2: yes.
        let mut verdicts = vec![0u8; self.cells.len()];
        let start = from as usize;
        let matched = self.cell_of.get(start..).unwrap_or_default();
        let numbers = matched.iter().enumerate().filter_map(|(i, &cell)| {
            let verdict = verdicts.get_mut(cell as usize)?;
            if *verdict == 0 {
                *verdict = if self.test(filter, cell) { 2 } else { 1 };
            }
            (*verdict == 2).then_some((start + i) as u32)
        });
        // Numbers come in increasing order, above any already in `out`.
        let added = RoaringBitmap::from_sorted_iter(numbers).unwrap_or_default();
        *out |= added;
    }

    fn test(&self, filter: &Filter, cell: u32) -> bool {
        let Some(&(revision, path)) = self.cells.get(cell as usize) else {
            return false;
        };
        let (Some(r), Some(path)) = (
            self.revisions.get(revision as usize),
            self.paths.get(path as usize),
        ) else {
            return false;
        };
        filter.matches(&Attributes {
            doc_id: &r.doc_id,
            title: &r.title,
            source_uri: &r.source_uri,
            published_at: r.published_at.as_deref(),
            updated_at: r.updated_at.as_deref(),
            metadata: &r.metadata,
            section_path: path,
        })
    }

    /// Reads the cells of children `covered..upto` of index `index`.
    fn extend(&mut self, txn: &ReadTransaction, index: u32, upto: u32) -> Result<(), StorageError> {
        if upto <= self.covered {
            return Ok(());
        }
        let children = txn.open_table(CHILDREN)?;
        let revisions = txn.open_table(REVISIONS)?;
        self.cell_of.resize(upto as usize, NONE);
        for entry in children.rows((index, self.covered)..(index, upto))? {
            let (key, value) = entry?;
            let number = key.value().1;
            let child: ChildRecord = decode(value.value(), "child record")?;
            let revision = match self.revision_index.get(&child.rev) {
                Some(&r) => r,
                None => {
                    // Only a child no retained version shows can outlive its revision (a
                    // garbage collection in between): it matches nothing.
                    let Some(stored) = revisions.read(child.rev)? else {
                        continue;
                    };
                    let record: RevisionRecord = decode(stored.value(), "revision")?;
                    let r = self.revisions.len() as u32;
                    self.revisions.push(Revision {
                        doc_id: record.doc_id,
                        title: record.title,
                        source_uri: record.source_uri,
                        published_at: record.published_at,
                        updated_at: record.updated_at,
                        metadata: record
                            .metadata
                            .into_iter()
                            .map(|(k, v)| (k, v.into()))
                            .collect(),
                    });
                    self.revision_index.insert(child.rev, r);
                    r
                }
            };
            let path = match self.path_index.get(&child.section_path) {
                Some(&p) => p,
                None => {
                    let p = self.paths.len() as u32;
                    self.paths.push(child.section_path.clone());
                    self.path_index.insert(child.section_path, p);
                    p
                }
            };
            let next = self.cells.len() as u32;
            let cell = *self.cell_index.entry((revision, path)).or_insert(next);
            if cell == next {
                self.cells.push((revision, path));
            }
            if let Some(slot) = self.cell_of.get_mut(number as usize) {
                *slot = cell;
            }
        }
        self.covered = upto;
        Ok(())
    }
}
