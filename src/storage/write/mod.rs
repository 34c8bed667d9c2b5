//! The write path: batches staged, chunked and embedded before the writer lock, then
//! committed as new index versions; merges of segments, garbage collection, named
//! indexes, names for versions (tags, aliases, rollback), and the recorded file root.

pub(crate) mod batch;
pub(crate) mod commit;
pub(crate) mod compact;
pub(crate) mod gc;
pub(crate) mod indexes;
pub(crate) mod outbox;
pub(crate) mod plan;
pub(crate) mod refs;
pub(crate) mod root;
pub(crate) mod staged;
pub(crate) mod writer;
