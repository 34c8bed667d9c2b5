//! The exact scan on the walk codes, for every segment with a graph.
//!
//! An f32 scan of a visible set streams 4 bytes a dimension from rows scattered through
//! the segment; the graph's 8-bit codes are a quarter of that, already in memory, and
//! with each row's distance from its code (`Residuals`, 4 bytes a row) a code score
//! bounds the exact score on both sides. The scan scores every visible code, drops the
//! rows whose upper bound is below the k-th best lower bound, then scores the rest
//! exactly, best upper bound first, and stops once the k-th best exact score beats every
//! unscored bound: the exact top k from a median of 11 to 20 exact scores at k = 10 on
//! the kit's clustered-128 at 1M (simulated in numpy, 100 queries, 0.1% to 10% visible).
//! A resident segment scores those rows in memory; a compressed one reads them from the
//! store's file (about 1.7 µs a row at 1M x 128), which is why it reads so few.

use roaring::RoaringBitmap;

use super::exact::{Neighbor, TopK};
use super::gather::GatherCache;
use super::hnsw::quant::{QuantQuery, Residuals};
use super::hnsw::Graph;

/// Where [`exact_coded`] gets the exact scores of the rows that may rank.
pub(crate) trait ExactScores {
    type Error;
    /// Starts fetching what scoring row `id` (a local id) will read.
    fn prefetch(&self, id: u32);
    /// The exact score of row `id`, as the f32 scan computes it.
    fn score(&mut self, id: u32) -> Result<f32, Self::Error>;
}

/// Rows scored ahead of the one being scored: they are scattered, a miss each.
const SCORE_AHEAD: usize = 4;

/// Exact top-`k` of the rows of `graph`'s segment (global ids from `base`) in `visible`,
/// scanning the codes (a gathered copy of them from `gathered` for a small set) and
/// asking `exact` only for the rows that may rank; with the number of rows it scored. The
/// query must be prepared for the metric (unit length for cosine).
#[allow(clippy::too_many_arguments)]
pub(crate) fn exact_coded<X: ExactScores>(
    graph: &Graph,
    residuals: &Residuals,
    gathered: Option<&GatherCache>,
    base: u32,
    query: &[f32],
    k: usize,
    visible: &RoaringBitmap,
    exact: &mut X,
) -> Result<(Vec<Neighbor>, usize), X::Error> {
    if k == 0 {
        return Ok((Vec::new(), 0));
    }
    let end = base.saturating_add(graph.len() as u32);
    let count = visible.range_cardinality(base..end);
    match gathered.filter(|_| GatherCache::admits(count, graph.len())) {
        Some(cache) => {
            let set = cache.get(&graph.codes, residuals, base, visible);
            let quant = QuantQuery::new(&set.ranges, query);
            let mut dots = Vec::new();
            quant.dots_interleaved(&set.interleaved, &mut dots);
            let (mut lower, mut upper) = (Vec::new(), Vec::new());
            quant.bounds_all(&dots, &set.residuals, &mut lower, &mut upper);
            best(lower, &upper, |row| set.ids[row], k, base, exact)
        }
        None => {
            let mut ids = Vec::with_capacity(count as usize);
            // `for_each` iterates the bitmap internally, several times faster than `next`.
            visible.range(base..end).for_each(|id| ids.push(id - base));
            let quant = QuantQuery::new(&graph.codes, query);
            let mut dots = Vec::new();
            quant.dots(&ids, &mut dots);
            let (lower, upper): (Vec<f32>, Vec<f32>) = ids
                .iter()
                .zip(&dots)
                .map(|(&id, &dot)| {
                    let (estimate, error) = quant.bounds_of(dot, id, residuals);
                    (estimate - error, estimate + error)
                })
                .unzip();
            best(lower, &upper, |row| ids[row], k, base, exact)
        }
    }
}

/// The exact best `k` of the rows whose exact scores lie within `lower` and `upper`, row
/// `i` being row `local(i)` of the segment.
fn best<X: ExactScores>(
    mut lower: Vec<f32>,
    upper: &[f32],
    local: impl Fn(usize) -> u32,
    k: usize,
    base: u32,
    exact: &mut X,
) -> Result<(Vec<Neighbor>, usize), X::Error> {
    // The k-th best lower bound: a row whose upper bound is below it cannot rank.
    let floor = match lower.len().checked_sub(k) {
        Some(rest) => *lower.select_nth_unstable_by(rest, f32::total_cmp).1,
        None => f32::NEG_INFINITY,
    };
    let mut open: Vec<(f32, u32)> = upper
        .iter()
        .enumerate()
        .filter(|&(_, &upper)| upper >= floor)
        .map(|(row, &upper)| (upper, local(row)))
        .collect();
    open.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut top = TopK::new(k);
    let mut scored = 0;
    open.iter()
        .take(SCORE_AHEAD)
        .for_each(|&(_, id)| exact.prefetch(id));
    for (i, &(upper, id)) in open.iter().enumerate() {
        // Ties may still rank by id, so only a strictly lower bound stops.
        if upper < top.threshold() {
            break;
        }
        if let Some(&(_, next)) = open.get(i + SCORE_AHEAD) {
            exact.prefetch(next);
        }
        scored += 1;
        top.push(Neighbor {
            id: base + id,
            score: exact.score(id)?,
        });
    }
    Ok((top.into_sorted(), scored))
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use super::*;
    use crate::index::distance::normalize;
    use crate::index::exact::exact_search;
    use crate::index::hnsw::HnswParams;
    use crate::index::{Metric, VectorSet};

    /// Rows in memory, counting the scores asked for.
    struct Counted<'a> {
        vectors: VectorSet<'a>,
        query: &'a [f32],
        asked: usize,
    }

    impl ExactScores for Counted<'_> {
        type Error = Infallible;
        fn prefetch(&self, _: u32) {}
        fn score(&mut self, id: u32) -> Result<f32, Infallible> {
            self.asked += 1;
            Ok(self
                .vectors
                .scorer()
                .score(self.query, self.vectors.row(id)))
        }
    }

    #[test]
    fn equals_the_exact_scan_and_reads_few_rows() {
        let (n, dim, base) = (2_000usize, 16usize, 100u32);
        // Pseudo-random clustered rows, with ties: every 50th row repeats the one before.
        let mut data: Vec<f32> = (0..n * dim)
            .map(|i| {
                let (row, d) = (i / dim, i % dim);
                let centre = ((row % 7) * 31 + d * 17) % 23;
                centre as f32 / 5.0 + ((i * 7919) % 997) as f32 / 2_000.0
            })
            .collect();
        for row in (50..n).step_by(50) {
            data.copy_within((row - 1) * dim..row * dim, row * dim);
        }
        for metric in [Metric::L2, Metric::Dot, Metric::Cosine] {
            let mut rows = data.clone();
            if metric == Metric::Cosine {
                rows.chunks_exact_mut(dim).for_each(|r| {
                    normalize(r);
                });
            }
            let vectors = VectorSet::new(&rows, dim, metric).unwrap();
            let mut graph = Graph::build(vectors, HnswParams::default(), &|_| {});
            let mut residuals = Residuals::default();
            graph.code_and_measure(&mut residuals, &rows);
            // Sets of a third to a sixth of the rows (scanned in place) and of a ninth to
            // an eighteenth (gathered: at most an eighth).
            for (seed, k, sparse) in [(1u32, 1usize, 1u32), (2, 10, 1), (3, 37, 1), (4, 0, 1)]
                .into_iter()
                .chain([(1, 1, 3), (2, 10, 3), (3, 5, 3), (4, 0, 3)])
            {
                let mut query: Vec<f32> = vectors.row(seed * 101).to_vec();
                query[seed as usize % dim] += 0.3;
                if metric == Metric::Cosine {
                    normalize(&mut query);
                }
                let visible: RoaringBitmap = (base..base + n as u32)
                    .filter(|id| id.wrapping_mul(2_654_435_761) % ((seed + 2) * sparse) == 0)
                    .chain([5, base + n as u32 + 3])
                    .collect();
                let count = visible.range_cardinality(base..base + n as u32) as usize;
                let mut source = Counted {
                    vectors,
                    query: &query,
                    asked: 0,
                };
                let want = exact_search(vectors, base, &query, k, &visible);
                let cache = GatherCache::default();
                // In place, gathered, then from the gathered copy kept.
                for gathered in [None, Some(&cache), Some(&cache)] {
                    source.asked = 0;
                    let Ok((got, read)) = exact_coded(
                        &graph,
                        &residuals,
                        gathered,
                        base,
                        &query,
                        k,
                        &visible,
                        &mut source,
                    );
                    assert_eq!(got, want, "{metric:?} k={k}");
                    assert_eq!(read, source.asked);
                    assert!(
                        read >= k.min(count) && read * 4 < count.max(4 * k + 40),
                        "{metric:?} k={k}: read {read} of {count}"
                    );
                }
                assert_eq!(
                    cache.len(),
                    usize::from(k > 0 && GatherCache::admits(count as u64, n)),
                    "{metric:?} k={k}: gathered when small"
                );
            }
        }
    }
}
