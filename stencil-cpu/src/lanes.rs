//! Vectors of lanes for the retimed and shifted point loops that `stencil!` generates.
//!
//! The retimed loop (GSTuner's retiming, 003_... section 2.2.4) computes each partial sum of a
//! linear kernel once per vector of points and obtains its values at the neighbouring points
//! by *shifting* lanes between consecutive vectors (YASK's in-register reuse) instead of
//! loading and adding the same reads again. That needs a vector type whose lane shift is one
//! instruction; LLVM does not reliably turn shifts of plain arrays into one, so the types here
//! wrap the intrinsics of the instruction set enabled at compile time:
//!
//! - with AVX-512F: [`F64`] is 8 lanes of `__m512d`, [`F32`] 16 lanes of `__m512`, shifts are
//!   `valignq` / `valignd`, and [`Lanes::FAST_SHIFTS`] is true;
//! - with AVX2 (and no AVX-512F): 4 lanes of `__m256d`, 8 of `__m256`, shifts by
//!   `vperm2f128` plus `vshufpd` / `vpalignr` (two instructions), `FAST_SHIFTS` true; fused
//!   multiply-adds where FMA is enabled too;
//! - otherwise: plain arrays (4 `f64`, 8 `f32`) with element-wise code, and `FAST_SHIFTS`
//!   false, so the generated code keeps its plain, autovectorised point loop (the array types
//!   still compute the right values; the tests run them everywhere).
//!
//! [`Lanes::load`], [`Lanes::store`] and [`Lanes::stream`] are bounds-checked against their
//! slice, and a streaming store that finds its destination unaligned stores plainly. The
//! retimed loop's vector loop is [`sweep`]: it checks every length and alignment once, then
//! runs unchecked [`Lanes::load_at`] / [`Lanes::store_at`] around the kernel's [`VectorBody`].
//!
//! The shifted loop (a kernel's own arithmetic, lane-wise, with each input row loaded once per
//! vector and its neighbours along the row taken by [`Lanes::shifted`]) runs a whole run of
//! rows per call through [`sweep_rows`], which checks the run's windows and output rows once
//! and steps through the rows by pointer: called once per row, the same loop spent more on
//! each row's setup than the plain loop it replaced.

use stencil_core::row::{OutputRun, RowWindows};

/// A vector of `N` lanes of one element type: the operations the retimed loop uses.
pub trait Lanes: Copy {
    /// The element type.
    type Elem: Copy;
    /// Number of lanes.
    const N: usize;
    /// Whether a lane shift takes one or two instructions (AVX-512F or AVX2) rather than
    /// element-wise code: the retimed loop pays only then.
    const FAST_SHIFTS: bool;
    /// Whether a lane shift is one instruction (`valignq`/`valignd`, AVX-512F; two with
    /// AVX2): the shifted loop, which trades unaligned loads for shifts, pays only then (with
    /// AVX2 it ran the 7-point f64 sweep in cache 30% slower than the plain loop).
    const SINGLE_SHIFTS: bool;
    /// Every lane `value`.
    fn splat(value: Self::Elem) -> Self;
    /// `data[at..at + N]`.
    ///
    /// # Panics
    /// If `at + N > data.len()`.
    fn load(data: &[Self::Elem], at: usize) -> Self;
    /// Writes the lanes to `data[at..at + N]`.
    ///
    /// # Panics
    /// If `at + N > data.len()`.
    fn store(self, data: &mut [Self::Elem], at: usize);
    /// Writes the lanes to `data[at..at + N]` with a streaming (non-temporal) store where
    /// the destination is aligned to the vector and the instruction exists, else plainly.
    /// The caller orders streaming stores with a fence before others read the data.
    ///
    /// # Panics
    /// If `at + N > data.len()`.
    fn stream(self, data: &mut [Self::Elem], at: usize);
    /// The `N` elements at `ptr`, loaded without a bounds check ([`sweep`] checks once).
    ///
    /// # Safety
    /// `ptr` must be valid for reading `N` elements.
    unsafe fn load_at(ptr: *const Self::Elem) -> Self;
    /// Writes the lanes to the `N` elements at `ptr`, with a streaming (non-temporal) store
    /// when `STREAM` and the instruction exists, else plainly; no bounds or alignment check
    /// ([`sweep`] checks once).
    ///
    /// # Safety
    /// `ptr` must be valid for writing `N` elements and, when `STREAM`, aligned to
    /// `N * size_of::<Elem>()` bytes.
    unsafe fn store_at<const STREAM: bool>(self, ptr: *mut Self::Elem);
    /// Lane-wise `self + other`.
    fn add(self, other: Self) -> Self;
    /// Lane-wise `self - other`.
    fn sub(self, other: Self) -> Self;
    /// Lane-wise `self * other`.
    fn mul(self, other: Self) -> Self;
    /// Lane-wise `self / other` (correctly rounded, as the scalar division).
    fn div(self, other: Self) -> Self;
    /// Lane-wise `self * b + c` (fused where the instruction set has it).
    fn mul_add(self, b: Self, c: Self) -> Self;
    /// Lane-wise `c - self * b` (fused where the instruction set has it).
    fn neg_mul_add(self, b: Self, c: Self) -> Self;
    /// Lane-wise `-self`: the sign bit flipped, the bits of the scalar negation.
    fn neg(self) -> Self;
    /// Lane-wise `self * b + c` rounded once (IEEE 754 `fusedMultiplyAdd`): each lane the
    /// bits of the scalar `mul_add` in every build (one instruction where the build has
    /// FMA, the standard library's exact routine per lane where it has not).
    fn fused_mul_add(self, b: Self, c: Self) -> Self;
    /// Lane `i` of the result is lane `i + D` of the concatenation `prev, cur, next` counted
    /// from `cur`'s lane 0: the vector of the points `D` further along the row.
    ///
    /// # Panics
    /// If `|D| > N`.
    fn shifted<const D: i32>(prev: Self, cur: Self, next: Self) -> Self;
}

/// Prefetches the cache line holding `data[at]` into the first-level cache; nothing when
/// `at` is outside `data` or the machine has no prefetch instruction.
#[inline(always)]
pub fn prefetch<T>(data: &[T], at: usize) {
    if at < data.len() {
        prefetch_at(data[at..].as_ptr());
    }
}

/// Prefetches every cache line of `data` into the first-level cache (see [`prefetch`]).
#[inline(always)]
pub fn prefetch_lines<T>(data: &[T]) {
    let step = (64 / std::mem::size_of::<T>().max(1)).max(1);
    let mut at = 0;
    while at < data.len() {
        prefetch(data, at);
        at += step;
    }
}

/// The arithmetic of one vector of a [`sweep`]: the kernel's part of the loop, with whatever
/// it carries from one vector to the next (a generated type whose `step` is
/// `#[inline(always)]`, so the loop compiles to one body).
pub trait VectorBody<V, const M: usize, const K: usize> {
    /// The output vectors of the point vector whose input vectors (one vector ahead, see
    /// [`sweep`]) are `inputs`.
    fn step(&mut self, inputs: [V; M]) -> [V; K];
}

#[cfg(debug_assertions)]
thread_local! {
    static SHIFTED_ROWS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Rows whose vectors [`sweep_rows`] computed on this thread, counted in builds with debug
/// assertions (as tests are built) so that tests can tell which loop ran; always 0 in other
/// builds.
pub fn shifted_rows() -> u64 {
    #[cfg(debug_assertions)]
    return SHIFTED_ROWS.get();
    #[cfg(not(debug_assertions))]
    0
}

/// A [`VectorBody`] that [`sweep_rows`] restarts at every row of a run.
pub trait RowBody<V, const M: usize, const K: usize>: VectorBody<V, M, K> + Copy {
    /// Starts a row: each input's vector one before (`prev`) and at (`cur`) the row's first
    /// vector computed.
    fn start(&mut self, prev: [V; M], cur: [V; M]);
}

/// The shifted point loop over rows `rows` of a run: one call per run, stepping through the
/// rows by pointer, so that a row costs its vectors and little else.
///
/// `inputs[m]` are input `m`'s windows over the run's rows, row `r` from `N` elements before
/// the row's first point to `N` after its `n`th (at least `n + 2 * N` elements; the caller
/// builds and checks them once per run), `outputs` the run's output rows (at least `n`
/// elements each). For each row of at least one vector, `body` is restarted at the row's first
/// point with each input's vectors before and at it, then given for each output vector each
/// input's vector `ahead[m]` elements past the window's start for the first one (`2 * N`: one
/// vector ahead, for an input whose neighbours along the row the body shifts in; `N`: the
/// output's own points), and returns the output's values (plain stores). When `n` is not a
/// whole number of vectors, the row's last vector is computed once more, restarted `N` points
/// before the row's end: its first points get the values they already hold (the outputs are
/// not inputs, and a point's value does not depend on where its vector starts), and no
/// point is left to a scalar loop. `plain(r, from, outputs)` computes the points
/// `from..from + len` of row `r` into the `len` elements given, for rows shorter than a vector
/// (every row, with no inputs).
///
/// Rows shorter than [`PAIRED_ROW_BYTES`] of kernels of at most [`PAIRED_MEMBERS`] members
/// are computed two at a time, their vectors interleaved, the last odd row alone; other rows
/// one at a time. The rows' pointers advance
/// by their strides. Loads and stores start at the row's first point, unaligned: aligning
/// each row to the output's cache line left a head and a tail of scalar points (8 of the 64
/// of a 7-point f64 row), and the sweep of a 64^3 grid in cache went from 121 to 112 us,
/// gcc's pace (one core, AVX-512).
///
/// Windows and outputs of several planes ([`RowWindows::plane_parts`]) are swept in their
/// plane 0 only; [`sweep_planes`] takes every plane, through the same loop over a plane's
/// rows.
///
/// # Panics
/// If a window or output is shorter than that, or has fewer rows than `rows.end`, or an
/// `ahead` exceeds `2 * N` (a bug of the caller), before anything is written.
#[inline(always)]
pub fn sweep_rows<V: Lanes, const M: usize, const K: usize>(
    inputs: &[RowWindows<'_, V::Elem>; M],
    ahead: [usize; M],
    outputs: &mut [&mut OutputRun<'_, V::Elem>; K],
    rows: std::ops::Range<usize>,
    n: usize,
    body: impl RowBody<V, M, K>,
    plain: impl FnMut(usize, usize, [&mut [V::Elem]; K]),
) {
    let span = n
        .checked_add(2 * V::N)
        .unwrap_or_else(|| panic!("sweep_rows: rows of {n} points"));
    // Raw parts, checked once against every row of the run.
    let mut input_rows = [(std::ptr::null::<V::Elem>(), 0usize); M];
    for ((parts, input), &ahead) in input_rows.iter_mut().zip(inputs).zip(&ahead) {
        let (ptr, len, stride, count) = input.raw_parts();
        assert!(
            rows.end <= count && len >= span && ahead <= 2 * V::N,
            "sweep_rows: windows of {count} rows of {len} for rows {rows:?} of {span}, \
             {ahead} ahead"
        );
        *parts = (ptr, stride);
    }
    let mut output_rows = [(std::ptr::null_mut::<V::Elem>(), 0usize); K];
    for (parts, output) in output_rows.iter_mut().zip(outputs.iter_mut()) {
        let (ptr, len, stride, count) = output.raw_parts_mut();
        assert!(
            rows.end <= count && len >= n,
            "sweep_rows: outputs of {count} rows of {len} for rows {rows:?} of {n}"
        );
        *parts = (ptr, stride);
    }
    if K == 0 {
        return;
    }
    // SAFETY: every row `r < rows.end <= count` of each window holds `span = n + 2 * N`
    // readable elements and each `ahead` is at most `2 * N` (checked above); every output
    // row `n` writable elements, exclusively borrowed, disjoint from the inputs and each
    // other (`OutputRun`'s contract).
    unsafe {
        sweep_plane::<V, M, K>((input_rows, ahead), output_rows, rows, n, body, plain);
    }
}

/// [`sweep_rows`] over every plane of windows and outputs that span several
/// ([`RowWindows::plane_parts`], [`OutputRun::plane_parts`], all with the same count): the
/// rows `rows` of each plane in turn, a 3-D block in one call, the windows checked once for
/// all its planes. `plain(p, r, from, outputs)` computes points of row `r` of plane `p`.
///
/// # Panics
/// As [`sweep_rows`], and if the plane counts differ.
#[inline(always)]
pub fn sweep_planes<V: Lanes, const M: usize, const K: usize>(
    inputs: &[RowWindows<'_, V::Elem>; M],
    ahead: [usize; M],
    outputs: &mut [&mut OutputRun<'_, V::Elem>; K],
    rows: std::ops::Range<usize>,
    n: usize,
    body: impl RowBody<V, M, K>,
    mut plain: impl FnMut(usize, usize, usize, [&mut [V::Elem]; K]),
) {
    let span = n
        .checked_add(2 * V::N)
        .unwrap_or_else(|| panic!("sweep_planes: rows of {n} points"));
    let planes = outputs.first().map_or(1, |output| output.plane_parts().1);
    // Raw parts, checked once against every row of the run.
    let mut input_planes = [(std::ptr::null::<V::Elem>(), 0usize, 0usize); M];
    for ((parts, input), &ahead) in input_planes.iter_mut().zip(inputs).zip(&ahead) {
        let (ptr, len, stride, count) = input.raw_parts();
        let (plane_stride, count_planes) = input.plane_parts();
        assert!(
            rows.end <= count && len >= span && ahead <= 2 * V::N && count_planes == planes,
            "sweep_planes: windows of {count_planes}x{count} rows of {len} for {planes}x rows \
             {rows:?} of {span}, {ahead} ahead"
        );
        *parts = (ptr, stride, plane_stride);
    }
    let mut output_planes = [(std::ptr::null_mut::<V::Elem>(), 0usize, 0usize); K];
    for (parts, output) in output_planes.iter_mut().zip(outputs.iter_mut()) {
        let (ptr, len, stride, count) = output.raw_parts_mut();
        let (plane_stride, count_planes) = output.plane_parts();
        assert!(
            rows.end <= count && len >= n && count_planes == planes,
            "sweep_planes: outputs of {count_planes}x{count} rows of {len} for {planes}x rows \
             {rows:?} of {n}"
        );
        *parts = (ptr, stride, plane_stride);
    }
    if K == 0 {
        return;
    }
    for p in 0..planes {
        // Plane `p < planes` of each window and output is its rows displaced by
        // `p * plane_stride`, checked (windows) or guaranteed (outputs) like plane 0's.
        let input_rows: [(*const V::Elem, usize); M] = std::array::from_fn(|m| {
            let (ptr, stride, plane_stride) = input_planes[m];
            (ptr.wrapping_add(p * plane_stride), stride)
        });
        let output_rows: [(*mut V::Elem, usize); K] = std::array::from_fn(|k| {
            let (ptr, stride, plane_stride) = output_planes[k];
            (ptr.wrapping_add(p * plane_stride), stride)
        });
        // SAFETY: this plane's rows of every window hold `n + 2 * N` readable elements
        // (`try_rows` checked the last plane's last row, and `span` above), each `ahead` is
        // at most `2 * N`, and its output rows `n` writable elements, exclusively borrowed
        // and disjoint from the inputs and each other (`OutputRun`'s contract).
        unsafe {
            sweep_plane::<V, M, K>(
                (input_rows, ahead),
                output_rows,
                rows.clone(),
                n,
                body,
                |r, from, outs| plain(p, r, from, outs),
            )
        };
    }
}

/// Rows `rows` of one plane of [`sweep_rows`] and [`sweep_planes`]: its inputs' and outputs'
/// rows as raw parts `(ptr, stride)`.
///
/// # Safety
/// As [`sweep_rows`] checks for its windows and outputs: row `r < rows.end` of input `m`
/// readable for `n + 2 * N` elements from `input_rows[m].0 + r * stride`, each `ahead[m]` at
/// most `2 * N`; row `r` of output `k` writable for `n` elements, exclusively, disjoint from
/// every input and from the other outputs' rows.
#[inline(always)]
unsafe fn sweep_plane<V: Lanes, const M: usize, const K: usize>(
    (input_rows, ahead): ([(*const V::Elem, usize); M], [usize; M]),
    output_rows: [(*mut V::Elem, usize); K],
    rows: std::ops::Range<usize>,
    n: usize,
    body: impl RowBody<V, M, K>,
    mut plain: impl FnMut(usize, usize, [&mut [V::Elem]; K]),
) {
    // The `len` elements from `from` of row `r`'s outputs, for `plain` (called below with
    // `r` in `rows` and `from + len <= n`).
    let parts_of = |r: usize, from: usize, len: usize| -> [&mut [V::Elem]; K] {
        std::array::from_fn(|k| {
            let (ptr, stride) = output_rows[k];
            // SAFETY: `r < rows.end <= count` and `from + len <= n <=` the rows' length, so
            // the elements lie in row `r` of output `k`, which `outputs` borrows exclusively;
            // outputs are distinct grids, so the slices are disjoint, and no other reference
            // to these elements lives while `plain` runs.
            unsafe { std::slice::from_raw_parts_mut(ptr.add(r * stride + from), len) }
        })
    };
    let vectors = n / V::N;
    if M == 0 || vectors == 0 {
        // No input rows to shift, or rows shorter than a vector: the plain loop's.
        for r in rows {
            plain(r, 0, parts_of(r, 0, n));
        }
        return;
    }
    // Row `r`'s input windows (from `N` before its first point) and outputs.
    let row_at = |r: usize| {
        let mut ins = [std::ptr::null::<V::Elem>(); M];
        for (input, &(ptr, stride)) in ins.iter_mut().zip(&input_rows) {
            *input = ptr.wrapping_add(r * stride);
        }
        let mut outs = [std::ptr::null_mut::<V::Elem>(); K];
        for (out, &(ptr, stride)) in outs.iter_mut().zip(&output_rows) {
            *out = ptr.wrapping_add(r * stride);
        }
        (ins, outs)
    };
    // Rows in pairs (short rows of kernels of few members: `PAIRED_ROW_BYTES`,
    // `PAIRED_MEMBERS`), then the odd one alone. The rows' pointers advance by their strides
    // from one pair to the next: computed from the row's index, with every member's stride
    // multiplied and the pointers spilled around it, they had cost the 27-point stencil's
    // 64^3 sweep 102.5-103.3 us against 91.0-92.3 (the bench's default rows), the 7-point
    // one's 55.7-56.8 against 53.2-53.4 us (a block's planes, one Zen 5 core).
    let pairs = n * std::mem::size_of::<V::Elem>() < PAIRED_ROW_BYTES && M <= PAIRED_MEMBERS;
    let (mut row_ins, mut row_outs) = row_at(rows.start);
    let mut r = rows.start;
    while r < rows.end {
        let paired = pairs && r + PAIRED <= rows.end;
        let (ins, outs) = if paired {
            let mut ins = [row_ins; PAIRED];
            let mut outs = [row_outs; PAIRED];
            for (next, (&row, &(_, stride))) in
                ins[1].iter_mut().zip(row_ins.iter().zip(&input_rows))
            {
                *next = row.wrapping_add(stride);
            }
            for (next, (&row, &(_, stride))) in
                outs[1].iter_mut().zip(row_outs.iter().zip(&output_rows))
            {
                *next = row.wrapping_add(stride);
            }
            // SAFETY: as below, for each of the rows `r..r + PAIRED` (all `< rows.end`).
            unsafe { run_rows::<V, M, K, PAIRED>(ins, ahead, outs, 0, vectors, body) };
            (ins, outs)
        } else {
            // SAFETY: as below.
            unsafe { run_rows::<V, M, K, 1>([row_ins], ahead, [row_outs], 0, vectors, body) };
            ([row_ins; PAIRED], [row_outs; PAIRED])
        };
        let done = if paired { PAIRED } else { 1 };
        for (row, &(_, stride)) in row_ins.iter_mut().zip(&input_rows) {
            *row = row.wrapping_add(done * stride);
        }
        for (row, &(_, stride)) in row_outs.iter_mut().zip(&output_rows) {
            *row = row.wrapping_add(done * stride);
        }
        #[cfg(debug_assertions)]
        SHIFTED_ROWS.set(SHIFTED_ROWS.get() + done as u64);
        if !n.is_multiple_of(V::N) {
            // The last vector again, ending at the row's end: its first points get the
            // values they hold (the outputs are not inputs).
            for (&ins, &outs) in ins.iter().zip(&outs).take(done) {
                // SAFETY: as below, with `from = n - N`.
                unsafe { run_rows::<V, M, K, 1>([ins], ahead, [outs], n - V::N, 1, body) };
            }
        }
        r += done;
    }
    // SAFETY (of each `run_rows` above): row `r < count` of each window holds `n + 2 * N`
    // readable elements from `ins[m]`, and every call has `from + count * N <= n` and
    // `ahead[m] <= 2 * N`, so `from + ahead[m] + count * N` and `from + 2 * N` are at most
    // `n + 2 * N`. Row `r` of each output holds `n` elements from `outs[k]`, exclusively
    // borrowed, and the stores write `from .. from + count * N` of it. Inputs and outputs
    // are distinct grids, and the rows of one call distinct rows.
}

/// Rows computed together by [`sweep_rows`] (rows shorter than [`PAIRED_ROW_BYTES`]): their
/// vectors interleaved, two independent
/// chains of the kernel's arithmetic in the loop at once. Per 64^3 sweep in cache on a Zen 4
/// core (AVX-512), against rows one at a time: 7-point f64 112 -> 103 us, f32 64 -> 60 us,
/// 27-point f32 105 -> 98 us, the radius-4 star 317 -> 294 us; four rows at once were slower
/// (the star 416 us, its 17 inputs' pointers four times over).
const PAIRED: usize = 2;

/// Rows of at least this many bytes are computed one at a time, not in pairs: a pair's rows
/// (the input rows around both, both outputs) crowd the first-level cache. The 5-point 2-D
/// sweep in cache on a Zen 5 core (48 KiB first-level cache), one thread, medians of 5 runs
/// alternating with the pairs: f64 512^2 (rows of 4 KiB) 43.2 -> 37.9 us, 768^2 92.4 -> 82.0,
/// 1024^2 219 -> 192, f32 1024^2 77.7 -> 75.9; rows of 2 KiB (f64 256^2, f32 512^2) ran alike
/// both ways, and rows of 512 bytes (the 7-point 64^3 sweep) faster in pairs (55.6 against
/// 58.4 us).
pub const PAIRED_ROW_BYTES: usize = 4096;

/// Kernels reading more input rows than this (members) compute their rows one at a time: a
/// pair's member pointers, twice the members, spill out of the registers. The radius-4 star
/// (17 members) in cache on a Zen 5 core, 64^3 f64, one thread, the default schedule,
/// medians of 7 alternating runs: 196-202 us in pairs, 177-180 us one row at a time; the
/// 27-point stencil (9 members) ran faster in pairs, 91-93 against 95-96 us.
pub const PAIRED_MEMBERS: usize = 12;

/// `body` restarted at point `from` of `R` rows and run for `count` vectors along them, the
/// rows' vectors interleaved (see [`sweep_rows`]).
///
/// # Safety
/// For each row `j`: each `ins[j][m]` valid for reading
/// `max(from + ahead[m] + count * N, from + 2 * N)` elements, and each `outs[j][k] + from`
/// for writing `count * N`, disjoint from every input and from the other rows' outputs.
#[inline(always)]
unsafe fn run_rows<V: Lanes, const M: usize, const K: usize, const R: usize>(
    ins: [[*const V::Elem; M]; R],
    ahead: [usize; M],
    outs: [[*mut V::Elem; K]; R],
    from: usize,
    count: usize,
    body: impl RowBody<V, M, K>,
) {
    let mut bodies = [body; R];
    let mut loads = ins;
    let mut stores = outs;
    // SAFETY: `prev` and `cur` read `from .. from + 2 * N` of each input, the vector loop
    // `from + ahead[m] .. from + ahead[m] + count * N`, both within the caller's bound; the
    // stores write `count * N` elements from `outs[j][k] + from`.
    unsafe {
        for ((step, ins), (loads, stores)) in bodies
            .iter_mut()
            .zip(&ins)
            .zip(loads.iter_mut().zip(&mut stores))
        {
            // Arrays filled by loops (`array::from_fn` was a call per row, spilling the
            // vector registers).
            let mut prev = [V::load_at(ins[0].add(from)); M];
            let mut cur = [V::load_at(ins[0].add(from + V::N)); M];
            for m in 1..M {
                prev[m] = V::load_at(ins[m].add(from));
                cur[m] = V::load_at(ins[m].add(from + V::N));
            }
            step.start(prev, cur);
            for (load, &ahead) in loads.iter_mut().zip(&ahead) {
                *load = load.add(from + ahead);
            }
            for store in stores.iter_mut() {
                *store = store.add(from);
            }
        }
        let mut vector = |k: usize| {
            let at = k * V::N;
            for ((step, loads), stores) in bodies.iter_mut().zip(&loads).zip(&stores) {
                let values = step.step(load_each::<V, M>(*loads, at));
                for (store, value) in stores.iter().zip(values) {
                    value.store_at::<false>(store.add(at));
                }
            }
        };
        for k in 0..count {
            vector(k);
        }
    }
}

/// The vector loop of the retimed point loop, with its bounds and alignment checked once.
///
/// With `n` the outputs' common length in vectors, runs `step` for `k` in `0..n` in order:
/// `step.step` receives the vector `inputs[i][ahead + k * N..][..N]` of every input and returns
/// the vectors stored to `outputs[j][k * N..][..N]`. Each `prefetch` window's line at
/// `ahead + k * N` is prefetched first. Stores stream (non-temporal) when `streaming` and
/// every output starts aligned to the vector, else they are plain (the caller fences after
/// streaming stores, as for [`Lanes::stream`]).
///
/// Returns `false`, having called nothing and written nothing, unless every output holds
/// the same whole number of vectors and every input at least `ahead + n * N` elements. A
/// prefetch window shorter than that is not prefetched (an empty one turns prefetch off).
///
/// The kernel's arithmetic is in `step` (generated by `stencil!`, which inlines it); the
/// checks here let the loop itself be loads, the kernel's arithmetic and stores: on the
/// 27-point stencil, about 30 instructions per AVX2 vector where per-vector checks made it 46.
#[inline(always)]
pub fn sweep<V: Lanes, const M: usize, const K: usize, const P: usize>(
    inputs: [&[V::Elem]; M],
    ahead: usize,
    outputs: [&mut [V::Elem]; K],
    prefetch: [&[V::Elem]; P],
    streaming: bool,
    step: impl VectorBody<V, M, K>,
) -> bool {
    let Some(first) = outputs.first() else {
        return false;
    };
    let len = first.len();
    let n = len / V::N;
    let Some(needed) = (n * V::N).checked_add(ahead) else {
        return false;
    };
    if len != n * V::N
        || outputs.iter().any(|o| o.len() != len)
        || inputs.iter().any(|i| i.len() < needed)
    {
        return false;
    }
    let aligned = outputs.iter().all(|o| {
        o.as_ptr()
            .cast::<u8>()
            .align_offset(V::N * std::mem::size_of::<V::Elem>())
            == 0
    });
    let prefetching = P > 0 && prefetch.iter().all(|p| p.len() >= needed);
    // Pointers filled by plain loops, not `array::map`, whose out-of-line helper was a call
    // at every row: a call spills the vector registers the caller holds, and on Zen 4 a
    // spilled 512-bit register reloads only once both halves stored reach the cache. Without
    // it the 27-point f32 sweep of a 64^3 grid in cache went from 242 to 232 us (one core).
    let mut input_ptrs = [std::ptr::null::<V::Elem>(); M];
    for (ptr, input) in input_ptrs.iter_mut().zip(&inputs) {
        // `ahead <= needed <= input.len()` (checked above): in bounds or one past the end.
        *ptr = input.as_ptr().wrapping_add(ahead);
    }
    let mut output_ptrs = [std::ptr::null_mut::<V::Elem>(); K];
    for (ptr, output) in output_ptrs.iter_mut().zip(outputs) {
        *ptr = output.as_mut_ptr();
    }
    let mut prefetch_ptrs = [std::ptr::null::<V::Elem>(); P];
    for (ptr, window) in prefetch_ptrs.iter_mut().zip(&prefetch) {
        *ptr = window.as_ptr().wrapping_add(ahead);
    }
    let (inputs, outputs, prefetch) = (input_ptrs, output_ptrs, prefetch_ptrs);
    // SAFETY: in every arm, every input holds `ahead + n * N` elements and every output
    // `n * N` (checked above), so the `k < n` loads and stores are in bounds; outputs are
    // aligned to the vector where streaming (`aligned`); prefetch windows hold
    // `ahead + n * N` elements where prefetching.
    unsafe {
        match (streaming && aligned, prefetching) {
            (true, true) => {
                sweep_unchecked::<V, M, K, P, true, true>(n, inputs, outputs, prefetch, step)
            }
            (true, false) => {
                sweep_unchecked::<V, M, K, P, true, false>(n, inputs, outputs, prefetch, step)
            }
            (false, true) => {
                sweep_unchecked::<V, M, K, P, false, true>(n, inputs, outputs, prefetch, step)
            }
            (false, false) => {
                sweep_unchecked::<V, M, K, P, false, false>(n, inputs, outputs, prefetch, step)
            }
        }
    }
    true
}

/// [`sweep`]'s loop over pointers its checks made valid.
///
/// # Safety
/// For `k < n`: `inputs[i] + k * N` valid for reading `N` elements, `outputs[j] + k * N` for
/// writing `N` (aligned to the vector when `STREAM`), and when `PREFETCH`, `prefetch[p] +
/// k * N` inside one allocation.
#[inline(always)]
unsafe fn sweep_unchecked<
    V: Lanes,
    const M: usize,
    const K: usize,
    const P: usize,
    const STREAM: bool,
    const PREFETCH: bool,
>(
    n: usize,
    inputs: [*const V::Elem; M],
    outputs: [*mut V::Elem; K],
    prefetch: [*const V::Elem; P],
    mut step: impl VectorBody<V, M, K>,
) {
    for k in 0..n {
        let at = k * V::N;
        if PREFETCH {
            for p in prefetch {
                // SAFETY: in bounds (the caller's contract).
                prefetch_at(unsafe { p.add(at) });
            }
        }
        // SAFETY: `N` readable elements at `inputs[i] + at` (the caller's contract).
        let values = step.step(unsafe { load_each::<V, M>(inputs, at) });
        for (o, v) in outputs.iter().zip(values) {
            // SAFETY: `N` writable elements at `o + at`, aligned when `STREAM`.
            unsafe { v.store_at::<STREAM>(o.add(at)) };
        }
    }
}

/// The vector at `ptrs[m] + at` of every `m`, loaded by a loop: `array::map` was not always
/// inlined, and its call spilled the loaded vectors to the stack at every vector (the radius-4
/// star's 17 inputs: a third of its sweep's time in the out-of-line `try_map`, in some builds
/// and not others).
///
/// # Safety
/// `N` readable elements at each `ptrs[m] + at`.
#[inline(always)]
unsafe fn load_each<V: Lanes, const M: usize>(ptrs: [*const V::Elem; M], at: usize) -> [V; M] {
    let mut values = std::mem::MaybeUninit::<[V; M]>::uninit();
    let first = values.as_mut_ptr().cast::<V>();
    for (m, ptr) in ptrs.into_iter().enumerate() {
        // SAFETY: `m < M`, inside the array; the load is the caller's contract.
        unsafe { first.add(m).write(V::load_at(ptr.add(at))) };
    }
    // SAFETY: every element was written above.
    unsafe { values.assume_init() }
}

/// Prefetches the line holding `ptr` into the first-level cache (nothing on machines without
/// the instruction). Prefetching never faults and does not change memory.
#[inline(always)]
fn prefetch_at<T>(ptr: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing the program sees and never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(ptr.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

/// Array lanes: element-wise code any machine runs.
macro_rules! array_lanes {
    ($name:ident, $elem:ty, $n:literal) => {
        /// Lanes as a plain array (no single-instruction shifts).
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name(pub [$elem; $n]);

        impl Lanes for $name {
            type Elem = $elem;
            const N: usize = $n;
            const FAST_SHIFTS: bool = false;
            const SINGLE_SHIFTS: bool = false;
            #[inline(always)]
            fn splat(value: $elem) -> Self {
                $name([value; $n])
            }
            #[inline(always)]
            fn load(data: &[$elem], at: usize) -> Self {
                let mut lanes = [0.0; $n];
                lanes.copy_from_slice(&data[at..at + $n]);
                $name(lanes)
            }
            #[inline(always)]
            fn store(self, data: &mut [$elem], at: usize) {
                data[at..at + $n].copy_from_slice(&self.0);
            }
            #[inline(always)]
            fn stream(self, data: &mut [$elem], at: usize) {
                self.store(data, at);
            }
            #[inline(always)]
            unsafe fn load_at(ptr: *const $elem) -> Self {
                // SAFETY: the caller guarantees `N` readable elements at `ptr`.
                $name(unsafe { ptr.cast::<[$elem; $n]>().read_unaligned() })
            }
            #[inline(always)]
            unsafe fn store_at<const STREAM: bool>(self, ptr: *mut $elem) {
                // SAFETY: the caller guarantees `N` writable elements at `ptr`.
                unsafe { ptr.cast::<[$elem; $n]>().write_unaligned(self.0) }
            }
            #[inline(always)]
            fn add(self, other: Self) -> Self {
                $name(std::array::from_fn(|i| self.0[i] + other.0[i]))
            }
            #[inline(always)]
            fn sub(self, other: Self) -> Self {
                $name(std::array::from_fn(|i| self.0[i] - other.0[i]))
            }
            #[inline(always)]
            fn mul(self, other: Self) -> Self {
                $name(std::array::from_fn(|i| self.0[i] * other.0[i]))
            }
            #[inline(always)]
            fn div(self, other: Self) -> Self {
                $name(std::array::from_fn(|i| self.0[i] / other.0[i]))
            }
            #[inline(always)]
            fn mul_add(self, b: Self, c: Self) -> Self {
                $name(std::array::from_fn(|i| self.0[i] * b.0[i] + c.0[i]))
            }
            #[inline(always)]
            fn neg_mul_add(self, b: Self, c: Self) -> Self {
                $name(std::array::from_fn(|i| c.0[i] - self.0[i] * b.0[i]))
            }
            #[inline(always)]
            fn neg(self) -> Self {
                $name(self.0.map(|x| -x))
            }
            #[inline(always)]
            fn fused_mul_add(self, b: Self, c: Self) -> Self {
                $name(std::array::from_fn(|i| self.0[i].mul_add(b.0[i], c.0[i])))
            }
            #[inline(always)]
            fn shifted<const D: i32>(prev: Self, cur: Self, next: Self) -> Self {
                assert!(
                    D.unsigned_abs() as usize <= $n,
                    "lane shift beyond one vector"
                );
                $name(std::array::from_fn(|i| {
                    let at = i as i32 + D;
                    if at < 0 {
                        prev.0[(at + $n) as usize]
                    } else if at >= $n {
                        next.0[(at - $n) as usize]
                    } else {
                        cur.0[at as usize]
                    }
                }))
            }
        }
    };
}

array_lanes!(F64Array, f64, 4);
array_lanes!(F32Array, f32, 8);

#[cfg(all(target_arch = "x86_64", target_feature = "avx512f"))]
mod avx512 {
    use std::arch::x86_64::*;

    use super::Lanes;

    /// Defines an AVX-512 lane type: `$v` the register type, `$int` the integer view used
    /// by the lane alignment `$align`.
    macro_rules! avx512_lanes {
        (
            $name:ident, $elem:ty, $n:tt, $v:ty,
            load: $load:ident, store: $store:ident, stream: $stream:ident, splat: $splat:ident,
            add: $add:ident, sub: $sub:ident, mul: $mul:ident, div: $div:ident, fmadd: $fmadd:ident,
            fnmadd: $fnmadd:ident, to_int: $to_int:ident, from_int: $from_int:ident,
            align: $intrinsic:ident
        ) => {
            /// Lanes in one AVX-512 register.
            #[derive(Clone, Copy, Debug)]
            pub struct $name(pub $v);

            impl $name {
                /// Lanes `K..N` of `lo` then lanes `0..K` of `hi` (`valign`, as LLVM lowers
                /// the intrinsic).
                #[inline(always)]
                fn align<const K: i32>(hi: Self, lo: Self) -> Self {
                    // SAFETY: AVX-512F is enabled at compile time (this module's cfg).
                    unsafe { $name($from_int($intrinsic::<K>($to_int(hi.0), $to_int(lo.0)))) }
                }
            }

            impl Lanes for $name {
                type Elem = $elem;
                const N: usize = $n;
                const FAST_SHIFTS: bool = true;
                const SINGLE_SHIFTS: bool = true;
                #[inline(always)]
                fn splat(value: $elem) -> Self {
                    // SAFETY: AVX-512F is enabled at compile time (this module's cfg).
                    unsafe { $name($splat(value)) }
                }
                #[inline(always)]
                fn load(data: &[$elem], at: usize) -> Self {
                    let lanes = &data[at..at + $n];
                    // SAFETY: `lanes` holds exactly `N` elements; the load is unaligned;
                    // AVX-512F is enabled at compile time.
                    unsafe { $name($load(lanes.as_ptr())) }
                }
                #[inline(always)]
                fn store(self, data: &mut [$elem], at: usize) {
                    let lanes = &mut data[at..at + $n];
                    // SAFETY: `lanes` holds exactly `N` elements and is borrowed mutably;
                    // the store is unaligned; AVX-512F is enabled at compile time.
                    unsafe { $store(lanes.as_mut_ptr(), self.0) }
                }
                #[inline(always)]
                fn stream(self, data: &mut [$elem], at: usize) {
                    let lanes = &mut data[at..at + $n];
                    if lanes.as_ptr().cast::<u8>().align_offset(64) == 0 {
                        // SAFETY: `lanes` holds exactly `N` elements (64 bytes), is borrowed
                        // mutably and 64-byte aligned; AVX-512F is enabled at compile time.
                        unsafe { $stream(lanes.as_mut_ptr(), self.0) }
                    } else {
                        self.store(data, at);
                    }
                }
                #[inline(always)]
                unsafe fn load_at(ptr: *const $elem) -> Self {
                    // SAFETY: the caller guarantees `N` readable elements at `ptr`; the load
                    // is unaligned; AVX-512F is enabled at compile time.
                    unsafe { $name($load(ptr)) }
                }
                #[inline(always)]
                unsafe fn store_at<const STREAM: bool>(self, ptr: *mut $elem) {
                    if STREAM {
                        // SAFETY: the caller guarantees `N` writable elements at `ptr`,
                        // aligned to the vector; AVX-512F is enabled at compile time.
                        unsafe { $stream(ptr, self.0) }
                    } else {
                        // SAFETY: the caller guarantees `N` writable elements at `ptr`; the
                        // store is unaligned; AVX-512F is enabled at compile time.
                        unsafe { $store(ptr, self.0) }
                    }
                }
                #[inline(always)]
                fn add(self, other: Self) -> Self {
                    // SAFETY: AVX-512F is enabled at compile time.
                    unsafe { $name($add(self.0, other.0)) }
                }
                #[inline(always)]
                fn sub(self, other: Self) -> Self {
                    // SAFETY: AVX-512F is enabled at compile time.
                    unsafe { $name($sub(self.0, other.0)) }
                }
                #[inline(always)]
                fn mul(self, other: Self) -> Self {
                    // SAFETY: AVX-512F is enabled at compile time.
                    unsafe { $name($mul(self.0, other.0)) }
                }
                #[inline(always)]
                fn div(self, other: Self) -> Self {
                    // SAFETY: AVX-512F is enabled at compile time.
                    unsafe { $name($div(self.0, other.0)) }
                }
                #[inline(always)]
                fn mul_add(self, b: Self, c: Self) -> Self {
                    // SAFETY: AVX-512F is enabled at compile time.
                    unsafe { $name($fmadd(self.0, b.0, c.0)) }
                }
                #[inline(always)]
                fn neg_mul_add(self, b: Self, c: Self) -> Self {
                    // SAFETY: AVX-512F is enabled at compile time.
                    unsafe { $name($fnmadd(self.0, b.0, c.0)) }
                }
                #[inline(always)]
                fn neg(self) -> Self {
                    // SAFETY: AVX-512F is enabled at compile time.
                    unsafe {
                        let sign = $to_int($splat(-0.0));
                        $name($from_int(_mm512_xor_si512($to_int(self.0), sign)))
                    }
                }
                #[inline(always)]
                fn fused_mul_add(self, b: Self, c: Self) -> Self {
                    // AVX-512F's `vfmadd` rounds once.
                    self.mul_add(b, c)
                }
                #[inline(always)]
                fn shifted<const D: i32>(prev: Self, cur: Self, next: Self) -> Self {
                    avx512_shift!($n, D, prev, cur, next)
                }
            }
        };
    }

    /// `shifted::<D>` for `$n` lanes: `valign` of (`cur`, `prev`) below, (`next`, `cur`)
    /// above, one arm per displacement (the match folds at compile time).
    macro_rules! avx512_shift {
        (8, $d:ident, $prev:ident, $cur:ident, $next:ident) => {
            match $d {
                0 => $cur,
                8 => $next,
                -8 => $prev,
                1 => Self::align::<1>($next, $cur),
                2 => Self::align::<2>($next, $cur),
                3 => Self::align::<3>($next, $cur),
                4 => Self::align::<4>($next, $cur),
                5 => Self::align::<5>($next, $cur),
                6 => Self::align::<6>($next, $cur),
                7 => Self::align::<7>($next, $cur),
                -1 => Self::align::<7>($cur, $prev),
                -2 => Self::align::<6>($cur, $prev),
                -3 => Self::align::<5>($cur, $prev),
                -4 => Self::align::<4>($cur, $prev),
                -5 => Self::align::<3>($cur, $prev),
                -6 => Self::align::<2>($cur, $prev),
                -7 => Self::align::<1>($cur, $prev),
                _ => panic!("lane shift beyond one vector"),
            }
        };
        (16, $d:ident, $prev:ident, $cur:ident, $next:ident) => {
            match $d {
                0 => $cur,
                16 => $next,
                -16 => $prev,
                1 => Self::align::<1>($next, $cur),
                2 => Self::align::<2>($next, $cur),
                3 => Self::align::<3>($next, $cur),
                4 => Self::align::<4>($next, $cur),
                5 => Self::align::<5>($next, $cur),
                6 => Self::align::<6>($next, $cur),
                7 => Self::align::<7>($next, $cur),
                8 => Self::align::<8>($next, $cur),
                9 => Self::align::<9>($next, $cur),
                10 => Self::align::<10>($next, $cur),
                11 => Self::align::<11>($next, $cur),
                12 => Self::align::<12>($next, $cur),
                13 => Self::align::<13>($next, $cur),
                14 => Self::align::<14>($next, $cur),
                15 => Self::align::<15>($next, $cur),
                -1 => Self::align::<15>($cur, $prev),
                -2 => Self::align::<14>($cur, $prev),
                -3 => Self::align::<13>($cur, $prev),
                -4 => Self::align::<12>($cur, $prev),
                -5 => Self::align::<11>($cur, $prev),
                -6 => Self::align::<10>($cur, $prev),
                -7 => Self::align::<9>($cur, $prev),
                -8 => Self::align::<8>($cur, $prev),
                -9 => Self::align::<7>($cur, $prev),
                -10 => Self::align::<6>($cur, $prev),
                -11 => Self::align::<5>($cur, $prev),
                -12 => Self::align::<4>($cur, $prev),
                -13 => Self::align::<3>($cur, $prev),
                -14 => Self::align::<2>($cur, $prev),
                -15 => Self::align::<1>($cur, $prev),
                _ => panic!("lane shift beyond one vector"),
            }
        };
    }

    avx512_lanes!(
        F64x8, f64, 8, __m512d,
        load: _mm512_loadu_pd, store: _mm512_storeu_pd, stream: _mm512_stream_pd,
        splat: _mm512_set1_pd, add: _mm512_add_pd, sub: _mm512_sub_pd, mul: _mm512_mul_pd, div: _mm512_div_pd,
        fmadd: _mm512_fmadd_pd, fnmadd: _mm512_fnmadd_pd, to_int: _mm512_castpd_si512,
        from_int: _mm512_castsi512_pd, align: _mm512_alignr_epi64
    );
    avx512_lanes!(
        F32x16, f32, 16, __m512,
        load: _mm512_loadu_ps, store: _mm512_storeu_ps, stream: _mm512_stream_ps,
        splat: _mm512_set1_ps, add: _mm512_add_ps, sub: _mm512_sub_ps, mul: _mm512_mul_ps, div: _mm512_div_ps,
        fmadd: _mm512_fmadd_ps, fnmadd: _mm512_fnmadd_ps, to_int: _mm512_castps_si512,
        from_int: _mm512_castsi512_ps, align: _mm512_alignr_epi32
    );
}

#[cfg(all(target_arch = "x86_64", target_feature = "avx512f"))]
pub use avx512::{F32x16, F64x8};

#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
mod avx2 {
    use std::arch::x86_64::*;

    use super::Lanes;

    /// Defines an AVX2 lane type; `$n` lanes in one 256-bit register, `$cat` the shift of
    /// the concatenation of two registers (see `F64x4::concat` and `F32x8::concat`).
    macro_rules! avx2_lanes {
        (
            $name:ident, $elem:ty, $n:literal, $v:ty,
            load: $load:ident, store: $store:ident, stream: $stream:ident, splat: $splat:ident,
            add: $add:ident, sub: $sub:ident, mul: $mul:ident, div: $div:ident, fmadd: $fmadd:ident,
            fnmadd: $fnmadd:ident, xor: $xor:ident
        ) => {
            /// Lanes in one AVX register.
            #[derive(Clone, Copy, Debug)]
            pub struct $name(pub $v);

            impl Lanes for $name {
                type Elem = $elem;
                const N: usize = $n;
                const FAST_SHIFTS: bool = true;
                const SINGLE_SHIFTS: bool = false;
                #[inline(always)]
                fn splat(value: $elem) -> Self {
                    // SAFETY: AVX2 is enabled at compile time (this module's cfg).
                    unsafe { $name($splat(value)) }
                }
                #[inline(always)]
                fn load(data: &[$elem], at: usize) -> Self {
                    let lanes = &data[at..at + $n];
                    // SAFETY: `lanes` holds exactly `N` elements; the load is unaligned;
                    // AVX2 is enabled at compile time.
                    unsafe { $name($load(lanes.as_ptr())) }
                }
                #[inline(always)]
                fn store(self, data: &mut [$elem], at: usize) {
                    let lanes = &mut data[at..at + $n];
                    // SAFETY: `lanes` holds exactly `N` elements and is borrowed mutably;
                    // the store is unaligned; AVX2 is enabled at compile time.
                    unsafe { $store(lanes.as_mut_ptr(), self.0) }
                }
                #[inline(always)]
                fn stream(self, data: &mut [$elem], at: usize) {
                    let lanes = &mut data[at..at + $n];
                    if lanes.as_ptr().cast::<u8>().align_offset(32) == 0 {
                        // SAFETY: `lanes` holds exactly `N` elements (32 bytes), is borrowed
                        // mutably and 32-byte aligned; AVX2 is enabled at compile time.
                        unsafe { $stream(lanes.as_mut_ptr(), self.0) }
                    } else {
                        self.store(data, at);
                    }
                }
                #[inline(always)]
                unsafe fn load_at(ptr: *const $elem) -> Self {
                    // SAFETY: the caller guarantees `N` readable elements at `ptr`; the load
                    // is unaligned; AVX2 is enabled at compile time.
                    unsafe { $name($load(ptr)) }
                }
                #[inline(always)]
                unsafe fn store_at<const STREAM: bool>(self, ptr: *mut $elem) {
                    if STREAM {
                        // SAFETY: the caller guarantees `N` writable elements at `ptr`,
                        // aligned to the vector; AVX2 is enabled at compile time.
                        unsafe { $stream(ptr, self.0) }
                    } else {
                        // SAFETY: the caller guarantees `N` writable elements at `ptr`; the
                        // store is unaligned; AVX2 is enabled at compile time.
                        unsafe { $store(ptr, self.0) }
                    }
                }
                #[inline(always)]
                fn add(self, other: Self) -> Self {
                    // SAFETY: AVX2 is enabled at compile time.
                    unsafe { $name($add(self.0, other.0)) }
                }
                #[inline(always)]
                fn sub(self, other: Self) -> Self {
                    // SAFETY: AVX2 is enabled at compile time.
                    unsafe { $name($sub(self.0, other.0)) }
                }
                #[inline(always)]
                fn mul(self, other: Self) -> Self {
                    // SAFETY: AVX2 is enabled at compile time.
                    unsafe { $name($mul(self.0, other.0)) }
                }
                #[inline(always)]
                fn div(self, other: Self) -> Self {
                    // SAFETY: AVX2 is enabled at compile time.
                    unsafe { $name($div(self.0, other.0)) }
                }
                #[inline(always)]
                fn mul_add(self, b: Self, c: Self) -> Self {
                    #[cfg(target_feature = "fma")]
                    // SAFETY: FMA is enabled at compile time.
                    return unsafe { $name($fmadd(self.0, b.0, c.0)) };
                    #[cfg(not(target_feature = "fma"))]
                    return self.mul(b).add(c);
                }
                #[inline(always)]
                fn neg_mul_add(self, b: Self, c: Self) -> Self {
                    #[cfg(target_feature = "fma")]
                    // SAFETY: FMA is enabled at compile time.
                    return unsafe { $name($fnmadd(self.0, b.0, c.0)) };
                    #[cfg(not(target_feature = "fma"))]
                    return c.sub(self.mul(b));
                }
                #[inline(always)]
                fn neg(self) -> Self {
                    // SAFETY: AVX2 is enabled at compile time.
                    unsafe { $name($xor(self.0, $splat(-0.0))) }
                }
                #[inline(always)]
                fn fused_mul_add(self, b: Self, c: Self) -> Self {
                    #[cfg(target_feature = "fma")]
                    return self.mul_add(b, c);
                    #[cfg(not(target_feature = "fma"))]
                    // SAFETY: the register and the array have the same size, and every bit
                    // pattern is a valid value of either.
                    return unsafe {
                        let [a, b, c]: [[$elem; $n]; 3] = std::mem::transmute([self.0, b.0, c.0]);
                        $name(std::mem::transmute::<[$elem; $n], $v>(std::array::from_fn(
                            |i| a[i].mul_add(b[i], c[i]),
                        )))
                    };
                }
                #[inline(always)]
                fn shifted<const D: i32>(prev: Self, cur: Self, next: Self) -> Self {
                    match D {
                        0 => cur,
                        $n => next,
                        d if d == -$n => prev,
                        d if d > 0 && d < $n => Self::concat(cur, next, d),
                        d if d < 0 && d > -$n => Self::concat(prev, cur, $n + d),
                        _ => panic!("lane shift beyond one vector"),
                    }
                }
            }
        };
    }

    avx2_lanes!(
        F64x4, f64, 4, __m256d,
        load: _mm256_loadu_pd, store: _mm256_storeu_pd, stream: _mm256_stream_pd,
        splat: _mm256_set1_pd, add: _mm256_add_pd, sub: _mm256_sub_pd, mul: _mm256_mul_pd, div: _mm256_div_pd,
        fmadd: _mm256_fmadd_pd, fnmadd: _mm256_fnmadd_pd, xor: _mm256_xor_pd
    );
    avx2_lanes!(
        F32x8, f32, 8, __m256,
        load: _mm256_loadu_ps, store: _mm256_storeu_ps, stream: _mm256_stream_ps,
        splat: _mm256_set1_ps, add: _mm256_add_ps, sub: _mm256_sub_ps, mul: _mm256_mul_ps, div: _mm256_div_ps,
        fmadd: _mm256_fmadd_ps, fnmadd: _mm256_fnmadd_ps, xor: _mm256_xor_ps
    );

    impl F64x4 {
        /// Lanes `k..k + 4` of the concatenation `lo, hi` (`0 < k < 4`): the middle pair by
        /// `vperm2f128`, odd shifts by `vshufpd` with it.
        #[inline(always)]
        fn concat(lo: Self, hi: Self, k: i32) -> Self {
            // SAFETY: AVX2 is enabled at compile time (this module's cfg).
            unsafe {
                let mid = _mm256_permute2f128_pd::<0x21>(lo.0, hi.0);
                F64x4(match k {
                    1 => _mm256_shuffle_pd::<0b0101>(lo.0, mid),
                    2 => mid,
                    _ => _mm256_shuffle_pd::<0b0101>(mid, hi.0),
                })
            }
        }
    }

    impl F32x8 {
        /// Lanes `k..k + 8` of the concatenation `lo, hi` (`0 < k < 8`): the middle half by
        /// `vperm2f128`, the rest by `vpalignr` within 128-bit lanes.
        #[inline(always)]
        fn concat(lo: Self, hi: Self, k: i32) -> Self {
            // SAFETY: AVX2 is enabled at compile time (this module's cfg).
            unsafe {
                let mid = _mm256_permute2f128_ps::<0x21>(lo.0, hi.0);
                let (l, m, h) = (
                    _mm256_castps_si256(lo.0),
                    _mm256_castps_si256(mid),
                    _mm256_castps_si256(hi.0),
                );
                F32x8(_mm256_castsi256_ps(match k {
                    1 => _mm256_alignr_epi8::<4>(m, l),
                    2 => _mm256_alignr_epi8::<8>(m, l),
                    3 => _mm256_alignr_epi8::<12>(m, l),
                    4 => m,
                    5 => _mm256_alignr_epi8::<4>(h, m),
                    6 => _mm256_alignr_epi8::<8>(h, m),
                    _ => _mm256_alignr_epi8::<12>(h, m),
                }))
            }
        }
    }
}

#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
pub use avx2::{F32x8, F64x4};

/// The `f64` lanes of this build: `F64x8` with AVX-512F, else `F64x4` with AVX2, else
/// [`F64Array`].
#[cfg(all(target_arch = "x86_64", target_feature = "avx512f"))]
pub type F64 = F64x8;
/// The `f64` lanes of this build: `F64x8` with AVX-512F, else `F64x4` with AVX2, else
/// [`F64Array`].
#[cfg(all(
    target_arch = "x86_64",
    target_feature = "avx2",
    not(target_feature = "avx512f")
))]
pub type F64 = F64x4;
/// The `f64` lanes of this build: `F64x8` with AVX-512F, else `F64x4` with AVX2, else
/// [`F64Array`].
#[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
pub type F64 = F64Array;
/// The `f32` lanes of this build: `F32x16` with AVX-512F, else `F32x8` with AVX2, else
/// [`F32Array`].
#[cfg(all(target_arch = "x86_64", target_feature = "avx512f"))]
pub type F32 = F32x16;
/// The `f32` lanes of this build: `F32x16` with AVX-512F, else `F32x8` with AVX2, else
/// [`F32Array`].
#[cfg(all(
    target_arch = "x86_64",
    target_feature = "avx2",
    not(target_feature = "avx512f")
))]
pub type F32 = F32x8;
/// The `f32` lanes of this build: `F32x16` with AVX-512F, else `F32x8` with AVX2, else
/// [`F32Array`].
#[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
pub type F32 = F32Array;

#[cfg(test)]
mod tests {
    use super::*;
    use stencil_core::row::{RowArgs, RowInput};

    /// `out[k] = u[k - 1] + 2 * u[k + 1]` by lane shifts (one input, carried).
    #[derive(Clone, Copy)]
    struct Neighbours {
        prev: F64,
        cur: F64,
    }

    impl VectorBody<F64, 1, 1> for Neighbours {
        fn step(&mut self, [next]: [F64; 1]) -> [F64; 1] {
            let left = F64::shifted::<-1>(self.prev, self.cur, next);
            let right = F64::shifted::<1>(self.prev, self.cur, next);
            (self.prev, self.cur) = (self.cur, next);
            [left.add(F64::splat(2.0).mul(right))]
        }
    }

    impl RowBody<F64, 1, 1> for Neighbours {
        fn start(&mut self, [prev]: [F64; 1], [cur]: [F64; 1]) {
            (self.prev, self.cur) = (prev, cur);
        }
    }

    /// Rows of up to `STRIDE` points, `STRIDE` apart (the test of whole runs spaces longer
    /// rows wider).
    const STRIDE: usize = 96;

    #[test]
    fn sweep_rows_computes_every_point_of_every_row_once() {
        let vector = F64::N;
        // Rows of `PAIRED_ROW_BYTES` and more go one at a time, shorter ones in pairs.
        let long = PAIRED_ROW_BYTES / std::mem::size_of::<f64>();
        for (n, first, planes) in [
            (long + 3, 13, 1),
            (long, 8, 2),
            (long - 5, 11, 2),
            (40, 11, 1),
            (40, 16, 2),
            (23, 9, 1),
            (23, 9, 3),
            (2 * vector, 8, 2),
            (vector + 3, 12, 1),
            (vector, 8, 2),
            (vector - 3, 9, 2),
        ] {
            let rows = 4;
            // Rows `stride` apart, planes `plane` apart: room for a window on either side.
            let stride = STRIDE.max(n + 2 * vector + 8);
            let plane = 5 * stride;
            let input: Vec<f64> = (0..planes * plane + first + n + vector)
                .map(|k| ((k * 37) % 101) as f64 - 50.0)
                .collect();
            let inputs = [RowInput::new(&input, first, [plane, stride, 1, 0])];
            let args = RowArgs::new(n, &inputs, &[])
                .with_rows(rows, 1)
                .with_planes(planes, 0);
            let windows = [args
                .try_row_window(0, [0; 4], -(vector as isize))
                .and_then(|w| w.try_rows(rows, n + 2 * vector))
                .expect("the windows fit the storage")];
            let mut data = vec![f64::NAN; planes * plane + first + n];
            // SAFETY: `planes` planes `plane` apart of `rows` rows `stride` apart of `n < stride`
            // points from `first`, all inside `data` (`rows * stride < plane`), none overlapping,
            // reached through the run alone.
            let mut output = unsafe {
                OutputRun::from_raw_parts_planes(
                    data.as_mut_ptr().add(first),
                    n,
                    stride,
                    rows,
                    plane,
                    planes,
                )
            };
            let mut plain_points = 0;
            let zero = F64::splat(0.0);
            let body = Neighbours {
                prev: zero,
                cur: zero,
            };
            let mut plain = |p: usize, r: usize, from: usize, [out]: [&mut [f64]; 1]| {
                for (x, value) in out.iter_mut().enumerate() {
                    let at = first + p * plane + r * stride + from + x;
                    *value = input[at - 1] + 2.0 * input[at + 1];
                }
                plain_points += out.len();
            };
            let outputs = &mut [&mut output];
            if planes == 1 {
                sweep_rows(
                    &windows,
                    [2 * vector],
                    outputs,
                    1..rows,
                    n,
                    body,
                    |r, from, out| plain(0, r, from, out),
                );
            } else {
                sweep_planes(&windows, [2 * vector], outputs, 1..rows, n, body, plain);
            }
            for (at, &got) in data.iter().enumerate() {
                let k = at.wrapping_sub(first);
                let (p, r, x) = (k / plane, k % plane / stride, k % stride);
                if at >= first && p < planes && (1..rows).contains(&r) && x < n {
                    let want = input[at - 1] + 2.0 * input[at + 1];
                    assert_eq!(got, want, "{n} {first} plane {p} row {r} point {x}");
                } else {
                    // Row 0, the gaps between rows and planes: never written.
                    assert!(got.is_nan(), "{n} {first} element {at}");
                }
            }
            // Rows of a vector or more are all vectors; shorter ones all plain.
            let plain_rows = if n < vector { rows - 1 } else { 0 };
            assert_eq!(plain_points, planes * plain_rows * n, "{n} {first}");
        }
    }

    #[test]
    fn sweep_rows_without_inputs_leaves_every_row_to_the_plain_loop() {
        #[derive(Clone, Copy)]
        struct Nothing;
        impl VectorBody<F64, 0, 1> for Nothing {
            fn step(&mut self, _: [F64; 0]) -> [F64; 1] {
                unreachable!("no vectors without inputs")
            }
        }
        impl RowBody<F64, 0, 1> for Nothing {
            fn start(&mut self, _: [F64; 0], _: [F64; 0]) {}
        }
        let mut data = vec![f64::NAN; 2 * STRIDE];
        let mut output = OutputRun::new(&mut data, 0, 50, STRIDE, 2).unwrap();
        sweep_rows::<F64, 0, 1>(
            &[],
            [],
            &mut [&mut output],
            0..2,
            50,
            Nothing,
            |r, from, [out]| {
                for (x, value) in out.iter_mut().enumerate() {
                    *value = (r * 100 + from + x) as f64;
                }
            },
        );
        for r in 0..2 {
            for x in 0..50 {
                assert_eq!(data[r * STRIDE + x], (r * 100 + x) as f64);
            }
        }
    }

    fn ramp<T: From<u16>>(n: usize, from: u16) -> Vec<T> {
        (0..n as u16).map(|k| T::from(from + k)).collect()
    }

    /// Every operation of `V` against scalar arithmetic, every legal shift against indexing.
    fn check<V: Lanes>(data: &[V::Elem], to_f64: impl Fn(V::Elem) -> f64)
    where
        V::Elem: Default,
    {
        let n = V::N;
        let lanes = |v: V| {
            let mut out = vec![V::Elem::default(); n];
            v.store(&mut out, 0);
            out.into_iter().map(&to_f64).collect::<Vec<f64>>()
        };
        let (prev, cur, next) = (V::load(data, 0), V::load(data, n), V::load(data, 2 * n));
        let scalar: Vec<f64> = data.iter().map(|&v| to_f64(v)).collect();
        macro_rules! shifts {
            ($($d:literal)*) => {$(
                if ($d as i32).unsigned_abs() as usize <= n {
                    let got = lanes(V::shifted::<$d>(prev, cur, next));
                    let want: Vec<f64> =
                        (0..n).map(|i| scalar[(n as i32 + i as i32 + $d) as usize]).collect();
                    assert_eq!(got, want, "shift {}", $d);
                }
            )*};
        }
        shifts!(-16 -15 -14 -13 -12 -11 -10 -9 -8 -7 -6 -5 -4 -3 -2 -1
                0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16);
        let (a, b) = (lanes(cur), lanes(next));
        let two = V::splat(data[2]);
        let t = to_f64(data[2]);
        let each = |f: &dyn Fn(f64, f64) -> f64| -> Vec<f64> {
            a.iter().zip(&b).map(|(&x, &y)| f(x, y)).collect()
        };
        assert_eq!(lanes(cur.add(next)), each(&|x, y| x + y));
        assert_eq!(lanes(cur.sub(next)), each(&|x, y| x - y));
        assert_eq!(lanes(cur.mul(next)), each(&|x, y| x * y));
        // Small integers: fused and unfused agree exactly.
        assert_eq!(lanes(cur.mul_add(two, next)), each(&|x, y| x * t + y));
        assert_eq!(lanes(cur.neg_mul_add(two, next)), each(&|x, y| y - x * t));
        // Streaming to an unaligned place stores plainly; out of bounds panics.
        let mut out = vec![V::Elem::default(); 3 * n];
        cur.stream(&mut out, 1);
        assert_eq!(out[1..=n].iter().map(|&v| to_f64(v)).collect::<Vec<_>>(), a);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            V::load(data, data.len() - n + 1)
        }));
        assert!(caught.is_err());
    }

    #[test]
    fn array_lanes_compute_what_scalars_do() {
        check::<F64Array>(&ramp::<f64>(3 * F64Array::N, 1), |v| v);
        check::<F32Array>(&ramp::<f32>(3 * F32Array::N, 1), f64::from);
    }

    #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
    #[test]
    fn avx2_lanes_compute_what_scalars_do() {
        check::<F64x4>(&ramp::<f64>(3 * F64x4::N, 1), |v| v);
        check::<F32x8>(&ramp::<f32>(3 * F32x8::N, 1), f64::from);
    }

    /// `fused_mul_add` against the scalar `mul_add`, bit for bit, on products that round
    /// unfused; `neg` against the scalar negation, zeros of both signs included.
    macro_rules! fused_and_negated {
        ($v:ty, $e:ty) => {{
            let n = <$v as Lanes>::N;
            // A power of two below the square root of a quarter epsilon.
            let e: $e = if <$e>::EPSILON < 1e-9 {
                2f64.powi(-28) as $e
            } else {
                2f32.powi(-13) as $e
            };
            let a: Vec<$e> = (0..n).map(|i| 1.0 + e * (i + 1) as $e).collect();
            let b: Vec<$e> = (0..n).map(|i| 1.0 - e * (i + 1) as $e).collect();
            let c: Vec<$e> = (0..n).map(|i| i as $e - 1.0).collect();
            let mut out: Vec<$e> = vec![0.0; n];
            <$v>::load(&a, 0)
                .fused_mul_add(<$v>::load(&b, 0), <$v>::load(&c, 0))
                .store(&mut out, 0);
            for i in 0..n {
                let want = a[i].mul_add(b[i], c[i]);
                assert_eq!(out[i].to_bits(), want.to_bits(), "lane {i}");
            }
            // Lane 0: `1 - e^2` rounds to 1 unfused, so only one rounding leaves `-e^2`.
            assert_eq!(a[0] * b[0] + c[0], 0.0);
            assert_eq!(out[0], -(e * e));
            let z: Vec<$e> = (0..n)
                .map(|i| match i % 3 {
                    0 => 0.0,
                    1 => -0.0,
                    _ => i as $e - 7.5,
                })
                .collect();
            <$v>::load(&z, 0).neg().store(&mut out, 0);
            for i in 0..n {
                assert_eq!(out[i].to_bits(), (-z[i]).to_bits(), "lane {i}");
            }
        }};
    }

    #[test]
    fn fused_multiply_adds_round_once_and_negation_flips_the_sign_in_every_lane_type() {
        fused_and_negated!(F64Array, f64);
        fused_and_negated!(F32Array, f32);
        fused_and_negated!(F64, f64);
        fused_and_negated!(F32, f32);
        #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
        {
            fused_and_negated!(F64x4, f64);
            fused_and_negated!(F32x8, f32);
        }
    }

    #[test]
    fn the_build_lanes_compute_what_scalars_do() {
        check::<F64>(&ramp::<f64>(3 * F64::N, 1), |v| v);
        check::<F32>(&ramp::<f32>(3 * F32::N, 1), f64::from);
    }

    /// A step with carried state: `[2a + b, the previous vector's a]` (zero at first).
    struct Carry<V> {
        prev: V,
        two: V,
    }

    impl<V: Lanes> VectorBody<V, 2, 2> for Carry<V> {
        fn step(&mut self, [a, b]: [V; 2]) -> [V; 2] {
            let prev = std::mem::replace(&mut self.prev, a);
            [a.mul_add(self.two, b), prev]
        }
    }

    /// `sweep` against indexing: every output point, both store kinds, aligned and not, and
    /// every refusal leaving the outputs untouched.
    fn check_sweep<V: Lanes>()
    where
        V::Elem: From<u16> + Default + PartialEq + std::fmt::Debug,
    {
        let n = V::N;
        let vectors = 5;
        let ahead = 3;
        let a = ramp::<V::Elem>(ahead + vectors * n + 2, 1);
        let b = ramp::<V::Elem>(ahead + vectors * n, 1000);
        let carry = || Carry {
            prev: V::splat(V::Elem::default()),
            two: V::splat(V::Elem::from(2)),
        };
        let poison = V::Elem::from(9999);
        // Offsets 0 and 1 from a vector-aligned start: streaming, and its plain fallback.
        for offset in [0, 1] {
            for streaming in [false, true] {
                let mut o0 = vec![poison; vectors * n + 2 * n];
                let mut o1 = vec![poison; vectors * n + 2 * n];
                let bytes = n * std::mem::size_of::<V::Elem>();
                let s0 = o0.as_ptr().cast::<u8>().align_offset(bytes) / size_of::<V::Elem>();
                let s1 = o1.as_ptr().cast::<u8>().align_offset(bytes) / size_of::<V::Elem>();
                let (s0, s1) = (s0 + offset, s1 + offset);
                let ran = sweep::<V, 2, 2, 1>(
                    [&a, &b],
                    ahead,
                    [&mut o0[s0..s0 + vectors * n], &mut o1[s1..s1 + vectors * n]],
                    [&a],
                    streaming,
                    carry(),
                );
                assert!(ran);
                for i in 0..vectors * n {
                    let (x, y) = (a[ahead + i], b[ahead + i]);
                    let mut want = vec![V::Elem::default(); n];
                    V::splat(x)
                        .mul_add(V::splat(V::Elem::from(2)), V::splat(y))
                        .store(&mut want, 0);
                    assert_eq!(o0[s0 + i], want[0], "point {i}");
                    let prev = if i < n {
                        V::Elem::default()
                    } else {
                        a[ahead + i - n]
                    };
                    assert_eq!(o1[s1 + i], prev, "point {i}");
                }
                assert!(
                    o0[..s0]
                        .iter()
                        .chain(&o0[s0 + vectors * n..])
                        .all(|&v| v == poison)
                );
                assert!(
                    o1[..s1]
                        .iter()
                        .chain(&o1[s1 + vectors * n..])
                        .all(|&v| v == poison)
                );
            }
        }
        // Refusals: a partial vector, outputs of different lengths, an input too short.
        let mut o0 = vec![poison; vectors * n];
        let mut o1 = vec![poison; vectors * n];
        let short = &a[..ahead + vectors * n - 1];
        assert!(!sweep::<V, 2, 2, 0>(
            [&a, &b],
            ahead,
            [&mut o0[1..], &mut o1[1..]],
            [],
            true,
            carry()
        ));
        assert!(!sweep::<V, 2, 2, 0>(
            [&a, &b],
            ahead,
            [&mut o0[n..], &mut o1],
            [],
            false,
            carry()
        ));
        assert!(!sweep::<V, 2, 2, 0>(
            [short, &b],
            ahead,
            [&mut o0, &mut o1],
            [],
            false,
            carry()
        ));
        assert!(!sweep::<V, 2, 2, 0>(
            [&a, &b],
            usize::MAX,
            [&mut o0, &mut o1],
            [],
            false,
            carry()
        ));
        assert!(o0.iter().chain(&o1).all(|&v| v == poison));
        // A prefetch window too short turns prefetching off, not the sweep.
        assert!(sweep::<V, 2, 2, 1>(
            [&a, &b],
            ahead,
            [&mut o0, &mut o1],
            [short],
            false,
            carry()
        ));
        assert_eq!(o1[n], a[ahead]);
    }

    #[test]
    fn sweep_computes_what_indexing_does_and_refuses_bad_shapes() {
        check_sweep::<F64Array>();
        check_sweep::<F32Array>();
        check_sweep::<F64>();
        check_sweep::<F32>();
    }

    #[test]
    fn prefetch_outside_the_slice_does_nothing() {
        let data = [1.0f64; 8];
        prefetch(&data, 0);
        prefetch(&data, 8);
        prefetch(&data, usize::MAX);
    }
}
