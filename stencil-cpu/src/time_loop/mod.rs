//! Time loops on the CPU ([`Backend::run_steps`]): temporal blocking by wavefront.
//!
//! A time loop that streams its grids through memory once per step can never beat the
//! single-sweep bandwidth bound. Wavefront tiling (YASK's "wave-front tiling") advances
//! `depth` steps per trip instead: the interior is cut into slabs of `slab` planes along
//! dimension 0, and for each slab every step of the block computes the slab shifted back by
//! `lag` planes per step (the kernel's reach along dimension 0), so that step `k` only reads
//! planes step `k - 1` has already computed. The slab's planes of every grid stay in the
//! last-level cache while the steps pass over them, and memory sees each grid about once per
//! `depth` steps. The steps write into the grids of the rotation themselves (no extra
//! storage): a step overwrites the level `L` steps older in its chain's ring of `L` grids,
//! which no later step still reads there because every step lags the one before by the
//! kernel's reach (see `wavefront`).
//!
//! Each step's slab is split among the workers along dimension 1 (along dimension 0 in 1-D);
//! the workers meet at a spinning barrier after each step's slab, worker 0 fills the halo
//! planes that step completed (by [`fill_halo_planes`](stencil_core::grid::fill_halo_planes),
//! exactly the values a whole fill gives), and they meet again. The arithmetic of every point
//! is the sweep's, so the result is bit-identical to steps run one after another.
//!
//! In 3-D and more, when every face of every rotating grid is a value or user-managed, the
//! steps also skew along dimension 1 (tiles of `slab` planes by `block` rows, each carried
//! through every step of the block while in the second-level cache, in a trapezoid per
//! worker and triangles between them: see `wavefront`); the workers then meet once per slab.
//!
//! A loop of several kernels per step ([`StageLoop`]; a single kernel's [`TimeLoop`] runs as
//! a loop of one stage) is blocked the same way with every stage of every step as a
//! *sub-step*: sub-step `u` of a block computes the slab shifted back by `u` times the largest
//! reach of any stage, so it reads what every earlier sub-step wrote (each is at least that far
//! ahead) and overwrites nothing a later one still reads. Each computation adds the sources of
//! the grids its stage wrote at the points of its box, then samples the receivers there, so
//! every point gets each at the right step without ending the block.
//!
//! Temporal blocking needs the faces of dimension 0 of every rotating grid not to be
//! periodic (a periodic face copies planes from the far end of the same step, which the
//! wavefront reaches last); a time loop that has one runs its steps one after another, as
//! does a depth of 1.
//!
//! # Unsafe
//!
//! The workers share the rotation's grids, which the caller lent as `&mut [T]`: each is held
//! as a raw pointer (`RawGrid`) and every reference the loop makes is to the rows one
//! computation needs, for as long as it runs. The arguments, numbered as the `SAFETY`
//! comments cite them:
//!
//! 1. *Lending.* `wavefront::run` holds the `TimeLoop` mutably borrowed until every worker
//!    has returned, and touches the grids through it only before the workers start and after
//!    they end; the pointers are taken from those borrows.
//! 2. *Reads.* A computation (a worker's share of a slab, a tile, a triangle) is lent each
//!    grid it reads as `InputRows` over the rows its box reaches (the box grown by that
//!    field's reach; by the rows a generated loop prefetches too, where it prefetches), and
//!    the row loops make slices of the row segments they read only (`RowInput`, core's row
//!    contract; never a `&[T]` over a whole grid, which would assert that nobody writes any
//!    of it). Within a phase (between two barriers) no other worker writes those rows: with
//!    slabs every worker computes the same sub-step, which writes only its stage's output
//!    grids, never a grid it reads (`StageLoop::new` refuses a stage reading a grid it writes,
//!    and aliased grids); with
//!    tiles the workers run different steps at once, and the trapezoids and triangles of
//!    `wavefront` keep every row a worker reads away from the rows the others write. Tiles
//!    do not prefetch (the rows ahead may be a neighbour's).
//! 3. *Writes.* Within a phase the workers write disjoint boxes of each grid (their shares,
//!    trapezoids or triangles; in 1-D, where the one row is the grid, disjoint ranges of it),
//!    through `OutputRows`, which makes slices of the rows written only, each handed out
//!    once; after its runs, a computation adds sources to (and samples receivers at) points of
//!    its own box only, through the raw pointer, holding no other reference to the grid.
//! 4. *Halo fills.* With slabs, worker 0 fills halos between two barriers while the others
//!    wait, so its `&mut [T]` over the grid is the only access; with tiles the halos are
//!    filled before the workers start.
//! 5. *Phases.* The spinning barrier orders, with acquire and release, everything a worker
//!    did before a barrier before everything any worker does after it.
//!
//! Every unsafe block of the time loop and the arguments it rests on:
//!
//! - `wavefront`: `unsafe impl Send` and `Sync` for `RawGrid` (1 to 4: sharing it is sharing
//!   disjoint parts of a `&mut [T]`);
//! - `RawGrid::input`, its `InputRows::from_raw_parts` (1, 2), and its call in
//!   `Context::compute` for a chain's input (2);
//! - `RawGrid::rows`, its `OutputRows::from_raw_parts` (1, 3), and its calls in
//!   `Context::compute` for a chain's output and a lone output (3);
//! - `RawGrid::view_mut`, its `slice::from_raw_parts_mut` (1, 4), and its call in
//!   `Context::fill_halos` (4);
//! - `RawGrid::add` and `RawGrid::get` (1, 3), and their calls in `Context::sparse` for points
//!   of the box the computation wrote (3);
//! - shared with single sweeps: `InputRows::from_raw_parts` and core's
//!   `RowInput::from_raw_parts` and `Storage::elements` (slices of the elements a loop asks
//!   for: 2), and `OutputRows::run` and `row` in `specialised` and `generic` (rows of the box
//!   computed, each handed out once: 3).
//!
//! This crate's tests check arguments 2 to 4 structurally on every `cargo test`: an audit
//! records every box of rows each worker is lent or writes in each phase of multi-worker
//! loops (3-D, value faces, three workers, several tiles each; and slabs; of one kernel and of
//! two stages, the second reading the first's grid in no chain), finds no box
//! meeting another worker's writes in its phase (and finds many when each run is lent the
//! whole grid, as before), and the generic path asserts in debug builds that every row it
//! reads lies in the box it was lent (`time_loop/tests.rs`, `time_loop/audit.rs`). Miri checks the
//! references themselves, by hand on a nightly toolchain (under Miri every job reaches the
//! workers, so the same tests run on small grids; Stacked Borrows stops first in
//! crossbeam-epoch, and the pool's collector is never freed):
//!
//! ```text
//! MIRIFLAGS="-Zmiri-disable-isolation -Zmiri-tree-borrows -Zmiri-ignore-leaks" \
//!     RUSTFLAGS=-Ctarget-cpu=x86-64 cargo +nightly miri test -p stencil-cpu --lib time_loop::tests
//! ```
//!
//! Both tests pass there; the whole-grid `&[T]` lent before failed at once with a data race
//! between a worker's write of a row and another worker's retag of the whole grid.

#[cfg(test)]
mod audit;
mod barrier;
mod blocking;
#[cfg(test)]
mod tests;
mod wavefront;

use stencil_core::analysis::radius;
use stencil_core::grid::Boundary;
use stencil_core::schedule::{DimValue, SearchSpace, TuningSpace};
use stencil_core::{
    CpuSchedule, CpuStores, Element, Job, Kernel, Result, Schedule, StageLoop, TimeLoop,
};

use crate::machine::Machine;
use crate::pool::CpuBackend;

pub(crate) use blocking::TimeBlocking;

/// Temporal blocking depths the tuning space offers: those that divide the steps of a trial
/// ([`trial_steps`](stencil_core::time_loop::trial_steps): all for loops of 64 steps or more, up
/// to 8 below), so every candidate runs whole blocks, and the default schedule's depth, which
/// a shorter trial runs as one block.
pub const TIME_DEPTHS: [usize; 5] = [1, 2, 4, 8, 16];

/// Depth of the default schedule for a time loop whose grids exceed half the last-level
/// cache, in slabs of 3 dimensions or more (faces that copy from the interior, or shares too
/// narrow for tiles at [`DEEP_TIME_DEPTH`]). Each step re-reads its slab from the last level,
/// and a deeper block makes the slabs that fit thinner: the 7-point f64 loop at 256^3 with
/// zero-gradient faces (1 Zen 5 core) ran 6.8 ms per step at depth 8, 7.7 at 16.
pub const DEFAULT_TIME_DEPTH: usize = 8;

/// Depth of the default schedule for a time loop whose grids exceed half the last-level
/// cache, in tiles (3 dimensions or more: see [`DEFAULT_TILE`]) or of fewer than 3
/// dimensions (slabs of rows, which stay thin). Measured on a 2-vCPU Zen 5 VM, ms per step
/// at depth 8 and 16, 1 and 2 threads, medians of 5: 7-point f64 at 256^3 5.46 / 4.87 and
/// 2.85 / 2.61; 27-point 9.18 / 8.30 and 4.58 / 4.25; 5-point 2-D at 4096^2 4.82 / 4.14 and
/// 2.51 / 2.26.
pub const DEEP_TIME_DEPTH: usize = 16;

/// Planes of dimension 0 of the default tile of a time loop blocked in tiles (3-D and more,
/// every face of every rotating grid a value or user-managed). Its rows of dimension 1 are
/// as many as keep one step of the tile within three quarters of the second-level cache, at
/// least 4; where not even 4 fit (many grids, a wide reach), the tile is 16 planes by 16 rows.
/// The 7-point f64 loop at 256^3 (1 Zen 5 core, 1 MiB second-level cache, tiles of
/// 4 rows) ran 5.2-5.4 ms per step in tiles of 24 to 48 planes, 5.9-6.0 in tiles of 16.
pub const DEFAULT_TILE: usize = 32;

/// Fewest rows of dimension 1 in a tile of the default schedule: the 7-point f64 loop at
/// 256^3 ran 6.6-6.8 ms per step in tiles of 2 rows, 5.4-5.6 in tiles of 3 and 5.2-5.4 in
/// tiles of 4 (1 Zen 5 core).
pub(crate) const MIN_TILE_ROWS: usize = 4;

/// Planes and rows of the default tile when not even [`MIN_TILE_ROWS`] of [`DEFAULT_TILE`]
/// planes keep a step in the cache (see [`default_tile_rows`]): many grids, or a wide reach.
/// Measured on one Zen 5 core at 256^3, in interleaved rounds: the acoustic solver's two stages
/// over ten grids ran 32.1-32.3 ms per step in tiles of 16 by 16 against 33.2-34.1 in tiles of
/// 32 planes (4 or 16 rows), and on 2 threads the bench's acoustic loop took 23.9 ms in tiles
/// of 32 by 4 against 21.2 in this tile. The radius-4 star went the other way, 6.4-6.9 against
/// 5.6 ms, and keeps this tile all the same (the tuner offers 32 planes).
pub(crate) const SPILL_TILE: usize = 16;

/// The share of the effective second-level cache that one sub-step of a default tile may
/// read and write (see [`default_tile_rows`]), as a fraction.
pub(crate) const TILE_L2_FRACTION: (usize, usize) = (3, 4);

impl CpuBackend {
    /// [`Backend::run_steps`](stencil_core::Backend::run_steps) for the CPU: temporal
    /// blocking when the schedule's depth (or the default's) is above 1 and the rotation
    /// allows it, else steps one after another, each through `sweep` (the backend's single
    /// sweep under `schedule`).
    pub(crate) fn cpu_run_steps<T: Element>(
        &self,
        job: &mut TimeLoop<'_, T>,
        schedule: &CpuSchedule,
        steps: usize,
        sweep: impl Fn(&mut Job<'_, T>) -> Result<()>,
    ) -> Result<()> {
        let machine = Machine::detect();
        let mut stages = StageLoop::of_time_loop(job);
        let workers = wavefront::workers(self, &stages, schedule);
        let blocking = time_blocking(machine, &stages, schedule, workers);
        if blocking.depth <= 1 || steps < 2 {
            drop(stages);
            for _ in 0..steps {
                job.step_with(&sweep)?;
            }
            return Ok(());
        }
        let result = wavefront::run(self, &mut stages, schedule, blocking, steps);
        stages.end().apply(job);
        result
    }

    /// [`Backend::run_stages`](stencil_core::Backend::run_stages) for the CPU: temporal
    /// blocking across the stages when the schedule's depth (or the default's) is above 1
    /// and the grids allow it (as for one kernel), else the steps of
    /// [`StageLoop::step_with`], each stage through `sweep`.
    pub(crate) fn cpu_run_stages<T: Element>(
        &self,
        job: &mut StageLoop<'_, T>,
        schedule: &CpuSchedule,
        steps: usize,
        mut sweep: impl FnMut(&mut Job<'_, T>) -> Result<()>,
    ) -> Result<()> {
        let machine = Machine::detect();
        let workers = wavefront::workers(self, job, schedule);
        let blocking = time_blocking(machine, job, schedule, workers);
        if blocking.depth <= 1 || steps < 2 {
            for _ in 0..steps {
                job.step_with(&mut sweep)?;
            }
            return Ok(());
        }
        wavefront::run(self, job, schedule, blocking, steps)
    }
}

/// The blocking of `job` under `schedule` on `machine` with `workers` threads: the schedule's
/// depth and slab, or for 0 the defaults (depth [`default_depth`]: when the grids the loop
/// touches exceed half the last-level cache, [`DEEP_TIME_DEPTH`] in tiles at that depth and
/// below 3 dimensions, else [`DEFAULT_TIME_DEPTH`]; 1 for grids that fit; with tiles the
/// default tile's planes ([`DEFAULT_TILE`], or [`SPILL_TILE`] where [`default_tile_rows`]
/// finds none that fit), else the thickest slab whose planes of every grid, over the slab
/// plus the `depth * lag` planes the steps lag and the reach on either side, fit in half the
/// last-level cache); depth 1 when a rotating grid has a periodic face in dimension 0, or for
/// a 1-D kernel whose loop is retimed. Tiles (of `tile[1]` rows, 0: [`default_tile_rows`] for
/// the slab, or [`SPILL_TILE`]) when the kernel has 3 dimensions or more, the depth is above 1, every face of
/// every rotating grid is a value or user-managed, and every worker's share of dimension 1 is
/// wider than three times `(depth - 1)` times the kernel's reach along it.
pub(crate) fn time_blocking<T: Element>(
    machine: &Machine,
    job: &StageLoop<'_, T>,
    schedule: &CpuSchedule,
    workers: usize,
) -> TimeBlocking {
    let kernels: Vec<&Kernel> = job.stages().iter().map(|s| s.stencil.kernel()).collect();
    let stages = kernels.len();
    let shape = job.shape();
    // Every sub-step (stage of a step) lags the one before by the largest reach of any stage.
    let reach = |d: usize| {
        kernels
            .iter()
            .map(|k| radius(k).in_dim(d) as usize)
            .max()
            .unwrap_or(0)
    };
    let lag = reach(0);
    // A periodic face of dimension 0 copies planes the wavefront reaches last; a 1-D
    // retimed loop (which reassociates along its one row) gives the sweep's bits only on the
    // sweep's row segments, which slabs of the one dimension cannot keep.
    let unblockable = job_has_periodic_dim0(job)
        || (shape.len() == 1
            && kernels
                .iter()
                .any(|k| stencil_core::passes::linear::retimed_stores(k).is_some()));
    let plane_bytes = plane_bytes(job, shape);
    let total_bytes = plane_bytes * shape[0];
    let budget = machine.llc_share() / 2;
    let lag_y = match shape.len() {
        n if n >= 3 => reach(1),
        _ => 0,
    };
    // Tiles need halos that hold their values whatever the interior does (a condition that
    // copies from the interior would need the points of the same step that a tile computes
    // later), and 3-D or more (cutting dimension 1 of a 2-D grid would cut its rows).
    let faces_hold = !job
        .chains()
        .iter()
        .flatten()
        .chain(
            job.lone()
                .iter()
                .enumerate()
                .filter(|&(k, _)| job.lone_is_read(k))
                .map(|(_, g)| g),
        )
        .any(|g| g.faces.iter().flatten().any(|f| f.depends_on_interior()));
    let tiles_at =
        |depth: usize| faces_hold && tiles_fit(shape, depth * stages, lag_y, workers) && depth > 1;
    let depth = match schedule.time_depth {
        _ if unblockable => 1,
        0 => default_depth(machine, total_bytes, shape.len(), tiles_at),
        d => d,
    };
    let slab = match schedule.time_slab {
        0 => default_slab(shape[0], plane_bytes, depth, lag, budget, workers),
        s => s,
    };
    let block = match (shape.len(), schedule.tile.get(1).copied().unwrap_or(0)) {
        (n, _) if n < 3 => 0,
        (_, 0) => kernels
            .iter()
            .map(|k| default_block(machine, k, shape))
            .min()
            .unwrap_or(0),
        (_, b) => b,
    };
    let tiles = tiles_at(depth);
    let rows_given = schedule.tile.get(1).copied().unwrap_or(0);
    let (slab, block) = match (tiles, schedule.time_slab, rows_given) {
        (false, _, _) => (slab, block),
        (true, 0, 0) => {
            // The default tile's rows for its planes, or the spilling tile where none fit.
            match tile_rows_of(machine, job, &kernels, DEFAULT_TILE.min(shape[0].max(1))) {
                Some(rows) => (DEFAULT_TILE, rows),
                None => (SPILL_TILE, SPILL_TILE),
            }
        }
        (true, s, 0) => {
            let planes = s.clamp(1, shape[0].max(1));
            (
                s,
                tile_rows_of(machine, job, &kernels, planes).unwrap_or(SPILL_TILE),
            )
        }
        (true, 0, b) => (DEFAULT_TILE, b),
        (true, s, b) => (s, b),
    };
    TimeBlocking {
        depth,
        slab: slab.clamp(1, shape[0].max(1)),
        lag,
        block: block.clamp(1, shape.get(1).copied().unwrap_or(1).max(1)),
        tiles,
        lag_y,
    }
}

/// The temporal blocking depth of the default schedule for a time loop of `n_dims`
/// dimensions whose grids hold `total_bytes` (every grid the loop touches), where
/// `tiles_at(depth)` says whether it would run in tiles at that depth: when the grids exceed
/// half this process's share of the effective last-level cache ([`Machine::llc_share`]),
/// [`DEEP_TIME_DEPTH`] for fewer than 3 dimensions or in tiles at that depth, else
/// [`DEFAULT_TIME_DEPTH`]; otherwise 1 (steps one after another, the grids staying in cache).
pub(crate) fn default_depth(
    machine: &Machine,
    total_bytes: usize,
    n_dims: usize,
    tiles_at: impl Fn(usize) -> bool,
) -> usize {
    if total_bytes <= machine.llc_share() / 2 {
        1
    } else if n_dims < 3 || tiles_at(DEEP_TIME_DEPTH) {
        DEEP_TIME_DEPTH
    } else {
        DEFAULT_TIME_DEPTH
    }
}

/// Whether the shares of dimension 1 of `shape` among `workers` are wide enough for tiles
/// over `subs` sub-steps of a reach of `lag_y` rows (more than three times `(subs - 1)
/// lag_y` rows each, so the trapezoids keep rows), in 3 dimensions or more.
fn tiles_fit(shape: &[usize], subs: usize, lag_y: usize, workers: usize) -> bool {
    shape.len() >= 3 && shape[1] / workers.max(1) > 3 * subs.saturating_sub(1) * lag_y
}

/// [`default_tile_rows`] for the stages `kernels` of `job` on the rows of its grids as stored.
fn tile_rows_of<T: Element>(
    machine: &Machine,
    job: &StageLoop<'_, T>,
    kernels: &[&Kernel],
    planes: usize,
) -> Option<usize> {
    // The rows of the loop's grids as stored (padding included).
    let row_points = job
        .chains()
        .iter()
        .flatten()
        .chain(job.lone())
        .map(|g| g.view.geom.strides[1])
        .max()
        .unwrap_or(1);
    default_tile_rows(machine, kernels, (job.shape()[1], row_points), planes)
}

/// Rows of dimension 1 per tile of `planes` planes of dimension 0 (3-D and more) in the
/// default schedule of a time loop of the stages `kernels` whose dimension 1 has `extent`
/// rows, each of `row_points` stored points (the stride of dimension 1, padding included): the
/// most rows for which one sub-step of a tile reads and writes at most [`TILE_L2_FRACTION`] of
/// the effective second-level cache ([`Machine::l2`]) for every stage, counting for each
/// input the tile grown by its stage's reach in dimensions 0 and 1, and each output over the
/// tile; `None` when not even [`MIN_TILE_ROWS`] fit (the tile then spills, and the default
/// takes [`SPILL_TILE`]); at most `extent`.
///
/// A tile carries its box through the block's steps, each reading what the step before
/// wrote: the box of one step must stay in the second-level cache until the next, and a
/// thinner tile reads more of its rows' neighbours, which the tile before wrote long ago,
/// from the last level. Measured on one Zen 5 core (1 MiB second-level cache), 7-point f64
/// loop, depth 16, tiles of 32 planes: rows of 256 points (2 KiB) 4 rows best, 5.2-5.4 ms
/// per step, against 5.8-6.0 for 6 rows and 6.2 for 16 or 32 (this rule: 4); rows of 64
/// points (80 stored), 1024 of them, 12 to 16 rows best, 5.5-5.8 ms, against 6.4-6.8 for 22
/// and 7.1 for 32 (this rule: 17).
pub(crate) fn default_tile_rows(
    machine: &Machine,
    kernels: &[&Kernel],
    (extent, row_points): (usize, usize),
    planes: usize,
) -> Option<usize> {
    let budget = machine.l2() * TILE_L2_FRACTION.0 / TILE_L2_FRACTION.1;
    let rows = kernels
        .iter()
        .map(|k| {
            let reach = radius(k);
            let (lag, lag_y) = (reach.in_dim(0) as usize, reach.in_dim(1) as usize);
            let row = row_points * k.elem().size_bytes();
            let input_planes = (planes + 2 * lag) * k.inputs().count();
            // Bytes per row of the tile, and those of the input rows its reach adds.
            let per_row = (input_planes + planes * k.outputs().count()) * row;
            let halo = input_planes * 2 * lag_y * row;
            budget.saturating_sub(halo) / per_row.max(1)
        })
        .min()
        .unwrap_or(MIN_TILE_ROWS);
    (rows >= MIN_TILE_ROWS).then(|| rows.min(extent.max(1)))
}

/// Stored points per row of dimension 1 (the stride of dimension 1) of a grid of `shape` made
/// by `Grid::new`, for rules that see a shape but no grid; 1 below 2-D.
fn row_points_of_new_grids(shape: &[usize], elem_size: usize) -> usize {
    match stencil_core::Geometry::new(shape, stencil_core::grid::DEFAULT_HALO, elem_size) {
        Ok(g) if shape.len() >= 2 => g.strides[1],
        _ => shape.get(2..).map_or(1, |r| r.iter().product()),
    }
}

/// Rows of dimension 1 per block (3-D and more) whose rows of every input over the planes
/// one output plane reads, and of every output, fill at most half the effective second-level
/// cache ([`Machine::l2`]).
pub(crate) fn default_block(machine: &Machine, kernel: &Kernel, shape: &[usize]) -> usize {
    let lag = radius(kernel).in_dim(0) as usize;
    let row: usize = shape[2..].iter().product::<usize>() * kernel.elem().size_bytes();
    let planes = (2 * lag + 1) * kernel.inputs().count() + kernel.outputs().count();
    let rows = machine.l2() / 2 / (planes * row).max(1);
    rows.clamp(4, shape[1].max(4))
}

/// Bytes of one plane of dimension 0 over every grid a step touches (every grid of the loop
/// is read or written by every step).
fn plane_bytes<T: Element>(job: &StageLoop<'_, T>, shape: &[usize]) -> usize {
    let plane: usize = shape[1..].iter().product();
    let grids = job.chains().iter().map(Vec::len).sum::<usize>()
        + job.lone().len()
        + job.coefficients().len();
    plane * grids * T::ELEM.size_bytes()
}

/// The thickest slab whose working set fits `budget` bytes (see [`time_blocking`]), at least
/// one plane; in 1-D (planes of one point) at least 4096 points per worker.
fn default_slab(
    extent: usize,
    plane_bytes: usize,
    depth: usize,
    lag: usize,
    budget: usize,
    workers: usize,
) -> usize {
    let planes = budget / plane_bytes.max(1);
    let slab = planes.saturating_sub(depth * lag + 2 * lag + 1).max(1);
    if plane_bytes <= 64 {
        // One point per plane: slabs of whole cache pages per worker at least.
        slab.max(4096 * workers).min(extent)
    } else {
        slab.min(extent)
    }
}

/// Whether a grid of the rotation, or a lone grid a stage reads, has a periodic face in
/// dimension 0.
fn job_has_periodic_dim0<T: Element>(job: &StageLoop<'_, T>) -> bool {
    let read_lone = job
        .lone()
        .iter()
        .enumerate()
        .filter(|&(k, _)| job.lone_is_read(k))
        .map(|(_, g)| g);
    job.chains()
        .iter()
        .flatten()
        .chain(read_lone)
        .any(|grid| grid.faces[0].contains(&Boundary::Periodic))
}

/// The time-loop tuning space of `kernel` on `shape` for `workers` threads of `machine`
/// (see [`CpuBackend`]'s [`steps_tuning_space`](stencil_core::Backend::steps_tuning_space)):
/// `time_depth` over the [`TIME_DEPTHS`] that divide the trials' step count and the default's
/// depth (which a trial of fewer steps runs as one block), `time_slab`
/// (planes of dimension 0: in 3-D and more 0 for the default of the blocking the job gets,
/// [`SPILL_TILE`], [`DEFAULT_TILE`] and twice it; below, the default slab of each depth, its
/// half and its
/// double), `block_y` (3-D and more: rows of dimension 1 per tile or per block of a worker's
/// share, as `tile[1]`: 0 for the default, half (at least [`MIN_TILE_ROWS`]) and twice the
/// rows of the default tile, [`default_tile_rows`]), `register_rows`
/// (1 and the jammed counts), `prefetch` (0 or 2 rows) and `sweep` (`default`, or `tuned`:
/// steps one after another under `sweep`, the loop's single-sweep schedule, legal at depth 1
/// with every other dimension at its first value only). That last point is the space's
/// [baseline](TuningSpace::baselines): the tuned loop is never slower than plain steps of
/// the tuned sweep. Where the default schedule blocks, the baseline is the space's only
/// point of depth 1. The other tiles and the stores of blocked points are the default
/// schedule's (blocked steps store plainly whatever the stores: a step's output is read again
/// by the next step while in cache). The default point is the default schedule of a loop
/// whose faces hold values (in tiles in 3-D where the shares allow them). The quick search
/// screens `time_depth` first, then
/// `block_y`, `time_slab`, `register_rows` and `prefetch`.
pub(crate) fn steps_tuning_space(
    machine: &Machine,
    kernel: &Kernel,
    shape: &[usize],
    workers: usize,
    steps: usize,
    sweep: &CpuSchedule,
) -> TuningSpace {
    let lag = radius(kernel).in_dim(0) as usize;
    let trial = stencil_core::time_loop::trial_steps(steps);
    let plane =
        shape[1..].iter().product::<usize>() * kernel.fields.len() * kernel.elem().size_bytes();
    let budget = machine.llc_share() / 2;
    let three_d = shape.len() >= 3;
    // The default's depth for value faces (tiles in 3-D where the shares allow them).
    let lag_y = match three_d {
        true => radius(kernel).in_dim(1) as usize,
        false => 0,
    };
    let depth = default_depth(machine, plane * shape[0], shape.len(), |d| {
        tiles_fit(shape, d, lag_y, workers)
    });
    // The depths that divide the trials' steps, and the default's own, which a trial of
    // fewer steps runs as one block (as it runs the call's first block).
    let depths: Vec<usize> = TIME_DEPTHS
        .into_iter()
        .filter(|&d| trial.is_multiple_of(d) || d == depth)
        .collect();
    // In 3-D and more: 0 (the default slab of the blocking the job gets), half and twice the
    // default tile; below, the default slab of each depth, its half and its double.
    let mut slabs: Vec<usize> = match three_d {
        true => vec![0, SPILL_TILE, DEFAULT_TILE, DEFAULT_TILE * 2],
        false => Vec::new(),
    };
    for &depth in TIME_DEPTHS.iter().filter(|_| !three_d) {
        let base = default_slab(shape[0], plane, depth, lag, budget, workers);
        for s in [base / 2, base, base * 2] {
            let s = s.clamp(1, shape[0]);
            if !slabs.contains(&s) {
                slabs.push(s);
            }
        }
    }
    slabs.sort_unstable();
    let register_rows: Vec<usize> =
        if shape.len() >= 2 && stencil_core::passes::linear::retimed_stores(kernel).is_none() {
            std::iter::once(1)
                .chain(stencil_core::JAMMED_ROWS)
                .collect()
        } else {
            vec![1]
        };
    let prefetch = [0usize, 2];
    // Rows of dimension 1 per tile, or per block of a worker's share (3-D and more): 0 (the
    // default of the blocking the job gets), half (at least `MIN_TILE_ROWS`) and twice the
    // default tile's rows.
    let blocks: Vec<usize> = if three_d {
        let row_points = row_points_of_new_grids(shape, kernel.elem().size_bytes());
        let rows = default_tile_rows(machine, &[kernel], (shape[1], row_points), DEFAULT_TILE)
            .unwrap_or(SPILL_TILE);
        let mut blocks = vec![0];
        for b in [(rows / 2).max(MIN_TILE_ROWS), rows * 2] {
            if b != rows && !blocks.contains(&b) {
                blocks.push(b);
            }
        }
        blocks
    } else {
        vec![0]
    };
    let space = SearchSpace::new()
        .with_ints("time_depth", depths.iter().map(|&d| d as i64))
        .with_ints("time_slab", slabs.iter().map(|&s| s as i64))
        .with_ints("block_y", blocks.iter().map(|&b| b as i64))
        .with_ints("register_rows", register_rows.iter().map(|&r| r as i64))
        .with_ints("prefetch", prefetch.iter().map(|&p| p as i64))
        .with(
            "sweep",
            vec![
                DimValue::Name("default".into()),
                DimValue::Name("tuned".into()),
            ],
        );
    let default = crate::schedules::default_schedule(shape, workers);
    let sweep = CpuSchedule {
        time_depth: 1,
        time_slab: 0,
        ..*sweep
    };
    let depth_one = depths.iter().position(|&d| d == 1);
    // Where the default blocks (its depth is above 1), depth 1 is the baseline alone: plain
    // steps through the blocking's slabs only add barriers to the same work, and on trial
    // grids that a large last level holds (plain stores, unlike the tuned sweep's streaming
    // ones) they would look faster than they run on the whole grid.
    let (depths_of, slabs_of, rows_of) = (depths.clone(), slabs.clone(), register_rows.clone());
    let schedule_of = move |point: &[usize]| {
        if point[5] == 1 {
            // Plain steps under the sweep's schedule: one point only.
            return (Some(point[0]) == depth_one && point[1..5].iter().all(|&i| i == 0))
                .then_some(Schedule::Cpu(sweep));
        }
        if depth > 1 && Some(point[0]) == depth_one {
            return None;
        }
        let mut tile = default.tile;
        let block = *blocks.get(point[2])?;
        if three_d {
            tile[1] = block;
        }
        Some(Schedule::Cpu(CpuSchedule {
            tile,
            stores: CpuStores::Auto,
            time_depth: *depths_of.get(point[0])?,
            time_slab: *slabs_of.get(point[1])?,
            register_rows: *rows_of.get(point[3])?,
            prefetch: *prefetch.get(point[4])?,
            ..CpuSchedule::default()
        }))
    };
    let mut tuning = TuningSpace::new(space, schedule_of);
    // The default: depth and slab as the backend would choose them without a schedule.
    let slab = default_slab(shape[0], plane, depth, lag, budget, workers).clamp(1, shape[0]);
    let row_len = shape[shape.len() - 1];
    let rows =
        crate::schedules::register_rows(0, row_len, kernel.elem().size_bytes(), machine.l1());
    tuning.default_point = Some(vec![
        depths.iter().position(|&d| d == depth).unwrap_or(0),
        match three_d {
            true => 0,
            false => slabs.iter().position(|&s| s == slab).unwrap_or(0),
        },
        0,
        register_rows.iter().position(|&r| r == rows).unwrap_or(0),
        // No prefetching: blocked steps read from cache (see `wavefront::run`).
        0,
        0,
    ]);
    if let Some(one) = depth_one {
        tuning.baselines = vec![vec![one, 0, 0, 0, 0, 1]];
    }
    tuning.screening = vec![0, 2, 1, 3, 4];
    tuning.cache_bytes = machine.llc_share();
    tuning.largest_cache_bytes = machine.llc_share();
    tuning
}

/// The shape of a time loop's trial grids (see `CpuBackend`'s `steps_trial_shape`): `shape`
/// with dimension 0 cut to two of the thickest blocks the tuning space offers and at least
/// twice this process's share of the effective last-level cache's worth of planes
/// ([`Machine::llc_share`]), never more than `shape`.
pub(crate) fn trial_shape(machine: &Machine, kernel: &Kernel, shape: &[usize]) -> Vec<usize> {
    let lag = radius(kernel).in_dim(0) as usize;
    let plane =
        shape[1..].iter().product::<usize>() * kernel.fields.len() * kernel.elem().size_bytes();
    let budget = machine.llc_share() / 2;
    let deepest = TIME_DEPTHS[TIME_DEPTHS.len() - 1];
    let thickest = 2 * default_slab(shape[0], plane, 1, lag, budget, 1);
    let planes = (2 * (thickest + deepest * lag + 2 * lag))
        .max((4 * budget).div_ceil(plane.max(1)))
        .max(16);
    let mut trial = shape.to_vec();
    trial[0] = planes.min(shape[0]);
    trial
}

#[cfg(test)]
mod cache_tests {
    use super::*;
    use stencil_core::grid::Grid3;
    use stencil_core::time_loop::WrittenGrid;
    use stencil_core::{CacheSizes, ElemType, KernelBuilder, Rotation, Stencil};

    /// The 7-point star `out = u + sum of u's six neighbours`.
    fn star() -> Kernel {
        star_of_reach(1)
    }

    /// `out` = `u` plus `u` at `reach` points either side along each dimension.
    fn star_of_reach(reach: i32) -> Kernel {
        let mut b = KernelBuilder::new("star", 3, ElemType::F64);
        let u = b.input("u");
        let out = b.output("out");
        let mut sum = b.read(u, &[0, 0, 0]);
        for d in 0..3 {
            for s in [-reach, reach] {
                let mut offset = [0; 3];
                offset[d] = s;
                let r = b.read(u, &offset);
                sum = b.add(sum, r);
            }
        }
        b.store(out, sum);
        b.finish().unwrap()
    }

    /// The time loop of `stencil` (reading `u`, writing `out`) rotating `out` and `u`.
    fn ping_pong<'a>(
        stencil: &'a Stencil<f64>,
        u: &'a mut Grid3<f64>,
        out: &'a mut Grid3<f64>,
    ) -> TimeLoop<'a, f64> {
        fn step_grid(g: &mut Grid3<f64>) -> WrittenGrid<'_, f64> {
            let faces = g.boundaries().to_vec();
            WrittenGrid {
                view: g.time_loop_view(),
                faces,
                constant_faces_filled: false,
            }
        }
        let rotation = Rotation::new(stencil.kernel(), &[vec!["out", "u"]]).unwrap();
        let chain = vec![step_grid(out), step_grid(u)];
        TimeLoop::new(
            stencil,
            rotation,
            vec![chain],
            Vec::new(),
            Vec::new(),
            Vec::new(),
        )
        .unwrap()
    }

    /// A VM reporting its host's 480 MiB last level and 2 MiB second level, with `measured`
    /// caches (`None`: not measured).
    fn cloud_vm(measured: Option<CacheSizes>) -> Machine {
        Machine {
            cores: 2,
            l1_bytes: 48 << 10,
            l2_bytes: 2 << 20,
            llc_bytes: 480 << 20,
            measured,
            vector: crate::StreamWidth::None,
            topology: crate::Topology::new(vec![vec![0, 1]]),
        }
    }

    fn measured(l2_bytes: usize, llc_bytes: usize) -> Option<CacheSizes> {
        Some(CacheSizes {
            l1_bytes: 0,
            l2_bytes,
            llc_bytes,
        })
    }

    #[test]
    fn the_default_depth_follows_the_effective_last_level_cache() {
        // Two 32^3 f64 grids (512 KiB): in cache by the report, eight times half a measured
        // 128 KiB last level.
        let stencil = Stencil::<f64>::new(star()).unwrap();
        let kernel = stencil.kernel();
        let mut u = Grid3::<f64>::new([32, 32, 32]).unwrap();
        let mut out = Grid3::<f64>::new([32, 32, 32]).unwrap();
        let mut job = ping_pong(&stencil, &mut u, &mut out);
        let job = StageLoop::of_time_loop(&mut job);
        let schedule = CpuSchedule::default();
        let depth = |m: &Machine| time_blocking(m, &job, &schedule, 2).depth;
        assert_eq!(depth(&cloud_vm(None)), 1);
        assert_eq!(depth(&cloud_vm(measured(0, 128 << 10))), DEFAULT_TIME_DEPTH);
        // The tuning space's default point has the same depth (`time_depth` first).
        let space = |m: &Machine| {
            steps_tuning_space(m, kernel, &[32, 32, 32], 2, 64, &CpuSchedule::default())
        };
        let depth_at = |t: &TuningSpace| match t.schedule(t.default_point.as_ref().unwrap()) {
            Some(Schedule::Cpu(s)) => s.time_depth,
            other => panic!("{other:?}"),
        };
        assert_eq!(depth_at(&space(&cloud_vm(None))), 1);
        let measured_space = space(&cloud_vm(measured(0, 128 << 10)));
        assert_eq!(depth_at(&measured_space), DEFAULT_TIME_DEPTH);
        assert_eq!(measured_space.cache_bytes, 128 << 10);
        // Depth 1: where the default blocks, only the baseline (plain steps of the sweep);
        // where it does not, the default's own depth with its slabs and register rows.
        let depth_one_points = |t: &TuningSpace| {
            let mut points = Vec::new();
            for index in 0..t.space().n_points() {
                let p = t.space().point_at(index);
                if let Some(Schedule::Cpu(s)) = t.schedule(&p)
                    && s.time_depth == 1
                {
                    points.push(p);
                }
            }
            points
        };
        assert_eq!(depth_one_points(&measured_space), measured_space.baselines);
        let unblocked = space(&cloud_vm(None));
        assert!(depth_one_points(&unblocked).len() > unblocked.baselines.len());
    }

    #[test]
    fn the_default_depth_is_deep_in_tiles_and_below_three_dimensions() {
        // Grids well beyond half a measured 128 KiB last level.
        let machine = cloud_vm(measured(0, 128 << 10));
        let stencil = Stencil::<f64>::new(star()).unwrap();
        let shape = [8, 96, 16];
        let mut u = Grid3::<f64>::new(shape).unwrap();
        let mut out = Grid3::<f64>::new(shape).unwrap();
        let schedule = CpuSchedule::default();
        {
            let mut job = ping_pong(&stencil, &mut u, &mut out);
            let job = StageLoop::of_time_loop(&mut job);
            // Shares of 96 and 48 rows hold the trapezoids of 16 steps of reach 1 (more than
            // 45 rows); shares of 32 do not, and the loop keeps tiles at depth 8.
            for (workers, depth) in [(1, DEEP_TIME_DEPTH), (2, DEEP_TIME_DEPTH)] {
                let blocking = time_blocking(&machine, &job, &schedule, workers);
                assert_eq!((blocking.depth, blocking.tiles), (depth, true), "{workers}");
            }
            let blocking = time_blocking(&machine, &job, &schedule, 3);
            assert_eq!((blocking.depth, blocking.tiles), (DEFAULT_TIME_DEPTH, true));
        }
        // Faces that copy from the interior: slabs, at the shallower depth.
        u.set_boundary(Boundary::ZeroGradient);
        out.set_boundary(Boundary::ZeroGradient);
        let mut job = ping_pong(&stencil, &mut u, &mut out);
        let job = StageLoop::of_time_loop(&mut job);
        let blocking = time_blocking(&machine, &job, &schedule, 1);
        assert_eq!(
            (blocking.depth, blocking.tiles),
            (DEFAULT_TIME_DEPTH, false)
        );
        // Below three dimensions the slabs are of rows: deep.
        assert_eq!(
            default_depth(&machine, 1 << 20, 2, |_| false),
            DEEP_TIME_DEPTH
        );
        assert_eq!(
            default_depth(&machine, 1 << 20, 3, |_| false),
            DEFAULT_TIME_DEPTH
        );
        assert_eq!(default_depth(&machine, 1 << 10, 2, |_| true), 1);
        // The tuning space's default point: the depth of value faces, also where the trials
        // run fewer steps (8 for loops of fewer than 64 steps; depths 1 to 8 and the
        // default's).
        let depth_at = |t: &TuningSpace| match t.schedule(t.default_point.as_ref().unwrap()) {
            Some(Schedule::Cpu(s)) => s.time_depth,
            other => panic!("{other:?}"),
        };
        let kernel = stencil.kernel();
        let space = |workers, steps| {
            steps_tuning_space(&machine, kernel, &shape, workers, steps, &schedule)
        };
        assert_eq!(depth_at(&space(2, 64)), DEEP_TIME_DEPTH);
        assert_eq!(depth_at(&space(3, 64)), DEFAULT_TIME_DEPTH);
        let short = space(2, 32);
        assert_eq!(depth_at(&short), DEEP_TIME_DEPTH);
        let offered: Vec<i64> = short.space().dims()[0]
            .values
            .iter()
            .filter_map(|v| v.as_int())
            .collect();
        assert_eq!(offered, [1, 2, 4, 8, 16]);
        let offered_by = |workers| space(workers, 32).space().dims()[0].values.len();
        assert_eq!(offered_by(3), 4, "the default's 8 divides the trials");
        let mut b = KernelBuilder::new("five", 2, ElemType::F64);
        let (u2, out2) = (b.input("u"), b.output("out"));
        let mut sum = b.read(u2, &[0, 0]);
        for offset in [[-1, 0], [1, 0], [0, -1], [0, 1]] {
            let r = b.read(u2, &offset);
            sum = b.add(sum, r);
        }
        b.store(out2, sum);
        let five = b.finish().unwrap();
        let plane = steps_tuning_space(&machine, &five, &[512, 512], 2, 64, &schedule);
        assert_eq!(depth_at(&plane), DEEP_TIME_DEPTH);
    }

    /// The default tile's rows keep one sub-step of the tile (every input grown by the reach,
    /// every output) within three quarters of the second-level cache; an explicit `tile[1]`
    /// wins, and wide reaches or rows keep the fewest rows.
    #[test]
    fn default_tiles_keep_one_step_of_a_tile_in_the_second_level_cache() {
        let stencil = Stencil::<f64>::new(star()).unwrap();
        let kernel = stencil.kernel();
        let shape = [32, 64, 256];
        let mut u = Grid3::<f64>::new(shape).unwrap();
        let mut out = Grid3::<f64>::new(shape).unwrap();
        assert_eq!(u.geometry().strides[1], 272);
        let mut job = ping_pong(&stencil, &mut u, &mut out);
        let job = StageLoop::of_time_loop(&mut job);
        // One sub-step of a tile of 32 planes and `r` rows of 256 f64 points (272 stored: the
        // halo, and the padding to whole cache lines): the input over 34 planes and r + 2 rows,
        // the output over 32 planes and r rows.
        let step_bytes = |r: usize| (34 * (r + 2) + 32 * r) * 272 * 8;
        for (l2, want) in [(1usize << 20, 4), (2 << 20, 9)] {
            let vm = cloud_vm(measured(l2, 128 << 10));
            let blocking = time_blocking(&vm, &job, &CpuSchedule::default(), 2);
            assert!(blocking.tiles, "value faces, 3-D, depth {}", blocking.depth);
            assert_eq!((blocking.slab, blocking.block), (32, want), "L2 {l2}");
            assert!(step_bytes(want) <= l2 * 3 / 4 && step_bytes(want + 1) > l2 * 3 / 4);
            // An explicit count of rows, or of planes, is the schedule's.
            let pinned = CpuSchedule {
                tile: [0, 8, 0, 0],
                ..CpuSchedule::default()
            };
            assert_eq!(time_blocking(&vm, &job, &pinned, 2).block, 8);
            let thin = CpuSchedule {
                time_slab: 8,
                ..CpuSchedule::default()
            };
            let rows = time_blocking(&vm, &job, &thin, 2).block;
            assert!(rows > want, "thinner tiles take more rows: {rows}");
        }
        // Where not even the fewest rows fit (a 128 KiB second level), the spilling tile.
        let small = cloud_vm(measured(128 << 10, 128 << 10));
        let spilled = time_blocking(&small, &job, &CpuSchedule::default(), 2);
        assert_eq!((spilled.slab, spilled.block), (SPILL_TILE, SPILL_TILE));
        // Rows of 64 points (80 stored), 1024 of them: 17 rows (measured best: 12 to 16).
        let vm = cloud_vm(measured(1 << 20, 128 << 10));
        assert_eq!(default_tile_rows(&vm, &[kernel], (1024, 80), 32), Some(17));
        // A radius-4 star on rows of 256 points: its reach alone overflows.
        let wide = star_of_reach(4);
        let shape = [256, 256, 256];
        assert_eq!(default_tile_rows(&vm, &[&wide], (256, 272), 32), None);
        // Several stages: the tightest stage decides; never more rows than the axis holds.
        assert_eq!(
            default_tile_rows(&vm, &[kernel, &wide], (256, 272), 32),
            None
        );
        assert_eq!(default_tile_rows(&vm, &[kernel], (3, 16), 32), Some(3));
        // The tuning space offers the default and twice its rows (half would be under the
        // fewest).
        let space = steps_tuning_space(&vm, kernel, &shape, 2, 64, &CpuSchedule::default());
        let blocks: Vec<i64> = (0..space.space().n_points())
            .filter_map(|i| match space.schedule(&space.space().point_at(i)) {
                Some(Schedule::Cpu(s)) if s.time_depth > 1 => Some(s.tile[1] as i64),
                _ => None,
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(blocks, vec![0, 8]);
    }

    #[test]
    fn trial_schedules_cut_the_sweeps_core_blocks_to_the_trials_planes() {
        use stencil_core::{Backend, Schedule};
        let backend = crate::CpuBackend::new(2).unwrap();
        let trial = [208, 8192];
        let on_trial = |s: CpuSchedule| match Backend::<f64>::steps_trial_schedule(
            &backend,
            &Schedule::Cpu(s),
            &trial,
        ) {
            Schedule::Cpu(s) => s,
            other => panic!("not a CPU schedule: {other:?}"),
        };
        // Blocks of 1024 planes (a sweep tuned on 8192 of them) would leave one of two
        // workers idle on 208: each gets 104.
        let sweep = CpuSchedule {
            tile: [1024, 0, 0, 0],
            ..CpuSchedule::default()
        };
        assert_eq!(
            on_trial(sweep),
            CpuSchedule {
                tile: [104, 0, 0, 0],
                ..sweep
            }
        );
        // On one thread the block is the trial's planes; blocks that fit stay.
        assert_eq!(
            on_trial(CpuSchedule {
                threads: 1,
                ..sweep
            })
            .tile[0],
            208
        );
        let small = CpuSchedule {
            tile: [64, 0, 0, 0],
            ..sweep
        };
        assert_eq!(on_trial(small), small);
        // Blocked schedules are sized by their slabs and run as given.
        let blocked = CpuSchedule {
            time_depth: 8,
            time_slab: 36,
            ..sweep
        };
        assert_eq!(on_trial(blocked), blocked);
    }

    #[test]
    fn trial_shapes_and_blocks_follow_the_effective_caches() {
        // Planes of two 64^2 f64 grids: 64 KiB. By the report every one of 512 planes stays
        // (twice 240 MiB is far more); by a measured 4 MiB, two slabs of 28 planes and the
        // steps' lag make 148.
        let kernel = star();
        let shape = [512, 64, 64];
        let reported = trial_shape(&cloud_vm(None), &kernel, &shape);
        assert_eq!(reported, shape);
        let vm = cloud_vm(measured(256 << 10, 4 << 20));
        let trial = trial_shape(&vm, &kernel, &shape);
        assert_eq!(trial, [148, 64, 64]);
        // Blocks of rows: 3 input planes and 1 output plane of 64-point rows (512 bytes)
        // in half the second-level cache: 512 rows by the report (2 MiB), 64 measured.
        let wide = [64, 4096, 64];
        assert_eq!(default_block(&cloud_vm(None), &kernel, &wide), 512);
        assert_eq!(default_block(&vm, &kernel, &wide), 64);
    }
}
