//! The seeds' kernels, written with `stencil!`, verified on every backend against the reference
//! interpreter: Kamil et al.'s Laplacian, Divergence and Gradient (000_..., Fig. 1), Barker's
//! 7- and 27-point Jacobi (001_..., Fig. 5-6), a 2-D 5-point, a radius-4 3-D star, Orio's DIA
//! matrix-vector product as a variable-coefficient stencil (004_...), a 1-D kernel, f32 and f64,
//! and the language's lets, selects and math functions.

use stencil::prelude::*;
use stencil::{Element, Stencil, verify};

stencil! {
    /// Kamil's Laplacian.
    pub fn laplacian(u: &Grid3<f64>, next: &mut Grid3<f64>, alpha: f64, beta: f64) {
        next[i, j, k] = alpha * u[i, j, k]
            + beta * (u[i+1, j, k] + u[i-1, j, k] + u[i, j+1, k]
                    + u[i, j-1, k] + u[i, j, k+1] + u[i, j, k-1]);
    }

    /// Kamil's Divergence: three input grids, one output.
    pub fn divergence(x: &Grid3<f64>, y: &Grid3<f64>, z: &Grid3<f64>, u: &mut Grid3<f64>,
                      alpha: f64, beta: f64, gamma: f64) {
        u[i, j, k] = alpha * (x[i+1, j, k] - x[i-1, j, k])
            + beta * (y[i, j+1, k] - y[i, j-1, k])
            + gamma * (z[i, j, k+1] - z[i, j, k-1]);
    }

    /// Kamil's Gradient: one input grid, three outputs.
    pub fn gradient(u: &Grid3<f64>, x: &mut Grid3<f64>, y: &mut Grid3<f64>, z: &mut Grid3<f64>,
                    alpha: f64, beta: f64, gamma: f64) {
        x[i, j, k] = alpha * (u[i+1, j, k] - u[i-1, j, k]);
        y[i, j, k] = beta * (u[i, j+1, k] - u[i, j-1, k]);
        z[i, j, k] = gamma * (u[i, j, k+1] - u[i, j, k-1]);
    }

    /// Barker's 7-point Jacobi in f32.
    pub fn jacobi7_f32(u: &Grid3<f32>, out: &mut Grid3<f32>, c0: f32, c1: f32) {
        out[i, j, k] = c0 * u[i, j, k]
            + c1 * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k]
                  + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1]);
    }

    /// Barker's 27-point Jacobi: centre, 6 faces, 12 edges, 8 corners.
    pub fn jacobi27(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64, c2: f64, c3: f64) {
        let faces = u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k] + u[i, j+1, k]
            + u[i, j, k-1] + u[i, j, k+1];
        let edges = u[i-1, j-1, k] + u[i-1, j+1, k] + u[i+1, j-1, k] + u[i+1, j+1, k]
            + u[i-1, j, k-1] + u[i-1, j, k+1] + u[i+1, j, k-1] + u[i+1, j, k+1]
            + u[i, j-1, k-1] + u[i, j-1, k+1] + u[i, j+1, k-1] + u[i, j+1, k+1];
        let corners = u[i-1, j-1, k-1] + u[i-1, j-1, k+1] + u[i-1, j+1, k-1] + u[i-1, j+1, k+1]
            + u[i+1, j-1, k-1] + u[i+1, j-1, k+1] + u[i+1, j+1, k-1] + u[i+1, j+1, k+1];
        out[i, j, k] = c0 * u[i, j, k] + c1 * faces + c2 * edges + c3 * corners;
    }

    /// 2-D 5-point Laplacian.
    pub fn five_point(u: &Grid2<f64>, out: &mut Grid2<f64>, c0: f64, c1: f64) {
        out[i, j] = c0 * u[i, j] + c1 * (u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1]);
    }

    /// 8th-order (radius-4) 3-D star.
    pub fn star4(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64, c2: f64, c3: f64, c4: f64) {
        out[i, j, k] = c0 * u[i, j, k]
            + c1 * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k] + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1])
            + c2 * (u[i-2, j, k] + u[i+2, j, k] + u[i, j-2, k] + u[i, j+2, k] + u[i, j, k-2] + u[i, j, k+2])
            + c3 * (u[i-3, j, k] + u[i+3, j, k] + u[i, j-3, k] + u[i, j+3, k] + u[i, j, k-3] + u[i, j, k+3])
            + c4 * (u[i-4, j, k] + u[i+4, j, k] + u[i, j-4, k] + u[i, j+4, k] + u[i, j, k-4] + u[i, j, k+4]);
    }

    /// Orio's DIA sparse matrix-vector product y = A x for a 7-diagonal matrix, as a
    /// variable-coefficient stencil: one coefficient grid per diagonal.
    pub fn dia_spmv(x: &Grid3<f64>, a0: &Grid3<f64>, a1: &Grid3<f64>, a2: &Grid3<f64>,
                    a3: &Grid3<f64>, a4: &Grid3<f64>, a5: &Grid3<f64>, a6: &Grid3<f64>,
                    y: &mut Grid3<f64>) {
        y[i, j, k] = a0[i, j, k] * x[i, j, k]
            + a1[i, j, k] * x[i-1, j, k] + a2[i, j, k] * x[i+1, j, k]
            + a3[i, j, k] * x[i, j-1, k] + a4[i, j, k] * x[i, j+1, k]
            + a5[i, j, k] * x[i, j, k-1] + a6[i, j, k] * x[i, j, k+1];
    }

    /// A 1-D 3-point smoother.
    pub fn smooth1d(u: &Grid1<f64>, out: &mut Grid1<f64>, w: f64) {
        out[i] = (1.0 - 2.0 * w) * u[i] + w * (u[i-1] + u[i+1]);
    }

    /// An upwind advection step in 2-D f32: selects, comparisons, lets.
    pub fn upwind(q: &Grid2<f32>, vx: &Grid2<f32>, out: &mut Grid2<f32>, dt: f32) {
        let v = vx[i, j];
        let flux = if v > 0.0 { v * (q[i, j] - q[i, j-1]) } else { v * (q[i, j+1] - q[i, j]) };
        out[i, j] = q[i, j] - dt * flux;
    }

    /// Every math function of the language, with selects and logic.
    pub fn math(u: &Grid2<f64>, out: &mut Grid2<f64>, s: f64) {
        let a = abs(u[i, j]) + 0.5;
        let b = sqrt(a) + exp(-a) + ln(a) + sin(u[i-1, j]) + cos(u[i+1, j]) + tan(0.5 * u[i, j-1]);
        let c = tanh(u[i, j+1]) + floor(s * u[i, j]) + ceil(s * u[i, j]) + pow(a, 1.5);
        let m = min(u[i-1, j], u[i+1, j]) - max(u[i, j-1], u[i, j+1]);
        let pick = if (u[i, j] > 0.0 && m < 0.5) || !(b >= c) { b - c } else { m * s };
        out[i, j] = pick + select(u[i, j] != m, 1.0, -1.0);
    }
}

fn check<T: Element>(stencil: &Stencil<T>) {
    let report = verify(stencil).unwrap_or_else(|e| panic!("{e}"));
    // Every kernel here but `math` (transcendental functions) also runs through the GPU code
    // generator and the PTX emulator.
    let expected = if stencil.kernel().name == "math" {
        vec!["cpu"]
    } else {
        vec!["cpu", "ptx-emulator"]
    };
    assert_eq!(report.backends, expected, "{report}");
    // Guard: a filter that leaves nothing to compare must fail, not pass.
    assert!(report.cases >= 5, "{report}");
    assert!(report.points > 0, "{report}");
    // Also through the generic (IR-evaluating) CPU path.
    let generic = stencil.without_cpu_rows();
    let report = verify(&generic).unwrap_or_else(|e| panic!("generic path: {e}"));
    assert!(report.points > 0);
}

#[test]
fn laplacian_matches_the_interpreter() {
    check(laplacian::stencil());
}

#[test]
fn divergence_matches_the_interpreter() {
    check(divergence::stencil());
}

#[test]
fn gradient_matches_the_interpreter() {
    check(gradient::stencil());
}

#[test]
fn jacobi7_f32_matches_the_interpreter() {
    check(jacobi7_f32::stencil());
}

#[test]
fn jacobi27_matches_the_interpreter() {
    check(jacobi27::stencil());
}

#[test]
fn five_point_matches_the_interpreter() {
    check(five_point::stencil());
}

#[test]
fn radius4_star_matches_the_interpreter() {
    check(star4::stencil());
}

#[test]
fn dia_spmv_matches_the_interpreter() {
    check(dia_spmv::stencil());
}

#[test]
fn one_dimensional_kernel_matches_the_interpreter() {
    check(smooth1d::stencil());
}

#[test]
fn upwind_selects_match_the_interpreter() {
    check(upwind::stencil());
}

#[test]
fn math_functions_match_the_interpreter() {
    check(math::stencil());
}
