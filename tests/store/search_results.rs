//! The result promise (issue 11, item 5): `k` and `children` are clamped to what the caller
//! may see, so a huge `k` neither panics nor allocates; near-duplicate removal tops the
//! answer up to `min(k, distinct visible units)`, says how many it dropped, and can be
//! turned off.

use std::collections::BTreeSet;

use folio::chunk::SourceFormat;
use folio::document::Document;
use folio::query::{Expand, SearchRequest};
use folio::store::{ReadError, Store};
use folio::QueryError;
use proptest::prelude::*;

const PRINCIPALS: &[&str] = &["a", "b"];

/// Text number `i`: every 3-word shingle holds a word of its own, so two different texts
/// share none and two copies of one text share all (the near-duplicate check compares
/// shingles).
fn text(i: usize) -> String {
    format!("alpha{i} bravo{i} charlie{i} delta{i} echo{i} foxtrot{i} falcon budget report.")
}

/// One public document per `(text, acl)` pair, in order.
fn store_with(dir: &tempfile::TempDir, docs: &[(usize, Vec<String>)]) -> Store {
    let store = Store::builder()
        .create(true)
        .open(dir.path().join("s.folio"))
        .expect("create");
    let mut batch = store.batch();
    for (n, (i, acl)) in docs.iter().enumerate() {
        batch.upsert(
            Document::new(format!("doc{n}"), SourceFormat::Text, text(*i)).with_acl(acl.clone()),
        );
    }
    batch.commit().expect("commit");
    store
}

fn visible(acl: &[String], principals: &[String]) -> bool {
    acl.is_empty() || acl.iter().any(|p| principals.contains(p))
}

#[test]
fn a_huge_k_returns_everything_visible_without_panicking() {
    let dir = tempfile::tempdir().expect("temp dir");
    let docs: Vec<(usize, Vec<String>)> = (0..12)
        .map(|i| (i, if i % 3 == 0 { vec!["a".into()] } else { vec![] }))
        .collect();
    let store = store_with(&dir, &docs);
    for k in [usize::MAX, 1 << 40, 1_000_000] {
        let mut request = SearchRequest::text("falcon budget").k(k).ef(usize::MAX);
        request.children = Some(usize::MAX);
        let response = store.search(&request).expect("search");
        assert_eq!(response.results.len(), 8, "k = {k}: the 8 public documents");
        assert_eq!(response.stats.visible, 8);
        assert!(response.stats.children_gathered <= 8);
        let as_a = store
            .search(&request.clone().as_principals(["a"]))
            .expect("search");
        assert_eq!(as_a.results.len(), 12, "k = {k}");
    }
    // Nothing visible: an empty answer, not an error.
    let empty = tempfile::tempdir().expect("temp dir");
    let store = store_with(&empty, &[(0, vec!["b".into()])]);
    let response = store
        .search(&SearchRequest::text("falcon").k(usize::MAX))
        .expect("search");
    assert!(response.results.is_empty());
}

#[test]
fn near_duplicates_are_topped_up_counted_and_can_be_kept() {
    // 40 copies of one text rank first for "alpha0 ...", then 6 distinct texts: the first
    // gathering (max(4k, 20) = 20 children) holds copies only.
    let dir = tempfile::tempdir().expect("temp dir");
    let mut docs: Vec<(usize, Vec<String>)> = (0..40).map(|_| (0, vec![])).collect();
    docs.extend((1..7).map(|i| (i, vec![])));
    let store = store_with(&dir, &docs);
    let query = "alpha0 bravo0 charlie0 falcon budget";
    let response = store
        .search(&SearchRequest::text(query).k(5))
        .expect("search");
    assert_eq!(response.results.len(), 5, "topped up to k");
    let texts: BTreeSet<&str> = response.results.iter().map(|h| h.text.as_str()).collect();
    assert_eq!(texts.len(), 5, "no two results repeat each other");
    assert_eq!(response.results[0].text, text(0));
    assert!(
        response.stats.duplicates_dropped >= 39,
        "{}",
        response.stats.duplicates_dropped
    );

    let kept = store
        .search(&SearchRequest::text(query).k(5).no_dedup())
        .expect("search");
    assert_eq!(kept.results.len(), 5);
    assert!(kept.results.iter().all(|h| h.text == text(0)));
    assert_eq!(kept.stats.duplicates_dropped, 0);

    // More than there is: every distinct text once.
    let all = store
        .search(&SearchRequest::text(query).k(100))
        .expect("search");
    assert_eq!(all.results.len(), 7);
    assert_eq!(all.stats.duplicates_dropped, 39);
}

#[test]
fn a_threshold_that_is_not_a_similarity_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = store_with(&dir, &[(0, vec![])]);
    for threshold in [1.5, -0.1, f32::NAN] {
        match store.search(&SearchRequest::text("falcon").dedup_threshold(threshold)) {
            Err(QueryError::Read(ReadError::InvalidParameter(p))) => {
                assert_eq!(p.name, "dedup_threshold")
            }
            other => panic!("{threshold}: {:?}", other.map(|r| r.results.len())),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Whatever the duplicates, ACLs, `k` and expansion: the answer holds
    /// `min(k, distinct visible units)` with removal on, `min(k, visible units)` with it
    /// off, never a hidden document, and never two near-duplicates.
    #[test]
    fn the_answer_holds_min_k_distinct_visible_units(
        docs in prop::collection::vec(
            (0usize..6, prop::collection::btree_set(prop::sample::select(PRINCIPALS), 0..2)),
            1..60,
        ),
        principals in prop::collection::btree_set(prop::sample::select(PRINCIPALS), 0..3),
        k in 0usize..12,
        window in prop::bool::ANY,
    ) {
        let docs: Vec<(usize, Vec<String>)> = docs
            .into_iter()
            .map(|(i, acl)| (i, acl.into_iter().map(String::from).collect()))
            .collect();
        let principals: Vec<String> = principals.into_iter().map(String::from).collect();
        let dir = tempfile::tempdir().expect("temp dir");
        let store = store_with(&dir, &docs);
        let seen: Vec<&(usize, Vec<String>)> =
            docs.iter().filter(|(_, acl)| visible(acl, &principals)).collect();
        let distinct: BTreeSet<usize> = seen.iter().map(|(i, _)| *i).collect();
        let expand = if window { Expand::Window(1) } else { Expand::Parent };
        let request = SearchRequest::text("falcon budget report")
            .as_principals(principals.clone())
            .k(k)
            .expand(expand);

        let response = store.search(&request).expect("search");
        prop_assert_eq!(response.results.len(), k.min(distinct.len()));
        let texts: BTreeSet<&str> = response.results.iter().map(|h| h.text.as_str()).collect();
        prop_assert_eq!(texts.len(), response.results.len(), "a near-duplicate was returned");
        for hit in &response.results {
            let n: usize = hit.doc_id.trim_start_matches("doc").parse().expect("doc number");
            prop_assert!(visible(&docs[n].1, &principals), "hidden {} returned", hit.doc_id);
        }

        let kept = store.search(&request.clone().no_dedup()).expect("search");
        prop_assert_eq!(kept.results.len(), k.min(seen.len()));
        prop_assert_eq!(kept.stats.duplicates_dropped, 0);
    }
}

/// A budget counted in cl100k tokens (`budget_tokens`) is never exceeded as tiktoken-rs
/// counts the returned texts, and each hit's `tokens` is that count; the default estimate
/// undercounts these texts (long numbers, long words, Chinese), so the same budget counted
/// by it returns more cl100k tokens than it allows.
#[cfg(feature = "models")]
#[test]
fn a_budget_in_cl100k_tokens_holds_in_cl100k_tokens() {
    let bpe = tiktoken_rs::cl100k_base().expect("cl100k");
    let cl100k = |t: &str| bpe.encode_ordinary(t).len();
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::builder()
        .create(true)
        .open(dir.path().join("s.folio"))
        .expect("create");
    let mut batch = store.batch();
    let mut shortest = usize::MAX;
    for i in 0..12 {
        let text = format!(
            "Claim {i}: reference 4417{i:04}22903816, antidisestablishmentarianism \
             allowance, 北京的申请人已经放弃 falcon budget report {i}."
        );
        shortest = shortest.min(cl100k(&text));
        batch.upsert(Document::new(format!("doc{i}"), SourceFormat::Text, text));
    }
    batch.commit().expect("commit");
    let counter = folio::embed::counter_from_spec("cl100k").expect("counter");
    let mut estimate_over = 0;
    for budget in (10..=200).step_by(10) {
        let request = SearchRequest::text("falcon budget report")
            .k(12)
            .no_dedup()
            .token_budget(budget);
        let counted = store
            .search(&request.clone().budget_tokens(counter.clone()))
            .expect("search");
        let spent: usize = counted.results.iter().map(|h| cl100k(&h.text)).sum();
        assert!(spent <= budget, "{spent} cl100k tokens > {budget}");
        for hit in &counted.results {
            assert_eq!(hit.tokens, cl100k(&hit.text));
        }
        // Whatever fits is returned.
        assert_eq!(counted.results.is_empty(), budget < shortest, "{budget}");
        let estimated = store.search(&request).expect("search");
        let spent: usize = estimated.results.iter().map(|h| cl100k(&h.text)).sum();
        estimate_over += usize::from(spent > budget);
    }
    assert!(
        estimate_over > 0,
        "the estimate never overran: the test shows nothing"
    );
}
