//! From units to hits. A unit is expanded around its best child (its parent, its whole
//! section, or a window of children) over [`Chunks`]; then, taken in order of best child,
//! each unit is merged into an accepted one of the same document it overlaps, dropped as
//! a near-duplicate of an accepted one, skipped when the token budget has no room for it,
//! or accepted. The answer is full when `k` units were accepted or skipped for the budget:
//! units the budget had no room for are not replaced, or a tight budget would read every
//! visible unit.

use std::rc::Rc;

use super::dedup::{near_duplicate, Shingles};
use super::units::Chunks;
use super::{ChildHit, Expand, Hit, QueryError, SearchRequest, StageScores};
use crate::index::Neighbor;
use crate::storage::error::StorageError;
use crate::storage::read::docs::{chunk_id, parent_id};
use crate::storage::read::snapshot::{DocView, StoredChild};

/// What children are grouped by: the document revision and the parent number (for a
/// parent or section), or the child's own number (a window).
pub(crate) type UnitKey = (u64, u32);

/// The unit `child` belongs to.
pub(crate) fn unit_key(child: &StoredChild, expand: Expand) -> UnitKey {
    match expand {
        Expand::Parent | Expand::Section => (child.rev, child.parent),
        Expand::Window(_) => (child.rev, child.number),
    }
}

/// A reading unit as expanded: what a hit of it shows. Everything here follows from its
/// [`UnitKey`], so a unit built once serves every pass of a search.
pub(crate) struct Unit {
    doc: Rc<DocView>,
    /// Of the parent of the child it was built around.
    parent_ordinal: u32,
    section_path: Vec<String>,
    start: usize,
    end: usize,
    text: String,
    tokens: usize,
    /// When near-duplicates are removed.
    shingles: Option<Shingles>,
}

impl Unit {
    /// The unit around `child`, as `request` expands and counts it.
    pub(crate) fn build(
        chunks: &dyn Chunks,
        child: &StoredChild,
        request: &SearchRequest,
    ) -> Result<Unit, QueryError> {
        let (start, end, section_path) = span(chunks, child, request.expand)?;
        let doc = chunks.doc(child.rev)?;
        let source = doc.text.get(start..end).ok_or_else(|| {
            StorageError::Corrupt(format!("span {start}..{end} outside its text"))
        })?;
        // What the reader sees is what is returned, counted and compared (an HTML unit's tags
        // are no words of the answer); the span keeps the source bytes for citations.
        let text = crate::chunk::visible_text_of(source, doc.format).into_owned();
        let tokens = match &request.budget_tokens {
            Some(counter) => counter.count(&text),
            None => crate::tokens::count(&text),
        };
        let shingles = request.dedup.map(|_| Shingles::of(&text));
        Ok(Unit {
            doc,
            parent_ordinal: child.parent_ordinal,
            section_path,
            start,
            end,
            text,
            tokens,
            shingles,
        })
    }

    fn overlaps(&self, other: &Unit) -> bool {
        self.doc.doc_id == other.doc.doc_id && self.start < other.end && other.start < self.end
    }

    fn duplicates(&self, other: &Unit, threshold: f32) -> bool {
        match (&self.shingles, &other.shingles) {
            (Some(a), Some(b)) => near_duplicate((&self.text, a), (&other.text, b), threshold),
            _ => false,
        }
    }
}

/// The byte span and heading path of the unit around `child`.
pub(crate) fn span(
    chunks: &dyn Chunks,
    child: &StoredChild,
    expand: Expand,
) -> Result<(usize, usize, Vec<String>), QueryError> {
    match expand {
        Expand::Parent => {
            let parent = chunks.parent(child.parent)?;
            Ok((parent.start, parent.end, parent.section_path))
        }
        Expand::Section => {
            // A long section was split into several parents: put them back together.
            let ranges = chunks.chunk_ranges(child)?;
            let parent = chunks.parent(child.parent)?;
            let (mut start, mut end) = (parent.start, parent.end);
            let mut before = parent.number;
            while before > ranges.parents.start {
                let p = chunks.parent(before - 1)?;
                if p.section_path != parent.section_path {
                    break;
                }
                start = p.start;
                before -= 1;
            }
            let mut after = parent.number + 1;
            while after < ranges.parents.end {
                let p = chunks.parent(after)?;
                if p.section_path != parent.section_path {
                    break;
                }
                end = p.end;
                after += 1;
            }
            Ok((start, end, parent.section_path))
        }
        Expand::Window(n) => {
            let ranges = chunks.chunk_ranges(child)?;
            // Validated to fit: `Expand::validate`.
            let n = u32::try_from(n).unwrap_or(u32::MAX);
            let first = child.number.saturating_sub(n).max(ranges.children.start);
            let last = child
                .number
                .saturating_add(n)
                .min(ranges.children.end.saturating_sub(1));
            let start = chunks.child(first)?.start;
            let end = chunks.child(last)?.end;
            Ok((
                start.min(child.start),
                end.max(child.end),
                child.section_path.clone(),
            ))
        }
    }
}

/// What a unit became.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Taken {
    /// Accepted as hit number `n`.
    Hit(usize),
    /// Overlaps hit number `n`, which takes its children.
    Merged(usize),
    /// A near-duplicate of an accepted unit.
    Duplicate,
    /// The budget had no room for it.
    OverBudget,
}

/// The hits of a search as units are offered, best first.
pub(crate) struct Answer<'r> {
    request: &'r SearchRequest,
    k: usize,
    hits: Vec<Hit>,
    /// The units of `hits`, in the same order.
    units: Vec<Rc<Unit>>,
    /// The child number of each hit's best child, in the same order.
    best_children: Vec<u32>,
    spent: usize,
    duplicates: usize,
    over_budget: usize,
}

impl<'r> Answer<'r> {
    /// An empty answer to `request` that holds at most `k` units.
    pub(crate) fn new(request: &'r SearchRequest, k: usize) -> Self {
        Answer {
            request,
            k,
            hits: Vec::new(),
            units: Vec::new(),
            best_children: Vec::new(),
            spent: 0,
            duplicates: 0,
            over_budget: 0,
        }
    }

    /// Whether `k` units were accepted or skipped for the budget: no unit is offered after.
    pub(crate) fn is_full(&self) -> bool {
        self.held() >= self.k
    }

    /// Units accepted or skipped for the budget.
    pub(crate) fn held(&self) -> usize {
        self.hits.len() + self.over_budget
    }

    /// Offers the next unit, whose best child is `best`; an accepted one starts with no
    /// children ([`Answer::add_child`]).
    pub(crate) fn offer(&mut self, unit: &Rc<Unit>, best: Neighbor) -> Taken {
        if let Some(i) = self.units.iter().position(|u| u.overlaps(unit)) {
            // Overlapping windows (or parents of one section) merge into the better unit.
            return Taken::Merged(i);
        }
        if let Some(threshold) = self.request.dedup {
            if self.units.iter().any(|u| u.duplicates(unit, threshold)) {
                self.duplicates += 1;
                return Taken::Duplicate;
            }
        }
        if let Some(budget) = self.request.token_budget {
            if self.spent + unit.tokens > budget {
                self.over_budget += 1;
                return Taken::OverBudget;
            }
        }
        self.spent += unit.tokens;
        let doc = &unit.doc;
        self.hits.push(Hit {
            doc_id: doc.doc_id.clone(),
            parent_id: parent_id(&doc.doc_id, unit.parent_ordinal),
            section_path: unit.section_path.clone(),
            source_uri: doc.source_uri.clone(),
            title: doc.title.clone(),
            metadata: doc.metadata.clone(),
            score: best.score,
            scores: StageScores::default(),
            text: unit.text.clone(),
            start: unit.start,
            end: unit.end,
            pages: crate::chunk::pages(
                &doc.text,
                doc.format,
                crate::chunk::Span {
                    start: unit.start,
                    end: unit.end,
                },
            ),
            tokens: unit.tokens,
            children: Vec::new(),
        });
        self.units.push(unit.clone());
        self.best_children.push(best.id);
        Taken::Hit(self.hits.len() - 1)
    }

    /// Adds `child`, which scored `score`, to hit `hit` (children come best first).
    pub(crate) fn add_child(&mut self, hit: usize, child: &StoredChild, score: f32) {
        if let Some(hit) = self.hits.get_mut(hit) {
            hit.children.push(ChildHit {
                chunk_id: chunk_id(&hit.doc_id, child.ordinal),
                score,
                start: child.start,
                end: child.end,
            });
        }
    }

    /// Units dropped as near-duplicates.
    pub(crate) fn duplicates(&self) -> usize {
        self.duplicates
    }

    /// The hits, best first, and the child number of each one's best child.
    pub(crate) fn into_hits(self) -> (Vec<Hit>, Vec<u32>) {
        (self.hits, self.best_children)
    }
}
