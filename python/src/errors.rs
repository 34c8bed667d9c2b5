//! The Python exceptions: a small hierarchy under `folio.Error`, each raised with the Rust
//! error's message. Every folio error is matched through `folio::Error`, so a new variant
//! there lands in the base class until it is sorted here.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

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
    "Another process has the store open for writing (see `wait` in `Store.open`)."
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
    InvalidArgument,
    Error,
    "An argument folio refuses: a parameter out of range, a bad name, a document or vectors that cannot be stored."
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
    m.add("InvalidArgument", py.get_type::<InvalidArgument>())?;
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
        E::Locked { .. } => LockedError::new_err(message),
        E::Storage(folio::StorageError::ReadOnly) => ReadOnlyError::new_err(message),
        E::NotAStore { .. }
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
        | E::Shape(_) => InvalidArgument::new_err(message),
        E::IndexExists { .. }
        | E::TagExists { .. }
        | E::NameTaken { .. }
        | E::IndexInUse { .. } => Conflict::new_err(message),
        E::Embed(_) | E::EmbedderNotRegistered { .. } => EmbedError::new_err(message),
        _ => Error::new_err(message),
    }
}

/// An argument the binding itself refuses (a dtype, a shape, an unknown option).
pub fn invalid(message: impl Into<String>) -> PyErr {
    InvalidArgument::new_err(message.into())
}
