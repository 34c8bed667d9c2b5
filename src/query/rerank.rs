//! The rerank stage, after grouping: a [`Reranker`] scores the query against the best
//! `top` units (their texts, or the best evidence window inside each), the units are
//! reordered by its scores (ties keep the earlier stage's order), then the answer is cut
//! to `k` and the token budget applies.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;

use super::assemble::span;
use super::units::Chunks;
use super::{Expand, Hit, QueryError, SearchRequest};
use crate::embed::{EmbedError, Reranker};
use crate::limits::{check, InvalidParameter, RERANK_TOP, WINDOW};

/// Units a new [`Rerank`] scores (at least the `k` asked for).
pub const DEFAULT_RERANK_TOP: usize = 20;

/// What the reranker reads of each unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Evidence {
    /// The unit's whole text, as the hit shows it (the default).
    Unit,
    /// The unit's best child and `n` neighbouring children on each side, within the unit:
    /// a long parent is judged by the passage that matched, not diluted by the rest.
    Window(usize),
}

/// A rerank stage: which reranker, how many units it scores and what it reads of them.
#[derive(Clone)]
pub struct Rerank {
    /// The model (or service) that scores (query, text) pairs.
    pub reranker: Arc<dyn Reranker>,
    /// Units scored: the best `max(top, k)` units of the earlier stages
    /// ([`DEFAULT_RERANK_TOP`] by default).
    pub top: usize,
    /// What is scored of each unit ([`Evidence::Unit`] by default).
    pub evidence: Evidence,
}

impl fmt::Debug for Rerank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rerank")
            .field("reranker", &self.reranker.name())
            .field("top", &self.top)
            .field("evidence", &self.evidence)
            .finish()
    }
}

impl Rerank {
    /// Reranks with `reranker`, scoring the [`DEFAULT_RERANK_TOP`] best units' texts.
    pub fn new(reranker: Arc<dyn Reranker>) -> Self {
        Rerank {
            reranker,
            top: DEFAULT_RERANK_TOP,
            evidence: Evidence::Unit,
        }
    }

    /// Scores the best `n` units (see the field of that name).
    pub fn top(mut self, n: usize) -> Self {
        self.top = n;
        self
    }

    /// Scores `evidence` of each unit.
    pub fn evidence(mut self, evidence: Evidence) -> Self {
        self.evidence = evidence;
        self
    }

    /// Refuses a `top` or window outside [`crate::limits`]' bounds.
    pub fn validate(&self) -> Result<(), InvalidParameter> {
        check("rerank_top", self.top, &RERANK_TOP)?;
        if let Evidence::Window(n) = self.evidence {
            check("rerank_window", n, &WINDOW)?;
        }
        Ok(())
    }

    /// The units the earlier stages must gather for a request that wants `k`.
    pub(crate) fn units(&self, k: usize) -> usize {
        self.top.max(k)
    }
}

/// Reorders `hits` (the earlier stages' units, best first, `best_children[i]` the child
/// number of hit `i`'s best child) by `rerank`'s scores of `query` against them, then
/// keeps `request.k` of them within its token budget, as the collector would have.
pub(crate) fn rerank(
    hits: Vec<Hit>,
    best_children: &[u32],
    chunks: &dyn Chunks,
    query: &str,
    rerank: &Rerank,
    request: &SearchRequest,
) -> Result<Vec<Hit>, QueryError> {
    let texts = hits
        .iter()
        .zip(best_children)
        .map(|(hit, &child)| evidence(hit, child, chunks, rerank.evidence))
        .collect::<Result<Vec<String>, QueryError>>()?;
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let failed = |error| QueryError::Rerank {
        reranker: rerank.reranker.name().to_string(),
        error: Box::new(error),
    };
    let scores = if texts.is_empty() {
        Vec::new()
    } else {
        rerank.reranker.score(query, &texts).map_err(failed)?
    };
    if scores.len() != hits.len() {
        return Err(failed(EmbedError::Count {
            expected: hits.len(),
            got: scores.len(),
        }));
    }
    if let Some(bad) = scores.iter().find(|s| !s.is_finite()) {
        return Err(failed(EmbedError::Failed(format!(
            "the reranker scored a text {bad}"
        ))));
    }
    let mut scored: Vec<(f32, Hit)> = scores.into_iter().zip(hits).collect();
    // Stable: equal scores keep the earlier stage's order.
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut kept = Vec::with_capacity(request.k.min(scored.len()));
    let mut budget = Budget::new(request.token_budget);
    for (score, mut hit) in scored {
        if kept.len() + budget.skipped >= request.k {
            break;
        }
        if !budget.spend(hit.tokens) {
            continue;
        }
        hit.score = score;
        hit.scores.rerank = Some(score);
        kept.push(hit);
    }
    Ok(kept)
}

/// The token budget as the collector applies it: a unit that does not fit is skipped and
/// still counts towards `k`.
struct Budget {
    left: Option<usize>,
    skipped: usize,
}

impl Budget {
    fn new(tokens: Option<usize>) -> Self {
        Budget {
            left: tokens,
            skipped: 0,
        }
    }

    /// Whether a unit of `tokens` fits in what is left (and spends them if so).
    fn spend(&mut self, tokens: usize) -> bool {
        match &mut self.left {
            Some(left) if *left < tokens => {
                self.skipped += 1;
                false
            }
            Some(left) => {
                *left -= tokens;
                true
            }
            None => true,
        }
    }
}

/// What the reranker reads of `hit`, whose best child is child number `best`.
fn evidence(
    hit: &Hit,
    best: u32,
    chunks: &dyn Chunks,
    evidence: Evidence,
) -> Result<String, QueryError> {
    let Evidence::Window(n) = evidence else {
        return Ok(hit.text.clone());
    };
    let child = chunks.child(best)?;
    let (start, end, _) = span(chunks, &child, Expand::Window(n))?;
    // Within the unit: a window must not bring in text the hit does not show.
    let (start, end) = (start.max(hit.start), end.min(hit.end));
    let doc = chunks.doc(child.rev)?;
    let source = doc.text.get(start..end).unwrap_or_default();
    Ok(crate::chunk::visible_text_of(source, doc.format).into_owned())
}
