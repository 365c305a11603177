//! Arithmetic passes on the IR, generic over kernels: they analyse what a kernel computes and
//! describe a cheaper way to compute it, for code generators to follow.
//!
//! - [`linear`]: a stored value as a sum of reads times read-free coefficients, with the
//!   reads that share a coefficient factored into one class (Datta et al.'s in-core
//!   reordering, 002_..., section 4), and the partial sums shared by neighbouring points along
//!   the unit-stride dimension (GSTuner's retiming, 003_..., section 2.2.4).
//!
//! Passes never change the [`Kernel`](crate::Kernel); the forms they return reassociate
//! floating-point sums, so code following them agrees with the reference interpreter to
//! rounding, not bit for bit.

pub mod linear;
