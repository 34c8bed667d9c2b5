//! Per-thread scratch for graph searches: a generation-stamped visited set and the two
//! heaps of scored candidates, reused across searches so a search allocates nothing once
//! warm.

use std::cell::RefCell;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Marks nodes as visited in O(1) and "clears" in O(1) by bumping a generation stamp.
/// `u16` stamps keep the array small (cache) at the price of a real clear every 65535
/// searches.
#[derive(Default)]
pub(crate) struct VisitedSet {
    stamps: Vec<u16>,
    generation: u16,
}

impl VisitedSet {
    /// Starts a new search over `n` nodes: every node unvisited.
    pub(crate) fn reset(&mut self, n: usize) {
        if self.stamps.len() < n {
            self.stamps.resize(n, 0);
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.stamps.fill(0);
            self.generation = 1;
        }
    }

    /// Marks `id`; returns whether it was already marked.
    #[inline(always)]
    pub(crate) fn insert(&mut self, id: u32) -> bool {
        let slot = &mut self.stamps[id as usize];
        let seen = *slot == self.generation;
        *slot = self.generation;
        seen
    }

    #[inline(always)]
    pub(crate) fn contains(&self, id: u32) -> bool {
        self.stamps[id as usize] == self.generation
    }
}

/// A scored node in the search heaps; orders by score, then by smaller id (as better).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Cand {
    pub(crate) score: f32,
    pub(crate) id: u32,
}

impl Eq for Cand {}

impl Ord for Cand {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then(other.id.cmp(&self.id))
    }
}

impl PartialOrd for Cand {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Everything a layer search needs besides the graph.
#[derive(Default)]
pub(crate) struct Scratch {
    pub(crate) visited: VisitedSet,
    /// Nodes to expand, best first.
    pub(crate) frontier: BinaryHeap<Cand>,
    /// The best results so far, worst on top.
    pub(crate) results: BinaryHeap<Reverse<Cand>>,
    /// Neighbour ids gathered before scoring.
    pub(crate) ids: Vec<u32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Runs `f` with this thread's scratch (a fresh one if it is already borrowed, e.g. by a
/// re-entrant call).
pub(crate) fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => f(&mut scratch),
        Err(_) => f(&mut Scratch::default()),
    })
}
