//! The folder a store's file documents' ids are relative to (what `folio ingest --root`
//! sets and the store records), and what becomes of a file outside it. Ids relative to a
//! recorded root are the same wherever the store file lives, so a store copied or moved
//! next to its corpus (or elsewhere) still matches its files.

use std::path::{Path, PathBuf};

/// What becomes of a file whose real path lies outside the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outside {
    /// Refused ([`InputError::OutsideRoot`](super::InputError::OutsideRoot)): every id is a
    /// path inside the root.
    Refused,
    /// Its id is its absolute real path: the rule of stores whose file ids were made before
    /// stores recorded a root (relative to the store's folder, absolute outside it), kept for
    /// them alone so that their documents keep matching their files.
    AbsoluteId,
}

/// The folder file documents' ids are relative to, and the rule for files outside it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileRoot {
    /// The folder, absolute (a real path when recorded by `folio ingest`).
    pub path: PathBuf,
    /// What becomes of a file outside it.
    pub outside: Outside,
}

impl FileRoot {
    /// `path`, files outside it refused: the rule of every store that records its root.
    pub fn new(path: impl Into<PathBuf>) -> FileRoot {
        FileRoot {
            path: path.into(),
            outside: Outside::Refused,
        }
    }

    /// The id of the file at real path `real` (the root a real path too): its path relative
    /// to the root with `/` between components; outside it, its absolute path under
    /// [`Outside::AbsoluteId`] and `None` under [`Outside::Refused`].
    pub(crate) fn id_of(&self, real: &Path) -> Option<String> {
        match real.strip_prefix(&self.path) {
            Ok(relative) => Some(
                relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/"),
            ),
            Err(_) => match self.outside {
                Outside::AbsoluteId => Some(real.to_string_lossy().into_owned()),
                Outside::Refused => None,
            },
        }
    }
}
