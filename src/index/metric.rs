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

#[cfg(test)]
mod tests {
    use super::*;

    /// Index records store the metric as its variant index (`storage-format.md`):
    /// reordering the variants would change what old files mean. New variants go last.
    #[test]
    fn stored_variants_keep_their_bytes() {
        let bytes = |m: Metric| bincode::encode_to_vec(m, bincode::config::standard()).unwrap();
        assert_eq!(bytes(Metric::Cosine), [0]);
        assert_eq!(bytes(Metric::Dot), [1]);
        assert_eq!(bytes(Metric::L2), [2]);
    }
}
