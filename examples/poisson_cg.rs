//! A 3-D Poisson problem solved by matrix-free conjugate gradients built from the library's
//! kernels (`stencil::krylov`).
//!
//! `-laplace(u) = f` on the unit cube with `u = 0` on the boundary and the manufactured
//! solution `u = g(x) g(y) g(z)`, `g(t) = e^t sin(pi t)` (not an eigenvector of the discrete
//! operator, so CG has work to do; `f` follows from `g'' = e^t ((1 - pi^2) sin(pi t) +
//! 2 pi cos(pi t))`), discretised with the
//! 7-point operator on `n^3` interior points (`h = 1 / (n + 1)`): `A u = h^2 f` with
//! `A = 6 u - (the six neighbours)`, the Dirichlet values in the halo. Three solvers, each
//! stopping at a relative residual of 1e-8:
//!
//! - `cg`: operator application fused with its dot product (`poisson_apply_dot`), the
//!   residual updated in place fused with its norm (`update_residual`), `x` and the search
//!   direction updated in place (`axpy_3d`, `aypx_3d`): four sweeps and five grids in all;
//! - `cg+jacobi`: the same with the Jacobi preconditioner (the operator's diagonal), whose
//!   residual update also gives `z = r / d` and `r . z` in the same sweep;
//! - `cg (DIA)`: the operator through Orio's DIA storage (`kernels::dia_spmv`, seven
//!   coefficient grids) and a separate `dot_3d`.
//!
//! For each it prints iterations, time per iteration (after the first, whose calls tune each
//! kernel on the shape or find it in the tuning cache), the bytes an iteration must move at
//! least (every grid a kernel reads or writes, once) and the fraction of the machine's
//! measured copy bandwidth that makes, and the maximum error against the exact solution. Two
//! grid sizes show second order: the error falls about 4x when `h` halves.
//!
//! `cargo run --release --example poisson_cg -- [--size N] [--threads T]` (N: the larger
//! size, odd, 127 by default; the smaller is (N - 1) / 2, so that `h` exactly doubles).

use std::time::Instant;

use stencil::CpuBackend;
use stencil::kernels::dia_spmv;
use stencil::krylov::{
    axpy_3d, aypx_3d, dot_3d, poisson_apply_dot, update_residual, update_residual_jacobi,
};
use stencil::prelude::*;

#[derive(Clone, Copy, PartialEq)]
enum Method {
    Cg,
    Jacobi,
    Dia,
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Cg => "cg",
            Method::Jacobi => "cg+jacobi",
            Method::Dia => "cg (DIA)",
        }
    }

    /// Grids read and written per iteration (each interior point of each grid once).
    fn grid_passes(self) -> usize {
        match self {
            // apply+dot: read p, write q; x += alpha p: read p and x, write x; r -= alpha q
            // with its norm: read q and r, write r; p = r + beta p: read r and p, write p.
            Method::Cg => 2 + 3 + 3 + 3,
            // The residual update also reads d and writes z; p = z + beta p.
            Method::Jacobi => 2 + 3 + 5 + 3,
            // dia: x, 7 diagonals, y; dot: p, q; then as cg.
            Method::Dia => 9 + 2 + 3 + 3 + 3,
        }
    }
}

struct Solve {
    iterations: usize,
    /// Seconds per iteration after the first (whose calls tune each kernel on this shape,
    /// or find its schedule in the tuning cache).
    per_iteration: f64,
    max_error: f64,
    relative_residual: f64,
}

fn grid(n: usize) -> Result<Grid3<f64>, stencil::Error> {
    let mut g = Grid3::<f64>::with_halo([n; 3], 1)?;
    g.set_boundary(Boundary::Dirichlet(0.0));
    Ok(g)
}

/// `g(t) = e^t sin(pi t)` and `g''(t)`.
fn g(t: f64) -> (f64, f64) {
    let pi = std::f64::consts::PI;
    let (s, c) = (pi * t).sin_cos();
    (t.exp() * s, t.exp() * ((1.0 - pi * pi) * s + 2.0 * pi * c))
}

/// Coordinates of interior point `p` of an `n^3` grid.
fn coordinates(n: usize, p: [usize; 3]) -> [f64; 3] {
    let h = 1.0 / (n as f64 + 1.0);
    p.map(|i| (i as f64 + 1.0) * h)
}

/// The exact solution at interior point `p`.
fn exact(n: usize, p: [usize; 3]) -> f64 {
    let [x, y, z] = coordinates(n, p);
    g(x).0 * g(y).0 * g(z).0
}

/// `f = -laplace(u)` at interior point `p`.
fn source(n: usize, p: [usize; 3]) -> f64 {
    let [(gx, ddx), (gy, ddy), (gz, ddz)] = coordinates(n, p).map(g);
    -(ddx * gy * gz + gx * ddy * gz + gx * gy * ddz)
}

fn solve(n: usize, method: Method) -> Result<Solve, stencil::Error> {
    let h = 1.0 / (n as f64 + 1.0);
    let mut x = grid(n)?;
    x.fill(0.0);
    let mut r = grid(n)?;
    r.fill_with(|p| h * h * source(n, p));
    let mut d = grid(n)?;
    d.fill(6.0);
    // The DIA form of the same operator: 6 on the diagonal, -1 off it, zero rows cut at the
    // boundary (the halo holds the Dirichlet zero, so -1 there multiplies 0 anyway).
    let diagonals: Vec<Grid3<f64>> = (0..7)
        .map(|a| {
            let mut g = grid(n)?;
            g.fill(if a == 0 { 6.0 } else { -1.0 });
            Ok(g)
        })
        .collect::<Result<_, stencil::Error>>()?;
    let mut q = grid(n)?;
    let mut z = grid(n)?;
    // z = M^-1 r (Jacobi), or r itself.
    if method == Method::Jacobi {
        z.fill_with(|p| r[p] / 6.0);
    } else {
        z.fill_with(|p| r[p]);
    }
    let mut p = z.clone();
    let mut rz = Sum::new();
    dot_3d(&r, &z, &mut rz).run()?;
    let mut rz = rz.value();
    let mut rr0 = Sum::new();
    dot_3d(&r, &r, &mut rr0).run()?;
    let rr0 = rr0.value();
    let mut relative = 1.0;
    let mut start = Instant::now();
    let mut iterations = 0;
    while relative > 1e-8 && iterations < 10 * n {
        let mut pq = Sum::new();
        match method {
            Method::Dia => {
                let a = &diagonals;
                dia_spmv(&p, &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], &mut q).run()?;
                dot_3d(&p, &q, &mut pq).run()?;
            }
            _ => poisson_apply_dot(&p, &mut q, &mut pq).run()?,
        }
        let alpha = rz / pq.value();
        axpy_3d(&p, &mut x, alpha).run()?;
        let mut rr = Sum::new();
        let rz_next = if method == Method::Jacobi {
            let mut rz_next = Sum::new();
            update_residual_jacobi(&q, &d, &mut r, &mut z, &mut rz_next, &mut rr, alpha).run()?;
            rz_next.value()
        } else {
            update_residual(&q, &mut r, &mut rr, alpha).run()?;
            rr.value()
        };
        let beta = rz_next / rz;
        rz = rz_next;
        let direction = if method == Method::Jacobi { &z } else { &r };
        aypx_3d(direction, &mut p, beta).run()?;
        relative = (rr.value() / rr0).sqrt();
        iterations += 1;
        if iterations == 1 {
            start = Instant::now();
        }
    }
    let per_iteration = start.elapsed().as_secs_f64() / (iterations.max(2) - 1) as f64;
    let max_error = x
        .interior_iter()
        .map(|(p, v)| (v - exact(n, p)).abs())
        .fold(0.0, f64::max);
    Ok(Solve {
        iterations,
        per_iteration,
        max_error,
        relative_residual: relative,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut size = 127usize;
    let mut threads = 0usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || -> Result<usize, Box<dyn std::error::Error>> {
            Ok(args.next().ok_or("missing value")?.parse()?)
        };
        match a.as_str() {
            "--size" => size = value()?,
            "--threads" => threads = value()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if size < 7 || size.is_multiple_of(2) {
        return Err(
            "--size must be odd and at least 7 (so h exactly halves from the smaller)".into(),
        );
    }
    if threads > 0 {
        // SAFETY: no other thread exists yet to read the environment; the global backend
        // reads this once, at its first use below.
        unsafe { std::env::set_var("STENCIL_THREADS", threads.to_string()) };
    }
    let backend = CpuBackend::global();
    let bandwidth = backend.copy_bandwidth();
    println!(
        "poisson_cg: {} threads, copy bandwidth {:.1} GB/s",
        backend.threads(),
        bandwidth / 1e9
    );
    let small = (size - 1) / 2;
    println!(
        "{:<10} {:>5} {:>6} {:>10} {:>10} {:>8} {:>12} {:>10}",
        "method", "n", "iters", "ms/iter", "MB/iter", "of bound", "max error", "rel. res."
    );
    for method in [Method::Cg, Method::Jacobi, Method::Dia] {
        let mut errors = Vec::new();
        for n in [small, size] {
            let s = solve(n, method)?;
            let per_iter = s.per_iteration;
            let bytes = (method.grid_passes() * n * n * n * 8) as f64;
            println!(
                "{:<10} {:>5} {:>6} {:>10.3} {:>10.2} {:>8.2} {:>12.3e} {:>10.1e}",
                method.name(),
                n,
                s.iterations,
                per_iter * 1e3,
                bytes / 1e6,
                bytes / per_iter / bandwidth,
                s.max_error,
                s.relative_residual
            );
            errors.push(s.max_error);
        }
        println!(
            "{:<10} error ratio {:.2} for h halved (second order: about 4)",
            method.name(),
            errors[0] / errors[1]
        );
    }
    Ok(())
}
