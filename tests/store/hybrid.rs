//! Lexical and hybrid searches against oracles, over random small histories: documents of
//! random words from a small vocabulary (stop words and stems of one another among them)
//! with random ACLs, several commits (one segment each, so versions share segments and
//! their lexical postings), ACL changes, deletes, an alias and a rollback; searched as
//! random principals at every version, through the alias and through the rolled-back
//! index; then again through a read-only handle, which reads the postings from the file.
//!
//! Each document is one child under one parent (asserted), so a search's units are its
//! children in order and a hit's score is its child's: the test compares the answers' units
//! with the oracles' children, which is the simplest honest way through the public API.
//!
//! - `Lexical` equals a brute-force BM25 over the texts of the children the model says the
//!   caller may see (the definitions of `folio::index::lexical`: `N` and `df` over the
//!   visible children, the mean length over the version's live ones, terms from
//!   `Analyzer::terms`): exact order, scores within rounding, filled to `min(k, children
//!   holding a query term)`, never a child the caller cannot see.
//! - `Hybrid` equals the fusion, computed here, of the two legs at their depths: the dense
//!   leg is exact (no segment has a graph, asserted), taken from a dense search of every
//!   visible unit; the lexical leg from a lexical search of every matching unit, itself
//!   checked against the oracle first.
//! - With a reranker (a hash of the query and the text, with ties, so the order of equal
//!   scores is checked too), in every mode: the answer is the unreranked answer's best
//!   `max(top, k)` units reordered by the reranker's scores (ties in the earlier order),
//!   cut to `k`; each hit keeps its earlier stages' scores beside the reranker's, and no
//!   hit is one the caller cannot see.

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use folio::embed::{EmbedError, Reranker};
use folio::index::lexical::{Analyzer, LexicalLanguage, B, K1};
use folio::query::{
    Fusion, Hybrid, Rerank, SearchMode, SearchRequest, SearchResponse, DEFAULT_DENSE_DEPTH,
    DEFAULT_LEXICAL_DEPTH, DEFAULT_RRF_K,
};
use folio::review::{LoggedFusion, LoggedMode};
use folio::store::{Access, Store};
use folio::{Filter, MetadataValue};
use folio_testkit::store_ops::{admits, principals, DocOp};
use folio_testkit::versions::{doc, head, route, small_options, temp_store};
use proptest::prelude::*;

const WORDS: [&str; 10] = [
    "the", "of", "run", "running", "runs", "apple", "apples", "cherry", "kernel", "invoice",
];
const DOCS: usize = 8;

/// A document as a version holds it.
#[derive(Debug, Clone)]
struct Held {
    incarnation: u64,
    text: String,
    acl: Vec<&'static str>,
}

type State = BTreeMap<usize, Held>;

/// The documents of version `then` a caller sees now (`None`: unrestricted): those not
/// deleted or replaced by a new incarnation since, whose ACL then and now admit them.
fn visible_docs(then: &State, now: &State, caller: Option<&[&str]>) -> Vec<usize> {
    then.iter()
        .filter(|(id, was)| {
            now.get(id).is_some_and(|is| {
                is.incarnation == was.incarnation
                    && caller.is_none_or(|c| admits(&was.acl, c) && admits(&is.acl, c))
            })
        })
        .map(|(id, _)| *id)
        .collect()
}

/// BM25 of every visible document holding a query term, best first (ties by child number).
fn bm25_oracle(
    then: &State,
    visible: &[usize],
    child_of: &HashMap<String, u32>,
    query: &str,
) -> Vec<(String, f32)> {
    let live: Vec<&str> = then.values().map(|held| held.text.as_str()).collect();
    let seen: Vec<(String, &str, u32)> = visible
        .iter()
        .map(|d| {
            let id = format!("d{d}");
            let child = child_of[&id];
            (id, then[d].text.as_str(), child)
        })
        .collect();
    bm25_ranking(&live, &seen, query)
}

/// BM25 as `folio::index::lexical` defines it, in `LexicalLanguage::Auto`: each of
/// `visible` (an id, its text, its child number) holding a query term, best first (ties by
/// child number); `N` and document frequencies over `visible`, the mean length over `live`
/// (the texts of the version's live children).
pub(crate) fn bm25_ranking(
    live: &[&str],
    visible: &[(String, &str, u32)],
    query: &str,
) -> Vec<(String, f32)> {
    let analyzer = Analyzer::new(LexicalLanguage::Auto);
    let lengths: Vec<usize> = live.iter().map(|t| analyzer.terms(t).len()).collect();
    let average = lengths.iter().sum::<usize>() as f64 / lengths.len().max(1) as f64;
    let average = if average > 0.0 { average } else { 1.0 };
    let seen: Vec<(&String, Vec<String>, u32)> = visible
        .iter()
        .map(|(id, text, child)| (id, analyzer.terms(text), *child))
        .collect();
    let mut query: Vec<String> = analyzer.terms(query);
    query.sort();
    query.dedup();
    let n = seen.len() as f64;
    let mut hits: Vec<(String, f32, u32)> = seen
        .iter()
        .filter(|(_, terms, _)| terms.iter().any(|t| query.contains(t)))
        .map(|(id, terms, child)| {
            let mut score = 0.0f64;
            for term in &query {
                let tf = terms.iter().filter(|t| *t == term).count();
                if tf == 0 {
                    continue;
                }
                let df = seen.iter().filter(|(_, ts, _)| ts.contains(term)).count() as f64;
                let idf = ((n - df + 0.5) / (df + 0.5)).ln_1p();
                let tf = tf as f64;
                let norm = 1.0 - B + B * terms.len() as f64 / average;
                score += idf * (tf * (K1 + 1.0)) / (tf + K1 * norm);
            }
            ((*id).clone(), score as f32, *child)
        })
        .collect();
    hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    hits.into_iter().map(|(id, score, _)| (id, score)).collect()
}

/// The two legs fused as `folio::query::Fusion` documents it, best first (ties by child
/// number), the first `wanted`.
fn fusion_oracle(
    fusion: Fusion,
    dense: &[(String, f32)],
    lexical: &[(String, f32)],
    child_of: &HashMap<String, u32>,
    wanted: usize,
) -> Vec<(String, f32)> {
    let mut fused: BTreeMap<String, f64> = BTreeMap::new();
    for (leg, list) in [dense, lexical].into_iter().enumerate() {
        let scores: Vec<f64> = list.iter().map(|(_, s)| f64::from(*s)).collect();
        let min = scores.iter().copied().fold(f64::INFINITY, f64::min);
        let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        for (rank, ((id, _), score)) in list.iter().zip(&scores).enumerate() {
            let add = match fusion {
                Fusion::Rrf { k } => 1.0 / (f64::from(k) + rank as f64 + 1.0),
                Fusion::Weighted { dense_weight } => {
                    let w = f64::from(dense_weight);
                    let weight = if leg == 0 { w } else { 1.0 - w };
                    let normalised = if max > min {
                        (score - min) / (max - min)
                    } else {
                        1.0
                    };
                    weight * normalised
                }
            };
            *fused.entry(id.clone()).or_default() += add;
        }
    }
    let mut out: Vec<(String, f32)> = fused.into_iter().map(|(id, s)| (id, s as f32)).collect();
    out.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then(child_of[&a.0].cmp(&child_of[&b.0]))
    });
    out.truncate(wanted);
    out
}

/// A deterministic reranker: a hash of the query and the text, in a few values so that
/// ties are common.
pub(crate) struct HashReranker;

impl HashReranker {
    pub(crate) fn score_of(query: &str, text: &str) -> f32 {
        let mut hasher = DefaultHasher::new();
        (query, text).hash(&mut hasher);
        (hasher.finish() % 5) as f32 - 2.0
    }
}

impl Reranker for HashReranker {
    fn name(&self) -> &str {
        "hash-test"
    }

    fn score(&self, query: &str, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        Ok(texts.iter().map(|t| Self::score_of(query, t)).collect())
    }
}

fn units(response: &SearchResponse) -> Vec<(String, f32)> {
    for hit in &response.results {
        assert_eq!(hit.children.len(), 1, "a document is one child: {hit:?}");
    }
    response
        .results
        .iter()
        .map(|h| (h.doc_id.clone(), h.score))
        .collect()
}

pub(crate) fn assert_same(found: &[(String, f32)], expected: &[(String, f32)], what: &str) {
    let ids = |l: &[(String, f32)]| l.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
    assert_eq!(
        ids(found),
        ids(expected),
        "{what}: found {found:?}, expected {expected:?}"
    );
    for ((_, f), (_, e)) in found.iter().zip(expected) {
        assert!(
            (f - e).abs() <= 1e-5 * e.abs().max(1e-3),
            "{what}: {found:?} vs {expected:?}"
        );
    }
}

/// Child numbers of the documents live in `target`'s version, and that version.
fn children_of(store: &Store, target: &str) -> (u64, HashMap<String, u32>) {
    let snapshot = store.snapshot().unwrap();
    let (state, view) = snapshot.resolve(target).unwrap();
    assert_eq!(
        view.graph_segments(),
        0,
        "the dense leg must be an exact scan"
    );
    let mut out = HashMap::new();
    for number in view.live() {
        let child = snapshot.child(&state, number).unwrap();
        let id = snapshot.doc_id(child.rev).unwrap();
        assert!(out.insert(id, number).is_none(), "a document is one child");
    }
    (view.version(), out)
}

#[derive(Debug, Clone)]
struct Ask {
    caller: Option<u8>,
    query: Vec<usize>,
    k: usize,
    children: usize,
    fusion: Fusion,
    dense_depth: usize,
    lexical_depth: usize,
    rerank_top: usize,
}

fn ask() -> impl Strategy<Value = Ask> {
    let fusion = prop_oneof![
        (0u32..100).prop_map(|k| Fusion::Rrf { k }),
        prop::sample::select(vec![0.0f32, 0.3, 0.5, 1.0])
            .prop_map(|dense_weight| Fusion::Weighted { dense_weight }),
    ];
    (
        prop::option::of(0u8..8),
        prop::collection::vec(0..WORDS.len(), 1..4),
        1usize..8,
        1usize..12,
        fusion,
        1usize..12,
        1usize..12,
        1usize..10,
    )
        .prop_map(
            |(caller, query, k, children, fusion, dense_depth, lexical_depth, rerank_top)| Ask {
                caller,
                query,
                k,
                children,
                fusion,
                dense_depth,
                lexical_depth,
                rerank_top,
            },
        )
}

fn op() -> impl Strategy<Value = DocOp> {
    prop_oneof![
        4 => (0..DOCS, prop::collection::vec(0..WORDS.len(), 1..8), 0..8u8)
            .prop_map(|(doc, words, acl)| DocOp::Upsert { doc, words, acl }),
        1 => (0..DOCS).prop_map(|doc| DocOp::Delete { doc }),
        1 => (0..DOCS, 0..8u8).prop_map(|(doc, acl)| DocOp::SetAcl { doc, acl }),
    ]
}

/// Searches `target` (whose version is `version`) as `ask` says, against the oracles.
fn check(store: &Store, versions: &BTreeMap<u64, State>, now: &State, target: &str, ask: &Ask) {
    let (version, child_of) = children_of(store, target);
    let then = &versions[&version];
    assert_eq!(
        child_of.len(),
        then.len(),
        "{target}: one child per document"
    );
    let caller: Option<Vec<&str>> = ask.caller.map(principals);
    let access = match &caller {
        Some(p) => Access::principals(p.iter().copied()),
        None => Access::Unrestricted,
    };
    let visible = visible_docs(then, now, caller.as_deref());
    let seen = visible.len();
    let query: Vec<&str> = ask.query.iter().map(|w| WORDS[*w]).collect();
    let query = query.join(" ");
    let request = |mode: SearchMode, k: usize, children: usize| {
        SearchRequest::text(query.as_str())
            .access(access.clone())
            .target(target)
            .mode(mode)
            .k(k)
            .children(children)
            .no_dedup()
    };
    let all = seen.max(1);
    let search = |request: SearchRequest| {
        let response = store.search(&request).unwrap();
        assert_eq!(response.version, version);
        assert_eq!(response.mode, request.mode);
        units(&response)
    };

    let oracle = bm25_oracle(then, &visible, &child_of, &query);
    let lexical = search(request(SearchMode::Lexical, all, all));
    assert_same(&lexical, &oracle, "every lexical unit");
    let some = search(request(SearchMode::Lexical, ask.k, ask.children));
    let filled = &oracle[..ask.k.min(oracle.len())];
    assert_same(&some, filled, "lexical top k");
    let dense = search(request(SearchMode::Dense, all, all));
    assert_eq!(dense.len(), seen, "the dense leg ranks every visible child");
    for (id, _) in lexical.iter().chain(&dense) {
        let d: usize = id[1..].parse().unwrap();
        assert!(visible.contains(&d), "{id} is not visible to {caller:?}");
    }

    let hybrid = Hybrid::default()
        .dense_depth(ask.dense_depth)
        .lexical_depth(ask.lexical_depth);
    let hybrid = match ask.fusion {
        Fusion::Rrf { k } => hybrid.rrf(k),
        Fusion::Weighted { dense_weight } => hybrid.weighted(dense_weight),
    };
    // What the collector asks the ranker for (each unit is one child, so it asks once).
    let k = ask.k.min(seen);
    let wanted = ask.children.max(k).min(seen);
    let depth = |d: usize, list: &[(String, f32)]| list[..d.max(wanted).min(list.len())].to_vec();
    let expected = fusion_oracle(
        ask.fusion,
        &depth(ask.dense_depth, &dense),
        &depth(ask.lexical_depth, &lexical),
        &child_of,
        wanted,
    );
    let fused = search(request(SearchMode::Hybrid(hybrid), ask.k, ask.children));
    assert_same(&fused, &expected[..k.min(expected.len())], "hybrid top k");

    for mode in [
        SearchMode::Dense,
        SearchMode::Lexical,
        SearchMode::Hybrid(hybrid),
    ] {
        let unreranked = request(mode, ask.rerank_top.max(ask.k), ask.children);
        let unreranked = store.search(&unreranked).unwrap();
        for hit in &unreranked.results {
            let stage = match mode {
                SearchMode::Dense => hit.scores.dense,
                SearchMode::Lexical => hit.scores.lexical,
                SearchMode::Hybrid(_) => hit.scores.fused,
            };
            assert_eq!(
                stage,
                Some(hit.score),
                "{} stage score: {hit:?}",
                mode.name()
            );
            assert_eq!(hit.scores.rerank, None);
        }
        let mut expected: Vec<(f32, &folio::Hit)> = unreranked
            .results
            .iter()
            .map(|h| (HashReranker::score_of(&query, &h.text), h))
            .collect();
        expected.sort_by(|a, b| b.0.total_cmp(&a.0));
        expected.truncate(ask.k);
        let reranker = Rerank::new(Arc::new(HashReranker)).top(ask.rerank_top);
        let reranked = store
            .search(&request(mode, ask.k, ask.children).rerank(reranker))
            .unwrap();
        assert_eq!(reranked.version, version);
        assert_eq!(reranked.reranker.as_deref(), Some("hash-test"));
        let found: Vec<(&str, f32)> = reranked
            .results
            .iter()
            .map(|h| (h.doc_id.as_str(), h.score))
            .collect();
        let oracle: Vec<(&str, f32)> = expected
            .iter()
            .map(|(s, h)| (h.doc_id.as_str(), *s))
            .collect();
        assert_eq!(
            found,
            oracle,
            "{} reranked, top {}",
            mode.name(),
            ask.rerank_top
        );
        for (hit, (score, before)) in reranked.results.iter().zip(&expected) {
            let earlier = folio::query::StageScores {
                rerank: Some(*score),
                ..before.scores
            };
            assert_eq!(hit.scores, earlier, "{} stage scores", mode.name());
            let d: usize = hit.doc_id[1..].parse().unwrap();
            assert!(
                visible.contains(&d),
                "{} is not visible to {caller:?}",
                hit.doc_id
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn lexical_and_hybrid_equal_their_oracles_at_every_version(
        commits in prop::collection::vec(prop::collection::vec(op(), 1..5), 2..6),
        asks in prop::collection::vec(ask(), 2..4),
        alias_at in any::<prop::sample::Index>(),
        rollback_to in any::<prop::sample::Index>(),
    ) {
        let (dir, store) = temp_store(small_options());
        let mut now = State::new();
        let mut versions: BTreeMap<u64, State> = BTreeMap::new();
        let mut incarnations = 0u64;
        for ops in &commits {
            let mut batch = store.batch();
            let mut wrote = false;
            for op in ops {
                match op {
                    DocOp::Upsert { doc: d, words, acl } => {
                        let text: Vec<&str> = words.iter().map(|w| WORDS[*w]).collect();
                        let text = text.join(" ");
                        let incarnation = now.get(d).map_or_else(
                            || {
                                incarnations += 1;
                                incarnations
                            },
                            |held| held.incarnation,
                        );
                        let acl = principals(*acl);
                        batch.upsert(doc(&format!("d{d}"), &text).with_acl(acl.iter().copied()));
                        now.insert(*d, Held { incarnation, text, acl });
                        wrote = true;
                    }
                    DocOp::Delete { doc } => {
                        if now.remove(doc).is_some() {
                            batch.delete(&format!("d{doc}"));
                            wrote = true;
                        }
                    }
                    DocOp::SetAcl { doc, acl } => {
                        if let Some(held) = now.get_mut(doc) {
                            held.acl = principals(*acl);
                            batch.set_acl(&format!("d{doc}"), held.acl.iter().copied());
                            wrote = true;
                        }
                    }
                }
            }
            if wrote {
                batch.commit().unwrap();
                versions.insert(head(&store, "default"), now.clone());
            }
        }
        let numbers: Vec<u64> = versions.keys().copied().collect();
        prop_assume!(!numbers.is_empty());
        let aliased = *alias_at.get(&numbers);
        store.aliases().set("al", &[route("default", aliased, 100)]).unwrap();
        let serving = *rollback_to.get(&numbers);
        store.rollback("default", serving).unwrap();
        let mut targets: Vec<String> = numbers.iter().map(|v| format!("default@{v}")).collect();
        targets.extend(["al".to_string(), "default".to_string()]);
        for target in &targets {
            for ask in &asks {
                check(&store, &versions, &now, target, ask);
            }
        }
        // Another handle reads every segment's postings from the file (the writer kept
        // those it wrote): the same answers.
        let reader = small_options()
            .read_only(true)
            .open(dir.path().join("s.folio"))
            .unwrap();
        for target in &targets {
            for ask in &asks {
                check(&reader, &versions, &now, target, ask);
            }
        }
    }
}

/// A vector query has no words: lexical and hybrid refuse it with a typed error.
#[test]
fn a_vector_query_is_refused_by_the_lexical_modes() {
    let (_dir, store) = temp_store(small_options());
    store.upsert(doc("d0", "apple kernel")).unwrap();
    for mode in [SearchMode::Lexical, SearchMode::Hybrid(Hybrid::default())] {
        let request = SearchRequest::vector(vec![0.5; 8]).mode(mode);
        let error = store.search(&request).unwrap_err();
        assert!(
            matches!(&error, folio::QueryError::Read(folio::ReadError::InvalidParameter(p)) if p.name == "mode"),
            "{error:?}"
        );
    }
    let bad =
        SearchRequest::text("apple").mode(SearchMode::Hybrid(Hybrid::default().weighted(1.5)));
    let error = store.search(&bad).unwrap_err();
    assert!(error.to_string().contains("dense_weight"), "{error}");
}

/// The metadata filter is part of the visible set the lexical leg searches: a child it
/// excludes is never scored, however well it matches, and the answer is filled from the
/// matching ones.
#[test]
fn the_filter_narrows_the_lexical_leg_before_scoring() {
    let (_dir, store) = temp_store(small_options());
    let team = |t: &str| MetadataValue::String(t.to_string());
    let mut batch = store.batch();
    batch.upsert(doc("best", "apple apple apple").with_metadata("team", team("b")));
    batch.upsert(doc("pie", "apple pie and more").with_metadata("team", team("a")));
    batch.upsert(doc("other", "banana").with_metadata("team", team("a")));
    batch.commit().unwrap();
    let ids = |filter: Option<&str>, mode: SearchMode| {
        let mut request = SearchRequest::text("apple").mode(mode).no_dedup();
        if let Some(filter) = filter {
            request = request.filter(Filter::parse(filter).unwrap());
        }
        let response = store.search(&request).unwrap();
        units(&response)
            .into_iter()
            .map(|(id, _)| id)
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(None, SearchMode::Lexical), ["best", "pie"]);
    assert_eq!(ids(Some(r#"team = "a""#), SearchMode::Lexical), ["pie"]);
    let hybrid = ids(Some(r#"team = "a""#), SearchMode::Hybrid(Hybrid::default()));
    assert_eq!(hybrid.len(), 2);
    assert!(!hybrid.contains(&"best".to_string()), "{hybrid:?}");
}

/// Each logged search records how it ranked: its mode, a hybrid search's fusion and depths
/// too (`folio log export` writes them), and no reranker.
#[test]
fn the_request_log_records_each_search_mode() {
    let (_dir, store) = temp_store(small_options().log_requests(true));
    let mut batch = store.batch();
    batch.upsert(doc("fruit", "apple cherry"));
    batch.commit().unwrap();
    let weighted = Hybrid {
        fusion: Fusion::Weighted { dense_weight: 0.25 },
        dense_depth: 30,
        lexical_depth: 40,
    };
    let modes = [
        SearchMode::Dense,
        SearchMode::Lexical,
        SearchMode::Hybrid(Hybrid::default().rrf(DEFAULT_RRF_K)),
        SearchMode::Hybrid(weighted),
    ];
    let mut ids = Vec::new();
    for mode in modes {
        let response = store
            .search(&SearchRequest::text("apple").mode(mode))
            .unwrap();
        ids.push(response.request_id.expect("logged"));
    }
    let entries = store.log().entries().unwrap();
    let logged: Vec<(u64, LoggedMode, Option<String>)> = entries
        .into_iter()
        .map(|e| (e.request_id, e.request.mode, e.request.reranker))
        .collect();
    let rrf = LoggedMode::Hybrid {
        fusion: LoggedFusion::Rrf { k: DEFAULT_RRF_K },
        dense_depth: DEFAULT_DENSE_DEPTH as u64,
        lexical_depth: DEFAULT_LEXICAL_DEPTH as u64,
    };
    let weighted = LoggedMode::Hybrid {
        fusion: LoggedFusion::Weighted { dense_weight: 0.25 },
        dense_depth: 30,
        lexical_depth: 40,
    };
    let expected: Vec<(u64, LoggedMode, Option<String>)> = ids
        .into_iter()
        .zip([LoggedMode::Dense, LoggedMode::Lexical, rrf, weighted])
        .map(|(id, mode)| (id, mode, None))
        .collect();
    assert_eq!(logged, expected);
    let json = serde_json::to_value(logged[3].1).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"name": "hybrid", "fusion": {"name": "weighted", "dense_weight": 0.25},
            "dense_depth": 30, "lexical_depth": 40})
    );
}

/// A merge writes the merged segment's postings: lexical answers (documents and scores)
/// stay those of the unmerged head, in the writer and in a handle opened after, and after
/// a collection dropped the merged segments and their postings.
#[test]
fn merged_segments_answer_lexically_as_before_and_after_reopening() {
    let (dir, store) = temp_store(small_options());
    for (id, text) in [
        ("a", "apple cherry kernel"),
        ("b", "apple apple invoice"),
        ("c", "cherry run running"),
    ] {
        let mut batch = store.batch();
        batch.upsert(doc(id, text));
        batch.commit().unwrap();
    }
    let answers = |store: &Store| {
        ["apple", "cherry run", "invoice kernel"]
            .into_iter()
            .map(|query| {
                let request = SearchRequest::text(query)
                    .access(Access::Unrestricted)
                    .mode(SearchMode::Lexical);
                units(&store.search(&request).unwrap())
            })
            .collect::<Vec<_>>()
    };
    let before = answers(&store);
    assert!(before.iter().all(|found| !found.is_empty()), "{before:?}");
    store.indexes().compact("default").unwrap().expect("merged");
    assert_eq!(
        store
            .snapshot()
            .unwrap()
            .resolve("default")
            .unwrap()
            .1
            .segment_count(),
        1
    );
    assert_eq!(answers(&store), before);
    store.gc(1).unwrap();
    assert_eq!(answers(&store), before);
    drop(store);
    let reader = small_options()
        .read_only(true)
        .open(dir.path().join("s.folio"))
        .unwrap();
    assert_eq!(answers(&reader), before);
    let mut checked = small_options()
        .read_only(true)
        .open(dir.path().join("s.folio"))
        .unwrap();
    let report = checked.check_integrity().unwrap();
    assert!(report.is_consistent(), "{:?}", report.problems);
}

/// A text query given its vector beforehand answers as the text alone in every mode (the
/// dense leg takes the vector, the lexical leg the text), and skips the embedding; a
/// vector of another dimension, or one beside a vector query, is refused with a typed
/// error.
#[test]
fn a_text_query_with_its_vector_answers_as_the_text_alone() {
    use folio::embed::{Embedder, HashEmbedder};
    let (_dir, store) = temp_store(small_options());
    let mut batch = store.batch();
    for (id, text) in [
        ("a", "apple kernel"),
        ("b", "cherry invoice"),
        ("c", "apple pie"),
    ] {
        batch.upsert(doc(id, text));
    }
    batch.commit().unwrap();
    let query = "apple invoice";
    let vector = HashEmbedder::new(8)
        .unwrap()
        .embed_queries(&[query])
        .unwrap();
    let hybrid = SearchMode::Hybrid(Hybrid::default());
    for mode in [SearchMode::Dense, SearchMode::Lexical, hybrid] {
        let alone = store
            .search(&SearchRequest::text(query).mode(mode))
            .unwrap();
        let given = SearchRequest::text(query)
            .with_query_vector(vector.clone())
            .mode(mode);
        let given = store.search(&given).unwrap();
        assert_eq!(units(&given), units(&alone), "{mode:?}");
        assert_eq!(given.stats.stage_micros.embed, 0, "{mode:?}");
    }
    let short = SearchRequest::text(query).with_query_vector(vec![0.5; 4]);
    let error = store.search(&short.mode(hybrid)).unwrap_err();
    assert!(
        matches!(
            error,
            folio::QueryError::Read(folio::ReadError::DimensionMismatch {
                expected: 8,
                found: 4
            })
        ),
        "{error:?}"
    );
    let twice = SearchRequest::vector(vector.clone()).with_query_vector(vector);
    let error = store.search(&twice).unwrap_err();
    assert!(
        matches!(&error, folio::QueryError::Read(folio::ReadError::InvalidParameter(p)) if p.name == "query_vector"),
        "{error:?}"
    );
}

/// Each mode times only the stages it runs, and the stages add up to no more than the
/// search.
#[test]
fn stage_times_name_the_stages_each_mode_runs() {
    let (_dir, store) = temp_store(small_options());
    store.upsert(doc("a", "apple kernel")).unwrap();
    let stages = |mode| {
        let response = store
            .search(&SearchRequest::text("apple").mode(mode))
            .unwrap();
        let s = response.stats.stage_micros;
        assert!(
            s.embed + s.dense + s.lexical + s.fuse + s.rerank + s.assemble <= response.stats.micros,
            "{mode:?}: {s:?} over {}",
            response.stats.micros
        );
        s
    };
    let dense = stages(SearchMode::Dense);
    assert_eq!((dense.lexical, dense.fuse), (0, 0), "{dense:?}");
    let lexical = stages(SearchMode::Lexical);
    assert_eq!(
        (lexical.embed, lexical.dense, lexical.fuse),
        (0, 0, 0),
        "{lexical:?}"
    );
}

/// The names of the spans a search opens, for an application's subscriber.
#[derive(Default)]
struct SpanNames(std::sync::Mutex<Vec<String>>);

impl tracing::Subscriber for SpanNames {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        /// Records the `stage` field of a stage's span.
        struct Stage<'a>(&'a mut String);
        impl tracing::field::Visit for Stage<'_> {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "stage" {
                    *self.0 = format!("{value:?}");
                }
            }
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                if field.name() == "stage" {
                    *self.0 = value.to_string();
                }
            }
        }
        let mut name = span.metadata().name().to_string();
        let mut stage = String::new();
        span.record(&mut Stage(&mut stage));
        if !stage.is_empty() {
            name = format!("{name}:{stage}");
        }
        let mut names = self.0.lock().unwrap();
        names.push(name);
        tracing::span::Id::from_u64(names.len() as u64)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// A hybrid search opens a span for the search and one per stage it runs, which an
/// application's subscriber sees (the library installs none).
#[test]
fn a_hybrid_search_opens_a_tracing_span_per_stage() {
    let (_dir, store) = temp_store(small_options());
    store.upsert(doc("a", "apple kernel")).unwrap();
    let names = std::sync::Arc::new(SpanNames::default());
    let request = SearchRequest::text("apple").mode(SearchMode::Hybrid(Hybrid::default()));
    tracing::subscriber::with_default(names.clone(), || {
        // Another test's thread may have registered these callsites while no subscriber
        // wanted them; ask every callsite again now that this one is set.
        tracing::callsite::rebuild_interest_cache();
        store.search(&request).unwrap()
    });
    let names = names.0.lock().unwrap();
    for expected in [
        "folio.search",
        "folio.search.stage:embed",
        "folio.search.stage:dense",
        "folio.search.stage:lexical",
        "folio.search.stage:fuse",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
}
