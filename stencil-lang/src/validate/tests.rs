//! Validation errors: one per mistake, at the offending token, through the whole pipeline (so
//! a test also fails if the verifier adds a cascade).

use crate::testing::{one_error, pipeline};

/// A 3-D kernel with one input `u`, one output `out` and a parameter `c`, around `body`.
fn kernel_3d(body: &str) -> String {
    format!("fn k(u: &Grid3<f64>, out: &mut Grid3<f64>, c: f64) {{ {body} }}")
}

fn error_in(body: &str) -> (String, String) {
    one_error(&kernel_3d(body))
}

fn pair(message: &str, text: &str) -> (String, String) {
    (message.to_string(), text.to_string())
}

#[test]
fn non_constant_offsets_point_at_the_offending_part() {
    assert_eq!(
        error_in("out[i, j, k] = u[i + c, j, k];"),
        pair(
            "offset must be an integer constant: write `i + 1` or `i - 1`",
            "c"
        )
    );
    assert_eq!(
        error_in("out[i, j, k] = u[i, j * 2, k];"),
        pair(
            "an index is `j` plus or minus an integer constant, as in `j + 1`",
            "j * 2"
        )
    );
    assert_eq!(
        error_in("out[i, j, k] = u[i, j, k - 1.5];"),
        pair(
            "offset must be an integer constant: write `k + 1` or `k - 1`",
            "1.5"
        )
    );
}

#[test]
fn index_count_names_and_order_are_checked() {
    assert_eq!(
        error_in("out[i, j, k] = u[i, j];"),
        pair(
            "wrong number of indices: `u` is 3-dimensional, as in `u[i, j, k]`",
            "[i, j]"
        )
    );
    assert_eq!(
        error_in("out[i, j, k] = u[i, y + 1, k];"),
        pair("expected index variable `j`, found `y`", "y")
    );
    assert_eq!(
        error_in("out[i, j, k] = u[j, i, k - 1];"),
        pair(
            "index variables must appear in the order `i, j, k`",
            "[j, i, k - 1]"
        )
    );
    // The first store names the index variables, whatever they are called.
    let (kernel, errors) = pipeline(&kernel_3d("out[x, y, z] = u[x + 1, y, z - 2];"));
    assert_eq!(errors, []);
    assert_eq!(kernel.unwrap().index_names, ["x", "y", "z"]);
    assert_eq!(
        error_in("out[i, i, k] = u[i, j, k];"),
        pair(
            "index variable `i` appears twice: each dimension needs its own",
            "i"
        )
    );
}

#[test]
fn outputs_are_written_at_offset_zero() {
    assert_eq!(
        error_in("out[i, j + 1, k] = u[i, j, k];"),
        pair(
            "outputs are written at offset zero: write `out[i, j, k]`",
            "j + 1"
        )
    );
}

#[test]
fn unknown_names_are_reported_once_each() {
    assert_eq!(
        error_in("out[i, j, k] = u[i, j, k] * d;"),
        pair("unknown name `d`", "d")
    );
    assert_eq!(
        error_in("out[i, j, k] = v[i, j, k];"),
        pair("unknown grid `v`", "v")
    );
    assert_eq!(
        error_in("outt[i, j, k] = u[i, j, k];"),
        pair("unknown grid `outt`", "outt")
    );
    let (message, text) = error_in("out[i, j, k] = cbrt(u[i, j, k]);");
    assert!(message.starts_with("unknown function `cbrt`: the kernel language has abs, sqrt,"));
    assert!(
        message.ends_with(
            "pow, select, step, diff, diff2 and laplace, and the helpers defined in this `stencil!` block"
        ),
        "{message}"
    );
    assert_eq!(text, "cbrt");
    // A `let` is in scope after its statement only.
    assert_eq!(
        error_in("out[i, j, k] = a; let a = 1.0;"),
        pair("unknown name `a`", "a")
    );
}

#[test]
fn names_used_as_the_wrong_kind_of_thing() {
    assert_eq!(
        error_in("out[i, j, k] = u;"),
        pair("`u` is a grid: read it at a point, as in `u[i, j, k]`", "u")
    );
    assert_eq!(
        error_in("out[i, j, k] = c[i, j, k];"),
        pair(
            "`c` is a parameter, not a grid: use it without indices",
            "[i, j, k]"
        )
    );
    // An index variable is a value (the point's index); one the kernel lacks is not.
    assert_eq!(
        error_in("out[i, j, k] = u[i, j, k] * l;"),
        pair(
            "unknown name `l`: the kernel is 3-dimensional, its index variables are `i`, `j`, `k`",
            "l"
        )
    );
    assert_eq!(
        error_in("c[i, j, k] = 1.0; out[i, j, k] = c;"),
        pair("`c` is a parameter: only output grids can be written", "c")
    );
    assert_eq!(
        error_in("let j = 2.0; out[i, j, k] = j;"),
        pair(
            "`j` is an index variable: give this temporary another name",
            "j"
        )
    );
}

#[test]
fn function_arity_is_checked() {
    assert_eq!(
        error_in("out[i, j, k] = max(u[i, j, k]);"),
        pair("`max` takes 2 arguments, found 1", "max(u[i, j, k])")
    );
    assert_eq!(
        error_in("out[i, j, k] = sqrt(c, c);"),
        pair("`sqrt` takes 1 argument, found 2", "sqrt(c, c)")
    );
}

#[test]
fn parameter_and_grid_types_are_checked() {
    assert_eq!(
        one_error("fn k(u: &Grid2<f64>, out: &mut Grid2<f64>, c: i32) { out[i, j] = u[i, j]; }"),
        pair(
            "a parameter's type must be `f64`, the kernel's element type",
            "i32"
        )
    );
    assert_eq!(
        one_error("fn k(u: &Grid2<i64>, out: &mut Grid2<f64>) { out[i, j] = u[i, j]; }"),
        pair("a grid's element type must be `f32` or `f64`", "i64")
    );
    assert_eq!(
        one_error("fn k(u: &Grid2<f64>, out: &mut Grid3<f64>) { out[i, j] = u[i, j]; }"),
        pair(
            "`out` is 3-dimensional but the kernel is 2-dimensional (like `u`)",
            "Grid3"
        )
    );
    assert_eq!(
        one_error("fn k(u: &Grid<f64, 2>, out: &mut Grid<f64, 1>) { out[i, j] = u[i, j]; }"),
        pair(
            "`out` is 1-dimensional but the kernel is 2-dimensional (like `u`)",
            "1"
        )
    );
}

#[test]
fn every_independent_mistake_is_reported() {
    let (kernel, errors) = pipeline(&kernel_3d(
        "let a = u[i, j, k] + q; out[i, j, k] = a * u[i + c, j, k] + cbrt(a);",
    ));
    assert!(kernel.is_none());
    let texts: Vec<&str> = errors.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(texts, ["q", "c", "cbrt"]);
}

/// A 2-D kernel with input `u`, output `out`, parameter `c`, reductions `s` (a sum), `lo` (a
/// minimum) and `hi` (a maximum), around `body` (which must give each reduction its value).
fn reducing(body: &str) -> String {
    format!(
        "fn k(u: &Grid2<f64>, out: &mut Grid2<f64>, c: f64, s: &mut Sum<f64>, \
         lo: &mut Min<f64>, hi: &mut Max<f64>) {{ {body} }}"
    )
}

/// The statements that give `s`, `lo` and `hi` their values, except those that `body`
/// gives (by name).
fn rest_of(body: &str) -> String {
    let mut rest = String::from("out[i, j] = u[i, j];");
    for (name, statement) in [
        ("s", " s += u[i, j];"),
        ("lo", " lo = min(lo, u[i, j]);"),
        ("hi", " hi = max(hi, u[i, j]);"),
    ] {
        if !body.contains(&format!("{name} ")) && !body.contains(&format!("({name},")) {
            rest.push_str(statement);
        }
    }
    rest
}

#[test]
fn reductions_are_given_their_values_by_their_own_statement() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "lo += u[i, j];",
            "`lo` is a `Min` reduction: give it its value with `lo = min(lo, value);`",
            "+=",
        ),
        (
            "hi += u[i, j];",
            "`hi` is a `Max` reduction: give it its value with `hi = max(hi, value);`",
            "+=",
        ),
        (
            "s = min(s, u[i, j]);",
            "`s` is a `Sum` reduction: give it its value with `s += value;`",
            "s = min(s, u[i, j])",
        ),
        (
            "lo = max(lo, u[i, j]);",
            "`lo` is a `Min` reduction: give it its value with `lo = min(lo, value);`",
            "max",
        ),
        (
            "hi = u[i, j];",
            "`hi` is a `Max` reduction: give it its value with `hi = max(hi, value);`",
            "u[i, j]",
        ),
        (
            "hi = max(u[i, j], c);",
            "`hi` is a `Max` reduction: give it its value with `hi = max(hi, value);`",
            "max(u[i, j], c)",
        ),
        ("s += s * u[i, j];", "reduction `s` cannot be read", "s"),
        ("hi = max(hi, hi);", "reduction `hi` cannot be read", "hi"),
        (
            "let t = lo + 1.0; lo = min(lo, t);",
            "reduction `lo` cannot be read",
            "lo",
        ),
        ("s += s[i, j];", "reduction `s` cannot be read", "s"),
        (
            "s[i, j] = 1.0; s += u[i, j];",
            "`s` is a reduction, not a grid: give it its value with `s += value;`",
            "s",
        ),
        (
            "out += u[i, j]; s += 1.0;",
            "`out` is a grid, not a reduction: write `out[i, j] = value;`",
            "out",
        ),
        (
            "t += u[i, j]; s += 1.0;",
            "unknown reduction `t`: declare it as a parameter, as in `t: &mut Sum<f64>`",
            "t",
        ),
        (
            "c += u[i, j]; s += 1.0;",
            "`c` is a parameter: only output grids and reductions can be written",
            "c",
        ),
        (
            "t = 1.0; s += 1.0;",
            "unknown name `t`: only a grid point (`out[i, j] = value;`) or a reduction can be assigned",
            "t",
        ),
    ];
    for &(body, message, text) in cases {
        let source = reducing(&format!("{body} {}", rest_of(body)));
        assert_eq!(one_error(&source), pair(message, text), "{body}");
    }
}

#[test]
fn either_argument_order_gives_a_minimum_or_maximum() {
    let source =
        reducing("out[i, j] = u[i, j]; s += u[i, j]; lo = min(u[i, j] * c, lo); hi = max(hi, c);");
    let (kernel, errors) = pipeline(&source);
    assert_eq!(errors, []);
    assert_eq!(kernel.unwrap().reductions.len(), 3);
}

#[test]
fn reduction_types_are_the_kernels_element_type() {
    assert_eq!(
        one_error("fn k(u: &Grid1<f64>, s: &mut Sum<f32>) { s += u[i]; }"),
        pair(
            "all fields and parameters of a kernel share one element type: expected `f64`, found `f32`",
            "f32"
        )
    );
    assert_eq!(
        one_error("fn k(u: &Grid1<f64>, s: &mut Sum<u8>) { s += u[i]; }"),
        pair(
            "a reduction's element type must be `f64`, the kernel's element type",
            "u8"
        )
    );
    // Passed otherwise than `&mut`: one error, the uses still resolve to the reduction.
    assert_eq!(
        one_error("fn k(u: &Grid1<f64>, s: &Sum<f64>) { s += u[i]; }"),
        pair(
            "a reduction is passed by mutable reference, as in `&mut Sum<f64>`",
            "&Sum<f64>"
        )
    );
}

#[test]
fn a_kernel_without_stores_takes_its_index_variables_from_its_first_read() {
    let (kernel, errors) =
        pipeline("fn k(u: &Grid2<f64>, s: &mut Sum<f64>) { s += u[x, y + 1] * u[x - 1, y]; }");
    assert_eq!(errors, []);
    assert_eq!(kernel.unwrap().index_names, ["x", "y"]);
    assert_eq!(
        one_error("fn k(u: &Grid2<f64>, s: &mut Sum<f64>) { s += u[x, y] * u[i, y]; }"),
        pair("expected index variable `x`, found `i`", "i")
    );
    // Without a read naming them, `i, j, ...`.
    assert_eq!(
        one_error("fn k(u: &Grid2<f64>, s: &mut Sum<f64>) { s += u[i, i]; }"),
        pair("expected index variable `j`, found `i`", "i")
    );
}

/// A staggered 2-D velocity-pressure pair: `vx` (and an input `w`) half a cell after `p`
/// along `i`, `vy` along `j`.
fn staggered(body: &str) -> String {
    format!(
        "fn k(#[stagger(i)] vx: &mut Grid2<f64>, #[stagger(j)] vy: &Grid2<f64>, \
         #[stagger(i)] w: &Grid2<f64>, p: &Grid2<f64>, c: f64) {{ {body} }}"
    )
}

#[test]
fn staggered_reads_and_writes_lower_to_the_stored_points() {
    use crate::testing::lowered;
    // `vx[i + 1/2, j]` is vx's own point (offset 0), `vy[i, j - 1/2]` the point before it
    // along `j` (offset -1), `i + 3/2` offset 1, `i - 3/2` offset -2.
    let staggered_kernel = lowered(&staggered(
        "vx[i + 1/2, j] = vx[i + 1/2, j] + c * (p[i + 1, j] - p[i, j]) \
         + vy[i, j - 1/2] + vy[i, j + 3/2] - w[i - 3/2, j] * w[i + 1/2, j];",
    ));
    let whole = lowered(
        "fn k(vx: &mut Grid2<f64>, vy: &Grid2<f64>, w: &Grid2<f64>, p: &Grid2<f64>, c: f64) { \
         vx[i, j] = vx[i, j] + c * (p[i + 1, j] - p[i, j]) + vy[i, j - 1] + vy[i, j + 1] \
         - w[i - 2, j] * w[i, j]; }",
    );
    assert_eq!(
        stencil_core::hash::structural_hash(&staggered_kernel),
        stencil_core::hash::structural_hash(&whole)
    );
    assert_eq!(
        stencil_core::random::to_macro_source(&staggered_kernel),
        stencil_core::random::to_macro_source(&whole)
    );
}

#[test]
fn staggered_offsets_are_checked_against_the_declaration() {
    assert_eq!(
        one_error(&staggered("vx[i + 1/2, j] = vx[i, j];")),
        pair(
            "`vx` is staggered along `i`: its points sit half a cell off, as in `i + 1/2` or `i - 1/2`",
            "i"
        )
    );
    assert_eq!(
        one_error(&staggered("vx[i + 1/2, j] = p[i + 1/2, j];")),
        pair(
            "`p` is not staggered along `i`: its points are at whole indices, as in `i + 1` \
             (declare `#[stagger(i)]` on a grid whose points sit half a cell off)",
            "i + 1/2"
        )
    );
    assert_eq!(
        one_error(&staggered("vx[i + 1/2, j] = vy[i, j + 1/4];")),
        pair(
            "`vy` is staggered along `j`: the offset is a constant half, as in `j + 1/2` or `j - 3/2`",
            "1/4"
        )
    );
    // A staggered output is written at its own point, `i + 1/2`.
    assert_eq!(
        one_error(&staggered("vx[i - 1/2, j] = p[i, j];")),
        pair(
            "outputs are written at offset zero: write `vx[i + 1/2, j]`",
            "i - 1/2"
        )
    );
}

#[test]
fn stagger_attributes_are_checked() {
    let grid2 = "p: &Grid2<f64>, out: &mut Grid2<f64>";
    assert_eq!(
        one_error(&format!(
            "fn k(#[stagger(x)] {grid2}) {{ out[i, j] = p[i, j]; }}"
        )),
        pair("`x` is not an index variable of this kernel (`i, j`)", "x")
    );
    assert_eq!(
        one_error(&format!(
            "fn k(#[stagger(i, i)] {grid2}) {{ out[i, j] = p[i + 1/2, j]; }}"
        )),
        pair("`i` is staggered twice", "i")
    );
    assert_eq!(
        one_error(&format!(
            "fn k(#[stagger(i)] #[stagger(j)] {grid2}) {{ out[i, j] = p[i + 1/2, j]; }}"
        ))
        .0,
        "`#[stagger(..)]` is given twice; name every staggered index in one attribute"
    );
    assert_eq!(
        one_error(&format!(
            "fn k({grid2}, #[stagger(i)] c: f64) {{ out[i, j] = c * p[i, j]; }}"
        )),
        pair("only a grid can be staggered", "#[stagger(i)]")
    );
    assert_eq!(
        one_error(&format!(
            "fn k(#[inline] {grid2}) {{ out[i, j] = p[i, j]; }}"
        )),
        pair(
            "a kernel parameter takes no attribute but `#[stagger(..)]` (on a grid)",
            "#[inline]"
        )
    );
    assert_eq!(
        one_error(&format!(
            "fn k(#[stagger()] {grid2}) {{ out[i, j] = p[i, j]; }}"
        )),
        pair(
            "name the staggered index variables, as in `#[stagger(i)]` or `#[stagger(i, k)]`",
            "#[stagger()]"
        )
    );
}

#[test]
fn staggered_grids_stay_out_of_helpers_and_alike_in_chains() {
    assert_eq!(
        one_error(&staggered("vx[i + 1/2, j] = laplace(vy, 1.0);")),
        pair(
            "`vy` is staggered: a staggered grid cannot be passed to a helper or an operator; \
             read its points in the kernel, as in `vy[i, j + 1/2]`",
            "vy"
        )
    );
    assert_eq!(
        one_error(
            "#[rotate(out -> u)] fn k(u: &Grid2<f64>, #[stagger(j)] out: &mut Grid2<f64>) \
             { out[i, j + 1/2] = u[i, j + 1]; }"
        ),
        pair(
            "`u` and `out` rotate into each other but are not staggered alike: give them the \
             same `#[stagger(..)]`",
            "u"
        )
    );
}
