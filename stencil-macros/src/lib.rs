//! The `stencil!` proc macro. Use it through the `stencil` crate (`stencil::stencil!`); this
//! crate is an implementation detail whose generated code names `::stencil::__private` paths.
//!
//! This file is a thin shim over `expand`. The front end (parse -> model -> validate -> lower,
//! each diagnostic with its span) is the `stencil-lang` crate, which `stencil::parse` shares
//! at run time; this crate adds `emit`, the generated code.

#![forbid(unsafe_code)]

mod emit;
mod expand;

/// Defines stencil kernels: each `fn` becomes a typed function returning a `Launch`, plus a
/// module of the same name whose `stencil()` returns the compiled kernel.
///
/// The module also holds `Params`, a struct of the kernel's scalar parameters as named fields,
/// and `with(grids.., Params)`, the same call with each scalar named at the call site, so two
/// parameters swapped cannot compile silently; a kernel with `#[rotate(..)]` also gets
/// `Grids`, a struct of its grids as named fields (those that rotate as `&mut`), and
/// `steps_with(Grids, Params)` beside `steps(..)`, so the levels of a chain (three `&mut Grid2`
/// of one type) are named at the call site and cannot be passed in the wrong order:
///
/// ```text
/// heat::with(&u, &mut v, heat::Params { c0: 0.4, c1: 0.1 }).run()?;
/// wave::steps_with(wave::Grids { u_prev: &mut a, u: &mut b, u_next: &mut c },
///                  wave::Params { c: 0.25 }).run(100)?;
/// ```
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
///   `N` from 1 to 4, `T` `f32` or `f64`; scalars of type `T`; reductions `&mut Sum<T>`,
///   `&mut Min<T>` and `&mut Max<T>`. One `T` and one `N` per kernel.
/// - Statements: `let name = value;` and `out[i, j, k] = value;` (each output exactly once,
///   at offset zero), each ending with `;`, the last one too. The first store names the index variables (in a kernel without stores,
///   the first read naming one per dimension, else `i, j, k, l`).
/// - Reductions: `s += value;` for a `Sum`, `m = min(m, value);` for a `Min` and
///   `m = max(m, value);` for a `Max` (either argument order), each reduction exactly once; a
///   reduction cannot be read, and a kernel with reductions cannot have `#[rotate(..)]`. The
///   typed function takes them in place (`dot(&x, &y, &mut s).run()?; s.value()`), as does
///   `with`, where they stay positional like grids.
/// - Reads: `u[i - 1, j, k + 2]`: every index variable in order, each plus or minus an
///   integer constant of at most 8. An output may be read at offset zero, in a statement
///   before the one that writes it (an in-place update, `y[i] = a * x[i] + y[i]`): the read
///   gives its value from before the sweep. Reading an output elsewhere, or after writing it,
///   is an error.
/// - Staggered grids: `#[stagger(i)]` (or `#[stagger(i, k)]`) on a grid parameter puts its
///   point of index `n` along `i` at position `n + 1/2`; it is then read and written at
///   half offsets along those indices, `v[i + 1/2, j]` (its point `i`), `v[i - 1/2, j]` (point
///   `i - 1`), `v[i + 3/2, j]` (point `i + 1`), `n/2` with `n` odd, and at whole offsets along
///   the others; a staggered output is written at `+ 1/2`. A whole offset on a staggered
///   index, a half on another, another fraction, an unknown index name, a repeated or
///   misplaced attribute (no other attribute is allowed on a parameter), a staggered grid
///   passed to a helper or an operator, and a `#[rotate(..)]` chain of grids staggered
///   differently are errors at the token. The compiled kernel holds the stored offsets (the
///   stagger is notation, checked here); halos are filled by stored index, so along a
///   staggered index the lower halo stands at `-1/2, -3/2, ..` and the upper one at
///   `n + 1/2, ..` (the guide's "Staggered grids").
/// - Values: numbers, parameters, temporaries, reads, `+ - * /`, unary `-`, parentheses,
///   `abs sqrt exp ln sin cos tan tanh floor ceil` (one argument), `min max pow` (two),
///   comparisons, `&& || !`, `if c { a } else { b }` or `select(c, a, b)`, calls of helpers,
///   and the finite-difference operators below.
/// - The point and the step: an index variable used as a value (`0.1 * j`, `if i < 3.0`)
///   is the point's interior index along its dimension (0 at the first interior point, as
///   `Grid::get` counts), converted to `f64` and then rounded to `T` (exact below 2^53 for
///   `f64`, below 2^24 for `f32`). `step()` is the number of the step being computed,
///   converted the same way: in a time loop (`Steps`, `kernel::steps`, `Stages`) the step's
///   number, counting from 0 (from `n` after `Stages::first_step(n)`); in a single `run()`,
///   0 unless set with `Launch::at_step(n)`. Time is `t0 + dt * step()` with parameters. A
///   helper may call `step()`; it sees the index variables only as arguments (`f(u, j)`).
///   An index variable the kernel does not have (`k` in a 2-D kernel) is an error.
///
/// # Rounding and `#[fma]`
///
/// Every operation rounds to `T` as written, in the order written (`a + b + c` is
/// `(a + b) + c`): every backend and schedule that keeps that order computes the reference
/// interpreter's bits, and Rust never contracts `a * b + c` on its own (gcc does by default).
/// `#[fma]` on a kernel (no arguments; next to `#[rotate(..)]` and doc comments) asks for fused
/// multiply-add instead: each addition or subtraction whose operand is a product node is
/// computed with one rounding (IEEE 754 `fusedMultiplyAdd`, Rust's `mul_add`, PTX's
/// `fma.rn`), by one rule written once in stencil-core (`passes::contract`), which every
/// evaluator follows, so the fused bits are the same everywhere:
///
/// - `x + y`: `fma(x.a, x.b, y)` if `x` is a product `x.a * x.b`, else `fma(y.a, y.b, x)` if
///   `y` is one; `x - y`: `fma(x.a, x.b, -y)`, else `fma(-y.a, y.b, x)`;
/// - a product read through a `let` is not fused (`let t = a * b; out[i] = t + c;` rounds
///   twice: the way to keep one sum unfused), nor is a negated product (`-(a * b) + c`);
/// - sums nest as written: `a * b + c * d + e` is `fma(a, b, c * d) + e`; a product also
///   used elsewhere is fused into each sum that takes it and computed on its own for the
///   other uses.
///
/// The result differs from the unfused kernel's by rounding (usually closer to the exact
/// value); `stencil::verify` holds every backend to the fused interpreter's bits where it
/// keeps its operations, and the fused values to the per-point bound of the unfused ones.
/// Speed: on x86-64 `mul_add` is one instruction only where the build enables the `fma`
/// target feature (`-C target-cpu=native` on an FMA machine, `-C target-feature=+fma`, or
/// `x86-64-v3`); without it the standard library calls a software routine, exact but many
/// times slower than a multiply and an add. The bits are the same either way.
/// `stencil::parse` reads `#[fma]` too, and `KernelBuilder::fma(true)` sets it at run time.
/// `#[fma(..)]` with arguments, or `#[fma]` twice, is an error at the attribute.
///
/// # Helpers
///
/// An `fn` whose parameters are bare names, without types, is a *helper*: an expression
/// function that kernels of the same `stencil!` block (and other helpers, in any order) call.
///
/// ```text
/// stencil! {
///     fn lap(u) { u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1] - 4.0 * u[i, j] }
///     fn react(a, b) { let ab2 = a * b * b; ab2 }
///     pub fn gray_scott(u: &Grid2<f64>, v: &Grid2<f64>, un: &mut Grid2<f64>, ...) {
///         un[i, j] = u[i, j] + dt * (du * lap(u) - react(u[i, j], v[i, j]) + ...);
///     }
/// }
/// ```
///
/// - The body is `let`s followed by one expression, its value (no `;` after it); it sees only
///   its parameters and its `let`s, and writes nothing. A helper has no visibility and no
///   attributes but doc comments, and generates no Rust item.
/// - A parameter the body indexes (`u[i-1, j]`) or passes on as a grid is a *grid*
///   parameter; the caller passes a grid, `u`, or a shifted grid, `u[i + 1, j]`, whose offsets
///   add to those in the body (the sum must stay within the radius limit of 8). Any other
///   parameter is a *value*, computed once per point from the argument.
/// - Indices in a body use the calling kernel's index variables.
/// - Each call is inlined into the kernel's IR; helpers cannot be recursive, directly or
///   through other helpers. A helper cannot take a built-in function's name.
/// - A kernel expands to at most 100,000 operations once its helpers are inlined (helpers
///   that call others more than once grow exponentially); past that, an error at the call.
///
/// # Finite differences
///
/// Central differences of order 2 (the default), 4, 6 or 8 (radius `order / 2`), with the
/// standard weights and the grid spacing `h` (a value) as an argument; the grid may be shifted.
///
/// - `diff(u, i, h)`, `diff(u, i, h, order)`: first derivative of `u` along the dimension of
///   index variable `i` (any of the kernel's index variables).
/// - `diff2(u, i, h)`, `diff2(u, i, h, order)`: second derivative along `i`.
/// - `laplace(u, h)`, `laplace(u, h, order)`: the sum of the second derivatives along every
///   dimension, spacing `h` in each.
///
/// The order is an integer literal.
///
/// Every mistake is a compile error pointing at the offending token. `stencil::parse` accepts
/// the same language from text at run time (one kernel and its helpers), with the same messages.
///
/// The macro may be used at module level or inside a function body: the generated items
/// refer to each other by paths that resolve in either.
#[proc_macro]
pub fn stencil(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    expand::expand(input.into()).into()
}
