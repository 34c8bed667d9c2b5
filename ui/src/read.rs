//! What several pages read from a snapshot: the document revisions a version holds, and
//! one revision's chunks in it.

use std::ops::Range;

use folio::store::{IndexState, Snapshot, StoredChild, StoredParent, VersionView};

use crate::error::{read_err, PageError};

/// A document revision live in a version, with its chunk numbers there.
pub(crate) struct VersionDoc {
    pub(crate) doc_id: String,
    pub(crate) rev: u64,
    pub(crate) children: Range<u32>,
    pub(crate) parents: Range<u32>,
}

/// Every document revision live in `view`, in child order. A revision's children are
/// contiguous and live or deleted together, so one child record per document is read (and
/// its revision record, not its text).
pub(crate) fn version_docs(
    snapshot: &Snapshot<'_>,
    state: &IndexState,
    view: &VersionView,
) -> Result<Vec<VersionDoc>, PageError> {
    let mut docs = Vec::new();
    let mut live = view.live().iter();
    while let Some(number) = live.next() {
        let child = snapshot.child(state, number).map_err(read_err)?;
        let ranges = snapshot.chunk_ranges(state, &child).map_err(read_err)?;
        let doc_id = snapshot.doc_id(child.rev).map_err(read_err)?;
        live.advance_to(ranges.children.end);
        docs.push(VersionDoc {
            doc_id,
            rev: child.rev,
            children: ranges.children,
            parents: ranges.parents,
        });
    }
    Ok(docs)
}

/// The chunks of one document revision in a version.
pub(crate) struct DocChunks {
    pub(crate) parents: Vec<StoredParent>,
    pub(crate) children: Vec<StoredChild>,
}

pub(crate) fn doc_chunks(
    snapshot: &Snapshot<'_>,
    state: &IndexState,
    doc: &VersionDoc,
) -> Result<DocChunks, PageError> {
    let parents = doc
        .parents
        .clone()
        .map(|n| snapshot.parent(state, n).map_err(read_err))
        .collect::<Result<_, _>>()?;
    let children = doc
        .children
        .clone()
        .map(|n| snapshot.child(state, n).map_err(read_err))
        .collect::<Result<_, _>>()?;
    Ok(DocChunks { parents, children })
}
