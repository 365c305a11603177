//! heat3d across MPI ranks (feature `mpi`): the same hot sphere in a cold box with Dirichlet
//! walls, the same kernel and steps as `heat3d`, on a grid cut over the ranks.
//!
//! ```text
//! cargo build --release --features mpi --example heat3d_mpi
//! mpirun -np 2 target/release/examples/heat3d_mpi -- [--size N] [--steps S] [--threads T]
//!        [--ghost G] [--png PATH] [--check]
//! ```
//!
//! - `--size N`: points per side of the global cube (default 256);
//! - `--steps S`: time steps (default 100);
//! - `--threads T`: worker threads per rank (default 1; 0: the rank's share of the
//!   machine's cores). Each rank's workers are pinned within its share of the cores, which
//!   ranks on one machine split when the launcher does not bind them;
//! - `--ghost G`: ghost depth on rank faces (default 16): one halo exchange per `G` steps of
//!   this radius-1 kernel, the steps between exchanges blocked in time by each rank's time
//!   loop (up to `G` steps per trip through memory); 0 exchanges every step, overlapped with
//!   the sweep of the owned box's inner part;
//! - `--png PATH`: where rank 0 writes the mid-plane image (default
//!   `heat3d_mpi_midplane.png`), the same image as heat3d's;
//! - `--time-depth D`: run each rank's time loop with `D` steps per trip through memory
//!   instead of tuning it (at most the steps per exchange);
//! - `--check`: rank 0 also runs heat3d's time loop on one process (with `--threads`
//!   threads) and checks that the gathered field equals it bit for bit, and prints the
//!   single-process speed for comparison.
//!
//! Prints the decomposition, then per rank: its box, GPts/s over its owned points, and
//! seconds in halo exchange (packing, unpacking, waiting) against seconds of computation;
//! then the aggregate GPts/s, the exchange's share of the run, and how much of the exchange
//! time was hidden behind computation: each exchange's cost inside the loop against its cost
//! alone (measured first, ten exchanges after a barrier each). With `--ghost 0` every step
//! overlaps its exchange with the sweep of the owned box's inner part; with ghost zones the
//! loop exchanges between blocks of steps and overlaps nothing.

use std::path::PathBuf;

use stencil::mpi::Domain;
use stencil::output::{Plane, PngOptions, write_png};
use stencil::prelude::*;
use stencil::{CpuBackend, TunePolicy};

stencil! {
    /// One explicit Euler step of the 3-D heat equation (7-point Laplacian), as in heat3d.
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
    ghost: usize,
    png: PathBuf,
    check: bool,
    time_depth: Option<usize>,
}

fn parse_options() -> Result<Options, String> {
    let mut o = Options {
        size: 256,
        steps: 100,
        threads: 1,
        ghost: 16,
        png: PathBuf::from("heat3d_mpi_midplane.png"),
        check: false,
        time_depth: None,
    };
    let mut args = std::env::args().skip(1).filter(|a| a != "--");
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        let number = |v: String| v.parse::<usize>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--size" => o.size = number(value()?)?,
            "--steps" => o.steps = number(value()?)?,
            "--threads" => o.threads = number(value()?)?,
            "--ghost" => o.ghost = number(value()?)?,
            "--png" => o.png = PathBuf::from(value()?),
            "--check" => o.check = true,
            "--time-depth" => o.time_depth = Some(number(value()?)?),
            other => return Err(format!("unknown option {other}")),
        }
    }
    if o.size < 3 {
        return Err("--size must be at least 3".into());
    }
    Ok(o)
}

/// The starting temperature at global point `p`: 1 inside the sphere, 0 outside (heat3d's).
fn sphere(n: usize, [i, j, k]: [usize; 3]) -> f64 {
    let centre = (n as f64 - 1.0) / 2.0;
    let radius = n as f64 / 4.0;
    let d2 = [i, j, k]
        .iter()
        .map(|&x| (x as f64 - centre).powi(2))
        .sum::<f64>();
    if d2 <= radius * radius { 1.0 } else { 0.0 }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let universe = stencil::mpi::initialize()?;
    let world = universe.world();
    let opts = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("heat3d_mpi: {e}");
            std::process::exit(2);
        }
    };
    let n = opts.size;
    let r = 0.1;
    let (c0, c1) = (1.0 - 6.0 * r, r);
    // The kernel's radius is 1: a halo of 1 beyond the ghost zones.
    let domain = Domain::<3>::builder([n, n, n])
        .halo(1)
        .ghost(opts.ghost)
        .build(&world)?;
    // After the domain, which gives this rank its share of the machine's cores.
    let backend = CpuBackend::new(opts.threads)?;
    let rank = domain.rank();
    let ranks = domain.ranks();
    if rank == 0 {
        println!(
            "heat3d_mpi: {n}^3 points, {} steps, {ranks} ranks as {:?}, {} threads per rank, \
             ghost depth {} ({} per exchange)",
            opts.steps,
            domain.decomposition().dims(),
            backend.threads(),
            opts.ghost,
            match opts.ghost {
                0 => "1 step".to_string(),
                g => format!("{g} steps"),
            }
        );
    }
    let mut u = domain.grid::<f64>()?;
    u.set_boundary(Boundary::Dirichlet(0.0));
    domain.fill_with(&mut u, |p| sphere(n, p))?;
    let mut v = u.like();

    // The exchange alone: what one costs with nothing to overlap, for the model in
    // docs/scaling.md (a barrier first, so no rank waits for another's computation).
    domain.barrier();
    domain.reset_stats();
    let repeats = 10;
    for _ in 0..repeats {
        domain.barrier();
        domain.abort_on_error(domain.exchange(&mut u));
    }
    let alone = domain.stats();
    if rank == 0 {
        println!(
            "exchange alone: {:.3} ms per exchange ({:.3} ms copying, {:.3} ms waiting), {:.2} MB \
             sent per exchange by rank 0",
            alone.exposed_seconds() / repeats as f64 * 1e3,
            alone.copy_seconds / repeats as f64 * 1e3,
            alone.wait_seconds / repeats as f64 * 1e3,
            alone.values_sent as f64 * 8.0 / repeats as f64 / 1e6
        );
    }
    domain.barrier();
    domain.reset_stats();
    let mut time_loop = heat::steps(&mut u, &mut v, c0, c1)
        .on(&backend)
        .across(&domain);
    if let Some(depth) = opts.time_depth {
        time_loop = time_loop.schedule(stencil::Schedule::Cpu(stencil::CpuSchedule {
            time_depth: depth,
            ..stencil::CpuSchedule::default()
        }));
    }
    let report = domain.abort_on_error(time_loop.run(opts.steps));
    let stats = domain.stats();
    let (lo, hi) = domain.owned();
    let owned: usize = (0..3).map(|d| hi[d] - lo[d]).product();
    let computed: usize = domain.local_shape().iter().product();
    let exchange = stats.exposed_seconds();
    let line = format!(
        "rank {rank}: box {lo:?}..{hi:?} ({owned} points, {computed} computed with ghosts), \
         {:.3} GPts/s, {:.3} s: exchange {:.4} s ({} exchanges, {:.1} MB sent), compute \
         {:.3} s; {}",
        owned as f64 * opts.steps as f64 / report.seconds / 1e9,
        report.seconds,
        exchange,
        stats.exchanges,
        stats.values_sent as f64 * 8.0 / 1e6,
        report.seconds - exchange,
        report.tuning
    );
    // Print in rank order through rank 0.
    let mut lines = vec![line];
    gather_lines(&domain, &mut lines);
    let mut times = vec![0.0f64; ranks];
    for (r, t) in times.iter_mut().enumerate() {
        *t = report.seconds;
        domain.broadcast(t, r);
    }
    let slowest = times.iter().copied().fold(0.0, f64::max);
    let mut exchanges = vec![0.0f64; ranks];
    for (r, t) in exchanges.iter_mut().enumerate() {
        *t = exchange;
        domain.broadcast(t, r);
    }
    if rank == 0 {
        for l in &lines {
            println!("{l}");
        }
        let points = (n * n * n) as f64;
        let worst_exchange = exchanges.iter().copied().fold(0.0, f64::max);
        println!(
            "aggregate: {:.3} GPts/s ({:.3} ms per step, the slowest rank's {:.3} s)",
            points * opts.steps as f64 / slowest / 1e9,
            slowest / opts.steps.max(1) as f64 * 1e3,
            slowest
        );
        // Hidden: how much less each exchange cost inside the loop than alone (`exchange
        // alone` above), on rank 0. The loop overlaps an exchange with the inner sweep when
        // the ghost depth is 0; with ghost zones it exchanges between blocks of steps.
        let alone_each = alone.exposed_seconds() / repeats as f64;
        let in_loop_each = stats.exposed_seconds() / stats.exchanges.max(1) as f64;
        let hidden = if stats.overlapped_seconds > 0.0 && alone_each > 0.0 {
            (1.0 - in_loop_each / alone_each).clamp(0.0, 1.0)
        } else {
            0.0
        };
        println!(
            "halo exchange: {:.4} s on the slowest rank, {:.1}% of the run; per exchange on \
             rank 0 {:.3} ms in the loop against {:.3} ms alone: {:.0}% hidden behind \
             computation ({:.4} s of sweeps overlapped with messages){}",
            worst_exchange,
            100.0 * worst_exchange / slowest,
            in_loop_each * 1e3,
            alone_each * 1e3,
            100.0 * hidden,
            stats.overlapped_seconds,
            if opts.ghost > 0 {
                "; ghost zones: exchanges between blocks of steps, not overlapped"
            } else {
                ""
            }
        );
    }

    let global = domain.gather(&u)?;
    if let Some(global) = global {
        let plane = Plane {
            axis: 0,
            index: n / 2,
        };
        let mid_max = (0..n)
            .flat_map(|j| (0..n).map(move |k| (j, k)))
            .map(|(j, k)| global[[n / 2, j, k]])
            .fold(f64::MIN_POSITIVE, f64::max);
        let png = PngOptions {
            plane: Some(plane),
            range: Some([0.0, mid_max]),
            ..PngOptions::default()
        };
        write_png(&opts.png, &global, &png)?;
        println!("mid-plane temperature written to {}", opts.png.display());
        if opts.check {
            let mut single = Grid3::<f64>::new([n, n, n])?;
            single.set_boundary(Boundary::Dirichlet(0.0));
            single.fill_with(|p| sphere(n, p));
            let mut w = single.like();
            let one = heat::steps(&mut single, &mut w, c0, c1)
                .on(&backend)
                .tune(TunePolicy::Quick)
                .run(opts.steps)?;
            println!(
                "one process, {} threads: {:.3} s, {:.3} GPts/s; {}",
                backend.threads(),
                one.seconds,
                (n * n * n) as f64 * opts.steps as f64 / one.seconds / 1e9,
                one.tuning
            );
            if !same_bits(&global.to_vec(), &single.to_vec()) {
                eprintln!("heat3d_mpi: the field across ranks differs from one process's");
                domain.abort_on_error::<()>(Err(stencil::Error::new(
                    stencil::ErrorKind::VerificationFailed,
                    "the field across ranks differs from one process's",
                )));
            }
            println!(
                "check: the field across {ranks} ranks equals heat3d's on one process, bit for bit"
            );
        }
    }
    Ok(())
}

/// Whether `a` and `b` hold the same values bit for bit (`-0.0` differs from `0.0`, a NaN
/// equals the same NaN), as `--check` promises.
fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Collects every rank's line on rank 0 (in rank order; the other ranks keep theirs).
fn gather_lines(domain: &Domain<3>, lines: &mut Vec<String>) {
    let ranks = domain.ranks();
    let mut all = Vec::with_capacity(ranks);
    for r in 0..ranks {
        let mut bytes = [0u8; 512];
        if r == domain.rank() {
            let b = lines[0].as_bytes();
            let len = b.len().min(512);
            bytes[..len].copy_from_slice(&b[..len]);
        }
        domain.broadcast(&mut bytes[..], r);
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(512);
        all.push(String::from_utf8_lossy(&bytes[..end]).into_owned());
    }
    *lines = all;
}

#[cfg(test)]
mod tests {
    use super::same_bits;

    #[test]
    fn the_check_compares_bits() {
        assert!(same_bits(&[1.5, 0.0, f64::NAN], &[1.5, 0.0, f64::NAN]));
        assert!(!same_bits(&[1.5, 0.0], &[1.5, -0.0]));
        assert!(!same_bits(&[1.5], &[1.5, 2.0]));
        assert!(!same_bits(&[f64::NAN], &[-f64::NAN]));
    }
}
