//! Classic stencils (7-point 3-D, 5-point 2-D, 1-D, 4-D) through both paths of the CPU backend
//! and many schedules, against hand-written loops and the reference interpreter.
//!
//! The point loops below are written the way `stencil!` generates them (exact-length slices
//! per read, one indexed loop), and every expectation adds in the kernel's order, so results
//! must be bit-identical.

#![allow(clippy::needless_range_loop)] // The point loops index like generated code does.

use crate::common;

use common::{Case, check_case};
use stencil_core::row::RowArgs;
use stencil_core::{ElemType, Element, FieldView, Kernel, KernelBuilder, Stencil};
use stencil_cpu::CpuBackend;
use stencil_test_support::kernels::heat7;

/// Shapes for 3-D runs: size-1 dimensions, primes, smaller than one tile, and non-dividing.
const SHAPES_3D: [[usize; 3]; 7] = [
    [1, 1, 1],
    [2, 3, 1],
    [1, 17, 5],
    [7, 5, 13],
    [13, 11, 29],
    [3, 1, 37],
    [9, 2, 64],
];

fn heat_rows(args: &RowArgs<'_, f64>, outs: &mut [&mut [f64]]) {
    let n = args.len();
    let c = args.input(0, [0, 0, 0, 0]);
    let xm = args.input(0, [-1, 0, 0, 0]);
    let xp = args.input(0, [1, 0, 0, 0]);
    let ym = args.input(0, [0, -1, 0, 0]);
    let yp = args.input(0, [0, 1, 0, 0]);
    let zm = args.input(0, [0, 0, -1, 0]);
    let zp = args.input(0, [0, 0, 1, 0]);
    heat_points(
        &mut outs[0][..n],
        [c, xm, xp, ym, yp, zm, zp],
        args.param(0),
        args.param(1),
    );
}

#[inline(always)]
fn heat_points(out: &mut [f64], reads: [&[f64]; 7], c0: f64, c1: f64) {
    let n = out.len();
    let [c, xm, xp, ym, yp, zm, zp] = reads.map(|r| &r[..n]);
    for x in 0..n {
        out[x] = c0 * c[x] + c1 * (xm[x] + xp[x] + ym[x] + yp[x] + zm[x] + zp[x]);
    }
}

fn heat_expected(inputs: &[FieldView<'_, f64>], p: &[f64], at: &[isize]) -> Vec<f64> {
    let u = |d: [isize; 3]| inputs[0].get(&[at[0] + d[0], at[1] + d[1], at[2] + d[2]]);
    let sum =
        u([-1, 0, 0]) + u([1, 0, 0]) + u([0, -1, 0]) + u([0, 1, 0]) + u([0, 0, -1]) + u([0, 0, 1]);
    vec![p[0] * u([0, 0, 0]) + p[1] * sum]
}

#[test]
fn seven_point_3d_f64_on_odd_shapes_and_halos() {
    let stencil = Stencil::with_cpu_rows(heat7(ElemType::F64), heat_rows).unwrap();
    let mut runs = 0;
    for (input_halo, output_halo) in [(1, 0), (2, 3), (1, 1)] {
        let case = Case {
            stencil: stencil.clone(),
            input_halos: vec![input_halo],
            output_halos: vec![output_halo],
            input_range: (-1.0, 1.0),
            input_levels: None,
            params: vec![0.4, 0.1],
            expected: &heat_expected,
        };
        for shape in SHAPES_3D {
            runs += check_case(CpuBackend::global(), &case, &shape);
        }
    }
    assert!(
        runs >= 3 * SHAPES_3D.len() * 2 * 6,
        "only {runs} runs checked"
    );
}

#[test]
fn seven_point_on_one_thread_and_on_more_threads_than_cores() {
    let stencil = Stencil::with_cpu_rows(heat7(ElemType::F64), heat_rows).unwrap();
    let case = Case {
        stencil,
        input_halos: vec![1],
        output_halos: vec![2],
        input_range: (0.0, 10.0),
        input_levels: None,
        params: vec![-0.7, 1.3],
        expected: &heat_expected,
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for threads in [1, cores + 2] {
        let backend = CpuBackend::new(threads).unwrap();
        assert_eq!(backend.threads(), threads);
        for shape in [[5, 7, 11], [16, 3, 9]] {
            assert!(check_case(&backend, &case, &shape) > 0);
        }
    }
}

/// `out = u + alpha * (u[i-1] + u[i+1] + u[j-1] + u[j+1] - 4 u)` in f32.
fn five_point_kernel() -> Kernel {
    let mut b = KernelBuilder::new("diffuse", 2, ElemType::F32);
    let u = b.input("u");
    let out = b.output("out");
    let alpha = b.param("alpha");
    let n = b.read(u, &[-1, 0]);
    let s = b.read(u, &[1, 0]);
    let w = b.read(u, &[0, -1]);
    let e = b.read(u, &[0, 1]);
    let c = b.read(u, &[0, 0]);
    let ns = b.add(n, s);
    let nsw = b.add(ns, w);
    let nswe = b.add(nsw, e);
    let four = b.constant(4.0);
    let four_c = b.mul(four, c);
    let lap = b.sub(nswe, four_c);
    let alpha = b.param_ref(alpha);
    let step = b.mul(alpha, lap);
    let value = b.add(c, step);
    b.store(out, value);
    b.finish().unwrap()
}

fn five_point_rows(args: &RowArgs<'_, f32>, outs: &mut [&mut [f32]]) {
    let n = args.len();
    let reads = [
        [-1, 0, 0, 0],
        [1, 0, 0, 0],
        [0, -1, 0, 0],
        [0, 1, 0, 0],
        [0, 0, 0, 0],
    ]
    .map(|offset| args.input(0, offset));
    five_point_points(&mut outs[0][..n], reads, args.param(0));
}

#[inline(always)]
fn five_point_points(out: &mut [f32], reads: [&[f32]; 5], alpha: f32) {
    let n = out.len();
    let [up, down, left, right, c] = reads.map(|r| &r[..n]);
    for x in 0..n {
        out[x] = c[x] + alpha * (up[x] + down[x] + left[x] + right[x] - 4.0 * c[x]);
    }
}

fn five_point_expected(inputs: &[FieldView<'_, f32>], p: &[f32], at: &[isize]) -> Vec<f32> {
    let u = |di: isize, dj: isize| inputs[0].get(&[at[0] + di, at[1] + dj]);
    let lap = u(-1, 0) + u(1, 0) + u(0, -1) + u(0, 1) - 4.0 * u(0, 0);
    vec![u(0, 0) + p[0] * lap]
}

#[test]
fn five_point_2d_f32() {
    let case = Case {
        stencil: Stencil::with_cpu_rows(five_point_kernel(), five_point_rows).unwrap(),
        input_halos: vec![1],
        output_halos: vec![0],
        input_range: (-3.0, 5.0),
        input_levels: None,
        params: vec![0.2],
        expected: &five_point_expected,
    };
    let mut runs = 0;
    for shape in [
        [1, 1],
        [1, 31],
        [31, 1],
        [2, 2],
        [17, 23],
        [64, 7],
        [5, 130],
    ] {
        runs += check_case(CpuBackend::global(), &case, &shape);
    }
    assert!(runs >= 7 * 2 * 6);
}

/// `out = a (u[-2] + u[2]) + b (u[-1] + u[1]) + 0.5 u`.
fn one_d_kernel() -> Kernel {
    let mut b = KernelBuilder::new("smooth", 1, ElemType::F64);
    let u = b.input("u");
    let out = b.output("out");
    let pa = b.param("a");
    let pb = b.param("b");
    let reads = [-2, 2, -1, 1, 0].map(|o| b.read(u, &[o]));
    let outer = b.add(reads[0], reads[1]);
    let inner = b.add(reads[2], reads[3]);
    let pa = b.param_ref(pa);
    let pb = b.param_ref(pb);
    let t0 = b.mul(pa, outer);
    let t1 = b.mul(pb, inner);
    let half = b.constant(0.5);
    let t2 = b.mul(half, reads[4]);
    let sum = b.add(t0, t1);
    let value = b.add(sum, t2);
    b.store(out, value);
    b.finish().unwrap()
}

fn one_d_rows(args: &RowArgs<'_, f64>, outs: &mut [&mut [f64]]) {
    let n = args.len();
    let reads = [-2, 2, -1, 1, 0].map(|o| args.input(0, [o, 0, 0, 0]));
    one_d_points(&mut outs[0][..n], reads, args.param(0), args.param(1));
}

#[inline(always)]
fn one_d_points(out: &mut [f64], reads: [&[f64]; 5], a: f64, b: f64) {
    let n = out.len();
    let [m2, p2, m1, p1, c] = reads.map(|r| &r[..n]);
    for x in 0..n {
        out[x] = a * (m2[x] + p2[x]) + b * (m1[x] + p1[x]) + 0.5 * c[x];
    }
}

#[test]
fn one_d_radius_two_including_rows_longer_than_a_default_chunk() {
    let expected = |inputs: &[FieldView<'_, f64>], p: &[f64], at: &[isize]| {
        let u = |o: isize| inputs[0].get(&[at[0] + o]);
        vec![p[0] * (u(-2) + u(2)) + p[1] * (u(-1) + u(1)) + 0.5 * u(0)]
    };
    let case = Case {
        stencil: Stencil::with_cpu_rows(one_d_kernel(), one_d_rows).unwrap(),
        input_halos: vec![2],
        output_halos: vec![1],
        input_range: (-1.0, 1.0),
        input_levels: None,
        params: vec![0.125, -0.25],
        expected: &expected,
    };
    let mut runs = 0;
    for n in [1, 2, 3, 5, 97, 4096, 10_007] {
        runs += check_case(CpuBackend::global(), &case, &[n]);
    }
    assert!(runs >= 7 * 2 * 6);
}

/// A 4-D kernel reading along every dimension (generic path only: no point loop).
#[test]
fn four_d_generic() {
    let mut b = KernelBuilder::new("four", 4, ElemType::F64);
    let u = b.input("u");
    let out = b.output("out");
    let w = b.param("w");
    let offsets = [
        [-1, 0, 0, 0],
        [0, 2, 0, 0],
        [0, 0, -1, 0],
        [0, 0, 0, 2],
        [1, -1, 1, -2],
    ];
    let mut sum = b.read(u, &[0, 0, 0, 0]);
    for o in offsets {
        let r = b.read(u, &o);
        sum = b.add(sum, r);
    }
    let w = b.param_ref(w);
    let value = b.mul(w, sum);
    b.store(out, value);
    let expected = move |inputs: &[FieldView<'_, f64>], p: &[f64], at: &[isize]| {
        let u = |o: [isize; 4]| {
            inputs[0].get(&[at[0] + o[0], at[1] + o[1], at[2] + o[2], at[3] + o[3]])
        };
        let mut sum = u([0; 4]);
        for o in offsets {
            sum += u(o.map(|v| v as isize));
        }
        vec![p[0] * sum]
    };
    let case = Case {
        stencil: Stencil::new(b.finish().unwrap()).unwrap(),
        input_halos: vec![2],
        output_halos: vec![0],
        input_range: (-1.0, 1.0),
        input_levels: None,
        params: vec![f64::from_f64(1.0 / 6.0)],
        expected: &expected,
    };
    let mut runs = 0;
    for shape in [[1, 1, 1, 1], [3, 2, 5, 7], [2, 1, 4, 13]] {
        runs += check_case(CpuBackend::global(), &case, &shape);
    }
    assert!(runs > 0);
}
