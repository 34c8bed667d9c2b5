//! folio: an embedded vector store with built-in chunking.
#![forbid(unsafe_op_in_unsafe_fn)]

pub mod chunk;
pub mod cli;
pub mod document;
pub mod embed;
pub mod eval;
pub mod index;
pub mod input;
pub mod retrieve;
pub mod store;
pub mod tokens;
