//! UI tests of the `stencil!` macro (trybuild): every mistake in a kernel is exactly one
//! compile error at the offending token, with the message pinned in `tests/ui/<category>/`;
//! the kernels in `tests/ui/pass/` compile, run and match the reference interpreter.
//!
//! Regenerate the expected output with
//! `TRYBUILD=overwrite cargo test --test suite -- compile_fail`, then read every changed
//! `.stderr`.

use std::path::Path;

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    let mut categories: Vec<_> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui"))
            .expect("tests/ui exists")
            .map(|entry| {
                entry
                    .expect("readable tests/ui")
                    .file_name()
                    .into_string()
                    .expect("UTF-8 name")
            })
            .filter(|name| name != "pass")
            .collect();
    categories.sort();
    assert!(
        !categories.is_empty(),
        "no compile-fail categories under tests/ui"
    );
    for category in categories {
        cases.compile_fail(format!("tests/ui/{category}/*.rs"));
    }
    cases.pass("tests/ui/pass/*.rs");
}
