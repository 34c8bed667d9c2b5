//! Named indexes over the one document set: create (built over every stored document),
//! drop, list.

use std::sync::Arc;

use redb::ReadableTableMetadata;

use crate::chunk::ChunkSpec;
use crate::document::Document;
use crate::embed::TruncationReport;
use crate::embed::{identity_of, EmbedderIdentity};
use crate::index::lexical::LexicalLanguage;
use crate::index::Metric;
use crate::limits::{check, InvalidParameter, DIMENSION, EF_CONSTRUCTION, GRAPH_M, RESCORE};
use crate::progress::{NoProgress, Progress};
use crate::storage::error::{IndexError, NameKind, ReadError, StorageError};
use crate::storage::file::records::{decode, DocEntry, IndexRecord};
use crate::storage::file::records::{now_ms, GraphParams, VectorStorage};
use crate::storage::file::rows::read_document;
use crate::storage::file::sealed::{ReadSealed, WriteSealed};
use crate::storage::file::tables::*;
use crate::storage::file::tables::{create_index_tables, empty_version};
use crate::storage::options::check_dimension;
use crate::storage::read::state::IndexState;
use crate::storage::read::targets::read_serving;
use crate::storage::write::batch::IndexBuild;
use crate::storage::write::refs::validate_name;
use crate::storage::write::writer::Writer;

/// Who makes a new index's vectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexEmbedder {
    /// An embedder registered with the store ([`crate::store::StoreBuilder::embedder`] or
    /// [`crate::Store::register_embedder`]), by name.
    Registered(String),
    /// None: every upsert brings this index's vectors ([`crate::store::Batch::upsert_with_vectors`])
    /// and text queries are refused. Only for a store without documents, since there is
    /// nothing to embed the stored ones with.
    VectorsOnly {
        /// The embedder's name, as the index records it.
        name: String,
        /// Its dimension.
        dimension: u32,
        /// How its vectors compare.
        metric: Metric,
    },
}

/// How a new index cuts, embeds and links its chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexConfig {
    /// How it cuts documents.
    pub spec: ChunkSpec,
    /// Who makes its vectors.
    pub embedder: IndexEmbedder,
    /// Its graph parameters.
    pub graph: GraphParams,
    /// Where it keeps its vectors while serving.
    pub vectors: VectorStorage,
    /// The language its lexical leg analyses texts and queries in.
    pub lexical: LexicalLanguage,
}

impl IndexConfig {
    /// Refuses a configuration the store could record but not load back, or search with:
    /// chunk sizes, graph parameters, a vectors-only dimension and a compressed index's
    /// re-score width outside [`crate::limits`].
    pub fn validate(&self) -> Result<(), InvalidParameter> {
        self.spec.validate()?;
        self.graph.validate()?;
        if let VectorStorage::Compressed { rescore } = self.vectors {
            check("rescore", rescore as usize, &RESCORE)?;
        }
        if let IndexEmbedder::VectorsOnly { dimension, .. } = self.embedder {
            check("dimension", dimension, &DIMENSION)?;
        }
        Ok(())
    }
}

impl GraphParams {
    /// Refuses `m` and `ef_construction` outside [`crate::limits::GRAPH_M`] and
    /// [`crate::limits::EF_CONSTRUCTION`] (any `min_graph_size` is fine).
    pub fn validate(&self) -> Result<(), InvalidParameter> {
        check("m", self.m, &GRAPH_M)?;
        check("ef_construction", self.ef_construction, &EF_CONSTRUCTION)?;
        Ok(())
    }
}

/// One index, as `folio index list` shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct IndexInfo {
    /// Its name.
    pub name: String,
    /// How it cuts documents.
    pub spec: ChunkSpec,
    /// Who made its vectors.
    pub embedder: EmbedderIdentity,
    /// Its graph parameters.
    pub graph: GraphParams,
    /// The newest version.
    pub head: u64,
    /// The version the bare name serves (the head unless rolled back).
    pub serving: u64,
    /// Retained versions.
    pub versions: u64,
    /// When it was created, Unix milliseconds.
    pub created_ms: u64,
    /// Where it keeps its f32 vectors: resident, or compressed with its re-score width.
    pub vectors: VectorStorage,
    /// The language its lexical leg analyses texts and queries in.
    pub lexical_language: LexicalLanguage,
}

impl Writer<'_> {
    /// Creates index `name` and builds it over every stored document as its version 1.
    pub(crate) fn create_index(&self, name: &str, config: IndexConfig) -> Result<u64, IndexError> {
        self.create_index_with(name, config, &NoProgress)
    }

    /// Like [`crate::store::Indexes::create`], reporting chunking, embedding and graph building.
    pub(crate) fn create_index_with(
        &self,
        name: &str,
        config: IndexConfig,
        progress: &dyn Progress,
    ) -> Result<u64, IndexError> {
        self.create_index_reporting(name, config, progress)
            .map(|(version, _)| version)
    }

    /// Like [`crate::store::Indexes::create_with`], also returning the token counts of the build (for
    /// an embedder with a tokenizer and an input limit).
    ///
    /// The documents are chunked and embedded before the writer lock is taken, so other
    /// writers, rollbacks and alias switches do not wait for the model; when a commit changed
    /// the documents meanwhile, the build runs again (the last time under the lock), so the
    /// index covers exactly the stored documents.
    pub(crate) fn create_index_reporting(
        &self,
        name: &str,
        config: IndexConfig,
        progress: &dyn Progress,
    ) -> Result<(u64, Option<TruncationReport>), IndexError> {
        /// Builds outside the lock before building under it.
        const UNLOCKED_TRIES: usize = 2;
        validate_name(name, NameKind::Index)?;
        config.validate()?;
        let embedder = self.new_index_embedder(name, &config.embedder)?;
        let mut attempt = 0;
        loop {
            let held = (attempt == UNLOCKED_TRIES)
                .then(|| self.lock_writer())
                .transpose()?;
            let (docs, id) = self.index_sources(name, &config)?;
            let revs: Vec<u64> = docs.iter().map(|(rev, _)| *rev).collect();
            let record = IndexRecord {
                id,
                spec: config.spec,
                embedder: embedder.clone(),
                graph: config.graph,
                head: 0,
                next_child: 0,
                next_parent: 0,
                next_segment: 0,
                created_ms: now_ms(),
                vectors: config.vectors,
                lexical: config.lexical,
            };
            let empty = Arc::new(IndexState::empty(
                name,
                record.clone(),
                &empty_version(record.created_ms),
            ));
            let documents = docs.len() as u64;
            let build = IndexBuild::prepare(self, &empty, docs, progress)?;
            let mut turn = match held {
                Some(turn) => turn,
                None => self.lock_writer()?,
            };
            if attempt < UNLOCKED_TRIES {
                attempt += 1;
                let (now, now_id) = self.index_sources(name, &config)?;
                if now_id != id || now.iter().map(|(rev, _)| *rev).ne(revs.iter().copied()) {
                    continue;
                }
            }
            let next = id.checked_add(1).ok_or_else(|| IndexError::Exhausted {
                index: name.to_string(),
                what: "index ids",
            })?;
            let report = build.report.clone();
            let txn = turn.txn()?;
            txn.open_table(META)?
                .put("next_index", next.to_le_bytes().as_slice())?;
            create_index_tables(&txn, name, &record)?;
            let state = build.write(&txn, documents)?;
            txn.commit()?;
            let version = state.head().version();
            self.install(vec![Arc::new(state)]);
            return Ok((version, report));
        }
    }

    /// The identity a new index `name` records for `embedder`.
    fn new_index_embedder(
        &self,
        name: &str,
        embedder: &IndexEmbedder,
    ) -> Result<EmbedderIdentity, IndexError> {
        match embedder {
            IndexEmbedder::Registered(embedder) => {
                let embedder =
                    self.embedder(embedder)
                        .ok_or_else(|| IndexError::EmbedderNotRegistered {
                            index: name.to_string(),
                            embedder: embedder.clone(),
                        })?;
                check_dimension(embedder.as_ref())?;
                Ok(identity_of(embedder.as_ref()))
            }
            // The dimension was checked by `IndexConfig::validate`.
            IndexEmbedder::VectorsOnly {
                name: embedder,
                dimension,
                metric,
            } => Ok(EmbedderIdentity {
                name: embedder.clone(),
                fingerprint: "vectors-only".into(),
                dimension: *dimension,
                metric: *metric,
            }),
        }
    }

    /// The stored documents a new index `name` is built over, and its id; refused when the
    /// name is taken or the index could not embed the documents.
    fn index_sources(
        &self,
        name: &str,
        config: &IndexConfig,
    ) -> Result<(Vec<(u64, Document)>, u32), IndexError> {
        if self.index(name).is_some() {
            return Err(IndexError::IndexExists {
                name: name.to_string(),
            });
        }
        let txn = self.db().begin_read()?;
        if txn.open_table(ALIASES)?.get(name)?.is_some() {
            return Err(IndexError::NameTaken {
                name: name.to_string(),
                other: NameKind::Alias,
            });
        }
        let docs = stored_documents(&txn)?;
        let id = read_next_index(&txn)?;
        if matches!(config.embedder, IndexEmbedder::VectorsOnly { .. }) && !docs.is_empty() {
            return Err(IndexError::NeedsEmbedder {
                index: name.to_string(),
                documents: docs.len(),
            });
        }
        Ok((docs, id))
    }

    /// Deletes index `name` and everything only it holds (chunks, segments, versions,
    /// bitmaps, tags, its serving pin). Documents stay; revisions only its versions used
    /// go at the next `gc`. Refused for `default` and while an alias routes to it.
    pub(crate) fn drop_index(&self, name: &str) -> Result<(), IndexError> {
        if name == DEFAULT_INDEX {
            return Err(IndexError::DefaultIndex);
        }
        let mut turn = self.lock_writer()?;
        // An index that failed to load is dropped by its id all the same.
        let id = match self.index(name) {
            Some(state) => state.id(),
            None => {
                self.unavailable(name)
                    .ok_or_else(|| IndexError::UnknownIndex {
                        name: name.to_string(),
                    })?
                    .id
            }
        };
        let txn = turn.txn()?;
        if let Some(alias) = self.aliases_of(&txn, id)?.into_iter().next() {
            return Err(IndexError::IndexInUse {
                index: name.to_string(),
                alias,
            });
        }
        txn.open_table(INDEXES)?.remove(name)?;
        txn.open_table(DOC_CHUNKS)?
            .retain_in((id, 0u64)..=(id, u64::MAX), |_, _| false)?;
        txn.open_table(PARENTS)?
            .retain_in((id, 0u32)..=(id, u32::MAX), |_, _| false)?;
        txn.open_table(CHILDREN)?
            .retain_in((id, 0u32)..=(id, u32::MAX), |_, _| false)?;
        txn.open_table(SEGMENTS)?
            .retain_in((id, 0u32)..=(id, u32::MAX), |_, _| false)?;
        txn.open_table(SEGMENT_VECTORS)?
            .retain_in((id, 0u32, 0u32)..=(id, u32::MAX, u32::MAX), |_, _| false)?;
        txn.open_table(SEGMENT_GRAPHS)?
            .retain_in((id, 0u32, 0u32)..=(id, u32::MAX, u32::MAX), |_, _| false)?;
        txn.open_table(SEGMENT_POSTINGS)?
            .retain_in((id, 0u32, 0u32)..=(id, u32::MAX, u32::MAX), |_, _| false)?;
        txn.open_table(VERSIONS)?
            .retain_in((id, 0u64)..=(id, u64::MAX), |_, _| false)?;
        txn.open_table(ACL)?
            .retain_in((id, "", 0u64)..(id.saturating_add(1), "", 0u64), |_, _| {
                false
            })?;
        txn.open_table(ACL_CURRENT)?
            .retain_in((id, "")..(id.saturating_add(1), ""), |_, _| false)?;
        crate::storage::file::current::retain_doc_runs(&txn, |index, _| index != id)?;
        txn.open_table(TAGS)?
            .retain_in((id, "")..(id.saturating_add(1), ""), |_, _| false)?;
        txn.open_table(SERVING)?.remove(id)?;
        // Its pending entries stay for the follower, which finds nothing left to apply.
        txn.open_table(PUBLISHED)?.remove(id)?;
        self.commit_deleting(txn, |indexes| {
            indexes.remove(name);
        })?;
        self.forget_unavailable(name);
        Ok(())
    }

    /// The names of the aliases with a route to index `id`.
    fn aliases_of(
        &self,
        txn: &redb::WriteTransaction,
        id: u32,
    ) -> Result<Vec<String>, StorageError> {
        let mut out = Vec::new();
        for entry in txn.open_table(ALIASES)?.all()? {
            let (name, value) = entry?;
            let record: crate::storage::file::records::AliasRecord =
                decode(value.value(), "alias record")?;
            if record.routes.iter().any(|r| r.index == id) {
                out.push(name.value().to_string());
            }
        }
        Ok(out)
    }

    /// Every index with its settings, head and number of retained versions, by name.
    pub(crate) fn list_indexes(&self) -> Result<Vec<IndexInfo>, ReadError> {
        let (txn, indexes) = self.snapshot()?;
        let versions = txn.open_table(VERSIONS)?;
        let mut out = Vec::with_capacity(indexes.len());
        for (name, state) in indexes {
            let record = state.record();
            let head = state.head().version();
            let count = versions
                .range((record.id, 0u64)..=(record.id, u64::MAX))?
                .count() as u64;
            out.push(IndexInfo {
                name,
                spec: record.spec,
                embedder: record.embedder.clone(),
                graph: record.graph,
                head,
                serving: read_serving(&txn, record.id)?.unwrap_or(head),
                versions: count,
                created_ms: record.created_ms,
                vectors: record.vectors,
                lexical_language: record.lexical,
            });
        }
        Ok(out)
    }
}

fn read_next_index(txn: &redb::ReadTransaction) -> Result<u32, StorageError> {
    let meta = txn.open_table(META)?;
    let value = meta
        .read("next_index")?
        .ok_or_else(|| StorageError::corrupt("meta next_index missing"))?;
    let bytes: [u8; 4] = value
        .value()
        .try_into()
        .map_err(|_| StorageError::corrupt("meta next_index is not 4 bytes"))?;
    Ok(u32::from_le_bytes(bytes))
}

/// Every stored document at its current revision, with its ACL, by doc_id.
fn stored_documents(txn: &redb::ReadTransaction) -> Result<Vec<(u64, Document)>, StorageError> {
    let docs = txn.open_table(DOCS)?;
    let mut out = Vec::with_capacity(docs.len()? as usize);
    for entry in docs.all()? {
        let (_, value) = entry?;
        let entry: DocEntry = decode(value.value(), "doc entry")?;
        let rev = entry.rev;
        out.push((rev, read_document(txn, entry)?));
    }
    Ok(out)
}
