//! Transcendental functions as PTX: `exp ln sin cos tan tanh pow` for `f32` and `f64`, emitted
//! inline (branch-free, through `selp`) by one function per routine, with the semantics of
//! Rust's std (what the reference interpreter calls), special values included.
//!
//! PTX has no accurate instruction for any of them (the `.approx.f32` forms are off by many
//! ulp after range reduction, and there is no f64 form at all), so every routine is range
//! reduction plus a polynomial in `f64` with `fma`:
//!
//! - `exp` (`exp.rs`): `x = k ln2 + r` with a two-part `ln2` (the first product exact under
//!   `fma`), `expm1(r)` by a degree-13 Taylor polynomial on `|r| <= ln2/2`, the reduced
//!   argument carried as a double-double so `pow` can pass a low part; `2^k` is built from
//!   exponent bits in two halves, so subnormal results round once and overflow is `+inf`.
//! - `ln` (`log.rs`): exponent and mantissa split with bit operations (subnormals scaled by
//!   `2^54` first), mantissa in `[sqrt(1/2), sqrt(2))`, `s = (m-1)/(m+1)` and the odd `atanh`
//!   series, summed as a double-double (`2s` and `2s^3/3` exact to about 2^-100, the rest in
//!   double); `ln` returns the rounded high part.
//! - `sin cos tan` (`trig.rs`): Cody-Waite reduction by `pi/2` with a three-part `pi/2`
//!   (`k p1` exact under `fma`, `k p2` an exact two-product), the reduced argument as a
//!   double-double, fdlibm's minimax kernels for `sin` and `cos` on `[-pi/4, pi/4]` with the
//!   tail correction, the quadrant from `k mod 4`; `tan = sin/cos` of the reduced argument.
//! - `tanh` (`tanh.rs`): `x` for `|x| < 2^-27`, an odd polynomial (degree 23, Chebyshev fit
//!   of `(tanh(x)/x - 1)/x^2`) for `|x| < 0.55`, `1 - 2/(exp(2|x|) + 1)` beyond, with the sign.
//! - `pow` (`pow.rs`): `exp(y ln|x|)` with `ln|x|` as a double-double and `y ln|x|` as an exact
//!   two-product, so large results keep their accuracy; C99/IEEE special cases by `selp`.
//!
//! `f32` routines widen the argument to `f64` (exact), run the `f64` routine and round once
//! (`cvt.rn.f32.f64`): simpler than separate `f32` polynomials and correctly rounded in all
//! but rare double-rounding cases. The cost is `f64` arithmetic, which data-centre GPUs run at
//! half the `f32` rate; stencils are usually bound by memory, where this does not show.
//! Sizes in f64 instructions, all executed (no branches): `exp` about 37, `ln` 75, `sin`,
//! `cos`, `tan` 60 each, `tanh` 62, `pow` 160; an `f32` call adds two conversions.
//!
//! # Accuracy
//!
//! Maximum error in ulp of Rust's std result (glibc's libm on Linux), measured by the unit
//! test `accuracy_report` over 20 000 random arguments per function and type (across the whole
//! range, every exponent and sign, near `1` for `ln`, near multiples of `pi/2` for the
//! trigonometric functions, bases near 1 with large exponents and negative bases with integer
//! exponents for `pow`) plus the special values, which all match exactly:
//!
//! | function | f64 | f32 | arguments |
//! |----------|-----|-----|-----------|
//! | exp      | 1   | 1   | all |
//! | ln       | 1   | 1   | all |
//! | sin, cos | 1   | 1   | `abs(x) <= 2^44` |
//! | tan      | 2   | 1   | `abs(x) <= 2^44` |
//! | tanh     | 2   | 2   | all (std's own error: at the worst points found, this result is the correctly rounded one, std's is 2 ulp off) |
//! | pow      | 1   | 1   | all, results from subnormal to overflow |
//!
//! The test asserts them, with room of one ulp for `pow` in f64 (so at most 2 ulp everywhere
//! in f64, 1 in f32 except `tanh`), since another libm may round differently. The facade's `verify` tolerance (4096 eps scaled by the
//! output's magnitude) is far wider.
//!
//! Limits: `sin cos tan` reduce with 161 bits of `pi/2`, enough for `abs(x) <= 2^44` (about
//! 1.76e13; the reduced argument's absolute error stays below 2^-115, small against the
//! smallest distance of a double to a multiple of `pi/2`, about 2^-61). Past about `2^45`
//! the rounded `x 2/pi` no longer gives the nearest multiple, and no Payne-Hanek reduction is
//! done: results are finite (`sin` and `cos` in `[-1, 1]`) but not accurate; the test
//! `trigonometric_functions_stay_finite_past_the_accurate_range` checks this. `f32` arguments
//! share the limit.

mod emitter;
mod exp;
mod log;
mod pow;
mod tanh;
#[cfg(test)]
mod tests;
mod trig;

use crate::ptx::{EntryBuilder, Reg, Type};
use emitter::Emitter;

/// A function without a native PTX instruction, emitted by this module.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Function {
    /// `e^x`
    Exp,
    /// Natural logarithm.
    Ln,
    /// Sine.
    Sin,
    /// Cosine.
    Cos,
    /// Tangent.
    Tan,
    /// Hyperbolic tangent.
    Tanh,
    /// `x^y` (two arguments).
    Pow,
}

/// Emits `function` of `args` (one register, two for `pow`) of float type `ty` (f32 or f64);
/// returns the result register (of `ty`'s class).
pub(crate) fn emit(b: &mut EntryBuilder, function: Function, ty: Type, args: &[Reg]) -> Reg {
    let mut e = Emitter { b };
    let wide: Vec<Reg> = match ty {
        Type::F32 => args
            .iter()
            .map(|&a| e.cvt(Type::F64, Type::F32, a))
            .collect(),
        _ => args.to_vec(),
    };
    let result = match function {
        Function::Exp => exp::exp(&mut e, wide[0]),
        Function::Ln => log::ln(&mut e, wide[0]),
        Function::Sin => trig::sin(&mut e, wide[0]),
        Function::Cos => trig::cos(&mut e, wide[0]),
        Function::Tan => trig::tan(&mut e, wide[0]),
        Function::Tanh => tanh::tanh(&mut e, wide[0]),
        Function::Pow => pow::pow(&mut e, wide[0], wide[1]),
    };
    match ty {
        Type::F32 => e.cvt(Type::F32, Type::F64, result),
        _ => result,
    }
}
