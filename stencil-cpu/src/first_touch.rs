//! First-touch initialisation: grid values written by the threads that will compute them.
//!
//! Core's `Grid` of 4 MiB or more is, on Linux, a mapping of its own that the operating system
//! backs with no page until it is first written, and then maps each page on the NUMA node of
//! the writing thread (smaller grids come zeroed from the allocator). Initialising a
//! grid with [`CpuBackend::first_touch`] writes every interior point from the worker that owns
//! its core block under a schedule (the same static [`Partition`] a job with that schedule and
//! shape uses), so each page ends up on the node of the thread that reads and writes it during
//! the sweeps. The halo is filled afterwards from the grid's boundary conditions.

use stencil_core::grid::Grid;
use stencil_core::{CpuSchedule, Element, MAX_DIMS};

use crate::output_rows::OutputRows;
use crate::partition::Partition;
use crate::pool::CpuBackend;
use crate::schedules;
use crate::tiling::storage_index;

impl CpuBackend {
    /// Sets every interior point `p` of `grid` to `value(p)`, each written by the pool thread
    /// that computes `p` in a job of `schedule` on this grid's shape, then fills the halo from
    /// the grid's boundary conditions (like [`Grid::fill_with`], but parallel and placed).
    ///
    /// # Panics
    /// If `grid`'s storage layout is not one `Geometry::padded` produces (never, for a
    /// `Grid`).
    pub fn first_touch<T: Element, const D: usize>(
        &self,
        grid: &mut Grid<T, D>,
        schedule: &CpuSchedule,
        value: impl Fn([usize; D]) -> T + Sync,
    ) {
        let shape = grid.shape();
        // Only the tiling and partition matter here, not the stores.
        let plan = schedules::plan(schedule, &shape, size_of::<T>(), self.threads(), 0, 0, 0);
        let partition = Partition::new(plan.tiling.n_tiles(), plan.workers, plan.chunk);
        {
            let mut view = grid.view_mut();
            let output = OutputRows::new(&mut view, "grid")
                .unwrap_or_else(|e| panic!("stencil-cpu first_touch: {e}"));
            let geom = *output.geom();
            let tiling = plan.tiling;
            // Always on the pool, whatever the size: the owning workers must touch the pages.
            self.execute(
                partition,
                usize::MAX,
                || (),
                |_, block| {
                    let tile = tiling.tile(block);
                    let last = D - 1;
                    let len = tile.end[last] - tile.start[last];
                    let mut point = tile.start;
                    loop {
                        // SAFETY: this row of the tile is written by this worker only: the
                        // blocks of a `Partition` are disjoint, so are the rows of a block, and
                        // `OutputRows::new` checked the layout (rows disjoint, in storage).
                        let row = unsafe { output.row(storage_index(&geom, &point), len) };
                        let mut index = [0usize; D];
                        index.copy_from_slice(&point[..D]);
                        for (x, slot) in row.iter_mut().enumerate() {
                            index[last] = tile.start[last] + x;
                            *slot = value(index);
                        }
                        // Odometer over the dimensions that index rows.
                        let mut d = last;
                        loop {
                            if d == 0 {
                                return;
                            }
                            d -= 1;
                            point[d] += 1;
                            if point[d] < tile.end[d] {
                                break;
                            }
                            point[d] = tile.start[d];
                        }
                    }
                },
            );
        }
        debug_assert!(D <= MAX_DIMS);
        grid.update_halo();
    }
}

#[cfg(test)]
mod tests {
    use stencil_core::CpuStores;
    use stencil_core::grid::{Boundary, Grid};

    use crate::pool::CpuBackend;

    #[test]
    fn first_touch_writes_every_point_and_the_halo() {
        let backend = CpuBackend::new(2).unwrap();
        let f = |[i, j, k]: [usize; 3]| (i * 1000 + j * 10 + k) as f64 * 0.5 + 1.0;
        for tile in [[0, 0, 0, 0], [2, 3, 0, 0], [1, 1, 4, 0]] {
            for chunk in [0, 1, 2] {
                let mut grid = Grid::<f64, 3>::with_halo([5, 7, 9], 1).unwrap();
                grid.set_boundary(Boundary::Periodic);
                let schedule = stencil_core::CpuSchedule {
                    tile,
                    chunk,
                    stores: CpuStores::Streaming,
                    ..Default::default()
                };
                backend.first_touch(&mut grid, &schedule, f);
                assert!(!grid.halo_is_stale());
                for i in -1..6isize {
                    for j in -1..8isize {
                        for k in -1..10isize {
                            let wrap = |p: isize, n: isize| p.rem_euclid(n) as usize;
                            let expected = f([wrap(i, 5), wrap(j, 7), wrap(k, 9)]);
                            assert_eq!(grid.get([i, j, k]), Some(expected), "{i} {j} {k}");
                        }
                    }
                }
            }
        }
    }
}
