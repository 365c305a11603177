//! Parallel output: a plane of a distributed field written to one VTK ImageData file by
//! every rank that owns part of it (feature `output`).

use ::mpi::collective::{CommunicatorCollectives, Root};
use ::mpi::topology::Communicator;

use stencil_core::grid::Grid;
use stencil_core::{Error, ErrorKind, Result};

use super::{Domain, MpiElement};

impl<const D: usize> Domain<D> {
    /// Writes the plane `plane` (grid dimension `plane.axis` held at global index
    /// `plane.index`) of the distributed field `grid` to `path` as VTK ImageData of `D - 1`
    /// dimensions, field `name`, in parallel: rank 0 writes the header and sizes the file,
    /// then every rank owning part of the plane writes its values at their offsets. The
    /// file is byte for byte what [`write_vti`](crate::output::write_vti) writes for the
    /// same plane of one global grid (the remaining dimensions in order; the last is VTK's
    /// x). Every rank must see `path` (a shared file system across machines). Collective.
    ///
    /// # Errors
    /// - [`ErrorKind::BadArgument`]: `plane.axis` not below `D`, `plane.index` not below the
    ///   global extent, an empty name, a 1-D or more than 4-D domain, origin or spacing as
    ///   [`write_vti`](crate::output::write_vti) refuses them; as
    ///   [`exchange`](Self::exchange) for a grid that is not a local grid of the domain.
    /// - [`ErrorKind::Io`] on every rank when any rank could not create or write the file.
    pub fn write_plane_vti<T: MpiElement>(
        &self,
        path: impl AsRef<std::path::Path>,
        name: &str,
        grid: &Grid<T, D>,
        plane: crate::output::Plane,
        options: &crate::output::VtiOptions,
    ) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let path = path.as_ref();
        self.check_grid(grid)?;
        let shape = self.shape();
        if !(2..=4).contains(&D) || plane.axis >= D || plane.index >= shape[plane.axis] {
            return Err(Error::new(
                ErrorKind::BadArgument,
                format!(
                    "plane {plane:?} of a {D}-D interior of shape {shape:?} (planes of 2-D to \
                     4-D grids, axis below {D}, index below the extent)"
                ),
            ));
        }
        if name.trim().is_empty() {
            return Err(Error::new(ErrorKind::BadArgument, "a field has no name"));
        }
        let dims: Vec<usize> = (0..D).filter(|&d| d != plane.axis).collect();
        let plane_shape: Vec<usize> = dims.iter().map(|&d| shape[d]).collect();
        // The same checks as `write_vti` on origin and spacing.
        let probe = Grid::<T, 1>::with_halo([1], 0)?;
        crate::output::vti::check::<T, 1>(&[(name, &probe)], options)?;
        let header = crate::output::vti::header_of::<T>(&[name], options, &plane_shape);
        let size = T::ELEM.size_bytes();
        let n_points: usize = plane_shape.iter().product();
        let data_start = (header.len() + 1 + 8) as u64;
        let io = |e: std::io::Error| Error::new(ErrorKind::Io, format!("{}: {e}", path.display()));
        // Rank 0 creates the file with its header and trailer; the others wait for it.
        let mut created = 1u8;
        if self.rank == 0 {
            let made = (|| -> std::io::Result<()> {
                let file = std::fs::File::create(path)?;
                let mut head = header.clone().into_bytes();
                head.push(b'_');
                head.extend_from_slice(&((n_points * size) as u64).to_le_bytes());
                file.write_all_at(&head, 0)?;
                let end = data_start + (n_points * size) as u64;
                file.write_all_at(crate::output::vti::TRAILER, end)?;
                Ok(())
            })();
            if made.is_err() {
                created = 0;
            }
            self.comm.process_at_rank(0).broadcast_into(&mut created);
            made.map_err(io)?;
        } else {
            self.comm.process_at_rank(0).broadcast_into(&mut created);
            if created == 0 {
                return Err(Error::new(
                    ErrorKind::Io,
                    format!("{}: rank 0 could not create the file", path.display()),
                ));
            }
        }
        // This rank's part of the plane: rows along the plane's last dimension.
        let (lo, hi) = self.owned();
        let origin = self.local_origin();
        let mut written = Ok(());
        if (lo[plane.axis]..hi[plane.axis]).contains(&plane.index) {
            written = (|| -> std::io::Result<()> {
                let file = std::fs::OpenOptions::new().write(true).open(path)?;
                let mut plo = lo;
                let mut phi = hi;
                (plo[plane.axis], phi[plane.axis]) = (plane.index, plane.index + 1);
                let x = *dims.last().expect("D >= 2");
                let mut bytes = Vec::new();
                let mut p = plo;
                loop {
                    // One row along dimension `x` from `p`.
                    bytes.clear();
                    for c in plo[x]..phi[x] {
                        let mut q = p;
                        q[x] = c;
                        let local: [isize; D] = std::array::from_fn(|d| q[d] as isize - origin[d]);
                        let v = grid.as_slice()[grid.geometry().index(&local)];
                        match T::ELEM {
                            stencil_core::ElemType::F32 => {
                                bytes.extend_from_slice(&(v.to_f64() as f32).to_le_bytes())
                            }
                            stencil_core::ElemType::F64 => {
                                bytes.extend_from_slice(&v.to_f64().to_le_bytes())
                            }
                        }
                    }
                    let linear = dims.iter().fold(0usize, |acc, &d| acc * shape[d] + p[d]);
                    file.write_all_at(&bytes, data_start + (linear * size) as u64)?;
                    // Next row: advance the plane's dimensions other than `x`.
                    let mut k = dims.len() - 1;
                    loop {
                        if k == 0 {
                            return Ok(());
                        }
                        k -= 1;
                        let d = dims[k];
                        p[d] += 1;
                        if p[d] < phi[d] {
                            break;
                        }
                        p[d] = plo[d];
                    }
                }
            })();
        }
        let mine = u8::from(written.is_err());
        let mut any = 0u8;
        self.comm
            .all_reduce_into(&mine, &mut any, ::mpi::collective::SystemOperation::max());
        written.map_err(io)?;
        if any != 0 {
            return Err(Error::new(
                ErrorKind::Io,
                format!("{}: another rank could not write its part", path.display()),
            ));
        }
        Ok(())
    }
}
