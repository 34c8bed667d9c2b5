//! `folio.eval`: the chunking-evaluation harness of `folio eval`, run from Python.

use std::path::PathBuf;
use std::sync::Arc;

use folio_eval::report::{self, Cell};
use folio_eval::{EmbedSetup, EvalError, Settings, Strategy, Workspace};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::{self, invalid};

/// Builds every strategy over the documents, asks every question of each and returns the
/// rows `folio eval --csv` writes, as dicts with the same keys: per strategy a row with
/// `group` "all", then a row per strategy and question group (bucket, else first
/// document). Keys: `strategy`, `group`, `questions`, `hit_at_K` for each k, `mrr`,
/// `full`, `partial`, `noise`, `full_strict`, `boundary_split_rate`, `parent_split_rate`,
/// `context_utilisation`, `token_recall`, `token_precision`, `token_iou`,
/// `avg_input_tokens`, `avg_chars`, `p50_ms`, `p95_ms`, then the costs `chunks_per_doc`,
/// `index_bytes`, `vector_bytes`, `build_s` (None in group rows).
///
/// `docs` and `queries` are JSON Lines files as `folio eval --docs/--queries` read them;
/// `strategies` are `--strategy` specs ("fixed:500", "structure:500",
/// "parent-child:1200/300", "NAME=SPEC", ...); `k` the Hit@k cut-offs (the largest is the
/// k of every other metric); `embedder` an embedder spec ("hash:2048" by default, as the
/// CLI); `token_budget` bounds the returned texts per question, counted by `budget_tokens`
/// ("estimate" by default, "cl100k", "o200k", "chars", "tokenizer:PATH"); `store_dir` keeps the
/// strategies' stores (a temporary directory by default); `limit` asks only the first
/// questions. Runs without the GIL.
#[pyfunction]
#[pyo3(signature = (docs, queries, strategies, *, k=vec![1, 3, 5], embedder=None, token_budget=None, budget_tokens=None, store_dir=None, limit=None))]
#[allow(clippy::too_many_arguments)]
pub fn eval<'py>(
    py: Python<'py>,
    docs: PathBuf,
    queries: PathBuf,
    strategies: Vec<String>,
    k: Vec<i64>,
    embedder: Option<&str>,
    token_budget: Option<i64>,
    budget_tokens: Option<&str>,
    store_dir: Option<PathBuf>,
    limit: Option<i64>,
) -> PyResult<Bound<'py, PyList>> {
    let count = |name: &str, n: i64| -> PyResult<usize> {
        usize::try_from(crate::errors::count(name, n)?)
            .map_err(|_| invalid(format!("{name}: {n} is too large")))
    };
    let k = k
        .into_iter()
        .map(|n| count("k", n))
        .collect::<PyResult<Vec<usize>>>()?;
    let token_budget = token_budget.map(|n| count("token_budget", n)).transpose()?;
    let limit = limit.map(|n| count("limit", n)).transpose()?;
    if strategies.is_empty() {
        return Err(invalid(
            "strategies: give at least one, e.g. [\"structure:500\"]",
        ));
    }
    let strategies = strategies
        .iter()
        .map(|s| Strategy::parse(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| to_py(e.into()))?;
    let embedder = embedder
        .unwrap_or("hash:2048")
        .parse::<folio::embed::EmbedderSpec>()
        .and_then(|s| s.build())
        .map_err(errors::to_py)?;
    let mut settings = Settings::new(embedder.as_ref(), k, token_budget).map_err(to_py)?;
    settings.budget_tokens = budget_tokens.map(crate::store::counter).transpose()?;
    let (header, rows) = py
        .detach(|| {
            let corpus = folio_eval::Corpus::read(&docs)?;
            let mut questions = folio_eval::read_questions(&queries, &corpus, limit)?;
            let workspace = Workspace::new(store_dir.as_deref())?;
            let setup = EmbedSetup {
                embedder: Arc::clone(&embedder),
                truncation: folio::embed::Truncation::default(),
            };
            let reports = folio_eval::evaluate(
                &corpus,
                &mut questions,
                &strategies,
                &setup,
                &settings,
                &workspace,
                &folio::store::NoProgress,
            )?;
            Ok::<_, EvalError>(report::rows(&reports, &settings.ks))
        })
        .map_err(to_py)?;
    let out = PyList::empty(py);
    for row in rows {
        let dict = PyDict::new(py);
        for (key, cell) in header.iter().zip(row) {
            match cell {
                Cell::Text(text) => dict.set_item(key, text)?,
                Cell::Count(n) => dict.set_item(key, n)?,
                Cell::Number { value, .. } => dict.set_item(key, value)?,
                Cell::Empty => dict.set_item(key, py.None())?,
            }
        }
        out.append(dict)?;
    }
    Ok(out)
}

/// An evaluation error as the Python exception of its kind.
fn to_py(error: EvalError) -> PyErr {
    use folio::input::InputError;
    match error {
        EvalError::Open(e) => errors::to_py(e),
        EvalError::Write(e) => errors::to_py(e),
        EvalError::Search(e) => errors::to_py(e),
        EvalError::Read(InputError::Io { ref source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            errors::NotFound::new_err(error.to_string())
        }
        EvalError::Spec(_)
        | EvalError::Read(_)
        | EvalError::Invalid(_)
        | EvalError::Embedder(_)
        | EvalError::Metric(_) => invalid(error.to_string()),
        _ => errors::Error::new_err(error.to_string()),
    }
}
