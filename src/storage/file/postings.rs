//! Each segment's lexical postings in the file (format 10): a [`LexicalSegment`] built
//! from its children's texts in the transaction that writes the segment, stored in blocks
//! of its codec's bytes (`index/lexical/codec.rs`), immutable and removed with the segment.
//!
//! A child's text is the one a hit shows: the document's source text over the child's span,
//! an HTML or PDF span as its visible text ([`crate::chunk::visible_text_of`]), without the
//! heading path its embedded text carries (re-chunking to get it back would cost a cut of
//! every document).

use std::ops::Range;

use redb::{ReadTransaction, WriteTransaction};

use crate::chunk::{visible_text_of, SourceFormat};
use crate::index::lexical::{Analyzer, LexicalSegment};
use crate::storage::error::StorageError;
use crate::storage::file::records::{decode, ChildRecord, IndexRecord, RevisionRecord};
use crate::storage::file::sealed::{ReadSealed, WriteSealed};
use crate::storage::file::tables::{CHILDREN, REVISIONS, REV_TEXT, SEGMENT_POSTINGS};

/// Postings blocks stay under 1 MiB, as vector and graph blocks do (`segment.rs`).
const BLOCK_BYTES: usize = (1 << 20) - 4096;

/// Builds the postings of the children `ids` of `index` (those that still have a record:
/// `gc` removes only children dead in every retained version) from the texts in `txn`, and
/// writes them as segment `segment`'s.
pub(crate) fn write_postings(
    txn: &WriteTransaction,
    index: &IndexRecord,
    segment: u32,
    ids: Range<u32>,
) -> Result<LexicalSegment, StorageError> {
    let texts = child_texts(txn, index.id, ids)?;
    let built = LexicalSegment::build(
        texts.iter().map(|(number, text)| (*number, text.as_str())),
        &Analyzer::new(index.lexical),
    )
    .map_err(|e| StorageError::corrupt(format!("segment {segment} postings: {e}")))?;
    let bytes = built.to_bytes();
    let mut table = txn.open_table(SEGMENT_POSTINGS)?;
    for (block, piece) in (0u32..).zip(bytes.chunks(BLOCK_BYTES)) {
        table.put((index.id, segment, block), piece)?;
    }
    Ok(built)
}

/// Segment `segment`'s postings as stored: its blocks, numbered from 0 without a gap,
/// decoded and checked by the codec (a missing last block shows as a cut segment).
pub(crate) fn read_postings(
    txn: &ReadTransaction,
    index: u32,
    segment: u32,
) -> Result<LexicalSegment, StorageError> {
    let table = txn.open_table(SEGMENT_POSTINGS)?;
    let mut bytes = Vec::new();
    let mut blocks = 0u32;
    for entry in table.rows((index, segment, 0u32)..=(index, segment, u32::MAX))? {
        let (key, value) = entry?;
        if key.value().2 != blocks {
            return Err(StorageError::corrupt(format!(
                "segment {segment} postings block {blocks} missing"
            )));
        }
        bytes.extend_from_slice(value.value());
        blocks += 1;
    }
    if blocks == 0 {
        return Err(StorageError::corrupt(format!(
            "segment {segment} postings missing"
        )));
    }
    LexicalSegment::from_bytes(&bytes)
        .map_err(|e| StorageError::corrupt(format!("segment {segment} postings: {e}")))
}

/// The texts of the children `ids` of `index` that have a record, in child order.
fn child_texts(
    txn: &WriteTransaction,
    index: u32,
    ids: Range<u32>,
) -> Result<Vec<(u32, String)>, StorageError> {
    let children = txn.open_table(CHILDREN)?;
    let revisions = txn.open_table(REVISIONS)?;
    let texts = txn.open_table(REV_TEXT)?;
    let mut out = Vec::with_capacity(ids.len());
    // A revision's children are contiguous, so its text is read once for all of them.
    let mut current: Option<(u64, String, SourceFormat)> = None;
    for number in ids {
        let Some(value) = children.read((index, number))? else {
            continue;
        };
        let child: ChildRecord = decode(value.value(), "child record")?;
        let (rev, text, format) = match current.take() {
            Some(same) if same.0 == child.rev => same,
            _ => {
                let revision = revisions.read(child.rev)?.ok_or_else(|| {
                    StorageError::corrupt(format!("revision {} missing", child.rev))
                })?;
                let revision: RevisionRecord = decode(revision.value(), "revision")?;
                let text = texts.read(child.rev)?.ok_or_else(|| {
                    StorageError::corrupt(format!("text of revision {} missing", child.rev))
                })?;
                let text = String::from_utf8(text.value().to_vec()).map_err(|_| {
                    StorageError::corrupt(format!("text of revision {} is not UTF-8", child.rev))
                })?;
                (child.rev, text, revision.format)
            }
        };
        let span = text
            .get(child.start as usize..child.end as usize)
            .ok_or_else(|| {
                StorageError::corrupt(format!(
                    "child {number} of index {index} spans past revision {rev}'s text"
                ))
            })?;
        out.push((number, visible_text_of(span, format).into_owned()));
        current = Some((rev, text, format));
    }
    Ok(out)
}
