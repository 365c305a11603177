//! The noise section: how often the tuner's paired rule ([`PAIRED_RULE`]) would replace a
//! schedule by *the same* schedule on this machine, and what its rounds look like.
//!
//! For W1 (7-point, 256^3) with 1 and 2 threads, `--noise-comparisons` comparisons (default
//! 40) of the default schedule against itself, each as the tuner runs one (interleaved
//! samples of at least 2 ms, undisturbed rounds, early stops), then the same count of the
//! default against the same schedule with streaming stores (a real difference, to show the
//! rule sees one). Reported: how many comparisons replaced the incumbent, the rounds run,
//! the fraction of rounds the rule set aside as disturbed, and the spread of the per-round
//! ratios of the identical pairs (the quantiles of |ratio - 1|). Run it beside
//! `noisy-neighbour` to see the rule under a neighbour's bursts.

use std::time::Instant;

use stencil::{CpuBackend, CpuSchedule, CpuStores, Schedule};
use stencil_tune::engine::paired::compare;
use stencil_tune::engine::{PAIRED_RULE, Sampler, TimedRuns};

use crate::workloads::{Imp, Workload};

/// One line of the section.
pub(crate) struct NoiseRow {
    pub(crate) workload: &'static str,
    pub(crate) threads: usize,
    /// `identical` or `streaming`.
    pub(crate) pair: &'static str,
    pub(crate) comparisons: usize,
    pub(crate) replaced: usize,
    pub(crate) mean_rounds: f64,
    pub(crate) disturbed_fraction: f64,
    /// Quantiles 0.5, 0.9 and 0.99 of |ratio - 1| over every round.
    pub(crate) spread: [f64; 3],
    pub(crate) median_ratio: f64,
    pub(crate) seconds: f64,
}

impl NoiseRow {
    /// The row as one JSON object.
    pub(crate) fn json(&self) -> String {
        format!(
            "{{\"noise\":\"{}\",\"threads\":{},\"pair\":\"{}\",\"comparisons\":{},\
             \"replaced\":{},\"mean_rounds\":{:.2},\"disturbed_fraction\":{:.3},\
             \"abs_log_ratio_p50\":{:.4},\"abs_log_ratio_p90\":{:.4},\"abs_log_ratio_p99\":{:.4},\
             \"median_ratio\":{:.4},\"seconds\":{:.1}}}",
            self.workload,
            self.threads,
            self.pair,
            self.comparisons,
            self.replaced,
            self.mean_rounds,
            self.disturbed_fraction,
            self.spread[0],
            self.spread[1],
            self.spread[2],
            self.median_ratio,
            self.seconds
        )
    }
}

/// Runs the section on `w` (W1) for each backend.
pub(crate) fn rows(backends: &[CpuBackend], w: &mut Workload, comparisons: usize) -> Vec<NoiseRow> {
    let mut rows = Vec::new();
    for backend in backends {
        let plain = CpuSchedule {
            stores: CpuStores::Plain,
            ..CpuSchedule::default()
        };
        let streaming = CpuSchedule {
            stores: CpuStores::Streaming,
            ..plain
        };
        for (pair, second) in [("identical", plain), ("streaming", streaming)] {
            let start = Instant::now();
            let schedules = [Schedule::Cpu(plain), Schedule::Cpu(second)];
            let mut runs = TimedRuns::new(Instant::now(), |p: &[usize]| {
                w.run(Imp::Library(backend, schedules[p[0]]));
                true
            });
            let mut sampler = Sampler::new(&mut runs, false);
            let first = sampler.warm_up(&[0]).expect("runs");
            sampler.calibrate(first);
            let mut replaced = 0;
            let mut rounds = 0;
            let mut disturbed = 0;
            let mut deviations = Vec::new();
            let mut ratios = Vec::new();
            let describe = |p: &[usize]| format!("schedule {}", p[0]);
            for _ in 0..comparisons {
                let c =
                    compare(&mut sampler, &PAIRED_RULE, &[0], &[1], None, &describe).expect("runs");
                replaced += usize::from(c.replaced);
                rounds += c.rounds();
                disturbed += c.rounds()
                    - PAIRED_RULE
                        .undisturbed(&c.incumbent_seconds, &c.challenger_seconds)
                        .len();
                for (a, b) in c.incumbent_seconds.iter().zip(&c.challenger_seconds) {
                    deviations.push((b / a).ln().abs());
                    ratios.push(b / a);
                }
            }
            deviations.sort_by(f64::total_cmp);
            ratios.sort_by(f64::total_cmp);
            let q = |v: &[f64], f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
            rows.push(NoiseRow {
                workload: w.name,
                threads: backend.threads(),
                pair,
                comparisons,
                replaced,
                mean_rounds: rounds as f64 / comparisons as f64,
                disturbed_fraction: disturbed as f64 / rounds.max(1) as f64,
                spread: [
                    q(&deviations, 0.5),
                    q(&deviations, 0.9),
                    q(&deviations, 0.99),
                ],
                median_ratio: q(&ratios, 0.5),
                seconds: start.elapsed().as_secs_f64(),
            });
        }
    }
    rows
}

/// The section's table.
pub(crate) fn table(rows: &[NoiseRow]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nthe tuner's paired rule on this machine (default schedule against itself, and against \
         streaming stores):\n{:<13} {:>3} {:>9} {:>5} {:>8} {:>7} {:>10} {:>8} {:>8} {:>8} {:>8}",
        "workload",
        "thr",
        "pair",
        "cmps",
        "replaced",
        "rounds",
        "disturbed",
        "|ln r|50",
        "|ln r|90",
        "|ln r|99",
        "median r"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<13} {:>3} {:>9} {:>5} {:>8} {:>7.2} {:>9.1}% {:>8.4} {:>8.4} {:>8.4} {:>8.3}",
            r.workload,
            r.threads,
            r.pair,
            r.comparisons,
            r.replaced,
            r.mean_rounds,
            100.0 * r.disturbed_fraction,
            r.spread[0],
            r.spread[1],
            r.spread[2],
            r.median_ratio
        );
    }
    out
}
