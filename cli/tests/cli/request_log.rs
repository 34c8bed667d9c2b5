//! The request log end to end: annotations, failure selection into a question set,
//! reports against values computed here, retention (trim, size cap) under concurrent
//! searches and a writer, and the `folio log` commands.

use std::collections::HashSet;

use folio::query::SearchRequest;
use folio::review::{Annotation, GroupBy, LoggedQuery, LoggedRequest, Outcome, Selection};
use folio::store::{Access, GoldEvidence, Rating, Store, Trim, Verdict, TRIM_BATCH};
use folio_eval::QuestionRecord;
use folio_testkit::cli;
use folio_testkit::versions::{assert_plateau, doc, small_options, temp_store};

const DEPLOY: &str = "Run the rollback command to undo a bad deploy. Check the dashboards first.";

fn seed(store: &Store) {
    let mut batch = store.batch();
    batch.upsert(doc("deploy", DEPLOY));
    batch.upsert(doc(
        "lunch",
        "Lunch is served at noon. The café closes at three.",
    ));
    batch.commit().expect("seed");
}

/// A logged request made up by the test: `time_s`, `latency_ms`, the version.
fn made_up(version: u64, time_s: u64, latency_ms: u64, tokens: u64) -> LoggedRequest {
    LoggedRequest {
        time_ms: time_s * 1000,
        query: LoggedQuery::Text(format!("question at {time_s}")),
        principals: Some(vec!["eng".into()]),
        target: "prod".into(),
        route_key: None,
        index: "default".into(),
        version,
        children: vec![("deploy#c0".into(), 0.9)],
        parents: vec![("deploy#p0".into(), 0.9)],
        context_tokens: tokens,
        latency_us: latency_ms * 1000,
        filter: None,
        outcome: Outcome::default(),
        feedback: None,
        mode: folio::review::LoggedMode::Dense,
        reranker: None,
    }
}

fn annotation(f: impl FnOnce(&mut Annotation)) -> Annotation {
    let mut a = Annotation::default();
    f(&mut a);
    a
}

#[test]
fn annotations_survive_reopen_and_selected_failures_become_questions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.folio");
    let options = small_options().log_requests(true);
    let store = options.clone().open(&path).expect("create");
    seed(&store);
    let filter = folio::Filter::parse("doc_id = \"deploy\"").expect("filter");
    let mut request = SearchRequest::text("undo a deploy")
        .as_principals(["eng"])
        .route_key("t1");
    request.filter = Some(filter.clone());
    let first = store.search(&request).expect("search");
    let id = first.request_id.expect("logged");
    let other = store
        .search(&SearchRequest::text("lunch").access(Access::Unrestricted))
        .expect("search")
        .request_id
        .unwrap();
    // "rollback" is bytes 8..16 of DEPLOY; "café" makes lunch's byte and char offsets differ.
    store
        .log()
        .annotate(
            id,
            &annotation(|a| {
                a.session = Some("s1".into());
                a.answer = Some("Use rollback.".into());
                a.prompt_tokens = Some(321);
                a.rerank_scores = Some(vec![0.75]);
                a.rating = Some(Rating::Down);
                a.verdict = Some(Verdict::Wrong);
                a.gold = Some(vec![GoldEvidence {
                    doc_id: "deploy".into(),
                    start_byte: 8,
                    end_byte: 16,
                }]);
            }),
        )
        .expect("annotate");
    let lunch = "Lunch is served at noon. The café closes at three.";
    let closes = lunch.find("closes").unwrap() as u64;
    store
        .log()
        .annotate(
            other,
            &annotation(|a| {
                a.note = Some("fine".into());
                a.gold = Some(vec![
                    GoldEvidence {
                        doc_id: "lunch".into(),
                        start_byte: closes,
                        end_byte: closes + 6,
                    },
                    GoldEvidence {
                        doc_id: "gone".into(),
                        start_byte: 0,
                        end_byte: 3,
                    },
                ]);
            }),
        )
        .expect("annotate");
    assert!(store.log().annotate(999, &Annotation::default()).is_err());
    drop(store);

    let store = options.open(&path).expect("reopen");
    let log = store.log().entries().expect("log");
    assert_eq!(log.len(), 2);
    let r = &log[0].request;
    assert_eq!(r.filter.as_deref(), Some(filter.to_string().as_str()));
    assert_eq!(r.outcome.session.as_deref(), Some("s1"));
    assert_eq!(r.outcome.prompt_tokens, Some(321));
    assert_eq!(r.outcome.rerank_scores, vec![0.75]);
    assert_eq!(r.best_score(), first.results.first().map(|h| h.score));
    assert_eq!(
        r.doc_ids(),
        first
            .results
            .iter()
            .map(|h| h.doc_id.as_str())
            .collect::<Vec<_>>()
    );
    let feedback = r.feedback.as_ref().unwrap();
    assert_eq!(
        (feedback.rating, feedback.verdict),
        (Some(Rating::Down), Some(Verdict::Wrong))
    );

    let mut wrong = Selection::default();
    wrong.wrong = true;
    let picked = store.log().select(&wrong).expect("select");
    assert_eq!(
        picked.iter().map(|e| e.request_id).collect::<Vec<_>>(),
        vec![id]
    );
    let text_of = |d: &str| store.document(d).unwrap().map(|d| d.text);
    let (question, dropped) = QuestionRecord::from_logged(&picked[0], text_of).unwrap();
    assert!(dropped.is_empty());
    assert_eq!(question.query, "undo a deploy");
    assert_eq!(question.doc_ids, vec!["deploy"]);
    let gold = &question.gold_spans[0];
    assert_eq!(
        (gold.start, gold.end, gold.text.as_deref()),
        (Some(8), Some(16), Some("rollback"))
    );
    let origin = question.origin.as_ref().unwrap();
    assert_eq!(origin.principals, Some(vec!["eng".to_string()]));
    assert_eq!(
        (origin.request_id, origin.route_key.as_deref()),
        (Some(id), Some("t1"))
    );
    assert_eq!(
        (origin.index.as_deref(), origin.version),
        (Some("default"), Some(first.version))
    );

    // Gold on a document with a multi-byte character: code points counted independently.
    let all = store.log().select(&Selection::default()).expect("select");
    let (question, dropped) = QuestionRecord::from_logged(&all[1], text_of).unwrap();
    assert_eq!(
        dropped.len(),
        1,
        "the span of a missing document is left out"
    );
    let chars = lunch[..closes as usize].chars().count();
    assert_eq!(question.gold_spans[0].start, Some(chars));
    assert_eq!(question.gold_spans[0].text.as_deref(), Some("closes"));
    assert_eq!(
        question.origin.as_ref().unwrap().principals,
        None,
        "unrestricted is written as null"
    );
}

#[test]
fn reports_count_and_compare_versions() {
    let (_dir, store) = temp_store(small_options().log_requests(true));
    // Version 1: latencies 1..=20 ms, 100 tokens; version 2: 11..=30 ms, 150 tokens.
    for i in 1..=20u64 {
        store.log().record(&made_up(1, i, i, 100)).unwrap();
        store
            .log()
            .record(&made_up(2, 100 + i, 10 + i, 150))
            .unwrap();
    }
    // Ids alternate v1, v2 from 1. v1: 12 up of 16 rated; v2: 6 up of 16.
    for k in 0..16u64 {
        let up1 = k < 12;
        let up2 = k < 6;
        let rate =
            |up: bool| annotation(|a| a.rating = Some(if up { Rating::Up } else { Rating::Down }));
        store.log().annotate(2 * k + 1, &rate(up1)).unwrap();
        store.log().annotate(2 * k + 2, &rate(up2)).unwrap();
    }
    let report = store
        .log()
        .report(GroupBy::Version, 60, None)
        .expect("report");
    let (a, b) = (&report.groups[0], &report.groups[1]);
    assert_eq!(
        (a.group.as_str(), a.requests, b.group.as_str(), b.requests),
        ("default@1", 20, "default@2", 20)
    );
    assert_eq!(
        (
            a.thumb_up.count,
            a.thumb_up.of,
            b.thumb_up.count,
            b.thumb_up.of
        ),
        (12, 16, 6, 16)
    );
    // Wilson for 12/16 by hand: p = .75, z = 1.95996.
    let z = 1.959_963_984_540_054f64;
    let wilson = |s: f64, n: f64| {
        let p = s / n;
        let c = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
        let h = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / (1.0 + z * z / n);
        (c - h, c + h)
    };
    let e = a.thumb_up.estimate.unwrap();
    let (lo, hi) = wilson(12.0, 16.0);
    assert!((e.low - lo).abs() < 1e-12 && (e.high - hi).abs() < 1e-12);
    // p50 of 1..=20 is the 10th value; p95 the 19th.
    assert_eq!(a.latency_p50_ms.unwrap().value, 10.0);
    assert_eq!(a.latency_p95_ms.unwrap().value, 19.0);
    assert_eq!(b.latency_p50_ms.unwrap().value, 20.0);
    let c = report.comparison.as_ref().expect("two versions");
    let d = c.thumb_up.unwrap();
    let (lo2, hi2) = wilson(6.0, 16.0);
    assert!((d.value - (6.0 / 16.0 - 0.75)).abs() < 1e-12);
    let newcombe_low = d.value - ((0.375 - lo2).powi(2) + (hi - 0.75).powi(2)).sqrt();
    assert!((d.low - newcombe_low).abs() < 1e-12);
    let newcombe_high = d.value + ((hi2 - 0.375).powi(2) + (0.75 - lo).powi(2)).sqrt();
    assert!((d.high - newcombe_high).abs() < 1e-12);
    assert!(d.high < 0.0, "12/16 against 6/16 is a drop: {d:?}");
    assert_eq!(c.context_tokens.unwrap().value, 50.0);
    assert_eq!(c.latency_p50_ms.unwrap().value, 10.0);
    let follow = &a.follow_up;
    assert_eq!(
        (follow.of, follow.estimate),
        (0, None),
        "no sessions, no follow-up rate"
    );
}

#[test]
fn trims_keep_the_newest_in_bounded_commits() {
    let (_dir, store) = temp_store(small_options().log_requests(true));
    let n = 2 * TRIM_BATCH as u64 + 100;
    for i in 0..n {
        store.log().record(&made_up(1, i, 1, 10)).unwrap();
    }
    let before = store.log().trim(Trim::Before(300 * 1000)).expect("trim");
    assert_eq!(
        (before.removed, before.kept, before.commits),
        (300, n - 300, 2)
    );
    let log = store.log().entries().unwrap();
    assert_eq!(log[0].request.time_ms, 300 * 1000);
    let keep = store.log().trim(Trim::Keep(50)).expect("trim");
    assert_eq!((keep.removed, keep.kept, keep.commits), (n - 350, 50, 2));
    // The newest 50, in id order: ids grow with time (with gaps where a block reserved
    // ahead went unused).
    let kept = store.log().entries().unwrap();
    let times: Vec<u64> = kept.iter().map(|e| e.request.time_ms).collect();
    assert_eq!(times, ((n - 50)..n).map(|i| i * 1000).collect::<Vec<_>>());
    assert!(kept.windows(2).all(|w| w[0].request_id < w[1].request_id));
    let size = store.log().size().unwrap();
    assert_eq!(size.entries, 50);
    let bytes = size.bytes;
    assert!(bytes > 0);
    // The cap deletes the oldest as new entries are written.
    store.log().set_cap(Some(bytes / 2)).unwrap();
    let mut last = 0;
    for i in 0..64 {
        last = store.log().record(&made_up(1, 10_000 + i, 1, 10)).unwrap();
    }
    store.log().flush().unwrap();
    let size = store.log().size().unwrap();
    assert!(
        size.bytes <= bytes / 2,
        "{size:?} over the cap {}",
        bytes / 2
    );
    assert_eq!(size.cap, Some(bytes / 2));
    let newest = store.log().entries().unwrap().last().unwrap().request_id;
    assert_eq!(newest, last, "the newest entry is kept");
}

#[test]
fn trimming_under_concurrent_searches_and_a_writer_plateaus() {
    const ROUNDS: usize = 24;
    let (dir, store) = temp_store(small_options().log_requests(true));
    let path = dir.path().join("s.folio");
    seed(&store);
    store.log().set_cap(Some(64 * 1024)).unwrap();
    let queries = ["rollback deploy", "dashboards", "lunch noon", "café"];
    let mut sizes = Vec::new();
    for round in 0..ROUNDS {
        std::thread::scope(|s| {
            for t in 0..2 {
                let store = &store;
                s.spawn(move || {
                    for i in 0..96 {
                        let q = queries[(i + t) % queries.len()];
                        let response = store.search(&SearchRequest::text(q)).expect("search");
                        assert!(response.request_id.is_some());
                        assert!(!response.results.is_empty(), "{q}: nothing found");
                    }
                });
            }
            s.spawn(|| {
                let mut batch = store.batch();
                batch.upsert(doc(
                    "lunch",
                    &format!("Lunch is served at noon, round {round}."),
                ));
                batch.commit().expect("write");
                store.gc(2).expect("gc");
            });
            s.spawn(|| {
                store.log().trim(Trim::Keep(150)).expect("trim");
                // No torn read: ids strictly increase, every query is one that was asked.
                let log = store.log().entries().expect("log");
                let asked: HashSet<&str> = queries.into_iter().collect();
                for pair in log.windows(2) {
                    assert!(pair[0].request_id < pair[1].request_id);
                }
                for e in &log {
                    let LoggedQuery::Text(q) = &e.request.query else {
                        panic!("vector")
                    };
                    assert!(asked.contains(q.as_str()), "{q}");
                }
            });
        });
        sizes.push(std::fs::metadata(&path).unwrap().len());
    }
    let peaks = assert_plateau(&sizes);
    println!(
        "file size peaks by third: {peaks:?} bytes; log {:?}",
        store.log().size().unwrap()
    );
    let size = store.log().size().unwrap();
    assert!(size.bytes <= 64 * 1024 + 8 * 1024, "{size:?}");
    let mut store = store;
    let report = store.check_integrity().expect("check");
    assert!(report.is_consistent(), "{:?}", report.problems);
}

/// Runs folio, requires success, returns stdout.
fn ok(args: &[&str]) -> String {
    let out = crate::folio(args);
    assert!(
        out.status.success(),
        "folio {args:?}: {}",
        cli::stderr(&out)
    );
    cli::stdout(&out)
}

#[test]
fn log_commands_end_to_end() {
    let dir = tempfile::tempdir().expect("temp dir");
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(docs.join("deploy.txt"), DEPLOY).unwrap();
    std::fs::write(docs.join("lunch.txt"), "Lunch is served at noon.").unwrap();
    let store = dir.path().join("s.folio");
    let s = cli::utf8(&store);
    ok(&["ingest", s, cli::utf8(&docs)]);
    let mut ids = Vec::new();
    for (q, p) in [
        ("rollback", "eng"),
        ("deploy", "eng"),
        ("lunch", "ops"),
        ("noon", "ops"),
    ] {
        let out = ok(&[
            "search",
            s,
            q,
            "--log",
            "--json",
            "--as",
            p,
            "--route-key",
            p,
        ]);
        let json: serde_json::Value = serde_json::from_str(&out).unwrap();
        ids.push(json["request_id"].as_u64().unwrap().to_string());
    }
    ok(&[
        "log",
        "feedback",
        s,
        &ids[0],
        "down",
        "--verdict",
        "wrong",
        "--gold",
        "docs/deploy.txt:8-16",
        "--session",
        "a",
    ]);
    ok(&[
        "log",
        "feedback",
        s,
        &ids[1],
        "up",
        "--session",
        "a",
        "--prompt-tokens",
        "120",
    ]);
    ok(&[
        "log",
        "annotate",
        s,
        &ids[2],
        "--verdict",
        "correct",
        "--answer",
        "at noon",
    ]);

    let out = ok(&["log", "select", s, "--thumb-down", "--wrong"]);
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(
        lines[0]["request_id"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| lines[0]["request_id"].to_string()),
        ids[0]
    );
    assert_eq!(lines[0]["gold_spans"][0]["text"], "rollback");
    assert_eq!(lines[0]["principals"], serde_json::json!(["eng"]));
    assert_eq!(lines[0]["route_key"], "eng");
    let on_ops = ok(&["log", "select", s, "--route-key", "ops"]);
    assert_eq!(on_ops.lines().count(), 2);

    let json: serde_json::Value =
        serde_json::from_str(&ok(&["log", "report", s, "--json", "--by", "route"])).unwrap();
    let groups = json["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    assert_eq!(
        (groups[0]["group"].as_str(), groups[0]["requests"].as_u64()),
        (Some("eng"), Some(2))
    );
    assert_eq!(groups[0]["thumb_up"]["count"], 1);
    assert_eq!(groups[0]["thumb_up"]["of"], 2);
    assert_eq!(groups[1]["wrong"]["of"], 1);
    assert_eq!(groups[1]["wrong"]["count"], 0);
    let plot = dir.path().join("report.png");
    let table = ok(&["log", "report", s, "--plot", cli::utf8(&plot)]);
    assert!(table.starts_with("group"), "{table}");
    assert!(table.contains("0.500 ["), "{table}");
    assert!(std::fs::read(&plot).unwrap().starts_with(b"\x89PNG"));
    let csv = ok(&["log", "report", s, "--csv"]);
    assert!(csv.starts_with("group,metric,value,low,high,count,of\n"));
    assert!(csv.contains("default@1,thumb_up,0.5,"), "{csv}");

    let trimmed: serde_json::Value =
        serde_json::from_str(&ok(&["log", "trim", s, "--keep", "1", "--json"])).unwrap();
    assert_eq!(
        (trimmed["removed"].as_u64(), trimmed["kept"].as_u64()),
        (Some(3), Some(1))
    );
    assert!(ok(&["log", "cap", s, "1K"]).contains("cap 1024 bytes"));
    assert!(ok(&["log", "cap", s]).starts_with("1 requests"));
    let old: serde_json::Value =
        serde_json::from_str(&ok(&["log", "trim", s, "--older-than", "1d", "--json"])).unwrap();
    assert_eq!(old["removed"], 0);
}
