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
    /// The tokens of the index's embedder (its `tokenizer.json`; the estimate for an embedder
    /// without a tokenizer), or of the counter the caller hands the chunker.
    Embedder,
    /// OpenAI's `cl100k_base` tokens.
    Cl100k,
    /// OpenAI's `o200k_base` tokens.
    O200k,
}

impl std::str::FromStr for SizeUnit {
    type Err = String;
    /// The counter names of `--tokens`: `embedder`, `estimate`, `cl100k`, `o200k`, `chars`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "embedder" => Ok(SizeUnit::Embedder),
            "estimate" => Ok(SizeUnit::Tokens),
            "cl100k" => Ok(SizeUnit::Cl100k),
            "o200k" => Ok(SizeUnit::O200k),
            "chars" => Ok(SizeUnit::Chars),
            _ => Err(format!(
                "`{s}`: expected embedder, estimate, cl100k, o200k or chars (an index keeps \
                 the name of its counter, so a tokenizer file sizes chunks only as the \
                 embedder's own: bert:DIR)"
            )),
        }
    }
}

impl SizeUnit {
    /// Whether sizes count tokens (of some counter) rather than characters.
    pub fn is_tokens(self) -> bool {
        self != SizeUnit::Chars
    }
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
    /// [`ChildStrategy::Structure`] with `target` and `overlap` in `unit`s. In tokens, a
    /// child's embedded text (heading prefix included) is at most `target` tokens unless one
    /// unsplittable block (a code block, a table row group) is longer.
    StructureIn {
        /// The size a child is cut near, in `unit`s.
        target: usize,
        /// Units a child shares with the one before it.
        overlap: usize,
        /// What `target` and `overlap` count.
        unit: SizeUnit,
    },
}

impl ChildStrategy {
    /// Structure-aware children as `(target, overlap, unit)`; `None` for fixed windows.
    pub fn structure(self) -> Option<(usize, usize, SizeUnit)> {
        match self {
            ChildStrategy::Structure { target, overlap } => {
                Some((target, overlap, SizeUnit::Chars))
            }
            ChildStrategy::StructureIn {
                target,
                overlap,
                unit,
            } => Some((target, overlap, unit)),
            ChildStrategy::Fixed { .. } => None,
        }
    }

    /// Units a child shares with the one before it.
    pub fn overlap(self) -> usize {
        match self {
            ChildStrategy::Structure { overlap, .. }
            | ChildStrategy::StructureIn { overlap, .. }
            | ChildStrategy::Fixed { overlap, .. } => overlap,
        }
    }

    /// What its sizes count.
    pub fn unit(self) -> SizeUnit {
        match self {
            ChildStrategy::Structure { .. } => SizeUnit::Chars,
            ChildStrategy::StructureIn { unit, .. } | ChildStrategy::Fixed { unit, .. } => unit,
        }
    }
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
    /// [`ParentStrategy::Section`] with `max` in `unit`s.
    SectionIn {
        /// The longest parent, in `unit`s.
        max: usize,
        /// What `max` counts.
        unit: SizeUnit,
    },
    /// [`ParentStrategy::Fixed`] with `size` in `unit`s.
    FixedIn {
        /// Window size, in `unit`s.
        size: usize,
        /// What `size` counts.
        unit: SizeUnit,
    },
}

impl ParentStrategy {
    /// Its size and unit; `None` for [`ParentStrategy::Child`].
    pub fn size(self) -> Option<(usize, SizeUnit)> {
        match self {
            ParentStrategy::Section { max: size } | ParentStrategy::Fixed { size } => {
                Some((size, SizeUnit::Chars))
            }
            ParentStrategy::SectionIn { max: size, unit }
            | ParentStrategy::FixedIn { size, unit } => Some((size, unit)),
            ParentStrategy::Child => None,
        }
    }
}

/// What a child's `embed_text` is made of, and which sibling sections a structure-aware child
/// may hold together. Stored in index records (format 7): the discriminants are the stored
/// values (new forms are appended). `storage-format.md` spells each form out.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    bincode::Encode,
    bincode::Decode,
)]
#[serde(rename_all = "kebab-case")]
pub enum EmbedForm {
    /// What indexes of store formats 1 to 6 embed: the first `heading_depth` headings of the
    /// path, less those whose heading line the child holds, then the child's text whole;
    /// consecutive sibling sections share a child whenever they fit it.
    PathPrefix = 0,
    /// LangChain's header-splitter form: the first `heading_depth` headings as the prefix,
    /// the lines of those headings left out of the text, other headings as their titles
    /// without markup; only sibling sections under 2/5 of the target share a child. On
    /// conditionalqa with MiniLM it found more evidence (`docs/benchmarks/chunking.md`, "The
    /// heading path embedded").
    #[default]
    Sections = 1,
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
    /// How the heading path and the text make a child's `embed_text` (format 7; indexes of
    /// older files have [`EmbedForm::PathPrefix`]).
    #[serde(default)]
    pub embed_form: EmbedForm,
}

/// The characters a structure-aware child aims at, by default.
pub const DEFAULT_CHILD_TARGET: usize = 300;

/// The characters consecutive children share, by default.
pub const DEFAULT_CHILD_OVERLAP: usize = 0;

/// The most characters of a section parent, by default (longer sections are split).
pub const DEFAULT_SECTION_MAX: usize = 2000;

/// The heading levels prefixed to a child's `embed_text`, by default: all of Markdown's six.
/// On conditionalqa with MiniLM every level found more than 2 (`docs/benchmarks/chunking.md`,
/// "The heading path embedded").
pub const DEFAULT_HEADING_DEPTH: usize = 6;

/// Structure-aware children of [`DEFAULT_CHILD_TARGET`] characters with
/// [`DEFAULT_CHILD_OVERLAP`], section parents of at most [`DEFAULT_SECTION_MAX`], and
/// [`DEFAULT_HEADING_DEPTH`] heading levels in `embed_text` in [`EmbedForm::Sections`].
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
            embed_form: EmbedForm::Sections,
        }
    }
}

impl ChunkSpec {
    /// Refuses sizes outside [`crate::limits::CHUNK_SIZE`] and an overlap that is not
    /// smaller than its size (the chunkers would quietly clamp it).
    pub fn validate(&self) -> Result<(), InvalidParameter> {
        let (size, overlap) = match self.child {
            ChildStrategy::Structure { target, overlap }
            | ChildStrategy::StructureIn {
                target, overlap, ..
            } => (target, overlap),
            ChildStrategy::Fixed { size, overlap, .. } => (size, overlap),
        };
        check("chunk size", size, &CHUNK_SIZE)?;
        check("overlap", overlap, &(0..=size - 1))?;
        if let Some((size, unit)) = self.parent.size() {
            check("parent size", size, &CHUNK_SIZE)?;
            let child = self.child.unit();
            // One layout, in one unit, is cut into parents and structure-aware children (fixed
            // windows are cut on the text), and one counter measures a document.
            let structure = self.child.structure().is_some();
            let both_tokens = unit.is_tokens() && child.is_tokens();
            if unit != child && (structure || both_tokens) {
                return Err(InvalidParameter::new(
                    "parent unit",
                    format!("{unit:?}"),
                    format!("{child:?}, the child's unit"),
                ));
            }
        }
        Ok(())
    }

    /// The token unit the spec sizes anything in, if any (it has at most one, see
    /// [`ChunkSpec::validate`]): what the chunker needs a counter for.
    pub fn token_unit(&self) -> Option<SizeUnit> {
        let parent = self.parent.size().map(|(_, unit)| unit);
        [Some(self.child.unit()), parent]
            .into_iter()
            .flatten()
            .find(|u| u.is_tokens())
    }

    /// The spec with every size in tokens counted in `unit` instead (characters included:
    /// `structure:256t` in characters is `structure:256`); sizes in characters stay.
    pub fn in_tokens_of(mut self, unit: SizeUnit) -> ChunkSpec {
        let to = |u: SizeUnit| if u.is_tokens() { unit } else { u };
        self.child = match self.child {
            ChildStrategy::StructureIn {
                target,
                overlap,
                unit: u,
            } if to(u) == SizeUnit::Chars => ChildStrategy::Structure { target, overlap },
            ChildStrategy::StructureIn {
                target,
                overlap,
                unit: u,
            } => ChildStrategy::StructureIn {
                target,
                overlap,
                unit: to(u),
            },
            ChildStrategy::Fixed {
                size,
                overlap,
                unit: u,
            } => ChildStrategy::Fixed {
                size,
                overlap,
                unit: to(u),
            },
            child @ ChildStrategy::Structure { .. } => child,
        };
        self.parent = match self.parent {
            ParentStrategy::SectionIn { max, unit: u } if to(u) == SizeUnit::Chars => {
                ParentStrategy::Section { max }
            }
            ParentStrategy::SectionIn { max, unit: u } => {
                ParentStrategy::SectionIn { max, unit: to(u) }
            }
            ParentStrategy::FixedIn { size, unit: u } if to(u) == SizeUnit::Chars => {
                ParentStrategy::Fixed { size }
            }
            ParentStrategy::FixedIn { size, unit: u } => {
                ParentStrategy::FixedIn { size, unit: to(u) }
            }
            parent => parent,
        };
        self
    }

    /// Whether the layout (parents and structure-aware children) is sized in tokens.
    pub(crate) fn layout_in_tokens(&self) -> bool {
        match self.child.structure() {
            Some((_, _, unit)) => unit.is_tokens(),
            None => self.parent.size().is_some_and(|(_, unit)| unit.is_tokens()),
        }
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
        assert_eq!(bytes(SizeUnit::Embedder), [2]);
        assert_eq!(bytes(SizeUnit::Cl100k), [3]);
        assert_eq!(bytes(SizeUnit::O200k), [4]);
        let sized = ChildStrategy::StructureIn {
            target: 256,
            overlap: 0,
            unit: SizeUnit::Embedder,
        };
        assert_eq!(bytes(sized), [2, 251, 0, 1, 0, 2]);
        let section = ParentStrategy::SectionIn {
            max: 9,
            unit: SizeUnit::Cl100k,
        };
        assert_eq!(bytes(section), [3, 9, 3]);
        let windows = ParentStrategy::FixedIn {
            size: 9,
            unit: SizeUnit::O200k,
        };
        assert_eq!(bytes(windows), [4, 9, 4]);
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
            embed_form: EmbedForm::Sections,
        };
        assert_eq!(bytes(spec), [1, 5, 2, 1, 2, 3, 1]);
        assert_eq!(bytes(EmbedForm::PathPrefix), [0]);
    }
}
