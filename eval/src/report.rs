//! Prints strategy reports: a terminal table, CSV with fixed column names, and Markdown.

use std::fmt::Write as _;

use crate::score::{AgainstDense, Scores, StrategyReport, STAGES};

/// The group name of a strategy's overall row in CSV.
pub const ALL: &str = "all";

/// The CSV columns after `strategy`, `plan` and `group`; `hit_at_K` repeats for each k.
fn metric_columns(ks: &[usize]) -> Vec<String> {
    let mut columns = vec!["questions".to_string()];
    columns.extend(ks.iter().map(|k| format!("hit_at_{k}")));
    columns.push("mrr".into());
    columns.push("ndcg_at_10".into());
    columns.push(format!("recall_at_{}", ks.iter().max().unwrap_or(&5)));
    columns.extend(
        [
            "full",
            "partial",
            "noise",
            "full_strict",
            "boundary_split_rate",
            "parent_split_rate",
            "context_utilisation",
            "token_recall",
            "token_precision",
            "token_iou",
            "avg_input_tokens",
            "avg_chars",
            "p50_ms",
            "p95_ms",
        ]
        .map(String::from),
    );
    for stage in STAGES {
        columns.push(format!("{stage}_p50_ms"));
        columns.push(format!("{stage}_p95_ms"));
    }
    columns.extend(["chunks_per_doc", "index_bytes", "vector_bytes", "build_s"].map(String::from));
    columns
}

/// Hit@k for each k, then the other fractions, in the order of the columns.
fn fractions(s: &Scores) -> Vec<f64> {
    let mut values: Vec<f64> = s.hit_at.iter().map(|&(_, h)| h).collect();
    values.extend([
        s.mrr,
        s.ndcg,
        s.recall,
        s.full,
        s.partial,
        s.noise,
        s.full_strict,
        s.boundary_split_rate,
        s.parent_split_rate,
        s.context_utilisation,
        s.token_recall,
        s.token_precision,
        s.token_iou,
    ]);
    values
}

/// One value of a report row: CSV prints it with its decimals, Python gets the number.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// The strategy or group name.
    Text(String),
    /// A count (questions, bytes).
    Count(u64),
    /// A measure, printed with `decimals` digits.
    Number {
        /// The value.
        value: f64,
        /// Digits after the point in CSV.
        decimals: usize,
    },
    /// A strategy-level cost in a group row, where it does not apply.
    Empty,
}

impl std::fmt::Display for Cell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cell::Text(text) => f.write_str(text),
            Cell::Count(n) => write!(f, "{n}"),
            Cell::Number { value, decimals } => write!(f, "{value:.decimals$}"),
            Cell::Empty => Ok(()),
        }
    }
}

fn number(value: f64, decimals: usize) -> Cell {
    Cell::Number { value, decimals }
}

fn metric_cells(s: &Scores) -> Vec<Cell> {
    let mut cells = vec![Cell::Count(s.questions as u64)];
    cells.extend(fractions(s).into_iter().map(|x| number(x, 4)));
    cells.extend([s.avg_input_tokens, s.avg_chars].map(|x| number(x, 1)));
    cells.extend([s.p50_ms, s.p95_ms].map(|x| number(x, 3)));
    for (p50, p95) in s.stage_ms {
        cells.extend([p50, p95].map(|x| number(x, 3)));
    }
    cells
}

/// Strategy-level costs; empty in group rows, where they do not apply.
fn cost_cells(report: Option<&StrategyReport>) -> Vec<Cell> {
    match report {
        Some(r) => vec![
            number(r.chunks_per_doc, 1),
            Cell::Count(r.index_bytes),
            Cell::Count(r.vector_bytes),
            number(r.build_secs, 2),
        ],
        None => vec![Cell::Empty; 4],
    }
}

/// The rows of `folio eval --csv`, with their column names: one `group = all` row per
/// strategy and plan, then one row per strategy, plan and group.
pub fn rows(reports: &[StrategyReport], ks: &[usize]) -> (Vec<String>, Vec<Vec<Cell>>) {
    let mut header = vec![
        "strategy".to_string(),
        "plan".to_string(),
        "group".to_string(),
    ];
    header.extend(metric_columns(ks));
    let mut rows: Vec<Vec<Cell>> = reports.iter().map(|r| row(r, ALL, &r.all, true)).collect();
    for r in reports {
        for (group, scores) in &r.groups {
            rows.push(row(r, group, scores, false));
        }
    }
    (header, rows)
}

/// [`rows`] as CSV.
pub fn csv(reports: &[StrategyReport], ks: &[usize]) -> String {
    let (header, rows) = rows(reports, ks);
    let mut out = csv_line(&header);
    for row in rows {
        out += &csv_line(&row.iter().map(Cell::to_string).collect::<Vec<_>>());
    }
    out
}

/// One CSV row of `report`: its overall scores with its costs, or a group's without.
fn row(report: &StrategyReport, group: &str, s: &Scores, with_cost: bool) -> Vec<Cell> {
    let mut row = vec![
        Cell::Text(report.strategy.clone()),
        Cell::Text(report.plan.clone()),
        Cell::Text(group.to_string()),
    ];
    row.extend(metric_cells(s));
    row.extend(cost_cells(with_cost.then_some(report)));
    row
}

fn csv_line(cells: &[String]) -> String {
    let quoted: Vec<String> = cells.iter().map(|c| csv_field(c)).collect();
    quoted.join(",") + "\n"
}

/// One CSV cell, quoted when it holds a comma, a quote or a line break.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The main table: one row per strategy, the figures a reader compares.
fn summary(reports: &[StrategyReport], ks: &[usize], markdown: bool) -> String {
    let mut header: Vec<String> = vec!["strategy".into(), "plan".into()];
    header.extend(ks.iter().map(|k| format!("Hit@{k}")));
    header.extend(
        [
            "MRR@10",
            "nDCG@10",
            "R@k",
            "full",
            "partial",
            "noise",
            "full1",
            "split",
            "p.split",
            "util",
            "R",
            "P",
            "IoU",
            "tokens",
            "chars",
            "chunks/doc",
            "MB",
            "p50 ms",
            "p95 ms",
            "build s",
        ]
        .map(String::from),
    );
    let rows: Vec<Vec<String>> = reports
        .iter()
        .map(|r| {
            let s = &r.all;
            let mut row = vec![r.strategy.clone(), r.plan.clone()];
            row.extend(fractions(s).into_iter().map(|x| format!("{x:.3}")));
            row.extend([
                format!("{:.0}", s.avg_input_tokens),
                format!("{:.0}", s.avg_chars),
                format!("{:.1}", r.chunks_per_doc),
                format!("{:.1}", r.index_bytes as f64 / 1e6),
                format!("{:.2}", s.p50_ms),
                format!("{:.2}", s.p95_ms),
                format!("{:.1}", r.build_secs),
            ]);
            row
        })
        .collect();
    table(&header, &rows, markdown)
}

/// Per group: Hit@k (the largest k) and the full-evidence share of each strategy.
fn by_group(reports: &[StrategyReport], k: usize, markdown: bool) -> String {
    let Some(first) = reports.first() else {
        return String::new();
    };
    let mut header = vec!["group".to_string(), "questions".to_string()];
    for r in reports {
        header.push(format!("{} {} Hit@{k}", r.strategy, r.plan));
        header.push(format!("{} {} full", r.strategy, r.plan));
    }
    let rows: Vec<Vec<String>> = first
        .groups
        .iter()
        .enumerate()
        .map(|(i, (group, scores))| {
            let mut row = vec![group.clone(), scores.questions.to_string()];
            for r in reports {
                let s = &r.groups[i].1;
                let hit = s.hit_at.last().map_or(0.0, |&(_, h)| h);
                row.push(format!("{hit:.3}"));
                row.push(format!("{:.3}", s.full));
            }
            row
        })
        .collect();
    table(&header, &rows, markdown)
}

/// Per strategy and plan: each search stage's p50 / p95 in milliseconds.
fn stages(reports: &[StrategyReport], markdown: bool) -> String {
    let mut header = vec!["strategy".to_string(), "plan".to_string()];
    header.extend(STAGES.iter().map(|s| format!("{s} p50/p95 ms")));
    let rows: Vec<Vec<String>> = reports
        .iter()
        .map(|r| {
            let mut row = vec![r.strategy.clone(), r.plan.clone()];
            row.extend(
                r.all
                    .stage_ms
                    .iter()
                    .map(|(p50, p95)| format!("{p50:.2} / {p95:.2}")),
            );
            row
        })
        .collect();
    table(&header, &rows, markdown)
}

/// Each plan beside dense on the same strategy: wins, losses and the sign test's p for
/// Hit@1, Hit@k and full@k.
fn against(comparisons: &[AgainstDense], k: usize, markdown: bool) -> String {
    let mut header = vec!["strategy".to_string(), "plan".to_string()];
    for metric in ["Hit@1".to_string(), format!("Hit@{k}"), format!("full@{k}")] {
        header.push(format!("{metric} +/-"));
        header.push(format!("{metric} p"));
    }
    let rows: Vec<Vec<String>> = comparisons
        .iter()
        .map(|c| {
            let mut row = vec![c.strategy.clone(), c.plan.clone()];
            for (wins, losses, p) in c.paired {
                row.push(format!("+{wins} / -{losses}"));
                row.push(format!("{p:.3}"));
            }
            row
        })
        .collect();
    table(&header, &rows, markdown)
}

/// More groups than this are left to the CSV and Markdown files on the terminal.
const TERMINAL_GROUPS: usize = 30;

/// The terminal report: the summary, the stages, each plan against dense (when more than
/// one plan was asked), then the per-group table.
pub fn terminal(reports: &[StrategyReport], ks: &[usize], comparisons: &[AgainstDense]) -> String {
    let k = ks.iter().copied().max().unwrap_or(5);
    let groups = reports.first().map_or(0, |r| r.groups.len());
    let per_group = if groups > TERMINAL_GROUPS {
        format!("{groups} groups: see --csv or --md\n")
    } else {
        by_group(reports, k, false)
    };
    let mut out = summary(reports, ks, false);
    out += &format!("\nstages:\n{}", stages(reports, false));
    if !comparisons.is_empty() {
        out += &format!("\nagainst dense:\n{}", against(comparisons, k, false));
    }
    out + &format!("\nper group:\n{per_group}")
}

/// A Markdown report: what was run, the summary, the stages, each plan against dense and
/// the per-group table.
pub fn markdown(
    reports: &[StrategyReport],
    ks: &[usize],
    comparisons: &[AgainstDense],
    context: &str,
) -> String {
    let k = ks.iter().copied().max().unwrap_or(5);
    let mut out = String::from("# folio eval\n\n");
    let _ = writeln!(out, "{context}\n");
    out += &summary(reports, ks, true);
    out += "\n## Stages\n\n";
    out += &stages(reports, true);
    if !comparisons.is_empty() {
        out += "\n## Against dense (paired sign test)\n\n";
        out += &against(comparisons, k, true);
    }
    out += "\n## Per group\n\n";
    out += &by_group(reports, k, true);
    out +=
        "\nColumns: see folio's docs/evaluation.md, \"Metrics\". `full1` = every gold span \
            inside one single unit, `split` = boundary-split rate of child chunks, `p.split` of parents, `util` = context utilisation, R/P/IoU = \
            Chroma's recall, precision and IoU on code points, `tokens`/`chars` = per question \
            at k, MB = store file size.\n";
    out
}

/// Aligned columns (first column left, the rest right), or a Markdown table.
pub fn table(header: &[String], rows: &[Vec<String>], markdown: bool) -> String {
    let mut out = String::new();
    if markdown {
        let _ = writeln!(out, "| {} |", header.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
        for row in rows {
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
        return out;
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            std::iter::once(header)
                .chain(rows.iter().map(Vec::as_slice))
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, &w))| {
                if c == 0 {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    out
}
