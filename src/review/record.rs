//! The request log's records: what a search leaves, and what the application attaches later.

/// What was asked.
#[derive(Debug, Clone, PartialEq, serde::Serialize, bincode::Encode, bincode::Decode)]
#[serde(rename_all = "lowercase")]
pub enum LoggedQuery {
    /// A text, as given.
    Text(String),
    /// A caller's vector: only its dimension is kept.
    Vector {
        /// The vector's length.
        dimension: u32,
    },
}

/// A thumb on an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, bincode::Encode, bincode::Decode)]
pub enum Rating {
    /// A thumb up.
    #[serde(rename = "thumb_up")]
    Up,
    /// A thumb down.
    #[serde(rename = "thumb_down")]
    Down,
}

/// A reviewer's verdict on an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, bincode::Encode, bincode::Decode)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The answer was right.
    Correct,
    /// The answer was wrong.
    Wrong,
}

/// Gold evidence a reviewer names: a byte range of a document's current text.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, bincode::Encode, bincode::Decode)]
pub struct GoldEvidence {
    /// The document.
    pub doc_id: String,
    /// Start, in bytes.
    pub start_byte: u64,
    /// End, in bytes, exclusive.
    pub end_byte: u64,
}

/// Feedback on a logged request.
#[derive(
    Debug, Clone, PartialEq, Eq, Default, serde::Serialize, bincode::Encode, bincode::Decode,
)]
pub struct Feedback {
    /// Thumb up or down, if given.
    pub rating: Option<Rating>,
    /// A free-text note, if given.
    pub note: Option<String>,
    /// A reviewer's verdict, if given (format 6).
    pub verdict: Option<Verdict>,
    /// The evidence that should have been found (format 6).
    pub gold: Vec<GoldEvidence>,
    /// Unix milliseconds of the last change; set when stored.
    pub time_ms: u64,
}

/// One search, as the request log keeps it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, bincode::Encode, bincode::Decode)]
pub struct LoggedRequest {
    /// Unix milliseconds.
    pub time_ms: u64,
    /// The query.
    pub query: LoggedQuery,
    /// Who asked; `None` for unrestricted tooling access.
    pub principals: Option<Vec<String>>,
    /// What the caller named (index, `index@version`, alias).
    pub target: String,
    /// The route key the caller gave (see [`crate::SearchRequest::route_key`]).
    pub route_key: Option<String>,
    /// The index that answered.
    pub index: String,
    /// The version that answered.
    pub version: u64,
    /// Matching child chunk ids with their scores, best unit first.
    pub children: Vec<(String, f32)>,
    /// Returned parent chunk ids with their units' scores, by rank.
    pub parents: Vec<(String, f32)>,
    /// Estimated tokens of the returned texts.
    pub context_tokens: u64,
    /// Time the search took, in microseconds.
    pub latency_us: u64,
    /// The search's filter (canonical text), if any (format 6).
    pub filter: Option<String>,
    /// What the application attached later (format 6).
    pub outcome: Outcome,
    /// Feedback given later.
    pub feedback: Option<Feedback>,
    /// How the children were ranked (format 10; `Dense` for requests logged before).
    pub mode: LoggedMode,
    /// The reranker that reordered the units, by name, when one did (format 10).
    pub reranker: Option<String>,
}

/// How a logged search ranked its children: `folio::query::SearchMode` as the log keeps it. In JSON,
/// an object whose `name` is the mode's, as `folio search --json` writes the mode.
#[derive(
    Debug, Clone, Copy, PartialEq, Default, serde::Serialize, bincode::Encode, bincode::Decode,
)]
#[serde(tag = "name", rename_all = "lowercase")]
pub enum LoggedMode {
    /// By the query's vector.
    #[default]
    Dense,
    /// By BM25 over the children's texts.
    Lexical,
    /// Both legs, fused.
    Hybrid {
        /// How the legs were fused.
        fusion: LoggedFusion,
        /// Children the dense leg was asked for.
        dense_depth: u64,
        /// Children the lexical leg was asked for.
        lexical_depth: u64,
    },
}

/// A hybrid search's fusion, as the log keeps it (`folio::query::Fusion`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, bincode::Encode, bincode::Decode)]
#[serde(tag = "name", rename_all = "lowercase")]
pub enum LoggedFusion {
    /// Reciprocal rank fusion with this `k`.
    Rrf {
        /// RRF's `k`.
        k: u32,
    },
    /// The normalised weighted sum with this dense weight.
    Weighted {
        /// The dense leg's weight.
        dense_weight: f32,
    },
}

/// What the application did with a search's results, attached after it.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, bincode::Encode, bincode::Decode)]
pub struct Outcome {
    /// The conversation the request belongs to (follow-ups are counted within one).
    pub session: Option<String>,
    /// The answer given from the results.
    pub answer: Option<String>,
    /// Prompt tokens the answer spent.
    pub prompt_tokens: Option<u64>,
    /// A reranker's scores of the returned units, by rank.
    pub rerank_scores: Vec<f32>,
}

impl LoggedRequest {
    /// The best unit's score, if anything was returned.
    pub fn best_score(&self) -> Option<f32> {
        self.parents.first().map(|&(_, score)| score)
    }

    /// The documents of the returned units, by rank (a parent id is `doc_id#pN`).
    pub fn doc_ids(&self) -> Vec<&str> {
        self.parents
            .iter()
            .map(|(id, _)| id.rsplit_once('#').map_or(id.as_str(), |(doc, _)| doc))
            .collect()
    }

    /// The query text; `None` for a caller's vector.
    pub fn text(&self) -> Option<&str> {
        match &self.query {
            LoggedQuery::Text(text) => Some(text),
            LoggedQuery::Vector { .. } => None,
        }
    }
}

/// A request-log line of `folio log export`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LogEntry {
    /// The id feedback and annotations take.
    pub request_id: u64,
    /// The request.
    #[serde(flatten)]
    pub request: LoggedRequest,
}

/// What to attach to a logged request: each field given replaces the stored one, the
/// others stay as they are.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Annotation {
    /// The session (conversation) id.
    pub session: Option<String>,
    /// The answer text.
    pub answer: Option<String>,
    /// Prompt tokens spent.
    pub prompt_tokens: Option<u64>,
    /// Rerank scores of the returned units, by rank.
    pub rerank_scores: Option<Vec<f32>>,
    /// Thumb up or down.
    pub rating: Option<Rating>,
    /// A note.
    pub note: Option<String>,
    /// A verdict.
    pub verdict: Option<Verdict>,
    /// Gold evidence.
    pub gold: Option<Vec<GoldEvidence>>,
}

impl Annotation {
    /// Applies the annotation to `request` at `time_ms`.
    pub fn apply(&self, request: &mut LoggedRequest, time_ms: u64) {
        let outcome = &mut request.outcome;
        set(&mut outcome.session, &self.session);
        set(&mut outcome.answer, &self.answer);
        set(&mut outcome.prompt_tokens, &self.prompt_tokens);
        if let Some(scores) = &self.rerank_scores {
            outcome.rerank_scores.clone_from(scores);
        }
        let touches_feedback = self.rating.is_some()
            || self.note.is_some()
            || self.verdict.is_some()
            || self.gold.is_some();
        if touches_feedback {
            let feedback = request.feedback.get_or_insert_with(Feedback::default);
            set(&mut feedback.rating, &self.rating);
            set(&mut feedback.note, &self.note);
            set(&mut feedback.verdict, &self.verdict);
            if let Some(gold) = &self.gold {
                feedback.gold.clone_from(gold);
            }
            feedback.time_ms = time_ms;
        }
    }
}

fn set<T: Clone>(stored: &mut Option<T>, given: &Option<T>) {
    if given.is_some() {
        stored.clone_from(given);
    }
}
