//! The wavefront executor: `depth` steps per pass over slabs of dimension 0, in place in the
//! rotation's own grids; with tiles, skewed along dimension 1 as well.
//!
//! # Order
//!
//! Steps run in blocks of `depth` (the last block may be shorter). A block walks slabs
//! `z0 = 0, slab, 2 slab, ..`; for each slab, step `k` of the block (from 1) computes planes
//! `[z0 - (k - 1) lag, z0 + slab - (k - 1) lag)` clipped to the interior, so each step
//! computes a prefix of the interior that grows slab by slab and trails the step before by
//! `lag` planes, the kernel's reach along dimension 0.
//!
//! With several stages per step (a [`StageLoop`] of `S` stages), "step" below reads
//! *sub-step*: a block of `depth` steps has `depth * S` sub-steps, every stage of every step in
//! order, sub-step `u` (from 0) of a slab shifted back by `u lag` planes (and `u lag_y` rows in
//! tiles), `lag` the largest reach of any stage. Sub-step `u` reads the grids of any earlier
//! sub-step (each at least `lag` planes ahead), and overwrites a grid only where every earlier
//! sub-step that still reads its old values has passed, for the same reasons.
//!
//! # Why it is exact
//!
//! Step `k` at plane `p` reads step `k - 1` at planes up to `p + lag`, which the step before
//! computed in this slab or earlier (its prefix ends `lag` planes further), with their halos
//! (filled when their planes were computed, and each halo plane of dimension 0 once the plane
//! its condition copies from is done). Step `k` writes into the grid that held step `k - L`
//! (the chain's ring of `L` grids); steps `k - L + 1 .. k - 1` still read step `k - L`, but
//! only at planes beyond their own prefixes minus `lag`, which lie beyond step `k`'s prefix.
//! Every step reads the same values it would read in a loop of whole sweeps, and every point
//! is computed by the same point loop, so the results are the same bits.
//!
//! # Workers
//!
//! All workers walk the same blocks, slabs and steps. Each computes its share of a step's
//! slab (a range of dimension 1; of dimension 0 in 1-D and 2-D, so rows stay whole), cut
//! along the unit-stride dimension where the schedule's tiles cut it, then all meet at a
//! barrier; worker
//! 0 fills the halo planes the step completed, and all meet again. During a step's compute,
//! the grid it writes is written only at the workers' disjoint shares and read by nobody, and
//! the grids it reads are written by nobody; during a halo fill only worker 0 touches
//! anything. Grids are held as raw pointers; each computation is lent the rows it reads and
//! writes (see the steps module's "Unsafe"), so no reference outlives the computation it is
//! made for, nor covers a row another worker writes meanwhile.
//!
//! # Tiles
//!
//! Passing a whole slab per step, each step re-reads the slab the step before wrote from the
//! last-level cache. With tiles (3-D and more, every face of every rotating grid a value or
//! user-managed, so no halo depends on points a step has not computed yet), the steps also
//! skew along dimension 1 and a tile of `slab` planes by `block` rows is carried through
//! every step of the block while its planes are in the second-level cache:
//!
//! - Dimension 1 is cut into one share per worker. In the phase of a slab, worker `w` walks
//!   tiles `t = 0, 1, ..` of its share `[lo, hi)`; step `k` of tile `t` computes the slab's
//!   planes for step `k` (as above) by rows `[lo + t block, lo + (t + 1) block)` shifted back
//!   by `(k - 1) lag_y` (`lag_y`: the kernel's reach along dimension 1) and clipped to the
//!   trapezoid `[lo + (k - 1) lag_y, hi - (k - 1) lag_y)` (a side at the grid's edge does not
//!   shrink). Step `k` reads step `k - 1` within `lag_y` rows of its own, which the trapezoid
//!   of step `k - 1` holds and earlier tiles (or this one) have computed; the workers never
//!   read each other's rows of this slab in it.
//! - All meet at a barrier. In the next phase the worker below each edge between shares
//!   first computes the triangle the two trapezoids of the slab left, rows `[edge - (k - 1)
//!   lag_y, edge + (k - 1) lag_y)` for step `k`, reading rows both trapezoids computed, and
//!   then its trapezoid of the next slab, while the others compute theirs; a last phase
//!   computes the last slab's triangles. A triangle and the trapezoid above its edge in the
//!   next slab meet only at the same step `k` (the trapezoid's rows start `(k - 1) lag_y`
//!   above the edge, the triangle's end `(k - 1) lag_y` above it; the trapezoid's planes
//!   start `(k - 1) lag` before the next slab, the triangle's end there), where neither
//!   reads the grid step `k` writes; so the two run at once, and no worker waits while
//!   another computes a triangle. The edges sit half a triangle below an even cut, so every
//!   worker computes about as many points.
//! - The overwrites are safe for the same reason as the slabs': step `k` overwrites step
//!   `k - L` at rows and planes that every step still reading step `k - L` (steps `k - L + 1
//!   .. k - 1`, whose extents reach `lag` and `lag_y` further, in every direction a later
//!   tile, slab or triangle lies) has passed.
//! - No halo is filled during the loop: every grid a step writes gets its halo (values and
//!   nothing else) once before the first step, which is what each fill after a step would
//!   write again.
//! - Workers run different steps at once, so a grid one worker reads is written by another
//!   elsewhere: each tile is lent exactly the rows it reads (the tile grown by the reach),
//!   which by the above no other worker writes in the same phase, and does not prefetch.
//!
//! The workers meet once per slab (and once more per block) instead of twice per step and
//! slab. A share must be wider
//! than three times `(depth - 1) lag_y` rows for the trapezoids to keep rows; otherwise, and
//! for faces that copy from the interior, the slabs run as above.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use stencil_core::analysis::{Radius, field_radius};
use stencil_core::grid::{Boundary, HaloSource, fill_halo, fill_halo_planes};
use stencil_core::sparse::{Corner, SourceSet, Target};
use stencil_core::time_loop::{FieldSlot, WrittenGrid, skipping_constant};
use stencil_core::{
    CpuLoop, CpuSchedule, Element, FieldId, FieldView, FieldViewMut, Geometry, MAX_DIMS, Result,
    StageLoop,
};

use super::barrier::{PoisonOnPanic, SpinBarrier};
use super::blocking::TimeBlocking;
use crate::generic::{GenericRun, Program};
use crate::input_rows::{InputRows, RowBox};
use crate::output_rows::OutputRows;
use crate::pool::{CpuBackend, INLINE_POINTS};
use crate::specialised::{RowPlan, SpecialisedRun};
use crate::tiling::{Tile, Tiling};

/// A grid the time loop writes, held by raw pointer (see the module documentation).
struct RawGrid<T> {
    ptr: *mut T,
    len: usize,
    geom: Geometry,
    faces: Vec<[Boundary<T>; 2]>,
    /// The faces without the constant ones (see `WrittenGrid::fill_faces`).
    variable_faces: Vec<[Boundary<T>; 2]>,
    /// Whether the constant faces' halo points hold their values (only worker 0, in halo
    /// phases, reads or sets it).
    constant_faces_filled: AtomicBool,
}

// SAFETY: a `RawGrid` stands for a `&mut [T]` the caller lent the time loop (the steps
// module's argument 1); workers access it only as its arguments 2 to 4 say (each computation
// lent the rows it reads, which no other worker writes meanwhile; disjoint writes; one writer
// during a halo fill), which is what sending or sharing the `&mut [T]`'s disjoint parts would
// allow for `T: Send + Sync`.
unsafe impl<T: Send + Sync> Send for RawGrid<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for RawGrid<T> {}

impl<T: Element> RawGrid<T> {
    fn of(grid: &mut WrittenGrid<'_, T>) -> RawGrid<T> {
        RawGrid {
            ptr: grid.view.data.as_mut_ptr(),
            len: grid.view.data.len(),
            geom: grid.view.geom,
            faces: grid.faces.clone(),
            variable_faces: skipping_constant(&grid.faces, true),
            constant_faces_filled: AtomicBool::new(grid.constant_faces_filled),
        }
    }

    /// The faces a fill must write now.
    fn fill_faces(&self) -> &[[Boundary<T>; 2]] {
        if self.constant_faces_filled.load(Ordering::Relaxed) {
            &self.variable_faces
        } else {
            &self.faces
        }
    }

    /// The rows `rows` of the grid, read-only, for one computation of a phase.
    ///
    /// # Safety
    /// Nobody may write a row of `rows` while the value lives, and it may go only to runs
    /// whose reads lie in `rows`, with no prefetching (see [`InputRows::from_raw_parts`]).
    unsafe fn input(&self, rows: RowBox) -> InputRows<'_, T> {
        // SAFETY: the `len` elements at `ptr` are the lent storage, valid for reads while the
        // workers run (argument 1); the caller's promise is the rest of the contract
        // (argument 2).
        unsafe { InputRows::from_raw_parts(self.ptr, self.len, self.geom, rows) }
    }

    /// The grid as an output written by rows, for one computation of a phase.
    ///
    /// # Safety
    /// While the value lives, nobody else may read or write the rows it is used to write, and
    /// only rows of disjoint boxes may be written through several of these at once.
    unsafe fn rows(&self) -> OutputRows<'_, T> {
        // SAFETY: the storage is the lent one (valid, `len` elements: argument 1); the caller
        // guarantees the access discipline (argument 3); the layout was checked before the
        // workers started.
        unsafe { OutputRows::from_raw_parts(self.ptr, self.len, self.geom, "time loop grid") }
            .unwrap_or_else(|e| unreachable!("stencil-cpu time loop: layout checked: {e}"))
    }

    /// Adds `increment` to the interior point `point`.
    ///
    /// # Safety
    /// The point must lie in a box the calling computation writes (argument 3), after its
    /// runs are done.
    unsafe fn add(&self, point: &[usize; MAX_DIMS], increment: T) {
        let i = self.geom.index(&point.map(|p| p as isize));
        debug_assert!(i < self.len);
        // SAFETY: `i` is an interior point of the lent storage; the caller's box is written
        // by this computation alone and read by nobody else in this phase (arguments 2, 3).
        unsafe {
            let p = self.ptr.add(i);
            *p = *p + increment;
        }
    }

    /// The value at the interior point `point`.
    ///
    /// # Safety
    /// As [`add`](Self::add).
    unsafe fn get(&self, point: &[usize; MAX_DIMS]) -> T {
        let i = self.geom.index(&point.map(|p| p as isize));
        debug_assert!(i < self.len);
        // SAFETY: as `add`.
        unsafe { *self.ptr.add(i) }
    }

    /// The whole grid, mutably, for a halo fill.
    ///
    /// # Safety
    /// Nobody else may access the grid while the view lives.
    unsafe fn view_mut(&self) -> FieldViewMut<'_, T> {
        FieldViewMut {
            geom: self.geom,
            // SAFETY: the lent storage (argument 1); the caller guarantees exclusive access
            // (argument 4).
            data: unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) },
        }
    }
}

/// One stage of a step as the workers run it.
struct StageRun<T: Element> {
    point_loop: Option<CpuLoop<T>>,
    program: Option<Program>,
    /// Per kernel field (declaration order): the loop's grid it reads or writes.
    slots: Vec<FieldSlot>,
    /// Per kernel field (declaration order): how far the kernel reads it.
    reach: Vec<Radius>,
    params: Vec<T>,
    /// Per kernel field: whether the stage writes it.
    outputs: Vec<bool>,
    /// The grids the stage writes.
    written: Vec<Target>,
}

/// A set of receivers' samples of this call, each corner's value held as the bits of an
/// `f64` (exact for `f32` and `f64`) at `(receiver, corner, record)`, written by the one
/// computation that holds the corner's point at the sampled step.
struct Records<T> {
    target: Target,
    stage: usize,
    points: Vec<Vec<Corner<T>>>,
    interval: usize,
    /// Samples taken before this call.
    first: usize,
    /// Samples this call takes.
    records: usize,
    corners: usize,
    values: Vec<AtomicU64>,
}

impl<T: Element> Records<T> {
    fn slot(&self, receiver: usize, corner: usize, record: usize) -> &AtomicU64 {
        &self.values[(receiver * self.corners + corner) * self.records + record]
    }
}

/// Everything the workers share.
struct Context<'a, T: Element> {
    stages: Vec<StageRun<T>>,
    sources: Vec<SourceSet<T>>,
    records: Vec<Records<T>>,
    /// What to add to a count of steps done to get the sparse points' step number.
    step_offset: usize,
    /// Per lone grid: whether a stage reads it (its halo is then filled as it goes).
    lone_read: Vec<bool>,
    /// One tile over the whole interior (for the generic path's buffer sizes).
    whole: Tiling,
    rows: RowPlan,
    /// Points per row segment: the schedule's tile extent along the unit-stride dimension.
    segment: usize,
    /// Rows of dimension 1 per block of a worker's share (3-D and more).
    block: usize,
    shape: Vec<usize>,
    blocking: TimeBlocking,
    workers: usize,
    chains: Vec<Vec<RawGrid<T>>>,
    lone: Vec<RawGrid<T>>,
    coefficients: Vec<FieldView<'a, T>>,
    done: usize,
    steps: usize,
    barrier: SpinBarrier,
    /// The tests' record of every box of rows lent or written (see `audit`).
    #[cfg(test)]
    audit: Option<std::sync::Arc<super::audit::Audit>>,
    _lent: PhantomData<&'a mut [T]>,
}

/// Jobs of fewer points (interior points times outputs) run on the calling thread:
/// [`INLINE_POINTS`], or none under Miri, whose tests must be tiny yet reach the workers.
const POOL_POINTS: usize = if cfg!(miri) { 0 } else { INLINE_POINTS };

/// The workers a blocked time loop of `job` under `schedule` runs on: the schedule's
/// threads (0: the pool's), or the calling thread alone for a job of fewer than
/// [`POOL_POINTS`] points.
pub(super) fn workers<T: Element>(
    backend: &CpuBackend,
    job: &StageLoop<'_, T>,
    schedule: &CpuSchedule,
) -> usize {
    let points: usize = job.shape().iter().product();
    let outputs: usize = job
        .stages()
        .iter()
        .map(|s| s.stencil.kernel().outputs().count())
        .sum();
    if points * outputs < POOL_POINTS {
        return 1;
    }
    match schedule.threads {
        0 => backend.threads(),
        n => n.min(backend.threads()),
    }
    .max(1)
}

/// The rows ahead that a blocked loop's generated loops prefetch under `schedule` (its
/// `prefetch` as the loop plans with it): none in tiles (a generated loop prefetches
/// rows ahead of those it reads, which in tiles may be rows another worker is writing: a
/// tile reads only the rows it is lent), and in slabs only on request (an explicit
/// `prefetch`), since all steps of a block but the first read their rows from cache, and a
/// run that prefetches leaves the shifted loop for the prefetching one. The 5-point 2-D loop
/// at 8192^2 (depth 16, one Zen 5 core) ran 17.3-18.0 ms per step prefetching two rows ahead
/// and 14.5-15.3 without (2 threads: 9.6-12.0 against 8.2-8.5); the 7-point loop at 256^3 in
/// slabs (zero-gradient faces) the same either way, 6.61-6.75 against 6.64-6.91 ms on one
/// core, 3.81 against 3.82 on two. A run planned as prefetching also takes shorter row
/// blocks, so the loop plans without.
pub(super) fn prefetch_rows(schedule: &CpuSchedule, tiles: bool) -> usize {
    match tiles || schedule.prefetch == stencil_core::PREFETCH_AUTO {
        true => 0,
        false => schedule.prefetch,
    }
}

/// Runs `steps` steps of `job` blocked per `blocking` on `backend`'s pool.
pub(super) fn run<T: Element>(
    backend: &CpuBackend,
    job: &mut StageLoop<'_, T>,
    schedule: &CpuSchedule,
    blocking: TimeBlocking,
    steps: usize,
) -> Result<()> {
    let shape = job.shape().to_vec();
    let workers = workers(backend, job, schedule);
    if blocking.tiles && workers > 1 && shape[1] / workers > blocking.block {
        backend.count_tiled_time_loop();
    }
    // Every grid of the loop, for the default prefetch: the coefficients, the chains' levels
    // and the lone outputs.
    let n_grids = job.coefficients().len()
        + job.chains().iter().map(Vec::len).sum::<usize>()
        + job.lone().len();
    let grid_bytes = shape.iter().product::<usize>() * n_grids * T::ELEM.size_bytes();
    let planned = CpuSchedule {
        prefetch: prefetch_rows(schedule, blocking.tiles),
        ..*schedule
    };
    let mut plan = crate::schedules::plan(
        &planned,
        &shape,
        T::ELEM.size_bytes(),
        workers,
        0,
        grid_bytes,
        // Time-loop tiles are sized by the time loop's own blocking.
        0,
    );
    plan.rows.streaming = false;
    let stages: Vec<StageRun<T>> = job
        .stages()
        .iter()
        .map(|stage| {
            let kernel = stage.stencil.kernel();
            let point_loop = stage.stencil.cpu_loop().filter(|_| !schedule.force_generic);
            StageRun {
                point_loop,
                program: point_loop.is_none().then(|| Program::compile(kernel)),
                slots: stage.slots.clone(),
                reach: (0..kernel.fields.len())
                    .map(|f| field_radius(kernel, FieldId::new(f)))
                    .collect(),
                params: stage.params.clone(),
                outputs: kernel
                    .fields
                    .iter()
                    .map(|f| f.role == stencil_core::Role::Output)
                    .collect(),
                written: stage
                    .slots
                    .iter()
                    .zip(&kernel.fields)
                    .filter(|(_, f)| f.role == stencil_core::Role::Output)
                    .filter_map(|(&slot, _)| StageLoop::<T>::slot_target(slot))
                    .collect(),
            }
        })
        .collect();
    let coefficients = job.coefficients().to_vec();
    let done = job.done();
    // The sparse points' step numbers (in the simulation's whole run) of this call.
    let first = job.step_number(done);
    let lone_read: Vec<bool> = (0..job.lone().len()).map(|k| job.lone_is_read(k)).collect();
    let sources = job.sources().to_vec();
    let records: Vec<Records<T>> = job
        .receivers()
        .iter()
        .map(|set| {
            let before = first / set.interval;
            let records = (first + steps) / set.interval - before;
            let corners = set.points.iter().map(Vec::len).max().unwrap_or(0);
            Records {
                target: set.target,
                stage: set.stage,
                points: set.points.clone(),
                interval: set.interval,
                first: before,
                records,
                corners,
                values: (0..set.points.len() * corners * records)
                    .map(|_| AtomicU64::new(0))
                    .collect(),
            }
        })
        .collect();
    {
        let (chains, lone) = job.grids_mut();
        if blocking.tiles {
            // Tiles fill no halo as they go: every face is a value or user-managed, so the
            // halo of every grid a step writes is filled once, before the first step.
            for chain in chains.iter_mut() {
                let len = chain.len();
                for k in 0..steps.min(len) {
                    let grid = &mut chain[(len - (done + k) % len) % len];
                    let faces = grid.fill_faces();
                    fill_halo(&mut grid.view, &faces);
                    grid.constant_faces_filled = true;
                }
            }
            for (grid, _) in lone.iter_mut().zip(&lone_read).filter(|(_, read)| **read) {
                let faces = grid.fill_faces();
                fill_halo(&mut grid.view, &faces);
                grid.constant_faces_filled = true;
            }
        }
        for grid in chains.iter().flatten().chain(lone.iter()) {
            stencil_core::view::check_layout::<T>(
                "time loop grid",
                &grid.view.geom,
                grid.view.data.len(),
            )?;
        }
        let context = Context {
            stages,
            sources,
            records,
            step_offset: first - done,
            lone_read,
            whole: Tiling::new(&shape, &[0; MAX_DIMS]),
            rows: plan.rows,
            segment: plan.tiling.extent(shape.len() - 1),
            block: blocking.block,
            shape: shape.clone(),
            blocking,
            workers,
            chains: chains
                .iter_mut()
                .map(|c| c.iter_mut().map(RawGrid::of).collect())
                .collect(),
            lone: lone.iter_mut().map(RawGrid::of).collect(),
            coefficients,
            done,
            steps,
            barrier: SpinBarrier::new(workers),
            #[cfg(test)]
            audit: super::audit::current(),
            _lent: PhantomData,
        };
        backend.on_workers(workers, |w| context.worker(w));
        // The receivers' samples, combined in corner order.
        for (set, records) in job.receivers_mut().iter_mut().zip(&context.records) {
            for record in 0..records.records {
                for r in 0..records.points.len() {
                    let values = (0..records.points[r].len()).map(|c| {
                        T::from_f64(f64::from_bits(
                            records.slot(r, c, record).load(Ordering::Relaxed),
                        ))
                    });
                    let sample = set.combine(r, values);
                    set.traces[r].push(sample);
                }
            }
        }
    }
    job.advance(steps);
    // Grids no stage reads are never read: their halo is filled once, at the end.
    let (chains, lone) = job.grids_mut();
    for grid in lone.iter_mut() {
        let faces = grid.fill_faces();
        fill_halo(&mut grid.view, &faces);
        grid.constant_faces_filled = true;
    }
    // Every chain grid a step wrote has its whole halo filled (a loop of at least `L` steps
    // writes every grid of a chain of `L`).
    for chain in chains.iter_mut() {
        let written = steps.min(chain.len());
        for k in 0..written {
            let len = chain.len();
            chain[(len - (done + k) % len) % len].constant_faces_filled = true;
        }
    }
    Ok(())
}

impl<T: Element> Context<'_, T> {
    /// What worker `w` runs (see the module documentation).
    fn worker(&self, w: usize) {
        let _poison = PoisonOnPanic(&self.barrier);
        if self.blocking.tiles {
            self.worker_tiles(w);
            return;
        }
        let TimeBlocking {
            depth, slab, lag, ..
        } = self.blocking;
        let n = self.shape[0];
        let stages = self.stages.len();
        let mut done = self.done;
        let mut left = self.steps;
        // Per stage of a block and grid it writes: which halo planes of dimension 0 are
        // filled.
        let h = self
            .chains
            .iter()
            .flatten()
            .chain(&self.lone)
            .map(|g| g.geom.halo)
            .max()
            .unwrap_or(0);
        let mut halo_done: Vec<Vec<Vec<bool>>> = (0..depth * stages)
            .map(|u| vec![vec![false; 2 * h]; self.stages[u % stages].written.len()])
            .collect();
        // Barriers passed so far: the phase the worker is in.
        let mut phase = 0;
        while left > 0 {
            let block = left.min(depth);
            for filled in halo_done.iter_mut().flatten() {
                filled.fill(false);
            }
            // Sub-steps: every stage of every step of the block, each lagging the one before.
            let subs = block * stages;
            let slabs = (n + (subs - 1) * lag).div_ceil(slab);
            for s in 0..slabs {
                let z0 = s * slab;
                for (u, filled) in halo_done.iter_mut().enumerate().take(subs) {
                    let shift = u * lag;
                    let start = z0.saturating_sub(shift).min(n);
                    let end = (z0 + slab).saturating_sub(shift).min(n);
                    if start >= end {
                        continue;
                    }
                    let (before, stage) = (done + u / stages, u % stages);
                    self.compute_share((w, phase), stage, before, start, end);
                    self.barrier.wait();
                    phase += 1;
                    if w == 0 {
                        self.fill_halos(phase, stage, before, start..end, filled);
                    }
                    self.barrier.wait();
                    phase += 1;
                }
            }
            done += block;
            left -= block;
        }
    }

    /// What worker `w` runs with tiles (see the module documentation).
    fn worker_tiles(&self, w: usize) {
        let TimeBlocking {
            depth,
            slab,
            lag,
            block: rows,
            lag_y,
            ..
        } = self.blocking;
        let (n, ny, workers) = (self.shape[0], self.shape[1], self.workers);
        let stages = self.stages.len();
        // A share's sides towards other shares shrink by `lag_y` rows per sub-step.
        let shrink_lo = if w > 0 { lag_y } else { 0 };
        let shrink_hi = if w + 1 < workers { lag_y } else { 0 };
        let mut done = self.done;
        let mut left = self.steps;
        // Barriers passed so far: the phase the worker is in.
        let mut phase = 0;
        while left > 0 {
            let block = left.min(depth);
            // Sub-steps: every stage of every step of the block, each lagging the one before.
            let subs = block * stages;
            // Where worker `v`'s share of dimension 1 starts: the worker below each edge
            // also computes the triangle above its share, so the edges move down by half a
            // triangle's worth of rows per sub-step, which evens out the workers' points.
            let edge = |v: usize| match v {
                0 => 0,
                v if v == workers => ny,
                v => v * ny / workers - (subs - 1) * lag_y / 2,
            };
            let (lo, hi) = (edge(w), edge(w + 1));
            let slabs = (n + (subs - 1) * lag).div_ceil(slab);
            let tiles = (hi - lo + (subs - 1) * lag_y).div_ceil(rows);
            let planes = |s: usize, u: usize| {
                let (z0, shift) = (s * slab, u * lag);
                let start = z0.saturating_sub(shift).min(n);
                (start, (z0 + slab).saturating_sub(shift).min(n).max(start))
            };
            // The triangle above the share, of slab `s`, by the worker below it.
            let triangle = |s: usize, phase: usize| {
                if w + 1 == workers || lag_y == 0 {
                    return;
                }
                for u in 1..subs {
                    let (start, end) = planes(s, u);
                    let shift = u * lag_y;
                    if start < end {
                        let (turn, before) = ((w, phase), done + u / stages);
                        self.compute(
                            turn,
                            u % stages,
                            before,
                            [start, end],
                            [hi - shift, hi + shift],
                            false,
                        );
                    }
                }
            };
            // The trapezoid of the share in slab `s`, tile by tile, every sub-step of a tile
            // before the next tile.
            let trapezoid = |s: usize, phase: usize| {
                for t in 0..tiles {
                    for u in 0..subs {
                        let (start, end) = planes(s, u);
                        let shift = u * lag_y;
                        let y0 = (lo + t * rows)
                            .saturating_sub(shift)
                            .max(lo + u * shrink_lo);
                        let y1 = (lo + (t + 1) * rows)
                            .saturating_sub(shift)
                            .min(hi - u * shrink_hi);
                        if start < end && y0 < y1 {
                            let (turn, before) = ((w, phase), done + u / stages);
                            self.compute(turn, u % stages, before, [start, end], [y0, y1], false);
                        }
                    }
                }
            };
            // Each phase computes the triangles of the slab before and the trapezoids of this
            // one, so no worker waits while another computes a triangle; a last phase
            // computes the last slab's triangles.
            for s in 0..=slabs {
                if s > 0 {
                    triangle(s - 1, phase);
                }
                if s < slabs {
                    trapezoid(s, phase);
                }
                self.barrier.wait();
                phase += 1;
            }
            done += block;
            left -= block;
        }
    }

    /// The grid of chain `chain` at `position` for the step after `before` steps, and its
    /// number among the grids the loop writes (chains in order, then the lone outputs), which
    /// names it in the audit.
    fn chain_grid_numbered(
        &self,
        chain: usize,
        position: usize,
        before: usize,
    ) -> (&RawGrid<T>, usize) {
        let grids = &self.chains[chain];
        let len = grids.len();
        let index = (position + len - before % len) % len;
        let number = self.chains[..chain].iter().map(Vec::len).sum::<usize>() + index;
        (&grids[index], number)
    }

    /// The number of lone output `k` among the grids the loop writes (see
    /// [`chain_grid_numbered`](Self::chain_grid_numbered)).
    fn lone_number(&self, k: usize) -> usize {
        self.chains.iter().map(Vec::len).sum::<usize>() + k
    }

    /// Rows beyond those it reads that a generated loop may prefetch after a run (the row
    /// contract's prefetch window: `max(prefetch, rows) + r` rows past row `r` of a register
    /// block of `rows`), 0 without prefetching.
    fn ahead(&self) -> usize {
        match self.rows.prefetch {
            0 => 0,
            p => p + 2 * self.rows.register_rows.max(1),
        }
    }

    /// Records for the tests' audit that worker `turn.0` in phase `turn.1` lends a run the
    /// rows `rows` of written grid number `grid`, or writes them (`write`).
    #[inline(always)]
    fn record(&self, turn: (usize, usize), grid: usize, write: bool, rows: &RowBox) {
        #[cfg(test)]
        if let Some(audit) = &self.audit {
            audit.record(turn, grid, write, *rows);
        }
        #[cfg(not(test))]
        let _ = (turn, grid, write, rows);
    }

    /// Worker `w`'s share of planes `start..end` of the step after `before` steps, in phase
    /// `phase` (barriers passed).
    fn compute_share(
        &self,
        (w, phase): (usize, usize),
        stage: usize,
        before: usize,
        start: usize,
        end: usize,
    ) {
        let n_dims = self.shape.len();
        // Rows stay whole within the sweep's tiles along the unit-stride dimension, so every
        // row is cut into the segments a sweep under the same schedule cuts it into (a loop
        // that reassociates along a row gives the same bits only on the same segments).
        if n_dims >= 3 {
            let extent = self.shape[1];
            let rows = [w * extent / self.workers, (w + 1) * extent / self.workers];
            if rows[0] < rows[1] {
                self.compute((w, phase), stage, before, [start, end], rows, true);
            }
        } else {
            let extent = end - start;
            let planes = [
                start + w * extent / self.workers,
                start + (w + 1) * extent / self.workers,
            ];
            if planes[0] < planes[1] {
                self.compute(
                    (w, phase),
                    stage,
                    before,
                    planes,
                    [0, self.shape.get(1).copied().unwrap_or(1)],
                    true,
                );
            }
        }
    }

    /// Planes `planes` by rows `rows` of dimension 1 (3-D and more; ignored below) of the
    /// step after `before` steps, in blocks of `self.block` rows when `blocks`, by worker
    /// `turn.0` in phase `turn.1`.
    fn compute(
        &self,
        turn: (usize, usize),
        stage: usize,
        before: usize,
        planes: [usize; 2],
        rows: [usize; 2],
        blocks: bool,
    ) {
        let run = &self.stages[stage];
        let n_dims = self.shape.len();
        let mut tile = Tile {
            start: [0; MAX_DIMS],
            end: [1; MAX_DIMS],
        };
        tile.end[..n_dims].copy_from_slice(&self.shape);
        [tile.start[0], tile.end[0]] = planes;
        if n_dims >= 3 {
            [tile.start[1], tile.end[1]] = rows;
        }
        let mut inputs = Vec::new();
        let mut outputs = Vec::new();
        for (field, slot) in run.slots.iter().enumerate() {
            match (*slot, run.outputs[field]) {
                (FieldSlot::Coefficient(k), _) => {
                    inputs.push(InputRows::new(self.coefficients[k]));
                }
                (FieldSlot::Chain { chain, position }, false) => {
                    let (grid, number) = self.chain_grid_numbered(chain, position, before);
                    let reads = reads_of(&tile, &run.reach[field], n_dims, self.ahead());
                    self.record(turn, number, false, &reads);
                    // SAFETY: the step computes `tile` and reads this grid (an earlier step's)
                    // only at the kernel's reach of this field from it, or the rows a
                    // generated loop prefetches after it: in `reads` (tiles prefetch nothing:
                    // `run` turns it off); nobody writes those rows meanwhile (the steps
                    // module's argument 2).
                    inputs.push(unsafe { grid.input(reads) })
                }
                (FieldSlot::Lone(k), false) => {
                    let number = self.lone_number(k);
                    let reads = reads_of(&tile, &run.reach[field], n_dims, self.ahead());
                    self.record(turn, number, false, &reads);
                    // SAFETY: as for a chain's grid read: an earlier stage wrote this grid
                    // (the loop's rules), and every stage lags the one before by its reach.
                    inputs.push(unsafe { self.lone[k].input(reads) })
                }
                (FieldSlot::Chain { chain, .. }, true) => {
                    let (grid, number) = self.chain_grid_numbered(chain, 0, before);
                    self.record(turn, number, true, &writes_of(&tile, n_dims));
                    // SAFETY: the workers write disjoint boxes of the step's output grid (their
                    // shares of dimension 1 or 0, their trapezoids and triangles) and no worker
                    // reads the rows another writes in the same phase (the steps module's
                    // arguments 2 and 3); `OutputRows` makes no reference but its rows.
                    outputs.push(unsafe { grid.rows() })
                }
                (FieldSlot::Lone(k), true) => {
                    let number = self.lone_number(k);
                    self.record(turn, number, true, &writes_of(&tile, n_dims));
                    // SAFETY: as for a chain's output grid (no stage reads a lone grid while
                    // the one that writes it runs: the loop's rules).
                    outputs.push(unsafe { self.lone[k].rows() })
                }
            }
        }
        let last = n_dims - 1;
        let segment = self.segment;
        // The number of the step computed, which the kernel reads as `step()`.
        let step = (before + self.step_offset) as u64;
        let block = if blocks { self.block } else { usize::MAX };
        // The worker's share in row segments and, in 3-D and more, blocks of `block` rows of
        // dimension 1, each walked plane by plane: the planes a block's rows read stay in the
        // second-level cache from one plane to the next.
        let segments = |run: &mut dyn FnMut(&Tile)| {
            if n_dims == 1 {
                run(&tile);
                return;
            }
            let mut piece = tile;
            let mut x = 0;
            while x < self.shape[last] {
                piece.start[last] = x;
                piece.end[last] = (x + segment).min(self.shape[last]);
                if n_dims >= 3 {
                    let mut y = tile.start[1];
                    while y < tile.end[1] {
                        piece.start[1] = y;
                        piece.end[1] = y.saturating_add(block).min(tile.end[1]);
                        run(&piece);
                        y = piece.end[1];
                    }
                } else {
                    run(&piece);
                }
                x += segment;
            }
        };
        match run.point_loop {
            Some(point_loop) => {
                let run = SpecialisedRun::new(
                    point_loop,
                    self.whole,
                    &inputs,
                    &outputs,
                    &run.params,
                    self.rows,
                    // `StageLoop::new` refuses kernels with reductions.
                    None,
                )
                .at_step(step);
                let mut scratch = run.scratch();
                segments(&mut |piece| run.run_box(&mut scratch, piece));
            }
            None => {
                let program = run
                    .program
                    .as_ref()
                    .unwrap_or_else(|| unreachable!("stencil-cpu: compiled when needed"));
                let run = GenericRun::new(
                    program,
                    self.whole,
                    &inputs,
                    &outputs,
                    &run.params,
                    (self.rows.row_block, false),
                    None,
                )
                .at_step(step);
                let mut scratch = run.scratch();
                segments(&mut |piece| run.run_box(&mut scratch, piece));
            }
        }
        drop((inputs, outputs));
        self.sparse(stage, before, &tile, n_dims);
    }

    /// Adds the sources of the grids stage `stage` wrote at the step after `before` steps at
    /// their corners in `tile`, then takes the receivers' samples there: every corner is in
    /// exactly one computation of each stage, so each is added or sampled once, by the
    /// computation that wrote it, after its runs and before any later stage reads it.
    fn sparse(&self, stage: usize, before: usize, tile: &Tile, n_dims: usize) {
        let step = before + self.step_offset;
        let inside = |p: &[usize; MAX_DIMS]| {
            (0..n_dims).all(|d| tile.start[d] <= p[d] && p[d] < tile.end[d])
        };
        let grid = |target: Target| match target {
            Target::Chain(c) => self.chain_grid_numbered(c, 0, before).0,
            Target::Lone(k) => &self.lone[k],
        };
        for set in self.sources.iter().filter(|set| set.stage == stage) {
            let grid = grid(set.target);
            set.increments(step, |point, increment| {
                if inside(point) {
                    // SAFETY: the point lies in `tile`, which this computation wrote, its runs
                    // done (argument 3).
                    unsafe { grid.add(point, increment) }
                }
            });
        }
        for records in self.records.iter().filter(|r| r.stage == stage) {
            if !(step + 1).is_multiple_of(records.interval) {
                continue;
            }
            let record = (step + 1) / records.interval - records.first - 1;
            let grid = grid(records.target);
            for (r, corners) in records.points.iter().enumerate() {
                for (c, corner) in corners.iter().enumerate() {
                    if inside(&corner.point) {
                        // SAFETY: as above; a read of a point this computation wrote.
                        let value = unsafe { grid.get(&corner.point) };
                        records
                            .slot(r, c, record)
                            .store(value.to_f64().to_bits(), Ordering::Relaxed);
                    }
                }
            }
        }
    }

    /// Fills, in every grid the step after `before` steps wrote, the halo of planes `planes`
    /// and each halo plane of dimension 0 whose source is now done (`done[chain]` marks the
    /// halo planes filled so far by this step).
    fn fill_halos(
        &self,
        phase: usize,
        stage: usize,
        before: usize,
        planes: std::ops::Range<usize>,
        done: &mut [Vec<bool>],
    ) {
        let n = self.shape[0];
        for (&target, filled) in self.stages[stage].written.iter().zip(done.iter_mut()) {
            let (grid, number) = match target {
                Target::Chain(c) => self.chain_grid_numbered(c, 0, before),
                // Grids no stage reads get their halo once, at the end.
                Target::Lone(k) if !self.lone_read[k] => continue,
                Target::Lone(k) => (&self.lone[k], self.lone_number(k)),
            };
            self.record((0, phase), number, true, &RowBox::whole(&grid.geom));
            // SAFETY: only worker 0 runs between the two barriers around this call (the
            // steps module's argument 4), so this is the only access to the grid.
            let mut view = unsafe { grid.view_mut() };
            let faces = grid.fill_faces();
            fill_halo_planes(&mut view, faces, planes.start as isize..planes.end as isize);
            let h = grid.geom.halo as isize;
            let (n_signed, front) = (n as isize, planes.end);
            for (k, c) in (-h..0).chain(n_signed..n_signed + h).enumerate() {
                if filled[k] {
                    continue;
                }
                let side = usize::from(c >= n_signed);
                let ready = match grid.faces[0][side].source(c, n) {
                    HaloSource::Interior(q) => q < front,
                    HaloSource::Value(_) | HaloSource::Untouched => true,
                };
                if ready {
                    fill_halo_planes(&mut view, faces, c..c + 1);
                    filled[k] = true;
                }
            }
            if front == n && filled[..2 * h as usize].iter().all(|&f| f) {
                // The step has filled the grid's whole halo.
                grid.constant_faces_filled.store(true, Ordering::Relaxed);
            }
        }
    }
}

/// The rows a computation of `tile` reads of a field the kernel reads up to `reach` away: the
/// tile's rows (every dimension but the unit-stride one) grown by the reach on each side, and
/// by `ahead` more rows (those a generated loop prefetches) after it along the dimension its
/// runs' rows are adjacent along.
fn reads_of(tile: &Tile, reach: &Radius, n_dims: usize, ahead: usize) -> RowBox {
    let mut rows = writes_of(tile, n_dims);
    for d in 0..n_dims.saturating_sub(1) {
        rows.lo[d] -= reach.low[d] as isize;
        rows.hi[d] += reach.high[d] as isize;
    }
    if n_dims >= 2 {
        rows.hi[n_dims - 2] += ahead as isize;
    }
    rows
}

/// The rows a computation of `tile` writes: the tile's (every dimension but the unit-stride
/// one).
fn writes_of(tile: &Tile, n_dims: usize) -> RowBox {
    let mut rows = RowBox {
        lo: [0; MAX_DIMS],
        hi: [1; MAX_DIMS],
    };
    for d in 0..n_dims.saturating_sub(1) {
        rows.lo[d] = tile.start[d] as isize;
        rows.hi[d] = tile.end[d] as isize;
    }
    rows
}
