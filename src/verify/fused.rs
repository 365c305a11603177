//! What `verify` checks beyond bits for kernels with fused multiply-add (`#[fma]`).
//!
//! The oracle of such a kernel is the interpreter evaluating its fused nodes
//! (`mul_add`, one rounding), and every backend that keeps the interpreter's operations is
//! held to its bits, as for any kernel. That says every backend fuses the same additions;
//! this module adds the check that fusing changed only rounding: the interpreter's fused
//! values against the same kernel without fusion ([`contract::expand`]: each fused node a
//! multiplication and an addition), at every interior point within the per-point bound of
//! the point's magnitude for kernels of sums and products ([`magnitude`]), else within
//! [`VerifyConfig::tolerance_eps`] epsilons of the unfused output's largest magnitude (at
//! least 1); reductions within that tolerance of `max(1, |unfused|)`. With
//! [`VerifyConfig::special_values`], points are held to a value only clear of overflow, as
//! for backends that do not keep the interpreter's bits.
//!
//! [`contract::expand`]: stencil_core::passes::contract::expand

use stencil_core::grid::Grid;
use stencil_core::{Element, Error, ErrorKind, FieldViewMut, Kernel, Result, interp};

use super::agree::{agrees, special_agrees};
use super::config::VerifyConfig;
use super::magnitude;

/// The oracle's values of a shape, and how its outputs start.
pub(super) struct Fused<'a, T: Element, const D: usize> {
    /// The interpreter's outputs of the fused kernel.
    pub(super) outputs: &'a [Grid<T, D>],
    /// Its reductions.
    pub(super) reductions: &'a [T],
    /// Sets an output's starting values (outputs read in place).
    pub(super) start: &'a dyn Fn(&mut Grid<T, D>, usize),
}

/// Checks `fused` (the interpreter on `kernel`, which has fused multiply-add, over `inputs`
/// and `params`) against the interpreter on the kernel without fusion, as the module
/// documentation says.
///
/// # Errors
/// [`ErrorKind::VerificationFailed`] naming the output, point and both values.
pub(super) fn check_rounding_change<T: Element, const D: usize>(
    kernel: &Kernel,
    inputs: &[Grid<T, D>],
    params: &[T],
    (shape, halo): ([usize; D], usize),
    fused: &Fused<'_, T, D>,
    config: &VerifyConfig,
) -> Result<()> {
    let unfused_kernel = stencil_core::passes::contract::expand(kernel);
    let mut unfused: Vec<Grid<T, D>> = (0..fused.outputs.len())
        .map(|_| Grid::<T, D>::with_halo(shape, halo))
        .collect::<Result<_>>()?;
    for (o, g) in unfused.iter_mut().enumerate() {
        (fused.start)(g, o);
    }
    let unfused_reductions = {
        let views: Vec<_> = inputs.iter().map(|g| g.view()).collect();
        let mut outs: Vec<FieldViewMut<'_, T>> = unfused.iter_mut().map(|g| g.view_mut()).collect();
        interp::run_reducing(&unfused_kernel, &views, &mut outs, params)
    };
    let magnitudes = magnitude::magnitudes(kernel, inputs, params, (shape, halo))?;
    let fail = |what: String| {
        Error::new(
            ErrorKind::VerificationFailed,
            format!(
                "verify `{}`, shape {shape:?}: fused multiply-add changed more than rounding: \
                 {what}",
                kernel.name
            ),
        )
    };
    let tolerance = |scale: f64| config.tolerance_eps * T::EPSILON.to_f64() * scale;
    for (o, (got, want)) in fused.outputs.iter().zip(&unfused).enumerate() {
        let name = &kernel.field(kernel.outputs().nth(o).expect("output")).name;
        let scale = want
            .interior_iter()
            .map(|(_, v)| v.to_f64().abs())
            .filter(|v| v.is_finite())
            .fold(1.0, f64::max);
        for (point, w) in want.interior_iter() {
            let g = got[point];
            let magnitude = magnitudes.as_ref().map(|(m, _)| m[o][point]);
            let tol = match (&magnitudes, magnitude) {
                (Some((_, factor)), Some(m)) => magnitude::bound::<T>(m, *factor),
                _ => tolerance(scale),
            };
            let ok = if config.special_values {
                special_agrees(g, w, magnitude, tol, config)
            } else {
                agrees(g, w, false, tol)
            };
            if !ok {
                return Err(fail(format!(
                    "output `{name}` at {point:?}: {:e} fused, {:e} unfused (allowed {tol:e})",
                    g.to_f64(),
                    w.to_f64()
                )));
            }
        }
    }
    for ((got, want), r) in fused
        .reductions
        .iter()
        .zip(&unfused_reductions)
        .zip(&kernel.reductions)
    {
        if !agrees(*got, *want, false, tolerance(want.to_f64().abs().max(1.0))) {
            return Err(fail(format!(
                "reduction `{}`: {:e} fused, {:e} unfused",
                r.name,
                got.to_f64(),
                want.to_f64()
            )));
        }
    }
    Ok(())
}
