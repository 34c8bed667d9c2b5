//! The catalog a search node resolves targets with, and the publish that writes everything a
//! node reads. One small collection per prefix, `PREFIX__node`, one row per index and per
//! alias (`index:NAME`, `alias:NAME`, JSON): an index's embedder (name, fingerprint,
//! dimension, metric), the version its bare name serves, its tags, and for each version the
//! store keeps that a complete collection serves, that collection (its own, or an earlier
//! version's: `Remote::collection_for`) and whether its documents collection is complete;
//! an alias's routes with their weights. The store writes it at every publish, sync and
//! alias move (`Remote::write_catalog`), so a node sees a new version (an ACL change, a
//! delete) once it is synced. The name cannot meet a collection or an alias of folio's: in
//! those, `_` after the prefix is only ever followed by two hex digits.

use std::collections::{BTreeMap, HashMap};

use folio::index::Metric;
use folio::store::{route_bucket, Progress};
use folio::Store;
use milvus::v2::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::result::Result;

use crate::documents::{create_with_dummy, documents_name, dummy_field, dummy_vector};
use crate::error::Error;
use crate::publish::{delete_where, flush, upsert, PublishOptions, PublishReport};
use crate::remote::{Call, Remote, Tally};

/// The catalog collection of `prefix`.
pub fn catalog_name(prefix: &str) -> String {
    format!("{prefix}__node")
}

/// Longest catalog entry (Milvus's VARCHAR limit).
const ENTRY_MAX: usize = 65_535;
/// Most rows a catalog holds (Milvus's query limit: every row is read at once).
const ROWS_MAX: i64 = 16_384;

/// The embedder that made an index's vectors, as published.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PublishedEmbedder {
    pub(crate) name: String,
    pub(crate) fingerprint: String,
    pub(crate) dimension: u32,
    /// `cosine`, `dot` or `l2`.
    pub(crate) metric: String,
}

impl PublishedEmbedder {
    pub(crate) fn metric(&self) -> Option<Metric> {
        match self.metric.as_str() {
            "cosine" => Some(Metric::Cosine),
            "dot" => Some(Metric::Dot),
            "l2" => Some(Metric::L2),
            _ => None,
        }
    }
}

impl std::fmt::Display for PublishedEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({} dims, {}, {})",
            self.name, self.dimension, self.metric, self.fingerprint
        )
    }
}

/// Which collection serves a version, for a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ServedBy {
    pub(crate) collection: String,
    /// The version it was published for.
    pub(crate) published: u64,
    /// Whether its documents collection is complete (a collection published before search
    /// nodes has none).
    pub(crate) documents: bool,
}

/// An index, for a node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct IndexEntry {
    pub(crate) embedder: PublishedEmbedder,
    /// The version the bare name serves (the head unless rolled back).
    pub(crate) serving: u64,
    pub(crate) tags: BTreeMap<String, u64>,
    pub(crate) versions: BTreeMap<u64, ServedBy>,
}

/// One route of an alias, for a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RouteEntry {
    pub(crate) index: String,
    pub(crate) version: u64,
    pub(crate) weight: u32,
}

/// Every row of a catalog.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    pub(crate) indexes: BTreeMap<String, IndexEntry>,
    pub(crate) aliases: BTreeMap<String, Vec<RouteEntry>>,
}

/// What a target names in a catalog.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// `index@version`.
    Version(String, u64),
    /// The catalog holds no such index, tag or alias.
    Unknown,
}

impl Catalog {
    /// `name@version`, `name@tag`, a bare index name (the version it serves) or an alias
    /// (its route for `route_key`), as the store resolves them.
    pub(crate) fn resolve(&self, target: &str, route_key: &[u8]) -> Resolved {
        if let Some((name, after)) = target.rsplit_once('@') {
            let Some(entry) = self.indexes.get(name) else {
                return Resolved::Unknown;
            };
            let version = match after.parse::<u64>() {
                Ok(version) => Some(version),
                Err(_) => entry.tags.get(after).copied(),
            };
            return match version {
                Some(version) => Resolved::Version(name.to_string(), version),
                None => Resolved::Unknown,
            };
        }
        if let Some(entry) = self.indexes.get(target) {
            return Resolved::Version(target.to_string(), entry.serving);
        }
        let Some(routes) = self.aliases.get(target) else {
            return Resolved::Unknown;
        };
        // The store's rule (`folio::store::route_bucket`, cumulative weights), so a route
        // key gets the version it gets locally.
        let bucket = route_bucket(target, route_key);
        let mut upto = 0u32;
        let picked = routes
            .iter()
            .find(|route| {
                upto = upto.saturating_add(route.weight);
                bucket < upto
            })
            .or(routes.last());
        match picked {
            Some(route) => Resolved::Version(route.index.clone(), route.version),
            None => Resolved::Unknown,
        }
    }
}

impl Remote {
    /// Publishes `target`'s version (`index`, `index@version`, `index@tag` or an alias) as
    /// one collection, or finishes an interrupted publish of it; then its documents
    /// collection and the prefix's catalog, what a search node ([`crate::Searcher`]) reads.
    /// Complete only when every row was acknowledged, flushed and counted. Publishing a
    /// version again adds what an earlier folio-milvus did not write (a collection's
    /// segments, its documents, the catalog) and rewrites no row.
    pub fn publish(
        &self,
        store: &Store,
        target: &str,
        options: &PublishOptions,
        progress: &dyn Progress,
    ) -> Result<PublishReport, Error> {
        let report = self.publish_children(store, target, options, progress)?;
        let children = store
            .export(&format!("{}@{}", report.index, report.version))?
            .children()
            .clone();
        self.publish_documents(
            store,
            &report.index,
            report.version,
            &report.collection,
            &children,
        )?;
        self.write_catalog(store, &options.prefix)?;
        Ok(report)
    }

    /// Writes the catalog of `prefix` from the store as it is now: every index with a
    /// version a complete collection serves, every alias; entries the store no longer has
    /// are deleted. Idempotent: run again, it writes the same rows.
    pub fn write_catalog(&self, store: &Store, prefix: &str) -> Result<(), Error> {
        let name = catalog_name(prefix);
        self.run_on(&name, prepare_catalog(&self.client, &name))?;
        let mut rows: BTreeMap<String, String> = BTreeMap::new();
        let mut documents: HashMap<String, bool> = HashMap::new();
        for info in store.indexes().list()? {
            let mut entry = IndexEntry {
                embedder: PublishedEmbedder {
                    name: info.embedder.name.clone(),
                    fingerprint: info.embedder.fingerprint.clone(),
                    dimension: info.embedder.dimension,
                    metric: match info.embedder.metric {
                        Metric::Cosine => "cosine",
                        Metric::Dot => "dot",
                        Metric::L2 => "l2",
                    }
                    .to_string(),
                },
                serving: info.serving,
                tags: BTreeMap::new(),
                versions: BTreeMap::new(),
            };
            for version in store.versions(&info.name).list()? {
                for tag in &version.tags {
                    entry.tags.insert(tag.clone(), version.version);
                }
                let served = match self.collection_for(store, prefix, &info.name, version.version) {
                    Ok(served) => served,
                    Err(
                        Error::NotPublished { .. }
                        | Error::Incomplete { .. }
                        | Error::ForeignCollection { .. },
                    ) => continue,
                    Err(e) => return Err(e),
                };
                let complete = match documents.get(&served.collection) {
                    Some(&complete) => complete,
                    None => {
                        let docs = documents_name(&served.collection);
                        let complete = self.has_collection_counted(&docs, &mut Tally::default())?
                            && self.is_complete(&docs)?;
                        documents.insert(served.collection.clone(), complete);
                        complete
                    }
                };
                entry.versions.insert(
                    version.version,
                    ServedBy {
                        collection: served.collection,
                        published: served.published,
                        documents: complete,
                    },
                );
            }
            if !entry.versions.is_empty() {
                rows.insert(format!("index:{}", info.name), encode(&name, &entry)?);
            }
        }
        for alias in store.aliases().list()? {
            let routes: Vec<RouteEntry> = alias
                .routes
                .iter()
                .map(|r| RouteEntry {
                    index: r.index.clone(),
                    version: r.version,
                    weight: r.weight,
                })
                .collect();
            rows.insert(format!("alias:{}", alias.name), encode(&name, &routes)?);
        }
        let stale: Vec<String> = self
            .run_on(&name, catalog_rows(&self.client, &name))?
            .into_keys()
            .filter(|key| !rows.contains_key(key))
            .collect();
        if !stale.is_empty() {
            let filter = format!(
                "key in {}",
                crate::expr::string_list(stale.iter().map(String::as_str))
            );
            self.run_on(&name, delete_where(&self.client, &name, filter))?;
        }
        if !rows.is_empty() {
            let rows = rows
                .into_iter()
                .map(|(key, value)| json!({"key": key, "value": value, "dummy": dummy_vector()}))
                .collect();
            self.run_on(&name, upsert(&self.client, &name, rows))?;
        }
        self.run_on(&name, flush(&self.client, &name))?;
        Ok(())
    }

    /// Every entry of the catalog of `prefix`; `None` when there is no catalog (nothing
    /// was published for nodes there). One query; a `has_collection` only when it fails,
    /// to tell "no catalog" from another refusal.
    pub(crate) fn read_catalog(
        &self,
        prefix: &str,
        tally: &mut Tally,
    ) -> Result<Option<Catalog>, Error> {
        let name = catalog_name(prefix);
        let rows = match self.timed(tally, Call::Query, &name, catalog_rows(&self.client, &name)) {
            Ok(rows) => rows,
            Err(e @ Error::Milvus { .. }) => {
                if self.has_collection_counted(&name, tally)? {
                    return Err(e);
                }
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let mut catalog = Catalog::default();
        for (key, value) in rows {
            let unreadable = |e: serde_json::Error| Error::Collection {
                collection: name.clone(),
                problem: format!("entry `{key}` does not read ({e}): publish again"),
            };
            if let Some(index) = key.strip_prefix("index:") {
                let entry: IndexEntry = serde_json::from_str(&value).map_err(unreadable)?;
                catalog.indexes.insert(index.to_string(), entry);
            } else if let Some(alias) = key.strip_prefix("alias:") {
                let routes: Vec<RouteEntry> = serde_json::from_str(&value).map_err(unreadable)?;
                catalog.aliases.insert(alias.to_string(), routes);
            }
        }
        Ok(Some(catalog))
    }
}

fn encode<T: Serialize>(collection: &str, value: &T) -> Result<String, Error> {
    let text = serde_json::to_string(value).map_err(|e| Error::Collection {
        collection: collection.to_string(),
        problem: format!("an entry could not be written: {e}"),
    })?;
    if text.len() > ENTRY_MAX {
        return Err(Error::Collection {
            collection: collection.to_string(),
            problem: format!(
                "an entry is {} bytes, over Milvus's {ENTRY_MAX} (too many versions kept: `folio gc`)",
                text.len()
            ),
        });
    }
    Ok(text)
}

/// Creates the catalog collection unless it exists, and loads it.
async fn prepare_catalog(client: &ClientV2, name: &str) -> Result<(), Error> {
    let exists = client
        .has_collection(
            HasCollectionRequest::builder()
                .collection_name(name)
                .build()?,
        )
        .await?
        .exists();
    if !exists {
        let text = |field: &str| {
            FieldSchema::new()
                .name(field)
                .data_type(DataType::VarChar)
                .max_length(ENTRY_MAX as u32)
        };
        let schema = CollectionSchema::new()
            .enable_dynamic_field(false)
            .add_field(text("key").primary_key(true))
            .add_field(text("value"))
            .add_field(dummy_field());
        create_with_dummy(client, name, schema).await?;
    }
    client
        .load_collection(
            LoadCollectionRequest::builder()
                .collection_name(name)
                .build()?,
        )
        .await?;
    Ok(())
}

/// key → value of every catalog row.
async fn catalog_rows(client: &ClientV2, name: &str) -> Result<BTreeMap<String, String>, Error> {
    let response = client
        .query(
            QueryRequest::builder()
                .collection_name(name)
                .filter("key != \"\"")
                .output_fields(["key", "value"])
                .limit(ROWS_MAX)
                .consistency_level(ConsistencyLevel::Strong)
                .build()?,
        )
        .await?;
    let mut out = BTreeMap::new();
    for row in response.results().rows()? {
        out.insert(
            row.get_str("key")?.to_string(),
            row.get_str("value")?.to_string(),
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(serving: u64) -> IndexEntry {
        IndexEntry {
            embedder: PublishedEmbedder {
                name: "e".into(),
                fingerprint: "f".into(),
                dimension: 2,
                metric: "cosine".into(),
            },
            serving,
            tags: BTreeMap::from([("stable".to_string(), 2)]),
            versions: BTreeMap::new(),
        }
    }

    #[test]
    fn targets_resolve_as_the_store_resolves_them() {
        let mut catalog = Catalog::default();
        catalog.indexes.insert("docs".into(), entry(3));
        let v = |n| Resolved::Version("docs".into(), n);
        assert_eq!(catalog.resolve("docs", b""), v(3));
        assert_eq!(catalog.resolve("docs@7", b""), v(7));
        assert_eq!(catalog.resolve("docs@stable", b""), v(2));
        assert_eq!(catalog.resolve("docs@nope", b""), Resolved::Unknown);
        assert_eq!(catalog.resolve("other", b""), Resolved::Unknown);
        let route = |version, weight| RouteEntry {
            index: "docs".into(),
            version,
            weight,
        };
        catalog
            .aliases
            .insert("prod".into(), vec![route(1, 30), route(2, 70)]);
        // Each key gets the version of its bucket, as `folio::store::route_bucket` splits.
        for key in ["a", "b", "c", "d", "e", "f"] {
            let expected = if route_bucket("prod", key.as_bytes()) < 30 {
                1
            } else {
                2
            };
            assert_eq!(catalog.resolve("prod", key.as_bytes()), v(expected));
        }
    }
}
