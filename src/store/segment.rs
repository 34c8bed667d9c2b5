//! Segments: immutable runs of child vectors, with an optional graph, stored in blocks.

use std::sync::Arc;

use redb::{ReadTransaction, WriteTransaction};

use super::error::StorageError;
use super::records::{decode, encode, IndexRecord, SegmentRecord};
use super::tables::{SEGMENTS, SEGMENT_GRAPHS, SEGMENT_VECTORS};
use roaring::RoaringBitmap;

use crate::index::exact::Neighbor;
use crate::index::hnsw::Graph;
use crate::index::planner::SearchReport;
use crate::index::SegmentIndex;

/// Values are kept near this size so no single redb value grows with the index. Just under
/// 1 MiB: a value of exactly 1 MiB plus redb's page header takes a 2 MiB page (measured:
/// 155 MB of a 200k x 128 store were such padding).
const BLOCK_BYTES: usize = (1 << 20) - 4096;

/// An immutable run of child vectors with global ids `base..base + len`, and its graph
/// when it is large enough to need one: an [`SegmentIndex`] with its storage id.
pub(crate) struct Segment {
    id: u32,
    /// Shared with applications that inspect it ([`super::Store::segment_indexes`]).
    index: Arc<SegmentIndex>,
}

impl Segment {
    pub(crate) fn new(id: u32, index: SegmentIndex) -> Self {
        Segment {
            id,
            index: Arc::new(index),
        }
    }

    pub fn id(&self) -> u32 {
        self.id
    }

    /// The vectors, graph and search of this segment.
    pub fn index(&self) -> &Arc<SegmentIndex> {
        &self.index
    }

    /// The global id of the first row.
    pub fn base(&self) -> u32 {
        self.index.base()
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn has_graph(&self) -> bool {
        self.index.graph().is_some()
    }

    /// The global ids of this segment.
    pub fn ids(&self) -> std::ops::Range<u32> {
        self.index.ids()
    }

    /// The best `k` visible children of this segment, or `None` when none is visible.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        ef: Option<usize>,
        visible: &RoaringBitmap,
    ) -> Option<(Vec<Neighbor>, SearchReport)> {
        if visible.range_cardinality(self.ids()) == 0 {
            return None;
        }
        // Callers embed with the index's embedder, so a wrong dimension means no match.
        self.index.search(query, k, ef, visible).ok()
    }

    pub(crate) fn load(
        txn: &ReadTransaction,
        index: &IndexRecord,
        id: u32,
    ) -> Result<Segment, StorageError> {
        let record: SegmentRecord = {
            let table = txn.open_table(SEGMENTS)?;
            let value = table
                .get((index.id, id))?
                .ok_or_else(|| StorageError::corrupt(format!("segment {id} missing")))?;
            decode(value.value(), "segment record")?
        };
        let dim = record.dimension as usize;
        if dim != index.embedder.dimension as usize || dim == 0 {
            return Err(StorageError::corrupt(format!(
                "segment {id} has dimension {dim}"
            )));
        }
        let rows = record.count as usize;
        let mut data = crate::index::pages::with_capacity(rows * dim);
        let vectors = txn.open_table(SEGMENT_VECTORS)?;
        for block in 0..record.vector_blocks {
            let value = vectors.get((index.id, id, block))?.ok_or_else(|| {
                StorageError::corrupt(format!("segment {id} vector block {block} missing"))
            })?;
            let bytes = value.value();
            if bytes.len() % 4 != 0 {
                return Err(StorageError::corrupt(format!(
                    "segment {id} vector block {block} is ragged"
                )));
            }
            data.extend(
                bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
        }
        if data.len() != rows * dim {
            return Err(StorageError::corrupt(format!(
                "segment {id} holds the wrong number of floats"
            )));
        }
        let segment = SegmentIndex::prepared(record.base, dim, index.embedder.metric, data)
            .map_err(|e| StorageError::corrupt(format!("segment {id}: {e}")))?;
        if record.graph_blocks == 0 {
            return Ok(Segment::new(id, segment));
        }
        let graphs = txn.open_table(SEGMENT_GRAPHS)?;
        let mut bytes = Vec::new();
        for block in 0..record.graph_blocks {
            let value = graphs.get((index.id, id, block))?.ok_or_else(|| {
                StorageError::corrupt(format!("segment {id} graph block {block} missing"))
            })?;
            bytes.extend_from_slice(value.value());
        }
        let graph = Graph::decode(&bytes, segment.vectors())
            .map_err(|e| StorageError::corrupt(format!("segment {id} graph: {e}")))?;
        let segment = segment
            .with_graph(graph)
            .map_err(|e| StorageError::corrupt(format!("segment {id} graph: {e}")))?;
        Ok(Segment::new(id, segment))
    }

    /// Writes the segment's record, vector blocks and graph blocks.
    pub(crate) fn write(&self, txn: &WriteTransaction, index: u32) -> Result<(), StorageError> {
        let dim = self.index.dim();
        let rows_per_block = (BLOCK_BYTES / (dim * 4)).max(1);
        let mut vectors = txn.open_table(SEGMENT_VECTORS)?;
        let mut vector_blocks = 0u32;
        let mut buffer = Vec::with_capacity(rows_per_block * dim * 4);
        for rows in self.index.rows().chunks(rows_per_block * dim) {
            buffer.clear();
            for x in rows {
                buffer.extend_from_slice(&x.to_le_bytes());
            }
            vectors.insert((index, self.id, vector_blocks), buffer.as_slice())?;
            vector_blocks += 1;
        }
        let mut graph_blocks = 0u32;
        if let Some(graph) = self.index.graph() {
            let mut graphs = txn.open_table(SEGMENT_GRAPHS)?;
            graph.encode_blocks(BLOCK_BYTES, |piece| {
                graphs.insert((index, self.id, graph_blocks), piece)?;
                graph_blocks += 1;
                Ok::<_, StorageError>(())
            })?;
        }
        let record = SegmentRecord {
            base: self.base(),
            count: self.len() as u32,
            dimension: dim as u32,
            vector_blocks,
            graph_blocks,
        };
        txn.open_table(SEGMENTS)?
            .insert((index, self.id), encode(&record).as_slice())?;
        Ok(())
    }
}
