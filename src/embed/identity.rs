//! Which embedder made an index's vectors: recorded with the index, compared at open.

use crate::embed::Embedder;
use crate::index::Metric;

/// Who made an index's vectors: a store refuses to mix vectors of different embedders.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, bincode::Encode, bincode::Decode)]
pub struct EmbedderIdentity {
    /// [`Embedder::name`](crate::Embedder::name).
    pub name: String,
    /// [`Embedder::fingerprint`](crate::Embedder::fingerprint).
    pub fingerprint: String,
    /// [`Embedder::dimension`](crate::Embedder::dimension).
    pub dimension: u32,
    /// [`Embedder::metric`](crate::Embedder::metric).
    pub metric: Metric,
}

impl std::fmt::Display for EmbedderIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({} dims, {:?}, {})",
            self.name, self.dimension, self.metric, self.fingerprint
        )
    }
}

pub(crate) fn identity_of(embedder: &dyn Embedder) -> EmbedderIdentity {
    EmbedderIdentity {
        name: embedder.name().to_string(),
        fingerprint: embedder.fingerprint(),
        dimension: embedder.dimension() as u32,
        metric: embedder.metric(),
    }
}
