//! The file: redb's tables, the records stored in them and their one encoding, opening
//! and creating the file (any number of writing and reading processes), format checks and
//! in-place upgrades, the current-ACL bitmaps, segments' vectors, graphs and lexical
//! postings as blocks, and the shared segment files beside the store that reader processes
//! map.

pub(crate) mod backup;
pub(crate) mod current;
pub(crate) mod format;
pub(crate) mod open;
pub(crate) mod outbox;
pub(crate) mod postings;
pub(crate) mod records;
pub(crate) mod recover;
pub(crate) mod rows;
pub(crate) mod sealed;
pub(crate) mod segment;
pub(crate) mod shared_segments;
pub(crate) mod tables;
pub(crate) mod temp_copy;
pub(crate) mod upgrade;
