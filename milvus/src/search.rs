//! Searching a published version through folio: folio resolves the version and embeds the
//! query, Milvus ranks the children the caller may see (folio's rule written as a filter),
//! and folio checks every child against the store's current ACLs and assembles the units.
//! The collection is the one that serves the version (`resolve`): its own, or one published
//! for an earlier version it derives from without new segments.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use folio::index::Metric;
use folio::query::{Ask, Candidate, ChildSource, SourceError, WrongChild};
use folio::{Access, QueryError, SearchRequest, SearchResponse, Store};
use milvus::v2::prelude::*;
use milvus::v2::request::dql::SearchRequest as VectorSearch;
use roaring::RoaringBitmap;
use std::result::Result;

use crate::error::Error;
use crate::pushdown::{pushdown, Pushdown};
use crate::remote::{Call, Remote, ServedKey, Tally};
use crate::resolve::Served;
use crate::schema::{visible_now_to, visible_to, CHILD, ID, VECTOR};

/// The most rows one Milvus search returns (its `topk` limit): a top-up stops there.
pub const TOPK_MAX: usize = 16_384;

/// The name a search through Milvus has in folio's request log (`milvus:TARGET`).
pub const SOURCE_NAME: &str = "milvus";

/// The most children of deleted documents a search excludes by number in its Milvus
/// expression (`not (child in [...])`, about 7 bytes a child): past it, the rest are
/// dropped by folio's check with a top-up, until `folio milvus sync` deletes their rows.
pub const MASK_MAX: usize = 4_096;

/// What one remote search asked of Milvus: its calls by kind and the time spent in them,
/// so folio's own time is the search's total less [`RemoteCalls::in_milvus`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteCalls {
    /// Milvus searches made (more than one when the caller could not see enough rows).
    pub searches: usize,
    /// `has_collection` calls made to find the collection that serves the version (none
    /// once a search of this [`Remote`] has found it).
    pub has_collection: usize,
    /// `describe_collection` calls made to read a collection's properties (is it complete,
    /// which segments it holds; none once found, as above).
    pub describe_collection: usize,
    /// Wall time inside Milvus calls, the client's encoding and decoding included.
    pub in_milvus: Duration,
    /// The expression of the last Milvus search (audience, live mask and pushed-down
    /// filter), as sent; `None` when it searched without one.
    pub expression: Option<String>,
    /// Rows Milvus returned that folio's own check hid (rows not synced yet, or a filter
    /// test folio checks alone).
    pub hidden: usize,
    /// Children of deleted documents, not synced yet, the Milvus expression excluded.
    pub masked: usize,
    /// The tests of the request's filter Milvus could not evaluate exactly, in folio's
    /// syntax: folio checked them alone, topping up (empty when all were pushed down).
    pub local_filter: Vec<String>,
    /// Why the answer holds fewer children than the caller may see and asked for; `None`
    /// when it is filled to min(k, visible).
    pub short: Option<Short>,
}

/// A remote answer short of what the caller may see: fewer children came back than asked
/// for, though the store shows the caller more.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Short {
    /// Why.
    pub reason: ShortReason,
    /// Children asked of Milvus.
    pub wanted: usize,
    /// Children it answered that the caller may see.
    pub found: usize,
    /// Children the caller may see in the version, by the store.
    pub visible: u64,
}

/// Why a remote answer is short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShortReason {
    /// Milvus's `topk` limit ([`TOPK_MAX`]) was reached while folio's check still hid rows
    /// (rows not synced, or a filter test checked by folio alone).
    TopkLimit,
    /// Milvus holds fewer rows the caller may see than the store shows: a grant or an ACL
    /// change not synced yet (`folio milvus sync`).
    NotSynced,
    /// Milvus returned fewer rows than its expression admits, as its count says: an
    /// approximate index (HNSW) missed some under a selective filter, even searched again
    /// at its widest. Reported by search nodes, which count with the expression when a
    /// ranking comes back short.
    IndexMissed,
}

impl RemoteCalls {
    /// Every Milvus call the search made, of any kind.
    pub fn milvus_calls(&self) -> usize {
        self.searches + self.has_collection + self.describe_collection
    }
}

impl ShortReason {
    /// A stable name for JSON: `topk_limit`, `not_synced`.
    pub fn name(self) -> &'static str {
        match self {
            ShortReason::TopkLimit => "topk_limit",
            ShortReason::NotSynced => "not_synced",
            ShortReason::IndexMissed => "index_missed",
        }
    }
}

impl fmt::Display for Short {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "short: {} of {} children ({} visible): ",
            self.found, self.wanted, self.visible
        )?;
        match self.reason {
            ShortReason::TopkLimit => write!(
                f,
                "Milvus's topk limit ({TOPK_MAX}) was reached with rows still hidden by folio's own check (rows not synced: run `folio milvus sync`; or filter tests Milvus cannot evaluate: narrow the filter)"
            ),
            ShortReason::NotSynced => f.write_str(
                "Milvus admits fewer rows than the store shows (a grant not synced): run `folio milvus sync`",
            ),
            ShortReason::IndexMissed => f.write_str(
                "Milvus's index returned fewer rows than its expression admits (an approximate index under a selective filter): publish with `--flat`, or ask for a larger k",
            ),
        }
    }
}

/// Milvus as folio's [`ChildSource`]: the collection that serves the resolved version.
struct Published<'r> {
    remote: &'r Remote,
    store: &'r Store,
    prefix: &'r str,
    served: HashMap<(String, u64), (Served, Option<String>)>,
    /// The request's filter as Milvus evaluates it.
    filter: Option<Pushdown>,
    /// The collection last asked, named when folio refuses what it answered.
    last: Option<String>,
    /// Milvus calls made so far, copied into `calls` at the end.
    tally: Tally,
    /// Whether this search asked Milvus which collection serves (rather than using what
    /// the [`Remote`] remembered): a failure then is not a stale memory.
    resolved_now: bool,
    calls: RemoteCalls,
}

impl Remote {
    /// Searches `store` as `request` asks, with the children ranked by the collection that
    /// serves its resolved version ([`Remote::collection_for`]: the version's own
    /// `PREFIX_INDEX_vVERSION`, or that of an earlier version it derives from without new
    /// segments; refused unless complete): the same [`SearchResponse`] as
    /// [`Store::search`], the version that answered named. A collection answering with
    /// another store's rows is [`Error::ForeignCollection`].
    pub fn search(
        &self,
        store: &Store,
        request: &SearchRequest,
        prefix: &str,
    ) -> Result<(SearchResponse, RemoteCalls), Error> {
        let mut source = Published {
            remote: self,
            store,
            prefix,
            served: HashMap::new(),
            filter: request.filter.as_ref().map(pushdown),
            last: None,
            resolved_now: false,
            tally: Tally::default(),
            calls: RemoteCalls::default(),
        };
        if let Some(filter) = &source.filter {
            source.calls.local_filter = filter.local.clone();
        }
        match store.search_through(request, &mut source) {
            Ok(response) => {
                let mut calls = source.calls;
                calls.searches = source.tally.searches;
                calls.has_collection = source.tally.has_collection;
                calls.describe_collection = source.tally.describe_collection;
                calls.in_milvus = source.tally.in_milvus;
                Ok((response, calls))
            }
            Err(QueryError::Remote { error, .. }) => Err(self.unwrap_source(error, source.last)),
            Err(e) => Err(e.into()),
        }
    }

    /// The source's own error as it was raised, and folio's refusal of what a collection
    /// answered as [`Error::ForeignCollection`].
    fn unwrap_source(&self, error: SourceError, collection: Option<String>) -> Error {
        let error = match error.downcast::<Error>() {
            Ok(mine) => return *mine,
            Err(other) => other,
        };
        match (error.downcast_ref::<WrongChild>(), collection) {
            (Some(wrong), Some(collection)) => self.foreign(
                &collection,
                &wrong.index,
                wrong.version,
                &format!(
                    "it answered `{}` for child {}, which this store calls `{}`",
                    wrong.answered, wrong.child, wrong.expected
                ),
            ),
            _ => Error::Query(QueryError::Remote {
                source_name: SOURCE_NAME.to_string(),
                error,
            }),
        }
    }
}

impl ChildSource for Published<'_> {
    fn name(&self) -> &str {
        SOURCE_NAME
    }

    /// The best `wanted` children the caller may see, ranked by the collection that serves
    /// the version: the one this [`Remote`] found before, else the one Milvus says.
    fn children(&mut self, ask: &Ask<'_>) -> Result<Vec<Candidate>, SourceError> {
        let key = (ask.index().to_string(), ask.version());
        let (served, mask) = match self.served.get(&key) {
            Some(served) => served.clone(),
            None => {
                let known = self.remote_key(&key.0, key.1);
                let remembered = match self.remote.served_before(&known) {
                    Some(served) => self
                        .mask(&key.0, &served, key.1)
                        .ok()
                        .map(|mask| (served, mask)),
                    None => None,
                };
                // Nothing remembered, or a remembered collection whose version the store
                // no longer keeps (collected since): ask Milvus.
                let (served, mask) = match remembered {
                    Some(found) => found,
                    None => {
                        self.remote.forget(&known);
                        let served = self.find(known)?;
                        let mask = self.mask(&key.0, &served, key.1)?;
                        (served, mask)
                    }
                };
                self.served
                    .insert(key.clone(), (served.clone(), mask.clone()));
                (served, mask)
            }
        };
        if self.filter.as_ref().is_some_and(|f| f.nothing) {
            return Ok(Vec::new());
        }
        if ask.wanted() == 0 {
            self.last = Some(served.collection);
            return Ok(Vec::new());
        }
        match self.rank(ask, &served, mask) {
            Ok(found) => Ok(found),
            // A collection remembered from an earlier search may have been dropped since:
            // the resolution asked afresh names what happened as a typed error (or finds
            // the collection that serves now), rather than the server's refusal alone.
            Err(Error::Milvus { .. }) if !self.resolved_now => {
                let known = self.remote_key(&key.0, key.1);
                self.remote.forget(&known);
                let served = self.find(known)?;
                let mask = self.mask(&key.0, &served, key.1)?;
                self.served.insert(key, (served.clone(), mask.clone()));
                Ok(self.rank(ask, &served, mask)?)
            }
            Err(e) => Err(e.into()),
        }
    }
}

impl Published<'_> {
    /// The key of `index@version` in what the [`Remote`] remembers across searches.
    fn remote_key(&self, index: &str, version: u64) -> ServedKey {
        (
            self.store.path().to_path_buf(),
            self.prefix.to_string(),
            index.to_string(),
            version,
        )
    }

    /// Asks Milvus which collection serves `known` ([`Remote::collection_for`]) and
    /// remembers it: only a complete collection is ever returned.
    fn find(&mut self, known: ServedKey) -> Result<Served, Error> {
        let served =
            self.remote
                .resolve(self.store, &known.1, &known.2, known.3, &mut self.tally)?;
        self.resolved_now = true;
        self.remote.remember(known, &served);
        Ok(served)
    }

    /// The live mask of `served` for `index@version` (`None` when nothing is dead).
    fn mask(
        &mut self,
        index: &str,
        served: &Served,
        version: u64,
    ) -> Result<Option<String>, Error> {
        let dead = self.dead(index, served.published, version)?;
        self.calls.masked = dead.len().min(MASK_MAX as u64) as usize;
        Ok((!dead.is_empty()).then(|| live_mask(&dead)))
    }

    /// Asks Milvus for `wanted` rows the caller may see; when folio's own check hides some
    /// (an ACL change not synced yet), asks again for twice as many, up to [`TOPK_MAX`].
    fn rank(
        &mut self,
        ask: &Ask<'_>,
        served: &Served,
        mask: Option<String>,
    ) -> Result<Vec<Candidate>, Error> {
        let collection = served.collection.clone();
        self.last = Some(collection.clone());
        let wanted = ask.wanted();
        // A collection of an earlier version holds that version's audiences in `acl`; a
        // later version's may differ (an ACL change), so only the current audience, which
        // `sync` keeps, filters there, and folio's check applies the version's own.
        let own = served.published == ask.version();
        let audience = match ask.access() {
            Access::Principals(principals) if own => Some(visible_to(principals)),
            Access::Principals(principals) => Some(visible_now_to(principals)),
            Access::Unrestricted => None,
        };
        let metadata = self.filter.as_ref().and_then(|f| f.expr.clone());
        // One expression: the audience, the live mask and the metadata filter, so Milvus
        // ranks only rows folio would show (up to what is not synced yet).
        let parts: Vec<String> = [audience, mask, metadata].into_iter().flatten().collect();
        let filter = match parts.len() {
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
        self.calls.expression = filter.clone();
        let mut limit = wanted.min(TOPK_MAX);
        loop {
            let rows = self.remote.timed(
                &mut self.tally,
                Call::Search,
                &collection,
                search(
                    &self.remote.client,
                    &collection,
                    ask,
                    filter.as_deref(),
                    limit,
                ),
            )?;
            let returned = rows.len();
            let mut visible: Vec<Candidate> = rows
                .into_iter()
                .filter(|c| ask.is_visible(c.child))
                .collect();
            self.calls.hidden += returned - visible.len();
            if visible.len() >= wanted || returned < limit || limit >= TOPK_MAX {
                visible.truncate(wanted);
                if visible.len() < wanted && (visible.len() as u64) < ask.visible() {
                    let reason = if returned < limit {
                        ShortReason::NotSynced
                    } else {
                        ShortReason::TopkLimit
                    };
                    self.calls.short = Some(Short {
                        reason,
                        wanted,
                        found: visible.len(),
                        visible: ask.visible(),
                    });
                } else {
                    // A later, deeper ask filled what an earlier one could not.
                    self.calls.short = None;
                }
                return Ok(visible);
            }
            limit = limit.saturating_mul(2).min(TOPK_MAX);
        }
    }

    /// The children the collection of `index@published` holds rows of that `index@version`
    /// no longer shows: rows of documents deleted since, which only `sync` removes.
    fn dead(&self, index: &str, published: u64, version: u64) -> Result<RoaringBitmap, Error> {
        let held = self.store.live(&format!("{index}@{published}"))?;
        let live = self
            .store
            .visible(&format!("{index}@{version}"), &Access::Unrestricted)?;
        Ok(held - live)
    }
}

/// `not (child in [...])` over at most [`MASK_MAX`] of the `dead` children (the lowest).
fn live_mask(dead: &RoaringBitmap) -> String {
    let numbers: Vec<String> = dead.iter().take(MASK_MAX).map(|n| n.to_string()).collect();
    format!("not ({CHILD} in [{}])", numbers.join(", "))
}

/// The best `limit` rows of `collection` for the query that `filter` admits, as folio's
/// candidates (Milvus gives L2 as a squared distance, folio scores its negation).
async fn search(
    client: &ClientV2,
    collection: &str,
    ask: &Ask<'_>,
    filter: Option<&str>,
    limit: usize,
) -> Result<Vec<Candidate>, Error> {
    let mut request = VectorSearch::builder()
        .collection_name(collection)
        .vector_field(VECTOR)
        .vectors(SearchVectors::Float(vec![ask.query().to_vec()]))
        .output_fields([CHILD])
        .limit(limit as i64)
        // An ACL sync is seen by the next search.
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
    let negate = ask.metric() == Metric::L2;
    let mut out = Vec::with_capacity(ids.len());
    for ((row, id), &score) in result.rows()?.zip(ids).zip(result.get_scores()) {
        let child = u32::try_from(row.get_i64(CHILD)?).map_err(|_| Error::Collection {
            collection: collection.to_string(),
            problem: format!("row `{id}` has no child number"),
        })?;
        out.push(Candidate {
            child,
            chunk_id: id.clone(),
            score: if negate { -score } else { score },
        });
    }
    Ok(out)
}
