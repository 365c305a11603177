//! Lowering: source text against kernels built by hand through `KernelBuilder`, and verifier
//! errors mapped back to the offending tokens.

use stencil_core::{BinaryOp, CmpOp, ElemType, KernelBuilder, LogicOp, ReduceOp, Role, UnaryOp};

use crate::testing::{lowered, one_error, pipeline};

fn pair(message: &str, text: &str) -> (String, String) {
    (message.to_string(), text.to_string())
}

#[test]
fn the_heat_kernel_lowers_to_the_expected_ir() {
    let kernel = lowered(
        "pub fn heat(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64) {
            out[i, j, k] = c0 * u[i, j, k]
                + c1 * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k]
                      + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1]);
        }",
    );
    let mut b = KernelBuilder::new("heat", 3, ElemType::F64);
    b.index_names(&["i", "j", "k"]);
    let u = b.input("u");
    let out = b.output("out");
    let c0 = b.param("c0");
    let c1 = b.param("c1");
    let c0 = b.param_ref(c0);
    let center = b.read(u, &[0, 0, 0]);
    let scaled = b.mul(c0, center);
    let c1 = b.param_ref(c1);
    let mut sum = b.read(u, &[-1, 0, 0]);
    for offset in [[1, 0, 0], [0, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0, 1]] {
        let read = b.read(u, &offset);
        sum = b.add(sum, read);
    }
    let neighbours = b.mul(c1, sum);
    let value = b.add(scaled, neighbours);
    b.store(out, value);
    assert_eq!(kernel, b.finish().unwrap());
}

#[test]
fn lets_functions_and_selects_lower_in_source_order() {
    let kernel = lowered(
        "fn k(a: &Grid2<f32>, out: &mut Grid2<f32>, s: f32) {
            let d = -(a[i, j + 2] - 1.5) / s;
            let m = if d < 0 && !(d >= s) || d == 2 { sqrt(d) } else { max(d, pow(s, 3)) };
            out[i, j] = select(m != d, abs(m), floor(d));
        }",
    );
    let mut b = KernelBuilder::new("k", 2, ElemType::F32);
    b.index_names(&["i", "j"]);
    let a = b.input("a");
    let out = b.output("out");
    let s = b.param("s");
    // let d = -(a[i, j + 2] - 1.5) / s;
    let read = b.read(a, &[0, 2]);
    let one_half = b.constant(1.5);
    let diff = b.sub(read, one_half);
    let negated = b.neg(diff);
    let s_ref = b.param_ref(s);
    let d_value = b.div(negated, s_ref);
    let d = b.let_("d", d_value);
    // if d < 0 && !(d >= s) || d == 2 { sqrt(d) } else { max(d, pow(s, 3)) }
    let d1 = b.let_ref(d);
    let zero = b.constant(0.0);
    let lt = b.compare(CmpOp::Lt, d1, zero);
    let d2 = b.let_ref(d);
    let s2 = b.param_ref(s);
    let ge = b.compare(CmpOp::Ge, d2, s2);
    let not = b.not(ge);
    let and = b.logic(LogicOp::And, lt, not);
    let d3 = b.let_ref(d);
    let two = b.constant(2.0);
    let eq = b.compare(CmpOp::Eq, d3, two);
    let or = b.logic(LogicOp::Or, and, eq);
    let d4 = b.let_ref(d);
    let root = b.unary(UnaryOp::Sqrt, d4);
    let d5 = b.let_ref(d);
    let s3 = b.param_ref(s);
    let three = b.constant(3.0);
    let power = b.binary(BinaryOp::Pow, s3, three);
    let maximum = b.binary(BinaryOp::Max, d5, power);
    let m_value = b.select(or, root, maximum);
    let m = b.let_("m", m_value);
    // select(m != d, abs(m), floor(d))
    let m1 = b.let_ref(m);
    let d6 = b.let_ref(d);
    let ne = b.compare(CmpOp::Ne, m1, d6);
    let m2 = b.let_ref(m);
    let absolute = b.unary(UnaryOp::Abs, m2);
    let d7 = b.let_ref(d);
    let floored = b.unary(UnaryOp::Floor, d7);
    let value = b.select(ne, absolute, floored);
    b.store(out, value);
    assert_eq!(kernel, b.finish().unwrap());
}

#[test]
fn several_grids_paths_shadowing_and_every_unary_function() {
    let kernel = lowered(
        "fn k(x: &stencil::Grid<f64, 1>, y: &Grid1<f64>, p: &mut Grid1<f64>, q: &mut Grid1<f64>) {
            let t = min(x[i - 8], y[i + 8]);
            let t = exp(ln(sin(cos(tan(tanh(ceil(t)))))));
            q[i] = t;
            p[i] = t * 2;
        }",
    );
    let mut b = KernelBuilder::new("k", 1, ElemType::F64);
    let x = b.input("x");
    let y = b.input("y");
    let p = b.output("p");
    let q = b.output("q");
    let rx = b.read(x, &[-8]);
    let ry = b.read(y, &[8]);
    let minimum = b.binary(BinaryOp::Min, rx, ry);
    let t0 = b.let_("t", minimum);
    let mut value = b.let_ref(t0);
    for op in [
        UnaryOp::Ceil,
        UnaryOp::Tanh,
        UnaryOp::Tan,
        UnaryOp::Cos,
        UnaryOp::Sin,
        UnaryOp::Ln,
        UnaryOp::Exp,
    ] {
        value = b.unary(op, value);
    }
    let t1 = b.let_("t", value);
    let t = b.let_ref(t1);
    b.store(q, t);
    let t = b.let_ref(t1);
    let two = b.constant(2.0);
    let doubled = b.mul(t, two);
    b.store(p, doubled);
    let expected = b.finish().unwrap();
    assert_eq!(kernel, expected);
    assert_eq!(kernel.fields[2].role, Role::Output);
}

#[test]
fn verifier_errors_point_at_the_offending_token() {
    let k3 = |body: &str| format!("fn k(u: &Grid3<f64>, out: &mut Grid3<f64>) {{ {body} }}");
    assert_eq!(
        one_error(&k3("u[i, j, k] = 1.0; out[i, j, k] = 2.0;")),
        pair("`u` is an input and cannot be written", "u[i, j, k]")
    );
    assert_eq!(
        one_error(&k3("out[i, j, k] = out[i, j + 1, k] + u[i, j, k];")),
        pair(
            "`out` is an output: it can be read only at its own point (offset zero), for an \
             in-place update",
            "out[i, j + 1, k]"
        )
    );
    assert_eq!(
        one_error(&k3("out[i, j, k] = u[i, j, k]; let v = out[i, j, k];")),
        pair(
            "`out` is read after this kernel writes it, where a read gives the value from \
             before the sweep: keep the value in a `let` and use that",
            "out[i, j, k]"
        )
    );
    assert_eq!(
        one_error(&k3("out[i, j, k] = u[i, j + 9, k];")),
        pair(
            "offset 9 in dimension 1 exceeds the largest supported radius 8",
            "j + 9"
        )
    );
    assert_eq!(
        one_error(&k3("out[i, j, k] = 1.0; out[i, j, k] = 2.0;")),
        pair("output `out` is written more than once", "out[i, j, k]")
    );
    assert_eq!(
        one_error(
            "fn k(u: &Grid1<f64>, out: &mut Grid1<f64>, v: &mut Grid1<f64>) { out[i] = u[i]; }"
        ),
        pair("output `v` is never written", "v")
    );
    assert_eq!(
        one_error(&k3("")),
        pair("the kernel has no statements", "{  }")
    );
    assert_eq!(
        one_error("fn k(u: &Grid1<f64>, u: &Grid1<f64>, out: &mut Grid1<f64>) { out[i] = u[i]; }"),
        pair("the name `u` is declared twice", "u")
    );
    assert_eq!(
        one_error("fn k(u: &Grid1<f64>, out: &mut Grid1<f32>) { out[i] = u[i]; }"),
        pair(
            "all fields and parameters of a kernel share one element type: expected `f64`, found `f32`",
            "f32"
        )
    );
    assert_eq!(
        one_error("fn k(u: &Grid1<f64>, out: &mut Grid1<f64>, c: f32) { out[i] = u[i] * c; }"),
        pair(
            "all fields and parameters of a kernel share one element type: expected `f64`, found `f32`",
            "f32"
        )
    );
    assert_eq!(
        one_error(
            "fn k(u: &Grid<f64, 5>, out: &mut Grid<f64, 5>) { out[i, j, k, l, m] = u[i, j, k, l, m]; }"
        ),
        pair("a kernel has 1 to 4 dimensions, not 5", "5")
    );
    // Two independent problems: both reported.
    let (_, errors) = pipeline("fn k(c: f64) { }");
    assert_eq!(
        errors,
        [
            pair("the kernel has no statements", "{ }"),
            pair("the kernel declares no output field and no reduction", "k")
        ]
    );
}

#[test]
fn type_errors_point_at_the_operand() {
    let k1 = |body: &str| format!("fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) {{ {body} }}");
    assert_eq!(
        one_error(&k1("out[i] = if u[i] { 1.0 } else { 2.0 };")),
        pair("expected a condition, found a number", "u[i]")
    );
    assert_eq!(
        one_error(&k1("out[i] = (u[i] < 1.0) + 2.0;")),
        pair("expected a number, found a condition", "(u[i] < 1.0)")
    );
    assert_eq!(
        one_error(&k1("out[i] = u[i] > 0.0;")),
        pair("expected a number, found a condition", "u[i] > 0.0")
    );
    let (_, errors) = pipeline(&k1("out[i] = select(1.0 && 2.0, 1.0, 2.0);"));
    let texts: Vec<&str> = errors.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(texts, ["1.0", "2.0"]);
}

#[test]
fn placeholders_do_not_add_verifier_cascades() {
    // The store's target is unknown and the `for` loop is dropped: no "never written" error.
    assert_eq!(
        one_error("fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) { outt[i] = u[i]; }").1,
        "outt"
    );
    assert_eq!(
        one_error(
            "fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) { for x in 0..2 { out[i] = u[i]; } }"
        )
        .1,
        "for"
    );
    // An unknown name in a condition is not also "expected a condition".
    assert_eq!(
        one_error(
            "fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) { out[i] = if q { 1.0 } else { u[i] }; }"
        )
        .1,
        "q"
    );
    // But independent verifier errors are still reported alongside validation errors.
    let (_, errors) =
        pipeline("fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) { out[i] = out[i - 1] + u[i + c]; }");
    let texts: Vec<&str> = errors.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(texts, ["c", "out[i - 1]"]);
}

#[test]
fn else_if_chains_nest_selects_and_braced_dimension_counts_are_accepted() {
    let kernel = lowered(
        "fn clamp(u: &Grid<f64, {1}>, out: &mut Grid1<f64>) {
            out[i] = if u[i] < 0 { 0 } else if u[i] > 1 { 1 } else { u[i] };
        }",
    );
    let mut b = KernelBuilder::new("clamp", 1, ElemType::F64);
    b.index_names(&["i"]);
    let u = b.input("u");
    let out = b.output("out");
    let read = b.read(u, &[0]);
    let zero = b.constant(0.0);
    let below = b.compare(CmpOp::Lt, read, zero);
    let zero = b.constant(0.0);
    let read = b.read(u, &[0]);
    let one = b.constant(1.0);
    let above = b.compare(CmpOp::Gt, read, one);
    let one = b.constant(1.0);
    let read = b.read(u, &[0]);
    let inner = b.select(above, one, read);
    let value = b.select(below, zero, inner);
    b.store(out, value);
    assert_eq!(kernel, b.finish().unwrap());
}

#[test]
fn reductions_lower_to_reduce_statements() {
    let kernel = lowered(
        "fn extremes(u: &Grid2<f32>, lo: &mut Min<f32>, c: f32, hi: &mut Max<f32>, s: &mut Sum<f32>) {
            let v = u[i, j] * c;
            hi = max(hi, v);
            lo = min(u[i, j + 1], lo);
            s += v * v;
        }",
    );
    let mut b = KernelBuilder::new("extremes", 2, ElemType::F32);
    b.index_names(&["i", "j"]);
    let u = b.input("u");
    let c = b.param("c");
    let lo = b.reduction("lo", ReduceOp::Min);
    let hi = b.reduction("hi", ReduceOp::Max);
    let s = b.reduction("s", ReduceOp::Sum);
    let read = b.read(u, &[0, 0]);
    let c = b.param_ref(c);
    let value = b.mul(read, c);
    let v = b.let_("v", value);
    let v1 = b.let_ref(v);
    b.reduce(hi, v1);
    let right = b.read(u, &[0, 1]);
    b.reduce(lo, right);
    let v2 = b.let_ref(v);
    let v3 = b.let_ref(v);
    let square = b.mul(v2, v3);
    b.reduce(s, square);
    assert_eq!(kernel, b.finish().unwrap());
}

#[test]
fn reduction_verifier_errors_point_at_the_reduction() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "fn k(u: &Grid1<f64>, s: &mut Sum<f64>) { s += u[i]; s += 2.0 * u[i]; }",
            "reduction `s` is given a value more than once",
            "s",
        ),
        (
            "fn k(u: &Grid1<f64>, out: &mut Grid1<f64>, s: &mut Sum<f64>) { out[i] = u[i]; }",
            "reduction `s` is never given a value",
            "s",
        ),
        (
            "fn k(u: &Grid1<f64>, out: &mut Grid1<f64>, s: &mut Sum<f64>) { out[i] = u[i]; s += out[i]; }",
            "`out` is read after this kernel writes it, where a read gives the value from \
             before the sweep: keep the value in a `let` and use that",
            "out[i]",
        ),
        (
            "fn k(u: &Grid1<f64>, s: &mut Sum<f64>) { s += u[i] < 1.0; }",
            "expected a number, found a condition",
            "u[i] < 1.0",
        ),
        (
            "fn k(c: f64, s: &mut Sum<f64>) { s += c; }",
            "the kernel declares no grid",
            "k",
        ),
        (
            "fn k(u: &Grid1<f64>, s: &mut Sum<f64>, s: &mut Max<f64>) { s += u[i]; }",
            "the name `s` is declared twice",
            "s",
        ),
    ];
    for &(source, message, text) in cases {
        assert_eq!(one_error(source), pair(message, text), "{source}");
    }
    // The second statement of a twice-given reduction is the one reported.
    let source = "fn k(u: &Grid1<f64>, s: &mut Sum<f64>) { s += u[i]; s += 2.0 * u[i]; }";
    let errors = crate::compile(source).unwrap_err();
    assert_eq!(errors[0].column, source.find("s += 2.0").unwrap() + 1);
}

#[test]
fn a_kernel_with_reductions_cannot_rotate() {
    let source = "#[rotate(out -> u)]\n\
                  fn k(u: &Grid1<f64>, out: &mut Grid1<f64>, s: &mut Sum<f64>) { out[i] = u[i]; s += u[i]; }";
    let errors = crate::compile(source).unwrap_err();
    assert_eq!(
        errors,
        [crate::SourceError {
            line: 1,
            column: 1,
            message: "a kernel with reductions cannot be a time loop; call it once per step"
                .to_string()
        }]
    );
}
