//! The layout of Markdown: the heading tree, block and list-item bounds, code blocks and
//! tables as unsplittable zones, from pulldown-cmark's byte offsets. Front matter at the
//! very start (YAML `---` or TOML `+++`) is dropped.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::layout::{Builder, Layout, Strength};
use super::prose::{self, MARKDOWN};

pub(crate) fn layout(text: &str) -> Layout<'_> {
    let mut reader = Reader {
        b: Builder::new(text),
        text,
        depth: 0,
        lists: 0,
        heading: None,
    };
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
        | Options::ENABLE_PLUSES_DELIMITED_METADATA_BLOCKS;
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        reader.event(event, range.start, range.end);
    }
    let Reader { mut b, .. } = reader;
    scan_outside_hard(text, &mut b);
    b.build()
}

/// A heading being read: where it starts, its level and its plain text so far.
struct OpenHeading {
    start: usize,
    end: usize,
    level: usize,
    title: String,
}

struct Reader<'a> {
    b: Builder<'a>,
    text: &'a str,
    /// Open tags (a heading at depth 0 is a section heading; nested ones are plain blocks).
    depth: usize,
    /// Open lists: block bounds inside a list are only as strong as item bounds.
    lists: usize,
    heading: Option<OpenHeading>,
}

impl Reader<'_> {
    fn event(&mut self, event: Event<'_>, start: usize, end: usize) {
        match event {
            Event::Start(tag) => {
                self.start(&tag, start, end);
                self.depth += 1;
            }
            Event::End(tag) => {
                self.depth = self.depth.saturating_sub(1);
                self.end(tag);
            }
            Event::Text(t) | Event::Code(t) if self.heading.is_some() => {
                if let Some(h) = self.heading.as_mut() {
                    h.title.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak if self.heading.is_some() => {
                if let Some(h) = self.heading.as_mut() {
                    h.title.push(' ');
                }
            }
            // Inline code is kept whole unless nothing else fits.
            Event::Code(_) => self.b.soft(start, end),
            Event::Rule => self.block(start, end),
            _ => {}
        }
    }

    fn start(&mut self, tag: &Tag<'_>, start: usize, end: usize) {
        match tag {
            Tag::MetadataBlock(_) if self.text[..start].trim().is_empty() => self.b.skip_to(end),
            Tag::Heading { level, .. } => {
                self.block(start, end);
                self.b.glue(start, end);
                if self.depth == 0 {
                    self.heading = Some(OpenHeading {
                        start,
                        end,
                        level: *level as usize,
                        title: String::new(),
                    });
                }
            }
            Tag::CodeBlock(_) | Tag::Table(_) => {
                self.block(start, end);
                self.b.hard(start, end);
            }
            Tag::Item => {
                self.b.cut(start, Strength::Item);
                self.b.cut(end, Strength::Item);
                self.glue_marker(start, end);
            }
            Tag::BlockQuote(_) => {
                self.block(start, end);
                self.glue_marker(start, end);
            }
            Tag::List(_) => {
                self.block(start, end);
                self.lists += 1;
            }
            Tag::Paragraph
            | Tag::HtmlBlock
            | Tag::MetadataBlock(_)
            | Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition => self.block(start, end),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::List(_) => self.lists = self.lists.saturating_sub(1),
            TagEnd::Heading(_) if self.depth == 0 => {
                if let Some(h) = self.heading.take() {
                    self.b
                        .heading(h.start, h.end, h.level, h.title.trim().to_string());
                }
            }
            _ => {}
        }
    }

    /// Bounds at both ends of a block, weaker inside a list so that items stay together.
    fn block(&mut self, start: usize, end: usize) {
        let strength = if self.lists > 0 {
            Strength::Item
        } else {
            Strength::Block
        };
        self.b.cut(start, strength);
        self.b.cut(end, strength);
    }

    /// Keeps a list or quote marker (`-`, `1.`, `>`) with the first word after it.
    fn glue_marker(&mut self, start: usize, end: usize) {
        let marker = self.text[start..end]
            .find(char::is_whitespace)
            .map_or(end, |i| start + i);
        self.b.glue(start, marker);
    }
}

/// Prose bounds everywhere except inside code blocks and tables.
fn scan_outside_hard(text: &str, b: &mut Builder<'_>) {
    let zones = b.hard_zones();
    let mut from = 0;
    for z in zones {
        if z.start > from {
            prose::scan(text, from, z.start, MARKDOWN, b);
        }
        from = from.max(z.end);
    }
    prose::scan(text, from, text.len(), MARKDOWN, b);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::Span;

    fn sections(text: &str) -> Vec<(String, Vec<String>)> {
        let layout = layout(text);
        layout
            .sections
            .iter()
            .map(|s| (text[s.span.start..s.span.end].to_string(), s.path.clone()))
            .collect()
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
