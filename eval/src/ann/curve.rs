//! The scale curve (`folio bench curve`): point files of `scripts/bench/scale_curve.sh` (one per
//! dataset and size, holding every round's records and the builds) turned into the median
//! QPS at a recall target per filter and engine, one table per size, and the series the
//! plot draws.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::AnnError;
use super::report::PEER;

/// The engines of the curve, in the order of the tables and the plot's legend.
pub const ENGINES: [&str; 4] = [PEER, "hnswlib", "faiss", "exact"];

/// One dataset at one size, as the script writes it.
#[derive(Debug, Clone, Deserialize)]
pub struct PointFile {
    /// The dataset (`clustered-128`, `normalized-384`).
    pub dataset: String,
    /// Base vectors.
    pub n: usize,
    /// What each build cost.
    #[serde(default)]
    pub builds: Vec<BuildLine>,
    /// Every round's records (`results.json` shape, any type; only searches count).
    pub rounds: Vec<Vec<RoundRecord>>,
}

/// A record of a round; build records and peers outside [`ENGINES`] are skipped.
#[derive(Debug, Clone, Deserialize)]
pub struct RoundRecord {
    /// `search` or `build`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The engine.
    pub peer: String,
    /// The filter searched.
    pub filter: Option<String>,
    /// Recall@k.
    pub recall: Option<f64>,
    /// Queries per second.
    pub qps: Option<f64>,
}

/// A build: its time, file size and memory, as far as the measuring tool reports them.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct BuildLine {
    /// The engine.
    pub peer: String,
    /// The tool that measured it.
    pub by: Option<String>,
    /// Build threads.
    pub threads: Option<usize>,
    /// Seconds the build took.
    pub seconds: Option<f64>,
    /// The index or store file.
    pub index_bytes: Option<u64>,
    /// Resident memory the build added, MB.
    pub rss_delta_mb: Option<f64>,
    /// The most it added at any moment, MB.
    pub rss_peak_delta_mb: Option<f64>,
    /// Resident memory a reopen added, MB.
    pub reopen_rss_delta_mb: Option<f64>,
    /// The most a reopen added at any moment, MB.
    pub reopen_rss_peak_delta_mb: Option<f64>,
}

/// One filter of one point: medians over the rounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CurveRow {
    /// The filter.
    pub filter: String,
    /// Per engine, the median over rounds of its QPS at the target (engines that reached
    /// it in no round are absent).
    pub qps: BTreeMap<String, f64>,
    /// folio / the best other engine of the same round, per round (rounds where both reached
    /// the target).
    pub folio_vs_best: Vec<f64>,
    /// folio / hnswlib of the same round, per round.
    pub folio_vs_hnswlib: Vec<f64>,
}

/// One dataset at one size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CurvePoint {
    /// The dataset.
    pub dataset: String,
    /// Base vectors.
    pub n: usize,
    /// Rounds measured.
    pub rounds: usize,
    /// One row per filter, in the order the records name them.
    pub rows: Vec<CurveRow>,
    /// The builds.
    pub builds: Vec<BuildLine>,
}

/// The whole curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Curve {
    /// The recall@k every QPS is taken at.
    pub target: f64,
    /// Sorted by dataset, then size.
    pub points: Vec<CurvePoint>,
}

/// The QPS of a sweep at a recall target, the kit's rule (`ann_ratios.py`): the best QPS
/// among the points at recall >= `target` (on a sweep whose recall rises with ef, the first
/// point above the target); `None` if no point reached it.
pub fn qps_at(points: impl IntoIterator<Item = (f64, f64)>, target: f64) -> Option<f64> {
    points
        .into_iter()
        .filter(|&(recall, _)| recall >= target)
        .map(|(_, qps)| qps)
        .max_by(f64::total_cmp)
}

/// The median (the mean of the middle two for an even count); `None` when empty.
pub fn median(values: Vec<f64>) -> Option<f64> {
    crate::metrics::percentile(&values, 50.0)
}

impl CurvePoint {
    /// The medians of a point file's rounds at `target`.
    pub fn new(file: PointFile, target: f64) -> Self {
        let mut filters: Vec<String> = Vec::new();
        for r in file.rounds.iter().flatten() {
            if let (true, Some(f)) = (r.kind == "search", &r.filter) {
                if !filters.contains(f) {
                    filters.push(f.clone());
                }
            }
        }
        let rows = filters
            .into_iter()
            .map(|filter| row(&file.rounds, filter, target))
            .collect();
        CurvePoint {
            dataset: file.dataset,
            n: file.n,
            rounds: file.rounds.len(),
            rows,
            builds: file.builds,
        }
    }
}

fn row(rounds: &[Vec<RoundRecord>], filter: String, target: f64) -> CurveRow {
    // Per round, each engine's QPS at the target.
    let per_round: Vec<BTreeMap<&str, f64>> = rounds
        .iter()
        .map(|records| {
            ENGINES
                .iter()
                .filter_map(|&engine| {
                    let points = records.iter().filter_map(|r| {
                        let hit = r.kind == "search"
                            && r.peer == engine
                            && r.filter.as_deref() == Some(filter.as_str());
                        hit.then_some((r.recall?, r.qps?))
                    });
                    qps_at(points, target).map(|q| (engine, q))
                })
                .collect()
        })
        .collect();
    let qps = ENGINES
        .iter()
        .filter_map(|&engine| {
            let values = per_round.iter().filter_map(|r| r.get(engine).copied());
            median(values.collect()).map(|m| (engine.to_string(), m))
        })
        .collect();
    let ratio = |round: &BTreeMap<&str, f64>, other: Option<f64>| {
        Some(round.get(PEER)? / other.filter(|q| *q > 0.0)?)
    };
    let folio_vs_best = per_round
        .iter()
        .filter_map(|r| {
            let best = r
                .iter()
                .filter(|(engine, _)| **engine != PEER)
                .map(|(_, q)| *q)
                .max_by(f64::total_cmp);
            ratio(r, best)
        })
        .collect();
    let folio_vs_hnswlib = per_round
        .iter()
        .filter_map(|r| ratio(r, r.get("hnswlib").copied()))
        .collect();
    CurveRow {
        filter,
        qps,
        folio_vs_best,
        folio_vs_hnswlib,
    }
}

/// Reads the point files and takes their medians at `target`.
pub fn load(paths: &[PathBuf], target: f64) -> Result<Curve, AnnError> {
    let mut points = paths
        .iter()
        .map(|path| read(path).map(|file| CurvePoint::new(file, target)))
        .collect::<Result<Vec<_>, _>>()?;
    points.sort_by(|a, b| (&a.dataset, a.n).cmp(&(&b.dataset, b.n)));
    Ok(Curve { target, points })
}

fn read(path: &Path) -> Result<PointFile, AnnError> {
    let text = std::fs::read_to_string(path).map_err(|source| AnnError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| AnnError::PointFile {
        path: path.to_path_buf(),
        source,
    })
}

impl Curve {
    /// The filters of every point, in first-seen order.
    pub fn filters(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for row in self.points.iter().flat_map(|p| &p.rows) {
            if !out.contains(&row.filter.as_str()) {
                out.push(&row.filter);
            }
        }
        out
    }

    /// The datasets, in order.
    pub fn datasets(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self.points.iter().map(|p| p.dataset.as_str()).collect();
        out.dedup();
        out
    }

    /// (size, median QPS) of one engine on one dataset and filter, by size.
    pub fn series(&self, dataset: &str, filter: &str, engine: &str) -> Vec<(f64, f64)> {
        self.points
            .iter()
            .filter(|p| p.dataset == dataset)
            .filter_map(|p| {
                let row = p.rows.iter().find(|r| r.filter == filter)?;
                Some((p.n as f64, *row.qps.get(engine)?))
            })
            .collect()
    }

    /// One QPS table and one build table per point.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        for p in &self.points {
            let _ = writeln!(
                out,
                "#### {}, {} vectors ({} round{})\n\n\
                 Median QPS at recall@10 >= {}; folio / best and folio / hnswlib: median of the \
                 per-round ratios [rounds]; '-' = never reached.\n",
                p.dataset,
                thousands(p.n as f64),
                p.rounds,
                if p.rounds == 1 { "" } else { "s" },
                self.target
            );
            let _ = writeln!(
                out,
                "| filter | {} | folio / best | folio / hnswlib |",
                ENGINES.join(" | ")
            );
            let _ = writeln!(out, "|---|{}---:|---:|", "---:|".repeat(ENGINES.len()));
            for row in &p.rows {
                let cells: Vec<String> = ENGINES
                    .iter()
                    .map(|e| row.qps.get(*e).map_or("-".into(), |q| thousands(*q)))
                    .collect();
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} |",
                    row.filter,
                    cells.join(" | "),
                    ratio_cell(&row.folio_vs_best),
                    ratio_cell(&row.folio_vs_hnswlib)
                );
            }
            let _ = writeln!(
                out,
                "\n| build | by | threads | seconds | file MiB | RSS build / peak MiB | RSS reopen / peak MiB |\n\
                 |---|---|---:|---:|---:|---:|---:|"
            );
            for b in &p.builds {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} / {} | {} / {} |",
                    b.peer,
                    b.by.as_deref().unwrap_or("-"),
                    b.threads.map_or("-".into(), |t| t.to_string()),
                    opt(b.seconds, 1),
                    opt(b.index_bytes.map(|x| x as f64 / 1048576.0), 0),
                    opt(b.rss_delta_mb, 0),
                    opt(b.rss_peak_delta_mb, 0),
                    opt(b.reopen_rss_delta_mb, 0),
                    opt(b.reopen_rss_peak_delta_mb, 0)
                );
            }
            out.push('\n');
        }
        out
    }
}

fn ratio_cell(ratios: &[f64]) -> String {
    match median(ratios.to_vec()) {
        None => "-".into(),
        Some(m) => {
            let each: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
            format!("{m:.2} [{}]", each.join(" "))
        }
    }
}

fn opt(value: Option<f64>, decimals: usize) -> String {
    value.map_or("-".into(), |v| format!("{v:.decimals$}"))
}

/// `12,345` (rounded to a whole number).
fn thousands(x: f64) -> String {
    let digits = format!("{:.0}", x.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qps_at_takes_the_best_point_at_or_above_the_target() {
        let sweep = [
            (0.90, 5000.0),
            (0.95, 3000.0),
            (0.97, 2000.0),
            (0.99, 900.0),
        ];
        // 0.95 itself counts; the faster points below it do not.
        assert_eq!(qps_at(sweep, 0.95), Some(3000.0));
        assert_eq!(qps_at(sweep, 0.96), Some(2000.0));
        assert_eq!(qps_at(sweep, 0.995), None);
        // A sweep whose QPS is not monotone: the best qualifying point wins.
        assert_eq!(qps_at([(0.96, 100.0), (0.98, 150.0)], 0.95), Some(150.0));
        assert_eq!(qps_at([], 0.95), None);
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
    }

    fn point_file() -> PointFile {
        let search = |peer: &str, filter: &str, recall: f64, qps: f64| {
            serde_json::json!({"type": "search", "peer": peer, "filter": filter,
                               "recall": recall, "qps": qps, "ef": 64})
        };
        let round = |folio: f64, hnswlib: f64, exact: f64| {
            serde_json::json!([
                {"type": "build", "peer": "hnswlib", "seconds": 9.0},
                search("folio", "none", 0.90, folio * 2.0),
                search("folio", "none", 0.96, folio),
                search("hnswlib", "none", 0.97, hnswlib),
                search("exact", "none", 1.0, exact),
                search("faiss", "none", 0.5, 1e9),
                search("usearch", "none", 1.0, 1e9),
                search("exact", "random_0.01", 1.0, 40.0),
            ])
        };
        serde_json::from_value(serde_json::json!({
            "dataset": "clustered-128", "n": 1000,
            "builds": [{"peer": "folio", "by": "folio bench ann", "seconds": 1.5, "threads": 2}],
            "rounds": [round(100.0, 50.0, 10.0), round(300.0, 100.0, 400.0), round(200.0, 80.0, 20.0)]
        }))
        .unwrap()
    }

    #[test]
    fn a_point_takes_the_median_of_rounds_and_ratios_of_the_same_round() {
        let point = CurvePoint::new(point_file(), 0.95);
        assert_eq!(point.rounds, 3);
        let none = &point.rows[0];
        assert_eq!(none.filter, "none");
        // Medians of (100, 300, 200), (50, 100, 80), (10, 400, 20); faiss never reached 0.95
        // and usearch is not an engine of the curve.
        let expected: BTreeMap<String, f64> =
            [("folio", 200.0), ("hnswlib", 80.0), ("exact", 20.0)]
                .into_iter()
                .map(|(e, q)| (e.to_string(), q))
                .collect();
        assert_eq!(none.qps, expected);
        // Round 2: the exact scan (400) is the best peer, so folio / best = 300 / 400.
        assert_eq!(none.folio_vs_best, vec![2.0, 0.75, 2.5]);
        assert_eq!(none.folio_vs_hnswlib, vec![2.0, 3.0, 2.5]);
        // folio has no point on the second filter: no ratio.
        assert_eq!(point.rows[1].filter, "random_0.01");
        assert!(point.rows[1].folio_vs_best.is_empty());
    }

    #[test]
    fn the_tables_and_series_follow_the_points() {
        let mut small = point_file();
        small.n = 500;
        let curve = Curve {
            target: 0.95,
            points: vec![
                CurvePoint::new(small, 0.95),
                CurvePoint::new(point_file(), 0.95),
            ],
        };
        assert_eq!(curve.filters(), ["none", "random_0.01"]);
        assert_eq!(curve.datasets(), ["clustered-128"]);
        assert_eq!(
            curve.series("clustered-128", "none", "folio"),
            [(500.0, 200.0), (1000.0, 200.0)]
        );
        assert!(curve.series("clustered-128", "none", "faiss").is_empty());
        let md = curve.markdown();
        assert!(md.contains("#### clustered-128, 1,000 vectors (3 rounds)"));
        assert!(md.contains(
            "| none | 200 | 80 | - | 20 | 2.00 [2.00 0.75 2.50] | 2.50 [2.00 3.00 2.50] |"
        ));
        assert!(md.contains("| folio | folio bench ann | 2 | 1.5 | - | - / - | - / - |"));
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
    }
}
