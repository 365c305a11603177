//! Kernels shared by the integration tests: the seeds' kernels (written with `stencil!`, as a
//! user would) and random stencils from core's generator.

#![allow(dead_code)]

use stencil::prelude::*;
use stencil::{ElemType, Kernel};
use stencil_core::random::{RandomStencilConfig, random_stencil};

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

    /// Barker's 7-point Jacobi in f64.
    pub fn jacobi7(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64) {
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

    /// Orio's DIA sparse matrix-vector product as a variable-coefficient stencil.
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

    /// The native math of the GPU generator: abs, sqrt, floor, ceil, min, max, div, selects,
    /// comparisons and logic.
    pub fn native_math(u: &Grid2<f64>, out: &mut Grid2<f64>, s: f64) {
        let a = abs(u[i, j]) + 0.5;
        let b = sqrt(a) + floor(s * u[i-1, j]) + ceil(s * u[i+1, j]) + u[i, j-1] / a;
        let m = min(u[i-1, j], u[i+1, j]) - max(u[i, j-1], u[i, j+1]);
        let pick = if (u[i, j] > 0.0 && m < 0.5) || !(b >= m) { b - m } else { -m * s };
        out[i, j] = pick + select(u[i, j] != m, 1.0, -1.0) + select(u[i, j] == a, 2.0, 0.0);
    }

    /// A transcendental function the generator rejects.
    pub fn uses_exp(u: &Grid2<f64>, out: &mut Grid2<f64>) {
        out[i, j] = exp(u[i, j]);
    }
}

/// The seeds' kernels the GPU generator supports (f64 ones and f32 ones).
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
    ];
    let f32s = vec![
        jacobi7_f32::stencil().kernel().clone(),
        upwind::stencil().kernel().clone(),
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
