//! Tests of the reference interpreter: every expected value is computed here, independently,
//! from the input grids with plain Rust arithmetic.

use super::testing::{TestGrid, interior_points, seven_point};
use super::*;
use crate::ir::{CmpOp, KernelBuilder, LogicOp, UnaryOp};
use crate::rng::Rng;
use crate::{ElemType, Stencil};

/// Runs `kernel` on `inputs` and `params`, outputs first filled with `poison`.
fn run_on<T: Element>(
    kernel: &Kernel,
    inputs: &[TestGrid<T>],
    params: &[T],
    poison: T,
) -> Vec<TestGrid<T>> {
    let shape = inputs[0].geom.interior().to_vec();
    let mut outputs: Vec<TestGrid<T>> = kernel
        .outputs()
        .map(|_| TestGrid::filled(&shape, inputs[0].geom.halo, poison))
        .collect();
    let views: Vec<_> = inputs.iter().map(TestGrid::view).collect();
    let mut out_views: Vec<_> = outputs.iter_mut().map(TestGrid::view_mut).collect();
    run(kernel, &views, &mut out_views, params);
    drop(out_views);
    outputs
}

#[test]
fn one_d_three_point_average() {
    let mut b = KernelBuilder::new("avg", 1, ElemType::F64);
    let u = b.input("u");
    let out = b.output("out");
    let l = b.read(u, &[-1]);
    let c = b.read(u, &[0]);
    let r = b.read(u, &[1]);
    let s = b.add(l, c);
    let s = b.add(s, r);
    let third = b.constant(1.0 / 3.0);
    let v = b.mul(s, third);
    b.store(out, v);
    let k = b.finish().unwrap();

    let mut rng = Rng::new(11);
    let u = TestGrid::<f64>::random(&[17], 1, &mut rng);
    let out = run_on(&k, std::slice::from_ref(&u), &[], -7.0);
    for i in 0..17isize {
        let expected = (u.get(&[i - 1]) + u.get(&[i]) + u.get(&[i + 1])) * (1.0 / 3.0);
        assert_eq!(out[0].get(&[i]), expected, "at {i}");
    }
    // Halo points of the output are left alone.
    assert_eq!(out[0].get(&[-1]), -7.0);
    assert_eq!(out[0].get(&[17]), -7.0);
}

#[test]
fn two_d_five_point_with_parameters_in_f32() {
    let mut b = KernelBuilder::new("lap", 2, ElemType::F32);
    let u = b.input("u");
    let out = b.output("out");
    let alpha = b.param("alpha");
    let beta = b.param("beta");
    let reads: Vec<_> = [[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1]]
        .iter()
        .map(|o| b.read(u, o))
        .collect();
    let mut s = reads[1];
    for &r in &reads[2..] {
        s = b.add(s, r);
    }
    let a = b.param_ref(alpha);
    let bt = b.param_ref(beta);
    let centre = b.mul(a, reads[0]);
    let ring = b.mul(bt, s);
    let v = b.sub(ring, centre);
    b.store(out, v);
    let k = b.finish().unwrap();

    let mut rng = Rng::new(5);
    let u = TestGrid::<f32>::random(&[6, 9], 2, &mut rng);
    let (alpha, beta) = (4.0f32, 0.37f32);
    let out = run_on(&k, std::slice::from_ref(&u), &[alpha, beta], f32::NAN);
    for p in interior_points(&[6, 9]) {
        let (i, j) = (p[0], p[1]);
        let ring =
            u.get(&[i - 1, j]) + u.get(&[i + 1, j]) + u.get(&[i, j - 1]) + u.get(&[i, j + 1]);
        let expected: f32 = beta * ring - alpha * u.get(&[i, j]);
        assert_eq!(out[0].get(&p).to_bits(), expected.to_bits(), "at {p:?}");
    }
}

#[test]
fn f32_kernels_compute_in_f32_not_in_f64() {
    // out = u[0] * u[1] + u[-1]: computed in f32, each operation rounded to f32.
    let mut b = KernelBuilder::new("fma_like", 1, ElemType::F32);
    let u = b.input("u");
    let out = b.output("out");
    let x = b.read(u, &[0]);
    let y = b.read(u, &[1]);
    let z = b.read(u, &[-1]);
    let p = b.mul(x, y);
    let v = b.add(p, z);
    b.store(out, v);
    let k = b.finish().unwrap();
    let mut rng = Rng::new(8);
    let n = 2000;
    let u = TestGrid::<f32>::random(&[n], 1, &mut rng);
    let out = run_on(&k, std::slice::from_ref(&u), &[], f32::NAN);
    let mut differs_from_f64 = 0;
    for i in 0..n as isize {
        let (x, y, z) = (u.get(&[i]), u.get(&[i + 1]), u.get(&[i - 1]));
        let in_f32 = x * y + z;
        let via_f64 = (f64::from(x) * f64::from(y) + f64::from(z)) as f32;
        assert_eq!(out[0].get(&[i]).to_bits(), in_f32.to_bits());
        differs_from_f64 += usize::from(in_f32 != via_f64);
    }
    // The check above can tell the two apart: on random data they differ somewhere.
    assert!(differs_from_f64 > 0);
}

#[test]
fn select_compare_logic_and_not() {
    // out = if (u > v && !(u == 0.25)) || v <= -0.5 { u - v } else { max(u, v) * 2 }
    let mut b = KernelBuilder::new("sel", 2, ElemType::F64);
    let uf = b.input("u");
    let vf = b.input("v");
    let out = b.output("out");
    let u = b.read(uf, &[0, 0]);
    let v = b.read(vf, &[0, 1]);
    let gt = b.compare(CmpOp::Gt, u, v);
    let quarter = b.constant(0.25);
    let eq = b.compare(CmpOp::Eq, u, quarter);
    let ne = b.not(eq);
    let both = b.logic(LogicOp::And, gt, ne);
    let minus_half = b.constant(-0.5);
    let le = b.compare(CmpOp::Le, v, minus_half);
    let cond = b.logic(LogicOp::Or, both, le);
    let diff = b.sub(u, v);
    let mx = b.binary(BinaryOp::Max, u, v);
    let two = b.constant(2.0);
    let other = b.mul(mx, two);
    let sel = b.select(cond, diff, other);
    b.store(out, sel);
    let k = b.finish().unwrap();

    let mut rng = Rng::new(21);
    let mut ug = TestGrid::<f64>::random(&[7, 8], 1, &mut rng);
    let vg = TestGrid::<f64>::random(&[7, 8], 1, &mut rng);
    // Make the `== 0.25` branch reachable at one point.
    let at = ug.geom.index(&[3, 3]);
    ug.data[at] = 0.25;
    let inputs = [ug, vg];
    let out = run_on(&k, &inputs, &[], f64::NAN);
    let [ug, vg] = &inputs;
    let mut took = [0usize; 2];
    for p in interior_points(&[7, 8]) {
        let u = ug.get(&p);
        let v = vg.get(&[p[0], p[1] + 1]);
        let cond = (u > v && u != 0.25) || v <= -0.5;
        let expected = if cond { u - v } else { u.max(v) * 2.0 };
        took[usize::from(cond)] += 1;
        assert_eq!(out[0].get(&p), expected, "at {p:?}");
    }
    assert!(
        took[0] > 0 && took[1] > 0,
        "both branches exercised: {took:?}"
    );
}

#[test]
fn lets_and_several_outputs() {
    // let t = u[-1] + u[1]; let t2 = t * t; a = t2 - u[0]; b = t / 2
    let mut b = KernelBuilder::new("lets", 1, ElemType::F64);
    let u = b.input("u");
    let out_a = b.output("a");
    let out_b = b.output("b");
    let l = b.read(u, &[-1]);
    let r = b.read(u, &[1]);
    let s = b.add(l, r);
    let t = b.let_("t", s);
    let t_ref = b.let_ref(t);
    let sq = b.mul(t_ref, t_ref);
    let t2 = b.let_("t2", sq);
    let t2_ref = b.let_ref(t2);
    let c = b.read(u, &[0]);
    let a = b.sub(t2_ref, c);
    b.store(out_a, a);
    let half = b.constant(2.0);
    let t_again = b.let_ref(t);
    let bv = b.div(t_again, half);
    b.store(out_b, bv);
    let k = b.finish().unwrap();

    let mut rng = Rng::new(3);
    let u = TestGrid::<f64>::random(&[12], 1, &mut rng);
    let out = run_on(&k, std::slice::from_ref(&u), &[], f64::NAN);
    for i in 0..12isize {
        let t = u.get(&[i - 1]) + u.get(&[i + 1]);
        assert_eq!(out[0].get(&[i]), t * t - u.get(&[i]));
        assert_eq!(out[1].get(&[i]), t / 2.0);
    }
}

#[test]
fn a_let_referenced_by_a_node_earlier_in_the_arena_is_read_after_its_definition() {
    // exprs: [%0 = let t, %1 = read u[0], %2 = add %0, %1]; body: let t = %1; store out = %2.
    let mut b = KernelBuilder::new("early_ref", 1, ElemType::F64);
    let u = b.input("u");
    let out = b.output("out");
    let t_ref = b.expr(Expr::Let(crate::ir::LetId::new(0)));
    let x = b.read(u, &[0]);
    let sum = b.add(t_ref, x);
    b.let_("t", x);
    b.store(out, sum);
    let k = b.finish().unwrap();
    let mut rng = Rng::new(4);
    let u = TestGrid::<f64>::random(&[5], 0, &mut rng);
    let out = run_on(&k, std::slice::from_ref(&u), &[], f64::NAN);
    for i in 0..5isize {
        assert_eq!(out[0].get(&[i]), u.get(&[i]) + u.get(&[i]));
    }
}

#[test]
fn math_functions_match_std() {
    let ops = UnaryOp::ALL;
    let mut rng = Rng::new(99);
    let u = TestGrid::<f64>::random(&[9], 0, &mut rng);
    for op in ops {
        for bin in [
            None,
            Some(BinaryOp::Min),
            Some(BinaryOp::Max),
            Some(BinaryOp::Pow),
        ] {
            // out = op(u) or bin(abs(u), 0.5 + u)
            let mut b = KernelBuilder::new("math", 1, ElemType::F64);
            let uf = b.input("u");
            let out = b.output("out");
            let x = b.read(uf, &[0]);
            let v = match bin {
                None => b.unary(op, x),
                Some(bop) => {
                    let a = b.unary(UnaryOp::Abs, x);
                    let half = b.constant(0.5);
                    let y = b.add(half, x);
                    b.binary(bop, a, y)
                }
            };
            b.store(out, v);
            let k = b.finish().unwrap();
            let out = run_on(&k, std::slice::from_ref(&u), &[], f64::NAN);
            for i in 0..9isize {
                let x = u.get(&[i]);
                let expected = match bin {
                    None => match op {
                        UnaryOp::Neg => -x,
                        UnaryOp::Abs => x.abs(),
                        UnaryOp::Sqrt => x.sqrt(),
                        UnaryOp::Exp => x.exp(),
                        UnaryOp::Ln => x.ln(),
                        UnaryOp::Sin => x.sin(),
                        UnaryOp::Cos => x.cos(),
                        UnaryOp::Tan => x.tan(),
                        UnaryOp::Tanh => x.tanh(),
                        UnaryOp::Floor => x.floor(),
                        UnaryOp::Ceil => x.ceil(),
                    },
                    Some(BinaryOp::Min) => x.abs().min(0.5 + x),
                    Some(BinaryOp::Max) => x.abs().max(0.5 + x),
                    Some(_) => x.abs().powf(0.5 + x),
                };
                let got = out[0].get(&[i]);
                assert!(
                    got.to_bits() == expected.to_bits() || (got.is_nan() && expected.is_nan()),
                    "{op:?} {bin:?} at {i}: {got} vs {expected}"
                );
            }
        }
    }
}

#[test]
fn run_job_and_eval_point_agree_with_a_hand_computed_heat_sweep() {
    let k = seven_point(ElemType::F64);
    let stencil = Stencil::<f64>::new(k.clone()).unwrap();
    let mut rng = Rng::new(17);
    let shape = [4, 5, 6];
    let u = TestGrid::<f64>::random(&shape, 1, &mut rng);
    let mut out = TestGrid::<f64>::filled(&shape, 1, f64::NAN);
    let (c0, c1) = (0.4, 0.1);
    {
        let mut job =
            Job::new(&stencil, vec![u.view()], vec![out.view_mut()], vec![c0, c1]).unwrap();
        run_job(&mut job);
    }
    for p in interior_points(&shape) {
        let (i, j, l) = (p[0], p[1], p[2]);
        let expected = c0 * u.get(&[i, j, l])
            + c1 * (u.get(&[i - 1, j, l])
                + u.get(&[i + 1, j, l])
                + u.get(&[i, j - 1, l])
                + u.get(&[i, j + 1, l])
                + u.get(&[i, j, l - 1])
                + u.get(&[i, j, l + 1]));
        assert_eq!(out.get(&p), expected, "at {p:?}");
        assert_eq!(eval_point(&k, &[u.view()], &[c0, c1], &p), vec![expected]);
    }
}

#[test]
#[should_panic(expected = "interp: kernel `heat` takes")]
fn wrong_argument_counts_are_a_broken_invariant() {
    let k = seven_point(ElemType::F64);
    let u = TestGrid::<f64>::filled(&[3, 3, 3], 1, 1.0);
    eval_point(&k, &[u.view()], &[1.0], &[0, 0, 0]);
}

#[test]
fn index_values_and_the_step_number_are_the_point_s_indices_and_the_run_s_step() {
    // out = u[i, j] + 10 i - j * step (f32: the indices and step converted exactly).
    let mut b = KernelBuilder::new("coords", 2, ElemType::F32);
    let u = b.input("u");
    let out = b.output("out");
    let read = b.read(u, &[0, 0]);
    let i = b.index(0);
    let ten = b.constant(10.0);
    let ten_i = b.mul(ten, i);
    let j = b.index(1);
    let step = b.step();
    let j_step = b.mul(j, step);
    let sum = b.add(read, ten_i);
    let value = b.sub(sum, j_step);
    b.store(out, value);
    let kernel = b.finish().unwrap();
    assert!(kernel.reads_indices() && kernel.reads_step());
    let mut rng = Rng::new(3);
    let input = TestGrid::<f32>::random(&[4, 7], 1, &mut rng);
    for step in [0u64, 1, 9] {
        let mut output = TestGrid::filled(&[4, 7], 1, -1.0f32);
        run_at_step(
            &kernel,
            &[input.view()],
            &mut [output.view_mut()],
            &[],
            step,
        );
        for p in interior_points(&[4, 7]) {
            let expected = input.get(&p) + 10.0 * p[0] as f32 - p[1] as f32 * step as f32;
            assert_eq!(output.get(&p), expected, "step {step} at {p:?}");
        }
    }
    // A job's step: 0 unless set.
    let stencil = Stencil::<f32>::new(kernel).unwrap();
    let mut output = TestGrid::filled(&[4, 7], 1, -1.0f32);
    {
        let mut job = Job::new(
            &stencil,
            vec![input.view()],
            vec![output.view_mut()],
            vec![],
        )
        .unwrap();
        assert_eq!(job.step(), 0);
        job.set_step(5);
        run_job(&mut job);
    }
    assert_eq!(output.get(&[3, 6]), input.get(&[3, 6]) + 30.0 - 30.0);
}

/// `out = c * u[i-1] + u[i+1]` (and `u[i+1] - c * u[i-1]`), with fused multiply-add as asked.
fn fused_kernel<T: Element>(fma: bool, subtract: bool) -> Kernel {
    let mut b = KernelBuilder::new("fused", 1, T::ELEM);
    b.fma(fma);
    let u = b.input("u");
    let out = b.output("out");
    let c = b.param("c");
    let (left, right) = (b.read(u, &[-1]), b.read(u, &[1]));
    let c = b.param_ref(c);
    let product = b.mul(c, left);
    let value = if subtract {
        b.sub(right, product)
    } else {
        b.add(product, right)
    };
    b.store(out, value);
    b.finish().unwrap()
}

/// An fma kernel computes each fused node as `mul_add` (one rounding), computed here with
/// the standard library's `mul_add`; on these grids that differs from the two roundings of
/// the plain kernel at some points, so the test tells the two apart.
fn check_fused<T: Element + std::fmt::Debug>(seed: u64) {
    let mut rng = Rng::new(seed);
    let u = TestGrid::<T>::random(&[64], 1, &mut rng);
    let c = T::from_f64(1.0 / 3.0);
    let poison = T::from_f64(-7.25);
    for subtract in [false, true] {
        let fused = run_on(
            &fused_kernel::<T>(true, subtract),
            std::slice::from_ref(&u),
            &[c],
            poison,
        );
        let plain = run_on(
            &fused_kernel::<T>(false, subtract),
            std::slice::from_ref(&u),
            &[c],
            poison,
        );
        let mut differ = 0;
        for p in interior_points(&[64]) {
            let (l, r) = (u.get(&[p[0] - 1]), u.get(&[p[0] + 1]));
            let expect = if subtract {
                (-c).mul_add(l, r)
            } else {
                c.mul_add(l, r)
            };
            let unfused = if subtract { r - c * l } else { c * l + r };
            let got = fused[0].get(&p);
            assert_eq!(
                got.to_f64().to_bits(),
                expect.to_f64().to_bits(),
                "at {p:?}"
            );
            assert_eq!(
                plain[0].get(&p).to_f64().to_bits(),
                unfused.to_f64().to_bits()
            );
            differ += usize::from(got.to_f64().to_bits() != unfused.to_f64().to_bits());
        }
        assert!(differ > 0, "no point where fusing changes the bits");
    }
}

#[test]
fn fused_multiply_add_rounds_once() {
    check_fused::<f64>(31);
    check_fused::<f32>(32);
}

#[test]
fn fused_nodes_are_rejected_without_the_flag() {
    let mut b = KernelBuilder::new("fused", 1, ElemType::F64);
    let u = b.input("u");
    let out = b.output("out");
    let x = b.read(u, &[0]);
    let value = b.fma_node(x, x, x);
    b.store(out, value);
    let errors = b.finish().unwrap_err();
    assert!(
        errors
            .errors
            .iter()
            .any(|e| e.kind == crate::verify::VerifyErrorKind::FmaWithoutFlag),
        "{errors}"
    );
}
