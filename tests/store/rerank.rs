//! The rerank stage's edges, beside the property of `hybrid.rs`: what the reranker reads
//! (a unit's text or its best evidence window), the budget applied after reordering, the
//! typed refusals and failures, and the request log's `rerank_scores`.

use std::sync::{Arc, Mutex};

use folio::embed::{EmbedError, Reranker};
use folio::query::{Evidence, QueryError, Rerank, SearchMode, SearchRequest};
use folio_testkit::versions::{doc, small_options, temp_store};

/// Scores a text by its length (longer first), and keeps what it was asked.
#[derive(Default)]
struct Recording {
    asked: Mutex<Vec<(String, Vec<String>)>>,
}

impl Reranker for Recording {
    fn name(&self) -> &str {
        "recording"
    }

    fn score(&self, query: &str, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        let texts: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
        let scores = texts.iter().map(|t| t.len() as f32).collect();
        self.asked.lock().unwrap().push((query.to_string(), texts));
        Ok(scores)
    }
}

/// Answers as told, whatever it is asked.
struct Answering(Result<Vec<f32>, String>);

impl Reranker for Answering {
    fn name(&self) -> &str {
        "answering"
    }

    fn score(&self, _query: &str, _texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        self.0.clone().map_err(EmbedError::Failed)
    }
}

fn store_of(docs: &[(&str, &str)]) -> (tempfile::TempDir, folio::store::Store) {
    let (dir, store) = temp_store(small_options());
    let mut batch = store.batch();
    for (id, text) in docs {
        batch.upsert(doc(id, text));
    }
    batch.commit().unwrap();
    (dir, store)
}

#[test]
fn the_reranker_reorders_the_units_and_the_budget_applies_after() {
    let (_dir, store) = store_of(&[
        ("short", "apple"),
        ("middle", "apple kernel run"),
        ("long", "apple kernel run invoice cherry"),
    ]);
    let reranker = Arc::new(Recording::default());
    let request = SearchRequest::text("apple")
        .mode(SearchMode::Lexical)
        .k(2)
        .no_dedup();
    let plain = store.search(&request).unwrap();
    assert_eq!(plain.reranker, None);
    // BM25 prefers the shortest document, the reranker the longest.
    assert_eq!(plain.results[0].doc_id, "short");
    let reranked = store
        .search(&request.clone().rerank(Rerank::new(reranker.clone()).top(3)))
        .unwrap();
    let ids: Vec<&str> = reranked.results.iter().map(|h| h.doc_id.as_str()).collect();
    assert_eq!(ids, ["long", "middle"]);
    assert_eq!(reranked.reranker.as_deref(), Some("recording"));
    assert_eq!(
        reranked.results[0].score,
        "apple kernel run invoice cherry".len() as f32
    );
    assert_eq!(reranker.asked.lock().unwrap().len(), 1);
    assert_eq!(
        reranker.asked.lock().unwrap()[0].1.len(),
        3,
        "top 3 units scored"
    );

    // A budget that only the shortest unit fits: the longer ones are skipped in the
    // reranked order and count towards k, as without a reranker.
    let budget = reranked.results[1].tokens - 1;
    let tight = request
        .clone()
        .token_budget(budget)
        .rerank(Rerank::new(reranker.clone()).top(3));
    let tight = store.search(&tight).unwrap();
    assert!(
        tight.results.iter().all(|h| h.tokens <= budget),
        "{tight:?}"
    );
    assert!(
        tight.results.is_empty(),
        "both reranked units exceed it: {tight:?}"
    );
}

#[test]
fn a_window_shows_the_reranker_the_best_child_and_its_neighbours() {
    let sentence = |i: usize| format!("Sentence {i} speaks of invoices and kernels at length. ");
    let mut text: String = (0..40).map(sentence).collect();
    text.push_str("The cherry orchard is here. ");
    text.extend((40..80).map(sentence));
    let (_dir, store) = store_of(&[("long", &text)]);
    let reranker = Arc::new(Recording::default());
    let request = SearchRequest::text("cherry orchard")
        .mode(SearchMode::Lexical)
        .k(1);
    let whole = Rerank::new(reranker.clone());
    let hit = store
        .search(&request.clone().rerank(whole))
        .unwrap()
        .results[0]
        .clone();
    let window = Rerank::new(reranker.clone()).evidence(Evidence::Window(0));
    store.search(&request.clone().rerank(window)).unwrap();
    let asked = reranker.asked.lock().unwrap();
    assert_eq!(
        asked[0],
        ("cherry orchard".to_string(), vec![hit.text.clone()])
    );
    let best = &hit.children[0];
    let child_text = text[best.start..best.end].to_string();
    assert!(child_text.contains("cherry"), "{child_text}");
    assert!(
        child_text.len() < hit.text.len(),
        "the unit must hold more than its best child"
    );
    assert_eq!(asked[1].1, vec![child_text]);
}

#[test]
fn a_vector_query_with_a_reranker_is_refused() {
    let (_dir, store) = store_of(&[("d0", "apple kernel")]);
    let request =
        SearchRequest::vector(vec![0.5; 8]).rerank(Rerank::new(Arc::new(Recording::default())));
    let error = store.search(&request).unwrap_err();
    assert!(
        matches!(&error, QueryError::Read(folio::ReadError::InvalidParameter(p)) if p.name == "rerank"),
        "{error:?}"
    );
    let zero =
        SearchRequest::text("apple").rerank(Rerank::new(Arc::new(Recording::default())).top(0));
    let error = store.search(&zero).unwrap_err();
    assert!(error.to_string().contains("rerank_top"), "{error}");
}

#[test]
fn a_failing_reranker_fails_the_search_with_its_name() {
    let (_dir, store) = store_of(&[("d0", "apple kernel"), ("d1", "apple run")]);
    let answers = [
        Err("model missing".to_string()),
        Ok(vec![1.0]),
        Ok(vec![1.0, f32::NAN]),
    ];
    for answer in answers {
        let expected = answer.clone();
        let request = SearchRequest::text("apple").rerank(Rerank::new(Arc::new(Answering(answer))));
        match store.search(&request) {
            Err(QueryError::Rerank { reranker, error }) => {
                assert_eq!(reranker, "answering");
                match (&expected, *error) {
                    (Err(message), EmbedError::Failed(got)) => assert_eq!(&got, message),
                    (
                        Ok(_),
                        EmbedError::Count {
                            expected: 2,
                            got: 1,
                        },
                    ) => {}
                    (Ok(_), EmbedError::Failed(got)) => assert!(got.contains("NaN"), "{got}"),
                    (_, other) => panic!("{expected:?}: {other:?}"),
                }
            }
            other => panic!("{expected:?}: {other:?}"),
        }
    }
}

#[test]
fn the_request_log_holds_the_rerankers_scores_and_the_retrieval_scores() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_options()
        .log_requests(true)
        .open(dir.path().join("s.folio"))
        .unwrap();
    store.upsert(doc("a", "apple")).unwrap();
    store.upsert(doc("b", "apple kernel run")).unwrap();
    let request = SearchRequest::text("apple")
        .mode(SearchMode::Lexical)
        .no_dedup();
    let plain = store.search(&request).unwrap();
    let reranked = store
        .search(&request.rerank(Rerank::new(Arc::new(Recording::default()))))
        .unwrap();
    store.log().flush().unwrap();
    let entries = store.log().entries().unwrap();
    let logged = |id: Option<u64>| {
        entries
            .iter()
            .find(|e| Some(e.request_id) == id)
            .map(|e| e.request.clone())
            .unwrap()
    };
    let plain_log = logged(plain.request_id);
    assert!(plain_log.outcome.rerank_scores.is_empty());
    assert_eq!(plain_log.reranker, None);
    let reranked_log = logged(reranked.request_id);
    assert_eq!(reranked_log.reranker, reranked.reranker);
    assert!(reranked_log.reranker.is_some());
    let scores: Vec<f32> = reranked.results.iter().map(|h| h.score).collect();
    assert_eq!(reranked_log.outcome.rerank_scores, scores);
    let retrieval: Vec<(String, f32)> = reranked
        .results
        .iter()
        .map(|h| (h.parent_id.clone(), h.scores.lexical.unwrap()))
        .collect();
    assert_eq!(reranked_log.parents, retrieval);
    assert_ne!(plain_log.parents, reranked_log.parents, "the order changed");
}
