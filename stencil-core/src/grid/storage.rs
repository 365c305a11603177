//! The storage of a grid: one 64-byte aligned, zero-initialised heap allocation.
//!
//! [`AlignedBuffer`] owns `len` elements allocated with `std::alloc::alloc_zeroed` at
//! [`ALIGN_BYTES`] alignment. Zeroed allocation lets the allocator hand out untouched pages
//! (for large sizes, fresh anonymous mappings), so each page is first touched, and placed on
//! a NUMA node, by whichever thread first writes it. It assumes the element type is
//! [`Element`] (`f32` or `f64`), for which the all-zero bit pattern is `0.0`.

use std::alloc::{self, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use crate::element::Element;
use crate::view::ALIGN_BYTES;

/// An owned, 64-byte aligned, fixed-length buffer of elements.
pub(crate) struct AlignedBuffer<T: Element> {
    ptr: NonNull<T>,
    len: usize,
}

// SAFETY: the buffer owns its elements exclusively (like `Box<[T]>`), and `T: Send`.
unsafe impl<T: Element> Send for AlignedBuffer<T> {}
// SAFETY: shared access only hands out `&[T]`, and `T: Sync`.
unsafe impl<T: Element> Sync for AlignedBuffer<T> {}

impl<T: Element> AlignedBuffer<T> {
    /// The allocation layout for `len` elements.
    ///
    /// # Panics
    /// If the size overflows `isize` (callers have checked it through `Geometry::new`).
    fn layout(len: usize) -> Layout {
        let bytes = len
            .checked_mul(size_of::<T>())
            .expect("grid storage size overflows (Geometry::new should have refused it)");
        Layout::from_size_align(bytes, ALIGN_BYTES)
            .expect("grid storage size overflows (Geometry::new should have refused it)")
    }

    /// `len` zeros, in untouched (lazily zeroed) memory where the allocator allows.
    ///
    /// # Panics
    /// If `len` is zero or its byte size overflows `isize`; aborts through
    /// [`alloc::handle_alloc_error`] when the allocation fails (as `Vec` does; constructors
    /// that can report failure use [`try_zeroed`](Self::try_zeroed)).
    pub(crate) fn zeroed(len: usize) -> Self {
        Self::try_zeroed(len).unwrap_or_else(|| alloc::handle_alloc_error(Self::layout(len)))
    }

    /// As [`zeroed`](Self::zeroed), but `None` when the allocator has no memory for it.
    ///
    /// # Panics
    /// If `len` is zero or its byte size overflows `isize`.
    pub(crate) fn try_zeroed(len: usize) -> Option<Self> {
        assert!(len > 0, "grid storage is never empty");
        let layout = Self::layout(len);
        // SAFETY: `layout` has a non-zero size (len > 0, size_of::<T>() > 0).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        NonNull::new(raw.cast::<T>()).map(|ptr| AlignedBuffer { ptr, len })
    }
}

impl<T: Element> Deref for AlignedBuffer<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` points to `len` initialised (zeroed, then only written through safe
        // slices) elements owned by `self`, properly aligned; the borrow of `self` keeps them
        // alive and unaliased by mutable references.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Element> DerefMut for AlignedBuffer<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Element> Clone for AlignedBuffer<T> {
    fn clone(&self) -> Self {
        let mut copy = AlignedBuffer::zeroed(self.len);
        copy.copy_from_slice(self);
        copy
    }
}

impl<T: Element> Drop for AlignedBuffer<T> {
    fn drop(&mut self) {
        // SAFETY: `ptr` was allocated by `alloc_zeroed` with exactly this layout and is
        // freed only here, once.
        unsafe { alloc::dealloc(self.ptr.as_ptr().cast::<u8>(), Self::layout(self.len)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_is_aligned_zeroed_and_writable() {
        for len in [1, 7, 1000, 1 << 20] {
            let mut b = AlignedBuffer::<f64>::zeroed(len);
            assert_eq!(b.as_ptr() as usize % ALIGN_BYTES, 0);
            assert_eq!(b.len(), len);
            assert!(b.iter().all(|&v| v.to_bits() == 0));
            b[len - 1] = 2.5;
            let c = b.clone();
            b[len - 1] = 1.0;
            assert_eq!(c[len - 1], 2.5);
            assert_eq!(c.as_ptr() as usize % ALIGN_BYTES, 0);
        }
        let f = AlignedBuffer::<f32>::zeroed(3);
        assert_eq!(f.as_ptr() as usize % ALIGN_BYTES, 0);
    }
}
