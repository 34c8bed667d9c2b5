//! The storage layer: everything that touches the redb file (`storage-format.md` is its
//! contract). Its rooms only look down: `file` (tables, records, opening, upgrades,
//! segments' bytes), `read` (the catalog of loaded index states, snapshots, visibility,
//! documents, the integrity check), `write` (batches, commits, merges, gc, indexes, names
//! for versions) and `log` (the request log). The [`crate::Store`] handle delegates to them.

pub(crate) mod error;
pub(crate) mod file;
pub(crate) mod log;
pub(crate) mod options;
pub(crate) mod read;
pub(crate) mod write;
