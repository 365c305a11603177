//! Kernel source written by stencil-core's renderers, parsed back by the language's own front
//! end: `to_macro_source` of any IR kernel and `random_stencil_source` of a random draw must
//! compile to a kernel that computes the same bits in the reference interpreter and, once
//! lets and negative literals are normalised away by `simplify`, the same computation node
//! for node (equal structural hashes). A renderer that drops parentheses, misprints a
//! constant or a name, or loses a `let` fails here.

use expect_test::expect;
use stencil_core::analysis::radius;
use stencil_core::hash::structural_hash;
use stencil_core::ir::{BinaryOp, CmpOp, ExprId, FieldId, LogicOp, UnaryOp};
use stencil_core::random::{
    RandomStencilConfig, random_stencil, random_stencil_source, to_macro_source,
};
use stencil_core::simplify::simplify;
use stencil_core::{ElemType, Kernel, KernelBuilder};
use stencil_test_support::interp::{run_random, same_bits};

/// `text` (a whole `stencil! { .. }` invocation, as the renderers write it) compiled by
/// stencil-lang.
fn parse(text: &str) -> Kernel {
    let body = text
        .trim()
        .strip_prefix("stencil!")
        .and_then(|rest| rest.trim().strip_prefix('{'))
        .and_then(|rest| rest.strip_suffix('}'))
        .unwrap_or_else(|| panic!("not a `stencil! {{ .. }}` invocation:\n{text}"));
    stencil_lang::compile(body).unwrap_or_else(|errors| {
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        panic!("{}\n{text}", messages.join("\n"))
    })
}

/// Whether `a` and `b` compute the same bits on random data of `shape`.
fn same_results(a: &Kernel, b: &Kernel, shape: &[usize], halo: usize, seed: u64) -> bool {
    match a.elem() {
        ElemType::F32 => same_bits(
            &run_random::<f32>(a, shape, halo, seed),
            &run_random::<f32>(b, shape, halo, seed),
        ),
        ElemType::F64 => same_bits(
            &run_random::<f64>(a, shape, halo, seed),
            &run_random::<f64>(b, shape, halo, seed),
        ),
    }
}

/// Prints `k`, parses the text back, and checks both compute the same bits.
fn round_trip(k: &Kernel) -> Kernel {
    let text = to_macro_source(k);
    let back = parse(&text);
    let halo = radius(k).max() as usize;
    let shape = &[5, 4, 3, 2][..k.n_dims];
    assert!(
        same_results(k, &back, shape, halo, 1),
        "round trip changed results:\n{k}\n{text}\n{back}"
    );
    back
}

/// 200 configurations of the generator: dimensions 1 to 3, orders 1 to 4, both element
/// types, a fifth nonlinear, three densities.
fn configs() -> Vec<RandomStencilConfig> {
    stencil_core::random::spread_configs(200)
}

#[test]
fn the_source_written_from_the_draw_computes_the_kernel_bit_for_bit() {
    let mut products = 0;
    for mut c in configs() {
        c.asymmetric = c.seed % 2 == 1;
        let k = random_stencil(&c);
        let text = random_stencil_source(&c);
        let back = parse(&text);
        products += usize::from(text.contains("] * "));
        let halo = c.order as usize;
        let shape = &[6, 5, 4][..c.n_dims];
        assert!(same_results(&k, &back, shape, halo, c.seed), "{k}\n{text}");
        assert_eq!(
            structural_hash(&simplify(&back)),
            structural_hash(&simplify(&k)),
            "{text}"
        );
    }
    assert!(products > 5, "only {products} kernels with a product term");
}

#[test]
fn small_kernel_snapshot_round_trips() {
    let mut b = KernelBuilder::new("blend", 2, ElemType::F32);
    let u = b.input("u");
    let v = b.input("v");
    let out = b.output("out");
    let c = b.param("c");
    let a = b.read(u, &[-1, 0]);
    let bb = b.read(v, &[0, 2]);
    let cr = b.param_ref(c);
    let diff = b.sub(a, bb);
    let inner = b.sub(bb, cr);
    let nested = b.sub(a, inner); // a - (b - c): parentheses required
    let t = b.let_("t", nested);
    let tr = b.let_ref(t);
    let minus_half = b.constant(-0.5);
    let scaled = b.mul(minus_half, diff);
    let sum = b.add(scaled, tr);
    let neg = b.neg(sum);
    let gt = b.compare(CmpOp::Gt, tr, minus_half);
    let le = b.compare(CmpOp::Le, a, cr);
    let not = b.not(le);
    let cond = b.logic(LogicOp::And, gt, not);
    let root = b.unary(UnaryOp::Sqrt, a);
    let mx = b.binary(BinaryOp::Max, root, bb);
    let sel = b.select(cond, neg, mx);
    let product = b.mul(sel, cr);
    b.store(out, product);
    let k = b.finish().unwrap();
    expect![[r#"
        stencil! {
            pub fn blend(u: &Grid2<f32>, v: &Grid2<f32>, out: &mut Grid2<f32>, c: f32) {
                let t = u[i-1, j] - (v[i, j+2] - c);
                out[i, j] = (if t > -0.5 && !(u[i-1, j] <= c) { -(-0.5 * (u[i-1, j] - v[i, j+2]) + t) } else { max(sqrt(u[i-1, j]), v[i, j+2]) }) * c;
            }
        }
    "#]]
    .assert_eq(&to_macro_source(&k));
    round_trip(&k);
}

/// Left-folded sum of reads of input 0 at `offsets` (fresh read nodes every time).
fn sum_of_reads(b: &mut KernelBuilder, offsets: &[[i32; 3]]) -> ExprId {
    let u = FieldId::new(0);
    let mut sum = b.read(u, &offsets[0]);
    for o in &offsets[1..] {
        let r = b.read(u, o);
        sum = b.add(sum, r);
    }
    sum
}

/// The 3-D star of radius `radius` with constant weights `1 / (r + 1)`.
fn star(radius: i32, elem: ElemType) -> Kernel {
    let mut b = KernelBuilder::new("star", 3, elem);
    let u = b.input("u");
    let out = b.output("out");
    let w0 = b.constant(1.0);
    let centre = b.read(u, &[0, 0, 0]);
    let mut total = b.mul(w0, centre);
    for r in 1..=radius {
        let ring = sum_of_reads(
            &mut b,
            &[
                [-r, 0, 0],
                [r, 0, 0],
                [0, -r, 0],
                [0, r, 0],
                [0, 0, -r],
                [0, 0, r],
            ],
        );
        let w = b.constant(1.0 / f64::from(r + 1));
        let term = b.mul(w, ring);
        total = b.add(total, term);
    }
    b.store(out, total);
    b.finish().unwrap()
}

/// The 27-point box summed twice as separately built copies (`c * S + c * S'`, `S'` with the
/// operands of its first addition swapped): repeated subexpressions in the printed text.
fn twenty_seven_point_repeated(elem: ElemType) -> Kernel {
    let mut offsets = Vec::new();
    for a in -1..=1 {
        for b in -1..=1 {
            for c in -1..=1 {
                offsets.push([a, b, c]);
            }
        }
    }
    let mut b = KernelBuilder::new("box27_repeated", 3, elem);
    b.input("u");
    let out = b.output("out");
    let c = b.param("c");
    let first = sum_of_reads(&mut b, &offsets);
    offsets.swap(0, 1);
    let second = sum_of_reads(&mut b, &offsets);
    let c1 = b.param_ref(c);
    let t1 = b.mul(c1, first);
    let c2 = b.param_ref(c);
    let t2 = b.mul(c2, second);
    let value = b.add(t1, t2);
    b.store(out, value);
    b.finish().unwrap()
}

#[test]
fn random_stencils_round_trip_to_the_same_kernel() {
    for seed in 0..200u64 {
        let n_dims = [2, 3, 1][(seed % 3) as usize];
        let elem = if seed % 2 == 0 {
            ElemType::F64
        } else {
            ElemType::F32
        };
        let mut c = RandomStencilConfig::new(n_dims, 1 + (seed / 3 % 4) as u32, elem, seed);
        c.nonlinear = seed % 4 == 0;
        c.density = 0.3;
        let k = random_stencil(&c);
        let back = round_trip(&k);
        // The same computation, node for node, once lets and negative literals are
        // normalised away.
        assert_eq!(
            structural_hash(&simplify(&back)),
            structural_hash(&simplify(&k)),
            "seed {seed}"
        );
    }
    for k in [
        star(4, ElemType::F32),
        twenty_seven_point_repeated(ElemType::F64),
    ] {
        round_trip(&k);
    }
}

/// Kernels with fused multiply-add print with `#[fma]` and each fused node as `a * b + c`,
/// which compiles back to the same fused nodes: same bits, same simplified structure, and the
/// flag kept (a flag lost would compute the unfused bits and hash differently).
#[test]
fn fused_kernels_round_trip_with_their_attribute() {
    let mut fused_nodes = 0;
    let mut kernels: Vec<Kernel> = configs().iter().take(60).map(random_stencil).collect();
    kernels.push(star(2, ElemType::F64));
    kernels.push(twenty_seven_point_repeated(ElemType::F32));
    for k in kernels {
        let k = stencil_core::passes::contract(&k);
        fused_nodes += k
            .exprs
            .iter()
            .filter(|e| matches!(e, stencil_core::Expr::Fma { .. }))
            .count();
        let text = to_macro_source(&k);
        assert!(text.contains("#[fma]"), "{text}");
        let back = round_trip(&k);
        assert!(back.fma, "{text}");
        assert_eq!(
            structural_hash(&simplify(&back)),
            structural_hash(&simplify(&k)),
            "{text}"
        );
    }
    assert!(fused_nodes > 60, "only {fused_nodes} fused nodes");
}

#[test]
fn shared_subexpressions_keep_the_text_linear() {
    // x_{n+1} = tanh(x_n * x_n + x_n), 40 times: 2^40 leaves if printed as a tree.
    let mut b = KernelBuilder::new("deep", 1, ElemType::F64);
    let u = b.input("u");
    let out = b.output("out");
    let scale = b.constant(0.5);
    let r = b.read(u, &[0]);
    let mut x = b.mul(scale, r);
    for _ in 0..40 {
        let sq = b.mul(x, x);
        let s = b.add(sq, x);
        x = b.unary(UnaryOp::Tanh, s);
    }
    b.store(out, x);
    let k = b.finish().unwrap();
    let text = to_macro_source(&k);
    assert!(text.len() < 40 * 80, "{} bytes", text.len());
    // x_0 and x_1 ..= x_39 are used three times each; x_40 once.
    assert_eq!(text.matches("let ").count(), 40);
    round_trip(&k);
}

#[test]
fn awkward_names_and_constants_still_print_valid_source() {
    let mut b = KernelBuilder::new("my kernel", 2, ElemType::F64);
    b.index_names(&["i", "min"]);
    let u = b.input("type");
    let u2 = b.input("1st");
    let out = b.output("e3");
    let p = b.param("i");
    let x = b.read(u, &[1, -1]);
    let y = b.read(u2, &[0, 0]);
    // Two lets named `t`; the store refers to the first, after the second is defined.
    let t0 = b.let_("t", x);
    let pr = b.param_ref(p);
    let t1 = b.let_("t", pr);
    let r0 = b.let_ref(t0);
    let r1 = b.let_ref(t1);
    let nan = b.constant(f64::NAN);
    let inf = b.constant(f64::INFINITY);
    let ninf = b.constant(f64::NEG_INFINITY);
    let tiny = b.constant(5e-324);
    let big = b.constant(1.7976931348623157e308);
    let neg_zero = b.constant(-0.0);
    let s = b.sub(r0, r1);
    let s = b.add(s, y);
    let m = b.binary(BinaryOp::Min, s, inf);
    let m = b.binary(BinaryOp::Max, m, ninf);
    let lt = b.compare(CmpOp::Lt, m, nan);
    let sel = b.select(lt, tiny, m);
    let neg = b.neg(neg_zero);
    let sum = b.add(sel, neg);
    let big_div = b.div(sum, big);
    let eq = b.compare(CmpOp::Eq, big_div, neg_zero);
    let neg2 = b.neg(big_div);
    let v = b.select(eq, sum, neg2);
    b.store(out, v);
    let k = b.finish().unwrap();
    let text = to_macro_source(&k);
    for expected in [
        "pub fn my_kernel(",
        "type_2: &Grid2<f64>",
        "_1st: &Grid2<f64>",
        "e3: &mut Grid2<f64>",
        "i_2: f64",
        "[i, min_2]",
        "(0.0 / 0.0)",
        "(1.0 / 0.0)",
        "(-1.0 / 0.0)",
        "-(-0.0)",
        "5e-324",
    ] {
        assert!(text.contains(expected), "`{expected}` missing from\n{text}");
    }
    let back = round_trip(&k);
    assert_eq!(
        back.lets.len(),
        k.lets.len() + 3,
        "m, sum and big_div are hoisted"
    );
}

#[test]
fn index_values_and_the_step_round_trip() {
    // out[x, y] = u[x, y] * y + select(x < 2, step, x) in the IR's own index names.
    let mut b = KernelBuilder::new("where", 2, ElemType::F64);
    b.index_names(&["x", "y"]);
    let u = b.input("u");
    let out = b.output("out");
    let read = b.read(u, &[0, 0]);
    let y = b.index(1);
    let scaled = b.mul(read, y);
    let x = b.index(0);
    let two = b.constant(2.0);
    let near = b.compare(CmpOp::Lt, x, two);
    let step = b.step();
    let picked = b.select(near, step, x);
    let value = b.add(scaled, picked);
    b.store(out, value);
    let k = b.finish().unwrap();
    let text = to_macro_source(&k);
    assert!(text.contains("step()"), "{text}");
    let back = round_trip(&k);
    assert!(back.reads_indices() && back.reads_step());
    assert_eq!(
        structural_hash(&simplify(&back)),
        structural_hash(&simplify(&k))
    );
}
