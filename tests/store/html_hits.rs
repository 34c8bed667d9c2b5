//! Answers from generated sites (issue 31, item 1): two small books built by the real
//! generators (mdBook from crates.io, Sphinx from PyPI; `scripts/fixtures/make_sites.sh`),
//! committed as they came out. A hit's text is what the reader sees (no tag, no permalink
//! glyph, no navigation), its budget counts that text, and for every question the chapter
//! holding the answer ranks above the sites' table-of-contents, print, search and index
//! pages.

use std::path::{Path, PathBuf};

use folio::chunk::{visible_text_of, SourceFormat};
use folio::document::Document;
use folio::query::SearchRequest;
use folio::store::Store;

const SITES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/sites");

/// Questions and the page that answers each.
const QUESTIONS: &[(&str, &str)] = &[
    (
        "how do I read a file line by line",
        "mdbook/reading-files.html",
    ),
    (
        "which systems does Lantern run on",
        "mdbook/installing.html",
    ),
    (
        "what happens when the wind exceeds 60 knots",
        "mdbook/patrols.html",
    ),
    (
        "can a keeper borrow a lamp for inspection",
        "mdbook/ownership.html",
    ),
    (
        "what exit code does a cracked lens give",
        "mdbook/errors.html",
    ),
    ("who receives low water alerts", "sphinx/alerts.html"),
    ("how do I calibrate the gauge", "sphinx/setup.html"),
    ("when do spring tides come", "sphinx/tables.html"),
    ("what do winter moorings cost", "sphinx/moorings.html"),
    ("what does harbour.ini describe", "sphinx/setup.html"),
];

/// Pages that only point at chapters or repeat them: never above the chapter itself.
const NAVIGATION: &[&str] = &[
    "mdbook/toc.html",
    "mdbook/print.html",
    "sphinx/index.html",
    "sphinx/genindex.html",
    "sphinx/search.html",
];

fn pages() -> Vec<PathBuf> {
    let mut pages = Vec::new();
    for site in ["mdbook", "sphinx"] {
        let dir = Path::new(SITES).join(site);
        for entry in std::fs::read_dir(&dir).expect("the committed sites") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "html") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    assert!(pages.len() >= 15, "both sites, every page: {pages:?}");
    pages
}

fn id(path: &Path) -> String {
    let relative = path.strip_prefix(SITES).expect("under the sites");
    relative.to_string_lossy().replace('\\', "/")
}

fn sites_store(dir: &tempfile::TempDir) -> (Store, Vec<(String, String)>) {
    let store = Store::builder()
        .create(true)
        .open(dir.path().join("sites.folio"))
        .expect("create");
    let mut sources = Vec::new();
    let mut batch = store.batch();
    for path in pages() {
        let text = std::fs::read_to_string(&path).expect("page");
        sources.push((id(&path), text.clone()));
        batch.upsert(Document::new(id(&path), SourceFormat::Html, text));
    }
    batch.commit().expect("commit");
    (store, sources)
}

#[test]
fn the_chapter_outranks_tables_of_contents_and_print_pages() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (store, _) = sites_store(&dir);
    for (question, page) in QUESTIONS {
        let response = store
            .search(&SearchRequest::text(*question).k(10))
            .expect("search");
        let ranked: Vec<&str> = response.results.iter().map(|h| h.doc_id.as_str()).collect();
        assert_eq!(ranked.first(), Some(page), "{question:?}: {ranked:?}");
        let chapter = ranked.iter().position(|d| d == page);
        for nav in NAVIGATION {
            if let Some(at) = ranked.iter().position(|d| d == nav) {
                assert!(
                    Some(at) > chapter,
                    "{question:?}: {nav} above {page}: {ranked:?}"
                );
            }
        }
    }
}

#[test]
fn hits_hold_the_visible_text_and_the_budget_counts_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (store, sources) = sites_store(&dir);
    for (question, _) in QUESTIONS {
        let response = store
            .search(&SearchRequest::text(*question).k(3).token_budget(400))
            .expect("search");
        assert!(!response.results.is_empty(), "{question:?}");
        let mut total = 0;
        for hit in &response.results {
            let (_, source) = sources
                .iter()
                .find(|(id, _)| *id == hit.doc_id)
                .expect("a stored page");
            let slice = &source[hit.start..hit.end];
            assert!(
                !hit.text.contains('<') && !hit.text.contains('¶') && !hit.text.contains("&amp;"),
                "{question:?}: markup in the hit's text: {:?}",
                hit.text
            );
            assert_eq!(hit.text, visible_text_of(slice, SourceFormat::Html));
            assert!(
                hit.text.len() < slice.len(),
                "the source span keeps its tags"
            );
            assert_eq!(
                hit.tokens,
                folio::tokens::count(&hit.text),
                "{:?}",
                hit.text
            );
            total += hit.tokens;
        }
        assert!(total <= 400, "{question:?}: {total} tokens over the budget");
    }
}

#[test]
fn pages_that_ask_not_to_be_indexed_have_no_chunks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (store, _) = sites_store(&dir);
    // Every word of the book is on the print page; still only the chapters answer.
    let request = SearchRequest::text("lantern keeper lamp patrol storm ownership").k(100);
    let response = store.search(&request).expect("search");
    assert!(!response.results.is_empty());
    for hit in &response.results {
        for noindex in ["mdbook/print.html", "mdbook/toc.html", "sphinx/search.html"] {
            assert_ne!(hit.doc_id, noindex);
        }
    }
}
