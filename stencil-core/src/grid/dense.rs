//! The [`Grid`] type: construction, geometry, boundary conditions, halo state and raw views.
//!
//! Element access (points, rows, iteration, bulk writes) is in `access.rs`; ndarray views in
//! `ndarray_views.rs`. The layout is [`Geometry`]'s rule, never re-derived here.

use std::fmt;

use crate::element::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::view::{FieldView, FieldViewMut, Geometry};

use super::boundary::{Boundary, Side};
use super::halo::fill_halo;
use super::storage::AlignedBuffer;

/// Halo width of grids made by [`Grid::new`]: enough for kernels of radius up to 4.
pub const DEFAULT_HALO: usize = 4;

/// A `D`-dimensional grid of `T` (`f32` or `f64`) with a halo, padding, 64-byte aligned rows
/// and a boundary condition on each face.
///
/// # Layout
/// C order, last dimension unit-stride, as computed by [`Geometry::new`]: `halo` points on
/// each side of every dimension, the unit-stride dimension padded so that the first interior
/// point of every row is 64-byte aligned and row lengths avoid 4 KiB aliasing. Storage is one
/// zero-initialised allocation aligned to 64 bytes. On Linux a grid of 4 MiB or more
/// (storage, halo included) is a mapping of its own: untouched until first written, so each
/// page is placed on the NUMA node of the thread that first writes it, and backed by 2 MiB
/// transparent huge pages where the kernel allows (fewer TLB misses when a sweep reads rows
/// a plane apart). Smaller grids, and every grid elsewhere, come from the global allocator,
/// which may write the zeros from the thread that makes the grid.
///
/// # Boundaries and the halo
/// Each face (dimension, [`Side`]) has a [`Boundary`]; new grids have `Dirichlet(0)` on every
/// face. [`update_halo`](Self::update_halo) fills the whole halo width of every face per its
/// condition (see [`Boundary`] for one face and [`fill_halo`] for how faces
/// combine at edges and corners: the condition of the last dimension in which a point is
/// outside the interior decides it). Methods that change the interior and then restore the
/// halo (`fill`, `fill_with`, `map_inplace`, boundary setters) call it themselves; every other
/// mutable access to the interior (`set`, `IndexMut`, `rows_mut`, `view_mut`, `as_mut_slice`,
/// `interior_mut`) marks the halo stale, and [`halo_is_stale`](Self::halo_is_stale) reports
/// it when some face's condition depends on the interior. The grid also knows whether any halo
/// point was written since the last fill, so [`refresh_halo`](Self::refresh_halo) (what
/// `Launch::run` calls on outputs) skips the fill when only the interior changed and every
/// face is constant.
pub struct Grid<T: Element, const D: usize> {
    pub(super) geometry: Geometry,
    pub(super) storage: AlignedBuffer<T>,
    /// `boundaries[d][side.index()]`.
    pub(super) boundaries: [[Boundary<T>; 2]; D],
    /// The interior may have changed since the last `update_halo`.
    pub(super) interior_changed: bool,
    /// The halo holds what the boundaries prescribed at the last fill and no halo point has
    /// been written since (only then may [`refresh_halo`](Self::refresh_halo) skip constant
    /// faces).
    pub(super) halo_current: bool,
}

impl<T: Element, const D: usize> Grid<T, D> {
    /// A grid of interior `shape` and halo [`DEFAULT_HALO`], all zeros, `Dirichlet(0)` on every
    /// face (so the halo is already filled).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidShape`] when `D` is 0 or above [`MAX_DIMS`](crate::MAX_DIMS), an
    /// extent is zero, or the storage size overflows or cannot be allocated.
    pub fn new(shape: [usize; D]) -> Result<Self> {
        Self::with_halo(shape, DEFAULT_HALO)
    }

    /// A grid of interior `shape` and halo width `halo`, otherwise as [`new`](Self::new).
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn with_halo(shape: [usize; D], halo: usize) -> Result<Self> {
        Self::with_padding(shape, halo, 0)
    }

    /// A grid of interior `shape` and halo width `halo` whose rows carry `pad_lines` more
    /// 64-byte cache lines of padding than [`new`](Self::new) gives them (the layout of
    /// [`Geometry::padded`]), otherwise as `new`. Which padding runs a kernel fastest is what
    /// `Launch::search_padding` in the `stencil` crate measures.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn with_padding(shape: [usize; D], halo: usize, pad_lines: usize) -> Result<Self> {
        let geometry = Geometry::padded(&shape, halo, T::ELEM.size_bytes(), pad_lines)?;
        let storage = AlignedBuffer::try_zeroed(geometry.len).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidShape,
                format!(
                    "cannot allocate {} bytes for a grid of shape {shape:?} with halo {halo} \
                     and {pad_lines} lines of row padding",
                    geometry.len * T::ELEM.size_bytes()
                ),
            )
        })?;
        Ok(Grid {
            storage,
            geometry,
            boundaries: [[Boundary::Dirichlet(T::ZERO); 2]; D],
            interior_changed: false,
            // Zeroed storage is what `Dirichlet(0)` prescribes.
            halo_current: true,
        })
    }

    /// A grid whose interior point `p` holds `f(p)` (called in C order), halo width `halo`,
    /// `Dirichlet(0)` on every face.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn from_fn(shape: [usize; D], halo: usize, f: impl FnMut([usize; D]) -> T) -> Result<Self> {
        let mut grid = Self::with_halo(shape, halo)?;
        grid.write_interior_with(f);
        // The halo is zero, which is what `Dirichlet(0)` asks for.
        grid.interior_changed = false;
        Ok(grid)
    }

    /// A grid holding `values` (the interior in C order), halo width `halo`, `Dirichlet(0)` on
    /// every face.
    ///
    /// # Errors
    /// - As [`new`](Self::new).
    /// - [`ErrorKind::ShapeMismatch`] when `values.len()` is not the number of interior points.
    pub fn from_slice(shape: [usize; D], halo: usize, values: &[T]) -> Result<Self> {
        let mut grid = Self::with_halo(shape, halo)?;
        if values.len() != grid.n_points() {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                format!(
                    "{} values given for a grid of shape {shape:?} ({} points)",
                    values.len(),
                    grid.n_points()
                ),
            ));
        }
        let row_len = shape[D - 1];
        for ((_, row), chunk) in grid.interior_rows_mut().zip(values.chunks_exact(row_len)) {
            row.copy_from_slice(chunk);
        }
        // The halo is zero, which is what `Dirichlet(0)` asks for.
        grid.interior_changed = false;
        Ok(grid)
    }

    /// A grid of the same geometry and boundary conditions, zero interior, halo filled.
    ///
    /// The halo is written only when some face has a nonzero `Dirichlet` value (with a zero
    /// interior every other condition gives a zero halo already), so the storage usually stays
    /// untouched for first-touch placement. `UserManaged` halos are zero.
    pub fn like(&self) -> Self {
        let mut grid = Grid {
            geometry: self.geometry,
            storage: AlignedBuffer::zeroed(self.geometry.len),
            boundaries: self.boundaries,
            interior_changed: false,
            // A zero halo is right for a zero interior unless a Dirichlet value is nonzero,
            // in which case `update_halo` below fills it.
            halo_current: true,
        };
        let nonzero_value = self.boundaries.iter().flatten().any(|b| match b {
            Boundary::Dirichlet(v) => v.to_f64().to_bits() != 0,
            _ => false,
        });
        if nonzero_value {
            grid.update_halo();
        }
        grid
    }

    /// Interior extents.
    pub fn shape(&self) -> [usize; D] {
        std::array::from_fn(|d| self.geometry.shape[d])
    }

    /// Halo width (the same on every side of every dimension).
    pub fn halo(&self) -> usize {
        self.geometry.halo
    }

    /// Number of interior points.
    pub fn n_points(&self) -> usize {
        self.geometry.n_points()
    }

    /// Cache lines of row padding beyond what [`new`](Self::new) gives (see
    /// [`with_padding`](Self::with_padding)).
    pub fn padding(&self) -> usize {
        self.geometry.pad_lines
    }

    /// A copy of this grid (interior, halo, boundaries and halo state) in the layout of
    /// [`with_padding`](Self::with_padding)`(shape, halo, pad_lines)`: how a grid moves to the
    /// padding that a layout search chose.
    ///
    /// # Errors
    /// As [`new`](Self::new) (the padded storage may not fit in memory).
    pub fn repadded(&self, pad_lines: usize) -> Result<Self> {
        let mut grid = Self::with_padding(self.shape(), self.halo(), pad_lines)?;
        let (from, to) = (self.geometry, grid.geometry);
        let last = from.n_dims - 1;
        // Every row of the allocation, halo rows included, from its first halo point.
        let row_len = from.shape[last] + 2 * from.halo;
        let n_rows = from.len / from.alloc_shape[last];
        for r in 0..n_rows {
            let src = r * from.alloc_shape[last] + from.lead_pad;
            let dst = r * to.alloc_shape[last] + to.lead_pad;
            grid.storage[dst..dst + row_len].copy_from_slice(&self.storage[src..src + row_len]);
        }
        grid.boundaries = self.boundaries;
        grid.interior_changed = self.interior_changed;
        grid.halo_current = self.halo_current;
        Ok(grid)
    }

    /// The layout.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The condition of face (`dim`, `side`); `None` when `dim >= D`.
    pub fn boundary(&self, dim: usize, side: Side) -> Option<Boundary<T>> {
        self.boundaries.get(dim).map(|faces| faces[side.index()])
    }

    /// Every face's condition: `boundaries()[d][side.index()]`.
    pub fn boundaries(&self) -> &[[Boundary<T>; 2]; D] {
        &self.boundaries
    }

    /// Sets the condition of every face to `boundary`, then fills the halo.
    pub fn set_boundary(&mut self, boundary: Boundary<T>) {
        self.boundaries = [[boundary; 2]; D];
        self.update_halo();
    }

    /// Sets the condition of face (`dim`, `side`), then fills the halo.
    ///
    /// # Errors
    /// [`ErrorKind::BadArgument`] when `dim >= D` (nothing is changed).
    pub fn set_face_boundary(
        &mut self,
        dim: usize,
        side: Side,
        boundary: Boundary<T>,
    ) -> Result<()> {
        let Some(faces) = self.boundaries.get_mut(dim) else {
            return Err(Error::new(
                ErrorKind::BadArgument,
                format!("dimension {dim} does not exist in a {D}-D grid"),
            ));
        };
        faces[side.index()] = boundary;
        self.update_halo();
        Ok(())
    }

    /// Fills the whole halo of every face per its [`Boundary`] (faces combined as documented
    /// on [`fill_halo`]) and clears the stale mark.
    pub fn update_halo(&mut self) {
        let mut view = FieldViewMut {
            geom: self.geometry,
            data: &mut self.storage,
        };
        fill_halo(&mut view, &self.boundaries);
        self.interior_changed = false;
        self.halo_current = true;
    }

    /// Brings the halo up to date at the least cost: does nothing when no halo point was
    /// written since the last fill and no face depends on the interior (constant `Dirichlet`
    /// and `UserManaged` faces keep their values), otherwise [`update_halo`](Self::update_halo).
    /// `Launch::run` calls it on every output after a sweep.
    pub fn refresh_halo(&mut self) {
        let depends = self
            .boundaries
            .iter()
            .flatten()
            .any(Boundary::depends_on_interior);
        if depends || !self.halo_current {
            self.update_halo();
        }
    }

    /// A mutable view for a kernel's output: like [`view_mut`](Self::view_mut), but the caller
    /// writes interior points only (what [`Backend::run`](crate::Backend::run) requires of a
    /// backend, and `verify` checks), so the halo keeps its values and
    /// [`refresh_halo`](Self::refresh_halo) can skip constant faces. Writing a halo point
    /// through it leaves a halo that `refresh_halo` may not repair.
    #[doc(hidden)]
    pub fn kernel_output_view(&mut self) -> FieldViewMut<'_, T> {
        self.interior_changed = true;
        FieldViewMut {
            geom: self.geometry,
            data: &mut self.storage,
        }
    }

    /// A mutable view for a time loop, which writes interior and halo points (filling the
    /// halo of what it writes) and then calls [`mark_halo_filled`](Self::mark_halo_filled)
    /// on the grids it wrote: unlike [`kernel_output_view`](Self::kernel_output_view) it marks
    /// nothing, so a loop that fails before writing leaves the grid as it was.
    #[doc(hidden)]
    pub fn time_loop_view(&mut self) -> FieldViewMut<'_, T> {
        FieldViewMut {
            geom: self.geometry,
            data: &mut self.storage,
        }
    }

    /// Whether every halo point holds what the boundaries prescribed at the last fill (no
    /// halo point written since): then a fill may skip the constant faces.
    #[doc(hidden)]
    pub fn halo_filled(&self) -> bool {
        self.halo_current
    }

    /// Records that the whole halo was just filled from the current interior (by a time loop
    /// through [`time_loop_view`](Self::time_loop_view)), as
    /// [`update_halo`](Self::update_halo) would leave it.
    #[doc(hidden)]
    pub fn mark_halo_filled(&mut self) {
        self.interior_changed = false;
        self.halo_current = true;
    }

    /// Whether the halo may be out of date: the interior may have changed since the last
    /// [`update_halo`](Self::update_halo) and some face's condition depends on the interior
    /// (`Periodic`, `ZeroGradient` or `Reflect`).
    pub fn halo_is_stale(&self) -> bool {
        self.interior_changed
            && self
                .boundaries
                .iter()
                .flatten()
                .any(Boundary::depends_on_interior)
    }

    /// Read-only view of the whole storage with its geometry.
    pub fn view(&self) -> FieldView<'_, T> {
        FieldView {
            geom: self.geometry,
            data: &self.storage,
        }
    }

    /// Mutable view of the whole storage with its geometry; marks the halo stale.
    pub fn view_mut(&mut self) -> FieldViewMut<'_, T> {
        self.interior_changed = true;
        self.halo_current = false;
        FieldViewMut {
            geom: self.geometry,
            data: &mut self.storage,
        }
    }

    /// The whole storage: interior, halo and padding (`geometry().len` elements, indexed by
    /// [`Geometry::index`]).
    pub fn as_slice(&self) -> &[T] {
        &self.storage
    }

    /// The whole storage, mutably; marks the halo stale.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self.interior_changed = true;
        self.halo_current = false;
        &mut self.storage
    }
}

impl<T: Element, const D: usize> Clone for Grid<T, D> {
    /// A deep copy (storage, boundaries and stale mark).
    fn clone(&self) -> Self {
        Grid {
            geometry: self.geometry,
            storage: self.storage.clone(),
            boundaries: self.boundaries,
            interior_changed: self.interior_changed,
            halo_current: self.halo_current,
        }
    }
}

impl<T: Element, const D: usize> fmt::Debug for Grid<T, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Grid")
            .field("shape", &self.shape())
            .field("halo", &self.halo())
            .field("boundaries", &self.boundaries)
            .field("halo_is_stale", &self.halo_is_stale())
            .finish_non_exhaustive()
    }
}
