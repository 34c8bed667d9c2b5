//! What every path that commits a new index version writes (a batch, a merge, a new index):
//! segments, the version record, the tables of a new index.

use std::sync::Arc;

use redb::WriteTransaction;
use roaring::RoaringBitmap;

use crate::index::hnsw::HnswParams;
use crate::index::{SegmentIndex, ShapeError};
use crate::progress::Progress;
use crate::storage::error::StorageError;
use crate::storage::file::records::{encode, encode_bitmap, now_ms, IndexRecord, VersionRecord};
use crate::storage::file::sealed::WriteSealed;
use crate::storage::file::segment::Segment;
use crate::storage::file::tables::*;
use crate::storage::read::state::VersionView;

/// A segment over `data` (row-major, allocated with `index::pages`: construction reads
/// rows at random), with a graph when it has enough rows.
pub(crate) fn build_segment(
    record: &IndexRecord,
    base: u32,
    data: Vec<f32>,
    progress: &dyn Progress,
) -> Result<SegmentIndex, ShapeError> {
    let dim = record.embedder.dimension as usize;
    let mut segment = SegmentIndex::prepared(base, dim, record.embedder.metric, data)?;
    if segment.len() >= record.graph.min_graph_size as usize {
        progress.stage("graph", segment.len() as u64);
        let params = HnswParams {
            m: record.graph.m as usize,
            ef_construction: record.graph.ef_construction as usize,
            ..HnswParams::default()
        };
        segment.build_graph(params, &|done| progress.set_done(done as u64));
    }
    Ok(segment)
}

/// Operations from which a batch gives the heap it freed back (see [`release_freed_heap`]).
pub(crate) const TRIM_AFTER_OPS: usize = 4096;

/// Gives the heap pages a large commit freed (its documents, chunks, records, redb's
/// pages) back to the system: glibc keeps freed small allocations for reuse, so after a
/// bulk load the process would stay resident at its peak.
pub(crate) fn release_freed_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only hands free pages of the heap back to the kernel; no live
    // allocation is touched.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Writes version `record.head + 1` of index `name` (segments, live children, what made it)
/// and the index record with that head; returns the new version's view.
pub(crate) fn write_version(
    txn: &WriteTransaction,
    name: &str,
    record: &mut IndexRecord,
    segments: Vec<Arc<Segment>>,
    live: RoaringBitmap,
    change: &str,
    documents: u64,
) -> Result<VersionView, StorageError> {
    let version = record.head + 1;
    let stored = VersionRecord {
        segments: segments.iter().map(|s| s.id()).collect(),
        live: encode_bitmap(&live),
        created_ms: now_ms(),
        change: change.to_string(),
        documents,
    };
    txn.open_table(VERSIONS)?
        .put((record.id, version), encode(&stored).as_slice())?;
    record.head = version;
    txn.open_table(INDEXES)?
        .put(name, encode(&*record).as_slice())?;
    Ok(VersionView::new(
        record.id, version, &stored, live, segments,
    ))
}
