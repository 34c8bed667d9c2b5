//! The OpenAI-compatible embedder against a scripted server on 127.0.0.1: retries on 429,
//! refuses a wrong dimension, times out on a hang, and in each failure writes nothing.

use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use folio::chunk::SourceFormat;
use folio::document::Document;
use folio::embed::{EmbedError, Embedder, HttpEmbedder, HttpOptions};
use folio::query::SearchRequest;
use folio::store::{Store, WriteError};

use crate::http_server::{assert_asked_once_quickly, serve, Reply, Server};

/// One vector of `dim` values per input text, answered in reverse order with `index`, as
/// some services do.
fn vectors(dim: usize) -> Reply {
    Reply::Json(Arc::new(move |request: &serde_json::Value| {
        let inputs: Vec<&str> = request["input"]
            .as_array()
            .map(|a| a.iter().map(|t| t.as_str().unwrap_or("")).collect())
            .unwrap_or_default();
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
        serde_json::json!({"object": "list", "data": data})
    }))
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
    let server = serve(vec![Reply::Status(429), Reply::Status(429), vectors(8)]);
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
    let server = serve(vec![vectors(5)]);
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
    let server = serve(vec![vectors(7)]);
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
    assert_asked_once_quickly(&server, started);
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
            bodies: Arc::default(),
        })
    };
    let embedder = HttpEmbedder::new(options).expect("declared dimension: no probe");
    let error = embedder.embed(&["x"]).expect_err("nothing listens");
    assert!(matches!(error, EmbedError::Transport { .. }), "{error}");
}
