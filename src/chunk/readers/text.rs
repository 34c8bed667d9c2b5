//! Plain text: paragraphs (blank-line separated); WikiText-style heading lines
//! (` = Title = `, ` = = Section = = `) open sections. Lines, sentences and words are found
//! by the layout's prose scan.

use crate::chunk::layout::trim;
use crate::chunk::tree::{Block, BlockKind, Prose, Tree};

/// The block tree of a plain text.
pub fn read(text: &str) -> Tree {
    let mut tree = Tree::new(Prose::Plain);
    for (start, end) in paragraphs(text) {
        tree.blocks
            .push(Block::leaf(BlockKind::Paragraph, start, end));
    }
    let mut line_start = 0;
    let mut headings = Vec::new();
    for line in text.split_inclusive('\n') {
        if let Some((level, title)) = wiki_heading(line) {
            let start = line_start + (line.len() - line.trim_start().len());
            let end = line_start + line.trim_end().len();
            let kind = BlockKind::Heading {
                level,
                title: title.to_string(),
            };
            headings.push(Block::leaf(kind, start, end));
        }
        line_start += line.len();
    }
    // Headings are top-level blocks in source order, beside the paragraphs holding them.
    tree.blocks.extend(headings);
    tree.blocks.sort_by_key(|b| (b.span.start, b.span.end));
    tree
}

/// Trimmed paragraphs: runs of text between whitespace holding two or more line breaks.
pub(crate) fn paragraphs(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let (mut from, mut gap_start, mut newlines) = (0, None, 0);
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            gap_start.get_or_insert(i);
            newlines += usize::from(c == '\n');
            continue;
        }
        if let Some(g) = gap_start.take() {
            if newlines >= 2 {
                out.extend(trim(text, from, g).map(|s| (s.start, s.end)));
                from = i;
            }
        }
        newlines = 0;
    }
    out.extend(trim(text, from, text.len()).map(|s| (s.start, s.end)));
    out
}

/// A WikiText heading line: `= Title =` at level 1, `= = Title = =` at level 2, and so on.
fn wiki_heading(line: &str) -> Option<(usize, &str)> {
    let mut rest = line.trim();
    if rest.len() > 200 {
        return None;
    }
    let mut level = 0;
    while let Some(inner) = rest.strip_prefix("= ") {
        rest = inner;
        level += 1;
    }
    for _ in 0..level {
        rest = rest.strip_suffix(" =")?;
    }
    let title = rest.trim();
    let plain = level > 0 && !title.is_empty() && !title.starts_with('=') && !title.ends_with('=');
    plain.then_some((level, title))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_wikitext_headings_only() {
        assert_eq!(
            wiki_heading(" = Valkyria Chronicles III = \n"),
            Some((1, "Valkyria Chronicles III"))
        );
        assert_eq!(
            wiki_heading(" = = = Gameplay = = = "),
            Some((3, "Gameplay"))
        );
        assert_eq!(wiki_heading("a = b = c"), None);
        assert_eq!(wiki_heading("= = ="), None);
        assert_eq!(wiki_heading("= x = ="), None);
    }

    #[test]
    fn paragraphs_end_at_blank_lines() {
        let text = " one\ntwo \n \n three\n\n";
        let got: Vec<&str> = paragraphs(text).iter().map(|&(s, e)| &text[s..e]).collect();
        assert_eq!(got, vec!["one\ntwo", "three"]);
    }

    #[test]
    fn wikitext_headings_make_sections() {
        let text = " = Game = \n Intro text . \n = = Plot = = \n The plot . \n";
        let layout = crate::chunk::tree_layout::from_tree(text, &read(text));
        let got: Vec<(&str, Vec<String>)> = layout
            .sections
            .iter()
            .map(|s| (&text[s.span.start..s.span.end], s.path.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("= Game = \n Intro text .", vec!["Game".to_string()]),
                (
                    "= = Plot = = \n The plot .",
                    vec!["Game".to_string(), "Plot".to_string()]
                ),
            ]
        );
    }
}
