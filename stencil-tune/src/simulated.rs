//! Simulated measurement sources: recorded timings replayed, or synthetic landscapes, so the
//! strategies are tested without timing noise.
//!
//! [`Simulated`] answers from a function of the point (`None` = illegal) and keeps a log of
//! every point measured, so tests can check that nothing illegal was measured and nothing was
//! measured twice. [`landscapes`] holds the synthetic functions the tests search.

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
