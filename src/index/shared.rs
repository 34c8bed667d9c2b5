//! Arrays a search reads that live either in this process's heap or in a region several
//! processes share (a mapped file: the page cache then holds one copy for all of them).

use std::fmt;
use std::sync::Arc;

/// Bytes that stay in place while any view of them lives: a read-only mapping, say. The
/// storage layer provides it; this folder only reads it.
pub trait Region: Send + Sync {
    /// The region's bytes.
    fn bytes(&self) -> &[u8];
}

/// Element types a region's bytes may be viewed as: plain data of fixed size, any bit
/// pattern valid, read in the machine's own byte order.
///
/// # Safety
/// Implementors must be `Copy` data with no padding and no invalid bit patterns.
pub(crate) unsafe trait Plain: Copy {}

// SAFETY: plain numbers, every bit pattern valid.
unsafe impl Plain for u8 {}
// SAFETY: as above.
unsafe impl Plain for u32 {}
// SAFETY: as above.
unsafe impl Plain for f32 {}
// SAFETY: as above.
unsafe impl Plain for u64 {}
// SAFETY: as above.
unsafe impl Plain for f64 {}

/// A read-mostly array: owned (`Vec`), or a view into a shared [`Region`]. Dereferences to
/// a slice either way; [`Slab::to_mut`] copies a view out before the first change.
pub(crate) struct Slab<T> {
    owned: Vec<T>,
    /// When set, the elements are these instead of `owned` (then empty).
    mapped: Option<View<T>>,
}

/// `len` elements at `ptr`, inside `region`, which keeps them alive and unchanged.
struct View<T> {
    ptr: *const T,
    len: usize,
    region: Arc<dyn Region>,
}

// SAFETY: a view is read-only memory kept alive by an `Arc` of a `Send + Sync` region; the
// rest is a `Vec`.
unsafe impl<T: Send + Sync> Send for Slab<T> {}
// SAFETY: as above; nothing is written through a shared reference.
unsafe impl<T: Send + Sync> Sync for Slab<T> {}

/// Why a region's bytes cannot be viewed as an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Misfit;

impl<T: Plain> Slab<T> {
    /// The `len` elements of `region` at byte `offset`: refused when out of bounds or
    /// misaligned for `T`, or on a big-endian machine (the layout is little-endian).
    pub(crate) fn view(
        region: &Arc<dyn Region>,
        offset: usize,
        len: usize,
    ) -> Result<Self, Misfit> {
        let bytes = region.bytes();
        let size = len.checked_mul(std::mem::size_of::<T>()).ok_or(Misfit)?;
        let end = offset.checked_add(size).ok_or(Misfit)?;
        let part = bytes.get(offset..end).ok_or(Misfit)?;
        if cfg!(target_endian = "big")
            || !(part.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>())
        {
            return Err(Misfit);
        }
        Ok(Slab {
            owned: Vec::new(),
            mapped: Some(View {
                ptr: part.as_ptr().cast::<T>(),
                len,
                region: region.clone(),
            }),
        })
    }
}

impl<T> Slab<T> {
    /// Whether the elements are in a shared region.
    pub(crate) fn is_mapped(&self) -> bool {
        self.mapped.is_some()
    }

    /// The owned vector, a view copied into one first.
    pub(crate) fn to_mut(&mut self) -> &mut Vec<T>
    where
        T: Clone,
    {
        if self.mapped.is_some() {
            self.owned = self.to_vec();
            self.mapped = None;
        }
        &mut self.owned
    }

    /// The elements as a vector (a view is copied).
    pub(crate) fn into_vec(mut self) -> Vec<T>
    where
        T: Clone,
    {
        std::mem::take(self.to_mut())
    }

    /// The owned vector, moved out; `None` for a view.
    pub(crate) fn into_owned(self) -> Option<Vec<T>> {
        self.mapped.is_none().then_some(self.owned)
    }
}

impl<T> std::ops::Deref for Slab<T> {
    type Target = [T];

    #[inline(always)]
    fn deref(&self) -> &[T] {
        match &self.mapped {
            None => &self.owned,
            // SAFETY: `view` checked bounds and alignment; the region outlives `self` (we
            // hold an `Arc` of it) and its bytes never change; `T: Plain` accepts any bits.
            Some(view) => unsafe { std::slice::from_raw_parts(view.ptr, view.len) },
        }
    }
}

impl<T> From<Vec<T>> for Slab<T> {
    fn from(owned: Vec<T>) -> Self {
        Slab {
            owned,
            mapped: None,
        }
    }
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Vec::new().into()
    }
}

impl<T: Clone> Clone for Slab<T> {
    fn clone(&self) -> Self {
        Slab {
            owned: self.owned.clone(),
            mapped: self.mapped.as_ref().map(|view| View {
                ptr: view.ptr,
                len: view.len,
                region: view.region.clone(),
            }),
        }
    }
}

impl<T: PartialEq> PartialEq for Slab<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T> fmt::Debug for Slab<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.is_mapped() { "mapped" } else { "owned" };
        write!(f, "Slab({} x {kind})", self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Bytes(Vec<u32>);

    impl Region for Bytes {
        fn bytes(&self) -> &[u8] {
            // SAFETY (test): u32s viewed as their bytes.
            unsafe { std::slice::from_raw_parts(self.0.as_ptr().cast(), self.0.len() * 4) }
        }
    }

    #[test]
    fn a_view_reads_the_region_and_copies_out_before_a_change() {
        let region: Arc<dyn Region> = Arc::new(Bytes((0..16).collect()));
        let mut slab = Slab::<u32>::view(&region, 8, 4).expect("view");
        assert!(slab.is_mapped());
        assert_eq!(&*slab, &[2, 3, 4, 5]);
        let copy = slab.clone();
        slab.to_mut().push(6);
        assert!(!slab.is_mapped());
        assert_eq!((&*slab, &*copy), (&[2, 3, 4, 5, 6][..], &[2, 3, 4, 5][..]));
    }

    #[test]
    fn a_view_out_of_bounds_or_misaligned_is_refused() {
        let region: Arc<dyn Region> = Arc::new(Bytes((0..4).collect()));
        assert_eq!(Slab::<u32>::view(&region, 4, 4).err(), Some(Misfit));
        assert_eq!(Slab::<u32>::view(&region, 2, 1).err(), Some(Misfit));
        assert_eq!(
            Slab::<u32>::view(&region, 0, usize::MAX).err(),
            Some(Misfit)
        );
        assert!(Slab::<u8>::view(&region, 3, 13).is_ok());
    }
}
