//! The evaluation harness end to end on tiny hand-made corpora whose right numbers are known:
//! strategy specs, scoring, CSV, external chunks, replay labels, multi-byte text.

use std::path::Path;

use folio::chunk::{ChildStrategy, ParentStrategy, SizeUnit, SourceFormat};
use folio::document::Document;
use folio::query::Expand;
use folio::store::NoProgress;
use folio_eval::replay::{self, Label, Side};
use folio_eval::score::StrategyReport;
use folio_eval::{
    ask_all, build_index, embed_questions, read_questions, report, score_strategy, Answer,
    BuiltIndex, Corpus, EmbedSetup, EvalError, Plan, Question, Settings, Strategy, StrategyKind,
    Unit, Workspace,
};

// Each segment is 39 characters and a space, so `fixed:40` windows are the segments.
const ALPHA: &str = concat!(
    "Zebras graze quietly near the old river ",
    "Copper kettles whistle in the kitchen a",
    "nd violins echo across marble halls now ",
);
const BETA: &str = "Glaciers carve deep fjords every winter ";

fn corpus() -> Corpus {
    Corpus::new(vec![
        Document::new("alpha", SourceFormat::Text, ALPHA),
        Document::new("beta", SourceFormat::Text, BETA),
    ])
    .expect("unique ids")
}

fn gold(doc: &str, text: &str, needle: &str) -> String {
    let start = text.find(needle).expect("needle in text");
    let chars = text[..start].chars().count();
    format!(
        r#"{{"doc_id":"{doc}","start":{chars},"end":{},"text":"","start_byte":{start},"end_byte":{}}}"#,
        chars + needle.chars().count(),
        start + needle.len()
    )
}

/// Three questions: one inside alpha's first window, one across alpha's 40/80 boundary
/// ("kitchen and violins"), one inside beta.
fn questions_file(dir: &Path) -> std::path::PathBuf {
    let lines = [
        (
            "q1",
            "where do zebras graze",
            gold("alpha", ALPHA, "Zebras graze quietly"),
        ),
        (
            "q2",
            "kitchen violins marble",
            gold("alpha", ALPHA, "kitchen and violins"),
        ),
        (
            "q3",
            "glaciers carve fjords",
            gold("beta", BETA, "Glaciers carve deep fjords"),
        ),
    ];
    let text: String = lines
        .iter()
        .map(|(id, q, g)| {
            format!(
                r#"{{"query_id":"{id}","query":"{q}","doc_ids":[],"gold_spans":[{g}],"bucket":""}}"#
            ) + "\n"
        })
        .collect();
    write(dir, "queries.jsonl", &text)
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

fn evaluate(
    spec: &str,
    corpus: &Corpus,
    queries: &Path,
    settings: &Settings,
) -> Result<StrategyReport, EvalError> {
    let (built, answers) = build_and_ask(spec, corpus, queries, settings)?;
    let questions = read_questions(queries, corpus, None)?;
    score_strategy(
        &built,
        &Plan::dense(),
        corpus,
        &questions,
        &answers,
        settings,
    )
}

fn build_and_ask(
    spec: &str,
    corpus: &Corpus,
    queries: &Path,
    settings: &Settings,
) -> Result<(BuiltIndex, Vec<Answer>), EvalError> {
    let strategy = Strategy::parse(spec)?;
    let workspace = Workspace::new(None)?;
    let setup = EmbedSetup {
        embedder: std::sync::Arc::new(folio::embed::HashEmbedder::new(256)?),
        truncation: Default::default(),
    };
    let built = build_index(0, &strategy, corpus, &setup, &workspace, &NoProgress)?;
    let questions = read_questions(queries, corpus, None)?;
    let answers = ask_all(
        &built,
        corpus,
        &questions,
        &Plan::dense(),
        settings,
        &NoProgress,
    )?;
    Ok((built, answers))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn specs_parse_into_chunk_specs() {
    let fixed = Strategy::parse("fixed:500/80").unwrap();
    assert_eq!(fixed.label, "fixed:500/80");
    let StrategyKind::Builtin { spec, expand } = fixed.kind else {
        panic!("built-in")
    };
    assert_eq!(
        spec.child,
        ChildStrategy::Fixed {
            size: 500,
            overlap: 80,
            unit: SizeUnit::Chars
        }
    );
    assert_eq!(
        (spec.parent, expand),
        (ParentStrategy::Child, Expand::Parent)
    );

    let tokens = Strategy::parse("fixed:128t").unwrap();
    assert!(matches!(
        tokens.kind,
        StrategyKind::Builtin { spec, .. } if spec.child == ChildStrategy::Fixed { size: 128, overlap: 0, unit: SizeUnit::Embedder }
    ));
    // Sizes in tokens: the embedder's, unless --tokens names another counter; parents and
    // structure-aware children in one unit.
    let pc = Strategy::parse("parent-child:1024t/256t").unwrap();
    let StrategyKind::Builtin { spec, .. } = pc.clone().in_tokens_of(SizeUnit::Cl100k).kind else {
        panic!("builtin");
    };
    assert_eq!(
        (spec.child, spec.parent),
        (
            ChildStrategy::StructureIn {
                target: 256,
                overlap: 0,
                unit: SizeUnit::Cl100k
            },
            ParentStrategy::FixedIn {
                size: 1024,
                unit: SizeUnit::Cl100k
            }
        )
    );
    let StrategyKind::Builtin { spec, .. } = pc.in_tokens_of(SizeUnit::Chars).kind else {
        panic!("builtin");
    };
    assert_eq!(
        spec.child,
        ChildStrategy::Structure {
            target: 256,
            overlap: 0
        }
    );
    assert!(Strategy::parse("structure:256t/32t").is_ok());
    assert!(Strategy::parse("window:256t/1").is_ok());
    assert!(Strategy::parse("parent-child:section1024t/256t").is_ok());
    for mixed in [
        "parent-child:1024t/256",
        "parent-child:1024/256t",
        "structure:256/32t",
    ] {
        assert!(Strategy::parse(mixed).is_err(), "{mixed}");
    }
    let pc = Strategy::parse("parent-child:1200/300").unwrap();
    assert!(matches!(
        pc.kind,
        StrategyKind::Builtin { spec, .. } if spec.parent == ParentStrategy::Fixed { size: 1200 }
            && spec.child == ChildStrategy::Structure { target: 300, overlap: 0 }
    ));
    let section = Strategy::parse("parent-child:section/300").unwrap();
    assert!(matches!(
        section.kind,
        StrategyKind::Builtin { spec, .. } if spec.parent == ParentStrategy::Section { max: 2000 }
    ));
    let window = Strategy::parse("window:300/1").unwrap();
    assert_eq!(window.expand(), Expand::Window(1));
    let named = Strategy::parse("lc-rec=external:out/lc-rec.jsonl").unwrap();
    assert_eq!(named.label, "lc-rec");
    assert_eq!(
        named.kind,
        StrategyKind::External {
            path: "out/lc-rec.jsonl".into()
        }
    );
    assert!(matches!(
        Strategy::parse("structure:500/80").unwrap().kind,
        StrategyKind::Builtin { spec, .. }
            if spec.child == ChildStrategy::Structure { target: 500, overlap: 80 }
    ));
}

#[test]
fn bad_specs_say_what_is_wrong() {
    let cases = [
        ("fixed", "expected fixed:SIZE"),
        ("fixed:abc", "size `abc` is not a positive whole number"),
        ("fixed:0", "is not a positive whole number"),
        ("fixed:100/100", "overlap 100 must be smaller than size 100"),
        ("structure:500/x", "overlap `x` is not a whole number"),
        ("parent-child:300", "expected parent-child:PARENT/CHILD"),
        (
            "parent-child:300/1200",
            "child size 1200 is larger than parent size 300",
        ),
        ("window:300", "expected window:SIZE/N"),
        ("external:", "external needs a file"),
        ("=fixed:500", "the name before `=` is empty"),
        ("semantic:500", "unknown kind `semantic`"),
    ];
    for (spec, message) in cases {
        let error = Strategy::parse(spec).expect_err(spec).to_string();
        assert!(error.contains(spec), "{error}");
        assert!(error.contains(message), "{spec}: {error}");
    }
}

#[test]
fn a_window_that_cuts_a_gold_span_scores_as_known() {
    let dir = tempfile::tempdir().unwrap();
    let queries = questions_file(dir.path());
    let corpus = corpus();
    let settings = Settings::default();
    let report = evaluate("fixed:40", &corpus, &queries, &settings).unwrap();
    let all = &report.all;
    assert_eq!(all.questions, 3);
    assert_eq!(report.children, 4);
    assert!(close(report.chunks_per_doc, 2.0));
    // q2's span crosses the boundary at byte 80: no single window holds it.
    assert!(close(all.boundary_split_rate, 1.0 / 3.0));
    assert!(close(all.parent_split_rate, 1.0 / 3.0));
    // q1 and q3 find their window first; q2 can never be hit.
    assert_eq!(
        all.hit_at,
        vec![(1, 2.0 / 3.0), (3, 2.0 / 3.0), (5, 2.0 / 3.0)]
    );
    assert!(close(all.mrr, 2.0 / 3.0));
    // With four windows and k = 5 everything is returned: every span is in the union.
    assert!(close(all.full, 1.0) && close(all.partial, 0.0) && close(all.noise, 0.0));
    assert!(close(all.token_recall, 1.0));
    // Per-document groups (no buckets): alpha has q1 and q2, beta q3.
    let groups: Vec<(&str, usize)> = report
        .groups
        .iter()
        .map(|(g, s)| (g.as_str(), s.questions))
        .collect();
    assert_eq!(groups, vec![("alpha", 2), ("beta", 1)]);
    assert!(close(report.groups[1].1.hit_at[0].1, 1.0));
}

#[test]
fn a_smaller_k_narrows_completeness() {
    let dir = tempfile::tempdir().unwrap();
    let queries = questions_file(dir.path());
    let settings = Settings {
        ks: vec![1],
        ..Settings::default()
    };
    let report = evaluate("fixed:40", &corpus(), &queries, &settings).unwrap();
    // At k = 1 q2 gets one of its two windows at best: never full.
    assert!(report.all.full <= 2.0 / 3.0 + 1e-9);
    assert!(close(
        report.all.full + report.all.partial + report.all.noise,
        1.0
    ));
}

#[test]
fn csv_has_the_fixed_columns_and_fractions() {
    let dir = tempfile::tempdir().unwrap();
    let queries = questions_file(dir.path());
    let settings = Settings::default();
    let report = evaluate("fixed:40", &corpus(), &queries, &settings).unwrap();
    let csv = report::csv(std::slice::from_ref(&report), &settings.ks);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    for column in [
        "strategy",
        "plan",
        "group",
        "hit_at_1",
        "hit_at_3",
        "hit_at_5",
        "mrr",
        "full",
        "partial",
        "noise",
        "boundary_split_rate",
        "token_recall",
        "token_iou",
        "avg_input_tokens",
        "chunks_per_doc",
        "index_bytes",
        "p50_ms",
        "p95_ms",
    ] {
        assert!(header.contains(&column), "missing {column}");
    }
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    // One overall row, then one per document.
    assert_eq!(rows.len(), 3);
    assert_eq!(
        (rows[0][0], rows[0][1], rows[0][2]),
        ("fixed:40", "dense", report::ALL)
    );
    for row in &rows {
        assert_eq!(row.len(), header.len());
        for name in [
            "hit_at_1",
            "mrr",
            "ndcg_at_10",
            "recall_at_5",
            "full",
            "noise",
            "boundary_split_rate",
            "token_iou",
        ] {
            let i = header.iter().position(|h| *h == name).unwrap();
            let value: f64 = row[i].parse().unwrap();
            assert!((0.0..=1.0).contains(&value), "{name} = {value}");
        }
    }
    let bytes = header.iter().position(|h| *h == "index_bytes").unwrap();
    assert!(rows[0][bytes].parse::<u64>().unwrap() > 0);
    assert_eq!(rows[1][bytes], "", "costs are per strategy, not per group");
}

fn chunk_line(doc: &str, text: &str, start: usize, end: usize) -> String {
    serde_json::json!({"doc_id": doc, "start": start, "end": end, "text": &text[start..end]})
        .to_string()
        + "\n"
}

#[test]
fn external_chunks_are_ingested_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let queries = questions_file(dir.path());
    // Alpha cut at 60 keeps "kitchen and violins" (66..85) whole.
    let chunks = chunk_line("alpha", ALPHA, 0, 60)
        + &chunk_line("alpha", ALPHA, 60, ALPHA.len())
        + &chunk_line("beta", BETA, 0, BETA.len());
    let path = write(dir.path(), "peer.jsonl", &chunks);
    let spec = format!("peer=external:{}", path.display());
    let report = evaluate(&spec, &corpus(), &queries, &Settings::default()).unwrap();
    assert_eq!(report.strategy, "peer");
    assert_eq!(report.children, 3);
    assert!(close(report.all.boundary_split_rate, 0.0));
    assert_eq!(report.all.hit_at[2], (5, 1.0));
}

#[test]
fn external_embed_text_makes_the_vector_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let queries = questions_file(dir.path());
    let settings = Settings {
        ks: vec![1],
        ..Settings::default()
    };
    let with = |line: String, embed: &str| {
        let mut record: serde_json::Value = serde_json::from_str(&line).unwrap();
        record["embed_text"] = embed.into();
        record.to_string() + "\n"
    };
    let (first, rest) = (ALPHA[..40].to_string(), ALPHA[40..].to_string());
    let beta = chunk_line("beta", BETA, 0, BETA.len());
    // Alpha's two chunks each embed the other's text; beta embeds its own.
    let swapped = with(chunk_line("alpha", ALPHA, 0, 40), &rest)
        + &with(chunk_line("alpha", ALPHA, 40, ALPHA.len()), &first)
        + &beta;
    let bare =
        chunk_line("alpha", ALPHA, 0, 40) + &chunk_line("alpha", ALPHA, 40, ALPHA.len()) + &beta;
    let run = |name: &str, chunks: &str| {
        let path = write(dir.path(), name, chunks);
        let spec = format!("external:{}", path.display());
        evaluate(&spec, &corpus(), &queries, &settings).unwrap().all
    };
    let bare = run("bare.jsonl", &bare);
    assert_eq!(bare.hit_at, vec![(1, 1.0)]);
    // q1 and q2 now find the other alpha chunk first; beta's q3 is unchanged.
    let swapped = run("swapped.jsonl", &swapped);
    assert_eq!(swapped.hit_at, vec![(1, 1.0 / 3.0)]);
    // What is returned and scored is the chunk's text: q1 gets alpha's second chunk (which
    // embeds the 40 characters of the first), q2 the first, q3 beta.
    let shown = (rest.len() + first.len() + BETA.len()) as f64 / 3.0;
    assert!(close(swapped.avg_chars, shown), "{}", swapped.avg_chars);
    assert!(close(swapped.noise, 2.0 / 3.0));
}

#[test]
fn bad_external_chunks_name_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let queries = questions_file(dir.path());
    let cases = [
        (
            chunk_line("alpha", ALPHA, 0, 10) + r#"{"doc_id":"gamma","start":0,"end":5}"#,
            ":2: unknown document `gamma`",
        ),
        (
            r#"{"doc_id":"alpha","start":0,"end":5,"text":"zebra"}"#.to_string(),
            ":1: the chunk's text differs",
        ),
        (
            r#"{"doc_id":"alpha","start":30,"end":20}"#.to_string(),
            ":1: 30..20 is not a non-empty byte range",
        ),
        (
            r#"{"doc_id":"alpha","start":0,"end":5,"embed_text":" "}"#.to_string(),
            ":1: the chunk's embed_text is blank",
        ),
    ];
    for (i, (chunks, message)) in cases.into_iter().enumerate() {
        let path = write(dir.path(), &format!("bad{i}.jsonl"), &chunks);
        let spec = format!("external:{}", path.display());
        let error = evaluate(&spec, &corpus(), &queries, &Settings::default())
            .expect_err("refused")
            .to_string();
        assert!(error.contains(message), "{error}");
    }
}

#[test]
fn questions_with_bad_gold_spans_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = corpus();
    let cases = [
        (
            r#"{"doc_id":"nope","start_byte":0,"end_byte":3}"#,
            "unknown document `nope`",
        ),
        (
            r#"{"doc_id":"alpha","start_byte":5,"end_byte":5}"#,
            "is empty",
        ),
        (
            r#"{"doc_id":"alpha","start":1,"end":4,"start_byte":0,"end_byte":3}"#,
            "are code points 0..3",
        ),
    ];
    for (i, (span, message)) in cases.into_iter().enumerate() {
        let line = format!(r#"{{"query_id":"x","query":"q","gold_spans":[{span}]}}"#);
        let path = write(dir.path(), &format!("q{i}.jsonl"), &line);
        let error = read_questions(&path, &corpus, None)
            .unwrap_err()
            .to_string();
        assert!(error.contains(":1:") && error.contains(message), "{error}");
    }
}

#[test]
fn multi_byte_text_is_scored_on_code_points() {
    // 20 Han characters (60 bytes) in two sentences; the gold is the second sentence.
    let text = "梵語是古印度的語言。敦煌壁畫保存完好至今。";
    let corpus = Corpus::new(vec![Document::new("zh", SourceFormat::Text, text)]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let line = format!(
        r#"{{"query_id":"z1","query":"敦煌壁畫","gold_spans":[{}],"bucket":"zh"}}"#,
        gold("zh", text, "敦煌壁畫保存完好至今")
    );
    let queries = write(dir.path(), "zh.jsonl", &line);
    // 12-character windows: 0..12 and 12..21 (code points); the gold is 10..20.
    let report = evaluate("fixed:12", &corpus, &queries, &Settings::default()).unwrap();
    assert!(close(report.all.boundary_split_rate, 1.0));
    assert!(close(report.all.token_recall, 1.0));
    // Precision on code points: 10 gold of 21 returned (bytes would give 30 of 63 too, but
    // a byte span must never be mistaken for a code-point one).
    assert!(close(report.all.token_precision, 10.0 / 21.0));
    assert_eq!(report.groups[0].0, "zh");
    let whole = evaluate("structure:100", &corpus, &queries, &Settings::default()).unwrap();
    assert!(close(whole.all.boundary_split_rate, 0.0));
    assert_eq!(whole.all.hit_at[0], (1, 1.0));
}

// ---- replay on constructed answers ----

const LONG: usize = 1200;

fn long_corpus() -> Corpus {
    let text: String = "lorem ipsum ".repeat(LONG / 12);
    Corpus::new(vec![Document::new("d", SourceFormat::Text, text)]).unwrap()
}

fn one_question(
    dir: &Path,
    corpus: &Corpus,
    start: usize,
    end: usize,
) -> Vec<folio_eval::Question> {
    let line = format!(
        r#"{{"query_id":"q","query":"q","gold_spans":[{{"doc_id":"d","start_byte":{start},"end_byte":{end}}}]}}"#
    );
    read_questions(&write(dir, "q.jsonl", &line), corpus, None).unwrap()
}

/// An index with hand-made chunks (children and their parents) and no search behind it.
fn index(spec: &str, parents: &[(usize, usize)], children: &[(usize, usize, usize)]) -> BuiltIndex {
    use folio::chunk::{ChildPiece, Chunked, ParentPiece, Span};
    let dir = tempfile::tempdir().unwrap();
    let store = folio::store::Store::open_or_create(dir.path().join("s.folio")).unwrap();
    let chunked = Chunked {
        parents: parents
            .iter()
            .map(|&(start, end)| ParentPiece {
                span: Span { start, end },
                section_path: vec![],
            })
            .collect(),
        children: children
            .iter()
            .map(|&(start, end, parent)| ChildPiece {
                span: Span { start, end },
                parent,
                section_path: vec![],
                oversized: false,
            })
            .collect(),
    };
    BuiltIndex {
        strategy: Strategy::parse(spec).unwrap(),
        store,
        chunkings: vec![chunked],
        build_secs: 0.0,
        tokens: None,
        index_bytes: 0,
    }
}

/// A returned unit: its byte span and its matched children's spans.
type UnitSpec<'a> = (usize, usize, &'a [(usize, usize)]);

/// An index whose chunks are their own parents.
fn plain_index(spec: &str, spans: &[(usize, usize)]) -> BuiltIndex {
    let children: Vec<(usize, usize, usize)> = spans
        .iter()
        .enumerate()
        .map(|(i, &(s, e))| (s, e, i))
        .collect();
    index(spec, spans, &children)
}

fn answer(units: &[UnitSpec]) -> Vec<Answer> {
    vec![Answer {
        units: units
            .iter()
            .map(|&(start, end, children)| Unit {
                doc: 0,
                start,
                end,
                tokens: 0,
                score: 0.0,
                children: children.to_vec(),
            })
            .collect(),
        millis: 0.0,
        stages: Default::default(),
    }]
}

/// The differences between `a` and `b` on one question with one gold span.
fn differences(
    a: (&BuiltIndex, &[Answer]),
    b: (&BuiltIndex, &[Answer]),
    gold: (usize, usize),
) -> Vec<replay::Difference> {
    let dir = tempfile::tempdir().unwrap();
    let corpus = long_corpus();
    let questions = one_question(dir.path(), &corpus, gold.0, gold.1);
    replay::compare(
        &Side::of(a.0, a.1),
        &Side::of(b.0, b.1),
        &corpus,
        &questions,
        &Settings::default(),
    )
}

fn labels_of(
    a: (&BuiltIndex, &[Answer]),
    b: (&BuiltIndex, &[Answer]),
    gold: (usize, usize),
) -> (String, Vec<Label>) {
    let differences = differences(a, b, gold);
    assert_eq!(differences.len(), 1);
    (differences[0].worse.clone(), differences[0].labels.clone())
}

#[test]
fn replay_labels_a_split_span_and_the_parent_that_fills_it() {
    // Gold 60..100 crosses the boundary at 80 of plain 80-byte chunks.
    let plain = plain_index("fixed:80", &[(0, 80), (80, 160)]);
    let plain_answer = answer(&[(80, 160, &[(80, 160)])]);
    // Parent 0..160 with the same children; only the child 80..160 matched.
    let parent = index(
        "parent-child:160/80",
        &[(0, 160)],
        &[(0, 80, 0), (80, 160, 0)],
    );
    let parent_answer = answer(&[(0, 160, &[(80, 160)])]);
    let (worse, labels) = labels_of(
        (&plain, &plain_answer),
        (&parent, &parent_answer),
        (60, 100),
    );
    assert_eq!(worse, "fixed:80");
    assert_eq!(
        labels,
        vec![Label::SplitBreaksEvidence, Label::ParentFillWorks]
    );
}

#[test]
fn replay_labels_overlap_small_and_large_chunks() {
    let parent = plain_index("parent-child:160/80", &[(0, 160)]);
    let parent_answer = answer(&[(0, 160, &[(0, 160)])]);
    // Overlapping 80-byte chunks sharing 10 bytes: 60..100 still crosses a boundary.
    let overlapping = plain_index("fixed:80/10", &[(0, 80), (70, 150)]);
    let over_answer = answer(&[(70, 150, &[(70, 150)])]);
    let (_, labels) = labels_of(
        (&overlapping, &over_answer),
        (&parent, &parent_answer),
        (60, 100),
    );
    assert_eq!(labels, vec![Label::OverlapInsufficient]);
    // 20-byte chunks: the span 65..105 meets three of them.
    let tiny_spans: Vec<(usize, usize)> = (0..8).map(|i| (i * 20, i * 20 + 20)).collect();
    let tiny = plain_index("fixed:20", &tiny_spans);
    let tiny_answer = answer(&[(60, 80, &[(60, 80)])]);
    let (_, labels) = labels_of((&tiny, &tiny_answer), (&parent, &parent_answer), (65, 105));
    assert_eq!(labels, vec![Label::ChunkTooSmall]);
    // One 1200-byte chunk holds the 40-byte span, but it was not returned: diluted.
    let huge = plain_index("fixed:1200", &[(0, LONG)]);
    let nothing = answer(&[]);
    let (worse, labels) = labels_of((&huge, &nothing), (&parent, &parent_answer), (60, 100));
    assert_eq!(worse, "fixed:1200");
    assert_eq!(labels, vec![Label::ChunkTooLarge]);
}

#[test]
fn replay_falls_back_to_ranking_and_skips_equal_outcomes() {
    let a = plain_index("fixed:80", &[(0, 80), (80, 160)]);
    let hit = answer(&[(0, 80, &[(0, 80)])]);
    let miss = answer(&[(80, 160, &[(80, 160)])]);
    let b = plain_index("structure:80", &[(0, 80), (80, 160)]);
    let (worse, labels) = labels_of((&a, &hit), (&b, &miss), (10, 30));
    assert_eq!(worse, "structure:80");
    assert_eq!(labels, vec![Label::Ranking]);
    // The same outcome on both sides is no difference.
    assert!(differences((&a, &hit), (&b, &hit), (10, 30)).is_empty());
}

// ---- the command line ----

fn folio(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_folio"))
        .args(args)
        .output()
        .expect("run folio")
}

#[test]
fn folio_eval_writes_csv_markdown_and_png() {
    let dir = tempfile::tempdir().unwrap();
    let queries = questions_file(dir.path());
    let docs = write(
        dir.path(),
        "docs.jsonl",
        &[("alpha", ALPHA), ("beta", BETA)]
            .iter()
            .map(|(id, text)| serde_json::json!({"doc_id": id, "text": text}).to_string() + "\n")
            .collect::<String>(),
    );
    let out = |name: &str| dir.path().join(name).display().to_string();
    // `folio COMMAND` on the tiny corpus with two strategies and the given outputs.
    let run = |command: &str, strategies: [&str; 2], outputs: &[&str]| {
        let (docs, queries) = (docs.display().to_string(), queries.display().to_string());
        let mut args = vec![
            command,
            "--docs",
            &docs,
            "--queries",
            &queries,
            "--embed-dim",
            "256",
        ];
        for s in &strategies {
            args.extend(["--strategy", s]);
        }
        args.extend(outputs);
        folio(&args)
    };
    let (csv, md, png) = (out("r.csv"), out("r.md"), out("r.png"));
    let output = run(
        "eval",
        ["fixed:40", "s=structure:200"],
        &["--csv", &csv, "--md", &md, "--plot", &png],
    );
    assert!(output.status.success(), "{output:?}");
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(
        table.contains("fixed:40") && table.contains("Hit@5"),
        "{table}"
    );
    let csv = std::fs::read_to_string(out("r.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 2 + 2 * 2);
    assert!(std::fs::read_to_string(out("r.md"))
        .unwrap()
        .contains("| s |"));
    let png = std::fs::read(out("r.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");

    let jsonl = out("d.jsonl");
    let replay = run("replay", ["fixed:40", "fixed:200"], &["--jsonl", &jsonl]);
    assert!(replay.status.success(), "{replay:?}");
    // q2's span, cut by fixed:40, lies whole in fixed:200's single alpha window.
    let jsonl = std::fs::read_to_string(&jsonl).unwrap();
    let q2 = jsonl.lines().find(|l| l.contains(r#""query_id":"q2""#));
    assert!(
        q2.is_some_and(
            |l| l.contains(r#""worse":"fixed:40""#) && l.contains("split_breaks_evidence")
        ),
        "{jsonl}"
    );

    // Plans: a row per strategy and plan, each plan set beside dense, a trace line per
    // question, strategy and plan.
    let (csv, md, jsonl) = (out("m.csv"), out("m.md"), out("m.jsonl"));
    let plans = [
        "--mode",
        "dense",
        "--mode",
        "lexical",
        "--mode",
        "h=hybrid:rrf:10",
    ];
    let mut outputs = plans.to_vec();
    outputs.extend(["--csv", &csv, "--md", &md, "--jsonl", &jsonl]);
    let modes = run("eval", ["fixed:40", "s=structure:200"], &outputs);
    assert!(modes.status.success(), "{modes:?}");
    let csv = std::fs::read_to_string(&csv).unwrap();
    let overall: Vec<String> = csv
        .lines()
        .map(|l| l.split(',').take(3).collect::<Vec<_>>().join(" "))
        .filter(|l| l.ends_with(" all"))
        .collect();
    let expected = ["fixed:40", "s"]
        .iter()
        .flat_map(|s| ["dense", "lexical", "h"].map(|p| format!("{s} {p} all")))
        .collect::<Vec<_>>();
    assert_eq!(overall, expected);
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("Against dense") && md.contains("| s | h |"),
        "{md}"
    );
    let jsonl = std::fs::read_to_string(&jsonl).unwrap();
    let lines = jsonl.lines().count();
    for plan in ["dense", "lexical", "h"] {
        let field = format!(r#""plan":"{plan}""#);
        assert_eq!(
            jsonl.lines().filter(|l| l.contains(&field)).count() * 3,
            lines
        );
    }
    // A reranker adds a row PLAN+rerank beside each plan: here a command preferring the
    // shortest texts, so each reranked row's units are ordered by length.
    let script = write(
        dir.path(),
        "shortest.py",
        "import json, struct, sys\n\
         for line in sys.stdin:\n    \
             texts = json.loads(line)[\"texts\"]\n    \
             sys.stdout.buffer.write(struct.pack(\"<II\", len(texts), 1))\n    \
             for t in texts:\n        \
                 sys.stdout.buffer.write(struct.pack(\"<f\", -float(len(t))))\n    \
             sys.stdout.buffer.flush()\n",
    );
    let (csv, jsonl) = (out("r2.csv"), out("r2.jsonl"));
    let spec = format!("cmd:\"python3 {}\"", script.display());
    let reranked = run(
        "eval",
        ["fixed:40", "s=structure:200"],
        &[
            "--mode",
            "lexical",
            "--rerank",
            &spec,
            "--rerank-top",
            "10",
            "--csv",
            &csv,
            "--jsonl",
            &jsonl,
        ],
    );
    assert!(reranked.status.success(), "{reranked:?}");
    let csv = std::fs::read_to_string(&csv).unwrap();
    for row in [
        "fixed:40,lexical,all",
        "fixed:40,lexical+rerank,all",
        "s,lexical+rerank,all",
    ] {
        assert!(csv.lines().any(|l| l.starts_with(row)), "{row} in {csv}");
    }
    let jsonl = std::fs::read_to_string(&jsonl).unwrap();
    let traced: Vec<serde_json::Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|l: &serde_json::Value| l["plan"] == "lexical+rerank")
        .collect();
    assert!(!traced.is_empty());
    for line in traced {
        let lengths: Vec<u64> = line["units"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["end"].as_u64().unwrap() - u["start"].as_u64().unwrap())
            .collect();
        assert!(lengths.windows(2).all(|w| w[0] <= w[1]), "{line}");
    }
    let replay = run("replay", ["fixed:40", "fixed:200"], &["--mode", "sparse"]);
    assert!(!replay.status.success());
    assert!(String::from_utf8_lossy(&replay.stderr).contains("mode `sparse`"));

    let bad = folio(&[
        "eval",
        "--docs",
        "x",
        "--queries",
        "y",
        "--strategy",
        "fixed:0",
    ]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("is not a positive whole number"));
}

#[test]
fn questions_embedded_once_search_as_their_text_would() {
    let dir = tempfile::tempdir().unwrap();
    let queries = questions_file(dir.path());
    let settings = Settings {
        ks: vec![1],
        ..Settings::default()
    };
    let strategy = Strategy::parse("fixed:40").unwrap();
    let workspace = Workspace::new(None).unwrap();
    let embedder = std::sync::Arc::new(folio::embed::HashEmbedder::new(256).unwrap());
    let setup = EmbedSetup {
        embedder: embedder.clone(),
        truncation: Default::default(),
    };
    let built = build_index(0, &strategy, &corpus(), &setup, &workspace, &NoProgress).unwrap();
    let spans = |answers: &[Answer]| -> Vec<Vec<(usize, usize, usize)>> {
        answers
            .iter()
            .map(|a| a.units.iter().map(|u| (u.doc, u.start, u.end)).collect())
            .collect()
    };
    let ask = |questions: &[Question]| {
        ask_all(
            &built,
            &corpus(),
            questions,
            &Plan::dense(),
            &settings,
            &NoProgress,
        )
        .unwrap()
    };
    let mut questions = read_questions(&queries, &corpus(), None).unwrap();
    let by_text = ask(&questions);
    embed_questions(&mut questions, embedder.as_ref(), &NoProgress).unwrap();
    assert!(questions
        .iter()
        .all(|q| q.vector.as_ref().map(Vec::len) == Some(256)));
    let by_vector = ask(&questions);
    assert_eq!(spans(&by_text), spans(&by_vector));
    // The vector is what is searched: give q1 q3's vector and it finds beta.
    questions[0].vector = questions[2].vector.clone();
    // Only questions without a vector are embedded: q1 keeps q3's.
    questions[1].vector = None;
    embed_questions(&mut questions, embedder.as_ref(), &NoProgress).unwrap();
    assert_eq!(questions[0].vector, questions[2].vector);
    assert!(questions[1].vector.is_some());
    let moved = ask(&questions);
    assert_eq!(moved[0].units[0].doc, 1, "{:?}", spans(&moved));
    assert_eq!(by_text[0].units[0].doc, 0);
}
