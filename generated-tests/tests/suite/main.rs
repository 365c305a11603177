//! The generated and hand-written kernels' tests, one test binary. `cargo test` checks a
//! fixed sample of the generated kernels; `STENCIL_FULL_TESTS=1 cargo test` every one of them
//! (see [`full_tests`]).
//!
//! Run one module with a filter:
//! `cargo test -p stencil-generated-tests --test suite -- generated::`.

mod evaluator;

mod generated;
mod hand_written;
mod source_oracle;

/// Whether this run is the full one: `STENCIL_FULL_TESTS=1` (any value but empty or `0`).
///
/// The quick run (`cargo test`) checks every capability on a fixed, documented sample; the
/// full run takes the whole of each sample (every schedule of a tuning space, every generated
/// kernel, ...). The same binaries serve both: no rebuild.
pub(crate) fn full_tests() -> bool {
    std::env::var_os("STENCIL_FULL_TESTS").is_some_and(|v| !v.is_empty() && v != "0")
}

/// `full` on a full run, else `quick`, saying on standard error what the quick run leaves out.
pub(crate) fn quick_or_full<T>(quick: T, full: T, left_out: &str) -> T {
    if full_tests() {
        full
    } else {
        eprintln!("SKIP (quick run): {left_out}; set STENCIL_FULL_TESTS=1 to run it");
        quick
    }
}

/// The generated kernels of one element type a run checks: every one on a full run; on a quick
/// run every fourth of the list (its first, fifth, ...), which the build draws over both
/// dimensionalities and every order, so each shape class is still met.
pub(crate) fn sampled<T: stencil::Element>(
    kernels: Vec<stencil_generated_tests::Generated<T>>,
) -> Vec<stencil_generated_tests::Generated<T>> {
    let step = quick_or_full(4, 1, "three in four generated kernels");
    kernels.into_iter().step_by(step).collect()
}
