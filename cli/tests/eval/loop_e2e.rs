//! The loop of issue 15 end to end, through the library: kb (`fixed:500`) and kb_pc
//! (`parent-child:1200/300`) behind a 50/50 alias, 200 logged searches as twelve users with
//! seeded random ACLs, feedback and gold spans by a rule computed here, the failures selected
//! from the log, replayed on both versions, and the counts and labels checked against this
//! test's own searches (`folio_testkit::version_oracle`), every replayed hit visible to its asker.

use std::collections::BTreeMap;

use folio::chunk::SourceFormat;
use folio::document::Document;
use folio::review::{Annotation, Selection};
use folio::store::{GoldEvidence, Rating, Route, Store, Verdict};
use folio::SearchRequest;
use folio_eval::{QuestionRecord, QuestionSet, VersionReplay};
use folio_testkit::vectors::Rng;
use folio_testkit::version_oracle::{expected, holds, ingest_kb_and_kb_pc, observed};

const TOPICS: [&str; 8] = [
    "harbour", "orchard", "glacier", "foundry", "meadow", "canyon", "lagoon", "quarry",
];
const GROUPS: [&str; 4] = ["eng", "hr", "ops", "legal"];
const USERS: usize = 12;
const SEARCHES: usize = 200;
const K: usize = 3;
/// Gold spans per document: inside kb's first chunk, across its 500-byte cut, inside the
/// first 1,200-byte parent, across that parent's end.
const SPANS: [(usize, usize); 4] = [(90, 150), (470, 540), (980, 1040), (1180, 1250)];

/// About 1,500 ASCII bytes; the numbered words are `topic`'s own, "report" and "crew" are
/// everyone's.
fn text(topic: &str) -> String {
    let mut out = String::new();
    let mut j = 0;
    while out.len() < 1500 {
        out +=
            &format!("In {topic} lot {j} the {topic}{j} crew files report{j} by {topic}gate{j}. ");
        j += 1;
    }
    out
}

/// Whether `acl` admits `principals` (empty: public).
fn admits(acl: &[String], principals: &[String]) -> bool {
    acl.is_empty() || acl.iter().any(|g| principals.contains(g))
}

/// A random group, or two.
fn groups(rng: &mut Rng) -> Vec<String> {
    let first = (rng.next() % GROUPS.len() as u64) as usize;
    let mut out = vec![GROUPS[first].to_string()];
    if rng.next().is_multiple_of(3) {
        out.push(GROUPS[(first + 1) % GROUPS.len()].to_string());
    }
    out
}

struct Failure {
    user: usize,
    index: String,
    gold: Option<(usize, (usize, usize))>,
}

#[test]
fn logged_failures_replay_between_the_gray_release_versions() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::builder()
        .create(true)
        .log_requests(true)
        .open(dir.path().join("kb.folio"))
        .unwrap();
    let mut rng = Rng(15);
    // A third of the documents public, the others for one or two groups.
    let acls: Vec<Vec<String>> = TOPICS
        .iter()
        .map(|_| {
            if rng.next().is_multiple_of(3) {
                Vec::new()
            } else {
                groups(&mut rng)
            }
        })
        .collect();
    ingest_kb_and_kb_pc(
        &store,
        TOPICS.iter().enumerate().map(|(i, topic)| {
            Document::new(format!("d{i}"), SourceFormat::Text, text(topic))
                .with_acl(acls[i].iter().cloned())
        }),
    );
    let half = |index: &str| Route {
        index: index.into(),
        version: 1,
        weight: 50,
    };
    store
        .aliases()
        .set("gray", &[half("kb"), half("kb_pc")])
        .unwrap();
    let users: Vec<Vec<String>> = (0..USERS)
        .map(|u| [vec![format!("u{u}")], groups(&mut rng)].concat())
        .collect();
    let questions: Vec<(usize, (usize, usize))> = (0..TOPICS.len())
        .flat_map(|d| SPANS.iter().map(move |&span| (d, span)))
        .collect();

    // The traffic, and the feedback a user would give: a hidden gold document gets a thumb
    // down (every other time) without gold; a gold document missing from the top k a thumb
    // down with the gold span; the document there but no unit holding the span a `wrong`
    // verdict with it; the span held a thumb up.
    let mut failures: BTreeMap<u64, Failure> = BTreeMap::new();
    let mut answered: BTreeMap<String, usize> = BTreeMap::new();
    for n in 0..SEARCHES {
        let user = (rng.next() % USERS as u64) as usize;
        let (doc, (s, e)) = questions[(rng.next() % questions.len() as u64) as usize];
        let doc_id = format!("d{doc}");
        let response = store
            .search(
                &SearchRequest::text(&text(TOPICS[doc])[s..e])
                    .as_principals(users[user].clone())
                    .route_key(format!("u{user}"))
                    .target("gray")
                    .k(K),
            )
            .unwrap();
        *answered.entry(response.index.clone()).or_insert(0) += 1;
        let id = response.request_id.expect("logged");
        let units: Vec<(String, usize, usize)> = response
            .results
            .iter()
            .map(|h| (h.doc_id.clone(), h.start, h.end))
            .collect();
        let mut note = Annotation::default();
        let gold = Some(vec![GoldEvidence {
            doc_id: doc_id.clone(),
            start_byte: s as u64,
            end_byte: e as u64,
        }]);
        let failed = if !admits(&acls[doc], &users[user]) {
            note.rating = Some(Rating::Down);
            n.is_multiple_of(2).then_some(None)
        } else if !units.iter().any(|u| u.0 == doc_id) {
            note.rating = Some(Rating::Down);
            note.gold = gold;
            Some(Some((doc, (s, e))))
        } else if !units.iter().any(|u| holds(u, &doc_id, s, e)) {
            note.verdict = Some(Verdict::Wrong);
            note.gold = gold;
            Some(Some((doc, (s, e))))
        } else {
            note.rating = Some(Rating::Up);
            None
        };
        if note.rating == Some(Rating::Down) && failed.is_none() {
            continue; // the hidden document's other half: no feedback
        }
        store.log().annotate(id, &note).unwrap();
        if let Some(gold) = failed {
            let index = response.index.clone();
            failures.insert(id, Failure { user, index, gold });
        }
    }
    // The split: both versions answered, as the log says.
    let log = store.log().entries().unwrap();
    assert_eq!(log.len(), SEARCHES);
    let mut logged: BTreeMap<String, usize> = BTreeMap::new();
    for entry in &log {
        assert_eq!(entry.request.version, 1);
        *logged.entry(entry.request.index.clone()).or_insert(0) += 1;
    }
    assert_eq!(logged, answered);
    assert_eq!(answered.len(), 2, "{answered:?}");

    // Select the failures: exactly the requests given a thumb down or a wrong verdict.
    let mut selection = Selection::default();
    selection.thumb_down = true;
    selection.wrong = true;
    let picked = store.log().select(&selection).unwrap();
    assert_eq!(
        picked.iter().map(|e| e.request_id).collect::<Vec<_>>(),
        failures.keys().copied().collect::<Vec<_>>()
    );
    let mut per_version: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &picked {
        *per_version.entry(e.request.index.as_str()).or_insert(0) += 1;
    }
    let mut want_per_version: BTreeMap<&str, usize> = BTreeMap::new();
    for f in failures.values() {
        *want_per_version.entry(f.index.as_str()).or_insert(0) += 1;
    }
    assert_eq!(per_version, want_per_version);
    let without_gold = failures.values().filter(|f| f.gold.is_none()).count();
    assert!(without_gold > 0 && without_gold < failures.len());

    // The question set, as `folio log select` writes it.
    let mut lines = String::new();
    for entry in &picked {
        let text_of = |d: &str| store.document(d).ok().flatten().map(|d| d.text);
        let (record, lost) = QuestionRecord::from_logged(entry, text_of).unwrap();
        assert!(lost.is_empty());
        let failure = &failures[&entry.request_id];
        let origin = record.origin.as_ref().unwrap();
        assert_eq!(origin.principals.as_ref(), Some(&users[failure.user]));
        let gold: Vec<_> = record
            .gold_spans
            .iter()
            .map(|g| (g.doc_id.clone(), (g.start_byte, g.end_byte)))
            .collect();
        let want: Vec<_> = failure
            .gold
            .iter()
            .map(|&(d, span)| (format!("d{d}"), span))
            .collect();
        assert_eq!(gold, want);
        lines += &(serde_json::to_string(&record).unwrap() + "\n");
    }
    let path = dir.path().join("failures.jsonl");
    std::fs::write(&path, lines).unwrap();

    // Replay on both versions against the oracle.
    let targets = ["kb@1", "kb_pc@1"];
    let mut replay = VersionReplay::new(targets);
    replay.k = K;
    let report = replay
        .run(&store, QuestionSet::read(&path, None).unwrap())
        .unwrap();
    let (want, labels) = expected(&store, &path, K, targets);
    assert_eq!(observed(&report), want);
    assert_eq!(report.questions.len(), failures.len());
    assert!(want.improved > 0, "{want:?}");
    for ((row, want), (id, failure)) in report.questions.iter().zip(&labels).zip(&failures) {
        assert_eq!(row.query_id, format!("request-{id}"));
        let got = row.changes[0]
            .difference
            .as_ref()
            .map(|d| d.labels.iter().map(|l| l.name()).collect::<Vec<_>>());
        assert_eq!(got.as_ref(), want.as_ref(), "{}", row.query_id);
        // Nothing the asker could not see.
        for t in &row.targets {
            assert!(t.units.len() <= K);
            for u in &t.units {
                let doc: usize = u.doc_id[1..].parse().unwrap();
                assert!(
                    admits(&acls[doc], &users[failure.user]),
                    "{} at {}: {} for {:?}",
                    row.query_id,
                    t.target,
                    u.doc_id,
                    users[failure.user]
                );
            }
        }
    }
}
