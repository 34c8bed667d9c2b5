//! A segment in the flat layout a search reads, so another process can map it instead of
//! holding its own copy: rows, node levels, link lists, walk codes, their norms and the
//! rows' residuals, each array little-endian and starting on a cache line.
//! `storage-format.md`, "Shared segment files", gives the byte layout.

use std::sync::Arc;

use super::hnsw::codec::{metric_code, metric_of, write_le};
use super::hnsw::layers::Entry;
use super::hnsw::quant::{Codes, Residuals};
use super::hnsw::{Graph, GraphDecodeError, HnswParams};
use super::pages::{LineBytes, LINE};
use super::segment::SegmentIndex;
use super::shared::{Region, Slab};
use super::vectors::ShapeError;
use crate::limits::{DIMENSION, GRAPH_M};

/// The layout's version, first in its descriptor.
const LAYOUT: u32 = 1;
/// The descriptor before the arrays.
const DESCRIPTOR: usize = 64;

/// Why a region does not hold a segment in the flat layout.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum FlatError {
    /// A descriptor field out of range.
    #[error("flat segment field {field} is {value}")]
    Field {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
    },
    /// The region ends before the arrays the descriptor implies, or one is misaligned.
    #[error("flat segment arrays do not fit the region")]
    Misfit,
    /// The graph's parts do not hold together.
    #[error("flat segment graph: {0}")]
    Graph(#[from] GraphDecodeError),
    /// The rows do not fit their ids.
    #[error("flat segment rows: {0}")]
    Shape(#[from] ShapeError),
}

/// The arrays' sizes in bytes, in layout order, each padded to whole cache lines.
struct Sections {
    rows: usize,
    levels: usize,
    layer0: usize,
    upper: usize,
    ranges: usize,
    codes: usize,
    norms: usize,
    residuals: usize,
}

impl Sections {
    fn of(n: usize, dim: usize, m: usize, upper_lists: usize, l2: bool) -> Option<Sections> {
        let pad = |bytes: usize| bytes.checked_next_multiple_of(LINE);
        let graph = m > 0;
        let if_graph = |bytes: Option<usize>| if graph { bytes } else { Some(0) };
        Some(Sections {
            rows: pad(n.checked_mul(dim)?.checked_mul(4)?)?,
            levels: if_graph(pad(n))?,
            layer0: if_graph(pad(n.checked_mul(1 + 2 * m)?.checked_mul(4)?))?,
            upper: if_graph(pad(upper_lists.checked_mul(1 + m)?.checked_mul(4)?))?,
            ranges: if_graph(pad(8 * dim))?,
            codes: if_graph(pad(n.checked_mul(dim)?))?,
            norms: if_graph(pad(if l2 { 4 * n } else { 0 }))?,
            residuals: if_graph(pad(4 * n))?,
        })
    }

    fn total(&self) -> Option<usize> {
        [
            self.levels,
            self.layer0,
            self.upper,
            self.ranges,
            self.codes,
            self.norms,
            self.residuals,
        ]
        .into_iter()
        .try_fold(DESCRIPTOR + self.rows, usize::checked_add)
    }
}

impl SegmentIndex {
    /// Hands this segment in the flat layout to `out` piece by piece, in order; `None`
    /// when it has no rows in memory (a compressed segment), which the layout cannot hold.
    pub(crate) fn write_flat<E>(
        &self,
        out: &mut impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Option<Result<(), E>> {
        if !self.is_resident() {
            return None;
        }
        let mut failed = Ok(());
        let mut put = |bytes: &[u8]| {
            if failed.is_ok() {
                failed = out(bytes);
            }
        };
        let (n, dim) = (self.len(), self.dim());
        let graph = self.graph();
        let (m, ef, seed) = graph.map_or((0, 0, 0), |g| {
            let p = g.params();
            (p.m, p.ef_construction, p.seed)
        });
        let entry = graph.and_then(|g| g.entry);
        let upper_lists = graph.map_or(0, |g| g.links.upper_start[n]);
        let (residuals, largest) = self.residuals().parts();
        let mut descriptor = Vec::with_capacity(DESCRIPTOR);
        for word in [
            LAYOUT,
            self.base(),
            n as u32,
            dim as u32,
            metric_code(self.metric()),
            m as u32,
            ef as u32,
            entry.map_or(u32::MAX, |e| e.id),
            entry.map_or(0, |e| u32::from(e.level)),
            0,
        ] {
            descriptor.extend_from_slice(&word.to_le_bytes());
        }
        descriptor.extend_from_slice(&seed.to_le_bytes());
        descriptor.extend_from_slice(&(upper_lists as u64).to_le_bytes());
        descriptor.extend_from_slice(&largest.to_le_bytes());
        descriptor.resize(DESCRIPTOR, 0);
        put(&descriptor);
        let floats = |xs: &[f32], put: &mut dyn FnMut(&[u8])| {
            write_le(xs.iter().map(|x| x.to_bits()), &mut |b| put(b));
            pad(4 * xs.len(), put);
        };
        floats(self.rows(), &mut put);
        if let Some(graph) = graph {
            put(&graph.levels);
            pad(n, &mut put);
            for words in [&graph.links.layer0[..], &graph.links.upper[..]] {
                write_le(words.iter().copied(), &mut |b| put(b));
                pad(4 * words.len(), &mut put);
            }
            let codes = &graph.codes;
            let ranges: Vec<f32> = codes.offset.iter().chain(&codes.scale).copied().collect();
            floats(&ranges, &mut put);
            put(&codes.bytes);
            pad(codes.bytes.len(), &mut put);
            floats(codes.norms(), &mut put);
            floats(residuals, &mut put);
        }
        Some(failed)
    }

    /// The segment laid out by [`SegmentIndex::write_flat`] at byte `at` of `region` (a
    /// multiple of 64 from a page-aligned start), its large arrays (rows, layer-0 links,
    /// walk codes) left in the region, the rest copied. The graph is checked as a decoded
    /// one is, so a search never reads out of bounds; the caller vouches that the bytes
    /// are the ones written (a checksum).
    pub(crate) fn from_flat(region: &Arc<dyn Region>, at: usize) -> Result<Self, FlatError> {
        let bytes = region.bytes().get(at..).ok_or(FlatError::Misfit)?;
        let head = bytes.get(..DESCRIPTOR).ok_or(FlatError::Misfit)?;
        let word = |i: usize| u32::from_le_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
        let long = |i: usize| u64::from(word(i)) | (u64::from(word(i + 4)) << 32);
        let field = |field, value: u64| FlatError::Field { field, value };
        if word(0) != LAYOUT {
            return Err(field("layout", word(0).into()));
        }
        let (base, n, dim, m) = (word(4), word(8) as usize, word(12), word(20));
        let metric = metric_of(word(16)).ok_or(field("metric", word(16).into()))?;
        if !DIMENSION.contains(&dim) {
            return Err(field("dim", dim.into()));
        }
        if m != 0 && !GRAPH_M.contains(&m) {
            return Err(field("m", m.into()));
        }
        let (dim, m) = (dim as usize, m as usize);
        let upper_lists = usize::try_from(long(48)).map_err(|_| field("upper", long(48)))?;
        let sections = Sections::of(n, dim, m, upper_lists, metric == super::Metric::L2)
            .filter(|s| s.total().is_some_and(|total| total <= bytes.len()))
            .ok_or(FlatError::Misfit)?;
        let mut offset = at + DESCRIPTOR;
        let mut next = |size: usize| {
            let start = offset;
            offset += size;
            start
        };
        let misfit = |_| FlatError::Misfit;
        let rows = Slab::<f32>::view(region, next(sections.rows), n * dim).map_err(misfit)?;
        let segment = SegmentIndex::over_rows(base, dim, metric, rows)?;
        if m == 0 {
            return Ok(segment);
        }
        let copy_u32s = |start: usize, len: usize| -> Result<Vec<u32>, FlatError> {
            Ok(Slab::<u32>::view(region, start, len)
                .map_err(misfit)?
                .into_vec())
        };
        let copy_f32s = |start: usize, len: usize| -> Result<Vec<f32>, FlatError> {
            Ok(Slab::<f32>::view(region, start, len)
                .map_err(misfit)?
                .into_vec())
        };
        let levels = Slab::<u8>::view(region, next(sections.levels), n)
            .map_err(misfit)?
            .into_vec();
        let layer0 = Slab::view(region, next(sections.layer0), n * (1 + 2 * m)).map_err(misfit)?;
        let upper = copy_u32s(next(sections.upper), upper_lists * (1 + m))?;
        let mut ranges = copy_f32s(next(sections.ranges), 2 * dim)?;
        let scale = ranges.split_off(dim);
        let codes = LineBytes::view(region, next(sections.codes), n * dim).map_err(misfit)?;
        let norms_len = if metric == super::Metric::L2 { n } else { 0 };
        let norms = copy_f32s(next(sections.norms), norms_len)?;
        let residuals = copy_f32s(next(sections.residuals), n)?;
        let largest = f32::from_bits(word(56));
        let entry = match (n, word(28)) {
            (0, _) => None,
            (_, id) => Some(Entry {
                id,
                level: u8::try_from(word(32)).map_err(|_| field("entry level", word(32).into()))?,
            }),
        };
        let params = HnswParams {
            m,
            ef_construction: word(24) as usize,
            seed: long(40),
        };
        let codes = Codes::with_norms(metric, ranges, scale, codes, norms);
        let graph = Graph::assemble(metric, dim, params, entry, levels, layer0, upper, codes)?;
        Ok(segment.with_parts(graph, Residuals::from_parts(residuals, largest))?)
    }
}

/// Zeros up to the next cache line after `written` bytes.
fn pad(written: usize, put: &mut dyn FnMut(&[u8])) {
    const ZEROS: [u8; LINE] = [0; LINE];
    put(&ZEROS[..written.next_multiple_of(LINE) - written]);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: failing loudly is the point

    use super::*;
    use crate::index::planner::{SearchOptions, Strategy};
    use crate::index::Metric;
    use roaring::RoaringBitmap;

    /// Bytes starting on a cache line, as a mapping starts on a page.
    struct Lines(Vec<Block>, usize);

    #[derive(Clone, Copy)]
    #[repr(C, align(64))]
    struct Block([u8; 64]);

    impl Region for Lines {
        fn bytes(&self) -> &[u8] {
            // SAFETY (test): the blocks viewed as their first `self.1` bytes.
            unsafe { std::slice::from_raw_parts(self.0.as_ptr().cast(), self.1) }
        }
    }

    fn region(bytes: &[u8]) -> Arc<dyn Region> {
        let mut blocks = vec![Block([0; 64]); bytes.len().div_ceil(64)];
        for (block, chunk) in blocks.iter_mut().zip(bytes.chunks(64)) {
            block.0[..chunk.len()].copy_from_slice(chunk);
        }
        Arc::new(Lines(blocks, bytes.len()))
    }

    fn region_of(segment: &SegmentIndex) -> Arc<dyn Region> {
        let mut bytes = Vec::new();
        segment
            .write_flat(&mut |b: &[u8]| {
                bytes.extend_from_slice(b);
                Ok::<_, ()>(())
            })
            .expect("resident")
            .expect("written");
        region(&bytes)
    }

    fn segment(metric: Metric, graph: bool) -> SegmentIndex {
        let rows: Vec<f32> = (0..300 * 12)
            .map(|i| ((i * 37) % 101) as f32 - 50.0)
            .collect();
        let mut segment = SegmentIndex::new(7, 12, metric, rows).expect("segment");
        if graph {
            segment.build_graph(HnswParams::default(), &|_| {});
        }
        segment
    }

    #[test]
    fn a_segment_read_back_from_its_flat_layout_is_the_same_and_answers_the_same() {
        for metric in [Metric::Cosine, Metric::Dot, Metric::L2] {
            for graph in [false, true] {
                let built = segment(metric, graph);
                let region = region_of(&built);
                let mapped = SegmentIndex::from_flat(&region, 0).expect("read back");
                assert!(mapped.is_mapped() && !built.is_mapped());
                assert_eq!((mapped.base(), mapped.rows()), (built.base(), built.rows()));
                assert_eq!(mapped.graph(), built.graph());
                assert_eq!(mapped.residuals(), built.residuals());
                let visible: RoaringBitmap = (7..307).filter(|i| i % 3 != 0).collect();
                for strategy in [Strategy::Exact, Strategy::Auto] {
                    let options = SearchOptions {
                        k: 10,
                        ef: Some(64),
                        strategy,
                    };
                    let query: Vec<f32> = (0..12).map(|j| j as f32 - 5.5).collect();
                    let got = mapped
                        .search_with(&query, &visible, options)
                        .expect("search");
                    let want = built
                        .search_with(&query, &visible, options)
                        .expect("search");
                    assert_eq!(got.0, want.0, "{metric:?}, graph {graph}, {strategy:?}");
                }
            }
        }
    }

    #[test]
    fn a_damaged_descriptor_or_a_short_region_is_refused() {
        let built = segment(Metric::L2, true);
        let whole = region_of(&built);
        let bytes = whole.bytes().to_vec();
        let short = region(&bytes[..bytes.len() - 64]);
        assert_eq!(
            SegmentIndex::from_flat(&short, 0).err(),
            Some(FlatError::Misfit)
        );
        let mut layout = bytes.clone();
        layout[0] = 9;
        assert!(matches!(
            SegmentIndex::from_flat(&region(&layout), 0),
            Err(FlatError::Field {
                field: "layout",
                ..
            })
        ));
        // A link to a node that does not exist: refused, never searched.
        let mut links = bytes.clone();
        let at = DESCRIPTOR + (300 * 12 * 4) + 320 + 4;
        links[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            SegmentIndex::from_flat(&region(&links), 0),
            Err(FlatError::Graph(_))
        ));
    }
}
