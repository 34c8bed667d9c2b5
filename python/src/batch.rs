//! Batches: operations gathered in Python and committed as one atomic folio batch, on
//! `commit()` or at the end of a `with` block (discarded when the block raises).

use std::collections::BTreeMap;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use crate::convert::{by_name, f32_array, to_json, to_py};
use crate::errors::{self, invalid};

/// One operation, checked when it was added.
pub enum Op {
    /// A document, how it was given, its vectors.
    Upsert(folio::Document, Given, BTreeMap<String, Vec<f32>>),
    Delete(String),
    SetAcl(String, Vec<String>),
}

/// How an upsert was given.
#[derive(Clone, Copy)]
pub struct Given {
    /// The text is one chunk, its own parent (`whole=True`).
    pub whole: bool,
    /// No ACL was given (`acl=None`): a stored document keeps its own.
    pub inherit_acl: bool,
}

/// The formats `format=` takes.
const FORMATS: &str = "\"text\", \"markdown\", \"html\", \"csv\", \"tsv\", \"dialog\", \"rust\", \"python\", \"javascript\", \"typescript\", \"tsx\", \"go\" or \"pdf\"";

/// The arguments of an upsert, as Python passes them.
pub struct UpsertArgs<'a, 'py> {
    pub doc_id: String,
    /// The text (str), or the file's bytes (UTF-8 text, or a PDF file).
    pub text: &'a Bound<'py, PyAny>,
    pub format: &'a str,
    pub acl: Option<Vec<String>>,
    pub metadata: Option<&'a Bound<'py, PyDict>>,
    pub title: String,
    pub source_uri: String,
    pub vectors: Option<&'a Bound<'py, PyAny>>,
    /// The text is one chunk, its own parent, in every index.
    pub whole: bool,
}

impl UpsertArgs<'_, '_> {
    /// The document and its vectors, refused here (before anything is queued) when
    /// malformed: an unknown format, metadata that is not plain data, vectors of another
    /// dtype, rank or width than the index's, or with NaN or infinity.
    pub fn into_op(self, store: &folio::Store) -> PyResult<Op> {
        let format = by_name(self.format, "format", FORMATS)?;
        let text = document_text(self.text, format)?;
        let inherit_acl = self.acl.is_none();
        let mut doc =
            folio::Document::new(self.doc_id, format, text).with_acl(self.acl.unwrap_or_default());
        doc.title = self.title;
        doc.source_uri = self.source_uri;
        if let Some(metadata) = self.metadata {
            // Through serde, so the binding follows `Document::metadata`'s own type.
            doc.metadata = serde_json::from_value(to_json(metadata.as_any(), "metadata")?)
                .map_err(|e| invalid(format!("metadata: {e}")))?;
        }
        let vectors = match self.vectors {
            None => BTreeMap::new(),
            Some(v) => vectors(store, v)?,
        };
        Ok(Op::Upsert(
            doc,
            Given {
                whole: self.whole,
                inherit_acl,
            },
            vectors,
        ))
    }
}

/// The stored text of a document given as `text`: a str as it is (for a PDF, text extracted
/// before, as `Store.document` gives it back); bytes as UTF-8, or for `format="pdf"` the PDF
/// file, whose text layer is extracted without the GIL.
fn document_text(text: &Bound<'_, PyAny>, format: folio::SourceFormat) -> PyResult<String> {
    if let Ok(text) = text.cast::<PyString>() {
        return Ok(text.to_cow()?.into_owned());
    }
    let bytes = text.cast::<PyBytes>().map_err(|_| {
        let found = text.get_type().name().map(|n| n.to_string());
        invalid(format!(
            "text must be str or bytes, not {}",
            found.unwrap_or_else(|_| "another type".into())
        ))
    })?;
    if format == folio::SourceFormat::Pdf {
        let bytes = bytes.as_bytes().to_vec();
        return text
            .py()
            .detach(|| folio::input::pdf::extract(&bytes))
            .map_err(|e| invalid(format!("pdf: {e}")));
    }
    String::from_utf8(bytes.as_bytes().to_vec())
        .map_err(|_| invalid("text: bytes that are not UTF-8 (a PDF file needs format=\"pdf\")"))
}

/// `vectors=`: one float32 array of shape (chunks, dimension) for the `default` index, or a
/// dict of them by index name.
fn vectors(store: &folio::Store, value: &Bound<'_, PyAny>) -> PyResult<BTreeMap<String, Vec<f32>>> {
    let mut arrays = Vec::new();
    if let Ok(dict) = value.cast::<PyDict>() {
        for (name, array) in dict.iter() {
            let name = name
                .cast::<PyString>()
                .map_err(|_| invalid("vectors: index names must be str"))?
                .to_cow()?
                .into_owned();
            arrays.push((name, array));
        }
    } else {
        arrays.push((folio::store::DEFAULT_INDEX.to_owned(), value.clone()));
    }
    let indexes = store.indexes().list().map_err(errors::to_py)?;
    let mut out = BTreeMap::new();
    for (name, array) in arrays {
        let dimension = indexes
            .iter()
            .find(|i| i.name == name)
            .map(|i| i.embedder.dimension as usize)
            .ok_or_else(|| errors::to_py(folio::Error::UnknownIndex { name: name.clone() }))?;
        let (values, shape) = f32_array(&array, 2, &format!("vectors for index `{name}`"))?;
        if shape[1] != dimension {
            return Err(errors::to_py(folio::Error::DimensionMismatch {
                expected: dimension,
                found: shape[1],
            }));
        }
        folio::embed::validate(&values, dimension).map_err(errors::to_py)?;
        out.insert(name, values);
    }
    Ok(out)
}

/// Commits `ops` as one folio batch, without the GIL.
pub fn commit(py: Python<'_>, store: &folio::Store, ops: Vec<Op>) -> PyResult<Py<PyAny>> {
    let (ops, unchanged) = py
        .detach(|| as_written(store, ops))
        .map_err(errors::to_py)?;
    let receipt = if ops.is_empty() {
        // Nothing to write: no new version; the receipt names the versions that stay.
        let versions: BTreeMap<String, u64> = store
            .indexes()
            .list()
            .map_err(errors::to_py)?
            .into_iter()
            .map(|i| (i.name, i.head))
            .collect();
        serde_json::json!({
            "versions": versions, "upserted": 0, "deleted": 0, "acl_changed": 0,
            "children": 0, "truncation": [], "merged": {}, "merge_error": null,
        })
    } else {
        let receipt = py
            .detach(|| {
                let mut batch = store.batch();
                for op in ops {
                    match op {
                        Op::Upsert(doc, given, vectors) => {
                            let chunks = given
                                .whole
                                .then(|| folio::chunk::Chunked::whole(doc.text.len()));
                            batch.upsert_prepared(doc, chunks, vectors)
                        }
                        Op::Delete(id) => batch.delete(&id),
                        Op::SetAcl(id, acl) => batch.set_acl(&id, acl),
                    };
                }
                batch.commit()
            })
            .map_err(errors::to_py)?;
        serde_json::to_value(&receipt).map_err(|e| invalid(e.to_string()))?
    };
    let out = to_py(py, &receipt)?;
    out.set_item("unchanged", unchanged)?;
    Ok(out.unbind())
}

/// `ops` as they will be written: an upsert given no ACL takes its stored document's (a
/// replace never widens who may see it by accident), and the upserts that would change
/// nothing are left out (the document stored as it is, as `folio ingest` finds them: no new
/// version, nothing embedded again): those that bring no vectors and no chunks of their own,
/// of a document no other operation of the batch touches. Each stored document is read once.
/// Also returns how many were left out.
fn as_written(store: &folio::Store, ops: Vec<Op>) -> Result<(Vec<Op>, usize), folio::Error> {
    let mut touched: BTreeMap<String, usize> = BTreeMap::new();
    for op in &ops {
        let id = match op {
            Op::Upsert(doc, ..) => &doc.doc_id,
            Op::Delete(id) | Op::SetAcl(id, _) => id,
        };
        *touched.entry(id.clone()).or_default() += 1;
    }
    let mut kept = Vec::with_capacity(ops.len());
    let mut unchanged = 0;
    for op in ops {
        let Op::Upsert(mut doc, given, vectors) = op else {
            kept.push(op);
            continue;
        };
        let may_be_same = !given.whole && vectors.is_empty() && touched[&doc.doc_id] == 1;
        if given.inherit_acl || may_be_same {
            if let Some(stored) = store.document(&doc.doc_id)? {
                if given.inherit_acl {
                    doc.inherit_acl(&stored);
                }
                if may_be_same && doc.unchanged_from(&stored) {
                    unchanged += 1;
                    continue;
                }
            }
        }
        kept.push(Op::Upsert(doc, given, vectors));
    }
    Ok((kept, unchanged))
}

/// A set of changes committed atomically: all of them or none. Use it as a context manager
/// (`with store.batch() as b:`): it commits when the block ends and discards every change
/// when the block raises. Operations apply in the order they were added.
#[pyclass(module = "folio", name = "Batch", frozen)]
pub struct Batch {
    store: folio::Store,
    /// `None` once committed or rolled back.
    ops: Mutex<Option<Vec<Op>>>,
}

impl Batch {
    pub fn new(store: folio::Store) -> Self {
        Batch {
            store,
            ops: Mutex::new(Some(Vec::new())),
        }
    }

    fn push(&self, op: Op) -> PyResult<()> {
        self.ops.lock().as_mut().ok_or_else(finished)?.push(op);
        Ok(())
    }
}

fn finished() -> PyErr {
    errors::StoreError::new_err("this batch was already committed or rolled back")
}

#[pymethods]
impl Batch {
    /// Adds or replaces a document. `text` is a str, or bytes (UTF-8 text, or the file of a
    /// PDF). `format` is how it is read ("text", "markdown", "html", "csv", "tsv", "dialog",
    /// source code: "rust", "python", "javascript", "typescript", "tsx", "go", or "pdf": the
    /// PDF's text layer, without running headers and footers, becomes the stored text, and
    /// hits carry their `pages`); `acl` lists the principals who may see it (`[]`: public;
    /// None: public when new, the stored ACL when it replaces a stored document, so a
    /// replace never widens who may see it by accident); `metadata` is a dict of plain
    /// values kept with it. `vectors` brings your own
    /// embeddings: a float32 array of shape (chunks, dimension) in the order of
    /// `Store.plan`, for the `default` index, or a dict of such arrays by index name.
    /// `whole=True` stores the text as one chunk (its own parent) in every index, not cut:
    /// one row of `vectors` per index.
    #[pyo3(signature = (doc_id, text, *, format="text", acl=None, metadata=None, title=String::new(), source_uri=String::new(), vectors=None, whole=false))]
    #[allow(clippy::too_many_arguments)]
    fn upsert(
        &self,
        doc_id: String,
        text: &Bound<'_, PyAny>,
        format: &str,
        acl: Option<Vec<String>>,
        metadata: Option<&Bound<'_, PyDict>>,
        title: String,
        source_uri: String,
        vectors: Option<&Bound<'_, PyAny>>,
        whole: bool,
    ) -> PyResult<()> {
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
        self.push(args.into_op(&self.store)?)
    }

    /// Deletes a document and its chunks (`NotFound` at commit if there is none).
    fn delete(&self, doc_id: String) -> PyResult<()> {
        self.push(Op::Delete(doc_id))
    }

    /// Replaces who may see a document (empty: public), without re-embedding it.
    fn set_acl(&self, doc_id: String, acl: Vec<String>) -> PyResult<()> {
        self.push(Op::SetAcl(doc_id, acl))
    }

    /// Commits every operation in one transaction; returns the receipt (the new version of
    /// each index, counts). Searches run meanwhile, on the versions before it.
    fn commit(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let ops = self.ops.lock().take().ok_or_else(finished)?;
        commit(py, &self.store, ops)
    }

    /// Discards every operation: nothing is written.
    fn rollback(&self) -> PyResult<()> {
        self.ops.lock().take().map(drop).ok_or_else(finished)
    }

    fn __len__(&self) -> usize {
        self.ops.lock().as_ref().map_or(0, Vec::len)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Commits when the block ends normally, discards when it raised (the exception goes on).
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let ops = self.ops.lock().take();
        match (exc_type, ops) {
            (None, Some(ops)) => commit(py, &self.store, ops).map(|_| false),
            _ => Ok(false),
        }
    }
}
