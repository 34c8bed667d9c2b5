//! Running the `folio` binary from integration tests. Its path is the test crate's
//! `env!("CARGO_BIN_EXE_folio")` (cargo sets it only when compiling the integration tests of
//! the package with the binary), so each test crate that runs it has a one-line `folio(args)`
//! calling [`run`] with it.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `bin ARGS...` and waits for it.
pub fn run(bin: &str, args: &[&str]) -> Output {
    Command::new(bin).args(args).output().expect("run folio")
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
