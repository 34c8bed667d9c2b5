//! BM25's parameters and the part of a term's score that depends on the child: the
//! search scores with them (`bm25.rs`), and a segment bounds its blocks with them
//! (`segment.rs`).

/// BM25's term-frequency saturation: Lucene's default.
pub const K1: f64 = 1.2;
/// BM25's length normalisation (0: none, 1: full): Lucene's default.
pub const B: f64 = 0.75;

/// The part of a term's score that depends on the child, `tf / (tf + K1 * norm)`: the
/// score is `idf * (K1 + 1)` times it. At a mean length `average_length` above the
/// `reference` a saturation was computed at, it is at most that saturation times
/// `average_length / reference` (the length's share of the denominator shrinks by that
/// ratio, the rest by less); below, at most that saturation.
pub(super) fn saturation(frequency: u32, length: u32, average_length: f64) -> f64 {
    let frequency = f64::from(frequency);
    let norm = 1.0 - B + B * f64::from(length) / average_length;
    frequency / (frequency + K1 * norm)
}
