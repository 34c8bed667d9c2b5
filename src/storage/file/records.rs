//! The values stored in the file, and their one encoding.
//!
//! Every record is bincode 2 with the configuration [`config`]: little-endian, variable-width
//! integers (one byte below 251, else a marker byte 251/252/253 and a `u16`/`u32`/`u64`;
//! `usize` as `u64`), strings and sequences prefixed by their length as such an integer,
//! `Option` by a `u8` tag, enums by their variant index as such an integer, `f32` as 4
//! bytes. `storage-format.md` spells each record out byte by byte. Decoding never panics:
//! a malformed value becomes [`StorageError::Corrupt`].
//!
//! Files of format versions 1 and 2 stored the same records with fixed-width integers
//! ([`legacy_config`]); `upgrade.rs` re-encodes them when such a file is opened.

use bincode::config::{Configuration, Fixint, Limit, LittleEndian, Varint};
use roaring::RoaringBitmap;

use crate::chunk::{ChildStrategy, ChunkSpec, EmbedForm, ParentStrategy, SourceFormat};
use crate::embed::EmbedderIdentity;
use crate::filter::MetadataValue;
use crate::index::lexical::LexicalLanguage;
use crate::index::{DEFAULT_EF_CONSTRUCTION, DEFAULT_M};
use crate::input::{FileRoot, Outside};
use crate::storage::error::StorageError;

/// No record may claim more than this many bytes; a corrupted length fails before allocating.
const MAX_RECORD: usize = 1 << 30;

type Config = Configuration<LittleEndian, Varint, Limit<MAX_RECORD>>;
type LegacyConfig = Configuration<LittleEndian, Fixint, Limit<MAX_RECORD>>;

/// The record encoding of format version 3.
pub(crate) fn config() -> Config {
    bincode::config::standard()
        .with_little_endian()
        .with_variable_int_encoding()
        .with_limit::<MAX_RECORD>()
}

/// The record encoding of format versions 1 and 2: fixed-width integers (`u32` 4 bytes,
/// `u64`/`usize` and every length 8, enum variant indexes 4). Only read, to upgrade.
pub(crate) fn legacy_config() -> LegacyConfig {
    bincode::config::standard()
        .with_little_endian()
        .with_fixed_int_encoding()
        .with_limit::<MAX_RECORD>()
}

pub(crate) fn encode<T: bincode::Encode>(value: &T) -> Vec<u8> {
    // Encoding into a Vec cannot fail for these plain types: no I/O, no size limit reached
    // by values folio builds itself.
    bincode::encode_to_vec(value, config()).unwrap_or_default()
}

/// A version number as `tags` and `serving` store it (u64 LE).
pub(crate) fn decode_u64(bytes: &[u8], what: &str) -> Result<u64, StorageError> {
    let bytes: [u8; 8] = bytes
        .try_into()
        .map_err(|_| StorageError::corrupt(format!("{what} is not 8 bytes")))?;
    Ok(u64::from_le_bytes(bytes))
}

/// Decodes a whole value; trailing bytes are corruption too.
pub(crate) fn decode<T: bincode::Decode<()>>(bytes: &[u8], what: &str) -> Result<T, StorageError> {
    decode_with(bytes, what, config())
}

/// Decodes a whole value written by format version 1 or 2 ([`legacy_config`]).
pub(crate) fn decode_legacy<T: bincode::Decode<()>>(
    bytes: &[u8],
    what: &str,
) -> Result<T, StorageError> {
    decode_with(bytes, what, legacy_config())
}

fn decode_with<T: bincode::Decode<()>, C: bincode::config::Config>(
    bytes: &[u8],
    what: &str,
    config: C,
) -> Result<T, StorageError> {
    match bincode::decode_from_slice::<T, _>(bytes, config) {
        Ok((value, used)) if used == bytes.len() => Ok(value),
        Ok(_) => Err(StorageError::corrupt(format!("{what}: trailing bytes"))),
        Err(e) => Err(StorageError::corrupt(format!("{what}: {e}"))),
    }
}

pub(crate) fn encode_bitmap(bitmap: &RoaringBitmap) -> Vec<u8> {
    let mut out = Vec::with_capacity(bitmap.serialized_size());
    // Writing into a Vec cannot fail.
    let _ = bitmap.serialize_into(&mut out);
    out
}

pub(crate) fn decode_bitmap(bytes: &[u8], what: &str) -> Result<RoaringBitmap, StorageError> {
    RoaringBitmap::deserialize_from(bytes)
        .map_err(|e| StorageError::corrupt(format!("{what}: bad bitmap: {e}")))
}

/// `meta.file_root`: the rule for files outside the root (`0` refused, `1` absolute ids),
/// then the root's path in UTF-8; `None` for a path that is not UTF-8.
/// Which versions a garbage collection keeps besides the head and every version a tag,
/// alias route or serving pin names: the retention policy a store applies after each
/// commit ([`crate::Store::set_retention`]) or one `gc` call's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Retention {
    /// Nothing is collected unless someone runs `gc` (the default).
    #[default]
    Off,
    /// The newest this many versions of each index.
    KeepLast(usize),
    /// Every version made less than this long ago.
    YoungerThan(std::time::Duration),
}

impl Retention {
    /// The policy's `meta` value (`storage-format.md`, "Retention"); `None` for
    /// [`Retention::Off`], which is the key's absence.
    pub(crate) fn encode(self) -> Option<[u8; 9]> {
        let (kind, amount) = match self {
            Retention::Off => return None,
            Retention::KeepLast(n) => (1u8, n as u64),
            Retention::YoungerThan(age) => (2, u64::try_from(age.as_millis()).unwrap_or(u64::MAX)),
        };
        let mut out = [0u8; 9];
        out[0] = kind;
        out[1..].copy_from_slice(&amount.to_le_bytes());
        Some(out)
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Retention, StorageError> {
        let bad = || StorageError::corrupt("meta retention: not a policy");
        let (&kind, amount) = bytes.split_first().ok_or_else(bad)?;
        let amount = u64::from_le_bytes(amount.try_into().map_err(|_| bad())?);
        match kind {
            1 => Ok(Retention::KeepLast(
                usize::try_from(amount).unwrap_or(usize::MAX),
            )),
            2 => Ok(Retention::YoungerThan(std::time::Duration::from_millis(
                amount,
            ))),
            _ => Err(bad()),
        }
    }
}

pub(crate) fn encode_file_root(root: &FileRoot) -> Option<Vec<u8>> {
    let rule = match root.outside {
        Outside::Refused => 0u8,
        Outside::AbsoluteId => 1,
    };
    let path = root.path.to_str()?;
    let mut out = Vec::with_capacity(1 + path.len());
    out.push(rule);
    out.extend_from_slice(path.as_bytes());
    Some(out)
}

pub(crate) fn decode_file_root(bytes: &[u8]) -> Result<FileRoot, StorageError> {
    let bad = |why: &str| StorageError::corrupt(format!("meta file_root: {why}"));
    let (&rule, path) = bytes.split_first().ok_or_else(|| bad("empty"))?;
    let outside = match rule {
        0 => Outside::Refused,
        1 => Outside::AbsoluteId,
        other => return Err(bad(&format!("unknown rule {other}"))),
    };
    let path = std::str::from_utf8(path).map_err(|_| bad("not UTF-8"))?;
    Ok(FileRoot {
        path: path.into(),
        outside,
    })
}

/// The time records carry (`created_ms`, `time_ms`): Unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// `docs` value: where the document's current revision is, who may see it, and every
/// child number it has in each index since it was last created (format 4).
#[derive(Debug, Clone, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct DocEntry {
    pub rev: u64,
    pub acl: Vec<String>,
    /// Per index (by id, ascending), the runs of child numbers of every revision of this
    /// document since its last creation, compaction copies included: what a delete or an
    /// ACL change must withdraw from older versions too (see `current.rs`).
    pub children: Vec<IndexChildren>,
}

/// The child numbers one document has in one index: runs in increasing order.
#[derive(Debug, Clone, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct IndexChildren {
    pub index: u32,
    pub runs: Vec<ChildRun>,
}

/// Children `first..first + count`: one revision's children, as first written or as a
/// compaction copied them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct ChildRun {
    pub first: u32,
    pub count: u32,
}

impl ChildRun {
    pub fn range(self) -> std::ops::Range<u32> {
        self.first..self.first.saturating_add(self.count)
    }
}

impl IndexRecord {
    /// What ingest needs of this index.
    pub(crate) fn model(&self) -> crate::ingest::IndexModel {
        crate::ingest::IndexModel {
            id: self.id,
            spec: self.spec,
            embedder: self.embedder.clone(),
        }
    }
}

impl DocEntry {
    /// Every child number the document has in index `index`.
    pub fn children_in(&self, index: u32) -> RoaringBitmap {
        let mut out = RoaringBitmap::new();
        for run in self.runs(index) {
            out.insert_range(run.range());
        }
        out
    }

    /// The runs of index `index` (none when the document has no children there).
    pub fn runs(&self, index: u32) -> &[ChildRun] {
        self.children
            .iter()
            .find(|c| c.index == index)
            .map_or(&[], |c| c.runs.as_slice())
    }

    /// Records new children `run` in index `index` (numbers only grow, so it goes last).
    pub fn add_run(&mut self, index: u32, run: ChildRun) {
        if run.count == 0 {
            return;
        }
        match self.children.iter_mut().find(|c| c.index == index) {
            Some(c) => c.runs.push(run),
            None => {
                self.children.push(IndexChildren {
                    index,
                    runs: vec![run],
                });
                self.children.sort_by_key(|c| c.index);
            }
        }
    }

    /// Keeps the runs that `keep(index, run)` accepts; returns whether any went.
    pub fn retain_runs(&mut self, keep: impl Fn(u32, ChildRun) -> bool) -> bool {
        let before = self.children.clone();
        for c in &mut self.children {
            c.runs.retain(|r| keep(c.index, *r));
        }
        self.children.retain(|c| !c.runs.is_empty());
        before != self.children
    }
}

/// `docs` value of formats 1 to 3: without the child runs. Only read, to upgrade.
#[derive(Debug, Clone, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct DocEntryV3 {
    pub rev: u64,
    pub acl: Vec<String>,
}

/// `revisions` value: one immutable revision of a document (its text is in `rev_text`).
/// Format 5 typed the metadata values.
pub(crate) type RevisionRecord = Revision<StoredValue>;

/// `revisions` value of formats 1 to 4: metadata values were strings. Only read, to upgrade.
pub(crate) type RevisionRecordV4 = Revision<String>;

/// A revision record, whatever its metadata values are.
#[derive(Debug, Clone, PartialEq, bincode::Encode, bincode::Decode)]
pub(crate) struct Revision<V> {
    pub doc_id: String,
    pub title: String,
    pub source_uri: String,
    pub format: SourceFormat,
    pub published_at: Option<String>,
    pub updated_at: Option<String>,
    pub metadata: Vec<(String, V)>,
}

impl From<RevisionRecordV4> for RevisionRecord {
    /// Old values stay strings: typing them now could change what a filter matched.
    fn from(old: RevisionRecordV4) -> Self {
        Revision {
            doc_id: old.doc_id,
            title: old.title,
            source_uri: old.source_uri,
            format: old.format,
            published_at: old.published_at,
            updated_at: old.updated_at,
            metadata: old
                .metadata
                .into_iter()
                .map(|(k, v)| (k, StoredValue::String(v)))
                .collect(),
        }
    }
}

/// A metadata value as stored (format 5). Its variant order is pinned: append only.
#[derive(Debug, Clone, PartialEq, bincode::Encode, bincode::Decode)]
pub(crate) enum StoredValue {
    String(String),
    Number(f64),
    Bool(bool),
    /// Unix milliseconds, UTC.
    Date(i64),
    List(Vec<String>),
}

impl From<&MetadataValue> for StoredValue {
    fn from(value: &MetadataValue) -> Self {
        match value {
            MetadataValue::String(s) => StoredValue::String(s.clone()),
            MetadataValue::Number(x) => StoredValue::Number(*x),
            MetadataValue::Bool(b) => StoredValue::Bool(*b),
            MetadataValue::Date(ms) => StoredValue::Date(*ms),
            MetadataValue::List(items) => StoredValue::List(items.clone()),
        }
    }
}

impl From<StoredValue> for MetadataValue {
    fn from(value: StoredValue) -> Self {
        match value {
            StoredValue::String(s) => MetadataValue::String(s),
            StoredValue::Number(x) => MetadataValue::Number(x),
            StoredValue::Bool(b) => MetadataValue::Bool(b),
            StoredValue::Date(ms) => MetadataValue::Date(ms),
            StoredValue::List(items) => MetadataValue::List(items),
        }
    }
}

/// Graph parameters of an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, bincode::Encode, bincode::Decode)]
pub struct GraphParams {
    /// Links per node (layer 0 keeps twice as many).
    pub m: u32,
    /// Candidates kept while linking a new node: more is a better graph, built slower.
    pub ef_construction: u32,
    /// Segments with fewer vectors get no graph: an exact scan is faster there.
    pub min_graph_size: u32,
}

/// Segments of fewer vectors get no graph, by default.
pub const DEFAULT_MIN_GRAPH_SIZE: u32 = 4096;

/// [`DEFAULT_M`], [`DEFAULT_EF_CONSTRUCTION`] and [`DEFAULT_MIN_GRAPH_SIZE`].
impl Default for GraphParams {
    fn default() -> Self {
        GraphParams {
            m: DEFAULT_M,
            ef_construction: DEFAULT_EF_CONSTRUCTION,
            min_graph_size: DEFAULT_MIN_GRAPH_SIZE,
        }
    }
}

/// Where an index keeps its f32 vectors while it serves searches.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, bincode::Encode, bincode::Decode,
)]
pub enum VectorStorage {
    /// In memory beside the graph (the default): walks score 8-bit codes and every
    /// candidate is re-scored on its f32 row.
    #[default]
    Resident,
    /// Compressed, for sets larger than memory: only the graph's links and 8-bit codes are
    /// held; the f32 rows stay in the file and are read for the best `rescore` candidates
    /// of a walk (at least `k`) and for exact scans. Segments too small for a graph stay
    /// resident.
    Compressed {
        /// Candidates re-scored on their f32 rows ([`DEFAULT_RESCORE`]).
        rescore: u32,
    },
}

/// [`VectorStorage::Compressed`]'s re-score width by default.
pub const DEFAULT_RESCORE: u32 = 40;

impl VectorStorage {
    /// Compressed with [`DEFAULT_RESCORE`].
    pub fn compressed() -> Self {
        VectorStorage::Compressed {
            rescore: DEFAULT_RESCORE,
        }
    }
}

/// `indexes` value.
#[derive(Debug, Clone, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct IndexRecord {
    pub id: u32,
    pub spec: ChunkSpec,
    pub embedder: EmbedderIdentity,
    pub graph: GraphParams,
    /// The newest committed version.
    pub head: u64,
    pub next_child: u32,
    pub next_parent: u32,
    pub next_segment: u32,
    pub created_ms: u64,
    /// Format 8.
    pub vectors: VectorStorage,
    /// The language its lexical postings are analysed in (format 10).
    pub lexical: LexicalLanguage,
}

/// `indexes` value of formats 8 and 9: [`IndexRecord`] without `lexical` ([`LexicalLanguage::Auto`]).
/// Only read, to upgrade.
#[derive(Debug, Clone, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct IndexRecordV9 {
    pub id: u32,
    pub spec: ChunkSpec,
    pub embedder: EmbedderIdentity,
    pub graph: GraphParams,
    pub head: u64,
    pub next_child: u32,
    pub next_parent: u32,
    pub next_segment: u32,
    pub created_ms: u64,
    pub vectors: VectorStorage,
}

impl From<IndexRecordV9> for IndexRecord {
    fn from(old: IndexRecordV9) -> Self {
        IndexRecord {
            id: old.id,
            spec: old.spec,
            embedder: old.embedder,
            graph: old.graph,
            head: old.head,
            next_child: old.next_child,
            next_parent: old.next_parent,
            next_segment: old.next_segment,
            created_ms: old.created_ms,
            vectors: old.vectors,
            lexical: LexicalLanguage::Auto,
        }
    }
}

/// `indexes` value of format 7: [`IndexRecord`] without `vectors` (resident). Only read,
/// to upgrade.
#[derive(Debug, Clone, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct IndexRecordV7 {
    pub id: u32,
    pub spec: ChunkSpec,
    pub embedder: EmbedderIdentity,
    pub graph: GraphParams,
    pub head: u64,
    pub next_child: u32,
    pub next_parent: u32,
    pub next_segment: u32,
    pub created_ms: u64,
}

impl From<IndexRecordV7> for IndexRecordV9 {
    fn from(old: IndexRecordV7) -> Self {
        IndexRecordV9 {
            id: old.id,
            spec: old.spec,
            embedder: old.embedder,
            graph: old.graph,
            head: old.head,
            next_child: old.next_child,
            next_parent: old.next_parent,
            next_segment: old.next_segment,
            created_ms: old.created_ms,
            vectors: VectorStorage::Resident,
        }
    }
}

/// The `indexes` value of formats 1 to 6, whose spec had no `embed_form`. Only read, to
/// upgrade.
#[derive(Debug, Clone, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct IndexRecordV6 {
    pub id: u32,
    pub spec: ChunkSpecV6,
    pub embedder: EmbedderIdentity,
    pub graph: GraphParams,
    pub head: u64,
    pub next_child: u32,
    pub next_parent: u32,
    pub next_segment: u32,
    pub created_ms: u64,
}

/// `ChunkSpec` of formats 1 to 6: those builds embedded [`EmbedForm::PathPrefix`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct ChunkSpecV6 {
    pub child: ChildStrategy,
    pub parent: ParentStrategy,
    pub heading_depth: usize,
}

impl From<IndexRecordV6> for IndexRecordV7 {
    fn from(old: IndexRecordV6) -> Self {
        let ChunkSpecV6 {
            child,
            parent,
            heading_depth,
        } = old.spec;
        IndexRecordV7 {
            id: old.id,
            spec: ChunkSpec {
                child,
                parent,
                heading_depth,
                embed_form: EmbedForm::PathPrefix,
            },
            embedder: old.embedder,
            graph: old.graph,
            head: old.head,
            next_child: old.next_child,
            next_parent: old.next_parent,
            next_segment: old.next_segment,
            created_ms: old.created_ms,
        }
    }
}

/// `doc_chunks` value: the contiguous chunk numbers one revision got in one index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct DocChunks {
    pub first_parent: u32,
    pub parents: u32,
    pub first_child: u32,
    pub children: u32,
}

impl DocChunks {
    pub fn child_range(&self) -> std::ops::Range<u32> {
        self.first_child..self.first_child + self.children
    }
}

/// `parents` value.
#[derive(Debug, Clone, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct ParentRecord {
    pub rev: u64,
    pub ordinal: u32,
    pub start: u64,
    pub end: u64,
    pub section_path: Vec<String>,
}

/// `children` value.
#[derive(Debug, Clone, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct ChildRecord {
    pub parent: u32,
    /// The parent's ordinal within the document, so ids print without another read.
    pub parent_ordinal: u32,
    pub rev: u64,
    pub ordinal: u32,
    pub start: u64,
    pub end: u64,
    pub section_path: Vec<String>,
    pub oversized: bool,
}

/// `segments` value: an immutable run of child vectors with ids `base..base + count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct SegmentRecord {
    pub base: u32,
    pub count: u32,
    pub dimension: u32,
    pub vector_blocks: u32,
    /// 0 when the segment has no graph.
    pub graph_blocks: u32,
}

/// `versions` value: everything a version answers from.
#[derive(Debug, Clone, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct VersionRecord {
    pub segments: Vec<u32>,
    /// Roaring bitmap (portable serialisation) of the live child numbers.
    pub live: Vec<u8>,
    pub created_ms: u64,
    /// What made this version, e.g. "ingest 3, delete 1".
    pub change: String,
    pub documents: u64,
}

/// `aliases` value: where an alias sends queries. One route takes all traffic; several
/// split it by weight (the weights sum to 100).
#[derive(Debug, Clone, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct AliasRecord {
    pub routes: Vec<AliasRoute>,
}

/// One target of an alias: a version of an index (by id) and its share of traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct AliasRoute {
    pub index: u32,
    pub version: u64,
    /// Percent of the keys routed here, 1..=100.
    pub weight: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Metric;

    /// The byte layout `storage-format.md` documents.
    #[test]
    fn records_use_the_documented_varint_layout() {
        let cases: [(u64, &[u8]); 8] = [
            (0, &[0]),
            (250, &[250]),
            (251, &[251, 251, 0]),
            (65_535, &[251, 255, 255]),
            (65_536, &[252, 0, 0, 1, 0]),
            (u32::MAX as u64, &[252, 255, 255, 255, 255]),
            (1 << 32, &[253, 0, 0, 0, 0, 1, 0, 0, 0]),
            (u64::MAX, &[253, 255, 255, 255, 255, 255, 255, 255, 255]),
        ];
        for (value, bytes) in cases {
            assert_eq!(encode(&value), bytes, "{value}");
            assert_eq!(decode::<u64>(bytes, "u64").expect("decodes"), value);
        }
        assert_eq!(encode(&300u32), [251, 44, 1]);
        assert_eq!(encode(&300usize), [251, 44, 1]);
        assert_eq!(encode(&String::from("ab")), [2, b'a', b'b']);
        assert_eq!(encode(&vec![1u32, 2]), [2, 1, 2]);
        assert_eq!(encode(&Some(true)), [1, 1]);
        assert_eq!(encode(&Metric::L2), [2]);
        assert_eq!(encode(&1.5f32), 1.5f32.to_le_bytes());
        let child = sample_child();
        let bytes = encode(&child);
        assert_eq!(bytes, [7, 0, 251, 232, 3, 3, 0, 251, 44, 1, 1, 1, b'A', 0]);
        assert_eq!(
            decode::<ChildRecord>(&bytes, "child").expect("decodes"),
            child
        );
    }

    /// The `DocEntry` bytes `storage-format.md` shows, and the run bookkeeping.
    #[test]
    fn doc_entries_list_their_child_runs() {
        let mut entry = DocEntry {
            rev: 9,
            acl: vec!["eng".into()],
            children: Vec::new(),
        };
        entry.add_run(
            0,
            ChildRun {
                first: 300,
                count: 2,
            },
        );
        entry.add_run(
            0,
            ChildRun {
                first: 400,
                count: 0,
            },
        );
        let bytes = encode(&entry);
        assert_eq!(bytes, [9, 1, 3, b'e', b'n', b'g', 1, 0, 1, 251, 44, 1, 2]);
        assert_eq!(
            decode::<DocEntry>(&bytes, "doc entry").expect("decodes"),
            entry
        );
        entry.add_run(2, ChildRun { first: 7, count: 1 });
        entry.add_run(1, ChildRun { first: 5, count: 3 });
        entry.add_run(
            0,
            ChildRun {
                first: 500,
                count: 1,
            },
        );
        let indexes: Vec<u32> = entry.children.iter().map(|c| c.index).collect();
        assert_eq!(indexes, [0, 1, 2]);
        assert_eq!(
            entry.children_in(0).iter().collect::<Vec<_>>(),
            [300, 301, 500]
        );
        assert_eq!(entry.children_in(1).len(), 3);
        assert!(entry.retain_runs(|index, run| index != 1 && run.first != 300));
        assert!(!entry.retain_runs(|_, _| true));
        assert_eq!(entry.children.len(), 2);
        assert_eq!(entry.children_in(0).iter().collect::<Vec<_>>(), [500]);
        // A format 3 entry is the first two fields.
        let v3 = encode(&DocEntryV3 {
            rev: 9,
            acl: vec!["eng".into()],
        });
        assert_eq!(v3, bytes[..6]);
        assert!(decode::<DocEntry>(&v3, "doc entry").is_err());
    }

    /// The `StoredValue` bytes `storage-format.md` shows, and the format 4 revision read
    /// as a format 5 one with string values.
    #[test]
    fn metadata_values_use_the_documented_layout() {
        let tier = (String::from("tier"), StoredValue::Number(2.0));
        assert_eq!(
            encode(&tier),
            [4, b't', b'i', b'e', b'r', 1, 0, 0, 0, 0, 0, 0, 0, 0x40]
        );
        let day = (String::from("d"), StoredValue::Date(86_400_000));
        assert_eq!(encode(&day), [1, b'd', 3, 252, 0x00, 0xB8, 0x4C, 0x0A]);
        assert_eq!(encode(&StoredValue::Date(-1)), [3, 1]);
        let old = RevisionRecordV4 {
            doc_id: "a".into(),
            title: String::new(),
            source_uri: String::new(),
            format: SourceFormat::Markdown,
            published_at: None,
            updated_at: Some("2024-01-01".into()),
            metadata: vec![("k".into(), "2024-01-01".into())],
        };
        let new = RevisionRecord::from(old.clone());
        assert_eq!(
            new.metadata,
            [("k".to_string(), StoredValue::String("2024-01-01".into()))]
        );
        assert_eq!(new.updated_at, old.updated_at);
        // Format 4 bytes are no format 5 record (here the string length reads as no variant).
        assert!(decode::<RevisionRecord>(&encode(&old), "revision").is_err());
        assert_eq!(
            decode::<RevisionRecord>(&encode(&new), "revision").expect("decodes"),
            new
        );
    }

    /// Formats 1 and 2 wrote fixed-width integers; only `decode_legacy` reads them.
    /// A child record with small and multi-byte integers and one section.
    fn sample_child() -> ChildRecord {
        ChildRecord {
            parent: 7,
            parent_ordinal: 0,
            rev: 1000,
            ordinal: 3,
            start: 0,
            end: 300,
            section_path: vec!["A".into()],
            oversized: false,
        }
    }

    #[test]
    fn legacy_records_decode_with_the_legacy_config_only() {
        let child = sample_child();
        let legacy = bincode::encode_to_vec(&child, legacy_config()).expect("encodes");
        // section_path: a u64 count, then one string: a u64 length and its byte.
        assert_eq!(legacy.len(), 4 + 4 + 8 + 4 + 8 + 8 + (8 + 8 + 1) + 1);
        assert_eq!(
            decode_legacy::<ChildRecord>(&legacy, "child").expect("decodes"),
            child
        );
        assert!(decode::<ChildRecord>(&legacy, "child").is_err());
        assert!(decode_legacy::<ChildRecord>(&encode(&child), "child").is_err());
    }
}
