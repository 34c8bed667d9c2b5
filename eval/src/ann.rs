//! The filtered-ANN benchmark on a dataset of the kit (`../shared/bench`, `ann_data.py`):
//! builds the dataset's index **in a store** (one document per base vector, one ACL
//! principal per filter), then sweeps the graph breadth `ef` per filter and measures
//! recall@k and single-thread QPS through the store's children search
//! (`Snapshot::search_children`, that is `folio::index::search_segments`), the path every
//! search takes. The records have the kit's `results.json` shape (peer `folio`), so
//! `ann_peers.py --report-only --merge` puts folio beside faiss, hnswlib and usearch.

mod build;
mod config;
pub mod curve;
mod dataset;
mod error;
mod files;
mod report;
mod sweep;

pub use build::ExternalVectors;
pub use config::{AnnConfig, DEFAULT_EFS};
pub use dataset::{Dataset, Filter};
pub use error::AnnError;
pub use files::{read_fvecs, read_ivecs, read_u32, FileError, Matrix};
pub use report::{
    AnnRun, BuildRecord, FilterSize, PathWork, RunMeta, SearchRecord, VisibleCost, PEER,
};

use folio::store::Progress;

/// Loads the dataset, builds (or reopens) its store, and sweeps every selected filter.
/// `progress` shows the build; `on_point` sees each search point as it is measured.
pub fn run(
    config: &AnnConfig,
    progress: &dyn Progress,
    on_point: &mut dyn FnMut(&SearchRecord),
) -> Result<AnnRun, AnnError> {
    run_then(config, progress, on_point, &mut || {})
}

/// [`run`], calling `then` after the sweep with the store still open (a driver measures
/// the process's memory meanwhile).
pub fn run_then(
    config: &AnnConfig,
    progress: &dyn Progress,
    on_point: &mut dyn FnMut(&SearchRecord),
    then: &mut dyn FnMut(),
) -> Result<AnnRun, AnnError> {
    config.validate()?;
    let mut dataset = Dataset::load(&config.data, config.filters.as_deref(), config.queries)?;
    dataset.check_k(config.k)?;
    let mut built = build::prepare(&dataset, config, progress)?;
    if config.reuse_store {
        // Checked against the store: the sweep needs only the queries, and a reader's
        // memory is then the store's.
        dataset.base.clear();
    }
    let swept = sweep::run(&built.store, &dataset, config, on_point)?;
    built.searched();
    then();
    Ok(AnnRun {
        meta: RunMeta::new(&dataset, config),
        build: built.record,
        searches: swept.records,
        visible: swept.visible,
    })
}
