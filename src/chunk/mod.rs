//! Chunking: turn one document's source text into parent and child pieces.
//!
//! Everything here works on `&str` and byte spans only; it knows nothing of
//! embeddings or storage, so every chunker is testable alone.
//!
//! Contract shared by all chunkers (see `chunk_document`):
//! - every span is a byte range `[start, end)` of the source, on UTF-8 char boundaries;
//! - children lie inside their parent's span;
//! - with zero overlap, the children of a document cover every non-whitespace byte of the
//!   source exactly once (Markdown front matter excepted: it is dropped); with overlap `o`,
//!   every non-whitespace byte is covered at least once and consecutive children share at
//!   most `o` characters;
//! - Markdown code blocks and tables are never split: an oversized one stays whole in one
//!   child, flagged `oversized`;
//! - a structure-aware child holds part of one section, or whole sections of one parent
//!   section packed up to the target (`siblings.rs`), with their common path.

mod cut;
mod fixed;
mod layout;
mod pack;
mod parents;
mod pieces;
mod prose;
pub mod readers;
mod siblings;
mod spec;
pub mod tree;
mod tree_layout;

pub use cut::{
    chunk_document, chunk_document_with, chunk_tree, embed_texts, fits, late_input, pages,
    EmbedTexts,
};
pub use pieces::{ChildPiece, Chunked, Pages, ParentPiece, Span};
pub use readers::markdown::{front_matter, FrontMatter};
pub use readers::visible_text_of;
pub use spec::{
    ChildStrategy, ChunkSpec, EmbedForm, ParentStrategy, SizeUnit, SourceFormat,
    DEFAULT_CHILD_OVERLAP, DEFAULT_CHILD_TARGET, DEFAULT_HEADING_DEPTH, DEFAULT_SECTION_MAX,
};
