//! Grid geometry and dimension-erased views of grid storage.
//!
//! [`Geometry`] is the layout rule of every grid, written once: interior shape, halo width,
//! padding of the unit-stride dimension, strides. Backends and the interpreter see grids
//! through [`FieldView`] / [`FieldViewMut`], which erase the dimension count (up to
//! [`MAX_DIMS`]) so one executor serves 1-D to 4-D.
//!
//! Layout (C order, last dimension unit-stride): every dimension holds `halo` points on each
//! side of the interior. The unit-stride dimension starts with a lead of
//! `round_up(halo, L)` points, where `L` is the number of elements in a 64-byte cache line, so
//! that the first interior point of every row is 64-byte aligned; its row length is rounded up
//! to a multiple of `L`, plus one more cache line when the row length in bytes is a multiple of
//! 4 KiB (rows that far apart map to the same cache sets; Datta et al.'s array padding).
//! [`Geometry::padded`] appends a chosen number of further cache lines to every row: the
//! unit-stride padding that a layout search (`Launch::search_padding` in the `stencil` crate)
//! tunes, since a grid's layout is fixed when it is allocated.

use crate::error::{Error, ErrorKind, Result};
use crate::ir::MAX_DIMS;

/// Alignment of grid storage and of every interior row, in bytes.
pub const ALIGN_BYTES: usize = 64;

/// Layout of one grid, independent of its element values.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Geometry {
    /// Number of dimensions, 1 to [`MAX_DIMS`].
    pub n_dims: usize,
    /// Interior extents; 1 beyond `n_dims`.
    pub shape: [usize; MAX_DIMS],
    /// Halo width (the same on every side of every dimension).
    pub halo: usize,
    /// Allocated extents including halo and padding; 1 beyond `n_dims`.
    pub alloc_shape: [usize; MAX_DIMS],
    /// Element strides; 0 beyond `n_dims`; the last dimension's stride is 1.
    pub strides: [usize; MAX_DIMS],
    /// Storage index of interior point `(0, ..., 0)`.
    pub origin: usize,
    /// Number of elements of storage.
    pub len: usize,
    /// Lead (points before the halo) of the unit-stride dimension: `lead_pad + halo` points
    /// precede interior index 0 in every row.
    pub lead_pad: usize,
    /// Cache lines (of [`ALIGN_BYTES`]) appended to every row beyond the padding that
    /// [`Geometry::new`] gives; 0 for the grids of `new`.
    pub pad_lines: usize,
}

impl Geometry {
    /// The layout of a grid of interior `shape`, halo width `halo`, elements of `elem_size`
    /// bytes.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidShape`] when `shape` is empty or longer than [`MAX_DIMS`], an
    /// extent is zero, or the storage size overflows.
    pub fn new(shape: &[usize], halo: usize, elem_size: usize) -> Result<Geometry> {
        Self::padded(shape, halo, elem_size, 0)
    }

    /// The layout of [`new`](Self::new) with `pad_lines` more cache lines of [`ALIGN_BYTES`]
    /// at the end of every row of the unit-stride dimension (after the line that rows of a
    /// multiple of 4 KiB get). Interior rows stay 64-byte aligned; only the strides of the
    /// dimensions above the unit-stride one change.
    ///
    /// # Errors
    /// As [`new`](Self::new), including when the padding makes the storage size overflow.
    pub fn padded(
        shape: &[usize],
        halo: usize,
        elem_size: usize,
        pad_lines: usize,
    ) -> Result<Geometry> {
        let n_dims = shape.len();
        if n_dims == 0 || n_dims > MAX_DIMS {
            return Err(Error::new(
                ErrorKind::InvalidShape,
                format!("a grid has 1 to {MAX_DIMS} dimensions, not {n_dims}"),
            ));
        }
        if let Some(d) = shape.iter().position(|&n| n == 0) {
            return Err(Error::new(
                ErrorKind::InvalidShape,
                format!("grid shape {shape:?} is empty in dimension {d}"),
            ));
        }
        let overflow = || {
            Error::new(
                ErrorKind::InvalidShape,
                format!("grid shape {shape:?} with halo {halo} is too large to allocate"),
            )
        };
        let line = (ALIGN_BYTES / elem_size).max(1);
        let last = n_dims - 1;
        let lead = halo.div_ceil(line).checked_mul(line).ok_or_else(overflow)?;
        let lead_pad = lead - halo;
        let mut row = lead
            .checked_add(shape[last])
            .and_then(|v| v.checked_add(halo))
            .and_then(|v| v.checked_next_multiple_of(line))
            .ok_or_else(overflow)?;
        if (row * elem_size).is_multiple_of(4096) {
            row += line;
        }
        row = pad_lines
            .checked_mul(line)
            .and_then(|pad| row.checked_add(pad))
            .ok_or_else(overflow)?;
        let mut alloc_shape = [1; MAX_DIMS];
        let mut full_shape = [1; MAX_DIMS];
        for d in 0..n_dims {
            full_shape[d] = shape[d];
            alloc_shape[d] = if d == last {
                row
            } else {
                shape[d].checked_add(2 * halo).ok_or_else(overflow)?
            };
        }
        let mut strides = [0; MAX_DIMS];
        let mut stride = 1usize;
        for d in (0..n_dims).rev() {
            strides[d] = stride;
            stride = stride.checked_mul(alloc_shape[d]).ok_or_else(overflow)?;
        }
        let len = stride;
        if len
            .checked_mul(elem_size)
            .is_none_or(|b| b > isize::MAX as usize)
        {
            return Err(overflow());
        }
        let mut origin = lead;
        for stride in &strides[..last] {
            origin += halo * stride;
        }
        Ok(Geometry {
            n_dims,
            shape: full_shape,
            halo,
            alloc_shape,
            strides,
            origin,
            len,
            lead_pad,
            pad_lines,
        })
    }

    /// Interior extents of the first `n_dims` dimensions.
    pub fn interior(&self) -> &[usize] {
        &self.shape[..self.n_dims]
    }

    /// Number of interior points.
    pub fn n_points(&self) -> usize {
        self.interior().iter().product()
    }

    /// Storage index of `point` (interior coordinates; negative and `>= shape` reach the halo).
    ///
    /// The result is meaningful only for points inside interior plus halo; use
    /// [`contains`](Self::contains) to check.
    #[inline]
    pub fn index(&self, point: &[isize]) -> usize {
        let mut idx = self.origin as isize;
        for (d, &p) in point.iter().enumerate().take(self.n_dims) {
            idx += p * self.strides[d] as isize;
        }
        idx as usize
    }

    /// Whether `point` lies in the interior or the halo.
    pub fn contains(&self, point: &[isize]) -> bool {
        let h = self.halo as isize;
        point.len() == self.n_dims
            && point
                .iter()
                .zip(self.interior())
                .all(|(&p, &n)| p >= -h && p < n as isize + h)
    }
}

/// Read-only view of one grid's whole storage (interior, halo and padding).
#[derive(Clone, Copy, Debug)]
pub struct FieldView<'a, T> {
    /// Layout.
    pub geom: Geometry,
    /// The storage (`geom.len` elements).
    pub data: &'a [T],
}

impl<T: Copy> FieldView<'_, T> {
    /// Value at `point` (interior coordinates; the halo is reachable).
    ///
    /// # Panics
    /// If `point` is outside interior plus halo.
    #[inline]
    pub fn get(&self, point: &[isize]) -> T {
        assert!(self.geom.contains(point), "point {point:?} outside grid");
        self.data[self.geom.index(point)]
    }
}

/// Mutable view of one grid's whole storage.
#[derive(Debug)]
pub struct FieldViewMut<'a, T> {
    /// Layout.
    pub geom: Geometry,
    /// The storage (`geom.len` elements).
    pub data: &'a mut [T],
}

impl<T: Copy> FieldViewMut<'_, T> {
    /// Value at `point`.
    ///
    /// # Panics
    /// If `point` is outside interior plus halo.
    #[inline]
    pub fn get(&self, point: &[isize]) -> T {
        assert!(self.geom.contains(point), "point {point:?} outside grid");
        self.data[self.geom.index(point)]
    }

    /// Writes `value` at `point`.
    ///
    /// # Panics
    /// If `point` is outside interior plus halo.
    #[inline]
    pub fn set(&mut self, point: &[isize], value: T) {
        assert!(self.geom.contains(point), "point {point:?} outside grid");
        let i = self.geom.index(point);
        self.data[i] = value;
    }

    /// A read-only view of the same storage.
    pub fn as_view(&self) -> FieldView<'_, T> {
        FieldView {
            geom: self.geom,
            data: self.data,
        }
    }
}

impl<'a, T> FieldViewMut<'a, T> {
    /// A mutable view of the same storage for a shorter time.
    pub fn reborrow(&mut self) -> FieldViewMut<'_, T> {
        FieldViewMut {
            geom: self.geom,
            data: &mut *self.data,
        }
    }

    /// This view, read-only for the rest of its lifetime.
    pub fn into_shared(self) -> FieldView<'a, T> {
        FieldView {
            geom: self.geom,
            data: self.data,
        }
    }
}

/// Checks that a view of `len` elements of `T` laid out by `geom` is one a grid has: the
/// layout [`Geometry::padded`] gives for its interior, halo and padding, over exactly its
/// storage. Views have public fields, so a backend that indexes by geometry (and a GPU launch
/// that reads whole grids) relies on this check, not on how the view was made.
///
/// # Errors
/// [`ErrorKind::BadArgument`] naming the grid `name`.
pub fn check_layout<T>(name: &str, geom: &Geometry, len: usize) -> crate::Result<()> {
    let canonical = Geometry::padded(
        geom.interior(),
        geom.halo,
        std::mem::size_of::<T>(),
        geom.pad_lines,
    );
    if canonical.ok() != Some(*geom) || len != geom.len {
        return Err(crate::Error::new(
            crate::ErrorKind::BadArgument,
            format!(
                "grid `{name}`: {len} elements of storage laid out as {geom:?}, which is not a \
                 grid's layout (Geometry::padded) over exactly its storage"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interior_rows_are_aligned_and_padded() {
        let g = Geometry::new(&[5, 7, 13], 2, 8).unwrap();
        assert_eq!(g.strides[2], 1);
        assert_eq!(g.alloc_shape[0], 9);
        assert_eq!(g.alloc_shape[1], 11);
        assert_eq!(g.strides[1] % 8, 0);
        assert!(g.strides[1] >= 8 + 13 + 2);
        assert_eq!(g.origin % 8, 0);
        assert_eq!(g.lead_pad, 6);
        assert_eq!(g.len, g.strides[0] * 9);
        // Last halo point of the last row is inside storage.
        assert!(g.index(&[6, 8, 14]) < g.len);
        assert_eq!(g.index(&[-2, -2, -2]), 6);
    }

    #[test]
    fn rows_of_4kib_get_one_more_cache_line() {
        // 512 f64 = 4 KiB exactly, so one more line of 8 elements is added.
        let g = Geometry::new(&[3, 512], 0, 8).unwrap();
        assert_eq!(g.strides[0], 512 + 8);
    }

    #[test]
    fn padding_lengthens_rows_by_whole_cache_lines() {
        for (elem, line) in [(8, 8), (4, 16)] {
            let plain = Geometry::new(&[3, 5, 13], 1, elem).unwrap();
            assert_eq!(Geometry::padded(&[3, 5, 13], 1, elem, 0).unwrap(), plain);
            for pad in 1..4 {
                let g = Geometry::padded(&[3, 5, 13], 1, elem, pad).unwrap();
                assert_eq!(g.pad_lines, pad);
                assert_eq!(g.strides[1], plain.strides[1] + pad * line);
                assert_eq!(g.strides[0], g.strides[1] * 7);
                assert_eq!(g.len, g.strides[0] * 5);
                // Interior rows stay aligned and every point keeps its offset in its row.
                assert_eq!((g.origin * elem) % ALIGN_BYTES, 0);
                assert_eq!((g.strides[1] * elem) % ALIGN_BYTES, 0);
                assert_eq!(g.lead_pad, plain.lead_pad);
                assert_eq!(
                    g.index(&[0, 0, 0]) % g.strides[1],
                    plain.origin % plain.strides[1]
                );
                assert!(g.index(&[3, 5, 13]) < g.len);
            }
        }
        // 4 KiB rows keep their extra line under padding.
        let g = Geometry::padded(&[3, 512], 0, 8, 2).unwrap();
        assert_eq!(g.strides[0], 512 + 8 + 16);
        assert_eq!(
            Geometry::padded(&[2, 2], 1, 8, usize::MAX / 4)
                .unwrap_err()
                .kind(),
            ErrorKind::InvalidShape
        );
    }

    #[test]
    fn a_read_only_view_of_a_mutable_one_sees_its_writes() {
        let geom = Geometry::new(&[3, 4], 1, 8).unwrap();
        let mut data = vec![0.0f64; geom.len];
        let mut view = FieldViewMut {
            geom,
            data: &mut data,
        };
        view.set(&[2, -1], 1.5);
        let read = view.as_view();
        assert_eq!(read.geom, geom);
        assert_eq!(read.get(&[2, -1]), 1.5);
        assert_eq!(read.get(&[0, 0]), 0.0);
    }

    #[test]
    fn empty_and_oversized_shapes_are_errors() {
        assert_eq!(
            Geometry::new(&[4, 0], 1, 8).unwrap_err().kind(),
            ErrorKind::InvalidShape
        );
        assert_eq!(
            Geometry::new(&[], 1, 8).unwrap_err().kind(),
            ErrorKind::InvalidShape
        );
        assert_eq!(
            Geometry::new(&[usize::MAX / 2, 4], 1, 8)
                .unwrap_err()
                .kind(),
            ErrorKind::InvalidShape
        );
    }
}
