//! The fixed-size baseline: windows of `size` characters or tokens sharing `overlap`,
//! blind to structure, never inside a character (or a token).

use super::layout::trim;
use super::pieces::Span;
use super::spec::Measure;

/// Windows over `text[range]` of characters, or of the tokens of `tokens`, trimmed; a window
/// left empty or inside its neighbour is dropped.
pub(crate) fn windows(
    text: &str,
    range: Span,
    size: usize,
    overlap: usize,
    tokens: Option<&dyn Measure>,
) -> Vec<Span> {
    let base = range.start;
    let slice = &text[range.start..range.end];
    // Units as (start, end) byte offsets; a window spans units [k, k + size). A token runs
    // to the next one's start (trimming drops the space between).
    let units: Vec<(usize, usize)> = match tokens {
        None => slice
            .char_indices()
            .map(|(i, c)| (base + i, base + i + c.len_utf8()))
            .collect(),
        Some(measure) => {
            let starts = measure.starts(slice);
            let ends = starts.iter().skip(1).copied().chain([slice.len()]);
            starts
                .iter()
                .zip(ends)
                .map(|(&s, e)| (base + s, base + e))
                .collect()
        }
    };
    let size = size.max(1);
    let step = size - overlap.min(size - 1);
    let mut out: Vec<Span> = Vec::new();
    let mut first = 0;
    while first < units.len() {
        let last = (first + size).min(units.len()) - 1;
        if let Some(w) = trim(text, units[first].0, units[last].1) {
            let prev = out.last().copied();
            if prev.is_none_or(|p| w.end > p.end) {
                // After trimming, the previous window may lie inside this one.
                if prev.is_some_and(|p| w.start <= p.start) {
                    out.pop();
                }
                out.push(w);
            }
        }
        if last + 1 == units.len() {
            break;
        }
        first += step;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::spec::{Estimate, SizeUnit};

    fn pieces(text: &str, size: usize, overlap: usize, unit: SizeUnit) -> Vec<&str> {
        let range = Span {
            start: 0,
            end: text.len(),
        };
        let tokens = unit.is_tokens().then_some(&Estimate as &dyn Measure);
        windows(text, range, size, overlap, tokens)
            .into_iter()
            .map(|s| &text[s.start..s.end])
            .collect()
    }

    #[test]
    fn char_windows_respect_multibyte_chars() {
        assert_eq!(
            pieces("héllo wörld", 4, 0, SizeUnit::Chars),
            vec!["héll", "o wö", "rld"]
        );
        assert_eq!(
            pieces("北京上海广州", 4, 2, SizeUnit::Chars),
            vec!["北京上海", "上海广州"]
        );
    }

    #[test]
    fn token_windows_end_on_tokens() {
        assert_eq!(
            pieces("Hello, big world!", 2, 1, SizeUnit::Tokens),
            vec!["Hello,", ", big", "big world", "world!"]
        );
    }

    #[test]
    fn whitespace_windows_are_skipped() {
        assert_eq!(
            pieces("ab      cd", 3, 0, SizeUnit::Chars),
            vec!["ab", "c", "d"]
        );
        assert!(pieces("   ", 2, 1, SizeUnit::Chars).is_empty());
    }
}
