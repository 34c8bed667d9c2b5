//! The graph's construction parameters.

/// Links per node on upper layers, by default (layer 0 keeps twice as many).
pub const DEFAULT_M: u32 = 16;

/// The candidate list of graph construction, by default.
pub const DEFAULT_EF_CONSTRUCTION: u32 = 200;

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

/// [`DEFAULT_M`] and [`DEFAULT_EF_CONSTRUCTION`].
impl Default for HnswParams {
    fn default() -> Self {
        HnswParams {
            m: DEFAULT_M as usize,
            ef_construction: DEFAULT_EF_CONSTRUCTION as usize,
            seed: 0x5eed_f011_0000_0001,
        }
    }
}
