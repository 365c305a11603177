//! stencil-cuda's integration tests, one test binary. `cargo test` runs every module on a
//! fixed sample (of the tuner's space, of random stencils); `STENCIL_FULL_TESTS=1 cargo test`
//! on the whole of it (see [`full_tests`]), with `ptxas` as `common::ptxas` finds it.
//!
//! Run one module with a filter: `cargo test -p stencil-cuda --test suite -- tuner_space::`.

mod common;

mod cuda_backend;
mod emulator_verify;
mod golden;
mod in_place;
mod ptxas;
mod reductions;
mod tuner_space;

/// Whether this run is the full one: `STENCIL_FULL_TESTS=1` (any value but empty or `0`).
///
/// The quick run (`cargo test`) checks every capability on a fixed, documented sample; the
/// full run takes the whole of each sample (every schedule of a tuning space, every generated
/// kernel, ...). The same binaries serve both: no rebuild.
pub(crate) fn full_tests() -> bool {
    std::env::var_os("STENCIL_FULL_TESTS").is_some_and(|v| !v.is_empty() && v != "0")
}

/// The architectures every generated module is assembled for (and run on, in the emulator).
pub(crate) const ARCHS: [u32; 3] = [70, 80, 90];

/// What item `index` of an exhaustive loop runs over, of `all` (architectures, thread and
/// block orders): all of them on a full run; on a quick run (`full == false`) the one at
/// `index` modulo their number, so that consecutive items rotate through them. Every item
/// (schedule, kernel) still runs, and every one of `all` is exercised.
pub(crate) fn rotated<T: Copy>(all: &[T], index: usize, full: bool) -> Vec<T> {
    if full {
        all.to_vec()
    } else {
        vec![all[index % all.len()]]
    }
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
