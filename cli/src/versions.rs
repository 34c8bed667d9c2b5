//! `folio index|versions|tag|alias|rollback|route|gc|check|compact|compact-file`: indexes,
//! versions and their names, maintenance.

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use clap::Subcommand;

use crate::common::{open_reader, open_untouched};
use crate::output::print_json;
use crate::output::{err, CliResult};
use crate::progress;
use folio::chunk::ChunkSpec;
use folio::index::lexical::LexicalLanguage;
use folio::index::Metric;
use folio::query::Expand;
use folio::store::{
    GraphParams, IndexConfig, IndexEmbedder, Retention, Route, Store, VectorStorage, VersionInfo,
    DEFAULT_RESCORE,
};
use folio_eval::{Strategy, StrategyKind};

#[derive(Subcommand)]
pub(crate) enum VersionsCommand {
    /// Create, list or drop named indexes over the store's documents.
    #[command(subcommand)]
    Index(IndexCommand),
    /// List the retained versions of an index, with their tags and aliases.
    Versions {
        /// The store file.
        store: PathBuf,
        /// The index.
        index: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Name a version: `folio tag STORE INDEX@VERSION TAG` (`--remove`: `INDEX TAG`).
    Tag {
        /// The store file.
        store: PathBuf,
        /// INDEX@VERSION to name (with `--remove`: the INDEX).
        target: String,
        /// The tag.
        tag: String,
        /// Remove the tag instead.
        #[arg(long)]
        remove: bool,
        /// Print what was done as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Set, list or remove aliases (names that route queries to index versions).
    #[command(subcommand)]
    Alias(AliasCommand),
    /// Serve VERSION: an alias sends all its traffic there; an index name is pinned to it.
    Rollback {
        /// The store file.
        store: PathBuf,
        /// An alias or an index.
        target: String,
        /// The version to serve.
        #[arg(required_unless_present = "unpin")]
        version: Option<u64>,
        /// Make the index name serve its newest version again.
        #[arg(long, conflicts_with = "version")]
        unpin: bool,
        /// Print what was done as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show which version of ALIAS a route key (tenant, user, query) goes to.
    Route {
        /// The store file.
        store: PathBuf,
        /// The alias.
        alias: String,
        /// The route key (what `search --route-key` would pass).
        key: String,
        /// Print the route as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete old versions (tagged, aliased and pinned ones stay) and all only they used.
    Gc {
        /// The store file.
        store: PathBuf,
        /// Newest versions kept per index.
        #[arg(long, default_value_t = 5)]
        keep: usize,
        /// Print what was done as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show or set the retention policy applied after every commit: keep the newest N
    /// versions of each index, or those younger than an age (named versions always stay).
    Retention {
        /// The store file.
        store: PathBuf,
        /// Keep the newest N versions of each index.
        #[arg(long, conflicts_with_all = ["max_age", "off"])]
        keep_last: Option<usize>,
        /// Keep the versions younger than this (`90s`, `30m`, `12h`, `7d`).
        #[arg(long, value_parser = parse_age, conflicts_with = "off")]
        max_age: Option<std::time::Duration>,
        /// Collect nothing after commits (the default; `gc` still collects).
        #[arg(long)]
        off: bool,
        /// Print the policy as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check the store; the exit code is 0 only when it is consistent.
    Check {
        /// The store file.
        store: PathBuf,
        /// Print the report as one JSON document (the exit code still tells).
        #[arg(long)]
        json: bool,
    },
    /// Merge an index's segments into one with only its live chunks (every index by default).
    Compact {
        /// The store file.
        store: PathBuf,
        /// The index to merge (every index when absent).
        #[arg(long)]
        index: Option<String>,
        /// Print what was done as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Give the file back its free space (redb's compaction: pages move down, the free
    /// tail is cut off); no other process may have the store open. Crash safe.
    CompactFile {
        /// The store file.
        store: PathBuf,
        /// Print what was done as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub(crate) enum IndexCommand {
    /// Build a new index over every stored document.
    Create {
        /// The store file.
        store: PathBuf,
        /// The new index's name.
        name: String,
        /// How to cut documents, as `folio eval --strategy` takes it (e.g. `structure:500`,
        /// `parent-child:section/300`); the store's default spec when absent.
        #[arg(long)]
        chunking: Option<String>,
        #[command(flatten)]
        embed: crate::common::EmbedArgs,
        /// What a size in tokens (`structure:256t`) counts: embedder (its tokenizer; the estimate
        /// for one without, such as hash: the default), estimate, cl100k, o200k or chars.
        #[arg(long)]
        tokens: Option<folio::chunk::SizeUnit>,
        /// No embedder: NAME:DIMENSION[:cosine|dot|l2]; every upsert brings its vectors.
        #[arg(long, conflicts_with = "embedder")]
        vectors: Option<String>,
        /// Graph links per node (layer 0 keeps twice as many): more is better recall,
        /// a larger file and a slower build.
        #[arg(long, default_value_t = GraphParams::default().m, value_parser = parse_m)]
        m: u32,
        /// Candidates considered per insertion while building a graph: more is a better
        /// graph and a slower build.
        #[arg(long, default_value_t = GraphParams::default().ef_construction,
              value_parser = parse_ef_construction)]
        ef_construction: u32,
        /// Segments with fewer chunks get no graph (exact search is faster there).
        #[arg(long, default_value_t = GraphParams::default().min_graph_size)]
        min_graph_size: u32,
        /// Keep only the graph's links and 8-bit codes in memory; the f32 vectors stay in
        /// the file and are read to re-score a search's best candidates (for sets larger
        /// than memory).
        #[arg(long)]
        compressed: bool,
        /// With --compressed: candidates re-scored on their f32 vectors per search.
        #[arg(long, default_value_t = DEFAULT_RESCORE, requires = "compressed")]
        rescore: u32,
        /// The language the lexical leg (`search --mode lexical|hybrid`) cuts texts and
        /// queries in: auto (Han by the Chinese segmenter, the rest as english), plain,
        /// chinese, english, german, french, ... (see `folio::index::lexical::LexicalLanguage`).
        #[arg(long, value_name = "LANG", default_value_t = LexicalLanguage::Auto,
              value_parser = parse_lexical_language)]
        lexical_language: LexicalLanguage,
        /// Print what was done as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the indexes.
    List {
        /// The store file.
        store: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete an index (not `default`; not while an alias routes to it).
    Drop {
        /// The store file.
        store: PathBuf,
        /// The index to delete.
        name: String,
        /// Print what was done as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub(crate) enum AliasCommand {
    /// Point ALIAS at INDEX@VERSION, or split it: `default@3:90,default@4:10`.
    Set {
        /// The store file.
        store: PathBuf,
        /// The alias (not the name of an index).
        alias: String,
        /// INDEX@VERSION, or INDEX@VERSION:WEIGHT,... for a split.
        routes: String,
        /// Print what was done as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the aliases and their routes.
    List {
        /// The store file.
        store: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete an alias.
    Remove {
        /// The store file.
        store: PathBuf,
        /// The alias.
        alias: String,
        /// Print what was done as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(command: VersionsCommand) -> CliResult {
    match command {
        VersionsCommand::Index(command) => index(command),
        VersionsCommand::Versions { store, index, json } => {
            let versions = open_reader(&store)?.versions(&index).list().map_err(err)?;
            if json {
                return print_json(&versions);
            }
            for v in versions {
                println!("{}", version_line(&index, &v));
            }
            Ok(())
        }
        VersionsCommand::Tag {
            store,
            target,
            tag,
            remove,
            json,
        } => {
            let store = open(&store)?;
            let (index, version) = if remove {
                let version = store.versions(&target).remove_tag(&tag).map_err(err)?;
                (target, version)
            } else {
                let (index, version) = index_at(&target)?;
                store.versions(&index).tag(version, &tag).map_err(err)?;
                (index, version)
            };
            if json {
                return print_json(&serde_json::json!({
                    "index": index, "version": version, "tag": tag, "removed": remove,
                }));
            }
            if remove {
                println!("removed tag {tag} (was {index}@{version})");
            } else {
                println!("{index}@{version} is tagged {tag}");
            }
            Ok(())
        }
        VersionsCommand::Alias(command) => alias(command),
        VersionsCommand::Rollback {
            store,
            target,
            version,
            unpin,
            json,
        } => {
            let store = open(&store)?;
            match version {
                Some(version) if !unpin => {
                    let done = store.rollback(&target, version).map_err(err)?;
                    if json {
                        return print_json(&done);
                    }
                    if done.alias {
                        println!(
                            "alias {} now serves {}@{}",
                            done.target, done.index, done.version
                        );
                    } else {
                        println!(
                            "{} now serves version {} (writes continue on the newest; \
                             `--unpin` undoes)",
                            done.index, done.version
                        );
                    }
                }
                _ => {
                    let was = store.versions(&target).unpin().map_err(err)?;
                    if json {
                        let serving = crate::output::serving_versions(&store)?;
                        return print_json(&serde_json::json!({
                            "index": target, "was_pinned_to": was, "version": serving.get(&target),
                        }));
                    }
                    match was {
                        Some(v) => println!("{target} serves its newest version again (was {v})"),
                        None => println!("{target} was not pinned"),
                    }
                }
            }
            Ok(())
        }
        VersionsCommand::Route {
            store,
            alias,
            key,
            json,
        } => {
            let route = open_reader(&store)?
                .aliases()
                .route(&alias, &key)
                .map_err(err)?;
            if json {
                return print_json(&route);
            }
            println!(
                "{alias} routes `{}` to {}@{} (weight {})",
                crate::output::escape(&key),
                route.index,
                route.version,
                route.weight
            );
            Ok(())
        }
        VersionsCommand::Retention {
            store,
            keep_last,
            max_age,
            off,
            json,
        } => {
            let policy = match (keep_last, max_age, off) {
                (Some(n), _, _) => Some(Retention::KeepLast(n)),
                (_, Some(age), _) => Some(Retention::YoungerThan(age)),
                (_, _, true) => Some(Retention::Off),
                _ => None,
            };
            let policy = match policy {
                Some(policy) => {
                    open(&store)?.set_retention(policy).map_err(err)?;
                    policy
                }
                None => open_reader(&store)?.stats().map_err(err)?.retention,
            };
            if json {
                return print_json(&serde_json::json!({ "retention": policy }));
            }
            println!("retention: {}", describe_retention(policy));
            Ok(())
        }
        VersionsCommand::Gc { store, keep, json } => {
            let path = store;
            let store = open(&path)?;
            let before = file_size(&path);
            let report = store.gc(keep).map_err(err)?;
            drop(store);
            if json {
                return print_json(&serde_json::json!({
                    "deleted": report, "file_bytes_before": before, "file_bytes_after": file_size(&path),
                }));
            }
            println!(
                "deleted {} versions, {} segments, {} chunks, {} parents, {} revisions, {} bitmap entries; \
                 file {} -> {} bytes (freed pages are reused)",
                report.versions,
                report.segments,
                report.children,
                report.parents,
                report.revisions,
                report.acl_entries,
                before,
                file_size(&path)
            );
            for (index, versions) in report.retained {
                println!("  {index}: kept versions {versions:?}");
            }
            Ok(())
        }
        VersionsCommand::Check { store, json } => {
            let mut store = open_untouched(&store)?;
            let report = store.check_integrity().map_err(err)?;
            if json {
                // One JSON document on stdout; the exit code says whether it is consistent.
                print_json(&report)?;
                return if report.is_consistent() {
                    Ok(())
                } else {
                    Err("the store is inconsistent".into())
                };
            } else {
                println!(
                    "{} documents, {} indexes, {} versions, {} segments, {} live chunks checked",
                    report.documents,
                    report.indexes,
                    report.versions,
                    report.segments,
                    report.children
                );
                for problem in &report.problems {
                    println!("  problem: {problem}");
                }
                for note in &report.notes {
                    println!("  note: {note}");
                }
            }
            if report.is_consistent() {
                println!("consistent");
                Ok(())
            } else {
                Err(format!(
                    "the store is inconsistent ({} problems)",
                    report.problems.len() as u64 + report.unlisted
                ))
            }
        }
        VersionsCommand::Compact { store, index, json } => {
            let store = open(&store)?;
            let names = match index {
                Some(name) => vec![name],
                None => store.index_names(),
            };
            let mut merged = std::collections::BTreeMap::new();
            for name in names {
                let bar = progress::Bar::new();
                let done = store.indexes().compact_with(&name, &bar).map_err(err)?;
                bar.finish();
                if !json {
                    match &done {
                        Some(c) => println!(
                            "{name}: merged {} segments into version {} ({} chunks kept, {} dead dropped)",
                            c.segments_merged, c.version, c.rows_kept, c.rows_dropped
                        ),
                        None => println!("{name}: nothing to merge"),
                    }
                }
                merged.insert(name, done);
            }
            if json {
                return print_json(&serde_json::json!({
                    "merged": merged, "versions": crate::output::serving_versions(&store)?,
                }));
            }
            Ok(())
        }
        VersionsCommand::CompactFile { store, json } => {
            let done = open(&store)?.compact_file().map_err(err)?;
            if json {
                return print_json(&done);
            }
            if done.compacted {
                println!(
                    "{}: {} -> {} bytes",
                    store.display(),
                    done.bytes_before,
                    done.bytes_after
                );
            } else {
                println!(
                    "{}: nothing to give back ({} bytes)",
                    store.display(),
                    done.bytes_after
                );
            }
            Ok(())
        }
    }
}

fn index(command: IndexCommand) -> CliResult {
    match command {
        IndexCommand::Create {
            store,
            name,
            chunking,
            embed,
            tokens,
            vectors,
            m,
            ef_construction,
            min_graph_size,
            compressed,
            rescore,
            lexical_language,
            json,
        } => {
            let (store, embedder) = embed.open_named(&store, Store::builder())?;
            let spec = match chunking {
                Some(given) => match Strategy::parse(&given).map_err(err)?.kind {
                    StrategyKind::Builtin {
                        expand: Expand::Window(n),
                        spec,
                    } => {
                        // An index keeps how it cuts, not how it is searched: a window
                        // given here would be silently lost.
                        let size = match spec.child.structure() {
                            Some((target, _, unit)) if unit.is_tokens() => format!("{target}t"),
                            Some((target, ..)) => target.to_string(),
                            None => given.clone(),
                        };
                        return Err(format!(
                            "`{given}`: the window is a search setting, which an index does not \
                             keep; create the index with --chunking structure:{size} and search \
                             it with --expand window:{n}"
                        ));
                    }
                    StrategyKind::Builtin { spec, .. } => spec,
                    StrategyKind::External { .. } => {
                        return Err("an index cuts its own chunks: external strategies cannot \
                                    build one"
                            .into())
                    }
                },
                None => ChunkSpec::default(),
            };
            let spec = match tokens {
                Some(unit) => spec.in_tokens_of(unit),
                None => spec,
            };
            let embedder = match vectors {
                Some(v) => vectors_only(&v)?,
                None => IndexEmbedder::Registered(embedder),
            };
            let config = IndexConfig {
                spec,
                embedder,
                graph: GraphParams {
                    m,
                    ef_construction,
                    min_graph_size,
                },
                vectors: if compressed {
                    VectorStorage::Compressed { rescore }
                } else {
                    VectorStorage::Resident
                },
                lexical: lexical_language,
            };
            let bar = progress::Bar::new();
            let (version, report) = store
                .indexes()
                .create_reporting(&name, config, &bar)
                .map_err(err)?;
            bar.finish();
            for line in report.iter().flat_map(crate::common::report_lines) {
                eprintln!("{line}");
            }
            if json {
                return print_json(
                    &serde_json::json!({ "created": name, "version": version, "tokens": report }),
                );
            }
            println!("created index {name} at version {version}");
            Ok(())
        }
        IndexCommand::List { store, json } => {
            let store = open_reader(&store)?;
            let indexes = store.indexes().list().map_err(err)?;
            if json {
                return print_json(&indexes);
            }
            for i in indexes {
                let serving = if i.serving == i.head {
                    String::new()
                } else {
                    format!(", serving {} (pinned)", i.serving)
                };
                let vectors = match i.vectors {
                    VectorStorage::Resident => "resident".to_string(),
                    VectorStorage::Compressed { rescore } => {
                        format!("compressed (rescore {rescore})")
                    }
                };
                println!(
                    "{}: head {}{serving}, {} versions; embedder {}; chunking {}; graph m={} ef={} min={}; vectors {vectors}; lexical {}",
                    i.name,
                    i.head,
                    i.versions,
                    i.embedder,
                    serde_json::to_string(&i.spec).map_err(err)?,
                    i.graph.m,
                    i.graph.ef_construction,
                    i.graph.min_graph_size,
                    i.lexical_language
                );
            }
            crate::output::print_unavailable(&store.unavailable_indexes());
            Ok(())
        }
        IndexCommand::Drop { store, name, json } => {
            open(&store)?.indexes().drop(&name).map_err(err)?;
            if json {
                return print_json(&serde_json::json!({ "dropped": name }));
            }
            println!("dropped index {name} (run `folio gc` to free revisions only it used)");
            Ok(())
        }
    }
}

fn alias(command: AliasCommand) -> CliResult {
    match command {
        AliasCommand::Set {
            store,
            alias,
            routes,
            json,
        } => {
            let routes = parse_routes(&routes)?;
            open(&store)?.aliases().set(&alias, &routes).map_err(err)?;
            if json {
                return print_json(&serde_json::json!({ "alias": alias, "routes": routes }));
            }
            println!("{alias} = {}", show_routes(&routes));
            Ok(())
        }
        AliasCommand::List { store, json } => {
            let aliases = open_reader(&store)?.aliases().list().map_err(err)?;
            if json {
                return print_json(&aliases);
            }
            for a in aliases {
                println!("{} = {}", a.name, show_routes(&a.routes));
            }
            Ok(())
        }
        AliasCommand::Remove { store, alias, json } => {
            open(&store)?.aliases().remove(&alias).map_err(err)?;
            if json {
                return print_json(&serde_json::json!({ "removed": alias }));
            }
            println!("removed alias {alias}");
            Ok(())
        }
    }
}

fn open(path: &Path) -> Result<Store, String> {
    crate::common::open_store(path, Store::builder())
}

fn file_size(path: &PathBuf) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// `INDEX@VERSION`.
fn index_at(target: &str) -> Result<(String, u64), String> {
    target
        .rsplit_once('@')
        .and_then(|(index, v)| Some((index.to_string(), v.parse().ok()?)))
        .ok_or_else(|| format!("`{target}`: expected INDEX@VERSION"))
}

/// `INDEX@VERSION[:WEIGHT],...`; a lone route without a weight takes everything.
fn parse_routes(s: &str) -> Result<Vec<Route>, String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    parts
        .iter()
        .map(|part| {
            let (target, weight) = match part.split_once(':') {
                Some((target, w)) => (
                    target,
                    w.parse()
                        .map_err(|_| format!("`{part}`: the weight is not a whole number"))?,
                ),
                None if parts.len() == 1 => (*part, 100),
                None => return Err(format!("`{part}`: several routes need a :WEIGHT each")),
            };
            let (index, version) = index_at(target)?;
            Ok(Route {
                index,
                version,
                weight,
            })
        })
        .collect()
}

fn show_routes(routes: &[Route]) -> String {
    routes
        .iter()
        .map(|r| format!("{}@{}:{}", r.index, r.version, r.weight))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `NAME:DIMENSION[:METRIC]`.
fn vectors_only(s: &str) -> Result<IndexEmbedder, String> {
    let mut parts = s.split(':');
    let (Some(name), Some(dimension)) = (parts.next(), parts.next()) else {
        return Err(format!("`{s}`: expected NAME:DIMENSION[:cosine|dot|l2]"));
    };
    let dimension = parse_in(dimension, "dimension", &folio::limits::DIMENSION)?;
    let metric = match parts.next() {
        None | Some("cosine") => Metric::Cosine,
        Some("dot") => Metric::Dot,
        Some("l2") => Metric::L2,
        Some(other) => return Err(format!("unknown metric `{other}` (cosine, dot or l2)")),
    };
    Ok(IndexEmbedder::VectorsOnly {
        name: name.to_string(),
        dimension,
        metric,
    })
}

fn parse_lexical_language(s: &str) -> Result<LexicalLanguage, String> {
    LexicalLanguage::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = LexicalLanguage::ALL.iter().map(|l| l.name()).collect();
        format!("`{s}` is not a language: one of {}", names.join(", "))
    })
}

fn parse_m(s: &str) -> Result<u32, String> {
    parse_in(s, "m", &folio::limits::GRAPH_M)
}

fn parse_ef_construction(s: &str) -> Result<u32, String> {
    parse_in(s, "ef_construction", &folio::limits::EF_CONSTRUCTION)
}

/// A whole number inside `allowed`.
fn parse_in(s: &str, name: &'static str, allowed: &RangeInclusive<u32>) -> Result<u32, String> {
    let n: u32 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a whole number"))?;
    folio::limits::check(name, n, allowed).map_err(err)
}

fn version_line(index: &str, v: &VersionInfo) -> String {
    let mut marks = Vec::new();
    if v.head {
        marks.push("head".to_string());
    }
    if v.serving && !v.head {
        marks.push("serving (pinned)".to_string());
    }
    marks.extend(v.tags.iter().map(|t| format!("tag {t}")));
    marks.extend(v.aliases.iter().map(|a| format!("alias {a}")));
    let marks = if marks.is_empty() {
        String::new()
    } else {
        format!("  [{}]", marks.join(", "))
    };
    format!(
        "{index}@{:<4} {}  {:<36} {} docs, {} chunks, {} segments{marks}",
        v.version,
        utc(v.created_ms),
        v.change,
        v.documents,
        v.live_children,
        v.segments
    )
}

/// `YYYY-MM-DD HH:MM:SS` UTC of Unix milliseconds.
fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// A retention policy in words, for `folio stats` and `folio retention`.
pub(crate) fn describe_retention(policy: Retention) -> String {
    match policy {
        Retention::Off => "off (versions are kept until `folio gc`)".into(),
        Retention::KeepLast(n) => {
            format!(
                "after each commit, keep the newest {n} versions of each index and every named one"
            )
        }
        Retention::YoungerThan(age) => format!(
            "after each commit, keep the versions younger than {} and every named one",
            humantime_secs(age.as_secs())
        ),
        other => format!("{other:?}"),
    }
}

fn humantime_secs(secs: u64) -> String {
    match secs {
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3_600 == 0 => format!("{}h", s / 3_600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// `90s`, `30m`, `12h`, `7d`: an age for `--max-age`.
fn parse_age(text: &str) -> Result<std::time::Duration, String> {
    let (number, unit) = text.split_at(text.trim_end_matches(char::is_alphabetic).len());
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => {
            return Err(format!(
                "`{text}`: expected a number and s, m, h or d (e.g. 7d)"
            ))
        }
    };
    match number.parse::<u64>() {
        Ok(n) if n > 0 => n
            .checked_mul(scale)
            .map(std::time::Duration::from_secs)
            .ok_or_else(|| format!("`{text}`: too long")),
        _ => Err(format!(
            "`{text}`: expected a positive number and s, m, h or d (e.g. 7d)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00");
        assert_eq!(utc(1_798_761_599_000), "2026-12-31 23:59:59");
    }

    #[test]
    fn routes_parse() {
        assert_eq!(
            parse_routes("default@3:90, default@4:10").map(|r| r.len()),
            Ok(2)
        );
        assert_eq!(parse_routes("default@3").map(|r| r[0].weight), Ok(100));
        assert!(parse_routes("default@3,default@4").is_err());
        assert!(parse_routes("default:90").is_err());
    }
}
