//! The `stencil!` proc macro. Use it through the `stencil` crate (`stencil::stencil!`); this
//! crate is an implementation detail whose generated code names `::stencil::__private` paths.
//!
//! This file is a thin shim over `expand`; the stages are separate modules on `proc_macro2`
//! so each is unit-tested: `parse` (syn) -> `model` (the kernel as written, with spans) ->
//! `validate` (names and indices; every diagnostic collected) -> `lower` (core IR through
//! `KernelBuilder`, checked by core's verifier, errors mapped back to spans) -> `emit`.

#![forbid(unsafe_code)]

mod checked;
mod diagnostic;
mod emit;
mod expand;
mod lower;
mod model;
mod parse;
#[cfg(test)]
mod testing;
mod validate;

/// Defines stencil kernels: each `fn` becomes a typed function returning a `Launch`, plus a
/// module of the same name whose `stencil()` returns the compiled kernel.
///
/// ```text
/// stencil! {
///     /// One Jacobi sweep of the 3-D heat equation.
///     pub fn heat(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64) {
///         out[i, j, k] = c0 * u[i, j, k]
///             + c1 * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k]
///                   + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1]);
///     }
/// }
/// // heat(&u, &mut v, 0.4, 0.1).run()?;   heat::stencil() is the `Stencil<f64>`.
/// ```
///
/// # The kernel language
///
/// - Parameters: grids `&GridN<T>` / `&Grid<T, N>` (inputs) and `&mut GridN<T>` (outputs),
///   `N` from 1 to 4, `T` `f32` or `f64`; scalars of type `T`. One `T` and one `N` per kernel.
/// - Statements: `let name = value;` and `out[i, j, k] = value;` (each output exactly once,
///   at offset zero). The first store names the index variables.
/// - Reads: `u[i - 1, j, k + 2]`: every index variable in order, each plus or minus an
///   integer constant of at most 8.
/// - Values: numbers, parameters, temporaries, reads, `+ - * /`, unary `-`, parentheses,
///   `abs sqrt exp ln sin cos tan tanh floor ceil` (one argument), `min max pow` (two),
///   comparisons, `&& || !`, and `if c { a } else { b }` or `select(c, a, b)`.
///
/// Every mistake is a compile error pointing at the offending token.
#[proc_macro]
pub fn stencil(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    expand::expand(input.into()).into()
}
