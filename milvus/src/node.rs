//! A search node: searching published versions with only Milvus, no store file. The
//! catalog (`catalog.rs`) turns the target into a version and the collection that serves
//! it, Milvus ranks the children the caller may see (the audience and the metadata filter in
//! one expression, as a search through the store sends them), the documents collection
//! (`documents.rs`) gives the records units are made of, and folio's own stages
//! (`folio::query::search_ranked`) group, expand, budget and de-duplicate them. What a node
//! cannot know without the store: revocations and deletes not synced yet (it sees what the
//! rows say), and a version's own ACLs when its collection was published for an earlier one
//! (the rows' current ACLs filter there).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use folio::embed::{validate, Embedder, HashEmbedder};
use folio::index::{ChildSearch, Metric, Neighbor, QueryVector};
use folio::query::{route_key, search_ranked, Query, QueryError, Rank, Ranked};
use folio::store::{Access, ReadError};
use folio::{SearchRequest, SearchResponse};
use milvus::v2::prelude::*;
use milvus::v2::request::dql::SearchRequest as VectorSearch;
use std::result::Result;

use crate::catalog::{Catalog, PublishedEmbedder, Resolved, ServedBy};
use crate::documents::{documents_name, DocCache, NodeChunks};
use crate::error::Error;
use crate::publish::DEFAULT_PREFIX;
use crate::pushdown::pushdown;
use crate::remote::{Call, Remote, Tally};
use crate::schema::{collection_name, visible_now_to, visible_to, CHILD, ID, VECTOR};
use crate::search::{Short, ShortReason, SOURCE_NAME, TOPK_MAX};

/// The name folio's built-in embedder has in an index's record: a node rebuilds it from
/// the published fingerprint when no embedder is given.
const HASH_EMBEDDER: &str = "folio-hash-v1";

/// Searches what was published to one Milvus, with no store file: the same
/// [`SearchResponse`] a local search of the store gives (see `docs/milvus.md`, "Search
/// nodes"). Kept open, it remembers what cannot change: the documents' records of complete
/// collections (up to [`Searcher::documents_cache`] bytes) and the embedder rebuilt from a
/// fingerprint; the catalog, which moves with every publish, sync and alias, is read again
/// at each search unless [`Searcher::catalog_max_age`] allows it to be older.
pub struct Searcher {
    remote: Remote,
    prefix: String,
    target: String,
    embedder: Option<Arc<dyn Embedder>>,
    catalog_max_age: Duration,
    catalog: Mutex<Option<(Instant, Arc<Catalog>)>>,
    /// Built-in embedders rebuilt from their published fingerprints.
    rebuilt: Mutex<HashMap<String, Arc<dyn Embedder>>>,
    documents: Mutex<DocCache>,
}

/// Bytes of documents' records a [`Searcher`] keeps by default.
pub const DEFAULT_DOCUMENTS_CACHE: usize = 64 << 20;

/// Milvus calls one node search made, the time inside them, and whether its answer is short.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NodeCalls {
    /// Vector searches (more than one when the node's exact filter check hid rows).
    pub searches: usize,
    /// Queries: the catalog (none when the one read earlier is young enough), the count of
    /// visible rows (only when the ranking came back with fewer children than asked), the
    /// documents not fetched by an earlier search.
    pub queries: usize,
    /// `has_collection` calls (only when the catalog could not be read, to say why).
    pub has_collection: usize,
    /// Wall time inside Milvus calls, the client's encoding and decoding included: the
    /// node's own time is the search's total less this.
    pub in_milvus: Duration,
    /// Children the caller may see, as Milvus counts them, when the node counted (the
    /// ranking came back with fewer children than asked); `None` when the answer was full
    /// and no count was needed.
    pub visible: Option<u64>,
    /// Why the answer holds fewer children than asked and than the caller may see; `None`
    /// when it is filled to min(k, visible) as Milvus's rows say.
    pub short: Option<Short>,
    /// The expression of the Milvus searches (audience and pushed-down filter), as sent;
    /// `None` when they searched without one.
    pub expression: Option<String>,
    /// Rows the last Milvus search asked for (its `limit`).
    pub limit: usize,
    /// Whether the ranking was run again with a wider HNSW search (`ef`): Milvus had
    /// returned fewer rows than its expression admits.
    pub widened: bool,
}

impl NodeCalls {
    /// Every Milvus call the search made, of any kind.
    pub fn milvus_calls(&self) -> usize {
        self.searches + self.queries + self.has_collection
    }
}

impl Searcher {
    /// Connects to the Milvus at `uri` to search `target` (an index, `INDEX@VERSION`,
    /// `INDEX@TAG` or an alias, as published under [`DEFAULT_PREFIX`]) when a request names
    /// none.
    pub fn connect(uri: &str, target: &str) -> Result<Searcher, Error> {
        Ok(Searcher::on(Remote::connect(uri)?, target))
    }

    /// [`Searcher::connect`] over a connection already open.
    pub fn on(remote: Remote, target: &str) -> Searcher {
        Searcher {
            remote,
            prefix: DEFAULT_PREFIX.to_string(),
            target: target.to_string(),
            embedder: None,
            catalog_max_age: Duration::ZERO,
            catalog: Mutex::new(None),
            rebuilt: Mutex::new(HashMap::new()),
            documents: Mutex::new(DocCache::new(DEFAULT_DOCUMENTS_CACHE)),
        }
    }

    /// Reads what was published under `prefix` (`folio publish --collection PREFIX`).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Embeds text queries with `embedder`, which must be the one the index was published
    /// with (name, fingerprint and dimension; else [`Error::EmbedderMismatch`]). Without
    /// one, folio's built-in hash embedder is rebuilt from its published fingerprint, and
    /// any other is [`Error::EmbedderNeeded`].
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// Lets a search use the catalog an earlier one read if it is younger than `age`
    /// (default zero: read at every search, one query). An alias moved, a tag set or a
    /// version synced then reaches this node at most `age` later; a target the cached
    /// catalog does not know is looked up afresh at once.
    pub fn catalog_max_age(mut self, age: Duration) -> Self {
        self.catalog_max_age = age;
        self
    }

    /// Keeps at most about `bytes` of documents' records across searches (default
    /// [`DEFAULT_DOCUMENTS_CACHE`]; 0 reads every document from Milvus at every search).
    pub fn documents_cache(self, bytes: usize) -> Self {
        Searcher {
            documents: Mutex::new(DocCache::new(bytes)),
            ..self
        }
    }

    /// The connection (to set its retry limit: [`Remote::retry_for`]).
    pub fn remote(&self) -> &Remote {
        &self.remote
    }

    /// Answers `request` (its target, else the searcher's) from Milvus alone.
    pub fn search(&self, request: &SearchRequest) -> Result<SearchResponse, Error> {
        self.search_counted(request).map(|(response, _)| response)
    }

    /// [`Searcher::search`], with the Milvus calls it made and whether it is short.
    pub fn search_counted(
        &self,
        request: &SearchRequest,
    ) -> Result<(SearchResponse, NodeCalls), Error> {
        let mut tally = Tally::default();
        let target = request.target.as_deref().unwrap_or(&self.target);
        let key = route_key(request);
        let mut catalog = self.catalog(false, target, &mut tally)?;
        let mut resolved = catalog.resolve(target, &key);
        if resolved == Resolved::Unknown && self.catalog_max_age > Duration::ZERO {
            // Perhaps published since the cached catalog was read.
            catalog = self.catalog(true, target, &mut tally)?;
            resolved = catalog.resolve(target, &key);
        }
        let (index, version) = match resolved {
            Resolved::Version(index, version) => (index, version),
            Resolved::Unknown => return Err(self.unknown(target, &mut tally)),
        };
        let (embedder, served) = self.served(&catalog, &index, version)?;
        let metric = embedder.metric().ok_or_else(|| Error::Collection {
            collection: crate::catalog::catalog_name(&self.prefix),
            problem: format!(
                "index `{index}` has an unknown metric `{}`",
                embedder.metric
            ),
        })?;
        let query = self.query_vector(request, &index, embedder, metric)?;
        // The expression a search through the store sends (without the live mask: a node
        // sees the rows as last synced).
        let own = served.published == version;
        let audience = match &request.access {
            Access::Principals(principals) if own => Some(visible_to(principals)),
            Access::Principals(principals) => Some(visible_now_to(principals)),
            Access::Unrestricted => None,
        };
        let pushed = request.filter.as_ref().map(pushdown);
        let nothing = pushed.as_ref().is_some_and(|p| p.nothing);
        let metadata = pushed.and_then(|p| p.expr);
        let parts: Vec<String> = [audience, metadata].into_iter().flatten().collect();
        let expression = match parts.len() {
            0 => None,
            1 => parts.into_iter().next(),
            _ => Some(
                parts
                    .iter()
                    .map(|p| format!("({p})"))
                    .collect::<Vec<_>>()
                    .join(" and "),
            ),
        };
        let chunks = NodeChunks::new(
            &self.remote,
            documents_name(&served.collection),
            SOURCE_NAME,
            &self.documents,
        );
        let mut rank = NodeRank {
            remote: &self.remote,
            collection: &served.collection,
            chunks: &chunks,
            query: query.as_slice(),
            metric,
            expression: expression.as_deref(),
            filter: request.filter.as_ref(),
            ef: None,
            tally: Tally::default(),
            last: Pass::default(),
        };
        // Milvus's count is asked only when the ranking comes back short of what was asked
        // (below): until then the ranking's own length bounds what is visible, as a local
        // visible set bounds `k`.
        let ranked = Ranked {
            index: &index,
            version,
            visible: if nothing { 0 } else { u64::MAX },
        };
        let mut response = answer(request, &mut rank, &chunks, ranked)?;
        let mut pass = rank.last;
        let mut widened = false;
        let (visible, short) = if pass.found < pass.wanted && !nothing {
            let counted = self.count(&served.collection, expression.as_deref(), &mut tally)?;
            let mut reason = classify(pass, counted);
            if reason == Some(ShortReason::IndexMissed) {
                // An HNSW search under a selective filter stops before it finds every row
                // the filter admits; searched again as wide as Milvus returns rows, it
                // finds them (the count says how many to expect).
                rank.ef = Some(WIDE_EF);
                response = answer(request, &mut rank, &chunks, ranked)?;
                pass = rank.last;
                widened = true;
                reason = if pass.found < pass.wanted {
                    classify(pass, counted)
                } else {
                    None
                };
            }
            // Exact only when every admitted row came back: otherwise the count, an upper
            // bound when the node checks filter tests alone.
            let visible = if reason.is_some() {
                counted
            } else {
                pass.found as u64
            };
            let short = reason
                .filter(|_| (pass.found as u64) < visible)
                .map(|reason| Short {
                    reason,
                    wanted: pass.wanted,
                    found: pass.found,
                    visible,
                });
            (Some(visible), short)
        } else if nothing {
            (Some(0), None)
        } else {
            (None, None)
        };
        let fetched = *chunks.tally.borrow();
        response.stats.visible = visible.unwrap_or(pass.found as u64);
        let calls = NodeCalls {
            searches: rank.tally.searches,
            queries: tally.queries + fetched.queries,
            has_collection: tally.has_collection,
            in_milvus: tally.in_milvus + fetched.in_milvus + rank.tally.in_milvus,
            visible,
            short,
            limit: pass.limit,
            expression,
            widened,
        };
        Ok((response, calls))
    }

    /// The catalog: the one read before when young enough (and `fresh` is not asked), else
    /// read now.
    fn catalog(&self, fresh: bool, target: &str, tally: &mut Tally) -> Result<Arc<Catalog>, Error> {
        let mut cached = self.catalog.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((read, catalog)) = cached.as_ref() {
            if !fresh && read.elapsed() < self.catalog_max_age {
                return Ok(catalog.clone());
            }
        }
        let read = Instant::now();
        let catalog = Arc::new(
            self.remote
                .read_catalog(&self.prefix, tally)?
                .ok_or_else(|| self.before_nodes(target, None))?,
        );
        *cached = Some((read, catalog.clone()));
        Ok(catalog)
    }

    /// The embedder and the collection that serve `index@version`.
    fn served<'c>(
        &self,
        catalog: &'c Catalog,
        index: &str,
        version: u64,
    ) -> Result<(&'c PublishedEmbedder, &'c ServedBy), Error> {
        let entry = catalog
            .indexes
            .get(index)
            .ok_or_else(|| self.before_nodes(&format!("{index}@{version}"), None))?;
        let served = entry
            .versions
            .get(&version)
            .ok_or_else(|| Error::NotPublished {
                uri: self.remote.uri().to_string(),
                index: index.to_string(),
                version,
                collection: collection_name(&self.prefix, index, version),
                nearest: None,
            })?;
        if !served.documents {
            return Err(self.before_nodes(
                &format!("{index}@{}", served.published),
                Some(served.collection.clone()),
            ));
        }
        Ok((&entry.embedder, served))
    }

    fn before_nodes(&self, target: &str, collection: Option<String>) -> Error {
        Error::PublishedBeforeNodes {
            uri: self.remote.uri().to_string(),
            prefix: self.prefix.clone(),
            target: target.to_string(),
            collection,
        }
    }

    /// A target the catalog does not know: an `INDEX@VERSION` whose collection exists was
    /// published before search nodes; anything else is unknown.
    fn unknown(&self, target: &str, tally: &mut Tally) -> Error {
        let own = target
            .rsplit_once('@')
            .and_then(|(index, v)| Some(collection_name(&self.prefix, index, v.parse().ok()?)));
        if let Some(own) = own {
            if let Ok(true) = self.remote.has_collection_counted(&own, tally) {
                return self.before_nodes(target, Some(own));
            }
        }
        Error::UnknownTarget {
            uri: self.remote.uri().to_string(),
            prefix: self.prefix.clone(),
            target: target.to_string(),
        }
    }

    /// The request's query vector, checked against the published embedder.
    fn query_vector(
        &self,
        request: &SearchRequest,
        index: &str,
        published: &PublishedEmbedder,
        metric: Metric,
    ) -> Result<QueryVector, Error> {
        let dimension = published.dimension as usize;
        let vector = match (&request.query, &request.query_vector) {
            (Query::Vector(v), None) | (Query::Text(_), Some(v)) => v.clone(),
            (Query::Vector(_), Some(_)) => {
                let allowed = "none beside a vector query (give the vector as the query)";
                let refused = folio::InvalidParameter::new("query_vector", "a vector", allowed);
                return Err(Error::Folio(refused.into()));
            }
            (Query::Text(text), None) => {
                let embedder = self.embedder(index, published)?;
                embedder
                    .embed_queries(&[text.as_str()])
                    .map_err(ReadError::from)?
            }
        };
        if vector.len() != dimension {
            return Err(Error::Folio(ReadError::DimensionMismatch {
                expected: dimension,
                found: vector.len(),
            }));
        }
        validate(&vector, dimension).map_err(ReadError::from)?;
        QueryVector::new(vector, metric).map_err(|_| Error::Folio(ReadError::ZeroVector))
    }

    /// The embedder for text queries: the one given, checked, or the built-in one rebuilt.
    fn embedder(
        &self,
        index: &str,
        published: &PublishedEmbedder,
    ) -> Result<Arc<dyn Embedder>, Error> {
        match &self.embedder {
            Some(embedder) => {
                let same = embedder.name() == published.name
                    && embedder.fingerprint() == published.fingerprint
                    && embedder.dimension() == published.dimension as usize;
                if same {
                    Ok(embedder.clone())
                } else {
                    Err(Error::EmbedderMismatch {
                        index: index.to_string(),
                        published: published.to_string(),
                        given: format!(
                            "{} ({} dims, {})",
                            embedder.name(),
                            embedder.dimension(),
                            embedder.fingerprint()
                        ),
                    })
                }
            }
            None if published.name == HASH_EMBEDDER => {
                let mut rebuilt = self.rebuilt.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(embedder) = rebuilt.get(&published.fingerprint) {
                    return Ok(embedder.clone());
                }
                let embedder = HashEmbedder::from_fingerprint(&published.fingerprint)
                    .map(|e| Arc::new(e) as Arc<dyn Embedder>)
                    .ok_or_else(|| Error::EmbedderNeeded {
                        index: index.to_string(),
                        published: published.to_string(),
                    })?;
                rebuilt.insert(published.fingerprint.clone(), embedder.clone());
                Ok(embedder)
            }
            None => Err(Error::EmbedderNeeded {
                index: index.to_string(),
                published: published.to_string(),
            }),
        }
    }

    /// Rows of `collection` that `expression` admits.
    fn count(
        &self,
        collection: &str,
        expression: Option<&str>,
        tally: &mut Tally,
    ) -> Result<u64, Error> {
        let client = &self.remote.client;
        self.remote.timed(tally, Call::Query, collection, async {
            let mut query = QueryRequest::builder()
                .collection_name(collection)
                .output_fields(["count(*)"])
                .consistency_level(ConsistencyLevel::Strong);
            if let Some(expression) = expression {
                query = query.filter(expression);
            }
            let response = client.query(query.build()?).await?;
            let count = match response.results().rows()?.next() {
                Some(row) => row.get_i64("count(*)")?,
                None => 0,
            };
            Ok(u64::try_from(count).unwrap_or(0))
        })
    }
}

/// HNSW's search width when a ranking is searched again (Milvus's `topk` limit: a wider
/// search could not return more rows).
const WIDE_EF: usize = TOPK_MAX;

/// Runs folio's stages over `rank` and `chunks`, the node's own errors as they were raised
/// (a collection whose rows its records do not match is forgotten from the cache).
fn answer(
    request: &SearchRequest,
    rank: &mut NodeRank<'_>,
    chunks: &NodeChunks<'_>,
    ranked: Ranked<'_>,
) -> Result<SearchResponse, Error> {
    match search_ranked(request, rank, chunks, ranked) {
        Ok(response) => Ok(response),
        Err(QueryError::Remote { error, .. }) => Err(match error.downcast::<Error>() {
            Ok(mine) => {
                if matches!(*mine, Error::Collection { .. }) {
                    chunks.forget_cached();
                }
                *mine
            }
            Err(other) => Error::Query(QueryError::Remote {
                source_name: SOURCE_NAME.to_string(),
                error: other,
            }),
        }),
        Err(e) => Err(e.into()),
    }
}

/// Why a ranking that found fewer children than it asked for is short, given Milvus's
/// count of the rows its expression admits; `None` when every such row came back (those
/// the node's filter check kept are then all the caller may see).
fn classify(pass: Pass, counted: u64) -> Option<ShortReason> {
    if pass.hit_topk {
        // Rows the node's filter check hid filled Milvus's topk: how many more there are
        // is unknown.
        Some(ShortReason::TopkLimit)
    } else if counted > pass.returned as u64 {
        // Milvus returned fewer rows than its expression admits: an approximate index
        // missed some under a selective filter.
        Some(ShortReason::IndexMissed)
    } else {
        None
    }
}

/// The children of one collection ranked by Milvus for a node: the audience and the
/// pushed-down filter in the expression, the request's whole filter checked again on each
/// row's document (the tests Milvus cannot evaluate exactly are admitted by the expression,
/// so a top-up finds what they drop), each row's chunk id checked against its document's
/// record.
struct NodeRank<'a> {
    remote: &'a Remote,
    collection: &'a str,
    chunks: &'a NodeChunks<'a>,
    query: &'a [f32],
    metric: Metric,
    expression: Option<&'a str>,
    filter: Option<&'a folio::Filter>,
    /// HNSW's search width, when widened (else the index's default).
    ef: Option<usize>,
    tally: Tally,
    /// What the last ranking found: whether the answer is short is decided on it.
    last: Pass,
}

/// One ranking of a node search.
#[derive(Debug, Clone, Copy, Default)]
struct Pass {
    /// Children asked for.
    wanted: usize,
    /// Children found that the caller may see.
    found: usize,
    /// Rows Milvus returned to the last search of the ranking.
    returned: usize,
    /// Rows that search asked for.
    limit: usize,
    /// Whether that search asked for Milvus's most rows ([`TOPK_MAX`]) and got them.
    hit_topk: bool,
}

impl NodeRank<'_> {
    fn rank_children(&mut self, wanted: usize) -> Result<ChildSearch, Error> {
        let mut neighbors = Vec::new();
        let mut limit = wanted.min(TOPK_MAX);
        let mut returned = 0;
        while limit > 0 {
            let rows = self.remote.timed(
                &mut self.tally,
                Call::Search,
                self.collection,
                search(
                    &self.remote.client,
                    self.collection,
                    self.query,
                    self.expression,
                    limit,
                    self.ef,
                ),
            )?;
            returned = rows.len();
            self.chunks
                .fetch(rows.iter().map(|row| row.doc_id.as_str()))?;
            let mut seen = roaring::RoaringBitmap::new();
            neighbors = Vec::with_capacity(rows.len());
            for row in rows {
                let expected = self.chunks.chunk_id(row.child);
                if expected.as_deref() != Some(row.chunk_id.as_str()) || !row.score.is_finite() {
                    return Err(Error::Collection {
                        collection: self.collection.to_string(),
                        problem: format!(
                            "row `{}` (child {}) is not what its documents collection holds ({}): publish again",
                            row.chunk_id,
                            row.child,
                            expected.as_deref().unwrap_or("no such child")
                        ),
                    });
                }
                if self
                    .filter
                    .is_some_and(|f| !self.chunks.matches(f, row.child))
                    || !seen.insert(row.child)
                {
                    continue;
                }
                let score = if self.metric == Metric::L2 {
                    -row.score
                } else {
                    row.score
                };
                neighbors.push(Neighbor {
                    id: row.child,
                    score,
                });
            }
            if neighbors.len() >= wanted || returned < limit || limit >= TOPK_MAX {
                break;
            }
            limit = limit.saturating_mul(2).min(TOPK_MAX);
        }
        neighbors.sort_by(Neighbor::rank);
        neighbors.truncate(wanted);
        self.last = Pass {
            wanted,
            found: neighbors.len(),
            returned,
            limit,
            hit_topk: limit >= TOPK_MAX && returned >= TOPK_MAX,
        };
        Ok(ChildSearch {
            neighbors,
            paths: Vec::new(),
            distances: 0,
            rescored: 0,
            lists: 0,
        })
    }
}

impl Rank for NodeRank<'_> {
    fn rank(&mut self, wanted: usize) -> Result<ChildSearch, QueryError> {
        self.rank_children(wanted)
            .map_err(|error| QueryError::Remote {
                source_name: SOURCE_NAME.to_string(),
                error: Box::new(error),
            })
    }
}

/// A row Milvus ranked.
struct Row {
    child: u32,
    chunk_id: String,
    doc_id: String,
    score: f32,
}

/// The best `limit` rows of `collection` for `query` that `filter` admits.
async fn search(
    client: &ClientV2,
    collection: &str,
    query: &[f32],
    filter: Option<&str>,
    limit: usize,
    ef: Option<usize>,
) -> Result<Vec<Row>, Error> {
    let mut request = VectorSearch::builder()
        .collection_name(collection)
        .vector_field(VECTOR)
        .vectors(SearchVectors::Float(vec![query.to_vec()]))
        .output_fields([CHILD, "doc_id"])
        .limit(limit as i64)
        .consistency_level(ConsistencyLevel::Strong);
    if let Some(filter) = filter {
        request = request.filter(filter);
    }
    if let Some(ef) = ef {
        request = request.extra_params(HashMap::from([("ef".to_string(), ef.to_string())]));
    }
    let response = client.search(request.build()?).await?;
    let Some(result) = response.results().get_results().first() else {
        return Ok(Vec::new());
    };
    let Ids::VarChar(ids) = result.get_ids() else {
        return Err(Error::Collection {
            collection: collection.to_string(),
            problem: format!("its primary key `{ID}` is not a string"),
        });
    };
    let mut out = Vec::with_capacity(ids.len());
    for ((row, id), &score) in result.rows()?.zip(ids).zip(result.get_scores()) {
        let child = u32::try_from(row.get_i64(CHILD)?).map_err(|_| Error::Collection {
            collection: collection.to_string(),
            problem: format!("row `{id}` has no child number"),
        })?;
        out.push(Row {
            child,
            chunk_id: id.clone(),
            doc_id: row.get_str("doc_id")?.to_string(),
            score,
        });
    }
    Ok(out)
}
