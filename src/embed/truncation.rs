//! Truncation is never silent: every chunk is counted in the embedder's own tokens at index
//! build, and what is longer than the model reads is split, reported or refused.

use std::str::FromStr;

/// What happens to a chunk longer than the model reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Truncation {
    /// Cut the chunk into pieces the model reads whole (the default).
    Split,
    /// Embed it anyway (the model reads its head) and report it.
    Warn,
    /// Refuse the commit; nothing is written.
    Refuse,
}

/// What writes do with chunks longer than the model reads, unless told otherwise: split them,
/// so that no chunk is embedded truncated.
pub const DEFAULT_TRUNCATION: Truncation = Truncation::Split;

/// [`DEFAULT_TRUNCATION`].
impl Default for Truncation {
    fn default() -> Self {
        DEFAULT_TRUNCATION
    }
}

impl FromStr for Truncation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "split" => Ok(Truncation::Split),
            "warn" | "truncate" => Ok(Truncation::Warn),
            "refuse" => Ok(Truncation::Refuse),
            _ => Err(format!("`{s}`: expected split, warn (truncate) or refuse")),
        }
    }
}

/// Token counts of a set of chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct TokenStats {
    /// Chunks counted.
    pub chunks: usize,
    /// The fewest tokens of a chunk.
    pub min: usize,
    /// The median.
    pub p50: usize,
    /// The 95th percentile.
    pub p95: usize,
    /// The most tokens of a chunk.
    pub max: usize,
}

impl TokenStats {
    /// The statistics of `counts` (sorted in place).
    pub fn of(counts: &mut [usize]) -> TokenStats {
        counts.sort_unstable();
        let at = |q: f64| {
            let rank = ((counts.len() as f64 * q).ceil() as usize).max(1);
            counts.get(rank - 1).copied().unwrap_or(0)
        };
        TokenStats {
            chunks: counts.len(),
            min: counts.first().copied().unwrap_or(0),
            p50: at(0.5),
            p95: at(0.95),
            max: counts.last().copied().unwrap_or(0),
        }
    }
}

/// One chunk longer than the model reads.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Oversized {
    /// The document.
    pub doc_id: String,
    /// The chunk's position among the document's children (before any split).
    pub chunk: usize,
    /// Its tokens as the model sees them (prefix and special tokens included).
    pub tokens: usize,
}

/// The token counts of one index build (or of what an index holds, in `folio stats`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TruncationReport {
    /// The index built or counted.
    pub index: String,
    /// Its embedder's name.
    pub embedder: String,
    /// The model's input limit in tokens.
    pub max_tokens: usize,
    /// What was done with chunks above it.
    pub setting: Truncation,
    /// Over every chunk as cut by the chunker (before any split).
    pub stats: TokenStats,
    /// Every chunk above `max_tokens`.
    pub over: Vec<Oversized>,
    /// Pieces the oversized chunks were split into (0 unless the setting is `split`).
    pub split_into: usize,
}

impl std::fmt::Display for TruncationReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.stats;
        write!(
            f,
            "index `{}`, {} tokens: {} chunks, min {} / p50 {} / p95 {} / max {}; {} above the model's {}",
            self.index, self.embedder, s.chunks, s.min, s.p50, s.p95, s.max, self.over.len(), self.max_tokens
        )?;
        match (self.over.is_empty(), self.setting) {
            (true, _) => Ok(()),
            (false, Truncation::Split) if self.split_into > 0 => {
                write!(f, " (split into {} pieces)", self.split_into)
            }
            (false, Truncation::Refuse) => write!(f, " (refused)"),
            (false, _) => write!(
                f,
                " (TRUNCATED: the model reads only their first {} tokens)",
                self.max_tokens
            ),
        }
    }
}

/// Splits the byte span `[start, end)` of `text` into pieces of at most `budget` tokens, at
/// token starts (`starts`: the token starts of `text[start..end]`, relative to `start`),
/// moving a cut back to the start of its word when the word begins in the piece's last
/// quarter (a word-piece can start inside a word). Pieces are contiguous and cover the span.
pub(crate) fn split_span(
    text: &str,
    start: usize,
    end: usize,
    starts: &[usize],
    budget: usize,
) -> Vec<(usize, usize)> {
    let budget = budget.max(1);
    let pieces = starts.len().div_ceil(budget).max(1);
    // Even pieces: a last piece of a few tokens would embed poorly.
    let per = starts.len().div_ceil(pieces).max(1);
    let word_start = |k: usize| {
        let at = start + starts[k];
        text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric())
    };
    let mut out = Vec::with_capacity(pieces);
    let mut from = start;
    let mut first = 0;
    let mut k = per;
    while k < starts.len() {
        let back = (k - per / 4..=k)
            .rev()
            .find(|&j| j > first && word_start(j));
        let cut_at = back.unwrap_or(k);
        let cut = start + starts[cut_at];
        if cut > from && cut < end {
            out.push((from, cut));
            from = cut;
            first = cut_at;
        }
        k = cut_at + per;
    }
    out.push((from, end));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn stats_are_nearest_rank() {
        let mut counts = vec![5, 1, 3, 2, 4];
        let s = TokenStats::of(&mut counts);
        assert_eq!((s.chunks, s.min, s.p50, s.p95, s.max), (5, 1, 3, 5, 5));
        assert_eq!(TokenStats::of(&mut []), TokenStats::default());
        assert_eq!("truncate".parse(), Ok(Truncation::Warn));
        assert!("cut".parse::<Truncation>().is_err());
    }

    proptest! {
        #[test]
        fn split_pieces_fit_and_cover(words in proptest::collection::vec("[a-z]{1,6}", 1..80), budget in 1usize..20) {
            let text = words.join(" ");
            let starts: Vec<usize> = crate::tokens::spans(&text).map(|(s, _)| s).collect();
            let pieces = split_span(&text, 0, text.len(), &starts, budget);
            prop_assert_eq!(pieces[0].0, 0);
            prop_assert_eq!(pieces[pieces.len() - 1].1, text.len());
            for w in pieces.windows(2) {
                prop_assert_eq!(w[0].1, w[1].0);
            }
            for (s, e) in pieces {
                prop_assert!(s < e);
                prop_assert!(crate::tokens::count(&text[s..e]) <= budget);
            }
        }
    }
}
