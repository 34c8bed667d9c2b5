//! `folio log export|feedback|trim|cap|select|report`: the request log, its retention, and
//! its review.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Subcommand;

use crate::common::open_reader;
use crate::output::print_json;
use crate::output::{err, CliResult};
use folio::review::{
    Annotation, Estimate, GoldEvidence, GroupBy, LogReport, Rate, Rating, Selection, Verdict,
    DEFAULT_FOLLOW_UP_SECS,
};
use folio::store::{Store, Trim};
use folio_eval::report::csv_field;
use folio_eval::QuestionRecord;

#[derive(Subcommand)]
pub(crate) enum LogCommand {
    /// Write the request log as JSON Lines (to stdout by default).
    Export {
        /// The store file.
        store: PathBuf,
        /// The file to write (stdout when absent).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Attach feedback or what the application did to a logged search: a thumb (up or
    /// down), a note, a verdict, gold evidence, the session, the answer, prompt tokens,
    /// rerank scores. What is not given stays as it was.
    #[command(alias = "annotate")]
    Feedback {
        /// The store file.
        store: PathBuf,
        /// The request id a `search --log` printed.
        request_id: u64,
        /// `up` or `down`.
        #[arg(value_parser = parse_rating)]
        rating: Option<Rating>,
        /// A note.
        #[arg(long)]
        note: Option<String>,
        /// A reviewer's verdict: correct or wrong.
        #[arg(long, value_parser = parse_verdict)]
        verdict: Option<Verdict>,
        /// Gold evidence, DOC_ID:START-END in bytes of the document's text (repeatable;
        /// replaces the stored gold).
        #[arg(long, value_parser = parse_gold)]
        gold: Vec<GoldEvidence>,
        /// The session (conversation) the request belongs to.
        #[arg(long)]
        session: Option<String>,
        /// The answer given from the results.
        #[arg(long)]
        answer: Option<String>,
        /// Prompt tokens the answer spent.
        #[arg(long)]
        prompt_tokens: Option<u64>,
        /// Rerank scores of the returned units, by rank, comma-separated.
        #[arg(long, value_delimiter = ',')]
        rerank: Option<Vec<f32>>,
        /// Print what was recorded as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete old logged requests, a few hundred per commit (searches never wait).
    Trim {
        /// The store file.
        store: PathBuf,
        /// Delete requests older than this: 30d, 12h, 90m, 45s.
        #[arg(long, value_parser = parse_age, required_unless_present = "keep", conflicts_with = "keep")]
        older_than: Option<u64>,
        /// Keep only the newest N requests.
        #[arg(long)]
        keep: Option<u64>,
        /// Print what was done as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show or set the log's size cap in record bytes (`10M`, `512K`, `off`); the oldest
    /// requests are deleted as new ones are written.
    Cap {
        /// The store file.
        store: PathBuf,
        /// The cap (a number of bytes with an optional K, M or G suffix), or `off`.
        #[arg(value_parser = parse_cap)]
        cap: Option<Cap>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write the failed requests as a question set (JSON Lines, the data sets' format plus
    /// each request's principals, target, index, version, route key) for `folio replay`.
    /// Failures (any of): --thumb-down, --wrong, --follow-up, --score-below; without one,
    /// every request in the window.
    Select {
        /// The store file.
        store: PathBuf,
        /// Requests rated down.
        #[arg(long)]
        thumb_down: bool,
        /// Requests with a `wrong` verdict.
        #[arg(long)]
        wrong: bool,
        /// Requests followed by another of their session within SECONDS.
        #[arg(long, value_name = "SECONDS")]
        follow_up: Option<u64>,
        /// Requests whose best score is below this (or that returned nothing).
        #[arg(long)]
        score_below: Option<f32>,
        /// Only requests answered by this index, or INDEX@VERSION.
        #[arg(long)]
        index: Option<String>,
        /// Only requests with this route key.
        #[arg(long)]
        route_key: Option<String>,
        /// Only requests at or after this time (YYYY-MM-DD or RFC 3339).
        #[arg(long, value_parser = parse_time)]
        since: Option<u64>,
        /// Only requests before this time (YYYY-MM-DD or RFC 3339).
        #[arg(long, value_parser = parse_time)]
        until: Option<u64>,
        /// The file to write (stdout when absent).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Online metrics per version, route or day, with counts and 95% intervals; two
    /// groups side by side with their difference.
    Report {
        /// The store file.
        store: PathBuf,
        /// Rows: version, route or day.
        #[arg(long, default_value = "version", value_parser = parse_group_by)]
        by: GroupBy,
        /// A follow-up is a next request of the session within this many seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_FOLLOW_UP_SECS)]
        follow_up: u64,
        /// Groups A and B to compare (by version: automatic when there are two).
        #[arg(long, num_args = 2, value_names = ["A", "B"])]
        compare: Option<Vec<String>>,
        /// Print CSV.
        #[arg(long, conflicts_with = "json")]
        csv: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Also draw the metrics to this PNG.
        #[arg(long)]
        plot: Option<PathBuf>,
    },
}

/// A size cap, or none.
#[derive(Clone, Copy)]
pub(crate) struct Cap(Option<u64>);

pub(crate) fn run(command: LogCommand) -> CliResult {
    match command {
        LogCommand::Export { store, out } => {
            let entries = open_reader(&store)?.log().entries().map_err(err)?;
            let lines = entries
                .iter()
                .map(serde_json::to_string)
                .collect::<Result<Vec<_>, _>>()
                .map_err(err)?;
            write_lines(&lines, out.as_deref(), "requests")
        }
        LogCommand::Feedback {
            store,
            request_id,
            rating,
            note,
            verdict,
            gold,
            session,
            answer,
            prompt_tokens,
            rerank,
            json,
        } => {
            let mut annotation = Annotation::default();
            annotation.rating = rating;
            annotation.note = note.clone();
            annotation.verdict = verdict;
            annotation.gold = (!gold.is_empty()).then_some(gold);
            annotation.session = session;
            annotation.answer = answer;
            annotation.prompt_tokens = prompt_tokens;
            annotation.rerank_scores = rerank;
            open(&store)?
                .log()
                .annotate(request_id, &annotation)
                .map_err(err)?;
            if json {
                return print_json(&serde_json::json!({
                    "request_id": request_id, "rating": rating, "note": note, "verdict": verdict,
                }));
            }
            println!("feedback recorded on request {request_id}");
            Ok(())
        }
        LogCommand::Trim {
            store,
            older_than,
            keep,
            json,
        } => {
            let trim = match (older_than, keep) {
                (Some(age_ms), _) => Trim::Before(
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_millis() as u64)
                        .saturating_sub(age_ms),
                ),
                (None, Some(n)) => Trim::Keep(n),
                (None, None) => return Err("give --older-than or --keep".into()),
            };
            let report = open(&store)?.log().trim(trim).map_err(err)?;
            if json {
                return print_json(&report);
            }
            let s = if report.commits == 1 { "" } else { "s" };
            println!(
                "removed {} requests in {} commit{s}, {} kept",
                report.removed, report.commits, report.kept
            );
            Ok(())
        }
        LogCommand::Cap { store, cap, json } => {
            let size = match cap {
                Some(Cap(cap)) => {
                    let store = open(&store)?;
                    store.log().set_cap(cap).map_err(err)?;
                    store.log().size().map_err(err)?
                }
                None => open_reader(&store)?.log().size().map_err(err)?,
            };
            if json {
                return print_json(&size);
            }
            let cap = size
                .cap
                .map_or("none".to_string(), |c| format!("{c} bytes"));
            println!(
                "{} requests, {} bytes of records; cap {cap}",
                size.entries, size.bytes
            );
            Ok(())
        }
        LogCommand::Select {
            store,
            thumb_down,
            wrong,
            follow_up,
            score_below,
            index,
            route_key,
            since,
            until,
            out,
        } => {
            let (index, version) = match index.as_deref().map(|i| i.rsplit_once('@')) {
                Some(Some((name, v))) => (
                    Some(name.to_string()),
                    Some(
                        v.parse()
                            .map_err(|_| format!("`{v}`: expected a version number"))?,
                    ),
                ),
                _ => (index, None),
            };
            let mut selection = Selection::default();
            selection.thumb_down = thumb_down;
            selection.wrong = wrong;
            selection.follow_up_secs = follow_up;
            selection.score_below = score_below;
            selection.index = index;
            selection.version = version;
            selection.route_key = route_key;
            selection.since_ms = since;
            selection.until_ms = until;
            let store = open_reader(&store)?;
            let picked = store.log().select(&selection).map_err(err)?;
            let mut lines = Vec::new();
            let (mut vectors, mut dropped) = (0, 0);
            for entry in &picked {
                let text_of = |doc: &str| store.document(doc).ok().flatten().map(|d| d.text);
                match QuestionRecord::from_logged(entry, text_of) {
                    Some((question, lost)) => {
                        dropped += lost.len();
                        lines.push(serde_json::to_string(&question).map_err(err)?);
                    }
                    None => vectors += 1,
                }
            }
            if vectors > 0 {
                eprintln!("{vectors} selected requests searched by vector: left out");
            }
            if dropped > 0 {
                eprintln!("{dropped} gold spans no longer match their document: left out");
            }
            write_lines(&lines, out.as_deref(), "questions")
        }
        LogCommand::Report {
            store,
            by,
            follow_up,
            compare,
            csv,
            json,
            plot,
        } => {
            let compare = compare.as_deref().and_then(|c| match c {
                [a, b] => Some((a.as_str(), b.as_str())),
                _ => None,
            });
            let report = open_reader(&store)?
                .log()
                .report(by, follow_up, compare)
                .map_err(err)?;
            if let Some(path) = &plot {
                folio_eval::plot::write_log_png(&report, path).map_err(err)?;
                eprintln!("wrote {}", path.display());
            }
            if json {
                return print_json(&report);
            }
            if csv {
                print!("{}", report_csv(&report));
            } else {
                print!("{}", report_table(&report));
            }
            Ok(())
        }
    }
}

fn open(path: &Path) -> Result<Store, String> {
    crate::common::open_store(path, Store::builder())
}

fn write_lines(lines: &[String], out: Option<&Path>, what: &str) -> CliResult {
    let mut text = lines.join("\n");
    if !lines.is_empty() {
        text.push('\n');
    }
    match out {
        Some(path) => {
            std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            eprintln!("wrote {} {what} to {}", lines.len(), path.display());
            Ok(())
        }
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .map_err(err),
    }
}

/// The columns of a report: a metric's name and its text in a row.
fn rate_cell(rate: &Rate) -> String {
    match rate.estimate {
        Some(e) => format!(
            "{:.3} [{:.3}, {:.3}] {}/{}",
            e.value, e.low, e.high, rate.count, rate.of
        ),
        None => "-".into(),
    }
}

fn estimate_cell(e: Option<Estimate>) -> String {
    e.map_or("-".into(), |e| {
        format!("{:.2} [{:.2}, {:.2}]", e.value, e.low, e.high)
    })
}

fn difference_cell(e: Option<Estimate>) -> String {
    e.map_or("-".into(), |e| {
        format!("{:+.3} [{:+.3}, {:+.3}]", e.value, e.low, e.high)
    })
}

fn report_table(report: &LogReport) -> String {
    let header = [
        "group",
        "requests",
        "thumb-up rate",
        "follow-up rate",
        "wrong rate",
        "p50 ms",
        "p95 ms",
        "context tokens",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for g in &report.groups {
        rows.push(vec![
            g.group.clone(),
            g.requests.to_string(),
            rate_cell(&g.thumb_up),
            rate_cell(&g.follow_up),
            rate_cell(&g.wrong),
            estimate_cell(g.latency_p50_ms),
            estimate_cell(g.latency_p95_ms),
            estimate_cell(g.context_tokens),
        ]);
    }
    if let Some(c) = &report.comparison {
        rows.push(vec![
            format!("{} - {}", c.b, c.a),
            String::new(),
            difference_cell(c.thumb_up),
            difference_cell(c.follow_up),
            difference_cell(c.wrong),
            difference_cell(c.latency_p50_ms),
            difference_cell(c.latency_p95_ms),
            difference_cell(c.context_tokens),
        ]);
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out.push_str(&format!(
        "rates with Wilson 95% intervals (count/of); latency percentiles with order-statistic intervals; follow-up within {} s\n",
        report.follow_up_secs
    ));
    out
}

fn report_csv(report: &LogReport) -> String {
    let mut out = String::from("group,metric,value,low,high,count,of\n");
    let mut row = |group: &str, metric: &str, e: Option<Estimate>, counts: Option<(u64, u64)>| {
        let Some(e) = e else { return };
        let (count, of) = counts.map_or((String::new(), String::new()), |(c, o)| {
            (c.to_string(), o.to_string())
        });
        out.push_str(&format!(
            "{},{metric},{},{},{},{count},{of}\n",
            csv_field(group),
            e.value,
            e.low,
            e.high
        ));
    };
    for g in &report.groups {
        for (name, rate) in [
            ("thumb_up", &g.thumb_up),
            ("follow_up", &g.follow_up),
            ("wrong", &g.wrong),
        ] {
            row(&g.group, name, rate.estimate, Some((rate.count, rate.of)));
        }
        row(
            &g.group,
            "latency_p50_ms",
            g.latency_p50_ms,
            Some((g.requests, g.requests)),
        );
        row(
            &g.group,
            "latency_p95_ms",
            g.latency_p95_ms,
            Some((g.requests, g.requests)),
        );
        row(
            &g.group,
            "context_tokens",
            g.context_tokens,
            Some((g.requests, g.requests)),
        );
    }
    if let Some(c) = &report.comparison {
        let group = format!("{} - {}", c.b, c.a);
        for (name, e) in [
            ("thumb_up", c.thumb_up),
            ("follow_up", c.follow_up),
            ("wrong", c.wrong),
            ("latency_p50_ms", c.latency_p50_ms),
            ("latency_p95_ms", c.latency_p95_ms),
            ("context_tokens", c.context_tokens),
        ] {
            row(&group, name, e, None);
        }
    }
    out
}

fn parse_rating(s: &str) -> Result<Rating, String> {
    match s {
        "up" => Ok(Rating::Up),
        "down" => Ok(Rating::Down),
        _ => Err(format!("`{s}`: expected up or down")),
    }
}

fn parse_verdict(s: &str) -> Result<Verdict, String> {
    match s {
        "correct" => Ok(Verdict::Correct),
        "wrong" => Ok(Verdict::Wrong),
        _ => Err(format!("`{s}`: expected correct or wrong")),
    }
}

fn parse_group_by(s: &str) -> Result<GroupBy, String> {
    match s {
        "version" => Ok(GroupBy::Version),
        "route" => Ok(GroupBy::Route),
        "day" => Ok(GroupBy::Day),
        _ => Err(format!("`{s}`: expected version, route or day")),
    }
}

/// `DOC_ID:START-END` (bytes); the document id may itself hold colons.
fn parse_gold(s: &str) -> Result<GoldEvidence, String> {
    let bad = || format!("`{s}`: expected DOC_ID:START-END (byte offsets)");
    let (doc, range) = s.rsplit_once(':').ok_or_else(bad)?;
    let (start, end) = range.split_once('-').ok_or_else(bad)?;
    let (start_byte, end_byte) = (
        start.parse().map_err(|_| bad())?,
        end.parse().map_err(|_| bad())?,
    );
    if doc.is_empty() || start_byte >= end_byte {
        return Err(bad());
    }
    Ok(GoldEvidence {
        doc_id: doc.to_string(),
        start_byte,
        end_byte,
    })
}

/// An age (`30d`, `12h`, `90m`, `45s`) in milliseconds.
fn parse_age(s: &str) -> Result<u64, String> {
    let bad = || format!("`{s}`: expected a number with d, h, m or s, like 30d");
    let unit = match s.chars().last() {
        Some('d') => 86_400_000,
        Some('h') => 3_600_000,
        Some('m') => 60_000,
        Some('s') => 1000,
        _ => return Err(bad()),
    };
    let n: u64 = s[..s.len() - 1].parse().map_err(|_| bad())?;
    n.checked_mul(unit).ok_or_else(bad)
}

fn parse_cap(s: &str) -> Result<Cap, String> {
    if s == "off" {
        return Ok(Cap(None));
    }
    let bad = || format!("`{s}`: expected bytes with an optional K, M or G suffix, or off");
    let (digits, unit) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M') => (&s[..s.len() - 1], 1 << 20),
        Some('G') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    n.checked_mul(unit).map(|b| Cap(Some(b))).ok_or_else(bad)
}

/// A date or RFC 3339 time, in Unix milliseconds.
fn parse_time(s: &str) -> Result<u64, String> {
    folio::filter::parse_date(s)
        .and_then(|ms| u64::try_from(ms).ok())
        .ok_or_else(|| format!("`{s}`: expected YYYY-MM-DD or an RFC 3339 time"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_caps_and_gold_parse() {
        assert_eq!(parse_age("30d"), Ok(30 * 86_400_000));
        assert_eq!(parse_age("90m"), Ok(5_400_000));
        assert!(parse_age("30").is_err() && parse_age("d").is_err());
        assert_eq!(parse_cap("512K").map(|c| c.0), Ok(Some(524_288)));
        assert_eq!(parse_cap("off").map(|c| c.0), Ok(None));
        let g = parse_gold("a:b:10-20").unwrap();
        assert_eq!(
            (g.doc_id.as_str(), g.start_byte, g.end_byte),
            ("a:b", 10, 20)
        );
        assert!(parse_gold("a:20-10").is_err());
    }
}
