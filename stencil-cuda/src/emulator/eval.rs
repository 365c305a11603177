//! The arithmetic of each instruction family on register bit patterns, as PTX defines it:
//! integers wrap at their width, `mul.wide` keeps the full product, float operations round to
//! nearest-even in their own type (`f32` computed in `f32`), float `min`/`max` ignore a NaN
//! operand (IEEE minNum/maxNum, `-0 < +0`), `setp` comparisons without `u` are false on NaN.
//!
//! The `.approx` functions (`ex2`, `lg2`, `sin`, `cos`) use Rust's `f32` functions, which are
//! more accurate than the GPU's approximations: results may differ from hardware in the last
//! bits (and more for `sin`/`cos` of large arguments).

use super::program::{BinaryOp, Compare, TernaryOp, Ty, UnaryOp};

fn f32_of(bits: u64) -> f32 {
    f32::from_bits(bits as u32)
}

fn bits_of_f32(value: f32) -> u64 {
    u64::from(value.to_bits())
}

fn f64_of(bits: u64) -> f64 {
    f64::from_bits(bits)
}

/// Sign-extends the low 32 bits.
fn signed32(bits: u64) -> i64 {
    i64::from(bits as u32 as i32)
}

/// A float type's operations, so each rule is written once for `f32` and `f64`.
trait Float: Copy + PartialOrd {
    fn is_nan(self) -> bool;
    fn is_sign_negative(self) -> bool;
}

impl Float for f32 {
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    fn is_sign_negative(self) -> bool {
        f32::is_sign_negative(self)
    }
}

impl Float for f64 {
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    fn is_sign_negative(self) -> bool {
        f64::is_sign_negative(self)
    }
}

/// IEEE minNum (`want_min`) or maxNum: a NaN operand is ignored; `-0` orders below `+0`.
fn min_max<F: Float>(a: F, b: F, want_min: bool) -> F {
    if a.is_nan() {
        return b;
    }
    if b.is_nan() {
        return a;
    }
    let a_first = if a == b {
        // Only equal values that differ are the two zeros.
        a.is_sign_negative() == want_min
    } else {
        (a < b) == want_min
    };
    if a_first { a } else { b }
}

fn float_compare<F: Float>(compare: Compare, a: F, b: F) -> bool {
    let unordered = a.is_nan() || b.is_nan();
    match compare {
        Compare::Eq => a == b,
        Compare::Ne => !unordered && a != b,
        Compare::Lt => a < b,
        Compare::Le => a <= b,
        Compare::Gt => a > b,
        Compare::Ge => a >= b,
        Compare::Equ => unordered || a == b,
        Compare::Neu => unordered || a != b,
        Compare::Ltu => unordered || a < b,
        Compare::Leu => unordered || a <= b,
        Compare::Gtu => unordered || a > b,
        Compare::Geu => unordered || a >= b,
        Compare::Num => !unordered,
        Compare::Nan => unordered,
    }
}

fn integer_compare<T: Ord>(compare: Compare, a: T, b: T) -> bool {
    match compare {
        Compare::Eq => a == b,
        Compare::Ne => a != b,
        Compare::Lt => a < b,
        Compare::Le => a <= b,
        Compare::Gt => a > b,
        Compare::Ge => a >= b,
        // The decoder admits the unordered and NaN tests for float types only.
        _ => false,
    }
}

/// `setp.compare.ty a, b`.
pub(crate) fn setp(compare: Compare, ty: Ty, a: u64, b: u64) -> bool {
    match ty {
        Ty::F32 => float_compare(compare, f32_of(a), f32_of(b)),
        Ty::F64 => float_compare(compare, f64_of(a), f64_of(b)),
        Ty::S32 => integer_compare(compare, signed32(a), signed32(b)),
        Ty::S64 => integer_compare(compare, a as i64, b as i64),
        _ => integer_compare(compare, a & ty.mask(), b & ty.mask()),
    }
}

fn float_binary<F: Float>(op: BinaryOp, a: F, b: F, arithmetic: fn(BinaryOp, F, F) -> F) -> F {
    match op {
        BinaryOp::Min => min_max(a, b, true),
        BinaryOp::Max => min_max(a, b, false),
        _ => arithmetic(op, a, b),
    }
}

fn f32_arithmetic(op: BinaryOp, a: f32, b: f32) -> f32 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Div => a / b,
        _ => a * b,
    }
}

fn f64_arithmetic(op: BinaryOp, a: f64, b: f64) -> f64 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Div => a / b,
        _ => a * b,
    }
}

/// A two-operand instruction on bit patterns (the result is masked to the destination width).
pub(crate) fn binary(op: BinaryOp, ty: Ty, a: u64, b: u64) -> u64 {
    match ty {
        Ty::F32 => bits_of_f32(float_binary(op, f32_of(a), f32_of(b), f32_arithmetic)),
        Ty::F64 => float_binary(op, f64_of(a), f64_of(b), f64_arithmetic).to_bits(),
        _ => integer_binary(op, ty, a, b),
    }
}

fn integer_binary(op: BinaryOp, ty: Ty, a: u64, b: u64) -> u64 {
    let mask = ty.mask();
    let width = u64::from(ty.size()) * 8;
    let signed = |bits: u64| -> i64 {
        if width == 32 {
            signed32(bits)
        } else {
            bits as i64
        }
    };
    let result = match op {
        BinaryOp::Add => a.wrapping_add(b),
        BinaryOp::Sub => a.wrapping_sub(b),
        BinaryOp::MulLo | BinaryOp::Mul => a.wrapping_mul(b),
        BinaryOp::MulWide => {
            return if ty == Ty::S32 {
                signed32(a).wrapping_mul(signed32(b)) as u64
            } else {
                (a & 0xFFFF_FFFF) * (b & 0xFFFF_FFFF)
            };
        }
        // The decoder admits `div` for float types only.
        BinaryOp::Div => 0,
        BinaryOp::Min | BinaryOp::Max => {
            let a_smaller = if ty.is_signed() {
                signed(a) < signed(b)
            } else {
                (a & mask) < (b & mask)
            };
            if a_smaller == (op == BinaryOp::Min) {
                a
            } else {
                b
            }
        }
        BinaryOp::Shl => {
            let shift = b & 0xFFFF_FFFF;
            if shift >= width { 0 } else { a << shift }
        }
        BinaryOp::Shr => {
            let shift = (b & 0xFFFF_FFFF).min(width);
            if ty.is_signed() {
                (signed(a) >> shift.min(width - 1)) as u64
            } else if shift >= width {
                0
            } else {
                (a & mask) >> shift
            }
        }
        BinaryOp::And => a & b,
        BinaryOp::Or => a | b,
        BinaryOp::Xor => a ^ b,
    };
    result & mask
}

/// A one-operand instruction on bit patterns.
pub(crate) fn unary(op: UnaryOp, ty: Ty, a: u64) -> u64 {
    match ty {
        Ty::F32 => {
            let x = f32_of(a);
            bits_of_f32(match op {
                UnaryOp::Neg => -x,
                UnaryOp::Abs => x.abs(),
                UnaryOp::Sqrt => x.sqrt(),
                UnaryOp::Rcp => 1.0 / x,
                UnaryOp::Ex2 => x.exp2(),
                UnaryOp::Lg2 => x.log2(),
                UnaryOp::Sin => x.sin(),
                UnaryOp::Cos => x.cos(),
                UnaryOp::Floor => x.floor(),
                UnaryOp::Ceil => x.ceil(),
                UnaryOp::Rint => x.round_ties_even(),
                // The decoder admits `not` for bit types only.
                UnaryOp::Not => x,
            })
        }
        Ty::F64 => {
            let x = f64_of(a);
            match op {
                UnaryOp::Neg => -x,
                UnaryOp::Abs => x.abs(),
                UnaryOp::Sqrt => x.sqrt(),
                UnaryOp::Rcp => 1.0 / x,
                UnaryOp::Floor => x.floor(),
                UnaryOp::Ceil => x.ceil(),
                UnaryOp::Rint => x.round_ties_even(),
                // The decoder admits the approximate functions for f32 only.
                _ => x,
            }
            .to_bits()
        }
        _ => match op {
            UnaryOp::Neg => a.wrapping_neg() & ty.mask(),
            UnaryOp::Not => !a & ty.mask(),
            _ => a,
        },
    }
}

/// A three-operand instruction: `mad.lo`, `mad.wide` (64-bit addend) or fused `fma.rn`.
pub(crate) fn ternary(op: TernaryOp, ty: Ty, a: u64, b: u64, c: u64) -> u64 {
    match (op, ty) {
        (TernaryOp::Fma, Ty::F32) => bits_of_f32(f32_of(a).mul_add(f32_of(b), f32_of(c))),
        (TernaryOp::Fma, _) => f64_of(a).mul_add(f64_of(b), f64_of(c)).to_bits(),
        (TernaryOp::MadLo, _) => a.wrapping_mul(b).wrapping_add(c) & ty.mask(),
        (TernaryOp::MadWide, _) => integer_binary(BinaryOp::MulWide, ty, a, b).wrapping_add(c),
    }
}

/// `cvt.to.from` for the pairs of the subset: float narrowing rounds to nearest-even, integer to
/// float rounds to nearest-even, float to integer truncates toward zero and saturates (NaN gives
/// 0), integer widening extends by signedness, integer narrowing keeps the low bits.
pub(crate) fn convert(to: Ty, from: Ty, a: u64) -> u64 {
    let value = match from {
        Ty::F32 => Value::Float(f64::from(f32_of(a))),
        Ty::F64 => Value::Float(f64_of(a)),
        Ty::S32 => Value::Signed(signed32(a)),
        Ty::S64 => Value::Signed(a as i64),
        _ => Value::Unsigned(a & from.mask()),
    };
    match (to, value) {
        // An f32 source widened to f64 is exact, so one rounding to f32 is the only rounding.
        (Ty::F32, Value::Float(x)) => bits_of_f32(x as f32),
        (Ty::F32, Value::Signed(x)) => bits_of_f32(x as f32),
        (Ty::F32, Value::Unsigned(x)) => bits_of_f32(x as f32),
        (Ty::F64, Value::Float(x)) => x.to_bits(),
        (Ty::F64, Value::Signed(x)) => (x as f64).to_bits(),
        (Ty::F64, Value::Unsigned(x)) => (x as f64).to_bits(),
        (Ty::S32, Value::Float(x)) => u64::from(x as i32 as u32),
        (Ty::S64, Value::Float(x)) => x as i64 as u64,
        (_, Value::Float(x)) => (x as u64) & to.mask(),
        (_, Value::Signed(x)) => (x as u64) & to.mask(),
        (_, Value::Unsigned(x)) => x & to.mask(),
    }
}

enum Value {
    Float(f64),
    Signed(i64),
    Unsigned(u64),
}
