//! Why an embedder could not be built or could not embed.

use std::path::PathBuf;
use std::time::Duration;

/// Why an embedder could not be built or could not embed a batch.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// An application embedder's own failure.
    #[error("embedder failed: {0}")]
    Failed(String),
    /// Text given to an index whose vectors the application computes
    /// ([`crate::embed::GivenVectors`]).
    #[error(
        "`{embedder}` embeds no text: pass the vectors with each document, and search by vector"
    )]
    VectorsOnly {
        /// The embedder's name (`vectors:DIM`).
        embedder: String,
    },
    /// An `--embedder` string that does not parse.
    #[error("embedder `{spec}`: {reason}")]
    Spec {
        /// The string as given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The embedder needs a cargo feature this build lacks.
    #[error("{what} needs folio built with the `{feature}` feature")]
    FeatureMissing {
        /// The cargo feature.
        feature: &'static str,
        /// What needed it.
        what: String,
    },
    /// A model folder (or one of its files) is missing or unreadable.
    #[error("model {path}: {reason}")]
    Model {
        /// The folder or file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A named model's file whose sha256 is not the one pinned: the file is not used (a
    /// downloaded one is removed from the cache).
    #[error(
        "model `{model}`: {path} has sha256 {actual}, not the pinned {expected}: not used \
         (delete it to fetch the model again)"
    )]
    Checksum {
        /// The named model.
        model: String,
        /// The file.
        path: PathBuf,
        /// The pinned sha256.
        expected: String,
        /// The file's.
        actual: String,
    },
    /// A model that is nowhere folio looks and could not be downloaded.
    #[error("model {model} is not on this machine and was not downloaded ({reason}): {help}")]
    ModelUnavailable {
        /// The model (name, repository and revision).
        model: String,
        /// Why it was not downloaded (offline, the download's error).
        reason: String,
        /// Where to put its files.
        help: String,
    },
    /// The tokenizer failed on a text.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The model's computation failed.
    #[error("model inference: {0}")]
    Inference(String),
    /// A service answered with an HTTP error status (after the retries, for 429 and 5xx).
    #[error("{endpoint}: HTTP {status}: {body}")]
    Http {
        /// The URL called.
        endpoint: String,
        /// The HTTP status of the last answer.
        status: u16,
        /// The start of the last answer's body.
        body: String,
        /// Requests made, retries included.
        attempts: u32,
    },
    /// A service or program did not answer in time.
    #[error("{endpoint}: no answer within {after:?} (attempt {attempts})")]
    Timeout {
        /// The URL or program.
        endpoint: String,
        /// How long each attempt waited.
        after: Duration,
        /// Attempts made.
        attempts: u32,
    },
    /// The connection failed (refused, reset, DNS, TLS).
    #[error("{endpoint}: {reason}")]
    Transport {
        /// The URL called.
        endpoint: String,
        /// What failed.
        reason: String,
    },
    /// A service or program answered something that is not the protocol.
    #[error("{endpoint}: malformed answer: {reason}")]
    Protocol {
        /// The URL or program.
        endpoint: String,
        /// What was wrong with the answer.
        reason: String,
    },
    /// The embedder's vectors have another length than it declared (or than the index).
    #[error("the embedder returned vectors of {got} dimensions, expected {expected}")]
    Dimension {
        /// The declared (or the index's) dimension.
        expected: usize,
        /// The length received.
        got: usize,
    },
    /// The embedder returned another number of vectors than texts.
    #[error("the embedder returned {got} vectors for {expected} texts")]
    Count {
        /// Texts sent.
        expected: usize,
        /// Vectors received.
        got: usize,
    },
    /// An external command could not be started or died.
    #[error("command `{command}`: {reason}")]
    Command {
        /// The command line.
        command: String,
        /// What failed.
        reason: String,
    },
    /// A chunk is longer than the model reads and the truncation setting is `refuse`.
    #[error(
        "chunk {chunk} of document `{doc_id}` has {tokens} tokens, more than the model's {max} \
         (truncation setting: refuse)"
    )]
    TooLong {
        /// The document.
        doc_id: String,
        /// The chunk's position among the document's children.
        chunk: usize,
        /// Its tokens as the model sees them.
        tokens: usize,
        /// The model's limit.
        max: usize,
    },
}

#[cfg(feature = "models")]
impl EmbedError {
    /// A model file at `path` that could not be read or used.
    pub(crate) fn model(path: &std::path::Path, e: impl std::fmt::Display) -> Self {
        EmbedError::Model {
            path: path.to_path_buf(),
            reason: e.to_string(),
        }
    }
}
