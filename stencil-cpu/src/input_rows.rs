//! Shared access to input storage from many threads, one row at a time.
//!
//! The executors read inputs through [`InputRows`], which holds where an input's storage lies
//! and makes a slice only of the elements a row loop reads (through
//! [`RowInput`](stencil_core::row::RowInput), the row contract's view of an input). A sweep
//! lends its inputs from shared borrows ([`InputRows::new`]), which nobody writes. A time loop
//! run in skewed tiles reads a grid while other workers write other rows of it: a `&[T]` over
//! the whole grid would then assert that nobody writes any of it, which is undefined behaviour
//! whatever the indices, so it lends each tile the grid with the box of rows that tile reads
//! ([`InputRows::from_raw_parts`]), which no other worker writes while the tile runs.

use stencil_core::row::RowInput;
use stencil_core::{FieldView, Geometry, MAX_DIMS};

/// A box of rows of a grid: indices `lo[d]..hi[d]` (interior coordinates, the halo negative
/// or past the extent) of every dimension but the unit-stride one; each row is taken whole
/// (halo and padding included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RowBox {
    /// First index per dimension.
    pub(crate) lo: [isize; MAX_DIMS],
    /// One past the last index per dimension.
    pub(crate) hi: [isize; MAX_DIMS],
}

impl RowBox {
    /// Every row of a grid laid out by `geom`, halo included.
    pub(crate) fn whole(geom: &Geometry) -> RowBox {
        let h = geom.halo as isize;
        let mut lo = [0; MAX_DIMS];
        let mut hi = [1; MAX_DIMS];
        for d in 0..geom.n_dims.saturating_sub(1) {
            lo[d] = -h;
            hi[d] = geom.shape[d] as isize + h;
        }
        RowBox { lo, hi }
    }

    /// Whether the two boxes share a row (of the first `n_row_dims` dimensions).
    #[cfg(test)]
    pub(crate) fn meets(&self, other: &RowBox, n_row_dims: usize) -> bool {
        (0..n_row_dims).all(|d| self.lo[d] < other.hi[d] && other.lo[d] < self.hi[d])
    }

    /// Whether the row holding storage index `index` of a grid laid out by `geom` lies in
    /// the box.
    pub(crate) fn holds(&self, geom: &Geometry, index: usize) -> bool {
        let last = geom.n_dims - 1;
        // Storage coordinates of the row, from the outermost dimension in.
        let mut rest = index;
        (0..last).all(|d| {
            let coordinate = rest / geom.strides[d];
            rest %= geom.strides[d];
            let interior = coordinate as isize - geom.halo as isize;
            (self.lo[d]..self.hi[d]).contains(&interior)
        })
    }
}

/// One input grid, readable by row from several threads.
#[derive(Debug)]
pub(crate) struct InputRows<'a, T> {
    /// The storage, its row start at index 0.
    input: RowInput<'a, T>,
    geom: Geometry,
    /// The rows the runs given this input may read.
    rows: RowBox,
    /// Whether `rows` leaves out any row (checked in debug builds).
    restricted: bool,
}

impl<'a, T> InputRows<'a, T> {
    /// Row access to `view`'s storage, every row readable (nobody writes a shared borrow).
    pub(crate) fn new(view: FieldView<'a, T>) -> Self {
        InputRows {
            input: RowInput::new(view.data, 0, view.geom.strides),
            geom: view.geom,
            rows: RowBox::whole(&view.geom),
            restricted: false,
        }
    }

    /// Row access to the `len` elements at `ptr`, laid out by `geom`, for runs that read the
    /// rows of `rows` only.
    ///
    /// # Safety
    /// For `'a`, the `len` elements at `ptr` must be valid for reads (`len` at least
    /// `geom.len`), and nobody may write an element of a row in `rows` while a run holding
    /// this value runs; the caller gives it only to runs of boxes whose reads (the box grown
    /// by this input's reach) lie in `rows`, with no prefetching (a generated loop prefetches
    /// rows beyond those it reads).
    pub(crate) unsafe fn from_raw_parts(
        ptr: *const T,
        len: usize,
        geom: Geometry,
        rows: RowBox,
    ) -> Self {
        InputRows {
            // SAFETY: the caller's promise: the storage is valid for reads for `'a`, and the
            // rows the runs read through it (the only slices a `RowInput` makes) are written
            // by nobody while they run.
            input: unsafe { RowInput::from_raw_parts(ptr, len, 0, geom.strides) },
            geom,
            rows,
            restricted: rows != RowBox::whole(&geom),
        }
    }

    /// Layout of the input grid.
    pub(crate) fn geom(&self) -> &Geometry {
        &self.geom
    }

    /// The rows the runs given this input may read.
    #[cfg(test)]
    pub(crate) fn rows(&self) -> &RowBox {
        &self.rows
    }

    /// The input as the row contract hands it to a row loop (its row start at index 0).
    #[inline]
    pub(crate) fn row_input(&self) -> RowInput<'a, T> {
        self.input
    }

    /// The `len` elements from storage index `start` (a segment of one row the caller reads).
    ///
    /// # Panics
    /// If they leave the storage (an executor bug: `Job::new` checks every input's halo);
    /// in debug builds, if their row is not in [`rows`](Self::rows).
    #[inline]
    pub(crate) fn row(&self, start: usize, len: usize) -> &'a [T] {
        debug_assert!(
            !self.restricted || self.rows.holds(&self.geom, start),
            "stencil-cpu: input row at {start} outside the rows {:?} lent",
            self.rows
        );
        match self.input.elements(start, len) {
            Some(row) => row,
            None => panic!(
                "stencil-cpu: input row {start}+{len} outside storage of {}",
                self.input.storage_len()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_box_holds_the_rows_it_names_halo_included() {
        let geom = Geometry::new(&[4, 5, 6], 1, 8).unwrap();
        let data = vec![0.0f64; geom.len];
        let whole = InputRows::new(FieldView { geom, data: &data });
        // Every row of the storage, halo rows too.
        let rows = geom.alloc_shape[0] * geom.alloc_shape[1];
        for r in 0..rows {
            assert!(whole.rows().holds(&geom, r * geom.strides[1]));
        }
        let mut lo = [0; MAX_DIMS];
        let mut hi = [1; MAX_DIMS];
        [lo[0], hi[0]] = [-1, 2];
        [lo[1], hi[1]] = [3, 6];
        let part = RowBox { lo, hi };
        let at = |p: [isize; 3]| geom.index(&p);
        assert!(part.holds(&geom, at([-1, 3, 0])));
        assert!(part.holds(&geom, at([1, 5, -1])));
        assert!(part.holds(&geom, at([1, 5, 6])));
        assert!(!part.holds(&geom, at([2, 3, 0])));
        assert!(!part.holds(&geom, at([0, 2, 0])));
        assert!(!part.holds(&geom, at([0, -1, 0])));
        assert!(part.meets(&whole.rows, 2));
        let mut above = part;
        [above.lo[1], above.hi[1]] = [6, 7];
        assert!(!part.meets(&above, 2));
    }
}
