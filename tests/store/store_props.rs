//! Property tests of the store and small-to-big search against simple oracles.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use folio::chunk::SourceFormat;
use folio::document::Document;
use folio::embed::{default_embedder, Embedder};
use folio::query::SearchRequest;
use folio::store::{Access, GraphParams, Store, VectorStorage};
use proptest::prelude::*;

const WORDS: &[&str] = &[
    "deploy", "rollback", "budget", "hotel", "vacation", "kernel", "invoice", "laptop", "badge",
    "incident", "travel", "salary", "cluster", "backup", "office", "printer",
];
const PRINCIPALS: &[&str] = &["alice", "eng", "finance"];

fn paragraph() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(WORDS), 3..25).prop_map(|w| w.join(" ") + ".")
}

fn document_text() -> impl Strategy<Value = String> {
    prop::collection::vec(paragraph(), 1..6).prop_map(|p| p.join("\n\n"))
}

fn acl() -> impl Strategy<Value = Vec<String>> {
    prop::collection::btree_set(prop::sample::select(PRINCIPALS), 0..3)
        .prop_map(|s| s.into_iter().map(String::from).collect())
}

fn documents() -> impl Strategy<Value = Vec<Document>> {
    prop::collection::vec((document_text(), acl()), 1..10).prop_map(|docs| {
        docs.into_iter()
            .enumerate()
            .map(|(i, (text, acl))| {
                Document::new(format!("doc{i}"), SourceFormat::Text, text).with_acl(acl)
            })
            .collect()
    })
}

fn temp_store() -> (tempfile::TempDir, Store) {
    temp_store_with(VectorStorage::Resident)
}

/// A new store whose `default` index keeps its vectors as `vectors` says; a compressed one
/// gets a graph over every segment, so its rows stay in the file.
fn temp_store_with(vectors: VectorStorage) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut builder = Store::builder().create(true).vectors(vectors);
    if vectors != VectorStorage::Resident {
        builder = builder.graph(GraphParams {
            min_graph_size: 1,
            ..GraphParams::default()
        });
    }
    let store = builder
        .open(dir.path().join("s.folio"))
        .expect("create store");
    (dir, store)
}

fn ingest(store: &Store, docs: &[Document]) {
    let mut batch = store.batch();
    for d in docs {
        batch.upsert(d.clone());
    }
    batch.commit().expect("commit");
}

fn visible_to(doc: &Document, principals: &[String]) -> bool {
    doc.acl.is_empty() || doc.acl.iter().any(|p| principals.contains(p))
}

fn unit_vector(text: &str) -> Vec<f32> {
    let mut v = default_embedder().embed(&[text]).expect("embed");
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// No hidden chunk is ever returned; results fill to min(k, visible parents); every
    /// child score equals an exact cosine of its embed_text, and the best hit is the exact
    /// best visible child.
    #[test]
    fn search_respects_acl_fills_k_and_scores_exactly(
        docs in documents(),
        query in prop::collection::vec(prop::sample::select(WORDS), 1..4),
        principals in prop::collection::vec(prop::sample::select(PRINCIPALS), 0..3),
        k in 1usize..8,
        compressed in any::<bool>(),
    ) {
        let vectors = if compressed { VectorStorage::compressed() } else { VectorStorage::Resident };
        let (_dir, store) = temp_store_with(vectors);
        ingest(&store, &docs);
        let principals: Vec<String> = principals.into_iter().map(String::from).collect();
        let query = query.join(" ");
        let mut request = SearchRequest::text(&query).as_principals(principals.clone()).k(k);
        request.dedup = None;
        let response = store.search(&request).expect("search");

        let mut visible_parents = BTreeSet::new();
        let mut best_visible = f32::MIN;
        let q = unit_vector(&query);
        let mut exact: HashMap<String, f32> = HashMap::new();
        for doc in docs.iter().filter(|d| visible_to(d, &principals)) {
            for c in store.chunks("default", &doc.doc_id).expect("chunks") {
                visible_parents.insert(c.parent_id.clone());
                let s = dot(&q, &unit_vector(&c.embed_text));
                best_visible = best_visible.max(s);
                exact.insert(c.chunk_id.clone(), s);
            }
        }
        prop_assert_eq!(response.results.len(), k.min(visible_parents.len()));
        for hit in &response.results {
            let doc = docs.iter().find(|d| d.doc_id == hit.doc_id).expect("known doc");
            prop_assert!(visible_to(doc, &principals), "hidden doc {} returned", hit.doc_id);
            prop_assert_eq!(&hit.text, &doc.text[hit.start..hit.end]);
            for child in &hit.children {
                let expected = exact[&child.chunk_id];
                prop_assert!((child.score - expected).abs() < 1e-4, "score {} vs exact {}", child.score, expected);
            }
            let max_child = hit.children.iter().map(|c| c.score).fold(f32::MIN, f32::max);
            prop_assert!((hit.score - max_child).abs() < 1e-6, "a unit scores its best child");
        }
        if let Some(first) = response.results.first() {
            prop_assert!((first.score - best_visible).abs() < 1e-4);
        }
        for pair in response.results.windows(2) {
            prop_assert!(pair[0].score >= pair[1].score);
        }
    }

    /// An upsert replaces every chunk of the old version; a delete removes all of them.
    #[test]
    fn upsert_leaves_no_trace_of_the_old_version(docs in documents(), new_text in document_text()) {
        let (_dir, store) = temp_store();
        ingest(&store, &docs);
        let target = docs[0].clone();
        let replaced = Document::new(target.doc_id.clone(), SourceFormat::Text, format!("zebra {new_text}"));
        store.upsert(replaced.clone()).expect("upsert");
        let chunks = store.chunks("default", &target.doc_id).expect("chunks");
        prop_assert!(!chunks.is_empty());
        for c in &chunks {
            prop_assert_eq!(&c.text, &replaced.text[c.start..c.end]);
        }
        let all = store.search(&SearchRequest::text("zebra").access(Access::Unrestricted).k(100)).expect("search");
        let from_target: Vec<_> = all.results.iter().filter(|h| h.doc_id == target.doc_id).collect();
        prop_assert!(!from_target.is_empty());
        for hit in from_target {
            prop_assert_eq!(&hit.text, &replaced.text[hit.start..hit.end]);
        }
        prop_assert_eq!(store.document(&target.doc_id).expect("read").map(|d| d.text), Some(replaced.text));
        store.delete(&target.doc_id).expect("delete");
        prop_assert!(store.chunks("default", &target.doc_id).expect("chunks").is_empty());
        let after = store.search(&SearchRequest::text("zebra").access(Access::Unrestricted).k(100)).expect("search");
        prop_assert!(after.results.iter().all(|h| h.doc_id != target.doc_id));
    }

    /// A batch that fails part-way changes nothing: same documents, same version, same answers.
    #[test]
    fn a_failed_batch_changes_nothing(docs in documents(), extra in document_text()) {
        let (_dir, store) = temp_store();
        ingest(&store, &docs);
        let before_ids = store.document_ids().expect("ids");
        let request = SearchRequest::text("deploy budget").access(Access::Unrestricted).k(10);
        let before = store.search(&request).expect("search");
        let mut batch = store.batch();
        batch.upsert(Document::new("new-doc", SourceFormat::Text, extra));
        batch.set_acl(&docs[0].doc_id, ["eng"]);
        batch.delete("no-such-document");
        prop_assert!(batch.commit().is_err());
        prop_assert_eq!(store.document_ids().expect("ids"), before_ids);
        let after = store.search(&request).expect("search");
        prop_assert_eq!(after.version, before.version);
        prop_assert_eq!(&after.results, &before.results);
        // The same holds after reopening the file.
        let path = store.path().to_path_buf();
        drop(store);
        let reopened = Store::open(&path).expect("reopen");
        prop_assert_eq!(reopened.search(&request).expect("search").results, before.results);
    }
}

#[test]
fn acl_change_moves_visibility_without_rechunking() {
    let (_dir, store) = temp_store();
    let doc = Document::new(
        "runbook",
        SourceFormat::Text,
        "Roll back the deploy with the release tool.",
    )
    .with_acl(["eng"]);
    store.upsert(doc).expect("upsert");
    let chunks_before = store.chunks("default", "runbook").expect("chunks");
    let ask = |who: &[&str]| {
        store
            .search(&SearchRequest::text("roll back deploy").as_principals(who.iter().copied()))
            .expect("search")
            .results
            .len()
    };
    assert_eq!(ask(&["eng"]), 1);
    assert_eq!(ask(&["finance"]), 0);
    assert_eq!(ask(&[]), 0);
    store.set_acl("runbook", ["finance"]).expect("set acl");
    assert_eq!(ask(&["eng"]), 0);
    assert_eq!(ask(&["finance"]), 1);
    store
        .set_acl("runbook", Vec::<String>::new())
        .expect("make public");
    assert_eq!(ask(&[]), 1);
    let chunks_after = store.chunks("default", "runbook").expect("chunks");
    assert_eq!(
        chunks_before.iter().map(|c| c.number).collect::<Vec<_>>(),
        chunks_after.iter().map(|c| c.number).collect::<Vec<_>>()
    );
}

#[test]
fn own_vectors_are_validated_and_nothing_is_written_on_refusal() {
    let (_dir, store) = temp_store();
    let doc = Document::new(
        "d",
        SourceFormat::Text,
        "One sentence here. Another one there.",
    );
    let plan = store.plan("default", &doc).expect("plan");
    let dim = store
        .indexes()
        .list()
        .expect("indexes")
        .into_iter()
        .find(|i| i.name == "default")
        .expect("default index")
        .embedder
        .dimension as usize;
    let good: Vec<f32> = (0..plan.len() * dim)
        .map(|i| (i % 7) as f32 + 1.0)
        .collect();
    for bad in [
        vec![1.0; plan.len() * dim + 1],
        {
            let mut v = good.clone();
            v[3] = f32::NAN;
            v
        },
        {
            let mut v = good.clone();
            v[0] = f32::INFINITY;
            v
        },
    ] {
        let mut batch = store.batch();
        batch.upsert_with_vectors(doc.clone(), BTreeMap::from([("default".to_string(), bad)]));
        assert!(batch.commit().is_err());
        assert!(store.document_ids().expect("ids").is_empty());
    }
    let mut batch = store.batch();
    batch.upsert_with_vectors(
        doc.clone(),
        BTreeMap::from([("default".to_string(), good.clone())]),
    );
    batch.commit().expect("good vectors");
    let response = store
        .search(&SearchRequest::vector(good[..dim].to_vec()).k(1))
        .expect("search");
    assert_eq!(response.results[0].children[0].chunk_id, plan[0].chunk_id);
    assert!((response.results[0].score - 1.0).abs() < 1e-5);
    let wrong_dim = store.search(&SearchRequest::vector(vec![1.0; dim - 1]));
    assert!(wrong_dim.is_err());
}

#[test]
fn application_chunks_are_stored_as_given_and_bad_spans_refused() {
    use folio::chunk::{ChildPiece, Chunked, ParentPiece, Span};
    let (_dir, store) = temp_store();
    let text = "Première phrase ici. Second sentence there.";
    let doc = Document::new("ext", SourceFormat::Text, text);
    let whole = Span {
        start: 0,
        end: text.len(),
    };
    let cut = text.find("Second").expect("fixture");
    let child = |start, end| ChildPiece {
        span: Span { start, end },
        parent: 0,
        section_path: vec![],
        oversized: false,
    };
    let good = Chunked {
        parents: vec![ParentPiece {
            span: whole,
            section_path: vec![],
        }],
        children: vec![child(0, cut - 1), child(cut, text.len())],
    };
    let mut bad = good.clone();
    bad.children[0].span.end = 6; // inside the two-byte 'è' (bytes 5..7)
    let mut batch = store.batch();
    batch.upsert_chunked(doc.clone(), bad);
    assert!(batch.commit().is_err());
    assert!(store.document_ids().expect("ids").is_empty());
    let mut batch = store.batch();
    batch.upsert_chunked(doc, good);
    batch.commit().expect("good chunks");
    let chunks = store.chunks("default", "ext").expect("chunks");
    assert_eq!(
        chunks.iter().map(|c| (c.start, c.end)).collect::<Vec<_>>(),
        vec![(0, cut - 1), (cut, text.len())]
    );
}

/// A batch's operations on one document see each other (its `docs` entries are written
/// in key order at the end of the batch, so the batch reads its own pending entries).
#[test]
fn operations_on_one_document_in_one_batch_see_each_other() {
    let (_dir, store) = temp_store();
    let text = "Run release rollback to undo a bad deploy.";
    let mut batch = store.batch();
    batch.upsert(Document::new("a", SourceFormat::Text, text).with_acl(["eng"]));
    batch.set_acl("a", ["fin"]);
    batch.upsert(Document::new("b", SourceFormat::Text, text));
    batch.delete("b");
    batch.upsert(Document::new("c", SourceFormat::Text, text));
    batch.commit().expect("commit");
    assert_eq!(store.document_ids().expect("ids"), ["a", "c"]);
    let a = store.document("a").expect("read").expect("a exists");
    assert_eq!(a.acl, ["fin"]);
    let hits = |who: &str| {
        let request = SearchRequest::text("undo a deploy").as_principals([who]);
        let response = store.search(&request).expect("search");
        response
            .results
            .iter()
            .map(|hit| hit.doc_id.clone())
            .collect::<Vec<_>>()
    };
    assert!(hits("fin").contains(&"a".to_string()));
    assert!(!hits("eng").contains(&"a".to_string()));

    // A document deleted earlier in the batch is unknown to a later delete: nothing lands.
    let mut batch = store.batch();
    batch.upsert(Document::new("d", SourceFormat::Text, text));
    batch.delete("d");
    batch.delete("d");
    assert!(batch.commit().is_err());
    assert_eq!(store.document_ids().expect("ids"), ["a", "c"]);
}

/// A compressed index reopened (codes recomputed from the rows in the file, rows read
/// back for re-scoring) gives the very answers it gave before, scores included.
#[test]
fn a_compressed_index_answers_the_same_after_reopening() {
    let (dir, store) = temp_store_with(VectorStorage::compressed());
    let docs: Vec<Document> = (0..400usize)
        .map(|i| {
            let words: Vec<&str> = (0..12)
                .map(|j| WORDS[(i * 7 + j * j * 3 + i / 5) % WORDS.len()])
                .collect();
            let acl = [vec![], vec![PRINCIPALS[i % 3].to_string()]][i % 2].clone();
            Document::new(format!("doc{i}"), SourceFormat::Text, words.join(" ") + ".")
                .with_acl(acl)
        })
        .collect();
    ingest(&store, &docs);
    let requests: Vec<SearchRequest> = WORDS
        .iter()
        .zip(WORDS.iter().skip(3))
        .flat_map(|(a, b)| {
            let query = format!("{a} {b}");
            [
                SearchRequest::text(&query)
                    .access(Access::Unrestricted)
                    .k(10),
                SearchRequest::text(&query)
                    .as_principals(["eng".to_string()])
                    .k(5),
            ]
        })
        .collect();
    let answers = |store: &Store| -> Vec<String> {
        requests
            .iter()
            .map(|r| format!("{:?}", store.search(r).expect("search").results))
            .collect()
    };
    let before = answers(&store);
    assert!(
        before.iter().all(|a| a.contains("score")),
        "every query found something"
    );
    drop(store);
    let store = Store::builder()
        .open(dir.path().join("s.folio"))
        .expect("reopen");
    assert_eq!(answers(&store), before);
}
