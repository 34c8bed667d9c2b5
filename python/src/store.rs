//! `folio.Store`: one open store file. Every call that reads or writes the file runs without
//! the GIL, so searches from many Python threads run in parallel, beside a writer.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use folio::query::{
    Evidence, Expand, HybridSettings, Rerank, SearchMode, DEFAULT_DEDUP_THRESHOLD, DEFAULT_K,
};
use folio::{Access, SearchRequest};
use parking_lot::RwLock;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyString};

use crate::batch::{commit, Batch, Op, UpsertArgs};
use crate::convert::{f32_array, to_py};
use crate::errors::{self, invalid};
use crate::results::SearchResult;

/// An open folio store: one file holding documents, chunks, vectors, ACLs and immutable
/// index versions. Open it with `Store.open(path)`, best as a context manager
/// (`with folio.Store.open("kb.folio") as store:`), which closes it at the end.
/// One process may write a store at a time; any number may read it.
#[pyclass(module = "folio", name = "Store", frozen, weakref)]
pub struct Store {
    /// `None` once closed (calls then raise `StoreError`).
    inner: RwLock<Option<folio::Store>>,
    path: PathBuf,
}

impl Store {
    /// The open store (a cheap handle on it).
    fn get(&self) -> PyResult<folio::Store> {
        self.inner.read().clone().ok_or_else(|| {
            errors::StoreError::new_err(format!("{} is closed", self.path.display()))
        })
    }
}

/// Reads a Python object through `f` on the open store, without the GIL; `to_py` errors.
fn run<T: Send, E: Into<folio::Error> + Send>(
    py: Python<'_>,
    store: &folio::Store,
    f: impl FnOnce(&folio::Store) -> Result<T, E> + Send,
) -> PyResult<T> {
    py.detach(|| f(store)).map_err(errors::to_py)
}

/// A count argument (`k`, a budget) as a `usize`: negative is `InvalidArgument`.
fn size(name: &str, value: i64) -> PyResult<usize> {
    usize::try_from(errors::count(name, value)?)
        .map_err(|_| invalid(format!("{name}: {value} is too large")))
}

/// `expand=`: "parent", "section", or an int n (the child and n neighbours each side).
fn expand(value: &Bound<'_, PyAny>) -> PyResult<Expand> {
    if value.is_instance_of::<PyInt>() {
        let n: usize = value
            .extract()
            .map_err(|_| invalid("expand: a window must be a non-negative int"))?;
        Ok(Expand::Window(n))
    } else {
        let allowed = "expand must be \"parent\", \"section\" or an int (a window)";
        let name = value.cast::<PyString>().map_err(|_| invalid(allowed))?;
        match &*name.to_cow()? {
            "parent" => Ok(Expand::Parent),
            "section" => Ok(Expand::Section),
            other => Err(invalid(format!("{allowed}, not {other:?}"))),
        }
    }
}

#[pymethods]
impl Store {
    /// Opens the store at `path`, creating it unless `create=False` (then a missing file
    /// raises `NotFound`). `read_only=True` opens for reading only (a writer in another
    /// process may commit meanwhile; each read sees its newest commit). `embedder` is an
    /// embedder spec ("hash" by default, "hash:256", "cmd:PROGRAM"); `log_requests` keeps
    /// every search in the request log (a read-only store too, when the file is writable);
    /// `wait` is how many seconds a commit waits while another process commits to the
    /// store before raising `LockedError` (an open store holds no lock between commits).
    #[staticmethod]
    #[pyo3(signature = (path, *, create=true, read_only=false, embedder=None, log_requests=false, wait=10.0))]
    fn open(
        py: Python<'_>,
        path: PathBuf,
        create: bool,
        read_only: bool,
        embedder: Option<&str>,
        log_requests: bool,
        wait: f64,
    ) -> PyResult<Store> {
        let wait = Duration::try_from_secs_f64(wait)
            .map_err(|_| invalid(format!("wait: {wait} is not a number of seconds")))?;
        let mut builder = folio::Store::builder()
            .create(create && !read_only)
            .read_only(read_only)
            .log_requests(log_requests)
            .wait(wait);
        if let Some(spec) = embedder {
            let built = spec
                .parse::<folio::embed::EmbedderSpec>()
                .and_then(|s| s.build())
                .map_err(errors::to_py)?;
            builder = builder.embedder(built);
        }
        let store = py.detach(|| builder.open(&path)).map_err(errors::to_py)?;
        Ok(Store {
            inner: RwLock::new(Some(store)),
            path,
        })
    }

    /// The store's file.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.read().is_none()
    }

    /// Closes the store: later calls raise `StoreError`. The file is released once searches
    /// and batches still running on it end.
    fn close(&self) {
        self.inner.write().take();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { "closed" } else { "open" };
        format!("Store({:?}, {state})", self.path.display().to_string())
    }

    /// A new batch of changes, committed atomically (see `Batch`).
    fn batch(&self) -> PyResult<Batch> {
        Ok(Batch::new(self.get()?))
    }

    /// Adds or replaces one document in its own commit (arguments as `Batch.upsert`);
    /// returns the receipt.
    #[pyo3(signature = (doc_id, text, *, format="text", acl=None, metadata=None, title=String::new(), source_uri=String::new(), vectors=None, whole=false))]
    #[allow(clippy::too_many_arguments)]
    fn upsert(
        &self,
        py: Python<'_>,
        doc_id: String,
        text: &Bound<'_, PyAny>,
        format: &str,
        acl: Option<Vec<String>>,
        metadata: Option<&Bound<'_, PyDict>>,
        title: String,
        source_uri: String,
        vectors: Option<&Bound<'_, PyAny>>,
        whole: bool,
    ) -> PyResult<Py<PyAny>> {
        let store = self.get()?;
        let args = UpsertArgs {
            doc_id,
            text,
            format,
            acl,
            metadata,
            title,
            source_uri,
            vectors,
            whole,
        };
        let op = args.into_op(&store)?;
        commit(py, &store, vec![op])
    }

    /// Deletes one document in its own commit; returns the receipt.
    fn delete(&self, py: Python<'_>, doc_id: String) -> PyResult<Py<PyAny>> {
        commit(py, &self.get()?, vec![Op::Delete(doc_id)])
    }

    /// Replaces who may see a document (empty: public) in its own commit; returns the receipt.
    fn set_acl(&self, py: Python<'_>, doc_id: String, acl: Vec<String>) -> PyResult<Py<PyAny>> {
        commit(py, &self.get()?, vec![Op::SetAcl(doc_id, acl)])
    }

    /// How index `index` would cut a document, without writing anything: its child chunks
    /// as dicts (`chunk_id`, `start`, `end`, `embed_text`), in the order `vectors=` rows
    /// follow. Embed each `embed_text` with your model to bring your own vectors.
    #[pyo3(signature = (doc_id, text, *, format="text", index="default"))]
    fn plan<'py>(
        &self,
        py: Python<'py>,
        doc_id: String,
        text: &Bound<'_, PyAny>,
        format: &str,
        index: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let args = UpsertArgs {
            doc_id,
            text,
            format,
            acl: None,
            metadata: None,
            title: String::new(),
            source_uri: String::new(),
            vectors: None,
            whole: false,
        };
        let store = self.get()?;
        let Op::Upsert(doc, ..) = args.into_op(&store)? else {
            return Err(invalid("plan needs a document"));
        };
        let planned = run(py, &store, |s| s.plan(index, &doc))?;
        to_py(py, &planned)
    }

    /// Searches and returns a `SearchResult` of `Hit`s, best first.
    ///
    /// `query` is a text (embedded with the index's embedder) or a 1-d float32 numpy
    /// vector. `k` reading units are returned: `min(k, visible units)`. `principals` are
    /// who asks: public documents plus those shared with any of them are searched, nothing
    /// else (none: public only; `unrestricted=True` sees everything, for tooling only).
    /// `expand` is what comes back around matching children: "parent", "section", or an
    /// int n for a window of n children each side. `token_budget` bounds the returned
    /// text's tokens, counted by `budget_tokens`: "estimate" (the default), "cl100k",
    /// "o200k" (OpenAI's), "chars" or "tokenizer:PATH" (a `tokenizer.json`); each hit's
    /// `tokens` counts the same way. `target` is an index, "index@version", "index@tag" or an
    /// alias; `route_key` picks an alias's route; `ef` the graph breadth; `dedup` the
    /// near-duplicate threshold (None keeps every unit). `filter` narrows the search to
    /// chunks a metadata filter matches (`'team = "sre" and updated_at >= 2024-01-01'`,
    /// see `folio::filter`); the answer is still `min(k, visible and matching units)`.
    /// `query_vector` is a text query's vector, embedded beforehand by the index's
    /// embedder (the dense leg uses it, the lexical leg the text). `mode` ranks children
    /// by "dense" (the default), "lexical" (BM25, a text query) or "hybrid" (both, fused:
    /// `fusion` "rrf" with `rrf_k`, or "weighted" with `dense_weight`; each leg
    /// `dense_depth` / `lexical_depth` deep; unset, the library's defaults). `rerank` (a
    /// `folio.Reranker` or a spec string) reorders the best `rerank_top` units (20 by
    /// default, at least `k`) by their texts, or with `rerank_window=n` by each unit's best
    /// child and n neighbours each side, before the answer is cut to `k`. Each hit's
    /// `scores` holds every stage's score.
    #[pyo3(signature = (query, *, k=DEFAULT_K as i64, principals=None, unrestricted=false, expand=None, token_budget=None, budget_tokens=None, target=None, route_key=None, ef=None, dedup=Some(DEFAULT_DEDUP_THRESHOLD), filter=None, query_vector=None, mode=None, fusion=None, rrf_k=None, dense_weight=None, dense_depth=None, lexical_depth=None, rerank=None, rerank_top=None, rerank_window=None))]
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        py: Python<'_>,
        query: &Bound<'_, PyAny>,
        k: i64,
        principals: Option<Vec<String>>,
        unrestricted: bool,
        expand: Option<&Bound<'_, PyAny>>,
        token_budget: Option<i64>,
        budget_tokens: Option<&str>,
        target: Option<String>,
        route_key: Option<String>,
        ef: Option<i64>,
        dedup: Option<f32>,
        filter: Option<&str>,
        query_vector: Option<&Bound<'_, PyAny>>,
        mode: Option<&str>,
        fusion: Option<&str>,
        rrf_k: Option<u32>,
        dense_weight: Option<f32>,
        dense_depth: Option<i64>,
        lexical_depth: Option<i64>,
        rerank: Option<&Bound<'_, PyAny>>,
        rerank_top: Option<i64>,
        rerank_window: Option<i64>,
    ) -> PyResult<SearchResult> {
        let store = self.get()?;
        let mut request = match query.cast::<PyString>() {
            Ok(text) => SearchRequest::text(text.to_cow()?),
            Err(_) => SearchRequest::vector(f32_array(query, 1, "a query vector")?.0),
        };
        request = request.k(size("k", k)?).access(if unrestricted {
            Access::Unrestricted
        } else {
            Access::principals(principals.unwrap_or_default())
        });
        if let Some(expand) = expand {
            request = request.expand(self::expand(expand)?);
        }
        request.token_budget = token_budget.map(|t| size("token_budget", t)).transpose()?;
        request.budget_tokens = budget_tokens.map(counter).transpose()?;
        request.target = target;
        request.route_key = route_key;
        request.ef = ef.map(|e| size("ef", e)).transpose()?;
        request.dedup = dedup;
        if let Some(filter) = filter {
            let parsed =
                folio::Filter::parse(filter).map_err(|e| invalid(format!("filter: {e}")))?;
            request = request.filter(parsed);
        }
        if let Some(vector) = query_vector {
            request = request.with_query_vector(f32_array(vector, 1, "a query vector")?.0);
        }
        let settings = HybridSettings {
            fusion: fusion.map(str::to_string),
            rrf_k,
            dense_weight,
            dense_depth: dense_depth.map(|d| size("dense_depth", d)).transpose()?,
            lexical_depth: lexical_depth
                .map(|d| size("lexical_depth", d))
                .transpose()?,
        };
        request = request.mode(
            SearchMode::from_settings(mode.unwrap_or("dense"), &settings)
                .map_err(|e| invalid(e.to_string()))?,
        );
        match rerank {
            Some(reranker) => {
                let mut stage = Rerank::new(crate::rerank::reranker(py, reranker)?);
                if let Some(top) = rerank_top {
                    stage = stage.top(size("rerank_top", top)?);
                }
                if let Some(n) = rerank_window {
                    stage = stage.evidence(Evidence::Window(size("rerank_window", n)?));
                }
                request = request.rerank(stage);
            }
            None if rerank_top.is_some() || rerank_window.is_some() => {
                return Err(invalid("rerank_top and rerank_window need rerank"));
            }
            None => {}
        }
        let response = run(py, &store, |s| s.search(&request))?;
        Ok(response.into())
    }

    /// The ids of every stored document, sorted.
    fn document_ids(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        run(py, &self.get()?, |s| s.document_ids())
    }

    /// A stored document as a dict (`doc_id`, `text`, `format`, `acl`, `metadata`, …), or
    /// None.
    fn document<'py>(&self, py: Python<'py>, doc_id: &str) -> PyResult<Bound<'py, PyAny>> {
        let doc = run(py, &self.get()?, |s| s.document(doc_id))?;
        to_py(py, &doc)
    }

    /// The names of the store's indexes.
    fn index_names(&self) -> PyResult<Vec<String>> {
        Ok(self.get()?.index_names())
    }

    /// Every index as a dict (name, chunking spec, embedder, head and serving versions, …).
    fn indexes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let indexes = run(py, &self.get()?, |s| s.indexes().list())?;
        to_py(py, &indexes)
    }

    /// Creates index `name` with the default chunking and graph, embedded by the registered
    /// embedder `embedder` (the `default` index's when None), built over every stored
    /// document; returns its first version.
    #[pyo3(signature = (name, *, embedder=None))]
    fn create_index(&self, py: Python<'_>, name: &str, embedder: Option<String>) -> PyResult<u64> {
        let store = self.get()?;
        let embedder = match embedder {
            Some(e) => e,
            None => store
                .indexes()
                .list()
                .map_err(errors::to_py)?
                .into_iter()
                .find(|i| i.name == folio::store::DEFAULT_INDEX)
                .map(|i| i.embedder.name)
                .ok_or_else(|| invalid("no `default` index: name the embedder"))?,
        };
        let config = folio::IndexConfig {
            spec: folio::ChunkSpec::default(),
            embedder: folio::IndexEmbedder::Registered(embedder),
            graph: folio::GraphParams::default(),
            vectors: Default::default(),
            lexical: Default::default(),
        };
        run(py, &store, |s| s.indexes().create(name, config))
    }

    /// Drops index `name` and every version of it.
    fn drop_index(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        run(py, &self.get()?, |s| s.indexes().drop(name))
    }

    /// The retained versions of `index`, oldest first, as dicts (`version`, `change`,
    /// `documents`, `live_children`, `tags`, `aliases`, `head`, `serving`, …).
    #[pyo3(signature = (index="default"))]
    fn versions<'py>(&self, py: Python<'py>, index: &str) -> PyResult<Bound<'py, PyAny>> {
        let versions = run(py, &self.get()?, |s| s.versions(index).list())?;
        to_py(py, &versions)
    }

    /// Names `version` of `index` `tag` (searchable as "index@tag"); tags are permanent.
    fn tag(&self, py: Python<'_>, index: &str, version: i64, tag: &str) -> PyResult<()> {
        let version = errors::count("version", version)?;
        run(py, &self.get()?, |s| s.versions(index).tag(version, tag))
    }

    /// Removes a tag; returns the version it named.
    fn remove_tag(&self, py: Python<'_>, index: &str, tag: &str) -> PyResult<u64> {
        run(py, &self.get()?, |s| s.versions(index).remove_tag(tag))
    }

    /// Points `alias` at "index@version", or splits its traffic between routes given as
    /// (index, version, weight percent) tuples whose weights sum to 100.
    fn set_alias(&self, py: Python<'_>, alias: &str, routes: &Bound<'_, PyAny>) -> PyResult<()> {
        let routes: Vec<folio::store::Route> = match routes.cast::<PyString>() {
            Ok(target) => {
                let target = target.to_cow()?;
                let (index, version) = target
                    .rsplit_once('@')
                    .and_then(|(i, v)| Some((i, v.parse::<u64>().ok()?)))
                    .ok_or_else(|| {
                        invalid(format!("route {target:?}: expected \"index@version\""))
                    })?;
                vec![folio::store::Route {
                    index: index.to_owned(),
                    version,
                    weight: 100,
                }]
            }
            Err(_) => routes
                .extract::<Vec<(String, u64, u32)>>()
                .map_err(|_| {
                    invalid(
                        "routes must be \"index@version\" or a list of (index, version, weight)",
                    )
                })?
                .into_iter()
                .map(|(index, version, weight)| folio::store::Route {
                    index,
                    version,
                    weight,
                })
                .collect(),
        };
        run(py, &self.get()?, |s| s.aliases().set(alias, &routes))
    }

    /// Deletes an alias.
    fn remove_alias(&self, py: Python<'_>, alias: &str) -> PyResult<()> {
        run(py, &self.get()?, |s| s.aliases().remove(alias))
    }

    /// Every alias and its routes, as dicts (`name`, `routes`: `index`, `version`, `weight`).
    fn aliases<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let aliases = run(py, &self.get()?, |s| s.aliases().list())?;
        to_py(py, &aliases)
    }

    /// The route of `alias` that `key` takes (what a search with `route_key=key` uses).
    fn route<'py>(&self, py: Python<'py>, alias: &str, key: &str) -> PyResult<Bound<'py, PyAny>> {
        let route = run(py, &self.get()?, |s| s.aliases().route(alias, key))?;
        to_py(py, &route)
    }

    /// Serves `version` again, at once: an alias's traffic all goes to it, or an index name
    /// is pinned to it (writes still build on the head; `unpin` undoes it). Revocations and
    /// deletions made since stay in force. Returns what was done, as a dict.
    fn rollback<'py>(
        &self,
        py: Python<'py>,
        target: &str,
        version: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let version = errors::count("version", version)?;
        let rollback = run(py, &self.get()?, |s| s.rollback(target, version))?;
        to_py(py, &rollback)
    }

    /// Makes the bare index name serve its head again; returns the version it was pinned to.
    fn unpin(&self, py: Python<'_>, index: &str) -> PyResult<Option<u64>> {
        run(py, &self.get()?, |s| s.versions(index).unpin())
    }

    /// Checks the whole store (redb's page check on a copy of the file, every value's
    /// checksum, every retained version's segments, records, ACL bitmaps and names) and
    /// returns the report as a dict; `consistent` is True when nothing is wrong.
    fn check<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut store = self.get()?;
        let report = py
            .detach(|| store.check_integrity())
            .map_err(errors::to_py)?;
        let out = to_py(py, &report)?;
        out.set_item("consistent", report.is_consistent())?;
        Ok(out)
    }

    /// The request log (searches of a store opened with `log_requests=True`), as dicts.
    fn log_entries<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let entries = run(py, &self.get()?, |s| s.log().entries())?;
        to_py(py, &entries)
    }

    /// Records feedback on a logged search (`SearchResult.request_id`): `rating` "up" or
    /// "down", and/or a note.
    #[pyo3(signature = (request_id, *, rating=None, note=None))]
    fn feedback(
        &self,
        py: Python<'_>,
        request_id: i64,
        rating: Option<&str>,
        note: Option<String>,
    ) -> PyResult<()> {
        let request_id = errors::count("request_id", request_id)?;
        let rating = match rating {
            None => None,
            Some("up") => Some(folio::store::Rating::Up),
            Some("down") => Some(folio::store::Rating::Down),
            Some(other) => {
                return Err(invalid(format!(
                    "rating {other:?}: expected \"up\" or \"down\""
                )))
            }
        };
        run(py, &self.get()?, |s| {
            s.log().feedback(request_id, rating, note)
        })
    }
}

/// The token counter a `budget_tokens` argument names. Counters are kept per spec for the
/// process: a `tokenizer.json` is read once, not on every search.
pub(crate) fn counter(spec: &str) -> PyResult<Arc<dyn folio::embed::TokenCounter>> {
    static COUNTERS: std::sync::OnceLock<
        parking_lot::Mutex<HashMap<String, Arc<dyn folio::embed::TokenCounter>>>,
    > = std::sync::OnceLock::new();
    let mut counters = COUNTERS.get_or_init(Default::default).lock();
    if let Some(counter) = counters.get(spec) {
        return Ok(Arc::clone(counter));
    }
    let counter = folio::embed::counter_from_spec(spec)
        .map_err(|e| invalid(format!("budget_tokens: {e}")))?;
    counters.insert(spec.to_string(), Arc::clone(&counter));
    Ok(counter)
}
