//! The engine's only contact with the machine: [`Runs`], one timed run of a candidate at a
//! time, and the clock the budget is read from.
//!
//! [`TimedRuns`] times a closure that runs one sweep (or one trial loop) of a point with
//! [`Instant`]; the simulated sources of [`simulated`](crate::simulated) answer from a
//! landscape with noise and advance a simulated clock, so every decision of the engine is
//! tested in milliseconds. [`Sampler`] turns runs into samples: several runs per sample when
//! one run is shorter than [`MIN_SAMPLE_SECONDS`] (so a sample is long against the clock's
//! resolution and the scheduler's tick), and an untimed run of the same point before a timed
//! one when the working set is cache-sized (so a sample never inherits another candidate's
//! cache state).

use std::time::Instant;

/// One run of a point at a time, and a clock.
pub trait Runs {
    /// Runs `point` once (one sweep, or one trial loop of a time loop); its time in
    /// seconds, or `None` when the point cannot run.
    fn run(&mut self, point: &[usize]) -> Option<f64>;

    /// Seconds since the tuning began: the clock the engine's budget is read from.
    fn elapsed(&self) -> f64;
}

/// [`Runs`] over a closure that runs a point and says whether it could (`false`: it
/// failed), timed with [`Instant`].
pub struct TimedRuns<F> {
    start: Instant,
    run: F,
}

impl<F: FnMut(&[usize]) -> bool> TimedRuns<F> {
    /// Runs timed from `start` (when the tuning began, bandwidth measurement included).
    pub fn new(start: Instant, run: F) -> TimedRuns<F> {
        TimedRuns { start, run }
    }
}

impl<F: FnMut(&[usize]) -> bool> Runs for TimedRuns<F> {
    fn run(&mut self, point: &[usize]) -> Option<f64> {
        let start = Instant::now();
        (self.run)(point).then(|| start.elapsed().as_secs_f64())
    }

    fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }
}

/// A sample lasts at least this long: runs shorter than it are repeated within one sample
/// and averaged (2 ms: many times the clock's resolution, and short against the 4 ms
/// scheduler tick that a neighbour's wake-up costs).
pub const MIN_SAMPLE_SECONDS: f64 = 2.0e-3;

/// Most runs in one sample.
const MAX_BATCH: usize = 4096;

/// Samples of points: `batch` runs per sample, preceded by an untimed run of the same point
/// when `settle` is set (see the module documentation).
pub struct Sampler<'r> {
    runs: &'r mut dyn Runs,
    /// Runs per sample (at least 1).
    pub batch: usize,
    /// Whether each sample is preceded by an untimed run of the same point.
    pub settle: bool,
    /// Runs made so far (timed or not).
    pub runs_made: usize,
}

impl<'r> Sampler<'r> {
    /// A sampler over `runs`: one run per sample, no settling run, until
    /// [`calibrate`](Self::calibrate).
    pub fn new(runs: &'r mut dyn Runs, settle: bool) -> Sampler<'r> {
        Sampler {
            runs,
            batch: 1,
            settle,
            runs_made: 0,
        }
    }

    /// Sets the batch from one run's time (`seconds`): enough runs that a sample lasts
    /// [`MIN_SAMPLE_SECONDS`].
    pub fn calibrate(&mut self, seconds: f64) {
        self.batch = if seconds > 0.0 && seconds.is_finite() {
            ((MIN_SAMPLE_SECONDS / seconds).ceil() as usize).clamp(1, MAX_BATCH)
        } else {
            1
        };
    }

    /// One untimed run of `point` (the first run of a tuning: code, pages and caches warm
    /// up); its time, or `None` when it failed.
    pub fn warm_up(&mut self, point: &[usize]) -> Option<f64> {
        self.runs_made += 1;
        self.runs.run(point)
    }

    /// One sample of `point`: seconds per run, or `None` when a run failed.
    pub fn sample(&mut self, point: &[usize]) -> Option<f64> {
        if self.settle {
            self.runs_made += 1;
            self.runs.run(point)?;
        }
        let mut total = 0.0;
        for _ in 0..self.batch {
            self.runs_made += 1;
            total += self.runs.run(point)?;
        }
        Some(total / self.batch as f64)
    }

    /// Seconds since the tuning began.
    pub fn elapsed(&self) -> f64 {
        self.runs.elapsed()
    }

    /// The wall time one sample of a point running `seconds` per run costs.
    pub fn sample_cost(&self, seconds: f64) -> f64 {
        seconds * (self.batch + usize::from(self.settle)) as f64
    }
}
