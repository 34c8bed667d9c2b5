//! Ingest, the pure pipeline from documents to checked rows: each document cut for an index
//! (chunks, the texts to embed, their token counts, splits where a chunk is longer than the
//! model reads), embedded, the vectors checked; no storage. The store runs it before its
//! writer lock, so a rollback, an alias switch or another writer never waits for a model.
//!
//! The texts of every document of a batch are embedded together, sorted by length (less
//! padding for transformer models) in slices of [`EMBED_SLICE`] texts, each reported to the
//! progress bar. Every text is first counted in the embedder's own tokens: chunks above the
//! model's limit are split, reported or refused (see [`Truncation`]).

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use rayon::prelude::*;

use crate::chunk::{chunk_document_with, ChildPiece, ChunkSpec, Chunked, EmbedTexts, SourceFormat};
use crate::document::Document;
use crate::embed::EmbedderIdentity;
use crate::embed::{
    embed_by_length, split_span, unit_counter, validate, EmbedError, Embedder, Oversized,
    TokenCounter, TokenStats, Truncation, TruncationReport,
};
use crate::index::distance::{has_direction, normalize};
use crate::index::Metric;
use crate::progress::Progress;
use crate::tokens::EstimateCounter;
mod error;

pub use error::{DocumentProblem, IngestError, Piece};

/// Texts per call to the embedder (each call is one progress step).
pub(crate) const EMBED_SLICE: usize = 128;

/// Tokens kept free below the model's limit when splitting: a piece cut at token starts
/// can tokenize a little longer on its own.
const SPLIT_MARGIN: usize = 4;

/// What ingest needs of an index: its id, how it cuts and who embeds for it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IndexModel {
    pub id: u32,
    pub spec: ChunkSpec,
    pub embedder: EmbedderIdentity,
}

/// What preparing for one index needs of the store: the index's embedder (when
/// registered) and what to do with chunks longer than it reads.
#[derive(Clone)]
pub(crate) struct Models {
    pub embedder: Option<Arc<dyn Embedder>>,
    pub truncation: Truncation,
}

/// Where a batch keeps its upserts until they are cut: each decoded when needed.
pub(crate) trait Staged: Sync {
    /// The document and the application's chunks at `at`.
    fn open(&self, at: &Range<usize>) -> Result<(Document, Option<Chunked>), IngestError>;
}

/// One upsert of a batch as an index sees it.
pub(crate) struct Upsert<'a> {
    /// The operation's position in the batch.
    pub op: usize,
    /// The document and the chunks the application cut, staged at `at`.
    pub staged: &'a dyn Staged,
    pub at: Range<usize>,
    /// Vectors the application computed for this index.
    pub vectors: Option<&'a [f32]>,
}

impl Upsert<'_> {
    /// The document and the application's chunks, decoded from the batch.
    fn open(&self) -> Result<(Document, Option<Chunked>), IngestError> {
        self.staged.open(&self.at)
    }
}

/// One index's chunks and vectors for a batch.
pub(crate) struct Prepared<'a> {
    /// The index it was prepared for: a commit uses it only while the index still matches.
    pub key: IndexModel,
    /// Per upsert, in batch order: the op position, its chunks (`None`: the application's,
    /// left in the batch) and their vectors, checked but not yet normalised
    /// ([`normalise_rows`] runs on the segment's copy): vectors the application brought
    /// are borrowed, never copied per document.
    pub docs: Vec<(usize, Option<Chunked>, Cow<'a, [f32]>)>,
    pub report: Option<TruncationReport>,
}

/// One document cut for an index: its chunks, the texts to embed (empty when the
/// application brought vectors) and the token counts of the chunks as first cut.
struct Cut {
    /// The index's own chunks; `None` for the application's (read from the batch again
    /// when needed, not held per document).
    chunked: Option<Chunked>,
    children: usize,
    texts: Vec<String>,
    counts: Vec<usize>,
    over: Vec<Oversized>,
    pieces: usize,
    /// The children's vectors, embedded with the cut by a late-chunking embedder.
    late: Vec<f32>,
}

/// Every document of a batch cut for one index, with the token report of the cut.
struct Cuts {
    cuts: Vec<Cut>,
    report: Option<TruncationReport>,
    embedder: Option<Arc<dyn Embedder>>,
}

/// Chunks and embeds `upserts` for the index `name` described by `record`.
pub(crate) fn prepare<'a>(
    models: &Models,
    name: &str,
    record: &IndexModel,
    upserts: &[Upsert<'a>],
    progress: &dyn Progress,
) -> Result<Prepared<'a>, IngestError> {
    let dim = record.embedder.dimension as usize;
    let Cuts {
        mut cuts,
        report,
        embedder,
    } = cut_all(
        models,
        name,
        record,
        upserts,
        CutFor::Commit(models.truncation),
        progress,
    )?;
    let mut vectors = match &embedder {
        Some(e) if e.late_chunking() => cuts
            .iter_mut()
            .map(|c| std::mem::take(&mut c.late))
            .collect(),
        Some(e) => embed_all(e.as_ref(), name, &cuts, dim, progress)?,
        None => vec![Vec::new(); cuts.len()],
    };
    let mut docs = Vec::with_capacity(upserts.len());
    for ((u, cut), embedded) in upserts.iter().zip(cuts).zip(vectors.iter_mut()) {
        let rows = match u.vectors {
            Some(given) => Cow::Borrowed(given),
            None => Cow::Owned(std::mem::take(embedded)),
        };
        let children = cut.children;
        if rows.len() != children * dim {
            return Err(IngestError::InvalidDocument {
                doc_id: u.open()?.0.doc_id,
                problem: DocumentProblem::VectorCount {
                    index: name.to_string(),
                    chunks: children,
                    dimension: dim,
                    expected: children * dim,
                    found: rows.len(),
                },
            });
        }
        validate(&rows, dim)?;
        if let Err(chunk) = check_directions(&rows, dim, record.embedder.metric) {
            return Err(IngestError::InvalidDocument {
                doc_id: u.open()?.0.doc_id,
                problem: DocumentProblem::ZeroVector {
                    index: name.to_string(),
                    chunk,
                },
            });
        }
        docs.push((u.op, cut.chunked, rows));
    }
    Ok(Prepared {
        key: record.clone(),
        docs,
        report,
    })
}

/// What [`cut_all`] cuts for, under which truncation setting.
#[derive(Clone, Copy)]
enum CutFor {
    /// A commit: a late-chunking embedder embeds each document's children as it is cut.
    Commit(Truncation),
    /// A dry run: chunks and token counts only.
    DryRun(Truncation),
}

/// Cuts every upsert of a batch for the index `name` (in parallel) and counts the chunks in
/// its embedder's tokens; for a commit, a late-chunking embedder embeds each document's
/// children as it is cut (each staged upsert is decoded once per index).
fn cut_all(
    models: &Models,
    name: &str,
    record: &IndexModel,
    upserts: &[Upsert<'_>],
    purpose: CutFor,
    progress: &dyn Progress,
) -> Result<Cuts, IngestError> {
    let (truncation, embed) = match purpose {
        CutFor::Commit(truncation) => (truncation, true),
        CutFor::DryRun(truncation) => (truncation, false),
    };
    let embedder = models.embedder.clone();
    if embedder.is_none() && upserts.iter().any(|u| u.vectors.is_none()) {
        return Err(IngestError::EmbedderNotRegistered {
            index: name.to_string(),
            embedder: record.embedder.name.clone(),
        });
    }
    let sizes = size_counter(&record.spec, embedder.as_deref())?;
    let late = embed && embedder.as_ref().is_some_and(|e| e.late_chunking());
    let stage = if late {
        "chunk and late-embed"
    } else {
        "chunk"
    };
    progress.stage(&format!("{stage} [{name}]"), upserts.len() as u64);
    let cuts: Vec<Cut> = upserts
        .par_iter()
        .map(|u| {
            let (doc, chunks) = u.open()?;
            let embedder = embedder.as_deref().filter(|_| u.vectors.is_none());
            let mut cut = cut(
                &doc,
                &record.spec,
                chunks.as_ref(),
                (embedder, sizes.as_deref()),
                truncation,
            )?;
            if let Some(embedder) = embedder.filter(|_| late && !cut.texts.is_empty()) {
                let spans: Vec<(usize, usize)> = cut
                    .chunked
                    .as_ref()
                    .or(chunks.as_ref())
                    .map_or(&[][..], |c| c.children.as_slice())
                    .iter()
                    .map(|c| (c.span.start, c.span.end))
                    .collect();
                let (input, spans) = crate::chunk::late_input(&doc.text, doc.format, &spans);
                cut.late = embedder.embed_spans(&input, &spans)?;
            }
            progress.advance(1);
            Ok(cut)
        })
        .collect::<Result<_, IngestError>>()?;

    let report = embedder
        .as_deref()
        .filter(|_| cuts.iter().any(|c| !c.counts.is_empty()))
        .map(|e| {
            let mut counts: Vec<usize> =
                cuts.iter().flat_map(|c| c.counts.iter().copied()).collect();
            TruncationReport {
                index: name.to_string(),
                embedder: e.name().to_string(),
                max_tokens: e.max_input_tokens(),
                setting: truncation,
                stats: TokenStats::of(&mut counts),
                over: cuts.iter().flat_map(|c| c.over.iter().cloned()).collect(),
                split_into: cuts.iter().map(|c| c.pieces).sum(),
            }
        });
    Ok(Cuts {
        cuts,
        report,
        embedder,
    })
}

/// What a commit would cut for the index `name`, nothing embedded or written: its children
/// (oversized ones split as `truncation` says) and the token report.
pub(crate) fn dry_run(
    models: &Models,
    name: &str,
    record: &IndexModel,
    upserts: &[Upsert<'_>],
    truncation: Truncation,
    progress: &dyn Progress,
) -> Result<(usize, Option<TruncationReport>), IngestError> {
    let cuts = cut_all(
        models,
        name,
        record,
        upserts,
        CutFor::DryRun(truncation),
        progress,
    )?;
    let children = cuts.cuts.iter().map(|c| c.children).sum();
    Ok((children, cuts.report))
}

/// Every text of `cuts` embedded, longest last, in slices; the vectors per cut.
fn embed_all(
    embedder: &dyn Embedder,
    name: &str,
    cuts: &[Cut],
    dim: usize,
    progress: &dyn Progress,
) -> Result<Vec<Vec<f32>>, IngestError> {
    let texts: Vec<&str> = cuts
        .iter()
        .flat_map(|c| c.texts.iter().map(String::as_str))
        .collect();
    progress.stage(&format!("embed [{name}]"), texts.len() as u64);
    let rows = embed_by_length(
        &texts,
        dim,
        EMBED_SLICE,
        |batch| embedder.embed(batch),
        |n| progress.advance(n as u64),
    )?;
    let mut rows = rows.chunks_exact(dim.max(1));
    Ok(cuts
        .iter()
        .map(|c| {
            rows.by_ref()
                .take(c.texts.len())
                .flatten()
                .copied()
                .collect()
        })
        .collect())
}

/// The counter an index's sizes in tokens are counted with: the one its spec's unit names,
/// the embedder's own for [`crate::chunk::SizeUnit::Embedder`]; `None` in characters.
fn size_counter(
    spec: &ChunkSpec,
    embedder: Option<&dyn Embedder>,
) -> Result<Option<Arc<dyn TokenCounter>>, EmbedError> {
    match spec.token_unit() {
        Some(unit) => unit_counter(unit, embedder.and_then(|e| e.token_counter())),
        None => Ok(None),
    }
}

/// How an index cuts `text` with its `spec`, sizes in tokens counted as ingest counts them
/// (with `embedder`'s own tokenizer for [`crate::chunk::SizeUnit::Embedder`]), before a
/// child too long for the model is split: a stored child inside one of these children,
/// not equal to it, is a piece of a split.
pub fn spec_cut(
    text: &str,
    format: SourceFormat,
    spec: &ChunkSpec,
    embedder: Option<&dyn Embedder>,
) -> Result<Chunked, EmbedError> {
    let sizes = size_counter(spec, embedder)?;
    Ok(cut_with(text, format, spec, sizes.as_deref()))
}

fn cut_with(
    text: &str,
    format: SourceFormat,
    spec: &ChunkSpec,
    sizes: Option<&dyn TokenCounter>,
) -> Chunked {
    match sizes {
        Some(counter) => chunk_document_with(text, format, spec, counter),
        None => chunk_document_with(text, format, spec, &EstimateCounter),
    }
}

/// Cuts `doc` for an index: its own chunks or the application's (token sizes counted by
/// `sizes`), then (with an embedder) the embed texts, counted in the model's tokens and
/// split, reported or refused above the model's limit. Application-cut chunks are never
/// split, only reported.
fn cut(
    doc: &Document,
    spec: &ChunkSpec,
    given: Option<&Chunked>,
    (embedder, sizes): (Option<&dyn Embedder>, Option<&dyn TokenCounter>),
    truncation: Truncation,
) -> Result<Cut, EmbedError> {
    let mut own = match given {
        Some(_) => None,
        None => Some(cut_with(&doc.text, doc.format, spec, sizes)),
    };
    let Some(embedder) = embedder else {
        return Ok(Cut {
            children: own.as_ref().or(given).map_or(0, |c| c.children.len()),
            chunked: own,
            texts: Vec::new(),
            counts: Vec::new(),
            over: Vec::new(),
            pieces: 0,
            late: Vec::new(),
        });
    };
    let visible = EmbedTexts::of_document(&doc.doc_id, &doc.text, doc.format, spec);
    let text_of = |c: &ChildPiece| visible.get(&c.section_path, c.span, spec.heading_depth);
    let mut texts: Vec<String> = match own.as_ref().or(given) {
        Some(chunked) => chunked.children.iter().map(text_of).collect(),
        None => Vec::new(),
    };
    let max = embedder.max_input_tokens();
    let Fit { counts, over } = fit(&doc.doc_id, &refs(&texts), embedder, truncation)?;
    let mut pieces = 0;
    // Refused ones never reach here (`fit` refused them); reported ones are embedded whole.
    if truncation == Truncation::Split && !over.is_empty() {
        if let (Some(chunked), Some(counter)) = (own.as_mut(), embedder.token_counter()) {
            // Back to front, so earlier positions stay valid.
            for o in over.iter().rev() {
                let child = chunked.children[o.chunk].clone();
                let body = &doc.text[child.span.start..child.span.end];
                let starts = counter.starts(body);
                let overhead = o.tokens.saturating_sub(starts.len());
                let budget = max.saturating_sub(overhead + SPLIT_MARGIN);
                if budget == 0 {
                    continue;
                }
                let spans =
                    split_span(&doc.text, child.span.start, child.span.end, &starts, budget);
                pieces += spans.len();
                let split: Vec<ChildPiece> = spans
                    .into_iter()
                    .map(|(start, end)| ChildPiece {
                        span: crate::chunk::Span { start, end },
                        ..child.clone()
                    })
                    .collect();
                let split_texts: Vec<String> = split.iter().map(text_of).collect();
                chunked.children.splice(o.chunk..=o.chunk, split);
                texts.splice(o.chunk..=o.chunk, split_texts);
            }
        }
    }
    Ok(Cut {
        children: own.as_ref().or(given).map_or(0, |c| c.children.len()),
        chunked: own,
        texts,
        counts,
        over,
        pieces,
        late: Vec::new(),
    })
}

/// Whether a document's embed texts fit the model: each text's count in the model's own
/// tokens, and those above its limit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fit {
    /// Each text's tokens as the model sees them, in order; empty when the embedder has no
    /// limit or cannot count.
    pub counts: Vec<usize>,
    /// The texts above the model's limit ([`Embedder::max_input_tokens`]).
    pub over: Vec<Oversized>,
}

/// Counts `texts`, the embed texts of `doc_id`'s chunks in order, in `embedder`'s tokens
/// and finds those longer than the model reads; under [`Truncation::Refuse`] the first of
/// them is [`EmbedError::TooLong`]. The one place that decides whether a chunk fits the
/// model: the store's ingest and the evaluation harness both ask here, and what they do
/// with the rest (split, report) follows `truncation`.
pub fn fit(
    doc_id: &str,
    texts: &[&str],
    embedder: &dyn Embedder,
    truncation: Truncation,
) -> Result<Fit, EmbedError> {
    let max = embedder.max_input_tokens();
    let counts = match max {
        usize::MAX => Vec::new(),
        _ => embedder.input_tokens(texts).unwrap_or_default(),
    };
    let over: Vec<Oversized> = counts
        .iter()
        .enumerate()
        .filter(|&(_, &n)| n > max)
        .map(|(chunk, &tokens)| Oversized {
            doc_id: doc_id.to_string(),
            chunk,
            tokens,
        })
        .collect();
    if let (Truncation::Refuse, Some(first)) = (truncation, over.first()) {
        return Err(EmbedError::TooLong {
            doc_id: doc_id.to_string(),
            chunk: first.chunk,
            tokens: first.tokens,
            max,
        });
    }
    Ok(Fit { counts, over })
}

fn refs(texts: &[String]) -> Vec<&str> {
    texts.iter().map(String::as_str).collect()
}

/// How `store`'s index `record` cuts `doc`, splits included: what a commit would store.
pub(crate) fn plan_chunks(
    models: &Models,
    record: &IndexModel,
    doc: &Document,
) -> Result<Chunked, EmbedError> {
    let embedder: Option<Arc<dyn Embedder>> = models.embedder.clone();
    let sizes = size_counter(&record.spec, embedder.as_deref())?;
    let with = (embedder.as_deref(), sizes.as_deref());
    let cut = cut(doc, &record.spec, None, with, models.truncation)?;
    Ok(cut.chunked.unwrap_or_default())
}

/// Cosine rows are stored unit-length so a dot product is the score; `Err(row)` names a
/// zero row, which has no direction.
fn check_directions(vectors: &[f32], dim: usize, metric: Metric) -> Result<(), usize> {
    if metric != Metric::Cosine || dim == 0 {
        return Ok(());
    }
    match vectors.chunks_exact(dim).position(|v| !has_direction(v)) {
        Some(row) => Err(row),
        None => Ok(()),
    }
}

/// Scales cosine rows (checked by [`check_directions`]) to unit length.
pub(crate) fn normalise_rows(vectors: &mut [f32], dim: usize, metric: Metric) {
    if metric == Metric::Cosine && dim > 0 {
        vectors.chunks_exact_mut(dim).for_each(|v| {
            normalize(v);
        });
    }
}
