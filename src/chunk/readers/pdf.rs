//! PDF documents. A PDF's text is not its bytes: `crate::input::pdf::extract` (feature `pdf`)
//! lays out the text layer of the file once, and what it returns becomes the document's
//! stored text, which every span points into. That text is plain text with these conventions:
//!
//! - a form feed (U+000C) where each page after the first starts (page `n` starts after the
//!   `n - 1`th form feed), so a chunk's pages follow from its span ([`pages`]);
//! - blocks (paragraphs, code, headings) separated by blank lines; a block of one line
//!   starting with one to six `#` and a space is a heading of that level;
//! - a block the layout did not make a heading but whose text starts with `#` (a code line
//!   `# comment`, a paragraph `#3 on the list`) is written with a backslash before it
//!   (`\# comment`), one more backslash before text that starts with backslashes and `#`,
//!   so no block of the PDF reads as a heading by its text alone ([`escaped`]). Text stored
//!   before this escape holds no such backslashes: its `#` lines read as
//!   they did, headings, and a block starting with a backslash is a paragraph in both;
//! - a block of two or more lines that all hold the same number of tab-separated cells (two
//!   or more) is a table, its first line the head row; a page break may start any row but
//!   the first (the text of PDF glyphs holds no tabs, so no other block looks like one).
//!
//! [`read`] turns that text into the block tree; it needs no PDF parser, so a store holding
//! PDF documents can be re-chunked by a build without the feature.

use std::borrow::Cow;

use crate::chunk::pieces::{Pages, Span};
use crate::chunk::tree::{Block, BlockKind, Prose, Tree};

/// The character that starts each page after the first in extracted text.
pub const PAGE_BREAK: char = '\u{c}';

/// The block tree of extracted PDF text: paragraphs, headings (`#` lines) and page breaks
/// (a page break inside a paragraph that runs on to the next page is a block inside it).
pub fn read(text: &str) -> Tree {
    let mut tree = Tree::new(Prose::Plain);
    let mut breaks = text
        .match_indices(PAGE_BREAK)
        .enumerate()
        .map(|(i, (at, _))| Block::leaf(page_break(i), at, at + PAGE_BREAK.len_utf8()))
        .peekable();
    for (start, end) in super::text::paragraphs(text) {
        while let Some(b) = breaks.next_if(|b| b.span.start < start) {
            tree.blocks.push(b);
        }
        if let Some(rows) = table_rows(text, start, end) {
            let mut table = Block::leaf(
                BlockKind::Table {
                    header: rows.first().map(|r| r.span),
                },
                start,
                end,
            );
            table.children = rows;
            while let Some(b) = breaks.next_if(|b| b.span.start < end) {
                table.children.push(b);
            }
            table.children.sort_by_key(|b| b.span.start);
            tree.blocks.push(table);
            continue;
        }
        let mut block = Block::leaf(BlockKind::Paragraph, start, end);
        while let Some(b) = breaks.next_if(|b| b.span.start < end) {
            block.children.push(b);
        }
        let heading = heading(&text[start..end]);
        tree.blocks.push(block);
        if let Some((level, title)) = heading {
            let kind = BlockKind::Heading {
                level,
                title: title.to_string(),
            };
            tree.blocks.push(Block::leaf(kind, start, end));
        }
    }
    tree.blocks.extend(breaks);
    tree
}

/// The rows of the table that `text[start..end]` is, if it is one: lines (a page break
/// before one left out of its row) of the same number of tab-separated cells, two or more
/// lines of two or more cells.
fn table_rows(text: &str, start: usize, end: usize) -> Option<Vec<Block>> {
    let mut rows = Vec::new();
    let mut cells = None;
    let mut at = start;
    for line in text[start..end].split('\n') {
        let row = line.trim_start_matches(PAGE_BREAK).trim_end();
        let n = row.split('\t').count();
        if n < 2 || *cells.get_or_insert(n) != n || row.is_empty() {
            return None;
        }
        let row_start = at + (line.len() - line.trim_start_matches(PAGE_BREAK).len());
        rows.push(Block::leaf(
            BlockKind::Row,
            row_start,
            row_start + row.len(),
        ));
        at += line.len() + 1;
    }
    (rows.len() >= 2).then_some(rows)
}

fn page_break(index: usize) -> BlockKind {
    BlockKind::PageBreak {
        page: u32::try_from(index).map_or(u32::MAX, |i| i.saturating_add(2)),
    }
}

/// The text of a block that is not a heading as the stored text holds it: with a backslash
/// before it when it starts with `#` after any backslashes (`# x` is `\# x`, `\# x` is
/// `\\# x`), so it never reads as a heading; other text as it is. The text after the first
/// backslash of an escaped block is the block's own.
pub fn escaped(block: &str) -> Cow<'_, str> {
    if block.trim_start_matches('\\').starts_with('#') {
        Cow::Owned(format!("\\{block}"))
    } else {
        Cow::Borrowed(block)
    }
}

/// What a reader sees of (a piece of) extracted PDF text, cut at block bounds as a search
/// hit is: headings without their `#`s, escaped blocks without their backslash, no page
/// break characters; tabs between a table's cells stay.
pub fn visible(text: &str) -> String {
    let text = text.replace(PAGE_BREAK, "");
    let blocks: Vec<&str> = text
        .split("\n\n")
        .map(|block| match heading(block) {
            Some((_, title)) => title,
            None => block
                .strip_prefix('\\')
                .filter(|rest| rest.trim_start_matches('\\').starts_with('#'))
                .unwrap_or(block),
        })
        .collect();
    blocks.join("\n\n")
}

/// A heading block: one line, `#` to `######`, a space, a title.
fn heading(block: &str) -> Option<(usize, &str)> {
    if block.contains('\n') {
        return None;
    }
    let level = block.len() - block.trim_start_matches('#').len();
    let title = block[level..].strip_prefix(' ')?.trim();
    ((1..=6).contains(&level) && !title.is_empty()).then_some((level, title))
}

/// The pages the bytes `span` of extracted PDF text lie on: the page of its first and of
/// its last character (a span of only a page break lies on the page the break starts).
pub fn pages(text: &str, span: Span) -> Pages {
    // The break is one ASCII byte, so bytes can be counted whatever the bounds.
    let before = |at: usize| {
        let bytes = &text.as_bytes()[..at.min(text.len())];
        let count = bytes.iter().filter(|&&b| b == b'\x0c').count();
        u32::try_from(count).map_or(u32::MAX, |c| c.saturating_add(1))
    };
    // A character's page counts the break it may be.
    let first = before(span.start.saturating_add(1));
    let last = before(span.end).max(first);
    Pages { first, last }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_headings_paragraphs_and_page_breaks() {
        let text = "# Title\n\nOne two\nthree.\n\n\u{c}## Part\n\nFour runs\n\u{c}on.";
        let tree = read(text);
        let kinds: Vec<(&str, &BlockKind)> = tree
            .walk()
            .map(|b| (&text[b.span.start..b.span.end], &b.kind))
            .collect();
        let heading = |level, title: &str| BlockKind::Heading {
            level,
            title: title.to_string(),
        };
        assert_eq!(
            kinds,
            vec![
                ("# Title", &BlockKind::Paragraph),
                ("# Title", &heading(1, "Title")),
                ("One two\nthree.", &BlockKind::Paragraph),
                ("\u{c}", &BlockKind::PageBreak { page: 2 }),
                ("## Part", &BlockKind::Paragraph),
                ("## Part", &heading(2, "Part")),
                ("Four runs\n\u{c}on.", &BlockKind::Paragraph),
                ("\u{c}", &BlockKind::PageBreak { page: 3 }),
            ]
        );
        assert_eq!(heading_of("#NoSpace"), None);
        assert_eq!(heading_of("####### seven"), None);
        assert_eq!(heading_of("# two\nlines"), None);
    }

    #[test]
    fn an_escaped_hash_is_a_paragraph_and_old_hash_lines_stay_headings() {
        assert_eq!(escaped("# comment"), "\\# comment");
        assert_eq!(escaped("#3 on the list"), "\\#3 on the list");
        assert_eq!(escaped("\\# as set"), "\\\\# as set");
        assert_eq!(escaped("\\ alone"), "\\ alone");
        assert_eq!(escaped("C# and F#"), "C# and F#");
        // What the layout writes: no heading. What older stores hold: the headings they had.
        let new = read("\\# comment\n\nText.");
        assert!(new
            .walk()
            .all(|b| !matches!(b.kind, BlockKind::Heading { .. })));
        let old = read("# comment\n\nText.");
        assert_eq!(
            old.walk()
                .filter(|b| matches!(b.kind, BlockKind::Heading { .. }))
                .count(),
            1
        );
    }

    fn heading_of(block: &str) -> Option<(usize, &str)> {
        heading(block)
    }

    #[test]
    fn pages_follow_the_page_breaks_of_the_tree() {
        let text = "a\n\n\u{c}b c\n\u{c}d\n\n\u{c}";
        let span = |start, end| Span { start, end };
        let p = |first, last| Pages { first, last };
        assert_eq!(pages(text, span(0, 1)), p(1, 1));
        assert_eq!(pages(text, span(3, 4)), p(2, 2));
        assert_eq!(pages(text, span(3, 6)), p(2, 2));
        assert_eq!(pages(text, span(4, 10)), p(2, 3));
        assert_eq!(pages(text, span(10, 11)), p(3, 3));
        assert_eq!(pages(text, span(12, 13)), p(4, 4));
        assert_eq!(pages(text, span(0, 99)), p(1, 4));
        // Every page break block starts the page `pages` gives its character.
        for b in read(text).walk() {
            if let BlockKind::PageBreak { page } = b.kind {
                assert_eq!(pages(text, b.span), p(page, page));
            }
        }
    }
}
