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

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError};

use folio::filter::MetadataValue;
use folio::query::{Chunks, QueryError};
use folio::store::{chunk_id, ChunkRanges, DocView, StoredChild, StoredParent};
use folio::{ReadError, SourceFormat, Store};
use milvus::v2::prelude::*;
use roaring::RoaringBitmap;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::result::Result;

use crate::error::Error;
use crate::publish::{flush, upsert, COMPLETE, INDEX, VERSION};
use crate::remote::{Call, Remote, Tally};

/// The documents collection of collection `collection`.
pub fn documents_name(collection: &str) -> String {
    format!("{collection}_docs")
}

/// Bytes of a record one row holds (Milvus's VARCHAR limit is 65,535 bytes).
const PIECE: usize = 60_000;
/// Bytes of rows one upsert carries (gRPC servers refuse messages over 4 MiB by default).
const UPSERT_BYTES: usize = 2_000_000;
/// Documents whose first pieces one query reads (at most `PIECE` bytes each).
const FETCH: usize = 32;
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

/// One document's record as read from a documents collection: what a search node keeps
/// across searches ([`DocCache`]), owned (shared between threads).
pub(crate) struct Parsed {
    rev: u64,
    view: DocView,
    parents_start: u32,
    parents: Vec<StoredParent>,
    children_start: u32,
    children: Vec<StoredChild>,
}

impl Parsed {
    fn from_record(record: Record) -> Parsed {
        let path = |i: u32| record.paths.get(i as usize).cloned().unwrap_or_default();
        let parents = record
            .parents
            .iter()
            .enumerate()
            .map(|(i, &(ordinal, start, end, p))| StoredParent {
                number: record.parents_start + i as u32,
                rev: record.rev,
                ordinal,
                start,
                end,
                section_path: path(p),
            })
            .collect();
        let children = record
            .children
            .iter()
            .enumerate()
            .map(
                |(i, &(parent, parent_ordinal, ordinal, start, end, p, oversized))| StoredChild {
                    number: record.children_start + i as u32,
                    parent,
                    parent_ordinal,
                    rev: record.rev,
                    ordinal,
                    start,
                    end,
                    section_path: path(p),
                    oversized,
                },
            )
            .collect();
        let metadata = record
            .metadata
            .into_iter()
            .map(|(key, value)| {
                let value = match value {
                    Value::String(s) => MetadataValue::String(s),
                    Value::Number(n) => MetadataValue::Number(n),
                    Value::Bool(b) => MetadataValue::Bool(b),
                    Value::Date(d) => MetadataValue::Date(d),
                    Value::List(l) => MetadataValue::List(l),
                };
                (key, value)
            })
            .collect();
        Parsed {
            rev: record.rev,
            view: DocView {
                doc_id: record.doc_id,
                title: record.title,
                source_uri: record.source_uri,
                published_at: record.published_at,
                updated_at: record.updated_at,
                format: record.format,
                text: record.text,
                metadata,
            },
            parents_start: record.parents_start,
            parents,
            children_start: record.children_start,
            children,
        }
    }

    /// Bytes it holds, roughly: its text and its chunks' records.
    fn weight(&self) -> usize {
        self.view.text.len()
            + (self.parents.len() + self.children.len()) * std::mem::size_of::<StoredChild>()
    }
}

/// Records a search node fetched, kept across its searches: a complete documents
/// collection's records never change (a version's documents are written once), so a record
/// read once serves every later search of a version that collection serves. Bounded by the
/// bytes of the records (least recently used out first); keyed by collection and document.
pub(crate) struct DocCache {
    entries: HashMap<(String, String), (Arc<Parsed>, u64)>,
    /// Bumped at each use: an entry's is its last.
    tick: u64,
    bytes: usize,
    capacity: usize,
}

impl DocCache {
    /// A cache of at most about `capacity` bytes of records (0 keeps none).
    pub(crate) fn new(capacity: usize) -> DocCache {
        DocCache {
            entries: HashMap::new(),
            tick: 0,
            bytes: 0,
            capacity,
        }
    }

    fn get(&mut self, collection: &str, doc_id: &str) -> Option<Arc<Parsed>> {
        self.tick += 1;
        let tick = self.tick;
        // A tuple key of owned strings cannot be looked up by borrowed parts.
        let key = (collection.to_string(), doc_id.to_string());
        let (parsed, used) = self.entries.get_mut(&key)?;
        *used = tick;
        Some(parsed.clone())
    }

    fn put(&mut self, collection: &str, doc_id: &str, parsed: Arc<Parsed>) {
        let weight = parsed.weight();
        if weight > self.capacity {
            return;
        }
        self.tick += 1;
        let key = (collection.to_string(), doc_id.to_string());
        if let Some((old, _)) = self.entries.insert(key, (parsed, self.tick)) {
            self.bytes -= old.weight();
        }
        self.bytes += weight;
        if self.bytes > self.capacity {
            // Down to three quarters at once, so a full cache does not sort at every put.
            let mut by_age: Vec<(u64, (String, String))> = self
                .entries
                .iter()
                .map(|(key, (_, used))| (*used, key.clone()))
                .collect();
            by_age.sort_unstable();
            for (_, key) in by_age {
                if self.bytes <= self.capacity / 4 * 3 {
                    break;
                }
                if let Some((old, _)) = self.entries.remove(&key) {
                    self.bytes -= old.weight();
                }
            }
        }
    }

    /// Forgets the records of `collection` (it answered with rows they do not match).
    pub(crate) fn forget(&mut self, collection: &str) {
        let bytes = &mut self.bytes;
        self.entries.retain(|(c, _), (parsed, _)| {
            let keep = c != collection;
            if !keep {
                *bytes -= parsed.weight();
            }
            keep
        });
    }
}

/// One document's record as one search reads it (the read path's shared records).
struct Fetched {
    rev: u64,
    view: Rc<DocView>,
    parents_start: u32,
    parents: Vec<StoredParent>,
    children_start: u32,
    children: Vec<Rc<StoredChild>>,
}

impl Fetched {
    fn from_parsed(parsed: &Parsed) -> Fetched {
        Fetched {
            rev: parsed.rev,
            view: Rc::new(parsed.view.clone()),
            parents_start: parsed.parents_start,
            parents: parsed.parents.clone(),
            children_start: parsed.children_start,
            children: parsed.children.iter().cloned().map(Rc::new).collect(),
        }
    }

    fn child(&self, number: u32) -> Option<&Rc<StoredChild>> {
        self.children
            .get(number.checked_sub(self.children_start)? as usize)
    }

    fn parent(&self, number: u32) -> Option<&StoredParent> {
        self.parents
            .get(number.checked_sub(self.parents_start)? as usize)
    }
}

/// `folio::query::Chunks` over the records a search node fetched from a documents
/// collection: every child a ranking returns has its document fetched first
/// ([`NodeChunks::fetch`]), and expansion reads only within that document.
pub(crate) struct NodeChunks<'r> {
    remote: &'r Remote,
    collection: String,
    /// The name a failure is reported under (`QueryError::Remote`).
    source_name: &'static str,
    by_doc: RefCell<HashMap<String, Rc<Fetched>>>,
    /// Documents by their first child number, and by their first parent number.
    by_child: RefCell<BTreeMap<u32, Rc<Fetched>>>,
    by_parent: RefCell<BTreeMap<u32, Rc<Fetched>>>,
    by_rev: RefCell<HashMap<u64, Rc<Fetched>>>,
    /// Records kept across searches: looked in before Milvus is asked.
    cache: &'r Mutex<DocCache>,
    pub(crate) tally: RefCell<Tally>,
}

impl<'r> NodeChunks<'r> {
    /// The records of documents collection `collection`, those in `cache` read from it;
    /// failures are reported as `source_name`'s.
    pub(crate) fn new(
        remote: &'r Remote,
        collection: String,
        source_name: &'static str,
        cache: &'r Mutex<DocCache>,
    ) -> Self {
        NodeChunks {
            remote,
            collection,
            source_name,
            by_doc: RefCell::new(HashMap::new()),
            by_child: RefCell::new(BTreeMap::new()),
            by_parent: RefCell::new(BTreeMap::new()),
            by_rev: RefCell::new(HashMap::new()),
            cache,
            tally: RefCell::new(Tally::default()),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, DocCache> {
        // Each entry is inserted whole: a panic elsewhere leaves the cache usable.
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets what the cache holds of this collection (its rows did not match them).
    pub(crate) fn forget_cached(&self) {
        self.cache().forget(&self.collection);
    }

    fn keep(&self, id: &str, parsed: &Parsed) {
        let fetched = Rc::new(Fetched::from_parsed(parsed));
        self.by_child
            .borrow_mut()
            .insert(fetched.children_start, fetched.clone());
        self.by_parent
            .borrow_mut()
            .insert(fetched.parents_start, fetched.clone());
        self.by_rev
            .borrow_mut()
            .insert(fetched.rev, fetched.clone());
        self.by_doc.borrow_mut().insert(id.to_string(), fetched);
    }

    /// Fetches the records of the documents `doc_ids` not fetched yet. A document the
    /// collection lacks is an error (the collection is not the children collection's).
    pub(crate) fn fetch<'a>(
        &self,
        doc_ids: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), Error> {
        let missing: Vec<String> = {
            let known = self.by_doc.borrow();
            let mut seen = HashSet::new();
            doc_ids
                .into_iter()
                .filter(|d| !known.contains_key(*d) && seen.insert(*d))
                .map(str::to_string)
                .collect()
        };
        let missing: Vec<String> = missing
            .into_iter()
            .filter(|id| {
                let cached = self.cache().get(&self.collection, id);
                match cached {
                    Some(parsed) => {
                        self.keep(id, &parsed);
                        false
                    }
                    None => true,
                }
            })
            .collect();
        for ids in missing.chunks(FETCH) {
            let firsts = self.query(
                &format!(
                    "doc_id in {} and piece == 0",
                    crate::expr::string_list(ids.iter().map(String::as_str))
                ),
                ids.len(),
            )?;
            for id in ids {
                let Some((pieces, first)) = firsts.get(id) else {
                    return Err(self.lacks(&format!("document `{id}`")));
                };
                let mut data = first.clone();
                let mut next = 1;
                while next < *pieces {
                    let upto = (next + FETCH as i64).min(*pieces);
                    let more = self.pieces(id, next, upto)?;
                    for piece in next..upto {
                        let Some(part) = more.get(&piece) else {
                            return Err(self.lacks(&format!("piece {piece} of document `{id}`")));
                        };
                        data.push_str(part);
                    }
                    next = upto;
                }
                let record: Record =
                    serde_json::from_str(&data).map_err(|e| Error::Collection {
                        collection: self.collection.clone(),
                        problem: format!("the record of document `{id}` does not read: {e}"),
                    })?;
                let parsed = Arc::new(Parsed::from_record(record));
                self.keep(id, &parsed);
                self.cache().put(&self.collection, id, parsed);
            }
        }
        Ok(())
    }

    /// doc_id → (pieces, data) of the rows `filter` selects (first pieces).
    fn query(&self, filter: &str, limit: usize) -> Result<HashMap<String, (i64, String)>, Error> {
        let name = self.collection.clone();
        let client = &self.remote.client;
        let mut tally = self.tally.borrow_mut();
        self.remote.timed(&mut tally, Call::Query, &name, async {
            let response = client
                .query(
                    QueryRequest::builder()
                        .collection_name(name.as_str())
                        .filter(filter)
                        .output_fields(["doc_id", "pieces", "data"])
                        .limit(limit as i64)
                        .consistency_level(ConsistencyLevel::Strong)
                        .build()?,
                )
                .await?;
            let mut out = HashMap::new();
            for row in response.results().rows()? {
                out.insert(
                    row.get_str("doc_id")?.to_string(),
                    (row.get_i64("pieces")?, row.get_str("data")?.to_string()),
                );
            }
            Ok(out)
        })
    }

    /// piece → data of document `doc_id`'s pieces `from..upto`.
    fn pieces(&self, doc_id: &str, from: i64, upto: i64) -> Result<HashMap<i64, String>, Error> {
        let name = self.collection.clone();
        let client = &self.remote.client;
        let filter = format!(
            "doc_id == {} and piece >= {from} and piece < {upto}",
            crate::expr::string_literal(doc_id)
        );
        let mut tally = self.tally.borrow_mut();
        self.remote.timed(&mut tally, Call::Query, &name, async {
            let response = client
                .query(
                    QueryRequest::builder()
                        .collection_name(name.as_str())
                        .filter(filter)
                        .output_fields(["piece", "data"])
                        .limit(upto - from)
                        .consistency_level(ConsistencyLevel::Strong)
                        .build()?,
                )
                .await?;
            let mut out = HashMap::new();
            for row in response.results().rows()? {
                out.insert(row.get_i64("piece")?, row.get_str("data")?.to_string());
            }
            Ok(out)
        })
    }

    fn lacks(&self, what: &str) -> Error {
        Error::Collection {
            collection: self.collection.clone(),
            problem: format!(
                "holds no record of {what}: it is not the documents collection of the same publish; publish again"
            ),
        }
    }

    /// The chunk id of child `number`, by its document's record (`None` when no fetched
    /// document holds it).
    pub(crate) fn chunk_id(&self, number: u32) -> Option<String> {
        let by_child = self.by_child.borrow();
        let (_, doc) = by_child.range(..=number).next_back()?;
        let child = doc.child(number)?;
        Some(chunk_id(&doc.view.doc_id, child.ordinal))
    }

    /// Whether `filter` matches child `number` (its document fetched).
    pub(crate) fn matches(&self, filter: &folio::Filter, number: u32) -> bool {
        let by_child = self.by_child.borrow();
        let Some((_, doc)) = by_child.range(..=number).next_back() else {
            return false;
        };
        let Some(child) = doc.child(number) else {
            return false;
        };
        let view = &doc.view;
        filter.matches(&folio::filter::Attributes {
            doc_id: &view.doc_id,
            title: &view.title,
            source_uri: &view.source_uri,
            published_at: view.published_at.as_deref(),
            updated_at: view.updated_at.as_deref(),
            metadata: &view.metadata,
            section_path: &child.section_path,
        })
    }

    fn missing(&self, what: String) -> QueryError {
        QueryError::Remote {
            source_name: self.source_name.to_string(),
            error: Box::new(self.lacks(&what)),
        }
    }
}

impl Chunks for NodeChunks<'_> {
    fn child(&self, number: u32) -> Result<Rc<StoredChild>, QueryError> {
        let by_child = self.by_child.borrow();
        by_child
            .range(..=number)
            .next_back()
            .and_then(|(_, doc)| doc.child(number))
            .cloned()
            .ok_or_else(|| self.missing(format!("child {number}")))
    }

    fn parent(&self, number: u32) -> Result<StoredParent, QueryError> {
        let by_parent = self.by_parent.borrow();
        by_parent
            .range(..=number)
            .next_back()
            .and_then(|(_, doc)| doc.parent(number))
            .cloned()
            .ok_or_else(|| self.missing(format!("parent {number}")))
    }

    fn chunk_ranges(&self, child: &StoredChild) -> Result<ChunkRanges, QueryError> {
        let by_rev = self.by_rev.borrow();
        let doc = by_rev
            .get(&child.rev)
            .ok_or_else(|| self.missing(format!("revision {}", child.rev)))?;
        Ok(ChunkRanges {
            parents: doc.parents_start..doc.parents_start + doc.parents.len() as u32,
            children: doc.children_start..doc.children_start + doc.children.len() as u32,
        })
    }

    fn doc(&self, rev: u64) -> Result<Rc<DocView>, QueryError> {
        let by_rev = self.by_rev.borrow();
        by_rev
            .get(&rev)
            .map(|doc| doc.view.clone())
            .ok_or_else(|| self.missing(format!("revision {rev}")))
    }
}
