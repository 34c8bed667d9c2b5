//! A search node: searching published versions with only Milvus, no store file. The
//! catalog (`catalog.rs`) turns the target into a version and the collection that serves
//! it, Milvus ranks the children the caller may see (the audience and the metadata filter in
//! one expression, as a search through the store sends them), the documents collection
//! (`documents.rs`) gives the records units are made of, and folio's own stages
//! (`folio::query::search_ranked`) group, expand, budget and de-duplicate them. What a node
//! cannot know without the store: revocations and deletes not synced yet (it sees what the
//! rows say), and a version's own ACLs when its collection was published for an earlier one
//! (the rows' current ACLs filter there).

use std::sync::Arc;

use folio::embed::{validate, Embedder, HashEmbedder};
use folio::index::{ChildSearch, Metric, Neighbor, QueryVector};
use folio::query::{route_key, search_ranked, Query, QueryError, Rank, Ranked};
use folio::store::{Access, ReadError};
use folio::{SearchRequest, SearchResponse};
use milvus::v2::prelude::*;
use milvus::v2::request::dql::SearchRequest as VectorSearch;
use std::result::Result;

use crate::catalog::{Catalog, PublishedEmbedder, Resolved, ServedBy};
use crate::documents::{documents_name, NodeChunks};
use crate::error::Error;
use crate::publish::DEFAULT_PREFIX;
use crate::pushdown::pushdown;
use crate::remote::{Call, Remote, Tally};
use crate::schema::{collection_name, visible_now_to, visible_to, CHILD, ID, VECTOR};
use crate::search::{SOURCE_NAME, TOPK_MAX};

/// The name folio's built-in embedder has in an index's record: a node rebuilds it from
/// the published fingerprint when no embedder is given.
const HASH_EMBEDDER: &str = "folio-hash-v1";

/// Searches what was published to one Milvus, with no store file: the same
/// [`SearchResponse`] a local search of the store gives (see `docs/milvus.md`, "Search
/// nodes").
pub struct Searcher {
    remote: Remote,
    prefix: String,
    target: String,
    embedder: Option<Arc<dyn Embedder>>,
}

/// Milvus calls one node search made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeCalls {
    /// Vector searches (more than one when the node's exact filter check hid rows).
    pub searches: usize,
    /// Queries: the catalog, the count of visible rows, the documents fetched.
    pub queries: usize,
    /// `has_collection` calls (the catalog's).
    pub has_collection: usize,
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

    /// The connection (to set its retry limit: [`Remote::retry_for`]).
    pub fn remote(&self) -> &Remote {
        &self.remote
    }

    /// Answers `request` (its target, else the searcher's) from Milvus alone.
    pub fn search(&self, request: &SearchRequest) -> Result<SearchResponse, Error> {
        self.search_counted(request).map(|(response, _)| response)
    }

    /// [`Searcher::search`], with the Milvus calls it made.
    pub fn search_counted(
        &self,
        request: &SearchRequest,
    ) -> Result<(SearchResponse, NodeCalls), Error> {
        let mut tally = Tally::default();
        let target = request.target.as_deref().unwrap_or(&self.target);
        let catalog = self
            .remote
            .read_catalog(&self.prefix, &mut tally)?
            .ok_or_else(|| self.before_nodes(target, None))?;
        let (index, version) = match catalog.resolve(target, &route_key(request)) {
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
        let visible = if nothing {
            0
        } else {
            self.count(&served.collection, expression.as_deref(), &mut tally)?
        };
        let chunks = NodeChunks::new(
            &self.remote,
            documents_name(&served.collection),
            SOURCE_NAME,
        );
        let mut rank = NodeRank {
            remote: &self.remote,
            collection: &served.collection,
            chunks: &chunks,
            query: query.as_slice(),
            metric,
            expression: expression.as_deref(),
            filter: request.filter.as_ref(),
            tally: Tally::default(),
        };
        let ranked = Ranked {
            index: &index,
            version,
            visible,
        };
        let answered = search_ranked(request, &mut rank, &chunks, ranked);
        let fetched = *chunks.tally.borrow();
        let calls = NodeCalls {
            searches: rank.tally.searches,
            queries: tally.queries + fetched.queries,
            has_collection: tally.has_collection,
        };
        match answered {
            Ok(response) => Ok((response, calls)),
            Err(QueryError::Remote { error, .. }) => match error.downcast::<Error>() {
                Ok(mine) => Err(*mine),
                Err(other) => Err(Error::Query(QueryError::Remote {
                    source_name: SOURCE_NAME.to_string(),
                    error: other,
                })),
            },
            Err(e) => Err(e.into()),
        }
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
                HashEmbedder::from_fingerprint(&published.fingerprint)
                    .map(|e| Arc::new(e) as Arc<dyn Embedder>)
                    .ok_or_else(|| Error::EmbedderNeeded {
                        index: index.to_string(),
                        published: published.to_string(),
                    })
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
    tally: Tally,
}

impl NodeRank<'_> {
    fn rank_children(&mut self, wanted: usize) -> Result<ChildSearch, Error> {
        let mut neighbors = Vec::new();
        let mut limit = wanted.min(TOPK_MAX);
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
                ),
            )?;
            let returned = rows.len();
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
