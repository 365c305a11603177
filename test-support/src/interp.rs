//! The reference interpreter on random data: what a kernel computes on inputs and parameters
//! drawn from a seed, to compare two kernels (a kernel and its source text parsed back, say)
//! bit for bit.

use stencil_core::analysis::radius;
use stencil_core::{Element, Kernel, interp};

use crate::Rng;
use crate::storage::TestGrid;

/// Runs `kernel` in the interpreter on inputs with halo `halo` (at least the kernel's radius),
/// every element uniform in `[-1, 1)`, and parameters uniform in `[-1, 1)`, all drawn from
/// `seed`; outputs are poisoned with NaN first. Returns each output's interior values in C
/// order.
pub fn run_random<T: Element>(
    kernel: &Kernel,
    shape: &[usize],
    halo: usize,
    seed: u64,
) -> Vec<Vec<T>> {
    assert!(
        halo >= radius(kernel).max() as usize,
        "halo below the radius"
    );
    let mut rng = Rng::new(seed);
    let inputs: Vec<TestGrid<T>> = kernel
        .inputs()
        .map(|_| TestGrid::random(shape, halo, &mut rng, (-1.0, 1.0)))
        .collect();
    let params: Vec<T> = kernel
        .params
        .iter()
        .map(|_| T::from_f64(rng.uniform(-1.0, 1.0)))
        .collect();
    let mut outputs: Vec<TestGrid<T>> = kernel
        .outputs()
        .map(|_| TestGrid::poisoned(shape, halo))
        .collect();
    let in_views: Vec<_> = inputs.iter().map(TestGrid::view).collect();
    let mut out_views: Vec<_> = outputs.iter_mut().map(TestGrid::view_mut).collect();
    interp::run(kernel, &in_views, &mut out_views, &params);
    drop(out_views);
    outputs.iter().map(TestGrid::interior_values).collect()
}

/// Whether two values are the same bit pattern (any NaN equals any NaN).
pub fn same<T: Element>(a: T, b: T) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_f64().to_bits() == b.to_f64().to_bits()
}

/// Whether two results of [`run_random`] are the same bit for bit (any NaN equals any NaN).
pub fn same_bits<T: Element>(a: &[Vec<T>], b: &[Vec<T>]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.len() == y.len() && x.iter().zip(y).all(|(&p, &q)| same(p, q)))
}
