//! [`Distribution`]: what a time loop needs of grids distributed over MPI ranks.
//!
//! Declared here, below both the time loop (`steps.rs`, which calls it) and the MPI domain
//! (`mpi/`, which implements it with the feature `mpi`), so the time loop builds without the
//! feature and neither file needs the other's internals.

use stencil_core::grid::Boundary;
use stencil_core::{Backend, Element, Kernel, Result, Rotation, Schedule, Stencil};

use crate::loop_grid::LoopGrid;
use crate::tuning::TuneReport;

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
