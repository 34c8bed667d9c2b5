//! The comparison of a replay between versions, pure (no store): per question and in total,
//! each target against the first. Questions with gold spans are scored and labelled with
//! [`crate::replay`]'s outcomes and labels; on every question the answers' overlap and the
//! documents that appeared or disappeared are reported (the only comparison without gold).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::data::{Corpus, Question};
use crate::metrics::{self, Span};
use crate::replay::{difference, label_counts, Cuts, Difference, Label, Outcome, Reply};
use crate::run::Answer;
use crate::score::unit_spans;

/// A returned unit as the store gave it: its document and byte span in the revision that
/// version holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct UnitKey {
    /// The document.
    pub doc_id: String,
    /// Start, in bytes.
    pub start: usize,
    /// End, exclusive.
    pub end: usize,
}

/// What one target answered to one question.
#[derive(Debug, Clone, PartialEq)]
pub struct VersionAnswer {
    /// The index that answered.
    pub index: String,
    /// Its version.
    pub version: u64,
    /// The units on the corpus's current texts (a unit of an older revision has an empty
    /// span there).
    pub answer: Answer,
    /// The units as returned, best first.
    pub units: Vec<UnitKey>,
}

/// How one target did on one question.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetRow {
    /// The target, as given.
    pub target: String,
    /// The index that answered.
    pub index: String,
    /// Its version.
    pub version: u64,
    /// Whether a top-k unit comes from one of the question's documents (`None`: it names
    /// none).
    pub doc_hit: Option<bool>,
    /// Hit, rank and evidence against the gold spans (`None`: the question has none).
    pub outcome: Option<Outcome>,
    /// Estimated tokens of the returned texts: the answer's context.
    pub input_tokens: usize,
    /// Milliseconds the search took.
    pub millis: f64,
    /// The returned units, best first.
    pub units: Vec<UnitKey>,
}

/// One target's answer to one question against the base target's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// The base target.
    pub from: String,
    /// The target compared with it.
    pub to: String,
    /// `to`'s rank of the first unit holding a gold span minus `from`'s, when both have one
    /// (negative: better).
    pub rank_change: Option<i64>,
    /// `to`'s input tokens minus `from`'s.
    pub token_change: i64,
    /// The target that did better on the gold spans, when they differ (see
    /// [`crate::replay::Outcome`]), with the labels of why the other lost them.
    pub difference: Option<Difference>,
    /// Jaccard similarity of the two answers' document ids (1 when both are empty).
    pub doc_overlap: f64,
    /// Jaccard similarity of the two answers' units (document and byte span).
    pub unit_overlap: f64,
    /// Documents in `to`'s answer and not in `from`'s.
    pub appeared: Vec<String>,
    /// Documents in `from`'s answer and not in `to`'s.
    pub disappeared: Vec<String>,
}

/// One question, on every target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuestionRow {
    /// The question's id.
    pub query_id: String,
    /// The question.
    pub query: String,
    /// The logged request it was selected from.
    pub request_id: Option<u64>,
    /// Its gold spans.
    pub gold_spans: usize,
    /// Per target, in target order.
    pub targets: Vec<TargetRow>,
    /// Per target after the first, against the first.
    pub changes: Vec<Change>,
}

/// One target over every question.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetTotals {
    /// The target, as given.
    pub target: String,
    /// Questions asked.
    pub questions: usize,
    /// Questions naming documents, and those of them a top-k unit came from.
    pub doc_questions: usize,
    /// See `doc_questions`.
    pub doc_hits: usize,
    /// Questions with gold spans, and how their evidence fared: a unit holding a span
    /// whole, and full, partial or no evidence in the top k.
    pub gold_questions: usize,
    /// See `gold_questions`.
    pub span_hits: usize,
    /// See `gold_questions`.
    pub full: usize,
    /// See `gold_questions`.
    pub partial: usize,
    /// See `gold_questions`.
    pub noise: usize,
    /// Mean input tokens.
    pub mean_input_tokens: f64,
    /// Median search time, ms.
    pub p50_ms: f64,
    /// 95th percentile search time, ms.
    pub p95_ms: f64,
}

/// One target against the base over every question.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairTotals {
    /// The base target.
    pub from: String,
    /// The target compared with it.
    pub to: String,
    /// Gold questions on which `to` did better, and worse.
    pub improved: usize,
    /// See `improved`.
    pub worsened: usize,
    /// Questions where both ranked a gold span and `to` ranked it higher, and lower.
    pub rank_up: usize,
    /// See `rank_up`.
    pub rank_down: usize,
    /// Mean of `to`'s input tokens minus `from`'s.
    pub mean_token_change: f64,
    /// Per label, the questions on which `to` did worse carrying it.
    pub labels_worsened: BTreeMap<&'static str, usize>,
    /// Per label, the questions on which `to` did better carrying it.
    pub labels_improved: BTreeMap<&'static str, usize>,
    /// Questions without gold spans, and the mean overlap of their answers.
    pub no_gold_questions: usize,
    /// See `no_gold_questions`.
    pub mean_doc_overlap: f64,
    /// See `no_gold_questions`.
    pub mean_unit_overlap: f64,
    /// Documents that appeared, and disappeared, summed over every question.
    pub appeared: usize,
    /// See `appeared`.
    pub disappeared: usize,
}

/// A replay between versions: per question, per target and per pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VersionReport {
    /// The k of every figure.
    pub k: usize,
    /// The targets, the base first.
    pub targets: Vec<String>,
    /// Per question.
    pub questions: Vec<QuestionRow>,
    /// Per target.
    pub totals: Vec<TargetTotals>,
    /// Per target after the first.
    pub pairs: Vec<PairTotals>,
    /// Gold spans left out because the document revision they were written against is gone
    /// (see [`crate::data::QuestionSet::check_current`]).
    pub stale_gold: Vec<crate::data::StaleGold>,
}

/// Compares `answers[target][question]` question by question at k; `cuts` gives each
/// answering index's reading units (an index missing has none).
pub fn compare_versions<'a>(
    targets: &'a [String],
    answers: &'a [Vec<VersionAnswer>],
    cuts: &BTreeMap<String, Cuts<'a>>,
    questions: &[Question],
    corpus: &Corpus,
    k: usize,
) -> VersionReport {
    let none = Cuts {
        chunkings: &[],
        expand: folio::query::Expand::Parent,
        overlap: false,
    };
    let reply = |t: usize, answer: &'a VersionAnswer| Reply {
        label: &targets[t],
        cuts: cuts.get(&answer.index).copied().unwrap_or(none),
        answer: &answer.answer,
    };
    let rows: Vec<QuestionRow> = questions
        .iter()
        .enumerate()
        .map(|(q, question)| {
            let per_target: Vec<&VersionAnswer> = answers.iter().map(|a| &a[q]).collect();
            let rows: Vec<TargetRow> = per_target
                .iter()
                .enumerate()
                .map(|(t, a)| target_row(&targets[t], a, question, corpus, k))
                .collect();
            let changes = (1..per_target.len())
                .map(|t| {
                    let (from, to) = (per_target[0], per_target[t]);
                    change(
                        (&rows[0], from, reply(0, from)),
                        (&rows[t], to, reply(t, to)),
                        question,
                        corpus,
                        k,
                    )
                })
                .collect();
            QuestionRow {
                query_id: question.id.clone(),
                query: question.text.clone(),
                request_id: question.origin.as_ref().and_then(|o| o.request_id),
                gold_spans: question.gold.len(),
                targets: rows,
                changes,
            }
        })
        .collect();
    VersionReport {
        k,
        targets: targets.to_vec(),
        totals: (0..targets.len())
            .map(|t| target_totals(&rows, t))
            .collect(),
        pairs: (1..targets.len())
            .map(|t| pair_totals(&rows, t - 1))
            .collect(),
        questions: rows,
        stale_gold: Vec::new(),
    }
}

fn target_row(
    target: &str,
    answer: &VersionAnswer,
    question: &Question,
    corpus: &Corpus,
    k: usize,
) -> TargetRow {
    let top = &answer.units[..k.min(answer.units.len())];
    let doc_hit = (!question.doc_ids.is_empty())
        .then(|| top.iter().any(|u| question.doc_ids.contains(&u.doc_id)));
    let outcome = (!question.gold.is_empty()).then(|| {
        let ranked: Vec<Span> = unit_spans(&answer.answer, corpus, k);
        Outcome::of(&ranked, &question.gold_spans(), k)
    });
    TargetRow {
        target: target.to_string(),
        index: answer.index.clone(),
        version: answer.version,
        doc_hit,
        outcome,
        input_tokens: answer.answer.units.iter().take(k).map(|u| u.tokens).sum(),
        millis: answer.answer.millis,
        units: top.to_vec(),
    }
}

fn change(
    (from_row, from, from_reply): (&TargetRow, &VersionAnswer, Reply),
    (to_row, to, to_reply): (&TargetRow, &VersionAnswer, Reply),
    question: &Question,
    corpus: &Corpus,
    k: usize,
) -> Change {
    let rank = |row: &TargetRow| row.outcome.and_then(|o| o.rank);
    let rank_change = match (rank(from_row), rank(to_row)) {
        (Some(a), Some(b)) => Some(b as i64 - a as i64),
        _ => None,
    };
    let top = |a: &VersionAnswer| a.units.iter().take(k).cloned().collect::<BTreeSet<_>>();
    let (a_units, b_units) = (top(from), top(to));
    let docs = |units: &BTreeSet<UnitKey>| -> BTreeSet<String> {
        units.iter().map(|u| u.doc_id.clone()).collect()
    };
    let (a_docs, b_docs) = (docs(&a_units), docs(&b_units));
    Change {
        from: from_row.target.clone(),
        to: to_row.target.clone(),
        rank_change,
        token_change: to_row.input_tokens as i64 - from_row.input_tokens as i64,
        difference: difference(from_reply, to_reply, question, corpus, k),
        doc_overlap: jaccard(&a_docs, &b_docs),
        unit_overlap: jaccard(&a_units, &b_units),
        appeared: b_docs.difference(&a_docs).cloned().collect(),
        disappeared: a_docs.difference(&b_docs).cloned().collect(),
    }
}

/// |a ∩ b| / |a ∪ b|; 1 when both are empty.
fn jaccard<T: Ord>(a: &BTreeSet<T>, b: &BTreeSet<T>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 1.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

fn target_totals(rows: &[QuestionRow], t: usize) -> TargetTotals {
    let of: Vec<&TargetRow> = rows.iter().map(|r| &r.targets[t]).collect();
    let outcomes: Vec<Outcome> = of.iter().filter_map(|r| r.outcome).collect();
    let evidence = |c: &str| outcomes.iter().filter(|o| o.completeness == c).count();
    let millis: Vec<f64> = of.iter().map(|r| r.millis).collect();
    TargetTotals {
        target: of.first().map_or_else(String::new, |r| r.target.clone()),
        questions: of.len(),
        doc_questions: of.iter().filter(|r| r.doc_hit.is_some()).count(),
        doc_hits: of.iter().filter(|r| r.doc_hit == Some(true)).count(),
        gold_questions: outcomes.len(),
        span_hits: outcomes.iter().filter(|o| o.hit).count(),
        full: evidence("full"),
        partial: evidence("partial"),
        noise: evidence("noise"),
        mean_input_tokens: mean(of.iter().map(|r| r.input_tokens as f64)),
        p50_ms: metrics::percentile(&millis, 50.0).unwrap_or(0.0),
        p95_ms: metrics::percentile(&millis, 95.0).unwrap_or(0.0),
    }
}

/// The totals of change number `c` (target `c + 1` against the base).
fn pair_totals(rows: &[QuestionRow], c: usize) -> PairTotals {
    let changes: Vec<&Change> = rows.iter().map(|r| &r.changes[c]).collect();
    let (from, to) = changes
        .first()
        .map_or_else(Default::default, |ch| (ch.from.clone(), ch.to.clone()));
    let differences: Vec<Difference> = changes
        .iter()
        .filter_map(|ch| ch.difference.clone())
        .collect();
    let mut labels_worsened = BTreeMap::new();
    let mut labels_improved = BTreeMap::new();
    for pair in label_counts(&differences) {
        let into = if pair.worse == to {
            &mut labels_worsened
        } else {
            &mut labels_improved
        };
        for (label, n) in Label::ALL.iter().zip(pair.per_label) {
            *into.entry(label.name()).or_insert(0) += n;
        }
    }
    let no_gold: Vec<&&Change> = rows
        .iter()
        .zip(&changes)
        .filter(|(r, _)| r.gold_spans == 0)
        .map(|(_, ch)| ch)
        .collect();
    let ranks = |f: fn(i64) -> bool| {
        changes
            .iter()
            .filter(|ch| ch.rank_change.is_some_and(f))
            .count()
    };
    PairTotals {
        improved: differences.iter().filter(|d| d.better == to).count(),
        worsened: differences.iter().filter(|d| d.worse == to).count(),
        rank_up: ranks(|r| r < 0),
        rank_down: ranks(|r| r > 0),
        mean_token_change: mean(changes.iter().map(|ch| ch.token_change as f64)),
        labels_worsened,
        labels_improved,
        no_gold_questions: no_gold.len(),
        mean_doc_overlap: mean(no_gold.iter().map(|ch| ch.doc_overlap)),
        mean_unit_overlap: mean(no_gold.iter().map(|ch| ch.unit_overlap)),
        appeared: changes.iter().map(|ch| ch.appeared.len()).sum(),
        disappeared: changes.iter().map(|ch| ch.disappeared.len()).sum(),
        from,
        to,
    }
}

/// The report as terminal tables: one row per question and compared target, then the
/// totals per target and per pair.
pub fn tables(report: &VersionReport) -> String {
    let header = |names: &[&str]| -> Vec<String> { names.iter().map(|s| s.to_string()).collect() };
    let arrow = |a: String, b: String| format!("{a} -> {b}");
    let hit = |r: &TargetRow| {
        r.outcome
            .map(|o| o.rank.map_or("-".to_string(), |n| n.to_string()))
            .unwrap_or_else(|| "n/a".into())
    };
    let evidence = |r: &TargetRow| r.outcome.map_or("n/a", |o| o.completeness).to_string();
    let doc = |r: &TargetRow| match r.doc_hit {
        Some(true) => "yes".to_string(),
        Some(false) => "no".to_string(),
        None => "n/a".to_string(),
    };
    let mut rows = Vec::new();
    for q in &report.questions {
        for (c, ch) in q.changes.iter().enumerate() {
            let (a, b) = (&q.targets[0], &q.targets[c + 1]);
            let labels = ch.difference.as_ref().map_or_else(String::new, |d| {
                let names: Vec<&str> = d.labels.iter().map(|l| l.name()).collect();
                format!("{} worse: {}", d.worse, names.join(","))
            });
            rows.push(vec![
                q.query_id.clone(),
                arrow(a.target.clone(), b.target.clone()),
                arrow(doc(a), doc(b)),
                arrow(hit(a), hit(b)),
                arrow(evidence(a), evidence(b)),
                format!(
                    "{} -> {} ({:+})",
                    a.input_tokens, b.input_tokens, ch.token_change
                ),
                arrow(format!("{:.1}", a.millis), format!("{:.1}", b.millis)),
                labels,
                format!("{:.2}", ch.doc_overlap),
                format!("{:.2}", ch.unit_overlap),
                ch.appeared.join(","),
                ch.disappeared.join(","),
            ]);
        }
    }
    let mut out = format!(
        "{} questions, k = {}; rank: of the first unit holding a gold span (- none, n/a no gold)\n",
        report.questions.len(),
        report.k
    );
    out += &crate::report::table(
        &header(&[
            "question",
            "targets",
            "doc hit",
            "rank",
            "evidence",
            "tokens",
            "ms",
            "labels",
            "doc J",
            "unit J",
            "appeared",
            "disappeared",
        ]),
        &rows,
        false,
    );
    let totals: Vec<Vec<String>> = report
        .totals
        .iter()
        .map(|t| {
            vec![
                t.target.clone(),
                t.questions.to_string(),
                format!("{}/{}", t.doc_hits, t.doc_questions),
                format!("{}/{}", t.span_hits, t.gold_questions),
                t.full.to_string(),
                t.partial.to_string(),
                t.noise.to_string(),
                format!("{:.1}", t.mean_input_tokens),
                format!("{:.2}", t.p50_ms),
                format!("{:.2}", t.p95_ms),
            ]
        })
        .collect();
    out.push('\n');
    out += &crate::report::table(
        &header(&[
            "target",
            "questions",
            "doc hits",
            "span hits",
            "full",
            "partial",
            "noise",
            "tokens",
            "p50 ms",
            "p95 ms",
        ]),
        &totals,
        false,
    );
    let label_list = |m: &BTreeMap<&str, usize>| {
        let parts: Vec<String> = m
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(l, n)| format!("{l} {n}"))
            .collect();
        parts.join(", ")
    };
    let pairs: Vec<Vec<String>> = report
        .pairs
        .iter()
        .map(|p| {
            vec![
                arrow(p.from.clone(), p.to.clone()),
                p.improved.to_string(),
                p.worsened.to_string(),
                format!("{}/{}", p.rank_up, p.rank_down),
                format!("{:+.1}", p.mean_token_change),
                label_list(&p.labels_worsened),
                label_list(&p.labels_improved),
                p.no_gold_questions.to_string(),
                format!("{:.2}", p.mean_doc_overlap),
                format!("{:.2}", p.mean_unit_overlap),
                format!("{}/{}", p.appeared, p.disappeared),
            ]
        })
        .collect();
    out.push('\n');
    out += &crate::report::table(
        &header(&[
            "pair",
            "improved",
            "worsened",
            "rank up/down",
            "tokens",
            "labels (worsened)",
            "labels (improved)",
            "no gold",
            "doc J",
            "unit J",
            "docs +/-",
        ]),
        &pairs,
        false,
    );
    if !report.stale_gold.is_empty() {
        out += &format!(
            "\n{} gold spans left out: written against a revision of their document that is gone (edited or deleted since)\n",
            report.stale_gold.len()
        );
        for g in &report.stale_gold {
            out += &format!(
                "  {}: {} bytes {}..{}\n",
                g.query_id, g.doc_id, g.start_byte, g.end_byte
            );
        }
    }
    out
}
