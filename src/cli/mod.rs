//! The `folio` command: a thin shell over the library.

mod bench;
mod demo;
mod eval;
mod progress;
mod versions;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};

use crate::embed::{Embedder, HashEmbedder};
use crate::retrieve::{Expand, SearchRequest, SearchResponse};
use crate::store::{Access, OpenError, Store, StoreBuilder};

#[derive(Parser)]
#[command(
    name = "folio",
    version,
    about = "An embedded vector store with built-in chunking, in one file."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build a store from the sample corpus and run a few searches as different principals.
    Demo {
        /// Where to write the store (a temporary file by default).
        #[arg(long)]
        store: Option<PathBuf>,
    },
    /// Add or replace documents (.md, .markdown, .txt files, directories, .jsonl); creates the store.
    Ingest {
        store: PathBuf,
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Principals allowed to see these documents (comma-separated); public when absent.
        /// JSON Lines records keep their own `acl` unless this is given.
        #[arg(long, value_delimiter = ',')]
        acl: Vec<String>,
        /// Documents per atomic commit.
        #[arg(long, default_value_t = 1000)]
        batch: usize,
    },
    /// Search: the best reading units for QUERY that the principals may see.
    Search {
        store: PathBuf,
        query: String,
        /// Search as this principal (repeatable). Without any, only public documents are seen.
        #[arg(long = "as", value_name = "PRINCIPAL")]
        principals: Vec<String>,
        /// Reading units to return.
        #[arg(long, default_value_t = crate::retrieve::DEFAULT_K)]
        k: usize,
        /// Children to gather before grouping (default max(4k, 20)).
        #[arg(long)]
        children: Option<usize>,
        /// Token budget for the returned texts.
        #[arg(long)]
        budget: Option<usize>,
        /// What to return around matching children: parent, section, or window:N.
        #[arg(long, default_value = "parent", value_parser = parse_expand)]
        expand: Expand,
        /// Index to search: NAME, NAME@VERSION, NAME@TAG or an alias.
        #[arg(long)]
        index: Option<String>,
        /// Routes a split alias (tenant, user…); the query text when absent.
        #[arg(long)]
        route_key: Option<String>,
        /// Keep units that repeat a better one nearly word for word (by default they are
        /// dropped and the answer is topped up from further candidates).
        #[arg(long)]
        no_dedup: bool,
        /// Record the search in the store's request log.
        #[arg(long)]
        log: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    #[command(flatten)]
    Versions(versions::VersionsCommand),
    /// Show what a store holds.
    Stats {
        store: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Delete documents and their chunks.
    Delete {
        store: PathBuf,
        #[arg(required = true)]
        doc_ids: Vec<String>,
    },
    /// Change who may see a document (no re-chunking); no principals = public.
    Acl {
        store: PathBuf,
        doc_id: String,
        #[arg(value_delimiter = ',')]
        principals: Vec<String>,
    },
    /// Measure chunking strategies on questions with gold evidence spans.
    Eval(eval::EvalArgs),
    /// Benchmarks against the shared kit's datasets (`bench ann`: filtered ANN).
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Rerun questions on strategies and label why their answers differ.
    Replay(eval::ReplayArgs),
    /// Show the child chunks of a document.
    Chunks {
        store: PathBuf,
        doc_id: String,
        #[arg(long, default_value = crate::store::DEFAULT_INDEX)]
        index: String,
        #[arg(long)]
        json: bool,
    },
}

fn parse_expand(s: &str) -> Result<Expand, String> {
    let expand = match s {
        "parent" => Expand::Parent,
        "section" => Expand::Section,
        _ => match s.strip_prefix("window:").map(str::parse::<usize>) {
            Some(Ok(n)) => Expand::Window(n),
            Some(Err(e)) if *e.kind() == std::num::IntErrorKind::PosOverflow => {
                let window = &crate::limits::WINDOW;
                return Err(err(crate::limits::InvalidParameter::new(
                    "window",
                    &s["window:".len()..],
                    format_args!("{}..={}", window.start(), window.end()),
                )));
            }
            _ => return Err(format!("`{s}`: expected parent, section or window:N")),
        },
    };
    expand.validate().map_err(err)?;
    Ok(expand)
}

/// Runs the command line; errors go to stderr with a non-zero exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

type CliResult = Result<(), String>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Opens the store at `path` with the built-in embedder. A store whose indexes it made in
/// another configuration (`folio eval --store-dir` embeds in 2,048 dimensions) opens with
/// that configuration, read back from the fingerprint the store records.
fn open_store(path: &Path, options: StoreBuilder) -> Result<Store, String> {
    let refused = match options.clone().open(path) {
        Ok(store) => return Ok(store),
        Err(e) => e,
    };
    if let OpenError::EmbedderMismatch { stored, .. } = &refused {
        let recorded = HashEmbedder::from_fingerprint(&stored.fingerprint)
            .filter(|e| e.name() == stored.name && options.embedder.name() == stored.name);
        if let Some(embedder) = recorded {
            let embedder = Arc::new(embedder);
            return options.embedder(embedder).open(path).map_err(err);
        }
    }
    Err(err(refused))
}

fn run(command: Command) -> CliResult {
    match command {
        Command::Demo { store } => demo::run(store),
        Command::Versions(command) => versions::run(command),
        Command::Eval(args) => eval::eval(args),
        Command::Bench(command) => bench::run(command),
        Command::Replay(args) => eval::replay(args),
        Command::Ingest {
            store,
            paths,
            acl,
            batch,
        } => ingest(store, &paths, &acl, batch),
        Command::Search {
            store,
            query,
            principals,
            k,
            children,
            budget,
            expand,
            index,
            route_key,
            no_dedup,
            log,
            json,
        } => {
            let options = Store::builder().log_requests(log);
            let store = open_store(&store, options)?;
            let mut request = SearchRequest::text(query)
                .access(Access::principals(principals))
                .k(k)
                .expand(expand);
            request.children = children;
            request.token_budget = budget;
            request.target = index;
            request.route_key = route_key;
            if no_dedup {
                request.dedup = None;
            }
            let response = store.search(&request).map_err(err)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&response).map_err(err)?);
            } else {
                print_response(&response);
                if let Some(id) = response.request_id {
                    println!("logged as request {id}");
                }
            }
            Ok(())
        }
        Command::Stats { store, json } => {
            let stats = open_store(&store, Store::builder())?.stats().map_err(err)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&stats).map_err(err)?);
                return Ok(());
            }
            println!(
                "{}: format {}, {} bytes, {} documents",
                stats.path.display(),
                stats.format_version,
                stats.file_bytes,
                stats.documents
            );
            for index in stats.indexes {
                println!(
                    "  index {}@{}: {} live chunks in {} segments ({} with a graph); embedder {}; principals: {}",
                    index.name,
                    index.version,
                    index.live_children,
                    index.segments,
                    index.graph_segments,
                    index.embedder,
                    if index.principals.is_empty() { "(public only)".to_string() } else { index.principals.join(", ") }
                );
            }
            print_unavailable(&stats.unavailable);
            Ok(())
        }
        Command::Delete { store, doc_ids } => {
            let store = open_store(&store, Store::builder())?;
            let mut batch = store.batch();
            for id in &doc_ids {
                batch.delete(id);
            }
            let receipt = batch.commit().map_err(err)?;
            println!(
                "deleted {} documents; versions {:?}",
                receipt.deleted, receipt.versions
            );
            Ok(())
        }
        Command::Acl {
            store,
            doc_id,
            principals,
        } => {
            let store = open_store(&store, Store::builder())?;
            store
                .set_acl(&doc_id, principals.iter().cloned())
                .map_err(err)?;
            let who = if principals.is_empty() {
                "everyone (public)".to_string()
            } else {
                principals.join(", ")
            };
            println!("{doc_id} is now visible to {who}");
            Ok(())
        }
        Command::Chunks {
            store,
            doc_id,
            index,
            json,
        } => {
            let store = open_store(&store, Store::builder())?;
            let chunks = store.chunks(&index, &doc_id).map_err(err)?;
            if chunks.is_empty() {
                return Err(format!("no document `{doc_id}` in index `{index}`"));
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&chunks).map_err(err)?);
            } else {
                for c in chunks {
                    let flag = if c.oversized { " [oversized]" } else { "" };
                    println!(
                        "{} [{}..{}] {}{flag}\n  {}",
                        c.chunk_id,
                        c.start,
                        c.end,
                        c.section_path.join(" > "),
                        preview(&c.text, 160)
                    );
                }
            }
            Ok(())
        }
    }
}

fn ingest(path: PathBuf, paths: &[PathBuf], acl: &[String], batch_size: usize) -> CliResult {
    let mut docs = crate::input::read_paths(paths).map_err(err)?;
    if docs.is_empty() {
        return Err("no documents found (expected .md, .markdown, .txt or .jsonl)".into());
    }
    if !acl.is_empty() {
        for doc in &mut docs {
            doc.acl = acl.to_vec();
        }
    }
    let store = open_store(&path, Store::builder().create(true))?;
    let bar = progress::Bar::new();
    let total = docs.len();
    let mut chunks = 0;
    let mut versions = Default::default();
    let mut docs = docs.into_iter().peekable();
    while docs.peek().is_some() {
        let mut batch = store.batch();
        for doc in docs.by_ref().take(batch_size.max(1)) {
            batch.upsert(doc);
        }
        let receipt = batch.commit_with(&bar).map_err(err)?;
        chunks += receipt.children;
        versions = receipt.versions;
    }
    bar.finish();
    println!(
        "ingested {total} documents ({chunks} chunks) into {}; versions {versions:?}",
        path.display()
    );
    Ok(())
}

/// Indexes the store could not load, and what to do about them.
fn print_unavailable(unavailable: &[crate::store::UnavailableIndex]) {
    for bad in unavailable {
        println!(
            "  index {}: could not be loaded ({}); `folio index drop` removes it",
            bad.name, bad.reason
        );
    }
}

fn preview(text: &str, max_chars: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &flat[..i]),
        None => flat,
    }
}

pub(crate) fn print_response(response: &SearchResponse) {
    let paths: Vec<String> = response
        .stats
        .paths
        .iter()
        .map(|p| format!("{p:?}").to_lowercase())
        .collect();
    println!(
        "{}@{}: {} results of {} visible chunks ({}; {} distances; {:.2} ms)",
        response.index,
        response.version,
        response.results.len(),
        response.stats.visible,
        if paths.is_empty() {
            "nothing visible".to_string()
        } else {
            paths.join("+")
        },
        response.stats.distances,
        response.stats.micros as f64 / 1000.0
    );
    if response.stats.duplicates_dropped > 0 {
        println!(
            "({} near-duplicate units left out; --no-dedup keeps them)",
            response.stats.duplicates_dropped
        );
    }
    for (i, hit) in response.results.iter().enumerate() {
        let section = if hit.section_path.is_empty() {
            String::new()
        } else {
            format!(" › {}", hit.section_path.join(" › "))
        };
        println!(
            "{:>2}. {:.3}  {}{section}  [{}]",
            i + 1,
            hit.score,
            hit.doc_id,
            hit.parent_id
        );
        println!("    {}", preview(&hit.text, 220));
    }
}
