//! The OpenAI-compatible embedder against a scripted server on 127.0.0.1: retries on 429,
//! refuses a wrong dimension, times out on a hang, and in each failure writes nothing.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use folio::chunk::SourceFormat;
use folio::document::Document;
use folio::embed::{EmbedError, Embedder, HttpEmbedder, HttpOptions};
use folio::query::SearchRequest;
use folio::store::{Store, WriteError};

/// What the server does with one request.
#[derive(Clone, Copy)]
enum Reply {
    Status(u16),
    /// One vector of this many values per input text.
    Vectors(usize),
    /// Holds the connection this long without answering.
    Hang(Duration),
}

struct Server {
    url: String,
    requests: Arc<AtomicUsize>,
}

/// Serves `script` (its last reply repeats) until the test's process ends or 60 s pass.
fn serve(script: Vec<Reply>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let url = format!("http://{}/v1", listener.local_addr().expect("address"));
    let requests = Arc::new(AtomicUsize::new(0));
    let count = requests.clone();
    listener.set_nonblocking(true).expect("nonblocking");
    thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            match listener.accept() {
                Ok((stream, _)) => {
                    let n = count.fetch_add(1, Ordering::SeqCst);
                    let reply = script[n.min(script.len() - 1)];
                    thread::spawn(move || answer(stream, reply));
                }
                Err(_) => thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    Server { url, requests }
}

fn answer(stream: TcpStream, reply: Reply) {
    stream.set_nonblocking(false).ok();
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok();
    let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let inputs: Vec<String> = request["input"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t.as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default();
    let (status, text) = match reply {
        Reply::Hang(d) => {
            thread::sleep(d);
            return;
        }
        Reply::Status(status) => (status, r#"{"error": {"message": "slow down"}}"#.to_string()),
        Reply::Vectors(dim) => {
            // Answered in reverse order with `index`, as some services do.
            let data: Vec<serde_json::Value> = inputs
                .iter()
                .enumerate()
                .rev()
                .map(|(i, t)| {
                    let v: Vec<f32> = (0..dim)
                        .map(|d| ((t.len() + d * 7) % 11) as f32 + 1.0)
                        .collect();
                    serde_json::json!({"object": "embedding", "index": i, "embedding": v})
                })
                .collect();
            (
                200,
                serde_json::json!({"object": "list", "data": data}).to_string(),
            )
        }
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
}

fn options(server: &Server) -> HttpOptions {
    HttpOptions {
        dimension: Some(8),
        timeout: Duration::from_millis(1500),
        backoff: Duration::from_millis(10),
        max_retries: 3,
        api_key_env: "FOLIO_TEST_NO_SUCH_KEY".into(),
        ..HttpOptions::new(&server.url, "test-model")
    }
}

fn store_with(embedder: HttpEmbedder) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::builder()
        .create(true)
        .embedder(Arc::new(embedder))
        .open(dir.path().join("kb.folio"))
        .expect("open");
    (dir, store)
}

fn docs() -> Vec<Document> {
    vec![
        Document::new(
            "refunds",
            SourceFormat::Markdown,
            "# Refunds\n\nMoney back within 14 days.\n",
        ),
        Document::new(
            "deploys",
            SourceFormat::Markdown,
            "# Deploys\n\nRoll back with `release rollback`.\n",
        ),
    ]
}

fn ingest(store: &Store) -> Result<(), WriteError> {
    let mut batch = store.batch();
    for doc in docs() {
        batch.upsert(doc);
    }
    batch.commit().map(|_| ())
}

#[test]
fn survives_429_twice_then_succeeds() {
    let server = serve(vec![
        Reply::Status(429),
        Reply::Status(429),
        Reply::Vectors(8),
    ]);
    let (_dir, store) = store_with(HttpEmbedder::new(options(&server)).expect("embedder"));
    ingest(&store).expect("the third attempt succeeds");
    assert_eq!(server.requests.load(Ordering::SeqCst), 3);
    assert_eq!(store.stats().expect("stats").documents, 2);
    let response = store
        .search(&SearchRequest::text("money back"))
        .expect("search");
    assert_eq!(response.results.len(), 2);
}

#[test]
fn learns_the_dimension_from_a_probe() {
    let server = serve(vec![Reply::Vectors(5)]);
    let embedder = HttpEmbedder::new(HttpOptions {
        dimension: None,
        ..options(&server)
    })
    .expect("embedder");
    assert_eq!(embedder.dimension(), 5);
    assert_eq!(embedder.name(), "openai:test-model");
    let vectors = embedder.embed(&["a", "bbb", "cc"]).expect("embed");
    // Rows in input order although the server answered in reverse.
    assert_eq!(vectors.len(), 15);
    let expected =
        |len: usize| -> Vec<f32> { (0..5).map(|d| ((len + d * 7) % 11) as f32 + 1.0).collect() };
    assert_eq!(vectors[0..5].to_vec(), expected(1));
    assert_eq!(vectors[5..10].to_vec(), expected(3));
    assert_eq!(vectors[10..15].to_vec(), expected(2));
}

#[test]
fn wrong_dimension_is_refused_and_nothing_written() {
    let server = serve(vec![Reply::Vectors(7)]);
    let (_dir, store) = store_with(HttpEmbedder::new(options(&server)).expect("embedder"));
    let error = ingest(&store).expect_err("7 dimensions where 8 were declared");
    assert!(
        matches!(
            error,
            WriteError::Embed(EmbedError::Dimension {
                expected: 8,
                got: 7
            })
        ),
        "{error}"
    );
    assert!(
        error.to_string().contains("7 dimensions, expected 8"),
        "{error}"
    );
    assert_eq!(store.stats().expect("stats").documents, 0);
    assert_eq!(store.stats().expect("stats").indexes[0].live_children, 0);
}

#[test]
fn a_hang_times_out_and_nothing_is_written() {
    let server = serve(vec![Reply::Hang(Duration::from_secs(10))]);
    let (_dir, store) = store_with(HttpEmbedder::new(options(&server)).expect("embedder"));
    let started = Instant::now();
    let error = ingest(&store).expect_err("the server never answers");
    assert!(
        matches!(error, WriteError::Embed(EmbedError::Timeout { .. })),
        "{error}"
    );
    // One attempt: a hung service is not asked again.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.requests.load(Ordering::SeqCst), 1);
    assert_eq!(store.stats().expect("stats").documents, 0);
}

#[test]
fn client_errors_fail_at_once_and_server_errors_after_the_retries() {
    let server = serve(vec![Reply::Status(400)]);
    let embedder = HttpEmbedder::new(options(&server)).expect("embedder");
    let error = embedder.embed(&["x"]).expect_err("400");
    assert!(
        matches!(
            error,
            EmbedError::Http {
                status: 400,
                attempts: 1,
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("slow down"), "{error}");

    let server = serve(vec![Reply::Status(503)]);
    let embedder = HttpEmbedder::new(options(&server)).expect("embedder");
    let error = embedder.embed(&["x"]).expect_err("503 every time");
    assert!(
        matches!(
            error,
            EmbedError::Http {
                status: 503,
                attempts: 4,
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(server.requests.load(Ordering::SeqCst), 4);
}

#[test]
fn a_refused_connection_is_a_transport_error() {
    // Bind, learn a free port, close it: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let options = HttpOptions {
        max_retries: 1,
        ..options(&Server {
            url: format!("http://127.0.0.1:{port}/v1"),
            requests: Arc::default(),
        })
    };
    let embedder = HttpEmbedder::new(options).expect("declared dimension: no probe");
    let error = embedder.embed(&["x"]).expect_err("nothing listens");
    assert!(matches!(error, EmbedError::Transport { .. }), "{error}");
}
