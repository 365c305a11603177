//! The time-loop rows: W1 and W3 for 100 steps and W2 for 20, per step, for the hand-written
//! swap loop, `run()` then swap every step (the tuned sweep), and `Steps` (its default
//! schedule, the best of a sweep over a representative part of its tuning space, and tuned),
//! each with its fraction of the single-sweep bound: the time the kernel's compulsory bytes
//! per point take at the non-temporal copy bandwidth measured in the same rounds, over the
//! measured time per step (above 1: faster than any single-sweep code).
//!
//! The representative space: every temporal blocking depth and every tile or slab extent of
//! the backend's time-loop tuning space (`Backend::steps_tuning_space`), at the default
//! register rows and prefetch, plus its baseline (plain steps under the tuned sweep): each
//! point timed quickly (the faster of two runs of its trial step count), the three fastest
//! then timed interleaved over the loop's steps and the best median kept.

use std::time::Instant;

use stencil::{CpuBackend, CpuSchedule, Schedule, TuningCache, analysis};

use crate::report::{Row, Stats};
use crate::workloads::{Imp, StepsImp, Workload};

/// What the first (tuning) call of a time loop did, against the default schedule's per-step
/// time measured in the same rounds.
pub(crate) struct StepsTunerRow {
    /// Workload name (with its step count).
    pub(crate) workload: &'static str,
    /// Threads.
    pub(crate) threads: usize,
    /// Trials of the first call.
    pub(crate) trials: usize,
    /// Seconds the first call spent tuning.
    pub(crate) tuning_seconds: f64,
    /// Median ms per step, tuned.
    pub(crate) tuned_ms: f64,
    /// Median ms per step, default schedule.
    pub(crate) default_ms: f64,
    /// Median ms per step, the best of the representative space.
    pub(crate) best_ms: f64,
    /// Points of the representative space timed.
    pub(crate) space: usize,
    /// Median ms per step of `run()` then swap (the tuned sweep).
    pub(crate) sweep_ms: f64,
    /// Whether the first call's tuning was cut short by its budget.
    pub(crate) cut_short: bool,
    /// The first call's evidence in words.
    pub(crate) evidence: String,
    /// The tuned schedule in words.
    pub(crate) schedule: String,
    /// The best schedule of the representative space in words.
    pub(crate) best: String,
}

impl StepsTunerRow {
    /// The row as one JSON object.
    pub(crate) fn json(&self) -> String {
        format!(
            "{{\"steps_tuner\":\"{}\",\"threads\":{},\"trials\":{},\"tuning_s\":{:.3},\
             \"cut_short\":{},\"tuned_ms_per_step\":{:.4},\"default_ms_per_step\":{:.4},\
             \"best_ms_per_step\":{:.4},\"sweep_ms_per_step\":{:.4},\"space\":{},\
             \"tuned_over_best\":{:.3},\"tuned_over_default\":{:.3},\
             \"speedup_over_run_swap\":{:.3},\"schedule\":\"{}\",\"best\":\"{}\",\
             \"evidence\":\"{}\"}}",
            self.workload,
            self.threads,
            self.trials,
            self.tuning_seconds,
            self.cut_short,
            self.tuned_ms,
            self.default_ms,
            self.best_ms,
            self.sweep_ms,
            self.space,
            self.tuned_ms / self.best_ms,
            self.tuned_ms / self.default_ms,
            self.sweep_ms / self.tuned_ms,
            self.schedule,
            self.best,
            self.evidence
        )
    }
}

/// The time loop's name and step count for workload `name`.
fn time_loop_of(name: &str) -> (&'static str, usize) {
    match name.as_bytes()[1] {
        b'1' => ("W1 7-pt x100 steps", 100),
        b'2' => ("W2 27-pt x20 steps", 20),
        _ => ("W3 5-pt x100 steps", 100),
    }
}

/// Everything the time-loop section needs from the bench.
pub(crate) struct Section<'a> {
    pub(crate) backends: &'a [CpuBackend],
    pub(crate) pools: &'a [rayon::ThreadPool],
    pub(crate) caches: &'a [TuningCache],
    pub(crate) repeats: usize,
    /// The non-temporal copy of `backend`, timed in the same rounds.
    pub(crate) copy: &'a mut dyn FnMut(&CpuBackend) -> f64,
}

/// Times the time loops of the workloads that have one (see the module documentation).
pub(crate) fn rows(
    section: &mut Section<'_>,
    workloads: &mut [Workload],
    quiet: bool,
) -> (Vec<Row>, Vec<StepsTunerRow>) {
    let mut rows = Vec::new();
    let mut tuner = Vec::new();
    for w in workloads.iter_mut().filter(|w| w.steps_too()) {
        w.steady();
        let (name, steps) = time_loop_of(w.name);
        let bytes_per_point = analysis::bytes_per_point(w.stencil.kernel());
        for ((backend, pool), cache) in section
            .backends
            .iter()
            .zip(section.pools)
            .zip(section.caches)
        {
            // The tuned time loop's first call against the hand-written loop, from one state.
            let start = w.state();
            w.steps(StepsImp::NaiveRayon(pool), steps);
            let by_hand = w.state();
            w.set_state(&start);
            let first = w
                .steps(StepsImp::Steps(backend, None, cache), steps)
                .expect("a Steps report");
            check(w.name, &by_hand, &w.state());
            if !quiet {
                eprintln!("{name} {} thr: {}", backend.threads(), first.tuning);
            }
            let default = Schedule::Cpu(CpuSchedule::default());
            let (best, best_name, space) = best_of_space(section, backend, cache, w, steps);
            let imps: [(&str, StepsImp<'_>); 5] = [
                ("naive swap loop", StepsImp::NaiveRayon(pool)),
                ("run() + swap", StepsImp::Launches(backend, cache)),
                (
                    "Steps default",
                    StepsImp::Steps(backend, Some(default), cache),
                ),
                ("Steps best", StepsImp::Steps(backend, Some(best), cache)),
                ("Steps tuned", StepsImp::Steps(backend, None, cache)),
            ];
            let (per_step, nt_gbs) = interleaved(section, backend, w, &imps, steps);
            let naive_ms = per_step[0].median;
            for ((imp, _), stats) in imps.iter().zip(&per_step) {
                let schedule = match *imp {
                    "Steps tuned" => Some(first.tuning.description.clone()),
                    "Steps best" => Some(best_name.clone()),
                    _ => None,
                };
                rows.push(Row {
                    workload: name,
                    imp: imp.to_string(),
                    threads: backend.threads(),
                    stats: *stats,
                    points: w.points(),
                    bytes_per_point,
                    nt_gbs,
                    naive_rayon_ms: naive_ms,
                    schedule,
                });
            }
            tuner.push(StepsTunerRow {
                workload: name,
                threads: backend.threads(),
                trials: first.tuning.trials,
                tuning_seconds: first.tuning.tuning_seconds,
                tuned_ms: per_step[4].median,
                default_ms: per_step[2].median,
                best_ms: per_step[3].median,
                space,
                sweep_ms: per_step[1].median,
                cut_short: first.tuning.cut_short,
                evidence: first.tuning.evidence_summary(),
                schedule: first.tuning.description.clone(),
                best: best_name,
            });
        }
    }
    (rows, tuner)
}

/// The best schedule of the representative part of the time-loop tuning space (see the module
/// documentation), its description and the number of points timed.
fn best_of_space(
    section: &mut Section<'_>,
    backend: &CpuBackend,
    cache: &TuningCache,
    w: &mut Workload,
    steps: usize,
) -> (Schedule, String, usize) {
    use stencil::Backend;
    // The tuned sweep (a cache hit: the first call tuned it).
    let sweep = w
        .run(Imp::Tuned(backend, cache))
        .expect("library runs report")
        .schedule;
    let kernel = w.stencil.kernel();
    let space =
        <CpuBackend as Backend<f64>>::steps_tuning_space(backend, kernel, &w.shape, steps, &sweep)
            .expect("the CPU backend tunes time loops");
    let default = space.default_point.clone().expect("a default point");
    let n_dims = space.space().dims().len();
    let mut points: Vec<Vec<usize>> = (0..space.space().n_points())
        .map(|i| space.space().point_at(i))
        .filter(|p| {
            // Depths and extents at the default register rows and prefetch, default sweep.
            p[3] == default[3] && p[4] == default[4] && p[n_dims - 1] == 0
        })
        .filter(|p| space.schedule(p).is_some())
        .collect();
    points.extend(space.baselines.iter().cloned());
    let trial_steps = stencil_core::time_loop::trial_steps(steps);
    let mut quick: Vec<(f64, Vec<usize>)> = points
        .iter()
        .map(|p| {
            let schedule = space.schedule(p).expect("legal");
            let t = (0..2)
                .map(|_| {
                    let start = Instant::now();
                    w.steps(StepsImp::Steps(backend, Some(schedule), cache), trial_steps);
                    start.elapsed().as_secs_f64()
                })
                .fold(f64::INFINITY, f64::min);
            (t, p.clone())
        })
        .collect();
    quick.sort_by(|a, b| a.0.total_cmp(&b.0));
    quick.truncate(3);
    let finalists: Vec<(&str, StepsImp<'_>)> = quick
        .iter()
        .map(|(_, p)| {
            (
                "finalist",
                StepsImp::Steps(backend, Some(space.schedule(p).expect("legal")), cache),
            )
        })
        .collect();
    let (stats, _) = interleaved(section, backend, w, &finalists, steps);
    let winner = (0..stats.len())
        .min_by(|&a, &b| stats[a].median.total_cmp(&stats[b].median))
        .expect("finalists");
    let point = &quick[winner].1;
    (
        space.schedule(point).expect("legal"),
        space.space().describe(point),
        points.len(),
    )
}

/// Per-step times of each implementation, timed interleaved over `repeats` rounds in a new
/// pseudo-random order each round (after one untimed round), and the non-temporal copy
/// bandwidth timed in the same rounds.
fn interleaved(
    section: &mut Section<'_>,
    backend: &CpuBackend,
    w: &mut Workload,
    imps: &[(&str, StepsImp<'_>)],
    steps: usize,
) -> (Vec<Stats>, f64) {
    let mut times = vec![Vec::new(); imps.len()];
    let mut copies = Vec::new();
    let mut order: Vec<usize> = (0..imps.len()).collect();
    // Seeded: the same orders in every run of the bench.
    let mut rng = stencil_core::rng::Rng::new(0x9E37_79B9_7F4A_7C15);
    for round in 0..=section.repeats {
        rng.shuffle(&mut order);
        for &k in &order {
            let start = Instant::now();
            w.steps(imps[k].1, steps);
            if round > 0 {
                times[k].push(start.elapsed().as_secs_f64() * 1e3 / steps as f64);
            }
        }
        let gbs = (section.copy)(backend);
        if round > 0 {
            copies.push(gbs);
        }
    }
    copies.sort_by(f64::total_cmp);
    let nt_gbs = copies[copies.len() / 2];
    (times.into_iter().map(Stats::of).collect(), nt_gbs)
}

/// Checks the time loop's state against the hand-written loop's (to 1e-9 relative: the
/// baseline and the library may add in different orders, over many steps).
fn check(name: &str, want: &[f64], got: &[f64]) {
    let bad = want
        .iter()
        .zip(got)
        .filter(|(a, b)| (*a - *b).abs() > 1e-9 * a.abs().max(1.0) || b.is_nan())
        .count();
    assert!(
        bad == 0,
        "bench: {name} time loop: {bad} values differ from the hand-written loop"
    );
}

/// The time loops' tuning table.
pub(crate) fn tuner_table(rows: &[StepsTunerRow]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\ntime-loop tuning (first call, quick; ms per step, medians in the same rounds; best: of \
         the representative space; x run+swap: run() + swap over tuned):\n{:<19} {:>3} {:>6} \
         {:>8} {:>9} {:>9} {:>9} {:>9} {:>10} {:>12} {:>10}  schedule",
        "time loop",
        "thr",
        "trials",
        "tuning s",
        "tuned",
        "default",
        "best",
        "run+swap",
        "tuned/best",
        "tuned/default",
        "x run+swap"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<19} {:>3} {:>6} {:>7.2}{} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>10.3} {:>12.3} {:>10.2}  {}",
            r.workload,
            r.threads,
            r.trials,
            r.tuning_seconds,
            if r.cut_short { "*" } else { " " },
            r.tuned_ms,
            r.default_ms,
            r.best_ms,
            r.sweep_ms,
            r.tuned_ms / r.best_ms,
            r.tuned_ms / r.default_ms,
            r.sweep_ms / r.tuned_ms,
            r.schedule
        );
    }
    let _ = writeln!(
        out,
        "(* the first call's tuning was cut short by its time budget)"
    );
    out
}
