//! Tests of [`compile`](crate::compile) on text: positions of lexing errors, the statement
//! rule, messages that speak of the text, the limits on untrusted text, and memory.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::{SourceError, compile};

/// Held by the tests that allocate much (deep text) or measure memory, so neither disturbs
/// the other's measurement.
static HEAVY: Mutex<()> = Mutex::new(());

/// The single error of `source`, as `line L, column C: message`.
fn one_error(source: &str) -> String {
    let errors = compile(source).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    errors[0].to_string()
}

#[test]
fn a_missing_closing_brace_says_what_is_missing_and_where_it_opened() {
    let source = "fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) {\n    out[i] = u[i];\n";
    assert_eq!(
        one_error(source),
        "line 3, column 1: unclosed `{` opened at line 1, column 44: the text ends before its `}`"
    );
    // A parenthesis left open inside the body is closed by the body's brace.
    let source = "fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) {\n    out[i] = (u[i] + 1.0;\n}";
    assert_eq!(
        one_error(source),
        "line 3, column 1: mismatched `}`: the `(` opened at line 2, column 14 closes with `)`"
    );
    assert_eq!(
        one_error("fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) { out[i] = u[i]; } }"),
        "line 1, column 63: unexpected `}`: nothing is open here"
    );
    // Brackets inside comments and literals do not count.
    assert_eq!(
        one_error("// {\nfn k(u: &Grid1<f64>) { /* ( */ \"unterminated }"),
        "line 2, column 32: unterminated string literal: the text ends before it does"
    );
    assert_eq!(
        one_error("fn k(u: &Grid1<f64>) { /* /* */ }"),
        "line 1, column 24: unterminated block comment `/*`: the text ends before it does"
    );
    // A character that starts no token.
    let error =
        one_error("fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) {\n  out[i] = u[i] \u{1f}+ 1.0;\n}");
    assert!(error.starts_with("line 2, column 17: "), "{error}");
}

#[test]
fn a_statement_without_its_semicolon_is_an_error_at_the_statement() {
    assert_eq!(
        one_error("fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) {\n    out[i] = u[i]\n}"),
        "line 2, column 5: missing `;`: every kernel statement ends with `;`"
    );
    assert_eq!(
        one_error("fn d(x: &Grid1<f64>, s: &mut Sum<f64>) { s += x[i] }"),
        "line 1, column 42: missing `;`: every kernel statement ends with `;`"
    );
    // The macro's front end says the same (one language).
    let (message, text) = crate::testing::one_error(
        "fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) { let a = u[i]; out[i] = a }",
    );
    assert_eq!(
        (message.as_str(), text.as_str()),
        (
            "missing `;`: every kernel statement ends with `;`",
            "out[i] = a"
        )
    );
    // A helper's value is the one expression without `;`.
    assert!(
        compile(
            "fn twice(v) { 2.0 * v }\nfn k(u: &Grid1<f64>, out: &mut Grid1<f64>) { out[i] = twice(u[i]); }"
        )
        .is_ok()
    );
}

#[test]
fn an_unknown_function_in_text_names_the_text_and_the_nearest_name() {
    let error = one_error(
        "fn lap(u) { u[i - 1] - 2.0 * u[i] + u[i + 1] }\n\
         fn k(u: &Grid1<f64>, out: &mut Grid1<f64>, h: f64) { out[i] = laplce(u, h); }",
    );
    assert!(
        error.starts_with("line 2, column 63: unknown function `laplce` (did you mean `laplace`?): the kernel language has abs,"),
        "{error}"
    );
    assert!(
        error.ends_with("and the helpers defined in the kernel text"),
        "{error}"
    );
    let errors = compile(
        "fn lap(u) { u[i - 1] - 2.0 * u[i] + u[i + 1] }\n\
         fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) { out[i] = lpa(u) + cbrt(u[i]); }",
    )
    .unwrap_err();
    assert!(
        errors[0]
            .message
            .starts_with("unknown function `lpa` (did you mean `lap`?)"),
        "{errors:?}"
    );
    // No name is near `cbrt`: no suggestion.
    assert!(
        errors[1]
            .message
            .starts_with("unknown function `cbrt`: the kernel language"),
        "{errors:?}"
    );
    // The macro names its block, with the same suggestion.
    let (message, text) = crate::testing::one_error(
        "fn k(u: &Grid1<f64>, out: &mut Grid1<f64>, h: f64) { out[i] = laplce(u, h); }",
    );
    assert!(
        message.starts_with("unknown function `laplce` (did you mean `laplace`?)")
            && message.ends_with("and the helpers defined in this `stencil!` block"),
        "{message}"
    );
    assert_eq!(text, "laplce");
    // Inside a helper's body too; and case alone is near.
    let error = one_error(
        "fn f(u) { Sqrt(u[i]) }\nfn k(u: &Grid1<f64>, out: &mut Grid1<f64>) { out[i] = f(u); }",
    );
    assert!(
        error.starts_with("line 1, column 11: unknown function `Sqrt` (did you mean `sqrt`?)")
            && error.ends_with("in the kernel text"),
        "{error}"
    );
}

/// `n` helpers, each calling the one before twice, and a kernel calling the last: the kernel
/// expands to 2^n reads.
fn doubling_chain(n: usize) -> String {
    let mut source = String::from("fn f0(u) { u[i] }\n");
    for k in 1..=n {
        source.push_str(&format!("fn f{k}(u) {{ f{p}(u) + f{p}(u) }}\n", p = k - 1));
    }
    source.push_str(&format!(
        "fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) {{\n    out[i] = f{n}(u);\n}}"
    ));
    source
}

#[test]
fn a_helper_chain_that_doubles_forty_times_is_an_error_in_milliseconds() {
    let source = doubling_chain(40);
    let start = Instant::now();
    let errors = compile(&source).unwrap_err();
    let took = start.elapsed();
    assert_eq!(
        errors,
        [SourceError {
            line: 43,
            column: 14,
            message: format!(
                "inlining `f40` expands the kernel past {} operations: a helper is inlined in full \
                 at every call, so helpers that call others more than once grow exponentially; \
                 call them fewer times",
                crate::validate::MAX_EXPANDED_OPERATIONS
            ),
        }]
    );
    // Milliseconds in an optimised build; a generous bound for an unoptimised one on a busy
    // machine (without the limit this never returns).
    assert!(took < Duration::from_secs(5), "took {took:?}");
    // Twelve doublings (4096 reads) and nested helpers of ordinary use still compile.
    let kernel = compile(&doubling_chain(12)).unwrap();
    assert_eq!(kernel.name, "k");
    let nested = "fn lap(w) { w[i-1, j] + w[i+1, j] + w[i, j-1] + w[i, j+1] - 4.0 * w[i, j] }\n\
                  fn bilap(w) { lap(w[i-1, j]) + lap(w[i+1, j]) + lap(w[i, j-1]) + lap(w[i, j+1]) - 4.0 * lap(w) }\n\
                  fn k(u: &Grid2<f64>, out: &mut Grid2<f64>, h: f64) { out[i, j] = bilap(u) + laplace(u, h, 8); }";
    assert!(compile(nested).is_ok());
}

#[test]
fn deep_nesting_within_the_token_limit_compiles_or_fails_without_overflowing_the_stack() {
    let _heavy = HEAVY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let limit = crate::text::MAX_TOKENS;
    // Each form nests once per token (a bracketed group counts one) or two, as deep as the
    // limit allows (the rest of the kernel is under 40 tokens).
    let depth = limit - 40;
    let deep_forms = [
        format!("{}u[i]{}", "(".repeat(depth), ")".repeat(depth)),
        format!("{}u[i]", "-".repeat(depth)),
        format!("{}u[i]", "!".repeat(depth)),
        format!("{}u[i]", "abs(".repeat(depth / 2)) + &")".repeat(depth / 2),
        format!(
            "{}{{ u[i] }}",
            "if 1.0 < 2.0 { 1.0 } else ".repeat(depth / 12)
        ),
        vec!["u[i]"; depth / 5].join(" + "),
        format!("u[i]{}", " as f64".repeat(depth / 2)),
    ];
    for value in deep_forms {
        let source = format!("fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) {{ out[i] = {value}; }}");
        // Ok or Err, quickly; neither a stack overflow (an abort) nor a panic.
        let start = Instant::now();
        let _ = compile(&source);
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{}...: {:?}",
            &value[..20],
            start.elapsed()
        );
    }
    let too_long = format!(
        "fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) {{ out[i] = {}; }}",
        vec!["u[i]"; limit].join(" + ")
    );
    let errors = compile(&too_long).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0]
            .to_string()
            .starts_with("line 1, column 1: the text holds "),
        "{errors:?}"
    );
}

/// Resident memory of this process, in bytes (Linux: `/proc/self/statm`, pages of 4 KiB).
#[cfg(target_os = "linux")]
fn resident_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// proc-macro2 keeps every text it lexes for the life of the lexing thread (the text, and an
/// offset per line): compiling on a thread of its own frees it. Without that, each compile of
/// this 58 KB text (a kernel and a long comment) kept about 67 KB: 400 compiles, 27 MB. `STENCIL_LANG_COMPILES=100000` runs more compiles than the default 400.
#[cfg(target_os = "linux")]
#[test]
fn resident_memory_stays_flat_over_many_compiles() {
    let _heavy = HEAVY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut source = String::new();
    for line in 0..1000 {
        source.push_str(&format!(
            "// {line:4}: a long comment, kept by the lexer as text.......\n"
        ));
    }
    source.push_str(
        "fn lap(w) { w[i-1, j] + w[i+1, j] + w[i, j-1] + w[i, j+1] - 4.0 * w[i, j] }\n\
         fn k(u: &Grid2<f64>, out: &mut Grid2<f64>, c: f64) { out[i, j] = u[i, j] + c * lap(u); }",
    );
    let n: usize = std::env::var("STENCIL_LANG_COMPILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    for _ in 0..20 {
        compile(&source).unwrap();
    }
    let before = resident_bytes();
    let start = Instant::now();
    for _ in 0..n {
        compile(&source).unwrap();
    }
    let after = resident_bytes();
    let grown = after.saturating_sub(before);
    println!(
        "{n} compiles of {} bytes in {:?}: resident {before} -> {after} bytes ({grown} grown)",
        source.len(),
        start.elapsed()
    );
    assert!(
        grown < 8 << 20,
        "resident memory grew by {grown} bytes over {n} compiles"
    );
}

/// Found by fuzzing: an offset past `i64` saturates, and an operator's own offsets then
/// reached `i64::MIN`, whose `abs()` overflowed (a panic in a debug build).
#[test]
fn an_offset_past_i64_shifted_by_an_operator_is_a_radius_error() {
    let source = format!(
        "fn k(u: &Grid2<f64>, out: &mut Grid2<f64>, h: f64) {{\n    out[i, j] = laplace(u[i, j - {}6], h, 6);\n}}",
        "1".repeat(100)
    );
    let errors = compile(&source).unwrap_err();
    for error in &errors {
        assert!(
            error
                .to_string()
                .starts_with("line 2, column 25: offsets compose past the radius limit of 8"),
            "{errors:?}"
        );
    }
}

/// Found by fuzzing: a dimension count that fits in `usize` but not in memory
/// (`Grid16397105843297379213<f64>`) made validation and the IR builder allocate a name per
/// dimension (a capacity overflow).
#[test]
fn a_huge_dimension_count_is_an_error() {
    let errors = compile(
        "fn k(v: &Grid16397105843297379213<f64>, out: &mut Grid3<f64>) { out[i, j, k] = v[i, j, k]; }",
    )
    .unwrap_err();
    assert!(
        errors.iter().any(|e| e.to_string()
            == "line 1, column 10: a kernel has 1 to 4 dimensions, not 16397105843297379213"),
        "{errors:?}"
    );
}
