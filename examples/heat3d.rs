//! The main job: 3-D heat diffusion of a hot sphere in a cold box with Dirichlet walls.
//!
//! ```text
//! cargo run --release --example heat3d -- [--size N] [--steps S] [--threads T] [--png PATH]
//!                                           [--vti PATH] [--no-vti]
//! ```
//!
//! - `--size N`: points per side of the cube (default 256, at least 3);
//! - `--steps S`: time steps (default 100);
//! - `--threads T`: worker threads (default: all cores);
//! - `--png PATH`: where the mid-plane image goes (default `heat3d_midplane.png`): the plane
//!   `i = N/2` through the inferno colour map over [0, its maximum], with a colour bar;
//! - `--vti PATH`: where the final temperature field goes (default `heat3d_final.vti`), as VTK
//!   ImageData for ParaView or VisIt (`paraview heat3d_final.vti`), field `temperature`, unit
//!   spacing, x along the grid's last index (8 N^3 bytes: 134 MB at 256^3);
//! - `--no-vti`: write no `.vti` file.
//!
//! Explicit Euler on the 7-point Laplacian: `u' = c0 u + c1 (sum of the 6 neighbours)` with
//! `c1 = r = alpha dt / h^2 = 0.1` (stable for r <= 1/6) and `c0 = 1 - 6 r`. The walls are held
//! at temperature 0 by Dirichlet boundaries; the sphere starts at 1. The steps run as one time
//! loop (`heat::steps`, from the kernel's `#[rotate(out -> u)]`), which advances several steps
//! per trip through memory where that pays, and prints progress every tenth step; then the
//! same number of steps (at most 20) runs as plain sweeps (`run()` and `std::mem::swap`) on a
//! copy of the starting state, for the speed-up of the time loop over them and a check that
//! both end in the same state. Prints physical sanity figures at start and end: the total heat
//! (conserved until heat reaches the cold walls, then falling; it never grows), the maximum
//! temperature (never grows) and the squared L2 norm of the temperature (strictly falls under
//! diffusion). Writes a PNG of the mid-plane temperature and a `.vti` of the final field
//! (`stencil::output`).
//!
//! The time loop's first call tunes its schedule for this grid and machine (or finds it in
//! the tuning cache) and prints what happened: `tuning: N trials in X s: <schedule>` the first
//! time, `tuning: cache hit: <schedule>` in later runs; the plain sweeps' tuning follows on
//! its own line. `STENCIL_TUNE=off|quick|thorough|exhaustive` sets how hard to tune;
//! `STENCIL_TUNE_CACHE` where the cache lives.

use std::path::PathBuf;
use std::time::Instant;

use stencil::output::{Plane, PngOptions, VtiOptions, write_png, write_vti};
use stencil::prelude::*;
use stencil::{CpuBackend, analysis};

stencil! {
    /// One explicit Euler step of the 3-D heat equation (7-point Laplacian); in a time loop
    /// each step's `out` becomes the next step's `u`.
    #[rotate(out -> u)]
    pub fn heat(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64) {
        out[i, j, k] = c0 * u[i, j, k]
            + c1 * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k]
                  + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1]);
    }
}

struct Options {
    size: usize,
    steps: usize,
    threads: usize,
    png: PathBuf,
    vti: Option<PathBuf>,
}

fn parse_options() -> Result<Options, String> {
    let mut o = Options {
        size: 256,
        steps: 100,
        threads: 0,
        png: PathBuf::from("heat3d_midplane.png"),
        vti: Some(PathBuf::from("heat3d_final.vti")),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        let number = |v: String| v.parse::<usize>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--size" => o.size = number(value()?)?,
            "--steps" => o.steps = number(value()?)?,
            "--threads" => o.threads = number(value()?)?,
            "--png" => o.png = PathBuf::from(value()?),
            "--vti" => o.vti = Some(PathBuf::from(value()?)),
            "--no-vti" => o.vti = None,
            "-h" | "--help" => {
                println!(
                    "usage: heat3d [--size N (256)] [--steps S (100)] [--threads T (all)] \
                     [--png PATH (heat3d_midplane.png)] [--vti PATH (heat3d_final.vti)] \
                     [--no-vti]"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown option {other} (try --help)")),
        }
    }
    if o.size < 3 {
        return Err("--size must be at least 3".into());
    }
    Ok(o)
}

/// Total heat, maximum temperature and squared L2 norm of the interior.
fn sanity_figures(u: &Grid3<f64>) -> (f64, f64, f64) {
    u.interior_iter()
        .fold((0.0, f64::MIN, 0.0), |(s, m, l2), (_, v)| {
            (s + v, m.max(v), l2 + v * v)
        })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let opts = parse_options()?;
    let n = opts.size;
    let backend = CpuBackend::new(opts.threads)?;
    let r = 0.1;
    let (c0, c1) = (1.0 - 6.0 * r, r);

    let mut u = Grid3::<f64>::new([n, n, n])?;
    u.set_boundary(Boundary::Dirichlet(0.0));
    let centre = (n as f64 - 1.0) / 2.0;
    let radius = n as f64 / 4.0;
    u.fill_with(|[i, j, k]| {
        let d2 = [i, j, k]
            .iter()
            .map(|&x| (x as f64 - centre).powi(2))
            .sum::<f64>();
        if d2 <= radius * radius { 1.0 } else { 0.0 }
    });
    let mut v = u.like();

    let kernel = heat::stencil().kernel();
    let bytes_per_point = analysis::bytes_per_point(kernel) as f64;
    let points = (n * n * n) as f64;
    let (heat0, max0, l2_0) = sanity_figures(&u);
    println!(
        "heat3d: {n}^3 points, {} steps, {} threads, {} bytes/point",
        opts.steps,
        backend.threads(),
        bytes_per_point
    );
    println!("start: total heat {heat0:.9e}, max temperature {max0:.6}, L2^2 {l2_0:.9e}");
    // The plain sweeps' starting state, for the comparison after the time loop.
    let mut plain_u = u.repadded(u.padding())?;

    // The time loop: all steps in one call, progress every tenth step.
    println!("{:>6} {:>16}", "step", "max temperature");
    let report = heat::steps(&mut u, &mut v, c0, c1)
        .on(&backend)
        .every(10, |state| {
            let max = state.grid("u").map_or(f64::NAN, |u| {
                u.interior_iter().fold(f64::MIN, |m, (_, v)| m.max(v))
            });
            println!("{:>6} {max:>16.6}", state.step());
            std::ops::ControlFlow::Continue(())
        })
        .run(opts.steps)?;
    println!("{}", report.tuning);
    let per_step = report.seconds / opts.steps.max(1) as f64;
    println!(
        "time loop: {} steps in {:.3} s: {:.3} ms per step, {:.3} GPts/s, {:.2} GB/s at the \
         compulsory {bytes_per_point} bytes per point",
        report.steps,
        report.seconds,
        per_step * 1e3,
        points / per_step / 1e9,
        points * bytes_per_point / per_step / 1e9
    );

    // The same steps as plain sweeps, on a copy of the starting state.
    let plain_steps = opts.steps.min(20);
    let mut plain_v = plain_u.like();
    let mut times = Vec::with_capacity(plain_steps);
    for step in 1..=plain_steps {
        let t = Instant::now();
        let sweep = heat(&plain_u, &mut plain_v, c0, c1)
            .on(&backend)
            .run_with_report()?;
        times.push(t.elapsed().as_secs_f64());
        if step == 1 {
            // The first sweep tunes (or finds its schedule in the tuning cache).
            println!("plain sweeps {sweep}");
        }
        std::mem::swap(&mut plain_u, &mut plain_v);
    }
    if plain_steps > 0 {
        // Steady state: the first sweep tunes.
        let mut sorted = times[usize::from(plain_steps > 1)..].to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        println!(
            "plain sweeps: median {:.3} ms per step, {:.3} GPts/s, {:.2} GB/s; speed-up of the \
             time loop over them: {:.2}x",
            median * 1e3,
            points / median / 1e9,
            points * bytes_per_point / median / 1e9,
            median / per_step
        );
        if plain_steps == opts.steps && plain_u.as_slice() != u.as_slice() {
            return Err("the time loop and the plain sweeps ended in different states".into());
        }
    }
    let (heat1, max1, l2_1) = sanity_figures(&u);
    println!("end:   total heat {heat1:.9e}, max temperature {max1:.6}, L2^2 {l2_1:.9e}");
    println!(
        "heat change {:+.3e} (relative), L2^2 change {:+.3e} (relative)",
        (heat1 - heat0) / heat0,
        (l2_1 - l2_0) / l2_0
    );
    let grew = heat1 > heat0 * (1.0 + 1e-12) || max1 > max0 || l2_1 > l2_0;
    if grew || (opts.steps > 0 && l2_1 >= l2_0) || heat1 <= 0.0 {
        return Err("physical sanity check failed: heat, maximum or L2 norm did not behave".into());
    }

    // The mid-plane i = n/2 over [0, its maximum], with a colour bar.
    let plane = Plane {
        axis: 0,
        index: n / 2,
    };
    let mid_max = (0..n)
        .flat_map(|j| (0..n).map(move |k| (j, k)))
        .map(|(j, k)| u[[n / 2, j, k]])
        .fold(f64::MIN_POSITIVE, f64::max);
    let png = PngOptions {
        plane: Some(plane),
        range: Some([0.0, mid_max]),
        ..PngOptions::default()
    };
    write_png(&opts.png, &u, &png)?;
    println!("mid-plane temperature written to {}", opts.png.display());
    if let Some(path) = &opts.vti {
        write_vti(path, &[("temperature", &u)], &VtiOptions::default())?;
        println!("final temperature field written to {}", path.display());
    }
    Ok(())
}
