//! Upserts as a batch holds them until its commit: encoded one after the other in one byte
//! array, each decoded again when the commit needs it. A [`Document`] kept as such costs
//! about 450 bytes beyond its text (nine fields, each string its own allocation); a
//! 200,000-document bulk load held 98 MB of them through the graph build, as much as its
//! vectors. Encoded, such a document takes its text plus a few dozen bytes.

use std::collections::BTreeMap;
use std::ops::Range;

use bincode::config::{Configuration, LittleEndian, Varint};

use crate::chunk::Chunked;
use crate::document::Document;
use crate::ingest::{IngestError, Staged as StagedSource};
use crate::storage::error::StorageError;
use crate::storage::file::records::{RevisionRecord, StoredValue};

/// A document and the chunks the application cut for it, as staged.
#[derive(bincode::Encode, bincode::Decode)]
struct Staged {
    revision: RevisionRecord,
    text: String,
    acl: Vec<String>,
    chunks: Option<Chunked>,
}

/// The staging encoding: the records' own, without their size limit (these bytes never
/// leave the process, and a document's text may be larger than any stored record).
fn config() -> Configuration<LittleEndian, Varint> {
    bincode::config::standard()
        .with_little_endian()
        .with_variable_int_encoding()
}

/// The staged upserts of a batch (or of an index build).
#[derive(Default)]
pub(crate) struct StagedDocs {
    bytes: Vec<u8>,
}

impl StagedDocs {
    /// Appends `doc` and its `chunks`; returns where they lie.
    pub(crate) fn push(&mut self, doc: Document, chunks: Option<Chunked>) -> Range<usize> {
        let start = self.bytes.len();
        let Document {
            doc_id,
            title,
            source_uri,
            format,
            text,
            acl,
            published_at,
            updated_at,
            metadata,
        } = doc;
        let staged = Staged {
            revision: RevisionRecord {
                doc_id,
                title,
                source_uri,
                format,
                published_at,
                updated_at,
                metadata: metadata
                    .into_iter()
                    .map(|(k, v)| (k, StoredValue::from(&v)))
                    .collect(),
            },
            text,
            acl,
            chunks,
        };
        // Writing into a Vec cannot fail: no I/O, no limit.
        let _ = bincode::encode_into_std_write(&staged, &mut self.bytes, config());
        start..self.bytes.len()
    }

    /// The document and chunks staged at `at` (a range [`StagedDocs::push`] returned).
    pub(crate) fn get(
        &self,
        at: &Range<usize>,
    ) -> Result<(Document, Option<Chunked>), StorageError> {
        let bytes = self
            .bytes
            .get(at.clone())
            .ok_or_else(|| StorageError::corrupt("a staged upsert lies outside its batch"))?;
        let staged: Staged = match bincode::decode_from_slice(bytes, config()) {
            Ok((staged, read)) if read == bytes.len() => staged,
            _ => return Err(StorageError::corrupt("a staged upsert does not decode")),
        };
        let Staged {
            revision,
            text,
            acl,
            chunks,
        } = staged;
        let metadata: BTreeMap<_, _> = revision
            .metadata
            .into_iter()
            .map(|(k, v)| (k, v.into()))
            .collect();
        let doc = Document {
            doc_id: revision.doc_id,
            title: revision.title,
            source_uri: revision.source_uri,
            format: revision.format,
            text,
            acl,
            published_at: revision.published_at,
            updated_at: revision.updated_at,
            metadata,
        };
        Ok((doc, chunks))
    }
}

impl StagedSource for StagedDocs {
    fn open(&self, at: &Range<usize>) -> Result<(Document, Option<Chunked>), IngestError> {
        self.get(at).map_err(|e| IngestError::Staged(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::{ChildPiece, ParentPiece, SourceFormat, Span};
    use crate::filter::MetadataValue;
    use proptest::prelude::*;

    fn doc(id: &str, text: &str, acl: Vec<String>, number: f64) -> Document {
        let mut doc = Document::new(id, SourceFormat::Markdown, text).with_acl(acl);
        doc.title = format!("title of {id}");
        doc.published_at = Some("2026-12-02".into());
        doc.metadata = BTreeMap::from([
            ("n".to_string(), MetadataValue::Number(number)),
            (
                "tags".to_string(),
                MetadataValue::List(vec![id.to_string()]),
            ),
            ("ok".to_string(), MetadataValue::Bool(number > 0.0)),
        ]);
        doc
    }

    fn chunks(len: usize) -> Chunked {
        Chunked {
            parents: vec![ParentPiece {
                span: Span { start: 0, end: len },
                section_path: vec!["Heading".into()],
            }],
            children: vec![ChildPiece {
                span: Span { start: 0, end: len },
                parent: 0,
                section_path: vec!["Heading".into()],
                oversized: true,
            }],
        }
    }

    proptest! {
        #[test]
        fn every_upsert_decodes_as_it_was_staged(
            docs in prop::collection::vec(
                ("[a-z0-9/é]{1,12}", "\\PC{0,40}", prop::collection::vec("[a-z ]{0,6}", 0..3), -1e9f64..1e9, any::<bool>()),
                1..20,
            )
        ) {
            let mut staged = StagedDocs::default();
            let mut expected = Vec::new();
            for (id, text, acl, number, cut) in docs {
                let doc = doc(&id, &text, acl, number);
                let given = cut.then(|| chunks(text.len()));
                let at = staged.push(doc.clone(), given.clone());
                expected.push((at, doc, given));
            }
            for (at, doc, given) in &expected {
                let (back, chunks) = staged.get(at).unwrap();
                prop_assert_eq!(&back, doc);
                prop_assert_eq!(&chunks, given);
            }
        }
    }

    #[test]
    fn a_range_outside_the_batch_is_an_error() {
        let mut staged = StagedDocs::default();
        let at = staged.push(doc("a", "text", Vec::new(), 1.0), None);
        assert!(staged.get(&(at.start..at.end + 1)).is_err());
        assert!(staged.get(&(at.start + 1..at.end)).is_err());
    }
}
