//! Format readers: each turns one format's source into the block [`Tree`] the chunkers cut.
//! Readers know nothing of storage or embeddings.

pub mod markdown;
pub mod text;

use super::spec::SourceFormat;
use super::tree::Tree;

/// The block tree of `text` read as `format`. Never panics; a source a reader cannot make
/// sense of still gets a tree (as plain text), so nothing is lost.
pub fn read(text: &str, format: SourceFormat) -> Tree {
    match format {
        SourceFormat::Markdown => markdown::read(text),
        SourceFormat::Text => text::read(text),
    }
}
