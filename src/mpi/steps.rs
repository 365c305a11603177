//! Time loops across ranks: [`Domain`]'s side of [`Steps::across`](crate::Steps::across),
//! through the [`Distribution`] trait: how many steps run per halo exchange, the exchanges
//! of the grids a step reads, steps whose exchange overlaps the sweep of the owned box's
//! inner part, stop decisions combined over the ranks, and shared tuning.

use ::mpi::collective::CommunicatorCollectives;

use stencil_core::grid::{Boundary, Grid, Side};
use stencil_core::{
    Backend, Element, Error, ErrorKind, FieldId, Kernel, Result, Role, Rotation, Schedule, Stencil,
};

use crate::TuneReport;
use crate::distribution::Distribution;
use crate::loop_grid::LoopGrid;

use super::{Domain, MpiElement};

impl<T: MpiElement, const D: usize> Distribution<T, D> for Domain<D> {
    fn steps_per_exchange(&self, kernel: &Kernel) -> Result<usize> {
        let radius = stencil_core::analysis::radius(kernel).max() as usize;
        match (radius, self.ghost()) {
            (0, _) => Ok(usize::MAX),
            (_, 0) => Ok(1),
            (r, g) if g >= r => Ok(g / r),
            (r, g) => Err(Error::new(
                ErrorKind::BadArgument,
                format!(
                    "kernel `{}` reads {r} points away but the domain's ghost zones are {g} \
                     deep: use a ghost depth of 0 (an exchange every step) or at least {r}",
                    kernel.name
                ),
            )),
        }
    }

    fn exchange_grids(
        &self,
        kernel: &Kernel,
        rotation: &Rotation,
        grids: &mut [Option<LoopGrid<'_, T, D>>],
        first: bool,
    ) -> Result<()> {
        for (i, slot) in grids.iter_mut().enumerate() {
            let field = FieldId::new(i);
            let read = match rotation.position(field) {
                Some((_, p)) => p >= 1,
                None => first && kernel.field(field).role == Role::Input,
            };
            if let (true, Some(LoopGrid::Write(grid))) = (read, slot) {
                self.exchange(grid)?;
            }
        }
        Ok(())
    }

    fn overlapped_step(
        &self,
        stencil: &Stencil<T>,
        rotation: &Rotation,
        grids: &mut [Option<LoopGrid<'_, T, D>>],
        params: &[T],
        backend: &dyn Backend<T>,
        schedule: &Schedule,
    ) -> Option<Result<()>> {
        let kernel = stencil.kernel();
        let exchanged: Vec<usize> = (0..grids.len())
            .filter(|&i| {
                rotation
                    .position(FieldId::new(i))
                    .is_some_and(|(_, p)| p >= 1)
            })
            .collect();
        let [iu] = exchanged[..] else {
            return None;
        };
        let radius = stencil_core::analysis::radius(kernel).max() as usize;
        let Some(LoopGrid::Write(u)) = grids[iu].take() else {
            unreachable!("stencil steps: rotating grids are bound mutably (checked)")
        };
        let shape = u.shape();
        // The inner box: points more than `radius` from every rank face.
        let mut lo = [0usize; D];
        let mut hi = shape;
        for d in 0..D {
            if self.is_rank_face(d, Side::Low) {
                lo[d] = radius.min(shape[d]);
            }
            if self.is_rank_face(d, Side::High) {
                hi[d] = shape[d].saturating_sub(radius).max(lo[d]);
            }
        }
        let mut inner_result = Ok(());
        let exchange = self.exchange_with(u, |u: &Grid<T, D>| {
            inner_result = sweep_box(stencil, grids, iu, u, params, backend, schedule, lo, hi);
        });
        let mut result = exchange.and(inner_result);
        if result.is_ok() {
            // The shell: for each dimension, the slabs below and above the inner range, over
            // the inner range of the dimensions before it and the whole extent after.
            'shell: for d in 0..D {
                for (a, b) in [(0, lo[d]), (hi[d], shape[d])] {
                    if a >= b {
                        continue;
                    }
                    let mut slo = [0usize; D];
                    let mut shi = shape;
                    for e in 0..d {
                        (slo[e], shi[e]) = (lo[e], hi[e]);
                    }
                    (slo[d], shi[d]) = (a, b);
                    let r = sweep_box(stencil, grids, iu, u, params, backend, schedule, slo, shi);
                    if r.is_err() {
                        result = r;
                        break 'shell;
                    }
                }
            }
        }
        grids[iu] = Some(LoopGrid::Write(u));
        if let Err(e) = result {
            return Some(Err(e));
        }
        // The written grids' halos on faces without a rank behind them, as a local step
        // leaves them (rank faces are the next exchange's).
        for (i, slot) in grids.iter_mut().enumerate() {
            let field = FieldId::new(i);
            if kernel.field(field).role != Role::Output {
                continue;
            }
            if let Some(LoopGrid::Write(grid)) = slot {
                let faces = Domain::local_faces(self, grid.boundaries());
                stencil_core::grid::fill_halo(&mut grid.time_loop_view(), &faces);
            }
        }
        Some(Ok(()))
    }

    fn local_faces(&self, faces: &[[Boundary<T>; 2]; D]) -> [[Boundary<T>; 2]; D] {
        Domain::local_faces(self, faces)
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
        choose: &mut dyn FnMut() -> Result<TuneReport>,
    ) -> Result<TuneReport> {
        self.share(shape, choose)
    }
}

/// Runs one sweep of `stencil` over the box `lo..hi` of the interior: the inputs from
/// `slots` (`u` for field `iu`), the outputs written in place.
#[allow(clippy::too_many_arguments)]
fn sweep_box<T: Element, const D: usize>(
    stencil: &Stencil<T>,
    slots: &mut [Option<LoopGrid<'_, T, D>>],
    iu: usize,
    u: &Grid<T, D>,
    params: &[T],
    backend: &dyn Backend<T>,
    schedule: &Schedule,
    lo: [usize; D],
    hi: [usize; D],
) -> Result<()> {
    if (0..D).any(|d| lo[d] >= hi[d]) {
        return Ok(());
    }
    let kernel = stencil.kernel();
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for (i, slot) in slots.iter_mut().enumerate() {
        let role = kernel.field(FieldId::new(i)).role;
        match (role, slot) {
            (Role::Input, _) if i == iu => inputs.push(u.view()),
            (Role::Input, Some(LoopGrid::Read(g))) => inputs.push(g.view()),
            (Role::Input, Some(LoopGrid::Write(g))) => inputs.push(g.view()),
            (Role::Output, Some(LoopGrid::Write(g))) => outputs.push(g.kernel_output_view()),
            _ => unreachable!("stencil steps: bindings checked before the step"),
        }
    }
    let mut job = stencil_core::Job::new(stencil, inputs, outputs, params.to_vec())?;
    job.set_region(backend, &lo, &hi)?;
    backend.run(&mut job, schedule)
}
