//! A segment's postings in the flat layout a search reads in place, so processes can map
//! one copy of them (a shared postings file) instead of each decoding its own: a
//! descriptor, then the segment's arrays ([`LexicalSegment`]'s fields), each
//! little-endian and starting on a cache line. Every offset, length and order a search
//! relies on is checked once, when the layout is opened, so a search over it never reads
//! out of bounds or loops. `storage-format.md`, "Shared postings files", gives the bytes.

use std::sync::Arc;

use roaring::RoaringBitmap;

use super::analyzer::MAX_TERM_BYTES;
use super::segment::{reference_length, LexicalSegment, Positions, BLOCK};
use crate::index::shared::{Plain, Region, Slab};

/// The layout's version, first in its descriptor.
const LAYOUT: u32 = 1;
/// The descriptor before the arrays; every array starts on a multiple of this too.
const LINE: usize = 64;
/// Positions kinds in the descriptor.
const RANK: u32 = 0;
const TABLE: u32 = 1;

/// Why bytes do not hold a segment's postings in the flat layout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LexicalFlatError {
    /// A descriptor field out of range.
    #[error("flat postings field {field} is {value}")]
    Field {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
    },
    /// The bytes are not exactly the arrays the descriptor implies, or one is misaligned.
    #[error("flat postings arrays do not fit the bytes")]
    Misfit,
    /// The named array does not hold together (its ends, order or bounds).
    #[error("flat postings: {0} are inconsistent")]
    Inconsistent(&'static str),
}

/// The element counts of the arrays, as the descriptor gives them.
#[derive(Debug, Clone, Copy)]
struct Counts {
    children: usize,
    bitmap_bytes: usize,
    table: usize,
    terms: usize,
    term_bytes: usize,
    postings: usize,
    blocks: usize,
}

impl Counts {
    /// The byte sizes of the arrays in layout order, each padded to a cache line.
    fn sections(&self) -> Option<[usize; 11]> {
        let bytes =
            |count: usize, size: usize| count.checked_mul(size)?.checked_next_multiple_of(LINE);
        Some([
            bytes(self.bitmap_bytes, 1)?,
            bytes(self.children, 4)?,
            bytes(self.table, 4)?,
            bytes(self.terms, 8)?,
            bytes(self.term_bytes, 1)?,
            bytes(self.terms, 8)?,
            bytes(self.postings, 4)?,
            bytes(self.postings, 4)?,
            bytes(self.terms, 8)?,
            bytes(self.blocks, 8)?,
            bytes(self.terms, 8)?,
        ])
    }
}

impl LexicalSegment {
    /// Hands this segment in the flat layout to `out` piece by piece, in order.
    pub(crate) fn write_flat<E>(
        &self,
        out: &mut impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let (kind, first, table): (u32, u32, &[u32]) = match &self.positions {
            Positions::Table { first, positions } => (TABLE, *first, positions),
            Positions::Rank => (RANK, 0, &[]),
        };
        let mut bitmap = Vec::with_capacity(self.children.serialized_size());
        // Writing into a Vec cannot fail.
        let _ = self.children.serialize_into(&mut bitmap);
        let mut descriptor = Vec::with_capacity(LINE);
        for word in [LAYOUT, self.lengths.len() as u32, kind, first] {
            descriptor.extend_from_slice(&word.to_le_bytes());
        }
        for long in [
            bitmap.len(),
            table.len(),
            self.term_count(),
            self.term_bytes.len(),
            self.ids.len(),
            self.blocks.len(),
        ] {
            descriptor.extend_from_slice(&(long as u64).to_le_bytes());
        }
        descriptor.resize(LINE, 0);
        out(&descriptor)?;
        put_padded(out, &bitmap)?;
        put_words(out, self.lengths.iter().map(|x| x.to_le_bytes()))?;
        put_words(out, table.iter().map(|x| x.to_le_bytes()))?;
        put_words(out, self.term_ends.iter().map(|x| x.to_le_bytes()))?;
        put_padded(out, &self.term_bytes)?;
        put_words(out, self.posting_ends.iter().map(|x| x.to_le_bytes()))?;
        put_words(out, self.ids.iter().map(|x| x.to_le_bytes()))?;
        put_words(out, self.frequencies.iter().map(|x| x.to_le_bytes()))?;
        put_words(out, self.block_ends.iter().map(|x| x.to_le_bytes()))?;
        put_words(out, self.blocks.iter().map(|x| x.to_bits().to_le_bytes()))?;
        put_words(
            out,
            self.max_saturations
                .iter()
                .map(|x| x.to_bits().to_le_bytes()),
        )
    }

    /// The segment in the flat layout, as one buffer.
    pub fn to_flat_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        let written = self.write_flat(&mut |piece: &[u8]| {
            bytes.extend_from_slice(piece);
            Ok::<_, std::convert::Infallible>(())
        });
        match written {
            Ok(()) => bytes,
            Err(never) => match never {},
        }
    }

    /// The segment laid out by [`LexicalSegment::to_flat_bytes`] in `bytes`, checked as a
    /// mapped one is, read in place from a copy of them (so from any alignment).
    pub fn from_flat_bytes(bytes: &[u8]) -> Result<LexicalSegment, LexicalFlatError> {
        let region: Arc<dyn Region> = Arc::new(Aligned::copy_of(bytes));
        LexicalSegment::from_flat(&region, 0)
    }

    /// The segment laid out by [`LexicalSegment::write_flat`] from byte `at` of `region`
    /// to its end (`at` a multiple of 8 from an 8-aligned start), its arrays left in the
    /// region and only the children's bitmap and the mean length made in memory. Every
    /// array's size, each `*_ends` array's order and bounds, the terms' order, each
    /// term's children (ascending, of the segment) and block count, and the positions
    /// table are checked; the scores' bounds are trusted (a checksum vouches for them).
    pub(crate) fn from_flat(
        region: &Arc<dyn Region>,
        at: usize,
    ) -> Result<LexicalSegment, LexicalFlatError> {
        let bytes = region.bytes().get(at..).ok_or(LexicalFlatError::Misfit)?;
        let head = bytes.get(..LINE).ok_or(LexicalFlatError::Misfit)?;
        let word = |i: usize| u32::from_le_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
        let long = |i: usize| u64::from(word(i)) | (u64::from(word(i + 4)) << 32);
        let field = |field, value: u64| LexicalFlatError::Field { field, value };
        if word(0) != LAYOUT {
            return Err(field("layout", word(0).into()));
        }
        let count = |i: usize, name| usize::try_from(long(i)).map_err(|_| field(name, long(i)));
        let counts = Counts {
            children: word(4) as usize,
            bitmap_bytes: count(16, "bitmap bytes")?,
            table: count(24, "table")?,
            terms: count(32, "terms")?,
            term_bytes: count(40, "term bytes")?,
            postings: count(48, "postings")?,
            blocks: count(56, "blocks")?,
        };
        let (kind, first) = (word(8), word(12));
        let sections = counts.sections().ok_or(LexicalFlatError::Misfit)?;
        let total = sections
            .iter()
            .try_fold(LINE, |sum, size| sum.checked_add(*size));
        if total != Some(bytes.len()) {
            return Err(LexicalFlatError::Misfit);
        }
        let mut starts = sections.iter().scan(at + LINE, |offset, size| {
            let start = *offset;
            *offset += size;
            Some(start)
        });
        let mut next = || starts.next().ok_or(LexicalFlatError::Misfit);
        let bitmap_at = next()? - at;
        let mut bitmap = bytes
            .get(bitmap_at..bitmap_at + counts.bitmap_bytes)
            .ok_or(LexicalFlatError::Misfit)?;
        let children = RoaringBitmap::deserialize_from(&mut bitmap)
            .map_err(|_| LexicalFlatError::Inconsistent("children"))?;
        if !bitmap.is_empty() || children.len() != counts.children as u64 {
            return Err(LexicalFlatError::Inconsistent("children"));
        }
        let lengths = view::<u32>(region, next()?, counts.children)?;
        let table = view::<u32>(region, next()?, counts.table)?;
        let positions = match (kind, Positions::table_span(&children)) {
            (RANK, None) if counts.table == 0 => Positions::Rank,
            (TABLE, Some((span_first, span)))
                if (first, span) == (span_first, table.len() as u64) =>
            {
                check_table(&children, first, &table)?;
                Positions::Table {
                    first,
                    positions: table,
                }
            }
            _ => return Err(field("positions", kind.into())),
        };
        let segment = LexicalSegment {
            reference_length: reference_length(&lengths),
            children,
            lengths,
            positions,
            term_ends: view(region, next()?, counts.terms)?,
            term_bytes: view(region, next()?, counts.term_bytes)?,
            posting_ends: view(region, next()?, counts.terms)?,
            ids: view(region, next()?, counts.postings)?,
            frequencies: view(region, next()?, counts.postings)?,
            block_ends: view(region, next()?, counts.terms)?,
            blocks: view(region, next()?, counts.blocks)?,
            max_saturations: view(region, next()?, counts.terms)?,
        };
        check_terms(&segment)?;
        Ok(segment)
    }
}

/// `len` elements of `T` at byte `offset` of `region`.
fn view<T: Plain>(
    region: &Arc<dyn Region>,
    offset: usize,
    len: usize,
) -> Result<Slab<T>, LexicalFlatError> {
    Slab::view(region, offset, len).map_err(|_| LexicalFlatError::Misfit)
}

/// Whether `table` gives each child of `children` its position, and every other entry
/// is a gap.
fn check_table(
    children: &RoaringBitmap,
    first: u32,
    table: &[u32],
) -> Result<(), LexicalFlatError> {
    let inconsistent = LexicalFlatError::Inconsistent("positions");
    for (position, child) in children.iter().enumerate() {
        let at = child.checked_sub(first).ok_or(inconsistent.clone())? as usize;
        if table.get(at).copied() != Some(position as u32) {
            return Err(inconsistent);
        }
    }
    let filled = table.iter().filter(|&&at| at != u32::MAX).count();
    if filled as u64 != children.len() {
        return Err(inconsistent);
    }
    Ok(())
}

/// Whether the `*_ends` arrays rise strictly (no empty term, postings or blocks) to their
/// arrays' ends, the terms are UTF-8 and ascending bytewise, and each term's children
/// ascend, are children of the segment, have frequencies of at least 1 and fill the
/// term's blocks.
fn check_terms(segment: &LexicalSegment) -> Result<(), LexicalFlatError> {
    for (ends, len, name) in [
        (&segment.term_ends, segment.term_bytes.len(), "term ends"),
        (&segment.posting_ends, segment.ids.len(), "posting ends"),
        (&segment.block_ends, segment.blocks.len(), "block ends"),
    ] {
        let mut before = 0u64;
        for &end in ends.iter() {
            if end <= before {
                return Err(LexicalFlatError::Inconsistent(name));
            }
            before = end;
        }
        if before != len as u64 {
            return Err(LexicalFlatError::Inconsistent(name));
        }
    }
    let mut previous: Option<&[u8]> = None;
    for i in 0..segment.term_count() {
        let term = segment
            .term(i)
            .ok_or(LexicalFlatError::Inconsistent("terms"))?;
        let valid = term.len() <= MAX_TERM_BYTES && std::str::from_utf8(term).is_ok();
        if !valid || previous >= Some(term) {
            return Err(LexicalFlatError::Inconsistent("terms"));
        }
        previous = Some(term);
        let postings = segment
            .postings_at(i)
            .ok_or(LexicalFlatError::Inconsistent("postings"))?;
        let ascending = postings.ids.windows(2).all(|pair| pair[0] < pair[1]);
        let held = postings
            .ids
            .iter()
            .all(|&id| segment.position(id).is_some());
        if !ascending || !held || postings.frequencies.contains(&0) {
            return Err(LexicalFlatError::Inconsistent("postings"));
        }
        if postings.blocks.len() != postings.ids.len().div_ceil(BLOCK) {
            return Err(LexicalFlatError::Inconsistent("blocks"));
        }
    }
    Ok(())
}

/// Puts `bytes`, then zeros to the next cache line.
fn put_padded<E>(out: &mut impl FnMut(&[u8]) -> Result<(), E>, bytes: &[u8]) -> Result<(), E> {
    const ZEROS: [u8; LINE] = [0; LINE];
    out(bytes)?;
    out(&ZEROS[..bytes.len().next_multiple_of(LINE) - bytes.len()])
}

/// Puts the little-endian words, then zeros to the next cache line, a buffer at a time.
fn put_words<E, const N: usize>(
    out: &mut impl FnMut(&[u8]) -> Result<(), E>,
    words: impl Iterator<Item = [u8; N]>,
) -> Result<(), E> {
    let mut buffer = Vec::with_capacity(1 << 16);
    let mut written = 0usize;
    for word in words {
        buffer.extend_from_slice(&word);
        if buffer.len() >= 1 << 16 {
            written += buffer.len();
            out(&buffer)?;
            buffer.clear();
        }
    }
    written += buffer.len();
    out(&buffer)?;
    const ZEROS: [u8; LINE] = [0; LINE];
    out(&ZEROS[..written.next_multiple_of(LINE) - written])
}

/// Bytes in memory starting on an 8-byte boundary, as a mapping starts on a page.
struct Aligned {
    words: Vec<u64>,
    len: usize,
}

impl Aligned {
    fn copy_of(bytes: &[u8]) -> Aligned {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        // SAFETY: the words hold at least `bytes.len()` bytes, any of which may be set to
        // any value; the two do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                words.as_mut_ptr().cast::<u8>(),
                bytes.len(),
            );
        }
        Aligned {
            words,
            len: bytes.len(),
        }
    }
}

impl Region for Aligned {
    fn bytes(&self) -> &[u8] {
        // SAFETY: the words' memory viewed as bytes (any bit pattern is a valid u8),
        // `len` of them, at most the words' size (`copy_of`); they live as long as `self`.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: failing loudly is the point

    use super::*;
    use crate::index::lexical::{Analyzer, LexicalLanguage};

    /// Children in a table and a gap, a frequent term over several blocks, a child
    /// without terms, Han and Latin terms.
    fn sample(spread: bool) -> LexicalSegment {
        let step = if spread { 90_000 } else { 1 };
        let texts: Vec<(u32, String)> = (0..200u32)
            .map(|i| {
                let text = match i % 4 {
                    0 => "running apples and the runner".to_string(),
                    1 => String::new(),
                    2 => "北京大学 apples echo echo".to_string(),
                    _ => format!("delta word{}", i % 7),
                };
                (10 + i * step + u32::from(i > 100) * 5, text)
            })
            .collect();
        let texts = texts.iter().map(|(child, text)| (*child, text.as_str()));
        LexicalSegment::build(texts, &Analyzer::new(LexicalLanguage::Auto)).unwrap()
    }

    #[test]
    fn the_flat_layout_reads_back_in_place_as_the_same_segment() {
        for spread in [false, true] {
            let built = sample(spread);
            assert_eq!(
                matches!(built.positions, Positions::Table { .. }),
                !spread,
                "both kinds of positions"
            );
            let bytes = built.to_flat_bytes();
            assert_eq!(bytes.len() % LINE, 0);
            let mapped = LexicalSegment::from_flat_bytes(&bytes).unwrap();
            assert!(mapped.is_mapped() && !built.is_mapped());
            assert_eq!(mapped, built);
            assert_eq!(mapped.to_bytes(), built.to_bytes());
            assert_eq!(mapped.to_flat_bytes(), bytes);
        }
        let empty = LexicalSegment::build([], &Analyzer::new(LexicalLanguage::Plain)).unwrap();
        let bytes = empty.to_flat_bytes();
        assert_eq!(LexicalSegment::from_flat_bytes(&bytes), Ok(empty));
    }

    #[test]
    fn every_truncation_and_extension_is_refused() {
        let bytes = sample(false).to_flat_bytes();
        for len in 0..bytes.len() {
            assert!(
                LexicalSegment::from_flat_bytes(&bytes[..len]).is_err(),
                "{len} bytes"
            );
        }
        let mut longer = bytes.clone();
        longer.extend_from_slice(&[0; LINE]);
        assert_eq!(
            LexicalSegment::from_flat_bytes(&longer),
            Err(LexicalFlatError::Misfit)
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3_000))]

        /// Whatever the checks accept after a few bit flips (padding, a score bound, ...)
        /// lays out to bytes that are accepted as the same segment, and is searched to the
        /// end, every hit visible: a damaged layout is refused or harmless, never a panic
        /// or an endless walk.
        #[test]
        fn flipped_bytes_never_panic(
            flips in proptest::collection::vec((proptest::prelude::any::<usize>(), 0u8..8), 1..4),
        ) {
            use crate::index::lexical::{search, CorpusStats};
            static SAMPLE: std::sync::LazyLock<Vec<u8>> =
                std::sync::LazyLock::new(|| sample(false).to_flat_bytes());
            let mut bent = SAMPLE.clone();
            for (at, bit) in flips {
                let len = bent.len();
                bent[at % len] ^= 1 << bit;
            }
            if let Ok(segment) = LexicalSegment::from_flat_bytes(&bent) {
                let again = segment.to_flat_bytes();
                let reread = LexicalSegment::from_flat_bytes(&again).map(|s| s.to_flat_bytes());
                proptest::prop_assert!(reread.is_ok_and(|bytes| bytes == again));
                let analyzer = Analyzer::new(LexicalLanguage::Auto);
                let some: RoaringBitmap = segment.children().iter().step_by(3).collect();
                let stats = CorpusStats::of_live(&[&segment], segment.children());
                for visible in [segment.children(), &some] {
                    let hits =
                        search(&[&segment], "apples echo delta run", &analyzer, visible, &stats, 3);
                    proptest::prop_assert!(hits.iter().all(|h| visible.contains(h.id)));
                }
            }
        }
    }

    /// The byte offset of array `index` (layout order) in `bytes`.
    fn section_at(bytes: &[u8], index: usize) -> usize {
        let long = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap()) as usize;
        let word = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap()) as usize;
        let counts = Counts {
            children: word(4),
            bitmap_bytes: long(16),
            table: long(24),
            terms: long(32),
            term_bytes: long(40),
            postings: long(48),
            blocks: long(56),
        };
        LINE + counts.sections().unwrap()[..index].iter().sum::<usize>()
    }

    #[test]
    fn inconsistent_arrays_are_refused_by_name() {
        let bytes = sample(false).to_flat_bytes();
        let bent = |at: usize, value: &[u8]| {
            let mut bent = bytes.clone();
            bent[at..at + value.len()].copy_from_slice(value);
            LexicalSegment::from_flat_bytes(&bent)
        };
        assert_eq!(
            bent(0, &2u32.to_le_bytes()),
            Err(LexicalFlatError::Field {
                field: "layout",
                value: 2
            })
        );
        assert_eq!(
            bent(8, &0u32.to_le_bytes()),
            Err(LexicalFlatError::Field {
                field: "positions",
                value: 0
            })
        );
        // A term count far past the bytes: refused before any array is read.
        assert_eq!(
            bent(32, &u64::MAX.to_le_bytes()),
            Err(LexicalFlatError::Misfit)
        );
        let table = section_at(&bytes, 2);
        assert_eq!(
            bent(table, &7u32.to_le_bytes()),
            Err(LexicalFlatError::Inconsistent("positions"))
        );
        let term_ends = section_at(&bytes, 3);
        assert_eq!(
            bent(term_ends, &0u64.to_le_bytes()),
            Err(LexicalFlatError::Inconsistent("term ends"))
        );
        let term_bytes = section_at(&bytes, 4);
        assert_eq!(
            bent(term_bytes, &[0xff]),
            Err(LexicalFlatError::Inconsistent("terms"))
        );
        let posting_ends = section_at(&bytes, 5);
        assert_eq!(
            bent(posting_ends, &u64::MAX.to_le_bytes()),
            Err(LexicalFlatError::Inconsistent("posting ends"))
        );
        // The first term's children, out of order: a search's walk would not end.
        let ids = section_at(&bytes, 6);
        assert_eq!(
            bent(ids + 4, &0u32.to_le_bytes()),
            Err(LexicalFlatError::Inconsistent("postings"))
        );
        let frequencies = section_at(&bytes, 7);
        assert_eq!(
            bent(frequencies, &0u32.to_le_bytes()),
            Err(LexicalFlatError::Inconsistent("postings"))
        );
        let block_ends = section_at(&bytes, 8);
        assert_eq!(
            bent(block_ends, &0u64.to_le_bytes()),
            Err(LexicalFlatError::Inconsistent("block ends"))
        );
    }
}
