//! [`Distribution`]: what a time loop needs of grids distributed over MPI ranks, and
//! [`StageDistribution`]: what a loop of several kernels per step needs beyond it.
//!
//! Declared here, below both the time loops (`steps.rs` and `stages/`, which call them) and
//! the MPI domain (`mpi/`, which implements them with the feature `mpi`), so the time loops
//! build without the feature and neither side needs the other's internals.

use stencil_core::grid::{Boundary, Grid};
use stencil_core::{
    Backend, Element, Error, ErrorKind, Kernel, Result, Rotation, Schedule, Stencil,
};

use crate::loop_grid::LoopGrid;
use crate::tuning::TuneReport;

/// `Ok` unless `kernel` (of the loop's `stage`, for a message) reads its point's indices,
/// which a loop across MPI ranks refuses: each rank would read its own box's indices, not the
/// global ones.
pub(crate) fn refuse_indices_across(kernel: &Kernel, what: &str) -> Result<()> {
    if kernel.reads_indices() {
        return Err(Error::new(
            ErrorKind::BadArgument,
            format!(
                "{what} reads its point's indices, which a loop across MPI ranks does not give \
                 as global indices: bind a coefficient grid instead"
            ),
        ));
    }
    Ok(())
}

/// What a time loop needs of a distributed domain (`stencil::mpi::Domain`, which implements
/// it with the feature `mpi`): how many steps run per halo exchange, the exchanges of the
/// grids a step reads (on their own, or overlapped with the step's sweep), the boundary
/// conditions that apply on this rank, stop decisions combined over the ranks, and tuning
/// shared between ranks of the same local shape.
pub(crate) trait Distribution<T: Element, const D: usize> {
    /// How many steps of `kernel` a time loop runs per exchange: `ghost / radius`, 1 for no
    /// ghost zone, all for a kernel of radius 0; [`ErrorKind::BadArgument`](stencil_core::ErrorKind::BadArgument) when the ghost
    /// depth is neither 0 nor at least the kernel's radius.
    fn steps_per_exchange(&self, kernel: &Kernel) -> Result<usize>;
    /// Exchanges the grids the next step reads (`grids` per kernel field, every one bound):
    /// every chain's inputs, and with `first` the coefficients bound mutably.
    fn exchange_grids(
        &self,
        kernel: &Kernel,
        rotation: &Rotation,
        grids: &mut [Option<LoopGrid<'_, T, D>>],
        first: bool,
    ) -> Result<()>;
    /// One step with no ghost zone, its exchange overlapped: the one grid the step must
    /// exchange (a ping-pong's input) is exchanged while the owned box's inner part (points
    /// more than the kernel's radius from every rank face) is swept; the shell follows once
    /// the halo has arrived; the written grids' halos are filled on faces without a rank
    /// behind them. The grids do not rotate (the caller rotates them when it succeeds).
    /// `None` (nothing done) when the step exchanges other than exactly one grid.
    fn overlapped_step(
        &self,
        stencil: &Stencil<T>,
        rotation: &Rotation,
        grids: &mut [Option<LoopGrid<'_, T, D>>],
        params: &[T],
        backend: &dyn Backend<T>,
        schedule: &Schedule,
    ) -> Option<Result<()>>;
    /// The grid's (global) boundary conditions with rank faces made `UserManaged`.
    fn local_faces(&self, faces: &[[Boundary<T>; 2]; D]) -> [[Boundary<T>; 2]; D];
    /// Whether `local` holds on any rank (collective: every rank calls it at the same point of
    /// the loop): a callback's decision to stop, made on one rank's data, stops every rank.
    fn any_rank(&self, local: bool) -> bool;
    /// Runs `choose` on one rank of every group of ranks with the same local `shape` and
    /// gives its result to the group.
    fn share_tuning(
        &self,
        shape: &[usize],
        choose: &mut dyn FnMut() -> Result<TuneReport>,
    ) -> Result<TuneReport>;
}

/// What a loop of several kernels per step (`Stages::across`) needs of a distributed domain
/// beyond [`Distribution`]: its layout (ghost depth, global shape, which rank owns a point and
/// where a global point lies in this rank's local interior), exchanges of single grids, and
/// the collectives that keep every rank's outcome the same (an agreement on the loop's
/// arguments before anything is exchanged, the gathering of receivers' partial sums).
pub(crate) trait StageDistribution<T: Element, const D: usize>: Distribution<T, D> {
    /// The ghost depth on rank faces.
    fn ghost(&self) -> usize;
    /// The global interior's extents.
    fn global_shape(&self) -> [usize; D];
    /// This rank's number and the number of ranks.
    fn rank_and_ranks(&self) -> (usize, usize);
    /// The rank that owns global interior point `point`.
    fn owner(&self, point: [usize; D]) -> usize;
    /// The global coordinates of this rank's local interior point 0 (a point this rank owns
    /// lies at its global coordinates less these).
    fn origin(&self) -> [isize; D];
    /// Where global interior point `point` lies in this rank's local interior: every copy of
    /// it there (owned box and ghost zones; a ghost zone that wraps around a periodic
    /// dimension may hold a second copy), in local interior coordinates.
    fn local_copies(&self, point: [usize; D]) -> Vec<[usize; D]>;
    /// Checks that `grid` is a local grid of the domain (shape, halo, periodic faces).
    fn check_grid(&self, grid: &Grid<T, D>) -> Result<()>;
    /// Exchanges `grid` (collective).
    fn exchange(&self, grid: &mut Grid<T, D>) -> Result<()>;
    /// Collective: `Ok` on every rank when every rank's `local` is `Ok` and every rank gives
    /// the same `fingerprint` of its arguments; otherwise the same error on every rank (a
    /// rank's own error where it has one, else that of the lowest rank that failed, or an
    /// [`ErrorKind::BadArgument`](stencil_core::ErrorKind::BadArgument) saying the ranks
    /// disagree).
    fn agree(&self, local: Result<()>, fingerprint: u64) -> Result<()>;
    /// Collective: every rank's `mine` (rank `r` gives `counts[r]` values), concatenated in
    /// rank order, on every rank.
    fn all_gather(&self, mine: &[T], counts: &[usize]) -> Vec<T>;
}
