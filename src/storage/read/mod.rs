//! The read path: the catalog of loaded index states, one consistent snapshot per read,
//! versions and their visible sets (live ACLs, metadata filters), documents and chunks as
//! stored, exports, statistics and the integrity check.

pub(crate) mod catalog;
pub(crate) mod check;
pub(crate) mod docs;
pub(crate) mod export;
pub(crate) mod filters;
pub(crate) mod follow;
pub(crate) mod lexical;
pub(crate) mod outbox;
pub(crate) mod refs;
pub(crate) mod snapshot;
pub(crate) mod state;
pub(crate) mod stats;
pub(crate) mod targets;
pub(crate) mod unavailable;
