//! The chunking specification an index is built with (stored in its record, so the order
//! of every enum's variants is part of the file format: see the byte test below).

use serde::{Deserialize, Serialize};

use crate::limits::{check, InvalidParameter, CHUNK_SIZE};

/// The format of a document's source text; decides which reader reads it. Stored in records:
/// the discriminants are the stored values (new formats are appended).
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
    Markdown = 0,
    /// Plain text (any language, CJK included): paragraphs, sentences, words.
    Text = 1,
    /// An HTML page: its main content without navigation, headers, footers and banners.
    Html = 2,
    /// Comma-separated values: the first record is the header, the others rows.
    Csv = 3,
    /// Tab-separated values, read like [`SourceFormat::Csv`].
    Tsv = 4,
    /// A dialog or ticket thread: JSON Lines of turns (`speaker`, `time`, `text`, `topic`).
    Dialog = 5,
    /// Rust source code, parsed by tree-sitter (feature `code`; plain text without it).
    Rust = 6,
    /// Python source code, read like [`SourceFormat::Rust`].
    Python = 7,
    /// JavaScript source code (JSX included), read like [`SourceFormat::Rust`].
    JavaScript = 8,
    /// TypeScript source code, read like [`SourceFormat::Rust`].
    TypeScript = 9,
    /// TypeScript with JSX (`.tsx`), read like [`SourceFormat::Rust`].
    Tsx = 10,
    /// Go source code, read like [`SourceFormat::Rust`].
    Go = 11,
    /// A PDF's text layer. The stored text is what extraction made of the file
    /// ([`crate::chunk::readers::pdf`]): blocks in reading order, a form feed where each page
    /// after the first starts, `#` heading lines; spans point into that text.
    Pdf = 12,
}

impl SourceFormat {
    /// The source code formats, in the order of their discriminants.
    pub const CODE: [SourceFormat; 6] = [
        SourceFormat::Rust,
        SourceFormat::Python,
        SourceFormat::JavaScript,
        SourceFormat::TypeScript,
        SourceFormat::Tsx,
        SourceFormat::Go,
    ];

    /// Whether the format is source code in a programming language.
    pub fn is_code(self) -> bool {
        Self::CODE.contains(&self)
    }
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
    Structure {
        /// The size a child is cut near, in characters.
        target: usize,
        /// Characters a child shares with the one before it.
        overlap: usize,
    },
    /// The baseline: windows of `size` units with `overlap` units shared, never inside a
    /// UTF-8 character (and, for tokens, never inside a token).
    Fixed {
        /// Window size, in `unit`s.
        size: usize,
        /// Units a window shares with the one before it.
        overlap: usize,
        /// What `size` and `overlap` count.
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
    Section {
        /// The longest parent, in characters.
        max: usize,
    },
    /// Fixed windows of `size` characters (cut at the best bound near the size).
    Fixed {
        /// Window size, in characters.
        size: usize,
    },
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
    /// How children (the embedded, searched units) are cut.
    pub child: ChildStrategy,
    /// How parents (the returned reading units) are cut.
    pub parent: ParentStrategy,
    /// How many heading levels are prefixed to a child's `embed_text`.
    pub heading_depth: usize,
}

/// The characters a structure-aware child aims at, by default.
pub const DEFAULT_CHILD_TARGET: usize = 300;

/// The characters consecutive children share, by default.
pub const DEFAULT_CHILD_OVERLAP: usize = 0;

/// The most characters of a section parent, by default (longer sections are split).
pub const DEFAULT_SECTION_MAX: usize = 2000;

/// The heading levels prefixed to a child's `embed_text`, by default.
pub const DEFAULT_HEADING_DEPTH: usize = 2;

/// Structure-aware children of [`DEFAULT_CHILD_TARGET`] characters with
/// [`DEFAULT_CHILD_OVERLAP`], section parents of at most [`DEFAULT_SECTION_MAX`], and
/// [`DEFAULT_HEADING_DEPTH`] heading levels in `embed_text`.
impl Default for ChunkSpec {
    fn default() -> Self {
        ChunkSpec {
            child: ChildStrategy::Structure {
                target: DEFAULT_CHILD_TARGET,
                overlap: DEFAULT_CHILD_OVERLAP,
            },
            parent: ParentStrategy::Section {
                max: DEFAULT_SECTION_MAX,
            },
            heading_depth: DEFAULT_HEADING_DEPTH,
        }
    }
}

impl ChunkSpec {
    /// Refuses sizes outside [`crate::limits::CHUNK_SIZE`] and an overlap that is not
    /// smaller than its size (the chunkers would quietly clamp it).
    pub fn validate(&self) -> Result<(), InvalidParameter> {
        let (size, overlap) = match self.child {
            ChildStrategy::Structure { target, overlap } => (target, overlap),
            ChildStrategy::Fixed { size, overlap, .. } => (size, overlap),
        };
        check("chunk size", size, &CHUNK_SIZE)?;
        check("overlap", overlap, &(0..=size - 1))?;
        match self.parent {
            ParentStrategy::Section { max: size } | ParentStrategy::Fixed { size } => {
                check("parent size", size, &CHUNK_SIZE)?;
            }
            ParentStrategy::Child => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(value: impl bincode::Encode) -> Vec<u8> {
        bincode::encode_to_vec(value, bincode::config::standard()).unwrap()
    }

    /// The store keeps these in index and revision records with bincode's standard
    /// configuration (an enum is its variant index, then its fields; `storage-format.md`),
    /// so reordering variants would change what old files mean. New variants go last.
    #[test]
    fn stored_variants_keep_their_bytes() {
        assert_eq!(bytes(SourceFormat::Markdown), [0]);
        assert_eq!(bytes(SourceFormat::Text), [1]);
        assert_eq!(bytes(SourceFormat::Html), [2]);
        assert_eq!(bytes(SourceFormat::Csv), [3]);
        assert_eq!(bytes(SourceFormat::Tsv), [4]);
        assert_eq!(bytes(SourceFormat::Dialog), [5]);
        assert_eq!(bytes(SourceFormat::Rust), [6]);
        assert_eq!(bytes(SourceFormat::Python), [7]);
        assert_eq!(bytes(SourceFormat::JavaScript), [8]);
        assert_eq!(bytes(SourceFormat::TypeScript), [9]);
        assert_eq!(bytes(SourceFormat::Tsx), [10]);
        assert_eq!(bytes(SourceFormat::Go), [11]);
        assert_eq!(bytes(SourceFormat::Pdf), [12]);
        assert_eq!(bytes(SizeUnit::Chars), [0]);
        assert_eq!(bytes(SizeUnit::Tokens), [1]);
        let structure = ChildStrategy::Structure {
            target: 300,
            overlap: 7,
        };
        assert_eq!(bytes(structure), [0, 251, 44, 1, 7]);
        let fixed = ChildStrategy::Fixed {
            size: 5,
            overlap: 2,
            unit: SizeUnit::Tokens,
        };
        assert_eq!(bytes(fixed), [1, 5, 2, 1]);
        assert_eq!(bytes(ParentStrategy::Section { max: 9 }), [0, 9]);
        assert_eq!(bytes(ParentStrategy::Fixed { size: 9 }), [1, 9]);
        assert_eq!(bytes(ParentStrategy::Child), [2]);
        let spec = ChunkSpec {
            child: fixed,
            parent: ParentStrategy::Child,
            heading_depth: 3,
        };
        assert_eq!(bytes(spec), [1, 5, 2, 1, 2, 3]);
    }
}
