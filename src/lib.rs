//! # stencil
//!
//! Write a stencil kernel once, in the [`stencil!`] macro, and run it near the machine's limit.
//!
//! ```
//! use stencil::prelude::*;
//!
//! stencil! {
//!     /// One Jacobi sweep of the 3-D heat equation.
//!     pub fn heat(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64) {
//!         out[i, j, k] = c0 * u[i, j, k]
//!             + c1 * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k]
//!                   + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1]);
//!     }
//! }
//!
//! fn main() -> Result<(), stencil::Error> {
//!     let mut u = Grid3::<f64>::new([32, 32, 32])?;
//!     let mut v = u.like();
//!     u.fill_with(|[i, j, k]| (i + j + k) as f64);
//!     for _ in 0..10 {
//!         heat(&u, &mut v, 0.4, 0.1).run()?;
//!         std::mem::swap(&mut u, &mut v);
//!     }
//!     Ok(())
//! }
//! ```
//!
//! The macro checks the kernel at compile time (every mistake is an error with a span), lowers
//! it to the IR of [`stencil_core`], and generates a typed function with the kernel's own
//! signature returning a [`Launch`]; `.run()` validates the call (shapes, halos) and runs it on
//! the CPU backend. Kernels can also be built at run time with [`KernelBuilder`] and run through
//! [`Launch::new`]. [`verify()`] checks a kernel on every backend against the reference
//! interpreter; call it in your own tests.
//!
//! See ARCHITECTURE.md in the repository for how the pieces fit.

mod launch;
pub mod verify;

pub use launch::Launch;
pub use stencil_core::grid::{Boundary, DEFAULT_HALO, Grid, Grid1, Grid2, Grid3, Grid4, Side};
pub use stencil_core::{
    Backend, CpuSchedule, ElemType, Element, Error, ErrorKind, FieldView, FieldViewMut, Geometry,
    GpuSchedule, Job, Kernel, KernelBuilder, Result, Schedule, Stencil, analysis, hash, interp, ir,
    random,
};
pub use stencil_cpu::CpuBackend;
pub use stencil_macros::stencil;
pub use verify::{VerifyConfig, VerifyReport, verify, verify_with};

// The GPU backend (stencil-cuda): PTX generated from the IR, run through the CUDA driver, or
// in the PTX emulator on machines with no GPU.
pub use stencil_cuda::{CudaBackend, CudaDevice, DeviceGrid, EmulatedGpu};

/// The ndarray crate, re-exported so the types of [`Grid::interior`] can be named.
#[cfg(feature = "ndarray")]
pub use ndarray;

/// What a simulation code needs in scope: grids, boundaries, the macro and the error type.
pub mod prelude {
    pub use crate::{Boundary, Error, Grid, Grid1, Grid2, Grid3, Grid4, Launch, Side, stencil};
}

/// Paths used by code that `stencil!` generates. Not a public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use crate::launch::Launch;
    pub use std::sync::LazyLock;
    pub use stencil_core::grid::Grid;
    pub use stencil_core::row::RowArgs;
    pub use stencil_core::{
        BinaryOp, CmpOp, ElemType, Element, KernelBuilder, LogicOp, Stencil, UnaryOp,
    };
}
