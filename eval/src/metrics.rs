//! Retrieval and chunking metrics: pure functions over spans, no I/O.
//!
//! Every position is a byte offset into a document's UTF-8 text and every range is
//! half-open, `[start, end)`. A retrieved reading unit, a chunk and a gold evidence span are
//! all a [`Span`]: a document id and a range. Ranges of different documents never meet.
//!
//! The functions work on any consistent offsets. Chroma's reference numbers (chunkeval) are
//! on code points: map both the units and the gold spans through [`CharOffsets`] first and
//! the same functions give code-point figures. On non-ASCII text byte and code-point figures
//! differ (a Han character weighs 3 bytes but 1 code point).
//!
//! "Top k" is the first `k` units of the ranked list (all of them if there are fewer).

use std::collections::HashMap;

/// A range `[start, end)` of one document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Span<'a> {
    /// The document.
    pub doc_id: &'a str,
    /// Start.
    pub start: usize,
    /// End, exclusive.
    pub end: usize,
}

impl<'a> Span<'a> {
    /// The range `[start, end)` of document `doc_id`.
    pub fn new(doc_id: &'a str, start: usize, end: usize) -> Self {
        Span { doc_id, start, end }
    }

    /// Its length.
    pub fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `inner` lies whole inside `self`, in the same document.
    pub fn contains(&self, inner: &Span) -> bool {
        self.doc_id == inner.doc_id && self.start <= inner.start && inner.end <= self.end
    }
}

/// Why a metric could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetricError {
    /// A span names a document with no text given.
    #[error("no text for document `{0}`")]
    UnknownDocument(String),
    /// A span is outside its document's text or inside a character.
    #[error("{start}..{end} is not a range on character boundaries of document `{doc_id}`")]
    BadRange {
        /// The document.
        doc_id: String,
        /// The span's start.
        start: usize,
        /// The span's end.
        end: usize,
    },
}

fn top_k<'s, 'a>(ranked: &'s [Span<'a>], k: usize) -> &'s [Span<'a>] {
    &ranked[..k.min(ranked.len())]
}

/// The 0-based rank of the first of the top-k units that holds a gold span whole.
pub fn first_hit(ranked: &[Span], gold: &[Span], k: usize) -> Option<usize> {
    top_k(ranked, k)
        .iter()
        .position(|unit| gold.iter().any(|g| unit.contains(g)))
}

/// Whether one of the top-k units holds a gold span whole.
pub fn hit_at(ranked: &[Span], gold: &[Span], k: usize) -> bool {
    first_hit(ranked, gold, k).is_some()
}

/// `1 / rank` of the first hit within the top k (use k = 10 for MRR@10), 0 without a hit.
pub fn reciprocal_rank(ranked: &[Span], gold: &[Span], k: usize) -> f64 {
    first_hit(ranked, gold, k).map_or(0.0, |r| 1.0 / (r + 1) as f64)
}

/// Recall@k: the share of the gold spans that one of the top-k units holds whole (the
/// relevance of [`hit_at`], counted per span); 0 without gold spans.
pub fn recall_at(ranked: &[Span], gold: &[Span], k: usize) -> f64 {
    if gold.is_empty() {
        return 0.0;
    }
    let top = top_k(ranked, k);
    let held = gold
        .iter()
        .filter(|g| top.iter().any(|unit| unit.contains(g)))
        .count();
    held as f64 / gold.len() as f64
}

/// nDCG@k with binary relevance judged per gold span: a unit is relevant to a span when it
/// holds it whole (as [`hit_at`]); each span gains `1 / log2(1 + r)` at the rank `r` of the
/// first top-k unit holding it (0 when none does), and the gains are averaged over the
/// spans. The ideal answer holds every span in its first unit (score 1); with one gold span
/// this is the usual binary nDCG with one relevant item. A later unit holding a span already
/// held adds nothing, so near-copies of one piece of evidence are not rewarded. 0 without
/// gold spans.
pub fn ndcg_at(ranked: &[Span], gold: &[Span], k: usize) -> f64 {
    if gold.is_empty() {
        return 0.0;
    }
    let top = top_k(ranked, k);
    let gains: f64 = gold
        .iter()
        .filter_map(|g| top.iter().position(|unit| unit.contains(g)))
        .map(|rank| 1.0 / ((rank + 2) as f64).log2())
        .sum();
    gains / gold.len() as f64
}

/// The exact two-sided binomial sign test: the probability, under "either side is as likely
/// to win" (p = 1/2), of a split of `wins + losses` at least as uneven as this one. Ties
/// (questions where the two agree) are left out by the caller. 1 when there is no
/// difference at all.
pub fn sign_test(wins: usize, losses: usize) -> f64 {
    let n = wins + losses;
    let fewer = wins.min(losses);
    // ln C(n, i) - n ln 2, built term by term: 2^-n underflows past n = 1074.
    let mut log_term = -(n as f64) * std::f64::consts::LN_2;
    let mut tail = 0.0;
    for i in 0..=fewer {
        tail += log_term.exp();
        log_term += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    (2.0 * tail).min(1.0)
}

/// Whether every gold span lies whole inside one of the top-k units: the stricter "full@k"
/// of `CHUNK_ANCHORS.md`, where evidence split over two adjacent units does not count.
/// False without gold spans.
pub fn every_span_hit_at(ranked: &[Span], gold: &[Span], k: usize) -> bool {
    let top = top_k(ranked, k);
    !gold.is_empty() && gold.iter().all(|g| top.iter().any(|unit| unit.contains(g)))
}

/// How much of a question's evidence the top-k units deliver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Completeness {
    /// Every gold span lies whole inside the union of the top-k units (touching units join).
    Full,
    /// Some gold bytes are covered, but not every span whole.
    Partial,
    /// No gold byte is covered; also a question without gold spans.
    Noise,
}

/// Evidence completeness of the top-k units.
pub fn completeness_at(ranked: &[Span], gold: &[Span], k: usize) -> Completeness {
    let top = top_k(ranked, k);
    let mut covered = 0;
    let mut all_whole = !gold.is_empty();
    for doc in doc_ids(gold) {
        let units = union(ranges_of(top, doc));
        let evidence = union(ranges_of(gold, doc));
        covered += intersection_len(&units, &evidence);
        all_whole &= ranges_of(gold, doc).all(|g| inside_union(&units, g));
    }
    match (all_whole, covered > 0) {
        (true, _) => Completeness::Full,
        (false, true) => Completeness::Partial,
        (false, false) => Completeness::Noise,
    }
}

/// The share of the tokens (see [`folio::tokens::spans`]) of the top-k units that lie inside
/// gold spans. Overlapping units count their shared tokens twice, as a reader receives them
/// twice. `text_of` gives a document's text by id. 0 when the units hold no token.
pub fn context_utilisation<'t>(
    ranked: &[Span],
    gold: &[Span],
    k: usize,
    text_of: impl Fn(&str) -> Option<&'t str>,
) -> Result<f64, MetricError> {
    let mut evidence_by_doc: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
    let (mut total, mut useful) = (0usize, 0usize);
    for unit in top_k(ranked, k) {
        let text = text_of(unit.doc_id)
            .ok_or_else(|| MetricError::UnknownDocument(unit.doc_id.to_owned()))?;
        let slice = text
            .get(unit.start..unit.end)
            .ok_or_else(|| MetricError::BadRange {
                doc_id: unit.doc_id.to_owned(),
                start: unit.start,
                end: unit.end,
            })?;
        let evidence = evidence_by_doc
            .entry(unit.doc_id)
            .or_insert_with(|| union(ranges_of(gold, unit.doc_id)));
        for (s, e) in folio::tokens::spans(slice) {
            total += 1;
            useful += usize::from(inside_union(evidence, (unit.start + s, unit.start + e)));
        }
    }
    Ok(ratio(useful, total))
}

/// Chroma's "token-level" (character-range) scores of one question.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RangeScores {
    /// Evidence covered / total evidence.
    pub recall: f64,
    /// Evidence covered / total length of the units.
    pub precision: f64,
    /// Evidence covered / (units + evidence not covered).
    pub iou: f64,
}

/// Chroma's recall, precision and IoU of the top-k units, as coded in the benchmark's
/// `base_evaluation.py` (see `data/chunkeval/README.md`):
///
/// - `inter` = evidence covered by units of the same document, deduplicated;
/// - recall = inter / Σ|gold|;
/// - precision = inter / Σ|unit| over all top-k units, any document, NOT deduplicated:
///   overlapping units count twice;
/// - IoU = inter / (Σ|unit| + evidence not covered).
///
/// A zero denominator (no units, no gold) scores 0.
pub fn chroma_scores(ranked: &[Span], gold: &[Span], k: usize) -> RangeScores {
    let top = top_k(ranked, k);
    let (mut inter, mut evidence_len) = (0, 0);
    for doc in doc_ids(gold) {
        let evidence = union(ranges_of(gold, doc));
        inter += intersection_len(&union(ranges_of(top, doc)), &evidence);
        evidence_len += total_len(&evidence);
    }
    let retrieved: usize = top.iter().map(Span::len).sum();
    let unused = evidence_len - inter;
    RangeScores {
        recall: ratio(inter, gold.iter().map(Span::len).sum()),
        precision: ratio(inter, retrieved),
        iou: ratio(inter, retrieved + unused),
    }
}

/// Chroma's precision ceiling of a chunking, for one question (no retrieval).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrecisionOmega {
    /// The best precision a retriever could reach with these chunks.
    pub score: f64,
    /// How many chunks meet the evidence: the benchmark's "highlighted chunk count".
    pub highlighted_chunks: usize,
}

/// Chroma's `precision_omega`: take every chunk (of `chunks`, a whole chunk list) that meets
/// a gold span, H; the score is |∪(H ∩ gold)| / |∪H ∪ gold|. As in the benchmark, a chunk
/// that merely touches a gold span (`chunk.end == gold.start` or the reverse) counts in H.
pub fn precision_omega(chunks: &[Span], gold: &[Span]) -> PrecisionOmega {
    let meets = |c: &Span| {
        gold.iter()
            .any(|g| c.doc_id == g.doc_id && c.start <= g.end && g.start <= c.end)
    };
    let highlighted: Vec<Span> = chunks.iter().filter(|c| meets(c)).copied().collect();
    let (mut inter, mut denominator) = (0, 0);
    for doc in doc_ids(gold) {
        let evidence = union(ranges_of(gold, doc));
        let chunks = union(ranges_of(&highlighted, doc));
        inter += intersection_len(&chunks, &evidence);
        denominator += total_len(&union(chunks.into_iter().chain(evidence)));
    }
    PrecisionOmega {
        score: ratio(inter, denominator),
        highlighted_chunks: highlighted.len(),
    }
}

/// The share of gold spans that no single chunk of `chunks` (whole chunk lists, no
/// retrieval) holds whole: the evidence a chunking cuts apart. 0 without gold spans.
pub fn boundary_split_rate(chunks: &[Span], gold: &[Span]) -> f64 {
    let index = ContainmentIndex::new(chunks);
    ratio(
        gold.iter().filter(|g| !index.contains(g)).count(),
        gold.len(),
    )
}

/// Answers "does some chunk hold this span whole?" in O(log n): per document, chunks
/// sorted by start with the running maximum of their ends.
struct ContainmentIndex<'a> {
    by_doc: HashMap<&'a str, (Vec<usize>, Vec<usize>)>,
}

impl<'a> ContainmentIndex<'a> {
    fn new(chunks: &[Span<'a>]) -> Self {
        let mut ranges: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
        for c in chunks {
            ranges.entry(c.doc_id).or_default().push((c.start, c.end));
        }
        let by_doc = ranges
            .into_iter()
            .map(|(doc, mut r)| {
                r.sort_unstable();
                let starts = r.iter().map(|&(s, _)| s).collect();
                let max_ends = r
                    .iter()
                    .scan(0, |reach, &(_, e)| {
                        *reach = e.max(*reach);
                        Some(*reach)
                    })
                    .collect();
                (doc, (starts, max_ends))
            })
            .collect();
        ContainmentIndex { by_doc }
    }

    fn contains(&self, span: &Span) -> bool {
        let Some((starts, max_ends)) = self.by_doc.get(span.doc_id) else {
            return false;
        };
        // Chunks starting at or before the span; the longest-reaching of them decides.
        let n = starts.partition_point(|&s| s <= span.start);
        n > 0 && max_ends[n - 1] >= span.end
    }
}

/// The `p`-th percentile (0..=100) of `samples`, interpolating linearly between the
/// nearest ranks (numpy's default). None when `samples` is empty or `p` is out of range.
pub fn percentile(samples: &[f64], p: f64) -> Option<f64> {
    if samples.is_empty() || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64))
}

/// Maps byte offsets of one text to code-point offsets, to compute Chroma's metrics on code
/// points as its reference numbers are.
#[derive(Debug, Clone)]
pub struct CharOffsets {
    /// The byte offset of every char boundary, end included; `None` for ASCII text, where
    /// bytes and code points coincide.
    boundaries: Option<Vec<usize>>,
    len: usize,
}

impl CharOffsets {
    /// The char boundaries of `text`.
    pub fn new(text: &str) -> Self {
        let boundaries = (!text.is_ascii()).then(|| {
            text.char_indices()
                .map(|(i, _)| i)
                .chain([text.len()])
                .collect()
        });
        CharOffsets {
            boundaries,
            len: text.len(),
        }
    }

    /// The code-point index of byte offset `byte`; None inside a character or past the end.
    pub fn char_index(&self, byte: usize) -> Option<usize> {
        match &self.boundaries {
            None => (byte <= self.len).then_some(byte),
            Some(b) => b.binary_search(&byte).ok(),
        }
    }

    /// `span` in code points; None when an end is not on a character boundary.
    pub fn to_chars<'a>(&self, span: Span<'a>) -> Option<Span<'a>> {
        Some(Span::new(
            span.doc_id,
            self.char_index(span.start)?,
            self.char_index(span.end)?,
        ))
    }
}

fn ratio(num: usize, den: usize) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

/// The distinct documents of `spans`, in first-seen order.
fn doc_ids<'a>(spans: &[Span<'a>]) -> Vec<&'a str> {
    let mut ids: Vec<&str> = Vec::new();
    for s in spans {
        if !ids.contains(&s.doc_id) {
            ids.push(s.doc_id);
        }
    }
    ids
}

fn ranges_of<'s>(spans: &'s [Span], doc: &'s str) -> impl Iterator<Item = (usize, usize)> + 's {
    spans
        .iter()
        .filter(move |s| s.doc_id == doc)
        .map(|s| (s.start, s.end))
}

/// Sorted, disjoint ranges covering the same positions; touching ranges join.
fn union(ranges: impl IntoIterator<Item = (usize, usize)>) -> Vec<(usize, usize)> {
    let mut sorted: Vec<(usize, usize)> = ranges.into_iter().filter(|(s, e)| s < e).collect();
    sorted.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(sorted.len());
    for (s, e) in sorted {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
}

fn total_len(ranges: &[(usize, usize)]) -> usize {
    ranges.iter().map(|(s, e)| e - s).sum()
}

/// |a ∩ b| for two outputs of [`union`].
fn intersection_len(a: &[(usize, usize)], b: &[(usize, usize)]) -> usize {
    let (mut i, mut j, mut len) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        len += a[i].1.min(b[j].1).saturating_sub(a[i].0.max(b[j].0));
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    len
}

/// Whether `range` lies inside one piece of `merged` (an output of [`union`]).
fn inside_union(merged: &[(usize, usize)], (start, end): (usize, usize)) -> bool {
    let n = merged.partition_point(|&(s, _)| s <= start);
    n > 0 && merged[n - 1].1 >= end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(ranges: &[(usize, usize)]) -> Vec<Span<'static>> {
        ranges.iter().map(|&(s, e)| Span::new("d", s, e)).collect()
    }

    #[test]
    fn ndcg_gains_each_span_at_its_first_holder() {
        let ranked = spans(&[(0, 10), (20, 30), (40, 50), (20, 35)]);
        // One span, held by the second unit: the binary nDCG of one relevant item at rank 2;
        // the fourth unit holds it again and adds nothing.
        let one = spans(&[(22, 25)]);
        assert!((ndcg_at(&ranked, &one, 10) - 1.0 / 3f64.log2()).abs() < 1e-12);
        // Held by the first unit: perfect; outside the cut-off: nothing.
        assert_eq!(ndcg_at(&ranked, &spans(&[(1, 2)]), 10), 1.0);
        assert_eq!(ndcg_at(&ranked, &spans(&[(41, 42)]), 2), 0.0);
        // Two spans: one at rank 1, one nowhere (it crosses a boundary).
        let two = spans(&[(1, 2), (8, 22)]);
        assert_eq!(ndcg_at(&ranked, &two, 10), 0.5);
        assert_eq!(ndcg_at(&ranked, &[], 10), 0.0);
    }

    #[test]
    fn recall_counts_the_spans_held_whole_within_k() {
        let ranked = spans(&[(0, 10), (20, 30), (40, 50)]);
        let gold = spans(&[(1, 2), (41, 45), (28, 33)]);
        assert!((recall_at(&ranked, &gold, 3) - 2.0 / 3.0).abs() < 1e-12);
        assert!((recall_at(&ranked, &gold, 1) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(recall_at(&ranked, &[], 3), 0.0);
    }

    #[test]
    fn the_sign_test_is_the_exact_binomial_tail() {
        assert_eq!(sign_test(0, 0), 1.0);
        assert_eq!(sign_test(3, 3), 1.0);
        // 0 wins, 5 losses: 2 * (1/32).
        assert!((sign_test(0, 5) - 0.0625).abs() < 1e-12);
        // 1 against 9: 2 * (1 + 10) / 1024.
        assert!((sign_test(9, 1) - 22.0 / 1024.0).abs() < 1e-12);
        // Large n stays finite: 600 against 400 is far from even.
        let p = sign_test(600, 400);
        assert!(p > 0.0 && p < 1e-9, "{p}");
        assert!(sign_test(510, 490) > 0.5);
    }
}
