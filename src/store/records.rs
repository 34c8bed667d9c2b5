//! The values stored in the file, and their one encoding.
//!
//! Every record is bincode 2 with the configuration [`config`]: little-endian, fixed-width
//! integers (`usize` as `u64`), strings and sequences prefixed by a `u64` length, `Option` by
//! a `u8` tag, enums by a `u32` variant index. `storage-format.md` spells each record out
//! byte by byte. Decoding never panics: a malformed value becomes [`StorageError::Corrupt`].

use bincode::config::{Configuration, Fixint, Limit, LittleEndian};
use roaring::RoaringBitmap;

use super::error::StorageError;
use crate::chunk::{ChunkSpec, SourceFormat};
use crate::index::Metric;

/// No record may claim more than this many bytes; a corrupted length fails before allocating.
const MAX_RECORD: usize = 1 << 30;

type Config = Configuration<LittleEndian, Fixint, Limit<MAX_RECORD>>;

pub(crate) fn config() -> Config {
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

/// Decodes a whole value; trailing bytes are corruption too.
pub(crate) fn decode<T: bincode::Decode<()>>(bytes: &[u8], what: &str) -> Result<T, StorageError> {
    match bincode::decode_from_slice::<T, _>(bytes, config()) {
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

/// `docs` value: where the document's current revision is, and who may see it.
#[derive(Debug, Clone, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct DocEntry {
    pub rev: u64,
    pub acl: Vec<String>,
}

/// `revisions` value: one immutable revision of a document (its text is in `rev_text`).
#[derive(Debug, Clone, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub(crate) struct RevisionRecord {
    pub doc_id: String,
    pub title: String,
    pub source_uri: String,
    pub format: SourceFormat,
    pub published_at: Option<String>,
    pub updated_at: Option<String>,
    pub metadata: Vec<(String, String)>,
}

/// Who made an index's vectors: a store refuses to mix vectors of different embedders.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, bincode::Encode, bincode::Decode)]
pub struct EmbedderIdentity {
    pub name: String,
    pub fingerprint: String,
    pub dimension: u32,
    pub metric: Metric,
}

impl std::fmt::Display for EmbedderIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({} dims, {:?}, {})",
            self.name, self.dimension, self.metric, self.fingerprint
        )
    }
}

/// Graph parameters of an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, bincode::Encode, bincode::Decode)]
pub struct GraphParams {
    /// Links per node (layer 0 keeps twice as many).
    pub m: u32,
    pub ef_construction: u32,
    /// Segments with fewer vectors get no graph: an exact scan is faster there.
    pub min_graph_size: u32,
}

impl Default for GraphParams {
    fn default() -> Self {
        GraphParams {
            m: 16,
            ef_construction: 200,
            min_graph_size: 4096,
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
