//! Documents and chunks as stored, and as an index would cut a document before it is
//! written (what an application embeds itself to bring its own vectors).

use std::ops::ControlFlow;

use redb::ReadableTable;

use crate::embed::{Oversized, TokenStats, Truncation, TruncationReport};
use crate::storage::error::ReadError;
use crate::storage::file::records::ChildRecord;
use crate::storage::file::rows::{
    read_child_in, read_doc_entry, read_document, read_revision, read_text, slice_text,
};
use crate::storage::file::sealed::ReadSealed;
use crate::storage::file::tables::{CHILDREN, DOCS};
use crate::storage::read::catalog::Catalog;
use crate::storage::read::state::{self, IndexState};

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

/// The id of child chunk `ordinal` of document `doc_id`: `doc_id#c<ordinal>`, the ordinal
/// counting the document's children from 0 in source order (`doc#c3` is the fourth). What
/// [`crate::query::ChildHit::chunk_id`], [`ChunkInfo::chunk_id`] and the request log name
/// children by; the ordinal is [`crate::store::StoredChild::ordinal`].
///
/// ```
/// assert_eq!(folio::store::chunk_id("runbook", 3), "runbook#c3");
/// ```
pub fn chunk_id(doc_id: &str, ordinal: u32) -> String {
    format!("{doc_id}#c{ordinal}")
}

/// The id of parent chunk `ordinal` of document `doc_id`: `doc_id#p<ordinal>`, the ordinal
/// counting the document's parents from 0 in source order (`doc#p0` is the first). What
/// [`crate::query::Hit::parent_id`] and [`ChunkInfo::parent_id`] hold; the ordinal is
/// [`crate::store::StoredParent::ordinal`] (or a child's
/// [`crate::store::StoredChild::parent_ordinal`]).
///
/// ```
/// assert_eq!(folio::store::parent_id("runbook", 0), "runbook#p0");
/// ```
pub fn parent_id(doc_id: &str, ordinal: u32) -> String {
    format!("{doc_id}#p{ordinal}")
}

impl Catalog {
    /// The ids of the stored documents, sorted.
    pub(crate) fn document_ids(&self) -> Result<Vec<String>, ReadError> {
        let (txn, _) = self.snapshot()?;
        let table = txn.open_table(DOCS)?;
        let mut ids = Vec::new();
        for entry in table.all()? {
            ids.push(entry?.0.value().to_string());
        }
        Ok(ids)
    }

    /// The stored document `doc_id` (current revision), or `None`.
    pub(crate) fn document(
        &self,
        doc_id: &str,
    ) -> Result<Option<crate::document::Document>, ReadError> {
        let (txn, _) = self.snapshot()?;
        let Some(entry) = read_doc_entry(&txn, doc_id)? else {
            return Ok(None);
        };
        Ok(Some(read_document(&txn, entry)?))
    }

    /// Every stored document (current revision) in id order, all from one committed state,
    /// until `visit` breaks.
    pub(crate) fn for_each_document(
        &self,
        mut visit: impl FnMut(crate::document::Document) -> ControlFlow<()>,
    ) -> Result<(), ReadError> {
        let (txn, _) = self.snapshot()?;
        let table = txn.open_table(DOCS)?;
        for entry in table.iter()? {
            let (id, _) = entry?;
            let Some(doc) = read_doc_entry(&txn, id.value())? else {
                continue;
            };
            if visit(read_document(&txn, doc)?).is_break() {
                break;
            }
        }
        Ok(())
    }

    /// The child chunks of `doc_id` in index `index` (newest version), with their
    /// `embed_text`: what an application embeds itself to bring its own vectors.
    pub(crate) fn chunks(&self, index: &str, doc_id: &str) -> Result<Vec<ChunkInfo>, ReadError> {
        let (txn, states) = self.snapshot()?;
        let state = states.get(index).ok_or_else(|| {
            self.explain_unresolved(index, ReadError::UnknownIndex { name: index.into() })
        })?;
        let Some(entry) = read_doc_entry(&txn, doc_id)? else {
            return Ok(Vec::new());
        };
        let Some(chunks) = state::read_doc_chunks(&txn, state.id(), entry.rev)? else {
            return Ok(Vec::new());
        };
        let text = read_text(&txn, entry.rev)?;
        let format = read_revision(&txn, entry.rev)?.format;
        let embed =
            crate::chunk::EmbedTexts::of_document(doc_id, &text, format, &state.record().spec);
        let children = txn.open_table(CHILDREN)?;
        let mut out = Vec::with_capacity(chunks.children as usize);
        for number in chunks.child_range() {
            let child = read_child_in(&children, state.id(), number)?;
            out.push(chunk_info(state, number, doc_id, &child, &text, &embed)?);
        }
        Ok(out)
    }
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

impl Catalog {
    /// Every live chunk of `index`'s newest version counted in its embedder's own tokens
    /// (`folio stats`): `None` when the embedder is not registered, has no tokenizer or no
    /// input limit. `over` names chunks by their position in the document as stored.
    pub(crate) fn token_report(
        &self,
        index: &str,
        setting: Truncation,
    ) -> Result<Option<TruncationReport>, ReadError> {
        let state = self.index(index).ok_or_else(|| ReadError::UnknownIndex {
            name: index.to_string(),
        })?;
        let Some(embedder) = self.embedder(&state.embedder().name) else {
            return Ok(None);
        };
        let max = embedder.max_input_tokens();
        if max == usize::MAX || embedder.input_tokens(&[]).is_none() {
            return Ok(None);
        }
        let reader = self.reader()?;
        let mut doc_ids = std::collections::BTreeSet::new();
        for number in state.head().live() {
            let child = reader.child(&state, number)?;
            doc_ids.insert(reader.doc(child.rev)?.doc_id.clone());
        }
        let mut chunks = Vec::new();
        for doc_id in doc_ids {
            for (ordinal, chunk) in self.chunks(index, &doc_id)?.into_iter().enumerate() {
                chunks.push((doc_id.clone(), ordinal, chunk.embed_text));
            }
        }
        let texts: Vec<&str> = chunks.iter().map(|(_, _, t)| t.as_str()).collect();
        let mut counts = embedder.input_tokens(&texts).unwrap_or_default();
        let over = chunks
            .iter()
            .zip(&counts)
            .filter(|&(_, &n)| n > max)
            .map(|((doc_id, chunk, _), &tokens)| Oversized {
                doc_id: doc_id.clone(),
                chunk: *chunk,
                tokens,
            })
            .collect();
        Ok(Some(TruncationReport {
            index: index.to_string(),
            embedder: embedder.name().to_string(),
            max_tokens: max,
            setting,
            stats: TokenStats::of(&mut counts),
            over,
            split_into: 0,
        }))
    }
}
