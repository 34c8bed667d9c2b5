//! What a search returns to Python: read-only result objects.

use std::collections::BTreeMap;

use pyo3::prelude::*;
use pyo3::types::PyList;

/// A matching child chunk inside a returned unit: its id, score and byte span.
#[pyclass(module = "folio", name = "Span", frozen, get_all)]
#[derive(Clone)]
pub struct Span {
    /// The child's id, `doc_id#c<ordinal>`.
    pub chunk_id: String,
    /// Its similarity to the query (higher is closer).
    pub score: f32,
    /// Byte offset in the document's source text.
    pub start: usize,
    /// End of the span (exclusive).
    pub end: usize,
}

#[pymethods]
impl Span {
    fn __repr__(&self) -> String {
        format!(
            "Span(chunk_id={:?}, score={:.4}, start={}, end={})",
            self.chunk_id, self.score, self.start, self.end
        )
    }
}

/// One returned reading unit (a parent, a section or a window), with the version that
/// answered.
#[pyclass(module = "folio", name = "Hit", frozen)]
#[derive(Clone)]
pub struct Hit {
    /// The final ranking's score: the best child's, or the reranker's when one ran.
    #[pyo3(get)]
    pub score: f32,
    /// Each stage's score (`dense`, `lexical`, `fused`, `rerank`: those that ran).
    pub scores: folio::query::StageScores,
    /// The unit's text: a slice of the document's source text.
    #[pyo3(get)]
    pub text: String,
    /// The document the unit comes from.
    #[pyo3(get)]
    pub doc_id: String,
    /// The parent chunk of the best child, `doc_id#p<ordinal>`.
    #[pyo3(get)]
    pub parent_id: String,
    /// The heading path of the unit's section.
    #[pyo3(get)]
    pub section_path: Vec<String>,
    /// The document's title.
    #[pyo3(get)]
    pub title: String,
    /// The document's source URI.
    #[pyo3(get)]
    pub source_uri: String,
    /// Byte offset of `text` in the document's source text.
    #[pyo3(get)]
    pub start: usize,
    /// End of `text` (exclusive).
    #[pyo3(get)]
    pub end: usize,
    /// Tokens of `text`, counted as the search's `budget_tokens` says (the estimate by
    /// default).
    #[pyo3(get)]
    pub tokens: usize,
    /// The first and last page `text` lies on (from 1), for a PDF; None for other formats.
    #[pyo3(get)]
    pub pages: Option<(u32, u32)>,
    /// The matching children inside the unit, best first.
    #[pyo3(get)]
    pub spans: Vec<Span>,
    /// The index that answered.
    #[pyo3(get)]
    pub index: String,
    /// The version of it that answered.
    #[pyo3(get)]
    pub version: u64,
    /// The document's metadata (read by the `metadata` getter).
    pub metadata: BTreeMap<String, folio::MetadataValue>,
}

#[pymethods]
impl Hit {
    /// Each stage's score as a dict: "dense" (the metric's similarity), "lexical" (BM25,
    /// at least 0), "fused" (the fusion's), "rerank" (the reranker's raw score); only the
    /// stages that ran.
    #[getter]
    fn scores<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::convert::to_py(py, &self.scores)
    }

    /// The document's metadata: str, float, bool, list of str; dates as ISO 8601 text.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::convert::to_py(py, &self.metadata)
    }

    fn __repr__(&self) -> String {
        format!(
            "Hit(doc_id={:?}, score={:.4}, section_path={:?}, {}@{})",
            self.doc_id, self.score, self.section_path, self.index, self.version
        )
    }
}

/// The answer to a search: the hits, best first, and the index version that answered.
/// Iterable, indexable and sized like a list of `Hit`.
#[pyclass(module = "folio", name = "SearchResult", frozen, get_all)]
#[derive(Clone)]
pub struct SearchResult {
    /// The hits, best first.
    pub hits: Vec<Hit>,
    /// The index that answered.
    pub index: String,
    /// The version of it that answered.
    pub version: u64,
    /// Children the caller may see in that version.
    pub visible: u64,
    /// The request-log id of this search, when the store logs requests.
    pub request_id: Option<u64>,
    /// Time the search took in Rust, microseconds.
    pub micros: u64,
    /// How children were ranked: "dense", "lexical" or "hybrid".
    pub mode: String,
    /// The reranker that reordered the hits, when one did.
    pub reranker: Option<String>,
}

#[pymethods]
impl SearchResult {
    fn __len__(&self) -> usize {
        self.hits.len()
    }

    fn __getitem__(&self, i: isize) -> PyResult<Hit> {
        let n = self.hits.len() as isize;
        let at = if i < 0 { i + n } else { i };
        usize::try_from(at)
            .ok()
            .and_then(|at| self.hits.get(at))
            .cloned()
            .ok_or_else(|| pyo3::exceptions::PyIndexError::new_err("hit index out of range"))
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(PyList::new(py, self.hits.clone())?.try_iter()?.into_any())
    }

    fn __repr__(&self) -> String {
        format!(
            "SearchResult({} hits, {}@{})",
            self.hits.len(),
            self.index,
            self.version
        )
    }
}

impl From<folio::SearchResponse> for SearchResult {
    fn from(response: folio::SearchResponse) -> Self {
        let (index, version) = (response.index, response.version);
        let hits = response
            .results
            .into_iter()
            .map(|h| Hit {
                score: h.score,
                scores: h.scores,
                text: h.text,
                doc_id: h.doc_id,
                parent_id: h.parent_id,
                section_path: h.section_path,
                title: h.title,
                source_uri: h.source_uri,
                start: h.start,
                end: h.end,
                tokens: h.tokens,
                pages: h.pages.map(|p| (p.first, p.last)),
                spans: h
                    .children
                    .into_iter()
                    .map(|c| Span {
                        chunk_id: c.chunk_id,
                        score: c.score,
                        start: c.start,
                        end: c.end,
                    })
                    .collect(),
                index: index.clone(),
                version,
                metadata: h.metadata,
            })
            .collect();
        SearchResult {
            hits,
            index,
            version,
            visible: response.stats.visible,
            request_id: response.request_id,
            micros: response.stats.micros,
            mode: response.mode.name().to_string(),
            reranker: response.reranker,
        }
    }
}
