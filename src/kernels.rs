//! The seeds' kernels, written with `stencil!`, ready to run, verify and benchmark: Kamil et
//! al.'s Laplacian, Divergence and Gradient (IPDPS 2010, Fig. 1), Barker's 7- and 27-point
//! Jacobi (f64 and f32), a 2-D 5-point Laplacian, an 8th-order (radius-4) 3-D star, Orio's DIA
//! sparse matrix-vector product as a variable-coefficient stencil, a 1-D smoother, and the two
//! stages of a staggered (velocity-pressure) acoustic solver in 2-D and 3-D, for
//! [`Stages`](crate::Stages).
//! The `_fma` variants of the 7- and 27-point Jacobi, the 5-point Laplacian and the star are
//! the same kernels with fused multiply-add (`#[fma]`), for measuring what it buys.
//!
//! Each kernel is a function with the kernel's signature returning a [`Launch`],
//! plus a module of the same name whose `stencil()` gives the compiled kernel.

use crate::prelude::*;

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

    /// Barker's 27-point Jacobi in f32.
    pub fn jacobi27_f32(u: &Grid3<f32>, out: &mut Grid3<f32>, c0: f32, c1: f32, c2: f32, c3: f32) {
        let faces = u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k] + u[i, j+1, k]
            + u[i, j, k-1] + u[i, j, k+1];
        let edges = u[i-1, j-1, k] + u[i-1, j+1, k] + u[i+1, j-1, k] + u[i+1, j+1, k]
            + u[i-1, j, k-1] + u[i-1, j, k+1] + u[i+1, j, k-1] + u[i+1, j, k+1]
            + u[i, j-1, k-1] + u[i, j-1, k+1] + u[i, j+1, k-1] + u[i, j+1, k+1];
        let corners = u[i-1, j-1, k-1] + u[i-1, j-1, k+1] + u[i-1, j+1, k-1] + u[i-1, j+1, k+1]
            + u[i+1, j-1, k-1] + u[i+1, j-1, k+1] + u[i+1, j+1, k-1] + u[i+1, j+1, k+1];
        out[i, j, k] = c0 * u[i, j, k] + c1 * faces + c2 * edges + c3 * corners;
    }

    /// Kamil's Divergence in f32.
    pub fn divergence_f32(x: &Grid3<f32>, y: &Grid3<f32>, z: &Grid3<f32>, u: &mut Grid3<f32>,
                   alpha: f32, beta: f32, gamma: f32) {
        u[i, j, k] = alpha * (x[i+1, j, k] - x[i-1, j, k])
            + beta * (y[i, j+1, k] - y[i, j-1, k])
            + gamma * (z[i, j, k+1] - z[i, j, k-1]);
    }

    /// The velocity stage of a staggered acoustic solver in 2-D (`v_t = -b grad p`): `vx`
    /// stands half a cell after `p` along `i`, `vy` along `j` (`#[stagger(..)]`); `b` is the
    /// buoyancy (1 / density) of the cell, read at the cell-centred point for both velocities
    /// after it, and `s = dt / h`.
    pub fn acoustic_velocity2(p: &Grid2<f64>, #[stagger(i)] vx: &Grid2<f64>,
                              #[stagger(j)] vy: &Grid2<f64>, b: &Grid2<f64>,
                              #[stagger(i)] vx_next: &mut Grid2<f64>,
                              #[stagger(j)] vy_next: &mut Grid2<f64>, s: f64) {
        vx_next[i+1/2, j] = vx[i+1/2, j] - s * b[i, j] * (p[i+1, j] - p[i, j]);
        vy_next[i, j+1/2] = vy[i, j+1/2] - s * b[i, j] * (p[i, j+1] - p[i, j]);
    }

    /// The pressure stage of a staggered acoustic solver in 2-D (`p_t = -kappa div v`), from
    /// the velocities the velocity stage just wrote; `kappa` is the bulk modulus (density times
    /// the squared speed), `s = dt / h`.
    pub fn acoustic_pressure2(p: &Grid2<f64>, #[stagger(i)] vx: &Grid2<f64>,
                              #[stagger(j)] vy: &Grid2<f64>,
                              kappa: &Grid2<f64>, p_next: &mut Grid2<f64>, s: f64) {
        p_next[i, j] = p[i, j]
            - s * kappa[i, j] * (vx[i+1/2, j] - vx[i-1/2, j] + vy[i, j+1/2] - vy[i, j-1/2]);
    }

    /// The velocity stage of a staggered acoustic solver in 3-D (see `acoustic_velocity2`).
    pub fn acoustic_velocity3(p: &Grid3<f64>, #[stagger(i)] vx: &Grid3<f64>,
                              #[stagger(j)] vy: &Grid3<f64>, #[stagger(k)] vz: &Grid3<f64>,
                              b: &Grid3<f64>, #[stagger(i)] vx_next: &mut Grid3<f64>,
                              #[stagger(j)] vy_next: &mut Grid3<f64>,
                              #[stagger(k)] vz_next: &mut Grid3<f64>, s: f64) {
        vx_next[i+1/2, j, k] = vx[i+1/2, j, k] - s * b[i, j, k] * (p[i+1, j, k] - p[i, j, k]);
        vy_next[i, j+1/2, k] = vy[i, j+1/2, k] - s * b[i, j, k] * (p[i, j+1, k] - p[i, j, k]);
        vz_next[i, j, k+1/2] = vz[i, j, k+1/2] - s * b[i, j, k] * (p[i, j, k+1] - p[i, j, k]);
    }

    /// The pressure stage of a staggered acoustic solver in 3-D (see `acoustic_pressure2`).
    pub fn acoustic_pressure3(p: &Grid3<f64>, #[stagger(i)] vx: &Grid3<f64>,
                              #[stagger(j)] vy: &Grid3<f64>, #[stagger(k)] vz: &Grid3<f64>,
                              kappa: &Grid3<f64>, p_next: &mut Grid3<f64>, s: f64) {
        p_next[i, j, k] = p[i, j, k] - s * kappa[i, j, k] * (vx[i+1/2, j, k] - vx[i-1/2, j, k]
            + vy[i, j+1/2, k] - vy[i, j-1/2, k] + vz[i, j, k+1/2] - vz[i, j, k-1/2]);
    }
}

stencil! {
    /// [`jacobi7()`] with fused multiply-add (`#[fma]`): `c0 * u + c1 * (..)` rounds once.
    #[fma]
    pub fn jacobi7_fma(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64) {
        out[i, j, k] = c0 * u[i, j, k]
            + c1 * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k]
                  + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1]);
    }

    /// [`jacobi7_f32()`] with fused multiply-add.
    #[fma]
    pub fn jacobi7_f32_fma(u: &Grid3<f32>, out: &mut Grid3<f32>, c0: f32, c1: f32) {
        out[i, j, k] = c0 * u[i, j, k]
            + c1 * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k]
                  + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1]);
    }

    /// [`jacobi27()`] with fused multiply-add: three fused nodes per point.
    #[fma]
    pub fn jacobi27_fma(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64, c2: f64, c3: f64) {
        let faces = u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k] + u[i, j+1, k]
            + u[i, j, k-1] + u[i, j, k+1];
        let edges = u[i-1, j-1, k] + u[i-1, j+1, k] + u[i+1, j-1, k] + u[i+1, j+1, k]
            + u[i-1, j, k-1] + u[i-1, j, k+1] + u[i+1, j, k-1] + u[i+1, j, k+1]
            + u[i, j-1, k-1] + u[i, j-1, k+1] + u[i, j+1, k-1] + u[i, j+1, k+1];
        let corners = u[i-1, j-1, k-1] + u[i-1, j-1, k+1] + u[i-1, j+1, k-1] + u[i-1, j+1, k+1]
            + u[i+1, j-1, k-1] + u[i+1, j-1, k+1] + u[i+1, j+1, k-1] + u[i+1, j+1, k+1];
        out[i, j, k] = c0 * u[i, j, k] + c1 * faces + c2 * edges + c3 * corners;
    }

    /// [`jacobi27_f32()`] with fused multiply-add.
    #[fma]
    pub fn jacobi27_f32_fma(u: &Grid3<f32>, out: &mut Grid3<f32>, c0: f32, c1: f32, c2: f32, c3: f32) {
        let faces = u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k] + u[i, j+1, k]
            + u[i, j, k-1] + u[i, j, k+1];
        let edges = u[i-1, j-1, k] + u[i-1, j+1, k] + u[i+1, j-1, k] + u[i+1, j+1, k]
            + u[i-1, j, k-1] + u[i-1, j, k+1] + u[i+1, j, k-1] + u[i+1, j, k+1]
            + u[i, j-1, k-1] + u[i, j-1, k+1] + u[i, j+1, k-1] + u[i, j+1, k+1];
        let corners = u[i-1, j-1, k-1] + u[i-1, j-1, k+1] + u[i-1, j+1, k-1] + u[i-1, j+1, k+1]
            + u[i+1, j-1, k-1] + u[i+1, j-1, k+1] + u[i+1, j+1, k-1] + u[i+1, j+1, k+1];
        out[i, j, k] = c0 * u[i, j, k] + c1 * faces + c2 * edges + c3 * corners;
    }

    /// [`five_point()`] with fused multiply-add.
    #[fma]
    pub fn five_point_fma(u: &Grid2<f64>, out: &mut Grid2<f64>, c0: f64, c1: f64) {
        out[i, j] = c0 * u[i, j] + c1 * (u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1]);
    }

    /// [`star4()`] with fused multiply-add: four fused nodes per point.
    #[fma]
    pub fn star4_fma(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64, c2: f64, c3: f64, c4: f64) {
        out[i, j, k] = c0 * u[i, j, k]
            + c1 * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k] + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1])
            + c2 * (u[i-2, j, k] + u[i+2, j, k] + u[i, j-2, k] + u[i, j+2, k] + u[i, j, k-2] + u[i, j, k+2])
            + c3 * (u[i-3, j, k] + u[i+3, j, k] + u[i, j-3, k] + u[i, j+3, k] + u[i, j, k-3] + u[i, j, k+3])
            + c4 * (u[i-4, j, k] + u[i+4, j, k] + u[i, j-4, k] + u[i, j+4, k] + u[i, j, k-4] + u[i, j, k+4]);
    }
}
