//! The seeds' kernels, written with `stencil!`, verified on every backend against the reference
//! interpreter: Kamil et al.'s Laplacian, Divergence and Gradient (000_..., Fig. 1), Barker's
//! 7- and 27-point Jacobi (001_..., Fig. 5-6), a 2-D 5-point, a radius-4 3-D star, Orio's DIA
//! matrix-vector product as a variable-coefficient stencil (004_...), a 1-D kernel, f32 and f64,
//! and the language's lets, selects and math functions. The seeds' kernels come from
//! `stencil::kernels`; the language-feature kernels are written here.

use stencil::kernels::{
    dia_spmv, divergence, five_point, gradient, jacobi7_f32, jacobi27, laplacian, smooth1d, star4,
};
use stencil::prelude::*;
use stencil::{Element, Stencil, verify};

stencil! {
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
    // Every kernel here, `math` (every transcendental function) included, also runs through
    // the GPU code generator and the PTX emulator.
    let expected = vec!["cpu", "ptx-emulator"];
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
