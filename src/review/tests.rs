//! Selection and reports over hand-made logs, against hand-computed values.

use super::*;

fn entry(id: u64, version: u64, time_s: u64) -> LogEntry {
    LogEntry {
        request_id: id,
        request: LoggedRequest {
            time_ms: time_s * 1000,
            query: LoggedQuery::Text(format!("q{id}")),
            principals: Some(vec!["alice".into()]),
            target: "kb".into(),
            route_key: Some(format!("t{}", id % 2)),
            index: "kb".into(),
            version,
            children: vec![(format!("d{id}#c0"), 0.5)],
            parents: vec![(format!("d{id}#p0"), 0.5)],
            context_tokens: 100 * id,
            latency_us: 1000 * id,
            filter: None,
            outcome: Outcome::default(),
            feedback: None,
            mode: crate::review::LoggedMode::Dense,
            reranker: None,
        },
    }
}

fn annotate(e: &mut LogEntry, a: Annotation) {
    a.apply(&mut e.request, 1);
}

fn rated(rating: Rating) -> Annotation {
    Annotation {
        rating: Some(rating),
        ..Annotation::default()
    }
}

fn session(s: &str) -> Annotation {
    Annotation {
        session: Some(s.into()),
        ..Annotation::default()
    }
}

/// Ten requests: 1-5 on kb@1, 6-10 on kb@2.
fn log() -> Vec<LogEntry> {
    let mut log: Vec<LogEntry> = (1..=10)
        .map(|i| entry(i, if i <= 5 { 1 } else { 2 }, i * 100))
        .collect();
    // kb@1: 2 up, 1 down; kb@2: 1 up, 2 down.
    for (i, r) in [
        (0, Rating::Up),
        (1, Rating::Up),
        (2, Rating::Down),
        (5, Rating::Up),
        (6, Rating::Down),
        (7, Rating::Down),
    ] {
        annotate(&mut log[i], rated(r));
    }
    annotate(
        &mut log[3],
        Annotation {
            verdict: Some(Verdict::Wrong),
            ..Annotation::default()
        },
    );
    annotate(
        &mut log[8],
        Annotation {
            verdict: Some(Verdict::Correct),
            ..Annotation::default()
        },
    );
    // Session s: requests 1 (t=100 s) and 2 (t=200 s); session u: 6 (600 s) and 7 (700 s).
    for (i, s) in [(0, "s"), (1, "s"), (5, "u"), (6, "u")] {
        annotate(&mut log[i], session(s));
    }
    log[9].request.parents[0].1 = 0.1;
    log
}

fn ids(picked: &[&LogEntry]) -> Vec<u64> {
    picked.iter().map(|e| e.request_id).collect()
}

#[test]
fn an_annotation_changes_only_what_it_names() {
    let mut e = entry(1, 1, 1);
    annotate(&mut e, rated(Rating::Down));
    annotate(
        &mut e,
        Annotation {
            note: Some("stale".into()),
            answer: Some("42".into()),
            ..Annotation::default()
        },
    );
    let f = e.request.feedback.as_ref().unwrap();
    assert_eq!(
        (f.rating, f.note.as_deref()),
        (Some(Rating::Down), Some("stale"))
    );
    assert_eq!(e.request.outcome.answer.as_deref(), Some("42"));
    assert_eq!(e.request.outcome.session, None);
    assert_eq!(e.request.doc_ids(), vec!["d1"]);
}

#[test]
fn selection_ors_failures_and_ands_the_window() {
    let log = log();
    let down = Selection {
        thumb_down: true,
        ..Selection::default()
    };
    assert_eq!(ids(&down.apply(&log)), vec![3, 7, 8]);
    let failures = Selection {
        thumb_down: true,
        wrong: true,
        score_below: Some(0.2),
        ..Selection::default()
    };
    assert_eq!(ids(&failures.apply(&log)), vec![3, 4, 7, 8, 10]);
    let on_v2 = Selection {
        version: Some(2),
        ..failures.clone()
    };
    assert_eq!(ids(&on_v2.apply(&log)), vec![7, 8, 10]);
    // Follow-ups 100 s apart: none within 99 s, both firsts within 100 s.
    let within = |secs| Selection {
        follow_up_secs: Some(secs),
        ..Selection::default()
    };
    assert!(within(99).apply(&log).is_empty());
    assert_eq!(ids(&within(100).apply(&log)), vec![1, 6]);
    let window = Selection {
        since_ms: Some(300_000),
        until_ms: Some(500_000),
        route_key: Some("t1".into()),
        ..Selection::default()
    };
    assert_eq!(ids(&window.apply(&log)), vec![3]);
}

#[test]
fn the_report_counts_and_compares_two_versions() {
    let log = log();
    let r = report(&log, GroupBy::Version, 100, None);
    assert_eq!(r.groups.len(), 2);
    let (a, b) = (&r.groups[0], &r.groups[1]);
    assert_eq!(
        (a.group.as_str(), a.requests, b.group.as_str()),
        ("kb@1", 5, "kb@2")
    );
    assert_eq!((a.thumb_up.count, a.thumb_up.of), (2, 3));
    assert_eq!((b.thumb_up.count, b.thumb_up.of), (1, 3));
    assert_eq!((a.follow_up.count, a.follow_up.of), (1, 2));
    assert_eq!(
        (a.wrong.count, a.wrong.of, b.wrong.count, b.wrong.of),
        (1, 1, 0, 1)
    );
    // Latencies of kb@1: 1..5 ms; p50 rank ceil(2.5) = 3.
    assert_eq!(a.latency_p50_ms.unwrap().value, 3.0);
    assert_eq!(b.latency_p95_ms.unwrap().value, 10.0);
    // Tokens of kb@2: 600..1000, mean 800.
    assert_eq!(b.context_tokens.unwrap().value, 800.0);
    let c = r.comparison.expect("two versions are compared");
    assert_eq!((c.a.as_str(), c.b.as_str()), ("kb@1", "kb@2"));
    let up = c.thumb_up.unwrap();
    let expected =
        stats::rate_difference(&stats::wilson(2, 3).unwrap(), &stats::wilson(1, 3).unwrap());
    assert_eq!(up, expected);
    assert!((up.value + 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(c.context_tokens.unwrap().value, 500.0);
    assert_eq!(c.latency_p50_ms.unwrap().value, 5.0);

    let by_route = report(&log, GroupBy::Route, 100, None);
    let groups: Vec<(&str, u64)> = by_route
        .groups
        .iter()
        .map(|g| (g.group.as_str(), g.requests))
        .collect();
    assert_eq!(groups, vec![("t0", 5), ("t1", 5)]);
    assert!(by_route.comparison.is_none());
    let by_day = report(&log, GroupBy::Day, 100, Some(("1970-01-01", "1970-01-02")));
    assert_eq!(by_day.groups[0].group, "1970-01-01");
    assert!(by_day.comparison.is_none(), "one day only");
}
