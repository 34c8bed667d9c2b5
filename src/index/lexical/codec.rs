//! The persisted form of a [`LexicalSegment`]: little-endian, versioned by its first byte.
//!
//! Layout version 1, in order (`n` is the number of children, `m` a term's):
//!
//! | bytes | field |
//! |---|---|
//! | 1 | layout version (1) |
//! | 4 | `C`, byte length of the children bitmap (u32) |
//! | `C` | the segment's children: roaring's portable serialization |
//! | 4 · `n` | each child's length in terms (u32), in ascending child order |
//! | 4 | `T`, the number of terms (u32) |
//! | per term | its record, terms in strictly ascending bytewise order |
//!
//! A term's record:
//!
//! | bytes | field |
//! |---|---|
//! | 1 | `L`, the term's byte length (1..=255) |
//! | `L` | the term, UTF-8 |
//! | 4 | `P`, byte length of the posting bitmap (u32) |
//! | `P` | the children holding the term (roaring; not empty, all children of the segment) |
//! | 1 | `W`, the bytes of one frequency: 1, 2 or 4, the fewest that hold the largest |
//! | `W` · `m` | the term's frequency in each of its children (each at least 1), in ascending child order |
//!
//! Each child's length is the sum of its terms' frequencies; the decoder checks it, so a
//! decoded segment is one [`LexicalSegment::build`] could have made. Nothing follows the
//! last term. The bounds MaxScore uses are recomputed, not stored.

use roaring::RoaringBitmap;

use super::analyzer::MAX_TERM_BYTES;
use super::segment::LexicalSegment;

/// The layout [`LexicalSegment::to_bytes`] writes.
const LAYOUT_VERSION: u8 = 1;

/// Why bytes are not a valid [`LexicalSegment`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LexicalDecodeError {
    /// A layout version this build does not read.
    #[error("unsupported lexical segment layout version {0}")]
    UnsupportedVersion(u8),
    /// The bytes end inside the named field.
    #[error("lexical segment truncated in {0}")]
    Truncated(&'static str),
    /// A bitmap is not a valid roaring serialization.
    #[error("lexical segment: invalid bitmap in {0}")]
    Bitmap(&'static str),
    /// Term number `index` is empty, too long, not UTF-8, or not after the term before it.
    #[error("lexical segment: term {index} is invalid or out of order")]
    Term {
        /// The term's position in the dictionary.
        index: u32,
    },
    /// Term number `index` has no children, or one outside the segment.
    #[error("lexical segment: term {index} has no children or one outside the segment")]
    Postings {
        /// The term's position in the dictionary.
        index: u32,
    },
    /// Term number `index` has a frequency width other than the fewest bytes holding its
    /// largest frequency, or a zero frequency.
    #[error("lexical segment: term {index} has invalid frequencies")]
    Frequencies {
        /// The term's position in the dictionary.
        index: u32,
    },
    /// A child's stored length is not the sum of its terms' frequencies.
    #[error("lexical segment: child {child}'s length is not its number of terms")]
    Length {
        /// The child number.
        child: u32,
    },
    /// Bytes follow the last term.
    #[error("lexical segment: {0} bytes after the last term")]
    TrailingBytes(usize),
}

impl LexicalSegment {
    /// The segment's bytes, in the layout documented in this module (version 1).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![LAYOUT_VERSION];
        put_bitmap(&mut out, &self.children);
        for &length in self.lengths.iter() {
            out.extend_from_slice(&length.to_le_bytes());
        }
        out.extend_from_slice(&(self.term_count() as u32).to_le_bytes());
        for i in 0..self.term_count() {
            // Every term of a segment has its bytes and postings (built so, or checked).
            let (Some(term), Some(postings)) = (self.term(i), self.postings_at(i)) else {
                continue;
            };
            // Terms fit: the analyzer drops longer ones, the decoder refuses them.
            out.push(term.len() as u8);
            out.extend_from_slice(term);
            let holders: RoaringBitmap = postings.ids.iter().copied().collect();
            put_bitmap(&mut out, &holders);
            let max = postings.frequencies.iter().copied().max().unwrap_or(0);
            let width = frequency_width(max);
            out.push(width as u8);
            for frequency in postings.frequencies {
                out.extend_from_slice(&frequency.to_le_bytes()[..width]);
            }
        }
        out
    }

    /// Parses and checks [`LexicalSegment::to_bytes`] output. Never panics, whatever the
    /// bytes; allocation is bounded by their length.
    pub fn from_bytes(bytes: &[u8]) -> Result<LexicalSegment, LexicalDecodeError> {
        let mut reader = Reader { rest: bytes };
        let version = reader.take(1, "the layout version")?[0];
        if version != LAYOUT_VERSION {
            return Err(LexicalDecodeError::UnsupportedVersion(version));
        }
        let children = reader.bitmap("the children")?;
        let n = children.len() as usize;
        // Checked before allocating: n is at most what the bytes hold.
        let lengths: Vec<u32> = reader
            .take(n.saturating_mul(4), "the lengths")?
            .chunks_exact(4)
            .map(le_u32)
            .collect();
        let term_count = reader.u32("the term count")?;
        let mut terms = Vec::new();
        let mut previous: Option<&str> = None;
        for index in 0..term_count {
            let term = reader.term(index, previous)?;
            previous = Some(term);
            let holders = reader.bitmap("a posting bitmap")?;
            if holders.is_empty() || !holders.is_subset(&children) {
                return Err(LexicalDecodeError::Postings { index });
            }
            let frequencies = reader.frequencies(index, holders.len() as usize)?;
            terms.push((term, holders.iter().collect(), frequencies));
        }
        if !reader.rest.is_empty() {
            return Err(LexicalDecodeError::TrailingBytes(reader.rest.len()));
        }
        let segment = LexicalSegment::assemble(children, lengths, terms);
        check_lengths(&segment)?;
        Ok(segment)
    }
}

/// Whether each child's length is the sum of its terms' frequencies.
fn check_lengths(segment: &LexicalSegment) -> Result<(), LexicalDecodeError> {
    let mut sums = vec![0u64; segment.lengths.len()];
    for i in 0..segment.term_count() {
        let Some(postings) = segment.postings_at(i) else {
            continue;
        };
        for (&child, &frequency) in postings.ids.iter().zip(postings.frequencies) {
            if let Some(sum) = segment.position(child).and_then(|at| sums.get_mut(at)) {
                *sum += u64::from(frequency);
            }
        }
    }
    let wrong = segment
        .children
        .iter()
        .zip(segment.lengths.iter().zip(&sums))
        .find(|&(_, (&length, &sum))| u64::from(length) != sum);
    match wrong {
        Some((child, _)) => Err(LexicalDecodeError::Length { child }),
        None => Ok(()),
    }
}

/// The fewest bytes (1, 2 or 4) that hold `max`.
fn frequency_width(max: u32) -> usize {
    match max {
        0..=0xFF => 1,
        0x100..=0xFFFF => 2,
        _ => 4,
    }
}

fn put_bitmap(out: &mut Vec<u8>, bitmap: &RoaringBitmap) {
    out.extend_from_slice(&(bitmap.serialized_size() as u32).to_le_bytes());
    // Writing into a Vec cannot fail.
    let _ = bitmap.serialize_into(&mut *out);
}

/// A little-endian `u32` from (the first) four bytes; 0 when fewer.
fn le_u32(bytes: &[u8]) -> u32 {
    bytes
        .first_chunk::<4>()
        .map_or(0, |word| u32::from_le_bytes(*word))
}

/// The unread bytes of a blob, taken field by field.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize, field: &'static str) -> Result<&'a [u8], LexicalDecodeError> {
        if len > self.rest.len() {
            return Err(LexicalDecodeError::Truncated(field));
        }
        let (taken, rest) = self.rest.split_at(len);
        self.rest = rest;
        Ok(taken)
    }

    fn u32(&mut self, field: &'static str) -> Result<u32, LexicalDecodeError> {
        self.take(4, field).map(le_u32)
    }

    /// A length-prefixed roaring bitmap, which must use all its bytes.
    fn bitmap(&mut self, field: &'static str) -> Result<RoaringBitmap, LexicalDecodeError> {
        let len = self.u32(field)? as usize;
        let mut bytes = self.take(len, field)?;
        let bitmap = RoaringBitmap::deserialize_from(&mut bytes)
            .map_err(|_| LexicalDecodeError::Bitmap(field))?;
        if bytes.is_empty() {
            Ok(bitmap)
        } else {
            Err(LexicalDecodeError::Bitmap(field))
        }
    }

    /// Term `index`, which must come after `previous`.
    fn term(&mut self, index: u32, previous: Option<&str>) -> Result<&'a str, LexicalDecodeError> {
        let len = usize::from(self.take(1, "a term's length")?[0]);
        let bytes = self.take(len, "a term")?;
        match std::str::from_utf8(bytes) {
            Ok(term) if !term.is_empty() && len <= MAX_TERM_BYTES && previous < Some(term) => {
                Ok(term)
            }
            _ => Err(LexicalDecodeError::Term { index }),
        }
    }

    /// Term `index`'s `count` frequencies, with their width.
    fn frequencies(&mut self, index: u32, count: usize) -> Result<Vec<u32>, LexicalDecodeError> {
        let width = usize::from(self.take(1, "a frequency width")?[0]);
        if !matches!(width, 1 | 2 | 4) {
            return Err(LexicalDecodeError::Frequencies { index });
        }
        let frequencies: Vec<u32> = self
            .take(count.saturating_mul(width), "the frequencies")?
            .chunks_exact(width)
            .map(|bytes| {
                let mut word = [0; 4];
                word[..width].copy_from_slice(bytes);
                u32::from_le_bytes(word)
            })
            .collect();
        let max = frequencies.iter().copied().max().unwrap_or(0);
        if frequencies.contains(&0) || frequency_width(max) != width {
            return Err(LexicalDecodeError::Frequencies { index });
        }
        Ok(frequencies)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::lexical::{Analyzer, LexicalLanguage};

    /// Children with gaps (two containers, a run), a term of frequency above 255 (two-byte
    /// width), a child without terms, Han and Latin terms.
    fn sample() -> LexicalSegment {
        let long = "echo ".repeat(300);
        let texts = [
            (3, "running apples and the runner"),
            (4, ""),
            (5, "北京大学 apples"),
            (70_000, long.as_str()),
            (70_001, "echo delta delta"),
        ];
        LexicalSegment::build(texts, &Analyzer::new(LexicalLanguage::Auto)).unwrap()
    }

    #[test]
    fn round_trips() {
        let segment = sample();
        let bytes = segment.to_bytes();
        assert_eq!(bytes[0], LAYOUT_VERSION);
        let decoded = LexicalSegment::from_bytes(&bytes).unwrap();
        assert_eq!(decoded, segment);
        assert_eq!(decoded.to_bytes(), bytes);
        let empty = LexicalSegment::build([], &Analyzer::new(LexicalLanguage::Plain)).unwrap();
        assert_eq!(LexicalSegment::from_bytes(&empty.to_bytes()), Ok(empty));
    }

    #[test]
    fn every_truncation_is_an_error() {
        let bytes = sample().to_bytes();
        for len in 0..bytes.len() {
            assert!(
                LexicalSegment::from_bytes(&bytes[..len]).is_err(),
                "{len} bytes"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(
            LexicalSegment::from_bytes(&longer),
            Err(LexicalDecodeError::TrailingBytes(1))
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(10_000))]

        /// Whatever decodes after a few bit flips is a segment that encodes and decodes
        /// to itself.
        #[test]
        fn flipped_bytes_never_panic(
            flips in proptest::collection::vec((proptest::prelude::any::<usize>(), 0u8..8), 1..4),
        ) {
            static SAMPLE: std::sync::LazyLock<Vec<u8>> =
                std::sync::LazyLock::new(|| sample().to_bytes());
            let mut bent = SAMPLE.clone();
            for (at, bit) in flips {
                let len = bent.len();
                bent[at % len] ^= 1 << bit;
            }
            if let Ok(segment) = LexicalSegment::from_bytes(&bent) {
                let again = LexicalSegment::from_bytes(&segment.to_bytes());
                proptest::prop_assert_eq!(again.as_ref(), Ok(&segment));
            }
        }
    }

    #[test]
    fn inconsistent_parts_are_named() {
        let bytes = sample().to_bytes();
        let mut newer = bytes.clone();
        newer[0] = LAYOUT_VERSION + 1;
        assert_eq!(
            LexicalSegment::from_bytes(&newer),
            Err(LexicalDecodeError::UnsupportedVersion(LAYOUT_VERSION + 1))
        );
        // The first child's stored length (just after the children bitmap), off by one.
        let mut wrong_length = bytes.clone();
        let lengths_at = 5 + le_u32(&bytes[1..5]) as usize;
        wrong_length[lengths_at] ^= 1;
        assert_eq!(
            LexicalSegment::from_bytes(&wrong_length),
            Err(LexicalDecodeError::Length { child: 3 })
        );
    }
}
