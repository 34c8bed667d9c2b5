//! The exact scan: the planner's fallback for small visible sets and the oracle in tests.

use std::cmp::Ordering;

use roaring::RoaringBitmap;
use serde::{Deserialize, Serialize};

use super::distance::prefetch_lines;
use super::vectors::VectorSet;

/// A search hit: a global id and its score (higher is better).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Neighbor {
    /// The global id.
    pub id: u32,
    /// Its similarity to the query.
    pub score: f32,
}

impl Neighbor {
    /// The result order: higher score first, then smaller id, so ties are deterministic.
    /// A total order (kernels never produce NaN; a NaN here sorts by its bits), so usable
    /// with `sort_by`.
    #[inline]
    pub fn rank(&self, other: &Neighbor) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.id.cmp(&other.id))
    }

    /// Whether `self` ranks strictly before `other`.
    #[inline]
    pub fn beats(&self, other: &Neighbor) -> bool {
        self.rank(other) == Ordering::Less
    }
}

/// The best `k` neighbours seen so far: a binary min-heap (worst at the root) that
/// allocates once for any `k` up to [`TopK::PREALLOCATED`].
#[derive(Debug, Clone)]
pub struct TopK {
    k: usize,
    heap: Vec<Neighbor>,
}

impl TopK {
    /// Above this `k` the heap grows with what it is offered: a huge `k` (say
    /// `usize::MAX`, "everything") must not allocate up front.
    pub const PREALLOCATED: usize = 4096;

    /// An empty collector for the best `k`.
    pub fn new(k: usize) -> Self {
        TopK {
            k,
            heap: Vec::with_capacity(k.min(Self::PREALLOCATED)),
        }
    }

    /// Offers a candidate; kept if among the best `k` so far.
    #[inline]
    pub fn push(&mut self, cand: Neighbor) {
        if self.heap.len() < self.k {
            self.heap.push(cand);
            self.sift_up(self.heap.len() - 1);
        } else if self.k > 0 && cand.beats(&self.heap[0]) {
            self.heap[0] = cand;
            self.sift_down(0);
        }
    }

    /// A score below which no candidate can enter (`-inf` until `k` are held): lets scans
    /// skip the full comparison for most candidates.
    #[inline]
    pub fn threshold(&self) -> f32 {
        if self.heap.len() < self.k || self.k == 0 {
            f32::NEG_INFINITY
        } else {
            self.heap[0].score
        }
    }

    /// Number held.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether none are held.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The held neighbours, best first.
    pub fn into_sorted(mut self) -> Vec<Neighbor> {
        self.heap.sort_by(Neighbor::rank);
        self.heap
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.heap[parent].beats(&self.heap[i]) {
                break;
            }
            self.heap.swap(parent, i);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let len = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut worst = i;
            if l < len && self.heap[worst].beats(&self.heap[l]) {
                worst = l;
            }
            if r < len && self.heap[worst].beats(&self.heap[r]) {
                worst = r;
            }
            if worst == i {
                break;
            }
            self.heap.swap(i, worst);
            i = worst;
        }
    }
}

/// Exact top-`k` of the segment's vectors whose global id (`base + local`) is in
/// `visible`. Results carry global ids, best first. The query must already be normalised
/// for [`super::Metric::Cosine`].
pub fn exact_search(
    vectors: VectorSet<'_>,
    base: u32,
    query: &[f32],
    k: usize,
    visible: &RoaringBitmap,
) -> Vec<Neighbor> {
    let end = base.saturating_add(vectors.len() as u32);
    scan(vectors, base, query, k, visible.range(base..end))
}

/// Exact top-`k` over all the segment's vectors.
pub fn exact_search_all(
    vectors: VectorSet<'_>,
    base: u32,
    query: &[f32],
    k: usize,
) -> Vec<Neighbor> {
    let end = base.saturating_add(vectors.len() as u32);
    scan(vectors, base, query, k, base..end)
}

/// Ids scored per batch: the rows of the next batch are prefetched while this one is
/// scored, because sparse visible ids defeat the hardware prefetcher.
const BATCH: usize = 16;

fn scan(
    vectors: VectorSet<'_>,
    base: u32,
    query: &[f32],
    k: usize,
    mut ids: impl Iterator<Item = u32>,
) -> Vec<Neighbor> {
    let scorer = vectors.scorer();
    let mut top = TopK::new(k);
    let mut threshold = top.threshold();
    let mut batch = [0u32; BATCH];
    let mut next = [0u32; BATCH];
    let mut len = fill(&mut ids, &mut batch, vectors, base);
    while len > 0 {
        let next_len = fill(&mut ids, &mut next, vectors, base);
        for &local in &batch[..len] {
            let score = scorer.score(query, vectors.row(local));
            if score >= threshold {
                top.push(Neighbor {
                    id: base + local,
                    score,
                });
                threshold = top.threshold();
            }
        }
        (batch, len) = (next, next_len);
    }
    top.into_sorted()
}

/// Takes up to `BATCH` ids as local ids into `out` and prefetches their rows.
#[inline]
fn fill(
    ids: &mut impl Iterator<Item = u32>,
    out: &mut [u32; BATCH],
    vectors: VectorSet<'_>,
    base: u32,
) -> usize {
    let mut len = 0;
    for (slot, id) in out.iter_mut().zip(ids) {
        *slot = id - base;
        prefetch_lines(vectors.row(*slot));
        len += 1;
    }
    len
}

/// Merges per-segment result lists into the global top-`k`, best first.
pub fn merge_top_k<I>(lists: I, k: usize) -> Vec<Neighbor>
where
    I: IntoIterator,
    I::Item: IntoIterator<Item = Neighbor>,
{
    let mut top = TopK::new(k);
    lists.into_iter().flatten().for_each(|n| top.push(n));
    top.into_sorted()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Metric;

    /// The ranking of the tie-heavy data below, worked out rather than scored: row `i` is
    /// `(i % 7, i % 7)`, so against `(3, 3)` its L2 score is `-2 d^2` with
    /// `d = |i % 7 - 3|`, and rows with equal `d` tie exactly. `ids` must be ascending.
    fn ranked(ids: impl IntoIterator<Item = u32>, k: usize) -> Vec<Neighbor> {
        let d = |id: u32| ((id - 1000) % 7).abs_diff(3);
        let mut ids: Vec<u32> = ids.into_iter().collect();
        // Stable: ties keep ascending id order.
        ids.sort_by_key(|&id| d(id));
        ids.truncate(k);
        ids.into_iter()
            .map(|id| Neighbor {
                id,
                score: -2.0 * (d(id) * d(id)) as f32,
            })
            .collect()
    }

    #[test]
    fn exact_matches_the_known_ranking_and_breaks_ties_by_id() {
        // Duplicated rows make exact ties.
        let data: Vec<f32> = (0..200).map(|i| ((i / 2) % 7) as f32).collect();
        let vs = VectorSet::new(&data, 2, Metric::L2).unwrap();
        let visible: RoaringBitmap = (1000..1100).filter(|i| i % 3 != 0).collect();
        for k in [0, 1, 5, 100] {
            let got = exact_search(vs, 1000, &[3.0, 3.0], k, &visible);
            assert_eq!(got, ranked(&visible, k), "k={k}");
        }
        let all = exact_search_all(vs, 1000, &[3.0, 3.0], 4);
        assert_eq!(all, ranked(1000..1100, 4));
    }

    #[test]
    fn ids_outside_the_segment_are_ignored() {
        let data = vec![0.0f32; 10];
        let vs = VectorSet::new(&data, 1, Metric::Dot).unwrap();
        let visible: RoaringBitmap = [0, 4, 5, 14, 15, 99].into_iter().collect();
        let ids: Vec<u32> = exact_search(vs, 5, &[1.0], 10, &visible)
            .iter()
            .map(|n| n.id)
            .collect();
        assert_eq!(ids, vec![5, 14]);
    }

    #[test]
    fn merge_keeps_global_best() {
        let a = vec![
            Neighbor { id: 1, score: 0.9 },
            Neighbor { id: 2, score: 0.1 },
        ];
        let b = vec![
            Neighbor { id: 7, score: 0.5 },
            Neighbor { id: 0, score: 0.5 },
        ];
        let ids: Vec<u32> = merge_top_k([a, b], 3).iter().map(|n| n.id).collect();
        assert_eq!(ids, vec![1, 0, 7]);
    }
}
