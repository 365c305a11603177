//! Krylov building blocks: the vector kernels Orio tunes for PETSc's Newton-Krylov solvers
//! (Mametjanov et al., 004_... in the seeds: vecDot, vecNorm2, vecScale, vecWXPY, vecMAXPY;
//! matVec is [`crate::kernels::dia_spmv()`]), and the fused sweeps a matrix-free conjugate
//! gradient solver needs, each written with `stencil!` and tuned on its first call like every
//! kernel.
//!
//! Each kernel exists over 1-D vectors in `f64` (`dot`, ...) and `f32` (`dot_f32`, ...) and
//! over 3-D grids in `f64` (`dot_3d`, ...): the suffix `_3d` always means 3-D grids, while the
//! `3` of `maxpy3` (and `maxpy3_f32`) counts its vectors, three `x`s added to `y` at once, as
//! in PETSc's `VecMAXPY`. Results of reductions arrive in a [`Sum`]; they are
//! the same bits whatever the thread count and schedule (see [`crate::reduce`]). As in PETSc,
//! `scale`, `axpy`, `aypx` and `maxpy3` update their last vector in place (`y = a x + y`
//! reads `y` at its point before writing it), and `waxpy` writes a third vector.
//! [`norm2`], [`dot_of`] and their 3-D forms run a kernel and return the value.

use crate::prelude::*;

stencil! {
    /// vecDot: `s = sum x y`.
    pub fn dot(x: &Grid1<f64>, y: &Grid1<f64>, s: &mut Sum<f64>) {
        s += x[i] * y[i];
    }

    /// vecNorm2, squared: `s = sum x^2` (take the square root for the norm, or call
    /// [`norm2`]).
    pub fn norm2_squared(x: &Grid1<f64>, s: &mut Sum<f64>) {
        s += x[i] * x[i];
    }

    /// vecScale, in place: `x = a x`.
    pub fn scale(x: &mut Grid1<f64>, a: f64) {
        x[i] = a * x[i];
    }

    /// vecAXPY, in place: `y = a x + y`.
    pub fn axpy(x: &Grid1<f64>, y: &mut Grid1<f64>, a: f64) {
        y[i] = a * x[i] + y[i];
    }

    /// vecAYPX, in place: `y = x + a y`.
    pub fn aypx(x: &Grid1<f64>, y: &mut Grid1<f64>, a: f64) {
        y[i] = x[i] + a * y[i];
    }

    /// vecWXPY (vecAXPY out of place): `w = a x + y`.
    pub fn waxpy(x: &Grid1<f64>, y: &Grid1<f64>, w: &mut Grid1<f64>, a: f64) {
        w[i] = a * x[i] + y[i];
    }

    /// vecMAXPY with three vectors, in place: `y = y + a1 x1 + a2 x2 + a3 x3`.
    pub fn maxpy3(x1: &Grid1<f64>, x2: &Grid1<f64>, x3: &Grid1<f64>, y: &mut Grid1<f64>,
                  a1: f64, a2: f64, a3: f64) {
        y[i] = y[i] + a1 * x1[i] + a2 * x2[i] + a3 * x3[i];
    }

    /// vecDot in `f32`.
    pub fn dot_f32(x: &Grid1<f32>, y: &Grid1<f32>, s: &mut Sum<f32>) {
        s += x[i] * y[i];
    }

    /// vecNorm2, squared, in `f32`.
    pub fn norm2_squared_f32(x: &Grid1<f32>, s: &mut Sum<f32>) {
        s += x[i] * x[i];
    }

    /// vecScale in `f32`, in place.
    pub fn scale_f32(x: &mut Grid1<f32>, a: f32) {
        x[i] = a * x[i];
    }

    /// vecAXPY in `f32`, in place.
    pub fn axpy_f32(x: &Grid1<f32>, y: &mut Grid1<f32>, a: f32) {
        y[i] = a * x[i] + y[i];
    }

    /// vecAYPX in `f32`, in place.
    pub fn aypx_f32(x: &Grid1<f32>, y: &mut Grid1<f32>, a: f32) {
        y[i] = x[i] + a * y[i];
    }

    /// vecWXPY in `f32`.
    pub fn waxpy_f32(x: &Grid1<f32>, y: &Grid1<f32>, w: &mut Grid1<f32>, a: f32) {
        w[i] = a * x[i] + y[i];
    }

    /// vecMAXPY with three vectors in `f32`, in place.
    pub fn maxpy3_f32(x1: &Grid1<f32>, x2: &Grid1<f32>, x3: &Grid1<f32>, y: &mut Grid1<f32>,
                      a1: f32, a2: f32, a3: f32) {
        y[i] = y[i] + a1 * x1[i] + a2 * x2[i] + a3 * x3[i];
    }

    /// vecDot over 3-D grids.
    pub fn dot_3d(x: &Grid3<f64>, y: &Grid3<f64>, s: &mut Sum<f64>) {
        s += x[i, j, k] * y[i, j, k];
    }

    /// vecNorm2, squared, over 3-D grids.
    pub fn norm2_squared_3d(x: &Grid3<f64>, s: &mut Sum<f64>) {
        s += x[i, j, k] * x[i, j, k];
    }

    /// vecWXPY over 3-D grids: `w = a x + y`.
    pub fn waxpy_3d(x: &Grid3<f64>, y: &Grid3<f64>, w: &mut Grid3<f64>, a: f64) {
        w[i, j, k] = a * x[i, j, k] + y[i, j, k];
    }

    /// vecAXPY over 3-D grids, in place: `y = a x + y`.
    pub fn axpy_3d(x: &Grid3<f64>, y: &mut Grid3<f64>, a: f64) {
        y[i, j, k] = a * x[i, j, k] + y[i, j, k];
    }

    /// vecAYPX over 3-D grids, in place: `y = x + a y` (CG's search direction update).
    pub fn aypx_3d(x: &Grid3<f64>, y: &mut Grid3<f64>, a: f64) {
        y[i, j, k] = x[i, j, k] + a * y[i, j, k];
    }

    /// The 7-point operator `q = A p` of `-laplace(u) * h^2` (Dirichlet values in `p`'s halo)
    /// and `pq = p . q`, in one sweep: CG's operator application with its dot product.
    pub fn poisson_apply_dot(p: &Grid3<f64>, q: &mut Grid3<f64>, pq: &mut Sum<f64>) {
        let ap = 6.0 * p[i, j, k] - p[i-1, j, k] - p[i+1, j, k] - p[i, j-1, k]
            - p[i, j+1, k] - p[i, j, k-1] - p[i, j, k+1];
        q[i, j, k] = ap;
        pq += p[i, j, k] * ap;
    }

    /// CG's residual update with its norm: `r_next = r - alpha q`, `rr = |r_next|^2`.
    pub fn residual_update_norm(r: &Grid3<f64>, q: &Grid3<f64>, r_next: &mut Grid3<f64>,
                                rr: &mut Sum<f64>, alpha: f64) {
        let v = r[i, j, k] - alpha * q[i, j, k];
        r_next[i, j, k] = v;
        rr += v * v;
    }

    /// CG's residual update in place with its norm: `r = r - alpha q`, `rr = |r|^2` (the new
    /// values).
    pub fn update_residual(q: &Grid3<f64>, r: &mut Grid3<f64>, rr: &mut Sum<f64>, alpha: f64) {
        let v = r[i, j, k] - alpha * q[i, j, k];
        r[i, j, k] = v;
        rr += v * v;
    }

    /// Jacobi-preconditioned CG's residual update in place: `r = r - alpha q`, `z = r / d`
    /// (the operator's diagonal `d`), `rz = r . z`, `rr = |r|^2` (the new values).
    pub fn update_residual_jacobi(q: &Grid3<f64>, d: &Grid3<f64>, r: &mut Grid3<f64>,
                                  z: &mut Grid3<f64>, rz: &mut Sum<f64>, rr: &mut Sum<f64>,
                                  alpha: f64) {
        let v = r[i, j, k] - alpha * q[i, j, k];
        let zv = v / d[i, j, k];
        r[i, j, k] = v;
        z[i, j, k] = zv;
        rz += v * zv;
        rr += v * v;
    }
}

/// `x . y` of two vectors.
///
/// # Errors
/// As [`Launch::run`].
pub fn dot_of(x: &Grid1<f64>, y: &Grid1<f64>) -> crate::Result<f64> {
    let mut s = Sum::new();
    dot(x, y, &mut s).run()?;
    Ok(s.value())
}

/// The Euclidean norm of a vector.
///
/// # Errors
/// As [`Launch::run`].
pub fn norm2(x: &Grid1<f64>) -> crate::Result<f64> {
    let mut s = Sum::new();
    norm2_squared(x, &mut s).run()?;
    Ok(s.value().sqrt())
}

/// `x . y` of two 3-D grids.
///
/// # Errors
/// As [`Launch::run`].
pub fn dot_of_3d(x: &Grid3<f64>, y: &Grid3<f64>) -> crate::Result<f64> {
    let mut s = Sum::new();
    dot_3d(x, y, &mut s).run()?;
    Ok(s.value())
}

/// The Euclidean norm of a 3-D grid's interior.
///
/// # Errors
/// As [`Launch::run`].
pub fn norm2_3d(x: &Grid3<f64>) -> crate::Result<f64> {
    let mut s = Sum::new();
    norm2_squared_3d(x, &mut s).run()?;
    Ok(s.value().sqrt())
}
