//! The evaluation harness and its metrics, replay between versions, issue 15's loop end to
//! end. One test crate (one binary to link); each module was a test file of its own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod eval_harness;
mod eval_metrics;
mod loop_e2e;
mod replay_versions;

/// Runs the `folio` binary built for these tests with `args`, and waits for it.
fn folio(args: &[&str]) -> std::process::Output {
    folio_testkit::cli::run(env!("CARGO_BIN_EXE_folio"), args)
}
