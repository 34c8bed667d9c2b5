//! Helpers shared by the versions, crash and fault tests, the store fuzz model and the
//! rollback bench: small stores, documents, a fault-injecting storage backend.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use folio::chunk::{ChunkSpec, SourceFormat};
use folio::document::Document;
use folio::embed::HashEmbedder;
use folio::query::{SearchRequest, SearchResponse};
use folio::store::{
    Access, GraphParams, IndexConfig, IndexEmbedder, MergePolicy, Route, Store, StoreBuilder,
};
use redb::backends::FileBackend;
use redb::{BackendError, StorageBackend};

/// A value of a format 9 table as redb stores it: the payload, then its 8-byte checksum
/// (`storage-format.md`, "Checksums"); redb knows the value type by this name. For tests
/// that read or change the file behind folio's back.
#[derive(Debug)]
pub struct Checksummed;

impl Checksummed {
    /// The payload of a stored value (its checksum left off, not verified).
    pub fn payload(stored: &[u8]) -> &[u8] {
        &stored[..stored.len().saturating_sub(8)]
    }
}

impl redb::Value for Checksummed {
    type SelfType<'a>
        = &'a [u8]
    where
        Self: 'a;
    type AsBytes<'a>
        = &'a [u8]
    where
        Self: 'a;
    fn fixed_width() -> Option<usize> {
        None
    }
    fn from_bytes<'a>(data: &'a [u8]) -> &'a [u8]
    where
        Self: 'a,
    {
        data
    }
    fn as_bytes<'a, 'b: 'a>(value: &'a &'b [u8]) -> &'a [u8]
    where
        Self: 'b,
    {
        value
    }
    fn type_name() -> redb::TypeName {
        redb::TypeName::new("folio::sealed")
    }
}

pub fn doc(id: &str, text: &str) -> Document {
    Document::new(id, SourceFormat::Text, text)
}

pub fn route(index: &str, version: u64, weight: u32) -> Route {
    Route {
        index: index.to_string(),
        version,
        weight,
    }
}

/// A new index cut by `spec`, embedded like the `default` index.
pub fn config_like_default(store: &Store, spec: ChunkSpec) -> IndexConfig {
    let embedder = store
        .indexes()
        .list()
        .expect("indexes")
        .into_iter()
        .find(|i| i.name == "default")
        .expect("default index")
        .embedder
        .name;
    IndexConfig {
        spec,
        embedder: IndexEmbedder::Registered(embedder),
        graph: GraphParams::default(),
        vectors: Default::default(),
        lexical: Default::default(),
    }
}

/// Options for small fast stores: an 8-dimension hashing embedder, exact search only, and
/// no merges unless asked.
pub fn small_options() -> StoreBuilder {
    Store::builder()
        .create(true)
        .embedder(Arc::new(HashEmbedder::new(8).expect("embedder")))
        .graph(GraphParams {
            min_graph_size: u32::MAX,
            ..GraphParams::default()
        })
        .merge(MergePolicy::never())
}

/// [`small_options`] for a store whose segments get graphs from 16 rows on.
pub fn graph_options() -> StoreBuilder {
    small_options().graph(GraphParams {
        min_graph_size: 16,
        ..GraphParams::default()
    })
}

/// A read-only handle on the store at `path`, mapping its segments and postings from shared
/// files or not.
pub fn shared_reader(path: &Path, shared: bool) -> Store {
    small_options()
        .create(false)
        .read_only(true)
        .shared_segments(shared)
        .open(path)
        .expect("reader")
}

/// The folder of shared files beside the store at `path` (`STORE.segments`).
pub fn shared_folder(path: &Path) -> PathBuf {
    let mut name = path.file_name().expect("a store file").to_os_string();
    name.push(".segments");
    path.with_file_name(name)
}

/// The names of the shared files ending in `extension` (`.seg`, `.lex`) beside the store at
/// `path`; none when the folder does not exist.
pub fn shared_files(path: &Path, extension: &str) -> BTreeSet<String> {
    std::fs::read_dir(shared_folder(path))
        .map(|entries| {
            entries
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(extension))
                .collect()
        })
        .unwrap_or_default()
}

/// Per query: the returned parent ids with their score bits, and the planner paths.
pub type VectorAnswers = Vec<(Vec<(String, u32)>, Vec<folio::index::SearchPath>)>;

/// The top ten of a few vector queries of dimension 8, unrestricted: enough to compare two
/// handles' answers for identity.
pub fn vector_answers(store: &Store) -> VectorAnswers {
    (0..12)
        .map(|q| {
            let query: Vec<f32> = (0..8).map(|j| ((q * 8 + j) % 7) as f32 - 3.0).collect();
            let request = SearchRequest::vector(query)
                .access(Access::Unrestricted)
                .k(10);
            let response = store.search(&request).expect("search");
            (
                response
                    .results
                    .iter()
                    .map(|h| (h.parent_id.clone(), h.score.to_bits()))
                    .collect(),
                response.stats.paths,
            )
        })
        .collect()
}

/// Asserts that file sizes measured after each round stop growing: the peak of the last
/// third of the rounds is within 5% of the larger of the earlier thirds' peaks (a file that
/// keeps growing fails either way; one that settles may settle below its early peak, where
/// redb's free pages and the request log's unwritten entries make it wander). Returns the
/// three peaks.
pub fn assert_plateau(sizes: &[u64]) -> (u64, u64, u64) {
    let third = sizes.len() / 3;
    let peak = |r: std::ops::Range<usize>| sizes[r].iter().copied().max().unwrap_or(0);
    let (early, middle, late) = (
        peak(0..third),
        peak(third..2 * third),
        peak(2 * third..sizes.len()),
    );
    let before = early.max(middle);
    assert!(
        late <= before + before / 20,
        "the file kept growing: peaks {early} -> {middle} -> {late}"
    );
    (early, middle, late)
}

pub fn temp_store(options: StoreBuilder) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = options
        .open(dir.path().join("s.folio"))
        .expect("create store");
    (dir, store)
}

/// Every visible unit for `query` at `target`, as (doc_id, parent_id, score bits): exact
/// enough to compare two answers for identity.
pub fn answer(store: &Store, target: &str, query: &str) -> (u64, Vec<(String, String, u32)>) {
    let response = everything(store, target, query);
    (
        response.version,
        response
            .results
            .iter()
            .map(|h| (h.doc_id.clone(), h.parent_id.clone(), h.score.to_bits()))
            .collect(),
    )
}

/// The version a search of `target` uses.
pub fn version_of(store: &Store, target: &str) -> u64 {
    let request = SearchRequest::text("item")
        .access(Access::Unrestricted)
        .k(1)
        .target(target);
    store.search(&request).expect("search").version
}

/// The newest version of `index`.
pub fn head(store: &Store, index: &str) -> u64 {
    store
        .indexes()
        .list()
        .expect("indexes")
        .into_iter()
        .find(|i| i.name == index)
        .expect("index")
        .head
}

/// A search that returns every visible unit: unrestricted, k large, no near-duplicate drop.
pub fn everything(store: &Store, target: &str, query: &str) -> SearchResponse {
    let mut request = SearchRequest::text(query)
        .access(Access::Unrestricted)
        .k(100_000)
        .target(target);
    request.dedup = None;
    store.search(&request).expect("search")
}

/// Upserts `count` one-chunk documents `{prefix}{i}` with BYO vectors of dimension `dim`,
/// in batches of `per_batch`.
pub fn bulk_with_vectors(store: &Store, prefix: &str, count: usize, dim: usize, per_batch: usize) {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let mut i = 0;
    while i < count {
        let mut batch = store.batch();
        for _ in 0..per_batch.min(count - i) {
            let vector: Vec<f32> = (0..dim).map(|_| next()).collect();
            batch.upsert_with_vectors(
                doc(&format!("{prefix}{i}"), &format!("Item {i}.")),
                BTreeMap::from([("default".to_string(), vector)]),
            );
            i += 1;
        }
        batch.commit().expect("bulk commit");
    }
}

/// Fills `store` with `chunks` one-chunk documents (vectors of dimension 8), then one more
/// batch, and points alias `prod` at the head; returns the head version.
pub fn rollback_setup(store: &Store, chunks: usize) -> u64 {
    bulk_with_vectors(store, "d", chunks, 8, 20_000);
    bulk_with_vectors(store, "extra", 1, 8, 1);
    let head = head(store, "default");
    store
        .aliases()
        .set("prod", &[route("default", head, 100)])
        .expect("alias");
    head
}

/// A file backend that counts the bytes and calls it writes, and can be told to fail every
/// write and sync after a number of them.
#[derive(Debug)]
pub struct TestBackend {
    inner: FileBackend,
    pub written: Arc<AtomicU64>,
    pub writes: Arc<AtomicU64>,
    /// Syncs that succeeded.
    pub syncs: Arc<AtomicU64>,
    /// Writes, syncs and resizes still allowed; negative = unlimited.
    pub budget: Arc<AtomicI64>,
    /// What the injected fault hit: 1 write, 2 sync, 3 resize (0 = nothing yet).
    pub failed: Arc<AtomicU64>,
    /// Milliseconds each sync waits first (0: none): a commit then holds redb's writer
    /// byte that much longer, as a large commit would.
    pub sync_delay_ms: Arc<AtomicU64>,
}

impl TestBackend {
    pub fn open(path: &Path) -> TestBackend {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .expect("open file");
        TestBackend {
            inner: FileBackend::new(file).expect("file backend"),
            written: Arc::new(AtomicU64::new(0)),
            writes: Arc::new(AtomicU64::new(0)),
            syncs: Arc::new(AtomicU64::new(0)),
            budget: Arc::new(AtomicI64::new(-1)),
            failed: Arc::new(AtomicU64::new(0)),
            sync_delay_ms: Arc::new(AtomicU64::new(0)),
        }
    }

    fn spend(&self, call: u64) -> io::Result<()> {
        let left = self.budget.load(Ordering::SeqCst);
        if left == 0 {
            let _ = self
                .failed
                .compare_exchange(0, call, Ordering::SeqCst, Ordering::SeqCst);
            return Err(io::Error::other("injected fault"));
        }
        if left > 0 {
            self.budget.fetch_sub(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

impl StorageBackend for TestBackend {
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        self.inner.read(offset, out)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.spend(3)?;
        self.inner.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.spend(2)?;
        let delay = self.sync_delay_ms.load(Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(delay));
        self.inner.sync_data()?;
        self.syncs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.spend(1)?;
        self.written.fetch_add(data.len() as u64, Ordering::SeqCst);
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.write(offset, data)
    }

    fn close(&self) -> io::Result<()> {
        self.inner.close()
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.inner.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.query_lock_range(start, end)
    }
}
