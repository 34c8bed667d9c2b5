//! Gathered copies of small visible sets.
//!
//! A restrictive ACL leaves a few thousand visible rows scattered through a segment, each
//! on its own pages: the exact scan then waits on memory, not arithmetic (measured on
//! 200k x 384: 600-700 µs a query over scattered rows, 200 µs over the same rows copied
//! together). The same caller asks again and again, so a segment keeps the rows of its
//! few most recent small visible sets copied into one contiguous block and scans that.
//! A hit is decided by comparing the visible ids themselves, never a hash: a stale or
//! colliding entry could otherwise return a hidden row.
//!
//! A copy larger than half a last-level cache holds the rows as IEEE half floats, half the
//! bytes of the f32 rows (that scan is memory-bound: 10 MiB of f32 a query at 20,000 x
//! 128); a smaller one keeps f32, whose scan is bound by arithmetic instead. The answer
//! stays exact: every row whose approximate score is within twice a proven error bound of
//! the k-th best is scored again in f32 from the segment, which must include the true top
//! k (see [`Gathered::scan`]).

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use roaring::RoaringBitmap;

use super::exact::{exact_search, Neighbor, TopK};
use super::metric::Metric;
use super::vectors::VectorSet;

/// Sets gathered per segment at most; the least recently used is dropped first.
const ENTRIES: usize = 8;
/// A visible set is gathered only when it is at most this share of the segment's rows
/// (1/8): a tenant's tenth of a corpus, scattered, is the scan that waits longest on
/// memory (measured on 200k x 128, 20,000 visible: 2.5 ms a query in place, 0.68 ms
/// gathered).
const MAX_SHARE_SHIFT: u32 = 3;
/// The rows held over all sets at most, as a share of the segment's rows (1/4): at most an
/// eighth of the segment's f32 bytes in half floats, plus the f32 sets of at most
/// [`FULL_MAX_BYTES`] each.
const HELD_SHARE_SHIFT: u32 = 2;

/// The visible rows of one visible set, copied together in id order (see [`Blocks`]) in
/// blocks of [`LANES`] rows laid out dimension-major (block `b`, dimension `d`, lane `l` at
/// `(b * dim + d) * LANES + l`): one 256-bit register holds one dimension of eight rows,
/// so a block is scored with vertical adds only (no per-row horizontal sum or call).
#[derive(Debug)]
struct Gathered {
    /// The global ids gathered (all within the segment): the cache key.
    visible: RoaringBitmap,
    /// Local ids (row numbers in the segment), ascending.
    ids: Vec<u32>,
    /// `ceil(ids.len() / LANES)` blocks; lanes past the last row are zero.
    blocks: Blocks,
    /// Per row, its squared L2 norm in f32 (for L2 scores from dot products).
    sq_norms: Vec<f32>,
    /// The largest row norm: scales the rounding error of every dot product.
    max_norm: f32,
}

/// The gathered values. Half floats halve the bytes a scan streams from memory, but each
/// costs a conversion (F16C), and a set that stays in cache is bound by those: 2,000 rows
/// x 128 took 56 µs a query as halves on the 2-core AMD machine of 2026-12-03, behind
/// numpy's 70 µs over its f32 copy. Copies of at most [`FULL_MAX_BYTES`] keep f32.
#[derive(Debug)]
enum Blocks {
    Half(Vec<u16>),
    Full(Vec<f32>),
}

/// The largest copy kept in f32: half of an 8 MiB last-level cache, so the copy stays
/// cached between queries. At 1M x 384, 1,000 visible rows (1.5 MiB) as halves answered
/// 12,434 queries a second against numpy's 13,378 over its f32 copy.
const FULL_MAX_BYTES: usize = 4 << 20;

/// Rows per block.
const LANES: usize = 8;
/// Values a half float holds with a relative rounding error of at most 2^-11; larger ones
/// (beyond f16's range) keep a set from being gathered.
const F16_MAX: f32 = 65504.0;

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
    /// `visible`, scanning the gathered copy of that set, gathering it first on a miss
    /// (rows with values beyond half-float range are scanned in place instead).
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
                let Some(set) = Gathered::new(vectors, base, key.clone()) else {
                    return exact_search(vectors, base, query, k, visible);
                };
                let set = Arc::new(set);
                let mut entries = self.entries.lock();
                if !entries.iter().any(|e| e.visible == set.visible) {
                    entries.push_front(set.clone());
                    let budget = vectors.len() >> HELD_SHARE_SHIFT;
                    let mut held = 0;
                    // The newest set always stays (`admits` keeps it within the budget).
                    let keep = entries
                        .iter()
                        .take(ENTRIES)
                        .take_while(|e| {
                            held += e.ids.len();
                            held <= budget
                        })
                        .count()
                        .max(1);
                    entries.truncate(keep);
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
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().len()
    }
}

impl Gathered {
    /// The copy of `visible`'s rows, or `None` when a value is not finite or beyond
    /// half-float range.
    fn new(vectors: VectorSet<'_>, base: u32, visible: RoaringBitmap) -> Option<Self> {
        let ids: Vec<u32> = visible.iter().map(|id| id - base).collect();
        let dim = vectors.dim();
        let mut sq_norms = Vec::with_capacity(ids.len());
        let blocks = if ids.len() * dim * std::mem::size_of::<f32>() <= FULL_MAX_BYTES {
            Blocks::Full(fill(vectors, &ids, &mut sq_norms, Some)?)
        } else {
            Blocks::Half(fill(vectors, &ids, &mut sq_norms, |x| {
                (x.abs() <= F16_MAX).then(|| half::f16::from_f32(x).to_bits())
            })?)
        };
        let max_norm = sq_norms.iter().fold(0.0f32, |m, &n| m.max(n)).sqrt();
        Some(Gathered {
            visible,
            ids,
            blocks,
            sq_norms,
            max_norm,
        })
    }

    /// The exact best `k`. Every row gets an approximate score `a` from the half floats;
    /// with `e` a bound on `|a - s|` (`s` the f32 score every other path computes), the k
    /// rows of best `a` have `s >= T - e` (`T` the k-th best `a`), so the true k-th best
    /// `s` is at least `T - e`, and every row of the true top k has `a >= T - 2e`. Those
    /// rows, usually a few more than k, are scored again in f32 from the segment.
    fn scan(&self, vectors: VectorSet<'_>, base: u32, query: &[f32], k: usize) -> Vec<Neighbor> {
        let l2 = vectors.metric() == Metric::L2;
        let q_sq: f32 = query.iter().map(|q| q * q).sum();
        let mut approx = Vec::with_capacity(self.ids.len());
        match &self.blocks {
            Blocks::Half(blocks) => dots(blocks, half_kernel(), query, &mut approx),
            Blocks::Full(blocks) => dots(blocks, full_kernel(), query, &mut approx),
        }
        approx.truncate(self.ids.len());
        for (a, &sq) in approx.iter_mut().zip(&self.sq_norms) {
            // L2 as in the row kernel, up to rounding: -(|q|^2 - 2 q.x + |x|^2).
            let score = if l2 { 2.0 * *a - q_sq - sq } else { *a };
            *a = if score.is_nan() {
                f32::NEG_INFINITY
            } else {
                score
            };
        }
        let bound = self.error_bound(query, q_sq, l2);
        let floor = match k {
            0 => return Vec::new(),
            k if k >= approx.len() => f32::NEG_INFINITY,
            k => kth_best(&approx, k) - 2.0 * bound,
        };
        let scorer = vectors.scorer();
        let mut top = TopK::new(k);
        for (&id, &a) in self.ids.iter().zip(&approx) {
            // A non-finite bound (huge values) keeps every row: slow, still exact.
            if a >= floor || !floor.is_finite() {
                top.push(Neighbor {
                    id: base + id,
                    score: scorer.score(query, vectors.row(id)),
                });
            }
        }
        top.into_sorted()
    }

    /// A bound on `|approximate - f32 score|` for every row. Half-float rounding moves each
    /// value by at most `2^-11 |x|` (normal) or `2^-25` (subnormal), so a dot product by at
    /// most `2^-11 |q| |x| + 2^-25 |q|_1` (f32 copies: no such term); the two f32 sums
    /// (block kernel, row kernel) each round by at most `dim * 2^-24` of their absolute
    /// terms. L2 scores add the rounding of the norms. The result is doubled for margin.
    fn error_bound(&self, query: &[f32], q_sq: f32, l2: bool) -> f32 {
        let dim = query.len() as f32;
        let q_norm = q_sq.sqrt();
        let q_l1: f32 = query.iter().map(|q| q.abs()).sum();
        let gamma = dim * f32::EPSILON;
        let products = q_norm * self.max_norm;
        let rounding = match self.blocks {
            Blocks::Half(_) => products * 2f32.powi(-11) + q_l1 * 2f32.powi(-25),
            Blocks::Full(_) => 0.0,
        };
        let dot = rounding + products * gamma;
        let bound = if l2 {
            // 2 q.x carries twice the dot error; |q|^2, |x|^2 and the row kernel's
            // sum of squares (at most (|q| + |x|)^2) round by gamma of their size.
            let reach = q_norm + self.max_norm;
            2.0 * dot + gamma * (q_sq + self.max_norm * self.max_norm + reach * reach)
        } else {
            dot + gamma * products
        };
        2.0 * bound
    }
}

/// The rows `ids` of `vectors` in blocks of [`LANES`] rows, dimension-major, each value
/// stored as `store` makes it, with each row's squared norm pushed to `sq_norms`; `None`
/// when `store` refuses a value.
fn fill<T: Copy + Default>(
    vectors: VectorSet<'_>,
    ids: &[u32],
    sq_norms: &mut Vec<f32>,
    store: impl Fn(f32) -> Option<T>,
) -> Option<Vec<T>> {
    let dim = vectors.dim();
    let scorer = super::distance::Scorer::new(Metric::Dot);
    let mut blocks = vec![T::default(); ids.len().div_ceil(LANES) * dim * LANES];
    for (block, rows) in blocks.chunks_exact_mut(dim * LANES).zip(ids.chunks(LANES)) {
        for (lane, &id) in rows.iter().enumerate() {
            let row = vectors.row(id);
            sq_norms.push(scorer.score(row, row));
            for (d, &x) in row.iter().enumerate() {
                block[d * LANES + lane] = store(x)?;
            }
        }
    }
    Some(blocks)
}

/// Appends to `out` the dot products of every row of `blocks` with `query`, block by block.
fn dots<T>(blocks: &[T], kernel: Kernel<T>, query: &[f32], out: &mut Vec<f32>) {
    for block in blocks.chunks_exact(query.len() * LANES) {
        out.extend_from_slice(&kernel(block, query));
    }
}

/// The `k`-th best of `scores` (`0 < k <= scores.len()`): one compare per score against
/// the best `k` held, where a select would copy them all.
fn kth_best(scores: &[f32], k: usize) -> f32 {
    let mut top = TopK::new(k);
    for (id, &score) in (0u32..).zip(scores) {
        if score > top.threshold() {
            top.push(Neighbor { id, score });
        }
    }
    top.threshold()
}

/// Dot products of the eight rows of a block with a query.
type Kernel<T> = fn(&[T], &[f32]) -> [f32; LANES];

/// The half-float block kernel for this CPU.
fn half_kernel() -> Kernel<u16> {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
    {
        return avx2::dot_half;
    }
    portable::dot_half
}

/// The f32 block kernel for this CPU.
fn full_kernel() -> Kernel<f32> {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        return avx2::dot_full;
    }
    portable::dot_full
}

/// The block kernels in plain Rust.
mod portable {
    use super::LANES;

    pub(super) fn dot_half(block: &[u16], query: &[f32]) -> [f32; LANES] {
        dot(block, query, |x| half::f16::from_bits(x).to_f32())
    }

    pub(super) fn dot_full(block: &[f32], query: &[f32]) -> [f32; LANES] {
        dot(block, query, |x| x)
    }

    fn dot<T: Copy>(block: &[T], query: &[f32], value: impl Fn(T) -> f32) -> [f32; LANES] {
        let mut acc = [0.0; LANES];
        for (column, &q) in block.chunks_exact(LANES).zip(query) {
            for (a, &x) in acc.iter_mut().zip(column) {
                *a += value(x) * q;
            }
        }
        acc
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::LANES;

    /// Independent accumulators (dimensions taken round robin): an FMA's latency is four
    /// times its issue interval.
    const CHAINS: usize = 4;

    pub(super) fn dot_half(block: &[u16], query: &[f32]) -> [f32; LANES] {
        // SAFETY: installed by `half_kernel` only after AVX2, FMA and F16C were detected.
        unsafe { dot_half_impl(block, query) }
    }

    pub(super) fn dot_full(block: &[f32], query: &[f32]) -> [f32; LANES] {
        // SAFETY: installed by `full_kernel` only after AVX2 and FMA were detected.
        unsafe { dot_full_impl(block, query) }
    }

    /// The body of both kernels: `$load(d)` reads dimension `d` of the eight rows.
    macro_rules! block_dot {
        ($block:ident, $query:ident, |$d:ident| $load:expr) => {{
            let dim = $query.len().min($block.len() / LANES);
            let mut acc = [_mm256_setzero_ps(); CHAINS];
            let mut step = |at: usize, chain: usize| {
                // SAFETY: `at < dim`, so the 8 values at `at * LANES` are within the block
                // and `query[at]` within the query.
                let (x, q) = unsafe {
                    let $d = at;
                    ($load, _mm256_broadcast_ss(&*$query.as_ptr().add(at)))
                };
                acc[chain] = _mm256_fmadd_ps(x, q, acc[chain]);
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
            out
        }};
    }

    /// # Safety
    /// The CPU must support AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn dot_half_impl(block: &[u16], query: &[f32]) -> [f32; LANES] {
        block_dot!(block, query, |d| _mm256_cvtph_ps(_mm_loadu_si128(
            block.as_ptr().add(d * LANES).cast()
        )))
    }

    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn dot_full_impl(block: &[f32], query: &[f32]) -> [f32; LANES] {
        block_dot!(block, query, |d| _mm256_loadu_ps(
            block.as_ptr().add(d * LANES)
        ))
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
    fn block_kernels_agree_with_the_row_kernel() {
        // Odd dimension: exercises the remainder after the four accumulator chains. The
        // values (quarters within +-3) are exact in half floats.
        let dim = 7;
        let data: Vec<f32> = (0..20 * dim)
            .map(|i| ((i * 37) % 23) as f32 * 0.25 - 2.0)
            .collect();
        let q: Vec<f32> = (0..dim).map(|i| i as f32 * 0.5 - 1.0).collect();
        let vs = VectorSet::new(&data, dim, Metric::Dot).unwrap();
        let ids: Vec<u32> = (0..20).collect();
        let half = fill(vs, &ids, &mut Vec::new(), |x| {
            Some(half::f16::from_f32(x).to_bits())
        });
        let full = fill(vs, &ids, &mut Vec::new(), Some);
        let (half, full) = (half.unwrap(), full.unwrap());
        let scorer = vs.scorer();
        let check = |b: usize, got: [f32; LANES]| {
            for (lane, &got) in got.iter().enumerate() {
                let row = b * LANES + lane;
                if row < 20 {
                    let want = scorer.score(&q, vs.row(row as u32));
                    assert!((got - want).abs() < 1e-4, "row {row}: {got} vs {want}");
                }
            }
        };
        for kernel in [half_kernel(), portable::dot_half as Kernel<u16>] {
            for (b, block) in half.chunks_exact(dim * LANES).enumerate() {
                check(b, kernel(block, &q));
            }
        }
        for kernel in [full_kernel(), portable::dot_full as Kernel<f32>] {
            for (b, block) in full.chunks_exact(dim * LANES).enumerate() {
                check(b, kernel(block, &q));
            }
        }
    }

    #[test]
    fn differences_below_half_float_precision_still_rank_exactly() {
        // 60 rows equal in half floats, apart in f32 by 1e-5 on one coordinate.
        let dim = 4;
        let data: Vec<f32> = (0..60)
            .flat_map(|i| [1.0 + i as f32 * 1e-5, 2.0, 3.0, 4.0])
            .collect();
        for metric in [Metric::Dot, Metric::L2] {
            let vs = VectorSet::new(&data, dim, metric).unwrap();
            let cache = GatherCache::default();
            let visible: RoaringBitmap = (0..60).collect();
            for q in [
                [1.0, 0.0, 0.0, 0.0],
                [-1.0, 0.5, 0.0, 0.0],
                [2.0, 2.0, 3.0, 4.0],
            ] {
                let got = cache.search(vs, 0, &q, 3, &visible);
                assert_eq!(
                    got,
                    exact_search(vs, 0, &q, 3, &visible),
                    "{metric:?} {q:?}"
                );
            }
            assert_eq!(cache.len(), 1);
        }
    }

    #[test]
    fn values_beyond_half_float_range_keep_only_half_float_sets_in_place() {
        // Rows of 2 floats: sets of more than FULL_MAX_BYTES / 8 rows are half floats.
        let large = FULL_MAX_BYTES / 8 + 1;
        for (count, held) in [(34, 1), (large, 0)] {
            let mut data = rows(8 * count, 2);
            data[16] = 1e6;
            let vs = VectorSet::new(&data, 2, Metric::L2).unwrap();
            let cache = GatherCache::default();
            let visible: RoaringBitmap = (0..8 * count as u32).step_by(8).collect();
            let got = cache.search(vs, 0, &[1e6, 0.0], 4, &visible);
            assert_eq!(got, exact_search(vs, 0, &[1e6, 0.0], 4, &visible));
            assert_eq!(got[0].id, 8, "the row holding 1e6");
            assert_eq!(cache.len(), held, "{count} rows");
        }
    }

    #[test]
    fn admits_only_small_shares() {
        assert!(GatherCache::admits(125, 1000));
        assert!(!GatherCache::admits(126, 1000));
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
    fn large_sets_share_a_budget_of_a_quarter_of_the_rows() {
        let data = rows(1000, 2);
        let vs = VectorSet::new(&data, 2, Metric::L2).unwrap();
        let cache = GatherCache::default();
        // Three sets of 1/8 of the rows each: the third pushes the first out.
        let set = |start: u32| (start..1000).step_by(8).collect::<RoaringBitmap>();
        for start in 0..3 {
            let got = cache.search(vs, 0, &[1.0, -2.0], 5, &set(start));
            assert_eq!(got, exact_search(vs, 0, &[1.0, -2.0], 5, &set(start)));
        }
        assert_eq!(cache.len(), 2);
        assert!(cache.find(&set(0)).is_none());
        assert!(cache.find(&set(1)).is_some() && cache.find(&set(2)).is_some());
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
