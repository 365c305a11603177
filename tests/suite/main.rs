//! The facade's integration tests, one test binary (one link of the library, not one per
//! file). Each module was once a test binary of its own; `cargo test` runs them all on a
//! fixed sample, `STENCIL_FULL_TESTS=1 cargo test` on the whole of each sample (see
//! [`full_tests`]). `tests/mpi.rs` stays a binary of its own: it runs under `mpirun`.
//!
//! Run one module with a filter: `cargo test --test suite -- steps::`.

mod common;

mod compile_fail;
mod coords;
mod cpu_schedules;
mod errors;
mod fma;
mod functions;
mod in_place;
mod independent;
mod krylov;
mod output;
mod padding;
mod parse;
mod planted;
mod random_stencils;
mod readme_reductions;
mod reductions;
mod regions;
mod seeds;
mod shifted;
mod special_values;
mod stages;
mod steps;
mod steps_tuning;
mod tuning;
mod tuning_events;
mod winner_check;

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

/// The path libtest gives the test `name` of the module at `module_path` (the module path
/// without the crate's name), for re-running one test in a child process with `--exact`.
pub(crate) fn test_path(module_path: &str, name: &str) -> String {
    match module_path.split_once("::") {
        Some((_, module)) => format!("{module}::{name}"),
        None => name.to_string(),
    }
}

/// Runs the test `name` of the module at `module_path` alone in a child process of this test
/// binary, with the environment variables `vars` set (the role it plays and the tuning cache
/// it shares, in the tests that check the cache across processes); its standard output.
/// Fails the calling test when the child fails.
pub(crate) fn run_child(module_path: &str, name: &str, vars: [(&str, &str); 2]) -> String {
    let exe = std::env::current_exe().expect("test binary");
    let test = test_path(module_path, name);
    let output = std::process::Command::new(exe)
        .args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .envs(vars)
        .output()
        .expect("spawn the child");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "child {vars:?} failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}
