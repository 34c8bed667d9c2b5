//! `folio NAME ARGS…` for a NAME folio does not know runs the program `folio-NAME` with
//! ARGS, like git: beside the `folio` executable first, then on PATH. Commands with heavy
//! dependencies of their own (`folio publish`, from the `milvus/` crate) live there, so the
//! library never links them.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

use crate::output::CliResult;

pub(crate) fn run(args: &[OsString]) -> CliResult {
    let Some((name, rest)) = args.split_first() else {
        return Err("no command given".to_string());
    };
    let program = format!("folio-{}", name.to_string_lossy());
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(&program)))
        .filter(|path| path.is_file());
    let path = beside.unwrap_or_else(|| PathBuf::from(&program));
    let status = Command::new(&path).args(rest).status().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            format!(
                "no command `{}`, and no program `{program}` beside folio or on PATH (see `folio --help`)",
                name.to_string_lossy()
            )
        } else {
            format!("could not run {}: {e}", path.display())
        }
    })?;
    if status.success() {
        Ok(())
    } else {
        // The program reported its own error; pass its exit code on.
        std::process::exit(status.code().unwrap_or(1))
    }
}
