//! Gathered codes of small visible sets.
//!
//! A restrictive ACL leaves a few thousand visible rows scattered through a segment, each
//! on its own lines: a scan of their walk codes in place waits on memory, not arithmetic
//! (200k x 384, 2,000 visible: about 56 µs a query however far ahead the rows are
//! prefetched, against 13 µs for the same codes copied together; 2026-12-05). The same
//! caller asks again and again, so a segment keeps the codes of its few most recent small
//! visible sets copied into one block, with each row's distance from its code, and scans
//! that (`coded.rs`). The copy is a quarter of the f32 rows' bytes, the answer stays exact
//! (the bounds hold as on the segment's codes) and the rows that may rank are scored on
//! the segment's own rows.
//!
//! A hit is decided by comparing the visible ids themselves, never a hash: a stale or
//! colliding entry could otherwise return a hidden row.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use roaring::RoaringBitmap;

use super::hnsw::quant::{Codes, Interleaved, Residuals};

/// Sets gathered per segment at most; the least recently used is dropped first.
const ENTRIES: usize = 8;
/// A visible set is gathered only when it is at most this share of the segment's rows
/// (1/8): past it a graph walk answers (the planner's choice), and a copy would cost more
/// than it saves.
const MAX_SHARE_SHIFT: u32 = 3;
/// The rows held over all sets at most, as a share of the segment's rows (1/4): a
/// sixteenth of the segment's f32 bytes.
const HELD_SHARE_SHIFT: u32 = 2;

/// The codes of one visible set's rows, copied together in id order.
#[derive(Debug)]
pub(crate) struct Gathered {
    /// The global ids gathered (all within the segment): the cache key.
    visible: RoaringBitmap,
    /// Local ids (row numbers in the segment), ascending: row `i` of `interleaved` is
    /// row `ids[i]` of the segment.
    pub(crate) ids: Vec<u32>,
    /// The segment's code ranges and the rows' norms, to prepare a query against.
    pub(crate) ranges: Codes,
    /// The rows' codes.
    pub(crate) interleaved: Interleaved,
    /// The rows' distances from their codes.
    pub(crate) residuals: Residuals,
}

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

    /// The gathered codes of the rows of a segment of `codes.rows()` rows (global ids from
    /// `base`) whose id is in `visible`: the cached copy of that set, gathered first on
    /// a miss.
    pub(crate) fn get(
        &self,
        codes: &Codes,
        residuals: &Residuals,
        base: u32,
        visible: &RoaringBitmap,
    ) -> Arc<Gathered> {
        let len = codes.rows();
        let end = base.saturating_add(len);
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
        if let Some(set) = self.find(key) {
            return set;
        }
        // Gathered outside the lock; a thread that gathered the same set meanwhile keeps
        // its entry, so a set is held once.
        let mut ids = Vec::with_capacity(key.len() as usize);
        key.iter().for_each(|id| ids.push(id - base));
        let (ranges, interleaved) = codes.gather(&ids);
        let set = Arc::new(Gathered {
            visible: key.clone(),
            ranges,
            interleaved,
            residuals: residuals.gather(&ids),
            ids,
        });
        let mut entries = self.entries.lock();
        if !entries.iter().any(|e| e.visible == set.visible) {
            entries.push_front(set.clone());
            let budget = (len >> HELD_SHARE_SHIFT) as usize;
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
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::hnsw::quant::coded_rows;
    use crate::index::Metric;

    fn codes(n: usize, dim: usize) -> (Codes, Residuals) {
        let (data, codes) = coded_rows(n, dim, Metric::L2);
        let mut residuals = Residuals::default();
        residuals.extend(&codes, &data);
        (codes, residuals)
    }

    #[test]
    fn admits_only_small_shares() {
        assert!(GatherCache::admits(125, 1000));
        assert!(!GatherCache::admits(126, 1000));
        assert!(!GatherCache::admits(0, 1000));
    }

    #[test]
    fn a_gathered_set_holds_its_rows_codes_and_hits_reuse_it() {
        let (codes, residuals) = codes(3000, 8);
        let cache = GatherCache::default();
        let a: RoaringBitmap = (100..3100).step_by(37).collect();
        let b: RoaringBitmap = (100..3100).step_by(41).collect();
        // Ids of other segments, below and above this one's, are no part of the key.
        let mut wider = a.clone();
        wider.extend([0, 7, 99, 3100, 5000]);
        for visible in [&a, &b, &a, &wider] {
            let set = cache.get(&codes, &residuals, 100, visible);
            let want: Vec<u32> = visible.range(100..3100).map(|id| id - 100).collect();
            assert_eq!(set.ids, want);
            assert_eq!(set.interleaved, codes.gather(&want).1);
            assert_eq!(set.residuals, residuals.gather(&want));
        }
        assert_eq!(
            cache.len(),
            2,
            "the third and fourth searches reused the first copy"
        );
    }

    #[test]
    fn threads_asking_for_one_set_share_one_copy() {
        let (codes, residuals) = codes(4000, 16);
        let cache = GatherCache::default();
        let visible: RoaringBitmap = (0..4000).step_by(50).collect();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                let (cache, visible, codes, residuals) = (&cache, &visible, &codes, &residuals);
                scope.spawn(move || {
                    for _ in 0..20 {
                        assert_eq!(cache.get(codes, residuals, 0, visible).ids.len(), 80);
                    }
                });
            }
        });
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_set_differing_in_one_id_is_not_a_hit() {
        let (codes, residuals) = codes(1000, 4);
        let cache = GatherCache::default();
        let a: RoaringBitmap = [1, 5, 9, 13].into_iter().collect();
        let mut b = a.clone();
        b.remove(13);
        b.insert(14);
        cache.get(&codes, &residuals, 0, &a);
        assert_eq!(cache.get(&codes, &residuals, 0, &b).ids, [1, 5, 9, 14]);
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn large_sets_share_a_budget_of_a_quarter_of_the_rows() {
        let (codes, residuals) = codes(1000, 2);
        let cache = GatherCache::default();
        // Three sets of 1/8 of the rows each: the third pushes the first out.
        let set = |start: u32| (start..1000).step_by(8).collect::<RoaringBitmap>();
        for start in 0..3 {
            cache.get(&codes, &residuals, 0, &set(start));
        }
        assert_eq!(cache.len(), 2);
        assert!(cache.find(&set(0)).is_none());
        assert!(cache.find(&set(1)).is_some() && cache.find(&set(2)).is_some());
    }

    #[test]
    fn the_oldest_set_is_dropped_first() {
        let (codes, residuals) = codes(1000, 2);
        let cache = GatherCache::default();
        let sets = ENTRIES as u32 + 3;
        for start in 0..sets {
            let visible: RoaringBitmap = (start..start + 10).collect();
            cache.get(&codes, &residuals, 0, &visible);
        }
        assert_eq!(cache.len(), ENTRIES);
        let held = |start: u32| cache.find(&(start..start + 10).collect()).is_some();
        assert!(!held(0) && !held(2));
        assert!(held(3) && held(sets - 1));
    }
}
