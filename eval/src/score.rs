//! Scores answers with [`crate::metrics`]: per question, then averaged per strategy and per
//! group (question bucket, or first document when the data set has no buckets).

use std::collections::BTreeMap;

use crate::build::BuiltIndex;
use crate::data::{Corpus, Question};
use crate::error::EvalError;
use crate::metrics::{self, Completeness, Span};
use crate::plan::Plan;
use crate::run::{Answer, Settings, MRR_K};
use folio::chunk::Chunked;

/// The metrics of one question against one strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionScore {
    /// Hit@k for each k of [`Settings::ks`].
    pub hits: Vec<bool>,
    /// Reciprocal rank of the first hit within the top 10.
    pub rr: f64,
    /// nDCG@10 ([`metrics::ndcg_at`]).
    pub ndcg: f64,
    /// Recall@k, at the largest k ([`metrics::recall_at`]).
    pub recall: f64,
    /// How much of the evidence the top-k units hold.
    pub completeness: Completeness,
    /// Every gold span inside one single top-k unit (the anchors' stricter "full@k").
    pub every_span_hit: bool,
    /// Share of the top-k text that is evidence.
    pub utilisation: f64,
    /// Chroma's scores, on code points.
    pub chroma: metrics::RangeScores,
    /// Estimated tokens of the top-k texts.
    pub tokens: usize,
    /// Code points of the top-k texts.
    pub chars: usize,
    /// Milliseconds the search took.
    pub millis: f64,
    /// Milliseconds of each stage the library timed, in the order of [`STAGES`].
    pub stage_millis: [f64; STAGES.len()],
    /// Gold spans of the question.
    pub spans: usize,
    /// Gold spans that no single child (resp. parent) chunk holds whole.
    pub child_splits: usize,
    /// Gold spans that no single parent chunk holds whole.
    pub parent_splits: usize,
}

/// The search stages timed per question (embedding is left out: the harness embeds every
/// question once, in batches, before any search).
pub const STAGES: [&str; 4] = ["dense", "lexical", "fuse", "assemble"];

/// The top-k units of an answer as metric spans.
pub fn unit_spans<'c>(answer: &Answer, corpus: &'c Corpus, k: usize) -> Vec<Span<'c>> {
    answer
        .units
        .iter()
        .take(k)
        .map(|u| Span::new(&corpus.docs()[u.doc].doc_id, u.start, u.end))
        .collect()
}

/// Child (or, with `parents`, parent) spans of `doc` in `chunkings` (one per corpus
/// document); none when `doc` has no chunking.
pub fn chunk_spans<'c>(
    chunkings: &[Chunked],
    corpus: &'c Corpus,
    doc: usize,
    parents: bool,
) -> Vec<Span<'c>> {
    let id = corpus.docs()[doc].doc_id.as_str();
    let Some(chunked) = chunkings.get(doc) else {
        return Vec::new();
    };
    let spans: Vec<_> = if parents {
        chunked.parents.iter().map(|p| p.span).collect()
    } else {
        chunked.children.iter().map(|c| c.span).collect()
    };
    spans
        .into_iter()
        .map(|s| Span::new(id, s.start, s.end))
        .collect()
}

/// Whether no single chunk of `chunks` holds `gold` whole.
pub fn is_split(chunks: &[Span], gold: &Span) -> bool {
    metrics::boundary_split_rate(chunks, std::slice::from_ref(gold)) > 0.0
}

fn count_splits(index: &BuiltIndex, corpus: &Corpus, gold: &[Span], parents: bool) -> usize {
    gold.iter()
        .filter(|g| {
            let chunks = corpus
                .index_of(g.doc_id)
                .map(|d| chunk_spans(&index.chunkings, corpus, d, parents))
                .unwrap_or_default();
            is_split(&chunks, g)
        })
        .count()
}

/// Scores one answer.
pub fn score_question(
    question: &Question,
    answer: &Answer,
    index: &BuiltIndex,
    corpus: &Corpus,
    settings: &Settings,
) -> Result<QuestionScore, EvalError> {
    let k = settings.k();
    let gold = question.gold_spans();
    let ranked = unit_spans(answer, corpus, MRR_K.max(k));
    let top = &ranked[..k.min(ranked.len())];
    let top_chars = top
        .iter()
        .map(|s| corpus.to_chars(*s))
        .collect::<Result<Vec<_>, _>>()?;
    let gold_chars = gold
        .iter()
        .map(|s| corpus.to_chars(*s))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(QuestionScore {
        hits: settings
            .ks
            .iter()
            .map(|&k| metrics::hit_at(&ranked, &gold, k))
            .collect(),
        rr: metrics::reciprocal_rank(&ranked, &gold, MRR_K),
        ndcg: metrics::ndcg_at(&ranked, &gold, MRR_K),
        recall: metrics::recall_at(&ranked, &gold, k),
        completeness: metrics::completeness_at(top, &gold, k),
        every_span_hit: metrics::every_span_hit_at(top, &gold, k),
        utilisation: metrics::context_utilisation(top, &gold, k, |id| corpus.text(id))?,
        chroma: metrics::chroma_scores(&top_chars, &gold_chars, k),
        tokens: answer.units.iter().take(k).map(|u| u.tokens).sum(),
        chars: top_chars.iter().map(Span::len).sum(),
        millis: answer.millis,
        stage_millis: {
            let t = answer.stages;
            [t.dense, t.lexical, t.fuse, t.assemble].map(|micros| micros as f64 / 1000.0)
        },
        spans: gold.len(),
        child_splits: count_splits(index, corpus, &gold, false),
        parent_splits: count_splits(index, corpus, &gold, true),
    })
}

/// Averages over a set of questions.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Scores {
    /// Questions averaged.
    pub questions: usize,
    /// `(k, Hit@k)` for each k of [`Settings::ks`].
    pub hit_at: Vec<(usize, f64)>,
    /// Mean reciprocal rank of the first hit within the top 10.
    pub mrr: f64,
    /// Mean nDCG@10.
    pub ndcg: f64,
    /// Mean Recall@k, at the largest k.
    pub recall: f64,
    /// Share of questions whose top k hold all the evidence.
    pub full: f64,
    /// Share whose top k hold some of it.
    pub partial: f64,
    /// Share whose top k hold none of it.
    pub noise: f64,
    /// Share of questions with every gold span inside one single top-k unit.
    pub full_strict: f64,
    /// Mean share of the top-k text that is evidence.
    pub context_utilisation: f64,
    /// Chroma's recall, on code points.
    pub token_recall: f64,
    /// Chroma's precision, on code points.
    pub token_precision: f64,
    /// Chroma's IoU, on code points.
    pub token_iou: f64,
    /// Over gold spans, not questions.
    pub boundary_split_rate: f64,
    /// Gold spans no single parent holds whole, over gold spans.
    pub parent_split_rate: f64,
    /// Mean estimated tokens of the top-k texts.
    pub avg_input_tokens: f64,
    /// Mean code points of the top-k texts.
    pub avg_chars: f64,
    /// Median search time, ms.
    pub p50_ms: f64,
    /// 95th percentile search time, ms.
    pub p95_ms: f64,
    /// `(p50, p95)` of each stage of [`STAGES`], ms.
    pub stage_ms: [(f64, f64); STAGES.len()],
}

impl Scores {
    /// Averages `scores` (empty: all zero).
    pub fn of(scores: &[&QuestionScore], ks: &[usize]) -> Scores {
        let n = scores.len().max(1) as f64;
        let mean = |f: &dyn Fn(&QuestionScore) -> f64| scores.iter().map(|s| f(s)).sum::<f64>() / n;
        let share = |c: Completeness| mean(&|s| f64::from(u8::from(s.completeness == c)));
        let spans = scores.iter().map(|s| s.spans).sum::<usize>().max(1) as f64;
        let split = |f: &dyn Fn(&QuestionScore) -> usize| {
            scores.iter().map(|s| f(s)).sum::<usize>() as f64 / spans
        };
        let millis: Vec<f64> = scores.iter().map(|s| s.millis).collect();
        Scores {
            questions: scores.len(),
            hit_at: ks
                .iter()
                .enumerate()
                .map(|(i, &k)| (k, mean(&|s| f64::from(u8::from(s.hits[i])))))
                .collect(),
            mrr: mean(&|s| s.rr),
            ndcg: mean(&|s| s.ndcg),
            recall: mean(&|s| s.recall),
            full: share(Completeness::Full),
            partial: share(Completeness::Partial),
            noise: share(Completeness::Noise),
            full_strict: mean(&|s| f64::from(u8::from(s.every_span_hit))),
            context_utilisation: mean(&|s| s.utilisation),
            token_recall: mean(&|s| s.chroma.recall),
            token_precision: mean(&|s| s.chroma.precision),
            token_iou: mean(&|s| s.chroma.iou),
            boundary_split_rate: split(&|s| s.child_splits),
            parent_split_rate: split(&|s| s.parent_splits),
            avg_input_tokens: mean(&|s| s.tokens as f64),
            avg_chars: mean(&|s| s.chars as f64),
            p50_ms: metrics::percentile(&millis, 50.0).unwrap_or(0.0),
            p95_ms: metrics::percentile(&millis, 95.0).unwrap_or(0.0),
            stage_ms: std::array::from_fn(|i| {
                let stage: Vec<f64> = scores.iter().map(|s| s.stage_millis[i]).collect();
                let at = |p| metrics::percentile(&stage, p).unwrap_or(0.0);
                (at(50.0), at(95.0))
            }),
        }
    }
}

/// Everything reported about one strategy.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StrategyReport {
    /// The strategy's label.
    pub strategy: String,
    /// The plan's label (how the index was asked).
    pub plan: String,
    /// Over every question.
    pub all: Scores,
    /// Per bucket (or per first document), sorted by name.
    pub groups: Vec<(String, Scores)>,
    /// Child chunks over the corpus.
    pub children: usize,
    /// Parent chunks over the corpus.
    pub parents: usize,
    /// Child chunks per document.
    pub chunks_per_doc: f64,
    /// The store file's size; redb grows it in steps, so small differences do not show.
    pub index_bytes: u64,
    /// The child vectors alone: children × dimension × 4.
    pub vector_bytes: u64,
    /// Seconds the build took.
    pub build_secs: f64,
    /// Per question, in order: Hit@1, Hit@k and full evidence at the largest k (what the
    /// sign test against another plan pairs).
    #[serde(skip)]
    pub outcomes: Vec<[bool; 3]>,
}

/// Scores every answer of one strategy asked by one plan (answers in question order).
pub fn score_strategy(
    index: &BuiltIndex,
    plan: &Plan,
    corpus: &Corpus,
    questions: &[Question],
    answers: &[Answer],
    settings: &Settings,
) -> Result<StrategyReport, EvalError> {
    let scores = questions
        .iter()
        .zip(answers)
        .map(|(q, a)| score_question(q, a, index, corpus, settings))
        .collect::<Result<Vec<_>, _>>()?;
    let mut by_group: BTreeMap<&str, Vec<&QuestionScore>> = BTreeMap::new();
    for (q, s) in questions.iter().zip(&scores) {
        by_group.entry(q.group()).or_default().push(s);
    }
    let all: Vec<&QuestionScore> = scores.iter().collect();
    Ok(StrategyReport {
        strategy: index.strategy.label.clone(),
        plan: plan.label.clone(),
        all: Scores::of(&all, &settings.ks),
        groups: by_group
            .into_iter()
            .map(|(g, s)| (g.to_string(), Scores::of(&s, &settings.ks)))
            .collect(),
        children: index.children(),
        parents: index.parents(),
        chunks_per_doc: index.children() as f64 / corpus.len().max(1) as f64,
        index_bytes: index.index_bytes,
        vector_bytes: (index.children() * settings.embed_dim * 4) as u64,
        build_secs: index.build_secs,
        outcomes: scores
            .iter()
            .map(|s| {
                let first = s.hits.first().copied().unwrap_or(false);
                let last = s.hits.last().copied().unwrap_or(false);
                [first, last, s.completeness == Completeness::Full]
            })
            .collect(),
    })
}

/// One plan beside the dense plan of the same strategy, question by question.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AgainstDense {
    /// The strategy.
    pub strategy: String,
    /// The plan compared with dense.
    pub plan: String,
    /// For Hit@1, Hit@k (largest k) and full@k: questions the plan wins, loses, and the
    /// sign test's two-sided p over those ([`metrics::sign_test`]).
    pub paired: [(usize, usize, f64); 3],
}

/// Every non-dense plan of `reports` beside the dense plan of its strategy (none for a
/// strategy asked without a dense plan); `dense` is the dense plan's label.
pub fn against_dense(reports: &[StrategyReport], dense: &str) -> Vec<AgainstDense> {
    reports
        .iter()
        .filter(|r| r.plan != dense)
        .filter_map(|r| {
            let base = reports
                .iter()
                .find(|b| b.strategy == r.strategy && b.plan == dense)?;
            let paired =
                std::array::from_fn(|m| {
                    let (wins, losses) = r.outcomes.iter().zip(&base.outcomes).fold(
                        (0, 0),
                        |(w, l), (ours, theirs)| match (ours[m], theirs[m]) {
                            (true, false) => (w + 1, l),
                            (false, true) => (w, l + 1),
                            _ => (w, l),
                        },
                    );
                    (wins, losses, metrics::sign_test(wins, losses))
                });
            Some(AgainstDense {
                strategy: r.strategy.clone(),
                plan: r.plan.clone(),
                paired,
            })
        })
        .collect()
}
