//! Replay: the same questions on two strategies, and for each question where one delivers
//! evidence the other does not, a label saying why (definitions in `docs/evaluation.md`,
//! "Replay labels", and on [`Label`]).

use serde::Serialize;

use crate::build::BuiltIndex;
use crate::data::{Corpus, Question};
use crate::metrics::{self, Completeness, Span};
use crate::run::{Answer, Settings};
use crate::score::{chunk_spans, is_split, unit_spans};
use folio::chunk::Chunked;
use folio::query::Expand;

/// Why one strategy delivered a gold span and the other did not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    /// The worse strategy has no overlap and no reading unit of it holds the span whole: a
    /// boundary falls inside the span, which meets exactly two of its units.
    SplitBreaksEvidence,
    /// As above, but the worse strategy's children overlap: the overlap was too short.
    OverlapInsufficient,
    /// The span is in fragments: it meets three or more of the worse strategy's units and
    /// none holds it whole.
    ChunkTooSmall,
    /// A unit of the worse strategy holds the span whole but did not reach the top k, and it
    /// is mostly noise: the span is at most a quarter of it, and it is longer than every
    /// unit of the better strategy's top k that meets the span.
    ChunkTooLarge,
    /// The better strategy returned a unit holding the span whole although none of that
    /// unit's matched children holds it: the parent (or window) completed the evidence.
    ParentFillWorks,
    /// None of the above: both chunkings can hold the span, the ranking differed.
    Ranking,
}

impl Label {
    /// Every label, in report order.
    pub const ALL: [Label; 6] = [
        Label::SplitBreaksEvidence,
        Label::OverlapInsufficient,
        Label::ChunkTooSmall,
        Label::ChunkTooLarge,
        Label::ParentFillWorks,
        Label::Ranking,
    ];

    /// The label as reports write it.
    pub fn name(self) -> &'static str {
        match self {
            Label::SplitBreaksEvidence => "split_breaks_evidence",
            Label::OverlapInsufficient => "overlap_insufficient",
            Label::ChunkTooSmall => "chunk_too_small",
            Label::ChunkTooLarge => "chunk_too_large",
            Label::ParentFillWorks => "parent_fill_works",
            Label::Ranking => "ranking",
        }
    }
}

/// How one strategy did on one question, at k. Two outcomes differ when they differ in
/// full evidence or in hit: partial against noise, or another rank, is not a difference.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Outcome {
    /// Whether a unit in the top k holds a gold span whole.
    pub hit: bool,
    /// 1-based rank of the first unit holding a gold span whole, within the top k.
    pub rank: Option<usize>,
    /// `full`, `partial` or `noise`: how much of the evidence the top k hold.
    pub completeness: &'static str,
}

impl Outcome {
    /// How the ranked units deliver `gold` at k.
    pub fn of(ranked: &[Span], gold: &[Span], k: usize) -> Outcome {
        let rank = metrics::first_hit(ranked, gold, k);
        let completeness = match metrics::completeness_at(ranked, gold, k) {
            Completeness::Full => "full",
            Completeness::Partial => "partial",
            Completeness::Noise => "noise",
        };
        Outcome {
            hit: rank.is_some(),
            rank: rank.map(|r| r + 1),
            completeness,
        }
    }

    /// Full evidence first, then a hit.
    fn order(&self) -> (bool, bool) {
        (self.completeness == "full", self.hit)
    }
}

/// A gold span one strategy delivered and the other did not.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LostSpan {
    /// The document.
    pub doc_id: String,
    /// Start, in bytes.
    pub start_byte: usize,
    /// End, exclusive.
    pub end_byte: usize,
    /// Why the worse strategy lost it.
    pub labels: Vec<Label>,
}

/// One question on which two strategies differ.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// The question's id.
    pub query_id: String,
    /// The question.
    pub query: String,
    /// The strategy that did better.
    pub better: String,
    /// The strategy that did worse.
    pub worse: String,
    /// How the better one did.
    pub better_outcome: Outcome,
    /// How the worse one did.
    pub worse_outcome: Outcome,
    /// The labels of the lost spans, deduplicated.
    pub labels: Vec<Label>,
    /// The gold spans the better one delivered and the worse did not.
    pub spans: Vec<LostSpan>,
}

/// What one side's reading units are: how it cut each document and what its searches
/// returned around their matched children.
#[derive(Clone, Copy)]
pub struct Cuts<'a> {
    /// How each document of the corpus was cut, in corpus order.
    pub chunkings: &'a [Chunked],
    /// What the searches returned around the matched children.
    pub expand: Expand,
    /// Whether consecutive children share text.
    pub overlap: bool,
}

impl<'a> Cuts<'a> {
    /// How a strategy's index cut the corpus.
    pub fn of(index: &'a BuiltIndex) -> Cuts<'a> {
        Cuts {
            chunkings: &index.chunkings,
            expand: index.strategy.expand(),
            overlap: index.has_overlap(),
        }
    }
}

/// One strategy's index and its answers, in question order.
pub struct Side<'a> {
    /// The strategy, as reports name it.
    pub label: &'a str,
    /// Its reading units.
    pub cuts: Cuts<'a>,
    /// Its answers.
    pub answers: &'a [Answer],
}

impl<'a> Side<'a> {
    /// A strategy's index and its answers.
    pub fn of(index: &'a BuiltIndex, answers: &'a [Answer]) -> Side<'a> {
        Side {
            label: &index.strategy.label,
            cuts: Cuts::of(index),
            answers,
        }
    }

    fn reply(&self, question: usize) -> Option<Reply<'a>> {
        Some(Reply {
            label: self.label,
            cuts: self.cuts,
            answer: self.answers.get(question)?,
        })
    }
}

/// One side's answer to one question.
#[derive(Clone, Copy)]
pub struct Reply<'a> {
    /// The side, as reports name it.
    pub label: &'a str,
    /// Its reading units.
    pub cuts: Cuts<'a>,
    /// Its answer.
    pub answer: &'a Answer,
}

/// One side's answer to one question, scored.
struct Answered<'s, 'c> {
    reply: Reply<'s>,
    top: Vec<Span<'c>>,
    outcome: Outcome,
}

/// The differences between two strategies, question by question.
pub fn compare(
    a: &Side,
    b: &Side,
    corpus: &Corpus,
    questions: &[Question],
    settings: &Settings,
) -> Vec<Difference> {
    let k = settings.k();
    questions
        .iter()
        .enumerate()
        .filter_map(|(i, question)| difference(a.reply(i)?, b.reply(i)?, question, corpus, k))
        .collect()
}

/// How two sides differ on one question, at k; `None` when their outcomes are equal.
pub fn difference(
    a: Reply,
    b: Reply,
    question: &Question,
    corpus: &Corpus,
    k: usize,
) -> Option<Difference> {
    let gold = question.gold_spans();
    let (x, y) = (answered(a, &gold, corpus, k), answered(b, &gold, corpus, k));
    let (better, worse) = match x.outcome.order().cmp(&y.outcome.order()) {
        std::cmp::Ordering::Equal => return None,
        std::cmp::Ordering::Greater => (x, y),
        std::cmp::Ordering::Less => (y, x),
    };
    let spans: Vec<LostSpan> = gold
        .iter()
        .filter(|g| delivered(&better.top, g) > delivered(&worse.top, g))
        .map(|g| LostSpan {
            doc_id: g.doc_id.to_string(),
            start_byte: g.start,
            end_byte: g.end,
            labels: span_labels(g, &better, &worse, corpus),
        })
        .collect();
    let mut labels: Vec<Label> = spans.iter().flat_map(|s| s.labels.clone()).collect();
    labels.sort_unstable();
    labels.dedup();
    Some(Difference {
        query_id: question.id.clone(),
        query: question.text.clone(),
        better: better.reply.label.to_string(),
        worse: worse.reply.label.to_string(),
        better_outcome: better.outcome,
        worse_outcome: worse.outcome,
        labels,
        spans,
    })
}

fn answered<'s, 'c>(
    reply: Reply<'s>,
    gold: &[Span],
    corpus: &'c Corpus,
    k: usize,
) -> Answered<'s, 'c> {
    let top = unit_spans(reply.answer, corpus, k);
    let outcome = Outcome::of(&top, gold, k);
    Answered {
        reply,
        top,
        outcome,
    }
}

/// How well the top-k units deliver `gold`: 2 = inside one unit, 1 = inside their union
/// (touching units join), 0 = not whole.
fn delivered(top: &[Span], gold: &Span) -> u8 {
    let one = std::slice::from_ref(gold);
    if metrics::hit_at(top, one, top.len()) {
        2
    } else {
        u8::from(metrics::completeness_at(top, one, top.len()) == Completeness::Full)
    }
}

/// The labels of one lost span (see [`Label`]); `Ranking` when nothing else applies.
fn span_labels(gold: &Span, better: &Answered, worse: &Answered, corpus: &Corpus) -> Vec<Label> {
    let mut labels = Vec::new();
    let units = reading_units(&worse.reply.cuts, corpus, gold.doc_id);
    if is_split(&units, gold) {
        let meets = units
            .iter()
            .filter(|u| u.start < gold.end && gold.start < u.end)
            .count();
        labels.push(if meets >= 3 {
            Label::ChunkTooSmall
        } else if worse.reply.cuts.overlap {
            Label::OverlapInsufficient
        } else {
            Label::SplitBreaksEvidence
        });
    } else if diluted(gold, &units, &better.top) {
        labels.push(Label::ChunkTooLarge);
    }
    if parent_filled(gold, better) {
        labels.push(Label::ParentFillWorks);
    }
    if labels.is_empty() {
        labels.push(Label::Ranking);
    }
    labels
}

/// Every reading unit a side can return in `doc_id`: its parents, or for window
/// expansion every run of 2n + 1 consecutive children.
fn reading_units<'c>(cuts: &Cuts, corpus: &'c Corpus, doc_id: &str) -> Vec<Span<'c>> {
    let Some(doc) = corpus.index_of(doc_id) else {
        return Vec::new();
    };
    match cuts.expand {
        Expand::Window(n) => {
            let children = chunk_spans(cuts.chunkings, corpus, doc, false);
            let width = (2 * n + 1).min(children.len().max(1));
            children
                .windows(width)
                .map(|w| Span::new(w[0].doc_id, w[0].start, w[width - 1].end))
                .collect()
        }
        Expand::Parent | Expand::Section => chunk_spans(cuts.chunkings, corpus, doc, true),
    }
}

/// Whether the smallest unit holding `gold` is mostly noise and longer than every unit of
/// the better top k that meets the span.
fn diluted(gold: &Span, units: &[Span], better_top: &[Span]) -> bool {
    let Some(holder) = units
        .iter()
        .filter(|u| u.contains(gold))
        .map(Span::len)
        .min()
    else {
        return false;
    };
    let better_longest = better_top
        .iter()
        .filter(|u| u.doc_id == gold.doc_id && u.start < gold.end && gold.start < u.end)
        .map(Span::len)
        .max()
        .unwrap_or(0);
    gold.len() * 4 <= holder && holder > better_longest
}

/// Whether a returned unit holds `gold` whole while none of its matched children does.
fn parent_filled(gold: &Span, better: &Answered) -> bool {
    better
        .reply
        .answer
        .units
        .iter()
        .zip(&better.top)
        .any(|(unit, span)| {
            span.contains(gold)
                && !unit.children.is_empty()
                && !unit
                    .children
                    .iter()
                    .any(|&(s, e)| Span::new(span.doc_id, s, e).contains(gold))
        })
}

/// How many differing questions of one (better, worse) pair carry each label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairCounts {
    /// The strategy that did better.
    pub better: String,
    /// The strategy that did worse.
    pub worse: String,
    /// Questions on which they differ.
    pub questions: usize,
    /// In the order of [`Label::ALL`].
    pub per_label: Vec<usize>,
}

/// Label counts per (better, worse) pair, in first-seen order.
pub fn label_counts(differences: &[Difference]) -> Vec<PairCounts> {
    let mut pairs: Vec<PairCounts> = Vec::new();
    for d in differences {
        let pos = pairs
            .iter()
            .position(|p| p.better == d.better && p.worse == d.worse)
            .unwrap_or_else(|| {
                pairs.push(PairCounts {
                    better: d.better.clone(),
                    worse: d.worse.clone(),
                    questions: 0,
                    per_label: vec![0; Label::ALL.len()],
                });
                pairs.len() - 1
            });
        let pair = &mut pairs[pos];
        pair.questions += 1;
        for label in &d.labels {
            if let Some(j) = Label::ALL.iter().position(|l| l == label) {
                pair.per_label[j] += 1;
            }
        }
    }
    pairs
}
