//! Writing grids for people and for visualisation tools (cargo feature `output`, on by
//! default; no system library needed).
//!
//! - [`write_vti`]: one grid, or several fields of one shape, as a VTK ImageData XML file
//!   (`.vti`) with raw binary appended data, which ParaView and VisIt open directly. The
//!   interior only (no halo), 1-D to 3-D.
//! - [`write_png`] / [`render`]: a 2-D slice (a plane of a 3-D grid, or a 2-D grid) as an RGB
//!   PNG through a colour map, with a colour bar and its scale.
//!
//! **Axes.** A grid's last dimension is the one of unit stride (C order), and VTK ImageData
//! stores points x fastest. So grid dimension `D - 1` is VTK's x, `D - 2` is y and `D - 3` is
//! z: the point `[i, j, k]` of a 3-D grid is VTK's `(x, y, z) = (k, j, i)`, and the point
//! `[i, j]` of a 2-D grid is `(j, i, 0)`. Origins and spacings ([`VtiOptions`]) are given in
//! VTK's `(x, y, z)` order. In an image ([`write_png`]) the slice's first remaining grid
//! dimension runs down the rows (index 0 at the top) and its second along the columns, so a
//! 2-D grid's `[i, j]` is the pixel of row `i`, column `j`, as the grid prints.
//!
//! Every failure is an [`Err`]: [`ErrorKind::Io`] when the file cannot be written,
//! [`ErrorKind::BadArgument`] for no fields, a field with an empty or duplicate name,
//! a plane axis or index out of range, a plane where none can be taken, a value range that is
//! not finite (no finite value in the slice, or a NaN or infinite bound given), and non-finite
//! origins or spacings; [`ErrorKind::ShapeMismatch`] for fields of different shapes;
//! [`ErrorKind::DimensionMismatch`] for grids of a dimension count the format cannot hold.

mod font;
mod image;
pub(crate) mod vti;

pub use image::{ColourMap, Image, NAN_COLOUR, Plane, PngOptions, render, write_png};
pub use vti::{VtiOptions, write_vti, write_vti_to};

#[cfg(doc)]
use stencil_core::ErrorKind;
