//! Time loops across ranks: [`Domain`]'s side of [`Steps::across`](crate::Steps::across),
//! through the [`Distribution`] trait: halo exchanges (overlapped with work or not), the
//! boundary conditions that apply on this rank, stop decisions combined over the ranks, and
//! shared tuning.

use ::mpi::collective::CommunicatorCollectives;

use stencil_core::Result;
use stencil_core::grid::{Boundary, Grid, Side};

use crate::steps::Distribution;

use super::{Domain, MpiElement};

impl<T: MpiElement, const D: usize> Distribution<T, D> for Domain<D> {
    fn exchange(&self, grid: &mut Grid<T, D>) -> Result<()> {
        Domain::exchange(self, grid)
    }

    fn exchange_with(
        &self,
        grid: &mut Grid<T, D>,
        work: &mut dyn FnMut(&Grid<T, D>),
    ) -> Result<()> {
        Domain::exchange_with(self, grid, work)
    }

    fn is_rank_face(&self, dim: usize, side: Side) -> bool {
        Domain::is_rank_face(self, dim, side)
    }

    fn local_faces(&self, faces: &[[Boundary<T>; 2]; D]) -> [[Boundary<T>; 2]; D] {
        Domain::local_faces(self, faces)
    }

    fn ghost(&self) -> usize {
        self.layout.ghost
    }

    fn any_rank(&self, local: bool) -> bool {
        let mut any = 0u8;
        self.comm.all_reduce_into(
            &u8::from(local),
            &mut any,
            ::mpi::collective::SystemOperation::max(),
        );
        any != 0
    }

    fn share_tuning(
        &self,
        shape: &[usize],
        choose: &mut dyn FnMut() -> Result<crate::TuneReport>,
    ) -> Result<crate::TuneReport> {
        self.share(shape, choose)
    }
}
