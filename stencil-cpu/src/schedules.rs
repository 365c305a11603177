//! Which CPU schedules the backend proposes: the default one and a varied sample for `verify`.
//!
//! The default cuts the interior into about four tiles per thread, so work stealing can even
//! out uneven tiles, along the outer dimensions only: rows stay whole, which keeps the inner
//! loops long and the hardware prefetchers streaming. In 2-D and more the outermost dimension
//! is split first; only when it is too short for the target count (say 3 planes for 16
//! threads) is the next one split too. A 1-D interior is one row, so it is split into chunks
//! of at least [`MIN_1D_CHUNK`] points (short enough to share, long enough that the per-tile
//! cost vanishes). One cache rule is the default's own: a 3-D sweep cuts its planes into slabs
//! of rows whose input planes fit the first-level cache, for grids the last-level cache
//! holds (where the loop, not memory, sets the pace), or half the second-level cache, for
//! grids beyond it ([`slab_rows`]). Cache blocking for the last-level cache (core blocks
//! sized to it) is the tuner's business.

use stencil_core::{CpuSchedule, CpuStores, DEFAULT_PREFETCH_ROWS, MAX_DIMS, PREFETCH_AUTO};

use crate::specialised::RowPlan;
use crate::tiling::Tiling;

/// Points per point-loop call when streaming or prefetching and the schedule leaves it to the
/// backend: the generic path's per-worker output buffers stay in the first-level cache, and
/// the rows the generated loop prefetches before each call stay a few dozen lines.
pub const DEFAULT_STREAMING_ROW_BLOCK: usize = 1024;

/// Rows per register block when the schedule leaves it to the backend (`register_rows = 0`)
/// and three rows of the unit-stride extent exceed the first-level cache (one row otherwise).
///
/// A row that does not stay in the first-level cache between the rows that read it comes from
/// the second level once per output row reading it (three times for a radius of one);
/// jamming four rows shares the loads of the rows they have in common. W3 (2-D 5-point,
/// 8192^2 f64, rows of 64 KiB) on 2 Zen 5 cores with 48 KiB first-level caches, 1 thread:
/// 29.4 ms one row at a time, 24.1 ms four rows. W1 (3-D 7-point, 256^3, rows of 2 KiB): no
/// gain from jamming (8.2 ms one row, 8.4-12 ms two or four).
pub const LONG_ROW_REGISTER_ROWS: usize = 4;

/// The register block a schedule asking for `requested` rows runs with, for rows of
/// `row_len` elements of `elem_bytes` bytes on a machine whose first-level data cache holds
/// `l1_bytes`: `requested`, or for 0 the backend's choice (see [`LONG_ROW_REGISTER_ROWS`]).
pub(crate) fn register_rows(
    requested: usize,
    row_len: usize,
    elem_bytes: usize,
    l1_bytes: usize,
) -> usize {
    match requested {
        0 if 3 * row_len * elem_bytes > l1_bytes => LONG_ROW_REGISTER_ROWS,
        0 => 1,
        n => n,
    }
}

/// Most rows of a slab block, as a fraction of the first-level cache: the `2r + 1` planes of
/// input rows a block of the second-innermost axis reads per plane (see [`slab_rows`]) may
/// take two thirds of it, the rest for the output rows and the stack.
const SLAB_L1_FRACTION: (usize, usize) = (2, 3);

/// Most rows of a slab block of a sweep from memory, as a fraction of the second-level cache:
/// the `2r + 1` planes of input rows may take half of it, the rest for the output rows and
/// the lines the prefetches bring ahead (see [`slab_rows`]).
const SLAB_L2_FRACTION: (usize, usize) = (1, 2);

/// Fewest rows of a slab block: below this the rows a block reads twice (its halo along the
/// second-innermost axis, `2r` rows per block) cost more than the reuse gains.
pub const MIN_SLAB_ROWS: usize = 16;

/// The rows of the blocks into which the default schedule cuts the second-innermost axis of a
/// 3-D (or more) sweep whose blocks read `slab_bytes_per_row` bytes of input per row of a
/// plane ([`slab_bytes_per_row`]): for grids the cache holds (`grid_bytes <= llc_bytes`),
/// the most rows whose slab fits two thirds of the first-level cache (`l1_bytes`), for grids
/// beyond it half the second-level cache (`l2_bytes`); evened out over the axis. `None` (the
/// axis stays whole) when the whole axis fits already, when fewer than [`MIN_SLAB_ROWS`]
/// rows would fit, and for fewer than three dimensions.
///
/// A block sweeps its outermost axis plane by plane; each plane reads the `2r + 1` planes
/// around it, so when the block's rows of those planes stay in a cache close to the core,
/// each input row comes from the farther level once rather than once per plane reading it.
/// In cache, the 7-point f64 sweep of a 64^3 grid on a Zen 5 core (48 KiB first-level cache),
/// one thread: whole planes 79 us, blocks of 16 rows (30 KiB of rows) 65-66 us, against 72 us
/// for gcc's loop; f32, 32 rows: 42 against 44 us. From memory, on the same core (1 MiB
/// second-level cache), the 7-point f64 sweep of 256^3: whole planes (three of 0.5 MiB)
/// 10.8-11.5 ms, blocks of 52-64 rows 8.0-8.2 ms (1 thread), 6.7 against 5.8 ms (2 threads);
/// 320^3: 18.0 against 16.8-16.9 ms in blocks of 48-64 rows, while blocks of 96 rows, whose
/// planes overflow half the cache, ran at 18.8.
pub(crate) fn slab_rows(
    shape: &[usize],
    slab_bytes_per_row: usize,
    grid_bytes: usize,
    llc_bytes: usize,
    (l1_bytes, l2_bytes): (usize, usize),
) -> Option<usize> {
    let n_dims = shape.len().min(MAX_DIMS);
    if n_dims < 3 || slab_bytes_per_row == 0 {
        return None;
    }
    let rows = shape[n_dims - 2];
    let budget = if grid_bytes <= llc_bytes {
        l1_bytes * SLAB_L1_FRACTION.0 / SLAB_L1_FRACTION.1
    } else {
        l2_bytes * SLAB_L2_FRACTION.0 / SLAB_L2_FRACTION.1
    };
    let most = budget / slab_bytes_per_row;
    if most >= rows || most < MIN_SLAB_ROWS {
        return None;
    }
    Some(rows.div_ceil(rows.div_ceil(most)))
}

/// The input bytes per row of a slab block of `kernel` on an interior of `shape` (see
/// [`slab_rows`]): for every input, the rows of the planes its reads span across the axis a
/// block sweeps plane by plane (the third-innermost: the outermost in 3-D), `low + high + 1`
/// of its radius there. 0, which keeps the default's blocks whole, when an input is read on
/// its own plane only (a slab gains nothing on such a stream and cuts it: Kamil's Divergence,
/// three inputs of which one is read across planes, ran its 256^3 sweep from memory at
/// 15.4 ms with whole planes and 16.1-16.5 ms in slabs of 26-64 rows, on a Zen 5 core), for
/// kernels with a retimed loop (their sweeps are bound by arithmetic: the 27-point stencil
/// ran 5-8% slower in such blocks), reductions or outputs read in place, and, before any
/// analysis of the kernel, for interiors of fewer than three dimensions or whose
/// second-innermost axis no slab would cut (at most [`MIN_SLAB_ROWS`] rows): a call on a
/// small grid pays nothing for the rule (the analysis took 0.6 us of the 1.3 us `run()` on an
/// 8^3 grid).
pub(crate) fn slab_bytes_per_row(kernel: &stencil_core::Kernel, shape: &[usize]) -> usize {
    let n_dims = shape.len();
    if n_dims < 3
        || shape[n_dims - 2] <= MIN_SLAB_ROWS
        || kernel.has_reductions()
        || !stencil_core::analysis::in_place_outputs(kernel).is_empty()
        || stencil_core::passes::linear::retimed_stores(kernel).is_some()
    {
        return 0;
    }
    let across = n_dims - 3;
    let mut rows = 0;
    for input in kernel.inputs() {
        let r = stencil_core::analysis::field_radius(kernel, input);
        let planes = (r.low[across] + r.high[across]) as usize + 1;
        if planes == 1 {
            return 0;
        }
        rows += planes;
    }
    rows * shape[n_dims - 1] * kernel.elem().size_bytes()
}

/// `Auto` stores stream when a sweep's outputs exceed this many last-level caches.
pub const AUTO_STREAMING_CACHES: usize = 2;

/// Fewest points per tile of a 1-D interior under the default schedule.
pub const MIN_1D_CHUNK: usize = 4096;

/// Tiles wanted per thread under the default schedule.
const TILES_PER_THREAD: usize = 4;

/// The default schedule for an interior of `shape` on `threads` threads (see the module doc).
pub(crate) fn default_schedule(shape: &[usize], threads: usize) -> CpuSchedule {
    let mut tile = [0; MAX_DIMS];
    let n_dims = shape.len().min(MAX_DIMS);
    let target = TILES_PER_THREAD * threads.max(1);
    if n_dims == 1 {
        tile[0] = shape[0].div_ceil(target).max(MIN_1D_CHUNK);
    } else {
        let mut pieces = 1;
        for d in 0..n_dims - 1 {
            if pieces >= target {
                break;
            }
            let extent = shape[d].max(1);
            tile[d] = extent.div_ceil(target.div_ceil(pieces));
            pieces *= extent.div_ceil(tile[d]);
        }
    }
    CpuSchedule {
        tile,
        ..CpuSchedule::default()
    }
}

/// The default schedule's tiles ([`default_schedule`]) with the second-innermost axis cut
/// into blocks of `slab` rows, when given ([`slab_rows`]).
pub(crate) fn default_tile(
    shape: &[usize],
    workers: usize,
    slab: Option<usize>,
) -> [usize; MAX_DIMS] {
    let mut tile = default_schedule(shape, workers).tile;
    if let Some(rows) = slab {
        let n_dims = shape.len().min(MAX_DIMS);
        tile[n_dims - 2] = match tile[n_dims - 2] {
            0 => rows,
            t => t.min(rows),
        };
    }
    tile
}

/// A schedule resolved against a job: everything the executor needs, no "default" left.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    pub(crate) tiling: Tiling,
    pub(crate) workers: usize,
    pub(crate) chunk: usize,
    pub(crate) rows: RowPlan,
}

/// Resolves `schedule` for an interior of `shape` of elements of `elem_bytes` bytes on a pool
/// of `threads` threads whose sweep writes `output_bytes` bytes of outputs: all-zero tiles
/// become the default tiles (cut along the second-innermost axis into [`slab_rows`] for a
/// kernel reading `slab_bytes_per_row` bytes per row of a block, when its grids fit the
/// cache), `threads = 0` the whole pool, row block 0 the whole row (or
/// [`DEFAULT_STREAMING_ROW_BLOCK`] when streaming or prefetching), register rows 0 the
/// backend's choice (`register_rows`), and `Auto` stores
/// streaming stores when the outputs exceed [`AUTO_STREAMING_CACHES`] times the last-level
/// cache, plain ones otherwise.
///
/// Streaming stores save the write-allocate traffic of outputs that do not fit in cache, and
/// lose where the next sweep would find the output in cache. On the development machine (2
/// Zen 5 cores, LLC 32 MiB) the generated loop's streaming stores at 256^3 (128 MiB per
/// output) were 6-14% faster than plain ones for W1 with 2 threads and no slower with 1, and
/// the tuner picked them for Divergence and Gradient (default 15.8 and 19.1 ms with plain
/// stores, tuned 13.6 and 13.6 ms with streaming). The threshold was four caches, which left
/// exactly 256^3 (four caches here) with plain stores: the default ran W1 at 10.95 ms
/// against 7.5 ms streamed.
///
/// The caches are the running machine's effective ones (see [`plan_on`]).
pub(crate) fn plan(
    schedule: &CpuSchedule,
    shape: &[usize],
    elem_bytes: usize,
    threads: usize,
    output_bytes: usize,
    grid_bytes: usize,
    slab_bytes_per_row: usize,
) -> Plan {
    plan_on(
        crate::Machine::detect(),
        schedule,
        shape,
        elem_bytes,
        threads,
        output_bytes,
        grid_bytes,
        slab_bytes_per_row,
    )
}

/// [`plan`] on `machine`: `Auto` stores, [`PREFETCH_AUTO`] and register rows follow its
/// effective caches ([`Machine::llc_share`](crate::Machine::llc_share),
/// [`Machine::l1`](crate::Machine::l1)), measured where they were measured. `output_bytes`
/// are the bytes the sweep writes, `grid_bytes` those of every grid it reads or writes.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_on(
    machine: &crate::Machine,
    schedule: &CpuSchedule,
    shape: &[usize],
    elem_bytes: usize,
    threads: usize,
    output_bytes: usize,
    grid_bytes: usize,
    slab_bytes_per_row: usize,
) -> Plan {
    let workers = match schedule.threads {
        0 => threads,
        n => n.min(threads),
    }
    .max(1);
    let n_dims = shape.len().min(MAX_DIMS);
    let tile = if schedule.tile[..n_dims].iter().all(|&t| t == 0) {
        default_tile(
            shape,
            workers,
            slab_rows(
                shape,
                slab_bytes_per_row,
                grid_bytes,
                machine.llc_share(),
                (machine.l1(), machine.l2()),
            ),
        )
    } else {
        schedule.tile
    };
    let streaming = match schedule.stores {
        CpuStores::Plain => false,
        CpuStores::Streaming => true,
        CpuStores::Auto => auto_streams(output_bytes, machine.llc_share()),
    };
    let prefetch = prefetch_rows(schedule.prefetch, grid_bytes, machine.llc_share());
    let row_block = match schedule.row_block {
        0 if streaming || prefetch > 0 => DEFAULT_STREAMING_ROW_BLOCK,
        0 => usize::MAX,
        n => n,
    };
    Plan {
        tiling: Tiling::new(shape, &tile),
        workers,
        chunk: schedule.chunk,
        rows: RowPlan {
            row_block,
            streaming,
            prefetch,
            register_rows: register_rows(
                schedule.register_rows,
                shape[n_dims - 1],
                elem_bytes,
                machine.l1(),
            ),
        },
    }
}

/// [`PREFETCH_AUTO`] prefetches for grids larger than this many times this process's share of
/// the last-level cache.
///
/// Up to about twice the share (measured: the share a cloud VM's neighbours leave varies
/// between runs) much of a sweep's grids is still found in the cache, and the loops that do
/// not prefetch run faster there: on a Zen 5 core with 7-19 MiB measured, the 5-point 2-D
/// f64 sweep of 1024^2 (grids of 16 MiB) took 304-328 us without prefetching (the shifted
/// loop) against 383-396 us prefetching two rows ahead, and the 7-point sweep of 96^3 (17
/// MiB) 397-406 against 461-470 us; at 128^3 (36 MiB) prefetching won, 1513-1560 against
/// 1720-1751 us. With one cache as the threshold the first two prefetched whenever the
/// measured share fell below their grids.
pub const AUTO_PREFETCH_CACHES: usize = 2;

/// The rows ahead a sweep prefetches for the schedule's `prefetch` (`requested`), when the
/// grids it reads and writes take `grid_bytes` and this process's share of the last-level
/// cache is `llc_bytes`: [`PREFETCH_AUTO`] is [`DEFAULT_PREFETCH_ROWS`] for grids larger
/// than [`AUTO_PREFETCH_CACHES`] times that share and none for smaller ones; any other value
/// as requested.
pub(crate) fn prefetch_rows(requested: usize, grid_bytes: usize, llc_bytes: usize) -> usize {
    match requested {
        PREFETCH_AUTO if grid_bytes > AUTO_PREFETCH_CACHES.saturating_mul(llc_bytes) => {
            DEFAULT_PREFETCH_ROWS
        }
        PREFETCH_AUTO => 0,
        rows => rows,
    }
}

/// Whether `Auto` stores stream for a sweep writing `output_bytes` on a machine whose
/// last-level cache holds `llc_bytes`: above [`AUTO_STREAMING_CACHES`] caches.
pub(crate) fn auto_streams(output_bytes: usize, llc_bytes: usize) -> bool {
    output_bytes > AUTO_STREAMING_CACHES.saturating_mul(llc_bytes)
}

/// A varied sample of legal schedules for an interior of `shape` on `threads` threads: the
/// default, tiles that do not divide the shape, single-index outer tiles, tiles larger than the
/// shape, one thread, two threads, the generic path, a row-length limit of 3 points, streaming
/// stores with blocks that do not divide rows, round-robin chunks, prefetching, and register
/// blocks of 2, 3 and 4 rows over tiles whose rows they do not divide.
pub(crate) fn sample_schedules(shape: &[usize], threads: usize) -> Vec<CpuSchedule> {
    let n_dims = shape.len().min(MAX_DIMS);
    let default = default_schedule(shape, threads);
    let per_dim = |f: &dyn Fn(usize) -> usize| {
        let mut tile = [0; MAX_DIMS];
        for (d, t) in tile.iter_mut().enumerate().take(n_dims) {
            *t = f(d);
        }
        tile
    };
    let odd = per_dim(&|d| [3, 5, 7, 11][d]);
    let outer_ones = per_dim(&|d| usize::from(d + 1 < n_dims));
    let oversized = per_dim(&|d| 2 * shape[d] + 1);
    let mut short_rows = default.tile;
    short_rows[n_dims - 1] = 3;
    let with = |tile: [usize; MAX_DIMS], threads: usize, force_generic: bool| CpuSchedule {
        tile,
        threads,
        force_generic,
        ..CpuSchedule::default()
    };
    let streaming =
        |tile: [usize; MAX_DIMS], row_block: usize, chunk: usize, generic: bool| CpuSchedule {
            stores: CpuStores::Streaming,
            row_block,
            chunk,
            prefetch: 2,
            ..with(tile, 0, generic)
        };
    vec![
        default,
        with(odd, 0, false),
        with(outer_ones, 0, false),
        with(oversized, 0, false),
        with(default.tile, 1, false),
        // Register blocks of 2 rows over tiles whose rows they do not divide.
        CpuSchedule {
            register_rows: 2,
            ..with(odd, 2, false)
        },
        with(default.tile, 0, true),
        with(odd, 0, true),
        with(short_rows, 0, false),
        with(short_rows, 1, true),
        streaming(default.tile, 0, 0, false),
        CpuSchedule {
            register_rows: 4,
            ..streaming(odd, 5, 1, false)
        },
        streaming(odd, 3, 2, true),
        CpuSchedule {
            stores: CpuStores::Plain,
            row_block: 9,
            chunk: 3,
            // A count without a jammed loop: rows one after another.
            register_rows: 3,
            ..with(outer_ones, 2, false)
        },
        // Register blocks of 4 rows over whole-extent tiles, prefetching 4 rows ahead.
        CpuSchedule {
            register_rows: 4,
            stores: CpuStores::Plain,
            prefetch: 4,
            ..with(default.tile, 0, false)
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n_tiles(shape: &[usize], s: &CpuSchedule) -> usize {
        crate::tiling::Tiling::new(shape, &s.tile).n_tiles()
    }

    #[test]
    fn default_tiles_split_outer_dimensions() {
        let s = default_schedule(&[256, 256, 256], 2);
        assert_eq!(s.tile, [32, 0, 0, 0]);
        assert_eq!(n_tiles(&[256, 256, 256], &s), 8);
        assert!(!s.force_generic && s.threads == 0);
        // A short outer dimension: the next one is split too.
        let s = default_schedule(&[3, 1000, 1000], 16);
        assert_eq!(s.tile[0], 1);
        assert!(n_tiles(&[3, 1000, 1000], &s) >= 64);
        assert_eq!(s.tile[2], 0);
        // 2-D: rows split, rows whole.
        let s = default_schedule(&[1000, 999], 4);
        assert_eq!(s.tile, [63, 0, 0, 0]);
        // 1-D: chunks of at least MIN_1D_CHUNK.
        assert_eq!(default_schedule(&[10_000], 8).tile[0], MIN_1D_CHUNK);
        assert_eq!(default_schedule(&[1 << 24], 8).tile[0], (1 << 24) / 32);
        assert_eq!(default_schedule(&[5], 8).tile[0], MIN_1D_CHUNK);
    }

    /// A machine reporting `llc_reported` bytes of last-level cache, of which `llc_measured`
    /// were measured (`None`: not measured).
    fn machine(llc_reported: usize, llc_measured: Option<usize>) -> crate::Machine {
        crate::Machine {
            cores: 2,
            l1_bytes: 32 << 10,
            l2_bytes: 1 << 20,
            llc_bytes: llc_reported,
            measured: llc_measured.map(|llc_bytes| stencil_core::CacheSizes {
                l1_bytes: 0,
                l2_bytes: 0,
                llc_bytes,
            }),
            vector: crate::StreamWidth::None,
            topology: crate::Topology::new(vec![vec![0, 1]]),
        }
    }

    #[test]
    fn auto_stores_stream_by_the_measured_last_level_cache() {
        // A cloud VM reports its host's 480 MiB; 32 MiB were measured. One 256^3 f64 output
        // (128 MiB) exceeds two measured caches: streaming stores, as on a machine that
        // reports 32 MiB; by the report it would have stayed with plain stores.
        let s = CpuSchedule::default();
        let shape = [256, 256, 256];
        let output = 128 << 20;
        let vm = machine(480 << 20, Some(32 << 20));
        assert!(
            plan_on(&vm, &s, &shape, 8, 2, output, 2 * output, 0)
                .rows
                .streaming
        );
        assert!(
            plan_on(
                &machine(32 << 20, None),
                &s,
                &shape,
                8,
                2,
                output,
                2 * output,
                0
            )
            .rows
            .streaming
        );
        let unmeasured = machine(480 << 20, None);
        assert!(
            !plan_on(&unmeasured, &s, &shape, 8, 2, output, 2 * output, 0)
                .rows
                .streaming
        );
    }

    #[test]
    fn plans_resolve_the_defaults() {
        let s = CpuSchedule::default();
        let big = [256, 256, 256];
        let m = machine(32 << 20, Some(24 << 20));
        let plan = |s: &CpuSchedule, shape: &[usize], e, t, o: usize| {
            plan_on(&m, s, shape, e, t, o, o.saturating_mul(2), 0)
        };
        let llc = m.llc_share();
        assert_eq!(llc, 24 << 20);
        let p = plan(&s, &big, 8, 2, AUTO_STREAMING_CACHES * llc);
        assert!(
            !p.rows.streaming,
            "outputs that fit a few caches: plain stores"
        );
        assert_eq!(p.rows.row_block, DEFAULT_STREAMING_ROW_BLOCK, "prefetching");
        let no_prefetch = CpuSchedule { prefetch: 0, ..s };
        let p = plan(&no_prefetch, &big, 8, 2, AUTO_STREAMING_CACHES * llc);
        assert_eq!(
            p.rows.row_block,
            usize::MAX,
            "plain, no prefetch: whole rows"
        );
        let p = plan(&s, &big, 8, 2, AUTO_STREAMING_CACHES * llc + 1);
        assert!(
            p.rows.streaming,
            "outputs beyond a few caches: streaming stores"
        );
        assert_eq!(p.rows.row_block, DEFAULT_STREAMING_ROW_BLOCK);
        let plain = CpuSchedule {
            stores: CpuStores::Plain,
            ..s
        };
        assert!(!plan(&plain, &big, 8, 2, usize::MAX).rows.streaming);
        let p = plan(&s, &big, 8, 2, 0);
        assert_eq!(p.workers, 2);
        assert_eq!(p.tiling, Tiling::new(&big, &default_schedule(&big, 2).tile));
        let forced = CpuSchedule {
            stores: CpuStores::Streaming,
            threads: 7,
            ..s
        };
        let p = plan(&forced, &[4, 4], 8, 2, 0);
        assert!(p.rows.streaming);
        assert_eq!(p.rows.row_block, DEFAULT_STREAMING_ROW_BLOCK);
        assert_eq!(p.workers, 2);
    }

    #[test]
    fn automatic_prefetch_follows_the_grids_against_the_cache() {
        let m = machine(480 << 20, Some(32 << 20));
        let llc = m.llc_share();
        let shape = [64, 64, 64];
        let plan = |prefetch, grids| {
            let s = CpuSchedule {
                prefetch,
                ..CpuSchedule::default()
            };
            plan_on(&m, &s, &shape, 8, 1, 0, grids, 0).rows
        };
        // Grids up to twice the measured cache: no prefetch, whole rows.
        let in_cache = plan(PREFETCH_AUTO, AUTO_PREFETCH_CACHES * llc);
        assert_eq!((in_cache.prefetch, in_cache.row_block), (0, usize::MAX));
        // Beyond that (the reported 480 MiB does not count).
        let beyond = plan(PREFETCH_AUTO, AUTO_PREFETCH_CACHES * llc + 1);
        assert_eq!(beyond.prefetch, DEFAULT_PREFETCH_ROWS);
        assert_eq!(beyond.row_block, DEFAULT_STREAMING_ROW_BLOCK);
        // An explicit count, 0 included, is honoured whatever the grids.
        for rows in [0, 1, 4] {
            assert_eq!(plan(rows, 0).prefetch, rows);
            assert_eq!(plan(rows, usize::MAX).prefetch, rows);
        }
        assert_eq!(CpuSchedule::default().prefetch, PREFETCH_AUTO);
    }

    #[test]
    fn the_sample_covers_the_promised_variety() {
        let shape = [7, 5, 13];
        let sample = sample_schedules(&shape, 4);
        assert!(sample.len() >= 6 && sample.len() <= 15);
        for rows in [2, 3, 4] {
            assert!(
                sample
                    .iter()
                    .any(|s| s.register_rows == rows && !s.force_generic)
            );
        }
        assert!(
            sample
                .iter()
                .any(|s| s.stores == CpuStores::Streaming && s.force_generic)
        );
        assert!(
            sample
                .iter()
                .any(|s| s.stores == CpuStores::Streaming && !s.force_generic)
        );
        assert!(
            sample
                .iter()
                .any(|s| s.chunk > 0 && s.prefetch > 0 && s.prefetch != PREFETCH_AUTO)
        );
        assert!(sample.iter().any(|s| s.force_generic));
        assert!(sample.iter().any(|s| !s.force_generic));
        assert!(sample.iter().any(|s| s.threads == 1));
        assert!(sample.iter().any(|s| s.tile[2] == 3));
        assert!(sample.iter().any(|s| s.tile[..3] == [3, 5, 7]));
        assert!(sample.iter().any(|s| s.tile[..3] == [15, 11, 27]));
        assert!(sample.iter().any(|s| s.tile[..3] == [1, 1, 0]));
        assert!(sample.iter().all(|s| s.tile[3] == 0));
        let one_d = sample_schedules(&[17], 2);
        assert!(one_d.iter().any(|s| s.tile[0] == 3));
        assert!(one_d.iter().all(|s| s.tile[1..] == [0; 3]));
    }
}
