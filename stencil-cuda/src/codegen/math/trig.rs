//! `sin`, `cos` and `tan` in f64.
//!
//! Reduction: `k = rint(x 2/pi)`, `r = x - k (P1 + P2 + P3)` with `pi/2` in three doubles
//! (161 bits): `x - k P1` is exact under `fma` for `|x| < 2^52`, `k P2` is an exact
//! two-product, and `r` is kept as a double-double `(r, r_lo)`. The kernels on
//! `[-pi/4, pi/4]` are fdlibm's (`__kernel_sin`, `__kernel_cos`: minimax polynomials with
//! error below 2^-58, and the correction for `r_lo`); the quadrant `k mod 4` picks and signs
//! them. `tan = sin(r) / cos(r)` (or `-cos/sin` in odd quadrants).
//!
//! The reduction is accurate for `abs(x) <= 2^44` (documented in the module above). Beyond
//! about `2^45`, `k` is no longer the nearest integer to `x 2/pi`; the reduced argument is
//! then clamped to `[-0.8, 0.8]` so results stay finite (in `[-1, 1]` for `sin`, `cos`) but
//! are not accurate. `+-inf` and NaN give NaN; `sin` and `tan` return `x` itself for
//! `|x| < 2^-27` (so the sign of zero is kept).

use super::emitter::{Emitter, imm};
use crate::ptx::{Cmp, FloatUnaryOp, IntOp, Operand, Reg, Type};

/// `2/pi` rounded to f64.
const TWO_OVER_PI: f64 = std::f64::consts::FRAC_2_PI;
/// `pi/2` rounded to f64.
const P1: f64 = std::f64::consts::FRAC_PI_2;
/// `pi/2 - P1` rounded to f64.
const P2: f64 = 6.123_233_995_736_766e-17;
/// `pi/2 - P1 - P2` rounded to f64.
const P3: f64 = -1.497_384_904_859_169_8e-33;
/// Below this `|x|`, `sin x` and `tan x` round to `x`.
const TINY: f64 = 7.450_580_596_923_828e-9;
/// fdlibm `__kernel_sin` coefficients S1..S6.
const S: [f64; 6] = [
    -1.666_666_666_666_663_2e-1,
    8.333_333_333_322_49e-3,
    -1.984_126_982_985_795e-4,
    2.755_731_370_707_006_8e-6,
    -2.505_076_025_340_686_3e-8,
    1.589_690_995_211_55e-10,
];
/// fdlibm `__kernel_cos` coefficients C1..C6.
const C: [f64; 6] = [
    4.166_666_666_666_66e-2,
    -1.388_888_888_887_411e-3,
    2.480_158_728_947_673e-5,
    -2.755_731_435_139_066_3e-7,
    2.087_572_321_298_175e-9,
    -1.135_964_755_778_819_5e-11,
];

/// The reduced argument and quadrant of `x`.
struct Reduced {
    /// High part of `r`, in `[-0.8, 0.8]`.
    r: Reg,
    /// Low part of `r`.
    r_lo: Reg,
    /// `k` as an s64 (its two low bits are the quadrant).
    k: Reg,
}

fn reduce(e: &mut Emitter<'_>, x: Reg) -> Reduced {
    let q = e.mul(x, imm(TWO_OVER_PI));
    let k = e.unary(FloatUnaryOp::Rint, q);
    let neg_k = e.neg(k);
    let r1 = e.fma(neg_k, imm(P1), x);
    let (t, t_lo) = e.two_prod(k, imm(P2));
    let neg_t = e.neg(t);
    let (r, err) = e.two_sum(r1, neg_t);
    let err = e.sub(err, t_lo);
    let err = e.fma(neg_k, imm(P3), err);
    let (r, r_lo) = e.fast_two_sum(r, err);
    // Only past the accurate range: keep the kernels' argument bounded.
    let abs_r = e.abs(r);
    let in_range = e.setp(Cmp::Le, abs_r, imm(0.8));
    let r_lo = e.select(in_range, r_lo, imm(0.0));
    let r = e.max(r, imm(-0.8));
    let r = e.min(r, imm(0.8));
    let k = e.cvt(Type::S64, Type::F64, k);
    Reduced { r, r_lo, k }
}

/// fdlibm `__kernel_sin(r, r_lo)`: `sin(r + r_lo)` for `|r| <= pi/4`.
fn kernel_sin(e: &mut Emitter<'_>, r: Reg, r_lo: Reg) -> Reg {
    let z = e.mul(r, r);
    let v = e.mul(z, r);
    let p = e.horner(z, &S[1..]);
    // r - ((z (r_lo/2 - v p) - r_lo) - v S1)
    let half_lo = e.mul(r_lo, imm(0.5));
    let neg_v = e.neg(v);
    let a = e.fma(neg_v, p, half_lo);
    let neg_lo = e.neg(r_lo);
    let b = e.fma(z, a, neg_lo);
    let c = e.fma(neg_v, imm(S[0]), b);
    e.sub(r, c)
}

/// fdlibm `__kernel_cos(r, r_lo)`: `cos(r + r_lo)` for `|r| <= pi/4`.
fn kernel_cos(e: &mut Emitter<'_>, r: Reg, r_lo: Reg) -> Reg {
    let z = e.mul(r, r);
    let p = e.horner(z, &C);
    let zp = e.mul(z, p);
    // w + (((1 - w) - hz) + (z zp - r r_lo)) with hz = z/2, w = 1 - hz.
    let hz = e.mul(z, imm(0.5));
    let w = e.sub(imm(1.0), hz);
    let one_minus_w = e.sub(imm(1.0), w);
    let low = e.sub(one_minus_w, hz);
    let rr = e.mul(r, r_lo);
    let neg_rr = e.neg(rr);
    let t = e.fma(z, zp, neg_rr);
    let low = e.add(low, t);
    e.add(w, low)
}

/// Predicates `(bit0, bit1)` of `k + add`.
fn quadrant_bits(e: &mut Emitter<'_>, k: Reg, add: i64) -> (Reg, Reg) {
    let k = if add == 0 {
        k
    } else {
        e.int(IntOp::Add, Type::S64, k, Operand::Int(add))
    };
    let b0 = e.int(IntOp::And, Type::B64, k, Operand::Int(1));
    let b1 = e.int(IntOp::And, Type::B64, k, Operand::Int(2));
    let odd = e.setp_ty(Cmp::Ne, Type::S64, b0, Operand::Int(0));
    let second = e.setp_ty(Cmp::Ne, Type::S64, b1, Operand::Int(0));
    (odd, second)
}

/// NaN for `+-inf` and NaN arguments, else `result`.
fn nan_for_non_finite(e: &mut Emitter<'_>, x: Reg, result: Reg) -> Reg {
    let d = e.sub(x, x);
    let bad = e.is_nan(d);
    e.select(bad, d, result)
}

/// `x` itself for `|x| < TINY`, else `result`.
fn tiny_is_identity(e: &mut Emitter<'_>, x: Reg, result: Reg) -> Reg {
    let ax = e.abs(x);
    let tiny = e.setp(Cmp::Lt, ax, imm(TINY));
    e.select(tiny, x, result)
}

/// `sin x`.
pub(super) fn sin(e: &mut Emitter<'_>, x: Reg) -> Reg {
    let red = reduce(e, x);
    let s = kernel_sin(e, red.r, red.r_lo);
    let c = kernel_cos(e, red.r, red.r_lo);
    // sin = [s, c, -s, -c][k mod 4].
    let (odd, negate) = quadrant_bits(e, red.k, 0);
    let base = e.select(odd, c, s);
    let neg = e.neg(base);
    let result = e.select(negate, neg, base);
    let result = tiny_is_identity(e, x, result);
    nan_for_non_finite(e, x, result)
}

/// `cos x`.
pub(super) fn cos(e: &mut Emitter<'_>, x: Reg) -> Reg {
    let red = reduce(e, x);
    let s = kernel_sin(e, red.r, red.r_lo);
    let c = kernel_cos(e, red.r, red.r_lo);
    // cos = [c, -s, -c, s][k mod 4]: negative where bit 1 of k + 1 is set.
    let (odd, _) = quadrant_bits(e, red.k, 0);
    let (_, negate) = quadrant_bits(e, red.k, 1);
    let base = e.select(odd, s, c);
    let neg = e.neg(base);
    let result = e.select(negate, neg, base);
    nan_for_non_finite(e, x, result)
}

/// `tan x`.
pub(super) fn tan(e: &mut Emitter<'_>, x: Reg) -> Reg {
    let red = reduce(e, x);
    let s = kernel_sin(e, red.r, red.r_lo);
    let c = kernel_cos(e, red.r, red.r_lo);
    // tan = s/c in even quadrants, -c/s in odd ones.
    let (odd, _) = quadrant_bits(e, red.k, 0);
    let num = e.select(odd, c, s);
    let den = e.select(odd, s, c);
    let t = e.div(num, den);
    let neg = e.neg(t);
    let result = e.select(odd, neg, t);
    let result = tiny_is_identity(e, x, result);
    nan_for_non_finite(e, x, result)
}
