//! The HTTP reranker against a scripted server on 127.0.0.1 (`http_server.rs`): both API
//! shapes in batches with answers out of order, a retry after a 503, a timeout on a hang,
//! malformed answers refused, and a search reranked through it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use folio::embed::{EmbedError, HttpRerankOptions, HttpReranker, RerankApi, Reranker};
use folio::query::{Rerank, SearchRequest};
use folio_testkit::versions::{doc, small_options, temp_store};

use crate::http_server::{assert_asked_once_quickly, serve, Reply, Server};

/// A text's score: its length in characters.
fn length(text: &serde_json::Value) -> f32 {
    text.as_str().unwrap_or_default().chars().count() as f32
}

/// TEI's answer, best first as TEI sorts it: `[{index, score}]`.
fn tei() -> Reply {
    Reply::Json(Arc::new(|request: &serde_json::Value| {
        let texts = request["texts"].as_array().cloned().unwrap_or_default();
        let mut scores: Vec<(usize, f32)> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| (i, length(t)))
            .collect();
        scores.sort_by(|a, b| b.1.total_cmp(&a.1));
        serde_json::json!(scores
            .iter()
            .map(|(index, score)| serde_json::json!({"index": index, "score": score}))
            .collect::<Vec<_>>())
    }))
}

/// Cohere's answer, in reverse order: `{results: [{index, relevance_score}]}`.
fn cohere() -> Reply {
    Reply::Json(Arc::new(|request: &serde_json::Value| {
        let texts = request["documents"].as_array().cloned().unwrap_or_default();
        let results: Vec<serde_json::Value> = texts
            .iter()
            .enumerate()
            .rev()
            .map(|(i, t)| serde_json::json!({"index": i, "relevance_score": length(t)}))
            .collect();
        serde_json::json!({ "results": results })
    }))
}

fn options(server: &Server, api: RerankApi) -> HttpRerankOptions {
    HttpRerankOptions {
        batch_size: 2,
        timeout: Duration::from_millis(1500),
        backoff: Duration::from_millis(10),
        max_retries: 2,
        api_key_env: "FOLIO_TEST_NO_SUCH_KEY".into(),
        ..HttpRerankOptions::new(&server.url, api)
    }
}

const TEXTS: [&str; 5] = ["a", "bbbb", "cc", "ddddd", "eee"];
const SCORES: [f32; 5] = [1.0, 4.0, 2.0, 5.0, 3.0];

#[test]
fn tei_is_asked_in_batches_and_its_scores_come_back_in_input_order() {
    let server = serve(vec![tei()]);
    let reranker = HttpReranker::new(options(&server, RerankApi::Tei));
    assert_eq!(reranker.name(), format!("tei:{}", server.url));
    assert_eq!(reranker.score("q", &TEXTS).unwrap(), SCORES);
    let bodies = server.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 3, "5 texts, 2 a request");
    for (path, body) in &bodies {
        assert_eq!(path, "/v1/rerank");
        assert_eq!(body["query"], "q");
        assert_eq!(body["raw_scores"], true);
    }
    assert_eq!(bodies[2].1["texts"], serde_json::json!(["eee"]));
}

#[test]
fn cohere_and_jina_speak_one_shape() {
    for api in [
        RerankApi::Cohere {
            model: "rerank-v3.5".into(),
        },
        RerankApi::Jina {
            model: "jina-reranker".into(),
        },
    ] {
        let server = serve(vec![cohere()]);
        let reranker = HttpReranker::new(options(&server, api.clone()));
        assert_eq!(reranker.score("q", &TEXTS).unwrap(), SCORES);
        let bodies = server.bodies.lock().unwrap().clone();
        assert_eq!(bodies.len(), 3);
        let (path, body) = &bodies[0];
        assert_eq!(path, "/v1");
        let model = match &api {
            RerankApi::Cohere { model } | RerankApi::Jina { model } => model,
            RerankApi::Tei => unreachable!(),
        };
        assert_eq!(body["model"], model.as_str());
        assert_eq!(body["documents"], serde_json::json!(["a", "bbbb"]));
        assert_eq!(body["top_n"], 2);
        assert!(reranker.name().ends_with(model.as_str()));
    }
}

#[test]
fn a_503_is_retried_and_a_hang_times_out_at_once() {
    let server = serve(vec![Reply::Status(503), tei()]);
    let reranker = HttpReranker::new(options(&server, RerankApi::Tei));
    assert_eq!(reranker.score("q", &TEXTS[..2]).unwrap(), SCORES[..2]);
    assert_eq!(server.requests.load(Ordering::SeqCst), 2);

    let server = serve(vec![Reply::Status(503)]);
    let reranker = HttpReranker::new(options(&server, RerankApi::Tei));
    let error = reranker.score("q", &["x"]).unwrap_err();
    assert!(
        matches!(
            error,
            EmbedError::Http {
                status: 503,
                attempts: 3,
                ..
            }
        ),
        "{error}"
    );

    let server = serve(vec![Reply::Hang(Duration::from_secs(10))]);
    let reranker = HttpReranker::new(options(&server, RerankApi::Tei));
    let started = Instant::now();
    let error = reranker.score("q", &["x"]).unwrap_err();
    assert!(
        matches!(error, EmbedError::Timeout { attempts: 1, .. }),
        "{error}"
    );
    assert_asked_once_quickly(&server, started);
}

#[test]
fn an_answer_that_does_not_score_each_text_once_is_refused() {
    let answers = [
        serde_json::json!([{"index": 0, "score": 1.0}]),
        serde_json::json!([{"index": 0, "score": 1.0}, {"index": 0, "score": 2.0}]),
        serde_json::json!([{"index": 0, "score": 1.0}, {"index": 2, "score": 2.0}]),
    ];
    for (n, answer) in answers.into_iter().enumerate() {
        let server = serve(vec![Reply::Json(Arc::new(move |_| answer.clone()))]);
        let reranker = HttpReranker::new(options(&server, RerankApi::Tei));
        let error = reranker.score("q", &["a", "b"]).unwrap_err();
        match n {
            0 => assert!(
                matches!(
                    error,
                    EmbedError::Count {
                        expected: 2,
                        got: 1
                    }
                ),
                "{error}"
            ),
            _ => assert!(matches!(error, EmbedError::Protocol { .. }), "{error}"),
        }
    }
}

#[test]
fn a_search_is_reranked_through_the_service() {
    let server = serve(vec![tei()]);
    let (_dir, store) = temp_store(small_options());
    let mut batch = store.batch();
    batch.upsert(doc("short", "refund"));
    batch.upsert(doc("long", "a refund is paid back within fourteen days"));
    batch.commit().unwrap();
    let reranker = Arc::new(HttpReranker::new(options(&server, RerankApi::Tei)));
    let response = store
        .search(&SearchRequest::text("refund").rerank(Rerank::new(reranker)))
        .unwrap();
    let ids: Vec<&str> = response.results.iter().map(|h| h.doc_id.as_str()).collect();
    assert_eq!(ids, ["long", "short"], "the longer text scores higher");
    assert_eq!(response.results[0].scores.rerank, Some(42.0));
}
