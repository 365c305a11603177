//! The specialised path: rows handed to the point loop that `stencil!` generated.
//!
//! A generated loop ([`RunFn`](stencil_core::row::RunFn)) takes a whole run per call: the executor sets one
//! [`RowInput`] per input (where the run's first row starts in that input) and one
//! [`OutputRun`] per output, and the generated code walks the run's rows itself, computing
//! up to [`RowPlan::register_rows`] rows together. A hand-written loop ([`RowFn`]) takes one
//! row per call, with one mutable slice of exactly `len` elements per output. Under a row
//! block shorter than the row, each run is walked in column blocks of that many points. The
//! per-worker lists live in a [`RowScratch`] reused across runs and tiles: nothing is
//! allocated per run or row.

use stencil_core::row::{OutputRun, RowArgs, RowFn, RowInput};
use stencil_core::{CpuLoop, Element, Geometry, MAX_DIMS};

use crate::input_rows::InputRows;
use crate::output_rows::OutputRows;
use crate::reduce::{LocalPartials, ROWS, Reductions};
use crate::tiling::{Tile, Tiling, row_stride};
use stencil_core::reduce::BLOCK;

/// How a worker walks a row: block length, streaming stores, prefetch distance.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowPlan {
    /// Most points per point-loop call (at least 1).
    pub(crate) row_block: usize,
    /// Ask the generated loop to write the outputs with streaming stores.
    pub(crate) streaming: bool,
    /// Prefetch the inputs this many rows ahead (0: none).
    pub(crate) prefetch: usize,
    /// Adjacent rows the point loop may compute together (at least 1).
    pub(crate) register_rows: usize,
}

/// Everything a worker needs to run tiles through a generated point loop.
pub(crate) struct SpecialisedRun<'r, T> {
    point_loop: CpuLoop<T>,
    tiling: Tiling,
    inputs: &'r [InputRows<'r, T>],
    outputs: &'r [OutputRows<'r, T>],
    params: &'r [T],
    plan: RowPlan,
    /// Layouts of the inputs, then of the outputs.
    grids: Vec<Geometry>,
    /// Storage distance between consecutive rows of a run, per grid (same order).
    row_strides: Vec<usize>,
    /// The kernel's reductions, if any (the schedule's cuts then aligned to blocks).
    reductions: Option<&'r Reductions<T>>,
    /// The step number the kernel reads (`RowArgs::step`).
    step: u64,
}

/// Per-worker lists handed to the point loop, refilled for every run or row.
pub(crate) struct RowScratch<'r, T> {
    inputs: Vec<RowInput<'r, T>>,
    /// One slice per output (hand-written loops); empty between tiles.
    rows: Vec<&'r mut [T]>,
    /// One run per output (generated loops); empty between tiles.
    runs: Vec<OutputRun<'r, T>>,
    /// First point of the current row run in each grid (inputs, then outputs).
    bases: Vec<usize>,
    /// Per reduction: the scratch rows the point loop writes its values into.
    reduced: Vec<Vec<T>>,
    /// The blocks' values computed since the last hand-over.
    partials: Option<LocalPartials<T>>,
}

impl<'r, T: Element> SpecialisedRun<'r, T> {
    /// Prepares `point_loop` to run over `tiling` with the given grids and parameters.
    pub(crate) fn new(
        point_loop: CpuLoop<T>,
        tiling: Tiling,
        inputs: &'r [InputRows<'r, T>],
        outputs: &'r [OutputRows<'r, T>],
        params: &'r [T],
        mut plan: RowPlan,
        reductions: Option<&'r Reductions<T>>,
    ) -> Self {
        let grids: Vec<Geometry> = inputs
            .iter()
            .map(|input| *input.geom())
            .chain(outputs.iter().map(|out| *out.geom()))
            .collect();
        let row_strides = grids.iter().map(row_stride).collect();
        plan.row_block = plan.row_block.max(1);
        if reductions.is_some() {
            plan.row_block = plan.row_block.min(crate::reduce::SEGMENT);
            plan.register_rows = plan.register_rows.min(ROWS);
        }
        plan.register_rows = match point_loop {
            CpuLoop::Runs(_) => plan.register_rows.max(1),
            CpuLoop::Rows(_) => 1,
        };
        SpecialisedRun {
            point_loop,
            tiling,
            inputs,
            outputs,
            params,
            plan,
            grids,
            row_strides,
            reductions,
            step: 0,
        }
    }

    /// This run, computing step number `step` (handed to the point loop with each call's
    /// first point: `RowArgs::at`; 0 unless set).
    pub(crate) fn at_step(mut self, step: u64) -> Self {
        self.step = step;
        self
    }

    /// Interior index of point `at` of row `r` of the run whose first point is `first`.
    fn origin(&self, first: &[usize; MAX_DIMS], r: usize, at: usize) -> [usize; MAX_DIMS] {
        // Built lane by lane: a copy of `first` with entries added in place was read back
        // whole before its stores had left the store buffer (a failed forwarding per run).
        let n_dims = self.grids[0].n_dims;
        std::array::from_fn(|d| {
            let along = if d + 1 == n_dims {
                at
            } else if d + 2 == n_dims {
                r
            } else {
                0
            };
            first[d] + along
        })
    }

    /// Fresh per-worker lists.
    pub(crate) fn scratch(&self) -> RowScratch<'r, T> {
        RowScratch {
            inputs: self.inputs.iter().map(InputRows::row_input).collect(),
            rows: Vec::with_capacity(self.outputs.len() + self.n_reductions()),
            runs: Vec::with_capacity(self.outputs.len() + self.n_reductions()),
            bases: vec![0; self.grids.len()],
            reduced: (0..self.n_reductions())
                .map(|_| vec![T::ZERO; ROWS * self.plan.row_block])
                .collect(),
            partials: self.reductions.map(Reductions::local),
        }
    }

    fn n_reductions(&self) -> usize {
        self.reductions.map_or(0, Reductions::len)
    }

    /// Hands the blocks' values a worker computed to the shared reductions (after each tile).
    pub(crate) fn hand_over(&self, scratch: &mut RowScratch<'r, T>) {
        if let (Some(reductions), Some(local)) = (self.reductions, &mut scratch.partials) {
            reductions.absorb(local);
        }
    }

    /// Runs every row of tile number `tile`.
    pub(crate) fn run_tile(&self, scratch: &mut RowScratch<'r, T>, tile: usize) {
        self.run_box(scratch, &self.tiling.tile(tile));
    }

    /// Runs every row of the box `tile` of the interior.
    ///
    /// The caller guarantees that no other call writing any point of `tile` runs at the same
    /// time (the tiles of a `Tiling` are disjoint; the time loop's blocks of one step are).
    pub(crate) fn run_box(&self, scratch: &mut RowScratch<'r, T>, tile: &Tile) {
        if let Some(reductions) = self.reductions {
            self.run_box_reducing(scratch, tile, reductions);
            return;
        }
        let RowScratch {
            inputs,
            rows: row_slots,
            runs,
            bases,
            ..
        } = scratch;
        let n_inputs = inputs.len();
        let (params, plan) = (self.params, self.plan);
        let (in_strides, out_strides) = self.row_strides.split_at(n_inputs);
        let n_dims = self.grids[0].n_dims;
        // Rows of a run are adjacent along the second-innermost dimension; a run function
        // takes a 3-D block's planes in one call.
        let row_dim = n_dims.saturating_sub(2);
        let plane_dim = crate::tiling::plane_dim(n_dims);
        let by_planes = matches!(self.point_loop, CpuLoop::Runs(_));
        let out_grids = &self.grids[n_inputs..];
        tile.for_each_block(
            n_dims,
            &self.grids,
            bases,
            by_planes,
            |bases, n_planes, n_rows, len, first| {
                let (in_bases, out_bases) = bases.split_at(n_inputs);
                let mut at = 0;
                while at < len {
                    let n = (len - at).min(plan.row_block);
                    match self.point_loop {
                        CpuLoop::Runs(run) => {
                            for (row, &base) in inputs.iter_mut().zip(in_bases) {
                                row.start = base + at;
                            }
                            runs.clear();
                            for (((output, &base), &stride), geom) in self
                                .outputs
                                .iter()
                                .zip(out_bases)
                                .zip(out_strides)
                                .zip(out_grids)
                            {
                                // SAFETY: these rows (of these planes) of this output are handed
                                // out once in the whole sweep and overlap no other live slice: the
                                // caller's boxes are disjoint, so are the blocks of a box and the
                                // column blocks of a block; `Job::new` validated that every grid has the iteration's
                                // interior shape and that no output shares storage with an input
                                // or another output; `OutputRows::new` validated that the output's
                                // layout is one `Geometry::padded` produces, in which distinct
                                // interior rows are disjoint and inside the storage (which `run`
                                // checks again).
                                runs.push(unsafe {
                                    output.run_planes(
                                        base + at,
                                        (n, stride, n_rows),
                                        crate::tiling::plane_stride(geom),
                                        n_planes,
                                    )
                                });
                            }
                            let args = RowArgs::new(n, inputs, params)
                                .at(self.origin(first, 0, at), self.step)
                                .with_rows(n_rows, row_dim)
                                .with_planes(n_planes, plane_dim)
                                .with_register_rows(plan.register_rows)
                                .with_streaming(plan.streaming)
                                .with_prefetch(plan.prefetch);
                            run(&args, runs);
                            runs.clear();
                        }
                        CpuLoop::Rows(row_fn) => self.rows_one_by_one(
                            row_fn,
                            (inputs, row_slots),
                            (in_bases, in_strides),
                            (out_bases, out_strides),
                            (first, n_rows, at, n),
                        ),
                    }
                    at += n;
                }
            },
        );
        if plan.streaming {
            crate::streaming::fence();
        }
    }

    /// [`run_box`](Self::run_box) for a kernel with reductions: calls of at most
    /// [`ROWS`] rows of at most a row block (aligned to blocks by the schedule), each
    /// reduction's values written into the worker's scratch rows and cut into blocks at once.
    fn run_box_reducing(
        &self,
        scratch: &mut RowScratch<'r, T>,
        tile: &Tile,
        reductions: &Reductions<T>,
    ) {
        let RowScratch {
            inputs,
            rows: row_slots,
            runs,
            bases,
            reduced,
            partials,
        } = scratch;
        let Some(partials) = partials else {
            unreachable!("stencil-cpu: a reducing run's scratch has its partials")
        };
        let n_inputs = inputs.len();
        let (params, plan) = (self.params, self.plan);
        let (in_strides, out_strides) = self.row_strides.split_at(n_inputs);
        let n_dims = self.grids[0].n_dims;
        let last = n_dims - 1;
        let row_dim = n_dims.saturating_sub(2);
        tile.for_each_run(n_dims, &self.grids, bases, |bases, n_rows, len, first| {
            let (in_bases, out_bases) = bases.split_at(n_inputs);
            let mut at = 0;
            while at < len {
                let n = (len - at).min(plan.row_block);
                let mut r0 = 0;
                while r0 < n_rows {
                    let g = (n_rows - r0).min(ROWS);
                    for ((row, &base), &stride) in inputs.iter_mut().zip(in_bases).zip(in_strides) {
                        row.start = base + r0 * stride + at;
                    }
                    match self.point_loop {
                        CpuLoop::Runs(run) => {
                            runs.clear();
                            for ((output, &base), &stride) in
                                self.outputs.iter().zip(out_bases).zip(out_strides)
                            {
                                // SAFETY: as in `run_box`: these rows of this output are handed
                                // out once in the whole sweep and overlap no other live slice.
                                runs.push(unsafe {
                                    output.run(base + r0 * stride + at, n, stride, g)
                                });
                            }
                            // A generated loop folds its points itself and writes one value
                            // per block (the row contract's "Reductions").
                            let nb = n.div_ceil(BLOCK);
                            for rows in reduced.iter_mut() {
                                assert!(rows.len() >= g * nb, "stencil-cpu: scratch too short");
                                // SAFETY: `g * nb` values of this worker's own scratch rows
                                // (`ROWS * row_block` long, checked above), rows `nb` apart,
                                // reached through nothing else until `runs` is cleared after
                                // the call.
                                runs.push(unsafe {
                                    OutputRun::from_raw_parts(rows.as_mut_ptr(), nb, nb, g)
                                });
                            }
                            let args = RowArgs::new(n, inputs, params)
                                .at(self.origin(first, r0, at), self.step)
                                .with_rows(g, row_dim)
                                .with_register_rows(plan.register_rows)
                                .with_streaming(plan.streaming)
                                .with_prefetch(plan.prefetch);
                            run(&args, runs);
                            runs.clear();
                        }
                        CpuLoop::Rows(row_fn) => {
                            for i in 0..g {
                                let r = r0 + i;
                                for ((row, &base), &stride) in
                                    inputs.iter_mut().zip(in_bases).zip(in_strides)
                                {
                                    row.start = base + r * stride + at;
                                }
                                row_slots.clear();
                                for ((output, &base), &stride) in
                                    self.outputs.iter().zip(out_bases).zip(out_strides)
                                {
                                    // SAFETY: as for the runs above.
                                    row_slots
                                        .push(unsafe { output.row(base + r * stride + at, n) });
                                }
                                for rows in reduced.iter_mut() {
                                    // SAFETY: `n` values of this worker's scratch row `i`,
                                    // reached through nothing else until `row_slots` is cleared.
                                    row_slots.push(unsafe {
                                        std::slice::from_raw_parts_mut(
                                            rows.as_mut_ptr().add(i * n),
                                            n,
                                        )
                                    });
                                }
                                let args = RowArgs::new(n, inputs, params)
                                    .at(self.origin(first, r, at), self.step)
                                    .with_streaming(plan.streaming)
                                    .with_prefetch(plan.prefetch);
                                row_fn(&args, row_slots);
                                row_slots.clear();
                            }
                        }
                    }
                    // The next segment's input lines, asked for before the next call: with
                    // the hardware prefetcher alone the gaps between calls left the stream
                    // idle (norm2 of 2^25 f64 on one thread: 1.14 ns per point without,
                    // 0.80 with; a 16-accumulator read loop: 0.72).
                    if at + n < len {
                        for row in inputs.iter() {
                            let next = (row.start + n).min(row.storage_len());
                            let end = (next + n).min(row.storage_len());
                            let ahead = row.elements(next, end - next).unwrap_or(&[]);
                            crate::lanes::prefetch_lines(ahead);
                        }
                    }
                    for i in 0..g {
                        let mut point = *first;
                        if n_dims > 1 {
                            point[row_dim] += r0 + i;
                        }
                        point[last] += at;
                        let first_block = reductions.block_index(&point);
                        for (k, rows) in reduced.iter().enumerate() {
                            match self.point_loop {
                                CpuLoop::Runs(_) => {
                                    let nb = n.div_ceil(BLOCK);
                                    partials.push_blocks(
                                        k,
                                        first_block,
                                        &rows[i * nb..(i + 1) * nb],
                                    );
                                }
                                CpuLoop::Rows(_) => {
                                    partials.push(k, first_block, &rows[i * n..(i + 1) * n]);
                                }
                            }
                        }
                    }
                    r0 += g;
                }
                at += n;
            }
        });
        if plan.streaming {
            crate::streaming::fence();
        }
    }

    /// One column block of a run through a hand-written loop, row by row.
    fn rows_one_by_one(
        &self,
        row_fn: RowFn<T>,
        (inputs, slots): (&mut [RowInput<'r, T>], &mut Vec<&'r mut [T]>),
        (in_bases, in_strides): (&[usize], &[usize]),
        (out_bases, out_strides): (&[usize], &[usize]),
        (first, n_rows, at, n): (&[usize; MAX_DIMS], usize, usize, usize),
    ) {
        for r in 0..n_rows {
            for ((row, &base), &stride) in inputs.iter_mut().zip(in_bases).zip(in_strides) {
                row.start = base + r * stride + at;
            }
            slots.clear();
            for ((output, &base), &stride) in self.outputs.iter().zip(out_bases).zip(out_strides) {
                // SAFETY: as for the runs of `run_box`: this block of this output row is
                // handed out once in the whole sweep and overlaps no other live slice.
                slots.push(unsafe { output.row(base + r * stride + at, n) });
            }
            let args = RowArgs::new(n, inputs, self.params)
                .at(self.origin(first, r, at), self.step)
                .with_streaming(self.plan.streaming)
                .with_prefetch(self.plan.prefetch);
            row_fn(&args, slots);
            slots.clear();
        }
    }
}
