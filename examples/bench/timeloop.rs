//! The time-loop rows: W1 and W3 for 100 steps and W2 for 20, per step, for the hand-written
//! swap loop, `run()` then swap every step (the tuned sweep), and `Steps` (its default
//! schedule, and tuned), each with its fraction of the single-sweep bound: the time the
//! kernel's compulsory bytes per point take at the non-temporal copy bandwidth measured in the
//! same rounds, over the measured time per step (above 1: faster than any single-sweep code).

use std::time::Instant;

use stencil::{CpuBackend, CpuSchedule, Schedule, TuningCache, analysis};

use crate::report::{Row, Stats};
use crate::workloads::{StepsImp, Workload};

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
    /// The tuned schedule in words.
    pub(crate) schedule: String,
}

impl StepsTunerRow {
    /// The row as one JSON object.
    pub(crate) fn json(&self) -> String {
        format!(
            "{{\"steps_tuner\":\"{}\",\"threads\":{},\"trials\":{},\"tuning_s\":{:.3},\
             \"tuned_ms_per_step\":{:.4},\"default_ms_per_step\":{:.4},\"schedule\":\"{}\"}}",
            self.workload,
            self.threads,
            self.trials,
            self.tuning_seconds,
            self.tuned_ms,
            self.default_ms,
            self.schedule
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
            let imps: [(&str, StepsImp<'_>); 4] = [
                ("naive swap loop", StepsImp::NaiveRayon(pool)),
                ("run() + swap", StepsImp::Launches(backend, cache)),
                (
                    "Steps default",
                    StepsImp::Steps(backend, Some(default), cache),
                ),
                ("Steps tuned", StepsImp::Steps(backend, None, cache)),
            ];
            let (per_step, nt_gbs) = interleaved(section, backend, w, &imps, steps);
            let naive_ms = per_step[0].median;
            for ((imp, _), stats) in imps.iter().zip(&per_step) {
                rows.push(Row {
                    workload: name,
                    imp: imp.to_string(),
                    threads: backend.threads(),
                    stats: *stats,
                    points: w.points(),
                    bytes_per_point,
                    nt_gbs,
                    naive_rayon_ms: naive_ms,
                    schedule: (*imp == "Steps tuned").then(|| first.tuning.description.clone()),
                });
            }
            tuner.push(StepsTunerRow {
                workload: name,
                threads: backend.threads(),
                trials: first.tuning.trials,
                tuning_seconds: first.tuning.tuning_seconds,
                tuned_ms: per_step[3].median,
                default_ms: per_step[2].median,
                schedule: first.tuning.description.clone(),
            });
        }
    }
    (rows, tuner)
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
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    for round in 0..=section.repeats {
        for i in (1..order.len()).rev() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            order.swap(i, (seed % (i as u64 + 1)) as usize);
        }
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
        "\ntime-loop tuning (first call, quick, on copies of the grids):\n{:<19} {:>3} {:>6} {:>8} {:>12} {:>14} {:>13}  schedule",
        "time loop", "thr", "trials", "tuning s", "tuned ms/st", "default ms/st", "tuned/default"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<19} {:>3} {:>6} {:>8.2} {:>12.3} {:>14.3} {:>13.3}  {}",
            r.workload,
            r.threads,
            r.trials,
            r.tuning_seconds,
            r.tuned_ms,
            r.default_ms,
            r.tuned_ms / r.default_ms,
            r.schedule
        );
    }
    out
}
