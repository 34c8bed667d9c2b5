//! How a store is opened: [`StoreBuilder`] (start from [`crate::store::Store::builder`]) and the
//! merge policy, each default a named constant.

use std::sync::Arc;
use std::time::Duration;

use crate::chunk::ChunkSpec;
use crate::embed::{default_embedder, Embedder, Truncation, DEFAULT_TRUNCATION};
use crate::index::lexical::LexicalLanguage;
use crate::limits::{check, InvalidParameter, DIMENSION};
use crate::storage::file::records::{GraphParams, VectorStorage};

/// How to open or create a store: start from [`crate::Store::builder`](crate::store::Store::builder),
/// change what you need, then [`open`](StoreBuilder::open) a path.
///
/// ```
/// use folio::{MergePolicy, Store};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = tempfile::tempdir()?;
/// let store = Store::builder()
///     .create(true)
///     .merge(MergePolicy::never())
///     .open(dir.path().join("kb.folio"))?;
/// assert_eq!(store.index_names(), ["default"]);
/// # Ok(())
/// # }
/// ```
///
/// # Defaults
///
/// The settings a store is created with unless changed here, and the constants that hold
/// them (`tests/defaults.rs` keeps this table equal to the constants):
///
/// | setting | default | constant |
/// |---|---|---|
/// | embedder: the built-in hashing embedder, dimensions | 512 | [`DEFAULT_DIMENSION`](crate::embed::DEFAULT_DIMENSION) |
/// | `default` index: child chunk target, characters | 300 | [`DEFAULT_CHILD_TARGET`](crate::chunk::DEFAULT_CHILD_TARGET) |
/// | `default` index: child overlap, characters | 0 | [`DEFAULT_CHILD_OVERLAP`](crate::chunk::DEFAULT_CHILD_OVERLAP) |
/// | `default` index: section parents of at most, characters | 2000 | [`DEFAULT_SECTION_MAX`](crate::chunk::DEFAULT_SECTION_MAX) |
/// | `default` index: heading levels in `embed_text` | 6 | [`DEFAULT_HEADING_DEPTH`](crate::chunk::DEFAULT_HEADING_DEPTH) |
/// | graph: links per node (`m`) | 16 | [`DEFAULT_M`](crate::index::DEFAULT_M) |
/// | graph: construction candidates (`ef_construction`) | 200 | [`DEFAULT_EF_CONSTRUCTION`](crate::index::DEFAULT_EF_CONSTRUCTION) |
/// | graph: smallest segment with a graph | 4096 | [`DEFAULT_MIN_GRAPH_SIZE`](crate::store::DEFAULT_MIN_GRAPH_SIZE) |
/// | compressed vectors: candidates re-scored | 40 | [`DEFAULT_RESCORE`](crate::store::DEFAULT_RESCORE) |
/// | merge: most segments in a head | 8 | [`DEFAULT_MAX_SEGMENTS`] |
/// | merge: most dead rows in a segment | 0.3 | [`DEFAULT_MAX_DEAD_FRACTION`] |
/// | writes: chunks longer than the model reads | `Split` | [`DEFAULT_TRUNCATION`](crate::embed::DEFAULT_TRUNCATION) |
/// | commit: wait for another process's commit, seconds | 10 | [`DEFAULT_WAIT`] |
///
/// The file is not created unless [`create`](StoreBuilder::create) says so, searches
/// are not logged unless [`log_requests`](StoreBuilder::log_requests) says so, and the
/// store is opened for writing unless [`read_only`](StoreBuilder::read_only) says so. A
/// read-only open of a file maps its segments from shared files beside it, a writing one
/// reads them into its own memory, unless [`shared_segments`](StoreBuilder::shared_segments)
/// says otherwise.
#[derive(Clone)]
pub struct StoreBuilder {
    pub(crate) embedder: Arc<dyn Embedder>,
    pub(crate) spec: ChunkSpec,
    pub(crate) graph: GraphParams,
    pub(crate) vectors: VectorStorage,
    pub(crate) lexical: LexicalLanguage,
    pub(crate) create: bool,
    pub(crate) merge: MergePolicy,
    pub(crate) log_requests: bool,
    pub(crate) truncation: Truncation,
    pub(crate) read_only: bool,
    pub(crate) recover_in_place: bool,
    pub(crate) wait: Duration,
    /// `None`: shared when read-only.
    pub(crate) shared_segments: Option<bool>,
}

impl Default for StoreBuilder {
    fn default() -> Self {
        StoreBuilder {
            embedder: Arc::new(default_embedder()),
            spec: ChunkSpec::default(),
            graph: GraphParams::default(),
            vectors: VectorStorage::Resident,
            lexical: LexicalLanguage::Auto,
            create: false,
            merge: MergePolicy::default(),
            log_requests: false,
            truncation: DEFAULT_TRUNCATION,
            read_only: false,
            recover_in_place: true,
            wait: DEFAULT_WAIT,
            shared_segments: None,
        }
    }
}

impl StoreBuilder {
    /// The embedder new indexes and text queries use (see [`StoreBuilder::embedder`]).
    pub fn embedder_in_use(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// Whether the store is to be opened for reading only.
    pub fn opens_read_only(&self) -> bool {
        self.read_only
    }

    /// The embedder for text queries and for ingest into indexes built with an embedder of
    /// the same name; a new store's `default` index is built with it.
    pub fn embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = embedder;
        self
    }

    /// The chunking of the `default` index, when the store is created.
    pub fn spec(mut self, spec: ChunkSpec) -> Self {
        self.spec = spec;
        self
    }

    /// The graph parameters of the `default` index, when the store is created.
    pub fn graph(mut self, graph: GraphParams) -> Self {
        self.graph = graph;
        self
    }

    /// Where the `default` index keeps its vectors, when the store is created.
    pub fn vectors(mut self, vectors: VectorStorage) -> Self {
        self.vectors = vectors;
        self
    }

    /// The language the `default` index's lexical leg analyses texts in, when the store
    /// is created ([`LexicalLanguage::Auto`] unless set).
    pub fn lexical_language(mut self, language: LexicalLanguage) -> Self {
        self.lexical = language;
        self
    }

    /// Whether to create the file when it does not exist.
    pub fn create(mut self, create: bool) -> Self {
        self.create = create;
        self
    }

    /// When segments are merged after a commit.
    pub fn merge(mut self, merge: MergePolicy) -> Self {
        self.merge = merge;
        self
    }

    /// Whether to record every search in the file's request log (see
    /// [`Log::entries`](crate::store::Log::entries)). A read-only store keeps one too: it
    /// opens the file writable and writes only its log entries (and annotations, feedback),
    /// in short commits; on a file this user or this mount may only read, that open fails
    /// with [`OpenError::ReadOnlyLog`](crate::store::OpenError::ReadOnlyLog).
    pub fn log_requests(mut self, log: bool) -> Self {
        self.log_requests = log;
        self
    }

    /// What writes do with a chunk longer than its index's model reads (in the model's own
    /// tokens): split it, embed it truncated and report it, or refuse the commit.
    pub fn truncation(mut self, truncation: Truncation) -> Self {
        self.truncation = truncation;
        self
    }

    /// Whether to open for reading only: searches and every other read work, every write
    /// fails with [`StorageError::ReadOnly`](crate::store::StorageError::ReadOnly), and the file is
    /// opened read-only, so a file the user may only read, or one on a read-only mount,
    /// opens. Any number of processes may read a store while others write it, and a
    /// read-only store sees each of their commits at its next read, without reopening. The file is never written, except for the request log when
    /// [`log_requests`](StoreBuilder::log_requests) says so, and except that after a
    /// writer died without closing it, redb must recover it before it can be read: when
    /// the file is writable this open runs that recovery (it changes no table), otherwise
    /// it fails with [`OpenError::NeedsRecovery`](crate::store::OpenError::NeedsRecovery)
    /// (unless [`recover_in_place`](StoreBuilder::recover_in_place) is off: then it reads a
    /// recovered copy and never writes the file).
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Whether a [read-only](StoreBuilder::read_only) open (without
    /// [`log_requests`](StoreBuilder::log_requests)) of a file that needs redb's recovery
    /// (its last writer died without closing it, or its header is damaged) recovers the file
    /// in place, as the next writer would (`true`, the default), or leaves it byte for byte
    /// as it was (`false`): the file is then copied into the temporary folder and the store
    /// reads the recovered copy, as of that moment ([`Store::reads_recovered_copy`] says
    /// so, and [`Store::check_integrity`] reports it). What examines a suspect file (`folio
    /// check`, `backup`, `dump`) opens with `false`.
    ///
    /// [`Store::reads_recovered_copy`]: crate::store::Store::reads_recovered_copy
    /// [`Store::check_integrity`]: crate::store::Store::check_integrity
    pub fn recover_in_place(mut self, in_place: bool) -> Self {
        self.recover_in_place = in_place;
        self
    }

    /// Whether segments loaded from the file are mapped from shared segment files beside
    /// it (`STORE.segments/`, made from the store by the first process that loads each
    /// segment) instead of read into this process's memory: N processes searching one
    /// store then hold about one copy of its indexes, in the page cache, at the same
    /// answers and speed (`docs/benchmarks/shared-readers.md`). The files are derived and
    /// rebuilt when missing or damaged; a folder that cannot be written leaves each
    /// process with its own copy ([`IndexStats::shared_refused`](crate::store::IndexStats)
    /// says why). Each segment's lexical postings are mapped too, from a shared postings
    /// file made by the first lexical search that needs them. Compressed indexes
    /// ([`VectorStorage::Compressed`]) keep their rows in the store file and are not mapped
    /// (their postings are); stores on a [backend](StoreBuilder::open_with_backend) never
    /// are. Default: on for a [read-only](StoreBuilder::read_only) open, off for a
    /// writer (whose new segments are built in its memory anyway).
    pub fn shared_segments(mut self, shared: bool) -> Self {
        self.shared_segments = Some(shared);
        self
    }

    /// Whether this open maps segments from shared files (see
    /// [`StoreBuilder::shared_segments`]).
    pub fn shares_segments(&self) -> bool {
        self.shared_segments.unwrap_or(self.read_only)
    }

    /// How long a commit (any write: a batch, a tag, a rollback, request-log entries) waits
    /// while another process is committing to the store before it fails with
    /// [`StorageError::Busy`](crate::store::StorageError::Busy). Any number of processes
    /// may have a store open for writing; each holds the file's writer lock only while it
    /// commits, never while it is idle, chunking or embedding. An open waits as long for a
    /// process of an older folio that keeps the file to itself while open
    /// ([`OpenError::Locked`](crate::store::OpenError::Locked)).
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// Refuses what a new store would record but could not load back (checked before a
    /// store is created): the `default` index's chunking, graph and embedder dimension.
    pub(crate) fn validate(&self) -> Result<(), InvalidParameter> {
        self.spec.validate()?;
        self.graph.validate()?;
        check_dimension(self.embedder.as_ref())
    }
}

/// An embedder's dimension must be one the store can decode (see [`crate::limits::DIMENSION`]).
pub(crate) fn check_dimension(embedder: &dyn Embedder) -> Result<(), InvalidParameter> {
    let allowed = *DIMENSION.start() as usize..=*DIMENSION.end() as usize;
    check("dimension", embedder.dimension(), &allowed).map(drop)
}

/// How long a commit waits for another process's commit, by default (see
/// [`StoreBuilder::wait`]): far longer than a commit's write transaction, which holds no
/// chunking, embedding or graph build, so a wait this long means a stuck process.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// When the store merges segments right after a commit.
///
/// The defaults ([`DEFAULT_MAX_SEGMENTS`], [`DEFAULT_MAX_DEAD_FRACTION`]) were measured in
/// `tests/versions_merge.rs` under a steady update load: at most 8 segments per version,
/// each row rewritten about 2 times over its life, and a head whose rows are at least
/// ~70% live.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct MergePolicy {
    /// More segments than this in the head: the smallest are merged until half remain.
    pub max_segments: usize,
    /// A segment with a larger fraction of dead rows is rewritten with its live rows only.
    pub max_dead_fraction: f32,
}

/// More segments than this in a head make the smallest merge, by default.
pub const DEFAULT_MAX_SEGMENTS: usize = 8;

/// A segment with a larger fraction of dead rows is rewritten, by default.
pub const DEFAULT_MAX_DEAD_FRACTION: f32 = 0.3;

/// [`DEFAULT_MAX_SEGMENTS`] and [`DEFAULT_MAX_DEAD_FRACTION`].
impl Default for MergePolicy {
    fn default() -> Self {
        MergePolicy {
            max_segments: DEFAULT_MAX_SEGMENTS,
            max_dead_fraction: DEFAULT_MAX_DEAD_FRACTION,
        }
    }
}

impl MergePolicy {
    /// Never merges after commits ([`Indexes::compact`](crate::store::Indexes::compact) still does, on
    /// demand).
    pub fn never() -> Self {
        MergePolicy {
            max_segments: usize::MAX,
            max_dead_fraction: f32::INFINITY,
        }
    }
}
