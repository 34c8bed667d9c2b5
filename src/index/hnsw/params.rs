//! The graph's construction parameters.

/// Graph construction parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HnswParams {
    /// Links per node on upper layers (layer 0 has `2 * m`); at least 2.
    pub m: usize,
    /// Candidate list size while inserting: higher builds slower and a better graph.
    pub ef_construction: usize,
    /// Seed of the level draws.
    pub seed: u64,
}

impl Default for HnswParams {
    fn default() -> Self {
        HnswParams {
            m: 16,
            ef_construction: 200,
            seed: 0x5eed_f011_0000_0001,
        }
    }
}
