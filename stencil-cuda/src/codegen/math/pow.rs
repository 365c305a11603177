//! `pow` in f64: `|x|^y = exp(y ln|x|)` with `ln|x|` as a double-double `(L, L_lo)` and
//! `y ln|x|` as `(y L, fma(y, L, -y L) + y L_lo)`, so the argument of `exp` carries about
//! 2^-66 relative error and results near the overflow limit stay within a few ulp.
//!
//! Special cases follow C99 Annex F (what std's `powf` implements), applied with `selp`
//! over the general result in this order (later rules win):
//! `|x| = 0`: `+inf` for `y < 0`, `0` for `y > 0`; `|x| = inf`: `0` for `y < 0`, `inf` for
//! `y > 0`; `y = +-inf`: `0` or `inf` by whether `|x| > 1` and the sign of `y`, `1` for
//! `|x| = 1`; the sign is negative when `x` has its sign bit set and `y` is an odd integer;
//! `NaN` for finite `x < 0` and non-integer `y`; NaN if `x` or `y` is NaN; and `1` when
//! `y = +-0` or `x = 1` (even if the other argument is NaN).

use super::emitter::{Emitter, imm};
use super::exp::exp_dd;
use super::log::log_dd;
use crate::ptx::{Cmp, FloatUnaryOp, Operand, Reg, Type};

/// `x^y`.
pub(super) fn pow(e: &mut Emitter<'_>, x: Reg, y: Reg) -> Reg {
    let ax = e.abs(x);
    let (l, l_lo) = log_dd(e, ax);
    let (p, p_lo) = e.two_prod(y, l);
    let p_lo = e.fma(y, l_lo, p_lo);
    let magnitude = exp_dd(e, p, Some(p_lo));

    // Classes of y: integer (true for +-inf, false for NaN) and odd integer.
    let y_floor = e.unary(FloatUnaryOp::Floor, y);
    let y_int = e.setp(Cmp::Eq, y_floor, y);
    let half = e.mul(y, imm(0.5));
    let half_floor = e.unary(FloatUnaryOp::Floor, half);
    let half_frac = e.setp(Cmp::Ne, half_floor, half);
    let y_odd = e.and(y_int, half_frac);
    let y_neg = e.setp(Cmp::Lt, y, imm(0.0));

    // |x| = 0 and |x| = inf.
    let ax_zero = e.setp(Cmp::Eq, ax, imm(0.0));
    let zero_case = e.select(y_neg, imm(f64::INFINITY), imm(0.0));
    let magnitude = e.select(ax_zero, zero_case, magnitude);
    let ax_inf = e.setp(Cmp::Eq, ax, imm(f64::INFINITY));
    let inf_case = e.select(y_neg, imm(0.0), imm(f64::INFINITY));
    let magnitude = e.select(ax_inf, inf_case, magnitude);

    // y = +-inf.
    let ay = e.abs(y);
    let y_inf = e.setp(Cmp::Eq, ay, imm(f64::INFINITY));
    let ax_big = e.setp(Cmp::Gt, ax, imm(1.0));
    let up = e.select(ax_big, imm(f64::INFINITY), imm(0.0));
    let down = e.select(ax_big, imm(0.0), imm(f64::INFINITY));
    let y_inf_case = e.select(y_neg, down, up);
    let ax_one = e.setp(Cmp::Eq, ax, imm(1.0));
    let y_inf_case = e.select(ax_one, imm(1.0), y_inf_case);
    let magnitude = e.select(y_inf, y_inf_case, magnitude);

    // Sign: x's sign bit and an odd integer y.
    let x_bits = e.bits(x);
    let x_sign = e.setp_ty(Cmp::Lt, Type::S64, x_bits, Operand::Int(0));
    let negative = e.and(x_sign, y_odd);
    let neg_magnitude = e.neg(magnitude);
    let result = e.select(negative, neg_magnitude, magnitude);

    // Finite x < 0 with a non-integer y.
    let x_neg = e.setp(Cmp::Lt, x, imm(0.0));
    let x_finite = e.setp(Cmp::Ne, ax, imm(f64::INFINITY));
    let x_neg_finite = e.and(x_neg, x_finite);
    let y_fraction = e.not(y_int);
    let domain_error = e.and(x_neg_finite, y_fraction);
    let result = e.select(domain_error, imm(f64::NAN), result);

    // NaN arguments, then the cases that are 1 even for NaN.
    let any_nan = e.setp(Cmp::Nan, x, y);
    let nan = e.add(x, y);
    let result = e.select(any_nan, nan, result);
    let y_zero = e.setp(Cmp::Eq, y, imm(0.0));
    let x_one = e.setp(Cmp::Eq, x, imm(1.0));
    let one = e.or(y_zero, x_one);
    e.select(one, imm(1.0), result)
}
