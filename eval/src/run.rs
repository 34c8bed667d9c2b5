//! Asks every question of one index and keeps what came back: the reading units' byte
//! spans, their matched children, their token counts, and the search latency.

use std::sync::Arc;
use std::time::Instant;

use crate::build::BuiltIndex;
use crate::data::{Corpus, Question};
use crate::error::EvalError;
use crate::plan::Plan;
use folio::embed::{embed_by_length, Embedder, TokenCounter};
use folio::query::{SearchMode, SearchRequest, StageTimes};
use folio::store::{Access, Progress};

/// The settings every strategy shares.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Dimension of the vectors.
    pub embed_dim: usize,
    /// The embedder, as reports name it.
    pub embedder: String,
    /// Cut-offs of Hit@k, ascending; the largest is "the" k of the other metrics.
    pub ks: Vec<usize>,
    /// Token budget of the returned texts, if any.
    pub token_budget: Option<usize>,
    /// What the budget and the input tokens count (the estimate when `None`; see
    /// [`SearchRequest::budget_tokens`]).
    pub budget_tokens: Option<Arc<dyn TokenCounter>>,
}

/// MRR is MRR@10, so searches return at least 10 units.
pub const MRR_K: usize = 10;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            embed_dim: 2048,
            embedder: "folio-hash-v1 (2048 dims)".into(),
            ks: vec![1, 3, 5],
            token_budget: None,
            budget_tokens: None,
        }
    }
}

impl Settings {
    /// The settings of `embedder` with the Hit@k cut-offs `ks` (sorted, duplicates dropped;
    /// at least one, none zero) and an optional token budget.
    pub fn new(
        embedder: &dyn Embedder,
        mut ks: Vec<usize>,
        token_budget: Option<usize>,
    ) -> Result<Settings, EvalError> {
        ks.sort_unstable();
        ks.dedup();
        if ks.first().is_none_or(|&k| k == 0) {
            return Err(EvalError::Invalid(
                "k needs positive cut-offs, e.g. 1,3,5".into(),
            ));
        }
        Ok(Settings {
            embed_dim: embedder.dimension(),
            embedder: format!("{} ({} dims)", embedder.name(), embedder.dimension()),
            ks,
            token_budget,
            budget_tokens: None,
        })
    }

    /// The k of completeness, utilisation, Chroma's scores and input tokens.
    pub fn k(&self) -> usize {
        self.ks.iter().copied().max().unwrap_or(5)
    }

    fn search_k(&self) -> usize {
        self.k().max(MRR_K)
    }
}

/// One returned reading unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    /// Position of its document in the corpus.
    pub doc: usize,
    /// Start in its document, in bytes.
    pub start: usize,
    /// End, exclusive.
    pub end: usize,
    /// Tokens of its text (see [`Settings::budget_tokens`]).
    pub tokens: usize,
    /// Its score, as the plan's last stage gave it (see [`folio::query::SearchMode`]).
    pub score: f32,
    /// Byte spans of the matched children inside it.
    pub children: Vec<(usize, usize)>,
}

/// What one question got back from one index.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// Best first.
    pub units: Vec<Unit>,
    /// Milliseconds the search took.
    pub millis: f64,
    /// Where the library says that time went (embedding is 0: questions come embedded).
    pub stages: StageTimes,
}

/// Asks every question of `index` by `plan`, in order, one at a time (so latencies are not
/// skewed by concurrent searches); ACL off, near-duplicate removal off.
pub fn ask_all(
    index: &BuiltIndex,
    corpus: &Corpus,
    questions: &[Question],
    plan: &Plan,
    settings: &Settings,
    progress: &dyn Progress,
) -> Result<Vec<Answer>, EvalError> {
    progress.stage(
        &format!("questions [{} {plan}]", index.strategy),
        questions.len() as u64,
    );
    let mut answers = Vec::with_capacity(questions.len());
    for question in questions {
        answers.push(ask(index, corpus, question, plan, settings)?);
        progress.advance(1);
    }
    Ok(answers)
}

/// Questions per call to the embedder.
const QUESTION_SLICE: usize = 128;

/// Embeds every question without a vector once, shortest first in slices (less padding
/// for a transformer), so that each strategy searches with the same vectors: a model takes
/// far longer to embed a question than an exact search of a few thousand chunks, and a run
/// asks every question of every strategy.
pub fn embed_questions(
    questions: &mut [Question],
    embedder: &dyn Embedder,
    progress: &dyn Progress,
) -> Result<(), EvalError> {
    let dim = embedder.dimension();
    let mut missing: Vec<&mut Question> = questions
        .iter_mut()
        .filter(|q| q.vector.is_none())
        .collect();
    let texts: Vec<&str> = missing.iter().map(|q| q.text.as_str()).collect();
    progress.stage("embed questions", texts.len() as u64);
    let rows = embed_by_length(
        &texts,
        dim,
        QUESTION_SLICE,
        |batch| embedder.embed_queries(batch),
        |n| progress.advance(n as u64),
    )?;
    for (question, row) in missing.iter_mut().zip(rows.chunks_exact(dim.max(1))) {
        question.vector = Some(row.to_vec());
    }
    Ok(())
}

fn ask(
    index: &BuiltIndex,
    corpus: &Corpus,
    question: &Question,
    plan: &Plan,
    settings: &Settings,
) -> Result<Answer, EvalError> {
    // The lexical leg needs the words, the dense leg the vector embedded once for every plan.
    let text = SearchRequest::text(question.text.as_str());
    // A reranker reads the text too.
    let request = match (&question.vector, plan.mode, &plan.rerank) {
        (Some(vector), SearchMode::Dense, None) => SearchRequest::vector(vector.clone()),
        (Some(vector), SearchMode::Dense | SearchMode::Hybrid(_), _) => {
            text.with_query_vector(vector.clone())
        }
        (None, _, _) | (Some(_), SearchMode::Lexical, _) => text,
    };
    let mut request = request;
    if let Some(rerank) = &plan.rerank {
        request = request.rerank(rerank.stage());
    }
    let mut request = request
        .mode(plan.mode)
        .access(Access::Unrestricted)
        .k(settings.search_k())
        .expand(index.strategy.expand());
    request.token_budget = settings.token_budget;
    request.budget_tokens = settings.budget_tokens.clone();
    // A threshold above 1 turns near-duplicate removal off: every strategy keeps all units.
    request.dedup = None;
    let started = Instant::now();
    let response = index.store.search(&request)?;
    let millis = started.elapsed().as_secs_f64() * 1000.0;
    let stages = response.stats.stage_micros;
    let units = response
        .results
        .into_iter()
        .map(|hit| {
            let doc = corpus.index_of(&hit.doc_id).ok_or_else(|| {
                EvalError::Invalid(format!(
                    "the index returned unknown document `{}`",
                    hit.doc_id
                ))
            })?;
            Ok(Unit {
                doc,
                start: hit.start,
                end: hit.end,
                tokens: hit.tokens,
                score: hit.score,
                children: hit.children.iter().map(|c| (c.start, c.end)).collect(),
            })
        })
        .collect::<Result<_, EvalError>>()?;
    Ok(Answer {
        units,
        millis,
        stages,
    })
}
