//! `folio demo`: a store built from the sample corpus, searched as different principals.

use std::path::PathBuf;

pub(crate) fn run(_store: Option<PathBuf>) -> Result<(), String> {
    Err("the demo corpus is not bundled yet".into())
}
