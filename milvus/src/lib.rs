//! # folio-milvus
//!
//! Publishes folio index versions to Milvus (one collection per published version, which
//! also serves the later versions that add no segment to it) and searches them
//! through folio, with folio's access rules, versions and small-to-big answers. A member of
//! folio's workspace on top of the library's public API, so the library's dependency tree
//! stays without a gRPC client. See `docs/milvus.md` for the design.

mod alias;
mod catalog;
mod documents;
mod error;
pub mod expr;
mod follow;
mod node;
mod publish;
pub mod pushdown;
mod remote;
mod resolve;
pub mod schema;
mod search;
mod sync;

pub use alias::{AliasOutcome, AliasReport};
pub use catalog::catalog_name;
pub use documents::documents_name;
pub use error::Error;
pub use follow::{
    follow_status, DrainReport, FollowStatus, Follower, DEFAULT_DRAIN_BATCH, DEFAULT_INTERVAL,
    MAX_BACKOFF,
};
pub use node::{NodeCalls, Searcher, DEFAULT_DOCUMENTS_CACHE};
pub use publish::{
    PublishOptions, PublishReport, VectorIndex, DEFAULT_BATCH, DEFAULT_CHECKPOINT, DEFAULT_PREFIX,
};
pub use remote::{Remote, DEFAULT_CONNECT_TIMEOUT};
pub use resolve::Served;
pub use search::{RemoteCalls, Short, ShortReason, MASK_MAX, SOURCE_NAME, TOPK_MAX};
pub use sync::SyncReport;
