//! Opening the file: any number of writing and reading processes (redb's
//! `ConcurrencyMode::MultiWriter`: a process holds redb's writer byte only inside a write
//! transaction), a commit's wait for another process's commit, creation that a crash
//! cannot leave half done, and the recovery a reader needs after a writer died.
//! `storage-format.md`, "Processes", states the rules.

use std::fs::OpenOptions;
use std::io;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use redb::backends::FileBackend;
use redb::{
    BackendError, ConcurrencyMode, Database, DatabaseError, ReadOnlyDatabase, ReadTransaction,
    ReadableDatabase, TransactionError, WriteTransaction,
};

use crate::storage::error::{OpenError, StorageError};
use crate::storage::file::sealed::contain;
use crate::storage::file::temp_copy::TempCopy;

/// redb's page cache (half of it at most for the pages a write transaction has not
/// flushed yet). folio keeps vectors and graphs in its own memory once loaded, so redb's
/// 1 GiB default only doubled the resident size after a reopen (measured: +486 MiB for
/// 148 MiB of data, +187 MiB with 16 MiB of cache), and 64 MiB still held 64 MiB of a bulk
/// load's written pages beside the segment it had built.
/// Where a store's bytes live: a file, memory, or a wrapper of the caller's (redb's trait).
pub use redb::StorageBackend;

/// Storage in memory only, gone when the store is dropped.
pub(crate) fn in_memory_backend() -> impl StorageBackend {
    redb::backends::InMemoryBackend::new()
}

const REDB_CACHE_BYTES: usize = 16 << 20;

/// redb's "writer byte" (redb's `docs/design.md`, "Lock bytes"): a process holds it while
/// it is in a write transaction (and while its open recovers the file). folio holds it too
/// while it empties a file whose creation was cut short, so no redb open can start on the
/// file meanwhile.
const REDB_WRITER_BYTE: u64 = 1 << 62;

/// The magic number a redb file starts with once its creation completed.
const REDB_MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];

/// Where redb's header keeps its flag byte (its "god byte"), right after the magic number.
const REDB_FLAGS_AT: usize = REDB_MAGIC.len();

/// The flags redb writes in that byte: the primary commit slot, recovery required,
/// two-phase commit, primary not yet synced. It never sets the other bits.
const REDB_FLAGS_KNOWN: u8 = 0b1111;

/// redb's database header (its `docs/design.md`, "Database super-header"): the only bytes
/// redb writes before the magic number.
const REDB_HEADER_BYTES: u64 = 320;

/// Larger than any file redb's creation leaves before it writes the magic number (its
/// first layout is about 1 MiB), so a large file of zeros is never taken for one.
const MAX_UNFINISHED_BYTES: u64 = 16 << 20;

/// How long a waiting open, or a commit waiting for another's, sleeps between attempts.
const WAIT_STEP: Duration = Duration::from_millis(10);

/// The redb handle of an open store: one that may write (beside any number of other
/// processes that may, each taking redb's writer byte only for a write transaction), or a
/// reader of a file it cannot write. Either follows the other processes' commits.
pub(crate) enum Db {
    Writer {
        db: Database,
        /// How long a write transaction waits for another process's to end.
        wait: Duration,
    },
    Reader(ReadOnlyDatabase),
    /// A reader of a recovered copy of a file that needed redb's recovery and must stay as
    /// it was ([`untouched_reader_at`]); the copy is removed after the handle closes.
    RecoveredCopy {
        db: ReadOnlyDatabase,
        _copy: TempCopy,
    },
}

impl Db {
    pub(crate) fn begin_read(&self) -> Result<ReadTransaction, redb::TransactionError> {
        match self {
            Db::Writer { db, .. } => db.begin_read(),
            Db::Reader(db) | Db::RecoveredCopy { db, .. } => db.begin_read(),
        }
    }

    /// A write transaction, once no other one (in this process or another) is open,
    /// waiting up to the store's wait for it ([`StorageError::Busy`] after that);
    /// [`StorageError::ReadOnly`] on a handle that cannot write.
    pub(crate) fn begin_write(&self) -> Result<WriteTransaction, StorageError> {
        let Db::Writer { db, wait } = self else {
            return Err(StorageError::ReadOnly);
        };
        // Polled rather than blocking in redb, whose wait for the writer byte has no end.
        let started = Instant::now();
        loop {
            match db.try_begin_write() {
                Err(TransactionError::WouldBlock) => {
                    let waited = started.elapsed();
                    if waited >= *wait {
                        return Err(StorageError::Busy { waited });
                    }
                    std::thread::sleep(WAIT_STEP.min(*wait - waited));
                }
                other => return Ok(other?),
            }
        }
    }

    /// The writing handle, for redb's maintenance (integrity check, file compaction).
    pub(crate) fn writer(&mut self) -> Option<&mut Database> {
        match self {
            Db::Writer { db, .. } => Some(db),
            Db::Reader(_) | Db::RecoveredCopy { .. } => None,
        }
    }

    /// Whether the handle may write the file (a store opened read-only may, for its
    /// request log).
    pub(crate) fn can_write(&self) -> bool {
        matches!(self, Db::Writer { .. })
    }

    /// Whether the handle reads a recovered copy of the file, which needed redb's recovery.
    pub(crate) fn reads_recovered_copy(&self) -> bool {
        matches!(self, Db::RecoveredCopy { .. })
    }
}

/// Runs `attempt` until it does not fail with [`OpenError::Locked`] or `wait` has passed.
pub(crate) fn waiting<T>(
    path: &Path,
    wait: Duration,
    mut attempt: impl FnMut() -> Result<T, OpenError>,
) -> Result<T, OpenError> {
    let started = Instant::now();
    loop {
        match attempt() {
            Err(OpenError::Locked { .. }) => {
                let waited = started.elapsed();
                if waited >= wait {
                    return Err(OpenError::Locked {
                        path: path.to_path_buf(),
                        waited,
                    });
                }
                std::thread::sleep(WAIT_STEP.min(wait - waited));
            }
            other => return other,
        }
    }
}

/// Opens the file at `path` for writing (creating it when `create`), beside the other
/// processes that have it open; `validate` runs before a store is created, before anything
/// is written. `check` runs redb's integrity check (see `builder`).
pub(crate) fn writer_at(
    path: &Path,
    create: bool,
    check: bool,
    validate: impl FnOnce() -> Result<(), OpenError>,
) -> Result<Database, OpenError> {
    if create && !path.exists() {
        validate()?;
        return writer_file(path, true, check, || Ok(()));
    }
    writer_file(path, create, check, validate)
}

fn writer_file(
    path: &Path,
    create: bool,
    check: bool,
    validate: impl FnOnce() -> Result<(), OpenError>,
) -> Result<Database, OpenError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .open(path)
        .map_err(|e| match e.kind() {
            // With `create`, only a missing folder can be missing (it is not created).
            io::ErrorKind::NotFound if create => OpenError::MissingFolder {
                path: path.to_path_buf(),
                folder: path.parent().unwrap_or(path).to_path_buf(),
            },
            _ => io_error(path, e),
        })?;
    let backend = FileBackend::new(file).map_err(|e| open_error(path, e))?;
    writer(path, backend, create, check, validate)
}

/// Opens `backend` for writing. Storage that holds nothing, or a redb creation cut short,
/// counts as missing: created when `create` (after `validate`), else
/// [`OpenError::NotFound`].
pub(crate) fn writer(
    path: &Path,
    backend: impl StorageBackend,
    create: bool,
    check: bool,
    validate: impl FnOnce() -> Result<(), OpenError>,
) -> Result<Database, OpenError> {
    let found = inspect(&backend).map_err(|e| io_error(path, e))?;
    if found != Found::Redb {
        if !create {
            return Err(OpenError::NotFound(path.to_path_buf()));
        }
        validate()?;
    }
    let shared = locks_supported(&backend);
    if found == Found::Unfinished {
        start_over(path, &backend)?;
    }
    // A file damaged outside redb can make a trusting open panic; the integrity check
    // (every page checksum, about one sequential read of the file, under redb's writer
    // byte) reports it instead.
    let redb_like = looks_like_redb(&backend);
    contained(path, redb_like, || {
        builder(shared)
            .set_check_integrity_on_open(check && found == Found::Redb)
            .create_with_backend(backend)
    })
}

/// Opens the file at `path` for reading only, beside the writer if one is live. After a
/// writer died, redb must recover the file before anyone reads it: when the file is
/// writable, this opens it once as a writer for that (no table changes) and then reads.
pub(crate) fn reader_at(path: &Path) -> Result<ReadOnlyDatabase, OpenError> {
    match read_only_file(path, path) {
        Err(OpenError::NeedsRecovery { .. }) => {
            recover(path, path)?;
            read_only_file(path, path)
        }
        other => other,
    }
}

/// Opens the file at `path` for reading only and never writes it: a file that needs redb's
/// recovery (its last writer died, or its header is damaged) is copied into the temporary
/// folder, and the copy is recovered and read instead ([`Db::RecoveredCopy`]).
pub(crate) fn untouched_reader_at(path: &Path) -> Result<Db, OpenError> {
    match read_only_file(path, path) {
        Err(OpenError::NeedsRecovery { .. }) => {
            let copy = TempCopy::new(path).map_err(|e| {
                let why = format!(
                    "it needs redb's recovery, and no copy to recover could be made in {}: {e}",
                    std::env::temp_dir().display()
                );
                io_error(path, io::Error::new(e.kind(), why))
            })?;
            recover(path, copy.path())?;
            Ok(Db::RecoveredCopy {
                db: read_only_file(path, copy.path())?,
                _copy: copy,
            })
        }
        other => other.map(Db::Reader),
    }
}

/// Opens `file` for reading only; errors name `path`, the store it holds or copies.
fn read_only_file(path: &Path, file: &Path) -> Result<ReadOnlyDatabase, OpenError> {
    let file = OpenOptions::new()
        .read(true)
        .open(file)
        .map_err(|e| io_error(path, e))?;
    reader(
        path,
        FileBackend::new(file).map_err(|e| open_error(path, e))?,
    )
}

/// Opens `backend` for reading only.
pub(crate) fn reader(
    path: &Path,
    backend: impl StorageBackend,
) -> Result<ReadOnlyDatabase, OpenError> {
    if inspect(&backend).map_err(|e| io_error(path, e))? != Found::Redb {
        return Err(OpenError::NotFound(path.to_path_buf()));
    }
    let shared = locks_supported(&backend);
    let redb_like = looks_like_redb(&backend);
    contained(path, redb_like, || {
        builder(shared).open_read_only_with_backend(backend)
    })
}

/// redb's recovery of `file` (the store at `path`, or a copy of it) after its writer died:
/// an open as the writer, closed at once.
fn recover(path: &Path, file: &Path) -> Result<(), OpenError> {
    let file = match OpenOptions::new().read(true).write(true).open(file) {
        Ok(file) => file,
        Err(e) if cannot_write(&e) => {
            return Err(OpenError::NeedsRecovery {
                path: path.to_path_buf(),
            })
        }
        Err(e) => return Err(io_error(path, e)),
    };
    let backend = FileBackend::new(file).map_err(|e| open_error(path, e))?;
    // Closed at once: the open's recovery (or another writer's, when it came first) is all
    // that was wanted.
    contained(path, true, || builder(true).create_with_backend(backend)).map(drop)
}

/// redb's flag byte of the file at `path` when it holds bits redb never writes: the
/// header is damaged, and which commit slot is current (or whether the file needs
/// recovery) is in doubt. redb ignores those bits, so no open notices.
pub(crate) fn stray_header_flags(path: &Path) -> io::Result<Option<u8>> {
    use std::io::Read;
    let mut head = Vec::with_capacity(REDB_FLAGS_AT + 1);
    std::fs::File::open(path)?
        .take(REDB_FLAGS_AT as u64 + 1)
        .read_to_end(&mut head)?;
    Ok(head
        .get(REDB_FLAGS_AT)
        .copied()
        .filter(|flags| flags & !REDB_FLAGS_KNOWN != 0))
}

/// Whether opening for writing failed because this user or this mount may only read.
pub(crate) fn cannot_write(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
    )
}

fn builder(shared: bool) -> redb::Builder {
    let mut builder = Database::builder();
    builder.set_cache_size(REDB_CACHE_BYTES);
    // A backend without range locks (an in-memory one, say) is nobody else's to share.
    if shared {
        builder.set_concurrency_mode(ConcurrencyMode::MultiWriter);
    }
    builder
}

fn locks_supported(backend: &impl StorageBackend) -> bool {
    !matches!(
        backend.query_lock_range(
            Bound::Included(REDB_WRITER_BYTE),
            Bound::Included(REDB_WRITER_BYTE)
        ),
        Err(BackendError::Unsupported)
    )
}

/// What a storage holds before redb opens it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    /// Nothing.
    Empty,
    /// A redb creation cut short (see [`unfinished`]): nothing either.
    Unfinished,
    /// A redb file, or something redb will refuse with its own error.
    Redb,
}

fn inspect(backend: &impl StorageBackend) -> io::Result<Found> {
    let len = backend.len()?;
    if len == 0 {
        return Ok(Found::Empty);
    }
    Ok(if unfinished(backend, len)? {
        Found::Unfinished
    } else {
        Found::Redb
    })
}

/// Whether the storage is a redb creation cut short. redb creates a file by sizing it,
/// writing its header without the magic number, syncing, and only then writing the magic
/// number, before any commit. So a file without the magic number whose bytes are zero in
/// its place and past the header holds no data.
fn unfinished(backend: &impl StorageBackend, len: u64) -> io::Result<bool> {
    if len > MAX_UNFINISHED_BYTES {
        return Ok(false);
    }
    let mut magic = [0u8; REDB_MAGIC.len()];
    let head = magic.len().min(len as usize);
    backend.read(0, &mut magic[..head])?;
    if magic != [0; REDB_MAGIC.len()] {
        return Ok(false);
    }
    let mut block = vec![0u8; 64 << 10];
    let mut offset = REDB_HEADER_BYTES;
    while offset < len {
        let n = (len - offset).min(block.len() as u64) as usize;
        backend.read(offset, &mut block[..n])?;
        if block[..n].iter().any(|b| *b != 0) {
            return Ok(false);
        }
        offset += n as u64;
    }
    Ok(true)
}

/// Empties a storage whose redb creation was cut short, under redb's writer byte so no
/// other process is creating it meanwhile (it may have finished since: then it is kept).
fn start_over(path: &Path, backend: &impl StorageBackend) -> Result<(), OpenError> {
    let byte = (
        Bound::Included(REDB_WRITER_BYTE),
        Bound::Included(REDB_WRITER_BYTE),
    );
    let locked = match backend.try_lock_range(byte.0, byte.1) {
        Ok(true) => true,
        Ok(false) => {
            return Err(OpenError::Locked {
                path: path.to_path_buf(),
                waited: Duration::ZERO,
            })
        }
        Err(BackendError::Unsupported) => false,
        Err(e) => return Err(open_error(path, e.into())),
    };
    let emptied = (|| {
        let len = backend.len()?;
        if unfinished(backend, len)? {
            backend.set_len(0)?;
        }
        Ok(())
    })()
    .map_err(|e| io_error(path, e));
    if locked {
        backend
            .unlock_range(byte.0, byte.1)
            .map_err(|e| open_error(path, e.into()))?;
    }
    emptied
}

fn io_error(path: &Path, source: io::Error) -> OpenError {
    match source.kind() {
        io::ErrorKind::NotFound => OpenError::NotFound(path.to_path_buf()),
        _ => OpenError::Io {
            path: path.to_path_buf(),
            source,
        },
    }
}

/// Runs a redb open of a file that may be damaged: a panic inside redb, or a failure redb
/// calls corruption, is [`OpenError::Damaged`] when the file is a redb file (`redb_like`),
/// else [`OpenError::NotAStore`].
fn contained<T>(
    path: &Path,
    redb_like: bool,
    open: impl FnOnce() -> Result<T, DatabaseError>,
) -> Result<T, OpenError> {
    let damaged = |reason: String| {
        let path = path.to_path_buf();
        if redb_like {
            OpenError::Damaged { path, reason }
        } else {
            OpenError::NotAStore { path, reason }
        }
    };
    match contain::<_, StorageError>(|| Ok(open())) {
        Ok(Ok(opened)) => Ok(opened),
        Ok(Err(DatabaseError::Storage(redb::StorageError::Corrupted(what)))) => Err(damaged(what)),
        Ok(Err(DatabaseError::RepairAborted)) => Err(OpenError::NeedsRecovery {
            path: path.to_path_buf(),
        }),
        Ok(Err(e)) => Err(match open_error(path, e) {
            OpenError::NotAStore { reason, .. } if redb_like => damaged(reason),
            other => other,
        }),
        Err(panic) => Err(damaged(panic.to_string())),
    }
}

/// Whether the storage starts with redb's magic number, with one that differs in a byte or
/// two, or with zeros (a file past [`unfinished`]'s test: data after a zeroed header): a
/// damaged redb file rather than another kind of file.
fn looks_like_redb(backend: &impl StorageBackend) -> bool {
    let mut magic = [0u8; REDB_MAGIC.len()];
    if backend.read(0, &mut magic).is_err() {
        return false;
    }
    let same = magic
        .iter()
        .zip(REDB_MAGIC)
        .filter(|(a, b)| **a == *b)
        .count();
    same + 2 >= REDB_MAGIC.len() || magic == [0; REDB_MAGIC.len()]
}

pub(crate) fn open_error(path: &Path, e: DatabaseError) -> OpenError {
    let path: PathBuf = path.to_path_buf();
    match e {
        DatabaseError::DatabaseAlreadyOpen => OpenError::Locked {
            path,
            waited: Duration::ZERO,
        },
        DatabaseError::UpgradeRequired(v) => OpenError::NotAStore {
            path,
            reason: format!("redb file format {v} needs an upgrade"),
        },
        other => OpenError::NotAStore {
            path,
            reason: other.to_string(),
        },
    }
}
