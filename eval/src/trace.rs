//! `folio eval --jsonl`: one line per strategy, plan and question, with what a reader needs to
//! see the question: its gold spans drawn over the text around them with the chunk
//! boundaries, whether a boundary cuts each, and the units the top k returned. `folio ui`
//! reads these lines back.

use serde::{Deserialize, Serialize};

use crate::build::BuiltIndex;
use crate::data::{Corpus, Question};
use crate::metrics;
use crate::plan::Plan;
use crate::run::{Answer, Settings};
use crate::score::{chunk_spans, is_split, unit_spans};

/// Bytes of text kept on each side of a gold span beyond the chunks that hold it, and the
/// most kept on each side at all: a long parent would otherwise copy its document into
/// every line.
const MARGIN: usize = 200;
const MOST: usize = 2_000;

/// One question asked of one strategy by one plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionTrace {
    /// The strategy's label.
    pub strategy: String,
    /// The plan's label (`dense` in lines written before plans existed).
    #[serde(default = "dense_label")]
    pub plan: String,
    /// The question's id.
    pub query_id: String,
    /// The question.
    pub query: String,
    /// `(k, hit)` for each cut-off of Hit@k.
    pub hits: Vec<(usize, bool)>,
    /// The rank (from 1) of the first top-k unit holding a gold span whole.
    #[serde(default)]
    pub hit_rank: Option<usize>,
    /// Its evidence.
    pub gold: Vec<GoldTrace>,
    /// The top-k units returned, best first.
    pub units: Vec<UnitTrace>,
}

/// A gold span and the text around it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoldTrace {
    /// Its document.
    pub doc_id: String,
    /// Start, in bytes of the document's text.
    pub start: usize,
    /// End, exclusive.
    pub end: usize,
    /// No single child chunk holds it whole.
    pub child_split: bool,
    /// No single parent chunk holds it whole.
    pub parent_split: bool,
    /// The rank (from 1) of the first top-k unit that holds it whole.
    pub found_at: Option<usize>,
    /// The document's text around it, with the chunks that overlap that text.
    pub excerpt: Excerpt,
}

/// A stretch of a document's text and the chunks overlapping it (spans in bytes of the
/// document, not of the excerpt).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Excerpt {
    /// Where the excerpt starts in the document.
    pub start: usize,
    /// The text.
    pub text: String,
    /// Child chunks overlapping it.
    pub children: Vec<(usize, usize)>,
    /// Parent chunks overlapping it.
    pub parents: Vec<(usize, usize)>,
}

/// A returned unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitTrace {
    /// Its document.
    pub doc_id: String,
    /// Start, in bytes.
    pub start: usize,
    /// End, exclusive.
    pub end: usize,
    /// Tokens of its text.
    pub tokens: usize,
    /// Its score in the plan's last stage.
    #[serde(default)]
    pub score: f32,
    /// The matched children inside it.
    pub children: Vec<(usize, usize)>,
}

fn dense_label() -> String {
    Plan::dense().label
}

/// The lines of `index`'s answers by `plan`, one per question.
pub fn traces(
    index: &BuiltIndex,
    plan: &Plan,
    corpus: &Corpus,
    questions: &[Question],
    answers: &[Answer],
    settings: &Settings,
) -> Vec<QuestionTrace> {
    let k = settings.k();
    questions
        .iter()
        .zip(answers)
        .map(|(question, answer)| {
            let units: Vec<UnitTrace> = answer
                .units
                .iter()
                .take(k)
                .map(|u| UnitTrace {
                    doc_id: corpus.docs()[u.doc].doc_id.clone(),
                    start: u.start,
                    end: u.end,
                    tokens: u.tokens,
                    score: u.score,
                    children: u.children.clone(),
                })
                .collect();
            let ranked = unit_spans(answer, corpus, k);
            let gold_spans = question.gold_spans();
            let gold = question
                .gold
                .iter()
                .map(|g| gold_trace(index, corpus, g, &ranked))
                .collect();
            QuestionTrace {
                strategy: index.strategy.to_string(),
                plan: plan.label.clone(),
                query_id: question.id.clone(),
                query: question.text.clone(),
                hits: settings
                    .ks
                    .iter()
                    .map(|&cut| (cut, metrics::hit_at(&ranked, &gold_spans, cut)))
                    .collect(),
                hit_rank: metrics::first_hit(&ranked, &gold_spans, k).map(|rank| rank + 1),
                gold,
                units,
            }
        })
        .collect()
}

fn gold_trace(
    index: &BuiltIndex,
    corpus: &Corpus,
    gold: &crate::data::Gold,
    ranked: &[crate::metrics::Span],
) -> GoldTrace {
    let span = gold.span();
    let doc = corpus.index_of(&gold.doc_id);
    let spans = |parents| {
        doc.map(|d| chunk_spans(&index.chunkings, corpus, d, parents))
            .unwrap_or_default()
    };
    let (children, parents) = (spans(false), spans(true));
    let text = corpus.text(&gold.doc_id).unwrap_or("");
    // The excerpt covers the children that overlap the span, and a margin.
    let overlapping = children
        .iter()
        .filter(|c| c.start < gold.end && gold.start < c.end);
    let lo = overlapping
        .clone()
        .map(|c| c.start)
        .min()
        .unwrap_or(gold.start);
    let hi = overlapping.map(|c| c.end).max().unwrap_or(gold.end);
    let start = floor_char(
        text,
        lo.saturating_sub(MARGIN)
            .max(gold.start.saturating_sub(MOST)),
    );
    let end = ceil_char(text, (hi + MARGIN).min(gold.end.saturating_add(MOST)));
    let within = |s: &&crate::metrics::Span| s.start < end && start < s.end;
    GoldTrace {
        doc_id: gold.doc_id.clone(),
        start: gold.start,
        end: gold.end,
        child_split: is_split(&children, &span),
        parent_split: is_split(&parents, &span),
        found_at: ranked
            .iter()
            .position(|unit| unit.contains(&span))
            .map(|rank| rank + 1),
        excerpt: Excerpt {
            start,
            text: text.get(start..end).unwrap_or("").to_string(),
            children: children
                .iter()
                .filter(within)
                .map(|s| (s.start, s.end))
                .collect(),
            parents: parents
                .iter()
                .filter(within)
                .map(|s| (s.start, s.end))
                .collect(),
        },
    }
}

/// The nearest character boundary at or before `at` (clamped to the text).
fn floor_char(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The nearest character boundary at or after `at` (clamped to the text).
fn ceil_char(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}
