//! How a backend's value is compared with the oracle's: the same bits, within a bound, or,
//! with special values, only where clear of overflow.

use stencil_core::{ElemType, Element};

use super::config::VerifyConfig;

/// A value's bits, through `f64` (exact for both element types).
pub(super) fn bits<T: Element>(v: T) -> u64 {
    v.to_f64().to_bits()
}

/// [`VerifyConfig::special_values`] for a backend that does not compute the interpreter's
/// bits: reassociation and contraction may overflow, or not, where the interpreter's order
/// does not, so only points clear of overflow are held to a value. With a per-point
/// `magnitude` (kernels of sums and products): a NaN magnitude (a NaN reached the point,
/// which every order propagates) requires NaN; a finite one at most [`CLEAR_OF_OVERFLOW`]
/// times the largest finite value requires the value within `bound`; others nothing. Without
/// one: a finite reference of at most that size requires the same class (a finite value)
/// within `tolerance_eps` epsilons of `max(1, |reference|)`; others nothing.
pub(super) fn special_agrees<T: Element>(
    got: T,
    want: T,
    magnitude: Option<f64>,
    bound: f64,
    config: &VerifyConfig,
) -> bool {
    let largest = match T::ELEM {
        ElemType::F64 => f64::MAX,
        ElemType::F32 => f64::from(f32::MAX),
    };
    let clear = |m: f64| m.is_finite() && m <= CLEAR_OF_OVERFLOW * largest;
    let (g, w) = (got.to_f64(), want.to_f64());
    match magnitude {
        Some(m) if m.is_nan() => g.is_nan(),
        Some(m) if clear(m) => class(got) == class(want) && agrees(got, want, false, bound),
        Some(_) => true,
        None if clear(w.abs()) => {
            let tol = config.tolerance_eps * T::EPSILON.to_f64() * w.abs().max(1.0);
            g.is_finite() && agrees(got, want, false, tol)
        }
        None => true,
    }
}

/// How far below the largest finite value a magnitude or reference value must stay for
/// [`special_agrees`] to hold a point to a value (2^-20).
pub(crate) const CLEAR_OF_OVERFLOW: f64 = 1.0 / 1_048_576.0;

/// NaN, `+inf`, `-inf` or finite, as 0 to 3.
fn class<T: Element>(v: T) -> u8 {
    let v = v.to_f64();
    match v {
        _ if v.is_nan() => 0,
        f64::INFINITY => 1,
        f64::NEG_INFINITY => 2,
        _ => 3,
    }
}

/// Whether a backend's value `got` agrees with the oracle's `want`: the same bits (any NaN
/// for a NaN) when `exact`, else also any value within `tol`.
pub(super) fn agrees<T: Element>(got: T, want: T, exact: bool, tol: f64) -> bool {
    let (g, w) = (got.to_f64(), want.to_f64());
    if bits(got) == bits(want) || (g.is_nan() && w.is_nan()) {
        return true;
    }
    !exact && (g - w).abs() <= tol
}
