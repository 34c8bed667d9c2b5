//! The PDF reader on a generated two-column paper (`folio_testkit::pdf`): reading order (left column
//! before right), no running header, footer or page number in any chunk, hyphenated line
//! ends joined, headings in section paths, every content word kept, each chunk's pages;
//! a table across a page break read as one table, cut in row groups under its head row;
//! damaged and encrypted files refused with a typed error. And PDFs of three other producers
//! (groff -ms, reportlab and fpdf2, made by `scripts/fixtures/make_pdfs.sh`, committed under
//! `tests/data/pdf/`): code lines starting with `# ` are no headings, two-column and ruled
//! tables (one across a page break, its head row repeated there) are tables, groff's
//! ligatures read as letters, a list with a hanging indent and two columns of prose are
//! no tables.

use folio::chunk::tree::{Block, BlockKind};
use folio::chunk::{
    chunk_document, pages, ChildPiece, ChunkSpec, Chunked, EmbedTexts, SourceFormat,
};
use folio::input::pdf::{extract, PdfError};
use folio_testkit::chunks::{check_any_format, chunk_and_check, specs};
use folio_testkit::pdf::{self, paper, paper_with, report, FOOTER, HEADER};
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
fn a_table_across_a_page_break_is_one_table_with_its_head_row_once() {
    for repeat in [false, true] {
        let report = report(70, repeat);
        let text = extract(&report.bytes).unwrap();
        let row = |cells: &[String]| cells.join("\t");
        let head = row(&report.head);
        assert_eq!(report.rows[0].1, 1);
        assert_eq!(report.rows.last().unwrap().1, 2);
        assert_eq!(
            text.matches("Quantity").count(),
            1,
            "repeat {repeat}: {text}"
        );
        assert!(!text.contains(HEADER) && !text.contains(FOOTER.trim_end_matches("2026-03-")));

        // One table: the head row, then every row in order, a page break among them.
        let tree = folio::chunk::readers::pdf::read(&text);
        let tables: Vec<_> = tree
            .blocks
            .iter()
            .filter(|b| matches!(b.kind, BlockKind::Table { .. }))
            .collect();
        assert_eq!(tables.len(), 1, "repeat {repeat}: {text}");
        let table = tables[0];
        let BlockKind::Table { header: Some(h) } = table.kind else {
            panic!("no head row: {:?}", table.kind);
        };
        assert_eq!(&text[h.start..h.end], head);
        let rows: Vec<&str> = table
            .children
            .iter()
            .filter(|b| b.kind == BlockKind::Row)
            .map(|b| &text[b.span.start..b.span.end])
            .collect();
        let expected: Vec<String> = std::iter::once(head.clone())
            .chain(report.rows.iter().map(|(cells, _)| row(cells)))
            .collect();
        assert_eq!(rows, expected);
        let breaks: Vec<_> = table
            .children
            .iter()
            .filter(|b| matches!(b.kind, BlockKind::PageBreak { page: 2 }))
            .collect();
        let first_on_2 = report.rows.iter().find(|(_, p)| *p == 2).unwrap();
        assert_eq!(breaks.len(), 1);
        assert_eq!(breaks[0].span.end, text.find(&row(&first_on_2.0)).unwrap());
        // The paragraphs around it are not in it.
        let before = report.before.join(" ");
        let after = report.after.join(" ");
        assert!(text[..table.span.start].contains(&before), "{text}");
        assert!(text[table.span.end..].contains(&after), "{text}");

        // Cut in row groups: whole rows, each group under the head row, pages known.
        let title = report.head.join(" | ");
        let out = chunk_and_check(&text, SourceFormat::Pdf, &ChunkSpec::default()).unwrap();
        let embed = EmbedTexts::new(&text, SourceFormat::Pdf);
        let groups = children_in(&out, table);
        assert!(groups.len() >= 3, "{} groups", groups.len());
        let mut seen = Vec::new();
        for c in &groups {
            assert_eq!(c.section_path.last(), Some(&title));
            let shown = &text[c.span.start..c.span.end];
            assert!(!shown.contains(HEADER) && !shown.contains("Draft for review"));
            for line in shown.split('\n') {
                let line = line.trim_start_matches('\u{c}');
                assert!(expected.iter().any(|r| r == line), "a cut row {line:?}");
                seen.push(line.to_string());
            }
            let embedded = embed.get(&c.section_path, c.span, 2);
            if c.span.start == h.start {
                assert!(embedded.contains(&head));
            } else {
                assert!(
                    embedded.contains(&format!("{title}\n{shown}")),
                    "{embedded}"
                );
            }
            let got = pages(&text, SourceFormat::Pdf, c.span).unwrap();
            let on = |r: &str| {
                report
                    .rows
                    .iter()
                    .find(|(cells, _)| row(cells) == r)
                    .map(|(_, p)| *p)
            };
            let lines: Vec<&str> = shown
                .split('\n')
                .map(|l| l.trim_start_matches('\u{c}'))
                .collect();
            let first = lines.iter().find_map(|l| on(l)).unwrap_or(1);
            let last = lines.iter().rev().find_map(|l| on(l)).unwrap();
            assert_eq!((got.first, got.last), (first, last), "{shown:?}");
        }
        assert_eq!(
            seen, expected,
            "every row once, in order, the head row once"
        );
    }
}

/// The children of `out` inside `block`.
fn children_in<'o>(out: &'o Chunked, block: &Block) -> Vec<&'o ChildPiece> {
    let span = block.span;
    out.children
        .iter()
        .filter(|c| span.start <= c.span.start && c.span.end <= span.end)
        .collect()
}

#[test]
fn damaged_and_encrypted_files_are_typed_errors() {
    assert!(matches!(
        extract(b"%PDF-1.7\nnothing else"),
        Err(PdfError::Malformed { .. })
    ));
    assert!(matches!(extract(b""), Err(PdfError::Malformed { .. })));
    assert_eq!(extract(&pdf::encrypted()), Err(PdfError::Encrypted));
    // Cut anywhere, a file gives text or an error, never a panic.
    let bytes = paper(1, 3).bytes;
    for cut in (0..bytes.len()).step_by(97) {
        let _ = extract(&bytes[..cut]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Extracted text with tables (tab-separated cells, page breaks between rows, ragged
    /// rows) keeps the chunking contract with every spec.
    #[test]
    fn text_with_tables_keeps_the_contract(
        lines in prop::collection::vec(
            prop::collection::vec("[a-zé ]{0,6}", 1..5).prop_map(|cells| cells.join("\t")),
            0..30,
        ),
        seps in prop::collection::vec(prop::sample::select(vec!["\n", "\n\n", "\n\u{c}", "\n\n\u{c}", "\t\n"]), 30),
    ) {
        let mut text = String::new();
        for (line, sep) in lines.iter().zip(&seps) {
            text.push_str(line);
            text.push_str(sep);
        }
        check_any_format(&text, SourceFormat::Pdf).map_err(TestCaseError::fail)?;
    }

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

/// A committed fixture of `tests/data/pdf/`, extracted.
fn fixture(name: &str) -> String {
    let path = format!("{}/tests/data/pdf/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    extract(&bytes).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The headings of the documents reportlab and fpdf2 set (sections unnumbered).
const LIBRARY_TITLES: &[&str] = &[
    "Notes on the shared file database",
    "Overview",
    "Updating the cache",
    "Glob patterns",
    "Known types",
    "Magic rules",
];

/// What each fixture holds: its file, its headings' titles, its ruled table's head row
/// (reportlab's and fpdf2's first: their text has no ligatures, so a test fails there for
/// its own finding alone).
const FIXTURES: [(&str, &[&str], &str); 3] = [
    ("reportlab-notes.pdf", LIBRARY_TITLES, "Rule\tOffset\tBytes"),
    ("fpdf2-notes.pdf", LIBRARY_TITLES, "Rule\tOffset\tBytes"),
    (
        "groff-notes.pdf",
        &[
            "Notes on the shared file database",
            "1. Overview",
            "2. Updating the cache",
            "3. Glob patterns",
            "4. Known types",
            "5. Magic rules",
            "6. Two columns of prose",
        ],
        "Rule\tBytes",
    ),
];

fn headings(text: &str) -> Vec<String> {
    let tree = folio::chunk::readers::pdf::read(text);
    tree.walk()
        .filter_map(|b| match &b.kind {
            BlockKind::Heading { title, .. } => Some(title.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn code_lines_starting_with_a_hash_are_not_headings() {
    for (name, titles, _) in FIXTURES {
        let text = fixture(name);
        assert_eq!(headings(&text), titles, "{name}: {text}");
        // The code is kept, line by line, its `#` escaped so it cannot read as a heading.
        assert!(
            text.contains(
                "\\# rebuild the cache after installing\nupdate-mime-database /usr/share/mime"
            ),
            "{name}: {text}"
        );
        assert!(
            text.contains("\n\n\\# xdg-mime query filetype notes.txt\n\n"),
            "{name}: {text}"
        );
        // The sections after the code keep their own section paths.
        let out = chunk_and_check(&text, SourceFormat::Pdf, &ChunkSpec::default()).unwrap();
        let glob = titles
            .iter()
            .find(|t| t.ends_with("Glob patterns"))
            .unwrap();
        let mut seen = false;
        for c in &out.children {
            let body = &text[c.span.start..c.span.end];
            assert!(
                !c.section_path
                    .iter()
                    .any(|s| s.contains("xdg-mime") || s.contains("rebuild")),
                "{name}: {:?}",
                c.section_path
            );
            if body.contains("A glob pattern matches") {
                assert_eq!(c.section_path.last(), Some(&glob.to_string()), "{name}");
                seen = true;
            }
        }
        assert!(seen, "{name}: no chunk holds the glob patterns' text");
        // What a hit shows: the code as the PDF has it, headings without folio's marks.
        let shown = folio::chunk::visible_text_of(&text, SourceFormat::Pdf);
        assert!(
            shown.contains("\n\n# xdg-mime query filetype notes.txt\n\n"),
            "{name}: {shown}"
        );
        assert!(!shown.contains("\\#") && !shown.contains('\u{c}'), "{name}");
        assert!(
            shown.contains(&format!("\n\n{glob}\n\n")),
            "{name}: {shown}"
        );
        // A late-chunking model reads the children's visible texts.
        let spans: Vec<(usize, usize)> = out
            .children
            .iter()
            .map(|c| (c.span.start, c.span.end))
            .collect();
        let (input, placed) = folio::chunk::late_input(&text, SourceFormat::Pdf, &spans);
        assert!(!input.contains("\\#") && !input.contains('\u{c}'), "{name}");
        for (&(start, end), &(from, to)) in spans.iter().zip(&placed) {
            let child = folio::chunk::visible_text_of(&text[start..end], SourceFormat::Pdf);
            assert_eq!(input[from..to], child);
        }
    }
}

/// The tables of the block tree of `text`, each as its rows' text (page breaks left out).
fn tables(text: &str) -> Vec<(Block, Vec<&str>)> {
    let tree = folio::chunk::readers::pdf::read(text);
    tree.blocks
        .into_iter()
        .filter(|b| matches!(b.kind, BlockKind::Table { .. }))
        .map(|b| {
            let rows = b
                .children
                .iter()
                .filter(|r| r.kind == BlockKind::Row)
                .map(|r| &text[r.span.start..r.span.end])
                .collect();
            (b, rows)
        })
        .collect()
}

/// The table of `text` whose head row is `head`, with its rows; exactly one must be.
fn table_headed<'t>(name: &str, text: &'t str, head: &str) -> (Block, Vec<&'t str>) {
    let mut found: Vec<_> = tables(text)
        .into_iter()
        .filter(|(b, _)| {
            matches!(b.kind, BlockKind::Table { header: Some(h) } if &text[h.start..h.end] == head)
        })
        .collect();
    assert_eq!(found.len(), 1, "{name}: tables headed {head:?} in {text}");
    found.remove(0)
}

#[test]
fn two_column_tables_are_tables_with_their_head_row() {
    let expected = [
        "Type\tDescription",
        "text/plain\tplain text",
        "text/html\tweb pages",
        "image/png\tportable network graphics",
        "application/pdf\tprintable documents",
        "application/zip\tcompressed archives",
    ];
    for (name, _, _) in FIXTURES {
        let text = fixture(name);
        let (_, rows) = table_headed(name, &text, expected[0]);
        assert_eq!(rows, expected, "{name}");
        // The paragraphs around it are not in it.
        assert!(
            text.contains("The types most files have:\n\nType\t"),
            "{name}: {text}"
        );
        assert!(
            text.contains("compressed archives\n\nTypes not listed here"),
            "{name}: {text}"
        );
    }
}

#[test]
fn ruled_tables_across_a_page_break_are_one_table_with_the_head_row_once() {
    for (name, _, head) in FIXTURES {
        let text = fixture(name);
        let (ruled, rows) = table_headed(name, &text, head);
        // The head row repeated on the next page is left out; every row in order.
        assert_eq!(rows[0], head, "{name}");
        assert_eq!(text.matches(head).count(), 1, "{name}: {text}");
        let firsts: Vec<&str> = rows[1..]
            .iter()
            .map(|r| r.split('\t').next().unwrap_or_default())
            .collect();
        let expected: Vec<String> = (1..=60).map(|i| format!("rule{i:02}")).collect();
        assert_eq!(firsts, expected, "{name}");
        let cells = head.split('\t').count();
        assert!(
            rows.iter().all(|r| r.split('\t').count() == cells),
            "{name}: {rows:?}"
        );
        let breaks = ruled
            .children
            .iter()
            .filter(|b| matches!(b.kind, BlockKind::PageBreak { .. }))
            .count();
        assert!(breaks >= 1, "{name}: the table does not cross a page");
        // Cut in row groups, each under the head row.
        let out = chunk_and_check(&text, SourceFormat::Pdf, &ChunkSpec::default()).unwrap();
        let title = head.replace('\t', " | ");
        let groups = children_in(&out, &ruled);
        assert!(groups.len() >= 2, "{name}: {} row groups", groups.len());
        for c in groups {
            assert_eq!(c.section_path.last(), Some(&title), "{name}");
        }
    }
}

#[test]
fn groff_ligatures_read_as_letters() {
    let text = fixture("groff-notes.pdf");
    for word in [
        "files", "first", "office", "affluent", "fluent", "shuffled", "baffled",
    ] {
        assert!(
            text.split(|c: char| !c.is_alphabetic()).any(|w| w == word),
            "{word} missing: {text}"
        );
    }
    assert!(!text.contains(['\u{fb00}', '\u{fb01}', '\u{fb02}', '\u{fb03}', '\u{fb04}']));
}

#[test]
fn a_hanging_list_and_two_columns_of_prose_are_not_tables() {
    let text = fixture("groff-notes.pdf");
    // Only the two tables hold tabs.
    let in_tables: usize = tables(&text).iter().map(|(_, rows)| rows.len()).sum();
    let tabbed = text.lines().filter(|l| l.contains('\t')).count();
    assert_eq!(tabbed, in_tables, "{text}");
    assert!(
        text.contains("1. literal names, such as Makefile;"),
        "{text}"
    );
    // Each paragraph of the two columns whole, in order.
    let words = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliet", "kilo", "lima",
    ];
    let mut at = 0;
    for word in words {
        let paragraph = format!(
            "The {word} paragraph runs on for a few lines of ordinary running text, set in two \
             columns as a journal would set it, so that its lines stand side by side with the \
             lines of the other column and must still be read one column after the other."
        );
        let found = text[at..].find(&paragraph);
        assert!(found.is_some(), "{word}: {text}");
        at += found.unwrap_or_default() + paragraph.len();
    }
}
