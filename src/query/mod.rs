//! Small-to-big retrieval: search the small children, group them by their reading unit
//! (parent, section or window) with the **max** child score, and return the best units
//! within a token budget, dropping near-duplicates.
//!
//! The path is a few stages, each in a file of its own, on the store's public types and
//! methods (`Snapshot` and what it returns), named where `storage/` defines them, not through
//! the `store.rs` handle that calls this module:
//!
//! - `rank.rs`: [`Rank`] ranks the visible children (the version's segments on a
//!   [`Snapshot`], or a [`ChildSource`]); `lexical.rs` ranks them by BM25, `fusion.rs`
//!   fuses the two (see [`SearchMode`]);
//! - `units.rs`: [`Chunks`] reads what units are made of (child and parent records, chunk
//!   ranges, document revisions);
//! - `collect.rs`: [`collect`] groups ranked children into units best first and stops at
//!   `k` units, asking the ranker for more when they fall short;
//! - `assemble.rs`: expansion, merging, near-duplicates (`dedup.rs`) and the budget;
//! - `rerank.rs`: [`Rerank`], an optional last stage: a reranker reorders the best units
//!   before the answer is cut to `k`.
//!
//! `search` and `search_through` (behind [`crate::Store::search`] and
//! [`crate::Store::search_through`]) resolve the target on a snapshot, embed the query and
//! compute the visible set, then run the stages.

mod assemble;
mod collect;
mod dedup;
mod error;
mod fusion;
mod lexical;
mod rank;
mod rerank;
mod source;
mod units;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::embed::{validate, Embedder, TokenCounter};
use crate::filter::{Filter, MetadataValue};
use crate::index::{QueryVector, SearchPath, ZeroQuery};
use crate::limits::{check, InvalidParameter, RESCORE, WINDOW};
use crate::review::{LoggedQuery, LoggedRequest};
use crate::storage::error::ReadError;
use crate::storage::file::tables::DEFAULT_INDEX;
use crate::storage::read::snapshot::Snapshot;
use crate::storage::read::state::{Access, IndexState, VersionView};
use roaring::RoaringBitmap;

pub use collect::{collect, Collected};
pub use error::QueryError;
pub use fusion::{
    Fusion, Hybrid, HybridSettings, DEFAULT_DENSE_DEPTH, DEFAULT_DENSE_WEIGHT,
    DEFAULT_LEXICAL_DEPTH, DEFAULT_RRF_K,
};
pub use rank::Rank;
pub use rerank::{Evidence, Rerank, DEFAULT_RERANK_TOP};
pub use source::{Ask, Candidate, ChildSource, SourceError, WrongChild};
pub use units::Chunks;

/// What a query is.
#[derive(Debug, Clone, PartialEq)]
pub enum Query {
    /// Embedded with the index's embedder.
    Text(String),
    /// Already embedded by the caller, with the index's embedder.
    Vector(Vec<f32>),
}

/// What is returned for each group of matching children.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Expand {
    /// The child's parent chunk (the default).
    Parent,
    /// The whole section around the child's parent (parents of the same heading path, together).
    Section,
    /// The child and `n` neighbouring children on each side.
    Window(usize),
}

impl Expand {
    /// Refuses a window wider than [`crate::limits::WINDOW`] (child numbers are 32-bit).
    pub fn validate(&self) -> Result<(), InvalidParameter> {
        if let Expand::Window(n) = self {
            check("window", *n, &WINDOW)?;
        }
        Ok(())
    }
}

/// How a search ranks the children before grouping them. Hits carry the score of the
/// stage that ranked last.
/// In JSON, an object whose `name` is the mode's, with a hybrid search's settings beside it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "name", rename_all = "lowercase")]
pub enum SearchMode {
    /// By the query's vector (the default): scores are the index metric's similarity.
    Dense,
    /// By BM25 over the children's texts (a text query only): scores are BM25's, at least
    /// 0, and only children holding a query term are found. The terms come from the
    /// index's lexical analyzer (the language its record names, `Auto` by default), over
    /// the child's text as hits show it (without its heading path).
    Lexical,
    /// Both, fused (a text query only): scores are the fusion's (see [`Fusion`]).
    Hybrid(Hybrid),
}

impl SearchMode {
    /// The mode's name: `dense`, `lexical` or `hybrid`.
    pub fn name(&self) -> &'static str {
        match self {
            SearchMode::Dense => "dense",
            SearchMode::Lexical => "lexical",
            SearchMode::Hybrid(_) => "hybrid",
        }
    }
}

/// How a new [`SearchRequest`] ranks children.
pub const DEFAULT_MODE: SearchMode = SearchMode::Dense;

/// The near-duplicate threshold of a new [`SearchRequest`].
pub const DEFAULT_DEDUP_THRESHOLD: f32 = 0.9;

/// The reading units a new [`SearchRequest`] returns.
pub const DEFAULT_K: usize = 5;

/// Children gathered per unit asked for, when [`SearchRequest::children`] is `None`.
pub const CHILDREN_PER_UNIT: usize = 4;

/// The fewest children gathered, when [`SearchRequest::children`] is `None`.
pub const MIN_CHILDREN: usize = 20;

/// What a new [`SearchRequest`] returns around its matching children.
pub const DEFAULT_EXPAND: Expand = Expand::Parent;

/// A search: the query, who asks, and how much to return.
///
/// # Defaults
///
/// [`SearchRequest::text`] and [`SearchRequest::vector`] start from these (public access,
/// the `default` index, no token budget, the planner's graph breadth); `tests/defaults.rs`
/// keeps this table equal to the constants:
///
/// | setting | default | constant |
/// |---|---|---|
/// | reading units (`k`) | 5 | [`DEFAULT_K`] |
/// | children gathered per unit | 4 | [`CHILDREN_PER_UNIT`] |
/// | fewest children gathered | 20 | [`MIN_CHILDREN`] |
/// | expansion | `Parent` | [`DEFAULT_EXPAND`] |
/// | near-duplicate threshold | 0.9 | [`DEFAULT_DEDUP_THRESHOLD`] |
/// | ranking mode | `Dense` | [`DEFAULT_MODE`] |
/// | hybrid: the default fusion, weighted: its dense weight | 0.7 | [`DEFAULT_DENSE_WEIGHT`] |
/// | hybrid: reciprocal rank fusion's `k` (when chosen without one) | 60 | [`DEFAULT_RRF_K`] |
/// | hybrid: children the dense leg ranks (at least those wanted) | 40 | [`DEFAULT_DENSE_DEPTH`] |
/// | hybrid: children the lexical leg ranks (at least those wanted) | 40 | [`DEFAULT_LEXICAL_DEPTH`] |
#[derive(Debug, Clone)]
pub struct SearchRequest {
    /// The query: a text the index's embedder embeds, or a vector.
    pub query: Query,
    /// A text query's vector, already embedded by the index's embedder: the dense leg
    /// searches with it instead of embedding the text, the lexical leg reads the text
    /// (see [`SearchRequest::with_query_vector`]). `None` by default.
    pub query_vector: Option<Vec<f32>>,
    /// Who asks: the documents they may see are the only ones searched ([`Access::public`] by default).
    pub access: Access,
    /// Reading units to return: the answer holds `min(k, distinct visible units)` (fewer
    /// only when a token budget leaves no room). Any `k` is accepted; it is clamped to what
    /// the caller may see.
    pub k: usize,
    /// Children to gather before grouping; by default `max(4k, 20)` ([`CHILDREN_PER_UNIT`],
    /// [`MIN_CHILDREN`]), clamped to the visible children, and grown (from the children
    /// per unit seen) until `k` units are found or every visible child was seen.
    pub children: Option<usize>,
    /// Total tokens of the returned texts, counted by [`SearchRequest::budget_tokens`].
    /// Units are taken in order of their best child; one that does not fit in what is
    /// left is skipped and still counts towards `k` (the search stops at `k` units
    /// accepted or skipped: a tight budget would otherwise read every visible unit).
    pub token_budget: Option<usize>,
    /// What the budget and every hit's `tokens` count: the tokens of the model that reads the
    /// texts (e.g. [`crate::embed::counter_from_spec`]`("cl100k")`); the model-free estimate
    /// of [`crate::tokens`] when `None` (the default).
    pub budget_tokens: Option<Arc<dyn TokenCounter>>,
    /// What is returned around the matching children ([`DEFAULT_EXPAND`] by default).
    pub expand: Expand,
    /// `index`, `index@version`, or an alias; the `default` index when `None`.
    pub target: Option<String>,
    /// Graph search breadth; the planner picks one from `k` when `None`.
    pub ef: Option<usize>,
    /// Candidates a compressed index re-scores on f32 rows read from the file (at least
    /// `k`, within [`crate::limits::RESCORE`]); the index's own setting
    /// ([`crate::store::VectorStorage::Compressed`], 40 by default) when `None`. Ignored by
    /// resident indexes, which re-score every candidate.
    pub rescore: Option<usize>,
    /// Drops a unit whose word-shingle Jaccard similarity to a better one reaches this
    /// threshold (in `0.0..=1.0`; 0.9 by default), and tops the answer up from further
    /// candidates; `None` keeps every unit. [`SearchStats::duplicates_dropped`] counts the
    /// units dropped.
    pub dedup: Option<f32>,
    /// Picks the version when `target` is an alias that splits traffic (tenant, user…);
    /// the query text (or vector) when `None`. The same key always gets the same version.
    pub route_key: Option<String>,
    /// Only chunks this filter matches are searched (see [`crate::filter`] for the
    /// language); none by default. The answer is the best of what is both visible and
    /// matching, filled to `min(k, such units)`, as without a filter.
    pub filter: Option<Filter>,
    /// How children are ranked ([`DEFAULT_MODE`], dense, by default). `Lexical` and
    /// `Hybrid` need a text query.
    pub mode: SearchMode,
    /// A last stage that reorders the best units by a reranker's scores (a text query
    /// only); none by default. See [`Rerank`].
    pub rerank: Option<Rerank>,
}

impl SearchRequest {
    /// A text query with the defaults above.
    pub fn text(query: impl Into<String>) -> Self {
        Self::new(Query::Text(query.into()))
    }

    /// A vector query with the defaults above.
    pub fn vector(query: Vec<f32>) -> Self {
        Self::new(Query::Vector(query))
    }

    fn new(query: Query) -> Self {
        SearchRequest {
            query,
            query_vector: None,
            access: Access::public(),
            k: DEFAULT_K,
            children: None,
            token_budget: None,
            budget_tokens: None,
            expand: DEFAULT_EXPAND,
            target: None,
            ef: None,
            rescore: None,
            dedup: Some(DEFAULT_DEDUP_THRESHOLD),
            route_key: None,
            filter: None,
            mode: DEFAULT_MODE,
            rerank: None,
        }
    }

    /// Reorders the best units by `rerank`'s reranker before the answer is cut to `k`
    /// (see [`Rerank`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use folio::embed::{EmbedError, Reranker};
    /// use folio::query::{Evidence, Rerank, SearchRequest};
    ///
    /// /// Prefers short texts: a stand-in for a cross-encoder.
    /// struct Shortest;
    /// impl Reranker for Shortest {
    ///     fn name(&self) -> &str { "shortest" }
    ///     fn score(&self, _query: &str, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
    ///         Ok(texts.iter().map(|t| -(t.len() as f32)).collect())
    ///     }
    /// }
    ///
    /// let request = SearchRequest::text("refund a card payment")
    ///     .rerank(Rerank::new(Arc::new(Shortest)).top(30).evidence(Evidence::Window(1)));
    /// assert_eq!(request.rerank.map(|r| r.top), Some(30));
    /// ```
    pub fn rerank(mut self, rerank: Rerank) -> Self {
        self.rerank = Some(rerank);
        self
    }

    /// Gives a text query its vector, embedded beforehand by the index's embedder (checked
    /// for dimension), so that a caller asking one question in several modes embeds it once.
    /// Refused beside a vector query.
    ///
    /// ```
    /// use folio::query::{Hybrid, SearchMode, SearchRequest};
    ///
    /// let request = SearchRequest::text("refund a card payment")
    ///     .with_query_vector(vec![0.6, 0.8])
    ///     .mode(SearchMode::Hybrid(Hybrid::default()));
    /// assert_eq!(request.query_vector.as_deref(), Some(&[0.6, 0.8][..]));
    /// ```
    pub fn with_query_vector(mut self, vector: Vec<f32>) -> Self {
        self.query_vector = Some(vector);
        self
    }

    /// Ranks children by `mode` (see the field of that name).
    ///
    /// ```
    /// use folio::query::{Hybrid, SearchMode, SearchRequest};
    ///
    /// let request = SearchRequest::text("refund a card payment")
    ///     .mode(SearchMode::Hybrid(Hybrid::default().weighted(0.7)));
    /// assert_eq!(request.mode.name(), "hybrid");
    /// ```
    pub fn mode(mut self, mode: SearchMode) -> Self {
        self.mode = mode;
        self
    }

    /// Searches as `access` (see the field of that name).
    pub fn access(mut self, access: Access) -> Self {
        self.access = access;
        self
    }

    /// Searches as these principals (public documents are always visible).
    pub fn as_principals<S: Into<String>>(self, principals: impl IntoIterator<Item = S>) -> Self {
        self.access(Access::principals(principals))
    }

    /// Returns `k` reading units (see the field of that name).
    pub fn k(mut self, k: usize) -> Self {
        self.k = k;
        self
    }

    /// Gathers `n` children before grouping (see the field of that name).
    pub fn children(mut self, n: usize) -> Self {
        self.children = Some(n);
        self
    }

    /// Keeps the returned texts within `tokens` tokens (see [`SearchRequest::budget_tokens`]).
    pub fn token_budget(mut self, tokens: usize) -> Self {
        self.token_budget = Some(tokens);
        self
    }

    /// Counts the budget and the hits' tokens with `counter` (see the field of that name).
    pub fn budget_tokens(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.budget_tokens = Some(counter);
        self
    }

    /// Returns `expand` around the matching children.
    pub fn expand(mut self, expand: Expand) -> Self {
        self.expand = expand;
        self
    }

    /// Searches `target`: `index`, `index@version`, `index@tag` or an alias.
    pub fn target(mut self, target: impl Into<String>) -> Self {
        self.target = Some(target.into());
        self
    }

    /// Graph search breadth `ef` instead of the planner's choice.
    pub fn ef(mut self, ef: usize) -> Self {
        self.ef = Some(ef);
        self
    }

    /// Re-scores `n` candidates of a compressed index (see the field of that name).
    pub fn rescore(mut self, n: usize) -> Self {
        self.rescore = Some(n);
        self
    }

    /// Near-duplicate removal at this similarity threshold (see [`SearchRequest::dedup`]).
    pub fn dedup_threshold(mut self, threshold: f32) -> Self {
        self.dedup = Some(threshold);
        self
    }

    /// Every unit is kept, however similar to a better one.
    pub fn no_dedup(mut self) -> Self {
        self.dedup = None;
        self
    }

    /// Searches only chunks `filter` matches; called again, chunks that match every filter
    /// given (see the field of that name).
    ///
    /// ```
    /// use folio::{Filter, SearchRequest};
    ///
    /// let request = SearchRequest::text("refund a card payment")
    ///     .filter(Filter::parse(r#"section_path ^= "Refunds""#)?)
    ///     .filter(Filter::parse("updated_at >= 2024-01-01")?);
    /// assert!(request.filter.is_some());
    /// # Ok::<(), folio::FilterError>(())
    /// ```
    pub fn filter(mut self, filter: Filter) -> Self {
        self.filter = Some(match self.filter.take() {
            Some(before) => before.and(filter),
            None => filter,
        });
        self
    }

    /// Routes an alias that splits traffic by `key` (see the field of that name).
    pub fn route_key(mut self, key: impl Into<String>) -> Self {
        self.route_key = Some(key.into());
        self
    }
}

/// A unit's score in each stage that ran, for its best child where the stage ranks
/// children. In JSON, only the stages that ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct StageScores {
    /// The dense ranking's: the index metric's similarity (cosine and dot product: higher
    /// is closer; L2: the negated squared distance).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dense: Option<f32>,
    /// BM25's, at least 0 (lexical and hybrid searches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lexical: Option<f32>,
    /// The fusion's (hybrid searches): reciprocal rank fusion's `Σ 1 / (k + rank)`, or the
    /// weighted sum in `0..=1` (see [`Fusion`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fused: Option<f32>,
    /// The reranker's raw score of the unit (a cross-encoder's logit; any finite number),
    /// when a rerank stage ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank: Option<f32>,
}

/// A matching child inside a returned unit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChildHit {
    /// The child's id: `doc_id#c<ordinal>`.
    pub chunk_id: String,
    /// Its score in the last ranking stage (see [`SearchMode`]; higher is better).
    pub score: f32,
    /// Byte span in the document's source text.
    pub start: usize,
    /// End of the span (exclusive).
    pub end: usize,
}

/// One returned reading unit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// The document the unit comes from.
    pub doc_id: String,
    /// The parent chunk of the best child (for sections and windows too).
    pub parent_id: String,
    /// The heading path of the unit's section.
    pub section_path: Vec<String>,
    /// The document's source URI.
    pub source_uri: String,
    /// The document's title.
    pub title: String,
    /// The document's metadata (every chunk of it has the same).
    pub metadata: BTreeMap<String, MetadataValue>,
    /// The final ranking's score: the reranker's when a rerank stage ran, else the best
    /// child's (see [`ChildHit::score`]).
    pub score: f32,
    /// The unit's score in each stage that ran.
    pub scores: StageScores,
    /// The unit's text as a reader sees it: the document's source text from `start` to
    /// `end`, or for HTML that slice's visible text ([`crate::chunk::visible_text_of`]:
    /// no tags, scripts or page chrome).
    pub text: String,
    /// Byte span of the unit in the document's source text (for citations).
    pub start: usize,
    /// End of the span (exclusive).
    pub end: usize,
    /// The pages `text` lies on, for documents with pages (PDF).
    pub pages: Option<crate::chunk::Pages>,
    /// Tokens of `text`, as [`SearchRequest::budget_tokens`] counts them (the estimate of
    /// [`crate::tokens`] by default).
    pub tokens: usize,
    /// The unit's matching children, best first (equal scores in index order): its best
    /// child first, then the others the search took, which are all of the unit's visible
    /// children ranked before the point where it stopped (the best child of the `k`-th
    /// unit taken, see [`SearchRequest::token_budget`]; every visible child when fewer
    /// units were found). Units merged into this one (overlapping windows, parents of one
    /// section) bring theirs.
    pub children: Vec<ChildHit>,
}

/// How the children were found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchStats {
    /// The planner's path in each segment searched, most expensive first.
    pub paths: Vec<SearchPath>,
    /// Distances computed.
    pub distances: usize,
    /// Of `distances`, graph candidates re-scored on full-precision rows.
    pub rescored: usize,
    /// Graph link lists read.
    pub link_lists: usize,
    /// Children the caller may see in this version (and that the filter matches).
    pub visible: u64,
    /// Children gathered before grouping.
    pub children_gathered: usize,
    /// Units left out as near-duplicates of better ones (see [`SearchRequest::dedup`]).
    pub duplicates_dropped: usize,
    /// Time the search took, in microseconds.
    pub micros: u64,
    /// Where that time went, stage by stage.
    pub stage_micros: StageTimes,
}

/// Microseconds a search spent in each stage; a stage the mode does not run is 0. The legs
/// are timed over every time the collector asked them (it asks again, deeper, when the
/// children fall short), so `dense + lexical + fuse + assemble` is the collection's time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StageTimes {
    /// Embedding a text query (0 for a vector, or a text given its vector).
    pub embed: u64,
    /// The dense leg: the segments searched by vector.
    pub dense: u64,
    /// The lexical leg: BM25 over the postings.
    pub lexical: u64,
    /// Fusing the two legs' lists.
    pub fuse: u64,
    /// The reranker scoring the best units (0 without one).
    pub rerank: u64,
    /// Grouping the children into units, expansion, near-duplicates and the budget.
    pub assemble: u64,
}

/// The answer to a [`SearchRequest`]: which index version answered, and the units.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResponse {
    /// The index that answered.
    pub index: String,
    /// The version of it that answered.
    pub version: u64,
    /// How the children were ranked.
    pub mode: SearchMode,
    /// The reranker that reordered the units ([`crate::embed::Reranker::name`]), if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reranker: Option<String>,
    /// The reading units, best first.
    pub results: Vec<Hit>,
    /// How the children were found.
    pub stats: SearchStats,
    /// The request-log id of this search, when the store logs requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<u64>,
}

/// What a search needs from the store handle it runs for, besides a snapshot.
pub(crate) trait Handle {
    /// The registered embedder named `name`, which embeds text queries.
    fn embedder(&self, name: &str) -> Option<Arc<dyn Embedder>>;

    /// `error`, the failed resolution of `target`, or why it failed when `target` names an
    /// index that could not be loaded.
    fn explain_unresolved(&self, target: &str, error: ReadError) -> ReadError;
}

/// Searches the version's own segments: children by vector, by BM25 or both fused (the
/// request's [`SearchMode`]), grouped into reading units, best first (see
/// [`crate::Store::search`]); everything is read from `snapshot`.
pub(crate) fn search(
    snapshot: &Snapshot<'_>,
    handle: &dyn Handle,
    request: &SearchRequest,
) -> Result<SearchResponse, QueryError> {
    search_from(snapshot, handle, request, None)
}

/// Searches with the children ranked by `source` (see [`crate::Store::search_through`]).
pub(crate) fn search_through(
    snapshot: &Snapshot<'_>,
    handle: &dyn Handle,
    request: &SearchRequest,
    source: &mut dyn ChildSource,
) -> Result<SearchResponse, QueryError> {
    search_from(snapshot, handle, request, Some(source))
}

fn search_from(
    snapshot: &Snapshot<'_>,
    handle: &dyn Handle,
    request: &SearchRequest,
    source: Option<&mut dyn ChildSource>,
) -> Result<SearchResponse, QueryError> {
    let _span = tracing::debug_span!("folio.search", mode = request.mode.name()).entered();
    let started = Instant::now();
    let reranking = checked(request)?;
    let widened = widened(request, reranking);
    let gather = widened.as_ref().unwrap_or(request);
    let target = request.target.as_deref().unwrap_or(DEFAULT_INDEX);
    let (state, view) = snapshot
        .resolve_for(target, &route_key(request))
        .map_err(|e| handle.explain_unresolved(target, e))?;
    let mut visible = snapshot.visible(&view, &request.access)?;
    if let Some(filter) = &request.filter {
        visible &= &*snapshot.matching(&state, filter)?;
    }
    // Resolving the target and computing the visible set are in the total, in no stage.
    let before_collect = started.elapsed().as_micros() as u64;
    let chunks = units::SnapshotChunks::new(snapshot, &state);
    let seen = visible.len();
    let mut stages = StageTimes::default();
    let collected = match (source, request.mode) {
        (Some(source), SearchMode::Dense) => {
            let query = query_vector(handle, &state, request, &mut stages.embed)?;
            let mut through = rank::Timed::new(
                "dense",
                rank::Through {
                    source,
                    chunks: &chunks,
                    index: state.name(),
                    version: view.version(),
                    metric: state.embedder().metric,
                    query: query.as_slice(),
                    access: &request.access,
                    visible: &visible,
                },
            );
            let mut collected = collect(&mut through, &chunks, gather, seen)?;
            stages.dense = through.micros;
            stage_scores(&mut collected, |_, s| StageScores {
                dense: Some(s),
                ..StageScores::default()
            });
            collected
        }
        (Some(_), mode) => {
            let allowed = "dense (a child source ranks by vector)";
            return Err(InvalidParameter::new("mode", mode.name(), allowed).into());
        }
        (None, SearchMode::Dense) => {
            let query = query_vector(handle, &state, request, &mut stages.embed)?;
            let mut dense = rank::Timed::new(
                "dense",
                dense_leg(snapshot, &view, &query, &visible, request),
            );
            let mut collected = collect(&mut dense, &chunks, gather, seen)?;
            stages.dense = dense.micros;
            stage_scores(&mut collected, |_, s| StageScores {
                dense: Some(s),
                ..StageScores::default()
            });
            collected
        }
        (None, SearchMode::Lexical) => {
            let mut lexical =
                rank::Timed::new("lexical", lexical_leg(snapshot, &view, &visible, request)?);
            let mut collected = collect(&mut lexical, &chunks, gather, seen)?;
            stages.lexical = lexical.micros;
            stage_scores(&mut collected, |_, s| StageScores {
                lexical: Some(s),
                ..StageScores::default()
            });
            collected
        }
        (None, SearchMode::Hybrid(hybrid)) => {
            let mut lexical =
                rank::Timed::new("lexical", lexical_leg(snapshot, &view, &visible, request)?);
            let query = query_vector(handle, &state, request, &mut stages.embed)?;
            let mut dense = rank::Timed::new(
                "dense",
                dense_leg(snapshot, &view, &query, &visible, request),
            );
            let mut fused = fusion::Fused::new(&mut dense, &mut lexical, hybrid);
            let mut collected = collect(&mut fused, &chunks, gather, seen)?;
            stages.fuse = fused.micros;
            stage_scores(&mut collected, |best, s| {
                let (dense, lexical) = fused.leg_scores(best);
                StageScores {
                    dense,
                    lexical,
                    fused: Some(s),
                    rerank: None,
                }
            });
            stages.dense = dense.micros;
            stages.lexical = lexical.micros;
            collected
        }
    };
    finish(
        collected,
        Finish {
            request,
            reranking,
            chunks: &chunks,
            index: state.name(),
            version: view.version(),
            visible: visible.len(),
            started,
            before_collect,
            stages,
        },
    )
}

/// Where a search's children were ranked, when not in a store's segments: the index and
/// version they belong to, and how many children the caller may see in it (what a ranking
/// can return: `k` and the children gathered are clamped to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ranked<'a> {
    /// The index the children belong to, named in the response.
    pub index: &'a str,
    /// Its version, named in the response.
    pub version: u64,
    /// Children the caller may see (and the filter matches); at least what `rank` can
    /// return.
    pub visible: u64,
}

/// The stages after ranking, as [`crate::Store::search`] runs them: the children `rank`
/// ranks are grouped into units, expanded, budgeted and de-duplicated over `chunks` (and
/// reranked when the request asks), and the answer names `ranked`'s index and version.
/// For an engine that holds both the ranking and the chunks elsewhere, with no store file
/// (a search node over Milvus): it implements [`Rank`] and [`Chunks`] and reuses the rest.
/// The request's target and filter are the caller's to apply (`rank` returns only what the
/// caller may see); a mode other than [`SearchMode::Dense`] is refused (the ranking is by
/// vector).
pub fn search_ranked(
    request: &SearchRequest,
    rank: &mut dyn Rank,
    chunks: &dyn Chunks,
    ranked: Ranked<'_>,
) -> Result<SearchResponse, QueryError> {
    let _span = tracing::debug_span!("folio.search", mode = request.mode.name()).entered();
    let started = Instant::now();
    if request.mode != SearchMode::Dense {
        let allowed = "dense (the children are ranked by vector)";
        return Err(InvalidParameter::new("mode", request.mode.name(), allowed).into());
    }
    let reranking = checked(request)?;
    let widened = widened(request, reranking);
    let gather = widened.as_ref().unwrap_or(request);
    let before_collect = started.elapsed().as_micros() as u64;
    let mut stages = StageTimes::default();
    let mut dense = rank::Timed::new("dense", rank);
    let mut collected = collect(&mut dense, chunks, gather, ranked.visible)?;
    stages.dense = dense.micros;
    stage_scores(&mut collected, |_, s| StageScores {
        dense: Some(s),
        ..StageScores::default()
    });
    finish(
        collected,
        Finish {
            request,
            reranking,
            chunks,
            index: ranked.index,
            version: ranked.version,
            visible: ranked.visible,
            started,
            before_collect,
            stages,
        },
    )
}

/// Checks the request's settings; the reranker and the query text it scores against, when
/// the request reranks.
fn checked(request: &SearchRequest) -> Result<Option<(&Rerank, &str)>, QueryError> {
    request.expand.validate()?;
    if let Some(threshold) = request.dedup {
        check_threshold(threshold)?;
    }
    if let Some(n) = request.rescore {
        check("rescore", n, &RESCORE)?;
    }
    if let SearchMode::Hybrid(hybrid) = &request.mode {
        hybrid.validate()?;
    }
    match (&request.rerank, &request.query) {
        (None, _) => Ok(None),
        (Some(rerank), Query::Text(text)) => {
            rerank.validate()?;
            Ok(Some((rerank, text.as_str())))
        }
        (Some(rerank), Query::Vector(_)) => {
            let refused = InvalidParameter::new(
                "rerank",
                rerank.reranker.name(),
                "none (a vector query has no text to rerank against)",
            );
            Err(refused.into())
        }
    }
}

/// What the earlier stages gather when a reranker runs: the units it scores, whole (the
/// budget applies to the reranked answer); `None` gathers what `request` asks.
fn widened(request: &SearchRequest, reranking: Option<(&Rerank, &str)>) -> Option<SearchRequest> {
    reranking.map(|(rerank, _)| SearchRequest {
        k: rerank.units(request.k),
        token_budget: None,
        rerank: None,
        ..request.clone()
    })
}

/// What [`finish`] needs besides the collected units.
struct Finish<'a> {
    request: &'a SearchRequest,
    reranking: Option<(&'a Rerank, &'a str)>,
    chunks: &'a dyn Chunks,
    index: &'a str,
    version: u64,
    visible: u64,
    started: Instant,
    before_collect: u64,
    stages: StageTimes,
}

/// The rerank stage when there is one, then the response with its statistics.
fn finish(mut collected: Collected, f: Finish<'_>) -> Result<SearchResponse, QueryError> {
    let Finish {
        request,
        reranking,
        chunks,
        index,
        version,
        visible,
        started,
        before_collect,
        mut stages,
    } = f;
    if let Some((rerank, query)) = reranking {
        collected.hits = timed("rerank", &mut stages.rerank, || {
            rerank::rerank(
                collected.hits,
                &collected.best_children,
                chunks,
                query,
                rerank,
                request,
            )
        })?;
    }
    let collecting = started.elapsed().as_micros() as u64;
    stages.assemble = collecting
        .saturating_sub(stages.embed + stages.dense + stages.lexical + stages.fuse + stages.rerank)
        .saturating_sub(before_collect);
    let Collected {
        hits,
        duplicates,
        search,
        ..
    } = collected;
    Ok(SearchResponse {
        index: index.to_string(),
        version,
        mode: request.mode,
        reranker: reranking.map(|(rerank, _)| rerank.reranker.name().to_string()),
        results: hits,
        stats: SearchStats {
            children_gathered: search.neighbors.len(),
            paths: search.paths,
            distances: search.distances,
            rescored: search.rescored,
            link_lists: search.lists,
            visible,
            duplicates_dropped: duplicates,
            micros: collecting,
            stage_micros: stages,
        },
        request_id: None,
    })
}

/// Sets each hit's stage scores from its best child's number and its score in the
/// ranking that grouped it.
fn stage_scores(collected: &mut Collected, of: impl Fn(u32, f32) -> StageScores) {
    for (hit, &best) in collected.hits.iter_mut().zip(&collected.best_children) {
        hit.scores = of(best, hit.score);
    }
}

/// Runs `stage` inside a `folio.search.stage` tracing span named `name` (for applications'
/// subscribers), adding the microseconds it took to `micros`.
fn timed<T>(name: &'static str, micros: &mut u64, stage: impl FnOnce() -> T) -> T {
    let _span = tracing::debug_span!("folio.search.stage", stage = name).entered();
    let started = Instant::now();
    let out = stage();
    *micros += started.elapsed().as_micros() as u64;
    out
}

/// The dense leg: the version's own segments searched by vector.
fn dense_leg<'a>(
    snapshot: &'a Snapshot<'a>,
    view: &'a VersionView,
    query: &'a QueryVector,
    visible: &'a RoaringBitmap,
    request: &SearchRequest,
) -> rank::Segments<'a> {
    rank::Segments {
        snapshot,
        view,
        query,
        visible,
        ef: request.ef,
        rescore: request.rescore,
    }
}

/// The lexical leg over the request's text; a vector query has no words to match.
fn lexical_leg<'a>(
    snapshot: &'a Snapshot<'a>,
    view: &'a VersionView,
    visible: &'a RoaringBitmap,
    request: &'a SearchRequest,
) -> Result<lexical::Lexical<'a>, InvalidParameter> {
    match &request.query {
        Query::Text(query) => Ok(lexical::Lexical {
            snapshot,
            view,
            query,
            visible,
        }),
        Query::Vector(_) => Err(InvalidParameter::new(
            "mode",
            request.mode.name(),
            "dense (a vector query has no words)",
        )),
    }
}

/// The request's query vector, checked; the time spent embedding a text is added to
/// `embed_micros`.
fn query_vector(
    handle: &dyn Handle,
    state: &IndexState,
    request: &SearchRequest,
    embed_micros: &mut u64,
) -> Result<QueryVector, QueryError> {
    let identity = state.embedder();
    let dim = identity.dimension as usize;
    let vector = match (&request.query, &request.query_vector) {
        (Query::Vector(_), Some(_)) => {
            let allowed = "none beside a vector query (give the vector as the query)";
            return Err(InvalidParameter::new("query_vector", "a vector", allowed).into());
        }
        (Query::Vector(v), None) | (Query::Text(_), Some(v)) => v.clone(),
        (Query::Text(text), None) => {
            let embedder = handle.embedder(&identity.name).ok_or_else(|| {
                ReadError::EmbedderNotRegistered {
                    index: state.name().to_string(),
                    embedder: identity.name.clone(),
                }
            })?;
            timed("embed", embed_micros, || {
                embedder.embed_queries(&[text.as_str()])
            })
            .map_err(ReadError::from)?
        }
    };
    if vector.len() != dim {
        return Err(ReadError::DimensionMismatch {
            expected: dim,
            found: vector.len(),
        }
        .into());
    }
    validate(&vector, dim).map_err(ReadError::from)?;
    QueryVector::new(vector, identity.metric).map_err(|ZeroQuery| ReadError::ZeroVector.into())
}

/// What routes `request` through an alias that splits traffic
/// ([`crate::store::route_bucket`] of the alias and this): its route key, else its query's
/// text, else its vector's little-endian bytes. Public so that a search resolving an alias
/// elsewhere (a search node) routes the same request to the same version.
pub fn route_key(request: &SearchRequest) -> Vec<u8> {
    match (&request.route_key, &request.query) {
        (Some(key), _) => key.as_bytes().to_vec(),
        (None, Query::Text(text)) => text.as_bytes().to_vec(),
        (None, Query::Vector(v)) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

/// `mode` as the request log keeps it.
fn logged_mode(mode: SearchMode) -> crate::review::LoggedMode {
    use crate::review::{LoggedFusion, LoggedMode};
    match mode {
        SearchMode::Dense => LoggedMode::Dense,
        SearchMode::Lexical => LoggedMode::Lexical,
        SearchMode::Hybrid(hybrid) => LoggedMode::Hybrid {
            fusion: match hybrid.fusion {
                Fusion::Rrf { k } => LoggedFusion::Rrf { k },
                Fusion::Weighted { dense_weight } => LoggedFusion::Weighted { dense_weight },
            },
            dense_depth: hybrid.dense_depth as u64,
            lexical_depth: hybrid.lexical_depth as u64,
        },
    }
}

/// The request-log record of a search; `source` names where its children were ranked
/// when not in the store's own segments.
pub(crate) fn logged(
    request: &SearchRequest,
    source: Option<&str>,
    response: &SearchResponse,
) -> LoggedRequest {
    let target = request.target.as_deref().unwrap_or(DEFAULT_INDEX);
    let target = match source {
        Some(name) => format!("{name}:{target}"),
        None => target.to_string(),
    };
    LoggedRequest {
        time_ms: now_ms(),
        query: match &request.query {
            Query::Text(text) => LoggedQuery::Text(text.clone()),
            Query::Vector(v) => LoggedQuery::Vector {
                dimension: v.len() as u32,
            },
        },
        principals: match &request.access {
            Access::Principals(p) => Some(p.clone()),
            Access::Unrestricted => None,
        },
        target,
        route_key: request.route_key.clone(),
        index: response.index.clone(),
        version: response.version,
        children: response
            .results
            .iter()
            .flat_map(|h| h.children.iter().map(|c| (c.chunk_id.clone(), c.score)))
            .collect(),
        // The retrieval's scores (a unit's best child's), comparable across requests; a
        // reranker's go to `rerank_scores`.
        parents: response
            .results
            .iter()
            .map(|h| {
                let retrieved = h.children.first().map_or(h.score, |c| c.score);
                (h.parent_id.clone(), retrieved)
            })
            .collect(),
        context_tokens: response.results.iter().map(|h| h.tokens as u64).sum(),
        latency_us: response.stats.micros,
        filter: request.filter.as_ref().map(ToString::to_string),
        outcome: crate::review::Outcome {
            rerank_scores: response
                .results
                .iter()
                .filter_map(|h| h.scores.rerank)
                .collect(),
            ..crate::review::Outcome::default()
        },
        feedback: None,
        mode: logged_mode(request.mode),
        reranker: response.reranker.clone(),
    }
}

/// Refuses a near-duplicate threshold that is not a similarity.
fn check_threshold(threshold: f32) -> Result<(), InvalidParameter> {
    if (0.0..=1.0).contains(&threshold) {
        Ok(())
    } else {
        Err(InvalidParameter::new("dedup_threshold", threshold, "0..=1"))
    }
}

/// Milliseconds since the Unix epoch (0 on a clock set before it).
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
