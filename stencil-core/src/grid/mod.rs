//! Grids: `Grid<T, D>` with halo, padding, 64-byte alignment and per-face boundary
//! conditions (ARCHITECTURE.md, "Boundaries and halos").
//!
//! - `dense`: the [`Grid`] type, construction, boundaries, halo state, raw views;
//! - `access`: points, rows, iteration and bulk writes of the interior;
//! - `boundary`: [`Boundary`] conditions and the one-dimensional halo rule;
//! - `halo`: [`fill_halo`], the multi-dimensional fill (row-wise, corners consistent);
//! - `storage`: the 64-byte aligned, zero-initialised allocation;
//! - `ndarray_views` (feature `ndarray`): zero-copy views of the interior.
//!
//! The layout is [`Geometry`](crate::Geometry)'s rule; this module never re-derives it.
//! Backends see grids through [`FieldView`](crate::FieldView) /
//! [`FieldViewMut`](crate::FieldViewMut).

mod access;
mod boundary;
mod dense;
mod halo;
#[cfg(feature = "ndarray")]
mod ndarray_views;
mod storage;

#[cfg(test)]
mod tests;

pub use boundary::{Boundary, HaloSource, Side};
pub use dense::{DEFAULT_HALO, Grid};
pub use halo::{fill_halo, fill_halo_planes};

/// A 1-D grid.
pub type Grid1<T> = Grid<T, 1>;
/// A 2-D grid.
pub type Grid2<T> = Grid<T, 2>;
/// A 3-D grid.
pub type Grid3<T> = Grid<T, 3>;
/// A 4-D grid.
pub type Grid4<T> = Grid<T, 4>;
