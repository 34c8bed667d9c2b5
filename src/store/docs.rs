//! Documents and chunks as stored, and as an index would cut a document before it is
//! written (what an application embeds itself to bring its own vectors).

use redb::ReadableTable;

use super::error::ReadError;
use super::records::ChildRecord;
use super::rows::{
    read_child_in, read_doc_entry, read_document, read_revision, read_text, slice_text,
};
use super::state::{self, IndexState};
use super::tables::{CHILDREN, DOCS};
use super::Store;

/// One child chunk as stored, for applications and tools.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ChunkInfo {
    /// The child number in the index's newest version (a compaction gives live chunks new ones).
    pub number: u32,
    /// Its id: `doc_id#c<ordinal>`.
    pub chunk_id: String,
    /// Its parent's id: `doc_id#p<ordinal>`.
    pub parent_id: String,
    /// Its document.
    pub doc_id: String,
    /// The heading path of its section.
    pub section_path: Vec<String>,
    /// Byte span in the document's source text: start.
    pub start: usize,
    /// End of the span (exclusive).
    pub end: usize,
    /// The chunk's text: the source text of its span.
    pub text: String,
    /// What the embedder sees: the heading path, then the text.
    pub embed_text: String,
    /// Longer than the spec's target: a code block, table or row run kept whole.
    pub oversized: bool,
}

/// `doc#c3`: the id of a document's fourth child chunk.
pub(crate) fn chunk_id(doc_id: &str, ordinal: u32) -> String {
    format!("{doc_id}#c{ordinal}")
}

/// `doc#p0`: the id of a document's first parent chunk.
pub(crate) fn parent_id(doc_id: &str, ordinal: u32) -> String {
    format!("{doc_id}#p{ordinal}")
}

impl Store {
    /// The ids of the stored documents, sorted.
    pub fn document_ids(&self) -> Result<Vec<String>, ReadError> {
        let (txn, _) = self.snapshot()?;
        let table = txn.open_table(DOCS)?;
        let mut ids = Vec::new();
        for entry in table.iter()? {
            ids.push(entry?.0.value().to_string());
        }
        Ok(ids)
    }

    /// The stored document `doc_id` (current revision), or `None`.
    pub fn document(&self, doc_id: &str) -> Result<Option<crate::document::Document>, ReadError> {
        let (txn, _) = self.snapshot()?;
        let Some(entry) = read_doc_entry(&txn, doc_id)? else {
            return Ok(None);
        };
        Ok(Some(read_document(&txn, entry)?))
    }

    /// The child chunks of `doc_id` in index `index` (newest version), with their
    /// `embed_text`: what an application embeds itself to bring its own vectors.
    pub fn chunks(&self, index: &str, doc_id: &str) -> Result<Vec<ChunkInfo>, ReadError> {
        let (txn, states) = self.snapshot()?;
        let state = states
            .get(index)
            .ok_or_else(|| ReadError::UnknownIndex { name: index.into() })?;
        let Some(entry) = read_doc_entry(&txn, doc_id)? else {
            return Ok(Vec::new());
        };
        let Some(chunks) = state::read_doc_chunks(&txn, state.id(), entry.rev)? else {
            return Ok(Vec::new());
        };
        let text = read_text(&txn, entry.rev)?;
        let format = read_revision(&txn, entry.rev)?.format;
        let embed = crate::chunk::EmbedTexts::new(&text, format)
            .with_path(doc_id)
            .with_form(state.record().spec.embed_form);
        let children = txn.open_table(CHILDREN)?;
        let mut out = Vec::with_capacity(chunks.children as usize);
        for number in chunks.child_range() {
            let child = read_child_in(&children, state.id(), number)?;
            out.push(chunk_info(state, number, doc_id, &child, &text, &embed)?);
        }
        Ok(out)
    }
}

impl Store {
    /// How index `index` would cut `doc` into parents and children, as a commit would store
    /// it (chunks longer than the index's model reads split, see
    /// [`super::StoreBuilder::truncation`]).
    pub fn plan_chunked(
        &self,
        index: &str,
        doc: &crate::document::Document,
    ) -> Result<crate::chunk::Chunked, ReadError> {
        let state = self
            .index(index)
            .ok_or_else(|| ReadError::UnknownIndex { name: index.into() })?;
        Ok(super::prepare::plan_chunks(self, state.record(), doc)?)
    }

    /// How index `index` would chunk `doc`: its child chunks with their `embed_text`, in the
    /// order [`Batch::upsert_with_vectors`](crate::Batch::upsert_with_vectors) expects vectors
    /// (chunks longer than the index's model reads already split). Nothing is written.
    pub fn plan(
        &self,
        index: &str,
        doc: &crate::document::Document,
    ) -> Result<Vec<PlannedChunk>, ReadError> {
        let state = self
            .index(index)
            .ok_or_else(|| ReadError::UnknownIndex { name: index.into() })?;
        let spec = state.record().spec;
        let chunked = self.plan_chunked(index, doc)?;
        let embed = crate::chunk::EmbedTexts::new(&doc.text, doc.format)
            .with_path(&doc.doc_id)
            .with_form(spec.embed_form);
        Ok(chunked
            .children
            .iter()
            .enumerate()
            .map(|(ordinal, c)| PlannedChunk {
                chunk_id: chunk_id(&doc.doc_id, ordinal as u32),
                start: c.span.start,
                end: c.span.end,
                pages: crate::chunk::pages(&doc.text, doc.format, c.span),
                embed_text: embed.get(&c.section_path, c.span, spec.heading_depth),
            })
            .collect())
    }
}

/// A child chunk an index would create, before anything is written.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PlannedChunk {
    /// Its id: `doc_id#c<ordinal>`.
    pub chunk_id: String,
    /// Byte span in the document's source text: start.
    pub start: usize,
    /// End of the span (exclusive).
    pub end: usize,
    /// The pages its span lies on, for documents with pages (PDF).
    pub pages: Option<crate::chunk::Pages>,
    /// What the embedder would see: the heading path, then the text.
    pub embed_text: String,
}

fn chunk_info(
    state: &IndexState,
    number: u32,
    doc_id: &str,
    child: &ChildRecord,
    text: &str,
    embed: &crate::chunk::EmbedTexts<'_>,
) -> Result<ChunkInfo, ReadError> {
    let body = slice_text(text, child.start, child.end)?.to_string();
    let span = crate::chunk::Span {
        start: child.start as usize,
        end: child.end as usize,
    };
    let embed_text = embed.get(&child.section_path, span, state.record().spec.heading_depth);
    Ok(ChunkInfo {
        number,
        chunk_id: chunk_id(doc_id, child.ordinal),
        parent_id: parent_id(doc_id, child.parent_ordinal),
        doc_id: doc_id.to_string(),
        section_path: child.section_path.clone(),
        start: child.start as usize,
        end: child.end as usize,
        text: body,
        embed_text,
        oversized: child.oversized,
    })
}
