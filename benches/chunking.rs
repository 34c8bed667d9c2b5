//! Chunking throughput (MB/s) of folio's structure-aware chunker beside text-splitter, at
//! the same chunk size in characters.
//!
//! Corpora: the chunkeval plain-text documents, a Markdown set (the conditionalqa pages
//! plus the CommonMark spec), Rust source code (this crate's own `src/`, read by
//! tree-sitter beside text-splitter's `CodeSplitter` with the same grammar) and a generated
//! two-column PDF paper (`folio_testkit::pdf`: text extraction, then chunking of the
//! extracted text). The `../shared/data` sets are optional: without them only the
//! CommonMark spec (shipped in `tests/data`), the Rust sources and the PDF are measured.
//!
//! Run: `cargo bench --bench chunking -- --quick`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use folio::chunk::{chunk_document, ChildStrategy, ChunkSpec, ParentStrategy, SourceFormat};
use text_splitter::{CodeSplitter, MarkdownSplitter, TextSplitter};

/// Chunk size in characters, for every chunker.
const SIZE: usize = 500;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data");
const SPEC: &str = include_str!("../tests/data/commonmark-spec-0.31.2.txt");

/// The `text` field of every line of a JSONL file, or nothing if the file is absent.
fn texts(path: &Path) -> Vec<String> {
    let Ok(data) = std::fs::read_to_string(path) else {
        eprintln!("skipping {}: not found", path.display());
        return Vec::new();
    };
    data.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|doc| doc.get("text")?.as_str().map(str::to_string))
        .collect()
}

/// Structure-aware children only (what text-splitter does), and with section parents.
fn specs() -> [(&'static str, ChunkSpec); 2] {
    let child = ChildStrategy::Structure {
        target: SIZE,
        overlap: 0,
    };
    [
        (
            "folio",
            ChunkSpec {
                child,
                parent: ParentStrategy::Child,
                heading_depth: 0,
                ..ChunkSpec::default()
            },
        ),
        (
            "folio+parents",
            ChunkSpec {
                child,
                parent: ParentStrategy::Section { max: 4 * SIZE },
                heading_depth: 0,
                ..ChunkSpec::default()
            },
        ),
    ]
}

fn group<'c>(
    c: &'c mut Criterion,
    name: &str,
    docs: &[String],
) -> BenchmarkGroup<'c, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Bytes(docs.iter().map(|d| d.len() as u64).sum()));
    group.sample_size(10);
    group
}

fn bench_folio(
    group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    docs: &[String],
    format: SourceFormat,
) {
    for (name, spec) in specs() {
        group.bench_function(name, |b| {
            b.iter(|| {
                docs.iter()
                    .map(|d| chunk_document(black_box(d), format, &spec).children.len())
                    .sum::<usize>()
            })
        });
    }
}

fn plain_text(c: &mut Criterion) {
    let docs = texts(&Path::new(SHARED).join("chunkeval/docs.jsonl"));
    if docs.is_empty() {
        return;
    }
    let mut group = group(c, "chunkeval-text", &docs);
    bench_folio(&mut group, &docs, SourceFormat::Text);
    let text = TextSplitter::new(SIZE);
    group.bench_function("text-splitter", |b| {
        b.iter(|| {
            docs.iter()
                .map(|d| text.chunk_indices(black_box(d)).count())
                .sum::<usize>()
        })
    });
    let markdown = MarkdownSplitter::new(SIZE);
    group.bench_function("text-splitter-markdown", |b| {
        b.iter(|| {
            docs.iter()
                .map(|d| markdown.chunk_indices(black_box(d)).count())
                .sum::<usize>()
        })
    });
    group.finish();
}

fn markdown(c: &mut Criterion) {
    let mut docs = texts(&Path::new(SHARED).join("conditionalqa/docs.jsonl"));
    docs.push(SPEC.to_string());
    let mut group = group(c, "markdown", &docs);
    bench_folio(&mut group, &docs, SourceFormat::Markdown);
    let splitter = MarkdownSplitter::new(SIZE);
    group.bench_function("text-splitter-markdown", |b| {
        b.iter(|| {
            docs.iter()
                .map(|d| splitter.chunk_indices(black_box(d)).count())
                .sum::<usize>()
        })
    });
    group.finish();
}

/// Every `.rs` file under `dir`, in path order.
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn rust_code(c: &mut Criterion) {
    let mut paths = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut paths,
    );
    paths.sort();
    let docs: Vec<String> = paths
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let mut group = group(c, "rust-code", &docs);
    bench_folio(&mut group, &docs, SourceFormat::Rust);
    let splitter = CodeSplitter::new(tree_sitter_rust::LANGUAGE, SIZE).unwrap();
    group.bench_function("text-splitter-code", |b| {
        b.iter(|| {
            docs.iter()
                .map(|d| splitter.chunk_indices(black_box(d)).count())
                .sum::<usize>()
        })
    });
    group.finish();
}

/// PDF: extracting the text layer (throughput in PDF bytes), then chunking what it gives.
#[cfg(feature = "pdf")]
fn pdf(c: &mut Criterion) {
    let paper = folio_testkit::pdf::paper(16, 8);
    let pages = paper.words.last().map_or(0, |w| w.1);
    let text = folio::input::pdf::extract(&paper.bytes).unwrap();
    eprintln!(
        "pdf: {pages} pages, {} bytes of PDF, {} bytes of text",
        paper.bytes.len(),
        text.len()
    );
    let mut extract = c.benchmark_group("pdf-extract");
    extract.throughput(Throughput::Bytes(paper.bytes.len() as u64));
    extract.sample_size(10);
    extract.bench_function("folio", |b| {
        b.iter(|| folio::input::pdf::extract(black_box(&paper.bytes)).map(|t| t.len()))
    });
    extract.finish();
    let docs = [text];
    let mut group = group(c, "pdf-text", &docs);
    bench_folio(&mut group, &docs, SourceFormat::Pdf);
    let splitter = TextSplitter::new(SIZE);
    group.bench_function("text-splitter", |b| {
        b.iter(|| splitter.chunk_indices(black_box(&docs[0])).count())
    });
    group.finish();
}

#[cfg(not(feature = "pdf"))]
fn pdf(_: &mut Criterion) {}

criterion_group!(benches, plain_text, markdown, rust_code, pdf);
criterion_main!(benches);
