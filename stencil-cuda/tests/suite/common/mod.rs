//! Kernels shared by the integration tests: the seeds' kernels (written with `stencil!`, as a
//! user would) and random stencils from core's generator.

#![allow(dead_code)]

pub(crate) mod ptxas;

pub(crate) use stencil::kernels::{
    dia_spmv, divergence, five_point, gradient, jacobi7, jacobi7_f32, jacobi27, laplacian,
    smooth1d, star4,
};
use stencil::prelude::*;
use stencil::{ElemType, Kernel};
use stencil_core::random::{RandomStencilConfig, random_stencil};

stencil! {
    /// An upwind advection step in 2-D f32: selects, comparisons, lets.
    pub fn upwind(q: &Grid2<f32>, vx: &Grid2<f32>, out: &mut Grid2<f32>, dt: f32) {
        let v = vx[i, j];
        let flux = if v > 0.0 { v * (q[i, j] - q[i, j-1]) } else { v * (q[i, j+1] - q[i, j]) };
        out[i, j] = q[i, j] - dt * flux;
    }

    /// The native math of the GPU generator: abs, sqrt, floor, ceil, min, max, div, selects,
    /// comparisons and logic.
    pub fn native_math(u: &Grid2<f64>, out: &mut Grid2<f64>, s: f64) {
        let a = abs(u[i, j]) + 0.5;
        let b = sqrt(a) + floor(s * u[i-1, j]) + ceil(s * u[i+1, j]) + u[i, j-1] / a;
        let m = min(u[i-1, j], u[i+1, j]) - max(u[i, j-1], u[i, j+1]);
        let pick = if (u[i, j] > 0.0 && m < 0.5) || !(b >= m) { b - m } else { -m * s };
        out[i, j] = pick + select(u[i, j] != m, 1.0, -1.0) + select(u[i, j] == a, 2.0, 0.0);
    }

    /// Every transcendental function mixed with arithmetic, in f64 (the generator's inline
    /// math routines); a negative base with an integer exponent in `pow`.
    pub fn transcendental(u: &Grid2<f64>, v: &Grid2<f64>, out: &mut Grid2<f64>, s: f64) {
        let a = exp(s * u[i, j]) - ln(abs(v[i-1, j]) + 0.25) + exp(-700.0 * abs(u[i, j]));
        let b = sin(8.0 * u[i, j+1]) * cos(v[i, j] - 3.0) + tan(u[i+1, j]);
        let c = tanh(4.0 * v[i, j-1]) + pow(abs(u[i, j]) + 0.5, 6.0 * v[i, j]) + pow(v[i, j], 3.0);
        out[i, j] = a + b * c;
    }

    /// The same functions in f32, in 1-D.
    pub fn transcendental_f32(u: &Grid1<f32>, out: &mut Grid1<f32>, s: f32) {
        let a = exp(s * u[i]) + ln(abs(u[i-1]) + 0.25) * sin(3.0 * u[i+1]) - cos(u[i]);
        out[i] = a + tan(u[i]) * tanh(2.0 * u[i+1]) - pow(abs(u[i]) + 1.0, u[i-1] * 4.0);
    }
}

/// The seeds' kernels and the kernels above (f64 ones and f32 ones).
pub(crate) fn seed_kernels() -> (Vec<Kernel>, Vec<Kernel>) {
    let f64s = vec![
        laplacian::stencil().kernel().clone(),
        divergence::stencil().kernel().clone(),
        gradient::stencil().kernel().clone(),
        jacobi7::stencil().kernel().clone(),
        jacobi27::stencil().kernel().clone(),
        five_point::stencil().kernel().clone(),
        star4::stencil().kernel().clone(),
        dia_spmv::stencil().kernel().clone(),
        smooth1d::stencil().kernel().clone(),
        native_math::stencil().kernel().clone(),
        transcendental::stencil().kernel().clone(),
    ];
    let f32s = vec![
        jacobi7_f32::stencil().kernel().clone(),
        upwind::stencil().kernel().clone(),
        transcendental_f32::stencil().kernel().clone(),
    ];
    (f64s, f32s)
}

/// `count` random stencils: 1-3 D, orders 1-3, f32 and f64, some with several inputs.
pub(crate) fn random_kernels(count: u64) -> Vec<Kernel> {
    (0..count)
        .map(|seed| {
            let n_dims = 1 + (seed % 3) as usize;
            let order = 1 + ((seed / 3) % 3) as u32;
            let elem = if seed % 2 == 0 {
                ElemType::F64
            } else {
                ElemType::F32
            };
            let mut config = RandomStencilConfig::new(n_dims, order, elem, 0x6e0 + seed);
            config.max_inputs = 3;
            random_stencil(&config)
        })
        .collect()
}
