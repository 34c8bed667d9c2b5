//! The layered adjacency: each node's level, drawn from a hash, and its link lists on
//! every layer up to that level.

use super::super::distance::prefetch_lines;
use super::super::shared::Slab;
use std::sync::atomic::{AtomicU32, Ordering};

/// Highest level a node can get; the chance of reaching it at M=16 is 16^-15.
pub(crate) const MAX_LEVEL: u8 = 15;

/// The top of the hierarchy, where every search starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) id: u32,
    pub(crate) level: u8,
}

/// The level of node `id`: geometric with ratio `1/m`, from a hash of `(seed, id)`.
pub(crate) fn draw_level(seed: u64, id: u32, m: usize) -> u8 {
    let bits = splitmix64(seed ^ u64::from(id).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    // Uniform in (0, 1]: 53 random bits, never zero.
    let unit = ((bits >> 11) + 1) as f64 / (1u64 << 53) as f64;
    let level = (-unit.ln() / (m as f64).ln()).floor();
    level.min(f64::from(MAX_LEVEL)) as u8
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A link slot: plain `u32` in a finished graph, atomic while threads build it.
pub(crate) trait Slot: Sync {
    fn get(&self) -> u32;
    /// Reads a list's count; pairs with the release store of the writer, so the ids it
    /// covers are visible.
    fn count(&self) -> u32;
}

impl Slot for u32 {
    #[inline(always)]
    fn get(&self) -> u32 {
        *self
    }
    #[inline(always)]
    fn count(&self) -> u32 {
        *self
    }
}

impl Slot for AtomicU32 {
    #[inline(always)]
    fn get(&self) -> u32 {
        self.load(Ordering::Relaxed)
    }
    #[inline(always)]
    fn count(&self) -> u32 {
        self.load(Ordering::Acquire)
    }
}

/// Adjacency lists of all layers. A list is `[count, id_0, .., id_{w-1}]`; `w` is `m0` on
/// layer 0 and `m` above.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Links<S> {
    pub(crate) m: usize,
    pub(crate) m0: usize,
    /// `n` lists of `1 + m0` slots: the bulk of the graph, so it may be a shared view.
    pub(crate) layer0: Slab<S>,
    /// Node by node, `level` lists of `1 + m` slots (layer 1 first).
    pub(crate) upper: Vec<S>,
    /// Per node, the index of its first upper list in `upper` (in lists); `n + 1` entries.
    pub(crate) upper_start: Vec<usize>,
}

impl<S: Slot> Links<S> {
    pub(super) fn new(m: usize) -> Self {
        Links {
            m,
            m0: 2 * m,
            layer0: Slab::default(),
            upper: Vec::new(),
            upper_start: vec![0],
        }
    }

    /// The raw list (count slot first) of `node` on `layer`. The caller guarantees the
    /// node exists on that layer.
    #[inline(always)]
    pub(crate) fn list(&self, node: u32, layer: usize) -> &[S] {
        if layer == 0 {
            let w = 1 + self.m0;
            let start = node as usize * w;
            &self.layer0[start..start + w]
        } else {
            let w = 1 + self.m;
            let start = (self.upper_start[node as usize] + layer - 1) * w;
            &self.upper[start..start + w]
        }
    }

    /// Starts fetching the list of `node` on `layer` (which must exist).
    #[inline(always)]
    pub(crate) fn prefetch(&self, node: u32, layer: usize) {
        prefetch_lines(self.list(node, layer));
    }

    /// The neighbour slots of `node` on `layer`.
    #[inline(always)]
    pub(crate) fn neighbours(&self, node: u32, layer: usize) -> &[S] {
        let list = self.list(node, layer);
        let count = (list[0].count() as usize).min(list.len() - 1);
        &list[1..1 + count]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_geometric_and_deterministic() {
        let levels: Vec<u8> = (0..100_000).map(|i| draw_level(7, i, 16)).collect();
        let above = levels.iter().filter(|&&l| l >= 1).count() as f64 / 1e5;
        assert!((above - 1.0 / 16.0).abs() < 0.01, "{above}");
        assert_eq!(
            levels,
            (0..100_000)
                .map(|i| draw_level(7, i, 16))
                .collect::<Vec<_>>()
        );
        assert_ne!(
            levels,
            (0..100_000)
                .map(|i| draw_level(8, i, 16))
                .collect::<Vec<_>>()
        );
    }
}
