//! Vector search over flat arrays: distance kernels, the exact scan, the graph index and
//! the filtered-search planner. Knows nothing of storage: vectors come in as slices, a
//! visible set as a [`roaring::RoaringBitmap`] of local ids.

use serde::{Deserialize, Serialize};

/// How two vectors are compared. Scores are always "higher is better".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, bincode::Encode, bincode::Decode)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// Cosine similarity; vectors are L2-normalised on the way in, so the score is a dot product.
    Cosine,
    /// Inner product.
    Dot,
    /// Euclidean; the score is the negated squared distance.
    L2,
}
