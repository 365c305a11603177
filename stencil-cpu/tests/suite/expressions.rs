//! Kernels exercising the whole expression language through both paths of the CPU backend:
//! two outputs and `let`s, selects with every comparison and connective, every math
//! function, f32 and f64, and a kernel with no input at all.

#![allow(clippy::needless_range_loop)] // The point loops index like generated code does.

use crate::common;

use common::{Case, check_case};
use stencil_core::row::RowArgs;
use stencil_core::{
    BinaryOp, CmpOp, ElemType, Element, FieldView, Kernel, KernelBuilder, LogicOp, Stencil, UnaryOp,
};
use stencil_cpu::CpuBackend;

/// Two outputs sharing `let`s: `dx`, `dy` central differences of `u` scaled by `h`;
/// `grad = dx + v * dy`, `mag = sqrt(dx * dx + dy * dy)`.
fn gradient_kernel() -> Kernel {
    let mut b = KernelBuilder::new("gradient", 3, ElemType::F64);
    let u = b.input("u");
    let v = b.input("v");
    let grad = b.output("grad");
    let mag = b.output("mag");
    let h = b.param("h");
    let xp = b.read(u, &[1, 0, 0]);
    let xm = b.read(u, &[-1, 0, 0]);
    let yp = b.read(u, &[0, 1, 0]);
    let ym = b.read(u, &[0, -1, 0]);
    let h = b.param_ref(h);
    let ddx = b.sub(xp, xm);
    let dx_value = b.mul(ddx, h);
    let dx = b.let_("dx", dx_value);
    let ddy = b.sub(yp, ym);
    let dy_value = b.mul(ddy, h);
    let dy = b.let_("dy", dy_value);
    let dx1 = b.let_ref(dx);
    let dy1 = b.let_ref(dy);
    let vc = b.read(v, &[0, 0, 0]);
    let v_dy = b.mul(vc, dy1);
    let g = b.add(dx1, v_dy);
    b.store(grad, g);
    let dx2 = b.let_ref(dx);
    let dy2 = b.let_ref(dy);
    let xx = b.mul(dx2, dx2);
    let yy = b.mul(dy2, dy2);
    let s = b.add(xx, yy);
    let m = b.unary(UnaryOp::Sqrt, s);
    b.store(mag, m);
    b.finish().unwrap()
}

fn gradient_rows(args: &RowArgs<'_, f64>, outs: &mut [&mut [f64]]) {
    let n = args.len();
    let xp = args.input(0, [1, 0, 0, 0]);
    let xm = args.input(0, [-1, 0, 0, 0]);
    let yp = args.input(0, [0, 1, 0, 0]);
    let ym = args.input(0, [0, -1, 0, 0]);
    let v = args.input(1, [0, 0, 0, 0]);
    let h = args.param(0);
    let [grad, mag] = outs else {
        panic!("gradient has two outputs")
    };
    let (grad, mag) = (&mut grad[..n], &mut mag[..n]);
    let (xp, xm, yp, ym, v) = (&xp[..n], &xm[..n], &yp[..n], &ym[..n], &v[..n]);
    for x in 0..n {
        let dx = (xp[x] - xm[x]) * h;
        let dy = (yp[x] - ym[x]) * h;
        grad[x] = dx + v[x] * dy;
        mag[x] = (dx * dx + dy * dy).sqrt();
    }
}

#[test]
fn two_outputs_with_lets() {
    let expected = |inputs: &[FieldView<'_, f64>], p: &[f64], at: &[isize]| {
        let u = |d: [isize; 3]| inputs[0].get(&[at[0] + d[0], at[1] + d[1], at[2] + d[2]]);
        let dx = (u([1, 0, 0]) - u([-1, 0, 0])) * p[0];
        let dy = (u([0, 1, 0]) - u([0, -1, 0])) * p[0];
        vec![dx + inputs[1].get(at) * dy, (dx * dx + dy * dy).sqrt()]
    };
    let case = Case {
        stencil: Stencil::with_cpu_rows(gradient_kernel(), gradient_rows).unwrap(),
        input_halos: vec![1, 2],
        output_halos: vec![1, 0],
        input_range: (-2.0, 2.0),
        input_levels: None,
        params: vec![0.5],
        expected: &expected,
    };
    let mut runs = 0;
    for shape in [[1, 1, 1], [4, 3, 17], [11, 2, 5], [2, 9, 1]] {
        runs += check_case(CpuBackend::global(), &case, &shape);
    }
    assert!(runs >= 4 * 2 * 6);
}

/// Selects over every comparison and connective, and every math function, on a 2-D grid:
///
/// ```text
/// x = u[i, j]; y = v[i, j+1]
/// s = if x > 0.5 && !(y < 0.1) { exp(x) * sin(y) } else { ln(abs(x) + 1) / max(y, 0.25) }
/// t = if (x >= y || x == 0) && y != 0.3 && x <= 0.9 { x - y } else { y * 2 }
/// out = s + t + pow(x, 2) + floor(y * 10) - ceil(x * 3) + tanh(x) + cos(y) + tan(x * 0.5)
///       + min(x, y) - (-x) + sqrt(abs(y))
/// ```
fn math_kernel(elem: ElemType) -> Kernel {
    let mut b = KernelBuilder::new("math", 2, elem);
    let u = b.input("u");
    let v = b.input("v");
    let out = b.output("out");
    let x = b.read(u, &[0, 0]);
    let y = b.read(v, &[0, 1]);
    let [
        half,
        tenth,
        one,
        quarter,
        zero,
        three_tenths,
        nine_tenths,
        two,
        ten,
        three,
    ] = [0.5, 0.1, 1.0, 0.25, 0.0, 0.3, 0.9, 2.0, 10.0, 3.0].map(|c| b.constant(c));
    // s
    let x_big = b.compare(CmpOp::Gt, x, half);
    let y_small = b.compare(CmpOp::Lt, y, tenth);
    let y_not_small = b.not(y_small);
    let cond_s = b.logic(LogicOp::And, x_big, y_not_small);
    let ex = b.unary(UnaryOp::Exp, x);
    let sy = b.unary(UnaryOp::Sin, y);
    let hot = b.mul(ex, sy);
    let ax = b.unary(UnaryOp::Abs, x);
    let ax1 = b.add(ax, one);
    let lx = b.unary(UnaryOp::Ln, ax1);
    let my = b.binary(BinaryOp::Max, y, quarter);
    let cold = b.div(lx, my);
    let s_value = b.select(cond_s, hot, cold);
    let s = b.let_("s", s_value);
    // t
    let ge = b.compare(CmpOp::Ge, x, y);
    let eq = b.compare(CmpOp::Eq, x, zero);
    let either = b.logic(LogicOp::Or, ge, eq);
    let ne = b.compare(CmpOp::Ne, y, three_tenths);
    let le = b.compare(CmpOp::Le, x, nine_tenths);
    let c1 = b.logic(LogicOp::And, either, ne);
    let cond_t = b.logic(LogicOp::And, c1, le);
    let diff = b.sub(x, y);
    let twice = b.mul(y, two);
    let t_value = b.select(cond_t, diff, twice);
    let t = b.let_("t", t_value);
    // out
    let s = b.let_ref(s);
    let t = b.let_ref(t);
    let mut acc = b.add(s, t);
    let p = b.binary(BinaryOp::Pow, x, two);
    acc = b.add(acc, p);
    let y10 = b.mul(y, ten);
    let fl = b.unary(UnaryOp::Floor, y10);
    acc = b.add(acc, fl);
    let x3 = b.mul(x, three);
    let ce = b.unary(UnaryOp::Ceil, x3);
    acc = b.sub(acc, ce);
    let th = b.unary(UnaryOp::Tanh, x);
    acc = b.add(acc, th);
    let co = b.unary(UnaryOp::Cos, y);
    acc = b.add(acc, co);
    let xh = b.mul(x, half);
    let ta = b.unary(UnaryOp::Tan, xh);
    acc = b.add(acc, ta);
    let mi = b.binary(BinaryOp::Min, x, y);
    acc = b.add(acc, mi);
    let nx = b.neg(x);
    acc = b.sub(acc, nx);
    let ay = b.unary(UnaryOp::Abs, y);
    let sq = b.unary(UnaryOp::Sqrt, ay);
    acc = b.add(acc, sq);
    b.store(out, acc);
    b.finish().unwrap()
}

/// The math kernel at one point, in the kernel's order of operations.
#[inline(always)]
fn math_point<T: Element>(x: T, y: T) -> T {
    let c = T::from_f64;
    #[allow(clippy::neg_cmp_op_on_partial_ord)] // Spelled as the kernel spells it.
    let s = if x > c(0.5) && !(y < c(0.1)) {
        x.exp() * y.sin()
    } else {
        (x.abs() + c(1.0)).ln() / y.max(c(0.25))
    };
    let t = if (x >= y || x == c(0.0)) && y != c(0.3) && x <= c(0.9) {
        x - y
    } else {
        y * c(2.0)
    };
    // The exponent is opaque to the optimiser, which would otherwise turn `powf(x, 2)` into
    // `x * x`: in f32 that differs from the library's `powf`, which the kernel's `pow` calls,
    // in the last bit for some inputs.
    let square = x.powf(std::hint::black_box(c(2.0)));
    s + t + square + (y * c(10.0)).floor() - (x * c(3.0)).ceil()
        + x.tanh()
        + y.cos()
        + (x * c(0.5)).tan()
        + x.min(y)
        - (-x)
        + y.abs().sqrt()
}

fn math_rows<T: Element>(args: &RowArgs<'_, T>, outs: &mut [&mut [T]]) {
    let n = args.len();
    let x = &args.input(0, [0, 0, 0, 0])[..n];
    let y = &args.input(1, [0, 1, 0, 0])[..n];
    let out = &mut outs[0][..n];
    for i in 0..n {
        out[i] = math_point(x[i], y[i]);
    }
}

/// Runs the math kernel on uniform inputs and on inputs in steps of 0.1 (which make the
/// comparisons with 0, 0.3 and 0.9 hit equality).
fn check_math<T: Element>(elem: ElemType) -> usize {
    let expected = |inputs: &[FieldView<'_, T>], _: &[T], at: &[isize]| {
        vec![math_point(
            inputs[0].get(at),
            inputs[1].get(&[at[0], at[1] + 1]),
        )]
    };
    let mut runs = 0;
    for levels in [None, Some(10)] {
        let case = Case {
            stencil: Stencil::with_cpu_rows(math_kernel(elem), math_rows::<T>).unwrap(),
            input_halos: vec![1, 1],
            output_halos: vec![0],
            input_range: (-1.0, 1.0),
            input_levels: levels,
            params: vec![],
            expected: &expected,
        };
        for shape in [[1, 1], [3, 41], [19, 7], [2, 600]] {
            runs += check_case(CpuBackend::global(), &case, &shape);
        }
    }
    runs
}

#[test]
fn selects_and_math_functions_f64() {
    assert!(check_math::<f64>(ElemType::F64) >= 2 * 4 * 2 * 6);
}

#[test]
fn selects_and_math_functions_f32() {
    assert!(check_math::<f32>(ElemType::F32) >= 2 * 4 * 2 * 6);
}

/// A kernel with no input: `out = 2 p + 1`.
#[test]
fn kernel_without_inputs() {
    let mut b = KernelBuilder::new("fill", 2, ElemType::F64);
    let out = b.output("out");
    let p = b.param("p");
    let two = b.constant(2.0);
    let one = b.constant(1.0);
    let p = b.param_ref(p);
    let twice = b.mul(two, p);
    let value = b.add(twice, one);
    b.store(out, value);
    fn rows(args: &RowArgs<'_, f64>, outs: &mut [&mut [f64]]) {
        let value = 2.0 * args.param(0) + 1.0;
        outs[0][..args.len()].fill(value);
    }
    let expected = |_: &[FieldView<'_, f64>], p: &[f64], _: &[isize]| vec![2.0 * p[0] + 1.0];
    let case = Case {
        stencil: Stencil::with_cpu_rows(b.finish().unwrap(), rows).unwrap(),
        input_halos: vec![],
        output_halos: vec![2],
        input_range: (0.0, 1.0),
        input_levels: None,
        params: vec![-3.75],
        expected: &expected,
    };
    for shape in [[1, 1], [6, 13]] {
        assert!(check_case(CpuBackend::global(), &case, &shape) > 0);
    }
}
