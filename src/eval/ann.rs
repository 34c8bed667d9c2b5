//! The filtered-ANN benchmark on a dataset of the kit (`../shared/bench`, `ann_data.py`):
//! builds the dataset's index **in a store** (one document per base vector, one ACL
//! principal per filter), then sweeps the graph breadth `ef` per filter and measures
//! recall@k and single-thread QPS through [`VersionView::search_children`], the path every
//! search takes. The records have the kit's `results.json` shape (peer `folio`), so
//! `ann_peers.py --report-only --merge` puts folio beside faiss, hnswlib and usearch.
//!
//! [`VersionView::search_children`]: crate::store::VersionView::search_children

mod build;
mod dataset;
mod files;
mod report;
mod sweep;

use std::path::PathBuf;
use std::time::Duration;

pub use build::ExternalVectors;
pub use dataset::{Dataset, Filter};
pub use files::{read_fvecs, read_ivecs, read_u32, FileError, Matrix};
pub use report::{AnnRun, BuildRecord, FilterSize, RunMeta, SearchRecord, VisibleCost, PEER};

use crate::store::{OpenError, Progress, SearchError, StorageError, WriteError};

/// The kit's ef sweep (`ann_peers.py --ef`).
pub const DEFAULT_EFS: [usize; 12] = [10, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512];

/// The benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum AnnError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("{path}: {source}")]
    Meta {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("the dataset is inconsistent: {0}")]
    Dataset(String),
    #[error("no filter `{name}` in the dataset (it has: {available})")]
    UnknownFilter { name: String, available: String },
    #[error("invalid benchmark settings: {0}")]
    Config(String),
    #[error("{0} already exists: pass --reuse-store to search it, or remove it")]
    StoreExists(PathBuf),
    #[error("the store does not hold the dataset as built: {0}")]
    StoreMismatch(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("build thread pool: {0}")]
    Pool(#[from] rayon::ThreadPoolBuildError),
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    Search(#[from] SearchError),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// What to measure. [`AnnConfig::new`] has the kit's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnConfig {
    /// A dataset folder written by `ann_data.py`.
    pub data: PathBuf,
    /// Where to build the store (a temporary file when `None`).
    pub store: Option<PathBuf>,
    /// Search the existing store at `store` instead of building one (no build record).
    pub reuse_store: bool,
    /// Filters to sweep (`none` and file stems such as `random_0.01`); all when `None`.
    pub filters: Option<Vec<String>>,
    pub efs: Vec<usize>,
    /// Use only the first `queries` queries.
    pub queries: Option<usize>,
    pub k: usize,
    pub m: u32,
    pub ef_construction: u32,
    pub build_threads: usize,
    /// A point stops after this much search time once `min_queries` ran.
    pub time_budget: Duration,
    pub min_queries: usize,
    /// A filter's sweep stops once recall reaches this (higher ef only costs QPS).
    pub stop_recall: f64,
}

impl AnnConfig {
    /// The kit's defaults for the dataset folder `data`.
    pub fn new(data: impl Into<PathBuf>) -> Self {
        AnnConfig {
            data: data.into(),
            store: None,
            reuse_store: false,
            filters: None,
            efs: DEFAULT_EFS.to_vec(),
            queries: None,
            k: 10,
            m: 16,
            ef_construction: 200,
            build_threads: 2,
            time_budget: Duration::from_secs(3),
            min_queries: 100,
            stop_recall: 0.999,
        }
    }

    fn validate(&self) -> Result<(), AnnError> {
        let problem = if self.k == 0 {
            "k must be at least 1"
        } else if self.efs.is_empty() || self.efs.contains(&0) {
            "the ef list must hold positive values"
        } else if self.m < 2 || self.ef_construction == 0 {
            "m must be at least 2 and ef_construction at least 1"
        } else if self.build_threads == 0 {
            "build threads must be at least 1"
        } else if self.reuse_store && self.store.is_none() {
            "reusing a store needs its path"
        } else {
            return Ok(());
        };
        Err(AnnError::Config(problem.into()))
    }
}

/// Loads the dataset, builds (or reopens) its store, and sweeps every selected filter.
/// `progress` shows the build; `on_point` sees each search point as it is measured.
pub fn run(
    config: &AnnConfig,
    progress: &dyn Progress,
    on_point: &mut dyn FnMut(&SearchRecord),
) -> Result<AnnRun, AnnError> {
    config.validate()?;
    let dataset = Dataset::load(&config.data, config.filters.as_deref(), config.queries)?;
    dataset.check_k(config.k)?;
    let built = build::prepare(&dataset, config, progress)?;
    let swept = sweep::run(&built.store, &dataset, config, on_point)?;
    Ok(AnnRun {
        meta: RunMeta::new(&dataset, config),
        build: built.record,
        searches: swept.records,
        visible: swept.visible,
    })
}
