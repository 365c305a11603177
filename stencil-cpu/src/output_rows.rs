//! Shared access to output storage from many threads, one row at a time.
//!
//! Every worker writes rows of the same output grids concurrently, so the executor cannot hand
//! out `&mut` borrows of whole grids. [`OutputRows`] keeps a raw pointer to one output's storage
//! and hands out mutable row slices; the caller promises that the rows it asks for do not
//! overlap while alive (the executor's tiles partition the interior and outputs alias nothing).
//!
//! Views have public fields, so a view's geometry could have been assembled by hand. Distinct
//! interior rows are disjoint only in a layout that [`Geometry::padded`] produces (of which
//! [`Geometry::new`]'s is the unpadded case), so [`OutputRows::new`] accepts nothing else: a
//! bad layout is an error, not a data race.

use std::marker::PhantomData;

use stencil_core::row::OutputRun;
use stencil_core::view::check_layout;
use stencil_core::{FieldViewMut, Geometry, Result};

/// One output grid, writable by row from several threads.
#[derive(Debug)]
pub(crate) struct OutputRows<'a, T> {
    ptr: *mut T,
    len: usize,
    geom: Geometry,
    _storage: PhantomData<&'a mut [T]>,
}

// SAFETY: `OutputRows` is a `&mut [T]` split into rows: it only ever yields disjoint row
// slices (the contract of `row`), so sending it to, or sharing it between, threads is as
// sound as sending the disjoint `&mut [T]` pieces themselves, which needs `T: Send`.
unsafe impl<T: Send> Send for OutputRows<'_, T> {}
// SAFETY: as above; `&OutputRows` gives no access but through `row`, whose callers guarantee
// that no two live slices overlap.
unsafe impl<T: Send> Sync for OutputRows<'_, T> {}

impl<'a, T> OutputRows<'a, T> {
    /// Row access to `view`'s storage; the view stays mutably borrowed for `'a`. `name`
    /// names the output in the error.
    ///
    /// # Errors
    /// [`ErrorKind::BadArgument`](stencil_core::ErrorKind::BadArgument) if the view's geometry is not the one [`Geometry::padded`]
    /// gives for its interior, halo, element size and padding, or its storage is not
    /// `geom.len` elements.
    pub(crate) fn new(view: &'a mut FieldViewMut<'_, T>, name: &str) -> Result<Self> {
        check_layout::<T>(name, &view.geom, view.data.len())?;
        Ok(OutputRows {
            ptr: view.data.as_mut_ptr(),
            len: view.data.len(),
            geom: view.geom,
            _storage: PhantomData,
        })
    }

    /// Row access to the `len` elements at `ptr`, laid out by `geom`.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    ///
    /// # Safety
    /// For `'a`, the `len` elements at `ptr` must be valid for reads and writes and accessed
    /// through nothing but this value's rows.
    pub(crate) unsafe fn from_raw_parts(
        ptr: *mut T,
        len: usize,
        geom: Geometry,
        name: &str,
    ) -> Result<Self> {
        check_layout::<T>(name, &geom, len)?;
        Ok(OutputRows {
            ptr,
            len,
            geom,
            _storage: PhantomData,
        })
    }

    /// Layout of the output grid.
    pub(crate) fn geom(&self) -> &Geometry {
        &self.geom
    }

    /// The `len` elements from storage index `start` (a row of the interior).
    ///
    /// # Panics
    /// If the row is not inside the storage (a tiling bug: interior rows always are).
    ///
    /// # Safety
    /// No other slice returned by `row` of this value and overlapping this one may be alive
    /// while the returned slice is.
    #[inline]
    pub(crate) unsafe fn row(&self, start: usize, len: usize) -> &'a mut [T] {
        assert!(
            start.checked_add(len).is_some_and(|end| end <= self.len),
            "stencil-cpu: output row {start}+{len} outside storage of {}",
            self.len
        );
        // SAFETY: `start..start + len` lies inside the storage of `self.len` elements that
        // `ptr` borrows mutably for `'a` (checked above); the caller guarantees no overlapping slice
        // is alive, so this is the only reference to these elements.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(start), len) }
    }
}

impl<'a, T> OutputRows<'a, T> {
    /// The `rows` rows of `len` elements at storage indices `start + r * stride` (a run of
    /// interior rows), as one [`OutputRun`].
    ///
    /// # Panics
    /// If a row is not inside the storage or, for several rows, `stride < len` (a tiling bug:
    /// the rows of a run of the interior never are).
    ///
    /// # Safety
    /// No slice returned by `row`, and no row of another `OutputRun` returned by `run`, that
    /// overlaps one of these rows may be alive while the returned value is.
    #[inline]
    pub(crate) unsafe fn run(
        &self,
        start: usize,
        len: usize,
        stride: usize,
        rows: usize,
    ) -> OutputRun<'a, T> {
        let last = rows
            .checked_sub(1)
            .and_then(|r| r.checked_mul(stride))
            .and_then(|offset| offset.checked_add(start))
            .and_then(|first| first.checked_add(len));
        assert!(
            (rows == 0 || last.is_some_and(|end| end <= self.len)) && (rows <= 1 || stride >= len),
            "stencil-cpu: output run {start}+{rows}x{stride}({len}) outside storage of {}",
            self.len
        );
        // SAFETY: every row lies inside the storage that `ptr` borrows mutably for `'a` and
        // distinct rows are disjoint (checked above); the caller guarantees that nothing else
        // accesses them while the run lives.
        unsafe { OutputRun::from_raw_parts(self.ptr.add(start), len, stride, rows) }
    }

    /// [`run`](Self::run) repeated in `planes` planes `plane_stride` apart (a 3-D block of
    /// interior rows), as one [`OutputRun`].
    ///
    /// # Panics
    /// If a row is not inside the storage or two rows overlap (a tiling bug, as for `run`).
    ///
    /// # Safety
    /// As for [`run`](Self::run), for the rows of every plane.
    #[inline]
    pub(crate) unsafe fn run_planes(
        &self,
        start: usize,
        (len, stride, rows): (usize, usize, usize),
        plane_stride: usize,
        planes: usize,
    ) -> OutputRun<'a, T> {
        let span = rows
            .checked_sub(1)
            .and_then(|r| r.checked_mul(stride))
            .and_then(|offset| offset.checked_add(len));
        let last = planes
            .checked_sub(1)
            .and_then(|p| p.checked_mul(plane_stride))
            .and_then(|offset| offset.checked_add(start))
            .zip(span)
            .and_then(|(first, span)| first.checked_add(span));
        assert!(
            rows == 0
                || planes == 0
                || (last.is_some_and(|end| end <= self.len)
                    && (rows <= 1 || stride >= len)
                    && (planes <= 1 || span.is_some_and(|span| plane_stride >= span))),
            "stencil-cpu: output run {start}+{planes}x{plane_stride}+{rows}x{stride}({len}) \
             outside storage of {} or overlapping",
            self.len
        );
        // SAFETY: every row of every plane lies inside the storage that `ptr` borrows mutably
        // for `'a`, and distinct rows are disjoint (checked above); the caller guarantees that
        // nothing else accesses them while the run lives.
        unsafe {
            OutputRun::from_raw_parts_planes(
                self.ptr.add(start),
                len,
                stride,
                rows,
                plane_stride,
                planes,
            )
        }
    }
}

/// A mutable slice shared by several threads that each take disjoint ranges of it.
#[derive(Debug)]
pub(crate) struct SharedSlice<'a, T> {
    ptr: *mut T,
    len: usize,
    _storage: PhantomData<&'a mut [T]>,
}

// SAFETY: as for `OutputRows`: only disjoint ranges are ever handed out (the contract of
// `range`), so sharing is as sound as sending the disjoint `&mut [T]` pieces.
unsafe impl<T: Send> Send for SharedSlice<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SharedSlice<'_, T> {}

impl<'a, T> SharedSlice<'a, T> {
    /// Shares `data` (mutably borrowed for `'a`).
    pub(crate) fn new(data: &'a mut [T]) -> Self {
        SharedSlice {
            ptr: data.as_mut_ptr(),
            len: data.len(),
            _storage: PhantomData,
        }
    }

    /// The elements in `range`.
    ///
    /// # Panics
    /// If `range` is not inside the slice.
    ///
    /// # Safety
    /// No other slice returned by `range` and overlapping this one may be alive while the
    /// returned slice is.
    pub(crate) unsafe fn range(&self, range: std::ops::Range<usize>) -> &'a mut [T] {
        assert!(
            range.start <= range.end && range.end <= self.len,
            "range outside the slice"
        );
        // SAFETY: the range is inside the slice that `ptr` borrows mutably for `'a` (checked
        // above), and the caller guarantees no overlapping slice is alive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(range.start), range.len()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stencil_core::ErrorKind;

    #[test]
    fn only_layouts_from_geometry_padded_are_accepted() {
        let geom = Geometry::new(&[4, 5], 1, 8).unwrap();
        let mut data = vec![0.0f64; geom.len];
        let mut good = FieldViewMut {
            geom,
            data: &mut data,
        };
        assert!(OutputRows::new(&mut good, "out").is_ok());
        let padded = Geometry::padded(&[4, 5], 1, 8, 3).unwrap();
        let mut padded_data = vec![0.0f64; padded.len];
        let mut good = FieldViewMut {
            geom: padded,
            data: &mut padded_data,
        };
        assert!(OutputRows::new(&mut good, "out").is_ok());
        // Padding that the strides do not carry: rows would not be where the layout says.
        let mut mislabelled = padded;
        mislabelled.pad_lines = 1;
        let mut bad = FieldViewMut {
            geom: mislabelled,
            data: &mut padded_data,
        };
        assert!(OutputRows::new(&mut bad, "out").is_err());

        // Rows of this layout overlap (a zero stride): writing them in parallel would race.
        let mut overlapping = geom;
        overlapping.strides[0] = 0;
        let mut bad = FieldViewMut {
            geom: overlapping,
            data: &mut data,
        };
        let err = OutputRows::new(&mut bad, "out").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BadArgument);
        assert!(err.message().contains("`out`"));

        let mut short = vec![0.0f64; geom.len - 1];
        let mut bad = FieldViewMut {
            geom,
            data: &mut short,
        };
        assert!(OutputRows::new(&mut bad, "out").is_err());
        // A geometry for another element size is another layout.
        let mut data32 = vec![0.0f32; geom.len];
        let mut bad = FieldViewMut {
            geom,
            data: &mut data32,
        };
        assert!(OutputRows::new(&mut bad, "out").is_err());
    }
}
