//! Random stencils compiled through `stencil!`.
//!
//! The build script writes the kernels, as source text drawn by stencil-core's generator; this
//! library compiles them, so a kernel the macro mishandles fails the build, and the tests in
//! `tests/` verify each one against the reference interpreter, against the generator's own IR,
//! and against an evaluator of the source text that shares nothing with the library.

#![allow(missing_docs)]

use stencil::prelude::*;
use stencil::{Element, Stencil};
use stencil_core::ElemType;
use stencil_core::random::RandomStencilConfig;

/// One generated kernel: the macro-compiled stencil, the generator configuration it was drawn
/// from, and the exact `stencil!` text the macro compiled.
pub struct Generated<T: Element> {
    pub stencil: &'static Stencil<T>,
    pub config: RandomStencilConfig,
    pub source: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/generated_kernels.rs"));
