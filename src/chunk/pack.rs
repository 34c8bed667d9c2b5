//! Packing pieces into chunks of at most a given size, cutting at the best bounds.
//!
//! Rather than filling greedily (which leaves tiny trailing fragments and cuts mid-paragraph
//! whenever the next paragraph does not quite fit), the cuts are chosen by dynamic
//! programming over the candidates: every chunk costs a little, every cut costs by how weak
//! its bound is, and a chunk well below the limit costs by its shortfall. The cheapest
//! packing prefers whole paragraphs and list items, then sentences, and evens out sizes.

use super::layout::{Cut, Layout, Strength};
use super::pieces::Span;

// Costs are integers, so that sums (and so packings) are exactly reproducible.

/// What every chunk costs: fewer, fuller chunks are preferred.
const CHUNK_COST: u64 = 1000;
/// The cost of a chunk of size 0; it falls quadratically to 0 at the limit.
const SHORTFALL_COST: u64 = 500;
/// At most this many pieces are packed into one chunk, which bounds the work on long runs of
/// weak bounds (a huge sentence of tiny words) and hardly matters elsewhere.
const MAX_REACH: usize = 256;

/// What a chunk of `size` characters costs when packing to `limit` (at least 1): the chunk
/// itself, plus its shortfall, `SHORTFALL_COST * ((limit - size) / limit)^2`.
pub(crate) fn chunk_cost(size: usize, limit: usize) -> u64 {
    let scale = SHORTFALL_COST as f64 / (limit as f64 * limit as f64);
    let short = limit.saturating_sub(size) as f64;
    CHUNK_COST + (short * short * scale) as u64
}

fn cut_cost(strength: Strength) -> u64 {
    match strength {
        Strength::Section | Strength::Block => 0,
        Strength::Item => 250,
        Strength::Line => 500,
        Strength::Sentence => 1500,
        // Cutting inside a sentence is worth an extra chunk and two sentence cuts.
        Strength::Clause => 6000,
        Strength::Word => 8000,
        Strength::Char => 12000,
    }
}

/// A packing of one range: the candidate points (with the range's ends as first and last)
/// and the indices of the points chosen as chunk bounds.
pub(crate) struct Packing {
    points: Vec<Cut>,
    /// Character offsets (from the range start) of each point's `start` and `end`.
    start_chars: Vec<usize>,
    end_chars: Vec<usize>,
    bounds: Vec<usize>,
}

impl Packing {
    /// Packs the trimmed, non-empty `range` into chunks of at most `limit` characters, cutting
    /// only at bounds of at least `floor` strength unless a piece is too long. A single
    /// unsplittable piece (a code block, a table) longer than `limit` becomes its own chunk.
    pub fn new(layout: &Layout<'_>, range: Span, limit: usize, floor: Strength) -> Packing {
        let limit = limit.max(1);
        let mut packing = Packing::new_unpacked(layout, range, limit, floor);
        packing.bounds = packing.cheapest(limit);
        packing
    }

    /// Windows of about `size` characters over the trimmed, non-empty `range`: each ends at
    /// the strongest bound in the second half of its reach (the furthest of equals), else at
    /// the strongest before; a single piece longer than `size` is a window of its own.
    pub fn windows(layout: &Layout<'_>, range: Span, size: usize, floor: Strength) -> Packing {
        let mut packing = Packing::new_unpacked(layout, range, size.max(1), floor);
        packing.bounds = packing.windowed(size.max(1));
        packing
    }

    fn new_unpacked(layout: &Layout<'_>, range: Span, limit: usize, floor: Strength) -> Packing {
        let edge = |pos| Cut {
            end: pos,
            start: pos,
            strength: Strength::Section,
            held: false,
        };
        let mut points = vec![edge(range.start)];
        points.extend(layout.candidates(range, limit, floor));
        points.push(edge(range.end));
        let (start_chars, end_chars) = char_offsets(layout, &points);
        Packing {
            points,
            start_chars,
            end_chars,
            bounds: Vec::new(),
        }
    }

    fn windowed(&self, size: usize) -> Vec<usize> {
        let last = self.points.len() - 1;
        let mut chain = vec![0];
        let mut at = 0;
        while at < last {
            let reach = (at + 1..=last)
                .take_while(|&j| self.size(at, j) <= size)
                .last()
                .unwrap_or(at + 1);
            let next = if reach == last {
                last
            } else {
                let rank = |j: usize| (self.size(at, j) * 2 >= size, self.points[j].strength, j);
                (at + 1..=reach).max_by_key(|&j| rank(j)).unwrap_or(reach)
            };
            chain.push(next);
            at = next;
        }
        chain
    }

    fn size(&self, from: usize, to: usize) -> usize {
        self.end_chars[to] - self.start_chars[from]
    }

    /// The cheapest chain of points from the first to the last.
    fn cheapest(&self, limit: usize) -> Vec<usize> {
        let n = self.points.len();
        let mut best = vec![u64::MAX; n];
        let mut from = vec![0; n];
        best[0] = 0;
        for to in 1..n {
            let cut = if to + 1 == n {
                0
            } else {
                cut_cost(self.points[to].strength)
            };
            for i in (to.saturating_sub(MAX_REACH)..to).rev() {
                let size = self.size(i, to);
                if size > limit && i + 1 < to {
                    break;
                }
                let cost = best[i].saturating_add(chunk_cost(size, limit) + cut);
                if cost < best[to] {
                    best[to] = cost;
                    from[to] = i;
                }
            }
        }
        let mut chain = vec![n - 1];
        let mut at = n - 1;
        while at > 0 {
            at = from[at];
            chain.push(at);
        }
        chain.reverse();
        chain
    }

    /// The chunks as point-index pairs.
    fn chunks(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.bounds.windows(2).map(|w| (w[0], w[1]))
    }

    fn span(&self, from: usize, to: usize) -> Span {
        Span {
            start: self.points[from].start,
            end: self.points[to].end,
        }
    }

    /// The chunks, each flagged when longer than `target`.
    pub fn spans(&self, target: usize) -> Vec<(Span, bool)> {
        self.chunks()
            .map(|(a, b)| (self.span(a, b), self.size(a, b) > target))
            .collect()
    }

    /// The chunks, each but the first starting up to `overlap` characters before the
    /// previous one ends (at the earliest sentence bound there, else the earliest word
    /// bound), as long as it stays within `target` characters.
    pub fn overlapping_spans(
        &self,
        layout: &Layout<'_>,
        target: usize,
        overlap: usize,
    ) -> Vec<(Span, bool)> {
        let mut out = Vec::with_capacity(self.bounds.len());
        let mut prev = 0;
        for (at, to) in self.chunks() {
            let mut span = self.span(at, to);
            // Characters the chunk may reach back into the previous one: none when the chunk
            // with the gap before it is over the target (a start in the previous chunk's
            // syntax, of no size, would still bring the gap in).
            let room = target.checked_sub(self.end_chars[to] - self.end_chars[at]);
            if let (true, Some(room)) = (at > 0, room) {
                span.start = self.overlap_start(layout, prev, at, overlap.min(room));
            }
            out.push((span, self.size(at, to) > target));
            prev = at;
        }
        out
    }

    /// Where the chunk starting at point `at` starts when it may reach `budget` characters
    /// back into the previous chunk (which starts at point `prev`).
    fn overlap_start(&self, layout: &Layout<'_>, prev: usize, at: usize, budget: usize) -> usize {
        let reach = |i: usize| self.end_chars[at] - self.start_chars[i];
        let sentence = (prev + 1..at)
            .find(|&i| reach(i) <= budget && self.points[i].strength >= Strength::Sentence);
        if let Some(i) = sentence {
            return self.points[i].start;
        }
        let (prev_start, prev_end) = (self.points[prev].start, self.points[at].end);
        layout
            .word_start(layout.back(prev_end, budget).max(prev_start), prev_end)
            .unwrap_or(self.points[at].start)
    }
}

/// Character offsets of each point's start and end from the first point's start. Positions
/// are non-decreasing in the order start0, end1, start1, end2, ... so one pass counts them.
fn char_offsets(layout: &Layout<'_>, points: &[Cut]) -> (Vec<usize>, Vec<usize>) {
    let (mut at, mut chars) = (points.first().map_or(0, |p| p.start), 0);
    let mut starts = Vec::with_capacity(points.len());
    let mut ends = Vec::with_capacity(points.len());
    for p in points {
        for (pos, out) in [(p.end, &mut ends), (p.start, &mut starts)] {
            let pos = pos.max(at);
            chars += layout.size(at, pos);
            at = pos;
            out.push(chars);
        }
    }
    (starts, ends)
}

/// Structure-aware children of one range: packed to `target` characters, or to
/// `target - overlap` and then overlapped, so that no child exceeds `target` unless it is
/// a single unsplittable block.
pub(crate) fn structure(
    layout: &Layout<'_>,
    range: Span,
    target: usize,
    overlap: usize,
) -> Vec<(Span, bool)> {
    let target = target.max(1);
    let overlap = overlap.min(target / 2);
    // Word cuts only win where sentences are too long, and there they are restored anyway;
    // leaving them out makes packing several times faster.
    let packing = Packing::new(layout, range, target - overlap, Strength::Sentence);
    if overlap == 0 {
        packing.spans(target)
    } else {
        packing.overlapping_spans(layout, target, overlap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::readers::text;
    use crate::chunk::tree_layout::from_tree;

    fn pieces(text: &str, target: usize, overlap: usize) -> Vec<&str> {
        let layout = from_tree(text, &text::read(text));
        let range = layout
            .regions
            .first()
            .copied()
            .unwrap_or(Span { start: 0, end: 0 });
        structure(&layout, range, target, overlap)
            .into_iter()
            .map(|(s, _)| &text[s.start..s.end])
            .collect()
    }

    #[test]
    fn keeps_paragraphs_whole_when_they_fit() {
        let p = "Word ".repeat(39) + "end."; // 199 chars
        let text = format!("{p}\n\n{p}\n\n{p}");
        let got = pieces(&text, 300, 0);
        assert_eq!(got, vec![p.as_str(), p.as_str(), p.as_str()]);
    }

    #[test]
    fn balances_instead_of_leaving_a_tiny_tail() {
        let sentence = "This is one sentence. "; // 22 chars
        let text = sentence.repeat(15); // 330 chars
        let got = pieces(text.trim(), 300, 0);
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|p| p.chars().count() >= 100), "{got:?}");
        assert!(got.iter().all(|p| p.ends_with('.')));
    }

    #[test]
    fn splits_long_sentences_at_words_and_long_words_at_chars() {
        let text = "alpha beta gamma delta epsilon zeta eta theta";
        for p in pieces(text, 12, 0) {
            assert!(p.chars().count() <= 12 && !p.contains("  "), "{p:?}");
            assert!(
                text.split(' ').any(|w| p.starts_with(w)),
                "{p:?} does not start at a word"
            );
        }
        let long = "x".repeat(50);
        let got = pieces(&long, 20, 0);
        assert_eq!(got.concat(), long);
        assert!(got.iter().all(|p| p.len() <= 20));
    }

    #[test]
    fn overlap_starts_at_a_sentence_within_the_budget() {
        let text = "One two three. Four five six. Seven eight nine. Ten eleven twelve. Thirteen.";
        let got = pieces(text, 40, 16);
        // No whole sentence fits in 16 chars before each start, so overlaps start at words.
        assert_eq!(
            got,
            vec![
                "One two three.",
                "two three. Four five six.",
                "five six. Seven eight nine.",
                "eight nine. Ten eleven twelve.",
                "eleven twelve. Thirteen.",
            ]
        );
    }

    #[test]
    fn overlap_prefers_a_sentence_start() {
        let text = "Aa bb cc dd ee ff gg. Hh ii jj. Kk ll mm nn oo pp qq rr ss.";
        let got = pieces(text, 60, 20);
        // "ee ff gg. Hh ii jj." would fit in 20 chars too, but starts mid-sentence.
        assert_eq!(
            got,
            vec![
                "Aa bb cc dd ee ff gg. Hh ii jj.",
                "Hh ii jj. Kk ll mm nn oo pp qq rr ss."
            ]
        );
    }

    #[test]
    fn chinese_without_spaces_cuts_at_punctuation() {
        let text = "北京是中华人民共和国的首都，也是全国的政治中心。上海是最大的城市，经济发达。广州位于南方，气候温暖。";
        let got = pieces(text, 30, 0);
        assert_eq!(got.concat(), text);
        assert!(
            got.iter()
                .all(|p| p.chars().count() <= 30 && (p.ends_with('。') || p.ends_with('，'))),
            "{got:?}"
        );
    }
}
