//! Evaluation: the per-question output of `folio eval --jsonl` (gold spans drawn over the
//! text with the chunk boundaries, split or not, what the top k returned), of `folio
//! replay --jsonl` (each question's labels), and the charts of `folio eval --plot`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use base64::Engine;
use maud::{html, Markup};
use serde::Deserialize;
use serde_json::Value;

use super::{blocking, encode, given, layout, number, params, slice, PageError};
use folio_eval::trace::{GoldTrace, QuestionTrace};

#[derive(Deserialize)]
pub(crate) struct EvalQuery {
    file: Option<String>,
}

/// What a file of JSON lines holds, told by its first line.
enum Lines {
    /// `folio eval --jsonl`.
    Traces(Vec<QuestionTrace>),
    /// `folio replay --jsonl`: questions between versions, or differences between strategies.
    Replay(Vec<Value>),
}

fn read_lines(path: &Path) -> Result<Lines, PageError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| PageError::NotFound(format!("{}: {e}", path.display())))?;
    let values = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| {
            serde_json::from_str::<Value>(l).map_err(|e| {
                PageError::Bad(format!("{} line {}: not JSON: {e}", path.display(), n + 1))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let is_trace = values
        .first()
        .is_some_and(|v| v.get("strategy").is_some() && v.get("gold").is_some());
    if !is_trace {
        return Ok(Lines::Replay(values));
    }
    values
        .into_iter()
        .enumerate()
        .map(|(n, v)| {
            serde_json::from_value(v)
                .map_err(|e| PageError::Bad(format!("{} line {}: {e}", path.display(), n + 1)))
        })
        .collect::<Result<_, _>>()
        .map(Lines::Traces)
}

pub(crate) async fn page(
    State(state): State<Arc<crate::state::State>>,
    query: Result<Query<EvalQuery>, QueryRejection>,
) -> Result<Markup, PageError> {
    let query = params(query)?;
    blocking(state, move |state| {
        let file = given(&query.file).map(PathBuf::from);
        let lines = file.as_deref().map(read_lines).transpose()?;
        let plots = state
            .plots
            .iter()
            .map(|p| {
                std::fs::read(p)
                    .map(|bytes| (p.clone(), base64::engine::general_purpose::STANDARD.encode(bytes)))
                    .map_err(|e| PageError::NotFound(format!("{}: {e}", p.display())))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(layout(
            "Evaluation",
            html! {
                form.bar method="get" action="/eval" {
                    label { "per-question file (folio eval --jsonl or folio replay --jsonl) "
                        input name="file" size="60" list="evals" value=(file.as_deref().map(|f| f.display().to_string()).unwrap_or_default()); }
                    datalist #evals { @for e in &state.evals { option value=(e.display()) {} } }
                    button { "Open" }
                }
                @if file.is_none() {
                    @if state.evals.is_empty() { p.note { "Start with `folio ui STORE --eval FILE` or type a path above." } }
                    ul { @for e in &state.evals { li { a href=(format!("/eval?file={}", encode(&e.display().to_string()))) { (e.display()) } } } }
                }
                @for (path, png) in &plots {
                    figure { img.chart alt=(path.display()) src=(format!("data:image/png;base64,{png}")); figcaption { (path.display()) } }
                }
                @match (&file, &lines) {
                    (Some(file), Some(Lines::Traces(traces))) => (trace_table(file, traces)),
                    (Some(_), Some(Lines::Replay(values))) => (replay_table(values)),
                    _ => {},
                }
            },
        ))
    })
    .await
}

fn trace_table(file: &Path, traces: &[QuestionTrace]) -> Markup {
    let ks: Vec<usize> = traces
        .first()
        .map(|t| t.hits.iter().map(|h| h.0).collect())
        .unwrap_or_default();
    let mut strategies: Vec<&str> = traces.iter().map(|t| t.strategy.as_str()).collect();
    strategies.dedup();
    let file = encode(&file.display().to_string());
    html! {
        h2 { "Strategies" }
        table #strategies {
            tr { th { "strategy" } th { "questions" } @for k in &ks { th { "Hit@" (k) } } th { "gold spans split by a child boundary" } }
            @for s in &strategies {
                @let mine: Vec<&QuestionTrace> = traces.iter().filter(|t| t.strategy == *s).collect();
                tr {
                    td { (s) }
                    td { (mine.len()) }
                    @for (i, _) in ks.iter().enumerate() {
                        td { (format!("{:.3}", mine.iter().filter(|t| t.hits.get(i).is_some_and(|h| h.1)).count() as f64 / mine.len().max(1) as f64)) }
                    }
                    td { (mine.iter().flat_map(|t| &t.gold).filter(|g| g.child_split).count()) " of " (mine.iter().map(|t| t.gold.len()).sum::<usize>()) }
                }
            }
        }
        h2 { "Questions" }
        table #questions {
            tr { th { "strategy" } th { "question" } @for k in &ks { th { "Hit@" (k) } } th { "gold" } }
            @for (n, t) in traces.iter().enumerate() {
                tr.question data-query-id=(t.query_id) data-strategy=(t.strategy) data-split=(t.gold.iter().any(|g| g.child_split)) {
                    td { (t.strategy) }
                    td { a href=(format!("/eval/question?file={file}&line={n}")) { (t.query_id) } ": " (t.query) }
                    @for h in &t.hits { td { @if h.1 { "hit" } @else { "miss" } } }
                    td {
                        @for g in &t.gold {
                            @if g.child_split { span.split { "split" } " " } @else { "whole " }
                        }
                    }
                }
            }
        }
    }
}

/// A replay's lines: each question with its versions' outcomes and the labels of what
/// changed (between versions), or the better and worse strategy and the labels.
fn replay_table(values: &[Value]) -> Markup {
    let text = |v: &Value, key: &str| {
        v.get(key)
            .map(|x| match x {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .unwrap_or_default()
    };
    let labels = |v: &Value| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut push = |l: &Value| {
            if let Some(l) = l.as_str() {
                if !out.iter().any(|o| o == l) {
                    out.push(l.to_string());
                }
            }
        };
        v.get("labels")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .for_each(&mut push);
        for change in v
            .get("changes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let found = change
                .get("difference")
                .and_then(|d| d.get("labels"))
                .and_then(Value::as_array);
            found.into_iter().flatten().for_each(&mut push);
        }
        out
    };
    html! {
        h2 { "Replay" }
        table #replay {
            tr { th { "question" } th { "outcomes" } th { "labels" } }
            @for v in values {
                tr.replayed data-query-id=(text(v, "query_id")) {
                    td { (text(v, "query_id")) ": " (text(v, "query")) }
                    td {
                        @for row in v.get("targets").and_then(Value::as_array).into_iter().flatten() {
                            code.outcome data-target=(text(row, "target")) { (text(row, "target")) " → " (text(row, "index")) "@" (text(row, "version")) ": " (outcome(row.get("outcome"))) } br;
                        }
                        @if v.get("better").is_some() {
                            "better: " (text(v, "better")) " (" (outcome(v.get("better_outcome"))) "), worse: "
                            (text(v, "worse")) " (" (outcome(v.get("worse_outcome"))) ")"
                        }
                    }
                    td.labels { (labels(v).join(", ")) }
                }
            }
        }
    }
}

/// A replay's outcome (`{hit, rank, completeness}`) in words.
fn outcome(value: Option<&Value>) -> String {
    let Some(v) = value else {
        return "no gold span".into();
    };
    let completeness = v.get("completeness").and_then(Value::as_str).unwrap_or("");
    match v.get("rank").and_then(Value::as_u64) {
        Some(rank) if v.get("hit").and_then(Value::as_bool) == Some(true) => {
            format!("hit at rank {rank}, {completeness}")
        }
        _ => format!("miss, {completeness}"),
    }
}

#[derive(Deserialize)]
pub(crate) struct QuestionQuery {
    file: Option<String>,
    line: Option<String>,
}

pub(crate) async fn question(
    State(state): State<Arc<crate::state::State>>,
    query: Result<Query<QuestionQuery>, QueryRejection>,
) -> Result<Markup, PageError> {
    let query = params(query)?;
    blocking(state, move |_| {
        let file = given(&query.file).ok_or_else(|| PageError::Bad("which file? (`file`)".into()))?;
        let n = number("line", &query.line, 0)?;
        let Lines::Traces(traces) = read_lines(Path::new(file))? else {
            return Err(PageError::Bad(format!("{file} is a replay, not the output of folio eval --jsonl")));
        };
        let t = traces.get(n).ok_or_else(|| PageError::NotFound(format!("{file} has no question {n}")))?;
        Ok(layout(
            &format!("{}: {}", t.strategy, t.query_id),
            html! {
                p.query { (t.query) }
                p { @for h in &t.hits { "Hit@" (h.0) ": " @if h.1 { strong { "hit" } } @else { strong { "miss" } } " · " } }
                @for (i, g) in t.gold.iter().enumerate() {
                    h2 { "Gold span " (i + 1) }
                    p.gold-span data-doc-id=(g.doc_id) data-start=(g.start) data-end=(g.end) data-split=(g.child_split) {
                        code { (g.doc_id) } " bytes " (g.start) "…" (g.end) ": "
                        @if g.child_split { span.split { "split by a child chunk boundary" } } @else { "inside one child chunk" }
                        @if g.parent_split { ", " span.split { "split by a parent boundary" } }
                        ", " @match g.found_at { Some(rank) => { "held whole by unit " (rank) }, None => "not held whole by any unit of the top k" }
                    }
                    pre.text.excerpt { (excerpt(g)) }
                }
                h2 { "Returned (top k)" }
                ol #units {
                    @for u in &t.units {
                        li.unit data-doc-id=(u.doc_id) data-start=(u.start) data-end=(u.end) {
                            code { (u.doc_id) } " bytes " (u.start) "…" (u.end) ", " (u.tokens) " tokens"
                            @if t.gold.iter().any(|g| g.doc_id == u.doc_id && u.start <= g.start && g.end <= u.end) { " · " strong { "holds a gold span" } }
                        }
                    }
                }
                p.note { "Colours are child chunks, a red bar where one starts inside the gold span, which is underlined in green." }
            },
        ))
    })
    .await
}

/// The excerpt cut at every child boundary and at the gold span's ends: each piece
/// coloured by its child, gold pieces underlined, a bar where a child starts inside the
/// gold span.
fn excerpt(g: &GoldTrace) -> Markup {
    let e = &g.excerpt;
    let end = e.start + e.text.len();
    let mut cuts: Vec<usize> = vec![
        e.start,
        end,
        g.start.clamp(e.start, end),
        g.end.clamp(e.start, end),
    ];
    for &(s, t) in &e.children {
        cuts.push(s.clamp(e.start, end));
        cuts.push(t.clamp(e.start, end));
    }
    cuts.sort_unstable();
    cuts.dedup();
    // A bar where a child starts inside the gold span: one per cut, even when the children
    // leave a gap (whitespace) between them.
    let starts: Vec<usize> = e.children.iter().map(|&(s, _)| s).collect();
    let pieces: Vec<(usize, usize)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    html! {
        @for (s, t) in pieces {
            @let child = e.children.iter().position(|&(a, b)| a <= s && t <= b);
            @let class = child.map_or("".to_string(), |c| format!("c{}", c % 6));
            @if s > g.start && s < g.end && starts.contains(&s) { span.boundary title="a child boundary inside the gold span" { "|" } }
            @if s >= g.start && t <= g.end {
                span class=(format!("gold {class}")) { (slice(&e.text, s - e.start, t - e.start)) }
            } @else {
                span class=(class) { (slice(&e.text, s - e.start, t - e.start)) }
            }
        }
    }
}
