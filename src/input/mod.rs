//! Reading documents from the file system: files of every format the readers know,
//! directories of them, and JSON Lines in the format of the shared data sets. What a file
//! holds is told by its extension, else by its content ([`detect`]), unless the caller names
//! the format; binary files are refused, except PDF files (feature `pdf`), whose extracted
//! text becomes the document's text (see [`pdf`]).

pub mod detect;
pub mod front_matter;
pub mod pdf;
pub mod root;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::chunk::SourceFormat;
use crate::document::Document;
use crate::filter::MetadataValue;
pub use detect::FileKind;
pub use root::{FileRoot, Outside};

/// Why documents could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// A file or directory could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// A JSON Lines record is not a document.
    #[error("{path}:{line}: {reason}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// Text in another encoding than UTF-8 (a few invalid bytes).
    #[error("{path}: not UTF-8 text (convert it first, e.g. `iconv -f latin1 -t utf-8`)")]
    NotUtf8 {
        /// The file.
        path: PathBuf,
    },
    /// A PDF file without text folio can read (damaged, encrypted, or a scan).
    #[error("{path}: {source}")]
    Pdf {
        /// The file.
        path: PathBuf,
        /// Why its text could not be read.
        source: pdf::PdfError,
    },
    /// A file named on its own whose real path lies outside the root its id would be
    /// relative to (see [`FileRoot`]).
    #[error("{path} is outside {root}, the folder file ids are relative to")]
    OutsideRoot {
        /// The file, as named.
        path: PathBuf,
        /// The root.
        root: PathBuf,
    },
    /// Not text: a known binary format, NUL bytes, or mostly invalid UTF-8.
    #[error("{path}: {what}, not text folio can read")]
    Binary {
        /// The file.
        path: PathBuf,
        /// What it holds instead.
        what: String,
    },
}

/// What a JSON Lines record may hold. `published_at`/`updated_at` that are not strings are
/// kept as their JSON text; metadata values are typed as [`MetadataValue::from_json`] says.
#[derive(Deserialize)]
struct JsonDocument {
    doc_id: String,
    text: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    source_uri: String,
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    acl: Vec<String>,
    #[serde(default)]
    published_at: Option<serde_json::Value>,
    #[serde(default)]
    updated_at: Option<serde_json::Value>,
    #[serde(default)]
    metadata: BTreeMap<String, serde_json::Value>,
}

fn json_text(value: serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s),
        other => Some(other.to_string()),
    }
}

/// The format named in a record or by `--format`: `markdown`/`md`, `text`/`txt`/`plain`,
/// `html`, `csv`, `tsv`, `dialog`, a language (`rust`, `python`, `javascript`,
/// `typescript`, `tsx`, `go`, or their file extensions), or `pdf`.
pub fn parse_format(name: &str) -> Option<SourceFormat> {
    match name.to_ascii_lowercase().as_str() {
        "markdown" | "md" => Some(SourceFormat::Markdown),
        "text" | "txt" | "plain" => Some(SourceFormat::Text),
        "html" | "htm" => Some(SourceFormat::Html),
        "csv" => Some(SourceFormat::Csv),
        "tsv" => Some(SourceFormat::Tsv),
        "dialog" | "ticket" | "chat" => Some(SourceFormat::Dialog),
        "rust" | "rs" => Some(SourceFormat::Rust),
        "python" | "py" => Some(SourceFormat::Python),
        "javascript" | "js" => Some(SourceFormat::JavaScript),
        "typescript" | "ts" => Some(SourceFormat::TypeScript),
        "tsx" => Some(SourceFormat::Tsx),
        "go" | "golang" => Some(SourceFormat::Go),
        "pdf" => Some(SourceFormat::Pdf),
        _ => None,
    }
}

/// Reads JSON Lines documents from `path` (blank lines are skipped).
pub fn read_jsonl(path: &Path) -> Result<Vec<Document>, InputError> {
    parse_jsonl(path, &read_text(path)?)
}

fn parse_jsonl(path: &Path, text: &str) -> Result<Vec<Document>, InputError> {
    let mut docs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let json_err = |reason: String| InputError::Json {
            path: path.to_path_buf(),
            line: i + 1,
            reason,
        };
        let record: JsonDocument =
            serde_json::from_str(line).map_err(|e| json_err(e.to_string()))?;
        // A record without a format is read as its source's extension says, else as its
        // text looks.
        let format = match record.format.as_deref() {
            None | Some("") | Some("auto") => match extension_kind(&record.source_uri) {
                Some(FileKind::Single(format)) => format,
                _ => detect::record_format(&record.text),
            },
            Some(name) => parse_format(name)
                .ok_or_else(|| json_err(format!("unsupported format `{name}`")))?,
        };
        let doc = Document {
            doc_id: record.doc_id,
            title: record.title,
            source_uri: record.source_uri,
            format,
            text: record.text,
            acl: record.acl,
            published_at: record.published_at.and_then(json_text),
            updated_at: record.updated_at.and_then(json_text),
            metadata: record
                .metadata
                .into_iter()
                .filter_map(|(k, v)| Some((k, MetadataValue::from_json(v)?)))
                .collect(),
        };
        let derived_title = doc.title.is_empty();
        docs.push(front_matter::apply(doc, derived_title));
    }
    Ok(docs)
}

fn read_text(path: &Path) -> Result<String, InputError> {
    text_of(path, read_bytes(path)?)
}

fn read_bytes(path: &Path) -> Result<Vec<u8>, InputError> {
    std::fs::read(path).map_err(|source| InputError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The file's bytes as text; binary files refused.
fn text_of(path: &Path, bytes: Vec<u8>) -> Result<String, InputError> {
    if let Some(what) = detect::binary(&bytes) {
        return Err(InputError::Binary {
            path: path.to_path_buf(),
            what,
        });
    }
    String::from_utf8(bytes).map_err(|_| InputError::NotUtf8 {
        path: path.to_path_buf(),
    })
}

fn kind_of(path: &Path) -> Option<FileKind> {
    detect::by_extension(path.extension()?.to_str()?)
}

/// The kind the extension of a record's `source_uri` names (query and fragment ignored).
fn extension_kind(uri: &str) -> Option<FileKind> {
    let path = uri.split(['?', '#']).next()?;
    let name = path.rsplit('/').next()?;
    detect::by_extension(name.rsplit_once('.')?.1)
}

/// The text of a file read as `format`: a PDF's extracted text, else the bytes as text.
fn file_text(path: &Path, bytes: Vec<u8>, format: SourceFormat) -> Result<String, InputError> {
    #[cfg(feature = "pdf")]
    if format == SourceFormat::Pdf {
        return pdf::extract(&bytes).map_err(|source| InputError::Pdf {
            path: path.to_path_buf(),
            source,
        });
    }
    let _ = format;
    text_of(path, bytes)
}

/// The first Markdown heading (for a PDF, its first heading), or the file name.
fn title_of(text: &str, format: SourceFormat, path: &Path) -> String {
    if format == SourceFormat::Markdown {
        if let Some(line) = text.lines().find(|l| l.starts_with("# ")) {
            return line[2..].trim().to_string();
        }
    }
    if format == SourceFormat::Pdf {
        let tree = crate::chunk::readers::pdf::read(text);
        let title = tree.walk().find_map(|b| match &b.kind {
            crate::chunk::tree::BlockKind::Heading { title, .. } => Some(title.clone()),
            _ => None,
        });
        if let Some(title) = title {
            return title;
        }
    }
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Reads one file as `format`; its `doc_id` is `id`.
pub fn read_file(path: &Path, id: String, format: SourceFormat) -> Result<Document, InputError> {
    let text = file_text(path, read_bytes(path)?, format)?;
    Ok(file_document(path, id, format, text))
}

fn file_document(path: &Path, id: String, format: SourceFormat, text: String) -> Document {
    let source_uri = std::fs::canonicalize(path)
        .map(|p| format!("file://{}", p.display()))
        .unwrap_or_else(|_| path.display().to_string());
    let mut doc = Document::new(id, format, text);
    doc.title = title_of(&doc.text, format, path);
    doc.source_uri = source_uri;
    front_matter::apply(doc, true)
}

/// What [`read_paths`] read.
#[derive(Debug, Default)]
pub struct ReadPaths {
    /// The documents, in the order read.
    pub documents: Vec<Document>,
    /// How many of them were read from a file of their own (the others are JSON Lines
    /// records, which carry their ids).
    pub files: usize,
    /// Files found by walking a directory whose real path lies outside a root that refuses
    /// them (a directory outside it, or a symlink out of it): not read.
    pub outside_root: Vec<PathBuf>,
}

/// Reads every document under `paths`: files as given, directories recursively. A file is
/// read as `format` when given, else as its extension says, else (a file named explicitly
/// with another extension or none) as its content looks; files of other extensions inside
/// directories are skipped. Binary files are an error, so a caller that writes nothing
/// until all is read writes nothing. A directory reached twice (a symlink loop, or named
/// twice) is read once, and so is a file.
///
/// File documents get as `doc_id` their real path (symlinks resolved) relative to `root`,
/// components joined by `/`: however a file is named (`a.md`, `./docs/../a.md`, an absolute
/// path, a symlink, or found by walking a directory) it gets the same id, and wherever the
/// store lives. A file outside the root is [`InputError::OutsideRoot`] when named on its
/// own, and left out (listed in [`ReadPaths::outside_root`]) when found in a directory,
/// unless the root's rule is [`Outside::AbsoluteId`]. JSON Lines records keep the `doc_id`
/// they carry, wherever their file is.
pub fn read_paths(
    paths: &[PathBuf],
    root: &FileRoot,
    format: Option<FileKind>,
) -> Result<ReadPaths, InputError> {
    let root = FileRoot {
        path: real_path(&root.path)?,
        outside: root.outside,
    };
    let mut read = Reading {
        root: &root,
        format,
        dirs: HashSet::new(),
        files: HashSet::new(),
        read: ReadPaths::default(),
    };
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|source| InputError::Io {
            path: path.clone(),
            source,
        })?;
        if meta.is_dir() {
            let mut files = Vec::new();
            walk(path, &mut files, &mut read.dirs)?;
            files.sort();
            for file in files {
                read.file(&file, Found::InDirectory)?;
            }
        } else {
            read.file(path, Found::Named)?;
        }
    }
    Ok(read.read)
}

/// How [`read_paths`] came to a file: named on its own, or by walking a directory.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Found {
    Named,
    InDirectory,
}

/// The state of one [`read_paths`].
struct Reading<'a> {
    root: &'a FileRoot,
    /// The format the caller named for every file.
    format: Option<FileKind>,
    /// Real paths of the directories walked and files read so far.
    dirs: HashSet<PathBuf>,
    files: HashSet<PathBuf>,
    read: ReadPaths,
}

impl Reading<'_> {
    fn file(&mut self, path: &Path, found: Found) -> Result<(), InputError> {
        let real = real_path(path)?;
        if !self.files.insert(real.clone()) {
            return Ok(());
        }
        let bytes = read_bytes(path)?;
        let named = self.format.or_else(|| kind_of(path));
        // A PDF is told by its extension, the caller, or (for other files) its magic number.
        if named == Some(FileKind::Single(SourceFormat::Pdf))
            || (named.is_none() && cfg!(feature = "pdf") && detect::is_pdf(&bytes))
        {
            let Some(id) = self.id_of(path, &real, found)? else {
                return Ok(());
            };
            let text = file_text(path, bytes, SourceFormat::Pdf)?;
            self.push_file(file_document(path, id, SourceFormat::Pdf, text));
            return Ok(());
        }
        let text = text_of(path, bytes)?;
        let kind = match (self.format, kind_of(path)) {
            (Some(kind), _) => kind,
            // A .jsonl file of turns (no `doc_id`) is one dialog.
            (None, Some(FileKind::Documents)) => match detect::by_content(&text) {
                dialog @ FileKind::Single(SourceFormat::Dialog) => dialog,
                _ => FileKind::Documents,
            },
            (None, Some(kind)) => kind,
            (None, None) => detect::by_content(&text),
        };
        match kind {
            FileKind::Documents => self.read.documents.extend(parse_jsonl(path, &text)?),
            FileKind::Single(format) => {
                if let Some(id) = self.id_of(path, &real, found)? {
                    self.push_file(file_document(path, id, format, text));
                }
            }
        }
        Ok(())
    }

    /// The id of the file at `path` (real path `real`); `None` when it is left out as
    /// outside the root, an error when it was named on its own.
    fn id_of(
        &mut self,
        path: &Path,
        real: &Path,
        found: Found,
    ) -> Result<Option<String>, InputError> {
        if let Some(id) = self.root.id_of(real) {
            return Ok(Some(id));
        }
        if found == Found::Named {
            return Err(InputError::OutsideRoot {
                path: path.to_path_buf(),
                root: self.root.path.clone(),
            });
        }
        self.read.outside_root.push(path.to_path_buf());
        Ok(None)
    }

    fn push_file(&mut self, doc: Document) {
        self.read.files += 1;
        self.read.documents.push(doc);
    }
}

fn real_path(path: &Path) -> Result<PathBuf, InputError> {
    std::fs::canonicalize(path).map_err(|source| InputError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The files of supported types under `dir`, each directory walked once (by real path).
fn walk(dir: &Path, out: &mut Vec<PathBuf>, seen: &mut HashSet<PathBuf>) -> Result<(), InputError> {
    if !seen.insert(real_path(dir)?) {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|source| InputError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    for entry in entries {
        let entry = entry.map_err(|source| InputError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out, seen)?;
        } else if kind_of(&path).is_some() {
            out.push(path);
        }
    }
    Ok(())
}
