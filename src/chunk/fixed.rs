//! The fixed-size baseline: windows of `size` characters or tokens sharing `overlap`,
//! blind to structure, never inside a character (or a token). Markup (HTML tags) is not
//! counted, so a page's windows hold as much text as its Markdown's.

use super::layout::{trim, Layout};
use super::pieces::Span;
use crate::tokens::TokenCounter;

/// Windows over `range` of the layout's text of characters, or of the tokens of `tokens`,
/// those inside markup left out, trimmed; a window left empty or inside its neighbour is
/// dropped.
pub(crate) fn windows(
    layout: &Layout<'_>,
    range: Span,
    size: usize,
    overlap: usize,
    tokens: Option<&dyn TokenCounter>,
) -> Vec<Span> {
    let text = layout.text;
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
    let units: Vec<(usize, usize)> = units
        .into_iter()
        .filter(|&(start, _)| !layout.in_markup(start))
        .collect();
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
    use crate::chunk::layout::Builder;
    use crate::chunk::spec::SizeUnit;
    use crate::tokens::EstimateCounter;

    fn pieces(text: &str, size: usize, overlap: usize, unit: SizeUnit) -> Vec<&str> {
        let range = Span {
            start: 0,
            end: text.len(),
        };
        let tokens = unit
            .is_tokens()
            .then_some(&EstimateCounter as &dyn TokenCounter);
        windows(&Builder::new(text).build(), range, size, overlap, tokens)
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

    #[cfg(feature = "html")]
    #[test]
    fn markup_is_not_counted() {
        let html = "<p>one <b>two</b> three</p><p>four five</p>";
        let tree = crate::chunk::readers::read(html, crate::chunk::spec::SourceFormat::Html);
        let layout = crate::chunk::tree_layout::from_tree_cut(html, &tree, usize::MAX, None);
        let all = Span {
            start: 0,
            end: html.len(),
        };
        let in_chars: Vec<&str> = windows(&layout, all, 13, 0, None)
            .into_iter()
            .map(|s| &html[s.start..s.end])
            .collect();
        // 13 visible characters: "one two three", the tags inside the window not counted.
        assert_eq!(in_chars[0], "one <b>two</b> three");
        let in_tokens = windows(&layout, all, 3, 0, Some(&EstimateCounter));
        let first = in_tokens[0];
        assert_eq!(&html[first.start..first.end], "one <b>two</b> three");
    }
}
