//! What chunking produces: byte spans of the source, and the parent and child pieces.

use serde::{Deserialize, Serialize};

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
    /// Start, in bytes of the source text.
    pub start: usize,
    /// End, exclusive.
    pub end: usize,
}

/// The pages a chunk lies on, for formats with pages (PDF), numbered from 1 in file order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Pages {
    /// The page of its first character.
    pub first: u32,
    /// The page of its last character.
    pub last: u32,
}

/// A parent piece: a section (or part of one, or a window).
#[derive(Debug, Clone, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub struct ParentPiece {
    /// Its byte span in the source text.
    pub span: Span,
    /// Heading texts from the top level down to this section (empty before the first heading).
    pub section_path: Vec<String>,
}

/// A child piece: the unit that is embedded and searched.
#[derive(Debug, Clone, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub struct ChildPiece {
    /// Its byte span in the source text.
    pub span: Span,
    /// Index into [`Chunked::parents`].
    pub parent: usize,
    /// Heading texts from the top level down to its section.
    pub section_path: Vec<String>,
    /// A code block or table larger than the target that was kept whole.
    pub oversized: bool,
}

/// The result of chunking one document.
#[derive(Debug, Clone, Default, PartialEq, Eq, bincode::Encode, bincode::Decode)]
pub struct Chunked {
    /// In source order.
    pub parents: Vec<ParentPiece>,
    /// In source order; each child's `parent` indexes `parents`.
    pub children: Vec<ChildPiece>,
}

impl Chunked {
    /// A text of `len` bytes as one child that is its own parent: how vector-store
    /// frameworks (LangChain, LlamaIndex) store a text they give, already cut.
    pub fn whole(len: usize) -> Chunked {
        let span = Span { start: 0, end: len };
        Chunked {
            parents: vec![ParentPiece {
                span,
                section_path: Vec::new(),
            }],
            children: vec![ChildPiece {
                span,
                parent: 0,
                section_path: Vec::new(),
                oversized: false,
            }],
        }
    }
}
