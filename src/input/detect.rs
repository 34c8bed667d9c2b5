//! What a file holds, from its name and its bytes (source code by its extension only; PDF
//! files by their magic number too): other binary files are told apart from text
//! (and refused), and text without a known extension is sniffed as HTML, JSON Lines
//! (documents or turns), CSV/TSV (only when every sampled row agrees), Markdown or text.

use crate::chunk::SourceFormat;

/// How a file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileKind {
    /// One document in this format.
    Single(SourceFormat),
    /// JSON Lines, one document per record (`doc_id`, `text`, …).
    Documents,
}

/// The kind a file extension names, if any.
pub fn by_extension(ext: &str) -> Option<FileKind> {
    let kind = match ext.to_ascii_lowercase().as_str() {
        "md" | "markdown" => FileKind::Single(SourceFormat::Markdown),
        "txt" => FileKind::Single(SourceFormat::Text),
        "html" | "htm" => FileKind::Single(SourceFormat::Html),
        "csv" => FileKind::Single(SourceFormat::Csv),
        "tsv" | "tab" => FileKind::Single(SourceFormat::Tsv),
        "rs" => FileKind::Single(SourceFormat::Rust),
        "py" | "pyi" => FileKind::Single(SourceFormat::Python),
        "js" | "mjs" | "cjs" | "jsx" => FileKind::Single(SourceFormat::JavaScript),
        "ts" | "mts" | "cts" => FileKind::Single(SourceFormat::TypeScript),
        "tsx" => FileKind::Single(SourceFormat::Tsx),
        "go" => FileKind::Single(SourceFormat::Go),
        "jsonl" | "ndjson" => FileKind::Documents,
        // Without the reader, PDF files in a directory are left alone like other binaries.
        #[cfg(feature = "pdf")]
        "pdf" => FileKind::Single(SourceFormat::Pdf),
        _ => return None,
    };
    Some(kind)
}

/// A kind named on the command line: a format name (see [`super::parse_format`]), or
/// `jsonl`/`ndjson`/`documents` for JSON Lines documents.
pub fn parse_kind(name: &str) -> Option<FileKind> {
    match name.to_ascii_lowercase().as_str() {
        "jsonl" | "ndjson" | "documents" => Some(FileKind::Documents),
        other => super::parse_format(other).map(FileKind::Single),
    }
}

/// What [`binary`] says of a PDF file: it is read only as a PDF.
const PDF: &str = if cfg!(feature = "pdf") {
    "a PDF document (read it with `--format pdf`)"
} else {
    "a PDF document (this folio is built without the `pdf` feature)"
};

/// Whether bytes are a PDF file: `%PDF-` in the first KiB, where readers look for it.
pub fn is_pdf(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(1024)]
        .windows(5)
        .any(|w| w == b"%PDF-")
}

/// Why bytes are not text folio can read, if they are not: a known binary format by its
/// magic number, or NUL bytes or more than 1% of invalid UTF-8 in the first 64 KiB. The
/// answer names what was found, for the error message.
pub fn binary(bytes: &[u8]) -> Option<String> {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"%PDF-", PDF),
        (
            b"PK\x03\x04",
            "a ZIP archive (also .docx, .xlsx, .epub, .jar)",
        ),
        (b"\x89PNG\r\n\x1a\n", "a PNG image"),
        (b"\xFF\xD8\xFF", "a JPEG image"),
        (b"GIF8", "a GIF image"),
        (b"\x1F\x8B", "a gzip archive"),
        (b"\x7FELF", "an ELF executable"),
        (
            b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1",
            "an old Office document",
        ),
        (b"SQLite format 3\0", "an SQLite database"),
        (b"\xFF\xFE", "UTF-16 text (convert it to UTF-8 first)"),
        (b"\xFE\xFF", "UTF-16 text (convert it to UTF-8 first)"),
    ];
    if let Some((_, what)) = MAGIC.iter().find(|(magic, _)| bytes.starts_with(magic)) {
        return Some((*what).to_string());
    }
    let head = &bytes[..bytes.len().min(64 * 1024)];
    if head.contains(&0) {
        return Some("binary data (NUL bytes)".to_string());
    }
    let invalid = invalid_utf8(head);
    // A few stray bytes are text in another encoding (reported as such by the caller);
    // more is binary data.
    (invalid * 100 > head.len()).then(|| format!("binary data ({invalid} bytes not UTF-8)"))
}

/// Bytes of `bytes` that are not part of valid UTF-8 (a sequence cut at the end counts as
/// valid: the sample may end mid-character).
fn invalid_utf8(mut bytes: &[u8]) -> usize {
    let mut invalid = 0;
    loop {
        match std::str::from_utf8(bytes) {
            Ok(_) => return invalid,
            Err(e) => {
                let Some(len) = e.error_len() else {
                    return invalid;
                };
                invalid += len;
                bytes = &bytes[e.valid_up_to() + len..];
            }
        }
    }
}

/// The kind of a text by its content: HTML, JSON Lines of documents or of turns, TSV/CSV
/// when every sampled row has the same number of fields, Markdown when it has Markdown
/// structure (headings, fences, links, tables), else plain text.
pub fn by_content(text: &str) -> FileKind {
    let start = text.trim_start_matches('\u{feff}').trim_start();
    if looks_like_html(start) {
        return FileKind::Single(SourceFormat::Html);
    }
    if let Some(kind) = json_lines(text) {
        return kind;
    }
    for (delimiter, format) in [(b'\t', SourceFormat::Tsv), (b',', SourceFormat::Csv)] {
        if is_table(text, delimiter) {
            return FileKind::Single(format);
        }
    }
    if looks_like_markdown(text) {
        return FileKind::Single(SourceFormat::Markdown);
    }
    FileKind::Single(SourceFormat::Text)
}

/// The format of one JSON Lines record's text when the record names none: HTML, dialog
/// turns, Markdown or text (tables are not guessed inside records).
pub fn record_format(text: &str) -> SourceFormat {
    match by_content(text) {
        FileKind::Single(f @ (SourceFormat::Html | SourceFormat::Dialog)) => f,
        _ if looks_like_markdown(text) => SourceFormat::Markdown,
        _ => SourceFormat::Text,
    }
}

fn looks_like_html(start: &str) -> bool {
    let head: String = start
        .chars()
        .take(512)
        .collect::<String>()
        .to_ascii_lowercase();
    head.starts_with("<!doctype html")
        || head.starts_with("<html")
        || (head.starts_with('<') && (head.contains("<head") || head.contains("<body")))
}

/// JSON Lines: every non-blank line of the first 20 a JSON object; turns when the first
/// has a speaker and a text, documents when it has `doc_id` and `text`.
fn json_lines(text: &str) -> Option<FileKind> {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(20)
        .collect();
    let first = lines.first()?;
    let objects = lines
        .iter()
        .map(|l| serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(l).ok())
        .collect::<Option<Vec<_>>>()?;
    let has = |key: &str| objects[0].get(key).is_some();
    if has("doc_id") && has("text") {
        Some(FileKind::Documents)
    } else if crate::chunk::readers::dialog::turn(first).is_some() {
        Some(FileKind::Single(SourceFormat::Dialog))
    } else {
        None
    }
}

/// A table only where guessing is safe: at least 3 records of the first 50 read, all with
/// the same number (2 or more) of fields, and a header of short, non-empty names.
fn is_table(text: &str, delimiter: u8) -> bool {
    if !text.as_bytes().contains(&delimiter) {
        return false;
    }
    let mut reader = crate::chunk::readers::table::records(text, delimiter);
    let mut widths = Vec::new();
    let mut header_ok = true;
    for (i, record) in reader.records().take(50).enumerate() {
        let Ok(record) = record else {
            return false;
        };
        if i == 0 {
            header_ok = record
                .iter()
                .all(|f| !f.trim().is_empty() && f.chars().count() <= 64);
        }
        widths.push(record.len());
    }
    header_ok && widths.len() >= 3 && widths[0] >= 2 && widths.iter().all(|&w| w == widths[0])
}

fn looks_like_markdown(text: &str) -> bool {
    let mut previous = "";
    for line in text.lines().take(500) {
        let t = line.trim_end();
        let hashes = t.len() - t.trim_start_matches('#').len();
        let atx = (1..=6).contains(&hashes) && t[hashes..].starts_with(' ');
        let fence = t.starts_with("```") || t.starts_with("~~~");
        let setext = !previous.trim().is_empty()
            && t.len() >= 3
            && (t.bytes().all(|b| b == b'=') || t.bytes().all(|b| b == b'-'));
        let table_rule = t.starts_with('|') && t.contains("---");
        let link = t.contains("](");
        if atx || fence || setext || table_rule || link {
            return true;
        }
        previous = t;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_kinds() {
        let single = FileKind::Single;
        assert_eq!(
            by_content("<!DOCTYPE html><p>x"),
            single(SourceFormat::Html)
        );
        assert_eq!(
            by_content("# Title\n\ntext"),
            single(SourceFormat::Markdown)
        );
        assert_eq!(by_content("Title\n=====\n"), single(SourceFormat::Markdown));
        assert_eq!(by_content("a, b\nc, d\n"), single(SourceFormat::Text));
        assert_eq!(by_content("a,b\n1,2\n3,4\n"), single(SourceFormat::Csv));
        assert_eq!(by_content("a\tb\n1\t2\n3\t4\n"), single(SourceFormat::Tsv));
        assert_eq!(by_content("a,b\n1,2\n3,4,5\n"), single(SourceFormat::Text));
        assert_eq!(
            by_content("{\"doc_id\":\"a\",\"text\":\"x\"}\n"),
            FileKind::Documents
        );
        assert_eq!(
            by_content("{\"speaker\":\"a\",\"text\":\"x\"}\n"),
            single(SourceFormat::Dialog)
        );
        assert_eq!(by_content("{\"x\":1}\n"), single(SourceFormat::Text));
    }

    #[test]
    fn source_code_by_extension() {
        let single = |f| Some(FileKind::Single(f));
        assert_eq!(by_extension("rs"), single(SourceFormat::Rust));
        assert_eq!(by_extension("py"), single(SourceFormat::Python));
        assert_eq!(by_extension("mjs"), single(SourceFormat::JavaScript));
        assert_eq!(by_extension("JS"), single(SourceFormat::JavaScript));
        assert_eq!(by_extension("ts"), single(SourceFormat::TypeScript));
        assert_eq!(by_extension("tsx"), single(SourceFormat::Tsx));
        assert_eq!(by_extension("go"), single(SourceFormat::Go));
        assert_eq!(parse_kind("rust"), single(SourceFormat::Rust));
        assert_eq!(parse_kind("TypeScript"), single(SourceFormat::TypeScript));
        assert_eq!(parse_kind("golang"), single(SourceFormat::Go));
    }

    #[test]
    fn binary_by_magic_nul_and_invalid_share() {
        assert!(binary(b"%PDF-1.4\n").is_some_and(|w| w.contains("PDF")));
        assert!(is_pdf(b"\n%PDF-1.7\n") && !is_pdf(b"%PDF"));
        assert!(binary(b"abc\0def").is_some());
        assert!(binary("caf\u{e9} ok".as_bytes()).is_none());
        let mut latin1 = b"a".repeat(200);
        latin1.push(0xE9);
        assert!(binary(&latin1).is_none());
        assert!(binary(&[0xFF; 10]).is_some());
        // A character cut at the end of the sample is not counted.
        assert_eq!(invalid_utf8(&"é".as_bytes()[..1]), 0);
    }
}
