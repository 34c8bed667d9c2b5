//! The one structure every format reader produces and every chunker cuts: a tree of blocks,
//! each with its byte span in the source text (source code included: items and statements).
//!
//! A reader (`readers/`) knows its format; the layout (`layout.rs`) turns any tree into
//! sections and cut candidates, so each chunking strategy works on every format.

use super::pieces::Span;

/// What kind of block a [`Block`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BlockKind {
    /// A heading; at the top level (not inside a list, quote or table) it opens a section.
    Heading {
        /// 1 is the top level (an HTML page's `<title>` is 0, above its `h1`).
        level: usize,
        /// The heading's plain text, as it goes into `section_path`.
        title: String,
    },
    /// A paragraph or any other run of text that ends with a block bound.
    Paragraph,
    /// A list; blocks inside it are separated by item bounds, weaker than block bounds.
    List,
    /// One list item (or definition term or definition).
    Item,
    /// A block quote.
    Quote,
    /// A code block (or a source code item): never cut while it fits.
    Code,
    /// A table: kept whole while it fits a child; tables of rows with a `header` are cut
    /// between row groups, each group embedded with the header (CSV/TSV always, a Markdown
    /// or HTML table, whose first row heads it, when it is longer than a child).
    Table {
        /// The header row, repeated in the embedded text of every row group.
        header: Option<Span>,
    },
    /// A table row.
    Row,
    /// One turn of a dialog or ticket thread.
    Turn {
        /// Who spoke.
        speaker: String,
        /// When, as given (free text, usually RFC 3339).
        time: Option<String>,
        /// The thread's topic at this turn, if the source names one.
        topic: Option<String>,
    },
    /// A page break: the block starts page `page` (1-based).
    PageBreak {
        /// The number of the page that starts here.
        page: u32,
    },
    /// A thematic break (`***`, `<hr>`).
    Rule,
    /// A source code item (function, type, class, impl, module) with the comments and
    /// attributes right above it. A top-level one is a section of its own, named `title`, so
    /// it is never cut while it fits a child; in one longer than a child, each inner item
    /// (method) opens a section below it.
    Symbol {
        /// What `section_path` calls it: `fn search`, `impl Store`, `class Store`, `def get`.
        title: String,
        /// Its declaration (decorators and `export` included) up to the body, which the
        /// embedded text of every piece of the item that does not hold it starts with. The
        /// comments and attributes above it, when the item is too long with them, are the
        /// first piece cut off.
        signature: Span,
    },
    /// A statement, or any other piece of code that is not an item: cut only between
    /// statements, and inside one only when it alone is longer than a child.
    Statement,
    /// An import (`use`, `import`, `from … import`): a statement whose top-level ones go
    /// into the embedded text of the chunks that name what they import.
    Import,
}

/// One block of a document: its kind, its byte span in the source and its inner blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// What the block is.
    pub kind: BlockKind,
    /// The block's bytes `[start, end)` in the source, on char boundaries.
    pub span: Span,
    /// Blocks inside this one, in source order.
    pub children: Vec<Block>,
}

impl Block {
    /// A block without inner blocks.
    pub fn leaf(kind: BlockKind, start: usize, end: usize) -> Block {
        Block {
            kind,
            span: Span { start, end },
            children: Vec::new(),
        }
    }
}

/// How line breaks inside running text count as bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Prose {
    /// Plain text: a blank line ends a paragraph, a newline ends a line.
    Plain,
    /// Markup (Markdown, HTML): blocks come from the reader, a newline is a soft break.
    Markup,
    /// Source code: blocks come from the parser, lines are the only bounds inside them.
    Code,
}

/// What a separator stands for when markup is left out of the embedded text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Separator {
    /// Nothing (inline markup: `<b>`, `<a href>`).
    None,
    /// A space (table cells).
    Space,
    /// A line break (block markup: `<p>`, `<li>`, `<tr>`).
    Line,
}

/// A run of markup (an HTML tag, a comment): part of the source and of the chunk spans, but
/// never cut, not counted in chunk sizes and left out of the embedded text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Markup {
    /// The markup's bytes.
    pub span: Span,
    /// What stands in its place in the embedded text.
    pub separator: Separator,
}

/// A document as its reader sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// Top-level blocks in source order.
    pub blocks: Vec<Block>,
    /// Parts of the source that no chunk may hold (front matter, navigation, page headers),
    /// sorted and disjoint.
    pub skipped: Vec<Span>,
    /// Markup runs, sorted and disjoint (empty for formats without markup).
    pub markup: Vec<Markup>,
    /// Source syntax (Markdown's heading marks, list bullets, emphasis, link targets, table
    /// pipes, fences): kept in the chunks and in the embedded text, but not counted in sizes
    /// in characters, so a chunk of a given size holds as much visible text in Markdown as in
    /// HTML (sizes in tokens count it: the model reads it). Sorted, disjoint, apart from the
    /// markup runs.
    pub syntax: Vec<Span>,
    /// Inline runs kept in one piece unless nothing else fits (inline code).
    pub keep: Vec<Span>,
    /// Whether running text follows plain or markup line rules.
    pub prose: Prose,
}

impl Tree {
    /// An empty tree with the given prose rules.
    pub fn new(prose: Prose) -> Tree {
        Tree {
            blocks: Vec::new(),
            skipped: Vec::new(),
            markup: Vec::new(),
            syntax: Vec::new(),
            keep: Vec::new(),
            prose,
        }
    }

    /// Every block, depth first, in source order.
    pub fn walk(&self) -> impl Iterator<Item = &Block> {
        let mut stack: Vec<&Block> = self.blocks.iter().rev().collect();
        std::iter::from_fn(move || {
            let block = stack.pop()?;
            stack.extend(block.children.iter().rev());
            Some(block)
        })
    }
}
