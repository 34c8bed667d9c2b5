//! Segments: immutable runs of child vectors, with an optional graph, stored in blocks.

use std::sync::{Arc, OnceLock};

use redb::{ReadOnlyTable, ReadTransaction, WriteTransaction};

use crate::storage::error::StorageError;
use crate::storage::file::postings::write_postings;
use crate::storage::file::records::{decode, encode, IndexRecord, SegmentRecord, VectorStorage};
use crate::storage::file::shared_segments::{SegmentFiles, Sharing};
use crate::storage::file::tables::{SEGMENTS, SEGMENT_GRAPHS, SEGMENT_VECTORS};

use crate::index::hnsw::quant::Residuals;
use crate::index::hnsw::Graph;
use crate::index::lexical::LexicalSegment;
use crate::index::{RowError, RowSource, SegmentIndex, SegmentPart};
use crate::storage::file::sealed::{ReadSealed, Sealed, Verified, WriteSealed};

/// Values are kept near this size so no single redb value grows with the index. Just under
/// 1 MiB: a value of exactly 1 MiB plus redb's page header takes a 2 MiB page (measured:
/// 155 MB of a 200k x 128 store were such padding).
const BLOCK_BYTES: usize = (1 << 20) - 4096;

/// Vector blocks of a compressed index are this size at most (whole rows, at least one):
/// a search reads single rows, and redb reads a whole value to give any of it, so a value
/// stays within one 4 KiB page with its key and the page header.
const STORED_BLOCK_BYTES: usize = 3 << 10;

/// The vector table of one read transaction, as compressed segments read their rows.
pub(crate) type VectorTable = ReadOnlyTable<(u32, u32, u32), Sealed>;

/// The vector table of `txn`.
pub(crate) fn vector_table(txn: &ReadTransaction) -> Result<VectorTable, StorageError> {
    Ok(txn.open_table(SEGMENT_VECTORS)?)
}

/// An immutable run of child vectors with global ids `base..base + len`, and its graph
/// when it is large enough to need one: an [`SegmentIndex`] with its storage id.
pub(crate) struct Segment {
    id: u32,
    /// Shared with applications that inspect it ([`crate::store::Store::vectors`]).
    index: Arc<SegmentIndex>,
    /// For a compressed segment (rows left in the file): how to read them.
    stored: Option<StoredRows>,
    /// Whether its arrays are mapped from a shared segment file.
    sharing: Sharing,
    /// Its children's postings: kept by the writer that built them, else mapped from
    /// their shared file or read from the store by the first lexical search that needs
    /// them (`read/lexical.rs`), and shared by every version holding the segment.
    lexical: OnceLock<LexicalSegment>,
    /// Why its postings are in this process's memory though shared files are on.
    lexical_refused: OnceLock<String>,
}

/// Where a compressed segment's rows are in the vector table.
#[derive(Debug, Clone, Copy)]
struct StoredRows {
    index: u32,
    /// Rows per vector block (the last may hold fewer).
    per_block: u32,
    /// Candidates re-scored on their f32 rows.
    rescore: u32,
}

/// A compressed segment's rows in one read transaction.
pub(crate) struct TableRows<'t> {
    table: &'t VectorTable,
    at: StoredRows,
    segment: u32,
    dim: usize,
    /// Walk candidates re-scored on their f32 rows, for this search.
    rescore: usize,
}

impl RowSource for TableRows<'_> {
    fn read(&self, ids: &[u32], out: &mut Vec<f32>) -> Result<(), RowError> {
        let row_bytes = self.dim * 4;
        let per_block = self.at.per_block.max(1);
        let mut held: Option<(u32, Verified<'_>)> = None;
        for &id in ids {
            let block = id / per_block;
            if held.as_ref().is_none_or(|(b, _)| *b != block) {
                let value = self
                    .table
                    .read((self.at.index, self.segment, block))
                    .map_err(|e| RowError(e.to_string()))?
                    .ok_or_else(|| {
                        RowError(format!("segment {} block {block} missing", self.segment))
                    })?;
                held = Some((block, value));
            }
            let bytes = held.as_ref().map_or(&[][..], |(_, v)| v.value());
            let start = (id % per_block) as usize * row_bytes;
            let row = bytes.get(start..start + row_bytes).ok_or_else(|| {
                RowError(format!("segment {} block {block} is short", self.segment))
            })?;
            extend_f32s(out, row);
        }
        Ok(())
    }
}

impl Segment {
    pub(crate) fn new(id: u32, index: SegmentIndex) -> Self {
        Segment {
            id,
            index: Arc::new(index),
            stored: None,
            sharing: Sharing::Private,
            lexical: OnceLock::new(),
            lexical_refused: OnceLock::new(),
        }
    }

    /// Whether its arrays are mapped from a shared segment file, and why not.
    pub(crate) fn sharing(&self) -> &Sharing {
        &self.sharing
    }

    fn shared(self, sharing: Sharing) -> Self {
        Segment { sharing, ..self }
    }

    pub fn id(&self) -> u32 {
        self.id
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

    /// Whether its rows stay in the file (a compressed index's segment with a graph).
    pub fn is_stored(&self) -> bool {
        self.stored.is_some()
    }

    /// Its lexical postings, once written, read or mapped.
    pub(crate) fn lexical(&self) -> &OnceLock<LexicalSegment> {
        &self.lexical
    }

    /// Why its postings could not be mapped from their shared file, once a search found.
    pub(crate) fn lexical_refused(&self) -> &OnceLock<String> {
        &self.lexical_refused
    }

    /// The global ids of this segment.
    pub fn ids(&self) -> std::ops::Range<u32> {
        self.index.ids()
    }

    /// This segment as [`crate::index::search_segments`] reads it, with `rows`, its rows in
    /// the read transaction's vector table when it is compressed (see [`Segment::rows`]).
    pub(crate) fn part<'a>(&'a self, rows: Option<&'a TableRows<'a>>) -> SegmentPart<'a> {
        SegmentPart {
            index: &self.index,
            stored: rows.map(|rows| (rows as &dyn RowSource, rows.rescore)),
        }
    }

    /// A compressed segment's rows in `table` (the vector table of the read transaction),
    /// with its re-score width (`rescore`, else its index's); `None` for a resident one.
    pub(crate) fn rows<'t>(
        &self,
        table: Option<&'t VectorTable>,
        rescore: Option<usize>,
    ) -> Result<Option<TableRows<'t>>, StorageError> {
        let Some(at) = self.stored else {
            return Ok(None);
        };
        let table = table.ok_or_else(|| {
            StorageError::corrupt(format!("segment {}: no vector table", self.id))
        })?;
        let mut rows = self.rows_in(table, at);
        rows.rescore = rescore.unwrap_or(at.rescore as usize);
        Ok(Some(rows))
    }

    fn rows_in<'t>(&self, table: &'t VectorTable, at: StoredRows) -> TableRows<'t> {
        TableRows {
            table,
            at,
            segment: self.id,
            dim: self.index.dim(),
            rescore: at.rescore as usize,
        }
    }

    /// Appends the rows of local ids `locals` to `out`: from memory, or from `txn` for a
    /// compressed segment.
    pub(crate) fn read_rows(
        &self,
        txn: &ReadTransaction,
        locals: &[u32],
        out: &mut Vec<f32>,
    ) -> Result<(), StorageError> {
        let dim = self.index.dim();
        match self.stored {
            None => {
                let rows = self.index.rows();
                for &local in locals {
                    let start = local as usize * dim;
                    let row = rows.get(start..start + dim).ok_or_else(|| {
                        StorageError::corrupt(format!("segment {} is short of rows", self.id))
                    })?;
                    out.extend_from_slice(row);
                }
                Ok(())
            }
            Some(at) => {
                let table = vector_table(txn)?;
                self.rows_in(&table, at)
                    .read(locals, out)
                    .map_err(|e| StorageError::corrupt(format!("segment {}: {e}", self.id)))
            }
        }
    }

    /// This segment with its rows in memory: itself when they already are, else a copy
    /// read from `txn` (for applications that inspect the vectors).
    pub(crate) fn resident(
        &self,
        txn: &ReadTransaction,
    ) -> Result<Arc<SegmentIndex>, StorageError> {
        if self.stored.is_none() {
            return Ok(self.index.clone());
        }
        let locals: Vec<u32> = (0..self.len() as u32).collect();
        let mut rows = Vec::with_capacity(self.len() * self.index.dim());
        self.read_rows(txn, &locals, &mut rows)?;
        let copy = SegmentIndex::prepared(self.base(), self.index.dim(), self.index.metric(), rows)
            .map_err(|e| StorageError::corrupt(format!("segment {}: {e}", self.id)))?;
        let copy = match self.index.graph() {
            Some(graph) => copy
                .with_graph(graph.clone())
                .map_err(|e| StorageError::corrupt(format!("segment {}: {e}", self.id)))?,
            None => copy,
        };
        Ok(Arc::new(copy))
    }

    /// Segment `id` of `index`: mapped from its shared file in `files` when it has one
    /// (made from the store when missing or unusable), else read into memory.
    pub(crate) fn load(
        txn: &ReadTransaction,
        index: &IndexRecord,
        id: u32,
        files: Option<&SegmentFiles>,
    ) -> Result<Segment, StorageError> {
        let record: SegmentRecord = {
            let table = txn.open_table(SEGMENTS)?;
            let value = table
                .read((index.id, id))?
                .ok_or_else(|| StorageError::corrupt(format!("segment {id} missing")))?;
            decode(value.value(), "segment record")?
        };
        let dim = record.dimension as usize;
        if dim != index.embedder.dimension as usize || dim == 0 {
            return Err(StorageError::corrupt(format!(
                "segment {id} has dimension {dim}"
            )));
        }
        let shared = match (files, index.vectors) {
            (Some(files), VectorStorage::Resident) => {
                let (mapped, identity) = files.open(txn, index, id, &record)?;
                if let Some(mapped) = mapped {
                    return Ok(Segment::new(id, mapped).shared(Sharing::Mapped));
                }
                Some((files, identity))
            }
            _ => None,
        };
        let rows = record.count as usize;
        let graph = if record.graph_blocks == 0 {
            None
        } else {
            let graphs = txn.open_table(SEGMENT_GRAPHS)?;
            let mut bytes = Vec::new();
            for block in 0..record.graph_blocks {
                let value = graphs.read((index.id, id, block))?.ok_or_else(|| {
                    StorageError::corrupt(format!("segment {id} graph block {block} missing"))
                })?;
                bytes.extend_from_slice(value.value());
            }
            let graph = Graph::decode_links(&bytes, rows, dim, index.embedder.metric)
                .map_err(|e| StorageError::corrupt(format!("segment {id} graph: {e}")))?;
            Some(graph)
        };
        let corrupt =
            |e: &dyn std::fmt::Display| StorageError::corrupt(format!("segment {id}: {e}"));
        match (graph, index.vectors) {
            // Compressed: stream the rows into the walk codes and their distances from
            // them, keep none of them.
            (Some(mut graph), VectorStorage::Compressed { rescore }) => {
                let mut per_block = 0u32;
                let mut residuals = Residuals::default();
                for_each_block(txn, index.id, id, &record, |block, floats| {
                    if block == 0 {
                        per_block = (floats.len() / dim) as u32;
                    }
                    graph.code_and_measure(&mut residuals, floats);
                    Ok(())
                })?;
                let segment =
                    SegmentIndex::stored(record.base, graph, residuals).map_err(|e| corrupt(&e))?;
                Ok(Segment {
                    id,
                    index: Arc::new(segment),
                    stored: Some(StoredRows {
                        index: index.id,
                        per_block,
                        rescore,
                    }),
                    sharing: Sharing::Private,
                    lexical: OnceLock::new(),
                    lexical_refused: OnceLock::new(),
                })
            }
            (graph, _) => {
                let mut data = crate::index::pages::with_capacity(rows * dim);
                for_each_block(txn, index.id, id, &record, |_, floats| {
                    data.extend_from_slice(floats);
                    Ok(())
                })?;
                let mut segment =
                    SegmentIndex::prepared(record.base, dim, index.embedder.metric, data)
                        .map_err(|e| corrupt(&e))?;
                if let Some(graph) = graph {
                    segment = segment.with_graph(graph).map_err(|e| corrupt(&e))?;
                }
                let Some((files, identity)) = shared else {
                    return Ok(Segment::new(id, segment));
                };
                // This process holds the copy only until every process can map it.
                Ok(match files.make(index.id, id, identity, &segment) {
                    Ok(mapped) => Segment::new(id, mapped).shared(Sharing::Mapped),
                    Err(reason) => Segment::new(id, segment).shared(Sharing::Refused(reason)),
                })
            }
        }
    }

    /// Writes the segment's record, vector blocks, graph blocks and lexical postings (its
    /// children's records and texts are in `txn` already); for a compressed index, returns
    /// the segment to serve with its rows left in the file. The returned segment holds its
    /// postings.
    pub(crate) fn write(
        self: Arc<Self>,
        txn: &WriteTransaction,
        record: &IndexRecord,
    ) -> Result<Arc<Segment>, StorageError> {
        let postings = write_postings(txn, record, self.id, self.ids())?;
        let written = self.write_vectors(txn, record.id, record.vectors)?;
        // A segment just built has no postings yet; any it holds were built from the same
        // texts.
        let _ = written.lexical.set(postings);
        Ok(written)
    }

    fn write_vectors(
        self: Arc<Self>,
        txn: &WriteTransaction,
        index: u32,
        storage: VectorStorage,
    ) -> Result<Arc<Segment>, StorageError> {
        let dim = self.index.dim();
        let block_bytes = match storage {
            VectorStorage::Compressed { .. } if self.has_graph() => STORED_BLOCK_BYTES,
            _ => BLOCK_BYTES,
        };
        let rows_per_block = (block_bytes / (dim * 4)).max(1);
        let mut vectors = txn.open_table(SEGMENT_VECTORS)?;
        let mut vector_blocks = 0u32;
        let mut buffer = Vec::with_capacity(rows_per_block * dim * 4);
        for rows in self.index.rows().chunks(rows_per_block * dim) {
            buffer.clear();
            for x in rows {
                buffer.extend_from_slice(&x.to_le_bytes());
            }
            vectors.put((index, self.id, vector_blocks), buffer.as_slice())?;
            vector_blocks += 1;
        }
        let mut graph_blocks = 0u32;
        if let Some(graph) = self.index.graph() {
            let mut graphs = txn.open_table(SEGMENT_GRAPHS)?;
            graph.encode_blocks(BLOCK_BYTES, |piece| {
                graphs.put((index, self.id, graph_blocks), piece)?;
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
            .put((index, self.id), encode(&record).as_slice())?;
        let VectorStorage::Compressed { rescore } = storage else {
            return Ok(self);
        };
        if !self.has_graph() || self.stored.is_some() {
            return Ok(self);
        }
        // The only holder (a segment just built) gives its rows up without a copy.
        let segment = match Arc::try_unwrap(self) {
            Ok(segment) => segment,
            Err(shared) => return Ok(shared),
        };
        let built = Arc::try_unwrap(segment.index).unwrap_or_else(|shared| (*shared).clone());
        Ok(Arc::new(Segment {
            id: segment.id,
            index: Arc::new(built.without_rows()),
            stored: Some(StoredRows {
                index,
                per_block: rows_per_block as u32,
                rescore,
            }),
            sharing: Sharing::Private,
            lexical: OnceLock::new(),
            lexical_refused: OnceLock::new(),
        }))
    }
}

/// Calls `f` with each vector block of segment `id` in order (its number and its floats),
/// after checking the blocks hold exactly the record's rows.
fn for_each_block(
    txn: &ReadTransaction,
    index: u32,
    id: u32,
    record: &SegmentRecord,
    mut f: impl FnMut(u32, &[f32]) -> Result<(), StorageError>,
) -> Result<(), StorageError> {
    let dim = record.dimension as usize;
    let vectors = txn.open_table(SEGMENT_VECTORS)?;
    let mut floats = Vec::new();
    let mut total = 0usize;
    let mut per_block = None;
    for block in 0..record.vector_blocks {
        let value = vectors.read((index, id, block))?.ok_or_else(|| {
            StorageError::corrupt(format!("segment {id} vector block {block} missing"))
        })?;
        let bytes = value.value();
        let rows = bytes.len() / (4 * dim);
        // Whole rows, every block but the last as full as the first (so row `i` is in
        // block `i / rows`), never more rows than recorded.
        let full = *per_block.get_or_insert(rows);
        let last = block + 1 == record.vector_blocks;
        if bytes.len() != rows * 4 * dim || rows == 0 || rows > full || (!last && rows != full) {
            return Err(StorageError::corrupt(format!(
                "segment {id} vector block {block} is ragged"
            )));
        }
        total += rows;
        if total > record.count as usize {
            break;
        }
        floats.clear();
        extend_f32s(&mut floats, bytes);
        f(block, &floats)?;
    }
    if total != record.count as usize {
        return Err(StorageError::corrupt(format!(
            "segment {id} holds the wrong number of floats"
        )));
    }
    Ok(())
}

/// Appends the little-endian floats of `bytes` (whole floats) to `out`.
fn extend_f32s(out: &mut Vec<f32>, bytes: &[u8]) {
    out.extend(
        bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
    );
}
