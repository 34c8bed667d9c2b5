//! The corpus: the Markdown and text files under a folder (the crates of the local cargo
//! registry), in sorted path order, cut by folio's structure-aware chunker
//! (`structure:500`), one JSON line per child; and queries drawn from the children's
//! headings with a fixed seed.

use std::fs;
use std::io::{self, BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};

use folio::chunk::{chunk_document, ChildStrategy, ChunkSpec, SourceFormat};
use serde::{Deserialize, Serialize};

/// The seed of the query draw (the number).
pub const QUERY_SEED: u64 = 32;
/// Queries drawn.
pub const QUERY_COUNT: usize = 1000;
/// The children's target size in characters (`structure:500`).
const CHILD_TARGET: usize = 500;

/// One child of the corpus.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Chunk {
    /// Its number, in file and chunk order.
    pub id: u32,
    /// The file it comes from, relative to the folder.
    pub source: String,
    /// Its innermost heading ("" when none).
    pub heading: String,
    pub text: String,
}

/// One query.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Query {
    pub query: String,
}

/// SplitMix64: a seeded, dependency-free generator, so the draw is the same everywhere.
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0; the modulo bias is below 2^-40 for the sizes used here).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

fn format_of(path: &Path) -> Option<SourceFormat> {
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    match extension.as_str() {
        "md" | "markdown" => Some(SourceFormat::Markdown),
        "txt" => Some(SourceFormat::Text),
        _ => None,
    }
}

/// Every Markdown and text file under `root`, sorted (symbolic links not followed).
fn files_under(root: &Path) -> io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in fs::read_dir(&folder)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            let path = entry.path();
            if kind.is_dir() {
                folders.push(path);
            } else if kind.is_file() && format_of(&path).is_some() {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Writes `corpus.jsonl` and `queries.jsonl` into `out`; returns (files, chunks, queries).
pub fn make(root: &Path, out: &Path) -> io::Result<(usize, usize, usize)> {
    fs::create_dir_all(out)?;
    let spec = ChunkSpec {
        child: ChildStrategy::Structure {
            target: CHILD_TARGET,
            overlap: 0,
        },
        ..ChunkSpec::default()
    };
    let mut corpus = BufWriter::new(fs::File::create(out.join("corpus.jsonl"))?);
    let mut headings: Vec<String> = Vec::new();
    let files = files_under(root)?;
    let mut id = 0u32;
    for path in &files {
        let Some(format) = format_of(path) else {
            continue;
        };
        // Files that are not UTF-8 are left out (a few data files).
        let Ok(text) = fs::read_to_string(path) else {
            continue;
        };
        let source = path
            .strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string();
        for child in chunk_document(&text, format, &spec).children {
            let Some(body) = text.get(child.span.start..child.span.end) else {
                continue;
            };
            if body.trim().is_empty() {
                continue;
            }
            let heading = child.section_path.last().cloned().unwrap_or_default();
            let chunk = Chunk {
                id,
                source: source.clone(),
                heading: heading.clone(),
                text: body.to_string(),
            };
            serde_json::to_writer(&mut corpus, &chunk)?;
            corpus.write_all(b"\n")?;
            headings.push(heading);
            id += 1;
        }
    }
    corpus.flush()?;
    let queries = draw_queries(headings);
    let mut out_queries = BufWriter::new(fs::File::create(out.join("queries.jsonl"))?);
    for query in &queries {
        serde_json::to_writer(
            &mut out_queries,
            &Query {
                query: query.clone(),
            },
        )?;
        out_queries.write_all(b"\n")?;
    }
    out_queries.flush()?;
    Ok((files.len(), id as usize, queries.len()))
}

/// The distinct headings holding a letter, sorted, shuffled by Fisher-Yates with
/// [`QUERY_SEED`]; the first [`QUERY_COUNT`].
fn draw_queries(mut headings: Vec<String>) -> Vec<String> {
    headings.iter_mut().for_each(|h| *h = h.trim().to_string());
    headings.retain(|h| h.chars().any(char::is_alphabetic));
    headings.sort();
    headings.dedup();
    let mut random = SplitMix64(QUERY_SEED);
    for at in (1..headings.len()).rev() {
        headings.swap(at, random.below(at + 1));
    }
    headings.truncate(QUERY_COUNT);
    headings
}

/// Reads JSON lines of `T`.
pub fn read_lines<T: for<'de> Deserialize<'de>>(path: &Path) -> io::Result<Vec<T>> {
    let reader = io::BufReader::new(fs::File::open(path)?);
    let mut rows = Vec::new();
    for line in reader.lines() {
        let line = line?;
        rows.push(serde_json::from_str(&line).map_err(io::Error::other)?);
    }
    Ok(rows)
}
