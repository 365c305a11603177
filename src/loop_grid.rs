//! [`LoopGrid`]: a grid handed to a time loop, read only or read and written.
//!
//! The time loop (`Steps`), the code `stencil!` generates for
//! `kernel::steps(..)` and the exchanges across MPI ranks all hold a loop's grids this way,
//! one per kernel field; this module depends on nothing but core's `Grid`.

use stencil_core::Element;
use stencil_core::grid::Grid;

/// A grid given to a time loop: read only, or read and written.
#[doc(hidden)]
pub enum LoopGrid<'g, T: Element, const D: usize> {
    /// An input that does not rotate.
    Read(&'g Grid<T, D>),
    /// A grid that rotates or is written.
    Write(&'g mut Grid<T, D>),
}
