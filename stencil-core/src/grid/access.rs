//! Element access of [`Grid`]: points (interior and halo), interior rows, iteration in C
//! order, and bulk writes of the interior.
//!
//! Rows are the unit of every bulk operation: an interior row is the `shape[D - 1]`
//! consecutive interior points along the unit-stride dimension, found by cutting the storage
//! into allocated rows (safe slicing, no pointer arithmetic). Every method that may change the
//! interior either restores the halo itself or marks it stale.

use std::ops::{Index, IndexMut};

use crate::element::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::view::Geometry;

use super::dense::Grid;

impl<T: Element, const D: usize> Grid<T, D> {
    /// The value at `point` (interior coordinates; negative or `>= shape` reach the halo), or
    /// `None` outside interior plus halo.
    pub fn get(&self, point: [isize; D]) -> Option<T> {
        self.geometry
            .contains(&point)
            .then(|| self.storage[self.geometry.index(&point)])
    }

    /// Writes `value` at `point` (interior or halo). Writing an interior point marks the halo
    /// stale; writing a halo point does not (the next `update_halo` overwrites it unless its
    /// face is `UserManaged`).
    ///
    /// # Errors
    /// [`ErrorKind::BadArgument`] when `point` is outside interior plus halo.
    pub fn set(&mut self, point: [isize; D], value: T) -> Result<()> {
        if !self.geometry.contains(&point) {
            return Err(Error::new(
                ErrorKind::BadArgument,
                format!(
                    "point {point:?} is outside grid of shape {:?} with halo {}",
                    self.shape(),
                    self.halo()
                ),
            ));
        }
        let interior = point
            .iter()
            .zip(self.geometry.interior())
            .all(|(&p, &n)| p >= 0 && (p as usize) < n);
        self.interior_changed |= interior;
        self.halo_current &= interior;
        let i = self.geometry.index(&point);
        self.storage[i] = value;
        Ok(())
    }

    /// Sets every interior point to `value`, then fills the halo.
    pub fn fill(&mut self, value: T) {
        for row in self.rows_mut() {
            row.fill(value);
        }
        self.update_halo();
    }

    /// Sets every interior point `p` to `f(p)`, called in C order, then fills the halo.
    pub fn fill_with(&mut self, f: impl FnMut([usize; D]) -> T) {
        self.write_interior_with(f);
        self.update_halo();
    }

    /// Replaces every interior value `v` by `f(v)`, then fills the halo.
    pub fn map_inplace(&mut self, mut f: impl FnMut(T) -> T) {
        for row in self.rows_mut() {
            for v in row {
                *v = f(*v);
            }
        }
        self.update_halo();
    }

    /// Every interior point with its value, in C order.
    pub fn interior_iter(&self) -> impl Iterator<Item = ([usize; D], T)> + '_ {
        self.interior_rows().flat_map(|(start, row)| {
            row.iter().enumerate().map(move |(j, &v)| {
                let mut point = start;
                point[D - 1] = j;
                (point, v)
            })
        })
    }

    /// The interior rows in C order, each exactly `shape[D - 1]` long and starting on a
    /// 64-byte boundary.
    pub fn rows(&self) -> impl Iterator<Item = &[T]> + '_ {
        self.interior_rows().map(|(_, row)| row)
    }

    /// The interior rows in C order, mutably; marks the halo stale.
    pub fn rows_mut(&mut self) -> impl Iterator<Item = &mut [T]> + '_ {
        self.interior_rows_mut().map(|(_, row)| row)
    }

    /// The interior in C order.
    pub fn to_vec(&self) -> Vec<T> {
        let mut values = Vec::with_capacity(self.n_points());
        for row in self.rows() {
            values.extend_from_slice(row);
        }
        values
    }

    /// Writes `f(p)` at every interior point `p` in C order; the halo is not touched.
    pub(super) fn write_interior_with(&mut self, mut f: impl FnMut([usize; D]) -> T) {
        for (mut point, row) in self.interior_rows_mut() {
            for (j, v) in row.iter_mut().enumerate() {
                point[D - 1] = j;
                *v = f(point);
            }
        }
    }

    /// Interior rows with the interior coordinates of their first point.
    fn interior_rows(&self) -> impl Iterator<Item = ([usize; D], &[T])> + '_ {
        let geometry = self.geometry;
        let (start, end) = row_span(&geometry);
        self.storage
            .chunks_exact(geometry.alloc_shape[D - 1])
            .enumerate()
            .filter_map(move |(r, chunk)| {
                interior_row_start::<D>(&geometry, r).map(|point| (point, &chunk[start..end]))
            })
    }

    /// Interior rows with the interior coordinates of their first point, mutably; marks the
    /// halo stale.
    pub(super) fn interior_rows_mut(
        &mut self,
    ) -> impl Iterator<Item = ([usize; D], &mut [T])> + '_ {
        self.interior_changed = true;
        let geometry = self.geometry;
        let (start, end) = row_span(&geometry);
        self.storage
            .chunks_exact_mut(geometry.alloc_shape[D - 1])
            .enumerate()
            .filter_map(move |(r, chunk)| {
                interior_row_start::<D>(&geometry, r).map(|point| (point, &mut chunk[start..end]))
            })
    }

    /// Storage index of interior point `point`.
    ///
    /// # Panics
    /// If `point` is outside the interior.
    fn interior_index(&self, point: [usize; D]) -> usize {
        let shape = self.geometry.interior();
        assert!(
            point.iter().zip(shape).all(|(p, n)| p < n),
            "point {point:?} is outside the interior {shape:?}"
        );
        let mut i = self.geometry.origin;
        for (p, s) in point.iter().zip(self.geometry.strides) {
            i += p * s;
        }
        i
    }
}

/// Where the interior lies within one allocated row: `start..end`.
fn row_span(geometry: &Geometry) -> (usize, usize) {
    let start = geometry.lead_pad + geometry.halo;
    (start, start + geometry.shape[geometry.n_dims - 1])
}

/// For allocated row number `r` (in C order over the dimensions before the last), the
/// interior coordinates of its first interior point, or `None` for a halo row.
fn interior_row_start<const D: usize>(geometry: &Geometry, mut r: usize) -> Option<[usize; D]> {
    let mut point = [0; D];
    for k in (0..D - 1).rev() {
        let c = r % geometry.alloc_shape[k];
        r /= geometry.alloc_shape[k];
        point[k] = c.checked_sub(geometry.halo)?;
        if point[k] >= geometry.shape[k] {
            return None;
        }
    }
    Some(point)
}

impl<T: Element, const D: usize> Index<[usize; D]> for Grid<T, D> {
    type Output = T;

    /// The interior point `point`.
    ///
    /// # Panics
    /// If `point` is outside the interior (use [`Grid::get`] to reach the halo).
    #[inline]
    fn index(&self, point: [usize; D]) -> &T {
        &self.storage[self.interior_index(point)]
    }
}

impl<T: Element, const D: usize> IndexMut<[usize; D]> for Grid<T, D> {
    /// The interior point `point`, mutably; marks the halo stale.
    ///
    /// # Panics
    /// If `point` is outside the interior (use [`Grid::set`] to reach the halo).
    #[inline]
    fn index_mut(&mut self, point: [usize; D]) -> &mut T {
        let i = self.interior_index(point);
        self.interior_changed = true;
        &mut self.storage[i]
    }
}
