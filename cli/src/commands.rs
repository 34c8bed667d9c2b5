//! The commands: argument parsing (clap) and what each command does with the library.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::common::{
    open_reader, open_store, parse_counter, parse_expand, parse_filters, registered, report_lines,
    EmbedArgs, SHARED_SEGMENTS, WAIT,
};
use crate::output::{err, CliResult};
use crate::output::{escape, preview, print_json, print_response, print_unavailable};
use crate::{bench, demo, eval, external, ingest, log, output, versions};
use folio::embed::TokenCounter;
use folio::query::{Evidence, Expand, HybridSettings, Rerank, SearchMode, SearchRequest};
use folio::store::{Access, Store};

#[derive(Parser)]
#[command(
    name = "folio",
    version,
    about = "An embedded vector store with built-in chunking, in one file."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Seconds a commit waits while another process commits to the store before giving up
    /// (any number of processes may read and write it; each holds the file only to commit).
    #[arg(long, global = true, value_name = "SECONDS", default_value = "10", value_parser = parse_wait)]
    wait: Duration,
    /// Map the store's segments from shared files beside it (STORE.segments/), so many
    /// processes hold one copy: on or off (default: on for commands that only read).
    #[arg(long, global = true, value_name = "on|off", value_parser = parse_on_off)]
    shared_segments: Option<bool>,
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("`{s}`: expected on or off")),
    }
}

fn parse_wait(s: &str) -> Result<Duration, String> {
    s.parse::<f64>()
        .ok()
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
        .ok_or_else(|| format!("`{s}`: expected a number of seconds, 0 or more"))
}

/// `--wait-followers`: the synchronous mode. Fails, the change committed, when no follower
/// applied it in time.
fn wait_for_followers(store: &Store, limit: Option<Duration>) -> Result<(), String> {
    let Some(limit) = limit else {
        return Ok(());
    };
    if store.outbox().wait_acknowledged(limit).map_err(err)? {
        Ok(())
    } else {
        Err(format!(
            "committed, but no follower applied the change within {:.1}s: is `folio milvus follow` running?",
            limit.as_secs_f64()
        ))
    }
}

#[derive(Subcommand)]
enum Command {
    /// Build a store from the sample corpus and run a few searches as different principals.
    Demo {
        /// Where to write the store (a temporary file by default); a file the demo did not
        /// make is never overwritten.
        #[arg(long)]
        store: Option<PathBuf>,
    },
    /// Add or replace documents (files, directories, .jsonl); creates the store. Reports what
    /// it added, replaced and left unchanged. A binary file refuses the whole ingest.
    Ingest {
        /// The store file (created when missing or empty; its folder must exist).
        store: PathBuf,
        /// Files and directories to read (directories recursively, each file once). A
        /// file's id is its path relative to the store's root (--root; docs/cli.md). Files are
        /// read as their extension says (.md .markdown .txt .html .htm .csv .tsv .jsonl
        /// .ndjson .pdf, source code .rs .py .js .mjs .ts .tsx .go), files named here with
        /// another extension as their content looks;
        /// directories take the files with those extensions.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Read every file as this format instead: markdown, text, html, csv, tsv, dialog,
        /// rust, python, javascript, typescript, tsx, go, pdf, or jsonl (JSON Lines documents).
        #[arg(long, value_parser = parse_kind)]
        format: Option<folio::input::FileKind>,
        /// The folder file ids are relative to, recorded in the store. Without it: the
        /// recorded one (while that folder exists), else the current folder. A file outside
        /// it is refused (one found in a folder given is skipped, with a warning).
        #[arg(long, value_name = "DIR")]
        root: Option<PathBuf>,
        /// Principals allowed to see these documents (comma-separated). Without it (or
        /// --public), a new document is public, or has its JSON Lines record's own `acl`,
        /// and a stored one without an ACL of its own keeps the stored ACL: nothing becomes
        /// visible to more principals by accident.
        #[arg(long, value_delimiter = ',', conflicts_with = "public")]
        acl: Vec<String>,
        /// Make these documents public, restricted ones included.
        #[arg(long)]
        public: bool,
        /// Also delete the documents of files that are gone: those read from a file under
        /// a folder given here (by their `file://` source) that no file read now produced.
        #[arg(long)]
        prune: bool,
        /// Documents per atomic commit.
        #[arg(long, default_value_t = 1000)]
        batch: usize,
        /// Cut and count in the model's tokens, as an ingest would, but embed and write
        /// nothing: what would be added and replaced, the chunks, and the token report (a
        /// missing STORE is not created).
        #[arg(long)]
        dry_run: bool,
        /// Print what was done as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        embed: EmbedArgs,
    },
    /// Search: the best reading units for QUERY that the principals may see.
    Search {
        /// The store file.
        store: PathBuf,
        /// What to look for, in words.
        query: String,
        /// Search as this principal (repeatable). Without any, only public documents are seen.
        #[arg(long = "as", value_name = "PRINCIPAL")]
        principals: Vec<String>,
        /// Reading units to return (at most as many as are visible).
        #[arg(long, default_value_t = folio::query::DEFAULT_K)]
        k: usize,
        /// Children to gather before grouping (default max(4k, 20); at most the visible ones).
        #[arg(long)]
        children: Option<usize>,
        /// Token budget for the returned texts.
        #[arg(long)]
        budget: Option<usize>,
        /// What --budget counts: estimate (default), cl100k, o200k, chars or tokenizer:PATH (a
        /// tokenizer.json, or a folder holding one): the tokens of the model that reads the texts.
        #[arg(long, value_parser = parse_counter)]
        budget_tokens: Option<Arc<dyn TokenCounter>>,
        /// What to return around matching children: parent, section, or window:N.
        #[arg(long, default_value = "parent", value_parser = parse_expand)]
        expand: Expand,
        /// Index to search: NAME, NAME@VERSION, NAME@TAG or an alias.
        #[arg(long)]
        index: Option<String>,
        /// Routes a split alias (tenant, user…); the query text when absent.
        #[arg(long)]
        route_key: Option<String>,
        /// Candidates a compressed index re-scores on vectors read from the file (default:
        /// the index's --rescore, 40 unless set; ignored by resident indexes).
        #[arg(long, value_name = "N")]
        rescore: Option<usize>,
        /// Only chunks matching this filter, e.g. `section_path ^= "Refunds"`,
        /// `updated_at >= 2024-01-01`, `tags contains "faq" and not draft = true`
        /// (repeatable: every one must match; the language is in `folio::filter`).
        #[arg(long = "where", value_name = "EXPR")]
        filters: Vec<String>,
        /// Keep units that repeat a better one nearly word for word (by default they are
        /// dropped and the answer is topped up from further candidates).
        #[arg(long)]
        no_dedup: bool,
        /// How children are ranked: dense (the embedder's vectors, the default), lexical
        /// (BM25 over the children's words) or hybrid (both, fused).
        #[arg(long, value_enum, default_value = "dense")]
        mode: ModeArg,
        #[command(flatten)]
        hybrid: HybridArgs,
        #[command(flatten)]
        rerank: RerankArgs,
        /// Record the search in the store's request log.
        #[arg(long)]
        log: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// After answering, print `holding` on stderr and wait for a line (or the end) on
        /// stdin before exiting, the store open, so a driver can measure the process's memory.
        #[arg(long)]
        hold: bool,
        #[command(flatten)]
        embed: EmbedArgs,
    },
    #[command(flatten)]
    Versions(versions::VersionsCommand),
    /// The request log: export, feedback, retention, failure selection, online metrics.
    #[command(subcommand)]
    Log(log::LogCommand),
    /// Show what a store holds (with --embedder: every chunk counted in the model's tokens).
    Stats {
        /// The store file.
        store: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        embed: EmbedArgs,
    },
    /// Write every document (text, ACL, dates, metadata) as JSON Lines that `folio ingest`
    /// reads back: a copy of the documents outside the store file.
    Dump {
        /// The store file.
        store: PathBuf,
        /// Write to this file (replaced once the dump is whole) instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Copy the whole store, as committed now, to a new file while writers go on.
    Backup {
        /// The store file.
        store: PathBuf,
        /// The new file (never replaced: it must not exist).
        dest: PathBuf,
        /// Print what was copied as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Copy what a damaged store still holds (index definitions, documents with their text,
    /// ACL and metadata) into a new store, and list what could not be read.
    Recover {
        /// The damaged store file (only read).
        damaged: PathBuf,
        /// The new store (never replaced: it must not exist).
        dest: PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        embed: EmbedArgs,
    },
    /// Delete documents and their chunks.
    Delete {
        /// The store file.
        store: PathBuf,
        /// The documents to delete; all in one commit, none if one is unknown.
        #[arg(required = true)]
        doc_ids: Vec<String>,
        /// Print what was done as JSON.
        #[arg(long)]
        json: bool,
        /// After the commit, wait up to SECONDS until `folio milvus follow` applied it (the
        /// store's outbox acknowledged); fail if it did not.
        #[arg(long, value_name = "SECONDS", value_parser = parse_wait)]
        wait_followers: Option<Duration>,
    },
    /// Change who may see a document (no re-chunking): `folio acl STORE DOC P,Q`, or
    /// `--public` for everyone.
    Acl {
        /// The store file.
        store: PathBuf,
        /// The document whose access changes.
        doc_id: String,
        /// The principals who may see it from now on (comma-separated).
        #[arg(value_delimiter = ',')]
        principals: Vec<String>,
        /// Make the document visible to everyone.
        #[arg(long, conflicts_with = "principals")]
        public: bool,
        /// Print what was done as JSON.
        #[arg(long)]
        json: bool,
        /// After the commit, wait up to SECONDS until `folio milvus follow` applied it (the
        /// store's outbox acknowledged); fail if it did not.
        #[arg(long, value_name = "SECONDS", value_parser = parse_wait)]
        wait_followers: Option<Duration>,
    },
    /// Measure chunking strategies on questions with gold evidence spans.
    Eval(eval::EvalArgs),
    /// Benchmarks against the shared kit's datasets (`bench ann`: filtered ANN).
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Rerun questions on strategies, or on versions of one store (`folio replay STORE
    /// --queries FILE --target kb@3 --target kb@4`), and label why their answers differ.
    Replay(eval::ReplayArgs),
    /// Serve a local web page over a store: documents with their chunks drawn, searches as
    /// any principal, versions, evaluations and the request log (read-only; needs the token
    /// it prints).
    Ui(crate::ui::UiArgs),
    /// Any other NAME runs the program `folio-NAME` (beside `folio`, then on PATH), like git:
    /// `folio publish` is `folio-publish`, from the `milvus/` crate.
    #[command(external_subcommand)]
    External(Vec<OsString>),
    /// Show the child chunks of a document.
    Chunks {
        /// The store file.
        store: PathBuf,
        /// The document.
        doc_id: String,
        /// The index whose chunks to show.
        #[arg(long, default_value = folio::store::DEFAULT_INDEX)]
        index: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn parse_kind(s: &str) -> Result<folio::input::FileKind, String> {
    folio::input::detect::parse_kind(s)
        .ok_or_else(|| format!("`{s}`: expected markdown, text, html, csv, tsv, dialog, rust, python, javascript, typescript, tsx, go, pdf or jsonl"))
}

/// Runs the command line; errors go to stderr with a non-zero exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    WAIT.get_or_init(|| cli.wait);
    SHARED_SEGMENTS.get_or_init(|| cli.shared_segments);
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            // Errors quote ids and paths: escaped like the rest of the output, line by line.
            let lines: Vec<String> = message.lines().map(escape).collect();
            eprintln!("error: {}", lines.join("\n"));
            ExitCode::FAILURE
        }
    }
}

/// `folio search --mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ModeArg {
    Dense,
    Lexical,
    Hybrid,
}

impl ModeArg {
    fn name(self) -> &'static str {
        match self {
            ModeArg::Dense => "dense",
            ModeArg::Lexical => "lexical",
            ModeArg::Hybrid => "hybrid",
        }
    }
}

/// `folio search --fusion`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum FusionArg {
    Rrf,
    Weighted,
}

impl FusionArg {
    fn name(self) -> &'static str {
        match self {
            FusionArg::Rrf => "rrf",
            FusionArg::Weighted => "weighted",
        }
    }
}

/// The rerank stage of `folio search`.
#[derive(Debug, clap::Args)]
struct RerankArgs {
    /// Reorder the best units by this reranker before the answer is cut to --k:
    /// bert:DIR (a cross-encoder folder, in-process), onnx:MODEL.onnx@DIR, cmd:"COMMAND",
    /// tei:URL, cohere:MODEL@URL or jina:MODEL@URL.
    #[arg(long, value_name = "SPEC")]
    rerank: Option<folio::embed::RerankerSpec>,
    /// With --rerank: units the reranker scores (default 20, at least --k).
    #[arg(long, value_name = "N")]
    rerank_top: Option<usize>,
    /// With --rerank: score each unit's best child with N children on each side (within
    /// the unit) instead of its whole text.
    #[arg(long, value_name = "N")]
    rerank_window: Option<usize>,
}

impl RerankArgs {
    /// The rerank stage, started or connected; a setting without --rerank is refused.
    fn stage(&self) -> Result<Option<Rerank>, String> {
        let Some(spec) = &self.rerank else {
            if self.rerank_top.is_some() || self.rerank_window.is_some() {
                return Err("--rerank-top and --rerank-window need --rerank".to_string());
            }
            return Ok(None);
        };
        let mut stage = Rerank::new(spec.build().map_err(err)?);
        if let Some(top) = self.rerank_top {
            stage = stage.top(top);
        }
        if let Some(n) = self.rerank_window {
            stage = stage.evidence(Evidence::Window(n));
        }
        Ok(Some(stage))
    }
}

/// The settings of `folio search --mode hybrid`.
#[derive(Debug, clap::Args)]
struct HybridArgs {
    /// With --mode hybrid: how the legs are fused, rrf (reciprocal rank fusion) or weighted
    /// (each leg's scores min-max normalised, then weighted: the default, dense weight 0.7).
    #[arg(long, value_enum)]
    fusion: Option<FusionArg>,
    /// With --fusion rrf (implied when alone): the k of 1/(k + rank) (default 60).
    #[arg(long, value_name = "N")]
    rrf_k: Option<u32>,
    /// With --fusion weighted (implied when alone): the dense leg's weight W in 0..=1, the
    /// lexical leg's 1 - W (default 0.7).
    #[arg(long, value_name = "W")]
    dense_weight: Option<f32>,
    /// With --mode hybrid: children the dense leg ranks (default 100, at least those
    /// the search gathers).
    #[arg(long, value_name = "N")]
    dense_depth: Option<usize>,
    /// With --mode hybrid: children the lexical leg ranks (default 100, at least those
    /// the search gathers).
    #[arg(long, value_name = "N")]
    lexical_depth: Option<usize>,
}

impl HybridArgs {
    /// The search mode; a hybrid setting given to another mode or fusion is refused, not
    /// ignored.
    fn mode(&self, mode: ModeArg) -> Result<SearchMode, String> {
        let settings = HybridSettings {
            fusion: self.fusion.map(|f| f.name().to_string()),
            rrf_k: self.rrf_k,
            dense_weight: self.dense_weight,
            dense_depth: self.dense_depth,
            lexical_depth: self.lexical_depth,
        };
        SearchMode::from_settings(mode.name(), &settings).map_err(|e| match e.name {
            "mode" => "--fusion, --rrf-k, --dense-weight, --dense-depth and --lexical-depth \
                       need --mode hybrid"
                .to_string(),
            "fusion" => {
                "--rrf-k goes with --fusion rrf, --dense-weight with --fusion weighted".to_string()
            }
            _ => err(e),
        })
    }
}

fn run(command: Command) -> CliResult {
    match command {
        Command::Demo { store } => demo::run(store),
        Command::Versions(command) => versions::run(command),
        Command::Log(command) => log::run(command),
        Command::External(args) => external::run(&args),
        Command::Eval(args) => eval::eval(args),
        Command::Bench(command) => bench::run(command),
        Command::Replay(args) => eval::replay(args),
        Command::Ui(args) => crate::ui::run(args),
        Command::Ingest {
            store,
            paths,
            format,
            root,
            acl,
            public,
            prune,
            batch,
            dry_run,
            json,
            embed,
        } => ingest::run(
            store,
            &paths,
            ingest::Options {
                format,
                root,
                acl,
                public,
                prune,
                batch,
                dry_run,
                json,
            },
            &embed,
        ),
        Command::Search {
            store,
            query,
            principals,
            k,
            children,
            budget,
            budget_tokens,
            expand,
            index,
            route_key,
            rescore,
            filters,
            no_dedup,
            mode,
            hybrid,
            rerank,
            log,
            json,
            hold,
            embed,
        } => {
            let mode = hybrid.mode(mode)?;
            let rerank = rerank.stage()?;
            let filter = parse_filters(&filters)?;
            // Read-only even with the log: such a store writes only its log entries.
            let options = Store::builder().log_requests(log).read_only(true);
            let store = embed.open(&store, options)?;
            let mut request = SearchRequest::text(query)
                .access(Access::principals(principals))
                .k(k)
                .expand(expand)
                .mode(mode);
            request.children = children;
            request.token_budget = budget;
            request.budget_tokens = budget_tokens;
            request.target = index;
            request.route_key = route_key;
            request.rescore = rescore;
            request.filter = filter;
            request.rerank = rerank;
            if no_dedup {
                request.dedup = None;
            }
            let response = store.search(&request).map_err(|e| match e {
                folio::QueryError::Read(folio::store::ReadError::EmbedderNotRegistered { index, embedder }) => format!(
                    "index `{index}` was built with embedder `{embedder}`, but this command has {}: \
                     pass --embedder with the same model",
                    registered(&store)
                ),
                e => err(e),
            })?;
            if json {
                print_json(&response)?;
            } else {
                print_response(&response);
                if let Some(id) = response.request_id {
                    println!("logged as request {id}");
                }
            }
            if hold {
                eprintln!("holding");
                let mut line = String::new();
                // End of input lets go as well as a line.
                let _ = std::io::stdin().read_line(&mut line);
            }
            Ok(())
        }
        Command::Stats { store, json, embed } => {
            let store = embed.open(&store, Store::builder().read_only(true))?;
            let stats = store.stats().map_err(err)?;
            let mut reports = Vec::new();
            for index in &stats.indexes {
                reports.extend(store.indexes().token_report(&index.name).map_err(err)?);
            }
            if json {
                // The stats as before, plus the token reports (empty without a model).
                let mut out = serde_json::to_value(&stats).map_err(err)?;
                if let Some(fields) = out.as_object_mut() {
                    fields.insert(
                        "tokens".into(),
                        serde_json::to_value(&reports).map_err(err)?,
                    );
                }
                return print_json(&out);
            }
            println!(
                "{}: format {}, {} bytes, {} documents",
                stats.path.display(),
                stats.format_version,
                stats.file_bytes,
                stats.documents
            );
            match &stats.file_root {
                Some(root) => println!(
                    "  file ids relative to {}{}",
                    escape(&root.path.display().to_string()),
                    match root.outside {
                        folio::input::Outside::AbsoluteId =>
                            " (absolute outside it: made by an older folio)",
                        _ => "",
                    }
                ),
                None => println!("  file ids relative to: none recorded yet"),
            }
            println!(
                "  retention: {}",
                crate::versions::describe_retention(stats.retention)
            );
            for index in stats.indexes {
                let principals = if index.principals.is_empty() {
                    "(public only)".to_string()
                } else {
                    escape(&index.principals.join(", "))
                };
                println!(
                    "  index {}@{}: {} live chunks in {} segments ({} with a graph); \
                     embedder {}; principals: {principals}",
                    index.name,
                    index.version,
                    index.live_children,
                    index.segments,
                    index.graph_segments,
                    index.embedder,
                );
                if index.mapped_segments > 0 {
                    println!(
                        "    {} of its segments mapped from shared files",
                        index.mapped_segments
                    );
                }
                if index.mapped_postings > 0 {
                    println!(
                        "    {} of its segments' postings mapped from shared files",
                        index.mapped_postings
                    );
                }
                if let Some(reason) = &index.shared_refused {
                    println!("    not shared: {}", escape(reason));
                }
            }
            print_unavailable(&stats.unavailable);
            for line in reports.iter().flat_map(report_lines) {
                println!("{line}");
            }
            Ok(())
        }
        Command::Dump { store, out } => crate::dump::dump(&store, out.as_deref()),
        Command::Backup { store, dest, json } => crate::dump::backup(&store, &dest, json),
        Command::Recover {
            damaged,
            dest,
            json,
            embed,
        } => crate::dump::recover(&damaged, &dest, json, &embed),
        Command::Delete {
            store,
            doc_ids,
            json,
            wait_followers,
        } => {
            let store = open_store(&store, Store::builder())?;
            let mut batch = store.batch();
            for id in &doc_ids {
                batch.delete(id);
            }
            let receipt = batch.commit().map_err(err)?;
            wait_for_followers(&store, wait_followers)?;
            let done = Changed {
                doc_ids,
                principals: None,
                versions: output::serving_versions(&store)?,
            };
            if json {
                return print_json(&done);
            }
            println!(
                "deleted {} documents; {}",
                receipt.deleted,
                output::versions_line(&done.versions)
            );
            Ok(())
        }
        Command::Acl {
            store,
            doc_id,
            principals,
            public,
            json,
            wait_followers,
        } => {
            // `--public` and a list are exclusive (clap); an empty list is never public.
            if !public && principals.iter().all(|p| p.trim().is_empty()) {
                return Err(format!(
                    "no principals given for `{}`: name them, or pass --public",
                    escape(&doc_id)
                ));
            }
            let store = open_store(&store, Store::builder())?;
            store
                .set_acl(&doc_id, principals.iter().cloned())
                .map_err(err)?;
            wait_for_followers(&store, wait_followers)?;
            let done = Changed {
                doc_ids: vec![doc_id],
                principals: Some(principals),
                versions: output::serving_versions(&store)?,
            };
            if json {
                return print_json(&done);
            }
            let who = match done.principals.as_deref() {
                Some([]) | None => "everyone (public)".to_string(),
                Some(p) => escape(&p.join(", ")),
            };
            println!(
                "{} is now visible to {who}; {}",
                escape(&done.doc_ids[0]),
                output::versions_line(&done.versions)
            );
            Ok(())
        }
        Command::Chunks {
            store,
            doc_id,
            index,
            json,
        } => {
            let store = open_reader(&store)?;
            let chunks = store.chunks(&index, &doc_id).map_err(err)?;
            if chunks.is_empty() {
                return Err(format!(
                    "no document `{}` in index `{index}`",
                    escape(&doc_id)
                ));
            }
            if json {
                return print_json(&chunks);
            }
            for c in chunks {
                let flag = if c.oversized { " [oversized]" } else { "" };
                println!(
                    "{} [{}..{}] {}{flag}\n  {}",
                    escape(&c.chunk_id),
                    c.start,
                    c.end,
                    escape(&c.section_path.join(" > ")),
                    preview(&c.text, 160)
                );
            }
            Ok(())
        }
    }
}

/// What `delete` and `acl` did, as `--json` prints it.
#[derive(serde::Serialize)]
struct Changed {
    doc_ids: Vec<String>,
    /// The new ACL (`acl` only); empty = public.
    #[serde(skip_serializing_if = "Option::is_none")]
    principals: Option<Vec<String>>,
    /// The version each index now serves.
    versions: std::collections::BTreeMap<String, u64>,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// Every command under `cmd` (`folio index create`, ...) with its arguments.
    fn commands(cmd: &clap::Command, path: &str, out: &mut Vec<(String, bool, Vec<clap::Arg>)>) {
        let leaf = cmd.get_subcommands().next().is_none();
        out.push((
            path.to_string(),
            leaf,
            cmd.get_arguments().cloned().collect(),
        ));
        for sub in cmd.get_subcommands() {
            commands(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    fn all_commands() -> Vec<(String, bool, Vec<clap::Arg>)> {
        let mut cli = Cli::command();
        cli.build();
        let mut out = Vec::new();
        commands(&cli, "folio", &mut out);
        out
    }

    #[test]
    fn every_argument_has_help() {
        let mut missing = Vec::new();
        for (path, _, args) in all_commands() {
            for arg in args {
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path}: {}", arg.get_id()));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "arguments without help text: {missing:?}"
        );
    }

    /// The manual's command list (the `## Commands` section of `docs/cli.md`) names every
    /// command, and each command's lines (with their indented continuation lines) name every
    /// option.
    #[test]
    fn manual_lists_every_command_and_option() {
        let manual = include_str!("../../docs/cli.md");
        let section = manual
            .split("\n## Commands")
            .nth(1)
            .and_then(|rest| rest.split("\n## ").next())
            .unwrap_or_default();
        let mut lines: Vec<String> = Vec::new();
        for line in section.lines() {
            if line.starts_with("folio ") {
                lines.push(line.to_string());
            } else if line.starts_with("  ") && !lines.is_empty() {
                if let Some(last) = lines.last_mut() {
                    last.push_str(line);
                }
            }
        }
        let mut missing = Vec::new();
        for (path, leaf, args) in all_commands() {
            if !leaf || path.split(' ').any(|word| word == "help") {
                continue;
            }
            let words: Vec<&str> = path.split(' ').collect();
            let line: String = lines
                .iter()
                .filter(|line| {
                    let given: Vec<&str> = line.split_whitespace().take(words.len()).collect();
                    given == words
                })
                .map(|line| format!("{line} "))
                .collect();
            if line.is_empty() {
                missing.push(path);
                continue;
            }
            for arg in args {
                let Some(long) = arg.get_long() else { continue };
                if long == "help" || long == "version" {
                    continue;
                }
                let flag = format!("--{long}");
                // An option of every command (`--wait`) is listed once, not on each line.
                let line = if arg.is_global_set() {
                    section
                } else {
                    line.as_str()
                };
                let named = line
                    .split(|c: char| !(c.is_alphanumeric() || c == '-'))
                    .any(|word| word == flag);
                if !named {
                    missing.push(format!("{path} {flag}"));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "not in the command list of docs/cli.md: {missing:?}"
        );
    }
}
