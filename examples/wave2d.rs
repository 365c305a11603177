//! The 2-D wave equation with the built-in fourth-order Laplacian, three time levels rotating
//! in one time loop.
//!
//! ```text
//! cargo run --release --example wave2d -- [--size N] [--steps S]
//! ```
//!
//! `u_tt = c^2 lap(u)` on the unit square with fixed (Dirichlet 0) edges, leapfrog in time:
//! `u_next = 2 u - u_prev + (c dt)^2 laplace(u, h, 4)`, `h = 1 / (N + 1)`, `c = 1`,
//! `dt = 0.5 h` (inside the scheme's stability limit). A Gaussian pulse starts at rest in the
//! middle (`u_prev = u`). The kernel's `#[rotate(u_next -> u -> u_prev)]` generates
//! `wave::steps_with`, called with its parameters by name. Prints the discrete energy (kinetic
//! plus potential) every tenth of the run, which the leapfrog scheme keeps nearly constant
//! until the pulse reaches the edges, and the speed in GPts/s. Fails if the energy drifts by
//! more than 1%.

use stencil::prelude::*;

stencil! {
    /// One leapfrog step of the wave equation; in a time loop `u_next` becomes `u` and `u`
    /// becomes `u_prev`.
    #[rotate(u_next -> u -> u_prev)]
    pub fn wave(u: &Grid2<f64>, u_prev: &Grid2<f64>, u_next: &mut Grid2<f64>, c2dt2: f64, h: f64) {
        u_next[i, j] = 2.0 * u[i, j] - u_prev[i, j] + c2dt2 * laplace(u, h, 4);
    }
}

fn parse_options() -> Result<(usize, usize), String> {
    let (mut size, mut steps) = (512, 400);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"));
        let number = |v: String| v.parse::<usize>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--size" => size = number(value?)?,
            "--steps" => steps = number(value?)?,
            other => return Err(format!("unknown option {other} (--size N, --steps S)")),
        }
    }
    if size < 8 {
        return Err("--size must be at least 8".into());
    }
    Ok((size, steps))
}

/// The discrete energy between two time levels: `sum ((u - u_prev) / dt)^2 / 2 +
/// c^2 |grad u|^2 / 2` (one-sided differences, the edges held at 0) times the cell area.
fn energy(u: &Grid2<f64>, u_prev: &Grid2<f64>, dt: f64, h: f64) -> f64 {
    let [n0, n1] = u.shape();
    let at = |g: &Grid2<f64>, i: usize, j: usize| if i < n0 && j < n1 { g[[i, j]] } else { 0.0 };
    let mut sum = 0.0;
    for i in 0..n0 {
        for j in 0..n1 {
            let velocity = (u[[i, j]] - u_prev[[i, j]]) / dt;
            // Half the gradient from each time level, centred in time.
            let mut gradient = 0.0;
            for g in [u, u_prev] {
                let gi = (at(g, i + 1, j) - g[[i, j]]) / h;
                let gj = (at(g, i, j + 1) - g[[i, j]]) / h;
                gradient += 0.5 * (gi * gi + gj * gj);
            }
            sum += 0.5 * (velocity * velocity + gradient);
        }
    }
    sum * h * h
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (n, steps) = parse_options()?;
    let h = 1.0 / (n + 1) as f64;
    let dt = 0.5 * h;
    let mut u = Grid2::<f64>::new([n, n])?;
    let centre = (n as f64 - 1.0) / 2.0;
    let width = n as f64 / 20.0;
    u.fill_with(|[i, j]| {
        let d2 = (i as f64 - centre).powi(2) + (j as f64 - centre).powi(2);
        (-d2 / (width * width)).exp()
    });
    let mut u_prev = u.repadded(u.padding())?;
    let mut u_next = u.like();

    let params = wave::Params { c2dt2: dt * dt, h };
    let energy0 = energy(&u, &u_prev, dt, h);
    println!("wave2d: {n}^2 points, {steps} steps, h = {h:.3e}, dt = {dt:.3e}");
    println!("{:>6} {:>16}", "step", "energy");
    println!("{:>6} {energy0:>16.9e}", 0);
    let every = (steps / 10).max(1);
    let report = wave::steps_with(
        wave::Grids {
            u: &mut u,
            u_prev: &mut u_prev,
            u_next: &mut u_next,
        },
        params,
    )
    .every(every, |state| {
        if let (Some(u), Some(u_prev)) = (state.grid("u"), state.grid("u_prev")) {
            println!("{:>6} {:>16.9e}", state.step(), energy(u, u_prev, dt, h));
        }
        std::ops::ControlFlow::Continue(())
    })
    .run(steps)?;
    println!("{}", report.tuning);
    let energy1 = energy(&u, &u_prev, dt, h);
    let points = (n * n) as f64 * report.steps as f64;
    println!(
        "{} steps in {:.3} s: {:.3} GPts/s; energy {energy0:.9e} -> {energy1:.9e} ({:+.2e} relative)",
        report.steps,
        report.seconds,
        points / report.seconds / 1e9,
        (energy1 - energy0) / energy0
    );
    if !energy1.is_finite() || ((energy1 - energy0) / energy0).abs() > 0.01 {
        return Err("the energy drifted by more than 1%: unstable or wrong kernel".into());
    }
    Ok(())
}
