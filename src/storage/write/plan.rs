//! How an index would cut a document before it is written: what an application embeds
//! itself to bring its own vectors.

use crate::ingest::plan_chunks;
use crate::storage::error::ReadError;
use crate::storage::read::docs::chunk_id;
use crate::storage::write::writer::Writer;

impl Writer<'_> {
    /// How index `index` would cut `doc` into parents and children, as a commit would store
    /// it (chunks longer than the index's model reads split, see
    /// [`crate::store::StoreBuilder::truncation`]).
    pub(crate) fn plan_chunked(
        &self,
        index: &str,
        doc: &crate::document::Document,
    ) -> Result<crate::chunk::Chunked, ReadError> {
        let state = self
            .index(index)
            .ok_or_else(|| ReadError::UnknownIndex { name: index.into() })?;
        Ok(plan_chunks(
            &self.models(state.record()),
            &state.record().model(),
            doc,
        )?)
    }

    /// How index `index` would chunk `doc`: its child chunks with their `embed_text`, in the
    /// order [`Batch::upsert_with_vectors`](crate::Batch::upsert_with_vectors) expects vectors
    /// (chunks longer than the index's model reads already split). Nothing is written.
    pub(crate) fn plan(
        &self,
        index: &str,
        doc: &crate::document::Document,
    ) -> Result<Vec<PlannedChunk>, ReadError> {
        let state = self
            .index(index)
            .ok_or_else(|| ReadError::UnknownIndex { name: index.into() })?;
        let spec = state.record().spec;
        let chunked = self.plan_chunked(index, doc)?;
        let embed =
            crate::chunk::EmbedTexts::of_document(&doc.doc_id, &doc.text, doc.format, &spec);
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
