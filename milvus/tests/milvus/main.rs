//! The crate against milvus-lite (`common`: a server per test), and the library's hook for
//! children ranked elsewhere without a server (`source`). One test crate (one binary to
//! link); each module was a test file of its own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod common;
mod failures;
mod follow;
mod milvus_api;
mod node;
mod publish;
mod pushdown;
mod remote;
mod source;
mod versions;
