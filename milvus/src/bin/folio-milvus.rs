//! `folio milvus COMMAND`: searching published versions through folio, and keeping Milvus's
//! aliases and rows in step with the store (the `folio` command runs this program for
//! `milvus`, found beside its own executable, then on PATH).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use folio::embed::EmbedderSpec;
use folio::filter::Filter;
use folio::query::Expand;
use folio::{SearchRequest, Store};
use folio_milvus::{Remote, Searcher, Short, DEFAULT_BATCH, DEFAULT_PREFIX};

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
}

/// The store, opened for writing only when a command writes (an alias, the request log).
fn open(path: &PathBuf, write: bool, log: bool) -> Result<Store, String> {
    Store::builder()
        .read_only(!write)
        .log_requests(log)
        .open(path)
        .map_err(|e| e.to_string())
}

fn run(args: Args) -> Result<(), String> {
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
