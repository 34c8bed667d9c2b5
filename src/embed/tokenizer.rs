//! Models' own tokenizers as token counters: any Hugging Face `tokenizer.json`, OpenAI's
//! BPEs (feature `tokens`), and what the native embedders ask of a tokenizer (ids with the
//! byte span each came from, feature `models`).

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
    use crate::embed::EmbedError;
    use crate::tokens::{CharCounter, TokenCounter};

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

        fn starts(&self, text: &str) -> Vec<usize> {
            // A text the tokenizer cannot read counts as its characters: a count must not
            // fail half way through an index build.
            match self.tokenizer.encode(text, false) {
                Ok(encoding) => encoding
                    .get_offsets()
                    .iter()
                    .map(|&(start, _)| floor_char_boundary(text, start))
                    .collect(),
                Err(_) => CharCounter.starts(text),
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
