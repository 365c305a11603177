//! The storage of a grid: one 64-byte aligned, zero-initialised allocation.
//!
//! [`AlignedBuffer`] owns `len` elements at [`ALIGN_BYTES`] alignment, all zero (the element
//! type is [`Element`], `f32` or `f64`, for which the all-zero bit pattern is `0.0`).
//!
//! # Large buffers: their own mapping, in huge pages, untouched
//! On Linux a buffer of [`MAP_MIN_BYTES`] or more is a private anonymous mapping of its own,
//! starting [`MAP_LEAD_BYTES`] past a [`HUGE_PAGE_BYTES`] boundary, and the kernel is advised
//! (`MADV_HUGEPAGE`) to back it with transparent huge pages. Two things follow:
//!
//! - *Untouched until first written.* The kernel maps no page of it until a thread first
//!   reads or writes the page, and then maps it (zeroed) on that thread's NUMA node, so
//!   first-touch placement works. The global allocator cannot promise this: Rust's
//!   `alloc_zeroed` at 64-byte alignment allocates and then writes every zero from the
//!   allocating thread.
//! - *Huge pages.* A sweep of a 3-D grid reads rows a plane apart (half a megabyte for 256^2
//!   planes of `f64`), each in another 4 KiB page, so its loads miss the TLB: in huge pages the
//!   7-point sweep of a 256^3 `f64` grid on one Zen 5 core ran in 7.4-7.5 ms against 8.6-9.0
//!   ms in 4 KiB pages. The advice is only advice: with transparent huge pages off
//!   (`/sys/kernel/mm/transparent_hugepage/enabled` at `never`) the buffer gets 4 KiB pages
//!   and nothing else changes.
//!
//! Smaller buffers, and every buffer elsewhere, come from the global allocator with
//! `alloc_zeroed` (a small grid lives in cache, where neither placement nor pages matter
//! much).
//!
//! # Stagger
//! Large buffers are staggered: the allocator hands large blocks out at the same offset
//! within a 4 KiB page (a mapping starts on a page), so without care the same point of every
//! grid sits at the same address modulo 4 KiB, and a sweep that streams through several grids
//! at once meets them all at once. Loads and stores whose addresses agree in their low 12
//! bits collide in the core's memory pipeline (4K aliasing), and on some machines the
//! collision is drastic: streaming stores to three outputs at equal page offsets ran at 4.1
//! GB/s against 16.1 GB/s staggered by 512 bytes, plain stores at 7.7 against 11.9 (2 Zen 3
//! cores). So each large buffer starts [`STAGGER_BYTES`] times a slot number into its
//! allocation, the slot cycling through [`STAGGER_SLOTS`] values as buffers are made: eight
//! grids made in a row sit at eight different page offsets, two cache lines or more apart.

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

/// Buffers of at least this many bytes get a mapping of their own on Linux (see the module
/// documentation).
pub(crate) const MAP_MIN_BYTES: usize = 4 << 20;

/// Bytes from the huge-page boundary in a large buffer's mapping to the buffer's allocation
/// (before its stagger): one cache line, where the global allocator places a large block.
/// At the boundary itself, a time loop of the acoustic solver's two stages over ten 256^3 grids
/// (1 Zen 5 core, default schedule) ran 36.4-41.5 ms per step (median 37.4) against
/// 32.4-37.4 (32.8) one line past it and 32.1-37.0 (33.2) from the allocator, in six rounds
/// interleaved, while the 7-point time loop ran alike at the boundary and from the allocator.
/// Why, was not found.
pub(crate) const MAP_LEAD_BYTES: usize = 64;

/// The alignment of a large buffer's mapping: the size of a transparent huge page on x86-64
/// (and AArch64 with 4 KiB base pages).
pub(crate) const HUGE_PAGE_BYTES: usize = 2 << 20;

/// An owned, 64-byte aligned, fixed-length buffer of elements.
pub(crate) struct AlignedBuffer<T: Element> {
    /// The first element (`offset` elements into the allocation).
    ptr: NonNull<T>,
    len: usize,
    /// Elements of the allocation before `ptr` (the stagger).
    offset: usize,
    /// The buffer's own mapping (its start and length in bytes), or `None` when the global
    /// allocator holds it.
    mapping: Option<Mapping>,
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

    /// `len` zeros; untouched (lazily zeroed) memory in huge pages when large (see the
    /// module documentation).
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
        if layout.size() >= MAP_MIN_BYTES
            && let Some(mapping) = Mapping::new(layout.size())
        {
            // SAFETY: the mapping holds `layout.size()` bytes, `offset + len` elements, from
            // `buffer`, which is aligned to `ALIGN_BYTES` (a huge page plus a cache line), so
            // to `T`.
            let ptr = unsafe { mapping.buffer().cast::<T>().add(offset) };
            return Some(AlignedBuffer {
                ptr,
                len,
                offset,
                mapping: Some(mapping),
            });
        }
        // SAFETY: `layout` has a non-zero size (len > 0, size_of::<T>() > 0).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let raw = NonNull::new(raw.cast::<T>())?;
        // SAFETY: the allocation holds `offset + len` elements, so `raw + offset` is in it.
        let ptr = unsafe { raw.add(offset) };
        Some(AlignedBuffer {
            ptr,
            len,
            offset,
            mapping: None,
        })
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
        if self.mapping.is_some() {
            // `Mapping`'s own drop unmaps it.
            return;
        }
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

/// A private anonymous mapping of its own, holding a large buffer (Linux).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) struct Mapping {
    /// Where the mapping starts (page-aligned).
    base: NonNull<u8>,
    /// Its length in bytes.
    bytes: usize,
    /// Bytes from `base` to the first huge-page boundary in it, where the buffer starts.
    skip: usize,
}

impl Mapping {
    /// A fresh mapping with `bytes` bytes from [`MAP_LEAD_BYTES`] past a [`HUGE_PAGE_BYTES`]
    /// boundary, its huge pages advised; `None` when the kernel refuses it (no memory, or not
    /// Linux).
    #[cfg(target_os = "linux")]
    fn new(bytes: usize) -> Option<Mapping> {
        // A huge page more than asked, so that a huge-page boundary lies within the first one,
        // and the lead.
        let mapped = bytes
            .checked_add(HUGE_PAGE_BYTES)?
            .checked_add(MAP_LEAD_BYTES)?;
        // SAFETY: a private anonymous mapping at an address of the kernel's choosing aliases
        // no existing memory; the result is checked before use.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let base = NonNull::new(base.cast::<u8>())?;
        let address = base.as_ptr() as usize;
        let skip = address.next_multiple_of(HUGE_PAGE_BYTES) - address;
        let mapping = Mapping {
            base,
            bytes: mapped,
            skip,
        };
        // The whole huge pages from `start`: `skip + advised <= mapped` since the kernel maps
        // whole 4 KiB pages and `skip` is a multiple of them.
        let advised = (mapped - skip) / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES;
        // SAFETY: advice about pages of this mapping only, which nothing references yet;
        // refused advice (transparent huge pages compiled out) changes nothing.
        unsafe {
            libc::madvise(
                mapping.start().as_ptr().cast(),
                advised,
                libc::MADV_HUGEPAGE,
            );
        }
        Some(mapping)
    }

    /// Not Linux: no mapping (the global allocator holds every buffer).
    #[cfg(not(target_os = "linux"))]
    fn new(_bytes: usize) -> Option<Mapping> {
        None
    }

    /// The first huge-page boundary in the mapping.
    fn start(&self) -> NonNull<u8> {
        // SAFETY: `skip < HUGE_PAGE_BYTES <= bytes`, so within the mapping.
        unsafe { self.base.add(self.skip) }
    }

    /// Where the buffer's allocation starts: [`MAP_LEAD_BYTES`] past [`start`](Self::start).
    fn buffer(&self) -> NonNull<u8> {
        // SAFETY: `skip + MAP_LEAD_BYTES < HUGE_PAGE_BYTES + MAP_LEAD_BYTES <= bytes`.
        unsafe { self.start().add(MAP_LEAD_BYTES) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        // SAFETY: `base` and `bytes` are exactly what `mmap` returned and was given, and the
        // buffer holding this mapping, whose elements are its only references into it, is
        // being dropped.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.bytes);
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

    /// A large buffer is a mapping of its own whose pages are untouched when made (so the
    /// thread that first writes a page places it), zero, aligned and staggered; writing one
    /// element maps its page and leaves pages a huge page away unmapped.
    #[cfg(target_os = "linux")]
    #[test]
    fn large_buffers_are_mapped_untouched_until_first_written() {
        let len = 3 * MAP_MIN_BYTES / size_of::<f64>() + 5;
        let mut b = AlignedBuffer::<f64>::zeroed(len);
        let mapping = b.mapping.as_ref().expect("a buffer this large is mapped");
        let start = mapping.start().as_ptr();
        assert_eq!(start as usize % HUGE_PAGE_BYTES, 0);
        assert_eq!(b.as_ptr() as usize % ALIGN_BYTES, 0);
        assert_eq!(
            b.as_ptr() as usize - start as usize,
            MAP_LEAD_BYTES + b.offset * size_of::<f64>()
        );
        let page = 4096;
        let pages = (MAP_LEAD_BYTES + (len + b.offset) * size_of::<f64>()) / page;
        let resident = |b: &AlignedBuffer<f64>| -> Vec<bool> {
            let start = b.mapping.as_ref().unwrap().start().as_ptr();
            let mut flags = vec![0u8; pages];
            // SAFETY: the range is `pages` whole pages of the buffer's mapping.
            let r = unsafe { libc::mincore(start.cast(), pages * page, flags.as_mut_ptr()) };
            assert_eq!(r, 0, "mincore: {}", std::io::Error::last_os_error());
            flags.iter().map(|f| f & 1 == 1).collect()
        };
        assert!(
            resident(&b).iter().all(|&r| !r),
            "a new buffer's pages were touched before anyone wrote them"
        );
        let middle = len / 2;
        b[middle] = 1.5;
        let touched = (MAP_LEAD_BYTES + (b.offset + middle) * size_of::<f64>()) / page;
        let now = resident(&b);
        assert!(now[touched], "the page written is mapped");
        assert!(
            !now[0] && !now[pages - 1],
            "pages a huge page away stay unmapped"
        );
        assert_eq!(b[middle], 1.5);
        assert!(
            b.iter()
                .enumerate()
                .all(|(i, &v)| i == middle || v.to_bits() == 0)
        );
        let c = b.clone();
        assert!(c.mapping.is_some());
        assert_eq!(c[middle], 1.5);
    }

    /// Buffers below the threshold come from the allocator.
    #[test]
    fn small_buffers_come_from_the_allocator() {
        let b = AlignedBuffer::<f32>::zeroed(MAP_MIN_BYTES / size_of::<f32>() / 2);
        assert!(b.mapping.is_none());
    }
}
