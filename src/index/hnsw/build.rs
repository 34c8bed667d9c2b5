//! Parallel insertion (as in hnswlib): threads take node ids in increasing order from a
//! shared counter; lists are atomics read without locks and written under a per-node
//! lock, count last with release ordering, so readers always see valid ids.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::layers::{draw_level, Entry, Links};
use super::quant::{Codes, QuantQuery};
use super::search::{AllVisible, Beam, Expand, Walk};
use super::{Graph, HnswParams};
use crate::index::distance::Scorer;
use crate::index::pages;
use crate::index::vectors::{ShapeError, VectorSet};
use crate::index::visited::{with_scratch, Cand};

/// Progress is reported every this many insertions per thread.
const PROGRESS_STEP: usize = 1024;

impl Graph {
    /// Builds a graph over all of `vectors` on the current rayon pool, reporting the number
    /// of inserted nodes to `progress` now and then (and once at the end). With a
    /// one-thread pool the result is deterministic.
    pub fn build(
        vectors: VectorSet<'_>,
        params: HnswParams,
        progress: &(dyn Fn(usize) + Sync),
    ) -> Graph {
        let mut graph = Graph::empty(vectors, params);
        insert_rows(&mut graph, vectors, progress);
        graph
    }

    /// Inserts the rows of `vectors` past [`Graph::len`] (vectors appended to the segment
    /// since the graph was built); the earlier rows must be unchanged.
    pub fn insert(
        &mut self,
        vectors: VectorSet<'_>,
        progress: &(dyn Fn(usize) + Sync),
    ) -> Result<(), ShapeError> {
        if vectors.dim() != self.dim
            || vectors.metric() != self.metric
            || vectors.len() < self.len()
        {
            return Err(self.mismatch(vectors));
        }
        insert_rows(self, vectors, progress);
        Ok(())
    }

    /// A graph with no nodes yet, its quantiser fitted to `vectors`.
    fn empty(vectors: VectorSet<'_>, params: HnswParams) -> Graph {
        let params = HnswParams {
            m: params.m.max(2),
            ef_construction: params.ef_construction.max(1),
            ..params
        };
        Graph {
            metric: vectors.metric(),
            dim: vectors.dim(),
            params,
            entry: None,
            levels: Vec::new(),
            links: Links::new(params.m),
            codes: Codes::fit(vectors),
        }
    }
}

/// Inserts rows `graph.len()..vectors.len()` of `vectors` (already checked to match).
pub(super) fn insert_rows(
    graph: &mut Graph,
    vectors: VectorSet<'_>,
    progress: &(dyn Fn(usize) + Sync),
) {
    let (old, new) = (graph.len(), vectors.len());
    if new > old {
        graph.codes.extend(vectors);
        // The builder reads the codes while it owns the graph's other arrays.
        let codes = std::mem::take(&mut graph.codes);
        let builder = Builder::from_graph(graph, vectors, &codes);
        builder.run(old, progress);
        builder.finish(graph);
        graph.codes = codes;
    }
    progress(new - old);
}

struct Builder<'a> {
    vectors: VectorSet<'a>,
    codes: &'a Codes,
    scorer: Scorer,
    m: usize,
    ef_construction: usize,
    levels: Vec<u8>,
    links: Links<AtomicU32>,
    locks: Vec<Mutex<()>>,
    entry: Mutex<Option<Entry>>,
}

impl<'a> Builder<'a> {
    /// Moves the graph's arrays into atomics (in place, no copy) and makes room for the
    /// new rows.
    fn from_graph(graph: &mut Graph, vectors: VectorSet<'a>, codes: &'a Codes) -> Self {
        let params = graph.params;
        let mut levels = std::mem::take(&mut graph.levels);
        let old = levels.len();
        levels.extend((old..vectors.len()).map(|i| draw_level(params.seed, i as u32, params.m)));
        let links = std::mem::replace(&mut graph.links, Links::new(params.m));
        let mut upper_start = links.upper_start;
        for &level in &levels[old..] {
            let last = upper_start[upper_start.len() - 1];
            upper_start.push(last + usize::from(level));
        }
        // Read at random by every insertion: huge pages (see `index::pages`); `finish`
        // converts in place, keeping the allocation.
        let mut layer0: Vec<AtomicU32> = pages::with_capacity(levels.len() * (1 + links.m0));
        layer0.extend(links.layer0.into_vec().into_iter().map(AtomicU32::new));
        layer0.resize_with(levels.len() * (1 + links.m0), || AtomicU32::new(0));
        let mut upper: Vec<AtomicU32> = links.upper.into_iter().map(AtomicU32::new).collect();
        upper.resize_with(upper_start[levels.len()] * (1 + links.m), || {
            AtomicU32::new(0)
        });
        Builder {
            vectors,
            codes,
            scorer: vectors.scorer(),
            m: params.m,
            ef_construction: params.ef_construction,
            locks: (0..levels.len()).map(|_| Mutex::new(())).collect(),
            links: Links {
                m: links.m,
                m0: links.m0,
                layer0: layer0.into(),
                upper,
                upper_start,
            },
            levels,
            entry: Mutex::new(graph.entry),
        }
    }

    fn finish(self, graph: &mut Graph) {
        let Links {
            m,
            m0,
            layer0,
            upper,
            upper_start,
        } = self.links;
        graph.links = Links {
            m,
            m0,
            // A builder's lists are its own, never a view.
            layer0: layer0
                .into_owned()
                .unwrap_or_default()
                .into_iter()
                .map(AtomicU32::into_inner)
                .collect::<Vec<_>>()
                .into(),
            upper: upper.into_iter().map(AtomicU32::into_inner).collect(),
            upper_start,
        };
        graph.levels = self.levels;
        graph.entry = self.entry.into_inner();
    }

    /// Inserts nodes `first..` on every thread of the current rayon pool.
    fn run(&self, first: usize, progress: &(dyn Fn(usize) + Sync)) {
        let next = AtomicUsize::new(first);
        let done = AtomicUsize::new(0);
        let n = self.levels.len();
        rayon::broadcast(|_| {
            let mut local = 0;
            loop {
                let id = next.fetch_add(1, Ordering::Relaxed);
                if id >= n {
                    break;
                }
                self.insert(id as u32);
                local += 1;
                if local == PROGRESS_STEP {
                    progress(done.fetch_add(local, Ordering::Relaxed) + local);
                    local = 0;
                }
            }
            done.fetch_add(local, Ordering::Relaxed);
        });
    }

    fn insert(&self, id: u32) {
        let level = self.levels[id as usize];
        let mut entry_guard = self.entry.lock();
        let Some(entry) = *entry_guard else {
            *entry_guard = Some(Entry { id, level });
            return;
        };
        // A node that raises the top keeps the entry locked until it is linked, so no
        // search starts from it half-built.
        let raises_top = level > entry.level;
        let held = if raises_top {
            Some(entry_guard)
        } else {
            drop(entry_guard);
            None
        };
        let row = self.vectors.row(id);
        // Walk on the codes (a quarter of the memory traffic), re-score what they find in
        // f32: links are chosen on exact distances.
        let walk = Walk {
            links: &self.links,
            query: QuantQuery::new(self.codes, row),
            len: self.levels.len(),
        };
        let start = Cand {
            score: walk.score(entry.id),
            id: entry.id,
        };
        let (mut cur, _) = walk.descend(start, usize::from(entry.level), usize::from(level));
        let mut found = Vec::with_capacity(self.ef_construction + 1);
        let mut selected = Vec::with_capacity(self.links.m0);
        for layer in (0..=usize::from(level.min(entry.level))).rev() {
            with_scratch(|scratch| {
                let beam = Beam {
                    ef: self.ef_construction,
                    expand: Expand::Through,
                    budget: usize::MAX,
                };
                walk.search_layer(scratch, cur, layer, beam, &AllVisible);
                found.clear();
                found.extend(scratch.results.drain().map(|r| Cand {
                    score: self.scorer.score(row, self.vectors.row(r.0.id)),
                    id: r.0.id,
                }));
            });
            found.sort_unstable_by(|a, b| b.cmp(a));
            cur = Cand {
                score: walk.score(found[0].id),
                id: found[0].id,
            };
            self.select(&found, self.m, &mut selected);
            self.write_list(id, layer, &selected);
            for &nb in &selected {
                self.link_back(nb, id, layer);
            }
        }
        if let Some(mut guard) = held {
            *guard = Some(Entry { id, level });
        }
    }

    /// hnswlib's heuristic: walk candidates best first and keep one only if it is closer
    /// to the base point than to every kept one, which spreads links across directions.
    fn select(&self, sorted: &[Cand], max: usize, out: &mut Vec<u32>) {
        out.clear();
        for cand in sorted {
            if out.len() >= max {
                break;
            }
            let row = self.vectors.row(cand.id);
            if out
                .iter()
                .all(|&kept| self.scorer.score(row, self.vectors.row(kept)) <= cand.score)
            {
                out.push(cand.id);
            }
        }
    }

    /// Adds `id` to `node`'s list on `layer`, re-selecting by the heuristic when full.
    fn link_back(&self, node: u32, id: u32, layer: usize) {
        let _guard = self.locks[node as usize].lock();
        let width = if layer == 0 {
            self.links.m0
        } else {
            self.links.m
        };
        let list = self.links.list(node, layer);
        let count = list[0].load(Ordering::Relaxed) as usize;
        if count < width {
            list[1 + count].store(id, Ordering::Relaxed);
            list[0].store(count as u32 + 1, Ordering::Release);
            return;
        }
        let row = self.vectors.row(node);
        let mut cands: Vec<Cand> = list[1..=count]
            .iter()
            .map(|slot| slot.load(Ordering::Relaxed))
            .chain([id])
            .map(|other| Cand {
                score: self.scorer.score(row, self.vectors.row(other)),
                id: other,
            })
            .collect();
        cands.sort_unstable_by(|a, b| b.cmp(a));
        let mut kept = Vec::with_capacity(width);
        self.select(&cands, width, &mut kept);
        store_list(list, &kept);
    }

    fn write_list(&self, node: u32, layer: usize, ids: &[u32]) {
        let _guard = self.locks[node as usize].lock();
        store_list(self.links.list(node, layer), ids);
    }
}

/// Writes ids first and the count last (release), so a lock-free reader that sees the
/// count also sees the ids.
fn store_list(list: &[AtomicU32], ids: &[u32]) {
    for (slot, &id) in list[1..].iter().zip(ids) {
        slot.store(id, Ordering::Relaxed);
    }
    list[0].store(ids.len() as u32, Ordering::Release);
}
