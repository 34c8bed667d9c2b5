//! Transparent huge pages for the large arrays a search reads at random.
//!
//! A graph walk reads a few cache lines of a random row per distance. Over the 77 MiB of
//! codes and 26 MiB of links of 200k vectors at 384 dimensions nearly every such read
//! also misses the TLB when the memory is mapped in 4 KiB pages. Linux maps a region in
//! 2 MiB pages when asked (`madvise(MADV_HUGEPAGE)`; many systems run transparent huge
//! pages in this opt-in `madvise` mode). The advice changes performance only, never
//! contents; elsewhere it is a no-op.

use std::sync::Arc;

use super::shared::{Misfit, Plain, Region, Slab};

/// Regions smaller than one huge page gain nothing.
const HUGE_PAGE: usize = 2 << 20;

/// An empty vector with room for `capacity` elements, advised to be backed by huge pages.
pub(crate) fn with_capacity<T>(capacity: usize) -> Vec<T> {
    advise(Vec::with_capacity(capacity))
}

/// Makes room for `additional` more elements like [`Vec::reserve_exact`], moving the
/// contents to a huge-page-advised allocation when it has to grow.
pub(crate) fn reserve<T: Copy>(v: &mut Vec<T>, additional: usize) {
    if v.capacity() - v.len() >= additional {
        return;
    }
    let mut grown = with_capacity(v.len() + additional);
    grown.extend_from_slice(v);
    *v = grown;
}

/// `v`, its allocation advised to be backed by huge pages (for memory not yet touched,
/// or when the kernel collapses it later).
pub(crate) fn advise<T>(v: Vec<T>) -> Vec<T> {
    advise_pages(&v);
    v
}

/// Bytes whose first one starts a cache line, in a huge-page-advised allocation: a row of
/// `64 r` bytes at a multiple of its size then spans `r` lines. A `Vec<u8>` this large
/// comes from `mmap` through malloc and starts 16 bytes into its page, so each such row
/// spans `r + 1` lines and a walk fetches a line more per distance (128-dimension codes:
/// three lines for two lines' bytes).
/// They may also be a view of a shared region whose bytes start on a cache line.
#[derive(Debug, Clone, Default)]
pub(crate) struct LineBytes {
    lines: Slab<Line>,
    len: usize,
}

/// One cache line.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; LINE]);

// SAFETY: 64 bytes, no padding, any bits valid.
unsafe impl Plain for Line {}

/// Bytes in a cache line.
pub(crate) const LINE: usize = 64;

impl LineBytes {
    /// The first `len` bytes of the whole lines at `offset` (a multiple of [`LINE`] from
    /// the start of a page-aligned `region`), not copied.
    pub(crate) fn view(
        region: &Arc<dyn Region>,
        offset: usize,
        len: usize,
    ) -> Result<Self, Misfit> {
        Ok(LineBytes {
            lines: Slab::view(region, offset, len.div_ceil(LINE))?,
            len,
        })
    }

    /// Makes room for `additional` more bytes, moving the contents at most once.
    pub(crate) fn reserve(&mut self, additional: usize) {
        let more = (self.len + additional)
            .div_ceil(LINE)
            .saturating_sub(self.lines.len());
        reserve(self.lines.to_mut(), more);
    }

    /// Appends one byte.
    #[inline]
    pub(crate) fn push(&mut self, byte: u8) {
        let (line, at) = (self.len / LINE, self.len % LINE);
        let lines = self.lines.to_mut();
        if line == lines.len() {
            lines.push(Line([0; LINE]));
        }
        lines[line].0[at] = byte;
        self.len += 1;
    }
}

impl From<Vec<u8>> for LineBytes {
    fn from(bytes: Vec<u8>) -> Self {
        let mut aligned = LineBytes::default();
        aligned.reserve(bytes.len());
        aligned
            .lines
            .to_mut()
            .extend(bytes.chunks(LINE).map(|chunk| {
                let mut line = [0; LINE];
                line[..chunk.len()].copy_from_slice(chunk);
                Line(line)
            }));
        aligned.len = bytes.len();
        aligned
    }
}

impl std::ops::Deref for LineBytes {
    type Target = [u8];

    #[inline(always)]
    fn deref(&self) -> &[u8] {
        // SAFETY: `Line` is 64 plain bytes with no padding (repr(C), size 64), so the
        // lines are `64 * lines.len()` initialised bytes in one allocation, and `len`
        // never exceeds that.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr().cast::<u8>(), self.len) }
    }
}

impl PartialEq for LineBytes {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

#[cfg(target_os = "linux")]
fn advise_pages<T>(v: &Vec<T>) {
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < HUGE_PAGE {
        return;
    }
    // madvise wants a page-aligned start; advise the whole pages inside the allocation.
    const PAGE: usize = 4096;
    let start = v.as_ptr() as usize;
    let (first, end) = (start.next_multiple_of(PAGE), (start + bytes) / PAGE * PAGE);
    if end > first {
        // SAFETY: the range lies within this vector's own allocation, and MADV_HUGEPAGE
        // only changes how the kernel backs those pages, never their contents. A failure
        // (kernel without THP) leaves the ordinary pages.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_pages<T>(_: &Vec<T>) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_keeps_the_contents_and_makes_room() {
        let mut v: Vec<u32> = (0..10).collect();
        reserve(&mut v, HUGE_PAGE);
        assert_eq!(v, (0..10).collect::<Vec<_>>());
        assert!(v.capacity() >= 10 + HUGE_PAGE);
        let before = v.as_ptr();
        reserve(&mut v, 5);
        assert_eq!(v.as_ptr(), before, "enough room: no move");
    }

    #[test]
    fn line_bytes_start_a_line_and_hold_what_was_pushed() {
        let source: Vec<u8> = (0..1000).map(|i| (i * 7 % 256) as u8).collect();
        let from = LineBytes::from(source.clone());
        let mut pushed = LineBytes::default();
        pushed.reserve(HUGE_PAGE);
        for &b in &source {
            pushed.push(b);
        }
        for bytes in [&from, &pushed] {
            assert_eq!(**bytes, source[..]);
            assert_eq!(bytes.as_ptr() as usize % LINE, 0);
        }
        assert_eq!(from, pushed);
        assert_ne!(from, LineBytes::from(source[..999].to_vec()));
    }
}
