//! Format readers: each turns one format's source into the block [`Tree`] the chunkers cut.
//! Readers know nothing of storage or embeddings.

pub mod dialog;
#[cfg(feature = "html")]
pub mod html;
pub mod markdown;
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
    }
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
