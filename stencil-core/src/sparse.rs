//! Sparse points of a time loop: sources added to a grid and receivers sampled from it, at
//! positions on or between grid points.
//!
//! A position is given in index coordinates: `[i, j, k]` is the interior point `(i, j, k)`,
//! `[i + 0.5, j, k]` lies halfway to the next point along dimension 0. A position spreads over
//! grid points by *multilinear* interpolation: along each dimension `d` with `f = floor(x_d)`
//! and `t = x_d - f`, the points `f` (weight `1 - t`) and `f + 1` (weight `t`); a corner's
//! weight is the product of its dimensions' weights, multiplied in dimension order in `f64`
//! and rounded once to the element type. Corners whose weight is exactly zero are dropped, so
//! a position on a grid point has the one corner of weight 1 and reads or writes that point
//! alone. Corners are ordered by their number `c`, where bit `d` of `c` set means the upper
//! point along dimension `d`.
//!
//! Every corner must lie in the interior: each coordinate in `[0, n_d - 1]` (an upper corner
//! of weight zero on the last point is dropped, so the last point itself is a legal position).
//!
//! The arithmetic, which every backend and the plain loop share:
//! - a source of amplitude `a` at a step adds `weight * a` to each corner, in the element
//!   type: `g = g + weight * a` (a product, then a sum, each rounded), sources in the order
//!   given, the corners of each in order;
//! - a receiver's sample is `w_0 * g_0 + w_1 * g_1 + ..` over its corners in order, summed
//!   from the first term, each product and each sum rounded in the element type.

use crate::element::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::ir::MAX_DIMS;

/// One grid point a sparse position touches, with its interpolation weight.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Corner<T> {
    /// Interior coordinates of the grid point (dimensions beyond the grid's are 0).
    pub point: [usize; MAX_DIMS],
    /// Its weight.
    pub weight: T,
}

/// The corners of `position` on an interior of `shape` (see the module documentation).
///
/// # Errors
/// [`ErrorKind::BadArgument`] when `position` has not one coordinate per dimension, or a
/// coordinate is not finite or lies outside `[0, n_d - 1]`.
pub fn corners<T: Element>(position: &[f64], shape: &[usize]) -> Result<Vec<Corner<T>>> {
    let n_dims = shape.len();
    if position.len() != n_dims {
        return Err(Error::new(
            ErrorKind::BadArgument,
            format!(
                "position {position:?} has {} coordinates; the grids have {n_dims} dimensions",
                position.len()
            ),
        ));
    }
    let mut lower = [0usize; MAX_DIMS];
    let mut fraction = [0f64; MAX_DIMS];
    for (d, (&x, &n)) in position.iter().zip(shape).enumerate() {
        if !x.is_finite() || x < 0.0 || x > (n as f64 - 1.0) {
            return Err(Error::new(
                ErrorKind::BadArgument,
                format!(
                    "position {position:?} lies outside the interior along dimension {d} \
                     (coordinates from 0 to {})",
                    n.saturating_sub(1)
                ),
            ));
        }
        let f = x.floor();
        lower[d] = f as usize;
        fraction[d] = x - f;
    }
    let mut out = Vec::new();
    for c in 0..1usize << n_dims {
        let mut weight = 1.0f64;
        let mut point = [0usize; MAX_DIMS];
        for d in 0..n_dims {
            let upper = c >> d & 1 == 1;
            weight *= if upper {
                fraction[d]
            } else {
                1.0 - fraction[d]
            };
            point[d] = lower[d] + usize::from(upper);
        }
        if weight != 0.0 {
            out.push(Corner {
                point,
                weight: T::from_f64(weight),
            });
        }
    }
    Ok(out)
}

/// Which grid of a loop a sparse set reads or writes: one a stage writes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Target {
    /// The grid a chain's position 0 names: the level the step writes.
    Chain(usize),
    /// A written grid in no chain.
    Lone(usize),
}

/// Sources added to one grid after the stage that writes it, every step.
#[derive(Clone, Debug)]
pub struct SourceSet<T> {
    /// The grid.
    pub target: Target,
    /// The stage that writes it (the sources are added right after it).
    pub stage: usize,
    /// Per source, its corners.
    pub points: Vec<Vec<Corner<T>>>,
    /// Per source, its amplitude at each step: entry `s` at the step after `s` steps of the
    /// loop's whole run.
    pub series: Vec<Vec<T>>,
}

impl<T: Element> SourceSet<T> {
    /// Calls `add(point, increment)` for every corner of every source at the step after
    /// `before` steps, in the documented order; `increment` is `weight * amplitude`.
    pub fn increments(&self, before: usize, mut add: impl FnMut(&[usize; MAX_DIMS], T)) {
        for (corners, series) in self.points.iter().zip(&self.series) {
            let amplitude = series[before];
            for corner in corners {
                add(&corner.point, corner.weight * amplitude);
            }
        }
    }
}

/// Receivers sampled from one grid after the stage that writes it, every `interval` steps.
#[derive(Clone, Debug)]
pub struct ReceiverSet<T> {
    /// The grid.
    pub target: Target,
    /// The stage that writes it (samples are taken right after it and its sources).
    pub stage: usize,
    /// Per receiver, its corners.
    pub points: Vec<Vec<Corner<T>>>,
    /// Steps between samples: a sample after every step whose number (from 1 over the loop's
    /// whole run) is a multiple of it.
    pub interval: usize,
    /// Per receiver, its samples so far.
    pub traces: Vec<Vec<T>>,
}

impl<T: Element> ReceiverSet<T> {
    /// Whether the step after `before` steps is sampled.
    pub fn samples_after(&self, before: usize) -> bool {
        (before + 1).is_multiple_of(self.interval)
    }

    /// The sample of receiver `r` from the values at its corners (in corner order).
    pub fn combine(&self, r: usize, values: impl IntoIterator<Item = T>) -> T {
        let mut sum: Option<T> = None;
        for (corner, value) in self.points[r].iter().zip(values) {
            let term = corner.weight * value;
            sum = Some(match sum {
                None => term,
                Some(s) => s + term,
            });
        }
        sum.unwrap_or(T::ZERO)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_grid_positions_have_one_corner_and_between_points_the_multilinear_weights() {
        let on = corners::<f64>(&[3.0, 4.0], &[8, 8]).unwrap();
        assert_eq!(on.len(), 1);
        assert_eq!(on[0].point[..2], [3, 4]);
        assert_eq!(on[0].weight, 1.0);
        let last = corners::<f64>(&[7.0, 0.0], &[8, 8]).unwrap();
        assert_eq!(last[0].point[..2], [7, 0]);
        let between = corners::<f64>(&[1.25, 2.5], &[8, 8]).unwrap();
        let expected = [
            ([1, 2], 0.75 * 0.5),
            ([2, 2], 0.25 * 0.5),
            ([1, 3], 0.75 * 0.5),
            ([2, 3], 0.25 * 0.5),
        ];
        assert_eq!(between.len(), 4);
        for (c, (p, w)) in between.iter().zip(expected) {
            assert_eq!(c.point[..2], p);
            assert_eq!(c.weight, w);
        }
        let sum: f64 = between.iter().map(|c| c.weight).sum();
        assert_eq!(sum, 1.0);
    }

    #[test]
    fn positions_outside_the_interior_or_of_the_wrong_rank_are_refused() {
        for bad in [
            vec![-0.5, 1.0],
            vec![7.5, 1.0],
            vec![1.0, f64::NAN],
            vec![1.0],
        ] {
            let e = corners::<f32>(&bad, &[8, 8]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::BadArgument, "{bad:?}");
        }
    }
}
