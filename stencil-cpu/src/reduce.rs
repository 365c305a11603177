//! Reductions on the CPU: the order of [`stencil_core::reduce`], whatever the threads and tiles.
//!
//! The result of a reduction is defined over fixed blocks of [`BLOCK`] points of each row
//! (core's module documentation), so the executor only has to hand each block to
//! [`stencil_core::reduce::block`] whole and put its value at the block's place in the
//! sequence: then every schedule gives the same bits. Two things make blocks whole:
//!
//! - [`align_schedule`] makes every cut of a row a multiple of [`BLOCK`] points: tiles along
//!   the unit-stride dimension are rounded up to multiples of it, and the point loop's calls
//!   take [`SEGMENT`] points (so the scratch rows stay in the first-level cache);
//! - a generated loop folds each point into its lane as it computes it and writes one value
//!   per block into a scratch row ([`LocalPartials::push_blocks`]); a hand-written row
//!   function writes each point's value, which the executor cuts into blocks at once
//!   ([`LocalPartials::push`]) (the row contract in `stencil_core::row`).
//!
//! Each worker keeps the blocks' values it computed with their places and hands them to the
//! shared [`Reductions`] after each tile; [`Reductions::finish`] combines the sequence with
//! core's pairwise tree on the calling thread (one value per 256 points: about 0.4% of the
//! points, so the tree costs far less than the sweep).
//!
//! Measured on one core of the machine the bench ran on, norm2 of 2^25 `f64` (8 bytes per
//! point): scratch rows of per-point values folded after each call, 8 lanes, 0.95-1.0 ns per
//! point; 32 lanes, the next segment prefetched, 0.84; folded in the generated loop, 0.80;
//! a hand-written 16-accumulator read loop, 0.72.

use std::sync::Mutex;

use stencil_core::reduce::{self, BLOCK};
use stencil_core::{CpuSchedule, Element, Kernel, MAX_DIMS, ReduceOp};

/// Most points of a row per point-loop call in a kernel with reductions (four blocks).
pub(crate) const SEGMENT: usize = 4 * BLOCK;

/// Most rows per point-loop call in a kernel with reductions (the scratch is `ROWS * SEGMENT`
/// values per reduction: 32 KiB in `f64`).
pub(crate) const ROWS: usize = 4;

/// `schedule` with its tiles resolved (`default_tile` when all zero) and its cuts of a row
/// aligned to blocks (see the module documentation). Only for kernels with reductions.
pub(crate) fn align_schedule(
    schedule: &CpuSchedule,
    shape: &[usize],
    default_tile: [usize; MAX_DIMS],
) -> CpuSchedule {
    let n_dims = shape.len();
    let last = n_dims - 1;
    let mut aligned = *schedule;
    if aligned.tile[..n_dims].iter().all(|&t| t == 0) {
        aligned.tile = default_tile;
    }
    let row = shape[last];
    let t = aligned.tile[last];
    if t != 0 && t < row {
        aligned.tile[last] = t.next_multiple_of(BLOCK).min(row);
    }
    // Shorter calls only add per-call work: the loop folds as it goes, so a call's scratch
    // is a few values per row whatever its length (the tuned 512 ran norm2 of 2^25 `f64`
    // slower than 1024).
    aligned.row_block = SEGMENT;
    aligned
}

/// The reductions of one run: their operations, where each block's value goes, and the values
/// the workers have handed over.
pub(crate) struct Reductions<T> {
    ops: Vec<ReduceOp>,
    n_dims: usize,
    shape: [usize; MAX_DIMS],
    blocks_per_row: usize,
    /// Per reduction: the value of every block, rows in C order.
    partials: Mutex<Vec<Vec<T>>>,
}

impl<T: Element> Reductions<T> {
    /// The reductions of `kernel` over an interior of `shape`, or `None` when it has none.
    pub(crate) fn new(kernel: &Kernel, shape: &[usize]) -> Option<Self> {
        if !kernel.has_reductions() {
            return None;
        }
        let n_dims = shape.len();
        let mut full = [1; MAX_DIMS];
        full[..n_dims].copy_from_slice(shape);
        let blocks_per_row = reduce::blocks_per_row(shape[n_dims - 1]);
        let n_rows: usize = shape[..n_dims - 1].iter().product();
        let ops: Vec<ReduceOp> = kernel.reductions.iter().map(|r| r.op).collect();
        let partials = ops
            .iter()
            .map(|&op| vec![reduce::identity(op); n_rows * blocks_per_row])
            .collect();
        Some(Reductions {
            ops,
            n_dims,
            shape: full,
            blocks_per_row,
            partials: Mutex::new(partials),
        })
    }

    /// Number of reductions.
    pub(crate) fn len(&self) -> usize {
        self.ops.len()
    }

    /// Place in the sequence of the block holding interior point `point` (every index; the
    /// last must be a block's first point).
    pub(crate) fn block_index(&self, point: &[usize; MAX_DIMS]) -> usize {
        let last = self.n_dims - 1;
        let row = (0..last).fold(0, |row, d| row * self.shape[d] + point[d]);
        row * self.blocks_per_row + point[last] / BLOCK
    }

    /// A worker's empty list of blocks.
    pub(crate) fn local(&self) -> LocalPartials<T> {
        LocalPartials {
            ops: self.ops.clone(),
            values: vec![Vec::new(); self.ops.len()],
        }
    }

    /// Takes the blocks a worker computed (and empties its list).
    pub(crate) fn absorb(&self, local: &mut LocalPartials<T>) {
        if local.values.iter().all(Vec::is_empty) {
            return;
        }
        // A worker that panicked while holding the lock poisons it; the sweep is then lost
        // anyway (the panic propagates), so the values are taken as they are.
        let mut partials = self.partials.lock().unwrap_or_else(|e| e.into_inner());
        for (all, mine) in partials.iter_mut().zip(&mut local.values) {
            for (index, value) in mine.drain(..) {
                all[index] = value;
            }
        }
    }

    /// Every reduction's result, in declaration order: core's pairwise tree over the blocks.
    pub(crate) fn finish(self) -> Vec<T> {
        let partials = self
            .partials
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        partials
            .iter()
            .zip(&self.ops)
            .map(|(blocks, &op)| reduce::tree(op, blocks))
            .collect()
    }
}

/// The blocks one worker computed since it last handed them over, with their places.
pub(crate) struct LocalPartials<T> {
    ops: Vec<ReduceOp>,
    values: Vec<Vec<(usize, T)>>,
}

impl<T: Element> LocalPartials<T> {
    /// Keeps `blocks`, the values of consecutive blocks of one row (as a generated loop folds
    /// them), the first at place `first_block`.
    #[inline]
    pub(crate) fn push_blocks(&mut self, r: usize, first_block: usize, blocks: &[T]) {
        let list = &mut self.values[r];
        for (b, &value) in blocks.iter().enumerate() {
            list.push((first_block + b, value));
        }
    }

    /// Cuts `values` (reduction `r`'s values at consecutive points of one row, starting at a
    /// block's first point, whose place is `first_block`) into blocks and keeps their values.
    #[inline]
    pub(crate) fn push(&mut self, r: usize, first_block: usize, values: &[T]) {
        let op = self.ops[r];
        let list = &mut self.values[r];
        for (b, block) in values.chunks(BLOCK).enumerate() {
            list.push((first_block + b, reduce::block(op, block)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_cuts_are_multiples_of_a_block_and_segments_stay_small() {
        let s = CpuSchedule {
            tile: [0, 3, 300, 0],
            row_block: 3,
            ..CpuSchedule::default()
        };
        let a = align_schedule(&s, &[5, 7, 1000], [1, 1, 1, 1]);
        assert_eq!(a.tile[2], 512);
        assert_eq!(a.row_block, SEGMENT);
        let whole = align_schedule(&CpuSchedule::default(), &[5, 100], [2, 0, 0, 0]);
        assert_eq!(whole.tile[..2], [2, 0]);
        assert_eq!(whole.row_block, SEGMENT);
        // A tile as long as the row stays whole.
        let short = align_schedule(
            &CpuSchedule {
                tile: [1, 90, 0, 0],
                ..CpuSchedule::default()
            },
            &[4, 100],
            [1, 1, 1, 1],
        );
        assert_eq!(short.tile[1], 100);
    }
}
