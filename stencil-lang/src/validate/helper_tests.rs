//! Helpers and finite-difference operators: inlining gives the IR of the kernel written out
//! by hand, and every misuse is one error at the offending token.

use stencil_core::printer::print;

use crate::testing::{lowered, one_error, pipeline};

/// Asserts that `with_helpers` lowers to the same IR as `by_hand` (same kernel name).
fn same_ir(with_helpers: &str, by_hand: &str) {
    assert_eq!(print(&lowered(with_helpers)), print(&lowered(by_hand)));
}

const SIGNATURE: &str = "fn k(u: &Grid2<f64>, out: &mut Grid2<f64>, h: f64)";

fn kernel(helpers: &str, body: &str) -> String {
    format!("{helpers} {SIGNATURE} {{ {body} }}")
}

fn pair(message: &str, text: &str) -> (String, String) {
    (message.to_string(), text.to_string())
}

#[test]
fn a_helper_is_inlined_as_if_written_out() {
    let lap = "fn lap(u) { u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j] }";
    same_ir(
        &kernel(lap, "out[i, j] = h * lap(u);"),
        &kernel(
            "",
            "out[i, j] = h * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j]);",
        ),
    );
    // Constants and parameters are substituted; the caller's index names are used.
    same_ir(
        "fn scaled(u, c) { c * u[x, y + 1] } \
         fn k(u: &Grid2<f64>, out: &mut Grid2<f64>, h: f64) { out[x, y] = scaled(u, h) + scaled(u, 2.0); }",
        "fn k(u: &Grid2<f64>, out: &mut Grid2<f64>, h: f64) { out[x, y] = h * u[x, y + 1] + 2.0 * u[x, y + 1]; }",
    );
}

#[test]
fn shifted_grid_arguments_compose_with_the_helpers_offsets() {
    let east = "fn east(u) { u[i + 1, j] }";
    same_ir(
        &kernel(east, "out[i, j] = east(u[i + 2, j - 3]) + east(u);"),
        &kernel("", "out[i, j] = u[i + 3, j - 3] + u[i + 1, j];"),
    );
    // Through a chain of helpers, each adding its own shift.
    same_ir(
        &kernel(
            "fn east(u) { u[i + 1, j] } fn twice(v) { east(v[i + 1, j]) + east(v) }",
            "out[i, j] = twice(u[i, j + 1]);",
        ),
        &kernel("", "out[i, j] = u[i + 2, j + 1] + u[i + 1, j + 1];"),
    );
}

#[test]
fn value_arguments_and_helper_lets_become_lets_of_the_kernel() {
    let source = kernel(
        "fn sq(x) { let y = x; y * y }",
        "let a = 1.0; out[i, j] = sq(u[i, j] + a);",
    );
    let printed = print(&lowered(&source));
    assert!(printed.contains("sq.x"), "{printed}");
    assert!(printed.contains("sq.y"), "{printed}");
}

#[test]
fn finite_difference_operators_expand_to_the_standard_weights() {
    // Second derivative along `j`, order 4: weights -5/2, 4/3, -1/12 (Fornberg's table).
    let printed = print(&lowered(&kernel("", "out[i, j] = diff2(u, j, h, 4);")));
    let body: Vec<&str> = printed.lines().skip(4).map(str::trim).collect();
    assert_eq!(
        body,
        [
            "%0 = const -2.5",
            "%1 = read u[i, j]",
            "%2 = mul %0, %1",
            "%3 = const 1.3333333333333333",
            "%4 = read u[i, j+1]",
            "%5 = read u[i, j-1]",
            "%6 = add %4, %5",
            "%7 = mul %3, %6",
            "%8 = add %2, %7",
            "%9 = const -0.08333333333333333",
            "%10 = read u[i, j+2]",
            "%11 = read u[i, j-2]",
            "%12 = add %10, %11",
            "%13 = mul %9, %12",
            "%14 = add %8, %13",
            "%15 = param h",
            "%16 = param h",
            "%17 = mul %15, %16",
            "%18 = div %14, %17",
            "store out = %18",
        ]
    );
    // First derivative along `i`, default order 2: (u[i+1] - u[i-1]) / 2h.
    same_ir(
        &kernel("", "out[i, j] = diff(u, i, h);"),
        &kernel("", "out[i, j] = 0.5 * (u[i + 1, j] - u[i - 1, j]) / h;"),
    );
    // The Laplacian, order 2: the 5-point stencil over h^2, the centre weight -2 per dimension.
    let printed = print(&lowered(&kernel("", "out[i, j] = laplace(u, 2.0);")));
    let body: Vec<&str> = printed.lines().skip(4).map(str::trim).collect();
    assert_eq!(
        body,
        [
            "%0 = const -4.0",
            "%1 = read u[i, j]",
            "%2 = mul %0, %1",
            "%3 = read u[i+1, j]",
            "%4 = read u[i-1, j]",
            "%5 = add %3, %4",
            "%6 = add %2, %5",
            "%7 = read u[i, j+1]",
            "%8 = read u[i, j-1]",
            "%9 = add %7, %8",
            "%10 = add %6, %9",
            "%11 = const 2.0",
            "%12 = const 2.0",
            "%13 = mul %11, %12",
            "%14 = div %10, %13",
            "store out = %14",
        ]
    );
}

#[test]
fn operators_work_inside_helpers_on_shifted_grids() {
    same_ir(
        &kernel(
            "fn flux(w, dx) { diff(w, i, dx, 2) }",
            "out[i, j] = flux(u[i, j + 1], h);",
        ),
        &kernel(
            "",
            "out[i, j] = 0.5 * (u[i + 1, j + 1] - u[i - 1, j + 1]) / h;",
        ),
    );
}

#[test]
fn recursion_is_one_error_at_the_call_that_closes_the_cycle() {
    assert_eq!(
        one_error(&kernel("fn f(u) { f(u) }", "out[i, j] = f(u);")),
        pair(
            "`f` calls itself: helpers are inlined, so they cannot be recursive",
            "f"
        )
    );
    let (message, _) = one_error(&kernel(
        "fn f(u) { g(u) + 1.0 } fn g(v) { f(v) }",
        "out[i, j] = f(u);",
    ));
    assert_eq!(
        message,
        "`f` calls itself through `g`: helpers are inlined, so they cannot be recursive"
    );
}

#[test]
fn argument_kinds_and_counts_are_checked() {
    let lap = "fn lap(u) { u[i - 1, j] + u[i + 1, j] - 2.0 * u[i, j] }";
    assert_eq!(
        one_error(&kernel(lap, "out[i, j] = lap(h);")),
        pair(
            "`lap` takes a grid as argument 1: `h` is a parameter, not a grid",
            "h"
        )
    );
    assert_eq!(
        one_error(&kernel(lap, "out[i, j] = lap(2.0 * h);")).1,
        "2.0 * h"
    );
    assert_eq!(
        one_error(&kernel("fn twice(x) { 2.0 * x }", "out[i, j] = twice(u);")),
        pair(
            "`twice` takes a value as argument 1: `u` is a grid, read it at a point, as in `u[i, j]`",
            "u"
        )
    );
    assert_eq!(
        one_error(&kernel(lap, "out[i, j] = lap(u, h);")),
        pair("`lap` takes 1 argument, found 2", "lap(u, h)")
    );
    assert_eq!(one_error(&kernel(lap, "out[i, j] = lapp(u);")).1, "lapp");
    // A parameter used both as a grid and as a value.
    assert_eq!(
        one_error(&kernel("fn f(u) { u[i, j] + u }", "out[i, j] = f(u);")).1,
        "u"
    );
}

#[test]
fn operator_misuse_is_reported_at_the_argument() {
    assert_eq!(
        one_error(&kernel("", "out[i, j] = diff2(u, i, h, 3);")),
        pair(
            "the order of `diff2` is 2, 4, 6 or 8 (radius 1 to 4), found 3",
            "3"
        )
    );
    assert_eq!(
        one_error(&kernel("", "out[i, j] = laplace(u, h, 10);")).1,
        "10"
    );
    assert_eq!(
        one_error(&kernel("", "out[i, j] = diff(u, k, h);")),
        pair(
            "the second argument of `diff` is the index variable of a dimension: one of `i`, `j`, as in `diff(u, i, h)`",
            "k"
        )
    );
    assert_eq!(one_error(&kernel("", "out[i, j] = laplace(h, h);")).1, "h");
    assert_eq!(
        one_error(&kernel("", "out[i, j] = diff(u, i);")).1,
        "diff(u, i)"
    );
    // Offsets composed past the radius limit point at the shifted argument.
    assert_eq!(
        one_error(&kernel("", "out[i, j] = laplace(u[i + 5, j], h, 8);")),
        pair(
            "offsets compose past the radius limit of 8: `laplace` of order 8 reads this shifted grid at `[i + 9, j]`",
            "u[i + 5, j]"
        )
    );
    assert_eq!(
        one_error(&kernel(
            "fn e(v) { v[i, j - 4] }",
            "out[i, j] = e(u[i, j - 5]);"
        ))
        .1,
        "u[i, j - 5]"
    );
}

#[test]
fn helper_definitions_are_checked_once() {
    // Two calls, one error: the helper's own mistake is reported where it is written.
    let (kernel_ir, errors) = pipeline(&kernel(
        "fn f(u) { u[i, j] * c }",
        "out[i, j] = f(u) + f(u);",
    ));
    assert!(kernel_ir.is_none());
    assert_eq!(
        errors,
        [pair(
            "unknown name `c`: the helper `f` sees only its parameters and its `let`s",
            "c"
        )]
    );
    assert_eq!(
        one_error(&kernel("fn sqrt(x) { x }", "out[i, j] = u[i, j];")),
        pair(
            "`sqrt` is a built-in function: give the helper another name",
            "sqrt"
        )
    );
    assert_eq!(
        one_error(&kernel(
            "fn f(x) { x } fn f(y) { y }",
            "out[i, j] = u[i, j];"
        ))
        .0,
        "the helper `f` is defined twice"
    );
}

#[test]
fn operators_in_a_kernel_of_unsupported_dimension_report_only_the_dimension_count() {
    let (kernel_ir, errors) = pipeline(
        "fn k(u: &Grid0<f64>, out: &mut Grid0<f64>, h: f64) { out[] = diff(u, k, h) + laplace(u, h); }",
    );
    assert!(kernel_ir.is_none());
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].1, "Grid0");
}

#[test]
fn a_mistake_in_a_helper_body_found_at_each_call_is_reported_once() {
    // The helper's indices are checked against the caller's index variables, per call.
    assert_eq!(
        one_error(&kernel(
            "fn f(w) { w[x, j] }",
            "out[i, j] = f(u) + f(u[i + 1, j]);"
        )),
        pair("expected index variable `i`, found `x`", "x")
    );
}
