//! Cutting one document: read it into a block tree, lay it out, cut parents, then the
//! children inside each parent.

use super::layout::Layout;
use super::pieces::{ChildPiece, Chunked, Pages, ParentPiece, Span};
use super::siblings::{self, Child};
use super::spec::{ChildStrategy, ChunkSpec, SourceFormat};
use super::tree::{BlockKind, Prose, Tree};
use super::tree_layout;
use super::{fixed, parents, readers};

/// Cuts one document into parents and children as `spec` says. Never panics, and the same
/// input always gives the same output.
pub fn chunk_document(text: &str, format: SourceFormat, spec: &ChunkSpec) -> Chunked {
    let tree = readers::read(text, format);
    chunk_tree(text, &tree, spec)
}

/// Cuts a document that a reader has read into `tree` (see [`readers::read`]). Every chunking
/// strategy works on any tree, whatever its format.
pub fn chunk_tree(text: &str, tree: &Tree, spec: &ChunkSpec) -> Chunked {
    // Tables longer than a child are cut into row groups under their head row.
    let table_limit = match spec.child {
        ChildStrategy::Structure { target, .. } => target,
        ChildStrategy::Fixed { .. } => usize::MAX,
    };
    let layout = tree_layout::from_tree_cut(text, tree, table_limit);
    // Source code keeps one chunk per item, however short.
    let mut out = pieces(&layout, spec, tree.prose != Prose::Code);
    if !tree.markup.is_empty() {
        drop_markup_only(&layout, &mut out);
    }
    out
}

fn pieces(layout: &Layout<'_>, spec: &ChunkSpec, pack: bool) -> Chunked {
    let mut out = Chunked::default();
    match parents::spans(layout, spec.parent) {
        Some(parents) => {
            for (index, span) in parents.into_iter().enumerate() {
                out.parents.push(ParentPiece {
                    span,
                    section_path: path_at(layout, span.start),
                });
                for c in children(layout, spec.child, span, pack) {
                    out.children.push(ChildPiece {
                        span: c.span,
                        parent: index,
                        section_path: c.path,
                        oversized: c.oversized,
                    });
                }
            }
        }
        None => {
            let regions = layout.regions.iter();
            for c in regions.flat_map(|r| children(layout, spec.child, *r, pack)) {
                let parent = out.parents.len();
                out.parents.push(ParentPiece {
                    span: c.span,
                    section_path: c.path.clone(),
                });
                out.children.push(ChildPiece {
                    span: c.span,
                    parent,
                    section_path: c.path,
                    oversized: c.oversized,
                });
            }
        }
    }
    out
}

/// Drops pieces that hold nothing but markup (tags between two blocks), and parents left
/// without children.
fn drop_markup_only(layout: &Layout<'_>, out: &mut Chunked) {
    out.children.retain(|c| layout.visible(c.span));
    let mut used = vec![false; out.parents.len()];
    for c in &out.children {
        used[c.parent] = true;
    }
    let mut renumber = vec![None; out.parents.len()];
    let mut kept = Vec::with_capacity(out.parents.len());
    for (i, parent) in std::mem::take(&mut out.parents).into_iter().enumerate() {
        if used[i] {
            renumber[i] = Some(kept.len());
            kept.push(parent);
        }
    }
    out.parents = kept;
    for c in &mut out.children {
        c.parent = renumber[c.parent].unwrap_or(0);
    }
}

/// The children inside `range` (a parent, or the whole content). Structure-aware children
/// hold part of one section, or (with `pack`) whole sections of one parent (`siblings.rs`);
/// fixed windows ignore structure.
fn children(layout: &Layout<'_>, strategy: ChildStrategy, range: Span, pack: bool) -> Vec<Child> {
    match strategy {
        ChildStrategy::Structure { target, overlap } => {
            siblings::children(layout, range, target, overlap, pack)
        }
        ChildStrategy::Fixed {
            size,
            overlap,
            unit,
        } => fixed::windows(layout.text, range, size, overlap, unit)
            .into_iter()
            .map(|span| Child {
                span,
                oversized: false,
                path: path_at(layout, span.start),
            })
            .collect(),
    }
}

fn path_at(layout: &Layout<'_>, pos: usize) -> Vec<String> {
    layout
        .section_at(pos)
        .map(|s| s.path.clone())
        .unwrap_or_default()
}

/// The pages the bytes `span` of a document's text read as `format` lie on: for PDF
/// documents (the page breaks of their extracted text), `None` for formats without pages.
pub fn pages(text: &str, format: SourceFormat, span: Span) -> Option<Pages> {
    (format == SourceFormat::Pdf).then(|| readers::pdf::pages(text, span))
}

/// The texts to embed for the children of `chunked` (cut from `text` read as `format`), in
/// order; see [`EmbedTexts`].
pub fn embed_texts(
    text: &str,
    format: SourceFormat,
    chunked: &Chunked,
    depth: usize,
) -> Vec<String> {
    let texts = EmbedTexts::new(text, format);
    chunked
        .children
        .iter()
        .map(|c| texts.get(&c.section_path, c.span, depth))
        .collect()
}

/// What the embedder sees for the chunks of one document: [`embed_text`] of each chunk's
/// visible text (for formats with markup, HTML, the text without tags, entities decoded;
/// for dialogs `speaker (time): text` lines). Source code (feature `code`) has a header
/// instead of the heading path: the document's path and the section path, the file's
/// imports that the chunk names, and the declarations of the items it is inside that it
/// does not show. Reads the document once for all its chunks.
pub struct EmbedTexts<'a> {
    text: &'a str,
    format: SourceFormat,
    tree: Tree,
    path: Option<String>,
}

impl<'a> EmbedTexts<'a> {
    /// Reads `text` as `format`.
    pub fn new(text: &'a str, format: SourceFormat) -> Self {
        EmbedTexts {
            text,
            format,
            tree: readers::read(text, format),
            path: None,
        }
    }

    /// Names the document (the store passes its `doc_id`, a file's path for files): source
    /// code starts every embedded text with it.
    pub fn with_path(mut self, path: &str) -> Self {
        self.path = Some(path.to_string());
        self
    }

    /// The embedded text of the chunk `span` with `section_path`, prefixed with `depth`
    /// headings, less those whose heading line the chunk holds (no heading is embedded
    /// twice). A row group of a cut table starts with its head row (the last heading of its
    /// path, which is then not in the prefix). A span outside the text (or off char bounds)
    /// gives an empty body.
    pub fn get(&self, section_path: &[String], span: Span, depth: usize) -> String {
        if self.text.get(span.start..span.end).is_none() {
            return embed_text(section_path, "", depth);
        }
        let mut body = readers::visible_text(self.text, self.format, &self.tree, span);
        let path = self.path.as_deref();
        if let Some(header) =
            readers::code_header(self.text, &self.tree, span, path, section_path, depth)
        {
            return if header.is_empty() {
                body
            } else {
                format!("{header}\n\n{body}")
            };
        }
        let blocks = &self.tree.blocks;
        let first = blocks.partition_point(|b| b.span.start < span.start);
        let mut held: Vec<String> = blocks[first..]
            .iter()
            .take_while(|b| b.span.start < span.end)
            .filter_map(|b| match &b.kind {
                // A heading's span may end with its line break.
                BlockKind::Heading { title, .. }
                    if self.text.get(b.span.start..b.span.end).is_some_and(|h| {
                        !h.trim().is_empty() && b.span.start + h.trim_end().len() <= span.end
                    }) =>
                {
                    Some(title.clone())
                }
                _ => None,
            })
            .collect();
        if let Some((title, head)) = self.row_group_head(section_path, span) {
            if head.start < span.start {
                body = format!("{title}\n{body}");
            }
            held.push(title);
        }
        let headings = section_path.iter().take(depth);
        prefixed(headings.filter(|h| !held.contains(h)), &body)
    }

    /// The head row (as its title, and its span) of the cut table whose row group `span` is:
    /// it lies in a table whose head row is the last heading of `section_path`.
    fn row_group_head(&self, section_path: &[String], span: Span) -> Option<(String, Span)> {
        let blocks = &self.tree.blocks;
        let table = &blocks[blocks
            .partition_point(|b| b.span.start <= span.start)
            .checked_sub(1)?];
        let BlockKind::Table { header: Some(head) } = table.kind else {
            return None;
        };
        let inside = table.span.start <= head.start && span.end <= table.span.end;
        let title = readers::head_title(self.text, &self.tree, head);
        (inside && section_path.last() == Some(&title)).then_some((title, head))
    }
}

/// The text to embed for a child: the first `depth` headings of its section path joined by
/// " > ", a blank line, then the child's text. The text shown to a model has no such prefix.
pub fn embed_text(section_path: &[String], text: &str, depth: usize) -> String {
    prefixed(section_path.iter().take(depth), text)
}

fn prefixed<'h>(headings: impl Iterator<Item = &'h String>, text: &str) -> String {
    let headings: Vec<&str> = headings.map(String::as_str).collect();
    if headings.is_empty() {
        return text.to_string();
    }
    let mut out = headings.join(" > ");
    out.push_str("\n\n");
    out.push_str(text);
    out
}
