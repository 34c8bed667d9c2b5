//! Transparent huge pages for the large arrays a search reads at random.
//!
//! A graph walk reads a few cache lines of a random row per distance. Over the 77 MiB of
//! codes and 26 MiB of links of 200k vectors at 384 dimensions nearly every such read
//! also misses the TLB when the memory is mapped in 4 KiB pages. Linux maps a region in
//! 2 MiB pages when asked (`madvise(MADV_HUGEPAGE)`; many systems run transparent huge
//! pages in this opt-in `madvise` mode). The advice changes performance only, never
//! contents; elsewhere it is a no-op.

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
}
