//! One segment's postings: the term dictionary, and for each term the children holding it
//! with their term frequencies; each child's length in terms; each term's score bounds.
//! Held as flat arrays ([`Slab`]s), owned when built or decoded, or borrowed in place from
//! a shared region (`flat.rs`): one search reads either through [`TermPostings`].

use std::collections::HashMap;
use std::ops::Range;

use roaring::RoaringBitmap;

use super::analyzer::Analyzer;
use super::saturation::saturation;
use crate::index::shared::Slab;

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
///
/// Term `i`'s parts are the `i`-th runs of the concatenated arrays, each run ending at the
/// `i`-th entry of its `*_ends` array (the previous entry, or 0, is its start).
#[derive(Debug, Clone, PartialEq)]
pub struct LexicalSegment {
    /// Every child of the segment, with or without terms (a few runs: kept in memory even
    /// when the rest is mapped).
    pub(super) children: RoaringBitmap,
    /// Each child's length in terms, in `children`'s (ascending) order.
    pub(super) lengths: Slab<u32>,
    /// Where each child is in `children`'s order (derived from `children`).
    pub(super) positions: Positions,
    /// The mean of `lengths` (1 when it is 0): the mean length the terms' saturation
    /// bounds were computed with (derived).
    pub(super) reference_length: f64,
    /// The terms' UTF-8 bytes, sorted bytewise, each once; `term_ends` delimits them.
    pub(super) term_bytes: Slab<u8>,
    pub(super) term_ends: Slab<u64>,
    /// Each term's children (ascending, never none) and its frequency in each (at least
    /// 1); `posting_ends` delimits the terms' runs of both.
    pub(super) ids: Slab<u32>,
    pub(super) frequencies: Slab<u32>,
    pub(super) posting_ends: Slab<u64>,
    /// Per term, per run of [`BLOCK`] postings, the largest [`saturation`] of its children
    /// at `reference_length` (derived): a child's score for the term is its IDF times
    /// `K1 + 1` times its saturation, so these bound a block's scores, and a search skips
    /// a run of children whose blocks cannot enter the top `k`. `block_ends` delimits them.
    pub(super) blocks: Slab<f64>,
    pub(super) block_ends: Slab<u64>,
    /// Per term, the largest of its blocks: the bound of every child's score (MaxScore's).
    pub(super) max_saturations: Slab<f64>,
}

/// One term's postings in a segment, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct TermPostings<'a> {
    /// The children holding the term, ascending (never empty).
    pub(super) ids: &'a [u32],
    /// The term's frequency in each of `ids`.
    pub(super) frequencies: &'a [u32],
    /// The bound of each run of [`BLOCK`] postings (see [`LexicalSegment::blocks`]).
    pub(super) blocks: &'a [f64],
    /// The largest of `blocks`.
    pub(super) max_saturation: f64,
}

/// Postings per block of [`LexicalSegment::blocks`]: small enough that a block's bound is
/// tight, large enough that checking it costs little beside scoring its children.
pub(super) const BLOCK: usize = 64;

/// Where each child of a segment is in its order: an array indexed by child number when
/// the children span few more numbers than they are (a segment is a run of child numbers,
/// less the children merges dropped), otherwise the bitmap's rank, whose cost grows with a
/// dense container's popcounts.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Positions {
    /// `positions[child - first]`: the child's position, or `u32::MAX` for a gap.
    Table { first: u32, positions: Slab<u32> },
    /// The children's bitmap ranks them.
    Rank,
}

impl Positions {
    /// An array of at most 4 entries a child, plus 256 KiB.
    const MAX_SPAN_PER_CHILD: u64 = 4;
    const SPAN_ALLOWANCE: u64 = 1 << 16;

    /// The span of child numbers a table for `children` covers (`first` and its length),
    /// or `None` when they are ranked instead.
    pub(super) fn table_span(children: &RoaringBitmap) -> Option<(u32, u64)> {
        let (first, last) = (children.min()?, children.max()?);
        let span = u64::from(last - first) + 1;
        (span <= Self::MAX_SPAN_PER_CHILD * children.len() + Self::SPAN_ALLOWANCE)
            .then_some((first, span))
    }

    fn of(children: &RoaringBitmap) -> Positions {
        let Some((first, span)) = Self::table_span(children) else {
            return Positions::Rank;
        };
        let mut positions = vec![u32::MAX; span as usize];
        for (position, child) in children.iter().enumerate() {
            // In bounds: first <= child <= last.
            positions[(child - first) as usize] = position as u32;
        }
        Positions::Table {
            first,
            positions: positions.into(),
        }
    }
}

/// Run `i` of arrays delimited by `ends`, if the ends hold together there.
fn run(ends: &[u64], i: usize) -> Option<Range<usize>> {
    let start = match i.checked_sub(1) {
        Some(before) => *ends.get(before)?,
        None => 0,
    };
    let end = *ends.get(i)?;
    Some(usize::try_from(start).ok()?..usize::try_from(end).ok()?)
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
            let ids = holders.iter().map(|&(child, _)| child).collect();
            let frequencies = holders.into_iter().map(|(_, f)| f).collect();
            (term, ids, frequencies)
        });
        Ok(LexicalSegment::assemble(
            lengths.iter().map(|&(child, _)| child).collect(),
            lengths.into_iter().map(|(_, length)| length).collect(),
            terms,
        ))
    }

    /// The segment from checked parts (`lengths` in `children`'s order, terms sorted, each
    /// term's children ascending with its frequencies in their order): compacts the bitmap
    /// (runs) and computes each term's bounds.
    pub(super) fn assemble<T: AsRef<str>>(
        mut children: RoaringBitmap,
        lengths: Vec<u32>,
        terms: impl IntoIterator<Item = (T, Vec<u32>, Vec<u32>)>,
    ) -> LexicalSegment {
        children.optimize();
        let reference_length = reference_length(&lengths);
        let positions = Positions::of(&children);
        let mut segment = LexicalSegment {
            children,
            lengths: lengths.into(),
            positions,
            reference_length,
            term_bytes: Slab::default(),
            term_ends: Slab::default(),
            ids: Slab::default(),
            frequencies: Slab::default(),
            posting_ends: Slab::default(),
            blocks: Slab::default(),
            block_ends: Slab::default(),
            max_saturations: Slab::default(),
        };
        let (mut term_bytes, mut term_ends) = (Vec::new(), Vec::new());
        let (mut all_ids, mut all_frequencies, mut posting_ends) =
            (Vec::new(), Vec::new(), Vec::new());
        let (mut blocks, mut block_ends, mut max_saturations) =
            (Vec::new(), Vec::new(), Vec::new());
        for (term, ids, frequencies) in terms {
            term_bytes.extend_from_slice(term.as_ref().as_bytes());
            term_ends.push(term_bytes.len() as u64);
            let saturations: Vec<f64> = ids
                .iter()
                .zip(&frequencies)
                .map(|(&child, &frequency)| {
                    saturation(frequency, segment.length_of(child), reference_length)
                })
                .collect();
            let before = blocks.len();
            blocks.extend(
                saturations
                    .chunks(BLOCK)
                    .map(|block| block.iter().copied().fold(0.0, f64::max)),
            );
            block_ends.push(blocks.len() as u64);
            max_saturations.push(blocks[before..].iter().copied().fold(0.0, f64::max));
            all_ids.extend_from_slice(&ids);
            all_frequencies.extend_from_slice(&frequencies);
            posting_ends.push(all_ids.len() as u64);
        }
        segment.term_bytes = term_bytes.into();
        segment.term_ends = term_ends.into();
        segment.ids = all_ids.into();
        segment.frequencies = all_frequencies.into();
        segment.posting_ends = posting_ends.into();
        segment.blocks = blocks.into();
        segment.block_ends = block_ends.into();
        segment.max_saturations = max_saturations.into();
        segment
    }

    /// Every child of the segment.
    pub fn children(&self) -> &RoaringBitmap {
        &self.children
    }

    /// Whether its postings are read in place from a shared region rather than held.
    pub fn is_mapped(&self) -> bool {
        self.ids.is_mapped()
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

    /// The number of terms in the dictionary.
    pub(super) fn term_count(&self) -> usize {
        self.term_ends.len()
    }

    /// Term `i`'s bytes.
    pub(super) fn term(&self, i: usize) -> Option<&[u8]> {
        self.term_bytes.get(run(&self.term_ends, i)?)
    }

    /// Term `i`'s postings.
    pub(super) fn postings_at(&self, i: usize) -> Option<TermPostings<'_>> {
        let postings = run(&self.posting_ends, i)?;
        Some(TermPostings {
            ids: self.ids.get(postings.clone())?,
            frequencies: self.frequencies.get(postings)?,
            blocks: self.blocks.get(run(&self.block_ends, i)?)?,
            max_saturation: *self.max_saturations.get(i)?,
        })
    }

    /// The postings of `term`, if a child of the segment holds it.
    pub(super) fn postings(&self, term: &str) -> Option<TermPostings<'_>> {
        let wanted = term.as_bytes();
        let (mut low, mut high) = (0, self.term_count());
        while low < high {
            let middle = low + (high - low) / 2;
            match self.term(middle)?.cmp(wanted) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => return self.postings_at(middle),
            }
        }
        None
    }
}

/// The mean of `lengths`, 1 when it is 0 (no child has a term).
pub(super) fn reference_length(lengths: &[u32]) -> f64 {
    let total: u64 = lengths.iter().map(|&length| u64::from(length)).sum();
    let mean = total as f64 / lengths.len().max(1) as f64;
    if mean > 0.0 {
        mean
    } else {
        1.0
    }
}

/// `n` as a `u32`, `u32::MAX` when larger (a child of four billion terms).
fn saturating_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
