//! `folio bench ann`: the filtered-ANN benchmark on a dataset of the kit
//! (`../shared/bench/ann_data.py`), printed as `ann_peers.py` prints its peers;
//! `folio bench curve`: the scale curve over several sizes.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::output::{err, CliResult};
use crate::progress::Bar;
use folio::index::Strategy;
use folio_eval::ann::{self, AnnConfig, SearchRecord};

#[derive(Subcommand)]
pub(crate) enum BenchCommand {
    /// Filtered ANN: build the dataset's index in a store (one principal per filter), sweep
    /// ef per filter, print recall@k and single-thread QPS in the kit's tables.
    Ann(AnnArgs),
    /// The scale curve: from the point files of `scripts/bench/scale_curve.sh` (one per dataset
    /// and size), the median QPS at a recall target per filter and engine, a table per size
    /// (printed), and optionally a PNG of QPS against size and the tables as JSON.
    Curve(CurveArgs),
}

#[derive(Args)]
pub(crate) struct CurveArgs {
    /// Point files (`OUT/<dataset>-<size>.json`).
    #[arg(required = true)]
    points: Vec<PathBuf>,
    /// Recall@k each QPS is taken at.
    #[arg(long, default_value_t = 0.95)]
    target: f64,
    /// Draw QPS at the target against size, a panel per filter, to this PNG.
    #[arg(long)]
    png: Option<PathBuf>,
    /// Write the tables as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Args)]
pub(crate) struct AnnArgs {
    /// Dataset folder (meta.json, base.fvecs, query.fvecs, filters/, gt/).
    #[arg(long)]
    data: PathBuf,
    /// Write the records in the kit's results.json shape (for `ann_peers.py --merge`).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Graph breadths to sweep.
    #[arg(long, value_delimiter = ',', default_values_t = ann::DEFAULT_EFS)]
    ef: Vec<usize>,
    /// Filters to sweep (`none`, `random_0.01`, ...); all of the dataset's by default.
    #[arg(long, value_delimiter = ',')]
    filters: Vec<String>,
    /// Use only the first N queries.
    #[arg(long)]
    queries: Option<usize>,
    /// Neighbours per query (recall@k).
    #[arg(long, default_value_t = 10)]
    k: usize,
    /// Links per node (layer 0 keeps twice as many).
    #[arg(long, default_value_t = folio::index::DEFAULT_M)]
    m: u32,
    /// Candidate list size while building the graph.
    #[arg(long, default_value_t = folio::index::DEFAULT_EF_CONSTRUCTION)]
    efc: u32,
    /// Threads that build the graph.
    #[arg(long, default_value_t = 2)]
    build_threads: usize,
    /// Build a compressed index (links and 8-bit codes in memory, f32 vectors read from
    /// the file to re-score).
    #[arg(long)]
    compressed: bool,
    /// With --compressed: candidates re-scored on their f32 vectors.
    #[arg(long, default_value_t = folio::store::DEFAULT_RESCORE, requires = "compressed")]
    rescore: u32,
    /// Build the store here (a temporary file by default); it must not exist yet.
    #[arg(long)]
    store: Option<PathBuf>,
    /// Search the existing store given by --store instead of building one.
    #[arg(long, requires = "store")]
    reuse_store: bool,
    /// With --reuse-store: open it read-only, as one of many reader processes.
    #[arg(long, requires = "reuse_store")]
    read_only: bool,
    /// After the sweep, print `holding` on stderr and wait for a line (or the end) on
    /// stdin before exiting, so a driver can measure the process's memory.
    #[arg(long)]
    hold: bool,
    /// Seconds per point before it stops early (once --min-queries ran).
    #[arg(long, default_value_t = 3.0)]
    time_budget: f64,
    /// Queries every point runs before --time-budget may stop it.
    #[arg(long, default_value_t = 100)]
    min_queries: usize,
    /// Stop a filter's sweep once recall reaches this.
    #[arg(long, default_value_t = 0.999)]
    stop_recall: f64,
    /// Force one path for every query, to compare paths: auto (the planner), exact,
    /// graph (through hidden nodes) or twohop.
    #[arg(long, default_value = "auto", value_parser = parse_strategy)]
    strategy: Strategy,
}

fn parse_strategy(s: &str) -> Result<Strategy, String> {
    match s {
        "auto" => Ok(Strategy::Auto),
        "exact" => Ok(Strategy::Exact),
        "graph" => Ok(Strategy::Graph),
        "twohop" => Ok(Strategy::GraphTwoHop),
        _ => Err(format!("{s}: expected auto, exact, graph or twohop")),
    }
}

pub(crate) fn run(command: BenchCommand) -> CliResult {
    match command {
        BenchCommand::Ann(args) => ann_bench(args),
        BenchCommand::Curve(args) => curve(args),
    }
}

fn curve(args: CurveArgs) -> CliResult {
    let curve = ann::curve::load(&args.points, args.target).map_err(err)?;
    print!("{}", curve.markdown());
    if let Some(path) = &args.png {
        folio_eval::plot::write_curve_png(&curve, path).map_err(err)?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &args.json {
        write_json(path, &serde_json::to_value(&curve).map_err(err)?)?;
    }
    Ok(())
}

fn write_json(path: &std::path::Path, value: &serde_json::Value) -> CliResult {
    let text = serde_json::to_string_pretty(value).map_err(err)?;
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

fn ann_bench(args: AnnArgs) -> CliResult {
    let (json, hold) = (args.json.clone(), args.hold);
    let config = config(args)?;
    let bar = Bar::new();
    let mut then = || {
        if hold {
            // The store stays open (its segments loaded) until the driver lets go.
            eprintln!("holding");
            let mut line = String::new();
            // End of input lets go as well as a line.
            let _ = std::io::stdin().read_line(&mut line);
        }
    };
    let on_point = &mut |point: &SearchRecord| {
        bar.finish();
        eprintln!("{}", point_line(point));
    };
    let run = ann::run_then(&config, &bar, on_point, &mut then).map_err(err)?;
    bar.finish();
    print!("{}", run.markdown());
    if let Some(path) = json {
        write_json(&path, &run.to_json().map_err(err)?)?;
    }
    Ok(())
}

fn config(args: AnnArgs) -> Result<AnnConfig, String> {
    let time_budget = Duration::try_from_secs_f64(args.time_budget)
        .map_err(|_| format!("--time-budget {}: expected seconds >= 0", args.time_budget))?;
    Ok(AnnConfig {
        store: args.store,
        reuse_store: args.reuse_store,
        read_only: args.read_only,
        shared_segments: crate::common::SHARED_SEGMENTS.get().copied().flatten(),
        filters: (!args.filters.is_empty() && args.filters != ["all"]).then_some(args.filters),
        efs: args.ef,
        queries: args.queries,
        k: args.k,
        m: args.m,
        ef_construction: args.efc,
        build_threads: args.build_threads,
        vectors: if args.compressed {
            folio::store::VectorStorage::Compressed {
                rescore: args.rescore,
            }
        } else {
            folio::store::VectorStorage::Resident
        },
        time_budget,
        min_queries: args.min_queries,
        stop_recall: args.stop_recall,
        strategy: args.strategy,
        ..AnnConfig::new(args.data)
    })
}

/// A progress line per measured point, as `ann_peers.py` prints them.
fn point_line(p: &SearchRecord) -> String {
    let paths: Vec<String> = p
        .paths
        .iter()
        .map(|(path, n)| match p.work.get(path) {
            Some(w) => format!(
                "{path} {n} ({:.0} distances, {:.0} re-scored, {:.0} lists)",
                w.distances, w.rescored, w.lists
            ),
            None => format!("{path} {n}"),
        })
        .collect();
    format!(
        "[{}] {:<18} ef={:>4} recall={:.4} qps={:>9.1} n={} short={:.2} paths: {}",
        ann::PEER,
        p.filter,
        p.ef.unwrap_or_default(),
        p.recall,
        p.qps,
        p.n_queries,
        p.short_frac,
        paths.join(" + ")
    )
}
