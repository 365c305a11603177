//! `stencil::krylov`: every kernel verified against the interpreter on random grids under the
//! sampled schedules (the in-place updates on the emulated GPU too), the vector kernels against
//! plain loops, and a conjugate gradient built from them converging on a Poisson problem to its
//! exact discrete solution.

use stencil::krylov::*;
use stencil::prelude::*;
use stencil::verify;
use stencil_test_support::Rng;

fn vector(n: usize, seed: u64) -> Grid1<f64> {
    let mut rng = Rng::new(seed);
    let mut g = Grid1::<f64>::with_halo([n], 0).unwrap();
    g.fill_with(|_| rng.uniform(-1.0, 1.0));
    g
}

#[test]
fn every_kernel_verifies() {
    verify(dot::stencil()).unwrap();
    verify(norm2_squared::stencil()).unwrap();
    verify(scale::stencil()).unwrap();
    verify(axpy::stencil()).unwrap();
    verify(aypx::stencil()).unwrap();
    verify(waxpy::stencil()).unwrap();
    verify(maxpy3::stencil()).unwrap();
    verify(dot_f32::stencil()).unwrap();
    verify(norm2_squared_f32::stencil()).unwrap();
    verify(scale_f32::stencil()).unwrap();
    verify(axpy_f32::stencil()).unwrap();
    verify(aypx_f32::stencil()).unwrap();
    verify(waxpy_f32::stencil()).unwrap();
    verify(maxpy3_f32::stencil()).unwrap();
    verify(dot_3d::stencil()).unwrap();
    verify(norm2_squared_3d::stencil()).unwrap();
    verify(waxpy_3d::stencil()).unwrap();
    verify(axpy_3d::stencil()).unwrap();
    verify(aypx_3d::stencil()).unwrap();
    verify(poisson_apply_dot::stencil()).unwrap();
    verify(residual_update_norm::stencil()).unwrap();
    verify(update_residual::stencil()).unwrap();
    verify(update_residual_jacobi::stencil()).unwrap();
}

#[test]
fn in_place_kernels_verify_on_the_emulated_gpu_too() {
    // `verify` includes the emulator for every kernel it can run: in-place updates included.
    let report = verify(axpy::stencil()).unwrap();
    assert!(
        report.backends.iter().any(|b| b == "ptx-emulator"),
        "{report}"
    );
    for report in [
        verify(update_residual::stencil()).unwrap(),
        verify(maxpy3_f32::stencil()).unwrap(),
        verify(aypx_3d::stencil()).unwrap(),
    ] {
        assert!(
            report.backends.iter().any(|b| b == "ptx-emulator"),
            "{report}"
        );
    }
}

#[test]
fn vector_kernels_match_plain_loops() {
    let n = 10_007;
    let (x, y) = (vector(n, 1), vector(n, 2));
    let plain_dot: f64 = (0..n).map(|i| x[[i]] * y[[i]]).sum();
    assert!((dot_of(&x, &y).unwrap() - plain_dot).abs() < 1e-11);
    let plain_norm = (0..n).map(|i| x[[i]] * x[[i]]).sum::<f64>().sqrt();
    assert!((norm2(&x).unwrap() - plain_norm).abs() < 1e-11);

    let mut s = x.clone();
    scale(&mut s, -2.5).run().unwrap();
    let mut a = y.clone();
    axpy(&x, &mut a, 0.5).run().unwrap();
    let mut b = y.clone();
    aypx(&x, &mut b, 0.5).run().unwrap();
    let mut w = Grid1::<f64>::with_halo([n], 0).unwrap();
    waxpy(&x, &y, &mut w, 3.0).run().unwrap();
    let (x2, x3) = (vector(n, 3), vector(n, 4));
    let mut m = y.clone();
    maxpy3(&x, &x2, &x3, &mut m, 1.0, -2.0, 0.25).run().unwrap();
    for i in 0..n {
        assert_eq!(s[[i]], -2.5 * x[[i]]);
        assert_eq!(a[[i]], 0.5 * x[[i]] + y[[i]]);
        assert_eq!(b[[i]], x[[i]] + 0.5 * y[[i]]);
        assert_eq!(w[[i]], 3.0 * x[[i]] + y[[i]]);
        assert_eq!(
            m[[i]],
            y[[i]] + 1.0 * x[[i]] + -2.0 * x2[[i]] + 0.25 * x3[[i]]
        );
    }
}

/// CG on `A u = b` with the 7-point operator and Dirichlet zeros: after convergence, `u`
/// satisfies the discrete equations (checked point by point with a plain loop).
#[test]
fn conjugate_gradient_from_the_kernels_solves_the_discrete_poisson_problem() {
    let n = 24;
    let grid = || {
        let mut g = Grid3::<f64>::with_halo([n; 3], 1).unwrap();
        g.set_boundary(Boundary::Dirichlet(0.0));
        g
    };
    let mut rng = Rng::new(17);
    let mut b = grid();
    b.fill_with(|_| rng.uniform(0.0, 1.0));
    let mut x = grid();
    x.fill(0.0);
    let mut r = b.clone();
    let mut p = b.clone();
    let mut q = grid();
    let mut rr = norm2_3d(&r).unwrap().powi(2);
    let rr0 = rr;
    let mut iterations = 0;
    while rr > 1e-24 * rr0 {
        let mut pq = Sum::new();
        poisson_apply_dot(&p, &mut q, &mut pq).run().unwrap();
        let alpha = rr / pq.value();
        axpy_3d(&p, &mut x, alpha).run().unwrap();
        let mut rr_next = Sum::new();
        update_residual(&q, &mut r, &mut rr_next, alpha)
            .run()
            .unwrap();
        aypx_3d(&r, &mut p, rr_next.value() / rr).run().unwrap();
        rr = rr_next.value();
        iterations += 1;
        assert!(iterations < 500, "CG did not converge");
    }
    let at = |p: [usize; 3], d: [isize; 3]| {
        x.get([
            p[0] as isize + d[0],
            p[1] as isize + d[1],
            p[2] as isize + d[2],
        ])
        .unwrap()
    };
    for (pt, bv) in b.interior_iter() {
        let ax = 6.0 * at(pt, [0, 0, 0])
            - at(pt, [-1, 0, 0])
            - at(pt, [1, 0, 0])
            - at(pt, [0, -1, 0])
            - at(pt, [0, 1, 0])
            - at(pt, [0, 0, -1])
            - at(pt, [0, 0, 1]);
        assert!((ax - bv).abs() < 1e-9, "residual {} at {pt:?}", ax - bv);
    }
}
