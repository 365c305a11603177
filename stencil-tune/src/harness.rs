//! Robust timing of real runs (YASK's method): warm-up, a minimum trial duration, the median of
//! repeats, early abandon of a candidate clearly slower than the best so far, and the spread
//! recorded with the result. (The machine's bandwidth is measured by the backend,
//! `Backend::measure_bandwidth`, and cached with
//! [`TuningCache::store_bandwidth`](crate::cache::TuningCache::store_bandwidth).)
//!
//! The harness times a closure that runs one full sweep; it knows nothing of kernels. Pinning
//! threads is the backend's job (its pool is pinned before the harness is called).

use std::time::{Duration, Instant};

use crate::measure::{Measure, Trial};

/// Settings of [`time_runs`].
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct HarnessConfig {
    /// Untimed runs first (caches, page faults, thread start-up).
    pub warmup_runs: u32,
    /// Each timed repeat lasts at least this long (short sweeps are run several times per
    /// repeat and averaged).
    pub min_repeat: Duration,
    /// Timed repeats; the result is their median.
    pub repeats: u32,
    /// Abandon when a repeat's rate is below this fraction of the best rate so far, that is
    /// when its time exceeds `best / abandon_ratio` (YASK: 0.8). 0 never abandons.
    pub abandon_ratio: f64,
}

impl Default for HarnessConfig {
    fn default() -> Self {
        HarnessConfig {
            warmup_runs: 1,
            min_repeat: Duration::from_millis(20),
            repeats: 3,
            abandon_ratio: 0.8,
        }
    }
}

/// Times `run` (one sweep; `false` means it could not run) under `config`. Returns the median
/// seconds per run and the spread, or `None` when `run` failed or the candidate was abandoned
/// as clearly slower than `best_so_far`.
pub fn time_runs(
    config: &HarnessConfig,
    best_so_far: Option<f64>,
    run: &mut dyn FnMut() -> bool,
) -> Option<Trial> {
    let abandon_above = best_so_far
        .filter(|_| config.abandon_ratio > 0.0)
        .map(|best| best / config.abandon_ratio);
    // Warm-up, which also estimates one run's time.
    let mut estimate = f64::INFINITY;
    for _ in 0..config.warmup_runs.max(1) {
        let start = Instant::now();
        if !run() {
            return None;
        }
        estimate = estimate.min(start.elapsed().as_secs_f64());
    }
    if abandon_above.is_some_and(|limit| estimate > 2.0 * limit) {
        // Even a cold run should not be twice the abandon limit: hopeless.
        tracing::debug!(target: "stencil_tune::harness", estimate, "abandoned after warm-up");
        return None;
    }
    let runs_per_repeat = if estimate > 0.0 {
        (config.min_repeat.as_secs_f64() / estimate)
            .ceil()
            .clamp(1.0, 1.0e6) as u32
    } else {
        1
    };
    let mut times = Vec::with_capacity(config.repeats as usize);
    for _ in 0..config.repeats.max(1) {
        let start = Instant::now();
        for _ in 0..runs_per_repeat {
            if !run() {
                return None;
            }
        }
        let per_run = start.elapsed().as_secs_f64() / f64::from(runs_per_repeat);
        if abandon_above.is_some_and(|limit| per_run > limit) {
            tracing::debug!(target: "stencil_tune::harness", per_run, "abandoned: clearly slower than the best");
            return None;
        }
        times.push(per_run);
    }
    Some(summarise(&times))
}

/// Median and relative spread of repeat times.
fn summarise(times: &[f64]) -> Trial {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = median(&sorted);
    let spread = if median > 0.0 {
        (sorted[n - 1] - sorted[0]) / median
    } else {
        0.0
    };
    Trial {
        seconds: median,
        spread,
        repeats: n as u32,
    }
}

/// The median of `values` (the mean of the middle two for an even count); NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]),
    }
}

/// A [`Measure`] that times a closure with the harness: `run(point)` runs one sweep with the
/// schedule of `point` and returns `false` when the point cannot run.
pub struct TimedMeasure<L, R> {
    /// Harness settings.
    pub config: HarnessConfig,
    legal: L,
    run: R,
}

impl<L, R> TimedMeasure<L, R>
where
    L: Fn(&[usize]) -> bool,
    R: FnMut(&[usize]) -> bool,
{
    /// A source that asks `legal` about points and times `run`.
    pub fn new(config: HarnessConfig, legal: L, run: R) -> Self {
        TimedMeasure { config, legal, run }
    }
}

impl<L, R> Measure for TimedMeasure<L, R>
where
    L: Fn(&[usize]) -> bool,
    R: FnMut(&[usize]) -> bool,
{
    fn is_legal(&self, point: &[usize]) -> bool {
        (self.legal)(point)
    }

    fn measure(&mut self, point: &[usize], best_so_far: Option<f64>) -> Option<Trial> {
        let run = &mut self.run;
        time_runs(&self.config, best_so_far, &mut || run(point))
    }
}

/// What [`time_paired`] measured.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Paired {
    /// Median seconds per run of the first closure.
    pub first: f64,
    /// Median seconds per run of the second closure.
    pub second: f64,
    /// The median over the rounds of the second's time over the first's in the same round.
    pub ratio: f64,
}

/// Times `a` and `b` against each other on a machine whose speed drifts: a warm-up run of
/// each, then `config.repeats` rounds in which each runs once untimed and then for at least
/// `config.min_repeat`, the order swapped every round. A change of the machine's speed
/// (a shared machine's neighbour starting) spoils the ratio of at most the round it falls
/// in, where timing one closure after the other would charge it to whichever ran second.
/// `None` when a run failed.
pub fn time_paired(
    config: &HarnessConfig,
    a: &mut dyn FnMut() -> bool,
    b: &mut dyn FnMut() -> bool,
) -> Option<Paired> {
    let origin = Instant::now();
    time_paired_on(&|| origin.elapsed().as_secs_f64(), config, a, b)
}

/// [`time_paired`] with the time in seconds read from `clock`.
fn time_paired_on(
    clock: &dyn Fn() -> f64,
    config: &HarnessConfig,
    a: &mut dyn FnMut() -> bool,
    b: &mut dyn FnMut() -> bool,
) -> Option<Paired> {
    let rounds = config.repeats.max(1) as usize;
    let mut estimate = [0.0f64; 2];
    for (side, e) in estimate.iter_mut().enumerate() {
        let run: &mut dyn FnMut() -> bool = if side == 0 { &mut *a } else { &mut *b };
        let start = clock();
        if !run() {
            return None;
        }
        *e = clock() - start;
    }
    let runs = estimate.map(|e| {
        if e > 0.0 {
            (config.min_repeat.as_secs_f64() / e)
                .ceil()
                .clamp(1.0, 1.0e6) as u32
        } else {
            1
        }
    });
    let mut times = [Vec::with_capacity(rounds), Vec::with_capacity(rounds)];
    for round in 0..rounds {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for side in order {
            let run: &mut dyn FnMut() -> bool = if side == 0 { &mut *a } else { &mut *b };
            if !run() {
                return None;
            }
            let start = clock();
            for _ in 0..runs[side] {
                if !run() {
                    return None;
                }
            }
            times[side].push((clock() - start) / f64::from(runs[side]));
        }
    }
    let [ta, tb] = times;
    let ratios: Vec<f64> = ta.iter().zip(&tb).map(|(x, y)| y / x).collect();
    Some(Paired {
        first: median(&ta),
        second: median(&tb),
        ratio: median(&ratios),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn quick() -> HarnessConfig {
        HarnessConfig {
            warmup_runs: 2,
            min_repeat: Duration::from_millis(2),
            repeats: 5,
            abandon_ratio: 0.8,
        }
    }

    fn spin(d: Duration) {
        let start = Instant::now();
        while start.elapsed() < d {
            std::hint::spin_loop();
        }
    }

    #[test]
    fn median_and_spread_of_known_times() {
        let t = summarise(&[3.0, 1.0, 2.0]);
        assert_eq!(t.seconds, 2.0);
        assert_eq!(t.spread, 1.0);
        assert_eq!(t.repeats, 3);
        let t = summarise(&[4.0, 1.0, 2.0, 3.0]);
        assert_eq!(t.seconds, 2.5);
        assert!((t.spread - 3.0 / 2.5).abs() < 1e-15);
    }

    #[test]
    fn timing_is_close_to_the_real_duration_and_counts_warmup_and_repeats() {
        let calls = Cell::new(0u32);
        let mut run = || {
            calls.set(calls.get() + 1);
            spin(Duration::from_micros(500));
            true
        };
        let trial = time_runs(&quick(), None, &mut run).expect("no abandon without a best");
        assert!(
            trial.seconds >= 0.0005 && trial.seconds < 0.05,
            "{}",
            trial.seconds
        );
        assert_eq!(trial.repeats, 5);
        // 2 warm-up runs, then 5 repeats of at least 2 ms each at 0.5 ms per run: >= 4 runs each.
        assert!(calls.get() >= 2 + 5 * 4, "{} calls", calls.get());
    }

    #[test]
    fn a_clearly_slower_candidate_is_abandoned_early() {
        let calls = Cell::new(0u32);
        let mut run = || {
            calls.set(calls.get() + 1);
            spin(Duration::from_micros(1000));
            true
        };
        // Best so far 0.3 ms: a 1 ms candidate is more than 1/0.8 times slower.
        assert_eq!(time_runs(&quick(), Some(0.0003), &mut run), None);
        // Abandoned after the warm-up (1 ms > 2 * 0.375 ms): no repeat ran.
        assert_eq!(calls.get(), 2);
        // A candidate much faster than the best is kept (generous margins: tests run in
        // parallel on a loaded machine), and so is a slower one under a lenient ratio.
        assert!(time_runs(&quick(), Some(0.05), &mut run).is_some());
        let lenient = HarnessConfig {
            abandon_ratio: 0.01,
            ..quick()
        };
        assert!(time_runs(&lenient, Some(0.0005), &mut run).is_some());
    }

    #[test]
    fn a_failing_run_gives_none() {
        let mut run = || false;
        assert_eq!(time_runs(&quick(), None, &mut run), None);
    }

    #[test]
    fn timed_measure_asks_legality_and_times_the_point() {
        let mut seen = Vec::new();
        let mut m = TimedMeasure::new(
            quick(),
            |p: &[usize]| p[0] != 1,
            |p: &[usize]| {
                seen.push(p[0]);
                true
            },
        );
        assert!(!m.is_legal(&[1]));
        assert!(m.is_legal(&[2]));
        assert!(m.measure(&[2], None).is_some());
        assert!(seen.iter().all(|&v| v == 2) && !seen.is_empty());
    }

    /// A simulated machine: each run advances the clock by its cost times the machine's
    /// slowness, which is 1 for the first `fast_runs` runs of either closure and then 2 (a
    /// shared machine's neighbour starts).
    struct Drifting {
        now: Cell<f64>,
        runs: Cell<u32>,
        fast_runs: u32,
    }

    impl Drifting {
        fn ratio(fast_runs: u32, a: f64, b: f64) -> f64 {
            let m = Drifting {
                now: Cell::new(0.0),
                runs: Cell::new(0),
                fast_runs,
            };
            let run = |seconds: f64| {
                let n = m.runs.get();
                m.runs.set(n + 1);
                let slowness = if n < m.fast_runs { 1.0 } else { 2.0 };
                m.now.set(m.now.get() + seconds * slowness);
                true
            };
            let config = HarnessConfig {
                warmup_runs: 1,
                min_repeat: Duration::from_millis(20),
                repeats: 5,
                abandon_ratio: 0.0,
            };
            time_paired_on(&|| m.now.get(), &config, &mut || run(a), &mut || run(b))
                .expect("runs")
                .ratio
        }
    }

    #[test]
    fn paired_rounds_cancel_a_change_of_the_machines_speed() {
        // Runs of 2 ms: about 10 per side per round plus the untimed one, so a round is
        // about 22 runs; the machine halves its speed in round 2, 3 or 4 of 5. Timed one
        // after the other, the second closure would look twice as slow; the ratio of the two
        // medians is off too.
        for fast_runs in [50, 60, 70, 80, 100] {
            let same = Drifting::ratio(fast_runs, 2e-3, 2e-3);
            assert!((same - 1.0).abs() < 1e-9, "equal closures: ratio {same}");
            let slower = Drifting::ratio(fast_runs, 2e-3, 3e-3);
            assert!(
                (slower - 1.5).abs() < 1e-9,
                "1.5x slower closure: ratio {slower}"
            );
        }
    }

    #[test]
    fn a_failed_paired_run_is_reported() {
        let config = quick();
        assert!(time_paired(&config, &mut || true, &mut || false).is_none());
        assert!(time_paired(&config, &mut || false, &mut || true).is_none());
    }
}
