//! The specialised path: rows handed to the point loop that `stencil!` generated ([`RowFn`]).
//!
//! Per row the executor fills one [`RowInput`] per input (where the row starts in that input)
//! and one mutable slice of exactly `len` elements per output, then calls the generated code.
//! Under a register block of `R` rows ([`RowPlan::register_rows`]) it hands over `R` adjacent
//! rows of a run at once (`R` slices per output; the generated code jams them where it has a
//! loop for `R`), and a run's last rows, fewer than `R`, in the largest jammed counts that fit.
//! The per-row lists live in a [`RowScratch`] reused across rows and tiles: nothing is
//! allocated per row, and the only per-row stores are the ones the point loop's arguments
//! need (see the `tiling` module on why stores are what counts).

use stencil_core::row::{RowArgs, RowFn, RowInput};
use stencil_core::{Element, FieldView, Geometry};

use crate::output_rows::OutputRows;
use crate::tiling::{Tiling, row_stride};

/// How a worker walks a row: block length, streaming stores, prefetch distance.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowPlan {
    /// Most points per point-loop call (at least 1).
    pub(crate) row_block: usize,
    /// Ask the generated loop to write the outputs with streaming stores.
    pub(crate) streaming: bool,
    /// Prefetch the inputs this many rows ahead (0: none).
    pub(crate) prefetch: usize,
    /// Adjacent rows handed to the point loop at once (at least 1).
    pub(crate) register_rows: usize,
}

/// Everything a worker needs to run tiles through a generated point loop.
pub(crate) struct SpecialisedRun<'r, T> {
    rows: RowFn<T>,
    tiling: Tiling,
    inputs: &'r [FieldView<'r, T>],
    outputs: &'r [OutputRows<'r, T>],
    params: &'r [T],
    plan: RowPlan,
    /// Layouts of the inputs, then of the outputs.
    grids: Vec<Geometry>,
    /// Storage distance between consecutive rows of a run, per grid (same order).
    row_strides: Vec<usize>,
}

/// Per-worker lists handed to the point loop, refilled for every row.
pub(crate) struct RowScratch<'r, T> {
    inputs: Vec<RowInput<'r, T>>,
    /// One slice per output and row of a register block; empty between tiles.
    outputs: Vec<&'r mut [T]>,
    /// First point of the current row run in each grid (inputs, then outputs).
    bases: Vec<usize>,
}

impl<'r, T: Element> SpecialisedRun<'r, T> {
    /// Prepares `rows` to run over `tiling` with the given grids and parameters.
    pub(crate) fn new(
        rows: RowFn<T>,
        tiling: Tiling,
        inputs: &'r [FieldView<'r, T>],
        outputs: &'r [OutputRows<'r, T>],
        params: &'r [T],
        mut plan: RowPlan,
    ) -> Self {
        let grids: Vec<Geometry> = inputs
            .iter()
            .map(|view| view.geom)
            .chain(outputs.iter().map(|out| *out.geom()))
            .collect();
        let row_strides = grids.iter().map(row_stride).collect();
        plan.row_block = plan.row_block.clamp(1, tiling.max_row_len());
        // No run has more rows than this (any count is legal; this bounds the scratch).
        plan.register_rows = plan.register_rows.clamp(1, tiling.max_run_rows());
        SpecialisedRun {
            rows,
            tiling,
            inputs,
            outputs,
            params,
            plan,
            grids,
            row_strides,
        }
    }

    /// Fresh per-worker lists.
    pub(crate) fn scratch(&self) -> RowScratch<'r, T> {
        RowScratch {
            inputs: self
                .inputs
                .iter()
                .map(|view| RowInput {
                    data: view.data,
                    start: 0,
                    strides: view.geom.strides,
                })
                .collect(),
            outputs: (0..self.outputs.len() * self.plan.register_rows)
                .map(|_| Default::default())
                .collect(),
            bases: vec![0; self.grids.len()],
        }
    }

    /// Runs every row of tile number `tile`.
    pub(crate) fn run_tile(&self, scratch: &mut RowScratch<'r, T>, tile: usize) {
        let RowScratch {
            inputs,
            outputs,
            bases,
        } = scratch;
        let n_inputs = inputs.len();
        let n_outputs = self.outputs.len();
        let (rows, params, plan) = (self.rows, self.params, self.plan);
        let (in_strides, out_strides) = self.row_strides.split_at(n_inputs);
        // Rows of a run are adjacent along the second-innermost dimension.
        let row_dim = self.grids[0].n_dims.saturating_sub(2);
        self.tiling
            .for_each_run(tile, &self.grids, bases, |bases, n_rows, len| {
                let (in_bases, out_bases) = bases.split_at(n_inputs);
                let mut r = 0;
                while r < n_rows {
                    let block = block_rows(plan.register_rows, n_rows - r);
                    let mut at = 0;
                    while at < len {
                        let n = (len - at).min(plan.row_block);
                        for ((row, &base), &stride) in
                            inputs.iter_mut().zip(in_bases).zip(in_strides)
                        {
                            row.start = base + r * stride + at;
                        }
                        for q in 0..block {
                            let slots = &mut outputs[q * n_outputs..(q + 1) * n_outputs];
                            let targets = self.outputs.iter().zip(out_bases).zip(out_strides);
                            for (slot, ((output, &base), &stride)) in slots.iter_mut().zip(targets)
                            {
                                // SAFETY: this block of this output row is handed out once in
                                // the whole run and overlaps no other live slice. The tiles of
                                // a `Tiling` are disjoint, so are the rows of a tile (`q`
                                // counts distinct rows of the run) and the blocks of a row;
                                // `Job::new` validated that every grid has the iteration's
                                // interior shape and that no output shares storage with an
                                // input or another output; `OutputRows::new` validated that
                                // the output's layout is one `Geometry::padded` produces, in
                                // which distinct interior rows are disjoint and inside the
                                // storage (which `row` checks again). The slot's previous
                                // slice (an earlier block's) is dropped by this assignment.
                                *slot = unsafe { output.row(base + (r + q) * stride + at, n) };
                            }
                        }
                        // With streaming on, the generated loop writes whole cache lines with
                        // streaming stores (the fence follows the tile); with prefetch on, it
                        // prefetches the input rows it meets first that many rows ahead.
                        let args = RowArgs::new(n, inputs, params)
                            .with_rows(block, row_dim)
                            .with_streaming(plan.streaming)
                            .with_prefetch(plan.prefetch);
                        rows(&args, &mut outputs[..block * n_outputs]);
                        at += n;
                    }
                    r += block;
                }
            });
        for slot in outputs.iter_mut() {
            *slot = Default::default();
        }
        if plan.streaming {
            crate::streaming::fence();
        }
    }
}

/// Rows to hand over at once when `left` rows of a run remain under a register block of
/// `register_rows`: the whole block while it fits, then the largest jammed count that fits
/// (so 7 rows under 4 go as 4, 2, 1), else one.
fn block_rows(register_rows: usize, left: usize) -> usize {
    if register_rows <= left {
        return register_rows;
    }
    stencil_core::JAMMED_ROWS
        .iter()
        .copied()
        .filter(|&rows| rows <= left && rows < register_rows)
        .max()
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::block_rows;

    #[test]
    fn a_runs_last_rows_go_in_the_largest_jammed_counts_that_fit() {
        let split = |register_rows: usize, n_rows: usize| {
            let mut blocks = Vec::new();
            let mut r = 0;
            while r < n_rows {
                let b = block_rows(register_rows, n_rows - r);
                blocks.push(b);
                r += b;
            }
            blocks
        };
        assert_eq!(split(4, 7), [4, 2, 1]);
        assert_eq!(split(4, 8), [4, 4]);
        assert_eq!(split(4, 3), [2, 1]);
        assert_eq!(split(2, 5), [2, 2, 1]);
        assert_eq!(split(1, 3), [1, 1, 1]);
        // A count without a jammed loop still goes whole while it fits.
        assert_eq!(split(3, 7), [3, 3, 1]);
        assert_eq!(split(3, 2), [2]);
    }
}
