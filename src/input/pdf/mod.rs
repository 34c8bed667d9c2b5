//! A PDF file's bytes to the text folio stores: the content streams interpreted (lopdf
//! parses the file and fonts), glyphs laid out in reading order, written in the plain-text
//! convention `crate::chunk::readers::pdf` reads (form feeds between pages, `#` heading
//! lines, tab-separated table rows).

#[cfg(feature = "pdf")]
mod content;
#[cfg(feature = "pdf")]
mod layout;
#[cfg(feature = "pdf")]
mod page;

pub use crate::chunk::readers::pdf::PAGE_BREAK;

/// Why a PDF file has no text folio can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PdfError {
    /// The file is not a PDF, or is damaged beyond what the parser repairs.
    #[error("not a readable PDF: {reason}")]
    Malformed {
        /// What the parser said.
        reason: String,
    },
    /// The file is encrypted with a password folio does not have.
    #[error("an encrypted PDF (decrypt it first, e.g. `qpdf --decrypt`)")]
    Encrypted,
    /// The pages hold no text (a scan without a text layer: run OCR on it first).
    #[error("a PDF without a text layer (a scan? run OCR on it first)")]
    NoText,
}

/// The stored text of the PDF file `bytes`: its pages' text layer in reading order (columns
/// one after the other), without running headers, footers and page numbers, hyphenated
/// line ends joined, paragraphs from line spacing, headings from font sizes, code (lines in
/// a monospaced font) line by line, tables (aligned cells, or cells between drawn rules) as
/// rows of tab-separated cells. Never panics.
#[cfg(feature = "pdf")]
pub fn extract(bytes: &[u8]) -> Result<String, PdfError> {
    let pages = content::pages(bytes)?;
    let text = layout::text(&pages);
    if text.trim().replace(PAGE_BREAK, "").trim().is_empty() {
        return Err(PdfError::NoText);
    }
    Ok(text)
}
