//! [`VerifyConfig`]: how `verify` samples cases and what it holds each value to.

/// How `verify` samples cases.
#[derive(Clone, Debug)]
pub struct VerifyConfig {
    /// Seed of the random grids and parameters (the same seed gives the same cases).
    pub seed: u64,
    /// Interior shapes to try; `None` for the built-in set of tiny, odd and prime shapes
    /// for the kernel's dimension count, plus, on backends whose schedules run on several
    /// threads, one of just over 2^15 points (the CPU backend runs smaller jobs on the
    /// calling thread, so its pool, partitions, barriers and time-loop tiles need it).
    pub shapes: Option<Vec<Vec<usize>>>,
    /// Relative tolerance in units of the element type's epsilon, scaled by
    /// `max(1, max |reference|)` of each output. Used only where neither stricter check
    /// applies: where a backend computes the interpreter's bits
    /// ([`Backend::matches_interpreter_bits`](stencil_core::Backend::matches_interpreter_bits): the CPU backend except the retimed loop),
    /// every value must be those bits (a NaN any NaN); elsewhere, for kernels made only of
    /// `+`, `-`, `*`, negation and `abs` over reads, parameters and constants, each point must
    /// be within `(4 + 2 n) * epsilon * (m + smallest normal)` of the interpreter's value,
    /// where `n` counts the kernel's operations and `m` is the point's magnitude (the kernel
    /// evaluated in `f64` with every constant, parameter and input value replaced by its
    /// absolute value and every subtraction by an addition), which bounds every order of
    /// evaluation, factoring and fused multiply-add of a correct backend. Kernels with other
    /// operations (division, functions, `min`, `max`, `pow`, `select`) on such backends
    /// (the GPU code) are held to this tolerance.
    pub tolerance_eps: f64,
    /// Special-values mode (default `false`): about one input point in six (interior and halo)
    /// holds a special value instead of a uniform one in `[-1, 1]`: NaN, `+inf`, `-inf`, `+0`,
    /// `-0`, the smallest subnormal and its negation, the largest finite value and its
    /// negation, or `1e30` (f32) / `1e300` (f64). The interpreter's semantics are Rust's IEEE
    /// 754 arithmetic, which every backend must share: NaN propagates through arithmetic and
    /// the functions; `min` and `max` return the other operand when one is NaN (IEEE
    /// `minNum`/`maxNum`); every comparison with a NaN is false (`!=` true), so `select` and
    /// `if` take the else branch; subnormals are kept, never flushed to zero; infinities
    /// follow IEEE rules (`inf - inf` is NaN). Where the backend computes the interpreter's
    /// bits every value must be those bits (signed zeros included). Elsewhere (reassociated
    /// or contracted arithmetic, which may overflow where the interpreter's order does not)
    /// only points clear of overflow are held to a value: for kernels of sums and products, a
    /// point a NaN reached must be NaN, and one whose magnitude is at most 2^-20 of the
    /// largest finite value must be within the per-point bound; for other kernels a finite
    /// reference of at most that size must be matched by a finite value within
    /// `tolerance_eps` epsilons of `max(1, |reference|)`. Used by [`verify`](crate::verify())
    /// and [`verify_with`](crate::verify_with()); [`verify_steps`](crate::verify_steps()) ignores it.
    pub special_values: bool,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        VerifyConfig {
            seed: 0x5eed_57e9_c11a,
            shapes: None,
            tolerance_eps: 4096.0,
            special_values: false,
        }
    }
}
