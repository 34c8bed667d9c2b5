//! `folio._folio`, the native module of the `folio` Python package: the store, batches,
//! search results, the evaluation harness and the exception hierarchy. `folio/__init__.py`
//! re-exports it.

mod batch;
mod convert;
mod errors;
mod eval;
mod rerank;
mod results;
mod store;

use pyo3::prelude::*;

/// The native module (imported as `folio._folio`).
#[pymodule]
fn _folio(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<store::Store>()?;
    m.add_class::<batch::Batch>()?;
    m.add_class::<results::SearchResult>()?;
    m.add_class::<results::Hit>()?;
    m.add_class::<results::Span>()?;
    m.add_class::<rerank::Reranker>()?;
    m.add_function(wrap_pyfunction!(eval::eval, m)?)?;
    errors::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
