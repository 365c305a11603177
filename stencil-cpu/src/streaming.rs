//! Non-temporal (streaming) stores: copying finished output values to memory without first
//! reading the destination's cache lines (the write-allocate traffic a plain store causes).
//!
//! Two ways in. The point loops `stencil!` generates compute one 64-byte line of every output
//! at a time in registers and write it with [`stream_line`] (instructions chosen at compile
//! time, so the call inlines into the loop). The generic path computes a block of output
//! points into a small per-worker buffer that stays in the first-level cache, then [`copy_to`]
//! writes it to the output row: the 64-byte-aligned body through `_mm512_stream_pd/ps`
//! (AVX-512F), `_mm256_stream_pd/ps` (AVX) or `_mm_stream_pd/ps` (SSE2), picked once at run
//! time by feature detection. Unaligned heads and tails use plain stores either way. Streaming stores are weakly
//! ordered, so every worker calls [`fence`] after its last streaming store of a job, before the
//! job's end makes the outputs visible to other threads. On machines without streaming stores
//! (not x86-64) the copy is a plain copy, and the result is the same.
//!
//! Assumes `T` is `f32` or `f64` (an [`Element`]); any other size falls back to a plain copy.

use stencil_core::Element;

/// The widest streaming store the running machine has.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum StreamWidth {
    /// No streaming stores: outputs are written with plain stores.
    None,
    /// 16-byte `_mm_stream_pd/ps` (SSE2).
    Sse2,
    /// 32-byte `_mm256_stream_pd/ps` (AVX).
    Avx,
    /// 64-byte `_mm512_stream_pd/ps` (AVX-512F).
    Avx512,
}

impl StreamWidth {
    /// Detects the running machine's widest streaming store (cached after the first call).
    pub fn detect() -> StreamWidth {
        static WIDTH: std::sync::OnceLock<StreamWidth> = std::sync::OnceLock::new();
        *WIDTH.get_or_init(detect_uncached)
    }

    /// Bytes per vector register of this width (the machine's vector width; 8 without SIMD).
    pub fn bytes(self) -> usize {
        match self {
            StreamWidth::None => 8,
            StreamWidth::Sse2 => 16,
            StreamWidth::Avx => 32,
            StreamWidth::Avx512 => 64,
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn detect_uncached() -> StreamWidth {
    if std::arch::is_x86_feature_detected!("avx512f") {
        StreamWidth::Avx512
    } else if std::arch::is_x86_feature_detected!("avx") {
        StreamWidth::Avx
    } else {
        // SSE2 is part of x86-64.
        StreamWidth::Sse2
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detect_uncached() -> StreamWidth {
    StreamWidth::None
}

/// Copies `src` into `dst` (equal lengths), with streaming stores when `streaming` is set and
/// the machine has them.
///
/// # Panics
/// If the lengths differ.
#[inline]
pub(crate) fn copy_to<T: Element>(dst: &mut [T], src: &[T], streaming: bool) {
    assert_eq!(dst.len(), src.len(), "stencil-cpu: copy of unequal rows");
    let width = if streaming {
        StreamWidth::detect()
    } else {
        StreamWidth::None
    };
    let size = std::mem::size_of::<T>();
    if width == StreamWidth::None || !(size == 4 || size == 8) {
        dst.copy_from_slice(src);
        return;
    }
    // Plain head up to the first 64-byte boundary (every streaming width divides 64, and
    // `dst` is aligned to `size`, which divides 64), plain tail after the last whole line.
    let head = dst.as_ptr().align_offset(64).min(dst.len());
    let body = (dst.len() - head) / (64 / size) * (64 / size);
    let (dst_head, rest) = dst.split_at_mut(head);
    let (dst_body, dst_tail) = rest.split_at_mut(body);
    let (src_head, rest) = src.split_at(head);
    let (src_body, src_tail) = rest.split_at(body);
    dst_head.copy_from_slice(src_head);
    dst_tail.copy_from_slice(src_tail);
    stream_body(width, dst_body, src_body);
}

/// Streams `src` into `dst`: equal lengths, whole 64-byte lines, `dst` 64-byte aligned.
#[cfg(target_arch = "x86_64")]
fn stream_body<T: Element>(width: StreamWidth, dst: &mut [T], src: &[T]) {
    let bytes = std::mem::size_of_val(dst);
    if bytes == 0 {
        return;
    }
    debug_assert!(bytes.is_multiple_of(64) && (dst.as_ptr() as usize).is_multiple_of(64));
    let (d, s) = (dst.as_mut_ptr().cast::<u8>(), src.as_ptr().cast::<u8>());
    let f32s = std::mem::size_of::<T>() == 4;
    // SAFETY: `d` and `s` cover `bytes` bytes of two distinct live slices (one mutably
    // borrowed), `d` is 64-byte aligned and `bytes` a multiple of 64, as each kernel requires;
    // each kernel runs only when `detect` found its instruction set on this machine.
    unsafe {
        match width {
            StreamWidth::Avx512 if f32s => x86::stream_512_ps(d, s, bytes),
            StreamWidth::Avx512 => x86::stream_512_pd(d, s, bytes),
            StreamWidth::Avx if f32s => x86::stream_256_ps(d, s, bytes),
            StreamWidth::Avx => x86::stream_256_pd(d, s, bytes),
            StreamWidth::Sse2 if f32s => x86::stream_128_ps(d, s, bytes),
            StreamWidth::Sse2 => x86::stream_128_pd(d, s, bytes),
            StreamWidth::None => std::ptr::copy_nonoverlapping(s, d, bytes),
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn stream_body<T: Element>(_width: StreamWidth, dst: &mut [T], src: &[T]) {
    dst.copy_from_slice(src);
}

/// Bytes of one cache line: the unit [`stream_line`] writes.
pub const LINE_BYTES: usize = 64;

/// Writes one cache line of values, `line` (exactly [`LINE_BYTES`] of them), to `dst` with a
/// streaming store when `dst` is 64-byte aligned, with plain stores otherwise. Called by the
/// point loops `stencil!` generates for streaming schedules, once per line, so it is inlined
/// and picks its instructions at compile time from the enabled target features (AVX-512F: one
/// 64-byte store; AVX: two of 32 bytes; x86-64 baseline SSE2: four of 16 bytes); on other
/// architectures it is a plain copy. The caller fences (`sfence`) after its last streaming
/// store, as the CPU backend does after every block.
///
/// # Panics
/// If the lengths differ or are not one line.
#[inline(always)]
pub fn stream_line<T: Element>(dst: &mut [T], line: &[T]) {
    assert!(
        dst.len() == line.len() && std::mem::size_of_val(line) == LINE_BYTES,
        "stream_line: one 64-byte line"
    );
    #[cfg(target_arch = "x86_64")]
    if (dst.as_ptr() as usize).is_multiple_of(LINE_BYTES) {
        let (d, s) = (dst.as_mut_ptr().cast::<u8>(), line.as_ptr().cast::<u8>());
        // SAFETY: `d` and `s` cover 64 bytes of two distinct live slices (one mutably
        // borrowed), `d` is 64-byte aligned; each branch uses only instructions of a target
        // feature enabled at compile time (SSE2 is part of x86-64).
        unsafe {
            use std::arch::x86_64::*;
            #[cfg(target_feature = "avx512f")]
            {
                _mm512_stream_si512(d.cast(), _mm512_loadu_si512(s.cast()));
            }
            #[cfg(all(target_feature = "avx", not(target_feature = "avx512f")))]
            for half in 0..2 {
                let v = _mm256_loadu_si256(s.add(32 * half).cast());
                _mm256_stream_si256(d.add(32 * half).cast(), v);
            }
            #[cfg(not(target_feature = "avx"))]
            for quarter in 0..4 {
                let v = _mm_loadu_si128(s.add(16 * quarter).cast());
                _mm_stream_si128(d.add(16 * quarter).cast(), v);
            }
        }
        return;
    }
    dst.copy_from_slice(line);
}

/// Orders this thread's earlier streaming stores before its later stores (`sfence`); a no-op
/// where there are no streaming stores.
#[inline]
pub(crate) fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` is part of SSE, which every x86-64 machine has.
    unsafe {
        std::arch::x86_64::_mm_sfence();
    }
}

/// The streaming-copy kernels, one per instruction set and element size.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Defines `unsafe fn $name(dst, src, bytes)` streaming `bytes` bytes in `$step`-byte
    /// vectors loaded with `$load` and stored with `$store`.
    macro_rules! stream_kernel {
        ($name:ident, $feature:literal, $elem:ty, $step:literal, $load:ident, $store:ident) => {
            /// Streams `bytes` bytes from `src` to `dst`.
            ///
            /// # Safety
            /// The CPU has the instruction set named in `target_feature`; `dst` and `src`
            /// are valid for `bytes` bytes and do not overlap; `dst` is aligned to the vector
            /// size and `bytes` is a multiple of it.
            #[target_feature(enable = $feature)]
            pub(super) unsafe fn $name(dst: *mut u8, src: *const u8, bytes: usize) {
                let mut at = 0;
                while at < bytes {
                    // SAFETY: `at + $step <= bytes`, inside both buffers (the caller's
                    // contract); `dst + at` is vector-aligned since `dst` is and `at` is a
                    // multiple of the vector size; the load is unaligned.
                    unsafe {
                        let v = $load(src.add(at).cast::<$elem>());
                        $store(dst.add(at).cast::<$elem>(), v);
                    }
                    at += $step;
                }
            }
        };
    }

    stream_kernel!(
        stream_512_pd,
        "avx512f",
        f64,
        64,
        _mm512_loadu_pd,
        _mm512_stream_pd
    );
    stream_kernel!(
        stream_512_ps,
        "avx512f",
        f32,
        64,
        _mm512_loadu_ps,
        _mm512_stream_ps
    );
    stream_kernel!(
        stream_256_pd,
        "avx",
        f64,
        32,
        _mm256_loadu_pd,
        _mm256_stream_pd
    );
    stream_kernel!(
        stream_256_ps,
        "avx",
        f32,
        32,
        _mm256_loadu_ps,
        _mm256_stream_ps
    );
    stream_kernel!(stream_128_pd, "sse2", f64, 16, _mm_loadu_pd, _mm_stream_pd);
    stream_kernel!(stream_128_ps, "sse2", f32, 16, _mm_loadu_ps, _mm_stream_ps);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Copies with every offset and length around the 64-byte boundaries, streaming and not,
    /// and checks every element against the source and the untouched guard elements.
    fn check<T: Element>() {
        let values: Vec<T> = (0..300)
            .map(|i| T::from_f64(f64::from(i) * 0.37 - 11.0))
            .collect();
        for streaming in [false, true] {
            for offset in 0..17 {
                for len in [0, 1, 7, 15, 16, 17, 31, 33, 64, 100, 257] {
                    let mut dst = [T::NAN; 300];
                    copy_to(&mut dst[offset..offset + len], &values[..len], streaming);
                    fence();
                    for (i, v) in dst.iter().enumerate() {
                        if (offset..offset + len).contains(&i) {
                            assert_eq!(v.to_f64(), values[i - offset].to_f64());
                        } else {
                            assert!(v.to_f64().is_nan(), "guard {i} overwritten");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn streaming_copies_are_exact_copies() {
        check::<f64>();
        check::<f32>();
    }

    #[test]
    fn every_streaming_width_copies_exactly() {
        #[cfg(target_arch = "x86_64")]
        for width in [StreamWidth::Sse2, StreamWidth::Avx, StreamWidth::Avx512] {
            if width.bytes() > StreamWidth::detect().bytes() {
                continue;
            }
            // A 64-byte-aligned destination inside a larger buffer.
            let src: Vec<f64> = (0..64).map(|i| f64::from(i) + 0.5).collect();
            let mut buffer = vec![f64::NAN; 80];
            let head = buffer.as_ptr().align_offset(64);
            stream_body(width, &mut buffer[head..head + 64], &src);
            fence();
            assert_eq!(&buffer[head..head + 64], &src[..]);
            let src32: Vec<f32> = (0..64).map(|i| i as f32 * 0.25).collect();
            let mut buffer32 = vec![f32::NAN; 96];
            let head = buffer32.as_ptr().align_offset(64);
            stream_body(width, &mut buffer32[head..head + 64], &src32);
            fence();
            assert_eq!(&buffer32[head..head + 64], &src32[..]);
        }
    }

    #[test]
    fn stream_line_writes_exactly_one_line_aligned_or_not() {
        fn check<T: Element>() {
            let per_line = LINE_BYTES / std::mem::size_of::<T>();
            let line: Vec<T> = (0..per_line)
                .map(|i| T::from_f64(i as f64 * 1.25 - 3.0))
                .collect();
            let mut buffer = vec![T::NAN; 4 * per_line];
            let aligned = buffer.as_ptr().align_offset(LINE_BYTES);
            // Aligned (streaming) and one element off (plain stores).
            for at in [aligned, aligned + 1] {
                buffer.fill(T::NAN);
                stream_line(&mut buffer[at..at + per_line], &line);
                fence();
                for (i, v) in buffer.iter().enumerate() {
                    if (at..at + per_line).contains(&i) {
                        assert_eq!(v.to_f64(), line[i - at].to_f64());
                    } else {
                        assert!(v.to_f64().is_nan(), "guard {i} overwritten");
                    }
                }
            }
        }
        check::<f64>();
        check::<f32>();
    }
}
