//! Named models fetched the three ways (`NamedModel::fetch`): downloaded from a hub on
//! 127.0.0.1 that serves a tiny model's files as the Hugging Face hub does (the resolve
//! paths, the range probe, `ETag` and `X-Repo-Commit`), into a temporary `HF_HOME`; then
//! from that cache with the hub gone; from a `FOLIO_MODELS` folder; and a file whose sha256
//! is not the pinned one refused wherever it comes from.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use folio::embed::{
    BertEmbedder, EmbedError, Embedder, ModelPlaces, NamedModel, PinnedFile, Pooling, Preset,
};
use sha2::{Digest, Sha256};

const REPO: &str = "test-org/tiny-bert";
const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A hub on 127.0.0.1 serving `files` (URL path to bytes), one request per connection.
struct Hub {
    endpoint: String,
    requests: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Hub {
    fn serve(files: HashMap<String, Vec<u8>>) -> Hub {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let endpoint = format!("http://{}", listener.local_addr().expect("address"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen, stopped) = (requests.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    answer(stream, &files, &seen);
                }
            }
        });
        Hub {
            endpoint,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().expect("requests").clone()
    }

    /// Stops accepting and closes the port.
    fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let address = self.endpoint.trim_start_matches("http://").to_string();
        TcpStream::connect(address).ok();
        if let Some(thread) = self.thread.take() {
            thread.join().expect("hub thread");
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One GET: the file at its resolve path, whole or the byte range asked (the client probes
/// `bytes=0-0` for the size, commit and etag first), with the headers the hub sends.
fn answer(stream: TcpStream, files: &HashMap<String, Vec<u8>>, seen: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut request = String::new();
    reader.read_line(&mut request).ok();
    let path = request.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut range = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("range") {
                range = value.trim().strip_prefix("bytes=").map(str::to_string);
            }
        }
    }
    seen.lock().expect("requests").push(path.clone());
    let mut stream = stream;
    let Some(bytes) = files.get(&path) else {
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    };
    let (start, end) = match range.as_deref().and_then(|r| r.split_once('-')) {
        Some((s, e)) => (s.parse().unwrap_or(0), e.parse().unwrap_or(bytes.len() - 1)),
        None => (0, bytes.len() - 1),
    };
    let body = &bytes[start..=end.min(bytes.len() - 1)];
    let head = format!(
        "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {start}-{}/{}\r\n\
         ETag: \"{}\"\r\nX-Repo-Commit: {COMMIT}\r\nConnection: close\r\n\r\n",
        body.len(),
        start + body.len() - 1,
        bytes.len(),
        sha256(bytes),
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

/// The tiny model's files, made from `seed`.
fn tiny_model(dir: &Path, seed: u64) -> HashMap<&'static str, Vec<u8>> {
    folio_testkit::models::write_tiny_bert(dir, seed);
    FILES
        .iter()
        .map(|f| (*f, std::fs::read(dir.join(f)).expect("model file")))
        .collect()
}

/// A named model pinning `files` at `COMMIT`, with E5's prefixes.
fn pin(name: &'static str, files: &HashMap<&'static str, Vec<u8>>) -> NamedModel {
    let pinned: Vec<PinnedFile> = FILES
        .iter()
        .map(|f| PinnedFile {
            path: f,
            sha256: Box::leak(sha256(&files[f]).into_boxed_str()),
        })
        .collect();
    NamedModel {
        name,
        repo: REPO,
        revision: COMMIT,
        files: Box::leak(pinned.into_boxed_slice()),
        settings: Preset {
            name: "tiny-bert",
            pooling: Pooling::Mean,
            normalize: true,
            max_tokens: 64,
            query_prefix: "query: ",
            passage_prefix: "passage: ",
        },
    }
}

/// The hub's URL paths of `files`.
fn hub_files(files: &HashMap<&'static str, Vec<u8>>) -> HashMap<String, Vec<u8>> {
    files
        .iter()
        .map(|(f, bytes)| (format!("/{REPO}/resolve/{COMMIT}/{f}"), bytes.clone()))
        .collect()
}

fn places(vars: &[(&str, &Path)], endpoint: &str, offline: bool) -> ModelPlaces {
    let mut vars: HashMap<String, OsString> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.as_os_str().to_owned()))
        .collect();
    vars.insert("HF_ENDPOINT".into(), endpoint.into());
    if offline {
        vars.insert("HF_HUB_OFFLINE".into(), "1".into());
    }
    ModelPlaces::from_vars(|name| vars.get(name).cloned())
}

fn snapshot(hf_home: &Path) -> std::path::PathBuf {
    hf_home
        .join("hub/models--test-org--tiny-bert/snapshots")
        .join(COMMIT)
}

#[test]
fn a_named_model_downloads_into_the_cache_then_loads_offline() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let files = tiny_model(&tmp.path().join("made"), 7);
    let model = pin("tiny", &files);
    let mut hub = Hub::serve(hub_files(&files));
    let hf_home = tmp.path().join("hf");
    let online = places(&[("HF_HOME", &hf_home)], &hub.endpoint, false);

    let downloaded = BertEmbedder::load_named(&model, &online).expect("download and load");
    for f in FILES {
        let cached = snapshot(&hf_home).join(f);
        assert_eq!(std::fs::read(&cached).ok().as_ref(), Some(&files[f]), "{f}");
    }
    let asked = hub.requests();
    for f in FILES {
        let path = format!("/{REPO}/resolve/{COMMIT}/{f}");
        assert!(asked.contains(&path), "{path} not asked: {asked:?}");
    }
    assert_eq!(downloaded.name(), "bert:tiny-bert");
    assert_eq!(downloaded.dimension(), 8);
    let texts = ["rolling back a release", "the deploy runbook"];
    let passages = downloaded.embed(&texts).expect("embed");
    assert_eq!(passages.len(), 16);
    // The pin's prefixes: a query is embedded as `query: …`, a chunk as `passage: …`.
    let queries = downloaded.embed_queries(&texts).expect("embed queries");
    assert_ne!(queries, passages);

    // The hub gone: the cache answers, the same files, the same vectors and fingerprint.
    hub.stop();
    let cached = BertEmbedder::load_named(&model, &online).expect("load from the cache");
    assert_eq!(cached.embed(&texts).expect("embed"), passages);
    assert_eq!(cached.fingerprint(), downloaded.fingerprint());
    let offline = places(&[("HF_HOME", &hf_home)], &hub.endpoint, true);
    assert!(BertEmbedder::load_named(&model, &offline).is_ok());

    // A cached file changed afterwards is refused, not used.
    let weights = snapshot(&hf_home).join("model.safetensors");
    let mut bytes = std::fs::read(&weights).expect("cached weights");
    bytes[100] ^= 1;
    std::fs::write(std::fs::canonicalize(&weights).expect("blob"), &bytes).expect("tamper");
    match BertEmbedder::load_named(&model, &offline) {
        Err(EmbedError::Checksum { path, .. }) => assert!(path.ends_with("model.safetensors")),
        other => panic!("expected a checksum error, got {:?}", other.err()),
    }
}

#[test]
fn a_downloaded_file_that_is_not_the_pinned_one_is_refused_and_removed() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let files = tiny_model(&tmp.path().join("made"), 8);
    let model = pin("tiny", &files);
    let mut served = files.clone();
    served.insert("tokenizer.json", {
        let mut t = files["tokenizer.json"].clone();
        t.extend(b"\n");
        t
    });
    let mut hub = Hub::serve(hub_files(&served));
    let hf_home = tmp.path().join("hf");
    let online = places(&[("HF_HOME", &hf_home)], &hub.endpoint, false);
    match BertEmbedder::load_named(&model, &online) {
        Err(e @ EmbedError::Checksum { .. }) => {
            let text = e.to_string();
            assert!(text.contains("tokenizer.json"), "{text}");
            assert!(text.contains(&sha256(&files["tokenizer.json"])), "{text}");
        }
        other => panic!("expected a checksum error, got {:?}", other.err()),
    }
    // Not kept: neither the snapshot's link nor its blob.
    let tokenizer = snapshot(&hf_home).join("tokenizer.json");
    assert!(std::fs::symlink_metadata(&tokenizer).is_err(), "kept");
    let blobs = hf_home.join("hub/models--test-org--tiny-bert/blobs");
    let tampered = blobs.join(sha256(&served["tokenizer.json"]));
    assert!(!tampered.exists(), "the tampered blob is kept");

    // Offline afterwards, nothing is found: the refused file is not used.
    hub.stop();
    let offline = places(&[("HF_HOME", &hf_home)], &hub.endpoint, true);
    match BertEmbedder::load_named(&model, &offline) {
        Err(e @ EmbedError::ModelUnavailable { .. }) => {
            assert!(e.to_string().contains("HF_HUB_OFFLINE"), "{e}")
        }
        other => panic!("expected ModelUnavailable, got {:?}", other.err()),
    }
}

#[test]
fn a_models_folder_is_looked_at_first_and_checked() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let models = tmp.path().join("models");
    let files = tiny_model(&models.join("tiny"), 9);
    let model = pin("tiny", &files);
    // No hub, no cache: the folder alone.
    let hf_home = tmp.path().join("hf");
    let local = places(
        &[("HF_HOME", &hf_home), ("FOLIO_MODELS", &models)],
        "http://127.0.0.1:9",
        true,
    );
    let embedder = BertEmbedder::load_named(&model, &local).expect("load from FOLIO_MODELS");
    assert_eq!(embedder.name(), "bert:tiny-bert");
    assert!(!hf_home.exists(), "the cache was touched");

    std::fs::write(models.join("tiny/config.json"), b"{}").expect("tamper");
    match BertEmbedder::load_named(&model, &local) {
        Err(EmbedError::Checksum { path, model, .. }) => {
            assert_eq!(model, "tiny");
            assert_eq!(path, models.join("tiny/config.json"));
        }
        other => panic!("expected a checksum error, got {:?}", other.err()),
    }
}

#[test]
fn hf_org_name_downloads_the_branch_unpinned_then_reads_the_cache() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let files = tiny_model(&tmp.path().join("made"), 10);
    // The hub resolves `main` to COMMIT; the optional sentence-transformers files are absent.
    let served: HashMap<String, Vec<u8>> = files
        .iter()
        .map(|(f, bytes)| (format!("/{REPO}/resolve/main/{f}"), bytes.clone()))
        .collect();
    let mut hub = Hub::serve(served);
    let hf_home = tmp.path().join("hf");
    let online = places(&[("HF_HOME", &hf_home)], &hub.endpoint, false);
    let folder = online.hf_folder(REPO, None).expect("download hf:ORG/NAME");
    assert_eq!(folder, snapshot(&hf_home));
    let main = hf_home.join("hub/models--test-org--tiny-bert/refs/main");
    assert_eq!(std::fs::read_to_string(main).ok().as_deref(), Some(COMMIT));
    assert!(hub
        .requests()
        .iter()
        .any(|p| p.ends_with("/main/modules.json")));
    let embedder = BertEmbedder::load(&folder).expect("load the downloaded folder");
    assert_eq!(embedder.dimension(), 8);

    hub.stop();
    let offline = places(&[("HF_HOME", &hf_home)], &hub.endpoint, true);
    assert_eq!(offline.hf_folder(REPO, None).ok(), Some(folder.clone()));
    assert_eq!(offline.hf_folder(REPO, Some(COMMIT)).ok(), Some(folder));
}
