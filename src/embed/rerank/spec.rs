//! The `--rerank` strings: `bert:DIR`, `onnx:MODEL.onnx@DIR`, `cmd:"COMMAND"`, `tei:URL`,
//! `cohere:MODEL@URL` and `jina:MODEL@URL`. An arm is a variant, a line of [`RerankerSpec`]'s parser and a line of
//! its builder.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{CommandReranker, Reranker};
use crate::embed::{CommandOptions, EmbedError};

/// A reranker, as the command line names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RerankerSpec {
    /// A Hugging Face sequence-classification folder run in-process on candle
    /// ([`super::CrossEncoder::load`], feature `models`).
    Bert {
        /// The model folder.
        dir: PathBuf,
    },
    /// A cross-encoder's ONNX export run by onnxruntime
    /// ([`super::CrossEncoder::load_onnx`], feature `onnx`).
    Onnx {
        /// The `.onnx` file.
        model: PathBuf,
        /// The folder of its `tokenizer.json` and `config.json`.
        dir: PathBuf,
    },
    /// A program speaking the pipe protocol of [`CommandReranker`].
    Command {
        /// The command line.
        command: String,
    },
    /// A text-embeddings-inference server's `/rerank` (feature `http`).
    Tei {
        /// The server's base URL.
        url: String,
    },
    /// Cohere's rerank API (feature `http`).
    Cohere {
        /// The model.
        model: String,
        /// The endpoint.
        url: String,
    },
    /// Jina's rerank API, Cohere's shape (feature `http`).
    Jina {
        /// The model.
        model: String,
        /// The endpoint.
        url: String,
    },
}

const GRAMMAR: &str = "expected bert:DIR, onnx:MODEL.onnx@DIR, cmd:\"COMMAND\", tei:URL, \
                       cohere:MODEL@URL or jina:MODEL@URL";

impl std::str::FromStr for RerankerSpec {
    type Err = EmbedError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let fail = |reason: &str| EmbedError::Spec {
            spec: input.to_string(),
            reason: format!("as a reranker: {reason}"),
        };
        let (kind, rest) = input.split_once(':').ok_or_else(|| fail(GRAMMAR))?;
        let rest = rest.trim();
        let url = |url: &str| {
            let web = url.starts_with("http://") || url.starts_with("https://");
            web.then(|| url.to_string())
                .ok_or_else(|| fail("the URL must start with http:// or https://"))
        };
        let model_url = || match rest.split_once('@') {
            Some((model, at)) if !model.is_empty() => Ok((model.to_string(), url(at)?)),
            _ => Err(fail(
                "MODEL@URL, e.g. cohere:rerank-v3.5@https://api.cohere.com/v2/rerank",
            )),
        };
        match kind.trim() {
            "bert" if !rest.is_empty() => Ok(RerankerSpec::Bert { dir: rest.into() }),
            "onnx" => match rest.split_once('@') {
                Some((model, dir)) if !model.is_empty() && !dir.is_empty() => {
                    Ok(RerankerSpec::Onnx {
                        model: model.into(),
                        dir: dir.into(),
                    })
                }
                _ => Err(fail(
                    "onnx:MODEL.onnx@DIR, the folder holding tokenizer.json",
                )),
            },
            "cmd" if !rest.is_empty() => Ok(RerankerSpec::Command {
                command: rest
                    .strip_prefix('"')
                    .and_then(|c| c.strip_suffix('"'))
                    .unwrap_or(rest)
                    .to_string(),
            }),
            "tei" => Ok(RerankerSpec::Tei { url: url(rest)? }),
            "cohere" => model_url().map(|(model, url)| RerankerSpec::Cohere { model, url }),
            "jina" => model_url().map(|(model, url)| RerankerSpec::Jina { model, url }),
            _ => Err(fail(GRAMMAR)),
        }
    }
}

impl fmt::Display for RerankerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RerankerSpec::Bert { dir } => write!(f, "bert:{}", dir.display()),
            RerankerSpec::Onnx { model, dir } => {
                write!(f, "onnx:{}@{}", model.display(), dir.display())
            }
            RerankerSpec::Command { command } => write!(f, "cmd:\"{command}\""),
            RerankerSpec::Tei { url } => write!(f, "tei:{url}"),
            RerankerSpec::Cohere { model, url } => write!(f, "cohere:{model}@{url}"),
            RerankerSpec::Jina { model, url } => write!(f, "jina:{model}@{url}"),
        }
    }
}

impl RerankerSpec {
    /// Starts, loads or connects to the reranker.
    pub fn build(&self) -> Result<Arc<dyn Reranker>, EmbedError> {
        match self {
            RerankerSpec::Bert { dir } => bert(dir),
            RerankerSpec::Onnx { model, dir } => onnx(model, dir),
            RerankerSpec::Command { command } => Ok(Arc::new(CommandReranker::start(
                command,
                CommandOptions::default(),
            )?)),
            RerankerSpec::Tei { .. } | RerankerSpec::Cohere { .. } | RerankerSpec::Jina { .. } => {
                http(self)
            }
        }
    }
}

#[cfg(feature = "models")]
fn bert(dir: &Path) -> Result<Arc<dyn Reranker>, EmbedError> {
    Ok(Arc::new(super::CrossEncoder::load(dir)?))
}

#[cfg(not(feature = "models"))]
fn bert(dir: &Path) -> Result<Arc<dyn Reranker>, EmbedError> {
    Err(EmbedError::FeatureMissing {
        feature: "models",
        what: format!("the cross-encoder {}", dir.display()),
    })
}

#[cfg(feature = "onnx")]
fn onnx(model: &Path, dir: &Path) -> Result<Arc<dyn Reranker>, EmbedError> {
    Ok(Arc::new(super::CrossEncoder::load_onnx(model, dir)?))
}

#[cfg(not(feature = "onnx"))]
fn onnx(model: &Path, _dir: &Path) -> Result<Arc<dyn Reranker>, EmbedError> {
    Err(EmbedError::FeatureMissing {
        feature: "onnx",
        what: format!("the cross-encoder {}", model.display()),
    })
}

#[cfg(feature = "http")]
fn http(spec: &RerankerSpec) -> Result<Arc<dyn Reranker>, EmbedError> {
    use super::{HttpRerankOptions, HttpReranker, RerankApi};
    let (url, api) = match spec {
        RerankerSpec::Tei { url } => (url, RerankApi::Tei),
        RerankerSpec::Cohere { model, url } => (
            url,
            RerankApi::Cohere {
                model: model.clone(),
            },
        ),
        RerankerSpec::Jina { model, url } => (
            url,
            RerankApi::Jina {
                model: model.clone(),
            },
        ),
        RerankerSpec::Bert { .. } | RerankerSpec::Onnx { .. } | RerankerSpec::Command { .. } => {
            return Err(EmbedError::Spec {
                spec: spec.to_string(),
                reason: "not a rerank service".into(),
            })
        }
    };
    Ok(Arc::new(HttpReranker::new(HttpRerankOptions::new(
        url, api,
    ))))
}

#[cfg(not(feature = "http"))]
fn http(spec: &RerankerSpec) -> Result<Arc<dyn Reranker>, EmbedError> {
    Err(EmbedError::FeatureMissing {
        feature: "http",
        what: format!("the rerank service {spec}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form_and_refuses_the_rest() {
        let p = |s: &str| s.parse::<RerankerSpec>();
        assert_eq!(
            p("cmd:\"python3 rerank.py --model x\"").ok(),
            Some(RerankerSpec::Command {
                command: "python3 rerank.py --model x".into()
            })
        );
        assert_eq!(
            p("tei:http://127.0.0.1:8080").ok(),
            Some(RerankerSpec::Tei {
                url: "http://127.0.0.1:8080".into()
            })
        );
        assert_eq!(
            p("cohere:rerank-v3.5@https://api.cohere.com/v2/rerank").ok(),
            Some(RerankerSpec::Cohere {
                model: "rerank-v3.5".into(),
                url: "https://api.cohere.com/v2/rerank".into()
            })
        );
        let jina = p("jina:jina-reranker-v2-base-multilingual@https://api.jina.ai/v1/rerank");
        assert!(
            matches!(jina, Ok(RerankerSpec::Jina { ref model, .. }) if model == "jina-reranker-v2-base-multilingual")
        );
        assert_eq!(
            p("onnx:m/model.onnx@m").ok(),
            Some(RerankerSpec::Onnx {
                model: "m/model.onnx".into(),
                dir: "m".into()
            })
        );
        for spec in [
            jina.unwrap(),
            p("cmd:\"a b\"").unwrap(),
            p("bert:m").unwrap(),
        ] {
            assert_eq!(spec.to_string().parse::<RerankerSpec>().ok(), Some(spec));
        }
        for bad in [
            "",
            "tei",
            "cmd:",
            "tei:127.0.0.1",
            "cohere:@https://x",
            "cohere:model",
            "jina:m@ftp://x",
            "bert:",
            "onnx:model.onnx",
        ] {
            let error = p(bad).unwrap_err();
            assert!(matches!(error, EmbedError::Spec { .. }), "{bad}: {error:?}");
        }
    }
}
