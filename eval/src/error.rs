//! Why an evaluation could not run.

use crate::metrics::MetricError;
use crate::spec::SpecError;

/// Why an evaluation could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// A strategy spec was refused.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A plan spec was refused.
    #[error(transparent)]
    Plan(#[from] crate::plan::PlanError),
    /// A file that could not be read, or a JSON Lines record that is not valid.
    #[error(transparent)]
    Read(#[from] folio::input::InputError),
    /// Inputs that do not fit together (a gold span outside its document, say).
    #[error("{0}")]
    Invalid(String),
    /// The embedder settings were refused.
    #[error(transparent)]
    Embedder(#[from] folio::embed::HashConfigError),
    /// A strategy's store could not be created.
    #[error(transparent)]
    Open(#[from] folio::store::OpenError),
    /// Ingest into a strategy's store failed.
    #[error(transparent)]
    Write(#[from] folio::store::WriteError),
    /// A question's search failed.
    #[error(transparent)]
    Search(#[from] folio::store::ReadError),
    /// A search failed.
    #[error(transparent)]
    Query(#[from] folio::query::QueryError),
    /// A metric could not be computed.
    #[error(transparent)]
    Metric(#[from] MetricError),
    /// A replayed question does not say who asked it, and unrestricted access was not
    /// allowed ([`crate::VersionReplay::unrestricted`]).
    #[error("question `{query_id}` does not say who asked it (no logged request with `principals`): replay it unrestricted only when asked to")]
    NoPrincipals {
        /// The question's id.
        query_id: String,
    },
    /// A replayed question's logged filter does not parse.
    #[error("question `{query_id}`: its logged filter: {error}")]
    BadFilter {
        /// The question's id.
        query_id: String,
        /// Why the filter does not parse.
        error: folio::FilterError,
    },
    /// A chart could not be drawn.
    #[error("plot: {0}")]
    Plot(String),
    /// The questions could not be embedded.
    #[error(transparent)]
    Embed(#[from] folio::embed::EmbedError),
}
