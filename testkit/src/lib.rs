//! Helpers shared by folio's integration tests (`tests/*/main.rs`), its benches and its fuzz
//! targets, as plain modules:
//!
//! - [`vectors`]: seeded synthetic vectors (SplitMix64, Gaussian clusters);
//! - [`cli`]: running a built binary (the test crate passes `env!("CARGO_BIN_EXE_folio")`,
//!   which only exists there);
//! - [`versions`]: small stores, documents, a fault-injecting storage backend;
//! - [`store_ops`]: store histories checked against a plain model (the `store_ops` fuzz
//!   target and the replayed crashers of `tests/store/fuzz_regressions.rs`);
//! - [`chunks`]: an independent checker of the chunking contract;
//! - [`models`]: the model tests' fixtures, `.fvecs` reference vectors, cosine;
//! - [`pdf`]: generated PDFs (a two-column paper, a report with a table across a page break);
//! - `version_oracle` (feature `eval`): what a replay between versions must report.
// Test code: failing loudly is the point; the helpers' names say what they do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

pub mod chunks;
pub mod cli;
pub mod models;
pub mod pdf;
pub mod store_ops;
pub mod vectors;
#[cfg(feature = "eval")]
pub mod version_oracle;
pub mod versions;

/// The value after the option `name` on the command line (`--dir DIR`): the benches' options.
pub fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// The test harness's name of test `name` in the module `module_path` (that module's
/// `module_path!()`): the path without the crate, as `--exact` wants it. For tests that run
/// their own binary again to run one other test (`module::name` in a test crate of several
/// modules).
pub fn test_name(module_path: &str, name: &str) -> String {
    match module_path.split_once("::") {
        Some((_, module)) => format!("{module}::{name}"),
        None => name.to_string(),
    }
}

/// Runs test `name` of the module `module_path` in this test binary again, as a child
/// process with `env` set (the child test does its work only when it is), its stdout piped
/// and its stderr dropped: the processes crash tests kill.
pub fn spawn_child(
    module_path: &str,
    name: &str,
    env: (&str, &std::path::Path),
) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", &test_name(module_path, name)])
        .args(["--nocapture", "--test-threads=1"])
        .env(env.0, env.1)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn child")
}
