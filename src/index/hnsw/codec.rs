//! The persisted form of a [`Graph`].
//!
//! The layout is documented on [`Graph::encode`].

use super::layers::{Entry, Links, MAX_LEVEL};
use super::quant::Codes;
use super::{Graph, HnswParams};
use crate::index::metric::Metric;
use crate::index::pages;
use crate::index::shared::Slab;
use crate::index::vectors::{ShapeError, VectorSet};
use crate::limits::{DIMENSION, GRAPH_M};

const MAGIC: [u8; 4] = *b"FHNS";
/// The version [`Graph::encode`] writes. Version 1 also stored the 8-bit codes (n · dim
/// bytes, a quarter of the f32 vectors' size); version 2 keeps only the quantiser's
/// ranges and [`Graph::decode`] recomputes the codes from the segment's vectors.
const VERSION: u32 = 2;
/// The oldest version [`Graph::decode`] reads.
const VERSION_WITH_CODES: u32 = 1;
const HEADER: usize = 44;

/// Why bytes are not a valid graph.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GraphDecodeError {
    /// Fewer bytes than the header (the length is given).
    #[error("graph blob too short for its header ({0} bytes)")]
    TooShort(usize),
    /// The bytes do not start with the graph magic.
    #[error("not a graph blob (bad magic)")]
    BadMagic,
    /// A graph format version this build does not read.
    #[error("unsupported graph format version {0}")]
    UnsupportedVersion(u32),
    /// A header field is out of range.
    #[error("invalid graph header field {field}: {value}")]
    BadHeader {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
    },
    /// The length differs from what the header implies.
    #[error("graph blob is {actual} bytes, its header implies {expected}")]
    Length {
        /// Bytes the header implies.
        expected: u64,
        /// Bytes given.
        actual: u64,
    },
    /// A node's level is above the graph's top level.
    #[error("node {node} has level {level}")]
    BadLevel {
        /// The node.
        node: u32,
        /// Its level.
        level: u8,
    },
    /// The entry node is not on the top level.
    #[error("entry node {entry} at level {level} is not a top-level node")]
    BadEntry {
        /// The entry node.
        entry: u32,
        /// The graph's top level.
        level: u32,
    },
    /// A neighbour list claims more links than it has room for.
    #[error("node {node} layer {layer}: {count} links exceed the list width")]
    BadCount {
        /// The node.
        node: u32,
        /// The layer.
        layer: usize,
        /// The links claimed.
        count: u32,
    },
    /// A link points outside the nodes of its layer.
    #[error("node {node} layer {layer} links to {neighbour}, not a node of that layer")]
    BadNeighbour {
        /// The node.
        node: u32,
        /// The layer.
        layer: usize,
        /// The linked node.
        neighbour: u32,
    },
    /// The vectors handed to [`Graph::decode`] are not the ones the graph was built over
    /// (another row count, dimension or metric).
    #[error("graph does not fit its segment's vectors: {0}")]
    Vectors(ShapeError),
}

impl Graph {
    /// Serialises the graph: a magic, a format version, the parameters, then the arrays
    /// as bulk little-endian copies, so [`Graph::decode`] is mostly `memcpy`.
    ///
    /// The byte layout, field widths and the limits [`Graph::decode`] enforces are
    /// specified in `storage-format.md`, "Graph encoding (`segment_graphs`)": a 44-byte
    /// header, node levels, fixed-width neighbour lists and the quantiser's offsets and
    /// scales. The 8-bit codes the walks use are not stored: code `j` of row `i` is
    /// `((x - offset[j]) / scale[j]).round()` saturated to `0..=255` (0 where `scale[j]` is
    /// not positive), `x` being element `j` of the segment's row `i` as stored, computed in
    /// `f32` exactly as when the graph was built, so [`Graph::decode`] gets the same bytes
    /// back. Version 1 (still decoded) is the same followed by the codes: n · dim bytes,
    /// row by row, padded to a multiple of 4 with zeros.
    pub fn encode(&self) -> Vec<u8> {
        let links = &self.links;
        let padded = self.levels.len().next_multiple_of(4);
        let mut out =
            Vec::with_capacity(HEADER + padded + 4 * (links.layer0.len() + links.upper.len()));
        self.write_parts(&mut |bytes| out.extend_from_slice(bytes));
        out
    }

    /// [`Graph::encode`]'s bytes in pieces of `block` bytes (the last one shorter), each
    /// handed to `sink` once full, so the whole blob is never in memory at once.
    pub fn encode_blocks<E>(
        &self,
        block: usize,
        mut sink: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let block = block.max(1);
        let mut buffer = Vec::with_capacity(block);
        let mut failed = Ok(());
        self.write_parts(&mut |mut bytes| {
            while !bytes.is_empty() && failed.is_ok() {
                let take = (block - buffer.len()).min(bytes.len());
                buffer.extend_from_slice(&bytes[..take]);
                bytes = &bytes[take..];
                if buffer.len() == block {
                    failed = sink(&buffer);
                    buffer.clear();
                }
            }
        });
        failed?;
        if buffer.is_empty() {
            Ok(())
        } else {
            sink(&buffer)
        }
    }

    /// Hands the encoding to `out` piece by piece, in order.
    fn write_parts(&self, out: &mut impl FnMut(&[u8])) {
        let (entry, top) = self
            .entry
            .map_or((u32::MAX, 0), |e| (e.id, u32::from(e.level)));
        let mut header = Vec::with_capacity(HEADER);
        header.extend_from_slice(&MAGIC);
        for word in [
            VERSION,
            metric_code(self.metric),
            self.dim as u32,
            self.len() as u32,
            self.params.m as u32,
            self.params.ef_construction as u32,
        ] {
            header.extend_from_slice(&word.to_le_bytes());
        }
        header.extend_from_slice(&self.params.seed.to_le_bytes());
        header.extend_from_slice(&entry.to_le_bytes());
        header.extend_from_slice(&top.to_le_bytes());
        out(&header);
        out(&self.levels);
        out(&[0; 3][..self.levels.len().next_multiple_of(4) - self.levels.len()]);
        let words = self.links.layer0.iter().chain(&self.links.upper).copied();
        let floats = self.codes.offset.iter().chain(&self.codes.scale);
        write_le(words.chain(floats.map(|x| x.to_bits())), out);
    }
    /// Parses and validates [`Graph::encode`] output (format version 2, or version 1 with
    /// stored codes) for the segment whose vectors are `vectors`: the rows the graph was
    /// built over, bit for bit as they were then (for cosine, the normalised rows the
    /// segment stores). Version 2 blobs get their 8-bit codes recomputed from `vectors`
    /// with the stored quantiser ranges, the same arithmetic as the build, so the codes
    /// are identical to the ones built; version 1 blobs keep their stored codes.
    ///
    /// Never panics, whatever the bytes and whatever the vectors: every length, count,
    /// level and neighbour id is checked, and vectors of another row count, dimension or
    /// metric than the header's are refused ([`GraphDecodeError::Vectors`]), so a decoded
    /// graph is safe to search over `vectors`. Allocation is bounded by the input: the
    /// recomputed codes take one byte per float of `vectors`.
    pub fn decode(bytes: &[u8], vectors: VectorSet<'_>) -> Result<Graph, GraphDecodeError> {
        let mut graph = Graph::decode_links(bytes, vectors.len(), vectors.dim(), vectors.metric())?;
        if graph.codes.bytes.is_empty() {
            // Shape checked by `decode_links`: `vectors` has the graph's rows.
            graph.codes.recompute(vectors);
        }
        Ok(graph)
    }

    /// [`Graph::decode`] for a segment of `len` rows of `dim` floats under `metric` whose
    /// rows are not at hand: a version 2 blob leaves the codes empty until
    /// [`Graph::code_and_measure`] has been given every row, in order.
    pub(crate) fn decode_links(
        bytes: &[u8],
        len: usize,
        vector_dim: usize,
        metric: Metric,
    ) -> Result<Graph, GraphDecodeError> {
        let header = Header::parse(bytes)?;
        let (n, m, dim) = (header.n as usize, header.m as usize, header.dim as usize);
        if len != n || vector_dim != dim || metric != header.metric {
            return Err(GraphDecodeError::Vectors(ShapeError::GraphMismatch {
                graph_len: n,
                graph_dim: dim,
                graph_metric: header.metric,
                len,
                dim: vector_dim,
                metric,
            }));
        }
        let levels_end = HEADER + n.next_multiple_of(4);
        let levels = bytes
            .get(HEADER..HEADER + n)
            .ok_or(GraphDecodeError::TooShort(bytes.len()))?;
        let upper_lists: u64 = levels.iter().map(|&l| u64::from(l)).sum();
        // In u64: with n < 2^32, m <= 2^10 and dim <= 2^16 nothing here overflows.
        let stored_codes = if header.version == VERSION_WITH_CODES {
            (n as u64 * dim as u64).next_multiple_of(4)
        } else {
            0
        };
        let expected = levels_end as u64
            + 4 * (n as u64 * (1 + 2 * m as u64) + upper_lists * (1 + m as u64))
            + 8 * dim as u64
            + stored_codes;
        if expected != bytes.len() as u64 {
            return Err(GraphDecodeError::Length {
                expected,
                actual: bytes.len() as u64,
            });
        }
        // The exact length check makes every slice below in bounds.
        let layer0_end = levels_end + 4 * n * (1 + 2 * m);
        let upper_end = layer0_end + 4 * upper_lists as usize * (1 + m);
        let scales_start = upper_end + 4 * dim;
        let codes_start = scales_start + 4 * dim;
        let with_codes = header.version == VERSION_WITH_CODES;
        let stored_codes = if with_codes {
            bytes[codes_start..codes_start + n * dim].to_vec()
        } else {
            Vec::new()
        };
        let params = HnswParams {
            m,
            ef_construction: header.ef_construction as usize,
            seed: header.seed,
        };
        let codes = Codes::from_parts(
            header.metric,
            read_f32s(&bytes[upper_end..scales_start]),
            read_f32s(&bytes[scales_start..codes_start]),
            stored_codes,
        );
        Graph::assemble(
            header.metric,
            dim,
            params,
            header.entry,
            levels.to_vec(),
            read_u32s(&bytes[levels_end..layer0_end]).into(),
            read_u32s(&bytes[layer0_end..upper_end]),
            codes,
        )
    }

    /// A graph from arrays laid out as a finished graph holds them (a mapped segment's:
    /// `layer0` may be a view, `codes` computed before), checked as a decoded one is.
    #[allow(clippy::too_many_arguments)] // the graph's parts, each once
    pub(crate) fn assemble(
        metric: Metric,
        dim: usize,
        params: HnswParams,
        entry: Option<Entry>,
        levels: Vec<u8>,
        layer0: Slab<u32>,
        upper: Vec<u32>,
        codes: Codes,
    ) -> Result<Graph, GraphDecodeError> {
        let (n, m) = (levels.len(), params.m);
        let mut upper_start = Vec::with_capacity(n + 1);
        upper_start.push(0);
        for (node, &level) in levels.iter().enumerate() {
            if level > MAX_LEVEL {
                return Err(GraphDecodeError::BadLevel {
                    node: node as u32,
                    level,
                });
            }
            upper_start.push(upper_start[node] + usize::from(level));
        }
        let lists = (layer0.len(), upper.len());
        if lists != (n * (1 + 2 * m), upper_start[n] * (1 + m)) {
            return Err(GraphDecodeError::Length {
                expected: 4 * (n * (1 + 2 * m) + upper_start[n] * (1 + m)) as u64,
                actual: 4 * (lists.0 + lists.1) as u64,
            });
        }
        let graph = Graph {
            metric,
            dim,
            params,
            entry,
            levels,
            links: Links {
                m,
                m0: 2 * m,
                layer0,
                upper,
                upper_start,
            },
            codes,
        };
        graph.validate()?;
        Ok(graph)
    }

    /// Checks the entry point and every list against the levels.
    fn validate(&self) -> Result<(), GraphDecodeError> {
        let top = self.levels.iter().copied().max();
        match (self.entry, top) {
            (None, None) => {}
            (Some(e), Some(top))
                if self.levels.get(e.id as usize) == Some(&top) && e.level == top => {}
            (e, _) => {
                let (entry, level) = e.map_or((u32::MAX, 0), |e| (e.id, u32::from(e.level)));
                return Err(GraphDecodeError::BadEntry { entry, level });
            }
        }
        for node in 0..self.len() as u32 {
            for layer in 0..=usize::from(self.levels[node as usize]) {
                self.validate_list(node, layer)?;
            }
        }
        Ok(())
    }

    fn validate_list(&self, node: u32, layer: usize) -> Result<(), GraphDecodeError> {
        let list = self.links.list(node, layer);
        let count = list[0];
        if count as usize > list.len() - 1 {
            return Err(GraphDecodeError::BadCount { node, layer, count });
        }
        for &neighbour in &list[1..=count as usize] {
            let ok = self
                .levels
                .get(neighbour as usize)
                .is_some_and(|&l| usize::from(l) >= layer);
            if !ok {
                return Err(GraphDecodeError::BadNeighbour {
                    node,
                    layer,
                    neighbour,
                });
            }
        }
        Ok(())
    }
}

struct Header {
    version: u32,
    metric: Metric,
    dim: u32,
    n: u32,
    m: u32,
    ef_construction: u32,
    seed: u64,
    entry: Option<Entry>,
}

impl Header {
    fn parse(bytes: &[u8]) -> Result<Header, GraphDecodeError> {
        let head = bytes
            .get(..HEADER)
            .ok_or(GraphDecodeError::TooShort(bytes.len()))?;
        if head[..4] != MAGIC {
            return Err(GraphDecodeError::BadMagic);
        }
        let word =
            |at: usize| u32::from_le_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
        let bad = |field, value: u32| GraphDecodeError::BadHeader {
            field,
            value: u64::from(value),
        };
        let version = word(4);
        if !(VERSION_WITH_CODES..=VERSION).contains(&version) {
            return Err(GraphDecodeError::UnsupportedVersion(version));
        }
        let metric = metric_of(word(8)).ok_or_else(|| bad("metric", word(8)))?;
        let (dim, n, m, ef_construction) = (word(12), word(16), word(20), word(24));
        // Bounds that keep a hostile header from asking for absurd allocations; the store
        // refuses parameters outside them before it builds a graph.
        if !DIMENSION.contains(&dim) {
            return Err(bad("dim", dim));
        }
        if !GRAPH_M.contains(&m) {
            return Err(bad("m", m));
        }
        let seed = u64::from(word(28)) | (u64::from(word(32)) << 32);
        let (entry_id, top) = (word(36), word(40));
        let entry = match (n, entry_id) {
            (0, u32::MAX) if top == 0 => None,
            (0, _) => {
                return Err(GraphDecodeError::BadEntry {
                    entry: entry_id,
                    level: top,
                })
            }
            _ => Some(Entry {
                id: entry_id,
                level: u8::try_from(top).map_err(|_| GraphDecodeError::BadEntry {
                    entry: entry_id,
                    level: top,
                })?,
            }),
        };
        Ok(Header {
            version,
            metric,
            dim,
            n,
            m,
            ef_construction,
            seed,
            entry,
        })
    }
}

/// The metric's number in graph headers and mapped segments.
pub(crate) fn metric_code(metric: Metric) -> u32 {
    match metric {
        Metric::Cosine => 0,
        Metric::Dot => 1,
        Metric::L2 => 2,
    }
}

/// The metric numbered `code` by [`metric_code`].
pub(crate) fn metric_of(code: u32) -> Option<Metric> {
    match code {
        0 => Some(Metric::Cosine),
        1 => Some(Metric::Dot),
        2 => Some(Metric::L2),
        _ => None,
    }
}

/// `words` as little-endian bytes, handed to `out` a few KiB at a time.
pub(crate) fn write_le(words: impl Iterator<Item = u32>, out: &mut impl FnMut(&[u8])) {
    let mut chunk = [0u8; 4096];
    let mut len = 0;
    for word in words {
        chunk[len..len + 4].copy_from_slice(&word.to_le_bytes());
        len += 4;
        if len == chunk.len() {
            out(&chunk);
            len = 0;
        }
    }
    out(&chunk[..len]);
}

/// Bulk little-endian conversion; compiles to a vectorised copy.
/// Links are read at random by every walk: huge pages (see `index::pages`).
fn read_u32s(bytes: &[u8]) -> Vec<u32> {
    let mut out = pages::with_capacity(bytes.len() / 4);
    out.extend(
        bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
    );
    out
}

fn read_f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
