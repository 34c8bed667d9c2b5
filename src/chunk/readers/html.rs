//! HTML pages, tokenized by lol_html (which reports every tag's byte position): the page's
//! main content (`main`, else `article`, else `body`) without navigation, headers, footers,
//! asides, scripts, styles, forms, cookie banners and lists that are only links (a table of
//! contents inside the content); `h1`-`h6` make the heading tree; `pre` and `table` are kept
//! whole. A page that asks search engines not to index it (`<meta name="robots"
//! content="noindex">`: generated print pages, tables of contents, search pages) has no
//! content. Spans are byte ranges of the original HTML; tags are markup (never cut, not
//! counted, left out of the embedded text and of a hit's text).

use std::cell::RefCell;
use std::rc::Rc;

use lol_html::html_content::{Comment, Element, EndTag};
use lol_html::{doc_comments, element, HtmlRewriter, Settings};

use crate::chunk::tree::{Block, BlockKind, Markup, Prose, Separator, Tree};
use crate::chunk::Span;

/// Elements whose content is never page content.
const DROPPED: &[&str] = &[
    "nav", "aside", "footer", "script", "style", "noscript", "form", "template", "iframe", "svg",
    "button", "select", "dialog", "object", "canvas", "head",
];

/// ARIA roles of navigation and page chrome.
const DROPPED_ROLES: &[&str] = &[
    "navigation",
    "contentinfo",
    "complementary",
    "search",
    "dialog",
    "alertdialog",
];

/// Words in an `id` or `class` that mark a cookie or consent banner or a skip link.
const BANNER_WORDS: &[&str] = &[
    "cookie",
    "consent",
    "gdpr",
    "onetrust",
    "skip-link",
    "skiplink",
];

/// The class of a heading's permalink (Sphinx's and MkDocs' `¶`): its glyph is markup, not
/// a word of the heading (dropping it would cut the heading off its section).
const PERMALINK_CLASS: &str = "headerlink";

/// Elements rendered inline: their tags stand for nothing in the embedded text.
const INLINE: &[&str] = &[
    "a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "del", "dfn", "em", "font", "i", "img",
    "ins", "kbd", "label", "mark", "q", "s", "samp", "small", "span", "strong", "sub", "sup",
    "time", "u", "var", "wbr",
];

/// Start tags that close an open `p` (the HTML parsing rules, abridged).
const CLOSES_P: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "details",
    "div",
    "dl",
    "fieldset",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "ul",
];

/// The block tree of an HTML page. A page the tokenizer refuses is read as plain text.
pub fn read(text: &str) -> Tree {
    match tokenize(text) {
        Ok(tokens) => build(text, tokens),
        Err(_) => super::text::read(text),
    }
}

/// What the tokenizer reports, in source order.
enum Token {
    Start {
        name: String,
        span: Span,
        attrs: Attrs,
        void: bool,
    },
    End {
        name: String,
        span: Span,
    },
    Comment(Span),
}

#[derive(Default)]
struct Attrs {
    id: String,
    class: String,
    role: String,
    hidden: bool,
    /// A `<meta name="robots">` whose content says `noindex`.
    noindex: bool,
}

fn span_of(range: std::ops::Range<usize>) -> Span {
    Span {
        start: range.start,
        end: range.end,
    }
}

fn tokenize(text: &str) -> Result<Vec<Token>, lol_html::errors::RewritingError> {
    let tokens = Rc::new(RefCell::new(Vec::new()));
    let (on_element, on_comment) = (tokens.clone(), tokens.clone());
    let settings = Settings {
        element_content_handlers: vec![element!("*", move |el: &mut Element| {
            let attr = |name: &str| el.get_attribute(name).unwrap_or_default();
            let attrs = Attrs {
                id: attr("id"),
                class: attr("class"),
                role: attr("role"),
                hidden: el.has_attribute("hidden") || attr("aria-hidden") == "true",
                noindex: el.tag_name() == "meta"
                    && attr("name").eq_ignore_ascii_case("robots")
                    && attr("content").to_ascii_lowercase().contains("noindex"),
            };
            on_element.borrow_mut().push(Token::Start {
                name: el.tag_name(),
                span: span_of(el.source_location().bytes()),
                attrs,
                void: !el.can_have_content(),
            });
            if let Some(handlers) = el.end_tag_handlers() {
                let on_end = on_element.clone();
                handlers.push(Box::new(move |end: &mut EndTag<'_>| {
                    on_end.borrow_mut().push(Token::End {
                        name: end.name(),
                        span: span_of(end.source_location().bytes()),
                    });
                    Ok(())
                }));
            }
            Ok(())
        })],
        document_content_handlers: vec![doc_comments!(move |c: &mut Comment<'_>| {
            let span = span_of(c.source_location().bytes());
            on_comment.borrow_mut().push(Token::Comment(span));
            Ok(())
        })],
        ..Settings::new()
    };
    let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
    rewriter.write(text.as_bytes())?;
    rewriter.end()?;
    Ok(tokens.take())
}

/// One element: its name, whole span, the span inside its tags, attributes and children.
struct Node {
    name: String,
    span: Span,
    attrs: Attrs,
    children: Vec<usize>,
}

/// The element tree from the tokens: end tags close what they match (and whatever is still
/// open inside it); some start tags close an open `p`, `li`, `dt`/`dd`, `tr` or cell first.
fn elements(text: &str, tokens: Vec<Token>, markup: &mut Vec<Markup>) -> (Vec<Node>, Vec<usize>) {
    let mut nodes: Vec<Node> = Vec::new();
    let mut roots = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    let close = |nodes: &mut Vec<Node>, open: &mut Vec<usize>, depth: usize, at: usize| {
        for i in open.drain(depth..) {
            nodes[i].span.end = at;
        }
    };
    for token in tokens {
        match token {
            Token::Start {
                name,
                span,
                attrs,
                void,
            } => {
                let separator = separator(&name);
                markup.push(Markup { span, separator });
                if let Some(depth) = implied_close(&nodes, &open, &name) {
                    close(&mut nodes, &mut open, depth, span.start);
                }
                let index = nodes.len();
                match open.last() {
                    Some(&parent) => nodes[parent].children.push(index),
                    None => roots.push(index),
                }
                nodes.push(Node {
                    name,
                    span,
                    attrs,
                    children: Vec::new(),
                });
                if !void {
                    open.push(index);
                }
            }
            Token::End { name, span } => {
                markup.push(Markup {
                    span,
                    separator: separator(&name),
                });
                if let Some(depth) = open.iter().rposition(|&i| nodes[i].name == name) {
                    close(&mut nodes, &mut open, depth + 1, span.start);
                    if let Some(i) = open.pop() {
                        nodes[i].span.end = span.end;
                    }
                }
            }
            Token::Comment(span) => markup.push(Markup {
                span,
                separator: Separator::None,
            }),
        }
    }
    close(&mut nodes, &mut open, 0, text.len());
    for link in nodes.iter().filter(|n| {
        n.name == "a"
            && n.attrs
                .class
                .split_whitespace()
                .any(|c| c == PERMALINK_CLASS)
    }) {
        let span = link.span;
        markup.retain(|m| m.span.end <= span.start || m.span.start >= span.end);
        markup.push(Markup {
            span,
            separator: Separator::None,
        });
    }
    markup.extend(stray_end_tags(text, markup));
    (nodes, roots)
}

/// End tags the tokenizer left as text because nothing they close is open: a page's extra
/// `</div>`, or the closing tags of a piece of a page cut at element bounds (a search hit).
/// They are markup too, or they would show as words.
fn stray_end_tags(text: &str, markup: &[Markup]) -> Vec<Markup> {
    let mut known: Vec<Span> = markup.iter().map(|m| m.span).collect();
    known.sort_by_key(|s| s.start);
    let mut stray = Vec::new();
    let mut at = 0;
    for span in known.iter().copied().chain([Span {
        start: text.len(),
        end: text.len(),
    }]) {
        if at < span.start {
            let gap = &text[at..span.start];
            let mut from = 0;
            while let Some(open) = gap[from..].find("</") {
                let start = from + open;
                let name_len = gap[start + 2..]
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                    .unwrap_or(gap.len() - start - 2);
                let after = start + 2 + name_len;
                let close = gap[after..].find('>').filter(|&c| {
                    name_len > 0 && gap[after..after + c].chars().all(char::is_whitespace)
                });
                match close {
                    Some(c) => {
                        let name = &gap[start + 2..after];
                        stray.push(Markup {
                            span: Span {
                                start: at + start,
                                end: at + after + c + 1,
                            },
                            separator: separator(&name.to_ascii_lowercase()),
                        });
                        from = after + c + 1;
                    }
                    None => from = start + 2,
                }
            }
        }
        at = at.max(span.end);
    }
    stray
}

/// The depth of the open element a start tag `name` closes implicitly, if any.
fn implied_close(nodes: &[Node], open: &[usize], name: &str) -> Option<usize> {
    let find = |targets: &[&str], walls: &[&str]| {
        for (depth, &i) in open.iter().enumerate().rev() {
            let n = nodes[i].name.as_str();
            if targets.contains(&n) {
                return Some(depth);
            }
            if walls.contains(&n) {
                return None;
            }
        }
        None
    };
    match name {
        "li" => find(&["li"], &["ul", "ol", "menu", "table"]),
        "dt" | "dd" => find(&["dt", "dd"], &["dl", "table"]),
        "tr" => find(&["tr"], &["table"]),
        "td" | "th" => find(&["td", "th"], &["tr", "table"]),
        _ if CLOSES_P.contains(&name) => {
            let top = open.last().map(|&i| nodes[i].name.as_str());
            (top == Some("p")).then(|| open.len() - 1)
        }
        _ => None,
    }
}

fn separator(name: &str) -> Separator {
    match name {
        "td" | "th" => Separator::Space,
        _ if INLINE.contains(&name) => Separator::None,
        _ => Separator::Line,
    }
}

/// Whether an element is page chrome rather than content. `in_content`: inside `main` or
/// `article`, where a `header` holds the title.
fn dropped(node: &Node, in_content: bool) -> bool {
    let name = node.name.as_str();
    let a = &node.attrs;
    let marked = |words: &str| {
        let words = words.to_ascii_lowercase();
        BANNER_WORDS.iter().any(|w| words.contains(w))
    };
    DROPPED.contains(&name)
        || (name == "header" && !in_content)
        || DROPPED_ROLES.contains(&a.role.as_str())
        || (a.role == "banner" && !in_content)
        || a.hidden
        || marked(&a.id)
        || marked(&a.class)
}

fn build(text: &str, tokens: Vec<Token>) -> Tree {
    let mut tree = Tree::new(Prose::Markup);
    let (nodes, roots) = elements(text, tokens, &mut tree.markup);
    tree.markup.sort_by_key(|m| m.span.start);
    let find = |pred: &dyn Fn(&Node) -> bool| nodes.iter().position(pred);
    if find(&|n| n.attrs.noindex).is_some() {
        let mut nothing = Tree::new(Prose::Markup);
        nothing.skipped.push(Span {
            start: 0,
            end: text.len(),
        });
        return nothing;
    }
    let root = find(&|n| n.name == "main" || n.attrs.role == "main")
        .or_else(|| find(&|n| n.name == "article"))
        .or_else(|| find(&|n| n.name == "body"));
    let mut reader = Reader {
        text,
        nodes: &nodes,
        tree,
    };
    if let Some(title) = nodes.iter().find(|n| n.name == "title") {
        reader.title(title);
    }
    match root {
        Some(root) => {
            let span = nodes[root].span;
            reader.skip(0, span.start);
            reader.skip(span.end, text.len());
            let in_content = matches!(nodes[root].name.as_str(), "main" | "article");
            let blocks = reader.blocks(&nodes[root].children, in_content);
            reader.tree.blocks.extend(blocks);
        }
        None => {
            let blocks = reader.blocks(&roots, false);
            reader.tree.blocks.extend(blocks);
        }
    }
    // The page title heads every section path, unless the first heading repeats it.
    let repeated = match reader.tree.blocks.as_slice() {
        [Block {
            kind: BlockKind::Heading { level: 0, title },
            ..
        }, rest @ ..] => rest.iter().find_map(|b| match &b.kind {
            BlockKind::Heading { title: first, .. } => Some(first == title),
            _ => None,
        }),
        _ => None,
    };
    if repeated == Some(true) {
        reader.tree.blocks.remove(0);
    }
    reader.tree
}

struct Reader<'a> {
    text: &'a str,
    nodes: &'a [Node],
    tree: Tree,
}

impl Reader<'_> {
    fn skip(&mut self, start: usize, end: usize) {
        if start < end {
            self.tree.skipped.push(Span { start, end });
        }
    }

    /// The `<title>` as a heading above `h1` (level 0): it is skipped with the `head`, but
    /// names the page in every section path.
    fn title(&mut self, node: &Node) {
        let title = render(self.text, &self.tree.markup, node.span);
        let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
        if !title.is_empty() {
            let kind = BlockKind::Heading { level: 0, title };
            let block = Block::leaf(kind, node.span.start, node.span.end);
            self.tree.blocks.push(block);
        }
    }

    /// The blocks of some sibling elements; containers (`div`, `section`, ...) give their
    /// children's blocks, dropped elements are skipped.
    fn blocks(&mut self, children: &[usize], in_content: bool) -> Vec<Block> {
        let mut out = Vec::new();
        for &i in children {
            let node = &self.nodes[i];
            if dropped(node, in_content) || self.only_links(node) {
                self.skip(node.span.start, node.span.end);
                continue;
            }
            let in_content = in_content || matches!(node.name.as_str(), "main" | "article");
            let (start, end) = (node.span.start, node.span.end);
            let kind = match node.name.as_str() {
                "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                    let level = usize::from(node.name.as_bytes()[1] - b'0');
                    let mut holes = Vec::new();
                    self.dropped_inside(&node.children, in_content, &mut holes);
                    let title = render_except(self.text, &self.tree.markup, node.span, holes);
                    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
                    BlockKind::Heading { level, title }
                }
                "p" => BlockKind::Paragraph,
                "ul" | "ol" | "dl" | "menu" => BlockKind::List,
                "li" | "dt" | "dd" => BlockKind::Item,
                "pre" => BlockKind::Code,
                "table" => BlockKind::Table { header: None },
                "blockquote" => BlockKind::Quote,
                "hr" => BlockKind::Rule,
                "code" => {
                    self.tree.keep.push(node.span);
                    continue;
                }
                _ => {
                    let inner = self.blocks(&node.children, in_content);
                    out.extend(inner);
                    continue;
                }
            };
            let leaf = matches!(
                kind,
                BlockKind::Heading { .. } | BlockKind::Code | BlockKind::Table { .. }
            );
            let mut block = Block::leaf(kind, start, end);
            if leaf {
                self.skip_inside(&node.children, in_content);
                if node.name == "table" {
                    block = self.table(node, in_content);
                }
            } else {
                block.children = self.blocks(&node.children, in_content);
            }
            out.push(block);
        }
        out
    }

    /// Whether `node` is a list of links and nothing else, as a table of contents is (three
    /// items or more, nine tenths of its visible characters link text): navigation the page
    /// put inside its content, which would otherwise outrank the pages it points to.
    fn only_links(&self, node: &Node) -> bool {
        const MIN_ITEMS: usize = 3;
        if !matches!(node.name.as_str(), "ul" | "ol" | "menu") {
            return false;
        }
        let items = node
            .children
            .iter()
            .filter(|&&i| self.nodes[i].name == "li")
            .count();
        if items < MIN_ITEMS {
            return false;
        }
        let visible = |span: Span| {
            render(self.text, &self.tree.markup, span)
                .chars()
                .filter(|c| !c.is_whitespace())
                .count()
        };
        let all = visible(node.span);
        let mut linked = 0;
        let mut stack = node.children.clone();
        while let Some(i) = stack.pop() {
            let child = &self.nodes[i];
            if child.name == "a" {
                linked += visible(child.span);
            } else {
                stack.extend(&child.children);
            }
        }
        all > 0 && linked * 10 >= all * 9
    }

    /// A table with its rows (`tr`, in `thead`, `tbody` or `tfoot` too, not in a nested
    /// table). The first row heads it, `th` cells or not: a table longer than a child is
    /// cut into row groups under that row, as a Markdown table is under its head row.
    fn table(&self, node: &Node, in_content: bool) -> Block {
        let mut rows = Vec::new();
        self.rows(&node.children, in_content, &mut rows);
        let header = rows.first().map(|r: &Block| r.span);
        let mut table = Block::leaf(BlockKind::Table { header }, node.span.start, node.span.end);
        table.children = rows;
        table
    }

    fn rows(&self, children: &[usize], in_content: bool, out: &mut Vec<Block>) {
        for &i in children {
            let node = &self.nodes[i];
            match node.name.as_str() {
                _ if dropped(node, in_content) => {}
                "tr" => out.push(Block::leaf(BlockKind::Row, node.span.start, node.span.end)),
                "table" => {}
                _ => self.rows(&node.children, in_content, out),
            }
        }
    }

    /// Dropped elements inside a block kept whole (a script inside a table cell).
    fn skip_inside(&mut self, children: &[usize], in_content: bool) {
        let mut holes = Vec::new();
        self.dropped_inside(children, in_content, &mut holes);
        for hole in holes {
            self.skip(hole.start, hole.end);
        }
    }

    /// The spans of the dropped elements among `children` and their descendants.
    fn dropped_inside(&self, children: &[usize], in_content: bool, out: &mut Vec<Span>) {
        for &i in children {
            let node = &self.nodes[i];
            if dropped(node, in_content) {
                out.push(node.span);
            } else {
                self.dropped_inside(&node.children, in_content, out);
            }
        }
    }
}

/// What a reader sees of a page (or of a piece of one cut at element bounds): the content
/// the block tree holds, rendered, without the page chrome, scripts and styles it skips.
pub(crate) fn visible(text: &str) -> String {
    let tree = read(text);
    let whole = Span {
        start: 0,
        end: text.len(),
    };
    render_except(text, &tree.markup, whole, tree.skipped.clone())
}

/// [`render`] of `span` less the `holes` in it (skipped elements), a line apart.
fn render_except(text: &str, markup: &[Markup], span: Span, mut holes: Vec<Span>) -> String {
    holes.sort_by_key(|s| s.start);
    let mut parts = Vec::new();
    let mut at = span.start;
    for hole in holes.into_iter().chain([Span {
        start: span.end,
        end: span.end,
    }]) {
        let end = hole.start.min(span.end);
        if at < end {
            let part = render(text, markup, Span { start: at, end });
            if !part.is_empty() {
                parts.push(part);
            }
        }
        at = at.max(hole.end);
    }
    parts.join("\n")
}

/// The visible text of `span`: markup replaced by its separator, entities decoded, runs of
/// whitespace collapsed, one line per block.
pub(crate) fn render(text: &str, markup: &[Markup], span: Span) -> String {
    render_cells(text, markup, span, ' ')
}

/// The non-empty cells of the table row `span`, as rendered text.
pub(crate) fn cells(text: &str, markup: &[Markup], span: Span) -> Vec<String> {
    const CELL: char = '\u{1f}';
    render_cells(text, markup, span, CELL)
        .split(['\n', CELL])
        .map(|cell| cell.trim().to_string())
        .filter(|cell| !cell.is_empty())
        .collect()
}

/// [`render`] with `cell` between table cells.
fn render_cells(text: &str, markup: &[Markup], span: Span, cell: char) -> String {
    let mut raw = String::with_capacity(span.end - span.start);
    let mut from = span.start;
    let first = markup.partition_point(|m| m.span.end <= span.start);
    let push_text = |raw: &mut String, s: &str| {
        raw.push_str(&html_escape::decode_html_entities(s));
    };
    for m in &markup[first..] {
        if m.span.start >= span.end {
            break;
        }
        if m.span.start > from {
            push_text(&mut raw, &text[from..m.span.start]);
        }
        match m.separator {
            Separator::None => {}
            Separator::Space => raw.push(cell),
            Separator::Line => raw.push('\n'),
        }
        from = from.max(m.span.end);
    }
    if from < span.end {
        push_text(&mut raw, &text[from..span.end]);
    }
    raw.split('\n')
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headings(tree: &Tree) -> Vec<(usize, String)> {
        tree.walk()
            .filter_map(|b| match &b.kind {
                BlockKind::Heading { level, title } => Some((*level, title.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn main_content_without_chrome() {
        let page = "<html><head><title>T</title><style>p{}</style></head><body>\
            <header><a href=/>Home</a></header><nav><ul><li>Menu</li></ul></nav>\
            <main><h1>Guide &amp; more</h1><p>Intro<script>x()</script> text.</p>\
            <div class=\"cookie-banner\">We use cookies</div>\
            <h2>Install</h2><ul><li>one<li>two</ul><pre>code\n  here</pre></main>\
            <footer>Copyright</footer></body></html>";
        let tree = read(page);
        assert_eq!(
            headings(&tree),
            vec![
                (0, "T".into()),
                (1, "Guide & more".into()),
                (2, "Install".into())
            ]
        );
        let skipped: String = tree.skipped.iter().map(|s| &page[s.start..s.end]).collect();
        for noise in ["Home", "Menu", "x()", "We use cookies", "Copyright", "p{}"] {
            assert!(skipped.contains(noise), "{noise} not skipped");
        }
        let items: Vec<&str> = tree
            .walk()
            .filter(|b| b.kind == BlockKind::Item)
            .map(|b| &page[b.span.start..b.span.end])
            .collect();
        assert_eq!(items, vec!["<li>one", "<li>two"]);
        assert!(tree
            .walk()
            .any(|b| b.kind == BlockKind::Code && page[b.span.start..].starts_with("<pre>")));
    }

    #[test]
    fn render_leaves_markup_out() {
        let page = "<p>A <b>bold</b>&nbsp;move.</p><table><tr><td>x</td><td>y</td></tr></table>";
        let tree = read(page);
        let all = Span {
            start: 0,
            end: page.len(),
        };
        assert_eq!(
            render(page, &tree.markup, all),
            "A bold move.\nx y".to_string()
        );
    }
}
