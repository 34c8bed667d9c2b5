//! Shared segment files: a derived copy of each loaded segment beside the store, in the
//! flat layout a search reads, that every process maps read-only, so N reader processes
//! hold one copy of an index in the page cache instead of N in their heaps.
//!
//! The store file stays the only data: a side file is written from it (by whichever
//! process first loads the segment: a temporary file renamed into place, so concurrent
//! writers are harmless), names the segment it was made from by a hash of the segment's
//! records and blocks, and is checked in full (a checksum of its body) before a process
//! uses it. A missing, damaged or foreign file is rebuilt; a folder that cannot be written
//! leaves the process with today's private copy. `storage-format.md`, "Shared segment
//! files", is the contract.
//!
//! A segment's lexical postings have a file of their own beside it (`.lex`, the same
//! header with its own magic): they are loaded by the first lexical search, not with the
//! segment, and a compressed index, whose segments have no `.seg` file, maps them too.

use std::fs::{self, File};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use redb::ReadTransaction;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use crate::index::lexical::LexicalSegment;
use crate::index::{Region, SegmentIndex};
use crate::storage::error::StorageError;
use crate::storage::file::records::{encode, IndexRecord, SegmentRecord};
use crate::storage::file::sealed::ReadSealed;
use crate::storage::file::tables::{SEGMENTS, SEGMENT_GRAPHS, SEGMENT_POSTINGS, SEGMENT_VECTORS};

/// The first bytes of every shared segment file.
const MAGIC: [u8; 8] = *b"FOLIOSEG";
/// The first bytes of every shared postings file.
const POSTINGS_MAGIC: [u8; 8] = *b"FOLIOLEX";
/// The header's layout version (the bodies have their own, `index/flat.rs` and
/// `index/lexical/flat.rs`).
const VERSION: u32 = 1;
/// Header bytes: the body starts on a cache line.
const HEADER: usize = 64;
/// A shared segment file's name ends so: `<index id>-<segment id>.seg`.
const SUFFIX: &str = ".seg";
/// A shared postings file's name ends so: `<index id>-<segment id>.lex`.
const POSTINGS_SUFFIX: &str = ".lex";

/// The folder of a file store's shared segment files: `STORE.segments` beside it.
#[derive(Debug, Clone)]
pub(crate) struct SegmentFiles {
    dir: PathBuf,
}

/// How a loaded segment's arrays are held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Sharing {
    /// In this process's memory: shared files are off, or the index is compressed.
    Private,
    /// In a shared file, mapped.
    Mapped,
    /// In this process's memory because the shared file could not be used or made.
    Refused(String),
}

impl SegmentFiles {
    /// The folder beside the store file at `store`.
    pub(crate) fn beside(store: &Path) -> SegmentFiles {
        let mut name = store.file_name().unwrap_or_default().to_os_string();
        name.push(".segments");
        SegmentFiles {
            dir: store.with_file_name(name),
        }
    }

    fn path(&self, index: u32, segment: u32) -> PathBuf {
        self.dir.join(format!("{index}-{segment}{SUFFIX}"))
    }

    fn postings_path(&self, index: u32, segment: u32) -> PathBuf {
        self.dir.join(format!("{index}-{segment}{POSTINGS_SUFFIX}"))
    }

    /// Segment `id` of `index` (its `record` read from `txn`) from its shared file, when
    /// one made from this very segment is there and whole; with the identity it must
    /// carry, to [`SegmentFiles::make`] it otherwise.
    pub(crate) fn open(
        &self,
        txn: &ReadTransaction,
        index: &IndexRecord,
        id: u32,
        record: &SegmentRecord,
    ) -> Result<(Option<SegmentIndex>, Identity), StorageError> {
        let identity = Identity::of(txn, index, id, record)?;
        let path = self.path(index.id, id);
        Ok((map(&path, identity).ok(), identity))
    }

    /// Writes `segment`'s shared file (it was just loaded whole from the store) and maps
    /// it: the segment as every process then reads it; the reason when it cannot be.
    pub(crate) fn make(
        &self,
        index: u32,
        id: u32,
        identity: Identity,
        segment: &SegmentIndex,
    ) -> Result<SegmentIndex, String> {
        let path = self.path(index, id);
        write(&self.dir, &path, MAGIC, identity, |put| {
            segment
                .write_flat(&mut |bytes: &[u8]| put(bytes))
                .ok_or_else(|| io::Error::other("the segment's rows are not in memory"))?
        })
        .map_err(|e| format!("writing it: {e}"))?;
        map(&path, identity).map_err(|e| format!("mapping it: {e}"))
    }

    /// Segment `id` of `index`'s lexical postings from their shared file, when one made
    /// from this very segment's postings is there and whole; with the identity it must
    /// carry, to [`SegmentFiles::make_postings`] it otherwise.
    pub(crate) fn open_postings(
        &self,
        txn: &ReadTransaction,
        index: &IndexRecord,
        id: u32,
    ) -> Result<(Option<LexicalSegment>, Identity), StorageError> {
        let identity = Identity::of_postings(txn, index, id)?;
        let path = self.postings_path(index.id, id);
        Ok((map_postings(&path, identity).ok(), identity))
    }

    /// Writes the shared file of `postings` (just read whole from the store) and maps
    /// it: the postings as every process then reads them; the reason when they cannot be.
    pub(crate) fn make_postings(
        &self,
        index: u32,
        id: u32,
        identity: Identity,
        postings: &LexicalSegment,
    ) -> Result<LexicalSegment, String> {
        let path = self.postings_path(index, id);
        write(&self.dir, &path, POSTINGS_MAGIC, identity, |put| {
            postings.write_flat(&mut |bytes: &[u8]| put(bytes))
        })
        .map_err(|e| format!("writing it: {e}"))?;
        map_postings(&path, identity).map_err(|e| format!("mapping it: {e}"))
    }

    /// Removes the shared files of segments `txn` no longer holds (collected, or of a
    /// dropped index). A process that mapped one keeps its mapping; none will ask for it
    /// again, as the segment is gone from the store.
    pub(crate) fn sweep(&self, txn: &ReadTransaction) -> Result<(), StorageError> {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return Ok(());
        };
        let segments = txn.open_table(SEGMENTS)?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(key) = name.to_str().and_then(parse_name) else {
                continue;
            };
            if segments.get(key)?.is_none() {
                // Best effort: a file left behind is only disk space, never read.
                let _ = fs::remove_file(entry.path());
            }
        }
        Ok(())
    }
}

/// `(index id, segment id)` of a shared segment or postings file's name.
fn parse_name(name: &str) -> Option<(u32, u32)> {
    let stem = name
        .strip_suffix(SUFFIX)
        .or_else(|| name.strip_suffix(POSTINGS_SUFFIX))?;
    let (index, segment) = stem.split_once('-')?;
    Some((index.parse().ok()?, segment.parse().ok()?))
}

/// Which segment of which store a shared file was made from: a hash of the index's id and
/// creation time, the segment's id and record, and its first and last vector blocks and
/// first graph block. Ids are never reused within a store, so a file of an older segment
/// never matches; one of another store matches only if it holds the same rows and graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity(u128);

impl Identity {
    fn of(
        txn: &ReadTransaction,
        index: &IndexRecord,
        id: u32,
        record: &SegmentRecord,
    ) -> Result<Identity, StorageError> {
        let mut hash = Xxh3::new();
        hash.update(b"folio shared segment");
        hash.update(&index.id.to_le_bytes());
        hash.update(&index.created_ms.to_le_bytes());
        hash.update(&id.to_le_bytes());
        hash.update(&encode(record));
        let vectors = txn.open_table(SEGMENT_VECTORS)?;
        let last = record.vector_blocks.saturating_sub(1);
        for block in [0, last] {
            if let Some(value) = vectors.read((index.id, id, block))? {
                hash.update(value.value());
            }
        }
        if record.graph_blocks > 0 {
            if let Some(value) = txn.open_table(SEGMENT_GRAPHS)?.read((index.id, id, 0))? {
                hash.update(value.value());
            }
        }
        Ok(Identity(hash.digest128()))
    }

    /// Which segment's postings a shared postings file was made from: a hash of the
    /// index's id and creation time, the segment's id and record, and the number, first
    /// and last of its postings blocks.
    fn of_postings(
        txn: &ReadTransaction,
        index: &IndexRecord,
        id: u32,
    ) -> Result<Identity, StorageError> {
        let mut hash = Xxh3::new();
        hash.update(b"folio shared postings");
        hash.update(&index.id.to_le_bytes());
        hash.update(&index.created_ms.to_le_bytes());
        hash.update(&id.to_le_bytes());
        if let Some(record) = txn.open_table(SEGMENTS)?.read((index.id, id))? {
            hash.update(record.value());
        }
        let postings = txn.open_table(SEGMENT_POSTINGS)?;
        let mut blocks = postings.rows((index.id, id, 0u32)..=(index.id, id, u32::MAX))?;
        for block in [blocks.next(), blocks.next_back()].into_iter().flatten() {
            let (key, value) = block?;
            hash.update(&key.value().2.to_le_bytes());
            hash.update(value.value());
        }
        Ok(Identity(hash.digest128()))
    }
}

/// A read-only mapping of a whole shared file.
struct Mapping(memmap2::Mmap);

impl Region for Mapping {
    fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Why a shared file was not used.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("not a shared segment file of this layout")]
    Header,
    #[error("made from another segment")]
    Foreign,
    #[error("damaged (its checksum differs)")]
    Damaged,
    #[error("{0}")]
    Layout(String),
}

/// The segment in the shared file at `path`, checked whole against `identity`.
fn map(path: &Path, identity: Identity) -> Result<SegmentIndex, Refusal> {
    let region = map_checked(path, MAGIC, identity)?;
    SegmentIndex::from_flat(&region, HEADER).map_err(|e| Refusal::Layout(e.to_string()))
}

/// The postings in the shared postings file at `path`, checked whole against `identity`.
fn map_postings(path: &Path, identity: Identity) -> Result<LexicalSegment, Refusal> {
    let region = map_checked(path, POSTINGS_MAGIC, identity)?;
    LexicalSegment::from_flat(&region, HEADER).map_err(|e| Refusal::Layout(e.to_string()))
}

/// The mapped file at `path` once its header is `magic`'s of this layout, names
/// `identity`, and gives its body's length and checksum.
fn map_checked(
    path: &Path,
    magic: [u8; 8],
    identity: Identity,
) -> Result<Arc<dyn Region>, Refusal> {
    let file = File::open(path)?;
    // SAFETY: the file is only ever replaced by a rename, never written in place once
    // named (see `write`), so the mapped bytes do not change while mapped; a process that
    // truncated it by hand would make reads fault, as with any mapped file.
    let mapping = unsafe { memmap2::Mmap::map(&file)? };
    // Before the first read below faults the pages in, so they map as huge pages where
    // the page cache holds them so.
    #[cfg(unix)]
    advise(&mapping);
    let bytes: &[u8] = &mapping;
    let header = bytes.get(..HEADER).ok_or(Refusal::Header)?;
    let word = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap_or([0; 8]));
    if header[..8] != magic || word(8) != u64::from(VERSION) {
        return Err(Refusal::Header);
    }
    let stored = u128::from(word(16)) | (u128::from(word(24)) << 64);
    if stored != identity.0 {
        return Err(Refusal::Foreign);
    }
    let body = &bytes[HEADER..];
    if word(32) != body.len() as u64 || word(40) != xxh3_64(body) {
        return Err(Refusal::Damaged);
    }
    Ok(Arc::new(Mapping(mapping)))
}

/// Huge pages (see `index::pages`: graph walks read at random, and 4 KiB pages miss the
/// TLB on nearly every read). Linux reads a file's pages that are not cached yet into
/// 2 MiB folios when the faulting mapping asked for huge pages, and maps them whole: one
/// TLB entry per 2 MiB for every process (`write_file` leaves a new file uncached for it).
#[cfg(unix)]
fn advise(mapping: &memmap2::Mmap) {
    // Advice changes performance only; a kernel that refuses it leaves the mapping as is.
    #[cfg(target_os = "linux")]
    let _ = mapping.advise(memmap2::Advice::HugePage);
}

/// Writes a shared file at `path` (in `dir`, created if missing), its body put by `body`:
/// a temporary file beside it, renamed into place once whole.
fn write(
    dir: &Path,
    path: &Path,
    magic: [u8; 8],
    identity: Identity,
    body: impl FnOnce(&mut dyn FnMut(&[u8]) -> io::Result<()>) -> io::Result<()>,
) -> io::Result<()> {
    /// Tells apart the temporary files of two loads in one process.
    static WRITES: AtomicU64 = AtomicU64::new(0);
    fs::create_dir_all(dir)?;
    let temp = dir.join(format!(
        ".{}.{}-{}.tmp",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("segment"),
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    let result = write_file(&temp, magic, identity, body).and_then(|()| fs::rename(&temp, path));
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

fn write_file(
    temp: &Path,
    magic: [u8; 8],
    identity: Identity,
    body: impl FnOnce(&mut dyn FnMut(&[u8]) -> io::Result<()>) -> io::Result<()>,
) -> io::Result<()> {
    let mut file = File::create(temp)?;
    file.write_all(&[0; HEADER])?;
    let mut out = io::BufWriter::with_capacity(1 << 20, &mut file);
    let mut hash = Xxh3::new();
    let mut len = 0u64;
    body(&mut |bytes: &[u8]| {
        hash.update(bytes);
        len += bytes.len() as u64;
        out.write_all(bytes)
    })?;
    out.flush()?;
    drop(out);
    let mut header = Vec::with_capacity(HEADER);
    header.extend_from_slice(&magic);
    header.extend_from_slice(&u64::from(VERSION).to_le_bytes());
    header.extend_from_slice(&identity.0.to_le_bytes());
    header.extend_from_slice(&len.to_le_bytes());
    header.extend_from_slice(&hash.digest().to_le_bytes());
    header.resize(HEADER, 0);
    file.seek(SeekFrom::Start(0))?;
    file.write_all(&header)?;
    // Written out and dropped from the page cache, so the first process to map it reads
    // it back in huge pages (see `advise`) that every later one shares; the bytes the
    // writes left there are in small ones. (A file cut short by a crash before this fails
    // its checksum and is made again.)
    file.sync_all()?;
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: advice on this open file's cached pages; it never changes the file.
        unsafe {
            libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_others_are_ignored() {
        assert_eq!(parse_name("3-17.seg"), Some((3, 17)));
        assert_eq!(parse_name("3-17.lex"), Some((3, 17)));
        assert_eq!(parse_name(".3-17.lex.42-0.tmp"), None);
        assert_eq!(parse_name(".3-17.seg.42-0.tmp"), None);
        assert_eq!(parse_name("notes.txt"), None);
        let files = SegmentFiles::beside(Path::new("dir/s.folio"));
        assert_eq!(files.path(1, 2), Path::new("dir/s.folio.segments/1-2.seg"));
        let postings = Path::new("dir/s.folio.segments/1-2.lex");
        assert_eq!(files.postings_path(1, 2), postings);
    }
}
