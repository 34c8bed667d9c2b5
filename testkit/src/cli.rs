//! Running the `folio` binary from integration tests. Its path is the test crate's
//! `env!("CARGO_BIN_EXE_folio")` (cargo sets it only when compiling the integration tests of
//! the package with the binary), so each test crate that runs it has a one-line `folio(args)`
//! calling [`run`] with it.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `bin ARGS...` and waits for it, in the folder of its first absolute path argument
/// (the store, in every command that takes one), as a user who keeps a store beside its
/// corpus works: `folio ingest` makes file ids relative to the current folder when the
/// store records no root yet, and the tests' ids are relative to the folder of their store.
/// Without such an argument it runs in the test's own working directory.
pub fn run(bin: &str, args: &[&str]) -> Output {
    let folder = args
        .iter()
        .map(Path::new)
        .find(|arg| arg.is_absolute())
        .and_then(Path::parent)
        .filter(|folder| folder.is_dir());
    run_in(bin, folder, args)
}

/// Runs `bin ARGS...` in `folder` (the test's own working directory when `None`).
pub fn run_in(bin: &str, folder: Option<&Path>, args: &[&str]) -> Output {
    let mut command = Command::new(bin);
    if let Some(folder) = folder {
        command.current_dir(folder);
    }
    command.args(args).output().expect("run folio")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}
