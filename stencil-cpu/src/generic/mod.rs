//! The generic path: a row-vectorised evaluator of the IR, for kernels without a generated
//! point loop (built at run time) and for `force_generic` schedules.
//!
//! The kernel is lowered once per run to a [`Program`] of whole-row operations. Each row is
//! cut into chunks of at most [`CHUNK`] points; for each chunk every operation runs as one
//! tight loop over the chunk into a per-worker scratch slot, reads borrow the input rows
//! directly, and the stored values are copied into the output rows. Arithmetic uses the
//! [`Element`] methods the reference interpreter uses and constants are rounded with
//! [`Element::from_f64`], so results are bit-identical to the interpreter's.

mod ops;
mod program;

use stencil_core::{Element, Geometry};

use crate::input_rows::InputRows;
use crate::output_rows::OutputRows;
use crate::reduce::{LocalPartials, Reductions};
use crate::streaming;
use crate::tiling::{Tile, Tiling, row_stride};

pub(crate) use program::Program;
use program::{FillValue, Op, Source};

/// Most points evaluated per operation at a time: slots of this many elements stay in the
/// first-level cache for typical kernels (10 f64 slots of 512 points are 40 KiB).
pub(crate) const CHUNK: usize = 512;

/// Everything a worker needs to run tiles through the generic evaluator.
pub(crate) struct GenericRun<'r, T> {
    program: &'r Program,
    tiling: Tiling,
    inputs: &'r [InputRows<'r, T>],
    outputs: &'r [OutputRows<'r, T>],
    params: &'r [T],
    /// Layouts of the inputs, then of the outputs.
    grids: Vec<Geometry>,
    /// Storage distance between consecutive rows of a run, per grid (same order).
    row_strides: Vec<usize>,
    /// Storage displacement of each read from its input's row start.
    read_deltas: Vec<isize>,
    /// Elements per scratch slot.
    slot_len: usize,
    /// The kernel's reductions, if any (the schedule's cuts then aligned to blocks).
    reductions: Option<&'r Reductions<T>>,
    /// Whether outputs are written with streaming stores.
    streaming: bool,
    /// The step number the kernel reads (`Expr::Step`).
    step: u64,
}

/// Per-worker scratch space.
pub(crate) struct EvalScratch<'r, T> {
    real: Vec<T>,
    bools: Vec<bool>,
    /// First point of the current row run in each grid (inputs, then outputs).
    bases: Vec<usize>,
    /// First point of the current row in each input.
    input_starts: Vec<usize>,
    read_rows: Vec<&'r [T]>,
    /// One slice per output; empty between tiles.
    outputs: Vec<&'r mut [T]>,
    /// The blocks' values computed since the last hand-over.
    partials: Option<LocalPartials<T>>,
    /// Interior index of the current row's first point (for reductions and index values).
    row_first: [usize; stencil_core::MAX_DIMS],
}

impl<'r, T: Element> GenericRun<'r, T> {
    /// Prepares `program` to run over `tiling` with the given grids and parameters, in chunks
    /// of at most `row_block` points (and [`CHUNK`]), storing with streaming stores if
    /// `streaming`.
    pub(crate) fn new(
        program: &'r Program,
        tiling: Tiling,
        inputs: &'r [InputRows<'r, T>],
        outputs: &'r [OutputRows<'r, T>],
        params: &'r [T],
        (row_block, streaming): (usize, bool),
        reductions: Option<&'r Reductions<T>>,
    ) -> Self {
        let read_deltas = program
            .reads
            .iter()
            .map(|read| {
                let strides = inputs[read.input].geom().strides;
                read.offset
                    .iter()
                    .zip(strides)
                    .map(|(o, s)| o * s as isize)
                    .sum()
            })
            .collect();
        // With reductions, chunks start at multiples of `CHUNK` (a multiple of a block) from
        // a tile's row start, which the aligned schedule puts at a block's first point.
        let slot_len = match reductions {
            Some(_) => tiling.max_row_len().min(CHUNK),
            None => tiling.max_row_len().min(CHUNK).min(row_block.max(1)),
        };
        let grids: Vec<Geometry> = inputs
            .iter()
            .map(|input| *input.geom())
            .chain(outputs.iter().map(|out| *out.geom()))
            .collect();
        let row_strides = grids.iter().map(row_stride).collect();
        GenericRun {
            program,
            tiling,
            inputs,
            outputs,
            params,
            grids,
            row_strides,
            read_deltas,
            slot_len,
            reductions,
            streaming,
            step: 0,
        }
    }

    /// This run, computing step number `step` (what the kernel reads as `step()`; 0 unless
    /// set).
    pub(crate) fn at_step(mut self, step: u64) -> Self {
        self.step = step;
        self
    }

    /// Hands the blocks' values a worker computed to the shared reductions (after each tile).
    pub(crate) fn hand_over(&self, scratch: &mut EvalScratch<'r, T>) {
        if let (Some(reductions), Some(local)) = (self.reductions, &mut scratch.partials) {
            reductions.absorb(local);
        }
    }

    /// Fresh scratch space, with constants and parameters filled in.
    pub(crate) fn scratch(&self) -> EvalScratch<'r, T> {
        let mut real = vec![T::ZERO; self.program.n_real * self.slot_len];
        for &(slot, value) in &self.program.fills {
            let value = match value {
                FillValue::Const(c) => T::from_f64(c),
                FillValue::Param(p) => self.params[p],
                FillValue::Step => T::from_f64(self.step as f64),
            };
            real[slot * self.slot_len..][..self.slot_len].fill(value);
        }
        EvalScratch {
            real,
            bools: vec![false; self.program.n_bool * self.slot_len],
            bases: vec![0; self.grids.len()],
            input_starts: vec![0; self.inputs.len()],
            read_rows: Vec::with_capacity(self.program.reads.len()),
            outputs: self.outputs.iter().map(|_| Default::default()).collect(),
            partials: self.reductions.map(Reductions::local),
            row_first: [0; stencil_core::MAX_DIMS],
        }
    }

    /// Runs every row of tile number `tile`.
    pub(crate) fn run_tile(&self, scratch: &mut EvalScratch<'r, T>, tile: usize) {
        self.run_box(scratch, &self.tiling.tile(tile));
    }

    /// Runs every row of the box `tile` of the interior, whose rows are no longer than the
    /// tiling's (the caller guarantees, as for `SpecialisedRun::run_box`, that no other call
    /// writing a point of it runs at the same time).
    pub(crate) fn run_box(&self, scratch: &mut EvalScratch<'r, T>, tile: &Tile) {
        let mut bases = std::mem::take(&mut scratch.bases);
        let n_inputs = self.inputs.len();
        let (in_strides, out_strides) = self.row_strides.split_at(n_inputs);
        let n_dims = self.grids[0].n_dims;
        tile.for_each_run(
            n_dims,
            &self.grids,
            &mut bases,
            |bases, n_rows, len, first| {
                let (in_bases, out_bases) = bases.split_at(n_inputs);
                for r in 0..n_rows {
                    scratch.row_first = *first;
                    if n_dims > 1 {
                        scratch.row_first[n_dims - 2] += r;
                    }
                    let starts = scratch.input_starts.iter_mut();
                    for ((start, &base), &stride) in starts.zip(in_bases).zip(in_strides) {
                        *start = base + r * stride;
                    }
                    let targets = self.outputs.iter().zip(out_bases).zip(out_strides);
                    for (slot, ((output, &base), &stride)) in
                        scratch.outputs.iter_mut().zip(targets)
                    {
                        // SAFETY: this row of this output is handed out once in the whole run
                        // and overlaps no other live slice. The tiles of a `Tiling` are
                        // disjoint and so are the rows of a tile; `Job::new` validated that
                        // every grid has the iteration's interior shape and that no output
                        // shares storage with an input or another output; `OutputRows::new`
                        // validated that the output's layout is one `Geometry::padded` produces,
                        // in which distinct interior rows are disjoint and inside the storage
                        // (which `row` checks again). The slot's previous slice (the previous
                        // row's) is dropped by this assignment.
                        *slot = unsafe { output.row(base + r * stride, len) };
                    }
                    let mut done = 0;
                    while done < len {
                        let n = (len - done).min(self.slot_len);
                        self.run_chunk(scratch, done, n);
                        done += n;
                    }
                }
            },
        );
        scratch.bases = bases;
        for slot in &mut scratch.outputs {
            *slot = Default::default();
        }
        if self.streaming {
            streaming::fence();
        }
    }

    /// Evaluates points `at..at + n` of the current row (`n <= slot_len`).
    fn run_chunk(&self, scratch: &mut EvalScratch<'r, T>, at: usize, n: usize) {
        let EvalScratch {
            real,
            bools,
            input_starts,
            read_rows,
            outputs,
            partials,
            row_first,
            ..
        } = scratch;
        let len = self.slot_len;
        for &(output, slot) in &self.program.in_place {
            real[slot * len..][..n].copy_from_slice(&outputs[output][at..at + n]);
        }
        read_rows.clear();
        for (read, delta) in self.program.reads.iter().zip(&self.read_deltas) {
            let start = (input_starts[read.input] + at)
                .checked_add_signed(*delta)
                .expect("stencil-cpu generic path: read before the input's storage");
            read_rows.push(self.inputs[read.input].row(start, n));
        }
        for op in &self.program.ops {
            match *op {
                Op::Unary { op, dst, arg } => {
                    let (below, rest) = real.split_at_mut(dst * len);
                    ops::unary(op, &mut rest[..n], operand(below, read_rows, arg, len, n));
                }
                Op::Binary { op, dst, lhs, rhs } => {
                    let (below, rest) = real.split_at_mut(dst * len);
                    ops::binary(
                        op,
                        &mut rest[..n],
                        operand(below, read_rows, lhs, len, n),
                        operand(below, read_rows, rhs, len, n),
                    );
                }
                Op::Compare { op, dst, lhs, rhs } => ops::compare(
                    op,
                    &mut bools[dst * len..][..n],
                    operand(real, read_rows, lhs, len, n),
                    operand(real, read_rows, rhs, len, n),
                ),
                Op::Logic { op, dst, lhs, rhs } => {
                    let (below, rest) = bools.split_at_mut(dst * len);
                    ops::logic(
                        op,
                        &mut rest[..n],
                        &below[lhs * len..][..n],
                        &below[rhs * len..][..n],
                    );
                }
                Op::Not { dst, arg } => {
                    let (below, rest) = bools.split_at_mut(dst * len);
                    ops::not(&mut rest[..n], &below[arg * len..][..n]);
                }
                Op::Index { dim, dst } => {
                    let values = &mut real[dst * len..][..n];
                    if dim + 1 == self.grids[0].n_dims {
                        let first = row_first[dim] + at;
                        for (x, value) in values.iter_mut().enumerate() {
                            *value = T::from_f64((first + x) as f64);
                        }
                    } else {
                        values.fill(T::from_f64(row_first[dim] as f64));
                    }
                }
                Op::Fma { dst, a, b, c } => {
                    let (below, rest) = real.split_at_mut(dst * len);
                    ops::fma(
                        &mut rest[..n],
                        operand(below, read_rows, a, len, n),
                        operand(below, read_rows, b, len, n),
                        operand(below, read_rows, c, len, n),
                    );
                }
                Op::Select {
                    dst,
                    cond,
                    then,
                    otherwise,
                } => {
                    let (below, rest) = real.split_at_mut(dst * len);
                    ops::select(
                        &mut rest[..n],
                        &bools[cond * len..][..n],
                        operand(below, read_rows, then, len, n),
                        operand(below, read_rows, otherwise, len, n),
                    );
                }
            }
        }
        for (out, &source) in outputs.iter_mut().zip(&self.program.stores) {
            let values = operand(real, read_rows, source, len, n);
            streaming::copy_to(&mut out[at..at + n], values, self.streaming);
        }
        if let (Some(reductions), Some(partials)) = (self.reductions, partials) {
            let mut point = *row_first;
            point[self.grids[0].n_dims - 1] += at;
            let first_block = reductions.block_index(&point);
            for (k, &source) in self.program.reductions.iter().enumerate() {
                partials.push(k, first_block, operand(real, read_rows, source, len, n));
            }
        }
        // No input slice outlives the chunk: a time loop's tile may be lent rows that other
        // workers write once it moves on.
        read_rows.clear();
    }
}

/// The `n` values of a real operand: a slot among `slots` (slots of `slot_len` elements) or a
/// borrowed input row.
#[inline(always)]
fn operand<'s, T>(
    slots: &'s [T],
    read_rows: &[&'s [T]],
    source: Source,
    slot_len: usize,
    n: usize,
) -> &'s [T] {
    match source {
        Source::Slot(s) => &slots[s * slot_len..][..n],
        Source::Read(r) => read_rows[r],
    }
}
