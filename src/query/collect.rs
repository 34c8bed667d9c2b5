//! The grouping collector: it takes ranked children best first, groups them into reading
//! units in order of their best child (a unit's score is its best child's), hands each new
//! unit to the answer (`assemble.rs`), and stops taking children as soon as the answer
//! holds `k` units (accepted, or skipped for the budget). Children ranked after that point
//! are never read.
//!
//! # Why a cached widening, not a resumable iterator
//!
//! The rankers answer "the best `n`": the planner's exact scan keeps a top-`n` heap, a
//! graph walk needs its breadth before it starts, and a [`super::ChildSource`] such as
//! Milvus takes a limit. A best-first iterator over them would be a top-`n` asked again
//! anyway. So when `n` children hold too few units, the ranker is asked again for more,
//! and only that ask is repeated:
//!
//! - the collector resumes where it stopped when the new ranking begins with the children
//!   it already took (an exact ranking always does), and otherwise groups again from the
//!   first child (an approximate one may reorder), so the answer is always the one the
//!   last ranking gives;
//! - each child record is read once per search (the [`super::Chunks`] of a snapshot keeps
//!   them), each unit is expanded once (kept here by unit), whatever the number of passes;
//! - the next `n` comes from the children per unit seen so far: enough for the units still
//!   missing at that rate, `WIDENING_MARGIN` times over, and at least double the last `n`
//!   (so a search takes a few asks at most); without a unit to go by, four times the last
//!   `n`. Asking wide costs the ranker a wider search, not records: children past the
//!   `k`-th unit are not read.
//!
//! Before, a short gathering started over with four times the children and read every
//! child record, parent and text again, and grouped every gathered child even past the
//! `k`-th unit.

use std::collections::HashMap;
use std::rc::Rc;

use super::assemble::{unit_key, Answer, Taken, Unit, UnitKey};
use super::rank::Rank;
use super::units::Chunks;
use super::{Hit, QueryError, SearchRequest, CHILDREN_PER_UNIT, MIN_CHILDREN};
use crate::index::ChildSearch;
use crate::index::Neighbor;

/// How many times the children the missing units need at the rate seen so far a widening
/// asks for: new units come slower as the ranking goes deeper (the best units hold several
/// of the best children). Measured on `benches/grouping.rs`' queries, 4 asks as few times
/// as the former 4x restart did, for fewer children (2 and 3 ask a third time more often).
const WIDENING_MARGIN: usize = 4;

/// What [`collect`] found.
pub struct Collected {
    /// The reading units, best first, each with its children among those taken, best
    /// first (its best child first).
    pub hits: Vec<Hit>,
    /// The child number of each hit's best child, in the order of `hits`.
    pub best_children: Vec<u32>,
    /// Units left out as near-duplicates of better ones.
    pub duplicates: usize,
    /// The last ranking asked for: its children, paths and costs.
    pub search: ChildSearch,
}

/// Groups the children `rank` ranks into the reading units `request` asks for, reading
/// them through `chunks`: `min(k, visible)` units at most, where `visible` is how many
/// children the caller may see (what a ranking can return).
///
/// Children are taken best first; a unit is offered when its best child comes (expanded,
/// then merged, dropped as a near-duplicate, skipped for the budget or accepted), and the
/// children stop being taken when `k` units were accepted or skipped. When the ranking
/// runs out first, `rank` is asked for more children (sized from the children per unit
/// seen so far) and the collector resumes where it stopped, or groups the new ranking
/// again when it does not begin with the children already taken. The answer is that of
/// the last ranking, as if it had been grouped in one pass.
pub fn collect(
    rank: &mut dyn Rank,
    chunks: &dyn Chunks,
    request: &SearchRequest,
    visible: u64,
) -> Result<Collected, QueryError> {
    // Nothing beyond the visible children can be returned: a huge `k` or `children`
    // must cost no more than "everything".
    let seen = usize::try_from(visible).unwrap_or(usize::MAX);
    let k = request.k.min(seen);
    let mut n = request
        .children
        .unwrap_or(k.saturating_mul(CHILDREN_PER_UNIT).max(MIN_CHILDREN))
        .max(k)
        .min(seen);
    let mut collector = Collector::new(request, k);
    loop {
        let search = rank.rank(n)?;
        let found = search.neighbors.len();
        let exhausted = found >= seen || found < n;
        collector.take(chunks, &search.neighbors)?;
        if collector.answer.is_full() || exhausted {
            let duplicates = collector.answer.duplicates();
            let (hits, best_children) = collector.answer.into_hits();
            return Ok(Collected {
                duplicates,
                hits,
                best_children,
                search,
            });
        }
        n = collector.next_width(n).min(seen);
    }
}

/// Units in the making over the passes of one search.
struct Collector<'r> {
    request: &'r SearchRequest,
    k: usize,
    answer: Answer<'r>,
    /// What each unit met in this pass became.
    taken: HashMap<UnitKey, Taken>,
    /// Every unit expanded in this search, by key.
    built: HashMap<UnitKey, Rc<Unit>>,
    /// The children taken in this pass, in order.
    consumed: Vec<Neighbor>,
}

impl<'r> Collector<'r> {
    fn new(request: &'r SearchRequest, k: usize) -> Self {
        Collector {
            request,
            k,
            answer: Answer::new(request, k),
            taken: HashMap::new(),
            built: HashMap::new(),
            consumed: Vec::new(),
        }
    }

    /// Takes the children of `ranked` (best first) until the answer is full: from where
    /// the last pass stopped when `ranked` begins with the children it took, else from
    /// the first.
    fn take(&mut self, chunks: &dyn Chunks, ranked: &[Neighbor]) -> Result<(), QueryError> {
        let same =
            |a: &Neighbor, b: &Neighbor| a.id == b.id && a.score.to_bits() == b.score.to_bits();
        let resumes = ranked
            .get(..self.consumed.len())
            .is_some_and(|prefix| prefix.iter().zip(&self.consumed).all(|(a, b)| same(a, b)));
        if !resumes {
            self.answer = Answer::new(self.request, self.k);
            self.taken.clear();
            self.consumed.clear();
        }
        for &child in ranked.get(self.consumed.len()..).unwrap_or_default() {
            if self.answer.is_full() {
                break;
            }
            self.consumed.push(child);
            self.take_child(chunks, child)?;
        }
        Ok(())
    }

    fn take_child(&mut self, chunks: &dyn Chunks, ranked: Neighbor) -> Result<(), QueryError> {
        let child = chunks.child(ranked.id)?;
        let key = unit_key(&child, self.request.expand);
        let taken = match self.taken.get(&key) {
            Some(&taken) => taken,
            None => {
                // The unit's first child in best-first order: its best.
                let unit = match self.built.get(&key) {
                    Some(unit) => unit.clone(),
                    None => {
                        let unit = Rc::new(Unit::build(chunks, &child, self.request)?);
                        self.built.insert(key, unit.clone());
                        unit
                    }
                };
                let taken = self.answer.offer(&unit, ranked);
                self.taken.insert(key, taken);
                taken
            }
        };
        if let Taken::Hit(hit) | Taken::Merged(hit) = taken {
            self.answer.add_child(hit, &child, ranked.score);
        }
        Ok(())
    }

    /// How many children to ask for after `n` left the answer short.
    fn next_width(&self, n: usize) -> usize {
        let held = self.answer.held();
        if held == 0 {
            return n.saturating_mul(4);
        }
        let per_unit = n.div_ceil(held);
        let missing = self.k.saturating_sub(held);
        n.saturating_add(
            missing
                .saturating_mul(per_unit)
                .saturating_mul(WIDENING_MARGIN),
        )
        .max(n.saturating_mul(2))
    }
}
