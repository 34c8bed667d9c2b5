//! The Python exceptions: a small hierarchy under `folio.Error`, each raised with the Rust
//! error's message. Every folio error is matched through `folio::Error`, so a new variant
//! there lands in the base class until it is sorted here.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

create_exception!(folio, Error, PyException, "Every error folio raises.");
create_exception!(
    folio,
    StoreError,
    Error,
    "The store file or its storage: not a store, a format this build cannot read, damage, a closed store."
);
create_exception!(
    folio,
    LockedError,
    StoreError,
    "Another process held the store's writer lock for longer than `wait` (see `Store.open`)."
);
create_exception!(
    folio,
    ReadOnlyError,
    StoreError,
    "A write on a store opened with `read_only=True`."
);
create_exception!(
    folio,
    NotFound,
    Error,
    "No such store file, index, version, tag, alias, document or logged request."
);
create_exception!(
    folio,
    Conflict,
    Error,
    "A name that is taken, or an index still in use by an alias."
);
create_exception!(
    folio,
    EmbedError,
    Error,
    "The embedder failed, or the index's embedder is not registered."
);

/// The exception classes, registered on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("StoreError", py.get_type::<StoreError>())?;
    m.add("LockedError", py.get_type::<LockedError>())?;
    m.add("ReadOnlyError", py.get_type::<ReadOnlyError>())?;
    m.add("NotFound", py.get_type::<NotFound>())?;
    m.add("InvalidArgument", invalid_argument(py)?)?;
    m.add("Conflict", py.get_type::<Conflict>())?;
    m.add("EmbedError", py.get_type::<EmbedError>())?;
    Ok(())
}

/// Any folio error as the Python exception of its kind.
pub fn to_py(error: impl Into<folio::Error>) -> PyErr {
    use folio::Error as E;
    let error = error.into();
    let message = error.to_string();
    match error {
        E::Locked { .. } | E::Storage(folio::StorageError::Busy { .. }) => {
            LockedError::new_err(message)
        }
        E::Storage(folio::StorageError::ReadOnly) => ReadOnlyError::new_err(message),
        E::NotAStore { .. }
        | E::Damaged { .. }
        | E::UnsupportedFormat { .. }
        | E::Upgrade { .. }
        | E::UpgradeNeeded { .. }
        | E::NeedsRecovery { .. }
        | E::ReadOnlyLog { .. }
        | E::Io { .. }
        | E::EmbedderMismatch { .. }
        | E::IndexUnavailable { .. }
        | E::StoreInUse { .. }
        | E::TransactionInProgress
        | E::Exhausted { .. }
        | E::Storage(_) => StoreError::new_err(message),
        E::NotFound(_)
        | E::MissingFolder { .. }
        | E::UnknownIndex { .. }
        | E::UnknownVersion { .. }
        | E::UnknownTag { .. }
        | E::UnknownAlias { .. }
        | E::UnknownTarget { .. }
        | E::UnknownDocument { .. }
        | E::UnknownRequest { .. } => NotFound::new_err(message),
        E::InvalidName { .. }
        | E::DefaultIndex
        | E::NeedsEmbedder { .. }
        | E::DuplicateRoute { .. }
        | E::SplitAlias { .. }
        | E::InvalidDocument { .. }
        | E::DimensionMismatch { .. }
        | E::ZeroVector
        | E::InvalidParameter(_)
        | E::Vectors(_)
        | E::Shape(_) => invalid(message),
        E::IndexExists { .. }
        | E::TagExists { .. }
        | E::NameTaken { .. }
        | E::IndexInUse { .. } => Conflict::new_err(message),
        E::Embed(_) | E::EmbedderNotRegistered { .. } => EmbedError::new_err(message),
        _ => Error::new_err(message),
    }
}

const INVALID_ARGUMENT_DOC: &str = "An argument folio refuses: a parameter out of range, a bad name, a document or vectors that cannot be stored. Also a ValueError.";

/// `folio.InvalidArgument`: a `folio.Error` and a `ValueError`, as Python code that catches
/// either expects (`create_exception!` takes one base, so the class is made by `type`).
static INVALID_ARGUMENT: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn invalid_argument(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    let class = INVALID_ARGUMENT.get_or_try_init(py, || -> PyResult<Py<PyType>> {
        let bases = PyTuple::new(
            py,
            [
                py.get_type::<Error>().into_any(),
                py.get_type::<PyValueError>().into_any(),
            ],
        )?;
        let namespace = PyDict::new(py);
        namespace.set_item("__module__", "folio")?;
        namespace.set_item("__doc__", INVALID_ARGUMENT_DOC)?;
        let class = py
            .get_type::<PyType>()
            .call1(("InvalidArgument", bases, namespace))?;
        Ok(class.cast_into::<PyType>()?.unbind())
    })?;
    Ok(class.bind(py).clone())
}

/// An argument refused (a dtype, a shape, an unknown option, a number out of range):
/// `folio.InvalidArgument`.
pub fn invalid(message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::attach(|py| match invalid_argument(py) {
        Ok(class) => PyErr::from_type(class, message),
        Err(e) => e,
    })
}

/// A whole-number argument that may not be negative: `InvalidArgument` (a `ValueError`)
/// when it is, where PyO3's unsigned extraction raises `OverflowError`.
pub fn count(name: &str, value: i64) -> PyResult<u64> {
    u64::try_from(value).map_err(|_| invalid(format!("{name} must be 0 or more, not {value}")))
}
