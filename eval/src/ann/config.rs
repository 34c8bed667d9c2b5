//! What to measure, with the kit's defaults.

use std::path::PathBuf;
use std::time::Duration;

use super::error::AnnError;
use folio::index::Strategy;
use folio::store::VectorStorage;

/// The kit's ef sweep (`ann_peers.py --ef`).
pub const DEFAULT_EFS: [usize; 12] = [10, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512];

/// What to measure. [`AnnConfig::new`] has the kit's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnConfig {
    /// A dataset folder written by `ann_data.py`.
    pub data: PathBuf,
    /// Where to build the store (a temporary file when `None`).
    pub store: Option<PathBuf>,
    /// Search the existing store at `store` instead of building one (no build record).
    pub reuse_store: bool,
    /// Open the reused store read-only, as one of many reader processes would.
    pub read_only: bool,
    /// Map segments from shared files (`StoreBuilder::shared_segments`); the library's
    /// default when `None`.
    pub shared_segments: Option<bool>,
    /// Filters to sweep (`none` and file stems such as `random_0.01`); all when `None`.
    pub filters: Option<Vec<String>>,
    /// Beam widths to sweep, in order.
    pub efs: Vec<usize>,
    /// Use only the first `queries` queries.
    pub queries: Option<usize>,
    /// Neighbours per query (recall@k).
    pub k: usize,
    /// Graph links per node.
    pub m: u32,
    /// Graph construction candidates.
    pub ef_construction: u32,
    /// Threads that build the graph.
    pub build_threads: usize,
    /// Where the index keeps its vectors (a compressed one reads them from the file).
    pub vectors: VectorStorage,
    /// A point stops after this much search time once `min_queries` ran.
    pub time_budget: Duration,
    /// Queries every point runs at least.
    pub min_queries: usize,
    /// A filter's sweep stops once recall reaches this (higher ef only costs QPS).
    pub stop_recall: f64,
    /// The planner's choice, or one path forced for every query (to compare paths).
    pub strategy: Strategy,
}

impl AnnConfig {
    /// The kit's defaults for the dataset folder `data`.
    pub fn new(data: impl Into<PathBuf>) -> Self {
        AnnConfig {
            data: data.into(),
            store: None,
            reuse_store: false,
            read_only: false,
            shared_segments: None,
            filters: None,
            efs: DEFAULT_EFS.to_vec(),
            queries: None,
            k: 10,
            m: folio::index::DEFAULT_M,
            ef_construction: folio::index::DEFAULT_EF_CONSTRUCTION,
            build_threads: 2,
            vectors: VectorStorage::Resident,
            time_budget: Duration::from_secs(3),
            min_queries: 100,
            stop_recall: 0.999,
            strategy: Strategy::Auto,
        }
    }

    pub(super) fn validate(&self) -> Result<(), AnnError> {
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
        } else if self.read_only && !self.reuse_store {
            "only a reused store opens read-only"
        } else {
            return Ok(());
        };
        Err(AnnError::Config(problem.into()))
    }
}
