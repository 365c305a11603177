//! The acoustic rows: a staggered velocity-pressure acoustic solver in 3-D (the two stages of
//! `stencil::kernels::acoustic_velocity3` and `acoustic_pressure3`, 10 grids), `--n3` points
//! per side (256), 100 steps, one source and 256 receivers on a line, per step for:
//!
//! - `hand-written loop`: the two stages as rayon loops over planes written here, the source
//!   added and the receivers read by hand, the grids swapped;
//! - `run() per kernel`: each stage's `run()` every step (sweeps tuned by their first call),
//!   the source added, the halo refreshed, the receivers read, the grids swapped;
//! - `Stages`: the library's loop of the two stages with the source and receivers inside
//!   (temporal blocking across the stages at its default schedule);
//! - `Stages, no sparse`: the same loop with no source and no receivers.
//!
//! Each from the same state (the medium at rest), the implementations interleaved in rounds,
//! medians of `--steps-repeats` rounds; the pressure and the traces of every implementation
//! with the source are checked against the hand-written loop's after the first round (bit
//! for bit: they do the same arithmetic in the same order). The single-sweep bound is the time the stages'
//! compulsory bytes per point (velocity: `p`, three velocities and `b` read, three written;
//! pressure: `p`, three velocities and `kappa` read, `p_next` written: 14 grids of 8 bytes)
//! take at the non-temporal copy bandwidth timed in the same rounds.

use std::time::Instant;

use rayon::prelude::*;
use stencil::kernels::{acoustic_pressure3, acoustic_velocity3};
use stencil::{Boundary, CpuBackend, Grid3, Receivers, Sources, Stage, Stages, TuningCache};

use crate::report::Stats;

/// Bytes each point costs a step at the compulsory traffic (see the module documentation).
const BYTES_PER_POINT: f64 = 14.0 * 8.0;

/// One implementation's time per step.
pub(crate) struct AcousticRow {
    pub(crate) imp: &'static str,
    pub(crate) threads: usize,
    pub(crate) n: usize,
    pub(crate) steps: usize,
    /// Milliseconds per step.
    pub(crate) stats: Stats,
    /// The median non-temporal copy bandwidth of the rounds (GB/s).
    pub(crate) nt_gbs: f64,
    /// The `run() per kernel` row's median over this row's.
    pub(crate) over_run: f64,
}

impl AcousticRow {
    /// The single-sweep bound's time per step over the row's (above 1: faster than any code
    /// that streams the grids once per stage).
    fn bound_fraction(&self) -> f64 {
        let points = (self.n as f64).powi(3);
        points * BYTES_PER_POINT / (self.nt_gbs * 1e9) * 1e3 / self.stats.median
    }

    /// The row as one JSON object.
    pub(crate) fn json(&self) -> String {
        format!(
            "{{\"acoustic\":\"{}\",\"threads\":{},\"n\":{},\"steps\":{},\"ms_per_step\":{:.3},\
             \"min_ms\":{:.3},\"max_ms\":{:.3},\"nt_gbs\":{:.2},\"single_sweep_bound_fraction\":{:.3},\
             \"speedup_over_run_per_kernel\":{:.3}}}",
            self.imp,
            self.threads,
            self.n,
            self.steps,
            self.stats.median,
            self.stats.min,
            self.stats.max,
            self.nt_gbs,
            self.bound_fraction(),
            self.over_run
        )
    }
}

/// The rows as a table.
pub(crate) fn table(rows: &[AcousticRow]) -> String {
    let mut out = format!(
        "{:<22} {:>3} {:>10} {:>10} {:>10} {:>8} {:>9}\n",
        "implementation", "thr", "ms/step", "min", "max", "x run()", "bound"
    );
    for r in rows {
        out += &format!(
            "{:<22} {:>3} {:>10.2} {:>10.2} {:>10.2} {:>8.2} {:>8.0}%\n",
            r.imp,
            r.threads,
            r.stats.median,
            r.stats.min,
            r.stats.max,
            r.over_run,
            100.0 * r.bound_fraction()
        );
    }
    out
}

/// The wavefield and the medium: `p`, `p_next`, `vx`, `vx_next`, `vy`, `vy_next`, `vz`,
/// `vz_next` (at rest), `kappa`, `b`.
struct Field {
    grids: Vec<Grid3<f64>>,
}

const NAMES: [&str; 8] = [
    "p", "p_next", "vx", "vx_next", "vy", "vy_next", "vz", "vz_next",
];

impl Field {
    fn new(n: usize) -> Field {
        let mut grids: Vec<Grid3<f64>> = (0..10)
            .map(|_| {
                let mut g = Grid3::<f64>::with_halo([n; 3], 1).expect("grid");
                g.set_boundary(Boundary::Dirichlet(0.0));
                g
            })
            .collect();
        // A medium of two layers (bulk modulus), buoyancy 1.
        grids[8].fill_with(|[i, _, _]| if i < n / 3 { 2.25 } else { 4.0 });
        grids[9].fill(1.0);
        Field { grids }
    }

    fn rest(&mut self) {
        for g in &mut self.grids[..8] {
            g.fill(0.0);
        }
    }
}

/// The shot: the source's point and amplitudes, the receivers' points, `s = dt / h`.
struct Shot {
    source: [usize; 3],
    amplitudes: Vec<f64>,
    receivers: Vec<[usize; 3]>,
    s: f64,
}

impl Shot {
    fn new(n: usize, steps: usize) -> Shot {
        let amplitudes = (0..steps)
            .map(|t| {
                let a = ((t as f64 - 20.0) * 0.15).powi(2);
                (1.0 - 2.0 * a) * (-a).exp()
            })
            .collect();
        let count = 256.min(n);
        let receivers = (0..count)
            .map(|r| [4, r * (n - 1) / (count - 1).max(1), n / 2])
            .collect();
        Shot {
            source: [10.min(n - 1), n / 2, n / 2],
            amplitudes,
            receivers,
            s: 0.2,
        }
    }
}

/// How the steps are run.
#[derive(Clone, Copy)]
enum Imp<'a> {
    ByHand(&'a rayon::ThreadPool),
    RunPerKernel(&'a CpuBackend, &'a TuningCache),
    Stages(&'a CpuBackend, bool),
}

/// Runs `steps` steps from rest: the traces (none for `Stages` without sparse points).
fn run(imp: Imp<'_>, field: &mut Field, shot: &Shot, steps: usize) -> Vec<Vec<f64>> {
    field.rest();
    match imp {
        Imp::ByHand(pool) => pool.install(|| by_hand(field, shot, steps)),
        Imp::RunPerKernel(backend, cache) => {
            let mut traces = vec![Vec::new(); shot.receivers.len()];
            for step in 0..steps {
                {
                    let [p, _, vx, vx_next, vy, vy_next, vz, vz_next, _, b] = &mut field.grids[..]
                    else {
                        unreachable!()
                    };
                    acoustic_velocity3(p, vx, vy, vz, b, vx_next, vy_next, vz_next, shot.s)
                        .on(backend)
                        .tuning_cache(cache.clone())
                        .run()
                        .expect("velocity");
                }
                {
                    let [p, p_next, _, vx_next, _, vy_next, _, vz_next, kappa, _] =
                        &mut field.grids[..]
                    else {
                        unreachable!()
                    };
                    acoustic_pressure3(p, vx_next, vy_next, vz_next, kappa, p_next, shot.s)
                        .on(backend)
                        .tuning_cache(cache.clone())
                        .run()
                        .expect("pressure");
                    p_next[shot.source] += shot.amplitudes[step];
                    p_next.refresh_halo();
                    for (trace, &r) in traces.iter_mut().zip(&shot.receivers) {
                        trace.push(p_next[r]);
                    }
                }
                for pair in field.grids[..8].chunks_mut(2) {
                    pair.swap(0, 1);
                }
            }
            traces
        }
        Imp::Stages(backend, sparse) => {
            let n = field.grids[0].shape()[0];
            let at = |p: &[usize; 3]| p.map(|c| c as f64);
            let sources = Sources::new().point(at(&shot.source), shot.amplitudes.clone());
            let mut receivers = Receivers::new(shot.receivers.iter().map(at).collect());
            let (wave, medium) = field.grids.split_at_mut(8);
            let mut looped = Stages::<f64, 3>::new()
                .on(backend)
                .input("kappa", &medium[0])
                .input("b", &medium[1]);
            for (name, grid) in NAMES.iter().zip(wave.iter_mut()) {
                looped = looped.grid(name, grid);
            }
            looped = looped
                .rotate(&["p_next", "p"])
                .rotate(&["vx_next", "vx"])
                .rotate(&["vy_next", "vy"])
                .rotate(&["vz_next", "vz"])
                .stage(Stage::new(acoustic_velocity3::stencil()).param("s", shot.s))
                .stage(
                    Stage::new(acoustic_pressure3::stencil())
                        .bind("vx", "vx_next")
                        .bind("vy", "vy_next")
                        .bind("vz", "vz_next")
                        .param("s", shot.s),
                );
            if sparse {
                looped = looped
                    .sources("p_next", &sources)
                    .receivers("p_next", &mut receivers);
            }
            looped.run(steps).expect("stages");
            let _ = n;
            receivers.traces().to_vec()
        }
    }
}

/// The steps by hand: rayon over planes of dimension 0, the kernels' arithmetic in their order.
fn by_hand(field: &mut Field, shot: &Shot, steps: usize) -> Vec<Vec<f64>> {
    let n = field.grids[0].shape()[0];
    let geom = *field.grids[0].geometry();
    let (s0, s1) = (geom.strides[0], geom.strides[1]);
    let at = |p: [usize; 3]| geom.index(&p.map(|c| c as isize));
    let s = shot.s;
    let mut traces = vec![Vec::new(); shot.receivers.len()];
    for step in 0..steps {
        {
            let (wave, medium) = field.grids.split_at_mut(8);
            let b = medium[1].as_slice();
            let [p, _, vx, vx_next, vy, vy_next, vz, vz_next] = wave else {
                unreachable!()
            };
            let (p, vx, vy, vz) = (p.as_slice(), vx.as_slice(), vy.as_slice(), vz.as_slice());
            let origin = at([0, 0, 0]);
            fn planes(
                g: &mut Grid3<f64>,
                origin: usize,
                n: usize,
                s0: usize,
            ) -> rayon::slice::ChunksMut<'_, f64> {
                g.as_mut_slice()[origin..origin + n * s0].par_chunks_mut(s0)
            }
            let plane = |g| planes(g, origin, n, s0);
            plane(vx_next)
                .zip(plane(vy_next))
                .zip(plane(vz_next))
                .enumerate()
                .for_each(|(i, ((ox, oy), oz))| {
                    for j in 0..n {
                        let row = at([i, j, 0]);
                        let o = j * s1;
                        for k in 0..n {
                            let c = row + k;
                            let (pc, sb) = (p[c], s * b[c]);
                            ox[o + k] = vx[c] - sb * (p[c + s0] - pc);
                            oy[o + k] = vy[c] - sb * (p[c + s1] - pc);
                            oz[o + k] = vz[c] - sb * (p[c + 1] - pc);
                        }
                    }
                });
        }
        {
            let (wave, medium) = field.grids.split_at_mut(8);
            let kappa = medium[0].as_slice();
            let [p, p_next, _, vx, _, vy, _, vz] = wave else {
                unreachable!()
            };
            let (pp, vx, vy, vz) = (p.as_slice(), vx.as_slice(), vy.as_slice(), vz.as_slice());
            let origin = at([0, 0, 0]);
            p_next.as_mut_slice()[origin..origin + n * s0]
                .par_chunks_mut(s0)
                .enumerate()
                .for_each(|(i, out)| {
                    for j in 0..n {
                        let row = at([i, j, 0]);
                        let o = j * s1;
                        for k in 0..n {
                            let c = row + k;
                            out[o + k] = pp[c]
                                - s * kappa[c]
                                    * (vx[c] - vx[c - s0] + vy[c] - vy[c - s1] + vz[c] - vz[c - 1]);
                        }
                    }
                });
            p_next.as_mut_slice()[at(shot.source)] += shot.amplitudes[step];
            let p_next = p_next.as_slice();
            for (trace, &r) in traces.iter_mut().zip(&shot.receivers) {
                trace.push(p_next[at(r)]);
            }
        }
        for pair in field.grids[..8].chunks_mut(2) {
            pair.swap(0, 1);
        }
    }
    traces
}

/// Times the implementations on each backend (see the module documentation).
pub(crate) fn rows(
    backends: &[CpuBackend],
    pools: &[rayon::ThreadPool],
    caches: &[TuningCache],
    copy: &mut dyn FnMut(&CpuBackend) -> f64,
    (n, steps, repeats): (usize, usize, usize),
    quiet: bool,
) -> Vec<AcousticRow> {
    let mut field = Field::new(n);
    let shot = Shot::new(n, steps);
    let mut rows = Vec::new();
    for ((backend, pool), cache) in backends.iter().zip(pools).zip(caches) {
        let imps: [(&'static str, Imp<'_>); 4] = [
            ("hand-written loop", Imp::ByHand(pool)),
            ("run() per kernel", Imp::RunPerKernel(backend, cache)),
            ("Stages", Imp::Stages(backend, true)),
            ("Stages, no sparse", Imp::Stages(backend, false)),
        ];
        // The first round checks (and tunes the sweeps of `run()`).
        let mut reference: Option<(Vec<f64>, Vec<Vec<f64>>)> = None;
        for (name, imp) in &imps {
            let traces = run(*imp, &mut field, &shot, steps);
            if matches!(imp, Imp::Stages(_, false)) {
                // No source: nothing to compare with.
                continue;
            }
            let p = field.grids[0].as_slice().to_vec();
            match &reference {
                None => reference = Some((p, traces)),
                Some((want, want_traces)) => {
                    let same = want.iter().zip(&p).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(
                        same,
                        "acoustic: {name}'s pressure differs from the loop by hand"
                    );
                    assert!(
                        traces == *want_traces,
                        "acoustic: {name}'s traces differ from the loop by hand"
                    );
                }
            }
        }
        let mut times = vec![Vec::new(); imps.len()];
        let mut copies = Vec::new();
        let mut order: Vec<usize> = (0..imps.len()).collect();
        let mut rng = stencil_core::rng::Rng::new(0x0ac0);
        for _ in 0..repeats {
            rng.shuffle(&mut order);
            for &k in &order {
                let start = Instant::now();
                run(imps[k].1, &mut field, &shot, steps);
                times[k].push(start.elapsed().as_secs_f64() * 1e3 / steps as f64);
            }
            copies.push(copy(backend));
        }
        copies.sort_by(f64::total_cmp);
        let nt_gbs = copies[copies.len() / 2];
        let stats: Vec<Stats> = times.into_iter().map(Stats::of).collect();
        let run_ms = stats[1].median;
        for ((imp, _), stats) in imps.iter().zip(stats) {
            if !quiet {
                eprintln!(
                    "acoustic {n}^3 x{steps}, {} thr, {imp}: {:.2} ms per step",
                    backend.threads(),
                    stats.median
                );
            }
            rows.push(AcousticRow {
                imp,
                threads: backend.threads(),
                n,
                steps,
                stats,
                nt_gbs,
                over_run: run_ms / stats.median,
            });
        }
    }
    rows
}
