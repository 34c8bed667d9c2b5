//! Replays, as ordinary tests, the histories in `fuzz/regressions/`: inputs of the
//! `store_ops` fuzz target that once broke an invariant (and a seed history that touches
//! every operation), run through the same model (`fuzz/model/store_ops.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod versions_support;

#[allow(dead_code)] // DOCS and WORDS bound the fuzzer's inputs
#[path = "../fuzz/model/store_ops.rs"]
mod store_ops;

#[path = "../fuzz/regressions/mod.rs"]
mod regressions;
