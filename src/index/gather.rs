//! Gathered copies of small visible sets.
//!
//! A restrictive ACL leaves a few thousand visible rows scattered through a segment, each
//! on its own pages: the exact scan then waits on memory, not arithmetic (measured on
//! 200k x 384: 600-700 µs a query over scattered rows, 200 µs over the same rows copied
//! together). The same caller asks again and again, so a segment keeps the rows of its
//! few most recent small visible sets copied into one contiguous block and scans that.
//! A hit is decided by comparing the visible ids themselves, never a hash: a stale or
//! colliding entry could otherwise return a hidden row.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use roaring::RoaringBitmap;

use super::exact::{Neighbor, TopK};
use super::vectors::VectorSet;
use super::Metric;

/// Sets gathered per segment; the least recently used is dropped first.
const ENTRIES: usize = 8;
/// A visible set is gathered only when it is at most this share of the segment's rows
/// (1/32), so the cache holds at most `ENTRIES / 32` = a quarter of the segment's bytes.
const MAX_SHARE_SHIFT: u32 = 5;

/// The visible rows of one visible set, copied together in id order, in blocks of
/// [`LANES`] rows laid out dimension-major (block `b`, dimension `d`, lane `l` at
/// `(b * dim + d) * LANES + l`): one 256-bit register holds one dimension of eight rows,
/// so a block is scored with vertical adds only (no per-row horizontal sum or call).
#[derive(Debug)]
struct Gathered {
    /// The global ids gathered (all within the segment): the cache key.
    visible: RoaringBitmap,
    /// Local ids (row numbers in the segment), ascending.
    ids: Vec<u32>,
    /// `ceil(ids.len() / LANES)` blocks; lanes past the last row are zero.
    blocks: Vec<f32>,
}

/// Rows per block.
const LANES: usize = 8;

/// A segment's gathered sets, most recently used first. Safe to share between threads:
/// the lock is held only to look up or insert, never during a scan.
#[derive(Debug, Default)]
pub(crate) struct GatherCache {
    entries: Mutex<VecDeque<Arc<Gathered>>>,
}

impl Clone for GatherCache {
    /// A clone starts empty: the cache is derived data.
    fn clone(&self) -> Self {
        GatherCache::default()
    }
}

impl GatherCache {
    /// Whether a visible set of `count` rows in a segment of `len` rows is worth keeping.
    pub(crate) fn admits(count: u64, len: usize) -> bool {
        count > 0 && count << MAX_SHARE_SHIFT <= len as u64
    }

    /// Exact top-`k` of the rows of `vectors` (global ids from `base`) whose id is in
    /// `visible`, scanning the gathered copy of that set, gathering it first on a miss.
    /// The query must already be prepared for the metric (unit length for cosine).
    pub(crate) fn search(
        &self,
        vectors: VectorSet<'_>,
        base: u32,
        query: &[f32],
        k: usize,
        visible: &RoaringBitmap,
    ) -> Vec<Neighbor> {
        let end = base.saturating_add(vectors.len() as u32);
        // A visible set within the segment (the usual single-segment case) is its own key;
        // comparing bitmaps is a few memcmps where listing the ids walks every one.
        let within =
            visible.min().is_none_or(|id| id >= base) && visible.max().is_none_or(|id| id < end);
        let part;
        let key = if within {
            visible
        } else {
            part = visible.range(base..end).collect::<RoaringBitmap>();
            &part
        };
        let set = match self.find(key) {
            Some(set) => set,
            None => {
                // Gathered outside the lock; a thread that gathered the same set meanwhile
                // keeps its entry, so a set is held once.
                let set = Arc::new(Gathered::new(vectors, base, key.clone()));
                let mut entries = self.entries.lock();
                if !entries.iter().any(|e| e.visible == set.visible) {
                    entries.push_front(set.clone());
                    entries.truncate(ENTRIES);
                }
                set
            }
        };
        set.scan(vectors, base, query, k)
    }

    /// The entry holding exactly the ids of `key`, moved to the front. Equal sets held in
    /// different container layouts compare unequal: a miss, never a wrong hit.
    fn find(&self, key: &RoaringBitmap) -> Option<Arc<Gathered>> {
        let mut entries = self.entries.lock();
        let at = entries.iter().position(|e| e.visible == *key)?;
        let set = entries.remove(at)?;
        entries.push_front(set.clone());
        Some(set)
    }

    /// Number of sets held.
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().len()
    }
}

impl Gathered {
    fn new(vectors: VectorSet<'_>, base: u32, visible: RoaringBitmap) -> Self {
        let ids: Vec<u32> = visible.iter().map(|id| id - base).collect();
        let dim = vectors.dim();
        let mut blocks = vec![0.0; ids.len().div_ceil(LANES) * dim * LANES];
        for (block, rows) in blocks.chunks_exact_mut(dim * LANES).zip(ids.chunks(LANES)) {
            for (lane, &id) in rows.iter().enumerate() {
                for (d, &x) in vectors.row(id).iter().enumerate() {
                    block[d * LANES + lane] = x;
                }
            }
        }
        Gathered {
            visible,
            ids,
            blocks,
        }
    }

    /// The best `k`: the block kernel ranks every row, then the best `k + RESCORE_MARGIN`
    /// are scored again with the row kernel, so scores (and, but for rounding ties, the
    /// order) are exactly those of every other path.
    fn scan(&self, vectors: VectorSet<'_>, base: u32, query: &[f32], k: usize) -> Vec<Neighbor> {
        let dim = vectors.dim();
        let score = block_kernel(vectors.metric());
        let mut candidates = TopK::new(k.saturating_add(RESCORE_MARGIN));
        let mut threshold = candidates.threshold();
        for (block, ids) in self
            .blocks
            .chunks_exact(dim * LANES)
            .zip(self.ids.chunks(LANES))
        {
            let scores = score(block, query);
            for (&id, &score) in ids.iter().zip(&scores) {
                // As `Scorer::score`: NaN (from non-finite input) ranks last.
                let score = if score.is_nan() {
                    f32::NEG_INFINITY
                } else {
                    score
                };
                if score >= threshold {
                    candidates.push(Neighbor { id, score });
                    threshold = candidates.threshold();
                }
            }
        }
        let scorer = vectors.scorer();
        let mut top = TopK::new(k);
        for cand in candidates.into_sorted() {
            top.push(Neighbor {
                id: base + cand.id,
                score: scorer.score(query, vectors.row(cand.id)),
            });
        }
        top.into_sorted()
    }
}

/// Candidates beyond `k` re-scored: the block kernel sums in another order than the row
/// kernel, so scores differ in the last bits and a near tie at the k-th place may swap.
const RESCORE_MARGIN: usize = 8;

/// Scores of the eight rows of a block against a query (higher is better).
type Kernel = fn(&[f32], &[f32]) -> [f32; LANES];

/// The block kernel for `metric` on this CPU.
fn block_kernel(metric: Metric) -> Kernel {
    let l2 = metric == Metric::L2;
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        return if l2 { avx2::neg_l2_sq } else { avx2::dot };
    }
    if l2 {
        portable::neg_l2_sq
    } else {
        portable::dot
    }
}

/// Block kernels in plain Rust: lane arrays the compiler vectorises.
mod portable {
    use super::LANES;

    pub(super) fn dot(block: &[f32], query: &[f32]) -> [f32; LANES] {
        let mut acc = [0.0; LANES];
        for (column, &q) in block.chunks_exact(LANES).zip(query) {
            for (a, &x) in acc.iter_mut().zip(column) {
                *a += x * q;
            }
        }
        acc
    }

    pub(super) fn neg_l2_sq(block: &[f32], query: &[f32]) -> [f32; LANES] {
        let mut acc = [0.0; LANES];
        for (column, &q) in block.chunks_exact(LANES).zip(query) {
            for (a, &x) in acc.iter_mut().zip(column) {
                let d = x - q;
                *a += d * d;
            }
        }
        acc.map(|a| -a)
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::LANES;

    /// Independent accumulators (dimensions taken round robin): an FMA's latency is four
    /// times its issue interval.
    const CHAINS: usize = 4;

    pub(super) fn dot(block: &[f32], query: &[f32]) -> [f32; LANES] {
        // SAFETY: installed by `block_kernel` only after AVX2 and FMA were detected.
        unsafe { block_impl::<false>(block, query) }
    }

    pub(super) fn neg_l2_sq(block: &[f32], query: &[f32]) -> [f32; LANES] {
        // SAFETY: as in `dot`.
        unsafe { block_impl::<true>(block, query) }
    }

    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn block_impl<const L2: bool>(block: &[f32], query: &[f32]) -> [f32; LANES] {
        let dim = query.len().min(block.len() / LANES);
        let mut acc = [_mm256_setzero_ps(); CHAINS];
        let mut step = |d: usize, chain: usize| {
            // SAFETY: `d < dim`, so the 8 floats at `d * LANES` are within `block` and
            // `query[d]` within `query`.
            let (x, q) = unsafe {
                (
                    _mm256_loadu_ps(block.as_ptr().add(d * LANES)),
                    _mm256_broadcast_ss(&*query.as_ptr().add(d)),
                )
            };
            acc[chain] = if L2 {
                let diff = _mm256_sub_ps(x, q);
                _mm256_fmadd_ps(diff, diff, acc[chain])
            } else {
                _mm256_fmadd_ps(x, q, acc[chain])
            };
        };
        let whole = dim - dim % CHAINS;
        for d in (0..whole).step_by(CHAINS) {
            for chain in 0..CHAINS {
                step(d + chain, chain);
            }
        }
        for d in whole..dim {
            step(d, 0);
        }
        let sum = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        let mut out = [0.0; LANES];
        // SAFETY: `out` holds exactly 8 floats.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr(), sum) };
        if L2 {
            out.map(|a| -a)
        } else {
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::exact_search;

    fn rows(n: usize, dim: usize) -> Vec<f32> {
        (0..n * dim)
            .map(|i| ((i * 7919) % 101) as f32 - 50.0)
            .collect()
    }

    #[test]
    fn block_kernels_agree_with_the_row_kernels() {
        // Odd dimension: exercises the remainder after the four accumulator chains.
        let dim = 7;
        let data: Vec<f32> = (0..20 * dim)
            .map(|i| ((i * 37) % 23) as f32 * 0.25 - 2.0)
            .collect();
        let q: Vec<f32> = (0..dim).map(|i| i as f32 * 0.5 - 1.0).collect();
        for metric in [Metric::Dot, Metric::L2] {
            let vs = VectorSet::new(&data, dim, metric).unwrap();
            let set = Gathered::new(vs, 0, (0..20).collect());
            let scorer = vs.scorer();
            for kernel in [block_kernel(metric), portable_kernel(metric)] {
                for (b, block) in set.blocks.chunks_exact(dim * LANES).enumerate() {
                    let scores = kernel(block, &q);
                    for (lane, &got) in scores.iter().enumerate() {
                        let row = b * LANES + lane;
                        if row < 20 {
                            let want = scorer.score(&q, vs.row(row as u32));
                            assert!(
                                (got - want).abs() < 1e-4,
                                "{metric:?} row {row}: {got} vs {want}"
                            );
                        }
                    }
                }
            }
        }
    }

    fn portable_kernel(metric: Metric) -> Kernel {
        match metric {
            Metric::L2 => portable::neg_l2_sq,
            _ => portable::dot,
        }
    }

    #[test]
    fn admits_only_small_shares() {
        assert!(GatherCache::admits(31, 1000));
        assert!(!GatherCache::admits(32, 1000));
        assert!(!GatherCache::admits(0, 1000));
    }

    #[test]
    fn gathered_scan_equals_the_exact_scan_and_hits_reuse_the_copy() {
        let data = rows(3000, 8);
        let vs = VectorSet::new(&data, 8, Metric::L2).unwrap();
        let cache = GatherCache::default();
        let a: RoaringBitmap = (100..3100).step_by(37).collect();
        let b: RoaringBitmap = (100..3100).step_by(41).collect();
        let q = [3.0, -1.0, 0.5, 7.0, 0.0, 2.0, -4.0, 1.0];
        // Ids of other segments, below and above this one's, are no part of the key.
        let mut wider = a.clone();
        wider.extend([0, 7, 99, 3100, 5000]);
        for visible in [&a, &b, &a, &wider] {
            let got = cache.search(vs, 100, &q, 10, visible);
            assert_eq!(got, exact_search(vs, 100, &q, 10, visible));
        }
        assert_eq!(
            cache.len(),
            2,
            "the third and fourth searches reused the first copy"
        );
    }

    #[test]
    fn threads_searching_one_set_share_one_copy() {
        let data = rows(4000, 16);
        let vs = VectorSet::new(&data, 16, Metric::L2).unwrap();
        let cache = GatherCache::default();
        let visible: RoaringBitmap = (0..4000).step_by(50).collect();
        std::thread::scope(|scope| {
            for t in 0..4 {
                let (cache, visible) = (&cache, &visible);
                scope.spawn(move || {
                    for i in 0..20 {
                        let q: Vec<f32> = (0..16)
                            .map(|d| ((t * 31 + i * 7 + d) % 13) as f32)
                            .collect();
                        let got = cache.search(vs, 0, &q, 5, visible);
                        assert_eq!(got, exact_search(vs, 0, &q, 5, visible));
                    }
                });
            }
        });
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_set_differing_in_one_id_is_not_a_hit() {
        let data = rows(1000, 4);
        let vs = VectorSet::new(&data, 4, Metric::Dot).unwrap();
        let cache = GatherCache::default();
        let a: RoaringBitmap = [1, 5, 9, 13].into_iter().collect();
        let mut b = a.clone();
        b.remove(13);
        b.insert(14);
        let q = [1.0, 2.0, 3.0, 4.0];
        cache.search(vs, 0, &q, 4, &a);
        let got: Vec<u32> = cache
            .search(vs, 0, &q, 4, &b)
            .iter()
            .map(|n| n.id)
            .collect();
        assert!(got.contains(&14) && !got.contains(&13));
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn the_oldest_set_is_dropped_first() {
        let data = rows(1000, 2);
        let vs = VectorSet::new(&data, 2, Metric::L2).unwrap();
        let cache = GatherCache::default();
        let sets = ENTRIES as u32 + 3;
        for start in 0..sets {
            let visible: RoaringBitmap = (start..start + 10).collect();
            cache.search(vs, 0, &[0.0, 0.0], 3, &visible);
        }
        assert_eq!(cache.len(), ENTRIES);
        let held = |start: u32| cache.find(&(start..start + 10).collect()).is_some();
        assert!(!held(0) && !held(2));
        assert!(held(3) && held(sets - 1));
    }
}
