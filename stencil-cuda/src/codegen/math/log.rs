//! Natural logarithm in f64, as a double-double (for `pow`) and rounded (for `ln`).
//!
//! `x = 2^e m` with `m` in `[sqrt(1/2), sqrt(2))` from the exponent and mantissa bits
//! (subnormals are scaled by `2^54` first). With `f = m - 1` (exact) and `s = f / (2 + f)`
//! carried as a double-double, `ln m = 2 atanh(s) = 2s + 2s^3/3 + s^5 Q(s^2)` where `|s| <=
//! 0.1716`: the first two terms are formed as double-doubles (error about 2^-100), the tail
//! (at most 2^-12 of the total) in double with the Taylor series of `Q` (10 terms). Then
//! `e ln2` is added with a 32-bit `LN2_HI` (so `e LN2_HI` is exact). The double-double is
//! accurate to about 2^-66 relative, which `pow` needs for results near the overflow limit.

use super::emitter::{Emitter, imm};
use crate::ptx::{Cmp, IntOp, Operand, Reg, Type};

/// `sqrt(2)` rounded to f64.
const SQRT2: f64 = std::f64::consts::SQRT_2;
/// `ln 2` to 32 bits (fdlibm's `ln2_hi`): `e * LN2_HI` is exact for `|e| < 2^21`.
const LN2_HI: f64 = 6.931_471_803_691_238e-1;
/// `ln 2 - LN2_HI` rounded to f64.
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
/// `2/3` rounded to f64.
const TWO_THIRDS: f64 = 0.666_666_666_666_666_6;
/// `2/3 - TWO_THIRDS` rounded to f64.
const TWO_THIRDS_LO: f64 = 3.700_743_415_417_188e-17;
/// `2 / (2k + 5)` for `k = 0..10`: `Q(z) = sum(C[k] z^k)`.
const TAIL_COEFFS: [f64; 10] = [
    0.4,
    0.285_714_285_714_285_7,
    0.222_222_222_222_222_2,
    0.181_818_181_818_181_82,
    0.153_846_153_846_153_85,
    0.133_333_333_333_333_33,
    0.117_647_058_823_529_41,
    0.105_263_157_894_736_84,
    0.095_238_095_238_095_23,
    0.086_956_521_739_130_43,
];
/// Bits of the f64 mantissa field.
const MANTISSA_MASK: i64 = 0x000F_FFFF_FFFF_FFFF;
/// Bits of 1.0 (exponent field of `[1, 2)`).
const ONE_BITS: i64 = 0x3FF0_0000_0000_0000;

/// `ln x`, with std's special values: `ln(+-0) = -inf`, `ln(x < 0) = NaN`, `ln(+inf) = +inf`,
/// NaN in gives NaN.
pub(super) fn ln(e: &mut Emitter<'_>, x: Reg) -> Reg {
    let (hi, _) = log_dd(e, x);
    let zero = e.setp(Cmp::Eq, x, imm(0.0));
    let r = e.select(zero, imm(f64::NEG_INFINITY), hi);
    let negative = e.setp(Cmp::Lt, x, imm(0.0));
    let r = e.select(negative, imm(f64::NAN), r);
    let inf = e.setp(Cmp::Eq, x, imm(f64::INFINITY));
    let r = e.select(inf, imm(f64::INFINITY), r);
    let nan = e.is_nan(x);
    e.select(nan, x, r)
}

/// `ln x` as a double-double `(hi, lo)` for positive finite `x` (normal or subnormal); other
/// arguments give finite garbage, which callers replace.
pub(super) fn log_dd(e: &mut Emitter<'_>, x: Reg) -> (Reg, Reg) {
    // Exponent and mantissa; subnormals scaled by 2^54 first.
    let tiny = e.setp(Cmp::Lt, x, imm(f64::MIN_POSITIVE));
    let scaled = e.mul(x, imm(18_014_398_509_481_984.0));
    let xs = e.select(tiny, scaled, x);
    let bias = e.select(tiny, imm(1077.0), imm(1023.0));
    let bits = e.bits(xs);
    let exponent_bits = e.int(IntOp::Shr, Type::U64, bits, Operand::Int(52));
    let exponent = e.cvt(Type::F64, Type::S64, exponent_bits);
    let exponent = e.sub(exponent, bias);
    let mantissa_bits = e.int(IntOp::And, Type::B64, bits, Operand::Int(MANTISSA_MASK));
    let mantissa_bits = e.int(IntOp::Or, Type::B64, mantissa_bits, Operand::Int(ONE_BITS));
    let m = e.float_of_bits(mantissa_bits);
    let above = e.setp(Cmp::Gt, m, imm(SQRT2));
    let half = e.mul(m, imm(0.5));
    let m = e.select(above, half, m);
    let next = e.add(exponent, imm(1.0));
    let exponent = e.select(above, next, exponent);

    // s = f / (2 + f) as a double-double (s, s_lo).
    let f = e.sub(m, imm(1.0));
    let u = e.add(f, imm(2.0));
    let u_minus_two = e.sub(u, imm(2.0));
    let u_lo = e.sub(f, u_minus_two);
    let s = e.div(f, u);
    let neg_s = e.neg(s);
    let rem = e.fma(neg_s, u, f);
    let rem = e.fma(neg_s, u_lo, rem);
    let s_lo = e.div(rem, u);

    // s^2 and s^3 as double-doubles.
    let (z, z_lo) = e.two_prod(s, s);
    let two_s = e.mul(s, imm(2.0));
    let z_lo = e.fma(two_s, s_lo, z_lo);
    let (c, c_lo) = e.two_prod(z, s);
    let c_lo = e.fma(z_lo, s, c_lo);
    let c_lo = e.fma(z, s_lo, c_lo);
    // B = 2/3 s^3.
    let (b, b_lo) = e.two_prod(c, imm(TWO_THIRDS));
    let b_lo = e.fma(c, imm(TWO_THIRDS_LO), b_lo);
    let b_lo = e.fma(c_lo, imm(TWO_THIRDS), b_lo);
    // Tail: s^5 Q(s^2).
    let q = e.horner(z, &TAIL_COEFFS);
    let s5 = e.mul(c, z);
    let tail = e.mul(s5, q);

    // ln m = 2s + B + tail (|2s| > |B|).
    let two_s_lo = e.mul(s_lo, imm(2.0));
    let (h, err) = e.fast_two_sum(two_s, b);
    let lows = e.add(two_s_lo, b_lo);
    let lows = e.add(lows, tail);
    let err = e.add(err, lows);
    let (h, l) = e.fast_two_sum(h, err);

    // + e ln2.
    let eh = e.mul(exponent, imm(LN2_HI));
    let el = e.mul(exponent, imm(LN2_LO));
    let (hi, err) = e.two_sum(eh, h);
    let lows = e.add(el, l);
    let err = e.add(err, lows);
    e.fast_two_sum(hi, err)
}
