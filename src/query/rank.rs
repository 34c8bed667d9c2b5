//! The first stage: ranking a version's children for a query. [`Rank`] answers "the best
//! `n` children the caller may see, best first"; `Segments` asks the version's own
//! segments on a [`Snapshot`], `Through` a [`ChildSource`] (another engine's copy of the
//! version), checked against the store. A lexical leg, a fusion of legs or a reranker is
//! another implementation; the collector (`collect.rs`) asks again with a larger `n` when
//! the children it was given hold too few units.

use roaring::RoaringBitmap;

use super::source::{Ask, ChildSource, WrongChild};
use super::units::Chunks;
use super::QueryError;
use crate::index::{ChildSearch, Metric, Neighbor, QueryVector, SearchOptions, Strategy};
use crate::storage::read::docs::chunk_id;
use crate::storage::read::snapshot::Snapshot;
use crate::storage::read::state::VersionView;

/// Ranks one version's visible children for one query.
pub trait Rank {
    /// The best `wanted` children the caller may see, best first (equal scores by child
    /// number), with what finding them cost; fewer only when there are no more. Asked
    /// again with a larger `wanted`, a ranking should begin with the children it gave
    /// before (an exact one does): the collector then resumes where it stopped instead of
    /// grouping again.
    fn rank(&mut self, wanted: usize) -> Result<ChildSearch, QueryError>;
}

/// A ranker borrowed: what [`super::search_ranked`] is handed.
impl<R: Rank + ?Sized> Rank for &mut R {
    fn rank(&mut self, wanted: usize) -> Result<ChildSearch, QueryError> {
        (**self).rank(wanted)
    }
}

/// A ranker whose time is counted: `micros` adds up every call (the stage `name` of
/// [`super::StageTimes`]).
pub(crate) struct Timed<R> {
    inner: R,
    name: &'static str,
    pub(crate) micros: u64,
}

impl<R: Rank> Timed<R> {
    pub(crate) fn new(name: &'static str, inner: R) -> Self {
        Timed {
            inner,
            name,
            micros: 0,
        }
    }
}

impl<R: Rank> Rank for Timed<R> {
    fn rank(&mut self, wanted: usize) -> Result<ChildSearch, QueryError> {
        super::timed(self.name, &mut self.micros, || self.inner.rank(wanted))
    }
}

/// The version's own segments, searched by the planner (an exact scan or a graph walk per
/// segment) among the visible children.
pub(crate) struct Segments<'a> {
    pub(crate) snapshot: &'a Snapshot<'a>,
    pub(crate) view: &'a VersionView,
    pub(crate) query: &'a QueryVector,
    pub(crate) visible: &'a RoaringBitmap,
    /// Graph breadth; the planner's when `None`.
    pub(crate) ef: Option<usize>,
    /// A compressed segment's re-score width; its index's when `None`.
    pub(crate) rescore: Option<usize>,
}

impl Rank for Segments<'_> {
    fn rank(&mut self, wanted: usize) -> Result<ChildSearch, QueryError> {
        let options = SearchOptions {
            k: wanted,
            ef: self.ef,
            strategy: Strategy::Auto,
        };
        Ok(self.snapshot.search_children(
            self.view,
            self.query,
            options,
            self.rescore,
            self.visible,
        )?)
    }
}

/// Children ranked by a [`ChildSource`], each answer checked here: a child the caller may
/// not see now (a remote row not yet synced) is dropped, a repeat too, and a child whose
/// chunk id is not the one the version holds under its number (a copy of another store) or
/// whose score is not a number fails the search. Best first, ties by child number as a
/// local search orders them.
pub(crate) struct Through<'a> {
    pub(crate) source: &'a mut dyn ChildSource,
    /// Reads the records the answers are checked against (and keeps them for the units).
    pub(crate) chunks: &'a dyn Chunks,
    pub(crate) index: &'a str,
    pub(crate) version: u64,
    pub(crate) metric: Metric,
    pub(crate) query: &'a [f32],
    pub(crate) access: &'a crate::storage::read::state::Access,
    pub(crate) visible: &'a RoaringBitmap,
}

impl Rank for Through<'_> {
    fn rank(&mut self, wanted: usize) -> Result<ChildSearch, QueryError> {
        let ask = Ask {
            index: self.index,
            version: self.version,
            metric: self.metric,
            query: self.query,
            wanted,
            access: self.access,
            visible: self.visible,
        };
        let remote = |source: &dyn ChildSource, error| QueryError::Remote {
            source_name: source.name().to_string(),
            error,
        };
        let candidates = self
            .source
            .children(&ask)
            .map_err(|error| remote(&*self.source, error))?;
        let mut seen = RoaringBitmap::new();
        let mut neighbors = Vec::with_capacity(candidates.len());
        for candidate in candidates {
            if !ask.is_visible(candidate.child) || !seen.insert(candidate.child) {
                continue;
            }
            let record = self.chunks.child(candidate.child)?;
            let doc = self.chunks.doc(record.rev)?;
            let expected = chunk_id(&doc.doc_id, record.ordinal);
            if candidate.chunk_id != expected || !candidate.score.is_finite() {
                let error = WrongChild {
                    child: candidate.child,
                    index: self.index.to_string(),
                    version: self.version,
                    expected,
                    answered: candidate.chunk_id,
                    score: candidate.score,
                };
                return Err(remote(&*self.source, Box::new(error)));
            }
            neighbors.push(Neighbor {
                id: candidate.child,
                score: candidate.score,
            });
        }
        neighbors.sort_by(Neighbor::rank);
        neighbors.truncate(wanted);
        Ok(ChildSearch {
            neighbors,
            paths: Vec::new(),
            distances: 0,
            rescored: 0,
            lists: 0,
        })
    }
}
