//! `exp` in f64, for an argument given as a double-double `hi + lo` (`lo = 0` for `exp`
//! itself; `pow` passes the low part of `y ln|x|`).
//!
//! `k = rint(hi / ln2)`, `r = hi - k ln2 + lo` with `ln2 = LN2 + LN2_LO`: `hi - k LN2` is
//! exact under `fma` (both terms are multiples of 2^-54 and the difference is below 1/2),
//! and `r` is kept as a double-double `(r, r_lo)`. Then `exp(r + r_lo) = 1 + q + r_lo (1 + q)`
//! with `q = expm1(r)` from a degree-13 Taylor polynomial (truncation error below 2^-58 on
//! `|r| <= 0.347`), and the result is scaled by `2^k` as `2^k1 * 2^k2` (`k1 = k >> 1`), so
//! every factor is a normal number and a subnormal result is rounded once. Arguments are
//! clamped to `[-750, 710]` first, so overflow gives `+inf` and underflow `+0`; NaN in gives
//! NaN out.

use super::emitter::{Emitter, imm};
use crate::ptx::{Cmp, FloatUnaryOp, IntOp, Operand, Reg, Type};

/// `1 / ln 2`.
const LOG2E: f64 = std::f64::consts::LOG2_E;
/// `ln 2` rounded to f64.
const LN2: f64 = std::f64::consts::LN_2;
/// `ln 2 - LN2` rounded to f64.
const LN2_LO: f64 = 2.319_046_813_846_299_6e-17;
/// `1/n!` for `n = 2..=13`: `expm1(r) = r + r^2 * sum(C[i] r^i)`.
const EXPM1_COEFFS: [f64; 12] = [
    0.5,
    0.166_666_666_666_666_66,
    0.041_666_666_666_666_664,
    0.008_333_333_333_333_333,
    0.001_388_888_888_888_889,
    0.000_198_412_698_412_698_4,
    2.480_158_730_158_73e-5,
    2.755_731_922_398_589_3e-6,
    2.755_731_922_398_589e-7,
    2.505_210_838_544_172e-8,
    2.087_675_698_786_81e-9,
    1.605_904_383_682_161_3e-10,
];

/// `e^x`.
pub(super) fn exp(e: &mut Emitter<'_>, x: Reg) -> Reg {
    exp_dd(e, x, None)
}

/// `e^(hi + lo)` for `abs(lo) <= 2^-40 abs(hi)`, `lo = 0` when `None` (any `lo` is ignored
/// when `abs(hi) >= 1000`).
pub(super) fn exp_dd(e: &mut Emitter<'_>, hi: Reg, lo: Option<Reg>) -> Reg {
    let nan = e.is_nan(hi);
    let clamped = e.max(hi, imm(-750.0));
    let clamped = e.min(clamped, imm(710.0));
    let scaled = e.mul(clamped, imm(LOG2E));
    let k = e.unary(FloatUnaryOp::Rint, scaled);
    let neg_k = e.neg(k);
    let r1 = e.fma(neg_k, imm(LN2), clamped);
    let c = match lo {
        Some(lo) => {
            // Past the clamp the result is 0 or inf whatever `lo` is, and `lo` may be NaN
            // there (`pow` computes it as `fma(y, L, -inf)` when `y L` overflows).
            let abs_hi = e.abs(hi);
            let lo_counts = e.setp(Cmp::Lt, abs_hi, imm(1000.0));
            let lo = e.select(lo_counts, lo, imm(0.0));
            e.fma(neg_k, imm(LN2_LO), lo)
        }
        None => e.mul(neg_k, imm(LN2_LO)),
    };
    let (r, r_lo) = e.two_sum(r1, c);
    // q = expm1(r); exp(r + r_lo) = 1 + (q + r_lo (1 + q)).
    let p = e.horner(r, &EXPM1_COEFFS);
    let r2 = e.mul(r, r);
    let q = e.fma(r2, p, r);
    let t = e.fma(q, r_lo, r_lo);
    let s = e.add(q, t);
    let m = e.add(s, imm(1.0));
    // 2^k = 2^k1 * 2^k2 with k1 = floor(k / 2): both factors normal for k in [-1082, 1025].
    let ki = e.cvt(Type::S32, Type::F64, k);
    let k1 = e.int(IntOp::Shr, Type::S32, ki, Operand::Int(1));
    let k2 = e.int(IntOp::Sub, Type::S32, ki, k1);
    let f1 = pow2(e, k1);
    let f2 = pow2(e, k2);
    let m = e.mul(m, f1);
    let result = e.mul(m, f2);
    e.select(nan, hi, result)
}

/// `2^k` for an s32 register `k` in `[-1022, 1023]`, built from its exponent bits.
pub(super) fn pow2(e: &mut Emitter<'_>, k: Reg) -> Reg {
    let biased = e.int(IntOp::Add, Type::S32, k, Operand::Int(1023));
    let wide = e.cvt_int(Type::S64, Type::S32, biased);
    let bits = e.int(IntOp::Shl, Type::B64, wide, Operand::Int(52));
    e.float_of_bits(bits)
}
