//! The documents collection a search node assembles units from: beside each published
//! collection `C`, `C_docs` holds one record per document of the version, as the store's
//! read path gives it (the revision's text, format and fields, and the records of its
//! parents and children: spans, ordinals, heading paths). A unit is a span of the document's
//! text (a parent, a section of parents, a window of children), its visible text and pages
//! come from the text and format, and a budget counts tokens of that text, so one record per
//! document is everything expansion, budgets and de-duplication read ([`NodeChunks`]
//! implements `folio::query::Chunks` over the records fetched).
//!
//! A record is JSON split into pieces under Milvus's VARCHAR limit (rows `doc_id#dN`), so a
//! document of any length fits. Milvus needs a vector field in every collection: a
//! documents collection carries a 2-float zero vector (8 bytes a row), never searched.

use std::collections::{BTreeMap, HashMap};

use folio::filter::MetadataValue;
use folio::store::ChunkRanges;
use folio::{ReadError, SourceFormat, Store};
use milvus::v2::prelude::*;
use roaring::RoaringBitmap;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::result::Result;

use crate::error::Error;
use crate::publish::{flush, upsert, COMPLETE, INDEX, VERSION};
use crate::remote::Remote;

/// The documents collection of collection `collection`.
pub fn documents_name(collection: &str) -> String {
    format!("{collection}_docs")
}

/// Bytes of a record one row holds (Milvus's VARCHAR limit is 65,535 bytes).
const PIECE: usize = 60_000;
/// Bytes of rows one upsert carries (gRPC servers refuse messages over 4 MiB by default).
const UPSERT_BYTES: usize = 2_000_000;
/// The dummy vector field: Milvus needs one in every collection.
const DUMMY: &str = "dummy";
const DUMMY_DIMENSION: u32 = 2;

/// A document's metadata value, its type kept (folio's own JSON form writes a date as text).
#[derive(Debug, Serialize, Deserialize)]
enum Value {
    #[serde(rename = "s")]
    String(String),
    #[serde(rename = "n")]
    Number(f64),
    #[serde(rename = "b")]
    Bool(bool),
    #[serde(rename = "d")]
    Date(i64),
    #[serde(rename = "l")]
    List(Vec<String>),
}

/// One document as a search reads it: its revision and the records of its chunks.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    rev: u64,
    doc_id: String,
    title: String,
    source_uri: String,
    published_at: Option<String>,
    updated_at: Option<String>,
    format: SourceFormat,
    text: String,
    metadata: BTreeMap<String, Value>,
    /// The heading paths its chunks name, each once.
    paths: Vec<Vec<String>>,
    parents_start: u32,
    /// (ordinal, start, end, path) of each parent, numbered from `parents_start`.
    parents: Vec<(u32, usize, usize, u32)>,
    children_start: u32,
    /// (parent, parent ordinal, ordinal, start, end, path, oversized) of each child,
    /// numbered from `children_start`.
    children: Vec<(u32, u32, u32, usize, usize, u32, bool)>,
}

/// The record of the document of child `first` in the version `target` names (read
/// through one snapshot), and the children it covers.
fn record(
    snapshot: &folio::store::Snapshot<'_>,
    state: &folio::store::IndexState,
    first: u32,
) -> Result<(Record, std::ops::Range<u32>), Error> {
    let child = snapshot.child(state, first).map_err(ReadError::from)?;
    let ranges: ChunkRanges = snapshot
        .chunk_ranges(state, &child)
        .map_err(ReadError::from)?;
    let doc = snapshot.doc(child.rev).map_err(ReadError::from)?;
    let mut paths: Vec<Vec<String>> = Vec::new();
    let mut path_ids: HashMap<Vec<String>, u32> = HashMap::new();
    let mut path_of = |path: Vec<String>| -> u32 {
        *path_ids.entry(path.clone()).or_insert_with(|| {
            paths.push(path);
            (paths.len() - 1) as u32
        })
    };
    let mut parents = Vec::new();
    for number in ranges.parents.clone() {
        let p = snapshot.parent(state, number).map_err(ReadError::from)?;
        parents.push((p.ordinal, p.start, p.end, path_of(p.section_path)));
    }
    let mut children = Vec::new();
    for number in ranges.children.clone() {
        let c = snapshot.child(state, number).map_err(ReadError::from)?;
        children.push((
            c.parent,
            c.parent_ordinal,
            c.ordinal,
            c.start,
            c.end,
            path_of(c.section_path),
            c.oversized,
        ));
    }
    let mut metadata = BTreeMap::new();
    for (key, value) in &doc.metadata {
        let value = match value {
            MetadataValue::String(s) => Value::String(s.clone()),
            MetadataValue::Number(n) => Value::Number(*n),
            MetadataValue::Bool(b) => Value::Bool(*b),
            MetadataValue::Date(d) => Value::Date(*d),
            MetadataValue::List(l) => Value::List(l.clone()),
            other => {
                return Err(Error::Collection {
                    collection: String::new(),
                    problem: format!(
                        "document `{}`: metadata `{key}` is a kind of value this folio-milvus cannot publish ({other:?})",
                        doc.doc_id
                    ),
                })
            }
        };
        metadata.insert(key.clone(), value);
    }
    let record = Record {
        rev: child.rev,
        doc_id: doc.doc_id.clone(),
        title: doc.title.clone(),
        source_uri: doc.source_uri.clone(),
        published_at: doc.published_at.clone(),
        updated_at: doc.updated_at.clone(),
        format: doc.format,
        text: doc.text.clone(),
        metadata,
        paths,
        parents_start: ranges.parents.start,
        parents,
        children_start: ranges.children.start,
        children,
    };
    Ok((record, ranges.children))
}

/// `text` cut into pieces of at most [`PIECE`] bytes, at character bounds.
fn pieces(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while rest.len() > PIECE {
        let mut cut = PIECE;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (piece, after) = rest.split_at(cut);
        out.push(piece);
        rest = after;
    }
    out.push(rest);
    out
}

/// What publishing a version's documents wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DocumentsWritten {
    /// Documents.
    pub(crate) documents: u64,
    /// Rows (pieces of records).
    pub(crate) rows: u64,
    /// Bytes of the records (JSON).
    pub(crate) bytes: u64,
}

impl Remote {
    /// Writes the documents collection of `collection`, the publish of `index@version`
    /// whose children are `children`: one record per document, complete once every row is
    /// counted. A complete one is left as it is (records of a version never change).
    pub(crate) fn publish_documents(
        &self,
        store: &Store,
        index: &str,
        version: u64,
        collection: &str,
        children: &RoaringBitmap,
    ) -> Result<Option<DocumentsWritten>, Error> {
        let name = documents_name(collection);
        self.run_on(&name, self.prepare_documents(&name, index, version))?;
        if self.is_complete(&name)? {
            return Ok(None);
        }
        let snapshot = store.snapshot()?;
        let (state, _) = snapshot.resolve(&format!("{index}@{version}"))?;
        let mut written = DocumentsWritten {
            documents: 0,
            rows: 0,
            bytes: 0,
        };
        let mut batch: Vec<serde_json::Value> = Vec::new();
        let mut batch_bytes = 0;
        let mut next = 0u32;
        while let Some(first) = children.range(next..).next() {
            let (record, covered) = record(&snapshot, &state, first)?;
            next = covered.end.max(first + 1);
            let data = serde_json::to_string(&record).map_err(|e| Error::Collection {
                collection: name.clone(),
                problem: format!("document `{}` could not be written: {e}", record.doc_id),
            })?;
            written.documents += 1;
            written.bytes += data.len() as u64;
            let parts = pieces(&data);
            for (piece, part) in parts.iter().enumerate() {
                batch.push(json!({
                    "id": format!("{}#d{piece}", record.doc_id),
                    "doc_id": record.doc_id,
                    "piece": piece,
                    "pieces": parts.len(),
                    "data": part,
                    DUMMY: dummy_vector(),
                }));
                batch_bytes += part.len();
                written.rows += 1;
                if batch_bytes >= UPSERT_BYTES {
                    self.run_on(
                        &name,
                        upsert(&self.client, &name, std::mem::take(&mut batch)),
                    )?;
                    batch_bytes = 0;
                }
            }
        }
        if !batch.is_empty() {
            self.run_on(&name, upsert(&self.client, &name, batch))?;
        }
        self.run_on(&name, flush(&self.client, &name))?;
        let stored = self.rows(&name)?;
        if stored != written.rows {
            return Err(Error::Collection {
                collection: name,
                problem: format!("holds {stored} rows of {}; publish again", written.rows),
            });
        }
        self.run_on(&name, set_property(&self.client, &name, COMPLETE, "true"))?;
        Ok(Some(written))
    }

    /// Creates the documents collection unless it exists, and loads it.
    async fn prepare_documents(&self, name: &str, index: &str, version: u64) -> Result<(), Error> {
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
            let text = |field: &str| {
                FieldSchema::new()
                    .name(field)
                    .data_type(DataType::VarChar)
                    .max_length(65_535)
            };
            let schema = CollectionSchema::new()
                .enable_dynamic_field(false)
                .add_field(text("id").primary_key(true))
                .add_field(text("doc_id"))
                .add_field(FieldSchema::new().name("piece").data_type(DataType::Int64))
                .add_field(FieldSchema::new().name("pieces").data_type(DataType::Int64))
                .add_field(text("data"))
                .add_field(dummy_field());
            create_with_dummy(client, name, schema).await?;
            client
                .alter_collection_properties(
                    AlterCollectionPropertiesRequest::builder()
                        .collection_name(name)
                        .property(INDEX, index)
                        .property(VERSION, version.to_string())
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
}

/// Creates collection `name` with `schema`, whose vector field is the dummy one, and its
/// exact index (loading needs an index on every vector field).
pub(crate) async fn create_with_dummy(
    client: &ClientV2,
    name: &str,
    schema: CollectionSchema,
) -> Result<(), Error> {
    client
        .create_collection(
            CreateCollectionRequest::builder()
                .collection_name(name)
                .schema(schema)
                .build()?,
        )
        .await?;
    client
        .create_index(
            CreateIndexRequest::builder()
                .collection_name(name)
                .index_param(
                    IndexParam::new()
                        .field_name(DUMMY)
                        .metric_type(MetricType::L2)
                        .index_type(IndexType::Flat),
                )
                .sync(false)
                .build()?,
        )
        .await?;
    Ok(())
}

/// The dummy vector field's schema (for collections other than the documents one).
pub(crate) fn dummy_field() -> FieldSchema {
    FieldSchema::new()
        .name(DUMMY)
        .data_type(DataType::FloatVector)
        .dimension(DUMMY_DIMENSION)
}

/// The dummy vector of a row.
pub(crate) fn dummy_vector() -> [f32; DUMMY_DIMENSION as usize] {
    [0.0; DUMMY_DIMENSION as usize]
}

async fn set_property(client: &ClientV2, name: &str, key: &str, value: &str) -> Result<(), Error> {
    client
        .alter_collection_properties(
            AlterCollectionPropertiesRequest::builder()
                .collection_name(name)
                .property(key, value)
                .build()?,
        )
        .await?;
    Ok(())
}
