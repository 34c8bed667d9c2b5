//! Filtered search over one segment: picks the exact scan or a graph walk from the size of
//! the visible set, and always fills the results to `min(k, visible)`.

use std::borrow::Cow;
use std::cmp::Reverse;

use roaring::RoaringBitmap;
use serde::{Deserialize, Serialize};

use super::distance::normalize;
use super::exact::{exact_search, Neighbor, TopK};
use super::hnsw::quant::QuantQuery;
use super::hnsw::search::{
    AllVisible, BitmapFilter, Cand, Expand, Filter, QuantSpace, Walk, WalkStats,
};
use super::hnsw::Graph;
use super::vectors::VectorSet;
use super::visited::with_scratch;
use super::Metric;

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
    pub path: SearchPath,
    /// Vector comparisons made.
    pub distances: usize,
    /// Visible ids in the segment.
    pub visible: u64,
}

/// Calibrated on clustered-128 / normalized-384 at 200k (see the index bench notes in the
/// report): below this visible fraction the exact scan wins over every graph walk.
const EXACT_FRACTION: f64 = 0.05;
/// Below this visible fraction a walk through hidden nodes wastes most of its distances:
/// skip them by looking two hops ahead.
const TWO_HOP_FRACTION: f64 = 0.3;
/// The exact scan is also used when it costs fewer distances than this many `ef`s: a walk
/// needs at least a few neighbour lists per result.
const EXACT_EF_MULTIPLE: u64 = 32;
/// A walk may spend this many times the exact scan's distances before the planner cuts
/// it short and scans instead, bounding the worst case.
const BUDGET_MULTIPLE: usize = 1;
/// Visible nodes a two-hop expansion gathers at most (ACORN's truncation): the walk's
/// out-degree stays near a plain walk's.
const TWO_HOP_CAP: usize = 32;

/// Beam width when the caller does not choose one.
pub const DEFAULT_EF: usize = 64;

/// Which path a search may take. `Auto` is the planner; the others force a path (for
/// benchmarks, tests and `--explain`-style comparisons) but keep the guarantees: a forced
/// walk is still topped up to `min(k, visible)` results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    #[default]
    Auto,
    Exact,
    Graph,
    GraphTwoHop,
}

/// Per-search knobs for [`search_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchOptions {
    /// Results wanted.
    pub k: usize,
    /// Graph beam width (default [`DEFAULT_EF`], raised to at least `k`).
    pub ef: Option<usize>,
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
    let k = options.k;
    let end = base.saturating_add(vectors.len() as u32);
    let count = visible.range_cardinality(base..end);
    let report = |path, distances| SearchReport {
        path,
        distances,
        visible: count,
    };
    if vectors.check_query(query).is_err() {
        return (Vec::new(), report(SearchPath::Exact, 0));
    }
    let query = &*prepare_query(vectors.metric(), query);
    let want = k.min(count as usize);
    let graph = graph.filter(|g| {
        want > 0
            && g.check_vectors(vectors).is_ok()
            && base.checked_add(vectors.len() as u32).is_some()
    });
    let ef = options.ef.unwrap_or(DEFAULT_EF).max(k).min(count as usize);
    let walked = graph.and_then(|graph| {
        let (expand, budget) = match options.strategy {
            Strategy::Auto => match plan(graph.len(), count, ef) {
                Plan::Exact => return None,
                Plan::Walk(expand) => (expand, (count as usize).saturating_mul(BUDGET_MULTIPLE)),
            },
            Strategy::Exact => return None,
            Strategy::Graph => (Expand::Through, usize::MAX),
            Strategy::GraphTwoHop => (Expand::TwoHop { cap: TWO_HOP_CAP }, usize::MAX),
        };
        let segment = Segment {
            graph,
            vectors,
            base,
            query,
        };
        let result = if count == vectors.len() as u64 {
            segment.walk(k, ef, &AllVisible, expand, budget)
        } else {
            segment.walk(k, ef, &BitmapFilter { visible, base }, expand, budget)
        };
        Some((result, expand))
    });
    let exact = |spent| {
        (
            exact_search(vectors, base, query, k, visible),
            count as usize + spent,
        )
    };
    match walked {
        Some(((hits, stats), expand)) if hits.len() >= want && !stats.exhausted => {
            let path = if expand == Expand::Through {
                SearchPath::Graph
            } else {
                SearchPath::GraphTwoHop
            };
            (hits, report(path, stats.distances))
        }
        Some(((_, stats), _)) => {
            let (hits, distances) = exact(stats.distances);
            (hits, report(SearchPath::GraphTopUp, distances))
        }
        None => {
            let (hits, distances) = exact(0);
            (hits, report(SearchPath::Exact, distances))
        }
    }
}

/// The query as compared: a normalised copy for cosine, else borrowed.
fn prepare_query(metric: Metric, query: &[f32]) -> Cow<'_, [f32]> {
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
}

/// Chooses by visible fraction: exact scan for small visible sets (cheaper than any walk),
/// a walk through hidden nodes when most are visible, two-hop expansion in between.
fn plan(n: usize, visible: u64, ef: usize) -> Plan {
    let fraction = visible as f64 / n.max(1) as f64;
    if fraction < EXACT_FRACTION || visible <= ef as u64 * EXACT_EF_MULTIPLE {
        Plan::Exact
    } else if fraction < TWO_HOP_FRACTION {
        Plan::Walk(Expand::TwoHop { cap: TWO_HOP_CAP })
    } else {
        Plan::Walk(Expand::Through)
    }
}

/// A graph query over one segment.
struct Segment<'a> {
    graph: &'a Graph,
    vectors: VectorSet<'a>,
    base: u32,
    query: &'a [f32],
}

impl Segment<'_> {
    /// Descends the upper layers greedily, beam-searches layer 0 with `filter` on the
    /// quantised codes, then re-scores the candidates on the f32 vectors.
    fn walk<F: Filter>(
        &self,
        k: usize,
        ef: usize,
        filter: &F,
        expand: Expand,
        budget: usize,
    ) -> (Vec<Neighbor>, WalkStats) {
        let Some(entry) = self.graph.entry else {
            return (Vec::new(), WalkStats::default());
        };
        let codes = &self.graph.codes;
        let space = QuantSpace {
            codes,
            query: QuantQuery::new(codes, self.vectors.metric(), self.query),
        };
        let walk = Walk {
            links: &self.graph.links,
            space,
            len: self.graph.len(),
        };
        let start = Cand {
            score: walk.score(entry.id),
            id: entry.id,
        };
        let (start, descent) = walk.descend(start, usize::from(entry.level), 0);
        let scorer = self.vectors.scorer();
        with_scratch(|scratch| {
            let mut stats = walk.search_layer(scratch, start, 0, ef, filter, expand, budget);
            let mut top = TopK::new(k);
            for Reverse(cand) in scratch.results.drain() {
                let score = scorer.score(self.query, self.vectors.row(cand.id));
                top.push(Neighbor {
                    id: self.base + cand.id,
                    score,
                });
                stats.distances += 1;
            }
            stats.distances += descent + 1;
            (top.into_sorted(), stats)
        })
    }
}
