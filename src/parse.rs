//! Kernels from text at run time: [`parse`] compiles the kernel language, as written inside
//! `stencil! { ... }`, from a string (a kernel read from a file or typed by a user) into a
//! [`Stencil`] run through [`Launch::new`](crate::Launch::new).
//!
//! The front end is the `stencil!` macro's own (the `stencil-lang` crate), so the text accepts
//! exactly the macro's language, helpers and finite-difference operators included, and
//! reports the macro's messages with the line and column of the offending token. A kernel from
//! text has no generated CPU point loop: it runs on the backends' IR evaluators.

use stencil_core::{Element, Error, ErrorKind, Result, Stencil};

/// Compiles `source`, holding one kernel (`fn name(grids.., params..) { .. }`) and any
/// helpers, into a [`Stencil`] of element type `T`.
///
/// ```
/// use stencil::prelude::*;
///
/// let smooth = stencil::parse::<f64>(
///     "fn lap(u) { u[i - 1] - 2.0 * u[i] + u[i + 1] }
///      fn smooth(u: &Grid1<f64>, out: &mut Grid1<f64>, c: f64) { out[i] = u[i] + c * lap(u); }",
/// )?;
/// assert_eq!(smooth.kernel().name, "smooth");
/// let error = stencil::parse::<f64>("fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) {\n  out[i] = v[i];\n}")
///     .unwrap_err();
/// assert_eq!(error.to_string(), "line 2, column 12: unknown grid `v`");
/// # Ok::<(), stencil::Error>(())
/// ```
///
/// # Errors
/// [`ErrorKind::InvalidKernel`] with every mistake, one per line, each as `line L, column C:
/// message`; [`ErrorKind::ElementTypeMismatch`] if the kernel's element type is not `T`.
pub fn parse<T: Element>(source: &str) -> Result<Stencil<T>> {
    let kernel = stencil_lang::compile(source).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        Error::new(ErrorKind::InvalidKernel, lines.join("\n"))
    })?;
    Stencil::new(kernel)
}
