//! What the workspace's test suites share, so that no suite carries its own copy: the one
//! seeded generator ([`Rng`], stencil-core's), random and poisoned test grids (as core's
//! [`Grid`](stencil_core::grid::Grid) in [`grid`], as bare storage over a
//! [`Geometry`](stencil_core::Geometry) in [`storage`]), the reference interpreter run on
//! random data ([`interp`]), and the 7-point heat kernel built as IR for suites without the
//! facade ([`kernels`]).
//!
//! A dev-dependency only, on stencil-core alone. Suites of the facade take the seeds' kernels
//! from `stencil::kernels`; stencil-core's own unit tests keep their fixtures in core (this
//! crate would link a second stencil-core into them).

pub mod grid;
pub mod interp;
pub mod kernels;
pub mod storage;

pub use stencil_core::rng::Rng;
