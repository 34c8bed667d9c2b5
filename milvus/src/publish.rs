//! Publishing one version as one collection: in batches, resumable, complete only when every
//! row is acknowledged and counted.
//!
//! The collection's properties carry the state: `folio.index` and `folio.version` (what it
//! holds), `folio.segments` (the version's segment ids: which later versions it serves, see
//! `resolve`), `folio.rows` (how many children), `folio.through` (the highest child number
//! written and flushed: a rerun resumes after it) and `folio.complete`. Rows are upserted
//! by chunk id, so a batch written twice (after a failure between two checkpoints) leaves
//! no duplicate; rows of documents deleted between two runs are deleted before the end.

use std::collections::HashMap;

use folio::store::{Export, Progress};
use folio::Store;
use milvus::v2::prelude::*;
use roaring::RoaringBitmap;
use std::result::Result;

use crate::error::Error;
use crate::remote::{Remote, Tally};
use crate::schema::{self, collection_name, metric_type, CHILD, ID, VECTOR};

/// The vector index Milvus builds on a published collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum VectorIndex {
    /// Exact search: a remote answer equals folio's exact answer.
    Flat,
    /// HNSW with these links per node and construction breadth.
    Hnsw {
        /// Links per node.
        m: u32,
        /// Construction breadth.
        ef_construction: u32,
    },
}

/// How a version is published.
#[derive(Debug, Clone)]
pub struct PublishOptions {
    /// Collection names start with this (`PREFIX_INDEX_vVERSION`).
    pub prefix: String,
    /// Rows per upsert.
    pub batch: usize,
    /// Rows between two checkpoints (a flush, then `folio.through`): what a rerun may
    /// write again.
    pub checkpoint: usize,
    /// The vector index.
    pub index: VectorIndex,
}

/// The collection prefix of [`PublishOptions::default`].
pub const DEFAULT_PREFIX: &str = "folio";
/// Rows per upsert of [`PublishOptions::default`].
pub const DEFAULT_BATCH: usize = 512;
/// Rows between checkpoints of [`PublishOptions::default`].
pub const DEFAULT_CHECKPOINT: usize = 8_192;

impl Default for PublishOptions {
    fn default() -> Self {
        PublishOptions {
            prefix: DEFAULT_PREFIX.to_string(),
            batch: DEFAULT_BATCH,
            checkpoint: DEFAULT_CHECKPOINT,
            index: VectorIndex::Hnsw {
                m: 16,
                ef_construction: 200,
            },
        }
    }
}

/// What a publish did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishReport {
    /// The collection.
    pub collection: String,
    /// The index published.
    pub index: String,
    /// Its version.
    pub version: u64,
    /// Rows the collection holds: the version's children.
    pub rows: u64,
    /// Rows this run wrote (0 when the collection was already complete).
    pub written: u64,
    /// Rows of documents deleted since an earlier, interrupted run, removed by this one.
    pub removed: u64,
}

pub(crate) const INDEX: &str = "folio.index";
pub(crate) const VERSION: &str = "folio.version";
const ROWS: &str = "folio.rows";
pub(crate) const SEGMENTS: &str = "folio.segments";
const THROUGH: &str = "folio.through";
pub(crate) const COMPLETE: &str = "folio.complete";

/// Children read back per query when a collection is reconciled with its version.
pub(crate) const PAGE: u32 = 8_192;

impl Remote {
    /// The children collection of [`Remote::publish`]: `target`'s version as one
    /// collection, or an interrupted publish of it finished. Complete only when every row
    /// was acknowledged, flushed and counted.
    pub(crate) fn publish_children(
        &self,
        store: &Store,
        target: &str,
        options: &PublishOptions,
        progress: &dyn Progress,
    ) -> Result<PublishReport, Error> {
        let export = self.mark(store, target, &options.prefix)?;
        let segments = store.versions(export.index()).segments(export.version())?;
        let segments = segments_property(&segments);
        let name = collection_name(&options.prefix, export.index(), export.version());
        let mut report = PublishReport {
            collection: name.clone(),
            index: export.index().to_string(),
            version: export.version(),
            rows: export.children().len(),
            written: 0,
            removed: 0,
        };
        self.run_on(&name, self.prepare(&export, &name, &segments, options))?;
        let properties = self.properties(&name)?;
        self.check_names(&properties, &name, export.index(), export.version())?;
        // A collection published before collections recorded their segments gets them now.
        if properties.get(SEGMENTS) != Some(&segments) {
            self.set(&name, SEGMENTS, &segments)?;
        }
        if properties.get(COMPLETE).map(String::as_str) == Some("true") {
            return Ok(report);
        }
        let through: Option<u32> = properties.get(THROUGH).and_then(|t| t.parse().ok());
        let todo: Vec<u32> = match through {
            Some(t) => export.children().iter().filter(|&n| n > t).collect(),
            None => export.children().iter().collect(),
        };
        progress.stage("publish", report.rows);
        progress.set_done(report.rows - todo.len() as u64);
        let mut since_checkpoint = 0;
        for batch in todo.chunks(options.batch.max(1)) {
            let rows = batch
                .iter()
                .map(|&n| Ok(schema::row(&export.child(n)?)))
                .collect::<Result<Vec<_>, Error>>()?;
            self.run_on(&name, upsert(&self.client, &name, rows))?;
            report.written += batch.len() as u64;
            progress.advance(batch.len() as u64);
            since_checkpoint += batch.len();
            if since_checkpoint >= options.checkpoint {
                if let Some(&last) = batch.last() {
                    self.checkpoint(&name, last)?;
                }
                since_checkpoint = 0;
            }
        }
        self.run_on(&name, flush(&self.client, &name))?;
        let mut stored = self.rows(&name)?;
        if stored > report.rows {
            report.removed = self.remove_stale(&name, export.children())?;
            stored = self.rows(&name)?;
        }
        if stored != report.rows {
            // Acknowledged rows are missing: the next run writes them all again.
            self.set(&name, THROUGH, "")?;
            return Err(Error::Collection {
                collection: name,
                problem: format!("holds {stored} rows of {}; publish again", report.rows),
            });
        }
        self.set(&name, COMPLETE, "true")?;
        Ok(report)
    }

    /// Reads `target`'s version for publishing; first, on a store open for writing, marks
    /// its index published here (`Store::outbox`), so that every later change to it is in
    /// the outbox, and every earlier one in what is read after the mark. A read-only store
    /// is published without the mark: nothing records its changes for a follower.
    fn mark<'s>(&self, store: &'s Store, target: &str, prefix: &str) -> Result<Export<'s>, Error> {
        let export = store.export(target)?;
        if store.is_read_only() {
            return Ok(export);
        }
        let pinned = format!("{}@{}", export.index(), export.version());
        store
            .outbox()
            .mark_published(export.index(), self.uri(), prefix)?;
        drop(export);
        Ok(store.export(&pinned)?)
    }

    /// Creates the collection (fields, vector index, what it holds) unless it exists, and
    /// loads it.
    async fn prepare(
        &self,
        export: &Export<'_>,
        name: &str,
        segments: &str,
        options: &PublishOptions,
    ) -> Result<(), Error> {
        let client = &self.client;
        let exists = client
            .has_collection(
                HasCollectionRequest::builder()
                    .collection_name(name)
                    .build()?,
            )
            .await?
            .exists();
        if !exists {
            let embedder = export.embedder();
            client
                .create_collection(
                    CreateCollectionRequest::builder()
                        .collection_name(name)
                        .schema(schema::schema(embedder.dimension))
                        .build()?,
                )
                .await?;
            let mut index = IndexParam::new()
                .field_name(VECTOR)
                .metric_type(metric_type(embedder.metric));
            index = match options.index {
                VectorIndex::Flat => index.index_type(IndexType::Flat),
                VectorIndex::Hnsw { m, ef_construction } => index
                    .index_type(IndexType::Hnsw)
                    .extra_params(HashMap::from([
                        ("M".to_string(), m.to_string()),
                        ("efConstruction".to_string(), ef_construction.to_string()),
                    ])),
            };
            client
                .create_index(
                    CreateIndexRequest::builder()
                        .collection_name(name)
                        .index_param(index)
                        // Loading waits for the index; `sync` would poll with
                        // AllocTimestamp, which milvus-lite does not serve.
                        .sync(false)
                        .build()?,
                )
                .await?;
            client
                .alter_collection_properties(
                    AlterCollectionPropertiesRequest::builder()
                        .collection_name(name)
                        .property(INDEX, export.index())
                        .property(VERSION, export.version().to_string())
                        .property(SEGMENTS, segments)
                        .property(ROWS, export.children().len().to_string())
                        .build()?,
                )
                .await?;
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

    /// Refuses a collection whose name says `index@version` but whose properties say
    /// something else (another store's, or another prefix's collection under this name).
    pub(crate) fn check_names(
        &self,
        properties: &HashMap<String, String>,
        collection: &str,
        index: &str,
        version: u64,
    ) -> Result<(), Error> {
        let holds = |key: &str, expected: &str| properties.get(key).is_none_or(|v| v == expected);
        if holds(INDEX, index) && holds(VERSION, &version.to_string()) {
            Ok(())
        } else {
            let problem = format!(
                "it says it holds {}@{}",
                properties.get(INDEX).map_or("?", String::as_str),
                properties.get(VERSION).map_or("?", String::as_str)
            );
            Err(self.foreign(collection, index, version, &problem))
        }
    }

    pub(crate) fn foreign(
        &self,
        collection: &str,
        index: &str,
        version: u64,
        problem: &str,
    ) -> Error {
        Error::ForeignCollection {
            uri: self.uri().to_string(),
            collection: collection.to_string(),
            index: index.to_string(),
            version,
            problem: problem.to_string(),
        }
    }

    /// Whether collection `name` holds a whole published version.
    pub fn is_complete(&self, name: &str) -> Result<bool, Error> {
        Ok(self.properties(name)?.get(COMPLETE).map(String::as_str) == Some("true"))
    }

    /// The collection's properties.
    pub(crate) fn properties(&self, name: &str) -> Result<HashMap<String, String>, Error> {
        self.properties_counted(name, &mut Tally::default())
    }

    fn set(&self, name: &str, key: &str, value: &str) -> Result<(), Error> {
        self.run_on(name, async {
            self.client
                .alter_collection_properties(
                    AlterCollectionPropertiesRequest::builder()
                        .collection_name(name)
                        .property(key, value)
                        .build()?,
                )
                .await?;
            Ok(())
        })
    }

    /// Everything up to child `last` is written: flush, then say so.
    fn checkpoint(&self, name: &str, last: u32) -> Result<(), Error> {
        self.run_on(name, flush(&self.client, name))?;
        self.set(name, THROUGH, &last.to_string())
    }

    /// Rows in collection `name`, counted after every acknowledged write.
    pub fn rows(&self, name: &str) -> Result<u64, Error> {
        self.run_on(name, async {
            let response = self
                .client
                .query(
                    QueryRequest::builder()
                        .collection_name(name)
                        .output_fields(["count(*)"])
                        .consistency_level(ConsistencyLevel::Strong)
                        .build()?,
                )
                .await?;
            let mut rows = response.results().rows()?;
            let count = match rows.next() {
                Some(row) => row.get_i64("count(*)")?,
                None => 0,
            };
            Ok(u64::try_from(count).unwrap_or(0))
        })
    }

    /// Deletes the rows of children `keep` does not hold; returns how many.
    pub(crate) fn remove_stale(&self, name: &str, keep: &RoaringBitmap) -> Result<u64, Error> {
        let end = keep.max().map_or(0, |last| u64::from(last) + 1);
        let mut stale: Vec<String> = Vec::new();
        // Child numbers are unique in a collection, so a page of PAGE numbers fits one query.
        for start in (0..end).step_by(PAGE as usize) {
            let page = self.run_on(
                name,
                ids_between(&self.client, name, start, start + u64::from(PAGE)),
            )?;
            stale.extend(
                page.into_iter()
                    .filter(|(child, _)| !u32::try_from(*child).is_ok_and(|c| keep.contains(c)))
                    .map(|(_, id)| id),
            );
        }
        let mut removed = stale.len() as u64;
        if !stale.is_empty() {
            self.run_on(name, delete(&self.client, name, &stale))?;
        }
        // Every row past the version's last child is stale.
        loop {
            let beyond =
                self.run_on(name, ids_between(&self.client, name, end, i64::MAX as u64))?;
            if beyond.is_empty() {
                return Ok(removed);
            }
            let ids: Vec<String> = beyond.into_iter().map(|(_, id)| id).collect();
            removed += ids.len() as u64;
            self.run_on(name, delete(&self.client, name, &ids))?;
        }
    }
}

pub(crate) async fn upsert(
    client: &ClientV2,
    name: &str,
    rows: Vec<serde_json::Value>,
) -> Result<(), Error> {
    client
        .upsert(
            UpsertRequest::builder()
                .insert(
                    InsertRequest::builder()
                        .collection_name(name)
                        .rows(rows)
                        .build()?,
                )
                .build()?,
        )
        .await?;
    Ok(())
}

pub(crate) async fn flush(client: &ClientV2, name: &str) -> Result<(), Error> {
    client
        .flush(FlushRequest::builder().collection_names([name]).build()?)
        .await?;
    Ok(())
}

/// Deletes rows by chunk id (a filter: milvus-lite parses no templates, which `ids` sends).
pub(crate) async fn delete(client: &ClientV2, name: &str, ids: &[String]) -> Result<(), Error> {
    let filter = format!(
        "{ID} in {}",
        crate::expr::string_list(ids.iter().map(String::as_str))
    );
    client
        .delete(
            DeleteRequest::builder()
                .collection_name(name)
                .filter(filter)
                .build()?,
        )
        .await?;
    Ok(())
}

/// Deletes the rows `filter` selects.
pub(crate) async fn delete_where(
    client: &ClientV2,
    name: &str,
    filter: String,
) -> Result<(), Error> {
    client
        .delete(
            DeleteRequest::builder()
                .collection_name(name)
                .filter(filter)
                .build()?,
        )
        .await?;
    Ok(())
}

/// (child, chunk id) of the rows with `start <= child < end`.
async fn ids_between(
    client: &ClientV2,
    name: &str,
    start: u64,
    end: u64,
) -> Result<Vec<(i64, String)>, Error> {
    let response = client
        .query(
            QueryRequest::builder()
                .collection_name(name)
                .filter(format!("{CHILD} >= {start} and {CHILD} < {end}"))
                .output_fields([CHILD, ID])
                .limit(i64::from(PAGE))
                .consistency_level(ConsistencyLevel::Strong)
                .build()?,
        )
        .await?;
    let mut out = Vec::new();
    for row in response.results().rows()? {
        out.push((row.get_i64(CHILD)?, row.get_str(ID)?.to_string()));
    }
    Ok(out)
}

/// `folio.segments` of a version's collection.
fn segments_property(segments: &[u32]) -> String {
    segments
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}
