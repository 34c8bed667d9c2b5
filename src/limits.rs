//! The values folio accepts for the parameters it stores or searches with, and the error
//! that names a value outside them. Each bound is what the file's decoders (or an
//! allocation made up front) can take. They are checked where values enter, in the
//! library's entry points and on the command line, so no accepted value can leave a store
//! that later fails to open.

use std::fmt::Display;
use std::ops::RangeInclusive;

/// Links per graph node (`m`): the graph decoder refuses other widths.
pub const GRAPH_M: RangeInclusive<u32> = 2..=1024;

/// The candidate list of graph construction (`ef_construction`), allocated per insertion.
pub const EF_CONSTRUCTION: RangeInclusive<u32> = 1..=65_536;

/// Vector dimensions: the graph decoder refuses other dimensions.
pub const DIMENSION: RangeInclusive<u32> = 1..=65_536;

/// Chunk and parent sizes (characters or tokens): at most the largest record a store holds.
pub const CHUNK_SIZE: RangeInclusive<usize> = 1..=1 << 30;

/// Neighbouring children on each side of a window: child numbers are 32-bit.
pub const WINDOW: RangeInclusive<usize> = 0..=u32::MAX as usize;

/// Candidates a search of a compressed index re-scores on f32 rows read from the file (an
/// index's setting, or a request's): one read each.
pub const RESCORE: RangeInclusive<usize> = 1..=65_536;

/// Reciprocal rank fusion's `k` (`1 / (k + rank)` stays a positive number at any rank).
pub const RRF_K: RangeInclusive<u32> = 0..=1_000_000;

/// The dense leg's weight in a weighted fusion (the lexical leg's is `1 - w`).
pub const DENSE_WEIGHT: RangeInclusive<f32> = 0.0..=1.0;

/// Children one leg of a hybrid search is asked for: a top list allocated up front.
pub const LEG_DEPTH: RangeInclusive<usize> = 1..=65_536;

/// Units a rerank stage scores: the earlier stages gather that many, the reranker reads them.
pub const RERANK_TOP: RangeInclusive<usize> = 1..=65_536;

/// A parameter outside the values folio accepts; nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name} {value} is out of range (allowed: {allowed})")]
#[non_exhaustive]
pub struct InvalidParameter {
    /// The parameter as the library names it: `m`, `ef_construction`, `dimension`,
    /// `chunk size`, `overlap`, `window`, `dedup_threshold`, ...
    pub name: &'static str,
    /// The value given.
    pub value: String,
    /// The values accepted, such as `2..=1024`.
    pub allowed: String,
}

impl InvalidParameter {
    /// `value` of parameter `name` is refused; `allowed` says what would be accepted.
    pub fn new(name: &'static str, value: impl Display, allowed: impl Display) -> Self {
        InvalidParameter {
            name,
            value: value.to_string(),
            allowed: allowed.to_string(),
        }
    }
}

/// `value` when it lies in `allowed`, else the error naming `name`.
pub fn check<T: PartialOrd + Display>(
    name: &'static str,
    value: T,
    allowed: &RangeInclusive<T>,
) -> Result<T, InvalidParameter> {
    if allowed.contains(&value) {
        Ok(value)
    } else {
        Err(InvalidParameter::new(
            name,
            &value,
            format_args!("{}..={}", allowed.start(), allowed.end()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_names_the_parameter_and_the_range() {
        assert_eq!(check("m", 16, &GRAPH_M), Ok(16));
        let e = check("m", 2000, &GRAPH_M).unwrap_err();
        assert_eq!((e.name, e.value.as_str()), ("m", "2000"));
        assert_eq!(e.allowed, "2..=1024");
        assert!(check("m", 1, &GRAPH_M).is_err());
    }
}
