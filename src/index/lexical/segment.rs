//! One segment's postings: the term dictionary, and for each term the children holding it
//! with their term frequencies; each child's length in terms; each term's score bounds.

use std::collections::HashMap;

use roaring::RoaringBitmap;

use super::analyzer::Analyzer;
use super::saturation::saturation;

/// Why children could not be built into a [`LexicalSegment`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LexicalBuildError {
    /// A child number was given twice.
    #[error("child {0} is given twice")]
    DuplicateChild(u32),
}

/// The lexical postings of one segment's children (child numbers are global within an
/// index; segments of one version hold disjoint children). Immutable once built; searched
/// by [`super::search`], stored with [`LexicalSegment::to_bytes`].
#[derive(Debug, Clone, PartialEq)]
pub struct LexicalSegment {
    /// Every child of the segment, with or without terms.
    pub(super) children: RoaringBitmap,
    /// Each child's length in terms, in `children`'s (ascending) order.
    pub(super) lengths: Vec<u32>,
    /// Where each child is in `children`'s order (derived from `children`).
    positions: Positions,
    /// The mean of `lengths` (1 when it is 0): the mean length the terms' saturation
    /// bounds were computed with (derived).
    pub(super) reference_length: f64,
    /// Sorted by term, bytewise; each term once.
    pub(super) terms: Vec<TermPostings>,
}

/// One term's postings in a segment.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TermPostings {
    pub(super) term: Box<str>,
    /// The children holding the term (never empty).
    pub(super) children: RoaringBitmap,
    /// The term's frequency in each of `children`, in their order (each at least 1).
    pub(super) frequencies: Vec<u32>,
    /// The largest of `frequencies` (the codec's width for them).
    pub(super) max_frequency: u32,
    /// `children` as an array (derived when built or decoded): a search walks and seeks a
    /// term's postings by position, beside `frequencies`.
    pub(super) ids: Vec<u32>,
    /// Per run of [`BLOCK`] postings, the largest [`saturation`] of its children at the
    /// segment's `reference_length` (derived too): a child's score for the term is its IDF
    /// times `K1 + 1` times its saturation, so these bound a block's scores, and a search
    /// skips a run of children whose blocks cannot enter the top `k`.
    pub(super) blocks: Vec<f64>,
    /// The largest of `blocks`: the bound of every child's score (MaxScore's).
    pub(super) max_saturation: f64,
}

/// Postings per block of [`TermPostings::blocks`]: small enough that a block's bound is
/// tight, large enough that checking it costs little beside scoring its children.
pub(super) const BLOCK: usize = 64;

/// Where each child of a segment is in its order: an array indexed by child number when
/// the children span few more numbers than they are (a segment is a run of child numbers,
/// less the children merges dropped), otherwise the bitmap's rank, whose cost grows with a
/// dense container's popcounts.
#[derive(Debug, Clone, PartialEq)]
enum Positions {
    /// `positions[child - first]`: the child's position, or `u32::MAX` for a gap.
    Table { first: u32, positions: Vec<u32> },
    /// The children's bitmap ranks them.
    Rank,
}

impl Positions {
    /// An array of at most 4 entries a child, plus 256 KiB.
    const MAX_SPAN_PER_CHILD: u64 = 4;
    const SPAN_ALLOWANCE: u64 = 1 << 16;

    fn of(children: &RoaringBitmap) -> Positions {
        let (Some(first), Some(last)) = (children.min(), children.max()) else {
            return Positions::Rank;
        };
        let span = u64::from(last - first) + 1;
        if span > Self::MAX_SPAN_PER_CHILD * children.len() + Self::SPAN_ALLOWANCE {
            return Positions::Rank;
        }
        let mut positions = vec![u32::MAX; span as usize];
        for (position, child) in children.iter().enumerate() {
            // In bounds: first <= child <= last.
            positions[(child - first) as usize] = position as u32;
        }
        Positions::Table { first, positions }
    }
}

impl LexicalSegment {
    /// Analyses each child's text and builds the segment. Children may come in any order;
    /// a child whose text has no term is still counted (length 0).
    pub fn build<'a>(
        children: impl IntoIterator<Item = (u32, &'a str)>,
        analyzer: &Analyzer,
    ) -> Result<LexicalSegment, LexicalBuildError> {
        let mut lengths: Vec<(u32, u32)> = Vec::new();
        let mut postings: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        for (child, text) in children {
            let mut terms = analyzer.terms(text);
            lengths.push((child, saturating_u32(terms.len())));
            terms.sort_unstable();
            for same in terms.chunk_by(|a, b| a == b) {
                let frequency = saturating_u32(same.len());
                let term = same[0].clone();
                postings.entry(term).or_default().push((child, frequency));
            }
        }
        lengths.sort_unstable_by_key(|&(child, _)| child);
        if let Some(pair) = lengths.windows(2).find(|pair| pair[0].0 == pair[1].0) {
            return Err(LexicalBuildError::DuplicateChild(pair[0].0));
        }
        let mut terms: Vec<(String, Vec<(u32, u32)>)> = postings.into_iter().collect();
        terms.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let terms = terms.into_iter().map(|(term, mut holders)| {
            holders.sort_unstable_by_key(|&(child, _)| child);
            let children = holders.iter().map(|&(child, _)| child).collect();
            let frequencies = holders.into_iter().map(|(_, f)| f).collect();
            (term.into_boxed_str(), children, frequencies)
        });
        Ok(LexicalSegment::assemble(
            lengths.iter().map(|&(child, _)| child).collect(),
            lengths.into_iter().map(|(_, length)| length).collect(),
            terms,
        ))
    }

    /// The segment from checked parts (`lengths` in `children`'s order, terms sorted, each
    /// term's frequencies in its children's order): compacts the bitmaps (runs) and
    /// computes each term's bounds.
    pub(super) fn assemble(
        mut children: RoaringBitmap,
        lengths: Vec<u32>,
        terms: impl IntoIterator<Item = (Box<str>, RoaringBitmap, Vec<u32>)>,
    ) -> LexicalSegment {
        children.optimize();
        let total: u64 = lengths.iter().map(|&length| u64::from(length)).sum();
        let mean = total as f64 / lengths.len().max(1) as f64;
        let mut segment = LexicalSegment {
            positions: Positions::of(&children),
            children,
            lengths,
            reference_length: if mean > 0.0 { mean } else { 1.0 },
            terms: Vec::new(),
        };
        segment.terms = terms
            .into_iter()
            .map(|(term, mut holders, frequencies)| {
                holders.optimize();
                let ids: Vec<u32> = holders.iter().collect();
                let saturations: Vec<f64> = ids
                    .iter()
                    .zip(&frequencies)
                    .map(|(&child, &frequency)| {
                        let length = segment.length_of(child);
                        saturation(frequency, length, segment.reference_length)
                    })
                    .collect();
                let blocks: Vec<f64> = saturations
                    .chunks(BLOCK)
                    .map(|block| block.iter().copied().fold(0.0, f64::max))
                    .collect();
                TermPostings {
                    term,
                    max_frequency: frequencies.iter().copied().max().unwrap_or(0),
                    max_saturation: blocks.iter().copied().fold(0.0, f64::max),
                    children: holders,
                    frequencies,
                    ids,
                    blocks,
                }
            })
            .collect();
        segment
    }

    /// Every child of the segment.
    pub fn children(&self) -> &RoaringBitmap {
        &self.children
    }

    /// `child`'s position in the segment's children (ascending), if it is one of them.
    pub(super) fn position(&self, child: u32) -> Option<usize> {
        match &self.positions {
            Positions::Table { first, positions } => {
                let at = positions.get(child.checked_sub(*first)? as usize)?;
                (*at != u32::MAX).then_some(*at as usize)
            }
            Positions::Rank => self
                .children
                .contains(child)
                .then(|| (self.children.rank(child) as usize).saturating_sub(1)),
        }
    }

    /// `child`'s length in terms (0 for a child not in the segment).
    pub(super) fn length_of(&self, child: u32) -> u32 {
        let length = self.position(child).and_then(|at| self.lengths.get(at));
        length.copied().unwrap_or(0)
    }

    /// The postings of `term`, if a child of the segment holds it.
    pub(super) fn postings(&self, term: &str) -> Option<&TermPostings> {
        let found = self.terms.binary_search_by(|t| (*t.term).cmp(term));
        found.ok().and_then(|at| self.terms.get(at))
    }
}

/// `n` as a `u32`, `u32::MAX` when larger (a child of four billion terms).
fn saturating_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
