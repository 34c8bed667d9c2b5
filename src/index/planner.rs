//! Filtered search over one segment: picks the exact scan or a graph walk from the size of
//! the visible set, and always fills the results to `min(k, visible)`.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::convert::Infallible;

use roaring::RoaringBitmap;
use serde::{Deserialize, Serialize};

use super::coded::{exact_coded, ExactScores};
use super::distance::{normalize, prefetch_lines, Scorer};
use super::exact::{exact_search, Neighbor, TopK};
use super::gather::GatherCache;
use super::hnsw::quant::{QuantQuery, Residuals};
use super::hnsw::search::{AllVisible, Beam, BitmapFilter, Expand, Filter, Walk, WalkStats};
use super::hnsw::Graph;
use super::metric::Metric;
use super::vectors::{RowError, RowSource, VectorSet};
use super::visited::{with_scratch, Cand};

/// How a search was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchPath {
    /// Scan of the visible ids.
    Exact,
    /// Graph walk through hidden nodes, collecting visible ones.
    Graph,
    /// Graph walk that skips hidden nodes by looking two hops ahead.
    GraphTwoHop,
    /// A graph walk came up short (or too costly) and an exact scan finished the job.
    GraphTopUp,
}

/// What a search did, for logs and `--explain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchReport {
    /// How the segment was searched.
    pub path: SearchPath,
    /// Vector comparisons made (walk codes, f32 re-scores and scanned rows together).
    pub distances: usize,
    /// Of `distances`, the walk's candidates re-scored on f32 rows.
    #[serde(default)]
    pub rescored: usize,
    /// Link lists the layer-0 walk read (its expansions: one list each through hidden
    /// nodes, plus the hidden neighbours' lists for two hops).
    #[serde(default)]
    pub lists: usize,
    /// Visible ids in the segment.
    pub visible: u64,
}

// The cost model, in units of one exact-scan row (calibrated single-threaded on the
// kit's clustered-128 and normalized-384 at 200k rows, k = 10, M = 16):
// - an unfiltered walk at beam width `ef` computes about `10 * (ef + 16)` distances;
// - with a fraction `f` of nodes visible (spread over the graph) it computes about
//   `f^-0.6` times more: it must pass hidden nodes to collect `ef` visible ones;
// - one walk distance (a random code fetch, its links, heaps) costs about 2.5 rows of the
//   exact scan, which streams f32 rows in id order with prefetching;
// - a row of the scan on the walk codes (`coded.rs`) costs CODED_ROW_COST rows of that scan.

/// Walk distances per unit of `ef + 16` without a filter.
const WALK_DISTANCES_PER_EF: f64 = 10.0;
/// Exponent of the walk's growth as the visible fraction shrinks.
const FILTER_EXPONENT: f64 = 0.6;
/// Cost of a walk distance in exact-scan rows.
const WALK_COST: f64 = 2.5;
/// Cost of the descent and the probe that precede a filtered walk, in exact-scan rows
/// (measured: ~30 µs on 200k x 128, where the scan reads a row in ~85 ns). A walk must
/// save more than this to be worth probing for.
const PROBE_COST: f64 = 350.0;
/// At or above this visible fraction the walk goes through hidden nodes unprobed: even an
/// ACL correlated with topics leaves enough visible nodes around every query.
const DENSE_FRACTION: f64 = 0.5;
/// Below this visible fraction, and when the query's neighbourhood is as visible as the
/// whole (a spread-out ACL), the walk skips hidden nodes by looking two hops ahead. Not
/// at 10%: there the two-hop walk needs a wider beam for the same recall (kit's
/// clustered-128, random 10%: 0.95 at ef 24 against ef 10 through hidden nodes at 200k
/// rows; never 0.95 up to ef 128 at 1M, where the walk through reaches 0.977 at ef 16).
const TWO_HOP_FRACTION: f64 = 0.05;
/// Nodes sampled around the walk's layer-0 entry to estimate the local visible fraction.
const PROBE_SAMPLE: usize = 96;
/// Weight (in sampled nodes) of the global fraction in the local estimate.
const PROBE_PRIOR: f64 = 8.0;
/// The local estimate is not trusted below this share of the global fraction: a walk
/// from a hidden region still reaches the visible one, at a bounded extra cost.
const PROBE_FLOOR: f64 = 0.25;
/// A walk may compute as many distances as the exact scan has rows before the planner
/// cuts it short and scans instead, bounding the worst case.
const BUDGET_MULTIPLE: usize = 1;
/// Cost of reading one row of a compressed segment from storage, in exact-scan rows: a
/// redb lookup of a small block (a B-tree descent, a page read through the OS cache,
/// measured 1.7 µs at 1M x 128) against ~85 ns for a streamed row.
const STORED_ROW_COST: f64 = 20.0;
/// Cost of a visible row in the exact scan on the walk codes in place (`coded.rs`: its code
/// scored and bounded), in exact-scan rows: 28 ns a row at 2,000 visible of 200k x 384
/// (2026-12-05), where the gathered half-float scan this model priced at 0.4 took 18.8 ns
/// a row at 20,000 visible.
const CODED_ROW_COST: f64 = 0.6;
/// The same for a row of a gathered copy of the codes (`gather.rs`): 15.5 ns a row at
/// 20,000 visible of 200k x 384 and 13.5 ns at 2,000 (the fixed cost of about 2.5 µs a
/// query aside). A 10% set still goes to the walk (6,000 rows against 2,600 for a walk at
/// ef 10 through 10% visible), a 1% set straight to the scan.
const GATHERED_CODE_COST: f64 = 0.3;
/// Rows that scan reads per result wanted (a median of 11 to 20 at k = 10).
const CODED_READS_PER_RESULT: f64 = 2.0;
/// Visible nodes a two-hop expansion gathers at most (ACORN's truncation): the walk's
/// out-degree stays near a plain walk's.
const TWO_HOP_CAP: usize = 32;

/// Candidates whose f32 rows are requested before the one being re-scored.
const RESCORE_AHEAD: usize = 4;

/// Beam width when the caller does not choose one.
pub const DEFAULT_EF: usize = 64;

/// Which path a search may take. `Auto` is the planner; the others force a path (for
/// benchmarks, tests and `--explain`-style comparisons) but keep the guarantees: a forced
/// walk is still topped up to `min(k, visible)` results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// The planner picks from the visible fraction (the default).
    #[default]
    Auto,
    /// An exact scan of the visible rows.
    Exact,
    /// A graph walk through hidden nodes ([`SearchPath::Graph`]).
    Graph,
    /// A graph walk that skips hidden nodes by looking two hops ahead
    /// ([`SearchPath::GraphTwoHop`]).
    GraphTwoHop,
}

/// Per-search knobs for [`search_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchOptions {
    /// Results wanted.
    pub k: usize,
    /// Graph beam width (default [`DEFAULT_EF`], raised to at least `k`).
    pub ef: Option<usize>,
    /// The strategy, or [`Strategy::Auto`] to let the planner pick.
    pub strategy: Strategy,
}

/// Top-`k` of the segment's vectors (global ids `base..base + vectors.len()`) among the
/// global ids in `visible`, best first, with exactly `min(k, |visible ∩ segment|)`
/// results and never a hidden id. `ef` (default [`DEFAULT_EF`], raised to at least `k`)
/// sets the graph beam width. The query is normalised here for [`Metric::Cosine`].
///
/// Callers validate shapes ([`super::SegmentIndex::search`] does): a query whose length
/// is not `vectors.dim()` gets no results, and a graph that does not fit the vectors
/// (see [`Graph::check_vectors`]) is ignored in favour of the exact scan.
pub fn search(
    vectors: VectorSet<'_>,
    graph: Option<&Graph>,
    base: u32,
    query: &[f32],
    k: usize,
    ef: Option<usize>,
    visible: &RoaringBitmap,
) -> (Vec<Neighbor>, SearchReport) {
    let options = SearchOptions {
        k,
        ef,
        strategy: Strategy::Auto,
    };
    search_with(vectors, graph, base, query, visible, options)
}

/// [`search`] with a [`Strategy`].
pub fn search_with(
    vectors: VectorSet<'_>,
    graph: Option<&Graph>,
    base: u32,
    query: &[f32],
    visible: &RoaringBitmap,
    options: SearchOptions,
) -> (Vec<Neighbor>, SearchReport) {
    let query = prepare_query(vectors.metric(), query);
    search_cached(vectors, graph, base, &query, visible, options, None)
}

/// What the exact scan on a graph's walk codes needs besides the graph.
#[derive(Clone, Copy)]
pub(crate) struct CodeScan<'a> {
    /// Every row's distance from its code ([`Graph::measure`]).
    pub(crate) residuals: &'a Residuals,
    /// The segment's gathered codes of small visible sets.
    pub(crate) gathered: &'a GatherCache,
}

impl CodeScan<'_> {
    /// The exact scan's cost in exact-scan rows, `count` visible of a segment of `len`.
    fn cost(count: u64, len: usize) -> f64 {
        let per_row = if GatherCache::admits(count, len) {
            GATHERED_CODE_COST
        } else {
            CODED_ROW_COST
        };
        count as f64 * per_row
    }
}

/// [`search_with`] for a query already prepared ([`prepare_query`]). With `codes` (and a
/// graph whose every row it measured) the exact scan runs on the graph's codes and
/// scores exactly only the rows that may rank (`coded.rs`).
pub(crate) fn search_cached(
    vectors: VectorSet<'_>,
    graph: Option<&Graph>,
    base: u32,
    query: &[f32],
    visible: &RoaringBitmap,
    options: SearchOptions,
    codes: Option<CodeScan<'_>>,
) -> (Vec<Neighbor>, SearchReport) {
    let k = options.k;
    let end = base.saturating_add(vectors.len() as u32);
    let count = visible.range_cardinality(base..end);
    let report = |path, cost: WalkStats| SearchReport {
        path,
        distances: cost.distances,
        rescored: cost.rescored,
        lists: cost.lists,
        visible: count,
    };
    if vectors.check_query(query).is_err() {
        return (Vec::new(), report(SearchPath::Exact, WalkStats::default()));
    }
    let want = k.min(count as usize);
    let graph = graph.filter(|g| {
        want > 0
            && g.check_vectors(vectors).is_ok()
            && base.checked_add(vectors.len() as u32).is_some()
    });
    let coded = graph
        .zip(codes)
        .filter(|(g, c)| c.residuals.len() == g.len());
    let ef = options.ef.unwrap_or(DEFAULT_EF).max(k).min(count as usize);
    let walked = graph.and_then(|graph| {
        let scan = match coded {
            Some(_) => CodeScan::cost(count, vectors.len()) + CODED_READS_PER_RESULT * want as f64,
            None => count as f64,
        };
        let budget = (count as usize).saturating_mul(BUDGET_MULTIPLE);
        let walk = Segment::planned(
            graph,
            base,
            query,
            ef,
            count,
            scan,
            options.strategy,
            budget,
        )?;
        Some(walk.run_filtered(visible).rescored(|cands, stats| {
            // Every candidate re-scored on its resident f32 row.
            stats.distances += cands.len();
            stats.rescored = cands.len();
            // Random rows of 8+ lines each: fetched a few candidates ahead of the scoring.
            for c in cands.iter().take(RESCORE_AHEAD) {
                prefetch_lines(vectors.row(c.id));
            }
            let rows = cands.iter().enumerate().map(|(i, c)| {
                if let Some(ahead) = cands.get(i + RESCORE_AHEAD) {
                    prefetch_lines(vectors.row(ahead.id));
                }
                (c.id, vectors.row(c.id))
            });
            top_k(&vectors.scorer(), query, base, k, rows)
        }))
    });
    let exact = |spent| match coded {
        Some((graph, codes)) => {
            let mut rows = InMemory {
                vectors,
                scorer: vectors.scorer(),
                query,
            };
            let Ok((hits, scored)) = exact_coded(
                graph,
                codes.residuals,
                Some(codes.gathered),
                base,
                query,
                k,
                visible,
                &mut rows,
            );
            (hits, count as usize + scored + spent)
        }
        None => (
            exact_search(vectors, base, query, k, visible),
            count as usize + spent,
        ),
    };
    match finish(walked, want) {
        Ok((hits, path, stats)) => (hits, report(path, stats)),
        Err((path, mut spent)) => {
            let (hits, distances) = exact(spent.distances);
            spent.distances = distances;
            (hits, report(path, spent))
        }
    }
}

/// A walk's hits with their path and cost, or, when the walk was declined, came up short
/// of `want` or ran out of budget, the path an exact scan completes and what was spent.
fn finish(
    walked: Option<Walked<Vec<Neighbor>>>,
    want: usize,
) -> Result<(Vec<Neighbor>, SearchPath, WalkStats), (SearchPath, WalkStats)> {
    match walked {
        Some(Walked::Done {
            hits,
            stats,
            expand,
        }) if hits.len() >= want && !stats.exhausted => {
            let path = if expand == Expand::Through {
                SearchPath::Graph
            } else {
                SearchPath::GraphTwoHop
            };
            Ok((hits, path, stats))
        }
        Some(Walked::Done { stats, .. }) => Err((SearchPath::GraphTopUp, stats)),
        Some(Walked::Declined { distances }) => Err((
            SearchPath::Exact,
            WalkStats {
                distances,
                ..WalkStats::default()
            },
        )),
        None => Err((SearchPath::Exact, WalkStats::default())),
    }
}

/// A compressed segment for [`search_stored`]: its graph (with every walk code and the
/// rows' distances from them) over `len` rows that stay in storage, read through `rows`.
pub(crate) struct Stored<'a> {
    pub(crate) graph: &'a Graph,
    pub(crate) residuals: &'a Residuals,
    pub(crate) gathered: &'a GatherCache,
    pub(crate) len: usize,
    pub(crate) rows: &'a dyn RowSource,
    /// Candidates, best by code score first, whose f32 rows are read and re-scored (at
    /// least `k`).
    pub(crate) rescore: usize,
}

/// [`search_with`] over a compressed segment, for a query already prepared
/// ([`prepare_query`]): the walk scores 8-bit codes only; the best
/// `rescore` of its candidates are re-scored on f32 rows read from storage, and the exact
/// scan scores the visible codes and reads only the rows that may rank (`coded.rs`).
/// Same guarantees: `min(k, visible)` results, never a hidden id, exact scores.
pub(crate) fn search_stored(
    segment: &Stored<'_>,
    base: u32,
    query: &[f32],
    visible: &RoaringBitmap,
    options: SearchOptions,
) -> Result<(Vec<Neighbor>, SearchReport), RowError> {
    let (graph, len, k) = (segment.graph, segment.len, options.k);
    let end = base.saturating_add(len as u32);
    let count = visible.range_cardinality(base..end);
    let report = |path, cost: WalkStats| SearchReport {
        path,
        distances: cost.distances,
        rescored: cost.rescored,
        lists: cost.lists,
        visible: count,
    };
    let metric = graph.metric();
    let want = k.min(count as usize);
    let ef = options.ef.unwrap_or(DEFAULT_EF).max(k).min(count as usize);
    let rescore = segment.rescore.max(k);
    // Both paths read rows: the scan is dearer only by the reads the walk would not make.
    let reads = (CODED_READS_PER_RESULT * want as f64 - rescore as f64).max(0.0);
    let scan = CodeScan::cost(count, len) + reads * STORED_ROW_COST;
    let scorer = Scorer::new(metric);
    let dim = graph.dim();
    let fits = want > 0 && graph.len() == len && base.checked_add(len as u32).is_some();
    let planned = fits
        .then(|| {
            Segment::planned(
                graph,
                base,
                query,
                ef,
                count,
                scan,
                options.strategy,
                scan as usize,
            )
        })
        .flatten();
    let walked = match planned {
        None => None,
        Some(walk) => {
            let walked = walk.run_filtered(visible).rescored(|mut cands, stats| {
                cands.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
                cands.truncate(rescore);
                stats.distances += cands.len();
                stats.rescored = cands.len();
                let ids: Vec<u32> = cands.iter().map(|c| c.id).collect();
                let mut rows = Vec::with_capacity(ids.len() * dim);
                segment.rows.read(&ids, &mut rows)?;
                let rows = ids.iter().copied().zip(rows.chunks_exact(dim));
                Ok::<_, RowError>(top_k(&scorer, query, base, k, rows))
            });
            Some(walked.transpose()?)
        }
    };
    match finish(walked, want) {
        Ok((hits, path, stats)) => Ok((hits, report(path, stats))),
        Err((path, mut spent)) => {
            let mut rows = FromStorage {
                rows: segment.rows,
                row: Vec::with_capacity(dim),
                scorer,
                query,
            };
            let (hits, read) = exact_coded(
                graph,
                segment.residuals,
                Some(segment.gathered),
                base,
                query,
                k,
                visible,
                &mut rows,
            )?;
            spent.distances += count as usize + read;
            Ok((hits, report(path, spent)))
        }
    }
}

/// Exact scores of a resident segment's rows.
struct InMemory<'a> {
    vectors: VectorSet<'a>,
    scorer: Scorer,
    query: &'a [f32],
}

impl ExactScores for InMemory<'_> {
    type Error = Infallible;

    fn prefetch(&self, id: u32) {
        prefetch_lines(self.vectors.row(id));
    }

    fn score(&mut self, id: u32) -> Result<f32, Infallible> {
        Ok(self.scorer.score(self.query, self.vectors.row(id)))
    }
}

/// Exact scores of a compressed segment's rows, read one at a time from storage.
struct FromStorage<'a> {
    rows: &'a dyn RowSource,
    row: Vec<f32>,
    scorer: Scorer,
    query: &'a [f32],
}

impl ExactScores for FromStorage<'_> {
    type Error = RowError;

    /// A read is a B-tree lookup, not a memory fetch.
    fn prefetch(&self, _: u32) {}

    fn score(&mut self, id: u32) -> Result<f32, RowError> {
        self.row.clear();
        self.rows.read(&[id], &mut self.row)?;
        Ok(self.scorer.score(self.query, &self.row))
    }
}

/// The best `k` of `rows` (local id, f32 row) scored against `query`, with global ids.
fn top_k<'r>(
    scorer: &Scorer,
    query: &[f32],
    base: u32,
    k: usize,
    rows: impl Iterator<Item = (u32, &'r [f32])>,
) -> Vec<Neighbor> {
    let mut top = TopK::new(k);
    for (id, row) in rows {
        top.push(Neighbor {
            id: base + id,
            score: scorer.score(query, row),
        });
    }
    top.into_sorted()
}

/// The query as compared: a normalised copy for cosine, else borrowed. A zero query stays
/// zero (every score 0); the store refuses it first ([`super::QueryVector`]).
pub(crate) fn prepare_query(metric: Metric, query: &[f32]) -> Cow<'_, [f32]> {
    if metric == Metric::Cosine {
        let mut owned = query.to_vec();
        normalize(&mut owned);
        Cow::Owned(owned)
    } else {
        Cow::Borrowed(query)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    Exact,
    Walk(Expand),
    /// Descend, look at the visible fraction around the entry, then choose.
    Probe,
}

/// The first choice, from the cost of the exact scan (`scan`, in exact-scan rows) and the
/// visible fraction alone.
fn plan(scan: f64, fraction: f64, ef: usize) -> Plan {
    if fraction >= 1.0 {
        Plan::Walk(Expand::Through)
    } else if scan <= walk_cost(ef, 1.0) + PROBE_COST {
        // Cheaper than an unfiltered walk and the probe: no walk can win.
        Plan::Exact
    } else if fraction >= DENSE_FRACTION {
        Plan::Walk(Expand::Through)
    } else {
        Plan::Probe
    }
}

/// The choice after probing: `allowed` of `seen` nodes around the entry were visible.
fn plan_probed(scan: f64, fraction: f64, ef: usize, seen: usize, allowed: usize) -> Plan {
    let local = (allowed as f64 + PROBE_PRIOR * fraction) / (seen as f64 + PROBE_PRIOR);
    if scan <= walk_cost(ef, local.max(fraction * PROBE_FLOOR)) {
        Plan::Exact
    } else if fraction < TWO_HOP_FRACTION && local >= fraction {
        Plan::Walk(Expand::TwoHop { cap: TWO_HOP_CAP })
    } else {
        Plan::Walk(Expand::Through)
    }
}

/// Estimated cost of a walk at beam width `ef` with a visible fraction `fraction`, in
/// exact-scan rows.
fn walk_cost(ef: usize, fraction: f64) -> f64 {
    let unfiltered = WALK_DISTANCES_PER_EF * (ef as f64 + 16.0);
    unfiltered * fraction.max(1e-6).powf(-FILTER_EXPONENT) * WALK_COST
}

/// A graph query over one segment.
struct Segment<'a> {
    graph: &'a Graph,
    base: u32,
    query: &'a [f32],
    ef: usize,
    /// Visible ids in the segment.
    count: u64,
    /// Cost of answering by the exact scan instead, in exact-scan rows.
    scan: f64,
    plan: Plan,
    budget: usize,
}

/// How a walk ended: `hits` are its candidates (local ids, code scores), then the
/// re-scored neighbours.
enum Walked<H> {
    Done {
        hits: H,
        stats: WalkStats,
        expand: Expand,
    },
    /// The probe found the exact scan cheaper; `distances` were spent descending.
    Declined { distances: usize },
}

impl Walked<Vec<Cand>> {
    /// The candidates re-scored by `rescore` (which counts what it computes in the stats).
    fn rescored<H>(self, rescore: impl FnOnce(Vec<Cand>, &mut WalkStats) -> H) -> Walked<H> {
        match self {
            Walked::Done {
                hits,
                mut stats,
                expand,
            } => {
                let hits = rescore(hits, &mut stats);
                Walked::Done {
                    hits,
                    stats,
                    expand,
                }
            }
            Walked::Declined { distances } => Walked::Declined { distances },
        }
    }
}

impl<H, E> Walked<Result<H, E>> {
    fn transpose(self) -> Result<Walked<H>, E> {
        Ok(match self {
            Walked::Done {
                hits,
                stats,
                expand,
            } => Walked::Done {
                hits: hits?,
                stats,
                expand,
            },
            Walked::Declined { distances } => Walked::Declined { distances },
        })
    }
}

impl<'a> Segment<'a> {
    /// The walk `strategy` asks for (the planner's choice from the visible fraction and
    /// `scan`, the cost of scanning instead, for [`Strategy::Auto`]), or `None` when the
    /// exact scan answers; an automatic walk stops after `budget` distances.
    #[allow(clippy::too_many_arguments)]
    fn planned(
        graph: &'a Graph,
        base: u32,
        query: &'a [f32],
        ef: usize,
        count: u64,
        scan: f64,
        strategy: Strategy,
        budget: usize,
    ) -> Option<Self> {
        let fraction = count as f64 / graph.len().max(1) as f64;
        let (plan, budget) = match strategy {
            Strategy::Auto => match plan(scan, fraction, ef) {
                Plan::Exact => return None,
                plan => (plan, budget),
            },
            Strategy::Exact => return None,
            Strategy::Graph => (Plan::Walk(Expand::Through), usize::MAX),
            Strategy::GraphTwoHop => (Plan::Walk(Expand::TwoHop { cap: TWO_HOP_CAP }), usize::MAX),
        };
        Some(Segment {
            graph,
            base,
            query,
            ef,
            count,
            scan,
            plan,
            budget,
        })
    }

    /// [`Segment::run`] with the cheapest filter for `visible`.
    fn run_filtered(&self, visible: &RoaringBitmap) -> Walked<Vec<Cand>> {
        if self.count == self.graph.len() as u64 {
            self.run(&AllVisible)
        } else {
            self.run(&BitmapFilter {
                visible,
                base: self.base,
            })
        }
    }

    /// Descends the upper layers greedily and beam-searches layer 0 with `filter` on the
    /// quantised codes, leaving the candidates for the caller to re-score.
    fn run<F: Filter>(&self, filter: &F) -> Walked<Vec<Cand>> {
        let Some(entry) = self.graph.entry else {
            return Walked::Declined { distances: 0 };
        };
        let walk = Walk {
            links: &self.graph.links,
            query: QuantQuery::new(&self.graph.codes, self.query),
            len: self.graph.len(),
        };
        let start = Cand {
            score: walk.score(entry.id),
            id: entry.id,
        };
        let (start, descent) = walk.descend(start, usize::from(entry.level), 0);
        let descent = descent + 1;
        let expand = match self.plan {
            Plan::Walk(expand) => expand,
            Plan::Exact => return Walked::Declined { distances: descent },
            Plan::Probe => {
                let (seen, allowed) = walk.probe(start.id, filter, PROBE_SAMPLE);
                let fraction = self.count as f64 / self.graph.len() as f64;
                match plan_probed(self.scan, fraction, self.ef, seen, allowed) {
                    Plan::Walk(expand) => expand,
                    _ => return Walked::Declined { distances: descent },
                }
            }
        };
        with_scratch(|scratch| {
            let mut stats = walk.search_layer(
                scratch,
                start,
                0,
                Beam {
                    ef: self.ef,
                    expand,
                    budget: self.budget,
                },
                filter,
            );
            stats.distances += descent;
            Walked::Done {
                hits: scratch.results.drain().map(|Reverse(c)| c).collect(),
                stats,
                expand,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_HOP: Plan = Plan::Walk(Expand::TwoHop { cap: TWO_HOP_CAP });
    const THROUGH: Plan = Plan::Walk(Expand::Through);

    #[test]
    fn first_choice_follows_the_visible_fraction() {
        assert_eq!(plan(200_000.0, 1.0, 64), THROUGH);
        assert_eq!(plan(100_000.0, 0.5, 64), THROUGH);
        assert_eq!(plan(20_000.0, 0.1, 64), Plan::Probe);
        // Fewer rows than an unfiltered walk computes distances.
        assert_eq!(plan(1_500.0, 0.0075, 64), Plan::Exact);
        // 2,000 visible: probed when scanned in f32, scanned at once on the codes.
        assert_eq!(plan(2_000.0, 0.01, 16), Plan::Probe);
        assert_eq!(plan(2_000.0 * GATHERED_CODE_COST, 0.01, 16), Plan::Exact);
    }

    #[test]
    fn probe_declines_hidden_neighbourhoods() {
        // 10% visible, around the query or not: through hidden nodes (two hops lose
        // recall there); none around it: a walk must cross a hidden region, still cheaper
        // than 20k rows.
        assert_eq!(plan_probed(20_000.0, 0.1, 16, 96, 12), THROUGH);
        assert_eq!(plan_probed(100_000.0, 0.1, 16, 96, 12), THROUGH);
        assert_eq!(plan_probed(20_000.0, 0.1, 16, 96, 0), THROUGH);
        // 4% visible overall and around the query: two hops; hidden around it: through.
        assert_eq!(plan_probed(40_000.0, 0.04, 16, 96, 5), TWO_HOP);
        assert_eq!(plan_probed(40_000.0, 0.04, 16, 96, 0), THROUGH);
        // 2% visible and hidden around the query: the exact scan wins.
        assert_eq!(plan_probed(4_000.0, 0.02, 16, 96, 0), Plan::Exact);
        // 30% visible: walk through hidden nodes.
        assert_eq!(plan_probed(60_000.0, 0.3, 16, 96, 30), THROUGH);
    }

    #[test]
    fn walk_cost_grows_as_the_fraction_shrinks() {
        assert!(walk_cost(64, 0.1) > walk_cost(64, 0.5));
        assert!(walk_cost(64, 1.0) > walk_cost(16, 1.0));
        assert!(walk_cost(16, 0.0).is_finite());
    }
}
