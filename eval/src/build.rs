//! Builds one index per strategy: a scratch store file holding every document, chunked as
//! the strategy says and embedded with the evaluation's embedder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

use crate::data::{read_external_chunks, Corpus, ExternalChunks};
use crate::error::EvalError;
use crate::spec::{Strategy, StrategyKind};
use folio::chunk::{ChunkSpec, Chunked, EmbedTexts};
use folio::embed::{Embedder, TokenStats, Truncation, TruncationReport};
use folio::input::InputError;
use folio::store::{GraphParams, Progress, Store, WriteError, DEFAULT_INDEX};

/// Where the scratch stores live: a directory the caller keeps, or a temporary one removed
/// when this is dropped.
pub struct Workspace {
    dir: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

impl Workspace {
    /// `dir` (created if missing), or a fresh temporary directory.
    pub fn new(dir: Option<&Path>) -> Result<Workspace, EvalError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| EvalError::from(InputError::Io { path, source })
        };
        match dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(io(dir))?;
                Ok(Workspace {
                    dir: dir.to_path_buf(),
                    _temp: None,
                })
            }
            None => {
                let temp = tempfile::tempdir().map_err(io(&std::env::temp_dir()))?;
                Ok(Workspace {
                    dir: temp.path().to_path_buf(),
                    _temp: Some(temp),
                })
            }
        }
    }

    /// The store file of strategy number `n`, named after its label.
    fn store_path(&self, n: usize, label: &str) -> PathBuf {
        let safe: String = label
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        self.dir.join(format!("{n:02}-{safe}.folio"))
    }
}

/// A strategy's index, ready to search, with how each document was cut.
pub struct BuiltIndex {
    /// The strategy.
    pub strategy: Strategy,
    /// The store holding its index.
    pub store: Store,
    /// Per document of the corpus, in corpus order.
    pub chunkings: Vec<Chunked>,
    /// Seconds the build took.
    pub build_secs: f64,
    /// The chunks' token counts in the embedder's tokens, when it has a tokenizer.
    pub tokens: Option<TruncationReport>,
    /// The store file's size: the index plus the documents' texts (the same for every
    /// strategy).
    pub index_bytes: u64,
}

impl BuiltIndex {
    /// Child chunks over the corpus.
    pub fn children(&self) -> usize {
        self.chunkings.iter().map(|c| c.children.len()).sum()
    }

    /// Parent chunks over the corpus.
    pub fn parents(&self) -> usize {
        self.chunkings.iter().map(|c| c.parents.len()).sum()
    }

    /// Whether some consecutive children of a document share text.
    pub fn has_overlap(&self) -> bool {
        self.chunkings.iter().any(|c| {
            c.children
                .windows(2)
                .any(|w| w[1].span.start < w[0].span.end)
        })
    }
}

/// The embedder every strategy is built with.
#[derive(Clone)]
pub struct EmbedSetup {
    /// The same model for every strategy.
    pub embedder: Arc<dyn Embedder>,
    /// What happens to chunks longer than it reads.
    pub truncation: Truncation,
}

/// Builds strategy number `n` into a new store file under `workspace` (an old file of the
/// same name is replaced). Every index searches exactly (no graph), so the comparison
/// measures chunking, not graph recall.
pub fn build_index(
    n: usize,
    strategy: &Strategy,
    corpus: &Corpus,
    setup: &EmbedSetup,
    workspace: &Workspace,
    progress: &dyn Progress,
) -> Result<BuiltIndex, EvalError> {
    let path = workspace.store_path(n, &strategy.label);
    if path.exists() {
        std::fs::remove_file(&path).map_err(|source| InputError::Io {
            path: path.clone(),
            source,
        })?;
    }
    let (spec, external) = match &strategy.kind {
        StrategyKind::Builtin { spec, .. } => (*spec, None),
        StrategyKind::External { path } => (
            ChunkSpec::default(),
            Some(read_external_chunks(path, corpus)?),
        ),
    };
    // Chunks that bring their own embed texts are embedded here and stored with their vectors.
    let mut given = match &external {
        Some(ExternalChunks {
            chunked,
            embed_texts: Some(texts),
        }) => Some(embed_given(
            &strategy.label,
            corpus,
            chunked,
            texts,
            spec,
            setup,
            progress,
        )?),
        _ => None,
    };
    let options = Store::builder()
        .create(true)
        .embedder(setup.embedder.clone())
        .truncation(setup.truncation)
        .spec(spec)
        .graph(GraphParams {
            min_graph_size: u32::MAX,
            ..GraphParams::default()
        });
    let started = Instant::now();
    let store = options.open(&path)?;
    let mut batch = store.batch();
    for (i, doc) in corpus.docs().iter().enumerate() {
        match (&external, &mut given) {
            (Some(chunks), Some((vectors, _))) => batch.upsert_prepared(
                doc.clone(),
                Some(chunks.chunked[i].clone()),
                BTreeMap::from([(DEFAULT_INDEX.to_string(), std::mem::take(&mut vectors[i]))]),
            ),
            (Some(chunks), None) => batch.upsert_chunked(doc.clone(), chunks.chunked[i].clone()),
            (None, _) => batch.upsert(doc.clone()),
        };
    }
    let receipt = batch.commit_with(progress)?;
    let build_secs = started.elapsed().as_secs_f64();
    let tokens = match given {
        Some((_, report)) => report,
        None => receipt.truncation.into_iter().next(),
    };
    let chunkings = match external {
        Some(chunks) => chunks.chunked,
        // Cut again as the store did (splits of chunks too long for the model included).
        None => corpus
            .docs()
            .par_iter()
            .map(|d| store.plan_chunked(folio::store::DEFAULT_INDEX, d))
            .collect::<Result<_, _>>()?,
    };
    let index_bytes = store.stats()?.file_bytes;
    let built = BuiltIndex {
        strategy: strategy.clone(),
        store,
        chunkings,
        build_secs,
        tokens,
        index_bytes,
    };
    check_stored(&built)?;
    Ok(built)
}

/// Embeds external chunks of which some bring their own `embed_text` (the others embed what
/// the store would: their visible text): the vectors per document, row-major, and the token
/// report the store would make. Given texts are never split, only reported (or refused),
/// as the store treats application-cut chunks; late chunking embeds spans in their
/// document, so it cannot embed given texts.
fn embed_given(
    label: &str,
    corpus: &Corpus,
    chunked: &[Chunked],
    given: &[Vec<Option<String>>],
    spec: ChunkSpec,
    setup: &EmbedSetup,
    progress: &dyn Progress,
) -> Result<(Vec<Vec<f32>>, Option<TruncationReport>), EvalError> {
    let embedder = setup.embedder.as_ref();
    if embedder.late_chunking() {
        return Err(EvalError::Invalid(format!(
            "strategy `{label}`: its chunks give an embed_text, which late chunking cannot embed \
             (it embeds spans in their document)"
        )));
    }
    let total = chunked.iter().map(|c| c.children.len()).sum::<usize>();
    progress.stage(&format!("embed [{label}]"), total as u64);
    let max = embedder.max_input_tokens();
    let mut counts = Vec::new();
    let mut over = Vec::new();
    let mut vectors = Vec::with_capacity(chunked.len());
    for ((doc, chunks), given) in corpus.docs().iter().zip(chunked).zip(given) {
        let visible = EmbedTexts::new(&doc.text, doc.format)
            .with_path(&doc.doc_id)
            .with_form(spec.embed_form);
        let texts: Vec<String> = chunks
            .children
            .iter()
            .zip(given)
            .map(|(c, text)| {
                text.clone()
                    .unwrap_or_else(|| visible.get(&c.section_path, c.span, spec.heading_depth))
            })
            .collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let fit = folio::ingest::fit(&doc.doc_id, &texts, embedder, setup.truncation)
            .map_err(WriteError::from)?;
        counts.extend(fit.counts);
        over.extend(fit.over);
        let rows = if texts.is_empty() {
            Vec::new()
        } else {
            embedder.embed(&texts).map_err(WriteError::from)?
        };
        progress.advance(texts.len() as u64);
        vectors.push(rows);
    }
    let report = (!counts.is_empty()).then(|| TruncationReport {
        index: DEFAULT_INDEX.to_string(),
        embedder: embedder.name().to_string(),
        max_tokens: max,
        setting: setup.truncation,
        stats: TokenStats::of(&mut counts),
        over,
        split_into: 0,
    });
    Ok((vectors, report))
}

/// The store must hold the children the metrics are computed on.
fn check_stored(built: &BuiltIndex) -> Result<(), EvalError> {
    let stored: u64 = built
        .store
        .stats()?
        .indexes
        .iter()
        .map(|i| i.live_children)
        .sum();
    if stored != built.children() as u64 {
        return Err(EvalError::Invalid(format!(
            "strategy `{}`: the store holds {stored} chunks, the chunker cut {}",
            built.strategy,
            built.children()
        )));
    }
    Ok(())
}
