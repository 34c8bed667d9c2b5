//! The kit's binary files, read through a memory map and validated before use:
//! `.fvecs` / `.ivecs` (per row a little-endian `i32` dimension, then the row's values) and
//! `.u32` (raw little-endian ids, count = bytes / 4).

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

/// A kit file that could not be read, or does not have the kit's layout.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// The file does not have the kit's layout.
    #[error("{path}: {reason}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// Rows of equal width, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix<T> {
    dim: usize,
    data: Vec<T>,
}

impl<T> Matrix<T> {
    /// Values per row.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.data.len() / self.dim
    }

    /// Row `i`; panics when `i >= rows()`, like slice indexing.
    pub fn row(&self, i: usize) -> &[T] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }

    /// All rows, row-major.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// Drops every row, keeping the width.
    pub fn clear(&mut self) {
        self.data = Vec::new();
    }

    /// Keeps the first `rows` rows (all of them when there are fewer).
    pub fn truncate(&mut self, rows: usize) {
        self.data.truncate(rows.saturating_mul(self.dim));
    }
}

/// Reads an `.fvecs` file.
pub fn read_fvecs(path: &Path) -> Result<Matrix<f32>, FileError> {
    read_vecs(path, f32::from_le_bytes)
}

/// Reads an `.ivecs` file.
pub fn read_ivecs(path: &Path) -> Result<Matrix<i32>, FileError> {
    read_vecs(path, i32::from_le_bytes)
}

/// Reads a `.u32` id file (an empty file is an empty list).
pub fn read_u32(path: &Path) -> Result<Vec<u32>, FileError> {
    with_bytes(path, |bytes| {
        whole_words(path, bytes)?;
        Ok(words(bytes).map(u32::from_le_bytes).collect())
    })
}

fn read_vecs<T>(path: &Path, decode: fn([u8; 4]) -> T) -> Result<Matrix<T>, FileError> {
    with_bytes(path, |bytes| {
        whole_words(path, bytes)?;
        let Some(header) = words(bytes).next() else {
            return Err(format_error(path, "empty file".into()));
        };
        let dim = usize::try_from(i32::from_le_bytes(header))
            .ok()
            .filter(|&d| d > 0)
            .ok_or_else(|| {
                let declared = i32::from_le_bytes(header);
                format_error(path, format!("row 0 declares dimension {declared}"))
            })?;
        let row_bytes = 4 * (dim + 1);
        if !bytes.len().is_multiple_of(row_bytes) {
            return Err(format_error(
                path,
                format!(
                    "{} bytes are not whole rows of dimension {dim} ({row_bytes} bytes each): truncated?",
                    bytes.len()
                ),
            ));
        }
        let mut data = Vec::with_capacity(bytes.len() / row_bytes * dim);
        for (r, row) in bytes.chunks_exact(row_bytes).enumerate() {
            let mut values = words(row);
            let declared = values.next().map(i32::from_le_bytes);
            if declared != i32::try_from(dim).ok() {
                return Err(format_error(
                    path,
                    format!("row {r} declares dimension {declared:?}, row 0 declared {dim}"),
                ));
            }
            data.extend(values.map(decode));
        }
        Ok(Matrix { dim, data })
    })
}

/// Runs `f` on the file's bytes, mapped read-only.
fn with_bytes<R>(
    path: &Path,
    f: impl FnOnce(&[u8]) -> Result<R, FileError>,
) -> Result<R, FileError> {
    let io = |source| FileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    // An empty file cannot be mapped on every platform; it has no bytes to read anyway.
    if file.metadata().map_err(io)?.len() == 0 {
        return f(&[]);
    }
    // SAFETY: the map is read-only and lives only for this call, which copies what it needs
    // out of it. Like every reader of a mapped file, it assumes nobody truncates or rewrites
    // the file meanwhile; the kit's files are written once by `ann_data.py`.
    let map = unsafe { Mmap::map(&file) }.map_err(io)?;
    f(&map)
}

fn whole_words(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    if bytes.len().is_multiple_of(4) {
        Ok(())
    } else {
        Err(format_error(
            path,
            format!("{} bytes are not whole 4-byte values", bytes.len()),
        ))
    }
}

fn words(bytes: &[u8]) -> impl Iterator<Item = [u8; 4]> + '_ {
    bytes.chunks_exact(4).map(|w| [w[0], w[1], w[2], w[3]])
}

fn format_error(path: &Path, reason: String) -> FileError {
    FileError::Format {
        path: path.to_path_buf(),
        reason,
    }
}
