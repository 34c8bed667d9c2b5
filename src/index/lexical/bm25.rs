//! BM25 over a version's lexical segments: the exact top `k` of the caller's visible
//! children, found by MaxScore (terms whose score bound cannot lift a child into the top
//! `k` are probed, not walked). What the statistics count is decided in the folder's
//! documentation ([`super`]).

use std::iter::{Peekable, Zip};

use roaring::RoaringBitmap;

use super::analyzer::Analyzer;
use super::segment::{LexicalSegment, TermPostings};
use crate::index::exact::{Neighbor, TopK};

/// BM25's term-frequency saturation: Lucene's default.
pub const K1: f64 = 1.2;
/// BM25's length normalisation (0: none, 1: full): Lucene's default.
pub const B: f64 = 0.75;

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
            for (child, &length) in segment.children.iter().zip(&segment.lengths) {
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
    // Per segment, each query term's postings and its visible children.
    let visible_postings: Vec<Vec<Option<(&TermPostings, RoaringBitmap)>>> = segments
        .iter()
        .map(|segment| {
            let visible_holders = |postings: &TermPostings| &postings.children & visible;
            terms
                .iter()
                .map(|term| {
                    let postings = segment.postings(term)?;
                    Some((postings, visible_holders(postings))).filter(|(_, v)| !v.is_empty())
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
            let holders: u64 = visible_postings
                .iter()
                .filter_map(|lists| lists[term].as_ref())
                .map(|(_, holders)| holders.len())
                .sum();
            idf(visible_children as f64, holders as f64)
        })
        .collect();
    let mut top = TopK::new(k);
    for (segment, lists) in segments.iter().zip(&visible_postings) {
        let scorer = Scorer {
            segment,
            idf: &idf,
            average_length: stats.average_length,
        };
        scorer.max_score(lists, visible, &mut top);
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

/// A query term's visible children in one segment, walked in order.
struct Cursor<'a> {
    /// The term's index in the query's sorted terms.
    term: usize,
    postings: &'a TermPostings,
    holders: &'a RoaringBitmap,
    /// No child's score for the term exceeds this.
    bound: f64,
    next: Peekable<Walk<'a>>,
}

/// A term's visible children in one segment with their frequencies, in order.
enum Walk<'a> {
    /// Most of the term's children are visible: its children walked beside their
    /// frequencies, the visible ones kept.
    Postings {
        children: Zip<roaring::bitmap::Iter<'a>, std::slice::Iter<'a, u32>>,
        visible: &'a RoaringBitmap,
    },
    /// Few are: the visible ones walked, each one's frequency found by its rank.
    Holders {
        holders: roaring::bitmap::Iter<'a>,
        postings: &'a TermPostings,
    },
}

impl<'a> Walk<'a> {
    fn new(
        postings: &'a TermPostings,
        holders: &'a RoaringBitmap,
        visible: &'a RoaringBitmap,
    ) -> Self {
        // A rank costs up to a dense container's popcounts; a step of the walk, one bit test.
        if holders.len() * 4 >= postings.children.len() {
            Walk::Postings {
                children: postings.children.iter().zip(postings.frequencies.iter()),
                visible,
            }
        } else {
            Walk::Holders {
                holders: holders.iter(),
                postings,
            }
        }
    }
}

impl Iterator for Walk<'_> {
    /// A child and the term's frequency in it.
    type Item = (u32, u32);

    fn next(&mut self) -> Option<(u32, u32)> {
        match self {
            Walk::Postings { children, visible } => children
                .find(|&(child, _)| visible.contains(child))
                .map(|(child, &frequency)| (child, frequency)),
            Walk::Holders { holders, postings } => {
                let child = holders.next()?;
                Some((child, postings.frequency_of(child)))
            }
        }
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
    fn score(&self, cursor: &Cursor<'_>, frequency: u32, length: u32) -> f64 {
        term_score(
            self.idf[cursor.term],
            frequency,
            length,
            self.average_length,
        )
    }

    /// MaxScore, document at a time: the terms sorted by bound; the lowest ones whose
    /// bounds sum below the current `k`-th score are non-essential (a child holding only
    /// them cannot enter), so only the essential terms' children are candidates, and the
    /// others are probed for a candidate while its bound can still reach the top `k`.
    /// A child's score is summed in query-term order, whatever path found it.
    fn max_score(
        &self,
        lists: &[Option<(&TermPostings, RoaringBitmap)>],
        visible: &RoaringBitmap,
        top: &mut TopK,
    ) {
        let mut cursors: Vec<Cursor<'_>> = lists
            .iter()
            .enumerate()
            .filter_map(|(term, list)| {
                let (postings, holders) = list.as_ref()?;
                let bound = term_score(
                    self.idf[term],
                    postings.max_frequency,
                    postings.min_length,
                    self.average_length,
                );
                Some(Cursor {
                    term,
                    postings,
                    holders,
                    bound,
                    next: Walk::new(postings, holders, visible).peekable(),
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
            let candidate = cursors[essential..]
                .iter_mut()
                .filter_map(|cursor| cursor.next.peek().map(|&(child, _)| child))
                .min();
            let Some(child) = candidate else { break };
            let length = self.segment.length_of(child);
            contributions.fill(0.0);
            let mut partial = 0.0;
            for cursor in &mut cursors[essential..] {
                if let Some((_, frequency)) = cursor.next.next_if(|&(at, _)| at == child) {
                    let score = self.score(cursor, frequency, length);
                    contributions[cursor.term] = score;
                    partial += score;
                }
            }
            let mut reachable = true;
            for (at, cursor) in cursors[..essential].iter().enumerate().rev() {
                if cannot_enter(partial + bounds_below[at + 1], threshold) {
                    reachable = false;
                    break;
                }
                if cursor.holders.contains(child) {
                    let frequency = cursor.postings.frequency_of(child);
                    let score = self.score(cursor, frequency, length);
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
