//! The PDF reader on a generated two-column paper (`pdf_support`): reading order (left column
//! before right), no running header, footer or page number in any chunk, hyphenated line
//! ends joined, headings in section paths, every content word kept, each chunk's pages;
//! damaged and encrypted files refused with a typed error.
#![cfg(feature = "pdf")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod chunk_support;
mod pdf_support;

use chunk_support::{check_any_format, chunk_and_check, specs};
use folio::chunk::readers::pdf::{extract, PdfError};
use folio::chunk::tree::BlockKind;
use folio::chunk::{chunk_document, pages, ChunkSpec, SourceFormat};
use pdf_support::{paper, paper_with, FOOTER, HEADER};
use proptest::prelude::*;

/// The content words of extracted text: heading marks left out.
fn words(text: &str) -> Vec<&str> {
    text.split_whitespace()
        .filter(|w| !w.chars().all(|c| c == '#'))
        .collect()
}

#[test]
fn two_columns_over_pages_read_in_order_without_page_furniture() {
    let paper = paper(4, 6);
    let text = extract(&paper.bytes).unwrap();
    let pages_count = paper.words.last().unwrap().1;
    assert!(pages_count >= 3, "{pages_count} pages");
    assert_eq!(text.matches('\u{c}').count() as u32, pages_count - 1);

    // Every content word, in reading order, and nothing else: headers, footers and page
    // numbers would be words too.
    let expected: Vec<&str> = paper.words.iter().map(|(w, _)| w.as_str()).collect();
    let got = words(&text);
    if std::env::var("PDF_DEBUG").is_ok() {
        eprintln!("{text}");
    }
    if got != expected {
        let at = got
            .iter()
            .zip(&expected)
            .take_while(|(a, b)| a == b)
            .count();
        panic!(
            "words differ at {at}: got {:?}, expected {:?}",
            &got[at.saturating_sub(3)..(at + 5).min(got.len())],
            &expected[at.saturating_sub(3)..(at + 5).min(expected.len())]
        );
    }
    // The left column of each page before its right one.
    for pair in paper.columns.windows(2) {
        let (first, second) = (pair[0].2, pair[1].2);
        if second < paper.words.len() {
            let find = |i: usize| text.find(paper.words[i].0.as_str()).unwrap();
            assert!(find(first) < find(second), "columns {pair:?} out of order");
        }
    }
    assert!(!text.contains("Quarterly") && !text.contains(HEADER));
    assert!(!text.contains(FOOTER.trim_end_matches("2026-03-")));
    assert!(!paper.hyphenated.is_empty());
    for word in &paper.hyphenated {
        let word = word.trim_end_matches('.');
        assert!(text.contains(word), "{word} not joined");
    }
    assert!(!text.contains("- "), "a hyphen left at a line end");

    // Headings, with their levels, in the tree.
    let tree = folio::chunk::readers::pdf::read(&text);
    let headings: Vec<(usize, String)> = tree
        .walk()
        .filter_map(|b| match &b.kind {
            BlockKind::Heading { level, title } => Some((*level, title.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(headings, paper.headings);
}

#[test]
fn chunks_keep_the_contract_and_know_their_pages() {
    let paper = paper(3, 6);
    let text = extract(&paper.bytes).unwrap();
    // Each word's page (words are unique).
    let page_of = |word: &str| paper.words.iter().find(|(w, _)| w == word).map(|(_, p)| *p);
    for spec in specs().into_iter().chain([ChunkSpec::default()]) {
        let out = chunk_and_check(&text, SourceFormat::Pdf, &spec).unwrap();
        for c in &out.children {
            let body = &text[c.span.start..c.span.end];
            assert!(!body.contains("Quarterly") && !body.contains("Draft for review"));
            let got = pages(&text, SourceFormat::Pdf, c.span).unwrap();
            // Fixed windows may cut the words at their ends: look at the others.
            let all: Vec<&str> = body.split_whitespace().collect();
            let inner = &all[1.min(all.len())..all.len().saturating_sub(1).max(1)];
            let (Some(first), Some(last)) = (
                inner.iter().find_map(|w| page_of(w)),
                inner.iter().rev().find_map(|w| page_of(w)),
            ) else {
                continue;
            };
            assert!(
                got.first <= first && last <= got.last,
                "{got:?} for {body:?}"
            );
        }
    }
    // Structure chunks: the section path names the section heading, pages exact.
    let out = chunk_document(&text, SourceFormat::Pdf, &ChunkSpec::default());
    let (_, section) = &paper.headings[1];
    assert!(out
        .children
        .iter()
        .any(|c| c.section_path.last() == Some(section)));
    for c in &out.children {
        let body = &text[c.span.start..c.span.end];
        let ws: Vec<&str> = words(body);
        let first = page_of(ws[0]).unwrap();
        let last = page_of(ws[ws.len() - 1]).unwrap();
        let got = pages(&text, SourceFormat::Pdf, c.span).unwrap();
        assert_eq!((got.first, got.last), (first, last), "{body:?}");
    }
    let last_page = paper.words.last().unwrap().1;
    let spanned = out
        .children
        .iter()
        .filter_map(|c| pages(&text, SourceFormat::Pdf, c.span))
        .any(|p| p.first < p.last);
    assert!(
        last_page >= 2 && spanned,
        "no chunk runs on to the next page"
    );
}

#[test]
fn damaged_and_encrypted_files_are_typed_errors() {
    assert!(matches!(
        extract(b"%PDF-1.7\nnothing else"),
        Err(PdfError::Malformed { .. })
    ));
    assert!(matches!(extract(b""), Err(PdfError::Malformed { .. })));
    assert_eq!(extract(&pdf_support::encrypted()), Err(PdfError::Encrypted));
    // Cut anywhere, a file gives text or an error, never a panic.
    let bytes = paper(1, 3).bytes;
    for cut in (0..bytes.len()).step_by(97) {
        let _ = extract(&bytes[..cut]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// A file damaged anywhere (bytes overwritten, cut short) gives text that keeps the
    /// chunking contract, or a typed error; never a panic.
    #[test]
    fn damaged_files_never_panic(
        compress in any::<bool>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..12),
        cut in any::<prop::sample::Index>(),
        shorten in any::<bool>(),
    ) {
        let mut bytes = paper_with(1, 2, compress).bytes;
        for (at, byte) in edits {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        if shorten {
            bytes.truncate(cut.index(bytes.len()));
        }
        if let Ok(text) = extract(&bytes) {
            check_any_format(&text, SourceFormat::Pdf).map_err(TestCaseError::fail)?;
        }
    }
}
