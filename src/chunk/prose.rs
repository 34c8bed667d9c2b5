//! Bounds inside running text: paragraphs, lines, sentences, clauses and words, for Latin
//! and CJK scripts alike.

use super::layout::{Builder, Strength};

/// What a line break means in a text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Breaks {
    pub newline: Strength,
    pub blank_line: Strength,
}

/// Plain text: a blank line ends a paragraph, a single newline ends a line.
pub(crate) const PLAIN: Breaks = Breaks {
    newline: Strength::Line,
    blank_line: Strength::Block,
};

/// Markdown: blocks come from the parser; a newline inside a paragraph is a soft break.
pub(crate) const MARKDOWN: Breaks = Breaks {
    newline: Strength::Word,
    blank_line: Strength::Word,
};

/// Source code: every line break is a line bound (statements come from the parser).
pub(crate) const CODE: Breaks = Breaks {
    newline: Strength::Line,
    blank_line: Strength::Line,
};

/// Abbreviations whose period does not end a sentence (compared lowercased).
const ABBREVIATIONS: &[&str] = &[
    "al", "approx", "cf", "dr", "e.g", "fig", "i.e", "inc", "jr", "ltd", "mr", "mrs", "ms", "no",
    "prof", "sr", "st", "vol", "vs",
];

/// Closing quotes and brackets that may follow a sentence end ("He left." she said).
pub(crate) fn is_closer(c: char) -> bool {
    matches!(
        c,
        '"' | '\''
            | ')'
            | ']'
            | '}'
            | '*'
            | '_'
            | '”'
            | '’'
            | '»'
            | '」'
            | '』'
            | '）'
            | '】'
            | '》'
            | '〉'
    )
}

/// CJK punctuation that ends a sentence or a clause with no space after it.
fn cjk_mark(c: char) -> Option<Strength> {
    match c {
        '。' | '！' | '？' | '；' => Some(Strength::Sentence),
        '，' | '、' | '：' => Some(Strength::Clause),
        _ => None,
    }
}

/// Adds the bounds found in `text[from..to]` to `out`.
pub(crate) fn scan(text: &str, from: usize, to: usize, breaks: Breaks, out: &mut Builder<'_>) {
    let s = &text[from..to];
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c.is_whitespace() {
            let mut newlines = usize::from(c == '\n');
            while let Some(&(_, d)) = chars.peek().filter(|(_, d)| d.is_whitespace()) {
                newlines += usize::from(d == '\n');
                chars.next();
            }
            let gap = match newlines {
                0 => Strength::Word,
                1 => breaks.newline,
                _ => breaks.blank_line,
            };
            out.cut(from + i, gap.max(ending(&s[..i])));
            // A line ending in a colon introduces what follows ("It must include:" and a
            // list): the break after it is no stronger than a line break.
            let before = s[..i].trim_end_matches(is_closer);
            if newlines > 0 && (before.ends_with(':') || before.ends_with('：')) {
                out.cap(from + i, Strength::Line);
            }
        } else if let Some(strength) = cjk_mark(c) {
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = chars.peek().filter(|(_, d)| is_closer(*d)) {
                end = j + d.len_utf8();
                chars.next();
            }
            // Before whitespace, the whitespace branch records the bound.
            if chars.peek().is_some_and(|(_, d)| !d.is_whitespace()) {
                out.cut(from + end, strength);
            }
        }
    }
}

/// The strength of a bound right after `before`: a sentence end, a clause end, or a word.
fn ending(before: &str) -> Strength {
    let trimmed = before.trim_end_matches(is_closer);
    match trimmed.chars().next_back() {
        Some('.') if !is_abbreviation(&trimmed[..trimmed.len() - 1]) => Strength::Sentence,
        Some('!' | '?' | '…' | '。' | '！' | '？' | '；') => Strength::Sentence,
        Some(',' | ';' | ':' | '，' | '、' | '：') => Strength::Clause,
        _ => Strength::Word,
    }
}

/// Whether the word before a period is an abbreviation or an initial ("Mr.", "e.g.", "J.").
fn is_abbreviation(before: &str) -> bool {
    let word = before.rsplit(char::is_whitespace).next().unwrap_or("");
    let word = word.trim_start_matches(|c: char| !c.is_alphanumeric());
    let mut letters = word.chars();
    match (letters.next(), letters.next()) {
        (None, _) => false,
        (Some(c), None) => c.is_alphabetic(),
        _ => word.contains('.') || ABBREVIATIONS.iter().any(|a| a.eq_ignore_ascii_case(word)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(text: &str, breaks: Breaks) -> Vec<(String, Strength)> {
        let mut b = Builder::new(text);
        scan(text, 0, text.len(), breaks, &mut b);
        let layout = b.build();
        let all = crate::chunk::Span {
            start: 0,
            end: text.len(),
        };
        layout
            .candidates(all, usize::MAX, Strength::Char)
            .iter()
            .map(|c| (text[..c.end].to_string(), c.strength))
            .collect()
    }

    fn strength_after(text: &str, prefix: &str, breaks: Breaks) -> Strength {
        let found = bounds(text, breaks)
            .into_iter()
            .find(|(before, _)| before == prefix);
        found
            .map(|(_, s)| s)
            .unwrap_or_else(|| panic!("no bound after {prefix:?} in {text:?}"))
    }

    #[test]
    fn finds_sentences_but_not_abbreviations() {
        let text = "Mr. Smith met Dr. J. Doe. They spoke, e.g. about rain! Fine? in 2017. a loss";
        let got = bounds(text, PLAIN);
        let sentences: Vec<&str> = got
            .iter()
            .filter(|(_, s)| *s == Strength::Sentence)
            .map(|(b, _)| b.rsplit(' ').next().unwrap_or(""))
            .collect();
        assert_eq!(sentences, vec!["Doe.", "rain!", "Fine?", "2017."]);
        assert_eq!(
            strength_after(text, "Mr. Smith met Dr. J. Doe. They spoke,", PLAIN),
            Strength::Clause
        );
    }

    #[test]
    fn paragraphs_lines_and_closers() {
        let text = "One \"two.\"\nThree\n\n  Four";
        assert_eq!(strength_after(text, "One \"two.\"", PLAIN), Strength::Line);
        assert_eq!(
            strength_after(text, "One \"two.\"\nThree", PLAIN),
            Strength::Block
        );
        assert_eq!(
            strength_after(text, "One \"two.\"", MARKDOWN),
            Strength::Sentence
        );
        assert_eq!(
            strength_after(text, "One \"two.\"\nThree", MARKDOWN),
            Strength::Word
        );
        assert_eq!(
            strength_after("wiki text . Next", "wiki text .", PLAIN),
            Strength::Sentence
        );
    }

    #[test]
    fn a_colon_at_a_line_end_weakens_the_break() {
        let text = "Intro.\n\nIt must include:\n\n- a";
        assert_eq!(strength_after(text, "Intro.", PLAIN), Strength::Block);
        assert_eq!(
            strength_after(text, "Intro.\n\nIt must include:", PLAIN),
            Strength::Line
        );
    }

    #[test]
    fn cjk_marks_need_no_space() {
        let text = "北京是首都。上海很大，人口多「很多。」然后";
        let got = bounds(text, PLAIN);
        let kinds: Vec<(&str, Strength)> = got.iter().map(|(b, s)| (b.as_str(), *s)).collect();
        assert_eq!(
            kinds,
            vec![
                ("北京是首都。", Strength::Sentence),
                ("北京是首都。上海很大，", Strength::Clause),
                ("北京是首都。上海很大，人口多「很多。」", Strength::Sentence),
            ]
        );
    }
}
