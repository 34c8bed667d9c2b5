//! The request log's records and their review: which requests failed, and the online
//! metrics per version with their confidence intervals. Pure functions over records (no
//! storage): `storage/log/` keeps the records, `Store::log().select` and `Store::log().report` call
//! these.

pub mod record;
pub mod report;
pub mod select;
pub mod stats;

pub use record::{
    Annotation, Feedback, GoldEvidence, LogEntry, LoggedFusion, LoggedMode, LoggedQuery,
    LoggedRequest, Outcome, Rating, Verdict,
};
pub use report::{
    report, Comparison, GroupBy, GroupMetrics, LogReport, Rate, DEFAULT_FOLLOW_UP_SECS,
};
pub use select::{followed_up, Selection};
pub use stats::Estimate;

#[cfg(test)]
mod tests;
