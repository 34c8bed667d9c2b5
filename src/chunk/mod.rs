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
//!   child, flagged `oversized`.

use serde::{Deserialize, Serialize};

/// The format of a document's source text; decides which chunker reads it.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    bincode::Encode,
    bincode::Decode,
)]
#[serde(rename_all = "lowercase")]
pub enum SourceFormat {
    /// CommonMark with GitHub tables, parsed by pulldown-cmark.
    Markdown,
    /// Plain text (any language, CJK included): paragraphs, sentences, words.
    Text,
}

/// The unit a size is measured in.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    bincode::Encode,
    bincode::Decode,
)]
#[serde(rename_all = "lowercase")]
pub enum SizeUnit {
    /// Unicode scalar values (code points).
    Chars,
    /// Estimated tokens, see [`crate::tokens::count`].
    Tokens,
}

/// How children are cut.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    bincode::Encode,
    bincode::Decode,
)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ChildStrategy {
    /// Structure-aware: Markdown heading tree and blocks, then paragraph, sentence, word
    /// bounds. `target` and `overlap` are in characters.
    Structure { target: usize, overlap: usize },
    /// The baseline: windows of `size` units with `overlap` units shared, never inside a
    /// UTF-8 character (and, for tokens, never inside a token).
    Fixed {
        size: usize,
        overlap: usize,
        unit: SizeUnit,
    },
}

/// How parents (the reading units returned to a model) are cut.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    bincode::Encode,
    bincode::Decode,
)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ParentStrategy {
    /// Sections of the heading tree, split into parents of at most `max` characters.
    Section { max: usize },
    /// Fixed windows of `size` characters (cut at the best bound near the size).
    Fixed { size: usize },
    /// Every child is its own parent (plain chunking, no small-to-big).
    Child,
}

/// A complete chunking specification: what an index was built with.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    bincode::Encode,
    bincode::Decode,
)]
pub struct ChunkSpec {
    pub child: ChildStrategy,
    pub parent: ParentStrategy,
    /// How many heading levels are prefixed to a child's `embed_text`.
    pub heading_depth: usize,
}

impl Default for ChunkSpec {
    fn default() -> Self {
        ChunkSpec {
            child: ChildStrategy::Structure {
                target: 300,
                overlap: 0,
            },
            parent: ParentStrategy::Section { max: 2000 },
            heading_depth: 2,
        }
    }
}

/// A byte range `[start, end)` of a document's source text.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    bincode::Encode,
    bincode::Decode,
)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

/// A parent piece: a section (or part of one, or a window).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentPiece {
    pub span: Span,
    /// Heading texts from the top level down to this section (empty before the first heading).
    pub section_path: Vec<String>,
}

/// A child piece: the unit that is embedded and searched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildPiece {
    pub span: Span,
    /// Index into [`Chunked::parents`].
    pub parent: usize,
    pub section_path: Vec<String>,
    /// A code block or table larger than the target that was kept whole.
    pub oversized: bool,
}

/// The result of chunking one document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chunked {
    pub parents: Vec<ParentPiece>,
    /// In source order; each child's `parent` indexes `parents`.
    pub children: Vec<ChildPiece>,
}

mod fixed;
mod layout;
mod pack;
mod parents;
mod prose;
pub mod readers;
pub mod tree;

use layout::Layout;

/// Cuts one document into parents and children as `spec` says. Never panics, and the same
/// input always gives the same output.
pub fn chunk_document(text: &str, format: SourceFormat, spec: &ChunkSpec) -> Chunked {
    let tree = readers::read(text, format);
    chunk_tree(text, &tree, spec)
}

/// Cuts a document that a reader has read into `tree` (see [`readers::read`]). Every chunking
/// strategy works on any tree, whatever its format.
pub fn chunk_tree(text: &str, tree: &tree::Tree, spec: &ChunkSpec) -> Chunked {
    let layout = layout::from_tree(text, tree);
    let mut out = Chunked::default();
    match parents::spans(&layout, spec.parent) {
        Some(parents) => {
            for (index, span) in parents.into_iter().enumerate() {
                out.parents.push(ParentPiece {
                    span,
                    section_path: path_at(&layout, span.start),
                });
                for (span, oversized) in children(&layout, spec.child, span) {
                    let section_path = path_at(&layout, span.start);
                    out.children.push(ChildPiece {
                        span,
                        parent: index,
                        section_path,
                        oversized,
                    });
                }
            }
        }
        None => {
            let regions = layout.regions.iter();
            for (span, oversized) in regions.flat_map(|r| children(&layout, spec.child, *r)) {
                let section_path = path_at(&layout, span.start);
                let parent = out.parents.len();
                out.parents.push(ParentPiece {
                    span,
                    section_path: section_path.clone(),
                });
                out.children.push(ChildPiece {
                    span,
                    parent,
                    section_path,
                    oversized,
                });
            }
        }
    }
    out
}

/// The children inside `range` (a parent, or the whole content), with their oversized flag.
/// Structure-aware children never cross a section bound; fixed windows ignore structure.
fn children(layout: &Layout<'_>, strategy: ChildStrategy, range: Span) -> Vec<(Span, bool)> {
    match strategy {
        ChildStrategy::Structure { target, overlap } => layout
            .split_at_sections(range)
            .into_iter()
            .flat_map(|r| pack::structure(layout, r, target, overlap))
            .collect(),
        ChildStrategy::Fixed {
            size,
            overlap,
            unit,
        } => fixed::windows(layout.text, range, size, overlap, unit)
            .into_iter()
            .map(|s| (s, false))
            .collect(),
    }
}

fn path_at(layout: &Layout<'_>, pos: usize) -> Vec<String> {
    layout
        .section_at(pos)
        .map(|s| s.path.clone())
        .unwrap_or_default()
}

/// The text to embed for a child: the first `depth` headings of its section path joined by
/// " > ", a blank line, then the child's text. The text shown to a model has no such prefix.
pub fn embed_text(section_path: &[String], text: &str, depth: usize) -> String {
    let headings = &section_path[..depth.min(section_path.len())];
    if headings.is_empty() {
        return text.to_string();
    }
    let mut out = headings.join(" > ");
    out.push_str("\n\n");
    out.push_str(text);
    out
}
