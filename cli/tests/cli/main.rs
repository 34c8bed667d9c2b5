//! The `folio` command end to end, and what needs the binary: format detection, parameter
//! validation, many processes on one store, `--embedder`, `folio bench ann`, the request log's
//! commands.
//! One test crate (one binary to link); each module was a test file of its own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod ann_bench;
mod cli;
mod cli_hardening;
mod dump;
mod embedder_cli;
mod file_ids;
mod formats_detect;
mod params_validation;
mod request_log;
mod store_processes;
mod versions_cli;

/// Runs the `folio` binary built for these tests with `args`, and waits for it.
fn folio(args: &[&str]) -> std::process::Output {
    folio_testkit::cli::run(env!("CARGO_BIN_EXE_folio"), args)
}
