//! A dataset folder of the kit: `meta.json`, `base.fvecs`, `query.fvecs`,
//! `filters/<name>.u32` and `gt/<name>.ivecs`, loaded and cross-checked.

use std::path::Path;

use serde::Deserialize;

use super::error::AnnError;
use super::files::{read_fvecs, read_ivecs, read_u32, Matrix};
use folio::index::Metric;

/// The filter under which every base vector is visible; it has no id file.
pub(crate) const NONE: &str = "none";

/// The parts of `meta.json` the benchmark uses.
#[derive(Debug, Deserialize)]
struct Meta {
    name: String,
    metric: String,
    n: usize,
    dim: usize,
    filters: Vec<MetaFilter>,
}

#[derive(Debug, Deserialize)]
struct MetaFilter {
    name: String,
}

/// Base vectors, queries, and the filters with their exact ground truth.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// The kit's dataset name.
    pub name: String,
    /// How vectors compare.
    pub metric: Metric,
    /// The base vectors (none once a reused store was checked against them).
    pub base: Matrix<f32>,
    /// How many base vectors the dataset has.
    pub base_rows: usize,
    /// The query vectors.
    pub queries: Matrix<f32>,
    /// The filters, `none` first.
    pub filters: Vec<Filter>,
}

/// One visible set and the true neighbours of every query within it.
#[derive(Debug, Clone)]
pub struct Filter {
    /// The filter's name (`none` or a file stem such as `random_0.01`).
    pub name: String,
    /// The visible base ids; `None` for filter `none` (all visible).
    pub ids: Option<Vec<u32>>,
    /// Per query, the nearest visible base ids, best first, padded with -1.
    pub truth: Matrix<i32>,
}

impl Filter {
    /// How many base vectors the filter lets through.
    pub fn size(&self, n: usize) -> usize {
        self.ids.as_ref().map_or(n, Vec::len)
    }
}

impl Dataset {
    /// Loads the folder `dir`: the filters named in `filters` (all of `meta.json`'s when
    /// `None`) and the first `queries` queries (all when `None`).
    pub fn load(
        dir: &Path,
        filters: Option<&[String]>,
        queries: Option<usize>,
    ) -> Result<Dataset, AnnError> {
        let meta = read_meta(&dir.join("meta.json"))?;
        let metric = parse_metric(&meta.metric)?;
        let base = read_fvecs(&dir.join("base.fvecs"))?;
        if (base.rows(), base.dim()) != (meta.n, meta.dim) {
            return Err(AnnError::Dataset(format!(
                "base.fvecs holds {} x {}, meta.json says {} x {}",
                base.rows(),
                base.dim(),
                meta.n,
                meta.dim
            )));
        }
        let mut query_rows = read_fvecs(&dir.join("query.fvecs"))?;
        if query_rows.dim() != base.dim() {
            return Err(AnnError::Dataset(format!(
                "queries have dimension {}, base vectors {}",
                query_rows.dim(),
                base.dim()
            )));
        }
        query_rows.truncate(queries.unwrap_or(usize::MAX));
        let filters = select(&meta, filters)?
            .into_iter()
            .map(|name| load_filter(dir, name, base.rows(), query_rows.rows()))
            .collect::<Result<_, _>>()?;
        Ok(Dataset {
            name: meta.name,
            metric,
            base_rows: base.rows(),
            base,
            queries: query_rows,
            filters,
        })
    }

    /// Refuses a `k` the ground truth cannot score.
    pub(crate) fn check_k(&self, k: usize) -> Result<(), AnnError> {
        match self.filters.iter().find(|f| f.truth.dim() < k) {
            Some(f) => Err(AnnError::Dataset(format!(
                "gt/{}.ivecs holds {} neighbours per query, fewer than k = {k}",
                f.name,
                f.truth.dim()
            ))),
            None => Ok(()),
        }
    }
}

fn read_meta(path: &Path) -> Result<Meta, AnnError> {
    let text = std::fs::read(path).map_err(|source| AnnError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_slice(&text).map_err(|source| AnnError::Meta {
        path: path.to_path_buf(),
        source,
    })
}

/// The kit's metrics: `l2` (squared Euclidean) and `ip` (inner product).
fn parse_metric(name: &str) -> Result<Metric, AnnError> {
    match name {
        "l2" => Ok(Metric::L2),
        "ip" => Ok(Metric::Dot),
        other => Err(AnnError::Dataset(format!(
            "metric `{other}` (expected l2 or ip)"
        ))),
    }
}

/// The wanted filter names, each checked against `meta.json`, in the order asked.
fn select<'m>(meta: &'m Meta, wanted: Option<&'m [String]>) -> Result<Vec<&'m str>, AnnError> {
    let known: Vec<&str> = meta.filters.iter().map(|f| f.name.as_str()).collect();
    let Some(wanted) = wanted else {
        return Ok(known);
    };
    wanted
        .iter()
        .map(|name| {
            if known.contains(&name.as_str()) {
                Ok(name.as_str())
            } else {
                Err(AnnError::UnknownFilter {
                    name: name.clone(),
                    available: known.join(", "),
                })
            }
        })
        .collect()
}

fn load_filter(dir: &Path, name: &str, n: usize, queries: usize) -> Result<Filter, AnnError> {
    let ids = if name == NONE {
        None
    } else {
        let ids = read_u32(&dir.join("filters").join(format!("{name}.u32")))?;
        if let Some(bad) = ids.iter().find(|&&id| id as usize >= n) {
            return Err(AnnError::Dataset(format!(
                "filter {name} names id {bad}, but there are {n} base vectors"
            )));
        }
        Some(ids)
    };
    let mut truth = read_ivecs(&dir.join("gt").join(format!("{name}.ivecs")))?;
    if truth.rows() < queries {
        return Err(AnnError::Dataset(format!(
            "gt/{name}.ivecs has {} rows for {queries} queries",
            truth.rows()
        )));
    }
    truth.truncate(queries);
    Ok(Filter {
        name: name.to_string(),
        ids,
        truth,
    })
}
