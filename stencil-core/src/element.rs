//! Element types of grids and kernels: `f32` and `f64`.
//!
//! [`Element`] is sealed: every backend, the interpreter and the code generators assume exactly
//! these two IEEE types. [`ElemType`] is the same fact as plain data, for the IR.

use std::fmt;

/// The element type of a field or parameter, as data (the IR stores this, not a Rust type).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum ElemType {
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary64.
    F64,
}

impl ElemType {
    /// Size of one element in bytes.
    pub const fn size_bytes(self) -> usize {
        match self {
            ElemType::F32 => 4,
            ElemType::F64 => 8,
        }
    }

    /// The Rust spelling of the type (`"f32"` or `"f64"`).
    pub const fn rust_name(self) -> &'static str {
        match self {
            ElemType::F32 => "f32",
            ElemType::F64 => "f64",
        }
    }

    /// Parses the Rust spelling (`"f32"`, `"f64"`).
    pub fn from_rust_name(name: &str) -> Option<ElemType> {
        match name {
            "f32" => Some(ElemType::F32),
            "f64" => Some(ElemType::F64),
            _ => None,
        }
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.rust_name())
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// A grid element type: `f32` or `f64` (sealed).
///
/// The math methods are the ones the kernel language offers; the interpreter and the CPU
/// backends call them so every path computes with the same functions.
pub trait Element:
    sealed::Sealed
    + Copy
    + Default
    + Send
    + Sync
    + PartialEq
    + PartialOrd
    + fmt::Debug
    + fmt::Display
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + 'static
{
    /// The element type as IR data.
    const ELEM: ElemType;
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// Machine epsilon of the type.
    const EPSILON: Self;
    /// Not-a-number, used to poison outputs in verification.
    const NAN: Self;
    /// Converts from `f64`, rounding to nearest for `f32`.
    fn from_f64(value: f64) -> Self;
    /// Converts to `f64` (exact).
    fn to_f64(self) -> f64;
    /// Absolute value.
    fn abs(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// e^x.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// Tangent.
    fn tan(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// Largest integer not above.
    fn floor(self) -> Self;
    /// Smallest integer not below.
    fn ceil(self) -> Self;
    /// Minimum (IEEE `minNum`: a NaN operand yields the other).
    fn min(self, other: Self) -> Self;
    /// Maximum (IEEE `maxNum`: a NaN operand yields the other).
    fn max(self, other: Self) -> Self;
    /// `self` raised to `other`.
    fn powf(self, other: Self) -> Self;
    /// `self * a + b` rounded once (IEEE 754 `fusedMultiplyAdd`, Rust's `mul_add`): exact
    /// bits on every target; fast only where the target has an FMA instruction (x86-64 needs
    /// the `fma` target feature, else the standard library calls a software routine).
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// Whether the value is NaN.
    fn is_nan(self) -> bool;
}

macro_rules! impl_element {
    ($t:ident, $elem:expr) => {
        impl Element for $t {
            const ELEM: ElemType = $elem;
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const EPSILON: Self = $t::EPSILON;
            const NAN: Self = $t::NAN;
            #[inline(always)]
            fn from_f64(value: f64) -> Self {
                value as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn abs(self) -> Self {
                $t::abs(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                $t::sqrt(self)
            }
            #[inline(always)]
            fn exp(self) -> Self {
                $t::exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                $t::ln(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                $t::sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                $t::cos(self)
            }
            #[inline(always)]
            fn tan(self) -> Self {
                $t::tan(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                $t::tanh(self)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                $t::floor(self)
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                $t::ceil(self)
            }
            #[inline(always)]
            fn min(self, other: Self) -> Self {
                $t::min(self, other)
            }
            #[inline(always)]
            fn max(self, other: Self) -> Self {
                $t::max(self, other)
            }
            #[inline(always)]
            fn powf(self, other: Self) -> Self {
                $t::powf(self, other)
            }
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                $t::mul_add(self, a, b)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                $t::is_nan(self)
            }
        }
    };
}

impl_element!(f32, ElemType::F32);
impl_element!(f64, ElemType::F64);
