//! What the strategies measure through: the [`Measure`] trait and the [`Trial`] it returns.
//!
//! A measurement source turns a point of a [`SearchSpace`](stencil_core::schedule::SearchSpace)
//! into a time. Real sources time a backend with the [`harness`](crate::harness); simulated
//! ones ([`simulated`](crate::simulated)) replay known timings so the strategies are tested
//! without noise. Strategies only ever compare [`Trial::seconds`]: lower is better.

/// One measured candidate.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Trial {
    /// Seconds per sweep: the median over the repeats.
    pub seconds: f64,
    /// Relative spread of the repeats, `(max - min) / median` (0 for a single repeat).
    pub spread: f64,
    /// Number of timed repeats behind the median.
    pub repeats: u32,
}

impl Trial {
    /// A trial of one exact time (simulated sources, recorded timings).
    pub fn exact(seconds: f64) -> Trial {
        Trial {
            seconds,
            spread: 0.0,
            repeats: 1,
        }
    }
}

/// A source of measurements of points of a search space.
pub trait Measure {
    /// Whether `point` is a legal schedule. Strategies never measure, and never return, a point
    /// for which this is `false`. The default accepts every point; sources that only find out
    /// by trying return `None` from [`measure`](Measure::measure) instead.
    fn is_legal(&self, point: &[usize]) -> bool {
        let _ = point;
        true
    }

    /// Measures `point`. `best_so_far` is the best time of the search so far, so a source may
    /// abandon a candidate that is clearly slower (YASK). `None` means the point is illegal, or
    /// failed, or was abandoned; it is never chosen.
    fn measure(&mut self, point: &[usize], best_so_far: Option<f64>) -> Option<Trial>;
}

impl<M: Measure + ?Sized> Measure for &mut M {
    fn is_legal(&self, point: &[usize]) -> bool {
        (**self).is_legal(point)
    }

    fn measure(&mut self, point: &[usize], best_so_far: Option<f64>) -> Option<Trial> {
        (**self).measure(point, best_so_far)
    }
}
