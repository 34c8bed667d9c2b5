//! Layer searches shared by construction and queries.

use std::cmp::Reverse;

use roaring::RoaringBitmap;

use super::layers::{Links, Slot};
use super::quant::QuantQuery;
use crate::index::visited::{Cand, Scratch, VisitedSet};

/// Which local ids a search may return.
pub(crate) trait Filter {
    fn allows(&self, local: u32) -> bool;
}

/// Every node is visible.
pub(crate) struct AllVisible;

impl Filter for AllVisible {
    #[inline(always)]
    fn allows(&self, _: u32) -> bool {
        true
    }
}

/// Visibility from a bitmap of global ids.
pub(crate) struct BitmapFilter<'a> {
    pub(crate) visible: &'a RoaringBitmap,
    pub(crate) base: u32,
}

impl Filter for BitmapFilter<'_> {
    #[inline(always)]
    fn allows(&self, local: u32) -> bool {
        self.visible.contains(self.base + local)
    }
}

/// How a layer-0 walk treats hidden neighbours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expand {
    /// Score and traverse them, never return them.
    Through,
    /// Do not score them; look at their neighbours instead (two hops), up to a cap of
    /// gathered visible nodes per expansion.
    TwoHop { cap: usize },
}

/// Shape of a layer search.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Beam {
    /// Results kept (beam width).
    pub(crate) ef: usize,
    pub(crate) expand: Expand,
    /// Distances allowed before giving up.
    pub(crate) budget: usize,
}

/// What a layer search cost.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WalkStats {
    pub(crate) distances: usize,
    /// Link lists read on the layer (a two-hop expansion reads its hidden neighbours' too).
    pub(crate) lists: usize,
    /// Of `distances`, candidates the caller re-scored on f32 rows after the walk.
    pub(crate) rescored: usize,
    /// The distance budget ran out before the search converged.
    pub(crate) exhausted: bool,
}

/// A query (or a node being inserted) walking a graph's links.
pub(crate) struct Walk<'a, S> {
    pub(crate) links: &'a Links<S>,
    /// Scores nodes on their 8-bit codes (construction and queries both re-score what the
    /// walk finds on the f32 vectors).
    pub(crate) query: QuantQuery<'a>,
    /// Number of nodes (sizes the visited set).
    pub(crate) len: usize,
}

impl<S: Slot> Walk<'_, S> {
    #[inline(always)]
    pub(crate) fn score(&self, id: u32) -> f32 {
        self.query.score(id)
    }

    /// Greedy descent (beam of one) from `from` through layers `top..stop` (exclusive),
    /// returning the closest node found and the distances computed.
    pub(crate) fn descend(&self, mut cur: Cand, top: usize, stop: usize) -> (Cand, usize) {
        let mut distances = 0;
        for layer in (stop + 1..=top).rev() {
            let mut moved = true;
            while moved {
                moved = false;
                for slot in self.links.neighbours(cur.id, layer) {
                    let id = slot.get();
                    let score = self.score(id);
                    distances += 1;
                    if score > cur.score {
                        cur = Cand { score, id };
                        moved = true;
                    }
                }
            }
        }
        (cur, distances)
    }

    /// How many of up to `sample` nodes around `node` on layer 0 (its neighbours, then
    /// theirs; repeats possible) `filter` allows, as `(looked at, allowed)`. Reads links
    /// only, no vectors.
    pub(crate) fn probe<F: Filter>(&self, node: u32, filter: &F, sample: usize) -> (usize, usize) {
        let (mut seen, mut allowed) = (0, 0);
        let direct = self.links.neighbours(node, 0);
        let around = direct.iter().chain(
            direct
                .iter()
                .flat_map(|s| self.links.neighbours(s.get(), 0)),
        );
        for slot in around.take(sample) {
            seen += 1;
            allowed += usize::from(filter.allows(slot.get()));
        }
        (seen, allowed)
    }

    /// Beam search on `layer` from `entry`, leaving the best `beam.ef` nodes that `filter`
    /// allows in `scratch.results`. Stops early once `beam.budget` distances are spent.
    pub(crate) fn search_layer<F: Filter>(
        &self,
        scratch: &mut Scratch,
        entry: Cand,
        layer: usize,
        beam: Beam,
        filter: &F,
    ) -> WalkStats {
        let Beam { ef, expand, budget } = beam;
        let Scratch {
            visited,
            frontier,
            results,
            ids,
        } = scratch;
        visited.reset(self.len);
        frontier.clear();
        results.clear();
        visited.insert(entry.id);
        frontier.push(entry);
        if filter.allows(entry.id) {
            results.push(Reverse(entry));
        }
        let mut stats = WalkStats::default();
        let mut lower = bound(results, ef);
        while let Some(cur) = frontier.pop() {
            if cur.score < lower {
                break;
            }
            // The list expanded next, most likely: fetched while this one is scored.
            if let Some(next) = frontier.peek() {
                self.links.prefetch(next.id, layer);
            }
            ids.clear();
            stats.lists += match expand {
                Expand::Through => {
                    self.gather(cur.id, layer, visited, ids);
                    1
                }
                Expand::TwoHop { cap } => self.gather_two_hop(cur.id, visited, filter, cap, ids),
            };
            for &id in ids.iter().take(PREFETCH_AHEAD) {
                self.query.prefetch(id);
            }
            for (i, &id) in ids.iter().enumerate() {
                if let Some(&next) = ids.get(i + PREFETCH_AHEAD) {
                    self.query.prefetch(next);
                }
                let score = self.score(id);
                if results.len() < ef || score > lower {
                    let cand = Cand { score, id };
                    frontier.push(cand);
                    if filter.allows(id) {
                        results.push(Reverse(cand));
                        if results.len() > ef {
                            results.pop();
                        }
                        lower = bound(results, ef);
                    }
                }
            }
            stats.distances += ids.len();
            if stats.distances > budget {
                stats.exhausted = true;
                break;
            }
        }
        stats
    }

    /// Unvisited neighbours of `node`, marked visited.
    #[inline]
    fn gather(&self, node: u32, layer: usize, visited: &mut VisitedSet, out: &mut Vec<u32>) {
        for slot in self.links.neighbours(node, layer) {
            let id = slot.get();
            if !visited.insert(id) {
                out.push(id);
            }
        }
    }

    /// Visible unvisited neighbours of `node` on layer 0, then visible unvisited neighbours
    /// of its hidden neighbours until `cap` are gathered (ACORN-style). Hidden nodes whose
    /// lists were read are marked visited so they are not read again. Returns the lists
    /// read.
    fn gather_two_hop<F: Filter>(
        &self,
        node: u32,
        visited: &mut VisitedSet,
        filter: &F,
        cap: usize,
        out: &mut Vec<u32>,
    ) -> usize {
        let mut lists = 1;
        let direct = self.links.neighbours(node, 0);
        for slot in direct {
            let id = slot.get();
            if !visited.contains(id) && filter.allows(id) {
                visited.insert(id);
                out.push(id);
            }
        }
        for slot in direct {
            if out.len() >= cap {
                return lists;
            }
            let hidden = slot.get();
            if visited.insert(hidden) {
                continue;
            }
            lists += 1;
            for slot2 in self.links.neighbours(hidden, 0) {
                let id = slot2.get();
                if !visited.contains(id) && filter.allows(id) {
                    visited.insert(id);
                    out.push(id);
                    if out.len() >= cap {
                        return lists;
                    }
                }
            }
        }
        lists
    }
}

/// The score a candidate must beat to enter a full result set (`-inf` while not full).
#[inline(always)]
fn bound(results: &std::collections::BinaryHeap<Reverse<Cand>>, ef: usize) -> f32 {
    match results.peek() {
        Some(Reverse(worst)) if results.len() >= ef => worst.score,
        _ => f32::NEG_INFINITY,
    }
}

/// Neighbours whose data is requested before scoring starts, and the distance kept
/// between the one prefetched and the one scored: enough to overlap a few memory
/// latencies.
const PREFETCH_AHEAD: usize = 4;
