//! The metric vocabulary shared by every part of the index (and stored in index records).

use serde::{Deserialize, Serialize};

/// How two vectors are compared. Scores are always "higher is better".
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    bincode::Encode,
    bincode::Decode,
)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// Cosine similarity; vectors are L2-normalised on the way in, so the score is a dot product.
    Cosine,
    /// Inner product.
    Dot,
    /// Euclidean; the score is the negated squared distance.
    L2,
}
