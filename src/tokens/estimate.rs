//! A model-free token estimate, used for token budgets, token-sized chunks and the
//! evaluation's input-token counts.
//!
//! A token is one of: a CJK character (Han, kana, Hangul: sub-word models spend about one
//! token each), a run of up to [`WORD_PIECE`] letters or digits (longer words cost more
//! tokens, as with word-piece vocabularies), or one other non-space character
//! (punctuation). On English prose this gives about 4.2 characters per token, close to
//! BERT and GPT tokenizers.

/// Letters or digits that one token covers at most.
pub const WORD_PIECE: usize = 8;

/// Whether `c` is written without spaces between words (Han, kana, Hangul, CJK punctuation).
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3000..=0x303F   // CJK symbols and punctuation
        | 0x3040..=0x30FF // Hiragana, Katakana
        | 0x3400..=0x4DBF // CJK extension A
        | 0x4E00..=0x9FFF // CJK unified ideographs
        | 0xAC00..=0xD7AF // Hangul syllables
        | 0xF900..=0xFAFF // CJK compatibility ideographs
        | 0xFF00..=0xFFEF // Half- and full-width forms
        | 0x20000..=0x2FA1F)
}

/// The byte spans of the tokens of `text`, in order. Spans never split a character.
pub fn spans(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut chars = text.char_indices().peekable();
    std::iter::from_fn(move || loop {
        let (start, c) = chars.next()?;
        if c.is_whitespace() {
            continue;
        }
        if c.is_alphanumeric() && !is_cjk(c) {
            let mut end = start + c.len_utf8();
            let mut run = 1;
            while run < WORD_PIECE {
                match chars.peek() {
                    Some(&(i, d)) if d.is_alphanumeric() && !is_cjk(d) => {
                        end = i + d.len_utf8();
                        run += 1;
                        chars.next();
                    }
                    _ => break,
                }
            }
            return Some((start, end));
        }
        return Some((start, start + c.len_utf8()));
    })
}

/// The estimated token count of `text`.
pub fn count(text: &str) -> usize {
    spans(text).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words_punctuation_and_cjk() {
        assert_eq!(count(""), 0);
        assert_eq!(count("Hello, world!"), 4);
        assert_eq!(count("internationalisation"), 3); // 20 letters = 8 + 8 + 4
        assert_eq!(count("梵語文法"), 4);
        assert_eq!(count("a 梵b"), 3);
    }

    #[test]
    fn spans_lie_on_char_boundaries() {
        let text = "né à Zürich, 北京。ok";
        for (s, e) in spans(text) {
            assert!(text.is_char_boundary(s) && text.is_char_boundary(e) && s < e);
        }
        let joined: String = spans(text).map(|(s, e)| &text[s..e]).collect();
        let expected: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        assert_eq!(joined, expected);
    }
}
