//! Format detection (issue 14, item 7) on files the test carries (`tests/data/formats/`):
//! formats told by content when the extension says nothing, JSON Lines records without a
//! `format`, `--format` overriding detection, binary files refused with their name and
//! nothing written to the store, and PDF files read by their extension or magic number.

use std::path::{Path, PathBuf};

use crate::folio;
use folio_testkit::cli::{self, utf8 as s};

use folio::chunk::{chunk_document, ChunkSpec};
use folio::input::{read_paths, FileKind, FileRoot, InputError};
use folio::Document;
use folio::SourceFormat;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/formats")
}

fn data(name: &str) -> PathBuf {
    data_dir().join(name)
}

/// The documents of `paths`, file ids relative to `root`.
fn read_docs(
    paths: &[PathBuf],
    root: &Path,
    format: Option<FileKind>,
) -> Result<Vec<Document>, InputError> {
    read_paths(paths, &FileRoot::new(root), format).map(|read| read.documents)
}

#[test]
fn files_without_a_telling_extension_are_read_as_their_content_looks() {
    let cases = [
        ("release-notes", SourceFormat::Markdown),
        ("help-page", SourceFormat::Html),
        ("LETTER", SourceFormat::Text),
        ("prices.export", SourceFormat::Csv),
        ("faq.dump", SourceFormat::Tsv),
        // A .jsonl file of turns, not of documents, is one dialog.
        ("ticket-4711.jsonl", SourceFormat::Dialog),
    ];
    for (name, format) in cases {
        let docs = read_docs(&[data(name)], &data_dir(), None).unwrap();
        assert_eq!(docs.len(), 1, "{name}");
        assert_eq!(docs[0].format, format, "{name}");
        assert_eq!(docs[0].doc_id, name);
    }

    // Read as detected, each is cut by its own reader.
    let spec = ChunkSpec::default();
    let page = &read_docs(&[data("help-page")], &data_dir(), None).unwrap()[0];
    let chunked = chunk_document(&page.text, page.format, &spec);
    let texts: Vec<&str> = chunked
        .children
        .iter()
        .map(|c| &page.text[c.span.start..c.span.end])
        .collect();
    assert!(texts
        .iter()
        .all(|t| !t.contains("NAV-LINK") && !t.contains("FOOTER-TEXT")));
    assert!(texts.iter().any(|t| t.contains("Forgot password")));
    let notes = &read_docs(&[data("release-notes")], &data_dir(), None).unwrap()[0];
    let chunked = chunk_document(&notes.text, notes.format, &spec);
    assert!(chunked
        .children
        .iter()
        .any(|c| c.section_path == ["Release notes", "Scheduling"]));
}

#[test]
fn json_lines_records_without_a_format_are_detected_and_a_named_format_wins() {
    let docs = read_docs(&[data("records.jsonl")], &data_dir(), None).unwrap();
    let formats: Vec<(&str, SourceFormat)> =
        docs.iter().map(|d| (d.doc_id.as_str(), d.format)).collect();
    assert_eq!(
        formats,
        [
            ("md-by-uri", SourceFormat::Markdown),
            ("html-by-content", SourceFormat::Html),
            ("md-by-content", SourceFormat::Markdown),
            ("text-by-content", SourceFormat::Text),
            ("turns-by-content", SourceFormat::Dialog),
            ("named", SourceFormat::Text),
        ]
    );
}

#[test]
fn a_named_format_overrides_extension_and_content() {
    let as_text = read_docs(
        &[data("release-notes"), data("help-page")],
        &data_dir(),
        Some(FileKind::Single(SourceFormat::Text)),
    )
    .unwrap();
    assert!(as_text.iter().all(|d| d.format == SourceFormat::Text));

    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.folio");
    // Next to the store, so that its id is its name.
    let notes = dir.path().join("release-notes");
    std::fs::copy(data("release-notes"), &notes).unwrap();
    let out = folio(&["ingest", s(&store), s(&notes), "--format", "text"]);
    assert!(out.status.success(), "{}", cli::stderr(&out));
    let out = folio(&["chunks", s(&store), "release-notes", "--json"]);
    let chunks: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let chunks = chunks.as_array().expect("chunks");
    assert!(!chunks.is_empty());
    // As text, the Markdown headings make no section path.
    assert!(chunks
        .iter()
        .all(|c| c["section_path"] == serde_json::json!([])));

    let out = folio(&["ingest", s(&store), s(&notes), "--format", "markdown"]);
    assert!(out.status.success(), "{}", cli::stderr(&out));
    let out = folio(&["chunks", s(&store), "release-notes", "--json"]);
    let chunks: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(chunks
        .as_array()
        .expect("chunks")
        .iter()
        .any(|c| c["section_path"] == serde_json::json!(["Release notes", "Scheduling"])));

    let out = folio(&["ingest", s(&store), s(&notes), "--format", "docx"]);
    assert!(!out.status.success());
    assert!(cli::stderr(&out).contains("expected markdown, text, html"));
}

#[test]
fn binary_files_are_refused_by_name_and_nothing_is_written() {
    let cases = [
        ("quarterly-report.pdf", "PDF"),
        ("logo.png", "PNG"),
        // An image renamed .txt is still an image.
        ("diagram.txt", "PNG"),
        ("notes-utf16.txt", "UTF-16"),
        ("legacy-latin1.txt", "not UTF-8"),
    ];
    for (name, what) in cases {
        // With the `pdf` feature, a PDF is read unless another format is named.
        let read = read_docs(&[data("LETTER"), data(name)], &data_dir(), None);
        match read {
            Ok(docs) if name.ends_with(".pdf") => {
                assert_eq!(docs[1].format, SourceFormat::Pdf);
            }
            Err(e @ (InputError::Binary { .. } | InputError::NotUtf8 { .. })) => {
                let message = e.to_string();
                assert!(
                    message.contains(name) && message.contains(what),
                    "{message}"
                );
            }
            other => panic!("{name}: {other:?}"),
        }
        // Even `--format text` does not make binary data text.
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("s.folio");
        let letter = data("LETTER");
        let out = folio(&[
            "ingest",
            s(&store),
            s(&letter),
            s(&data(name)),
            "--format",
            "text",
            "--root",
            s(&data_dir()),
        ]);
        assert!(!out.status.success(), "{name}");
        let stderr = cli::stderr(&out);
        assert!(stderr.contains(name) && stderr.contains(what), "{stderr}");
        assert!(stderr.contains("nothing was ingested"), "{stderr}");
        assert!(!store.exists(), "{name}: the store was created");
    }

    // In a directory: a binary file with a text extension refuses the whole ingest into an
    // existing store, which keeps what it had; files of other extensions are skipped.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.folio");
    let letter = dir.path().join("LETTER");
    std::fs::copy(data("LETTER"), &letter).unwrap();
    let out = folio(&["ingest", s(&store), s(&letter)]);
    assert!(out.status.success(), "{}", cli::stderr(&out));
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    for name in ["release-notes", "logo.png"] {
        std::fs::copy(data(name), docs.join(name)).unwrap();
    }
    std::fs::copy(data("release-notes"), docs.join("guide.md")).unwrap();
    let out = folio(&["ingest", s(&store), s(&docs)]);
    assert!(out.status.success(), "{}", cli::stderr(&out));
    let stats = |store: &Path| {
        let out = folio(&["stats", s(store), "--json"]);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        json["documents"].as_u64().expect("documents")
    };
    assert_eq!(stats(&store), 2, "LETTER and guide.md");
    std::fs::copy(data("diagram.txt"), docs.join("diagram.txt")).unwrap();
    std::fs::copy(data("help-page"), docs.join("help.html")).unwrap();
    let out = folio(&["ingest", s(&store), s(&docs)]);
    assert!(!out.status.success());
    assert!(
        cli::stderr(&out).contains("diagram.txt"),
        "{}",
        cli::stderr(&out)
    );
    assert_eq!(
        stats(&store),
        2,
        "nothing of the refused ingest was written"
    );
}

/// Source code by extension in a directory, and `--format` for a script without one: read by
/// tree-sitter, each item a chunk named by its section path, the embedded text headed by
/// the file's path.
#[test]
fn source_code_is_read_by_extension_or_format() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.folio");
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let code = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/code");
    std::fs::copy(code.join("store.rs"), src.join("store.rs")).unwrap();
    let script = dir.path().join("billing");
    std::fs::copy(code.join("billing.py"), &script).unwrap();
    let out = folio(&["ingest", s(&store), s(&src)]);
    assert!(out.status.success(), "{}", cli::stderr(&out));
    let out = folio(&["ingest", s(&store), s(&script), "--format", "python"]);
    assert!(out.status.success(), "{}", cli::stderr(&out));
    let chunks = |id: &str| -> Vec<serde_json::Value> {
        let out = folio(&["chunks", s(&store), id, "--json"]);
        let chunks: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        chunks.as_array().expect("chunks").clone()
    };
    let rust = chunks("src/store.rs");
    let search = rust
        .iter()
        .find(|c| c["section_path"] == serde_json::json!(["impl Store", "fn search"]))
        .expect("a chunk of Store::search");
    let embed = search["embed_text"].as_str().unwrap();
    assert!(
        embed.starts_with("src/store.rs > impl Store > fn search\n"),
        "{embed}"
    );
    assert!(!search["text"].as_str().unwrap().contains("src/store.rs"));
    let python = chunks("billing");
    assert!(python
        .iter()
        .any(|c| c["section_path"] == serde_json::json!(["class Invoice", "def vat"])));
}

#[test]
fn pdf_files_are_read_by_extension_and_magic_and_ingested_with_pages() {
    let expected = "Quarterly report: revenue grew 4%.";
    let dir = tempfile::tempdir().unwrap();
    // Named without a telling extension, a PDF is known by its magic number.
    let renamed = dir.path().join("report.bin");
    std::fs::copy(data("quarterly-report.pdf"), &renamed).unwrap();
    for path in [data("quarterly-report.pdf"), renamed] {
        let folder = path.parent().expect("a folder").to_path_buf();
        let docs = read_docs(&[path], &folder, None).unwrap();
        assert_eq!(docs[0].format, SourceFormat::Pdf);
        assert_eq!(docs[0].text, expected);
    }
    // Directories take .pdf files.
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::copy(data("quarterly-report.pdf"), docs.join("q.pdf")).unwrap();
    let read = read_docs(std::slice::from_ref(&docs), &docs, None).unwrap();
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].doc_id, "q.pdf");

    // End to end: ingested, searched, the hit knows its page.
    let store = dir.path().join("s.folio");
    let out = folio(&["ingest", s(&store), s(&docs)]);
    assert!(out.status.success(), "{}", cli::stderr(&out));
    let out = folio(&["search", s(&store), "revenue", "--json"]);
    assert!(out.status.success(), "{}", cli::stderr(&out));
    let response: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let hit = &response["results"][0];
    assert_eq!(hit["text"], expected);
    assert_eq!(hit["pages"], serde_json::json!({"first": 1, "last": 1}));

    // A damaged or encrypted PDF refuses the ingest: a typed error naming the file, and
    // nothing written.
    let damaged = dir.path().join("damaged.pdf");
    std::fs::write(&damaged, b"%PDF-1.4\nthis is not a PDF body").unwrap();
    let fresh = dir.path().join("fresh.folio");
    match read_docs(std::slice::from_ref(&damaged), dir.path(), None) {
        Err(InputError::Pdf { path, .. }) => assert_eq!(path, damaged),
        other => panic!("{other:?}"),
    }
    let letter = dir.path().join("LETTER");
    std::fs::copy(data("LETTER"), &letter).unwrap();
    let out = folio(&["ingest", s(&fresh), s(&letter), s(&damaged)]);
    assert!(!out.status.success());
    let stderr = cli::stderr(&out);
    assert!(
        stderr.contains("damaged.pdf") && stderr.contains("not a readable PDF"),
        "{stderr}"
    );
    assert!(!fresh.exists(), "the store was created");
    // `--format pdf` reads a file as PDF whatever its name; a text file is then no PDF.
    let out = folio(&["ingest", s(&fresh), s(&letter), "--format", "pdf"]);
    assert!(!out.status.success());
    assert!(
        cli::stderr(&out).contains("LETTER"),
        "{}",
        cli::stderr(&out)
    );
    assert!(!fresh.exists());
}

/// `folio search --budget` on the generated sites (`tests/data/sites/`, mdBook and Sphinx):
/// the hits hold the pages' visible text, and the budget counts that text.
#[test]
fn search_budgets_count_the_visible_text_of_html_hits() {
    let sites = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/sites");
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("sites.folio");
    let out = cli::run_in(
        env!("CARGO_BIN_EXE_folio"),
        Some(dir.path()),
        &["ingest", s(&store), s(&sites), "--root", s(&sites)],
    );
    assert!(out.status.success(), "{}", cli::stderr(&out));
    let out = cli::run(
        env!("CARGO_BIN_EXE_folio"),
        &[
            "search",
            s(&store),
            "how do I read a file line by line",
            "--k",
            "4",
            "--budget",
            "120",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", cli::stderr(&out));
    let response: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let hits = response["results"].as_array().expect("results");
    assert_eq!(hits[0]["doc_id"], "mdbook/reading-files.html");
    let mut total = 0;
    for hit in hits {
        let text = hit["text"].as_str().expect("text");
        assert!(!text.contains('<') && !text.contains("&amp;"), "{text}");
        let tokens = hit["tokens"].as_u64().expect("tokens");
        assert_eq!(tokens as usize, folio::tokens::count(text));
        total += tokens;
    }
    assert!(total <= 120, "{total} tokens over the budget");
}
