//! `folio milvus COMMAND`: searching published versions through folio, and keeping Milvus's
//! aliases and rows in step with the store (the `folio` command runs this program for
//! `milvus`, found beside its own executable, then on PATH).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use clap::{Parser, Subcommand};
use folio::embed::EmbedderSpec;
use folio::filter::Filter;
use folio::query::Expand;
use folio::{SearchRequest, Store};
use folio_milvus::{
    follow_status, DrainReport, Follower, Remote, Searcher, Short, DEFAULT_BATCH, DEFAULT_PREFIX,
};

/// Search published versions through folio; follow folio's aliases, ACL changes and deletes
/// in Milvus.
#[derive(Parser)]
#[command(name = "folio milvus", version)]
struct Args {
    #[command(subcommand)]
    command: Command,
    /// The Milvus server, e.g. http://127.0.0.1:19530.
    #[arg(
        long,
        value_name = "URI",
        global = true,
        default_value = "http://127.0.0.1:19530"
    )]
    milvus: String,
    /// Collection and alias names start with this (as given to `folio publish`).
    #[arg(long = "collection", value_name = "PREFIX", global = true, default_value = DEFAULT_PREFIX)]
    prefix: String,
}

#[derive(Subcommand)]
enum Command {
    /// Search through Milvus: folio resolves the version, Milvus ranks its children as the
    /// caller may see them, folio checks them and returns the same answer as `folio search`.
    /// Without STORE, a search node: the catalog, children and documents published to
    /// Milvus are all it reads (`--index` names what to search).
    Search {
        /// [STORE] QUERY: the store file (optional), and what to look for, in words.
        #[arg(value_name = "STORE", num_args = 1..=2, required = true)]
        words: Vec<String>,
        /// The query embedder (hash[:DIM], a named model, bert:DIR, …), which must be the
        /// one the index was built with. Without it, the index's own when folio can rebuild
        /// it from its name (the built-in hash embedder).
        #[arg(long, value_name = "SPEC")]
        embedder: Option<String>,
        /// What to return around matching children: parent, section, or window:N.
        #[arg(long, value_name = "UNIT", default_value = "parent")]
        expand: String,
        /// Search as this principal (repeatable). Without any, only public documents are seen.
        #[arg(long = "as", value_name = "PRINCIPAL")]
        principals: Vec<String>,
        /// Reading units to return.
        #[arg(long, default_value_t = folio::query::DEFAULT_K)]
        k: usize,
        /// Token budget for the returned texts.
        #[arg(long)]
        budget: Option<usize>,
        /// Index to search: NAME, NAME@VERSION, NAME@TAG or an alias (`milvus:NAME` too).
        #[arg(long)]
        index: Option<String>,
        /// Only chunks this metadata filter matches (folio's filter language, as `folio
        /// search --where`), pushed down to Milvus where it can evaluate it exactly.
        #[arg(long = "where", value_name = "FILTER")]
        filter: Option<String>,
        /// Record the search in the store's request log (target `milvus:INDEX`).
        #[arg(long)]
        log: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Point a folio alias at INDEX@VERSION and its Milvus alias at that version's
    /// collection, refused unless the collection is completely published.
    Alias {
        /// The store file.
        store: PathBuf,
        /// The alias.
        alias: String,
        /// INDEX@VERSION.
        target: String,
    },
    /// Roll a folio alias back to VERSION and move its Milvus alias, refused unless the
    /// version's collection is completely published.
    Rollback {
        /// The store file.
        store: PathBuf,
        /// The alias.
        alias: String,
        /// The version.
        version: u64,
    },
    /// Bring every published collection up to the store: rows of deleted documents
    /// deleted, rows whose document's ACL changed upserted; then every single-version alias
    /// mirrored.
    Sync {
        /// The store file.
        store: PathBuf,
        /// Rows per upsert.
        #[arg(long, default_value_t = DEFAULT_BATCH)]
        batch: usize,
    },
    /// Apply the store's outbox to Milvus as commits add to it (ACL changes, deletes, alias
    /// moves of published indexes), acknowledging each change once Milvus has applied it.
    /// Runs until killed; keeps the store open for writing without locking it while idle.
    Follow {
        /// The store file.
        store: PathBuf,
        /// Drain what is pending once, then exit.
        #[arg(long)]
        once: bool,
        /// Time between two drains: `500ms`, `2s`, `1m`, or seconds.
        #[arg(long, value_name = "D", default_value = "1s", value_parser = parse_duration)]
        interval: Duration,
        /// Print each drain's report as a line of JSON.
        #[arg(long)]
        json: bool,
    },
    /// The published indexes, the outbox's pending entries by kind, and the lag (the age of
    /// the oldest). Reads the store only: no server needed.
    Status {
        /// The store file.
        store: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `500ms`, `2s`, `1m` or a number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = match text.find(|c: char| c.is_ascii_alphabetic()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (500ms, 2s, 1m)"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        _ => return Err(format!("`{text}`: the unit is ms, s or m")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("`{text}`: {e}"))
}

/// `folio milvus status`.
fn status(path: &PathBuf, json: bool) -> Result<(), String> {
    let store = open(path, false, false)?;
    let status = follow_status(&store).map_err(|e| e.to_string())?;
    if json {
        let text = serde_json::to_string_pretty(&status).map_err(|e| e.to_string())?;
        println!("{text}");
        return Ok(());
    }
    if status.published.is_empty() {
        println!("no index is published");
    }
    for mark in &status.published {
        println!(
            "published: {} to {} (collections {}_{}_v*)",
            mark.index, mark.uri, mark.prefix, mark.index
        );
    }
    let kinds: Vec<String> = status
        .by_kind
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect();
    match status.lag_ms {
        Some(lag) => println!(
            "pending: {} ({}); oldest committed {:.1}s ago",
            status.pending,
            kinds.join(", "),
            lag as f64 / 1000.0
        ),
        None => println!("pending: 0"),
    }
    Ok(())
}

/// One line about a drain: what it applied, and what is left.
fn describe_drain(report: &DrainReport) -> String {
    let mut line = format!(
        "applied {} entries: {} rows updated, {} deleted, {} aliases moved, {} dropped; {} pending",
        report.entries,
        report.rows_updated,
        report.rows_deleted,
        report.aliases_moved,
        report.aliases_dropped,
        report.pending
    );
    if let Some(lag) = report.lag_ms {
        line.push_str(&format!(" (oldest {:.1}s ago)", lag as f64 / 1000.0));
    }
    if !report.collections_dropped.is_empty() {
        line.push_str(&format!(
            "; dropped the collections of collected versions: {}",
            report.collections_dropped.join(", ")
        ));
    }
    if !report.collections_aliased.is_empty() {
        line.push_str(&format!(
            "; kept, a Milvus alias still names them: {}",
            report.collections_aliased.join(", ")
        ));
    }
    if let Some(collection) = &report.waiting_for {
        line.push_str(&format!(
            "; waiting for the publish of `{collection}` to finish"
        ));
    }
    if !report.aliases_unpublished.is_empty() {
        line.push_str(&format!(
            "; aliases on an unpublished version, left as they were: {} (publish it, then `folio milvus sync`)",
            report.aliases_unpublished.join(", ")
        ));
    }
    line
}

fn follow(
    remote: &Remote,
    path: &PathBuf,
    once: bool,
    interval: Duration,
    json: bool,
) -> Result<(), String> {
    let store = open(path, true, false)?;
    // A call gives up after this, so a server that went away is retried with back-off.
    remote.retry_for(FOLLOW_CALL_LIMIT);
    let follower = Follower::new(&store, remote);
    let print = |report: &DrainReport| {
        if json {
            if let Ok(line) = serde_json::to_string(report) {
                println!("{line}");
            }
        } else {
            println!("{}", describe_drain(report));
        }
    };
    if once {
        let report = follower.drain_once().map_err(|e| e.to_string())?;
        print(&report);
        return Ok(());
    }
    let stop = AtomicBool::new(false);
    follower
        .run(interval, &stop, |drained| match drained {
            // Quiet while nothing happens.
            Ok(report) if report.entries > 0 || report.waiting_for.is_some() => print(report),
            Ok(_) => {}
            Err(e) => eprintln!("retrying: {e}"),
        })
        .map_err(|e| e.to_string())
}

/// How long one Milvus call of a follower may retry before the drain fails and is retried.
const FOLLOW_CALL_LIMIT: Duration = Duration::from_secs(10);

/// The store, opened for writing only when a command writes (an alias, the request log).
fn open(path: &PathBuf, write: bool, log: bool) -> Result<Store, String> {
    Store::builder()
        .read_only(!write)
        .log_requests(log)
        .open(path)
        .map_err(|e| e.to_string())
}

fn run(args: Args) -> Result<(), String> {
    if let Command::Status { store, json } = &args.command {
        return status(store, *json);
    }
    let remote = Remote::connect(&args.milvus).map_err(|e| e.to_string())?;
    let prefix = args.prefix.as_str();
    match args.command {
        Command::Search {
            words,
            embedder,
            expand,
            principals,
            k,
            budget,
            index,
            filter,
            log,
            json,
        } => {
            let (store, query) = match <[String; 2]>::try_from(words) {
                Ok([store, query]) => (Some(PathBuf::from(store)), query),
                Err(words) => (None, words.into_iter().next().unwrap_or_default()),
            };
            let embedder = embedder
                .map(|spec| {
                    let spec: EmbedderSpec =
                        spec.parse().map_err(|e| format!("--embedder: {e}"))?;
                    spec.build().map_err(|e| format!("--embedder: {e}"))
                })
                .transpose()?;
            let mut request = SearchRequest::text(query)
                .as_principals(principals)
                .k(k)
                .expand(parse_expand(&expand)?);
            if let Some(budget) = budget {
                request = request.token_budget(budget);
            }
            if let Some(index) = index {
                let index = index.strip_prefix("milvus:").unwrap_or(&index);
                request = request.target(index);
            }
            if let Some(filter) = filter {
                let filter: Filter = filter.parse().map_err(|e| format!("--where: {e}"))?;
                request = request.filter(filter);
            }
            let Some(store) = store else {
                if log {
                    return Err("--log needs STORE: a search node writes no request log".into());
                }
                let target = request.target.clone().ok_or(
                    "--index NAME is needed without STORE: a search node has no default index",
                )?;
                let mut node = Searcher::on(remote, &target).prefix(prefix);
                if let Some(embedder) = embedder {
                    node = node.with_embedder(embedder);
                }
                let (response, calls) = node.search_counted(&request).map_err(|e| e.to_string())?;
                return print_node(&response, calls.short.as_ref(), json);
            };
            let mut builder = Store::builder().read_only(!log).log_requests(log);
            if let Some(embedder) = embedder {
                builder = builder.embedder(embedder);
            }
            let store = builder.open(&store).map_err(|e| e.to_string())?;
            let (response, calls) = remote
                .search(&store, &request, prefix)
                .map_err(|e| e.to_string())?;
            if json {
                let mut value = serde_json::to_value(&response).map_err(|e| e.to_string())?;
                // Present only when there is something to say, as the response's other
                // optional fields.
                if let Some(object) = value.as_object_mut() {
                    if let Some(short) = &calls.short {
                        object.insert("short".into(), short_json(short));
                    }
                    if !calls.local_filter.is_empty() {
                        object.insert(
                            "filter_checked_locally".into(),
                            calls.local_filter.clone().into(),
                        );
                    }
                }
                let text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
                println!("{text}");
            } else {
                println!("{}@{} (through Milvus)", response.index, response.version);
                print_hits(&response);
                if !calls.local_filter.is_empty() {
                    println!(
                        "filter checked by folio alone (not pushed to Milvus): {}",
                        calls.local_filter.join("; ")
                    );
                }
                if let Some(short) = &calls.short {
                    println!("{short}");
                }
            }
        }
        Command::Alias {
            store,
            alias,
            target,
        } => {
            let (index, version) = target
                .rsplit_once('@')
                .and_then(|(i, v)| Some((i, v.parse::<u64>().ok()?)))
                .ok_or_else(|| format!("`{target}` is not INDEX@VERSION"))?;
            let store = open(&store, true, false)?;
            let report = remote
                .set_alias(&store, &alias, index, version, prefix)
                .map_err(|e| e.to_string())?;
            println!("{}", describe(&report));
        }
        Command::Rollback {
            store,
            alias,
            version,
        } => {
            let store = open(&store, true, false)?;
            let report = remote
                .rollback(&store, &alias, version, prefix)
                .map_err(|e| e.to_string())?;
            println!("{}", describe(&report));
        }
        Command::Sync { store, batch } => {
            let store = open(&store, false, false)?;
            for report in remote
                .sync(&store, prefix, batch)
                .map_err(|e| e.to_string())?
            {
                if report.gone {
                    println!(
                        "{}: {}@{} is no longer kept by the store; left as it is",
                        report.collection, report.index, report.version
                    );
                } else {
                    println!(
                        "{}: {} rows updated, {} deleted",
                        report.collection, report.updated, report.deleted
                    );
                }
            }
            for report in remote
                .sync_aliases(&store, prefix)
                .map_err(|e| e.to_string())?
            {
                println!("{}", describe(&report));
            }
        }
        Command::Follow {
            store,
            once,
            interval,
            json,
        } => follow(&remote, &store, once, interval, json)?,
        // Answered above, without a server.
        Command::Status { .. } => {}
    }
    Ok(())
}

/// A search node's answer: JSON, or the version and each unit.
fn print_node(
    response: &folio::SearchResponse,
    short: Option<&Short>,
    json: bool,
) -> Result<(), String> {
    if json {
        let mut value = serde_json::to_value(response).map_err(|e| e.to_string())?;
        if let (Some(object), Some(short)) = (value.as_object_mut(), short) {
            object.insert("short".into(), short_json(short));
        }
        let text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        println!("{}@{} (search node)", response.index, response.version);
        print_hits(response);
        if let Some(short) = short {
            println!("{short}");
        }
    }
    Ok(())
}

/// A short answer in JSON output (absent when the answer is full).
fn short_json(short: &Short) -> serde_json::Value {
    serde_json::json!({
        "reason": short.reason.name(),
        "wanted": short.wanted,
        "found": short.found,
        "visible": short.visible,
        "message": short.to_string(),
    })
}

fn print_hits(response: &folio::SearchResponse) {
    for (rank, hit) in response.results.iter().enumerate() {
        println!(
            "{}. {:.4} {} {}",
            rank + 1,
            hit.score,
            hit.parent_id,
            hit.section_path.join(" > ")
        );
    }
}

/// `parent`, `section` or `window:N`, as `folio search --expand` reads them.
fn parse_expand(s: &str) -> Result<Expand, String> {
    let expand = match s {
        "parent" => Expand::Parent,
        "section" => Expand::Section,
        _ => match s.strip_prefix("window:").map(str::parse::<usize>) {
            Some(Ok(n)) => Expand::Window(n),
            _ => {
                return Err(format!(
                    "--expand `{s}`: expected parent, section or window:N"
                ))
            }
        },
    };
    expand.validate().map_err(|e| format!("--expand: {e}"))?;
    Ok(expand)
}

fn describe(report: &folio_milvus::AliasReport) -> String {
    format!(
        "alias {} ({}): {:?}{}",
        report.alias,
        report.milvus_alias,
        report.outcome,
        report
            .collection
            .as_deref()
            .map(|c| format!(" -> {c}"))
            .unwrap_or_default()
    )
}

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so printing answers into a closed pipe (`folio milvus search
    // ... | head`) would panic; a command-line tool should just stop, as `folio` does.
    #[cfg(unix)]
    // SAFETY: called first thing, before any thread exists; only resets a signal disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
