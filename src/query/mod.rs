//! Small-to-big retrieval: search the small children, group them by their reading unit
//! (parent, section or window) with the **max** child score, and return the best units
//! within a token budget, dropping near-duplicates.

mod dedup;
mod error;
mod source;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::embed::{validate, TokenCounter};
use crate::filter::{Filter, MetadataValue};
use crate::index::planner::{SearchOptions, SearchPath, Strategy};
use crate::index::Metric;
use crate::limits::{check, InvalidParameter, RESCORE, WINDOW};
use crate::review::{LoggedQuery, LoggedRequest};
use crate::storage::error::{ReadError, StorageError};
use crate::storage::file::records::now_ms;
use crate::storage::file::rows::slice_text;
use crate::storage::file::tables::DEFAULT_INDEX;
use crate::storage::read::catalog::Catalog;
use crate::storage::read::docs::{chunk_id, parent_id};
use crate::storage::read::snapshot::{Snapshot, StoredChild};
use crate::storage::read::state::{Access, ChildSearch, IndexState, VersionView};

pub use error::QueryError;
pub use source::{Ask, Candidate, ChildSource, SourceError};

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
#[derive(Debug, Clone)]
pub struct SearchRequest {
    /// The query: a text the index's embedder embeds, or a vector.
    pub query: Query,
    /// Who asks: the documents they may see are the only ones searched ([`Access::public`] by default).
    pub access: Access,
    /// Reading units to return: the answer holds `min(k, distinct visible units)` (fewer
    /// only when a token budget leaves no room). Any `k` is accepted; it is clamped to what
    /// the caller may see.
    pub k: usize,
    /// Children to gather before grouping; by default `max(4k, 20)` ([`CHILDREN_PER_UNIT`],
    /// [`MIN_CHILDREN`]), clamped to the visible
    /// children, and grown until `k` units are found or every visible child was seen.
    pub children: Option<usize>,
    /// Total tokens of the returned texts, counted by [`SearchRequest::budget_tokens`];
    /// units that do not fit are skipped.
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
        }
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

/// A matching child inside a returned unit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChildHit {
    /// The child's id: `doc_id#c<ordinal>`.
    pub chunk_id: String,
    /// Its similarity to the query (higher is closer).
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
    /// The best child's score.
    pub score: f32,
    /// The unit's text: a slice of the document's source text.
    pub text: String,
    /// Byte span of `text` in the document's source text.
    pub start: usize,
    /// End of the span (exclusive).
    pub end: usize,
    /// The pages `text` lies on, for documents with pages (PDF).
    pub pages: Option<crate::chunk::Pages>,
    /// Tokens of `text`, as [`SearchRequest::budget_tokens`] counts them (the estimate of
    /// [`crate::tokens`] by default).
    pub tokens: usize,
    /// The matching children inside the unit, best first.
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
}

/// The answer to a [`SearchRequest`]: which index version answered, and the units.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResponse {
    /// The index that answered.
    pub index: String,
    /// The version of it that answered.
    pub version: u64,
    /// The reading units, best first.
    pub results: Vec<Hit>,
    /// How the children were found.
    pub stats: SearchStats,
    /// The request-log id of this search, when the store logs requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<u64>,
}

/// One scored child, with its stored record.
struct ScoredChild {
    score: f32,
    record: StoredChild,
}

/// Where a search's children come from.
enum Children<'a> {
    /// The version's own segments.
    Local,
    /// Another engine's copy of the version.
    Source(&'a mut dyn ChildSource),
}

/// Searches the store's own segments: children by vector, grouped into reading units,
/// best first (see [`crate::Store::search`]).
pub(crate) fn search(
    catalog: &Catalog,
    request: &SearchRequest,
) -> Result<SearchResponse, QueryError> {
    search_from(catalog, request, Children::Local)
}

/// Searches with the children ranked by `source` (see [`crate::Store::search_through`]).
pub(crate) fn search_through(
    catalog: &Catalog,
    request: &SearchRequest,
    source: &mut dyn ChildSource,
) -> Result<SearchResponse, QueryError> {
    search_from(catalog, request, Children::Source(source))
}

fn search_from(
    catalog: &Catalog,
    request: &SearchRequest,
    mut from: Children<'_>,
) -> Result<SearchResponse, QueryError> {
    let started = Instant::now();
    request.expand.validate()?;
    if let Some(threshold) = request.dedup {
        check_threshold(threshold)?;
    }
    if let Some(n) = request.rescore {
        check("rescore", n, &RESCORE)?;
    }
    let target = request.target.as_deref().unwrap_or(DEFAULT_INDEX);
    let reader = catalog.reader()?;
    let (state, view) = reader
        .resolve_for(target, &route_key(request))
        .map_err(|e| catalog.explain_unresolved(target, e))?;
    let query = query_vector(catalog, &state, &request.query)?;
    let mut visible = reader.visible(&view, &request.access)?;
    if let Some(filter) = &request.filter {
        visible &= &*reader.matching(&state, filter)?;
    }
    // Nothing beyond the visible children can be returned: a huge `k` or `children`
    // must cost no more than "everything".
    let seen = usize::try_from(visible.len()).unwrap_or(usize::MAX);
    let k = request.k.min(seen);
    let mut n = request
        .children
        .unwrap_or(k.saturating_mul(CHILDREN_PER_UNIT).max(MIN_CHILDREN))
        .max(k)
        .min(seen);
    // Gather children until they hold `k` units, group them; when grouping leaves fewer
    // than `k` (near-duplicates, merged windows, the budget), gather more.
    let (assembled, stats, gathered) = loop {
        let search = match &mut from {
            Children::Local => {
                let options = SearchOptions {
                    k: n,
                    ef: request.ef,
                    strategy: Strategy::Auto,
                };
                reader.search_children(&view, &query, options, request.rescore, &visible)?
            }
            Children::Source(source) => {
                let ask = Ask {
                    index: state.name(),
                    version: view.version(),
                    metric: state.embedder().metric,
                    query: &query,
                    wanted: n,
                    access: &request.access,
                    visible: &visible,
                };
                ranked_elsewhere(&reader, &state, &view, &mut **source, &ask)?
            }
        };
        let found = search.neighbors.len();
        let exhausted = found >= seen || found < n;
        let scored = search
            .neighbors
            .iter()
            .map(|n| {
                Ok(ScoredChild {
                    score: n.score,
                    record: reader.child(&state, n.id)?,
                })
            })
            .collect::<Result<Vec<_>, StorageError>>()?;
        if count_units(&scored, request.expand) >= k || exhausted {
            let assembled = assemble(&reader, &state, scored, request, k)?;
            // Units the budget had no room for are not replaced: a tight budget would
            // otherwise read every visible unit.
            if assembled.hits.len() + assembled.over_budget >= k || exhausted {
                break (assembled, search, found);
            }
        }
        n = n.saturating_mul(4).min(seen);
    };
    let results = assembled.hits;
    let response = SearchResponse {
        index: state.name().to_string(),
        version: view.version(),
        results,
        stats: SearchStats {
            paths: stats.paths,
            distances: stats.distances,
            rescored: stats.rescored,
            link_lists: stats.lists,
            visible: visible.len(),
            children_gathered: gathered,
            duplicates_dropped: assembled.duplicates,
            micros: started.elapsed().as_micros() as u64,
        },
        request_id: None,
    };
    Ok(response)
}

fn query_vector(
    catalog: &Catalog,
    state: &IndexState,
    query: &Query,
) -> Result<Vec<f32>, ReadError> {
    let identity = state.embedder();
    let dim = identity.dimension as usize;
    let mut vector = match query {
        Query::Vector(v) => v.clone(),
        Query::Text(text) => {
            let embedder = catalog.embedder(&identity.name).ok_or_else(|| {
                ReadError::EmbedderNotRegistered {
                    index: state.name().to_string(),
                    embedder: identity.name.clone(),
                }
            })?;
            embedder.embed_queries(&[text.as_str()])?
        }
    };
    if vector.len() != dim {
        return Err(ReadError::DimensionMismatch {
            expected: dim,
            found: vector.len(),
        });
    }
    validate(&vector, dim)?;
    if identity.metric == Metric::Cosine && !crate::index::distance::normalize(&mut vector) {
        return Err(ReadError::ZeroVector);
    }
    Ok(vector)
}

/// The children `source` ranks for `ask`, checked here: each one the caller may see now
/// (a remote row not yet synced is dropped), once, and the child the version holds under
/// that chunk id; best first, ties by child number as a local search orders them.
fn ranked_elsewhere(
    reader: &Snapshot<'_>,
    state: &IndexState,
    view: &VersionView,
    source: &mut dyn ChildSource,
    ask: &Ask<'_>,
) -> Result<ChildSearch, QueryError> {
    let candidates = source.children(ask).map_err(|error| QueryError::Remote {
        source_name: source.name().to_string(),
        error,
    })?;
    let mut seen = roaring::RoaringBitmap::new();
    let mut neighbors = Vec::with_capacity(candidates.len());
    for candidate in candidates {
        if !ask.is_visible(candidate.child) || !seen.insert(candidate.child) {
            continue;
        }
        let record = reader.child(state, candidate.child)?;
        let doc = reader.doc(record.rev)?;
        let expected = chunk_id(&doc.doc_id, record.ordinal);
        if candidate.chunk_id != expected || !candidate.score.is_finite() {
            return Err(QueryError::Remote {
                source_name: source.name().to_string(),
                error: format!(
                    "child {} of `{}`@{} is `{expected}`, the source answered `{}` (score {})",
                    candidate.child,
                    state.name(),
                    view.version(),
                    candidate.chunk_id,
                    candidate.score
                )
                .into(),
            });
        }
        neighbors.push(crate::index::Neighbor {
            id: candidate.child,
            score: candidate.score,
        });
    }
    neighbors.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
    neighbors.truncate(ask.wanted);
    Ok(ChildSearch {
        neighbors,
        paths: Vec::new(),
        distances: 0,
        rescored: 0,
        lists: 0,
    })
}

/// What routes `request` through an alias: its route key, else its query.
fn route_key(request: &SearchRequest) -> Vec<u8> {
    match (&request.route_key, &request.query) {
        (Some(key), _) => key.as_bytes().to_vec(),
        (None, Query::Text(text)) => text.as_bytes().to_vec(),
        (None, Query::Vector(v)) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
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
        parents: response
            .results
            .iter()
            .map(|h| (h.parent_id.clone(), h.score))
            .collect(),
        context_tokens: response.results.iter().map(|h| h.tokens as u64).sum(),
        latency_us: response.stats.micros,
        filter: request.filter.as_ref().map(ToString::to_string),
        outcome: crate::review::Outcome::default(),
        feedback: None,
    }
}

/// The key children are grouped by: their parent, or (for windows) their own window.
fn unit_key(child: &ScoredChild, expand: Expand) -> (u64, u32) {
    match expand {
        Expand::Parent | Expand::Section => (child.record.rev, child.record.parent),
        Expand::Window(_) => (child.record.rev, child.record.number),
    }
}

fn count_units(children: &[ScoredChild], expand: Expand) -> usize {
    let mut keys: Vec<(u64, u32)> = children.iter().map(|c| unit_key(c, expand)).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.len()
}

/// The units of a search, and how many were left out as near-duplicates or for the budget.
struct Assembled {
    hits: Vec<Hit>,
    duplicates: usize,
    over_budget: usize,
}

/// Refuses a near-duplicate threshold that is not a similarity.
fn check_threshold(threshold: f32) -> Result<(), InvalidParameter> {
    if (0.0..=1.0).contains(&threshold) {
        Ok(())
    } else {
        Err(InvalidParameter::new("dedup_threshold", threshold, "0..=1"))
    }
}

fn assemble(
    reader: &Snapshot<'_>,
    state: &IndexState,
    children: Vec<ScoredChild>,
    request: &SearchRequest,
    k: usize,
) -> Result<Assembled, ReadError> {
    // Group by unit, keeping the max score; `children` arrive best first.
    let mut order: Vec<(u64, u32)> = Vec::new();
    let mut groups: HashMap<(u64, u32), Vec<ScoredChild>> = HashMap::new();
    for child in children {
        let key = unit_key(&child, request.expand);
        let group = groups.entry(key).or_default();
        if group.is_empty() {
            order.push(key);
        }
        group.push(child);
    }
    let mut hits: Vec<Hit> = Vec::new();
    let (mut duplicates, mut over_budget) = (0, 0);
    let mut spent = 0usize;
    for key in order {
        if hits.len() >= k {
            break;
        }
        let group = groups.remove(&key).unwrap_or_default();
        let Some(best) = group.first() else { continue };
        let (start, end, section_path) = unit_span(reader, state, &best.record, request.expand)?;
        let doc = reader.doc(best.record.rev)?;
        let text = slice_text(&doc.text, start as u64, end as u64)?.to_string();
        // Overlapping windows of one document merge into the better unit.
        if let Some(existing) = hits
            .iter_mut()
            .find(|h| h.doc_id == doc.doc_id && h.start < end && start < h.end)
        {
            existing
                .children
                .extend(group.iter().map(|c| child_hit(&doc.doc_id, c)));
            continue;
        }
        if let Some(threshold) = request.dedup {
            if hits
                .iter()
                .any(|h| dedup::near_duplicate(&h.text, &text, threshold))
            {
                duplicates += 1;
                continue;
            }
        }
        let tokens = match &request.budget_tokens {
            Some(counter) => counter.count(&text),
            None => crate::tokens::count(&text),
        };
        if let Some(budget) = request.token_budget {
            if spent + tokens > budget {
                over_budget += 1;
                continue;
            }
        }
        spent += tokens;
        hits.push(Hit {
            doc_id: doc.doc_id.clone(),
            parent_id: parent_id(&doc.doc_id, best.record.parent_ordinal),
            section_path,
            source_uri: doc.source_uri.clone(),
            title: doc.title.clone(),
            metadata: doc.metadata.clone(),
            score: best.score,
            text,
            start,
            end,
            pages: crate::chunk::pages(&doc.text, doc.format, crate::chunk::Span { start, end }),
            tokens,
            children: group.iter().map(|c| child_hit(&doc.doc_id, c)).collect(),
        });
    }
    Ok(Assembled {
        hits,
        duplicates,
        over_budget,
    })
}

fn child_hit(doc_id: &str, child: &ScoredChild) -> ChildHit {
    ChildHit {
        chunk_id: chunk_id(doc_id, child.record.ordinal),
        score: child.score,
        start: child.record.start,
        end: child.record.end,
    }
}

/// The byte span and heading path of the unit around `child`.
fn unit_span(
    reader: &Snapshot<'_>,
    state: &IndexState,
    child: &StoredChild,
    expand: Expand,
) -> Result<(usize, usize, Vec<String>), StorageError> {
    match expand {
        Expand::Parent => {
            let parent = reader.parent(state, child.parent)?;
            Ok((parent.start, parent.end, parent.section_path))
        }
        Expand::Section => {
            // A long section was split into several parents: put them back together.
            let ranges = reader.chunk_ranges(state, child)?;
            let parent = reader.parent(state, child.parent)?;
            let (mut start, mut end) = (parent.start, parent.end);
            let mut before = parent.number;
            while before > ranges.parents.start {
                let p = reader.parent(state, before - 1)?;
                if p.section_path != parent.section_path {
                    break;
                }
                start = p.start;
                before -= 1;
            }
            let mut after = parent.number + 1;
            while after < ranges.parents.end {
                let p = reader.parent(state, after)?;
                if p.section_path != parent.section_path {
                    break;
                }
                end = p.end;
                after += 1;
            }
            Ok((start, end, parent.section_path))
        }
        Expand::Window(n) => {
            let ranges = reader.chunk_ranges(state, child)?;
            // Validated to fit: `Expand::validate`.
            let n = u32::try_from(n).unwrap_or(u32::MAX);
            let first = child.number.saturating_sub(n).max(ranges.children.start);
            let last = child
                .number
                .saturating_add(n)
                .min(ranges.children.end.saturating_sub(1));
            let start = reader.child(state, first)?.start;
            let end = reader.child(state, last)?.end;
            Ok((
                start.min(child.start),
                end.max(child.end),
                child.section_path.clone(),
            ))
        }
    }
}
