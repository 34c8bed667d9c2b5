//! Building the dataset's index in a store: one document per base vector with exactly one
//! child, so child numbers are base ids, committed in one batch (one segment, one graph).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use roaring::RoaringBitmap;
use tempfile::TempDir;

use super::config::AnnConfig;
use super::dataset::Dataset;
use super::error::AnnError;
use super::report::{load1, BuildRecord};
use folio::chunk::{Chunked, SourceFormat};
use folio::document::Document;
use folio::embed::{EmbedError, Embedder};
use folio::index::Metric;
use folio::store::{
    CompactFileError, GraphParams, Progress, Store, StoreBuilder, VectorStorage, DEFAULT_INDEX,
};

/// The principal every document carries: filter `none` searches as it.
pub(crate) const ALL: &str = "all";

/// Base ids checked against their document after the build (evenly spread, plus the last).
const NUMBERING_SAMPLES: usize = 64;

/// Stands for the model that made a dataset's vectors. The store records its identity
/// (a reopened store must match it); the benchmark always brings the vectors, so nothing
/// is ever embedded.
#[derive(Debug, Clone)]
pub struct ExternalVectors {
    dataset: String,
    dim: usize,
    metric: Metric,
}

impl ExternalVectors {
    /// The stand-in for `dataset`'s model: `dim` dimensions compared by `metric`.
    pub fn new(dataset: &str, dim: usize, metric: Metric) -> Self {
        ExternalVectors {
            dataset: dataset.to_string(),
            dim,
            metric,
        }
    }
}

impl Embedder for ExternalVectors {
    fn name(&self) -> &str {
        "external-vectors"
    }

    fn fingerprint(&self) -> String {
        format!("dataset={}", self.dataset)
    }

    fn dimension(&self) -> usize {
        self.dim
    }

    fn metric(&self) -> Metric {
        self.metric
    }

    fn max_input_tokens(&self) -> usize {
        0
    }

    fn embed(&self, _: &[&str]) -> Result<Vec<f32>, EmbedError> {
        Err(EmbedError::Failed(format!(
            "the vectors of dataset {} come with the dataset; they cannot be embedded",
            self.dataset
        )))
    }
}

/// The store to search, and what building it cost (`None` when an existing one was reused).
pub(crate) struct Built {
    pub(crate) store: Store,
    pub(crate) record: Option<BuildRecord>,
    /// Resident memory before the reopen, MB.
    reopen_baseline_mb: Option<f64>,
    /// Holds the temporary store file until the run ends.
    _dir: Option<TempDir>,
}

/// Builds the store (or reopens the one to reuse), then checks that it holds the dataset
/// with child numbers equal to base ids.
pub(crate) fn prepare(
    dataset: &Dataset,
    config: &AnnConfig,
    progress: &dyn Progress,
) -> Result<Built, AnnError> {
    let (path, dir) = match &config.store {
        Some(path) => (path.clone(), None),
        None => {
            let dir = tempfile::tempdir().map_err(|source| AnnError::Io {
                path: std::env::temp_dir(),
                source,
            })?;
            (dir.path().join("ann.folio"), Some(dir))
        }
    };
    let options = options(dataset, config);
    let (store, record, reopen_baseline_mb) = if config.reuse_store {
        (options.read_only(config.read_only).open(&path)?, None, None)
    } else {
        let (store, record, baseline) = build(dataset, config, &path, options, progress)?;
        (store, Some(record), baseline)
    };
    check_layout(&store, dataset, config)?;
    Ok(Built {
        store,
        record,
        reopen_baseline_mb,
        _dir: dir,
    })
}

impl Built {
    /// Records what resident memory the reopened store holds now, after the searches.
    pub(crate) fn searched(&mut self) {
        let now = rss_mb();
        if let Some(record) = &mut self.record {
            record.search_rss_delta_mb = delta(self.reopen_baseline_mb, now);
        }
    }
}

fn options(dataset: &Dataset, config: &AnnConfig) -> StoreBuilder {
    let builder = match config.shared_segments {
        Some(shared) => Store::builder().shared_segments(shared),
        None => Store::builder(),
    };
    builder
        .embedder(Arc::new(ExternalVectors::new(
            &dataset.name,
            dataset.base.dim(),
            dataset.metric,
        )))
        .graph(GraphParams {
            m: config.m,
            ef_construction: config.ef_construction,
            // The one batch makes one segment, which must get a graph whatever its size.
            min_graph_size: 1,
        })
        .vectors(config.vectors)
}

/// Ingests the dataset into a new store at `path`, gives the file back its free space
/// ([`Store::compact_file`]), then reopens it (what a restarted process pays) and returns
/// the reopened store.
fn build(
    dataset: &Dataset,
    config: &AnnConfig,
    path: &Path,
    options: StoreBuilder,
    progress: &dyn Progress,
) -> Result<(Store, BuildRecord, Option<f64>), AnnError> {
    if path.exists() {
        return Err(AnnError::StoreExists(path.to_path_buf()));
    }
    let load_before = load1();
    let rss_before = rss_mb();
    reset_peak();
    let started = Instant::now();
    let store = options.clone().create(true).open(path)?;
    let timed = Timed::new(progress);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(config.build_threads)
        .build()?;
    pool.install(|| ingest(&store, dataset, &timed))?;
    // redb grew the file ahead of its allocations during the one large commit: give that
    // back, as an application would after a bulk load (part of the ingest time).
    let compact_started = Instant::now();
    let mut store = store;
    store.compact_file().map_err(|e| match e {
        CompactFileError::Storage(e) => AnnError::Storage(e),
        other => AnnError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other(other),
        },
    })?;
    let compact_seconds = compact_started.elapsed().as_secs_f64();
    let seconds = started.elapsed().as_secs_f64();
    let rss_delta_mb = delta(rss_before, rss_mb());
    let rss_peak_delta_mb = delta(rss_before, peak_mb());
    drop(store);

    let rss_before = rss_mb();
    reset_peak();
    let started = Instant::now();
    let store = options.open(path)?;
    let reopen_seconds = started.elapsed().as_secs_f64();
    let record = BuildRecord {
        threads: config.build_threads,
        seconds,
        graph_seconds: timed.graph_seconds(),
        compact_seconds: Some(compact_seconds),
        n: dataset.base.rows(),
        index_bytes: file_bytes(path)?,
        rss_delta_mb,
        rss_peak_delta_mb,
        reopen_seconds,
        reopen_rss_delta_mb: delta(rss_before, rss_mb()),
        reopen_rss_peak_delta_mb: delta(rss_before, peak_mb()),
        search_rss_delta_mb: None,
        load1: load_before,
    };
    Ok((store, record, rss_before))
}

/// One batch: document `v{i}` holds base vector `i` as its only child, visible to the
/// principals of the filters that contain `i` and to [`ALL`].
fn ingest(store: &Store, dataset: &Dataset, progress: &dyn Progress) -> Result<(), AnnError> {
    // Each document's ACL is made as it is upserted: a list per base vector, made up
    // front, would count 17 MB of the harness's own bookkeeping at 200k as build memory.
    let members: Vec<(&str, RoaringBitmap)> = dataset
        .filters
        .iter()
        .filter_map(|f| Some((f.name.as_str(), f.ids.as_ref()?.iter().copied().collect())))
        .collect();
    let mut batch = store.batch();
    for i in 0..dataset.base.rows() {
        let acl = std::iter::once(ALL).chain(
            members
                .iter()
                .filter(|(_, ids)| ids.contains(i as u32))
                .map(|(name, _)| *name),
        );
        let text = format!("v{i}");
        let chunks = Chunked::whole(text.len());
        let vectors = BTreeMap::from([(DEFAULT_INDEX.to_string(), dataset.base.row(i).to_vec())]);
        let doc = Document::new(text.clone(), SourceFormat::Text, text).with_acl(acl);
        batch.upsert_prepared(doc, Some(chunks), vectors);
    }
    batch.commit_with(progress)?;
    Ok(())
}

/// The searched version must hold every base vector in one segment with a graph, and child
/// `i` must be base vector `i` (children are numbered in upsert order). A compressed run
/// must search a segment whose rows stay in the file.
fn check_layout(store: &Store, dataset: &Dataset, config: &AnnConfig) -> Result<(), AnnError> {
    let n = dataset.base.rows();
    let reader = store.snapshot()?;
    let (state, view) = reader.resolve(DEFAULT_INDEX)?;
    let segments = view.segment_count();
    if view.live().len() != n as u64 || segments != 1 || view.graph_segments() != 1 {
        return Err(AnnError::StoreMismatch(format!(
            "expected {n} children in one segment with a graph, found {} in {segments} segments ({} with a graph)",
            view.live().len(),
            view.graph_segments()
        )));
    }
    if config.vectors != VectorStorage::Resident && view.stored_segments() != 1 {
        return Err(AnnError::StoreMismatch(
            "expected a compressed index, found its vectors in memory".into(),
        ));
    }
    let step = (n / NUMBERING_SAMPLES).max(1);
    for id in (0..n).step_by(step).chain(n.checked_sub(1)) {
        let child = reader.child(&state, id as u32)?;
        let doc = reader.doc(child.rev)?;
        if doc.doc_id != format!("v{id}") {
            return Err(AnnError::StoreMismatch(format!(
                "child {id} belongs to document {}, not v{id}",
                doc.doc_id
            )));
        }
    }
    Ok(())
}

fn file_bytes(path: &Path) -> Result<u64, AnnError> {
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|source| AnnError::Io {
            path: PathBuf::from(path),
            source,
        })
}

/// Resident memory of this process (Linux `/proc/self/status`), in MiB.
fn rss_mb() -> Option<f64> {
    status_mb("VmRSS:")
}

/// The most resident memory since [`reset_peak`] (or the start), in MiB.
fn peak_mb() -> Option<f64> {
    status_mb("VmHWM:")
}

/// Restarts [`peak_mb`] from the current resident size (Linux `clear_refs`; elsewhere
/// the peak stays unknown, as `/proc/self/status` is missing too).
fn reset_peak() {
    // A kernel that refuses leaves the peak since the start: an over-estimate, never less.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn status_mb(field: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn delta(before: Option<f64>, after: Option<f64>) -> Option<f64> {
    Some(after? - before?)
}

/// Forwards to the caller's progress and notes when the store's `graph` stage starts and
/// reports its last node, which times the graph build inside the commit.
struct Timed<'p> {
    inner: &'p dyn Progress,
    graph: Mutex<GraphStage>,
}

#[derive(Default)]
struct GraphStage {
    total: u64,
    started: Option<Instant>,
    took: Option<Duration>,
}

impl<'p> Timed<'p> {
    fn new(inner: &'p dyn Progress) -> Self {
        Timed {
            inner,
            graph: Mutex::new(GraphStage::default()),
        }
    }

    fn graph_seconds(&self) -> Option<f64> {
        self.graph.lock().took.map(|d| d.as_secs_f64())
    }
}

impl Progress for Timed<'_> {
    fn stage(&self, name: &str, total: u64) {
        // The stage name is the one `store::write::build_segment` reports.
        if name == "graph" {
            *self.graph.lock() = GraphStage {
                total,
                started: Some(Instant::now()),
                took: None,
            };
        }
        self.inner.stage(name, total);
    }

    fn advance(&self, n: u64) {
        self.inner.advance(n);
    }

    fn set_done(&self, done: u64) {
        let mut graph = self.graph.lock();
        if let (Some(started), None) = (graph.started, graph.took) {
            if done >= graph.total {
                graph.took = Some(started.elapsed());
            }
        }
        drop(graph);
        self.inner.set_done(done);
    }
}
