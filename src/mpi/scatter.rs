//! Scatter and gather: one global grid on a root rank to and from the ranks' local grids.

use ::mpi::collective::{CommunicatorCollectives, Root};
use ::mpi::point_to_point::{Destination, Source as _};
use ::mpi::topology::Communicator;

use stencil_core::grid::{Boundary, Grid, Side};
use stencil_core::{Element, Error, ErrorKind, Result};

use super::plan::FaceKind;
use super::{Domain, MpiElement, TAG, for_each_row};

impl<const D: usize> Domain<D> {
    /// Copies the owned box of every rank's `local` grid into one global grid on rank
    /// `root`: `Some(grid)` there (halo `local.halo()`, the local grid's boundary conditions,
    /// halo filled; zero beyond `UserManaged` faces, as the local grids' values there are
    /// not gathered), `None` elsewhere. Collective.
    ///
    /// # Errors
    /// As [`exchange`](Self::exchange) for a grid that is not a local grid of the domain;
    /// [`ErrorKind::InvalidShape`] when the global grid's storage overflows (on `root`).
    pub fn gather_to<T: MpiElement>(
        &self,
        local: &Grid<T, D>,
        root: usize,
    ) -> Result<Option<Grid<T, D>>> {
        self.check_grid(local)?;
        let mine = self.pack_owned(local);
        let root_process = self.comm.process_at_rank(root as i32);
        if self.rank != root {
            root_process.send_with_tag(&mine[..], TAG + 2);
            return Ok(None);
        }
        let mut global = Grid::<T, D>::with_halo(self.shape(), local.halo())?;
        for r in 0..self.ranks() {
            let (lo, hi) = self.layout.decomp.owned(r);
            let n: usize = (0..D).map(|d| hi[d] - lo[d]).product();
            let values = if r == root {
                mine.clone()
            } else {
                let mut buf = vec![T::ZERO; n];
                self.comm
                    .process_at_rank(r as i32)
                    .receive_into_with_tag(&mut buf[..], TAG + 2);
                buf
            };
            let mut it = values.into_iter();
            for_each_row(lo, hi, |start, len| {
                let at = global.geometry().index(&start.map(|x| x as isize));
                for (slot, v) in global.as_mut_slice()[at..at + len].iter_mut().zip(&mut it) {
                    *slot = v;
                }
            });
        }
        for (d, pair) in local.boundaries().iter().enumerate() {
            for (side, &b) in Side::BOTH.iter().zip(pair) {
                global.set_face_boundary(d, *side, b)?;
            }
        }
        global.update_halo();
        Ok(Some(global))
    }

    /// [`gather_to`](Self::gather_to) rank 0.
    ///
    /// # Errors
    /// As [`gather_to`](Self::gather_to).
    pub fn gather<T: MpiElement>(&self, local: &Grid<T, D>) -> Result<Option<Grid<T, D>>> {
        self.gather_to(local, 0)
    }

    /// Copies each rank's owned box of `global` (given on rank 0, `None` elsewhere) into its
    /// `local` grid, gives `local` the global grid's boundary conditions, and
    /// [`exchange`](Self::exchange)s. Collective.
    ///
    /// # Errors
    /// Every rank fails alike, so none is left waiting, when the arguments of any rank are
    /// wrong (the rank at fault gets the error itself; the others get the same kind, naming
    /// that rank):
    /// - [`ErrorKind::BadArgument`]: rank 0 gives no global grid (`None`);
    /// - [`ErrorKind::ShapeMismatch`]: the global grid's shape is not the domain's, or a local
    ///   grid's is not its rank's [`local_shape`](Self::local_shape);
    /// - [`ErrorKind::HaloTooNarrow`]: a local grid's halo is narrower than the domain's;
    ///
    /// then as [`exchange`](Self::exchange).
    pub fn scatter<T: MpiElement>(
        &self,
        global: Option<&Grid<T, D>>,
        local: &mut Grid<T, D>,
    ) -> Result<()> {
        // Every rank's checks, shared before anything else is sent: a rank that returned
        // alone would leave the others waiting for its messages.
        let mine = self.scatter_check(global, local);
        let code = mine.as_ref().map_or(0u8, |e| match e.kind() {
            ErrorKind::BadArgument => 1,
            ErrorKind::ShapeMismatch => 2,
            _ => 3,
        });
        let mut codes = vec![0u8; self.ranks()];
        self.comm.all_gather_into(&code, &mut codes[..]);
        if let Some(e) = mine {
            return Err(e);
        }
        if let Some((r, &c)) = codes.iter().enumerate().find(|(_, c)| **c != 0) {
            let (kind, what) = match c {
                1 => (ErrorKind::BadArgument, "gave no global grid"),
                2 => (ErrorKind::ShapeMismatch, "gave a grid of the wrong shape"),
                _ => (
                    ErrorKind::HaloTooNarrow,
                    "gave a local grid with too narrow a halo",
                ),
            };
            return Err(Error::new(
                kind,
                format!("scatter: rank {r} {what}, so no rank scatters"),
            ));
        }
        let global = if self.rank == 0 { global } else { None };
        let root = self.comm.process_at_rank(0);
        // The global faces: kinds and values, from rank 0.
        let mut kinds = [0u8; 64];
        let mut values = vec![T::ZERO; 2 * D];
        if let Some(global) = global {
            for (d, pair) in global.boundaries().iter().enumerate() {
                for (s, b) in pair.iter().enumerate() {
                    kinds[2 * d + s] = FaceKind::of(b) as u8;
                    if let Boundary::Dirichlet(v) = b {
                        values[2 * d + s] = *v;
                    }
                }
            }
        }
        root.broadcast_into(&mut kinds[..]);
        root.broadcast_into(&mut values[..]);
        for d in 0..D {
            for (s, side) in Side::BOTH.into_iter().enumerate() {
                let b = match kinds[2 * d + s] {
                    k if k == FaceKind::Dirichlet as u8 => Boundary::Dirichlet(values[2 * d + s]),
                    k if k == FaceKind::Periodic as u8 => Boundary::Periodic,
                    k if k == FaceKind::ZeroGradient as u8 => Boundary::ZeroGradient,
                    k if k == FaceKind::Reflect as u8 => Boundary::Reflect,
                    _ => Boundary::UserManaged,
                };
                local.set_face_boundary(d, side, b)?;
            }
        }
        let (own_lo, own_hi) = self.owned_local();
        if let Some(global) = global {
            for r in 0..self.ranks() {
                let (lo, hi) = self.layout.decomp.owned(r);
                let mut buf = Vec::new();
                for_each_row(lo, hi, |start, len| {
                    let at = global.geometry().index(&start.map(|x| x as isize));
                    buf.extend_from_slice(&global.as_slice()[at..at + len]);
                });
                if r == 0 {
                    self.unpack_owned(local, own_lo, own_hi, &buf);
                } else {
                    self.comm
                        .process_at_rank(r as i32)
                        .send_with_tag(&buf[..], TAG + 3);
                }
            }
        } else {
            let n: usize = (0..D).map(|d| own_hi[d] - own_lo[d]).product();
            let mut buf = vec![T::ZERO; n];
            root.receive_into_with_tag(&mut buf[..], TAG + 3);
            self.unpack_owned(local, own_lo, own_hi, &buf);
        }
        self.exchange(local)
    }

    /// What is wrong with this rank's arguments to [`scatter`](Self::scatter), if anything:
    /// its local grid's shape and halo, and on rank 0 the global grid.
    fn scatter_check<T: MpiElement>(
        &self,
        global: Option<&Grid<T, D>>,
        local: &Grid<T, D>,
    ) -> Option<Error> {
        if self.rank == 0 {
            let Some(global) = global else {
                return Some(Error::new(
                    ErrorKind::BadArgument,
                    "scatter: rank 0 must give the global grid",
                ));
            };
            if global.shape() != self.shape() {
                return Some(Error::new(
                    ErrorKind::ShapeMismatch,
                    format!(
                        "scatter: the global grid has shape {:?}, the domain {:?}",
                        global.shape(),
                        self.shape()
                    ),
                ));
            }
        }
        if local.shape() != self.local_shape() {
            return Some(Error::new(
                ErrorKind::ShapeMismatch,
                format!(
                    "scatter: local grid of shape {:?} on rank {} whose local interior is {:?} \
                     (allocate local grids with `Domain::grid`)",
                    local.shape(),
                    self.rank,
                    self.local_shape()
                ),
            ));
        }
        if local.halo() < self.layout.halo {
            return Some(Error::new(
                ErrorKind::HaloTooNarrow,
                format!(
                    "scatter: local grid with a halo of {} on a domain whose halo is {}",
                    local.halo(),
                    self.layout.halo
                ),
            ));
        }
        None
    }

    /// The owned box of `grid`, row by row.
    fn pack_owned<T: Element>(&self, grid: &Grid<T, D>) -> Vec<T> {
        let (lo, hi) = self.owned_local();
        let mut buf = Vec::new();
        for_each_row(lo, hi, |start, len| {
            let at = grid.geometry().index(&start.map(|x| x as isize));
            buf.extend_from_slice(&grid.as_slice()[at..at + len]);
        });
        buf
    }

    fn unpack_owned<T: Element>(
        &self,
        grid: &mut Grid<T, D>,
        lo: [usize; D],
        hi: [usize; D],
        values: &[T],
    ) {
        let geom = *grid.geometry();
        let data = grid.as_mut_slice();
        let mut from = 0;
        for_each_row(lo, hi, |start, len| {
            let at = geom.index(&start.map(|x| x as isize));
            data[at..at + len].copy_from_slice(&values[from..from + len]);
            from += len;
        });
    }
}
