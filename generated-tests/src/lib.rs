//! Random stencils compiled through `stencil!`.
//!
//! The build script writes the kernels; this library compiles them, so a kernel the macro
//! mishandles fails the build, and the tests in `tests/` verify each one against the reference
//! interpreter and against the generator's own IR.

#![allow(missing_docs)]

use stencil::Stencil;
use stencil::prelude::*;

include!(concat!(env!("OUT_DIR"), "/generated_kernels.rs"));
