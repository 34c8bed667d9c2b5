//! Markdown (CommonMark with GitHub tables, pulldown-cmark): the heading tree, blocks, list
//! items, code blocks and tables from the parser's byte offsets. Front matter at the very
//! start (YAML `---` or TOML `+++`) is skipped and its `key: value` / `key = value` lines
//! become metadata.

use pulldown_cmark::{Event, MetadataBlockKind, Options, Parser, Tag, TagEnd};

use crate::chunk::pieces::Span;
use crate::chunk::tree::{Block, BlockKind, Prose, Tree};

/// The front matter block at the very start of a Markdown text, without its fences: YAML
/// between `---` lines or TOML between `+++` lines (none without one). Read without the
/// rest of the text; `input::front_matter` parses it into metadata.
pub fn front_matter(text: &str) -> Option<FrontMatter> {
    let mut block: Option<FrontMatter> = None;
    for event in Parser::new_ext(text, OPTIONS) {
        match (event, &mut block) {
            (Event::Start(Tag::MetadataBlock(kind)), None) => {
                block = Some(FrontMatter {
                    toml: kind == MetadataBlockKind::PlusesStyle,
                    text: String::new(),
                });
            }
            (Event::Text(t), Some(block)) => block.text.push_str(&t),
            _ => break,
        }
    }
    block
}

/// A front matter block: its text, and whether it is TOML (else YAML).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontMatter {
    /// `+++` fences: TOML.
    pub toml: bool,
    /// The block between the fences.
    pub text: String,
}

const OPTIONS: Options = Options::ENABLE_TABLES
    .union(Options::ENABLE_YAML_STYLE_METADATA_BLOCKS)
    .union(Options::ENABLE_PLUSES_DELIMITED_METADATA_BLOCKS);

/// The block tree of a Markdown text.
pub fn read(text: &str) -> Tree {
    let mut reader = Reader {
        tree: Tree::new(Prose::Markup),
        text,
        open: Vec::new(),
    };
    // What the parser gives as content (text, code, HTML, breaks, rules); the rest is syntax.
    let mut content: Vec<Span> = Vec::new();
    for (event, range) in Parser::new_ext(text, OPTIONS).into_offset_iter() {
        if !matches!(event, Event::Start(_) | Event::End(_)) {
            content.push(Span {
                start: range.start,
                end: range.end,
            });
        }
        reader.event(event, range.start, range.end);
    }
    reader.tree.syntax = syntax(text, content);
    reader.tree
}

/// The syntax of a Markdown text whose content the parser put at `content`: every run of
/// non-whitespace characters between content (heading marks, bullets, emphasis, link
/// targets, pipes, fences); whitespace between blocks counts as it does in HTML.
fn syntax(text: &str, mut content: Vec<Span>) -> Vec<Span> {
    content.sort_by_key(|span| span.start);
    let mut out = Vec::new();
    let mut from = 0;
    let gaps = content.iter().map(|span| (span.start, span.end));
    for (start, end) in gaps.chain([(text.len(), text.len())]) {
        if start > from {
            let gap = &text[from..start];
            let mut run: Option<usize> = None;
            for (i, c) in gap.char_indices().chain([(gap.len(), ' ')]) {
                match (c.is_whitespace(), run) {
                    (false, None) => run = Some(i),
                    (true, Some(s)) => {
                        out.push(Span {
                            start: from + s,
                            end: from + i,
                        });
                        run = None;
                    }
                    _ => {}
                }
            }
        }
        from = from.max(end);
    }
    out
}

/// An open tag: the block it makes (`None` for inline tags and skipped front matter).
struct Open {
    block: Option<Block>,
}

struct Reader<'a> {
    tree: Tree,
    text: &'a str,
    open: Vec<Open>,
}

impl Reader<'_> {
    fn event(&mut self, event: Event<'_>, start: usize, end: usize) {
        match event {
            Event::Start(tag) => {
                let block = self.start(&tag, start, end);
                self.open.push(Open { block });
            }
            Event::End(tag) => {
                if let Some(Open { block: Some(block) }) = self.open.pop() {
                    self.close(block, tag);
                }
            }
            Event::Text(t) | Event::Code(t) if self.heading().is_some() => {
                if let Some(title) = self.heading() {
                    title.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak if self.heading().is_some() => {
                if let Some(title) = self.heading() {
                    title.push(' ');
                }
            }
            // Inline code is kept whole unless nothing else fits.
            Event::Code(_) => self.tree.keep.push(Span { start, end }),
            Event::Rule => self.push(Block::leaf(BlockKind::Rule, start, end)),
            _ => {}
        }
    }

    /// The title of the heading being read, if the innermost open block is one.
    fn heading(&mut self) -> Option<&mut String> {
        let open = self.open.iter_mut().rev().find(|o| o.block.is_some())?;
        match open.block.as_mut().map(|b| &mut b.kind) {
            Some(BlockKind::Heading { title, .. }) => Some(title),
            _ => None,
        }
    }

    fn start(&mut self, tag: &Tag<'_>, start: usize, end: usize) -> Option<Block> {
        let kind = match tag {
            Tag::MetadataBlock(_) if self.text[..start].trim().is_empty() => {
                self.tree.skipped.push(Span { start: 0, end });
                return None;
            }
            Tag::Heading { level, .. } => BlockKind::Heading {
                level: *level as usize,
                title: String::new(),
            },
            Tag::CodeBlock(_) => BlockKind::Code,
            Tag::Table(_) => BlockKind::Table { header: None },
            Tag::TableHead | Tag::TableRow => BlockKind::Row,
            Tag::Item => BlockKind::Item,
            Tag::BlockQuote(_) => BlockKind::Quote,
            Tag::List(_) => BlockKind::List,
            Tag::Paragraph
            | Tag::HtmlBlock
            | Tag::MetadataBlock(_)
            | Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition => BlockKind::Paragraph,
            _ => return None,
        };
        Some(Block::leaf(kind, start, end))
    }

    fn close(&mut self, mut block: Block, tag: TagEnd) {
        if let (BlockKind::Heading { title, .. }, TagEnd::Heading(_)) = (&mut block.kind, tag) {
            *title = title.trim().to_string();
        }
        // The head row heads the table (its row groups, when the table is cut).
        if let (BlockKind::Table { header }, TagEnd::Table) = (&mut block.kind, tag) {
            *header = block.children.first().map(|head| head.span);
        }
        self.push(block);
    }

    /// Adds a finished block to the innermost open block, or to the top level.
    fn push(&mut self, block: Block) {
        match self.open.iter_mut().rev().find_map(|o| o.block.as_mut()) {
            Some(parent) => parent.children.push(block),
            None => self.tree.blocks.push(block),
        }
    }
}

/// The cells of a pipe table row, trimmed.
pub(crate) fn cells(row: &str) -> Vec<&str> {
    let row = row.trim().trim_start_matches('|').trim_end_matches('|');
    row.split('|').map(str::trim).collect()
}

/// `key: value` (YAML) or `key = value` (TOML) lines of front matter, quotes removed.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::layout::{Layout, Strength};
    use crate::chunk::tree_layout::from_tree;

    fn layout(text: &str) -> Layout<'_> {
        from_tree(text, &read(text))
    }

    fn sections(text: &str) -> Vec<(String, Vec<String>)> {
        let layout = layout(text);
        layout
            .sections
            .iter()
            .map(|s| (text[s.span.start..s.span.end].to_string(), s.path.clone()))
            .collect()
    }

    #[test]
    fn syntax_is_what_the_parser_does_not_show() {
        let text = "## Title\n\n- an *item* [link](https://x.org)\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```rust\nfn f() {}\n```\n";
        let tree = read(text);
        let runs: Vec<&str> = tree.syntax.iter().map(|s| &text[s.start..s.end]).collect();
        assert_eq!(
            runs,
            [
                "##",
                "-",
                "*",
                "*",
                "[",
                "](https://x.org)",
                "|",
                "|",
                "|",
                "|---|---|",
                "|",
                "|",
                "|",
                "```rust",
                "```"
            ]
        );
        // Sizes leave the syntax out: the heading line counts " Title", not "## Title".
        let layout = layout(text);
        assert_eq!(layout.size(0, "## Title".len()), " Title".len());
    }

    #[test]
    fn nested_headings_build_paths_and_drop_front_matter() {
        let text = "---\ntitle: x\n---\n\nIntro.\n\n# Guide\n\nText.\n\n## Install *now*\n\nRun `it`.\n\n### Deep\n\nd\n\nSetext\n======\n\ns";
        let got = sections(text);
        let paths: Vec<Vec<String>> = got.iter().map(|(_, p)| p.clone()).collect();
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            paths,
            vec![
                owned(&[]),
                owned(&["Guide"]),
                owned(&["Guide", "Install now"]),
                owned(&["Guide", "Install now", "Deep"]),
                owned(&["Setext"]),
            ]
        );
        assert_eq!(got[0].0, "Intro.");
        assert_eq!(got[2].0, "## Install *now*\n\nRun `it`.");
    }

    #[test]
    fn headings_inside_containers_are_not_sections() {
        let got = sections("# Top\n\n> # Quoted\n> text\n\n- # In list\n");
        assert_eq!(got.len(), 1);
    }

    #[test]
    fn code_blocks_and_tables_hold_no_cuts() {
        let text = "Para one.\n\n```\nlet a = 1;\n\nlet b = 2;\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n    indented code\n    more\n";
        let layout = layout(text);
        let all = Span {
            start: 0,
            end: text.len(),
        };
        let zones: Vec<Span> = [("```", "2;\n```"), ("| a", "| 2 |"), ("indented", "more")]
            .iter()
            .map(|(first, last)| Span {
                start: text.find(first).unwrap_or(0),
                end: text.find(last).map_or(0, |i| i + last.len()),
            })
            .collect();
        for c in layout.candidates(all, 1, Strength::Char) {
            for z in &zones {
                assert!(
                    c.end <= z.start || c.start >= z.end,
                    "cut at {} inside {z:?}",
                    c.end
                );
            }
        }
        assert!(zones.iter().all(|z| layout.holds_hard(*z)));
    }

    #[test]
    fn item_bounds_are_weaker_than_block_bounds() {
        let text = "- one\n- two\n\nAfter.";
        let layout = layout(text);
        let all = Span {
            start: 0,
            end: text.len(),
        };
        let got: Vec<(&str, Strength)> = layout
            .candidates(all, usize::MAX, Strength::Item)
            .iter()
            .map(|c| (&text[..c.end], c.strength))
            .collect();
        assert_eq!(
            got,
            vec![("- one", Strength::Item), ("- one\n- two", Strength::Block)]
        );
    }
}
