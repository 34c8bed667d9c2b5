//! `folio.Reranker`: a reranker built once from its spec and passed to searches.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::errors;

/// A reranker, started or loaded once from a spec as `folio search --rerank` takes it
/// ("bert:DIR" a cross-encoder folder in-process, "onnx:MODEL.onnx@DIR", 'cmd:"COMMAND"',
/// "tei:URL", "cohere:MODEL@URL", "jina:MODEL@URL"), or made from a Python function with
/// `Reranker.from_function(name, fn)` (for example a sentence-transformers `CrossEncoder`'s
/// `predict`). Pass it to `Store.search(..., rerank=reranker)`; a spec string there starts
/// one for that search.
#[pyclass(module = "folio", name = "Reranker", frozen)]
pub struct Reranker {
    pub(crate) inner: Arc<dyn folio::embed::Reranker>,
}

#[pymethods]
impl Reranker {
    #[new]
    fn new(py: Python<'_>, spec: &str) -> PyResult<Self> {
        let spec: folio::embed::RerankerSpec = spec.parse().map_err(errors::to_py)?;
        let inner = py.detach(|| spec.build()).map_err(errors::to_py)?;
        Ok(Reranker { inner })
    }

    /// A reranker calling `function(query, texts)`, which returns one float per text
    /// (higher is more relevant), named `name` in results and the request log. It is called
    /// with the GIL held, from the searching thread.
    #[staticmethod]
    fn from_function(name: String, function: Py<PyAny>) -> Reranker {
        Reranker {
            inner: Arc::new(PythonReranker { name, function }),
        }
    }

    /// The reranker's name, as search results and the request log show it.
    #[getter]
    fn name(&self) -> String {
        self.inner.name().to_string()
    }

    /// One score per text against `query`, in the order given (higher is more relevant).
    fn score(&self, py: Python<'_>, query: &str, texts: Vec<String>) -> PyResult<Vec<f32>> {
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        py.detach(|| self.inner.score(query, &texts))
            .map_err(errors::to_py)
    }

    fn __repr__(&self) -> String {
        format!("Reranker({:?})", self.inner.name())
    }
}

/// `rerank=`: a `Reranker`, or a spec string built for this search.
pub(crate) fn reranker(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
) -> PyResult<Arc<dyn folio::embed::Reranker>> {
    if let Ok(built) = value.cast::<Reranker>() {
        return Ok(built.get().inner.clone());
    }
    let spec = value
        .cast::<PyString>()
        .map_err(|_| errors::invalid("rerank must be a folio.Reranker or a spec string"))?;
    Ok(Reranker::new(py, &spec.to_cow()?)?.inner)
}

/// A Python function as a reranker.
struct PythonReranker {
    name: String,
    function: Py<PyAny>,
}

impl folio::embed::Reranker for PythonReranker {
    fn name(&self) -> &str {
        &self.name
    }

    fn score(&self, query: &str, texts: &[&str]) -> Result<Vec<f32>, folio::embed::EmbedError> {
        Python::attach(|py| {
            let scores = self.function.call1(py, (query, texts.to_vec()))?;
            scores.extract::<Vec<f32>>(py)
        })
        .map_err(|e| folio::embed::EmbedError::Failed(format!("{}: {e}", self.name)))
    }
}
