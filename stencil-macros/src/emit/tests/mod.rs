//! Emission: expansions parse as Rust, the printed builder calls rebuild the lowered kernel,
//! the printed point loop computes what core's interpreter computes, stubs keep signatures.

mod point_eval;
mod replay;

use proc_macro2::TokenStream;
use stencil_core::rng::Rng;
use stencil_core::view::{FieldView, Geometry};
use stencil_core::{ElemType, Kernel, interp};

use super::tokens::float_literal;
use super::{builder, inner_visibility, plan, point_loop};
use crate::expand::expand;

/// The verified kernel of `source`, which must be valid.
fn lowered(source: &str) -> stencil_core::Kernel {
    stencil_lang::compile(source).unwrap_or_else(|errors| panic!("{source}: {errors:?}"))
}

/// Kernels covering every language feature, each valid.
const KERNELS: &[&str] = &[
    "pub fn heat(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64) {
        out[i, j, k] = c0 * u[i, j, k]
            + c1 * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k]
                  + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1]);
    }",
    "fn features(a: &Grid2<f64>, b: &Grid2<f64>, out: &mut Grid2<f64>, s: f64, unused: f64) {
        let d = -(a[i, j + 2] - 1.5) / s;
        let never_read = b[i - 3, j];
        let m = if d < 0 && !(d >= s) || d == 2 { sqrt(abs(d)) } else { max(d, pow(s, 3)) };
        out[i, j] = select(m != d, exp(min(m, 1)), floor(d) + ceil(b[i, j]) * ln(1 + abs(m)));
    }",
    "pub(crate) fn trig(x: &Grid1<f64>, y: &Grid1<f64>, p: &mut Grid1<f64>, q: &mut Grid1<f64>) {
        let t = sin(x[i - 8]) + cos(y[i + 8]) - tan(x[i]) * tanh(y[i]);
        q[i] = t;
        p[i] = if t <= 0.25 || t > 0.75 { t } else { -t };
        }",
    "fn functions(u: &Grid1<f64>, v: &Grid1<f64>, out: &mut Grid1<f64>, s: f64) {
        let a = abs(u[i]) + 0.5;
        out[i] = min(u[i], v[i]) + max(u[i], v[i]) * 3 + pow(a, v[i]) + sqrt(a) - exp(v[i]) / ln(a + 1)
            + sin(u[i]) * cos(v[i]) - tan(u[i]) + tanh(v[i]) + floor(u[i] * 4) + ceil(v[i] * 4)
            + abs(v[i]) * s - -u[i + 1] / (u[i - 1] - 2);
    }",
    "fn four(u: &Grid<f64, 4>, out: &mut Grid4<f64>) {
        out[i, j, k, l] = u[i, j, k, l - 1] + u[i + 1, j, k, l] - 1e-300 * u[i, j - 2, k + 1, l];
    }",
    "pub fn residual(x: &Grid3<f64>, b: &Grid3<f64>, r: &mut Grid3<f64>, rr: &mut Sum<f64>, h2: f64) {
        let res = b[i,j,k] - (6.0*x[i,j,k] - x[i-1,j,k] - x[i+1,j,k] - x[i,j-1,k] - x[i,j+1,k] - x[i,j,k-1] - x[i,j,k+1]) / h2;
        r[i,j,k] = res;
        rr += res * res;
    }",
    "pub fn dot(x: &Grid1<f64>, y: &Grid1<f64>, s: &mut Sum<f64>) { s += x[i] * y[i]; }",
    "fn extremes(u: &Grid2<f64>, lo: &mut Min<f64>, hi: &mut Max<f64>, out: &mut Grid2<f64>) {
        hi = max(u[i, j + 1], hi);
        out[i, j] = 2 * u[i, j];
        lo = min(lo, u[i - 1, j]);
    }",
];

fn tokens(source: &str) -> TokenStream {
    source.parse().unwrap()
}

#[test]
fn every_expansion_parses_as_rust() {
    for source in KERNELS {
        let expansion = expand(tokens(source));
        let text = expansion.to_string();
        assert!(!text.contains("compile_error"), "{source}: {text}");
        let file: syn::File = syn::parse2(expansion).expect("expansion parses");
        assert_eq!(file.items.len(), 2, "a function and a module");
    }
}

#[test]
fn the_expansion_has_the_contracted_shape() {
    let source = format!("/// One Jacobi sweep.\n{}", KERNELS[0]);
    let file: syn::File = syn::parse2(expand(tokens(&source))).unwrap();
    let (syn::Item::Fn(function), syn::Item::Mod(module)) = (&file.items[0], &file.items[1]) else {
        panic!("a function then a module")
    };
    let signature = quote::quote!(#function).to_string();
    for expected in [
        "# [doc = \" One Jacobi sweep.\"]",
        "pub fn heat < 'g > (u : & 'g :: stencil :: __private :: Grid < f64 , 3 > , out : & 'g mut :: stencil :: __private :: Grid < f64 , 3 > , c0 : f64 , c1 : f64) -> :: stencil :: __private :: Launch < 'g , f64 , 3 >",
        "Launch :: from_macro (heat :: stencil () , :: std :: vec ! [u] , :: std :: vec ! [out] , :: std :: vec ! [c0 , c1] ,)",
    ] {
        assert!(
            signature.contains(expected),
            "missing `{expected}` in {signature}"
        );
    }
    assert_eq!(module.ident, "heat");
    assert!(matches!(module.vis, syn::Visibility::Public(_)));
    let items = &module.content.as_ref().unwrap().1;
    let names: Vec<String> = items
        .iter()
        .map(|item| match item {
            syn::Item::Fn(f) => f.sig.ident.to_string(),
            syn::Item::Struct(s) => s.ident.to_string(),
            other => panic!("unexpected item {other:?}"),
        })
        .collect();
    assert_eq!(
        names,
        [
            "stencil",
            "__run",
            "__run_plane",
            "__run_shifted",
            "__rows_j4",
            "__point_loop_streaming_j4",
            "__point_loop_prefetching_j4",
            "__point_loop_j4",
            "__rows_j2",
            "__point_loop_streaming_j2",
            "__point_loop_prefetching_j2",
            "__point_loop_j2",
            "__rows",
            "__point_loop_streaming",
            "__point_loop_prefetching",
            "__point_loop",
            "Params",
            "with",
        ]
    );
    let module_text = quote::quote!(#module).to_string();
    // One window per input row: u[i-1, j, k] alone, u[i, j, k-1..=k+1] as one span, each
    // located once per run and read row by row.
    for window in [
        "args . row_window (0 , [- 1 , 0 , 0 , 0] , 0) . rows (rows + 1 - 1 , n + 0)",
        "args . row_window (0 , [0 , 0 , 0 , 0] , - 1) . rows (rows + 1 - 1 , n + 2)",
        "w [0] . at (r , n + 2)",
        "w [1] . at (r , n + 0)",
    ] {
        assert!(module_text.contains(window), "{window} in {module_text}");
    }
    // A run's rows go four at a time while the register block allows it and they fit, then
    // two, then one.
    for walk in [
        "if jam >= 4 && r + 4 <= rows",
        "__rows_j4 (args , & w , r , o0_0 , o0_1 , o0_2 , o0_3)",
        "if jam >= 2 && r + 2 <= rows",
        "__rows_j2 (args , & w , r , o0_0 , o0_1)",
        "if r < rows",
        "__rows (args , & w , r , o0)",
    ] {
        assert!(module_text.contains(walk), "{walk} in {module_text}");
    }
    assert!(
        module_text.contains("# [doc ="),
        "the module and `stencil()` are documented"
    );
}

#[test]
fn a_kernel_whose_partial_sums_pay_gets_the_retimed_loop() {
    // Barker's 27-point Jacobi: three partial sums (centre, plane faces, plane corners) of
    // nine loads instead of 27, the plane sums shifted one point either way.
    let source =
        "fn j27(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64, c2: f64, c3: f64) {
        let faces = u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k] + u[i, j+1, k]
            + u[i, j, k-1] + u[i, j, k+1];
        let edges = u[i-1, j-1, k] + u[i-1, j+1, k] + u[i+1, j-1, k] + u[i+1, j+1, k]
            + u[i-1, j, k-1] + u[i-1, j, k+1] + u[i+1, j, k-1] + u[i+1, j, k+1]
            + u[i, j-1, k-1] + u[i, j-1, k+1] + u[i, j+1, k-1] + u[i, j+1, k+1];
        let corners = u[i-1, j-1, k-1] + u[i-1, j-1, k+1] + u[i-1, j+1, k-1] + u[i-1, j+1, k+1]
            + u[i+1, j-1, k-1] + u[i+1, j-1, k+1] + u[i+1, j+1, k-1] + u[i+1, j+1, k+1];
        out[i, j, k] = c0 * u[i, j, k] + c1 * faces + c2 * edges + c3 * corners;
    }";
    let text = expand(tokens(source)).to_string();
    assert!(text.contains("fn __point_loop_retimed"), "{text}");
    assert!(
        text.contains("if __point_loop_retimed (& args . nth_row (r)"),
        "{text}"
    );
    for shift in ["shifted :: < - 1 >", "shifted :: < 1 >"] {
        assert!(text.contains(shift), "missing {shift} in {text}");
    }
    // Nine member windows (the centre's loaded at its displacements), one prefetch window.
    assert_eq!(text.matches(", lo , span)").count(), 10, "{text}");
    // The 7-point stencil's sums are not reused enough: no retimed loop.
    let text = expand(tokens(KERNELS[0])).to_string();
    assert!(!text.contains("__point_loop_retimed"), "{text}");
}

#[test]
fn a_kernel_without_docs_gets_generated_ones() {
    let text = expand(tokens(
        "fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) { out[i] = u[i]; }",
    ))
    .to_string();
    assert!(text.contains("Binds the `k` stencil kernel"), "{text}");
    // A private kernel's module items are visible to the module's parent only.
    assert!(text.contains("pub (super) fn stencil ()"), "{text}");
    let text = expand(tokens(
        "#[must_use] fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) { out[i] = u[i]; }",
    ))
    .to_string();
    assert_eq!(text.matches("must_use").count(), 1, "{text}");
    // Only `Launch` itself is `#[must_use]`, so a forgotten `.run()` is one warning.
    let text = expand(tokens(
        "fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) { out[i] = u[i]; }",
    ))
    .to_string();
    assert!(!text.contains("must_use"), "{text}");
}

#[test]
fn module_items_are_visible_exactly_where_the_module_is() {
    let cases = [
        ("pub", "pub"),
        ("", "pub (super)"),
        ("pub(crate)", "pub (in crate)"),
        ("pub(self)", "pub (super)"),
        ("pub(super)", "pub (in super :: super)"),
        ("pub(in crate::a)", "pub (in crate :: a)"),
        ("pub(in self::a)", "pub (in super :: a)"),
    ];
    for (vis, expected) in cases {
        let vis: syn::Visibility = syn::parse_str(vis).unwrap();
        assert_eq!(inner_visibility(&vis).to_string(), expected);
    }
}

#[test]
fn printed_builder_calls_rebuild_the_kernel_exactly() {
    for source in KERNELS {
        let kernel = lowered(source);
        let rebuilt = replay::replay(builder::build_statements(&kernel));
        assert_eq!(rebuilt, kernel, "{source}");
    }
    // Kernels built by hand with unusual arenas (shared nodes, negative constants) too.
    let mut b = stencil_core::KernelBuilder::new("shared", 1, ElemType::F32);
    let u = b.input("u");
    let out = b.output("out");
    let read = b.read(u, &[-1]);
    let minus = b.constant(-0.1);
    let twice = b.add(read, read);
    let value = b.mul(twice, minus);
    b.store(out, value);
    let kernel = b.finish().unwrap();
    assert_eq!(replay::replay(builder::build_statements(&kernel)), kernel);
}

#[test]
fn replay_order_keeps_arena_and_statement_order() {
    use builder::Step;
    let kernel = lowered(KERNELS[2]);
    let steps = builder::replay_order(&kernel);
    let exprs: Vec<usize> = steps
        .iter()
        .filter_map(|s| {
            if let Step::Expr(e) = s {
                Some(*e)
            } else {
                None
            }
        })
        .collect();
    let stmts: Vec<usize> = steps
        .iter()
        .filter_map(|s| {
            if let Step::Stmt(s) = s {
                Some(*s)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(exprs, (0..kernel.exprs.len()).collect::<Vec<_>>());
    assert_eq!(stmts, (0..kernel.body.len()).collect::<Vec<_>>());
}

/// `kernel` with each reduction turned into an output grid after the others, given the
/// reduction's value: the interpreter's values of those are the values the point loop writes
/// into the reductions' runs.
fn reductions_as_outputs(kernel: &Kernel) -> Kernel {
    let mut as_outputs = kernel.clone();
    let first = as_outputs.fields.len();
    for reduction in std::mem::take(&mut as_outputs.reductions) {
        as_outputs.fields.push(stencil_core::Field {
            name: reduction.name,
            role: stencil_core::Role::Output,
            elem: reduction.elem,
        });
    }
    for statement in &mut as_outputs.body {
        if let stencil_core::Stmt::Reduce { reduction, value } = *statement {
            *statement = stencil_core::Stmt::Store {
                field: stencil_core::FieldId::new(first + reduction.index()),
                value,
            };
        }
    }
    as_outputs
}

/// Compares the printed point loop with core's interpreter at several points of random grids.
/// Kernels with reductions fold their points into blocks (`__point_loop_reducing`), which
/// this point-by-point evaluator does not run; `tests/suite/reductions.rs` checks them bit for
/// bit through the CPU backend.
fn check_point_loop(kernel: &Kernel, random: &mut Rng) {
    if kernel.has_reductions() {
        return;
    }
    let as_outputs = reductions_as_outputs(kernel);
    let n_dims = kernel.n_dims;
    let shape = vec![3; n_dims];
    let geom = Geometry::new(&shape, 8, 8).unwrap();
    let grids: Vec<Vec<f64>> = kernel
        .inputs()
        .map(|_| (0..geom.len).map(|_| random.uniform(-1.0, 1.0)).collect())
        .collect();
    let views: Vec<FieldView<'_, f64>> =
        grids.iter().map(|data| FieldView { geom, data }).collect();
    let rows = point_loop::row_functions(kernel);
    let text = rows.to_string();
    // The one-row loop, then every jammed block the kernel has: row `r` of a block computes
    // the point `r` rows further along the second-innermost dimension.
    let mut loops = vec![(1, "__rows".to_string(), "__point_loop".to_string())];
    for r in stencil_core::JAMMED_ROWS {
        if text.contains(&format!("fn __rows_j{r} ")) {
            loops.push((r, format!("__rows_j{r}"), format!("__point_loop_j{r}")));
        }
    }
    let jammed = loops.len() > 1;
    assert_eq!(
        jammed,
        n_dims >= 2 && !text.contains("__point_loop_retimed"),
        "{}: jammed loops exactly where the kernel has rows and no retimed loop",
        kernel.name
    );
    for (round, point) in (0..24).map(|r| (r, vec![r % 3; n_dims])) {
        let params: Vec<f64> = kernel
            .params
            .iter()
            .map(|_| random.uniform(-1.0, 1.0) * 4.0)
            .collect();
        let point: Vec<isize> = point;
        let read = |input: usize, offset: [isize; 4]| {
            let at: Vec<isize> = point.iter().zip(offset).map(|(p, o)| p + o).collect();
            views[input].get(&at)
        };
        for (rows_in_block, row_fn, loop_fn) in &loops {
            let expected: Vec<f64> = (0..*rows_in_block)
                .flat_map(|r| {
                    let mut at = point.clone();
                    if r > 0 {
                        at[n_dims - 2] += r as isize;
                    }
                    interp::eval_point(&as_outputs, &views, &params, &at)
                })
                .collect();
            let computed =
                point_eval::evaluate(rows.clone(), (row_fn, loop_fn), n_dims, read, &params);
            assert_eq!(computed.len(), expected.len(), "{row_fn}");
            for (c, e) in computed.iter().zip(&expected) {
                assert!(
                    c.to_bits() == e.to_bits() || (c.is_nan() && e.is_nan()),
                    "{c} != {e} in {} {row_fn} (round {round})",
                    kernel.name
                );
            }
        }
    }
}

#[test]
fn the_printed_point_loop_computes_what_the_interpreter_computes() {
    let mut random = Rng::new(0x9e37_79b9_7f4a_7c15);
    for source in KERNELS {
        check_point_loop(&lowered(source), &mut random);
    }
}

#[test]
fn unread_nodes_and_unused_parameters_are_left_out_of_the_loop() {
    let kernel = lowered(KERNELS[1]);
    let plan = plan::LoopPlan::of(&kernel);
    // `never_read` reads b[i - 3, j], which no store needs.
    assert!(!plan.reads.iter().any(|(_, o)| o.get(0) == -3));
    assert_eq!(plan.params, [0], "only `s` is used");
    assert_eq!(plan.n_outputs, 1);
}

#[test]
fn float_literals_round_trip_exactly() {
    let mut random = Rng::new(12345);
    let mut values = vec![
        0.1,
        -0.0,
        1.0,
        1e-300,
        -1.7976931348623157e308,
        5e-324,
        1.0 / 3.0,
    ];
    values.extend((0..200).map(|_| {
        random.uniform(-1.0, 1.0) * 10f64.powi((random.uniform(-1.0, 1.0) * 300.0) as i32)
    }));
    for value in values {
        let text = float_literal(value, ElemType::F64)
            .to_string()
            .replace(' ', "");
        let parsed: f64 = text.trim_end_matches("f64").parse().unwrap();
        assert_eq!(
            parsed.to_bits(),
            value.to_bits(),
            "{value} printed as {text}"
        );
        if !(value as f32).is_finite() {
            continue;
        }
        let text = float_literal(value, ElemType::F32)
            .to_string()
            .replace(' ', "");
        let parsed: f32 = text.trim_end_matches("f32").parse().unwrap();
        assert_eq!(
            parsed.to_bits(),
            (value as f32).to_bits(),
            "{value} printed as {text}"
        );
    }
    assert_eq!(
        float_literal(1e300, ElemType::F32).to_string(),
        ":: core :: primitive :: f32 :: INFINITY"
    );
}

#[test]
fn a_kernel_with_errors_becomes_errors_plus_a_stub() {
    let expansion = expand(tokens(
        "/// Docs.\npub fn bad(u: &Grid2<f64>, out: &mut Grid2<f64>, c: f64) { out[i, j] = u[i + c, j]; }
         fn good(u: &Grid1<f32>, out: &mut Grid1<f32>) { out[i] = u[i]; }",
    ));
    let text = expansion.to_string();
    assert_eq!(text.matches("compile_error").count(), 1, "{text}");
    let file: syn::File = syn::parse2(expansion).unwrap();
    let functions: Vec<String> = file
        .items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Fn(f) => Some(quote::quote!(#f).to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(functions.len(), 2, "the stub and the good kernel");
    let stub = &functions[0];
    assert!(
        stub.contains("pub fn bad < 'g > (_ : & 'g :: stencil :: __private :: Grid < f64 , 2 > , _ : & 'g mut :: stencil :: __private :: Grid < f64 , 2 > , _ : f64) -> :: stencil :: __private :: Launch < 'g , f64 , 2 > { :: core :: unreachable ! () }"),
        "{stub}"
    );
    assert!(stub.contains("Docs."));
    assert!(
        functions[1].contains("from_macro"),
        "the good kernel expands normally"
    );
}

#[test]
fn an_unparsable_invocation_is_one_error() {
    let text = expand(tokens("struct S;")).to_string();
    assert_eq!(text.matches("compile_error").count(), 1, "{text}");
}

#[test]
fn several_kernels_expand_side_by_side() {
    let source = format!("{}\n{}", KERNELS[0], KERNELS[4]);
    let file: syn::File = syn::parse2(expand(tokens(&source))).unwrap();
    let names: Vec<String> = file
        .items
        .iter()
        .map(|item| match item {
            syn::Item::Fn(f) => format!("fn {}", f.sig.ident),
            syn::Item::Mod(m) => format!("mod {}", m.ident),
            other => panic!("unexpected item {other:?}"),
        })
        .collect();
    assert_eq!(names, ["fn heat", "mod heat", "fn four", "mod four"]);
}

#[test]
fn a_stub_keeps_the_declared_grid_types() {
    // `out` is f32 in an f64 kernel: an error, but call sites passing an f32 grid still
    // type-check against the stub, so the user sees only the kernel's error.
    let text = expand(tokens(
        "fn k(u: &Grid1<f64>, out: &mut Grid1<f32>, n: i32) { out[i] = u[i]; }",
    ))
    .to_string();
    assert_eq!(text.matches("compile_error").count(), 2, "{text}");
    assert!(
        text.contains("_ : & 'g mut :: stencil :: __private :: Grid < f32 , 1 > , _ : i32) -> :: stencil :: __private :: Launch < 'g , f64 , 1 >"),
        "{text}"
    );
}

#[test]
fn reductions_are_passed_to_the_launch_and_folded_into_blocks() {
    let file: syn::File = syn::parse2(expand(tokens(KERNELS[5]))).unwrap();
    let (syn::Item::Fn(function), syn::Item::Mod(module)) = (&file.items[0], &file.items[1]) else {
        panic!("a function then a module")
    };
    let signature = quote::quote!(#function).to_string();
    for expected in [
        "r : & 'g mut :: stencil :: __private :: Grid < f64 , 3 > , rr : & 'g mut :: stencil :: __private :: Sum < f64 > , h2 : f64",
        ":: std :: vec ! [r] , :: std :: vec ! [h2] ,) . with_reductions (:: std :: vec ! [rr as & mut dyn :: stencil :: __private :: ReductionTarget < f64 >])",
    ] {
        assert!(
            signature.contains(expected),
            "missing `{expected}` in {signature}"
        );
    }
    let module_text = quote::quote!(#module).to_string();
    for expected in [
        // Rebuilt through the builder.
        "let r0 = b . reduction (\"rr\" , :: stencil :: __private :: ReduceOp :: Sum) ;",
        "b . reduce (r0 ,",
        // Positional in `with`, not a field of `Params`.
        "fn with < 'g > (x : & 'g :: stencil :: __private :: Grid < f64 , 3 > , b : & 'g :: stencil :: __private :: Grid < f64 , 3 > , r : & 'g mut :: stencil :: __private :: Grid < f64 , 3 > , rr : & 'g mut :: stencil :: __private :: Sum < f64 > , __params : Params)",
        // The launch built in the module (no `super::`, which a kernel in a function body
        // could not reach through).
        "Launch :: from_macro (self :: stencil () , :: std :: vec ! [x , b] , :: std :: vec ! [r] , :: std :: vec ! [__params . h2] ,) . with_reductions (:: std :: vec ! [rr as & mut dyn :: stencil :: __private :: ReductionTarget < f64 >])",
        "pub struct Params { # [doc = \" The `h2` parameter.\"] pub h2 : f64 , }",
        // Two output runs: the grid's, then the reduction's block values.
        "let [__out0 , __out1] = outs",
        // Points folded into lanes as they are computed, one value per block.
        "acc0 [l] = acc0 [l] + val0 [l] ;",
        "o1 [index] = :: stencil :: __private :: reduce :: combine_lanes (:: stencil :: __private :: ReduceOp :: Sum , acc0) ;",
    ] {
        assert!(
            module_text.contains(expected),
            "missing `{expected}` in {module_text}"
        );
    }
    assert!(!module_text.contains("stream_line"), "{module_text}");
    // A kernel of reductions only streams nothing.
    let text = expand(tokens(KERNELS[6])).to_string();
    assert!(!text.contains("stream_line"), "{text}");
    assert!(text.contains("with_reductions"), "{text}");
    // Kernels with reductions have no jammed forms: each row folds its own blocks.
    let text = expand(tokens(KERNELS[7])).to_string();
    assert!(!text.contains("__rows_j"), "{text}");
    assert!(text.contains("fn __point_loop_reducing"), "{text}");
}

#[test]
fn a_stub_keeps_the_reduction_parameters() {
    let text = expand(tokens(
        "pub fn k(u: &Grid1<f64>, s: &mut Sum<f64>, m: &mut Max<f32>, c: f64) { s += u[i] + t; m = max(m, u[i]); }",
    ))
    .to_string();
    assert!(text.contains("compile_error"), "{text}");
    for expected in [
        "pub fn k < 'g > (_ : & 'g :: stencil :: __private :: Grid < f64 , 1 > , _ : & 'g mut :: stencil :: __private :: Sum < f64 > , _ : & 'g mut :: stencil :: __private :: Max < f32 > , _ : f64)",
        "fn with < 'g > (_ : & 'g :: stencil :: __private :: Grid < f64 , 1 > , _ : & 'g mut :: stencil :: __private :: Sum < f64 > , _ : & 'g mut :: stencil :: __private :: Max < f32 > , _ : Params)",
    ] {
        assert!(text.contains(expected), "missing `{expected}` in {text}");
    }
}

/// Helpers each calling the one before twice: the macro refuses the kernel's call before
/// inlining anything (inlining until the limit, through the compiler's token bridge, took
/// minutes), with one error and the kernel's stub.
#[test]
fn an_exponential_helper_chain_is_one_error_without_inlining() {
    let mut source = String::from("fn f0(u) { u[i] }\n");
    for k in 1..=40 {
        source.push_str(&format!("fn f{k}(u) {{ f{p}(u) + f{p}(u) }}\n", p = k - 1));
    }
    source.push_str("pub fn blowup(u: &Grid1<f64>, out: &mut Grid1<f64>) { out[i] = f40(u); }");
    let start = std::time::Instant::now();
    let out = expand(tokens(&source)).to_string();
    let took = start.elapsed();
    assert_eq!(out.matches("compile_error").count(), 1, "{out}");
    assert!(
        out.contains("inlining `f40` expands the kernel past 100000 operations"),
        "{out}"
    );
    assert!(out.contains("fn blowup"), "the stub: {out}");
    assert!(
        took < std::time::Duration::from_millis(500),
        "took {took:?}"
    );
}

/// Inside a function body, `super::` names the module around the function, not the body's
/// scope where the kernel's function is: the generated module must reach nothing through it
/// (`with` called `super::kernel(..)`: "cannot find function in module `super`").
#[test]
fn the_generated_module_names_nothing_through_super() {
    for source in [
        KERNELS[0],
        "#[rotate(out -> u)] fn relax(u: &Grid1<f64>, out: &mut Grid1<f64>, c: f64) { out[i] = c * u[i]; }",
        "fn dot(x: &Grid1<f64>, y: &Grid1<f64>, s: &mut Sum<f64>, c: f64) { s += c * x[i] * y[i]; }",
    ] {
        let out = expand(tokens(source)).to_string();
        assert!(!out.contains("compile_error"), "{out}");
        assert!(!out.contains("super ::"), "{out}");
    }
}
