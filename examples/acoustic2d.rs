//! A staggered velocity-pressure acoustic solver on a layered model with a Ricker source and a
//! line of receivers: two kernels per step, the source and the receivers inside one time loop
//! (`stencil::Stages`), blocked in time across both stages on the CPU.
//!
//! ```text
//! cargo run --release --example acoustic2d -- [--size N] [--steps S] [--3d] [--out DIR]
//! ```
//!
//! `p_t = -kappa div v`, `v_t = -b grad p` (`kappa` the bulk modulus, `b` the buoyancy), on a
//! staggered grid (`vx` half a cell after `p` along the first dimension, and so on),
//! second order in space and time; `h = 10 m`, three layers of 1500, 2000 and 2800 m/s (from
//! the top, an eighth and a third of the depth; density 1), `dt = 0.4 h / 2800 m/s`. Dimension 0 is depth. A Ricker wavelet of 15 Hz is injected
//! into the pressure 10 points below the top (`dt s(t) / h^D` per step, a point source), and
//! up to 256 receivers 4 points below the top record the pressure every step. Every face holds
//! 0 (no absorbing layer: the edges reflect).
//!
//! The example checks itself twice and exits with an error when a check fails:
//! - against a plain loop written here (each kernel's `run()`, the source added, the halo
//!   refreshed, the receivers read, the grids swapped): every grid and every sample the same
//!   bits;
//! - on a homogeneous medium (2000 m/s) against the analytic Green's function (2-D:
//!   `p(r, t) = 1 / (2 pi c^2) int_0^acosh(ct/r) s'(t - r cosh(u) / c) du`; 3-D:
//!   `p = s'(t - r/c) / (4 pi c^2 r)`) at a receiver away from the source, before the edges'
//!   reflections arrive. The error is the scheme's numerical dispersion: in 2-D, 300 m away,
//!   with cells of 5 m and of 2.5 m, the relative L2 error of the trace must fall by at least
//!   3x (second order: 4x) to under 3%; in 3-D, 150 m away with 2.5 m cells, under 5%.
//!
//! Writes `DIR/shot.png` (the shot record: receivers across, time down) and `DIR/pressure.vti`
//! (the final pressure) into `DIR` (default `target/acoustic`).

use std::path::PathBuf;
use std::time::Instant;

use stencil::kernels::{
    acoustic_pressure2, acoustic_pressure3, acoustic_velocity2, acoustic_velocity3,
};
use stencil::output::{ColourMap, PngOptions, VtiOptions, write_png, write_vti};
use stencil::prelude::*;
use stencil::{ErrorKind, Launch, Receivers, Sources, Stage, Stages, Stencil};

/// The names of the velocity grids, one per dimension.
const VELOCITY: [&str; 3] = ["vx", "vy", "vz"];

/// The peak frequency of the Ricker wavelet (Hz).
const PEAK: f64 = 15.0;

/// What the command line asks for.
struct Options {
    size: usize,
    steps: usize,
    three_d: bool,
    out: PathBuf,
}

fn parse_options() -> Result<Options, String> {
    let mut o = Options {
        size: 0,
        steps: 0,
        three_d: false,
        out: PathBuf::from("target/acoustic"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--3d" {
            o.three_d = true;
            continue;
        }
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let number = |v: &str| v.parse::<usize>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--size" => o.size = number(&value)?,
            "--steps" => o.steps = number(&value)?,
            "--out" => o.out = PathBuf::from(value),
            other => {
                return Err(format!(
                    "unknown option {other} (--size N, --steps S, --3d, --out DIR)"
                ));
            }
        }
    }
    if o.size == 0 {
        o.size = if o.three_d { 96 } else { 400 };
    }
    if o.steps == 0 {
        o.steps = if o.three_d { 300 } else { 1500 };
    }
    if o.size < 24 {
        return Err("--size must be at least 24".into());
    }
    Ok(o)
}

/// The Ricker wavelet of peak frequency [`PEAK`] delayed by `1.2 / PEAK`, and its derivative.
fn ricker(t: f64) -> (f64, f64) {
    let tau = t - 1.2 / PEAK;
    let a = (std::f64::consts::PI * PEAK * tau).powi(2);
    let s = (1.0 - 2.0 * a) * (-a).exp();
    let ds = (2.0 * a - 3.0) * (-a).exp() * 2.0 * (std::f64::consts::PI * PEAK).powi(2) * tau;
    (s, ds)
}

/// A medium: bulk modulus and buoyancy per point, the cell size and the time step.
struct Model<const D: usize> {
    kappa: Grid<f64, D>,
    b: Grid<f64, D>,
    h: f64,
    dt: f64,
}

impl<const D: usize> Model<D> {
    /// Speeds `speed(depth index)`, density 1, cells of `h`, `dt = 0.4 h / fastest`.
    fn new(shape: [usize; D], h: f64, speed: impl Fn(usize) -> f64) -> Result<Self, Error> {
        let mut kappa = Grid::<f64, D>::new(shape)?;
        kappa.fill_with(|p| speed(p[0]).powi(2));
        let mut b = Grid::<f64, D>::new(shape)?;
        b.fill(1.0);
        let fastest = (0..shape[0]).map(&speed).fold(0.0, f64::max);
        Ok(Model {
            kappa,
            b,
            h,
            dt: 0.4 * h / fastest,
        })
    }
}

/// A shot: the source's position and amplitudes per step (already `dt / h^D` times the
/// wavelet at the middle of the step), and the receivers' positions.
struct Shot<const D: usize> {
    source: [f64; D],
    amplitudes: Vec<f64>,
    receivers: Vec<[f64; D]>,
}

impl<const D: usize> Shot<D> {
    fn new(model: &Model<D>, source: [f64; D], receivers: Vec<[f64; D]>, steps: usize) -> Self {
        let scale = model.dt / model.h.powi(D as i32);
        let amplitudes = (0..steps)
            .map(|n| scale * ricker((n as f64 + 0.5) * model.dt).0)
            .collect();
        Shot {
            source,
            amplitudes,
            receivers,
        }
    }
}

/// The kernels of the two stages.
fn stencils<const D: usize>() -> (&'static Stencil<f64>, &'static Stencil<f64>) {
    match D {
        2 => (acoustic_velocity2::stencil(), acoustic_pressure2::stencil()),
        _ => (acoustic_velocity3::stencil(), acoustic_pressure3::stencil()),
    }
}

/// The wavefield at rest: `p`, `p_next`, then each velocity and its next, every face 0.
fn wavefield<const D: usize>(shape: [usize; D]) -> Result<Vec<(String, Grid<f64, D>)>, Error> {
    let mut names = vec!["p".to_string(), "p_next".to_string()];
    for v in &VELOCITY[..D] {
        names.push(v.to_string());
        names.push(format!("{v}_next"));
    }
    names
        .into_iter()
        .map(|n| {
            let mut g = Grid::<f64, D>::new(shape)?;
            g.set_boundary(Boundary::Dirichlet(0.0));
            Ok((n, g))
        })
        .collect()
}

/// What a run leaves: the wavefield by name, the receivers' traces and the seconds it took.
type Outcome<const D: usize> = (Vec<(String, Grid<f64, D>)>, Vec<Vec<f64>>, f64);

/// Runs `steps` steps through `Stages`: the wavefield afterwards, the traces and the seconds.
fn simulate<const D: usize>(
    model: &Model<D>,
    shot: &Shot<D>,
    steps: usize,
) -> Result<Outcome<D>, Error> {
    let mut field = wavefield(model.kappa.shape())?;
    let (velocity, pressure) = stencils::<D>();
    let s = model.dt / model.h;
    let sources = Sources::new().point(shot.source, shot.amplitudes.clone());
    let mut receivers = Receivers::new(shot.receivers.clone());
    let mut looped = Stages::new()
        .input("kappa", &model.kappa)
        .input("b", &model.b);
    for (name, grid) in field.iter_mut() {
        looped = looped.grid(name, grid);
    }
    looped = looped.rotate(&["p_next", "p"]);
    let mut pressure_stage = Stage::new(pressure).param("s", s);
    for v in &VELOCITY[..D] {
        let next = format!("{v}_next");
        looped = looped.rotate(&[next.as_str(), v]);
        // The pressure stage reads the velocities this step's first stage wrote.
        pressure_stage = pressure_stage.bind(v, &next);
    }
    let report = looped
        .stage(Stage::new(velocity).param("s", s))
        .stage(pressure_stage)
        .sources("p_next", &sources)
        .receivers("p_next", &mut receivers)
        .run(steps)?;
    Ok((field, receivers.traces().to_vec(), report.seconds))
}

/// The same steps written by hand: each kernel's `run()`, the source added to `p_next` and its
/// halo refreshed, the receivers read at their grid points, the grids swapped.
fn plain<const D: usize>(
    model: &Model<D>,
    shot: &Shot<D>,
    steps: usize,
) -> Result<Outcome<D>, Error> {
    let mut field = wavefield(model.kappa.shape())?;
    let (velocity, pressure) = stencils::<D>();
    let s = model.dt / model.h;
    let on_grid = |x: &[f64; D]| -> [usize; D] {
        assert!(
            x.iter().all(|c| c.fract() == 0.0),
            "this loop reads grid points only"
        );
        x.map(|c| c as usize)
    };
    let source = on_grid(&shot.source);
    let receivers: Vec<[usize; D]> = shot.receivers.iter().map(on_grid).collect();
    let mut traces = vec![Vec::with_capacity(steps); receivers.len()];
    let timer = Instant::now();
    for step in 0..steps {
        {
            let (lo, hi) = field.split_at_mut(2);
            let mut launch = Launch::new(velocity)
                .input("p", &lo[0].1)
                .input("b", &model.b)
                .param("s", s);
            for pair in hi.chunks_mut(2) {
                let [(v, grid), (next, grid_next)] = pair else {
                    unreachable!()
                };
                launch = launch.input(v, grid).output(next, grid_next);
            }
            launch.run()?;
        }
        {
            let (lo, hi) = field.split_at_mut(2);
            let (p, p_next) = lo.split_at_mut(1);
            let mut launch = Launch::new(pressure)
                .input("p", &p[0].1)
                .input("kappa", &model.kappa)
                .output("p_next", &mut p_next[0].1)
                .param("s", s);
            for pair in hi.chunks(2) {
                launch = launch.input(&pair[0].0, &pair[1].1);
            }
            launch.run()?;
        }
        let p_next = &mut field[1].1;
        p_next[source] += shot.amplitudes[step];
        p_next.update_halo();
        for (trace, &r) in traces.iter_mut().zip(&receivers) {
            trace.push(p_next[r]);
        }
        for pair in field.chunks_mut(2) {
            let (a, b) = pair.split_at_mut(1);
            std::mem::swap(&mut a[0].1, &mut b[0].1);
        }
    }
    Ok((field, traces, timer.elapsed().as_secs_f64()))
}

/// The analytic pressure at distance `r` and time `t` in a homogeneous medium of speed `c`
/// from a point source `s(t)` injected into `p_t` (see the module documentation).
fn green<const D: usize>(r: f64, t: f64, c: f64) -> f64 {
    if D == 3 {
        return ricker(t - r / c).1 / (4.0 * std::f64::consts::PI * c * c * r);
    }
    if c * t <= r {
        return 0.0;
    }
    let top = (c * t / r).acosh();
    // Simpson's rule on a smooth integrand.
    let n = 4000;
    let du = top / n as f64;
    let f = |u: f64| ricker(t - r * u.cosh() / c).1;
    let mut sum = f(0.0) + f(top);
    for k in 1..n {
        sum += f(k as f64 * du) * if k % 2 == 1 { 4.0 } else { 2.0 };
    }
    sum * du / 3.0 / (2.0 * std::f64::consts::PI * c * c)
}

/// The homogeneous check: the relative L2 error of the trace of a receiver `distance` cells
/// from the source (cells of `h`, `n` points per side) against [`green`], before the first
/// reflection arrives.
fn green_check<const D: usize>(h: f64, distance: usize, n: usize) -> Result<f64, Error> {
    let c = 2000.0;
    let centre = n / 2;
    let model = Model::<D>::new([n; D], h, |_| c)?;
    // The direct wave and the wavelet's length, before the nearest edge's reflection.
    let reflection = (2.0 * (n - centre) as f64 - distance as f64) * h / c;
    let steps = ((reflection - 0.02) / model.dt) as usize;
    let mut receiver = [centre as f64; D];
    receiver[0] += distance as f64;
    let shot = Shot::new(&model, [centre as f64; D], vec![receiver], steps);
    let (_, traces, _) = simulate(&model, &shot, steps)?;
    let (mut error, mut norm) = (0.0, 0.0);
    for (n, &got) in traces[0].iter().enumerate() {
        let expected = green::<D>(distance as f64 * h, (n + 1) as f64 * model.dt, c);
        error += (got - expected).powi(2);
        norm += expected.powi(2);
    }
    Ok((error / norm).sqrt())
}

/// The homogeneous checks: in 2-D the receiver 300 m from the source with cells of 5 and
/// 2.5 m (the error must fall as the scheme's second order says, at least 3 times, to under
/// 3%); in 3-D 150 m away with cells of 2.5 m (under 5%).
fn green_checks<const D: usize>() -> Result<bool, Error> {
    if D == 2 {
        let coarse = green_check::<D>(5.0, 60, 281)?;
        let fine = green_check::<D>(2.5, 120, 561)?;
        println!(
            "  homogeneous medium against the analytic Green's function, 300 m away: relative L2 \
             error {:.2}% with 5 m cells, {:.2}% with 2.5 m ({:.1}x smaller; bound: under 3% \
             and at least 3x)",
            coarse * 100.0,
            fine * 100.0,
            coarse / fine
        );
        Ok(fine < 0.03 && coarse / fine >= 3.0)
    } else {
        let error = green_check::<D>(2.5, 60, 161)?;
        println!(
            "  homogeneous medium against the analytic Green's function, 150 m away with 2.5 m \
             cells: relative L2 error {:.2}% (bound 5%)",
            error * 100.0
        );
        Ok(error < 0.05)
    }
}

/// The layered run, its checks and its pictures.
fn run<const D: usize>(o: &Options) -> Result<bool, Error> {
    let n = o.size;
    let shape = [n; D];
    let model = Model::<D>::new(shape, 10.0, |z| match z {
        z if z < n / 8 => 1500.0,
        z if z < n / 3 => 2000.0,
        _ => 2800.0,
    })?;
    let mut middle = [(n / 2) as f64; D];
    middle[0] = 10.0;
    let count = n.min(256);
    let receivers: Vec<[f64; D]> = (0..count)
        .map(|r| {
            let mut x = [(n / 2) as f64; D];
            x[0] = 4.0;
            x[1] = (r * (n - 1) / (count - 1).max(1)) as f64;
            x
        })
        .collect();
    let shot = Shot::new(&model, middle, receivers, o.steps);
    let points = (n.pow(D as u32) * o.steps) as f64;
    println!(
        "{D}-D acoustic: {n}^{D} points, {} steps of {:.3} ms, {} receivers",
        o.steps,
        model.dt * 1e3,
        count
    );
    let (field, traces, seconds) = simulate(&model, &shot, o.steps)?;
    println!(
        "  Stages (blocked loop, source and receivers inside): {seconds:.3} s, {:.3} GPts/s per step",
        points / seconds / 1e9
    );
    let (plain_field, plain_traces, plain_seconds) = plain(&model, &shot, o.steps)?;
    println!(
        "  plain loop (run() per kernel per step):             {plain_seconds:.3} s, {:.3} GPts/s per step ({:.2}x)",
        points / plain_seconds / 1e9,
        plain_seconds / seconds
    );
    let same_grids = field.iter().zip(&plain_field).all(|((name, a), (_, b))| {
        let same = a
            .as_slice()
            .iter()
            .zip(b.as_slice())
            .all(|(x, y)| x.to_bits() == y.to_bits());
        if !same {
            eprintln!("  grid `{name}` differs from the plain loop's");
        }
        same
    });
    let same_traces = traces
        .iter()
        .flatten()
        .zip(plain_traces.iter().flatten())
        .all(|(x, y)| x.to_bits() == y.to_bits());
    println!(
        "  against the plain loop: grids {}, traces {}",
        if same_grids {
            "the same bits"
        } else {
            "DIFFER"
        },
        if same_traces {
            "the same bits"
        } else {
            "DIFFER"
        }
    );
    std::fs::create_dir_all(&o.out).map_err(|e| Error::new(ErrorKind::Io, e.to_string()))?;
    // The shot record: time down, receivers across, clipped at a twentieth of the largest
    // sample so the reflections show beside the direct wave.
    let mut record = Grid2::<f64>::new([o.steps, count])?;
    record.fill_with(|[t, r]| traces[r][t]);
    let peak = traces.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
    let clip = (peak / 20.0).max(f64::MIN_POSITIVE);
    let shot_png = o.out.join("shot.png");
    write_png(
        &shot_png,
        &record,
        &PngOptions {
            range: Some([-clip, clip]),
            colour_map: ColourMap::CoolWarm,
            scale: Some(1),
            ..PngOptions::default()
        },
    )?;
    let vti = o.out.join("pressure.vti");
    let spacing = [model.h; 3];
    write_vti(
        &vti,
        &[("pressure", &field[0].1)],
        &VtiOptions {
            spacing,
            ..VtiOptions::default()
        },
    )?;
    println!("  wrote {} and {}", shot_png.display(), vti.display());
    let green = green_checks::<D>()?;
    Ok(same_grids && same_traces && green)
}

fn main() {
    let o = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("acoustic2d: {e}");
            std::process::exit(2);
        }
    };
    let result = if o.three_d {
        run::<3>(&o)
    } else {
        run::<2>(&o)
    };
    match result {
        Ok(true) => {}
        Ok(false) => {
            eprintln!("acoustic2d: a check failed");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("acoustic2d: {e}");
            std::process::exit(1);
        }
    }
}
