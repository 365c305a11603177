//! Zero-copy ndarray views of a [`Grid`]'s interior, and grids built from ndarray views
//! (behind the `ndarray` feature).
//!
//! The views are strided: they borrow the grid's storage from the first interior point with
//! the grid's own strides, so halo and padding are skipped without copying. Only `Dim<[usize;
//! D]>` shapes are supported (the fixed-dimension ndarray types, 1-D to 6-D; grids stop at 4).

use ndarray::{ArrayView, ArrayViewMut, Dim, Dimension, ShapeBuilder, StrideShape};

use crate::element::Element;
use crate::error::Result;
use crate::view::Geometry;

use super::dense::Grid;

impl<T: Element, const D: usize> Grid<T, D>
where
    Dim<[usize; D]>: Dimension,
{
    /// The interior as an ndarray view, without copying (strided over the padded storage).
    pub fn interior(&self) -> ArrayView<'_, T, Dim<[usize; D]>> {
        let origin = self.geometry.origin;
        ArrayView::from_shape(interior_shape::<D>(&self.geometry), &self.storage[origin..])
            .expect("grid geometry describes a valid strided view of its storage")
    }

    /// The interior as a mutable ndarray view, without copying; marks the halo stale.
    pub fn interior_mut(&mut self) -> ArrayViewMut<'_, T, Dim<[usize; D]>> {
        self.interior_changed = true;
        let origin = self.geometry.origin;
        let shape = interior_shape::<D>(&self.geometry);
        ArrayViewMut::from_shape(shape, &mut self.storage[origin..])
            .expect("grid geometry describes a valid non-overlapping view of its storage")
    }

    /// A grid holding the values of `array` (any memory order) as its interior, halo width
    /// `halo`, `Dirichlet(0)` on every face.
    ///
    /// # Errors
    /// As [`Grid::new`]: [`ErrorKind::InvalidShape`](crate::ErrorKind::InvalidShape) for an
    /// empty array or one too large.
    pub fn from_array(array: ArrayView<'_, T, Dim<[usize; D]>>, halo: usize) -> Result<Self> {
        let shape: [usize; D] = std::array::from_fn(|d| array.shape()[d]);
        let mut grid = Self::with_halo(shape, halo)?;
        let mut values = array.iter();
        for (_, row) in grid.interior_rows_mut() {
            for (v, &a) in row.iter_mut().zip(&mut values) {
                *v = a;
            }
        }
        grid.interior_changed = false;
        Ok(grid)
    }
}

/// The interior extents and element strides of `geometry` as an ndarray shape.
fn interior_shape<const D: usize>(geometry: &Geometry) -> StrideShape<Dim<[usize; D]>>
where
    Dim<[usize; D]>: Dimension,
{
    let mut extents = Dim::<[usize; D]>::zeros(D);
    let mut strides = Dim::<[usize; D]>::zeros(D);
    for d in 0..D {
        extents[d] = geometry.shape[d];
        strides[d] = geometry.strides[d];
    }
    extents.strides(strides)
}
