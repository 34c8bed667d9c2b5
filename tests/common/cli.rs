//! Running the `folio` binary from integration tests.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// Runs `folio ARGS...` and waits for it.
pub fn folio(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_folio"))
        .args(args)
        .output()
        .expect("run folio")
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
