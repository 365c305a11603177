//! Random and poisoned [`Grid`]s: interiors (or whole storages) filled from a seeded [`Rng`],
//! outputs filled with a value no kernel computes before a run.

use stencil_core::Element;
use stencil_core::grid::Grid;

use crate::Rng;

/// A grid of `shape` with halo width `halo`, its interior uniform in `range` (drawn in C
/// order), its halo filled from its boundary conditions (`Dirichlet(0)`).
pub fn random_grid<T: Element, const D: usize>(
    shape: [usize; D],
    halo: usize,
    rng: &mut Rng,
    range: (f64, f64),
) -> Grid<T, D> {
    let mut grid = Grid::<T, D>::with_halo(shape, halo).expect("a valid test shape");
    fill_random(&mut grid, rng, range);
    grid
}

/// An output grid of `shape` with halo width `halo`, poisoned with `value` (see [`poison`]).
pub fn poisoned_grid<T: Element, const D: usize>(
    shape: [usize; D],
    halo: usize,
    value: T,
) -> Grid<T, D> {
    let mut grid = Grid::<T, D>::with_halo(shape, halo).expect("a valid test shape");
    poison(&mut grid, value);
    grid
}

/// Sets every interior point uniform in `range` (in C order), then fills the halo.
pub fn fill_random<T: Element, const D: usize>(
    grid: &mut Grid<T, D>,
    rng: &mut Rng,
    (low, high): (f64, f64),
) {
    grid.fill_with(|_| T::from_f64(rng.uniform(low, high)));
}

/// Sets every element of the storage (interior, halo and padding) uniform in `range`, in
/// storage order; the halo is then stale until filled again.
pub fn fill_storage_random<T: Element, const D: usize>(
    grid: &mut Grid<T, D>,
    rng: &mut Rng,
    (low, high): (f64, f64),
) {
    for value in grid.as_mut_slice() {
        *value = T::from_f64(rng.uniform(low, high));
    }
}

/// Poisons an output before a run: every interior point (and the halo its boundary
/// conditions derive from it) becomes `poison`, so a point the run does not write keeps it.
pub fn poison<T: Element, const D: usize>(grid: &mut Grid<T, D>, value: T) {
    grid.fill(value);
}
