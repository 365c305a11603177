//! The storage of a grid: one 64-byte aligned, zero-initialised heap allocation.
//!
//! [`AlignedBuffer`] owns `len` elements allocated with `std::alloc::alloc_zeroed` at
//! [`ALIGN_BYTES`] alignment. Zeroed allocation lets the allocator hand out untouched pages
//! (for large sizes, fresh anonymous mappings), so each page is first touched, and placed on
//! a NUMA node, by whichever thread first writes it. It assumes the element type is
//! [`Element`] (`f32` or `f64`), for which the all-zero bit pattern is `0.0`.
//!
//! Large buffers are staggered: the allocator hands large blocks out at the same offset
//! within a 4 KiB page, so without care the same point of every grid sits at the same
//! address modulo 4 KiB, and a sweep that streams through several grids at once meets
//! them all at once. Loads and stores whose addresses agree in their low 12 bits collide in
//! the core's memory pipeline (4K aliasing), and on some machines the collision is drastic:
//! streaming stores to three outputs at equal page offsets ran at 4.1 GB/s against 16.1 GB/s
//! staggered by 512 bytes, plain stores at 7.7 against 11.9 (2 Zen 3 cores). So each large
//! buffer starts [`STAGGER_BYTES`] times a slot number into its allocation, the slot cycling
//! through [`STAGGER_SLOTS`] values as buffers are made: eight grids made in a row sit at
//! eight different page offsets, two cache lines or more apart.

use std::alloc::{self, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::element::Element;
use crate::view::ALIGN_BYTES;

/// Distance between the page offsets of successive staggered buffers (eight cache lines).
pub(crate) const STAGGER_BYTES: usize = 512;

/// Page offsets a staggered buffer can start at (`STAGGER_SLOTS * STAGGER_BYTES` is 4 KiB).
pub(crate) const STAGGER_SLOTS: usize = 8;

/// Buffers of at least this many bytes are staggered; smaller ones stay at offset zero (a
/// small grid lives in cache, where page offsets matter little, and the 3.5 KiB a stagger
/// may cost would be felt).
pub(crate) const STAGGER_MIN_BYTES: usize = 64 * 1024;

/// The slot the next large buffer takes.
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

/// An owned, 64-byte aligned, fixed-length buffer of elements.
pub(crate) struct AlignedBuffer<T: Element> {
    /// The first element (`offset` elements into the allocation).
    ptr: NonNull<T>,
    len: usize,
    /// Elements of the allocation before `ptr` (the stagger).
    offset: usize,
}

// SAFETY: the buffer owns its elements exclusively (like `Box<[T]>`), and `T: Send`.
unsafe impl<T: Element> Send for AlignedBuffer<T> {}
// SAFETY: shared access only hands out `&[T]`, and `T: Sync`.
unsafe impl<T: Element> Sync for AlignedBuffer<T> {}

impl<T: Element> AlignedBuffer<T> {
    /// The allocation layout for `len` elements; `None` when its byte size overflows `isize`.
    fn layout(len: usize) -> Option<Layout> {
        let bytes = len.checked_mul(size_of::<T>())?;
        Layout::from_size_align(bytes, ALIGN_BYTES).ok()
    }

    /// `len` zeros, in untouched (lazily zeroed) memory where the allocator allows.
    ///
    /// # Panics
    /// If `len` is zero or its byte size overflows `isize`; aborts through
    /// [`alloc::handle_alloc_error`] when the allocation fails (as `Vec` does; constructors
    /// that can report failure use [`try_zeroed`](Self::try_zeroed)).
    pub(crate) fn zeroed(len: usize) -> Self {
        Self::try_zeroed(len).unwrap_or_else(|| {
            let layout = Self::layout(len)
                .expect("grid storage size overflows (Geometry::new should have refused it)");
            alloc::handle_alloc_error(layout)
        })
    }

    /// As [`zeroed`](Self::zeroed), but `None` when the allocator has no memory for it or
    /// the byte size overflows `isize`.
    ///
    /// # Panics
    /// If `len` is zero.
    pub(crate) fn try_zeroed(len: usize) -> Option<Self> {
        assert!(len > 0, "grid storage is never empty");
        let offset = Self::stagger(len);
        // The stagger's few more bytes may overflow where `len` alone did not: no memory.
        let layout = Self::layout(len.checked_add(offset)?)?;
        // SAFETY: `layout` has a non-zero size (len > 0, size_of::<T>() > 0).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let raw = NonNull::new(raw.cast::<T>())?;
        // SAFETY: the allocation holds `offset + len` elements, so `raw + offset` is in it.
        let ptr = unsafe { raw.add(offset) };
        Some(AlignedBuffer { ptr, len, offset })
    }

    /// The stagger, in elements, of a new buffer of `len` elements: the next slot's
    /// multiple of [`STAGGER_BYTES`] when the buffer is large, else zero.
    fn stagger(len: usize) -> usize {
        if len.saturating_mul(size_of::<T>()) < STAGGER_MIN_BYTES {
            return 0;
        }
        let slot = NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % STAGGER_SLOTS;
        slot * STAGGER_BYTES / size_of::<T>()
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
        // SAFETY: `ptr - offset` was allocated by `alloc_zeroed` with exactly this layout
        // (`offset + len` elements) and is freed only here, once.
        unsafe {
            let raw = self.ptr.sub(self.offset);
            let layout = Self::layout(self.len + self.offset)
                .expect("the layout this buffer was allocated with");
            alloc::dealloc(raw.as_ptr().cast::<u8>(), layout)
        }
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

    /// Large buffers made in a row start at different offsets within a page, at least two
    /// cache lines apart; small ones are not staggered.
    #[test]
    fn large_buffers_are_staggered_across_the_page() {
        const PAGE: usize = STAGGER_SLOTS * STAGGER_BYTES;
        let len = (1 << 20) / size_of::<f64>();
        let buffers: Vec<_> = (0..STAGGER_SLOTS)
            .map(|_| AlignedBuffer::<f64>::zeroed(len))
            .collect();
        let mut offsets: Vec<usize> = buffers.iter().map(|b| b.as_ptr() as usize % PAGE).collect();
        offsets.sort_unstable();
        // Other tests make buffers concurrently, so the slots need not be consecutive; but
        // each buffer's stagger is a whole slot and the buffers are writable end to end.
        for b in &buffers {
            assert_eq!(b.offset * size_of::<f64>() % STAGGER_BYTES, 0);
            assert!(b.offset * size_of::<f64>() < PAGE);
            assert_eq!(b.as_ptr() as usize % ALIGN_BYTES, 0);
        }
        let mut distinct = offsets.clone();
        distinct.dedup();
        assert!(
            distinct.len() > 1,
            "all {STAGGER_SLOTS} buffers at one page offset: {offsets:?}"
        );
        for mut b in buffers {
            b[0] = 1.0;
            b[len - 1] = 2.0;
            assert_eq!((b[0], b[len - 1]), (1.0, 2.0));
        }
        assert_eq!(AlignedBuffer::<f32>::zeroed(100).offset, 0);
        let small = AlignedBuffer::<f64>::stagger(STAGGER_MIN_BYTES / 8 - 1);
        assert_eq!(small, 0);
    }
}
