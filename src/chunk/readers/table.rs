//! CSV and TSV files (the `csv` crate, quoted fields and line breaks inside quotes included):
//! the first record is the header, every other record a row. The header is kept out of the
//! chunks and heads their section path instead, so every row group is cut with it: it is
//! what the embedder sees first (heading depth 1 or more) and what a search hit names. Rows
//! are never cut; groups of rows are packed up to the chunk size.

use crate::chunk::tree::{Block, BlockKind, Prose, Tree};
use crate::chunk::Span;

/// A reader of every record of `text` as it is (the header too, rows of any width), as
/// this reader and format detection read tables.
pub(crate) fn records(text: &str, delimiter: u8) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter)
        .from_reader(text.as_bytes())
}

/// The block tree of a delimited table (`b','` for CSV, `b'\t'` for TSV).
pub fn read(text: &str, delimiter: u8) -> Tree {
    let mut tree = Tree::new(Prose::Plain);
    let mut reader = records(text, delimiter);
    let mut starts = Vec::new();
    let mut record = csv::ByteRecord::new();
    let mut header: Option<String> = None;
    loop {
        let start = reader.position().byte() as usize;
        match reader.read_byte_record(&mut record) {
            Ok(true) => {}
            // A record the parser refuses (never for valid UTF-8 in flexible mode) ends the
            // table; what follows is still covered as text of the last row.
            Ok(false) | Err(_) => break,
        }
        if header.is_none() {
            let fields: Vec<String> = record
                .iter()
                .map(|f| String::from_utf8_lossy(f).trim().to_string())
                .collect();
            header = Some(fields.join(" | "));
        }
        starts.push(start);
    }
    let Some(header) = header else {
        return tree;
    };
    starts.push(text.len());
    let rows: Vec<Span> = starts
        .windows(2)
        .filter_map(|w| trimmed(text, w[0], w[1]))
        .collect();
    let Some((&head, body)) = rows.split_first() else {
        return tree;
    };
    // The header names every section and is kept out of the chunks.
    tree.skipped.push(Span {
        start: 0,
        end: head.end,
    });
    tree.blocks.push(Block::leaf(
        BlockKind::Heading {
            level: 1,
            title: header,
        },
        head.start,
        head.end,
    ));
    if let (Some(first), Some(last)) = (body.first(), body.last()) {
        let mut table = Block::leaf(
            BlockKind::Table { header: Some(head) },
            first.start,
            last.end,
        );
        table.children = body
            .iter()
            .map(|r| Block::leaf(BlockKind::Row, r.start, r.end))
            .collect();
        tree.blocks.push(table);
    }
    tree
}

/// `[start, end)` without surrounding whitespace (and on char boundaries), if anything is
/// left.
fn trimmed(text: &str, start: usize, end: usize) -> Option<Span> {
    let (start, end) = (floor(text, start), floor(text, end));
    crate::chunk::layout::trim(text, start, end)
}

fn floor(text: &str, mut pos: usize) -> usize {
    pos = pos.min(text.len());
    while !text.is_char_boundary(pos) {
        pos -= 1;
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_heads_the_rows() {
        let text = "name,note\n\"a, b\",\"two\nlines\"\nc,d\n\n";
        let tree = read(text, b',');
        let rows: Vec<&str> = tree
            .walk()
            .filter(|b| b.kind == BlockKind::Row)
            .map(|b| &text[b.span.start..b.span.end])
            .collect();
        assert_eq!(rows, vec!["\"a, b\",\"two\nlines\"", "c,d"]);
        assert_eq!(
            tree.blocks[0].kind,
            BlockKind::Heading {
                level: 1,
                title: "name | note".into()
            }
        );
        assert_eq!(tree.skipped, vec![Span { start: 0, end: 9 }]);
        assert!(read("", b',').blocks.is_empty());
        assert_eq!(read("a\tb\n", b'\t').blocks.len(), 1);
    }
}
