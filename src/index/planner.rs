//! Filtered search over one segment: picks the exact scan or a graph walk from the size of
//! the visible set, and always fills the results to `min(k, visible)`.

use roaring::RoaringBitmap;
use serde::{Deserialize, Serialize};

use super::distance::normalize;
use super::exact::{exact_search, Neighbor};
use super::hnsw::search::{AllVisible, BitmapFilter, Cand, Expand, Filter, Walk, WalkStats};
use super::hnsw::Graph;
use super::vectors::{ShapeError, VectorSet};
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

/// Top-`k` of the segment's vectors (global ids `base..base + vectors.len()`) among the
/// global ids in `visible`, best first, with `min(k, visible ∩ segment)` results; never a
/// hidden id. `ef` (raised to at least `k`) sets the graph beam width. The query is
/// normalised here for [`Metric::Cosine`].
pub fn search(
    vectors: VectorSet<'_>,
    graph: Option<&Graph>,
    base: u32,
    query: &[f32],
    k: usize,
    ef: usize,
    visible: &RoaringBitmap,
) -> Result<(Vec<Neighbor>, SearchReport), ShapeError> {
    vectors.check_query(query)?;
    if let Some(graph) = graph {
        graph.check_vectors(vectors)?;
    }
    let end = base
        .checked_add(vectors.len() as u32)
        .ok_or(ShapeError::IdOverflow { base, len: vectors.len() })?;
    let mut normalised = Vec::new();
    let query = if vectors.metric() == Metric::Cosine {
        normalised.extend_from_slice(query);
        normalize(&mut normalised);
        &normalised[..]
    } else {
        query
    };
    let count = visible.range_cardinality(base..end);
    let want = k.min(count as usize);
    let report = |path, distances| SearchReport { path, distances, visible: count };
    let plan = graph.filter(|_| want > 0).map_or(Plan::Exact, |g| plan(g.len(), count, k, ef));
    let ef = ef.max(k).min(count as usize);
    let budget = (count as usize).saturating_mul(BUDGET_MULTIPLE);
    let walked = match (plan, graph) {
        (Plan::Walk(expand), Some(graph)) => {
            let segment = Segment { graph, vectors, base, query };
            if count == vectors.len() as u64 {
                Some((segment.walk(k, ef, &AllVisible, expand, budget), expand))
            } else {
                Some((segment.walk(k, ef, &BitmapFilter { visible, base }, expand, budget), expand))
            }
        }
        _ => None,
    };
    let exact = |spent| {
        let hits = exact_search(vectors, base, query, k, visible);
        (hits, count as usize + spent)
    };
    Ok(match walked {
        Some(((hits, stats), expand)) if hits.len() >= want && !stats.exhausted => {
            let path = if expand == Expand::Through { SearchPath::Graph } else { SearchPath::GraphTwoHop };
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
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    Exact,
    Walk(Expand),
}

/// Chooses by visible fraction: exact scan for small visible sets (cheaper than any walk),
/// a walk through hidden nodes when most are visible, two-hop expansion in between.
fn plan(n: usize, visible: u64, k: usize, ef: usize) -> Plan {
    let fraction = visible as f64 / n.max(1) as f64;
    let ef = ef.max(k) as u64;
    if fraction < EXACT_FRACTION || visible <= ef * EXACT_EF_MULTIPLE {
        Plan::Exact
    } else if fraction < TWO_HOP_FRACTION {
        Plan::Walk(Expand::TwoHop { cap: 32 })
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
    /// Descends the upper layers greedily, then beam-searches layer 0 with `filter`.
    fn walk<F: Filter>(&self, k: usize, ef: usize, filter: &F, expand: Expand, budget: usize) -> (Vec<Neighbor>, WalkStats) {
        let Some(entry) = self.graph.entry else {
            return (Vec::new(), WalkStats::default());
        };
        let walk = Walk {
            links: &self.graph.links,
            vectors: self.vectors,
            scorer: self.vectors.scorer(),
            query: self.query,
        };
        let start = Cand { score: walk.score(entry.id), id: entry.id };
        let (start, descent) = walk.descend(start, usize::from(entry.level), 0);
        with_scratch(|scratch| {
            let mut stats = walk.search_layer(scratch, start, 0, ef, filter, expand, budget);
            stats.distances += descent + 1;
            let mut found: Vec<Cand> = scratch.results.drain().map(|r| r.0).collect();
            found.sort_unstable_by(|a, b| b.cmp(a));
            let hits = found
                .iter()
                .take(k)
                .map(|c| Neighbor { id: self.base + c.id, score: c.score })
                .collect();
            (hits, stats)
        })
    }
}
