//! What ingest refuses: a document that does not fit the index, an embedder that is not
//! there or fails, vectors that are not finite.

use crate::embed::{EmbedError, VectorError};

/// What is wrong with a document of a batch (see [`WriteError::InvalidDocument`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DocumentProblem {
    /// The `doc_id` is empty.
    #[error("the doc_id is empty")]
    EmptyId,
    /// The `doc_id` is longer than the store takes.
    #[error("the doc_id is {len} bytes, more than {max}")]
    IdTooLong {
        /// Its length in bytes.
        len: usize,
        /// The longest `doc_id` in bytes.
        max: usize,
    },
    /// An ACL principal is the empty string (which would read as public).
    #[error("an ACL principal is empty")]
    EmptyPrincipal,
    /// An application-cut piece ([`crate::Batch::upsert_chunked`]) is not a span of the text.
    #[error("{piece} {number} has span {start}..{end} outside the text or inside a character")]
    BadSpan {
        /// A parent or a chunk.
        piece: Piece,
        /// Its position in the list given.
        number: usize,
        /// The span's start, in bytes.
        start: usize,
        /// The span's end, in bytes.
        end: usize,
    },
    /// A chunk names a parent the document does not have.
    #[error("chunk {chunk} names parent {parent}, which does not exist")]
    UnknownParent {
        /// The chunk's position.
        chunk: usize,
        /// The parent it names.
        parent: usize,
    },
    /// A chunk's span is not inside its parent's span.
    #[error("chunk {chunk} lies outside its parent")]
    OutsideParent {
        /// The chunk's position.
        chunk: usize,
    },
    /// A cosine index cannot store a zero vector: it has no direction.
    #[error("chunk {chunk} has a zero vector in index `{index}`, which has no cosine")]
    ZeroVector {
        /// The index.
        index: String,
        /// The chunk's position.
        chunk: usize,
    },
    /// The vectors given for an index are not one row per chunk.
    #[error(
        "it has {chunks} chunks in index `{index}`, so it needs {expected} floats \
         ({chunks} x {dimension}), got {found}"
    )]
    VectorCount {
        /// The index.
        index: String,
        /// The document's chunks in that index.
        chunks: usize,
        /// The index's dimension.
        dimension: usize,
        /// Floats needed: `chunks x dimension`.
        expected: usize,
        /// Floats given.
        found: usize,
    },
}

/// A parent or a child piece (in [`DocumentProblem::BadSpan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Piece {
    /// A parent chunk.
    Parent,
    /// A child chunk.
    Chunk,
}

impl std::fmt::Display for Piece {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Piece::Parent => "parent",
            Piece::Chunk => "chunk",
        })
    }
}

/// Why a batch's documents could not be cut or embedded for an index (surfaced as
/// [`crate::WriteError`] by the store).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IngestError {
    /// A document was refused.
    #[error("document `{doc_id}`: {problem}")]
    InvalidDocument {
        /// The document.
        doc_id: String,
        /// What is wrong with it.
        problem: DocumentProblem,
    },
    /// The index's embedder is not registered, and the batch brought no vectors for it.
    #[error("index `{index}` embeds with `{embedder}`, which is not registered")]
    EmbedderNotRegistered {
        /// The index.
        index: String,
        /// The embedder's name.
        embedder: String,
    },
    /// Vectors that are not finite.
    #[error(transparent)]
    Vectors(#[from] VectorError),
    /// The embedder failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// A staged document did not decode (a bug: the batch encoded it itself).
    #[error("{0}")]
    Staged(String),
}
