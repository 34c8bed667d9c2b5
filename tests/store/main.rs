//! The store through the library: creation, damaged files, file size, properties against
//! oracles, versions, crashes and faults, errors, defaults, the fuzz model's
//! kept histories. One test crate (one binary to link); each module was a test file of its own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod crash_faults;
mod crash_kill;
mod crash_log;
mod defaults;
mod errors;
mod filter_props;
mod fuzz_regressions;
mod html_hits;
mod hybrid;
mod index_props;
mod live_acl_props;
mod outbox;
mod query_stages;
mod rerank;
mod search_results;
mod shared_postings;
mod shared_segments;
mod store_backup;
mod store_corrupt;
mod store_create;
mod store_damage;
mod store_file_size;
mod store_props;
mod versions_api;
mod versions_concurrency;
mod versions_format;
mod versions_gc;
mod versions_live_acl;
mod versions_merge;
mod versions_rollback;
