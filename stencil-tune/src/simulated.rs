//! Simulated measurement sources: recorded timings replayed, or synthetic landscapes, so the
//! strategies are tested without timing noise.
//!
//! [`Simulated`] answers from a function of the point (`None` = illegal) and keeps a log of
//! every point measured, so tests can check that nothing illegal was measured and nothing was
//! measured twice. [`landscapes`] holds the synthetic functions the tests search.
//!
//! [`NoisyRuns`] is a simulated machine for the tuning engine
//! ([`Runs`](crate::engine::Runs)): each run of a point takes the landscape's time with
//! jitter and the bursts of a noisy neighbour ([`Noise`]), on a simulated clock, so a
//! decision that would take seconds of real runs is tested in microseconds.

use std::collections::HashMap;
use std::time::Duration;

use crate::measure::{Measure, Trial};

/// A measurement source that replays known times.
pub struct Simulated<F> {
    seconds: F,
    delay: Duration,
    /// Every point measured, in order.
    pub log: Vec<Vec<usize>>,
}

impl<F: Fn(&[usize]) -> Option<f64>> Simulated<F> {
    /// Times from `seconds` (`None` marks an illegal point).
    pub fn new(seconds: F) -> Self {
        Simulated {
            seconds,
            delay: Duration::ZERO,
            log: Vec::new(),
        }
    }

    /// Sleeps `delay` in every measurement (to test time budgets).
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// A simulated source replaying recorded `(point, seconds)` pairs; unrecorded points are
/// illegal.
pub fn replay(
    records: &[(Vec<usize>, f64)],
) -> Simulated<impl Fn(&[usize]) -> Option<f64> + use<>> {
    let table: HashMap<Vec<usize>, f64> = records.iter().cloned().collect();
    Simulated::new(move |p: &[usize]| table.get(p).copied())
}

impl<F: Fn(&[usize]) -> Option<f64>> Measure for Simulated<F> {
    fn is_legal(&self, point: &[usize]) -> bool {
        (self.seconds)(point).is_some()
    }

    fn measure(&mut self, point: &[usize], _best_so_far: Option<f64>) -> Option<Trial> {
        self.log.push(point.to_vec());
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        (self.seconds)(point).map(Trial::exact)
    }
}

/// The noise of a simulated machine: every run's time is multiplied by `1 + jitter * u`
/// (`u` uniform in `[-1, 1]`), and during a neighbour's burst by `burst_factor`. A burst
/// starts before a run with probability `burst_probability` and lasts 1 to `burst_runs`
/// runs.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Noise {
    /// Relative jitter of every run.
    pub jitter: f64,
    /// Chance that a burst starts before a run.
    pub burst_probability: f64,
    /// Slowdown during a burst.
    pub burst_factor: f64,
    /// Longest burst, in runs.
    pub burst_runs: usize,
}

impl Noise {
    /// No noise at all.
    pub const NONE: Noise = Noise {
        jitter: 0.0,
        burst_probability: 0.0,
        burst_factor: 1.0,
        burst_runs: 1,
    };

    /// Heavy-tailed noise: 1% jitter, and a 3x slowdown on 10% of runs (single-run bursts).
    pub const SPIKES: Noise = Noise {
        jitter: 0.01,
        burst_probability: 0.10,
        burst_factor: 3.0,
        burst_runs: 1,
    };

    /// A noisy neighbour: 2% jitter, and 2x bursts of 1 to 4 runs starting before 5% of runs.
    pub const NEIGHBOUR: Noise = Noise {
        jitter: 0.02,
        burst_probability: 0.05,
        burst_factor: 2.0,
        burst_runs: 4,
    };
}

/// A simulated machine (see the module documentation): runs answer from `seconds` (`None`:
/// the point cannot run) with [`Noise`], and the clock advances by every run's time.
pub struct NoisyRuns<F> {
    seconds: F,
    noise: Noise,
    rng: stencil_core::rng::Rng,
    clock: f64,
    burst_left: usize,
    /// Every point run, in order.
    pub log: Vec<Vec<usize>>,
    /// Every run's time, in order.
    pub times: Vec<f64>,
}

impl<F: Fn(&[usize]) -> Option<f64>> NoisyRuns<F> {
    /// A machine whose quiet run of `point` takes `seconds(point)`, with `noise` drawn from
    /// `seed`.
    pub fn new(seconds: F, noise: Noise, seed: u64) -> NoisyRuns<F> {
        NoisyRuns {
            seconds,
            noise,
            rng: stencil_core::rng::Rng::new(seed),
            clock: 0.0,
            burst_left: 0,
            log: Vec::new(),
            times: Vec::new(),
        }
    }
}

impl<F: Fn(&[usize]) -> Option<f64>> crate::engine::Runs for NoisyRuns<F> {
    fn run(&mut self, point: &[usize]) -> Option<f64> {
        self.log.push(point.to_vec());
        let quiet = (self.seconds)(point)?;
        if self.burst_left == 0 && self.rng.chance(self.noise.burst_probability) {
            self.burst_left = 1 + self.rng.index(self.noise.burst_runs.max(1));
        }
        let factor = if self.burst_left > 0 {
            self.burst_left -= 1;
            self.noise.burst_factor
        } else {
            1.0
        };
        let t = quiet * (1.0 + self.noise.jitter * self.rng.uniform(-1.0, 1.0)) * factor;
        self.clock += t;
        self.times.push(t);
        Some(t)
    }

    fn elapsed(&self) -> f64 {
        self.clock
    }
}

/// Synthetic landscapes: seconds as functions of a point, each with one known global optimum.
pub mod landscapes {
    /// A separable bowl: `1 + sum_d weight * (p_d - centre_d)^2`; the optimum is `centre`.
    pub fn bowl(centre: Vec<usize>, weight: f64) -> impl Fn(&[usize]) -> f64 {
        move |p: &[usize]| {
            1.0 + p
                .iter()
                .zip(&centre)
                .map(|(&x, &c)| weight * (x as f64 - c as f64).powi(2))
                .sum::<f64>()
        }
    }

    /// A rugged bowl (Rastrigin-like): the bowl plus a ripple of period 3 along every
    /// dimension, so there is a local optimum every third index and one global optimum at
    /// `centre`.
    pub fn rugged(centre: Vec<usize>, weight: f64, ripple: f64) -> impl Fn(&[usize]) -> f64 {
        move |p: &[usize]| {
            1.0 + p
                .iter()
                .zip(&centre)
                .map(|(&x, &c)| {
                    let d = x as f64 - c as f64;
                    weight * d * d + ripple * (1.0 - (2.0 * std::f64::consts::PI * d / 3.0).cos())
                })
                .sum::<f64>()
        }
    }

    /// A plateau of 1 second with one needle of `needle_seconds` at `needle`: only a model
    /// that hints at the needle can find it quickly.
    pub fn plateau_needle(needle: Vec<usize>, needle_seconds: f64) -> impl Fn(&[usize]) -> f64 {
        move |p: &[usize]| {
            if p == needle.as_slice() {
                needle_seconds
            } else {
                1.0
            }
        }
    }

    /// Deterministic pseudo-random seconds in `[1, 2)` per point (a recorded-looking table
    /// with no structure).
    pub fn noise(seed: u64) -> impl Fn(&[usize]) -> f64 {
        move |p: &[usize]| {
            let mut h = seed ^ 0x9e37_79b9_7f4a_7c15;
            for &x in p {
                h = (h ^ x as u64).wrapping_mul(0x0000_0100_0000_01b3);
                h ^= h >> 29;
            }
            let mut rng = stencil_core::rng::Rng::new(h);
            1.0 + rng.next_f64()
        }
    }
}
