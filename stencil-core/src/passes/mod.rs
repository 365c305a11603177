//! Arithmetic passes on the IR, generic over kernels: they analyse what a kernel computes and
//! describe a cheaper way to compute it, for code generators to follow.
//!
//! - [`linear`]: a stored value as a sum of reads times read-free coefficients, with the
//!   reads that share a coefficient factored into one class (Datta et al.'s in-core
//!   reordering, 002_..., section 4), and the partial sums shared by neighbouring points along
//!   the unit-stride dimension (GSTuner's retiming, 003_..., section 2.2.4).
//! - [`contract`](mod@contract): fused multiply-add for kernels that ask for it, the one rule
//!   every evaluator follows; unlike the others it returns a new kernel, which
//!   [`KernelBuilder::finish`](crate::KernelBuilder::finish) applies.
//!
//! The analysing passes never change the [`Kernel`](crate::Kernel); the forms they return
//! reassociate floating-point sums, so code following them agrees with the reference
//! interpreter to rounding, not bit for bit. A fused node is not linear: a kernel with one
//! has no linear form through it.

pub mod contract;
pub mod linear;

pub use contract::contract;
