//! A query vector prepared once for the metric every segment compares it by.

use super::distance::normalize;
use super::metric::Metric;

/// A query vector as every segment compares it: normalised, for a cosine index, once.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryVector {
    values: Vec<f32>,
    metric: Metric,
}

/// A cosine query of length zero: it has no direction to compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the query vector is zero: a cosine index cannot compare it")]
pub struct ZeroQuery;

impl QueryVector {
    /// `values` as compared under `metric` (unit length for [`Metric::Cosine`]).
    pub fn new(mut values: Vec<f32>, metric: Metric) -> Result<Self, ZeroQuery> {
        if metric == Metric::Cosine && !normalize(&mut values) {
            return Err(ZeroQuery);
        }
        Ok(QueryVector { values, metric })
    }

    /// The values, as compared.
    pub fn as_slice(&self) -> &[f32] {
        &self.values
    }

    /// The metric the values were prepared for.
    pub fn metric(&self) -> Metric {
        self.metric
    }
}
