//! The stencil features of GSTuner (Sun et al., Table 2), computed from the IR.
//!
//! GSTuner describes a stencil's access pattern as a sparse tensor centred on the output point
//! and extracts: the *order* (largest extent of a non-zero, i.e. Chebyshev distance), *nnz*,
//! *sparsity*, and the number and ratio of non-zeros of each order-*n* (Chebyshev distance *n*)
//! and of each step-*m* (Manhattan distance *m*, 1 to order x dimensions). Here a non-zero is a
//! distinct live `(input, offset)` pair (see [`footprint`](super::footprint)), so a kernel
//! reading two grids has one tensor per input, and the centre (order 0, step 0) is counted.
//! The counts are indexed by distance, so index 0 holds the centre.

use super::cost::{bytes_per_point, flops_per_point};
use super::footprint::footprint;
use crate::ir::{Kernel, MAX_DIMS, MAX_RADIUS};

/// Number of Chebyshev distances a read can have: 0 to [`MAX_RADIUS`].
pub const N_ORDERS: usize = MAX_RADIUS as usize + 1;

/// Number of Manhattan distances a read can have: 0 to `MAX_RADIUS * MAX_DIMS`.
pub const N_STEPS: usize = MAX_RADIUS as usize * MAX_DIMS + 1;

/// GSTuner's stencil features plus the sizes a performance model needs.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct StencilFeatures {
    /// Dimensions of the index space.
    pub n_dims: usize,
    /// Largest Chebyshev distance of a live read (0 when only the centre is read).
    pub order: u32,
    /// Distinct live `(input, offset)` pairs.
    pub nnz: usize,
    /// `nnz_by_order[r]`: pairs at Chebyshev distance `r` (index 0: the centre).
    pub nnz_by_order: [usize; N_ORDERS],
    /// `nnz_by_step[m]`: pairs at Manhattan distance `m` (index 0: the centre).
    pub nnz_by_step: [usize; N_STEPS],
    /// Inputs read by some store.
    pub n_inputs: usize,
    /// Outputs.
    pub n_outputs: usize,
    /// [`flops_per_point`].
    pub flops: u32,
    /// [`bytes_per_point`].
    pub bytes: usize,
}

impl StencilFeatures {
    /// Density of non-zeros in the tensors: `nnz / (n_inputs * (2 * order + 1)^n_dims)`
    /// (0 for a kernel that reads nothing).
    pub fn sparsity(&self) -> f64 {
        let side = f64::from(2 * self.order + 1);
        let cells = self.n_inputs as f64 * side.powi(self.n_dims as i32);
        if cells == 0.0 {
            0.0
        } else {
            self.nnz as f64 / cells
        }
    }

    /// Fraction of the non-zeros at Chebyshev distance `order` (0 when out of range or empty).
    pub fn order_ratio(&self, order: usize) -> f64 {
        ratio(self.nnz_by_order.get(order).copied(), self.nnz)
    }

    /// Fraction of the non-zeros at Manhattan distance `step` (0 when out of range or empty).
    pub fn step_ratio(&self, step: usize) -> f64 {
        ratio(self.nnz_by_step.get(step).copied(), self.nnz)
    }

    /// Every feature as a named number, in a fixed order and of a fixed length (for regression
    /// models): `n_dims`, `order`, `nnz`, `sparsity`, then `nnz_order_r` and
    /// `nnz_ratio_order_r` for `r` in `1..N_ORDERS`, `nnz_step_m` and `nnz_ratio_step_m` for `m`
    /// in `1..N_STEPS`, then `n_inputs`, `n_outputs`, `flops`, `bytes`.
    pub fn named_values(&self) -> Vec<(String, f64)> {
        let mut v = vec![
            ("n_dims".to_string(), self.n_dims as f64),
            ("order".to_string(), f64::from(self.order)),
            ("nnz".to_string(), self.nnz as f64),
            ("sparsity".to_string(), self.sparsity()),
        ];
        for r in 1..N_ORDERS {
            v.push((format!("nnz_order_{r}"), self.nnz_by_order[r] as f64));
            v.push((format!("nnz_ratio_order_{r}"), self.order_ratio(r)));
        }
        for m in 1..N_STEPS {
            v.push((format!("nnz_step_{m}"), self.nnz_by_step[m] as f64));
            v.push((format!("nnz_ratio_step_{m}"), self.step_ratio(m)));
        }
        v.push(("n_inputs".to_string(), self.n_inputs as f64));
        v.push(("n_outputs".to_string(), self.n_outputs as f64));
        v.push(("flops".to_string(), f64::from(self.flops)));
        v.push(("bytes".to_string(), self.bytes as f64));
        v
    }
}

fn ratio(count: Option<usize>, total: usize) -> f64 {
    match count {
        Some(c) if total > 0 => c as f64 / total as f64,
        _ => 0.0,
    }
}

/// The features of `kernel` (live reads only). Assumes a verified kernel, whose offsets are
/// within [`MAX_RADIUS`].
pub fn features(kernel: &Kernel) -> StencilFeatures {
    let fp = footprint(kernel);
    let mut nnz_by_order = [0; N_ORDERS];
    let mut nnz_by_step = [0; N_STEPS];
    let mut order = 0;
    for (_, offset) in fp.points() {
        let r = offset.chebyshev();
        order = order.max(r);
        nnz_by_order[(r as usize).min(N_ORDERS - 1)] += 1;
        nnz_by_step[(offset.manhattan() as usize).min(N_STEPS - 1)] += 1;
    }
    StencilFeatures {
        n_dims: kernel.n_dims,
        order,
        nnz: fp.n_points(),
        nnz_by_order,
        nnz_by_step,
        n_inputs: fp.n_inputs_read(),
        n_outputs: kernel.outputs().count(),
        flops: flops_per_point(kernel),
        bytes: bytes_per_point(kernel),
    }
}
