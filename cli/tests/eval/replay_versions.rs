//! Replay between versions of one store (`folio replay STORE --target A --target B`): the
//! labels and counts against an oracle computed here from the test's own searches, access
//! as the questions' principals (refused without them), the command line's JSON, and a
//! property test: random ACLs changing between versions, replay never shows a chunk the
//! principals cannot see at that version, and fills answers to min(k, visible).

use std::collections::BTreeSet;
use std::path::Path;

use folio::chunk::SourceFormat;
use folio::document::Document;
use folio::store::{Route, Store};
use folio_eval::{EvalError, QuestionSet, VersionReplay};
use folio_testkit::cli;
use folio_testkit::version_oracle::{expected, ingest_kb_and_kb_pc, observed};
use proptest::prelude::*;

const TOPICS: [&str; 4] = ["harbour", "orchard", "glacier", "foundry"];

/// About 1,000 ASCII bytes of words only `topic`'s document uses.
fn text(topic: &str) -> String {
    let mut out = String::new();
    let mut j = 0;
    while out.len() < 1000 {
        out += &format!("The {topic} {topic}{j} keeps ledger{j} near {topic}gate{j}. ");
        j += 1;
    }
    out
}

/// kb (fixed:500) and kb_pc (parent-child:1200/300) over four documents: two public, one
/// for `eng`, one for `hr`; alias `next` serves kb_pc@1, tag `stable` names kb@1.
fn build(path: &Path) -> Store {
    let store = Store::builder().create(true).open(path).unwrap();
    let acls: [&[&str]; 4] = [&[], &["eng"], &["hr"], &[]];
    ingest_kb_and_kb_pc(
        &store,
        TOPICS.iter().enumerate().map(|(i, topic)| {
            Document::new(format!("d{i}"), SourceFormat::Text, text(topic))
                .with_acl(acls[i].iter().copied())
        }),
    );
    store.versions("kb").tag(1, "stable").unwrap();
    store
        .aliases()
        .set(
            "next",
            &[Route {
                index: "kb_pc".into(),
                version: 1,
                weight: 100,
            }],
        )
        .unwrap();
    store
}

/// A question line: gold span `start..end` of `doc` (ASCII, so bytes are code points).
fn question(
    id: &str,
    query: &str,
    principals: Option<&[&str]>,
    doc_ids: &[&str],
    gold: &[(&str, usize, usize)],
) -> String {
    let mut line = serde_json::json!({
        "query_id": id,
        "query": query,
        "doc_ids": doc_ids,
        "gold_spans": gold.iter().map(|(d, s, e)| serde_json::json!({
            "doc_id": d, "start": s, "end": e, "start_byte": s, "end_byte": e,
        })).collect::<Vec<_>>(),
    });
    // The logged request a question came from: who asked, what answered.
    if let Some(p) = principals {
        line["principals"] = serde_json::json!(p);
        line["request_id"] = serde_json::json!(1);
        line["target"] = serde_json::json!("kb");
        line["index"] = serde_json::json!("kb");
        line["version"] = serde_json::json!(1);
    }
    line.to_string() + "\n"
}

/// Six questions: evidence across the 500-byte cut of kb, evidence inside one window, one
/// asked by a principal who cannot see its document, two without gold.
fn questions(dir: &Path) -> std::path::PathBuf {
    let t = |i: usize, s: usize, e: usize| text(TOPICS[i])[s..e].to_string();
    let lines = [
        question(
            "cross-public",
            &t(0, 470, 530),
            Some(&[]),
            &["d0"],
            &[("d0", 470, 530)],
        ),
        question(
            "cross-eng",
            &t(1, 480, 545),
            Some(&["eng"]),
            &["d1"],
            &[("d1", 480, 545)],
        ),
        question(
            "hidden",
            &t(2, 470, 530),
            Some(&["eng"]),
            &["d2"],
            &[("d2", 470, 530)],
        ),
        question(
            "inside",
            &t(3, 100, 160),
            Some(&["hr"]),
            &["d3"],
            &[("d3", 100, 160)],
        ),
        question("no-gold-eng", &t(1, 200, 260), Some(&["eng"]), &["d0"], &[]),
        question(
            "no-gold-hr",
            "ledger7 foundrygate7 harbour",
            Some(&["hr"]),
            &[],
            &[],
        ),
    ];
    let path = dir.join("questions.jsonl");
    std::fs::write(&path, lines.concat()).unwrap();
    path
}

#[test]
fn replay_between_versions_matches_the_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let store = build(&dir.path().join("kb.folio"));
    let queries = questions(dir.path());
    for k in [1, 2] {
        let mut replay = VersionReplay::new(["kb@stable", "next"]);
        replay.k = k;
        let report = replay
            .run(&store, QuestionSet::read(&queries, None).unwrap())
            .unwrap();
        let (want, labels) = expected(&store, &queries, k, ["kb@stable", "next"]);
        assert_eq!(observed(&report), want, "k = {k}");
        for (row, want) in report.questions.iter().zip(&labels) {
            let got = row.changes[0]
                .difference
                .as_ref()
                .map(|d| d.labels.iter().map(|l| l.name()).collect::<Vec<_>>());
            assert_eq!(got.as_ref(), want.as_ref(), "{} at k = {k}", row.query_id);
            assert_eq!(row.targets[0].index, "kb");
            assert_eq!(row.targets[1].index, "kb_pc");
        }
        // The question whose principals cannot see its document: neither version shows it.
        let hidden = &report.questions[2];
        assert!(hidden.targets.iter().all(|t| t.doc_hit == Some(false)));
        assert!(hidden
            .targets
            .iter()
            .all(|t| t.units.iter().all(|u| u.doc_id != "d2")));
        if k == 1 {
            // Evidence across the 500-byte cut: kb can never hold it, kb_pc's whole-document
            // parent does once found, and the cut is what kb lost it to.
            assert!(report.totals[0].span_hits <= 1);
            assert!(report.pairs[0].improved >= 1, "{:?}", report.pairs[0]);
            assert!(report.pairs[0].labels_improved.get("split_breaks_evidence") >= Some(&1));
        }
        // Without gold: the answer overlap, the same doc sets giving 1.
        let no_gold = &report.questions[4].changes[0];
        let same = no_gold.appeared.is_empty() && no_gold.disappeared.is_empty();
        assert_eq!(same, no_gold.doc_overlap == 1.0);
    }
}

#[test]
fn questions_without_principals_are_refused_unless_unrestricted() {
    let dir = tempfile::tempdir().unwrap();
    let store = build(&dir.path().join("kb.folio"));
    let path = dir.path().join("q.jsonl");
    let hr = text(TOPICS[2])[100..160].to_string();
    std::fs::write(
        &path,
        question("asked", &hr, Some(&["eng"]), &["d2"], &[("d2", 100, 160)])
            + &question("tooling", &hr, None, &["d2"], &[("d2", 100, 160)]),
    )
    .unwrap();
    let mut replay = VersionReplay::new(["kb@1", "kb_pc@1"]);
    let refused = replay.run(&store, QuestionSet::read(&path, None).unwrap());
    assert!(
        matches!(&refused, Err(EvalError::NoPrincipals { query_id }) if query_id == "tooling"),
        "{refused:?}"
    );
    replay.unrestricted = true;
    let report = replay
        .run(&store, QuestionSet::read(&path, None).unwrap())
        .unwrap();
    // `eng` never sees hr's document; the unrestricted question finds it on both versions.
    for t in &report.questions[0].targets {
        assert!(t.units.iter().all(|u| u.doc_id != "d2"));
    }
    for t in &report.questions[1].targets {
        assert_eq!(t.doc_hit, Some(true));
    }
}

#[test]
fn a_logged_filter_is_applied_and_a_bad_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = build(&dir.path().join("kb.folio"));
    let path = dir.path().join("q.jsonl");
    // Asked with harbour's (d0's) words, but the logged search was limited to d3.
    let asked = |filter: &str| {
        let mut line: serde_json::Value = serde_json::from_str(&question(
            "filtered",
            &text(TOPICS[0])[100..160],
            Some(&[]),
            &["d3"],
            &[("d3", 100, 160)],
        ))
        .unwrap();
        line["filter"] = serde_json::json!(filter);
        line.to_string() + "\n"
    };
    std::fs::write(&path, asked(r#"doc_id = "d3""#)).unwrap();
    let replay = VersionReplay::new(["kb@1", "kb_pc@1"]);
    let report = replay
        .run(&store, QuestionSet::read(&path, None).unwrap())
        .unwrap();
    for t in &report.questions[0].targets {
        assert!(!t.units.is_empty());
        assert!(t.units.iter().all(|u| u.doc_id == "d3"), "{:?}", t.units);
    }
    std::fs::write(&path, asked("doc_id = ")).unwrap();
    let refused = replay.run(&store, QuestionSet::read(&path, None).unwrap());
    assert!(
        matches!(&refused, Err(EvalError::BadFilter { query_id, .. }) if query_id == "filtered"),
        "{refused:?}"
    );
}

/// A gold span carries the text it was written against: after its document is edited (or
/// deleted) the span is left out and reported, not scored against the new text (issue 31:
/// spans were byte ranges of no particular revision).
#[test]
fn a_gold_span_of_a_revision_that_is_gone_is_reported_not_scored() {
    let dir = tempfile::tempdir().unwrap();
    let store = build(&dir.path().join("kb.folio"));
    let path = dir.path().join("q.jsonl");
    let line = |id: &str, doc: &str, topic: &str| {
        let mut line: serde_json::Value = serde_json::from_str(&question(
            id,
            &text(topic)[100..160],
            Some(&[]),
            &[doc],
            &[(doc, 100, 160)],
        ))
        .unwrap();
        line["gold_spans"][0]["text"] = serde_json::json!(&text(topic)[100..160]);
        line.to_string() + "\n"
    };
    std::fs::write(
        &path,
        line("kept", "d3", TOPICS[3]) + &line("edited", "d0", TOPICS[0]),
    )
    .unwrap();
    let replay = VersionReplay::new(["kb@1", "kb_pc@1"]);
    let before = replay
        .run(&store, QuestionSet::read(&path, None).unwrap())
        .unwrap();
    assert!(before.stale_gold.is_empty());
    assert_eq!(before.questions[1].gold_spans, 1);
    // d0 is edited: its first 200 bytes change, the span's bytes hold other text now.
    let edited = format!("{}{}", "x".repeat(200), &text(TOPICS[0])[200..]);
    store
        .upsert(Document::new("d0", SourceFormat::Text, edited))
        .unwrap();
    let after = replay
        .run(&store, QuestionSet::read(&path, None).unwrap())
        .unwrap();
    assert_eq!(after.stale_gold.len(), 1);
    assert_eq!(
        (
            after.stale_gold[0].query_id.as_str(),
            after.stale_gold[0].doc_id.as_str()
        ),
        ("edited", "d0")
    );
    let edited_row = after
        .questions
        .iter()
        .find(|q| q.query_id == "edited")
        .unwrap();
    assert_eq!(edited_row.gold_spans, 0, "a stale span is not scored");
    assert!(
        after
            .questions
            .iter()
            .find(|q| q.query_id == "kept")
            .unwrap()
            .gold_spans
            == 1
    );
    assert!(folio_eval::version_report::tables(&after).contains("1 gold spans left out"));
}

/// `folio replay STORE` of `kb@stable` against `next` at k = 2.
fn stable_against_next<'a>(path: &'a Path, queries: &'a Path) -> [&'a str; 10] {
    [
        "replay",
        path.to_str().unwrap(),
        "--queries",
        queries.to_str().unwrap(),
        "--target",
        "kb@stable",
        "--target",
        "next",
        "--k",
        "2",
    ]
}

#[test]
fn the_command_prints_the_library_report() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.folio");
    let store = build(&path);
    let queries = questions(dir.path());
    let mut replay = VersionReplay::new(["kb@stable", "next"]);
    replay.k = 2;
    let report = replay
        .run(&store, QuestionSet::read(&queries, None).unwrap())
        .unwrap();
    drop(store);
    let args = stable_against_next(&path, &queries);
    let json = crate::folio(&[&args[..], &["--json"]].concat());
    assert!(json.status.success(), "{}", cli::stderr(&json));
    let printed: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let mine = serde_json::to_value(&report).unwrap();
    // Everything but the latencies.
    for key in [
        "improved",
        "worsened",
        "labels_worsened",
        "labels_improved",
        "appeared",
    ] {
        assert_eq!(printed["pairs"][0][key], mine["pairs"][0][key], "{key}");
    }
    for key in [
        "full",
        "partial",
        "noise",
        "span_hits",
        "doc_hits",
        "mean_input_tokens",
    ] {
        assert_eq!(printed["totals"][1][key], mine["totals"][1][key], "{key}");
    }
    let table = crate::folio(&args);
    let text = cli::stdout(&table);
    assert!(
        text.contains("kb@stable -> next") && text.contains("labels (worsened)"),
        "{text}"
    );
}

/// `--mode` asks every target by that plan, as the library's `VersionReplay::mode`; two
/// plans are refused (replaying strategies compares plans).
#[test]
fn the_command_asks_every_version_by_the_plan_given() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.folio");
    let store = build(&path);
    let queries = questions(dir.path());
    let report = |mode| {
        let mut replay = VersionReplay::new(["kb@stable", "next"]);
        replay.k = 2;
        replay.mode = mode;
        let set = QuestionSet::read(&queries, None).unwrap();
        serde_json::to_value(replay.run(&store, set).unwrap()).unwrap()
    };
    let (lexical, dense) = (
        report(folio::query::SearchMode::Lexical),
        report(folio::query::SearchMode::Dense),
    );
    drop(store);
    let args = [&stable_against_next(&path, &queries)[..], &["--json"]].concat();
    let json = crate::folio(&[&args[..], &["--mode", "lexical"]].concat());
    assert!(json.status.success(), "{}", cli::stderr(&json));
    let printed: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    // Every question's units at every target (the rest holds latencies).
    let units = |report: &serde_json::Value| {
        let questions = report["questions"].as_array().unwrap();
        questions
            .iter()
            .flat_map(|q| q["targets"].as_array().unwrap().iter())
            .map(|t| t["units"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(units(&printed), units(&lexical));
    assert_ne!(
        units(&lexical),
        units(&dense),
        "the plans must answer differently here"
    );
    let two = crate::folio(&[&args[..], &["--mode", "dense", "--mode", "lexical"]].concat());
    assert!(!two.status.success());
    assert!(
        cli::stderr(&two).contains("at most one --mode"),
        "{}",
        cli::stderr(&two)
    );
}

// ---- property: access at every version ----

const PRINCIPALS: [&str; 3] = ["a", "b", "c"];

/// One document's ACL: public (empty) or a subset of PRINCIPALS.
fn acl() -> impl Strategy<Value = Vec<&'static str>> {
    proptest::sample::subsequence(PRINCIPALS.to_vec(), 0..=2)
}

/// What changes after a version: per document, a new ACL, deletion, or nothing.
#[derive(Debug, Clone)]
enum Change {
    Keep,
    Acl(Vec<&'static str>),
    Delete,
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        2 => Just(Change::Keep),
        2 => acl().prop_map(Change::Acl),
        1 => Just(Change::Delete),
    ]
}

const WORDS: [&str; 8] = [
    "river", "copper", "violin", "glacier", "lantern", "orchid", "ferry", "quartz",
];

/// Whether `acl` admits `principals` (public: everyone).
fn admits(acl: &[&str], principals: &[&str]) -> bool {
    acl.is_empty() || acl.iter().any(|p| principals.contains(p))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn replay_shows_only_what_the_principals_see_at_each_version(
        acls in proptest::collection::vec(acl(), 2..7),
        changes in proptest::collection::vec(proptest::collection::vec(change(), 7), 1..=2),
        asks in proptest::collection::vec(
            (proptest::sample::subsequence(PRINCIPALS.to_vec(), 0..=2), 0..WORDS.len()),
            1..5,
        ),
        k in 1usize..5,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::builder().create(true).open(dir.path().join("p.folio")).unwrap();
        let n = acls.len();
        // Short documents: one chunk each, so a unit is a document.
        let mut batch = store.batch();
        for (i, acl) in acls.iter().enumerate() {
            let body = format!("{} {} note {i}", WORDS[i % WORDS.len()], WORDS[(i * 3 + 1) % WORDS.len()]);
            batch.upsert(Document::new(format!("d{i}"), SourceFormat::Text, body).with_acl(acl.iter().copied()));
        }
        let mut version = batch.commit().unwrap().versions["default"];
        // ACL per version per document; None once deleted.
        let mut history: Vec<(u64, Vec<Option<Vec<&str>>>)> =
            vec![(version, acls.iter().cloned().map(Some).collect())];
        for round in &changes {
            let mut now = history.last().unwrap().1.clone();
            let mut batch = store.batch();
            let mut any = false;
            for (i, c) in round.iter().take(n).enumerate() {
                match (c, &now[i]) {
                    (Change::Acl(acl), Some(_)) => {
                        batch.set_acl(&format!("d{i}"), acl.iter().copied());
                        now[i] = Some(acl.clone());
                        any = true;
                    }
                    (Change::Delete, Some(_)) => {
                        batch.delete(&format!("d{i}"));
                        now[i] = None;
                        any = true;
                    }
                    _ => {}
                }
            }
            if any {
                version = batch.commit().unwrap().versions["default"];
                history.push((version, now));
            }
        }
        prop_assume!(history.len() >= 2);
        let lines: String = asks
            .iter()
            .enumerate()
            .map(|(i, (principals, w))| {
                question(&format!("q{i}"), &format!("{} note", WORDS[*w]), Some(principals), &[], &[])
            })
            .collect();
        let path = dir.path().join("q.jsonl");
        std::fs::write(&path, lines).unwrap();
        let targets: Vec<String> = history.iter().map(|(v, _)| format!("default@{v}")).collect();
        let mut replay = VersionReplay::new(targets.clone());
        replay.k = k;
        let report = replay.run(&store, QuestionSet::read(&path, None).unwrap()).unwrap();
        let current = &history.last().unwrap().1;
        for (row, (principals, _)) in report.questions.iter().zip(&asks) {
            for (t, (_, acl_then)) in row.targets.iter().zip(&history) {
                // Live revocations: the version's ACL and the current one must both admit.
                let visible: BTreeSet<String> = (0..n)
                    .filter(|&i| match (&acl_then[i], &current[i]) {
                        (Some(then), Some(now)) => admits(then, principals) && admits(now, principals),
                        _ => false,
                    })
                    .map(|i| format!("d{i}"))
                    .collect();
                for unit in &t.units {
                    prop_assert!(visible.contains(&unit.doc_id), "{} at {}: {:?} sees {:?}", row.query_id, t.target, principals, visible);
                }
                let docs: BTreeSet<&String> = t.units.iter().map(|u| &u.doc_id).collect();
                prop_assert_eq!(docs.len(), t.units.len());
                prop_assert_eq!(t.units.len(), k.min(visible.len()), "{} at {}", row.query_id, t.target);
            }
        }
    }
}
