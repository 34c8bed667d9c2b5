//! A copy of the store file in the temporary folder, for what must not write the file
//! itself: redb's integrity check (which repairs) and redb's recovery of a file a read must
//! leave untouched.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// How many times a copy torn by another process's commit is taken again.
const COPY_ATTEMPTS: usize = 5;

/// Tells apart two copies one process makes in the same nanosecond.
static COPIES: AtomicU64 = AtomicU64::new(0);

/// A copy of a file in the temporary folder, removed when dropped. A commit by another
/// process during the copy could tear it, so the copy is taken again when the file's
/// header changed meanwhile.
pub(crate) struct TempCopy {
    path: PathBuf,
}

impl TempCopy {
    pub(crate) fn new(original: &Path) -> std::io::Result<TempCopy> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let copy = TempCopy {
            path: std::env::temp_dir().join(format!(
                "folio-copy-{}-{nanos}-{}.redb",
                std::process::id(),
                COPIES.fetch_add(1, Ordering::Relaxed)
            )),
        };
        for _ in 0..COPY_ATTEMPTS {
            let before = header(original)?;
            // Its bytes only: `fs::copy` would keep a read-only file's permissions, and
            // redb opens the copy for writing.
            let mut target = std::fs::File::create(&copy.path)?;
            std::io::copy(&mut std::fs::File::open(original)?, &mut target)?;
            drop(target);
            if header(original)? == before {
                return Ok(copy);
            }
        }
        Err(std::io::Error::other(
            "the file kept changing (another process commits to it)",
        ))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempCopy {
    fn drop(&mut self) {
        // Nothing to do when it was never made.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The first page of a file: redb's header, which every commit rewrites.
fn header(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut page = Vec::with_capacity(4096);
    std::fs::File::open(path)?
        .take(4096)
        .read_to_end(&mut page)?;
    Ok(page)
}
