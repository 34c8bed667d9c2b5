//! The evaluation's inputs: documents, questions with gold spans, and external chunks, read
//! from JSON Lines in the format of `../shared/data/*/` and checked against each other.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::EvalError;
use crate::metrics::{CharOffsets, Span};
use folio::chunk::{ChildPiece, Chunked, ParentPiece, Span as ChunkSpan};
use folio::document::Document;
use folio::input::InputError;
use folio::review::{GoldEvidence, LogEntry};

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

    /// Reads a documents file (JSON Lines, see [`folio::input::read_jsonl`]).
    pub fn read(path: &Path) -> Result<Corpus, EvalError> {
        Corpus::new(folio::input::read_jsonl(path)?)
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
    /// Its evidence; a question selected from a request log may have none.
    pub gold: Vec<Gold>,
    /// The question type, or "" when the data set has none.
    pub bucket: String,
    /// The logged request it was selected from, with who asked it.
    pub origin: Option<RequestOrigin>,
    /// Its query vector, once [`crate::embed_questions`] embedded it: every strategy then
    /// searches with it instead of embedding the question again.
    pub vector: Option<Vec<f32>>,
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

/// One line of a question set (`../shared/data/*/queries.jsonl`), as read and written:
/// what `folio eval` asks, and what `folio log select` writes for a replay. Fields other
/// readers add are ignored; every field beyond the id and the query is optional.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionRecord {
    /// The question's id.
    pub query_id: String,
    /// The question.
    pub query: String,
    /// The documents it is about.
    #[serde(default)]
    pub doc_ids: Vec<String>,
    /// The question type, or "" when the data set has none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub bucket: String,
    /// Its evidence (none when a logged request got no gold from feedback).
    #[serde(default)]
    pub gold_spans: Vec<GoldRecord>,
    /// The logged request the question was selected from (`folio log select`); `None` in a
    /// data set's question file.
    #[serde(flatten)]
    pub origin: Option<RequestOrigin>,
}

/// A gold span of a [`QuestionRecord`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoldRecord {
    /// The document.
    pub doc_id: String,
    /// Start in code points (checked against `start_byte` when given).
    #[serde(default)]
    pub start: Option<usize>,
    /// End in code points, exclusive.
    #[serde(default)]
    pub end: Option<usize>,
    /// The span's text, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Start in bytes.
    pub start_byte: usize,
    /// End in bytes, exclusive.
    pub end_byte: usize,
}

/// Where a selected question came from: the logged request, with what a replay needs to ask
/// it again as it was asked. A line has one when it says who asked (`principals`, a list or
/// `null`); the rest is optional, so a hand-written question can name its askers alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestOrigin {
    /// The request's id in the store's log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<u64>,
    /// Who asked; `null` for unrestricted tooling access (written even when null, and
    /// required: a line without it has no origin).
    #[serde(deserialize_with = "present")]
    pub principals: Option<Vec<String>>,
    /// What the caller named (index, `index@version`, alias).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The index that answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
    /// The version that answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// The route key the caller gave.
    #[serde(default)]
    pub route_key: Option<String>,
    /// The filter the search had (canonical text), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
}

impl QuestionRecord {
    /// The question a logged request asks (`None` for a caller's vector, which has no
    /// text), with the gold evidence its feedback names; `text_of` gives a document's
    /// current text, to tell code points and the span's text. Returns the question and the
    /// gold spans left out (their document is gone, or the range is not on its character
    /// boundaries).
    pub fn from_logged(
        entry: &LogEntry,
        text_of: impl Fn(&str) -> Option<String>,
    ) -> Option<(QuestionRecord, Vec<GoldEvidence>)> {
        let r = &entry.request;
        let query = r.text()?.to_string();
        let mut gold_spans = Vec::new();
        let mut dropped = Vec::new();
        for g in r.feedback.iter().flat_map(|f| &f.gold) {
            match gold_record(g, &text_of) {
                Some(record) => gold_spans.push(record),
                None => dropped.push(g.clone()),
            }
        }
        let mut doc_ids: Vec<String> = Vec::new();
        for g in &gold_spans {
            if !doc_ids.contains(&g.doc_id) {
                doc_ids.push(g.doc_id.clone());
            }
        }
        let record = QuestionRecord {
            query_id: format!("request-{}", entry.request_id),
            query,
            doc_ids,
            bucket: String::new(),
            gold_spans,
            origin: Some(RequestOrigin {
                request_id: Some(entry.request_id),
                principals: r.principals.clone(),
                target: Some(r.target.clone()),
                index: Some(r.index.clone()),
                version: Some(r.version),
                route_key: r.route_key.clone(),
                filter: r.filter.clone(),
            }),
        };
        Some((record, dropped))
    }
}

/// `principals` as given, `null` included; with `deserialize_with` the field may not be
/// left out (serde would read a missing `Option` as `None`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    Option::deserialize(d)
}

/// A gold byte range as a question set writes it, if it lies on character boundaries of
/// its document's text.
fn gold_record(g: &GoldEvidence, text_of: impl Fn(&str) -> Option<String>) -> Option<GoldRecord> {
    let text = text_of(&g.doc_id)?;
    let (start, end) = (
        usize::try_from(g.start_byte).ok()?,
        usize::try_from(g.end_byte).ok()?,
    );
    let span = text.get(start..end).filter(|s| !s.is_empty())?;
    let chars = text.get(..start)?.chars().count();
    Some(GoldRecord {
        doc_id: g.doc_id.clone(),
        start: Some(chars),
        end: Some(chars + span.chars().count()),
        text: Some(span.to_string()),
        start_byte: start,
        end_byte: end,
    })
}

/// A gold span written against a revision of its document that is gone (the document was
/// edited or deleted since): left out of a replay, not scored against other text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StaleGold {
    /// The question.
    pub query_id: String,
    /// The document.
    pub doc_id: String,
    /// Start, in bytes of the revision it was written against.
    pub start_byte: usize,
    /// End, exclusive.
    pub end_byte: usize,
}

/// Reads a question set (JSON Lines) as it is, without checking it against a corpus.
pub fn read_question_records(path: &Path) -> Result<Vec<QuestionRecord>, EvalError> {
    Ok(json_lines(path)?.into_iter().map(|(_, r)| r).collect())
}

/// A question set as read, before its gold spans are checked against the documents.
pub struct QuestionSet {
    path: std::path::PathBuf,
    records: Vec<(usize, QuestionRecord)>,
}

impl QuestionSet {
    /// Reads questions (JSON Lines), at most `limit` of them.
    pub fn read(path: &Path, limit: Option<usize>) -> Result<QuestionSet, EvalError> {
        let mut records = json_lines::<QuestionRecord>(path)?;
        records.truncate(limit.unwrap_or(usize::MAX));
        Ok(QuestionSet {
            path: path.to_path_buf(),
            records,
        })
    }

    /// Questions made in memory (from request-log entries, [`QuestionRecord::from_logged`]);
    /// errors name them by their position, from 1, in `source`.
    pub fn from_records(source: &str, records: Vec<QuestionRecord>) -> QuestionSet {
        QuestionSet {
            path: source.into(),
            records: (1..).zip(records).collect(),
        }
    }

    /// The documents the gold spans name, each once.
    pub fn gold_doc_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self
            .records
            .iter()
            .flat_map(|(_, r)| r.gold_spans.iter().map(|g| g.doc_id.as_str()))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// [`QuestionSet::check`] against documents that may have changed since the spans were
    /// written (a replay of logged questions on a store's current texts): a span whose
    /// recorded `text` is no longer at its bytes, or whose document is gone, was written
    /// against a revision that is gone. It is left out, not scored against other text, and
    /// returned.
    pub fn check_current(
        mut self,
        corpus: &Corpus,
    ) -> Result<(Vec<Question>, Vec<StaleGold>), EvalError> {
        let mut stale = Vec::new();
        for (_, record) in &mut self.records {
            record.gold_spans.retain(|g| {
                let now = corpus
                    .text(&g.doc_id)
                    .and_then(|t| t.get(g.start_byte..g.end_byte));
                let kept = now.is_some() && (g.text.is_none() || now == g.text.as_deref());
                if !kept {
                    stale.push(StaleGold {
                        query_id: record.query_id.clone(),
                        doc_id: g.doc_id.clone(),
                        start_byte: g.start_byte,
                        end_byte: g.end_byte,
                    });
                }
                kept
            });
        }
        Ok((self.check(corpus, false)?, stale))
    }

    /// The questions, every gold span checked against `corpus`: a known document, a byte
    /// range on character boundaries that matches the code-point range when one is given.
    /// With `need_gold`, a question without gold spans is refused.
    pub fn check(self, corpus: &Corpus, need_gold: bool) -> Result<Vec<Question>, EvalError> {
        let path = &self.path;
        let mut questions = Vec::with_capacity(self.records.len());
        for (line, record) in self.records {
            let at = |reason: String| json_error(path, line, reason);
            let gold = record
                .gold_spans
                .iter()
                .map(|g| check_gold(g, corpus))
                .collect::<Result<Vec<_>, String>>()
                .map_err(at)?;
            if need_gold && gold.is_empty() {
                return Err(at("a question needs at least one gold span".into()));
            }
            let doc_ids = match (record.doc_ids.is_empty(), gold.first()) {
                (true, Some(first)) => vec![first.doc_id.clone()],
                _ => record.doc_ids,
            };
            questions.push(Question {
                id: record.query_id,
                text: record.query,
                doc_ids,
                gold,
                bucket: record.bucket,
                origin: record.origin,
                vector: None,
            });
        }
        Ok(questions)
    }
}

/// Reads questions (JSON Lines), at most `limit` of them, each with at least one gold span
/// checked against the corpus (see [`QuestionSet::check`]).
pub fn read_questions(
    path: &Path,
    corpus: &Corpus,
    limit: Option<usize>,
) -> Result<Vec<Question>, EvalError> {
    QuestionSet::read(path, limit)?.check(corpus, true)
}

fn check_gold(raw: &GoldRecord, corpus: &Corpus) -> Result<Gold, String> {
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

/// A chunk cut by another tool, as `scripts/eval/peer_chunks.py` writes it.
#[derive(Deserialize)]
struct RawChunk {
    doc_id: String,
    /// Byte offsets into the document's text, end exclusive.
    start: usize,
    end: usize,
    text: Option<String>,
    /// What is embedded instead of the chunk's text (the peer's heading path and the text,
    /// say); the text itself is still what a search returns and what is scored.
    embed_text: Option<String>,
}

/// Another tool's chunks of a corpus.
pub struct ExternalChunks {
    /// Per document, in corpus order (documents without chunks get none); each chunk is its
    /// own parent.
    pub chunked: Vec<Chunked>,
    /// When the file gives any `embed_text`: per document, the text to embed for each child
    /// of `chunked`, `None` where the bare chunk text is embedded.
    pub embed_texts: Option<Vec<Vec<Option<String>>>>,
}

/// Reads external chunks (see [`ExternalChunks`]).
pub fn read_external_chunks(path: &Path, corpus: &Corpus) -> Result<ExternalChunks, EvalError> {
    let mut chunks: Vec<Vec<(ChunkSpan, Option<String>)>> = vec![Vec::new(); corpus.len()];
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
        if chunk
            .embed_text
            .as_deref()
            .is_some_and(|t| t.trim().is_empty())
        {
            return Err(at("the chunk's embed_text is blank".to_string()));
        }
        let span = ChunkSpan {
            start: chunk.start,
            end: chunk.end,
        };
        chunks[doc].push((span, chunk.embed_text));
    }
    let given = chunks.iter().flatten().any(|(_, t)| t.is_some());
    let (chunked, embed_texts) = chunks.into_iter().map(one_unit_per_chunk).unzip();
    Ok(ExternalChunks {
        chunked,
        embed_texts: given.then_some(embed_texts),
    })
}

/// Chunks in source order, each its own parent, without heading paths (the peers embed the
/// bare chunk text unless they give an `embed_text`), and their embed texts in that order.
fn one_unit_per_chunk(
    mut chunks: Vec<(ChunkSpan, Option<String>)>,
) -> (Chunked, Vec<Option<String>>) {
    chunks.sort_by_key(|(s, _)| (s.start, s.end));
    let (spans, texts): (Vec<ChunkSpan>, Vec<Option<String>>) = chunks.into_iter().unzip();
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
    (Chunked { parents, children }, texts)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_records_keep_the_request_they_came_from() {
        let plain = r#"{"query_id":"q1","query":"why?","doc_ids":["a"],"bucket":"x","extra":1,
            "gold_spans":[{"doc_id":"a","start":0,"end":2,"text":"ab","start_byte":0,"end_byte":2}]}"#;
        let record: QuestionRecord = serde_json::from_str(plain).unwrap();
        assert_eq!(record.origin, None);
        assert_eq!(record.gold_spans[0].end_byte, 2);
        assert!(!serde_json::to_string(&record)
            .unwrap()
            .contains("principals"));

        let logged = r#"{"query_id":"log-7","query":"why?","principals":null,"request_id":7,
            "target":"kb","index":"kb","version":3,"route_key":"t1"}"#;
        let record: QuestionRecord = serde_json::from_str(logged).unwrap();
        let origin = record.origin.clone().unwrap();
        assert_eq!((origin.request_id, origin.version), (Some(7), Some(3)));
        assert_eq!(origin.principals, None);
        assert_eq!(origin.route_key.as_deref(), Some("t1"));
        assert!(record.gold_spans.is_empty());
        // Null principals are written, so unrestricted access is said, not implied.
        let line = serde_json::to_string(&record).unwrap();
        assert!(line.contains(r#""principals":null"#), "{line}");
        assert_eq!(
            serde_json::from_str::<QuestionRecord>(&line).unwrap(),
            record
        );
    }

    #[test]
    fn principals_alone_say_who_asked() {
        let asked = r#"{"query_id":"h1","query":"why?","principals":["eng"]}"#;
        let record: QuestionRecord = serde_json::from_str(asked).unwrap();
        let origin = record.origin.clone().unwrap();
        assert_eq!(origin.principals, Some(vec!["eng".to_string()]));
        assert_eq!((origin.request_id, origin.index), (None, None));
        let line = serde_json::to_string(&record).unwrap();
        assert!(!line.contains("request_id"), "{line}");
        assert_eq!(
            serde_json::from_str::<QuestionRecord>(&line).unwrap(),
            record
        );
        let tooling = r#"{"query_id":"h2","query":"why?","principals":null}"#;
        let record: QuestionRecord = serde_json::from_str(tooling).unwrap();
        assert_eq!(record.origin.unwrap().principals, None);
        // Without `principals`, the rest of a logged request does not say who asked.
        let unsaid = r#"{"query_id":"h3","query":"why?","request_id":4,"index":"kb"}"#;
        let record: QuestionRecord = serde_json::from_str(unsaid).unwrap();
        assert_eq!(record.origin, None);
    }
}
