//! `tanh` in f64.
//!
//! `tanh x = x` for `|x| < 2^-27` (keeps the sign of zero); `x + x^3 H(x^2)` for
//! `|x| < 0.55`, where `H` is a degree-10 Chebyshev fit of `(tanh(x)/x - 1)/x^2` on
//! `[0, 0.55^2]` (relative error of the sum below 2^-57; coefficients from mpmath's
//! `chebyfit` at 60 digits, rounded to f64); `sign(x) (1 - 2/(exp(2|x|) + 1))` beyond, which
//! is at least 0.5 in magnitude so the subtraction loses nothing, and saturates to `+-1`
//! (`exp` overflows to `+inf`). NaN in gives NaN out.

use super::emitter::{Emitter, imm};
use super::exp::exp;
use crate::ptx::{Cmp, Reg};

/// Below this `|x|`, `tanh x` rounds to `x`.
const TINY: f64 = 7.450_580_596_923_828e-9;
/// Where the polynomial ends and the `exp` formula starts.
const SPLIT: f64 = 0.55;
/// `H(z) = sum(C[i] z^i)`, `tanh x ~ x + x z H(z)` with `z = x^2`.
const COEFFS: [f64; 11] = [
    -0.333_333_333_333_333_3,
    0.133_333_333_333_327_14,
    -0.053_968_253_967_434_016,
    0.021_869_488_493_666_944,
    -0.008_863_234_397_814_355,
    0.003_592_110_378_689_024,
    -0.001_455_661_830_100_716,
    0.000_588_936_052_007_405_7,
    -0.000_234_634_741_088_723_7,
    8.511_313_685_577_672e-5,
    -2.060_276_537_636_634e-5,
];

/// `tanh x`.
pub(super) fn tanh(e: &mut Emitter<'_>, x: Reg) -> Reg {
    let ax = e.abs(x);
    // Polynomial.
    let z = e.mul(x, x);
    let h = e.horner(z, &COEFFS);
    let xz = e.mul(x, z);
    let small = e.fma(xz, h, x);
    // 1 - 2/(exp(2|x|) + 1), signed.
    let two_ax = e.add(ax, ax);
    let ex = exp(e, two_ax);
    let den = e.add(ex, imm(1.0));
    let q = e.div(imm(2.0), den);
    let large = e.sub(imm(1.0), q);
    let negative = e.setp(Cmp::Lt, x, imm(0.0));
    let neg_large = e.neg(large);
    let large = e.select(negative, neg_large, large);
    let is_small = e.setp(Cmp::Lt, ax, imm(SPLIT));
    let result = e.select(is_small, small, large);
    let tiny = e.setp(Cmp::Lt, ax, imm(TINY));
    e.select(tiny, x, result)
}
