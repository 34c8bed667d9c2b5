//! Format readers: each turns one format's source into the block [`Tree`] the chunkers cut.
//! Readers know nothing of storage or embeddings.

#[cfg(feature = "code")]
pub mod code;
pub mod dialog;
#[cfg(feature = "html")]
pub mod html;
pub mod markdown;
pub mod pdf;
pub mod table;
pub mod text;

use super::spec::SourceFormat;
use super::tree::Tree;

/// The block tree of `text` read as `format`. Never panics; a source a reader cannot make
/// sense of still gets a tree (as plain text), so nothing is lost.
pub fn read(text: &str, format: SourceFormat) -> Tree {
    match format {
        SourceFormat::Markdown => markdown::read(text),
        SourceFormat::Text => text::read(text),
        #[cfg(feature = "html")]
        SourceFormat::Html => html::read(text),
        // Without the `html` feature a page is read as plain text: nothing is lost, but tags
        // and page chrome stay in the chunks.
        #[cfg(not(feature = "html"))]
        SourceFormat::Html => text::read(text),
        SourceFormat::Csv => table::read(text, b','),
        SourceFormat::Tsv => table::read(text, b'\t'),
        SourceFormat::Dialog => dialog::read(text),
        // Without the `code` feature (or for a source the parser gives up on) code is read
        // as plain text: nothing is lost, but items may be cut anywhere.
        #[cfg(feature = "code")]
        code if code.is_code() => code::read(text, code).unwrap_or_else(|| text::read(text)),
        SourceFormat::Rust
        | SourceFormat::Python
        | SourceFormat::JavaScript
        | SourceFormat::TypeScript
        | SourceFormat::Tsx
        | SourceFormat::Go => text::read(text),
        SourceFormat::Pdf => pdf::read(text),
    }
}

/// What a reader sees of `source` read as `format` (a whole document, or a piece of one cut
/// at block bounds, as a search hit is): an HTML page's visible text, without tags, scripts
/// and page chrome; a PDF's laid-out text without folio's marks in it (heading `#`s, escapes,
/// page breaks); every other format's source as it is (Markdown's markup is part of what
/// its readers see).
pub fn visible_text_of(source: &str, format: SourceFormat) -> std::borrow::Cow<'_, str> {
    #[cfg(feature = "html")]
    if format == SourceFormat::Html {
        return std::borrow::Cow::Owned(html::visible(source));
    }
    if format == SourceFormat::Pdf {
        return std::borrow::Cow::Owned(pdf::visible(source));
    }
    std::borrow::Cow::Borrowed(source)
}

/// The text to embed for the bytes `span` of a source read as `format` into `tree`: the
/// text itself; for formats with markup its visible text; for dialogs `speaker (time): text`
/// lines.
pub(crate) fn visible_text(
    text: &str,
    format: SourceFormat,
    tree: &Tree,
    span: super::Span,
) -> String {
    if format == SourceFormat::Dialog {
        return dialog::render(text, span);
    }
    #[cfg(feature = "html")]
    if !tree.markup.is_empty() {
        return html::render(text, &tree.markup, span);
    }
    let _ = tree;
    text[span.start..span.end].to_string()
}

/// The header of the embedded text of a chunk of source code (see [`code::header`]), or
/// `None` when `tree` is not code.
pub(crate) fn code_header(
    text: &str,
    tree: &Tree,
    span: super::Span,
    path: Option<&str>,
    section_path: &[String],
    depth: usize,
) -> Option<String> {
    #[cfg(feature = "code")]
    if tree.prose == super::tree::Prose::Code {
        return Some(code::header(text, tree, span, path, section_path, depth));
    }
    let _ = (text, tree, span, path, section_path, depth);
    None
}

/// A table's head row `row` as a section title: its non-empty cells between ` | `.
pub(crate) fn head_title(text: &str, tree: &Tree, row: super::Span) -> String {
    #[cfg(feature = "html")]
    if !tree.markup.is_empty() {
        return html::cells(text, &tree.markup, row).join(" | ");
    }
    let row = &text[row.start..row.end];
    // A PDF table's row (plain text): cells separated by tabs.
    let cells = if tree.prose == super::tree::Prose::Plain && row.contains('\t') {
        row.split('\t').map(str::trim).collect()
    } else {
        markdown::cells(row)
    };
    cells
        .into_iter()
        .filter(|c| !c.is_empty())
        .collect::<Vec<_>>()
        .join(" | ")
}
