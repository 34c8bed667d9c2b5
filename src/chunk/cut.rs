//! Cutting one document: read it into a block tree, lay it out, cut parents, then the
//! children inside each parent.

use std::borrow::Cow;

use super::layout::{trim, Layout};
use super::pieces::{ChildPiece, Chunked, Pages, ParentPiece, Span};
use super::siblings::{self, Child};
use super::spec::{ChildStrategy, ChunkSpec, EmbedForm, SourceFormat};
use super::tree::{BlockKind, Prose, Tree};
use super::tree_layout;
use super::{fixed, pack, parents, readers};
use crate::tokens::{EstimateCounter, TokenCounter};

/// Rounds of [`fit`]: a child still too long after them is flagged oversized.
const FIT_ROUNDS: usize = 8;

/// Cuts one document into parents and children as `spec` says, token sizes in the
/// model-free estimate ([`EstimateCounter`]). Never panics, and the same input always gives the
/// same output.
pub fn chunk_document(text: &str, format: SourceFormat, spec: &ChunkSpec) -> Chunked {
    chunk_document_with(text, format, spec, &EstimateCounter)
}

/// [`chunk_document`] with the sizes of every token unit of `spec` counted by `measure` (the
/// caller picks the counter the unit names; the store uses the index's). A structure-aware
/// child sized in tokens fits its target as [`fits`] says, unless it is one unsplittable
/// block (flagged `oversized`).
pub fn chunk_document_with(
    text: &str,
    format: SourceFormat,
    spec: &ChunkSpec,
    measure: &dyn TokenCounter,
) -> Chunked {
    let tree = readers::read(text, format);
    let layout = layout_of(text, &tree, spec, measure);
    let mut out = cut_laid_out(&layout, &tree, spec, measure);
    if let Some((target, _, _)) = spec.child.structure().filter(|c| c.2.is_tokens()) {
        let pack = (tree.prose != Prose::Code).then_some(spec.embed_form);
        let texts = EmbedTexts {
            text,
            format,
            tree,
            path: None,
            form: spec.embed_form,
        };
        let texts_of = |c: &ChildPiece| {
            let embedded = texts.get(&c.section_path, c.span, spec.heading_depth);
            (embedded, texts.body(c.span))
        };
        fit(&layout, &mut out, (target, pack), measure, &texts_of);
    }
    out
}

/// Cuts a document that a reader has read into `tree` (see [`readers::read`]). Every chunking
/// strategy works on any tree, whatever its format. Token sizes are in the estimate, and
/// token-sized children are checked on their own text (without a heading prefix).
pub fn chunk_tree(text: &str, tree: &Tree, spec: &ChunkSpec) -> Chunked {
    let layout = layout_of(text, tree, spec, &EstimateCounter);
    let mut out = cut_laid_out(&layout, tree, spec, &EstimateCounter);
    if let Some((target, _, _)) = spec.child.structure().filter(|c| c.2.is_tokens()) {
        let texts_of = |c: &ChildPiece| {
            let own = text[c.span.start..c.span.end].to_string();
            (own.clone(), own)
        };
        let pack = (tree.prose != Prose::Code).then_some(spec.embed_form);
        fit(
            &layout,
            &mut out,
            (target, pack),
            &EstimateCounter,
            &texts_of,
        );
    }
    out
}

/// Whether a child sized in tokens fits `target`, its embedded text (heading prefix
/// included) and its own text counted as `embedded` and `body` tokens: the embedded text is
/// at most the target, or the body at most half of it (rounded up). So the heading prefix
/// counts against the target only up to half of it: a prefix longer than that (a long
/// heading path, a tiny target) leaves the body half the target, not a token or two.
pub fn fits(target: usize, embedded: usize, body: usize) -> bool {
    let target = target.max(1);
    embedded <= target || body <= target - target / 2
}

/// The layout `spec` cuts, sized in its unit (a document's tokens counted once).
fn layout_of<'a>(
    text: &'a str,
    tree: &Tree,
    spec: &ChunkSpec,
    measure: &dyn TokenCounter,
) -> Layout<'a> {
    // Tables longer than a child are cut into row groups under their head row.
    let table_limit = spec
        .child
        .structure()
        .map_or(usize::MAX, |(target, ..)| target);
    let units = spec.layout_in_tokens().then(|| measure.starts(text));
    tree_layout::from_tree_cut(text, tree, table_limit, units)
}

fn cut_laid_out(
    layout: &Layout<'_>,
    tree: &Tree,
    spec: &ChunkSpec,
    measure: &dyn TokenCounter,
) -> Chunked {
    // Source code keeps one chunk per item, however short.
    let pack = (tree.prose != Prose::Code).then_some(spec.embed_form);
    let mut out = pieces(layout, spec, pack, measure);
    if !tree.markup.is_empty() {
        drop_markup_only(layout, &mut out);
    }
    out
}

/// A child's embedded text and its own (visible) text.
type TextsOf<'t> = dyn Fn(&ChildPiece) -> (String, String) + 't;

/// Token-sized children checked whole: the packers count the document's tokens inside each
/// piece, and a piece tokenized alone, with its heading prefix, can be longer. A child that
/// does not [`fits`] is cut again without overlap (`pack` as in [`children`]) to the body
/// its prefix leaves, lowered by what the document's count missed, for at most
/// [`FIT_ROUNDS`] rounds; a piece that cannot be cut is flagged oversized.
///
/// Children stay in order: a child cut again, or one that would start before the last piece
/// kept, gives up the part that piece already holds (its overlap), so pieces never reach
/// back past the previous one's end.
fn fit(
    layout: &Layout<'_>,
    chunked: &mut Chunked,
    (target, pack): (usize, Option<EmbedForm>),
    measure: &dyn TokenCounter,
    texts_of: &TextsOf<'_>,
) {
    let fit = Fit {
        layout,
        target,
        pack,
        measure,
        texts_of,
    };
    let own_parents = chunked.parents.len() == chunked.children.len()
        && chunked
            .children
            .iter()
            .enumerate()
            .all(|(i, c)| c.parent == i);
    let mut out: Vec<ChildPiece> = Vec::with_capacity(chunked.children.len());
    for child in chunked.children.drain(..) {
        let last = out.last().map(|l| l.span);
        let in_order = last.is_none_or(|l| l.start < child.span.start && l.end < child.span.end);
        if in_order && (child.oversized || fit.fits(&child)) {
            out.push(child);
            continue;
        }
        let from = last.map_or(child.span.start, |l| l.end.max(child.span.start));
        if let Some(span) = trim(layout.text, from, child.span.end.max(from)) {
            fit.place(ChildPiece { span, ..child }, FIT_ROUNDS, &mut out);
        }
    }
    if own_parents {
        // Children that are their own parents stay so.
        chunked.parents = out
            .iter()
            .map(|c| ParentPiece {
                span: c.span,
                section_path: c.section_path.clone(),
            })
            .collect();
        out.iter_mut().enumerate().for_each(|(i, c)| c.parent = i);
    }
    chunked.children = out;
}

struct Fit<'f, 'a> {
    layout: &'f Layout<'a>,
    target: usize,
    pack: Option<EmbedForm>,
    measure: &'f dyn TokenCounter,
    texts_of: &'f TextsOf<'f>,
}

impl Fit<'_, '_> {
    /// The child's embedded and body tokens when it does not fit, `None` when it does. The
    /// body is tokenized only when the embedded text alone is over the target (the first
    /// clause of [`fits`]).
    fn overshoot(&self, child: &ChildPiece) -> Option<(usize, usize)> {
        let (embedded_text, body_text) = (self.texts_of)(child);
        let embedded = self.measure.count(&embedded_text);
        if embedded <= self.target.max(1) {
            return None;
        }
        let body = self.measure.count(&body_text);
        (!fits(self.target, embedded, body)).then_some((embedded, body))
    }

    fn fits(&self, child: &ChildPiece) -> bool {
        self.overshoot(child).is_none()
    }

    /// Keeps `child` if it fits, else its pieces (in order, without overlap, inside it).
    fn place(&self, mut child: ChildPiece, rounds: usize, out: &mut Vec<ChildPiece>) {
        let Some((embedded, body)) = self.overshoot(&child) else {
            child.oversized = false;
            return out.push(child);
        };
        // What the body may hold, and what the document's count gives it beyond that.
        let target = self.target.max(1);
        let prefix = embedded.saturating_sub(body);
        let budget = target.saturating_sub(prefix).max(target - target / 2);
        let excess = body.saturating_sub(budget).max(1);
        let span = child.span;
        let limit = self
            .layout
            .size(span.start, span.end)
            .saturating_sub(excess)
            .min(budget)
            .max(1);
        let mut pieces = siblings::children(self.layout, span, limit, 0, self.pack);
        if pieces.len() < 2 {
            // Whole sections that fit the limit by the document's count: cut anyway.
            let path = &child.section_path;
            pieces = pack::structure(self.layout, span, limit, 0)
                .into_iter()
                .map(|(span, oversized)| Child {
                    span,
                    oversized,
                    path: path.clone(),
                })
                .collect();
        }
        if rounds == 0 || pieces.len() < 2 {
            child.oversized = true;
            return out.push(child);
        }
        for piece in pieces {
            let piece = ChildPiece {
                span: piece.span,
                oversized: false,
                section_path: piece.path,
                ..child.clone()
            };
            self.place(piece, rounds - 1, out);
        }
    }
}

fn pieces(
    layout: &Layout<'_>,
    spec: &ChunkSpec,
    pack: Option<EmbedForm>,
    measure: &dyn TokenCounter,
) -> Chunked {
    let mut out = Chunked::default();
    match parents::spans(layout, spec.parent) {
        Some(parents) => {
            for (index, span) in parents.into_iter().enumerate() {
                out.parents.push(ParentPiece {
                    span,
                    section_path: path_at(layout, span.start),
                });
                for c in children(layout, spec.child, span, pack, measure) {
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
            for c in regions.flat_map(|r| children(layout, spec.child, *r, pack, measure)) {
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
/// hold part of one section, or (with `pack`, as its form packs) whole sections of one
/// parent (`siblings.rs`); fixed windows ignore structure.
fn children(
    layout: &Layout<'_>,
    strategy: ChildStrategy,
    range: Span,
    pack: Option<EmbedForm>,
    measure: &dyn TokenCounter,
) -> Vec<Child> {
    match strategy {
        ChildStrategy::Structure { target, overlap }
        | ChildStrategy::StructureIn {
            target, overlap, ..
        } => siblings::children(layout, range, target, overlap, pack),
        ChildStrategy::Fixed {
            size,
            overlap,
            unit,
        } => fixed::windows(
            layout,
            range,
            size,
            overlap,
            unit.is_tokens().then_some(measure),
        )
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

/// What a late-chunking model reads of a document (`text` read as `format`), and where each
/// of its children (`spans`, byte ranges of `text`) lies in that: the source itself, or for
/// HTML and PDF the children's visible texts one after another, a blank line apart (a model
/// reading a page's source would read its tags, scripts and navigation; a PDF's, folio's
/// heading marks and page breaks).
pub fn late_input<'t>(
    text: &'t str,
    format: SourceFormat,
    spans: &[(usize, usize)],
) -> (Cow<'t, str>, Vec<(usize, usize)>) {
    let html = (format == SourceFormat::Html).then(|| EmbedTexts::new(text, format));
    let shown = |start: usize, end: usize| match &html {
        Some(reader) => reader.body(Span { start, end }),
        None => readers::pdf::visible(text.get(start..end).unwrap_or_default()),
    };
    if html.is_none() && format != SourceFormat::Pdf {
        return (Cow::Borrowed(text), spans.to_vec());
    }
    let mut joined = String::new();
    let mut placed = Vec::with_capacity(spans.len());
    for &(start, end) in spans {
        if !joined.is_empty() {
            joined.push_str("\n\n");
        }
        let from = joined.len();
        joined.push_str(&shown(start, end));
        placed.push((from, joined.len()));
    }
    (Cow::Owned(joined), placed)
}

/// The texts to embed for the children of `chunked` (cut from `text` read as `format`), in
/// order; see [`EmbedTexts`].
pub fn embed_texts(
    text: &str,
    format: SourceFormat,
    chunked: &Chunked,
    spec: &ChunkSpec,
) -> Vec<String> {
    let texts = EmbedTexts::new(text, format).with_form(spec.embed_form);
    chunked
        .children
        .iter()
        .map(|c| texts.get(&c.section_path, c.span, spec.heading_depth))
        .collect()
}

/// What the embedder sees for the chunks of one document: each chunk's visible text under
/// its headings as its [`EmbedForm`] says (see [`EmbedTexts::get`]; for formats with
/// markup, HTML, the text without tags, entities decoded; for dialogs `speaker (time):
/// text` lines). Source code (feature `code`) has a header instead of the heading path: the
/// document's path and the section path, the file's imports that the chunk names, and the
/// declarations of the items it is inside that it does not show. Reads the document once
/// for all its chunks.
pub struct EmbedTexts<'a> {
    text: &'a str,
    format: SourceFormat,
    tree: Tree,
    path: Option<String>,
    form: EmbedForm,
}

impl<'a> EmbedTexts<'a> {
    /// Reads `text` as `format`.
    pub fn new(text: &'a str, format: SourceFormat) -> Self {
        EmbedTexts {
            text,
            format,
            tree: readers::read(text, format),
            path: None,
            form: EmbedForm::default(),
        }
    }

    /// What an index with `spec` embeds for document `doc_id`'s children: its text read as
    /// `format`, named by its id, in the spec's form.
    pub fn of_document(
        doc_id: &str,
        text: &'a str,
        format: SourceFormat,
        spec: &ChunkSpec,
    ) -> Self {
        EmbedTexts::new(text, format)
            .with_path(doc_id)
            .with_form(spec.embed_form)
    }

    /// Makes the embedded texts in `form` (the index's [`ChunkSpec::embed_form`]; new indexes'
    /// [`EmbedForm::Sections`] without it).
    pub fn with_form(mut self, form: EmbedForm) -> Self {
        self.form = form;
        self
    }

    /// Names the document (the store passes its `doc_id`, a file's path for files): source
    /// code starts every embedded text with it.
    pub fn with_path(mut self, path: &str) -> Self {
        self.path = Some(path.to_string());
        self
    }

    /// The visible text of the chunk `span` alone, without the prefix or header
    /// [`EmbedTexts::get`] gives it (empty for a span outside the text or off char bounds).
    pub fn body(&self, span: Span) -> String {
        if self.text.get(span.start..span.end).is_none() {
            return String::new();
        }
        readers::visible_text(self.text, self.format, &self.tree, span)
    }

    /// The embedded text of the chunk `span` with `section_path`, in the form set by
    /// [`EmbedTexts::with_form`]. [`EmbedForm::Sections`]: its first `depth` headings as a
    /// prefix, and its text less the lines of those headings (each heading is embedded once,
    /// in the path, as LangChain's header splitter embeds it); other headings it holds keep
    /// their titles without markup. [`EmbedForm::PathPrefix`]: its first `depth` headings
    /// less those whose heading line the chunk holds, then its text. A row group of a cut
    /// table starts with its head row (the last heading of its path, which is then not in
    /// the prefix). A span outside the text (or off char bounds) gives an empty body.
    pub fn get(&self, section_path: &[String], span: Span, depth: usize) -> String {
        if self.text.get(span.start..span.end).is_none() {
            return prefixed(section_path.iter().take(depth), "");
        }
        let path = self.path.as_deref();
        if let Some(header) =
            readers::code_header(self.text, &self.tree, span, path, section_path, depth)
        {
            let body = self.body(span);
            return if header.is_empty() {
                body
            } else {
                format!("{header}\n\n{body}")
            };
        }
        let head = self.row_group_head(section_path, span);
        let (prefix, mut body) = match self.form {
            EmbedForm::Sections => {
                let prefix: Vec<&String> = section_path
                    .iter()
                    .take(depth)
                    .filter(|h| head.as_ref().is_none_or(|(title, _)| title != *h))
                    .collect();
                // No heading levels: the text as it is (the fixed baseline's bare window).
                let body = match depth {
                    0 => self.body(span),
                    _ => self.body_without(span, &prefix),
                };
                (prefix, body)
            }
            EmbedForm::PathPrefix => {
                let held: Vec<&String> = self
                    .headings_in(span)
                    .map(|(title, _)| title)
                    .chain(head.as_ref().map(|(title, _)| title))
                    .collect();
                let prefix = section_path.iter().take(depth);
                let prefix = prefix.filter(|h| !held.contains(h)).collect();
                (prefix, self.body(span))
            }
        };
        if let Some((title, head)) = head {
            if head.start < span.start {
                body = format!("{title}\n{body}");
            }
        }
        prefixed(prefix.into_iter(), &body)
    }

    /// The visible text of `span` without the lines of the headings titled as in `prefix`,
    /// the other headings as their titles.
    fn body_without(&self, span: Span, prefix: &[&String]) -> String {
        let mut parts = Vec::new();
        let mut at = span.start;
        for (title, line) in self.headings_in(span) {
            parts.push(self.body(Span {
                start: at,
                end: line.start,
            }));
            if !prefix.contains(&title) {
                parts.push(title.clone());
            }
            at = line.end;
        }
        if at == span.start {
            return self.body(span);
        }
        parts.push(self.body(Span {
            start: at,
            end: span.end,
        }));
        let parts: Vec<&str> = parts
            .iter()
            .map(|p| p.trim())
            .filter(|p| !p.is_empty())
            .collect();
        parts.join("\n\n")
    }

    /// The headings whose line (without its line break) lies inside `span`: their titles
    /// and lines, in order.
    fn headings_in(&self, span: Span) -> impl Iterator<Item = (&String, Span)> + '_ {
        let blocks = &self.tree.blocks;
        let first = blocks.partition_point(|b| b.span.start < span.start);
        blocks[first..]
            .iter()
            .take_while(move |b| b.span.start < span.end)
            .filter_map(move |b| {
                let BlockKind::Heading { title, .. } = &b.kind else {
                    return None;
                };
                // A heading's span may end with its line break.
                let line = self.text.get(b.span.start..b.span.end)?;
                let end = b.span.start + line.trim_end().len();
                (!line.trim().is_empty() && end <= span.end).then_some((
                    title,
                    Span {
                        start: b.span.start,
                        end,
                    },
                ))
            })
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

/// `headings` joined by " > ", a blank line, then `text` (the text shown to a model has no
/// such prefix).
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
