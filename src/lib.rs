//! # folio
//!
//! An embedded vector store with built-in chunking, linked in-process and keeping
//! everything in **one file**: documents, parent and child chunks, vectors, the graph index,
//! per-principal visibility bitmaps and immutable index versions.
//!
//! - [`chunk`] cuts documents structure-aware (Markdown heading tree, code blocks and tables
//!   kept whole, sentence and CJK bounds), into parents and children with byte spans;
//! - [`embed`] turns text into vectors (a built-in offline lexical embedder, or yours);
//! - [`index`] searches vectors (SIMD exact scan, HNSW, a filter-aware planner);
//! - [`store`] keeps it all in a redb file, committed atomically as index versions;
//! - [`query`] searches small children and returns their parents (small-to-big), only
//!   from documents the caller may see;
//!
//! ```
//! use folio::{Document, SearchRequest, SourceFormat, Store};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! // Create a store: one file, the built-in embedder, no model files, every setting at its
//! // default (see "Defaults" in the docs of `StoreBuilder`).
//! let store = Store::builder().create(true).open(dir.path().join("kb.folio"))?;
//!
//! // Ingest: documents are chunked, embedded and committed atomically.
//! let mut batch = store.batch();
//! batch.upsert(Document::new(
//!     "runbook",
//!     SourceFormat::Markdown,
//!     "# Deploys\n\n## Rollback\n\nRun `release rollback` to undo a bad deploy.\n",
//! ).with_acl(["engineering"]));
//! batch.upsert(Document::new(
//!     "handbook",
//!     SourceFormat::Markdown,
//!     "# Handbook\n\n## Vacation\n\nEveryone gets 25 days of paid vacation.\n",
//! ));
//! batch.commit()?;
//!
//! // Search as a principal: children are matched, parents are returned.
//! let response = store.search(&SearchRequest::text("how do I undo a deploy").as_principals(["engineering"]))?;
//! assert_eq!(response.results[0].doc_id, "runbook");
//! assert_eq!(response.results[0].section_path, ["Deploys", "Rollback"]);
//!
//! // Without the principal, the runbook is invisible.
//! let public = store.search(&SearchRequest::text("how do I undo a deploy"))?;
//! assert!(public.results.iter().all(|hit| hit.doc_id != "runbook"));
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_op_in_unsafe_fn)]

pub mod chunk;
pub mod document;
pub mod embed;
mod error;
pub mod filter;
pub mod index;
pub mod ingest;
pub mod input;
pub mod limits;
pub mod progress;
pub mod query;
pub mod review;
mod storage;
pub mod store;
pub mod tokens;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub use chunk::{ChildStrategy, ChunkSpec, ParentStrategy, SizeUnit, SourceFormat};
pub use document::Document;
pub use embed::{EmbedError, Embedder, VectorError};
pub use error::Error;
pub use filter::{Filter, FilterError, MetadataValue};
pub use limits::InvalidParameter;
pub use query::{Expand, Hit, QueryError, SearchMode, SearchRequest, SearchResponse};
pub use store::{
    Access, Batch, CommitReceipt, CompactFileError, DocumentProblem, DryRun, GraphParams,
    IndexConfig, IndexEmbedder, IndexError, MergePolicy, OpenError, ReadError, StorageError, Store,
    StoreBuilder, WriteError,
};
