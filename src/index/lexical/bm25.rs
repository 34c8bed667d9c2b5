//! BM25 over a version's lexical segments: the exact top `k` of the caller's visible
//! children, found by block-max MaxScore (terms whose score bound cannot lift a child into
//! the top `k` are probed, not walked; runs of children whose blocks' bounds cannot are
//! jumped). What the statistics count is decided in the folder's
//! documentation ([`super`]).

use roaring::RoaringBitmap;

use super::analyzer::Analyzer;
use super::saturation::{B, K1};
use super::segment::{LexicalSegment, TermPostings, BLOCK};
use crate::index::exact::{Neighbor, TopK};

/// Slack on MaxScore's bounds: a child is skipped only when its bound, raised by this
/// relative amount, is still below the `k`-th score, so rounding (sums taken in another
/// order than the final score's) never skips a child that belongs in the top `k`.
const BOUND_SLACK: f64 = 1e-9;

/// The statistics of a version that do not depend on the caller: the mean length in
/// terms of its live children (BM25's `avgdl`), computed once per version.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CorpusStats {
    average_length: f64,
}

impl CorpusStats {
    /// Statistics with this mean child length; one that is not a positive finite number
    /// (a version without terms) is taken as 1, which leaves scores finite.
    pub fn new(average_length: f64) -> CorpusStats {
        let usable = average_length.is_finite() && average_length > 0.0;
        CorpusStats {
            average_length: if usable { average_length } else { 1.0 },
        }
    }

    /// The mean length of the children of `segments` that are in `live` (the version's
    /// live children, before any caller's ACL or filter).
    pub fn of_live(segments: &[&LexicalSegment], live: &RoaringBitmap) -> CorpusStats {
        let (mut children, mut terms) = (0u64, 0u64);
        for segment in segments {
            for (child, &length) in segment.children.iter().zip(segment.lengths.iter()) {
                if live.contains(child) {
                    children += 1;
                    terms += u64::from(length);
                }
            }
        }
        CorpusStats::new(terms as f64 / children as f64)
    }

    /// The mean child length scores are normalised by.
    pub fn average_length(&self) -> f64 {
        self.average_length
    }
}

/// The best `k` children of `visible` for `query` by BM25, best first (ties by smaller
/// child number), among the children of `segments` holding at least one query term: there
/// are `min(k, such children)`. `query` is cut by `analyzer`, which must be the one the
/// segments were built with; a term repeated in the query counts once. The segments hold
/// disjoint children, as a version's do.
///
/// `N` and each term's document frequency are counted in `visible` (see [`super`]), and
/// the postings are intersected with `visible` before any child is scored.
pub fn search(
    segments: &[&LexicalSegment],
    query: &str,
    analyzer: &Analyzer,
    visible: &RoaringBitmap,
    stats: &CorpusStats,
    k: usize,
) -> Vec<Neighbor> {
    let mut terms = analyzer.terms(query);
    terms.sort_unstable();
    terms.dedup();
    if k == 0 || terms.is_empty() {
        return Vec::new();
    }
    // Per segment, each query term's visible postings.
    let lists: Vec<Vec<Option<VisiblePostings<'_>>>> = segments
        .iter()
        .map(|segment| {
            // A segment whose children are all visible (the common case: no ACL narrows
            // it) is walked as stored, with no intersection to allocate.
            let all_visible = segment.children.is_subset(visible);
            terms
                .iter()
                .map(|term| {
                    let postings = segment.postings(term)?;
                    let list = VisiblePostings::of(postings, visible, all_visible);
                    Some(list).filter(|list| list.len() > 0)
                })
                .collect()
        })
        .collect();
    let visible_children: u64 = segments
        .iter()
        .map(|segment| segment.children.intersection_len(visible))
        .sum();
    let idf: Vec<f64> = (0..terms.len())
        .map(|term| {
            let holders: usize = lists
                .iter()
                .filter_map(|lists| lists[term].as_ref())
                .map(VisiblePostings::len)
                .sum();
            idf(visible_children as f64, holders as f64)
        })
        .collect();
    let mut top = TopK::new(k);
    for (segment, lists) in segments.iter().zip(&lists) {
        let scorer = Scorer {
            segment,
            idf: &idf,
            average_length: stats.average_length,
        };
        scorer.max_score(lists, &mut top);
    }
    top.into_sorted()
}

/// Lucene's BM25 IDF, `ln(1 + (N - df + 0.5) / (df + 0.5))`: positive for any
/// `df <= N`, so a common term never lowers a score.
fn idf(children: f64, holders: f64) -> f64 {
    ((children - holders + 0.5) / (holders + 0.5)).ln_1p()
}

/// One term's BM25 score in a child: rises with `frequency`, falls with `length`.
fn term_score(idf: f64, frequency: u32, length: u32, average_length: f64) -> f64 {
    let frequency = f64::from(frequency);
    let norm = 1.0 - B + B * f64::from(length) / average_length;
    idf * (frequency * (K1 + 1.0)) / (frequency + K1 * norm)
}

/// Whether a child whose score is at most `bound` cannot enter a top list whose entry
/// score is `threshold`.
fn cannot_enter(bound: f64, threshold: f32) -> bool {
    ((bound * (1.0 + BOUND_SLACK)) as f32) < threshold
}

/// A term's postings in one segment that the caller may see.
struct VisiblePostings<'a> {
    postings: TermPostings<'a>,
    /// The positions (in `postings`) of the visible ones, ascending; `None` when every
    /// posting is visible.
    positions: Option<Vec<u32>>,
}

impl<'a> VisiblePostings<'a> {
    fn of(postings: TermPostings<'a>, visible: &RoaringBitmap, all_visible: bool) -> Self {
        let positions = (!all_visible).then(|| visible_positions(postings.ids, visible));
        VisiblePostings {
            postings,
            positions,
        }
    }

    fn len(&self) -> usize {
        self.positions
            .as_ref()
            .map_or(self.postings.ids.len(), Vec::len)
    }
}

/// The positions in `ids` (ascending) of the children in `visible`: from whichever side
/// is shorter over the postings' span, the visible children there sought in `ids` by
/// galloping search, or each posting looked up in `visible`.
fn visible_positions(ids: &[u32], visible: &RoaringBitmap) -> Vec<u32> {
    let (Some(&first), Some(&last)) = (ids.first(), ids.last()) else {
        return Vec::new();
    };
    let mut positions = Vec::new();
    if visible.range_cardinality(first..=last) < ids.len() as u64 {
        let mut from = 0;
        for child in visible.range(first..=last) {
            from = first_at_least(ids.len(), from, child, |at| ids[at]);
            match ids.get(from) {
                Some(&id) if id == child => positions.push(from as u32),
                Some(_) => {}
                None => break,
            }
        }
    } else {
        let visible_ids = ids
            .iter()
            .enumerate()
            .filter(|(_, &id)| visible.contains(id));
        positions.extend(visible_ids.map(|(at, _)| at as u32));
    }
    positions
}

/// The first index in `from..len` whose value (`value_at`, ascending) is at least
/// `target`, or `len`: a galloping search from `from`, so a walk that seeks forward costs
/// the logarithm of each jump.
fn first_at_least(len: usize, from: usize, target: u32, value_at: impl Fn(usize) -> u32) -> usize {
    let mut low = from;
    let mut step = 1;
    // Invariant: every index below `low` holds a value below `target`.
    while low + step <= len && value_at(low + step - 1) < target {
        low += step;
        step *= 2;
    }
    let mut high = (low + step).min(len);
    // Binary search in `low..high`, whose end holds a value >= target (or is `len`).
    while low < high {
        let middle = low + (high - low) / 2;
        if value_at(middle) < target {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    low
}

/// A query term's visible postings in one segment, walked in child order.
struct Cursor<'a> {
    /// The term's index in the query's sorted terms.
    term: usize,
    postings: TermPostings<'a>,
    positions: Option<&'a [u32]>,
    /// The next visible posting: an index into `positions`, or into the postings.
    at: usize,
    len: usize,
    /// A saturation bound (the segment's, a block's) times this bounds a score.
    scale: f64,
    /// No child's score for the term exceeds this.
    bound: f64,
}

impl Cursor<'_> {
    /// The position in the postings of the visible posting at `at`.
    fn position_of(&self, at: usize) -> usize {
        match self.positions {
            Some(positions) => positions[at] as usize,
            None => at,
        }
    }

    /// The current posting's position in the postings, if the walk is not over.
    fn position(&self) -> Option<usize> {
        (self.at < self.len).then(|| self.position_of(self.at))
    }

    fn child(&self) -> Option<u32> {
        self.position().map(|position| self.postings.ids[position])
    }

    /// The term's frequency in `child`, when the current posting is `child`'s.
    fn frequency_at(&self, child: u32) -> Option<u32> {
        let position = self.position()?;
        (self.postings.ids[position] == child).then(|| self.postings.frequencies[position])
    }

    /// Moves to the first visible posting whose child is at least `child`.
    fn seek(&mut self, child: u32) {
        self.at = first_at_least(self.len, self.at, child, |at| {
            self.postings.ids[self.position_of(at)]
        });
    }

    /// The bound of the term's scores in the block holding `position`.
    fn block_bound(&self, position: usize) -> f64 {
        self.scale * self.postings.blocks[position / BLOCK]
    }

    /// The last child of the block holding `position`: every posting of the block up
    /// to it is bounded by the block's bound.
    fn block_end(&self, position: usize) -> u32 {
        let end = ((position / BLOCK + 1) * BLOCK).min(self.postings.ids.len());
        self.postings.ids[end - 1]
    }
}

/// Scores one segment's children against the query's terms.
struct Scorer<'a> {
    segment: &'a LexicalSegment,
    /// Per query term, its IDF over the visible children.
    idf: &'a [f64],
    average_length: f64,
}

impl Scorer<'_> {
    fn score(&self, term: usize, frequency: u32, length: u32) -> f64 {
        term_score(self.idf[term], frequency, length, self.average_length)
    }

    /// Block-max MaxScore, document at a time: the terms sorted by bound; the lowest ones
    /// whose bounds sum below the current `k`-th score are non-essential (a child holding
    /// only them cannot enter), so only the essential terms' children are candidates, and
    /// the others are sought for a candidate while its bound can still reach the top `k`.
    /// Before a candidate is scored, the essential terms' current blocks bound every child
    /// up to the first of their ends: when that bound (with the non-essential terms')
    /// cannot enter, the walk jumps past it. A child's score is summed in query-term
    /// order, whatever path found it.
    fn max_score(&self, lists: &[Option<VisiblePostings<'_>>], top: &mut TopK) {
        // Saturation bounds were computed at the segment's mean length (see `saturation`).
        let stretch = (self.average_length / self.segment.reference_length).max(1.0);
        let mut cursors: Vec<Cursor<'_>> = lists
            .iter()
            .enumerate()
            .filter_map(|(term, list)| {
                let list = list.as_ref()?;
                let postings = list.postings;
                let scale = self.idf[term] * (K1 + 1.0) * stretch;
                Some(Cursor {
                    term,
                    postings,
                    positions: list.positions.as_deref(),
                    at: 0,
                    len: list.len(),
                    scale,
                    bound: scale * postings.max_saturation,
                })
            })
            .collect();
        cursors.sort_by(|a, b| a.bound.total_cmp(&b.bound).then(a.term.cmp(&b.term)));
        // bounds_below[i]: the sum of the bounds of cursors[..i].
        let bounds_below: Vec<f64> = std::iter::once(0.0)
            .chain(cursors.iter().scan(0.0, |sum, cursor| {
                *sum += cursor.bound;
                Some(*sum)
            }))
            .collect();
        let mut contributions = vec![0.0f64; self.idf.len()];
        // cursors[essential..] are the essential terms.
        let mut essential = 0;
        loop {
            let threshold = top.threshold();
            while essential < cursors.len() && cannot_enter(bounds_below[essential + 1], threshold)
            {
                essential += 1;
            }
            let candidate = cursors[essential..].iter().filter_map(Cursor::child).min();
            let Some(child) = candidate else { break };
            // Every essential cursor is at `child` or after it, inside a block ending at
            // or after it: up to the first block end, their blocks bound them.
            let (mut block_bounds, mut blocks_end) = (bounds_below[essential], u32::MAX);
            for cursor in &cursors[essential..] {
                if let Some(position) = cursor.position() {
                    block_bounds += cursor.block_bound(position);
                    blocks_end = blocks_end.min(cursor.block_end(position));
                }
            }
            if cannot_enter(block_bounds, threshold) {
                let Some(past) = blocks_end.checked_add(1) else {
                    break;
                };
                for cursor in &mut cursors[essential..] {
                    cursor.seek(past);
                }
                continue;
            }
            let length = self.segment.length_of(child);
            contributions.fill(0.0);
            let mut partial = 0.0;
            for cursor in &mut cursors[essential..] {
                if let Some(frequency) = cursor.frequency_at(child) {
                    let score = self.score(cursor.term, frequency, length);
                    contributions[cursor.term] = score;
                    partial += score;
                    cursor.at += 1;
                }
            }
            let mut reachable = true;
            for at in (0..essential).rev() {
                if cannot_enter(partial + bounds_below[at + 1], threshold) {
                    reachable = false;
                    break;
                }
                let cursor = &mut cursors[at];
                cursor.seek(child);
                if let Some(frequency) = cursor.frequency_at(child) {
                    let score = self.score(cursor.term, frequency, length);
                    contributions[cursor.term] = score;
                    partial += score;
                }
            }
            if reachable {
                let score: f64 = contributions.iter().sum();
                top.push(Neighbor {
                    id: child,
                    score: score as f32,
                });
            }
        }
    }
}
