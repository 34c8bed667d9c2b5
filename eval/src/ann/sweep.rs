//! The search sweep. Per filter the visible set is computed once, outside the timing (the
//! peers gather theirs beforehand too); then per ef every query runs alone on this thread
//! through [`Snapshot::search_children`] with a query prepared once, as a store search does.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use roaring::RoaringBitmap;

use super::build::ALL;
use super::config::AnnConfig;
use super::dataset::{Dataset, Filter};
use super::error::AnnError;
use super::report::{load1, PathWork, SearchRecord, VisibleCost};
use folio::index::{Neighbor, QueryVector, SearchOptions};
use folio::store::Snapshot;
use folio::store::VersionView;
use folio::store::{Access, Store, DEFAULT_INDEX};

/// Untimed queries before a filter's first point (caches, branch predictors).
const WARM_UP: usize = 50;
/// Repeats when timing the visible-set computation.
const VISIBLE_REPEATS: u32 = 20;

pub(crate) struct Swept {
    pub(crate) records: Vec<SearchRecord>,
    pub(crate) visible: Vec<VisibleCost>,
}

pub(crate) fn run(
    store: &Store,
    dataset: &Dataset,
    config: &AnnConfig,
    on_point: &mut dyn FnMut(&SearchRecord),
) -> Result<Swept, AnnError> {
    let reader = store.snapshot()?;
    let (state, view) = reader.resolve(DEFAULT_INDEX)?;
    // Prepared once, as a store search prepares its query before the segments see it.
    let metric = state.embedder().metric;
    let prepared = (0..dataset.queries.rows())
        .map(|q| QueryVector::new(dataset.queries.row(q).to_vec(), metric))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| AnnError::Dataset(format!("a query: {e}")))?;
    let mut swept = Swept {
        records: Vec::new(),
        visible: Vec::new(),
    };
    for filter in &dataset.filters {
        let visible = visible_set(&reader, &view, filter, dataset.base_rows)?;
        swept.visible.push(visible_cost(&reader, &view, filter)?);
        let queries = Queries {
            prepared: &prepared,
            filter,
            reader: &reader,
        };
        queries.warm_up(&view, &visible, config, config.efs[0])?;
        for &ef in &config.efs {
            let record = queries.measure(&view, &visible, config, ef)?;
            on_point(&record);
            let done = record.recall >= config.stop_recall;
            swept.records.push(record);
            if done {
                break;
            }
        }
    }
    Ok(swept)
}

/// The principals a filter searches as: its own, or [`ALL`] for `none`.
fn access(filter: &Filter) -> Access {
    match filter.ids {
        None => Access::principals([ALL]),
        Some(_) => Access::principals([filter.name.as_str()]),
    }
}

/// The filter's visible set, checked against its id file.
fn visible_set(
    reader: &Snapshot<'_>,
    view: &VersionView,
    filter: &Filter,
    n: usize,
) -> Result<RoaringBitmap, AnnError> {
    let visible = reader.visible(view, &access(filter))?;
    let expected = match &filter.ids {
        None => RoaringBitmap::from_iter(0..n as u32),
        Some(ids) => ids.iter().copied().collect(),
    };
    if visible != expected {
        return Err(AnnError::StoreMismatch(format!(
            "filter {} sees {} children, its id file lists {}",
            filter.name,
            visible.len(),
            expected.len()
        )));
    }
    Ok(visible)
}

/// What computing the visible set costs a query once the principal bitmaps are cached.
fn visible_cost(
    reader: &Snapshot<'_>,
    view: &VersionView,
    filter: &Filter,
) -> Result<VisibleCost, AnnError> {
    let principals = mean_micros(|| reader.visible(view, &access(filter)))?;
    let unrestricted = match filter.ids {
        None => Some(mean_micros(|| reader.visible(view, &Access::Unrestricted))?),
        Some(_) => None,
    };
    Ok(VisibleCost {
        filter: filter.name.clone(),
        principals_us: principals,
        unrestricted_us: unrestricted,
    })
}

fn mean_micros<T, E>(mut f: impl FnMut() -> Result<T, E>) -> Result<f64, E> {
    let started = Instant::now();
    for _ in 0..VISIBLE_REPEATS {
        std::hint::black_box(f()?);
    }
    Ok(started.elapsed().as_secs_f64() * 1e6 / f64::from(VISIBLE_REPEATS))
}

/// The queries of one filter with their ground truth.
struct Queries<'d> {
    /// The dataset's queries, prepared for the index's metric.
    prepared: &'d [QueryVector],
    filter: &'d Filter,
    /// What compressed segments read their rows through.
    reader: &'d Snapshot<'d>,
}

impl Queries<'_> {
    fn warm_up(
        &self,
        view: &VersionView,
        visible: &RoaringBitmap,
        config: &AnnConfig,
        ef: usize,
    ) -> Result<(), AnnError> {
        for query in self.prepared.iter().take(WARM_UP) {
            std::hint::black_box(self.reader.search_children(
                view,
                query,
                options(config, ef),
                None,
                visible,
            )?);
        }
        Ok(())
    }

    /// One point: queries in order until all ran, or the time budget is spent after at
    /// least `min_queries`.
    fn measure(
        &self,
        view: &VersionView,
        visible: &RoaringBitmap,
        config: &AnnConfig,
        ef: usize,
    ) -> Result<SearchRecord, AnnError> {
        let load = load1();
        let mut tally = Tally::default();
        for (q, query) in self.prepared.iter().enumerate() {
            let started = Instant::now();
            let found =
                self.reader
                    .search_children(view, query, options(config, ef), None, visible)?;
            tally.spent += started.elapsed();
            tally.add(&found.neighbors, self.filter.truth.row(q), config.k);
            for path in &found.paths {
                *tally
                    .paths
                    .entry(format!("{path:?}").to_lowercase())
                    .or_default() += 1;
            }
            // One segment in the bench's store: the query's work goes to its one path.
            if let [path] = found.paths[..] {
                let work = tally
                    .work
                    .entry(format!("{path:?}").to_lowercase())
                    .or_default();
                work.distances += found.distances as f64;
                work.rescored += found.rescored as f64;
                work.lists += found.lists as f64;
            }
            if tally.spent >= config.time_budget && tally.queries >= config.min_queries {
                break;
            }
        }
        Ok(tally.record(&self.filter.name, ef, visible.len(), load))
    }
}

/// One query's search options.
fn options(config: &AnnConfig, ef: usize) -> SearchOptions {
    SearchOptions {
        k: config.k,
        ef: Some(ef),
        strategy: config.strategy,
    }
}

/// Running sums over the queries of one point.
#[derive(Default)]
struct Tally {
    queries: usize,
    spent: Duration,
    recall: f64,
    short: usize,
    returned: usize,
    paths: BTreeMap<String, usize>,
    /// Per path, sums over its queries (means once recorded).
    work: BTreeMap<String, PathWork>,
}

impl Tally {
    /// Scores one answer the kit's way: |returned top-k ∩ true top-k| / min(k, visible),
    /// where the true top-k lists fewer than k ids only when fewer are visible.
    fn add(&mut self, found: &[Neighbor], truth: &[i32], k: usize) {
        let truth: Vec<i64> = truth[..k]
            .iter()
            .filter(|&&id| id >= 0)
            .map(|&id| i64::from(id))
            .collect();
        let hits = found
            .iter()
            .take(k)
            .filter(|nb| truth.contains(&i64::from(nb.id)))
            .count();
        self.recall += hits as f64 / truth.len().max(1) as f64;
        self.short += usize::from(found.len() < k);
        self.returned += found.len();
        self.queries += 1;
    }

    fn record(self, filter: &str, ef: usize, visible: u64, load1: Option<f64>) -> SearchRecord {
        let n = self.queries.max(1) as f64;
        let seconds = self.spent.as_secs_f64();
        let mut work = self.work;
        for (path, w) in &mut work {
            let queries = self.paths.get(path).copied().unwrap_or(1).max(1) as f64;
            w.distances /= queries;
            w.rescored /= queries;
            w.lists /= queries;
        }
        SearchRecord {
            filter: filter.to_string(),
            ef: Some(ef),
            recall: self.recall / n,
            qps: self.queries as f64 / seconds.max(f64::MIN_POSITIVE),
            n_queries: self.queries,
            seconds,
            short_frac: self.short as f64 / n,
            mean_returned: self.returned as f64 / n,
            visible,
            paths: self.paths,
            work,
            load1,
        }
    }
}
