//! Results: records in the kit's `results.json` shape (peer `folio`), and the Markdown
//! tables `ann_peers.py` writes, laid out the same way.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use super::config::AnnConfig;
use super::dataset::Dataset;
use folio::index::Metric;

/// The peer name in records and tables.
pub const PEER: &str = "folio";

/// Recall targets of the summary tables (as in `ann_peers.py`).
const TARGETS: [f64; 2] = [0.95, 0.99];

/// What building the index cost. `seconds` is the whole ingest (documents, graph, commit),
/// the figure comparable with a peer's build.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BuildRecord {
    /// Threads that built the graph.
    pub threads: usize,
    /// Seconds the whole ingest took.
    pub seconds: f64,
    /// The graph part of `seconds` (`None` if the store reported no graph stage).
    pub graph_seconds: Option<f64>,
    /// The part of `seconds` spent giving the file back its free space
    /// ([`folio::store::Store::compact_file`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compact_seconds: Option<f64>,
    /// Vectors ingested.
    pub n: usize,
    /// The store file's size.
    pub index_bytes: u64,
    /// Resident memory the build added, MB (Linux only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss_delta_mb: Option<f64>,
    /// The most resident memory the build added at any moment, MB (Linux only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss_peak_delta_mb: Option<f64>,
    /// Opening the built file again: integrity check, vectors, graph decode.
    pub reopen_seconds: f64,
    /// Resident memory the reopen added, MB (Linux only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reopen_rss_delta_mb: Option<f64>,
    /// The most resident memory the reopen added at any moment, MB (Linux only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reopen_rss_peak_delta_mb: Option<f64>,
    /// Resident memory over the reopen and every search of the sweep, MB (Linux only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub search_rss_delta_mb: Option<f64>,
    /// The 1-minute load average before the build (Linux only).
    pub load1: Option<f64>,
}

/// One point of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchRecord {
    /// The filter searched.
    pub filter: String,
    /// The beam width (`None` in records of peers without one).
    pub ef: Option<usize>,
    /// Recall@k against the filter's ground truth.
    pub recall: f64,
    /// Queries per second.
    pub qps: f64,
    /// Queries run.
    pub n_queries: usize,
    /// Seconds they took.
    pub seconds: f64,
    /// Fraction of queries answered with fewer than k ids.
    pub short_frac: f64,
    /// Ids returned per query, on average.
    pub mean_returned: f64,
    /// Visible children.
    pub visible: u64,
    /// How many queries the planner answered by each path.
    pub paths: BTreeMap<String, usize>,
    /// What a query of each path computed, on average (counts, independent of load).
    pub work: BTreeMap<String, PathWork>,
    /// The 1-minute load average as the point started (Linux only).
    pub load1: Option<f64>,
}

/// What a query computed, on average over the queries of one path.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PathWork {
    /// Vector comparisons: walk codes, f32 re-scores and scanned rows together.
    pub distances: f64,
    /// Of `distances`, the walk's candidates re-scored on f32 rows.
    pub rescored: f64,
    /// Link lists the layer-0 walk read.
    pub lists: f64,
}

/// What computing a filter's visible set costs a query (principal bitmaps cached).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VisibleCost {
    /// The filter.
    pub filter: String,
    /// Microseconds to compute the set for its principal.
    pub principals_us: f64,
    /// The same set through `Access::Unrestricted` (filter `none` only).
    pub unrestricted_us: Option<f64>,
}

/// The settings and dataset a run describes (the `meta` of `results.json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunMeta {
    /// The dataset's name.
    pub dataset: String,
    /// Base vectors.
    pub n: usize,
    /// Their dimension.
    pub dim: usize,
    /// The metric, as the kit names it (`l2`, `ip`).
    pub metric: &'static str,
    /// Queries in the dataset.
    pub queries: usize,
    /// Neighbours per query.
    pub k: usize,
    /// Graph links per node.
    pub m: u32,
    /// Graph construction candidates.
    pub ef_construction: u32,
    /// Each filter's visible set size.
    pub filters: Vec<FilterSize>,
    /// Beam widths swept.
    pub ef_list: Vec<usize>,
    /// Seconds of search per point, at most (after the minimum queries).
    pub time_budget: f64,
    /// Recall at which a filter's sweep stops.
    pub stop_recall: f64,
    /// Versions of the software and machine (folio, cores, cpu).
    pub versions: BTreeMap<&'static str, String>,
}

/// A filter and how many base vectors it leaves visible.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FilterSize {
    /// The filter's name.
    pub name: String,
    /// Visible base vectors.
    pub size: usize,
}

impl RunMeta {
    pub(crate) fn new(dataset: &Dataset, config: &AnnConfig) -> Self {
        let n = dataset.base_rows;
        let mut versions = BTreeMap::from([("folio", env!("CARGO_PKG_VERSION").to_string())]);
        if let Ok(cores) = std::thread::available_parallelism() {
            versions.insert("cores", cores.to_string());
        }
        if let Some(cpu) = cpu_model() {
            versions.insert("cpu", cpu);
        }
        RunMeta {
            dataset: dataset.name.clone(),
            n,
            dim: dataset.base.dim(),
            metric: match dataset.metric {
                Metric::L2 => "l2",
                Metric::Dot | Metric::Cosine => "ip",
            },
            queries: dataset.queries.rows(),
            k: config.k,
            m: config.m,
            ef_construction: config.ef_construction,
            filters: dataset
                .filters
                .iter()
                .map(|f| FilterSize {
                    name: f.name.clone(),
                    size: f.size(n),
                })
                .collect(),
            ef_list: config.efs.clone(),
            time_budget: config.time_budget.as_secs_f64(),
            stop_recall: config.stop_recall,
            versions,
        }
    }
}

/// Everything a run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnRun {
    /// The settings and dataset.
    pub meta: RunMeta,
    /// `None` when an existing store was searched.
    pub build: Option<BuildRecord>,
    /// Every point of every sweep.
    pub searches: Vec<SearchRecord>,
    /// What each filter's visible set costs.
    pub visible: Vec<VisibleCost>,
}

/// A record as `results.json` holds it: its type and peer, then its fields.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Record<'a> {
    Build(Peer<&'a BuildRecord>),
    Search(Peer<&'a SearchRecord>),
}

#[derive(Serialize)]
struct Peer<T> {
    peer: &'static str,
    #[serde(flatten)]
    record: T,
}

impl AnnRun {
    /// `{"meta": ..., "records": [...]}`, the document `ann_peers.py --merge` reads.
    pub fn to_json(&self) -> Result<serde_json::Value, serde_json::Error> {
        let builds = self
            .build
            .iter()
            .map(|record| Record::Build(Peer { peer: PEER, record }));
        let searches = self
            .searches
            .iter()
            .map(|record| Record::Search(Peer { peer: PEER, record }));
        let records: Vec<Record<'_>> = builds.chain(searches).collect();
        Ok(serde_json::json!({
            "meta": serde_json::to_value(&self.meta)?,
            "records": serde_json::to_value(records)?,
            "visible_cost": serde_json::to_value(&self.visible)?,
        }))
    }

    /// The tables of `ann_peers.py` (build, best QPS at recall >= 0.95 and 0.99, sweeps),
    /// then what only folio reports: ingest parts, reopen, file size, visible-set cost and
    /// planner paths.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let m = &self.meta;
        let _ = writeln!(
            out,
            "# ANN anchors: {} ({} x {}, metric {}, k={}, M={}, ef_construction={})\n",
            m.dataset, m.n, m.dim, m.metric, m.k, m.m, m.ef_construction
        );
        let versions: Vec<String> = m
            .versions
            .iter()
            .filter(|(name, _)| **name != "cpu")
            .map(|(name, v)| format!("{name} {v}"))
            .collect();
        let cpu = m.versions.get("cpu").map(|c| format!("; CPU: {c}"));
        let _ = writeln!(
            out,
            "Versions: {}{}\n",
            versions.join(", "),
            cpu.unwrap_or_default()
        );
        if let Some(build) = &self.build {
            build_table(&mut out, build);
        }
        for target in TARGETS {
            self.best_table(&mut out, target);
        }
        self.sweeps(&mut out);
        self.details(&mut out);
        out
    }

    /// The filters that have points, in the order of the meta.
    fn filters(&self) -> impl Iterator<Item = &FilterSize> {
        self.meta
            .filters
            .iter()
            .filter(|f| self.searches.iter().any(|s| s.filter == f.name))
    }

    fn points<'s>(&'s self, filter: &'s str) -> impl Iterator<Item = &'s SearchRecord> {
        self.searches.iter().filter(move |s| s.filter == filter)
    }

    fn best_table(&self, out: &mut String, target: f64) {
        let _ = writeln!(
            out,
            "## Best single-thread QPS at recall@{} >= {target}\n\n\
             Cell: QPS (ef); '-' = never reached, with the best recall seen in brackets; \
             '*' = fewer than all queries ran (time budget).\n",
            self.meta.k
        );
        let heads: Vec<String> = self
            .filters()
            .map(|f| format!("{} ({})", f.name, f.size))
            .collect();
        let _ = writeln!(out, "| peer | {} |", heads.join(" | "));
        let _ = writeln!(out, "|---|{}", "---:|".repeat(heads.len()));
        let cells: Vec<String> = self
            .filters()
            .map(|f| self.best_cell(&f.name, target))
            .collect();
        let _ = writeln!(out, "| {PEER} | {} |\n", cells.join(" | "));
    }

    fn best_cell(&self, filter: &str, target: f64) -> String {
        let best = self
            .points(filter)
            .filter(|p| p.recall >= target)
            .max_by(|a, b| a.qps.total_cmp(&b.qps));
        match best {
            Some(p) => format!(
                "{}{}{}",
                fmt_qps(p.qps),
                p.ef.map(|ef| format!(" ({ef})")).unwrap_or_default(),
                self.star(p)
            ),
            None => {
                let recall = self.points(filter).map(|p| p.recall).fold(0.0, f64::max);
                format!("- [{recall:.3}]")
            }
        }
    }

    fn star(&self, point: &SearchRecord) -> &'static str {
        if point.n_queries < self.meta.queries {
            "*"
        } else {
            ""
        }
    }

    fn sweeps(&self, out: &mut String) {
        out.push_str(
            "## Sweeps\n\nPer point: ef: recall@k / QPS [short = fraction of queries that got fewer than k ids]\n\n",
        );
        for filter in self.filters() {
            let parts: Vec<String> = self
                .points(&filter.name)
                .map(|p| {
                    let mut s = p.ef.map(|ef| format!("{ef}: ")).unwrap_or_default();
                    let _ = write!(s, "{:.3}/{}", p.recall, fmt_qps(p.qps));
                    if p.short_frac > 0.0 {
                        let _ = write!(s, " [short {:.2}]", p.short_frac);
                    }
                    if p.n_queries < self.meta.queries {
                        let _ = write!(s, " (n={})", p.n_queries);
                    }
                    s
                })
                .collect();
            let _ = writeln!(out, "- **{PEER} / {}**: {}", filter.name, parts.join(" · "));
        }
        out.push('\n');
    }

    fn details(&self, out: &mut String) {
        out.push_str("## folio details\n\n");
        if let Some(build) = &self.build {
            build_details(out, build, &self.meta);
        }
        for cost in &self.visible {
            let unrestricted = cost
                .unrestricted_us
                .map(|us| format!(" (Access::Unrestricted: {us:.1} µs)"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "- visible set of {} per query: {:.1} µs{unrestricted}",
                cost.filter, cost.principals_us
            );
        }
        out.push_str("\nPlanner paths per point (queries per path):\n\n");
        for filter in self.filters() {
            let parts: Vec<String> = self
                .points(&filter.name)
                .map(|p| {
                    let paths: Vec<String> = p
                        .paths
                        .iter()
                        .map(|(path, n)| format!("{path} {n}"))
                        .collect();
                    format!("{}: {}", p.ef.unwrap_or_default(), paths.join(" + "))
                })
                .collect();
            let _ = writeln!(out, "- **{}**: {}", filter.name, parts.join(" · "));
        }
    }
}

fn build_table(out: &mut String, b: &BuildRecord) {
    let _ = writeln!(
        out,
        "## Build\n\n| peer | threads | seconds | vectors/s | index MB | RSS delta MB | load1 |\n\
         |---|---:|---:|---:|---:|---:|---:|"
    );
    let _ = writeln!(
        out,
        "| {PEER} | {} | {:.1} | {} | {:.0} | {} | {} |\n",
        b.threads,
        b.seconds,
        fmt_qps(b.n as f64 / b.seconds),
        mib(b.index_bytes),
        b.rss_delta_mb.map_or("nan".into(), |mb| format!("{mb:.0}")),
        b.load1.map_or("None".into(), |l| l.to_string()),
    );
}

fn build_details(out: &mut String, b: &BuildRecord, meta: &RunMeta) {
    let parts: Vec<String> = [
        b.graph_seconds.map(|g| format!("graph {g:.1} s")),
        b.compact_seconds
            .map(|c| format!("file compaction {c:.1} s")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let graph = if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    };
    let reference = vectors_and_links(meta);
    let _ = writeln!(
        out,
        "- ingest: {:.1} s{graph} with {} threads; reopen: {:.2} s, {:.0}x faster than the ingest",
        b.seconds,
        b.threads,
        b.reopen_seconds,
        b.seconds / b.reopen_seconds.max(f64::MIN_POSITIVE)
    );
    let _ = writeln!(
        out,
        "- file: {:.1} MiB = {:.2}x the raw vectors + links ({:.1} MiB: n x (dim + 2M) x 4 bytes + upper layers)",
        mib(b.index_bytes),
        b.index_bytes as f64 / reference,
        reference / f64::from(1 << 20)
    );
    let rss = |mb: Option<f64>| mb.map_or("unknown".into(), |mb| format!("{mb:+.0} MiB"));
    let _ = writeln!(
        out,
        "- resident memory: {} over the build (peak {}), {} on reopen (peak {}), {} after the searches",
        rss(b.rss_delta_mb),
        rss(b.rss_peak_delta_mb),
        rss(b.reopen_rss_delta_mb),
        rss(b.reopen_rss_peak_delta_mb),
        rss(b.search_rss_delta_mb)
    );
}

/// The bytes any HNSW index of the dataset needs: the f32 vectors, `2M` layer-0 links per
/// node, and `M` links per upper-layer list (a node has `1 / (M - 1)` of them on average).
fn vectors_and_links(meta: &RunMeta) -> f64 {
    let (n, dim, m) = (meta.n as f64, meta.dim as f64, f64::from(meta.m));
    4.0 * n * (dim + 2.0 * m + m / (m - 1.0))
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

/// `ann_peers.py`'s number format: thousands separators from 100 up, else one decimal.
fn fmt_qps(x: f64) -> String {
    if x < 100.0 {
        return format!("{x:.1}");
    }
    let digits = format!("{x:.0}");
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The one-minute load average (Linux), recorded beside timings on a shared CPU.
pub(crate) fn load1() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("model name"))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::fmt_qps;

    #[test]
    fn numbers_read_like_the_kits() {
        assert_eq!(fmt_qps(14_465.4), "14,465");
        assert_eq!(fmt_qps(993.0), "993");
        assert_eq!(fmt_qps(1_234_567.0), "1,234,567");
        assert_eq!(fmt_qps(99.94), "99.9");
    }
}
