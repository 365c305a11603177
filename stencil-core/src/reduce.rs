//! Reductions: the one definition of the order in which a reduction combines its points, and
//! the types a caller receives the results in.
//!
//! A kernel's reduction ([`crate::ir::Reduction`]) combines one value per interior point by its
//! [`ReduceOp`]. Floating-point sums depend on the order of the additions, so the order is
//! fixed here, independently of threads, tiles and backends, and every backend that computes
//! reductions must give exactly these bits (the reference interpreter calls these functions;
//! the CPU backend calls them on the same blocks):
//!
//! 1. The interior is cut into *rows* (every index but the last fixed), taken in C order.
//! 2. Each row is cut into *blocks* of [`BLOCK`] consecutive points from its start (the last
//!    block of a row may be shorter). A block's value is [`block`]: its points dealt to
//!    [`LANES`] (32) lanes by position (point `p` of the block to lane `p % LANES`), each lane
//!    combined from the left starting at the operation's identity, then the 32 lanes combined
//!    by [`tree`] (so `l0 l1` first, then pairs of pairs: a balanced binary tree).
//! 3. The blocks' values, row after row, form one sequence, combined by [`tree`]: a pairwise
//!    tree that splits a sequence of `n` values into its first `n / 2` and the rest.
//!
//! For a sum this is pairwise summation (as numpy's): the rounding error grows with the
//! logarithm of the number of blocks plus `BLOCK / LANES` (8) additions per lane, not with the
//! number of points. Thirty-two lanes are four independent AVX-512 (eight AVX2) accumulators,
//! so a block is summed at the processor's add throughput rather than its latency, and one
//! warp of a GPU folds one lane per thread. The identity is `+0.0` for a sum (so a sum of
//! `-0.0` values is `+0.0`) and NaN for a minimum and a maximum: minima and maxima ignore NaN
//! values, as the language's `min` and `max` do (IEEE `minNum`/`maxNum` return the other
//! operand), so NaN leaves every value unchanged, a minimum over numbers and NaNs is the
//! minimum of the numbers, and one over NaNs only (or over nothing) is NaN. A sum with a NaN
//! value is NaN.

use crate::element::Element;
use crate::ir::ReduceOp;

/// Points of a row per block (see the module documentation).
pub const BLOCK: usize = 256;

/// Lanes a block's points are dealt to.
pub const LANES: usize = 32;

/// The value combining nothing: `+0` for a sum, NaN for a minimum or a maximum (which
/// ignore it, see the module documentation).
pub fn identity<T: Element>(op: ReduceOp) -> T {
    match op {
        ReduceOp::Sum => T::from_f64(0.0),
        ReduceOp::Min | ReduceOp::Max => T::NAN,
    }
}

/// `a` combined with `b`: `a + b`, `a.min(b)` or `a.max(b)`.
#[inline(always)]
pub fn combine<T: Element>(op: ReduceOp, a: T, b: T) -> T {
    match op {
        ReduceOp::Sum => a + b,
        ReduceOp::Min => a.min(b),
        ReduceOp::Max => a.max(b),
    }
}

/// The value of one block (at most [`BLOCK`] points; longer slices are combined the same
/// way, lane by position): see the module documentation.
#[inline]
pub fn block<T: Element>(op: ReduceOp, values: &[T]) -> T {
    match op {
        ReduceOp::Sum => lanes(values, identity(op), |a, b| a + b),
        ReduceOp::Min => lanes(values, identity(op), |a, b| a.min(b)),
        ReduceOp::Max => lanes(values, identity(op), |a, b| a.max(b)),
    }
}

/// The lanes of `values` combined by `f` (monomorphised per operation; fixed-size arrays so
/// LLVM keeps the 32 lanes in vector registers and unrolls the tree).
#[inline(always)]
fn lanes<T: Element>(values: &[T], identity: T, f: impl Fn(T, T) -> T + Copy) -> T {
    let mut acc = [identity; LANES];
    let mut chunks = values.chunks_exact(LANES);
    for chunk in &mut chunks {
        let chunk: &[T; LANES] = chunk
            .try_into()
            .unwrap_or_else(|_| unreachable!("chunks_exact gives whole chunks"));
        for (a, &v) in acc.iter_mut().zip(chunk) {
            *a = f(*a, v);
        }
    }
    for (a, &v) in acc.iter_mut().zip(chunks.remainder()) {
        *a = f(*a, v);
    }
    lanes_tree(acc, f)
}

/// The pairwise tree of `tree` over 32 lanes, unrolled: adjacent pairs, then pairs of pairs.
#[inline(always)]
fn lanes_tree<T: Element>(acc: [T; LANES], f: impl Fn(T, T) -> T + Copy) -> T {
    let a: [T; 16] = pairs(acc, f);
    let a: [T; 8] = pairs(a, f);
    let a: [T; 4] = pairs(a, f);
    let a: [T; 2] = pairs(a, f);
    f(a[0], a[1])
}

/// A block's value from its lanes, each already combined from the identity over the block's
/// points `l, l + LANES, ...` in order: the lanes' pairwise tree (what [`block`] does after
/// dealing the points). For code that folds the lanes itself (the loops `stencil!`
/// generates fold them while they compute the points).
#[inline(always)]
pub fn combine_lanes<T: Element>(op: ReduceOp, lanes: [T; LANES]) -> T {
    match op {
        ReduceOp::Sum => lanes_tree(lanes, |a, b| a + b),
        ReduceOp::Min => lanes_tree(lanes, |a, b| a.min(b)),
        ReduceOp::Max => lanes_tree(lanes, |a, b| a.max(b)),
    }
}

/// `[f(a0, a1), f(a2, a3), ...]`.
#[inline(always)]
fn pairs<T: Copy, const N: usize, const H: usize>(a: [T; N], f: impl Fn(T, T) -> T) -> [T; H] {
    std::array::from_fn(|l| f(a[2 * l], a[2 * l + 1]))
}

/// The pairwise tree over `values` (the blocks' values in C order): the identity for none,
/// the value for one, else the tree of the first `len / 2` combined with the tree of the rest.
pub fn tree<T: Element>(op: ReduceOp, values: &[T]) -> T {
    match values.len() {
        0 => identity(op),
        1 => values[0],
        n => {
            let (a, b) = values.split_at(n / 2);
            combine(op, tree(op, a), tree(op, b))
        }
    }
}

/// Blocks in a row of `row_len` points.
pub fn blocks_per_row(row_len: usize) -> usize {
    row_len.div_ceil(BLOCK)
}

/// The values of `row` (one whole row, in order) cut into blocks, each block's value pushed
/// onto `partials`.
pub fn push_row_blocks<T: Element>(op: ReduceOp, row: &[T], partials: &mut Vec<T>) {
    partials.extend(row.chunks(BLOCK).map(|b| block(op, b)));
}

/// Where a caller receives one reduction's result: [`Sum`], [`Min`] or [`Max`], matching the
/// reduction's declared operation. Bound to a call by position (the typed function `stencil!`
/// generates) or by name (`Launch::reduction` in the facade).
pub trait ReductionTarget<T>: Send {
    /// The operation this target receives the result of.
    fn op(&self) -> ReduceOp;
    /// Stores the result of a run.
    fn set(&mut self, value: T);
}

macro_rules! target_type {
    ($(#[$doc:meta])* $name:ident, $op:expr, $before:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name<T> {
            value: T,
        }

        impl<T: Element> $name<T> {
            /// A target holding its initial value (`0`, `+inf` or `-inf`) until a run stores
            /// its result.
            pub fn new() -> Self {
                $name { value: T::from_f64($before) }
            }

            /// The result of the last run this target was bound to (the initial value before
            /// any).
            pub fn value(&self) -> T {
                self.value
            }
        }

        impl<T: Element> Default for $name<T> {
            fn default() -> Self {
                Self::new()
            }
        }

        impl<T: Element> ReductionTarget<T> for $name<T> {
            fn op(&self) -> ReduceOp {
                $op
            }

            fn set(&mut self, value: T) {
                self.value = value;
            }
        }
    };
}

target_type!(
    /// The result of a `Sum<T>` reduction (`s += expr;` in a kernel): after a run, the sum of
    /// the expression over the interior, in the order of [`crate::reduce`]. `0` before a run.
    Sum,
    ReduceOp::Sum,
    0.0
);
target_type!(
    /// The result of a `Min<T>` reduction (`m = min(m, expr);`): after a run, the smallest
    /// value of the expression over the interior, NaN values ignored (NaN when every value
    /// is NaN). `+inf` before a run.
    Min,
    ReduceOp::Min,
    f64::INFINITY
);
target_type!(
    /// The result of a `Max<T>` reduction (`m = max(m, expr);`): after a run, the largest
    /// value of the expression over the interior, NaN values ignored (NaN when every value
    /// is NaN). `-inf` before a run.
    Max,
    ReduceOp::Max,
    f64::NEG_INFINITY
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_deals_points_to_lanes_then_combines_lanes_as_a_balanced_tree() {
        // Lane 0 holds points 0 and 32 (1e16 each), every other lane 1.0 + 1.0; the balanced
        // tree adds lane 0 to 2.0, then to the sum of 2 lanes, 4, 8 and 16 lanes of 2.0.
        let mut v = vec![1.0f64; 64];
        v[0] = 1e16;
        v[32] = 1e16;
        let expected = ((((2e16 + 2.0) + 4.0) + 8.0) + 16.0) + 32.0;
        assert_eq!(block(ReduceOp::Sum, &v), expected);
        let running: f64 = v.iter().sum();
        assert_ne!(running, expected, "the case must tell the orders apart");
    }

    #[test]
    fn tree_splits_at_half_and_is_pairwise() {
        let v = [1e16f64, 1.0, 1.0, -1e16, 1.0];
        // [1e16, 1] + [1, -1e16, 1] = (1e16 + 1) + (1 + (-1e16 + 1))
        let expected = (1e16 + 1.0) + (1.0 + (-1e16 + 1.0));
        assert_eq!(tree(ReduceOp::Sum, &v), expected);
        assert_eq!(tree::<f64>(ReduceOp::Sum, &[]), 0.0);
        assert!(tree::<f64>(ReduceOp::Max, &[]).is_nan());
    }

    #[test]
    fn min_and_max_ignore_nan_and_sum_propagates_it() {
        let v = [3.0f32, f32::NAN, -2.0, 7.0];
        assert_eq!(block(ReduceOp::Min, &v), -2.0);
        assert_eq!(block(ReduceOp::Max, &v), 7.0);
        assert!(block(ReduceOp::Sum, &v).is_nan());
    }

    #[test]
    fn min_and_max_of_nan_only_are_nan_and_of_a_mix_the_extreme_number() {
        let nans = [f64::NAN; 6];
        for op in [ReduceOp::Min, ReduceOp::Max] {
            assert!(block(op, &nans).is_nan(), "{op:?}");
            assert!(
                tree(op, &[block(op, &nans), block(op, &nans)]).is_nan(),
                "{op:?}"
            );
            assert!(combine_lanes(op, [f32::NAN; LANES]).is_nan(), "{op:?}");
        }
        // A number in one lane only, NaN everywhere else (and in the other blocks).
        let mut mixed = vec![f32::NAN; 300];
        mixed[37] = 4.0;
        mixed[40] = -3.0;
        assert_eq!(block(ReduceOp::Min, &mixed[..256]), -3.0);
        assert_eq!(block(ReduceOp::Max, &mixed[..256]), 4.0);
        let blocks = [f32::NAN, block(ReduceOp::Min, &mixed[..256]), f32::NAN];
        assert_eq!(tree(ReduceOp::Min, &blocks), -3.0);
        // Infinities are numbers: a minimum over +inf and NaN is +inf.
        assert_eq!(
            block(ReduceOp::Min, &[f64::NAN, f64::INFINITY]),
            f64::INFINITY
        );
    }

    #[test]
    fn pairwise_sum_is_far_more_accurate_than_a_running_sum() {
        let n = 1 << 20;
        let v = vec![0.1f32; n];
        let mut partials = Vec::new();
        push_row_blocks(ReduceOp::Sum, &v, &mut partials);
        assert_eq!(partials.len(), blocks_per_row(n));
        let pairwise = tree(ReduceOp::Sum, &partials) as f64;
        let running = v.iter().fold(0.0f32, |a, &b| a + b) as f64;
        let exact = 0.1f32 as f64 * n as f64;
        assert!(
            (pairwise - exact).abs() / exact < 1e-5,
            "{pairwise} vs {exact}"
        );
        assert!(
            (running - exact).abs() / exact > 1e-3,
            "{running} vs {exact}"
        );
    }

    #[test]
    fn targets_start_at_their_initial_values_and_report_their_op() {
        let mut s = Sum::<f64>::new();
        assert_eq!(s.value(), 0.0);
        assert_eq!(s.op(), ReduceOp::Sum);
        s.set(4.5);
        assert_eq!(s.value(), 4.5);
        assert_eq!(Min::<f32>::new().value(), f32::INFINITY);
        assert_eq!(Max::<f64>::default().value(), f64::NEG_INFINITY);
    }
}
