//! 2-D Gray-Scott reaction-diffusion: a pattern growing out of a perturbed square, written with
//! a Laplacian helper and parameters passed by name.
//!
//! ```text
//! cargo run --release --example gray_scott -- [--size N] [--steps S]
//! ```
//!
//! `u' = Du lap(u) - u v^2 + F (1 - u)`, `v' = Dv lap(v) + u v^2 - (F + k) v` on a periodic
//! unit-spaced grid, explicit Euler with `dt = 1` (stable: `4 Du dt <= 1`), `Du = 0.2097`,
//! `Dv = 0.105`, `F = 0.037`, `k = 0.06` (a pattern of spots and stripes). The state starts at
//! `u = 1, v = 0` with a square of `u = 0.5, v = 0.25` plus a little deterministic noise in
//! the middle. The steps run as one time loop (`gray_scott::steps_with`, from
//! `#[rotate(un -> u, vn -> v)]`). Prints the mean and range of `v` (the mean growing as the
//! pattern spreads) every tenth of the run, a checksum of the final state, and the speed in
//! GPts/s. Fails if a value leaves [0, 1] (an unstable or wrong kernel).

use stencil::prelude::*;

stencil! {
    /// The 5-point Laplacian on a unit-spaced grid.
    fn lap(w) { w[i-1, j] + w[i+1, j] + w[i, j-1] + w[i, j+1] - 4.0 * w[i, j] }

    /// One explicit Euler step of Gray-Scott; in a time loop `un` becomes `u`, `vn` `v`.
    #[rotate(un -> u, vn -> v)]
    pub fn gray_scott(
        u: &Grid2<f64>, v: &Grid2<f64>, un: &mut Grid2<f64>, vn: &mut Grid2<f64>,
        du: f64, dv: f64, feed: f64, kill: f64, dt: f64,
    ) {
        let uvv = u[i, j] * v[i, j] * v[i, j];
        un[i, j] = u[i, j] + dt * (du * lap(u) - uvv + feed * (1.0 - u[i, j]));
        vn[i, j] = v[i, j] + dt * (dv * lap(v) + uvv - (feed + kill) * v[i, j]);
    }
}

fn parse_options() -> Result<(usize, usize), String> {
    let (mut size, mut steps) = (256, 500);
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

/// Mean, minimum and maximum of a grid's interior.
fn summary(grid: &Grid2<f64>) -> (f64, f64, f64) {
    let (sum, min, max) = grid
        .interior_iter()
        .fold((0.0, f64::MAX, f64::MIN), |(s, lo, hi), (_, x)| {
            (s + x, lo.min(x), hi.max(x))
        });
    let [n0, n1] = grid.shape();
    (sum / (n0 * n1) as f64, min, max)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (n, steps) = parse_options()?;
    let mut u = Grid2::<f64>::new([n, n])?;
    let mut v = Grid2::<f64>::new([n, n])?;
    for grid in [&mut u, &mut v] {
        grid.set_boundary(Boundary::Periodic);
    }
    let (lo, hi) = (n * 2 / 5, n * 3 / 5);
    let inside = |i: usize, j: usize| (lo..hi).contains(&i) && (lo..hi).contains(&j);
    // Deterministic noise in [-0.01, 0.01): breaks the square's symmetry.
    let noise = |i: usize, j: usize| ((i * 7919 + j * 104_729) % 1000) as f64 * 2e-5 - 0.01;
    u.fill_with(|[i, j]| if inside(i, j) { 0.5 + noise(i, j) } else { 1.0 });
    v.fill_with(|[i, j]| {
        if inside(i, j) {
            0.25 + noise(j, i)
        } else {
            0.0
        }
    });
    let (mut un, mut vn) = (u.like(), v.like());

    let params = gray_scott::Params {
        du: 0.2097,
        dv: 0.105,
        feed: 0.037,
        kill: 0.06,
        dt: 1.0,
    };
    println!("gray_scott: {n}^2 points, {steps} steps, {params:?}");
    println!(
        "{:>6} {:>12} {:>12} {:>12}",
        "step", "mean v", "min v", "max v"
    );
    let every = (steps / 10).max(1);
    let report = gray_scott::steps_with(
        gray_scott::Grids {
            u: &mut u,
            v: &mut v,
            un: &mut un,
            vn: &mut vn,
        },
        params,
    )
    .every(every, |state| {
        if let Some(v) = state.grid("v") {
            let (mean, min, max) = summary(v);
            println!("{:>6} {mean:>12.6} {min:>12.6} {max:>12.6}", state.step());
        }
        std::ops::ControlFlow::Continue(())
    })
    .run(steps)?;
    println!("{}", report.tuning);

    let points = (n * n) as f64 * report.steps as f64;
    let checksum: f64 = u
        .interior_iter()
        .zip(v.interior_iter())
        .map(|((_, a), (_, b))| a + 2.0 * b)
        .sum();
    let ((_, u_min, u_max), (_, v_min, v_max)) = (summary(&u), summary(&v));
    println!(
        "{} steps in {:.3} s: {:.3} GPts/s; checksum sum(u + 2v) = {checksum:.12e}",
        report.steps,
        report.seconds,
        points / report.seconds / 1e9
    );
    if u_min < 0.0 || u_max > 1.0 || v_min < 0.0 || v_max > 1.0 {
        return Err(format!(
            "a concentration left [0, 1]: u in [{u_min}, {u_max}], v in [{v_min}, {v_max}]"
        )
        .into());
    }
    Ok(())
}
