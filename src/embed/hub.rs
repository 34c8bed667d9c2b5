//! Where a model's files are: the places folio looks ([`ModelPlaces`]: `FOLIO_MODELS`, the
//! Hugging Face cache), and (feature `download`) the hub itself, whose files `hf-hub` puts
//! in that cache as `huggingface-cli` would (`models--ORG--NAME/snapshots/COMMIT/FILE`,
//! symbolic links to `blobs/`), so the two share downloads.

use std::ffi::OsString;
#[cfg(feature = "models")]
use std::path::Path;
use std::path::PathBuf;

#[cfg(feature = "models")]
use super::EmbedError;

/// The variable naming the folder of named models' own folders (`$FOLIO_MODELS/minilm/`).
pub const MODELS_DIR_VAR: &str = "FOLIO_MODELS";

/// The hub, when `HF_ENDPOINT` names no other.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// Where models are looked for, and whether one may be downloaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelPlaces {
    /// `FOLIO_MODELS`: a folder holding each named model's files in a folder of its name.
    pub models_dir: Option<PathBuf>,
    /// The Hugging Face cache: `HF_HUB_CACHE`, else `HF_HOME/hub`, else
    /// `~/.cache/huggingface/hub`.
    pub hub_cache: PathBuf,
    /// The hub's address: `HF_ENDPOINT`, else [`DEFAULT_ENDPOINT`].
    pub endpoint: String,
    /// `HF_HUB_OFFLINE` set (1, true, yes or on): nothing is downloaded.
    pub offline: bool,
}

impl ModelPlaces {
    /// The places this process's environment names.
    pub fn from_env() -> ModelPlaces {
        ModelPlaces::from_vars(|name| std::env::var_os(name))
    }

    /// The places the variables `var` returns name (as [`ModelPlaces::from_env`] reads them).
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> ModelPlaces {
        let set = |name: &str| var(name).filter(|v| !v.is_empty());
        let hub_cache = set("HF_HUB_CACHE")
            .map(PathBuf::from)
            .or_else(|| set("HF_HOME").map(|h| PathBuf::from(h).join("hub")))
            .or_else(|| set("HOME").map(|h| PathBuf::from(h).join(".cache/huggingface/hub")))
            .unwrap_or_else(|| PathBuf::from(".cache/huggingface/hub"));
        let offline = set("HF_HUB_OFFLINE").is_some_and(|v| {
            let v = v.to_string_lossy().to_ascii_lowercase();
            matches!(v.as_str(), "1" | "true" | "yes" | "on")
        });
        ModelPlaces {
            models_dir: set(MODELS_DIR_VAR).map(PathBuf::from),
            hub_cache,
            endpoint: set("HF_ENDPOINT")
                .map(|e| e.to_string_lossy().trim_end_matches('/').to_string())
                .unwrap_or_else(|| DEFAULT_ENDPOINT.into()),
            offline,
        }
    }

    /// The cache's folder of the repository `repo` (`ORG/NAME`).
    fn repo_dir(&self, repo: &str) -> PathBuf {
        self.hub_cache
            .join(format!("models--{}", repo.replace('/', "--")))
    }

    /// The cache's snapshot folder of `repo` at `revision`: a commit names its folder, a
    /// branch or tag the commit the cache recorded for it (`None` when it recorded none).
    pub fn snapshot(&self, repo: &str, revision: &str) -> Option<PathBuf> {
        let dir = self.repo_dir(repo);
        let commit = if is_commit(revision) {
            revision.to_string()
        } else {
            std::fs::read_to_string(dir.join("refs").join(revision))
                .ok()?
                .trim()
                .to_string()
        };
        Some(dir.join("snapshots").join(commit))
    }
}

/// Whether `revision` is a full commit id (40 hexadecimal digits).
pub(crate) fn is_commit(revision: &str) -> bool {
    revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The sha256 of the file at `path`, in lowercase hexadecimal.
#[cfg(feature = "models")]
pub(crate) fn sha256_file(path: &Path) -> Result<String, EmbedError> {
    use sha2::Digest;
    let mut file = std::fs::File::open(path).map_err(|e| EmbedError::model(path, e))?;
    let mut hasher = sha2::Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(|e| EmbedError::model(path, e))?;
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Fetches `files` of `repo` at `revision` from the hub into the cache, a note for each on
/// standard error, and returns where each landed. `optional` files the hub does not have
/// (HTTP 404) are left out. The reason is the whole error: the caller says what to do.
#[cfg(feature = "download")]
pub(crate) fn download(
    places: &ModelPlaces,
    repo: &str,
    revision: &str,
    files: &[&str],
    optional: &[&str],
) -> Result<Vec<PathBuf>, String> {
    use hf_hub::api::sync::{ApiBuilder, ApiError};
    use std::io::IsTerminal;
    if places.offline {
        return Err("HF_HUB_OFFLINE is set".into());
    }
    let api = ApiBuilder::from_cache(hf_hub::Cache::new(places.hub_cache.clone()))
        .with_endpoint(places.endpoint.clone())
        .with_progress(std::io::stderr().is_terminal())
        .build()
        .map_err(|e| e.to_string())?;
    let hub = api.repo(hf_hub::Repo::with_revision(
        repo.to_string(),
        hf_hub::RepoType::Model,
        revision.to_string(),
    ));
    let short = revision.get(..7).unwrap_or(revision);
    let mut landed = Vec::new();
    for file in files.iter().chain(optional) {
        eprintln!(
            "downloading {repo}@{short}: {file} (from {})",
            places.endpoint
        );
        match hub.download(file) {
            Ok(path) => landed.push(path),
            Err(ApiError::RequestError(e))
                if optional.contains(file) && matches!(*e, ureq::Error::StatusCode(404)) => {}
            Err(e) => return Err(format!("{}: {file}: {e}", places.endpoint)),
        }
    }
    Ok(landed)
}

/// Without the `download` feature nothing is fetched.
#[cfg(all(feature = "models", not(feature = "download")))]
pub(crate) fn download(
    _places: &ModelPlaces,
    _repo: &str,
    _revision: &str,
    _files: &[&str],
    _optional: &[&str],
) -> Result<Vec<PathBuf>, String> {
    Err("this build of folio has no `download` feature".into())
}

/// Removes a downloaded file that failed its check: the cache's link and the blob it names,
/// so no later run finds it.
#[cfg(feature = "models")]
pub(crate) fn discard(pointer: &Path) {
    if let Ok(blob) = std::fs::canonicalize(pointer) {
        std::fs::remove_file(blob).ok();
    }
    std::fs::remove_file(pointer).ok();
}

/// The files a `hf:ORG/NAME` model needs, and those read when present.
#[cfg(feature = "models")]
const HF_REQUIRED: &[&str] = &["config.json", "tokenizer.json", "model.safetensors"];
#[cfg(feature = "models")]
const HF_OPTIONAL: &[&str] = &[
    "modules.json",
    "1_Pooling/config.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
];

impl ModelPlaces {
    /// The folder of `hf:ORG/NAME[@REVISION]` (revision `main` when none): the cache's
    /// snapshot when it holds the model's files, else downloaded into it (feature
    /// `download`), unchecked: nothing pins it, and a note on standard error says so.
    #[cfg(feature = "models")]
    pub fn hf_folder(&self, repo: &str, revision: Option<&str>) -> Result<PathBuf, EmbedError> {
        let revision = revision.unwrap_or("main");
        let cached = self
            .snapshot(repo, revision)
            .filter(|dir| HF_REQUIRED.iter().all(|f| dir.join(f).is_file()));
        if let Some(dir) = cached {
            return Ok(dir);
        }
        let unavailable = |reason: String| EmbedError::ModelUnavailable {
            model: format!("hf:{repo}@{revision}"),
            reason,
            help: format!(
                "fetch it with `huggingface-cli download {repo} --revision {revision}`, or \
                 point bert:DIR at a sentence-transformers folder"
            ),
        };
        if !self.offline && cfg!(feature = "download") {
            eprintln!(
                "hf:{repo}@{revision} is not pinned: its files are downloaded unchecked (named \
                 models such as `minilm` are pinned)"
            );
        }
        let landed =
            download(self, repo, revision, HF_REQUIRED, HF_OPTIONAL).map_err(unavailable)?;
        landed
            .first()
            .and_then(|p| p.parent())
            .map(Path::to_path_buf)
            .ok_or_else(|| unavailable("the hub sent no file".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn places(vars: &[(&str, &str)]) -> ModelPlaces {
        let vars: HashMap<&str, OsString> = vars.iter().map(|(k, v)| (*k, v.into())).collect();
        ModelPlaces::from_vars(|name| vars.get(name).cloned())
    }

    #[test]
    fn the_environment_names_the_places() {
        let home = places(&[("HOME", "/home/u")]);
        assert_eq!(
            home,
            ModelPlaces {
                models_dir: None,
                hub_cache: PathBuf::from("/home/u/.cache/huggingface/hub"),
                endpoint: DEFAULT_ENDPOINT.into(),
                offline: false,
            }
        );
        let set = places(&[
            ("HOME", "/home/u"),
            ("HF_HOME", "/hf"),
            ("HF_ENDPOINT", "http://127.0.0.1:9/"),
            ("HF_HUB_OFFLINE", "True"),
            ("FOLIO_MODELS", "/models"),
        ]);
        assert_eq!(set.hub_cache, PathBuf::from("/hf/hub"));
        assert_eq!(set.endpoint, "http://127.0.0.1:9");
        assert!(set.offline);
        assert_eq!(set.models_dir, Some(PathBuf::from("/models")));
        // HF_HUB_CACHE wins over HF_HOME; an empty variable is unset.
        let cache = places(&[
            ("HF_HOME", "/hf"),
            ("HF_HUB_CACHE", "/c"),
            ("HF_HUB_OFFLINE", ""),
        ]);
        assert_eq!(
            (cache.hub_cache, cache.offline),
            (PathBuf::from("/c"), false)
        );
    }

    #[test]
    fn a_branch_is_read_from_the_caches_refs() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let places = places(&[("HF_HUB_CACHE", tmp.path().to_str().expect("utf-8"))]);
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let repo = tmp.path().join("models--org--name");
        assert_eq!(
            places.snapshot("org/name", commit),
            Some(repo.join("snapshots").join(commit))
        );
        assert_eq!(places.snapshot("org/name", "main"), None);
        std::fs::create_dir_all(repo.join("refs")).expect("refs");
        std::fs::write(repo.join("refs/main"), format!("{commit}\n")).expect("ref");
        assert_eq!(
            places.snapshot("org/name", "main"),
            Some(repo.join("snapshots").join(commit))
        );
    }

    #[cfg(feature = "models")]
    #[test]
    fn offline_and_not_cached_says_what_to_do() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let cache = tmp.path().to_str().expect("utf-8");
        let places = places(&[("HF_HUB_CACHE", cache), ("HF_HUB_OFFLINE", "1")]);
        match places.hf_folder("org/name", None) {
            Err(e @ EmbedError::ModelUnavailable { .. }) => {
                let text = e.to_string();
                assert!(text.contains("HF_HUB_OFFLINE"), "{text}");
                assert!(text.contains("huggingface-cli download org/name"), "{text}");
            }
            other => panic!("expected ModelUnavailable, got {other:?}"),
        }
    }
}
