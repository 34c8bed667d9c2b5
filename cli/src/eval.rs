//! `folio eval` and `folio replay`: chunking strategies measured on questions with gold spans,
//! and a question set replayed between versions of one store.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::Args;

use crate::output::{err, CliResult};
use crate::progress::Bar;
use folio::embed::{Embedder, HashEmbedder};
use folio::query::{Expand, SearchMode, DEFAULT_RERANK_TOP};
use folio_eval::replay::{self, Label, Side};
use folio_eval::{
    against_dense, ask_all, build_index, embed_questions, read_questions, report, score_strategy,
    Answer, BuiltIndex, Corpus, EmbedSetup, EvalError, Plan, PlanRerank, Question, QuestionSet,
    Settings, Strategy, VersionReplay, Workspace,
};
use folio_eval::{trace, version_report};

/// What `eval` and `replay` share: the data, the strategies and the fixed settings.
#[derive(Args)]
pub(crate) struct Common {
    /// Documents, JSON Lines (`doc_id`, `text`, `format`, ...); needed to build strategies.
    #[arg(long)]
    docs: Option<PathBuf>,
    /// Questions, JSON Lines (`query_id`, `query`, `doc_ids`, `gold_spans` with byte offsets;
    /// for a replay between versions also the logged request: `request_id`, `principals`,
    /// `target`, `index`, `version`, `route_key`, as `folio log select` writes them).
    #[arg(long)]
    queries: PathBuf,
    /// A chunking strategy (repeatable): fixed:500, fixed:500/80, fixed:128t, structure:500,
    /// structure:500/80, parent-child:1200/300, parent-child:section/300, window:300/1,
    /// external:FILE; `NAME=SPEC` sets the label.
    #[arg(long = "strategy", value_parser = parse_strategy)]
    strategies: Vec<Strategy>,
    /// How every strategy is asked (repeatable; dense when none): dense, lexical, hybrid
    /// (the library's default fusion), hybrid:rrf:K, hybrid:weighted:W, either fusion
    /// followed by :DENSE_DEPTH:LEXICAL_DEPTH; `NAME=PLAN` sets the label.
    #[arg(long = "mode", value_parser = parse_plan)]
    plans: Vec<Plan>,
    /// Also asks every plan followed by this reranker (a row `PLAN+rerank` beside each):
    /// bert:DIR, onnx:MODEL.onnx@DIR, cmd:"COMMAND", tei:URL, cohere:MODEL@URL or
    /// jina:MODEL@URL, as `folio search --rerank` takes.
    #[arg(long, value_name = "SPEC")]
    rerank: Option<folio::embed::RerankerSpec>,
    /// With --rerank: units the reranker scores per question (default 20, at least the
    /// search's k).
    #[arg(long, value_name = "N")]
    rerank_top: Option<usize>,
    /// Dimension of the built-in hash embedder, the same for every strategy (without
    /// --embedder).
    #[arg(long, default_value_t = 2048)]
    embed_dim: usize,
    /// The embedder of every strategy, and what happens to chunks it cannot read whole.
    #[command(flatten)]
    embed: crate::common::EmbedArgs,
    /// What a size in tokens (`structure:256t`) counts: embedder (its tokenizer; the estimate
    /// for one without, such as hash: the default), estimate, cl100k, o200k or chars.
    #[arg(long)]
    tokens: Option<folio::chunk::SizeUnit>,
    /// Cut-offs of Hit@k; the largest is the k of every other metric.
    #[arg(long, value_delimiter = ',', default_value = "1,3,5")]
    k: Vec<usize>,
    /// Token budget of the returned texts per question.
    #[arg(long)]
    budget: Option<usize>,
    /// What --budget counts: estimate (default), cl100k, o200k, chars or tokenizer:PATH (a
    /// tokenizer.json, or a folder holding one): the tokens of the model that reads the texts.
    #[arg(long, value_parser = crate::common::parse_counter)]
    budget_tokens: Option<std::sync::Arc<dyn folio::embed::TokenCounter>>,
    /// Keep the strategies' stores in this directory (a temporary one by default).
    #[arg(long)]
    store_dir: Option<PathBuf>,
    /// Use only the first N questions.
    #[arg(long)]
    limit: Option<usize>,
}

#[derive(Args)]
pub(crate) struct EvalArgs {
    #[command(flatten)]
    common: Common,
    /// Write every figure as CSV (one `group = all` row per strategy, then per group).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write a Markdown report.
    #[arg(long)]
    md: Option<PathBuf>,
    /// Write a PNG chart of Hit@k, full evidence and input tokens.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Write one JSON line per strategy and question: the gold spans with the chunks around
    /// them (split or not) and the top-k units returned (`folio ui --eval` shows them).
    #[arg(long)]
    jsonl: Option<PathBuf>,
}

#[derive(Args)]
pub(crate) struct ReplayArgs {
    /// A store whose versions to compare (with --target); without it, --docs and --strategy
    /// build one scratch store per strategy.
    #[arg(conflicts_with_all = ["docs", "strategies", "store_dir"])]
    store: Option<PathBuf>,
    /// A version of STORE to ask (repeatable, at least two; the first is the base the others
    /// are compared with): INDEX@VERSION, INDEX@TAG, INDEX or an alias (routed by the
    /// question's `route_key`, else its text).
    #[arg(long = "target", requires = "store")]
    targets: Vec<String>,
    /// Ask the questions that do not say who asked (no logged request, or `principals` null)
    /// with unrestricted access; without this they are refused.
    #[arg(long, requires = "store")]
    unrestricted: bool,
    /// What a version's searches return around matching children: parent, section, or
    /// window:N.
    #[arg(long, default_value = "parent", value_parser = crate::common::parse_expand)]
    expand: Expand,
    /// Print the replay between versions as one JSON document.
    #[arg(long, requires = "store")]
    json: bool,
    #[command(flatten)]
    common: Common,
    /// Write every difference (between versions: every question) as JSON Lines.
    #[arg(long)]
    jsonl: Option<PathBuf>,
}

fn parse_strategy(s: &str) -> Result<Strategy, String> {
    Strategy::parse(s).map_err(|e| e.to_string())
}

fn parse_plan(s: &str) -> Result<Plan, String> {
    Plan::parse(s).map_err(|e| e.to_string())
}

/// The loaded data and every strategy built and asked by every plan.
struct Run {
    corpus: Corpus,
    questions: Vec<Question>,
    settings: Settings,
    plans: Vec<Plan>,
    /// Per strategy, its index and its answers by each plan, in the order of `plans`.
    results: Vec<(BuiltIndex, Vec<Vec<Answer>>)>,
    /// Milliseconds embedding the questions took, per question (in batches, before any
    /// search).
    embed_millis: f64,
    // Keeps a temporary store directory alive while the stores are open.
    _workspace: Workspace,
}

impl Common {
    /// The embedder every strategy uses: `--embedder`, else the hash embedder of `--embed-dim`.
    fn embedder(&self) -> Result<Arc<dyn Embedder>, String> {
        match self.embed.build()? {
            Some(embedder) => Ok(embedder),
            None => Ok(Arc::new(HashEmbedder::new(self.embed_dim).map_err(err)?)),
        }
    }

    fn settings(&self, embedder: &dyn Embedder) -> Result<Settings, String> {
        let mut settings =
            Settings::new(embedder, self.k.clone(), self.budget).map_err(|e| format!("--{e}"))?;
        settings.budget_tokens = self.budget_tokens.clone();
        Ok(settings)
    }

    /// The rerank stage of `--rerank`, its reranker loaded.
    fn rerank_stage(&self) -> Result<Option<PlanRerank>, String> {
        let Some(spec) = &self.rerank else {
            if self.rerank_top.is_some() {
                return Err("--rerank-top needs --rerank".into());
            }
            return Ok(None);
        };
        Ok(Some(PlanRerank {
            reranker: spec.build().map_err(err)?,
            top: self.rerank_top.unwrap_or(DEFAULT_RERANK_TOP),
        }))
    }

    /// The plans asked: `--mode`, dense when none; with `--rerank` each followed by its
    /// reranked twin.
    fn plans(&self) -> Result<Vec<Plan>, String> {
        let plans = if self.plans.is_empty() {
            vec![Plan::dense()]
        } else {
            self.plans.clone()
        };
        let Some(rerank) = self.rerank_stage()? else {
            return Ok(plans);
        };
        Ok(plans
            .into_iter()
            .flat_map(|plan| {
                let reranked = plan.reranked(rerank.clone());
                [plan, reranked]
            })
            .collect())
    }

    /// How many plans [`Self::plans`] makes, without loading a reranker.
    fn plan_count(&self) -> usize {
        self.plans.len().max(1) * if self.rerank.is_some() { 2 } else { 1 }
    }

    /// Reads the data, builds every strategy and asks every question by every plan, with a
    /// progress bar.
    fn run(&self) -> Result<Run, String> {
        let docs = self
            .docs
            .as_deref()
            .ok_or("--docs FILE is needed to build the strategies")?;
        if self.strategies.is_empty() {
            return Err("give at least one --strategy".into());
        }
        let embedder = self.embedder()?;
        let settings = self.settings(embedder.as_ref())?;
        let corpus = Corpus::read(docs).map_err(err)?;
        let mut questions = read_questions(&self.queries, &corpus, self.limit).map_err(err)?;
        eprintln!(
            "{} documents, {} questions, {} strategies; embedder {}",
            corpus.len(),
            questions.len(),
            self.strategies.len(),
            settings.embedder
        );
        let workspace = Workspace::new(self.store_dir.as_deref()).map_err(err)?;
        let bar = Bar::new();
        let embedding = Instant::now();
        embed_questions(&mut questions, embedder.as_ref(), &bar).map_err(err)?;
        let embed_millis =
            embedding.elapsed().as_secs_f64() * 1000.0 / questions.len().max(1) as f64;
        let plans = self.plans()?;
        let mut results = Vec::new();
        for (n, strategy) in self.strategies.iter().enumerate() {
            let strategy = &match self.tokens {
                Some(unit) => strategy.clone().in_tokens_of(unit),
                None => strategy.clone(),
            };
            let setup = EmbedSetup {
                embedder: embedder.clone(),
                truncation: self.embed.truncation,
            };
            let built = build_index(n, strategy, &corpus, &setup, &workspace, &bar).map_err(err)?;
            for line in built.tokens.iter().flat_map(crate::common::report_lines) {
                bar.suspend(|| eprintln!("{line}"));
            }
            let mut per_plan = Vec::with_capacity(plans.len());
            for plan in &plans {
                let started = Instant::now();
                let answers =
                    ask_all(&built, &corpus, &questions, plan, &settings, &bar).map_err(err)?;
                bar.println(&format!(
                    "{strategy} {plan}: {} chunks built in {:.1} s, {} questions asked in {:.1} s",
                    built.children(),
                    built.build_secs,
                    questions.len(),
                    started.elapsed().as_secs_f64()
                ));
                per_plan.push(answers);
            }
            results.push((built, per_plan));
        }
        bar.finish();
        Ok(Run {
            corpus,
            questions,
            settings,
            plans,
            results,
            embed_millis,
            _workspace: workspace,
        })
    }
}

pub(crate) fn eval(args: EvalArgs) -> CliResult {
    let started = Instant::now();
    let run = args.common.run()?;
    let (corpus, questions, settings) = (&run.corpus, &run.questions, &run.settings);
    let reports = run
        .asked()
        .map(|(built, plan, answers)| {
            score_strategy(built, plan, corpus, questions, answers, settings)
        })
        .collect::<Result<Vec<_>, EvalError>>()
        .map_err(err)?;
    let ks = &run.settings.ks;
    let comparisons = match run.plans.iter().find(|p| p.mode == SearchMode::Dense) {
        Some(dense) => against_dense(&reports, &dense.label),
        None => Vec::new(),
    };
    print!("{}", report::terminal(&reports, ks, &comparisons));
    if let Some(path) = &args.csv {
        write(path, &report::csv(&reports, ks))?;
    }
    if let Some(path) = &args.md {
        let context = describe(&args.common, &run);
        write(
            path,
            &report::markdown(&reports, ks, &comparisons, &context),
        )?;
    }
    if let Some(path) = &args.plot {
        folio_eval::plot::write_png(&reports, run.settings.k(), path).map_err(err)?;
    }
    if let Some(path) = &args.jsonl {
        let mut out = String::new();
        for (built, plan, answers) in run.asked() {
            let lines = trace::traces(built, plan, corpus, questions, answers, settings);
            for line in lines {
                out += &serde_json::to_string(&line).map_err(err)?;
                out.push('\n');
            }
        }
        write(path, &out)?;
    }
    eprintln!("done in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

impl Run {
    /// Every strategy with every plan and its answers, strategy by strategy.
    fn asked(&self) -> impl Iterator<Item = (&BuiltIndex, &Plan, &[Answer])> {
        self.results.iter().flat_map(move |(built, per_plan)| {
            self.plans
                .iter()
                .zip(per_plan)
                .map(move |(plan, answers)| (built, plan, answers.as_slice()))
        })
    }
}

/// The settings line of the Markdown report.
fn describe(common: &Common, run: &Run) -> String {
    format!(
        "Documents `{}` ({}), questions `{}` ({}); embedder {} ({:.2} ms a question, in \
         batches); k = {:?}; token budget {} ({}); exact search, ACL off, near-duplicate \
         removal off.",
        common.docs.as_deref().unwrap_or(Path::new("")).display(),
        run.corpus.len(),
        common.queries.display(),
        run.questions.len(),
        run.settings.embedder,
        run.embed_millis,
        run.settings.ks,
        run.settings
            .token_budget
            .map_or("none".to_string(), |t| t.to_string()),
        run.settings
            .budget_tokens
            .as_ref()
            .map_or("estimate".to_string(), |c| c.name()),
    )
}

pub(crate) fn replay(args: ReplayArgs) -> CliResult {
    if let Some(store) = &args.store {
        return replay_versions(&args, store);
    }
    if args.common.strategies.len() * args.common.plan_count() < 2 {
        return Err(
            "replay compares strategies or plans: give at least two --strategy or --mode".into(),
        );
    }
    let run = args.common.run()?;
    // One plan: sides are named by their strategy alone, as before plans existed.
    let named = run.plans.len() > 1;
    let labels: Vec<String> = run
        .asked()
        .map(|(built, plan, _)| match named {
            true => format!("{} {plan}", built.strategy.label),
            false => built.strategy.label.clone(),
        })
        .collect();
    let sides: Vec<Side> = run
        .asked()
        .zip(&labels)
        .map(|((built, _, answers), label)| Side {
            label,
            ..Side::of(built, answers)
        })
        .collect();
    let (base, others) = sides
        .split_first()
        .ok_or("replay needs at least two strategies or plans")?;
    let differences: Vec<_> = others
        .iter()
        .flat_map(|other| replay::compare(base, other, &run.corpus, &run.questions, &run.settings))
        .collect();
    print_label_table(&differences, run.questions.len());
    if let Some(path) = &args.jsonl {
        let mut out = String::new();
        for d in &differences {
            out += &serde_json::to_string(d).map_err(err)?;
            out.push('\n');
        }
        write(path, &out)?;
    }
    Ok(())
}

/// `folio replay STORE --target A --target B`: the question set asked of each version.
fn replay_versions(args: &ReplayArgs, path: &Path) -> CliResult {
    if args.targets.len() < 2 {
        return Err("give at least two --target (the first is the base)".into());
    }
    let common = &args.common;
    let store = common
        .embed
        .open(path, folio::store::Store::builder().read_only(true))?;
    crate::common::check_embedders(&store)?;
    let mut replay = VersionReplay::new(args.targets.iter().cloned());
    replay.k = common.k.iter().copied().max().unwrap_or(replay.k);
    replay.token_budget = common.budget;
    replay.budget_tokens = common.budget_tokens.clone();
    replay.expand = args.expand;
    replay.unrestricted = args.unrestricted;
    replay.mode = match common.plans.as_slice() {
        [] => SearchMode::Dense,
        [plan] => plan.mode,
        _ => return Err("a replay between versions asks every target one way: give at most one --mode (to compare plans, replay strategies)".into()),
    };
    replay.rerank = common.rerank_stage()?;
    let set = QuestionSet::read(&common.queries, common.limit).map_err(err)?;
    let report = replay.run(&store, set).map_err(err)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(err)?);
    } else {
        print!("{}", version_report::tables(&report));
    }
    if let Some(path) = &args.jsonl {
        let mut out = String::new();
        for question in &report.questions {
            out += &serde_json::to_string(question).map_err(err)?;
            out.push('\n');
        }
        write(path, &out)?;
    }
    Ok(())
}

fn print_label_table(differences: &[replay::Difference], questions: usize) {
    let mut header = vec![
        "better".to_string(),
        "worse".to_string(),
        "questions".to_string(),
    ];
    header.extend(Label::ALL.iter().map(|l| l.name().to_string()));
    let rows: Vec<Vec<String>> = replay::label_counts(differences)
        .into_iter()
        .map(|pair| {
            let mut row = vec![pair.better, pair.worse, pair.questions.to_string()];
            row.extend(pair.per_label.iter().map(usize::to_string));
            row
        })
        .collect();
    println!(
        "{} differences over {questions} questions (a difference: one strategy of the pair gets \
         full evidence or a hit and the other not; labels count questions, one may carry several)",
        differences.len()
    );
    print!("{}", report::table(&header, &rows, false));
}

fn write(path: &Path, text: &str) -> CliResult {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}
