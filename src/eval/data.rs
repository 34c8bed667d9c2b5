//! The evaluation's inputs: documents, questions with gold spans, and external chunks, read
//! from JSON Lines in the format of `../shared/data/*/` and checked against each other.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

use super::metrics::{CharOffsets, Span};
use super::EvalError;
use crate::chunk::{ChildPiece, Chunked, ParentPiece, Span as ChunkSpan};
use crate::document::Document;
use crate::input::InputError;

/// The documents of an evaluation, with lookups by id and code-point maps.
pub struct Corpus {
    docs: Vec<Document>,
    by_id: HashMap<String, usize>,
    offsets: Vec<CharOffsets>,
}

impl Corpus {
    /// Builds a corpus; document ids must be unique.
    pub fn new(docs: Vec<Document>) -> Result<Corpus, EvalError> {
        let mut by_id = HashMap::with_capacity(docs.len());
        for (i, doc) in docs.iter().enumerate() {
            if by_id.insert(doc.doc_id.clone(), i).is_some() {
                return Err(EvalError::Invalid(format!(
                    "document `{}` appears twice",
                    doc.doc_id
                )));
            }
        }
        let offsets = docs.iter().map(|d| CharOffsets::new(&d.text)).collect();
        Ok(Corpus {
            docs,
            by_id,
            offsets,
        })
    }

    /// Reads a documents file (JSON Lines, see [`crate::input::read_jsonl`]).
    pub fn read(path: &Path) -> Result<Corpus, EvalError> {
        Corpus::new(crate::input::read_jsonl(path)?)
    }

    /// The documents, in corpus order.
    pub fn docs(&self) -> &[Document] {
        &self.docs
    }

    /// How many documents.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The position of document `doc_id`.
    pub fn index_of(&self, doc_id: &str) -> Option<usize> {
        self.by_id.get(doc_id).copied()
    }

    /// The text of document `doc_id`, for metrics that read it.
    pub fn text(&self, doc_id: &str) -> Option<&str> {
        self.index_of(doc_id).map(|i| self.docs[i].text.as_str())
    }

    /// `span` (bytes) in code points of its document.
    pub fn to_chars<'a>(&self, span: Span<'a>) -> Result<Span<'a>, EvalError> {
        self.index_of(span.doc_id)
            .and_then(|i| self.offsets[i].to_chars(span))
            .ok_or_else(|| {
                EvalError::Invalid(format!(
                    "span {}..{} is not on character boundaries of `{}`",
                    span.start, span.end, span.doc_id
                ))
            })
    }
}

/// One gold evidence span: a byte range of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gold {
    /// The document.
    pub doc_id: String,
    /// Start, in bytes.
    pub start: usize,
    /// End, exclusive.
    pub end: usize,
}

impl Gold {
    /// The span, as metrics take it.
    pub fn span(&self) -> Span<'_> {
        Span::new(&self.doc_id, self.start, self.end)
    }
}

/// A question with its evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// The question's id.
    pub id: String,
    /// The question.
    pub text: String,
    /// The documents it is about.
    pub doc_ids: Vec<String>,
    /// Its evidence.
    pub gold: Vec<Gold>,
    /// The question type, or "" when the data set has none.
    pub bucket: String,
}

impl Question {
    /// The row a question is reported in: its bucket, else its first document.
    pub fn group(&self) -> &str {
        if self.bucket.is_empty() {
            self.doc_ids.first().map_or("", String::as_str)
        } else {
            &self.bucket
        }
    }

    /// The gold spans, as metrics take them.
    pub fn gold_spans(&self) -> Vec<Span<'_>> {
        self.gold.iter().map(Gold::span).collect()
    }
}

#[derive(Deserialize)]
struct RawQuestion {
    query_id: String,
    query: String,
    #[serde(default)]
    doc_ids: Vec<String>,
    gold_spans: Vec<RawGold>,
    #[serde(default)]
    bucket: String,
}

#[derive(Deserialize)]
struct RawGold {
    doc_id: String,
    /// Code points, end exclusive.
    start: Option<usize>,
    end: Option<usize>,
    start_byte: usize,
    end_byte: usize,
}

/// Reads questions (JSON Lines), at most `limit` of them, checking every gold span against
/// the corpus: a known document, a byte range on character boundaries that matches the
/// code-point range when one is given.
pub fn read_questions(
    path: &Path,
    corpus: &Corpus,
    limit: Option<usize>,
) -> Result<Vec<Question>, EvalError> {
    let mut questions = Vec::new();
    for (line, record) in json_lines::<RawQuestion>(path)? {
        if limit.is_some_and(|n| questions.len() >= n) {
            break;
        }
        let at = |reason: String| json_error(path, line, reason);
        let gold = record
            .gold_spans
            .iter()
            .map(|g| check_gold(g, corpus))
            .collect::<Result<Vec<_>, String>>()
            .map_err(at)?;
        if gold.is_empty() {
            return Err(at("a question needs at least one gold span".into()));
        }
        let doc_ids = if record.doc_ids.is_empty() {
            vec![gold[0].doc_id.clone()]
        } else {
            record.doc_ids
        };
        questions.push(Question {
            id: record.query_id,
            text: record.query,
            doc_ids,
            gold,
            bucket: record.bucket,
        });
    }
    Ok(questions)
}

fn check_gold(raw: &RawGold, corpus: &Corpus) -> Result<Gold, String> {
    let gold = Gold {
        doc_id: raw.doc_id.clone(),
        start: raw.start_byte,
        end: raw.end_byte,
    };
    if raw.start_byte >= raw.end_byte {
        return Err(format!(
            "gold span {}..{} of `{}` is empty",
            raw.start_byte, raw.end_byte, raw.doc_id
        ));
    }
    let chars = corpus
        .text(&raw.doc_id)
        .ok_or_else(|| format!("gold span names unknown document `{}`", raw.doc_id))
        .and_then(|_| corpus.to_chars(gold.span()).map_err(|e| e.to_string()))?;
    let given = (raw.start, raw.end);
    if given != (None, None) && given != (Some(chars.start), Some(chars.end)) {
        return Err(format!(
            "gold span of `{}`: bytes {}..{} are code points {}..{}, not {:?}..{:?}",
            raw.doc_id, raw.start_byte, raw.end_byte, chars.start, chars.end, raw.start, raw.end
        ));
    }
    Ok(gold)
}

/// A chunk cut by another tool, as `scripts/peer_chunks.py` writes it.
#[derive(Deserialize)]
struct RawChunk {
    doc_id: String,
    /// Byte offsets into the document's text, end exclusive.
    start: usize,
    end: usize,
    text: Option<String>,
}

/// Reads external chunks and turns them into one [`Chunked`] per document (by corpus
/// position; documents without chunks get none). Each chunk is its own parent.
pub fn read_external_chunks(path: &Path, corpus: &Corpus) -> Result<Vec<Chunked>, EvalError> {
    let mut spans: Vec<Vec<ChunkSpan>> = vec![Vec::new(); corpus.len()];
    for (line, chunk) in json_lines::<RawChunk>(path)? {
        let at = |reason: String| json_error(path, line, reason);
        let doc = corpus
            .index_of(&chunk.doc_id)
            .ok_or_else(|| at(format!("unknown document `{}`", chunk.doc_id)))?;
        let text = &corpus.docs()[doc].text;
        let slice = text
            .get(chunk.start..chunk.end)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                at(format!(
                    "{}..{} is not a non-empty byte range on character boundaries of `{}` ({} bytes)",
                    chunk.start,
                    chunk.end,
                    chunk.doc_id,
                    text.len()
                ))
            })?;
        if chunk.text.as_deref().is_some_and(|t| t != slice) {
            return Err(at(format!(
                "the chunk's text differs from bytes {}..{} of `{}`",
                chunk.start, chunk.end, chunk.doc_id
            )));
        }
        spans[doc].push(ChunkSpan {
            start: chunk.start,
            end: chunk.end,
        });
    }
    Ok(spans.into_iter().map(one_unit_per_chunk).collect())
}

/// Chunks in source order, each its own parent, without heading paths (the peers embed the
/// bare chunk text).
fn one_unit_per_chunk(mut spans: Vec<ChunkSpan>) -> Chunked {
    spans.sort_unstable_by_key(|s| (s.start, s.end));
    let parents = spans
        .iter()
        .map(|&span| ParentPiece {
            span,
            section_path: Vec::new(),
        })
        .collect();
    let children = spans
        .into_iter()
        .enumerate()
        .map(|(parent, span)| ChildPiece {
            span,
            parent,
            section_path: Vec::new(),
            oversized: false,
        })
        .collect();
    Chunked { parents, children }
}

fn json_error(path: &Path, line: usize, reason: String) -> EvalError {
    InputError::Json {
        path: path.to_path_buf(),
        line,
        reason,
    }
    .into()
}

/// The records of a JSON Lines file with their 1-based line numbers; blank lines skipped.
fn json_lines<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<(usize, T)>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|source| InputError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map(|record| (i + 1, record))
                .map_err(|e| json_error(path, i + 1, e.to_string()))
        })
        .collect()
}
