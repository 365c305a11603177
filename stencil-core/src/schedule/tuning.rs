//! [`TuningSpace`]: what a backend hands the tuner for one kernel on one shape — the candidate
//! space as plain data, the schedule behind each legal point, and the facts the performance
//! model needs (which dimensions are block extents, how much cache a block should fit in, the
//! nominal arithmetic peak).
//!
//! The tuner (stencil-tune) never names a backend: it searches [`TuningSpace::space`], asks
//! [`TuningSpace::schedule`] for the schedule of a point (`None` = illegal), and the facade
//! runs that schedule on the backend to time it.

use std::fmt;

use super::Schedule;
use super::space::{SearchSpace, Searchable};

/// The schedule of a point, or `None` when the point is illegal.
type ScheduleOf = Box<dyn Fn(&[usize]) -> Option<Schedule> + Send + Sync>;

/// The candidates a backend offers the tuner for one kernel on one shape (see the module
/// documentation).
pub struct TuningSpace {
    space: SearchSpace,
    schedule_of: ScheduleOf,
    /// The point of the backend's default schedule, when the space holds it: the tuner
    /// measures it first, so a tuned schedule is never slower than the default (within noise).
    pub default_point: Option<Vec<usize>>,
    /// Per grid axis, outermost first: the index of the search dimension whose numeric value is
    /// the block extent along that axis (a value of 0 or at least the extent = the whole
    /// axis), or `None` when blocks always span the axis.
    pub block_dims: Vec<Option<usize>>,
    /// Bytes of cache the working set of one block should fit in (per thread).
    pub cache_bytes: usize,
    /// Nominal peak arithmetic rate of the device in flops per second (for the roofline).
    pub peak_flops: f64,
    /// Bytes of the device's largest cache. A sweep whose compulsory traffic fits in a few
    /// times this much is served partly from cache, so memory bandwidth does not bound it:
    /// the tuner then does not stop at the roofline bound. 0 means unknown (always stop).
    pub largest_cache_bytes: usize,
    /// The search dimensions that move time most, most important first: the quick search
    /// tries the other values of each of them (from the default point, one dimension at a
    /// time) before anything else. Empty: every dimension in the space's order.
    pub screening: Vec<usize>,
    /// The dimension choosing plain or streaming (cache-bypassing) stores, with the index of
    /// its streaming value, so the model can charge plain stores the write-allocate traffic
    /// of outputs that do not stay in cache.
    pub stores_dim: Option<(usize, usize)>,
    /// Points other than the default that the tuner must time against its final choice
    /// (a time loop's depth-1 loop under the single sweep's tuned schedule): the tuned
    /// schedule is never slower than any of them, within the tuner's noise rule.
    pub baselines: Vec<Vec<usize>>,
}

impl TuningSpace {
    /// A space whose point `p` is the schedule `schedule_of(p)` (`None`: illegal). No default
    /// point, no block dimensions, no cache and an infinite peak until set.
    pub fn new(
        space: SearchSpace,
        schedule_of: impl Fn(&[usize]) -> Option<Schedule> + Send + Sync + 'static,
    ) -> TuningSpace {
        TuningSpace {
            space,
            schedule_of: Box::new(schedule_of),
            default_point: None,
            block_dims: Vec::new(),
            cache_bytes: 0,
            peak_flops: f64::INFINITY,
            largest_cache_bytes: 0,
            screening: Vec::new(),
            stores_dim: None,
            baselines: Vec::new(),
        }
    }

    /// The candidate space.
    pub fn space(&self) -> &SearchSpace {
        &self.space
    }

    /// The schedule at `point`, or `None` when `point` is not in the space or is illegal.
    pub fn schedule(&self, point: &[usize]) -> Option<Schedule> {
        if self.space.contains(point) {
            (self.schedule_of)(point)
        } else {
            None
        }
    }
}

impl Searchable for TuningSpace {
    fn space(&self) -> &SearchSpace {
        &self.space
    }

    fn is_legal(&self, point: &[usize]) -> bool {
        self.schedule(point).is_some()
    }
}

impl fmt::Debug for TuningSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TuningSpace")
            .field("space", &self.space)
            .field("default_point", &self.default_point)
            .field("block_dims", &self.block_dims)
            .field("cache_bytes", &self.cache_bytes)
            .field("peak_flops", &self.peak_flops)
            .field("largest_cache_bytes", &self.largest_cache_bytes)
            .field("screening", &self.screening)
            .field("stores_dim", &self.stores_dim)
            .field("baselines", &self.baselines)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::CpuSchedule;

    #[test]
    fn points_outside_the_space_or_refused_have_no_schedule() {
        let space = SearchSpace::new().with_ints("a", [1, 2, 3]);
        let values = [1usize, 2, 3];
        let t = TuningSpace::new(space, move |p| {
            (values[p[0]] != 2).then(|| {
                Schedule::Cpu(CpuSchedule {
                    chunk: values[p[0]],
                    ..CpuSchedule::default()
                })
            })
        });
        assert!(t.is_legal(&[0]));
        assert!(!t.is_legal(&[1]), "refused by the backend");
        assert!(!t.is_legal(&[3]), "out of range");
        assert!(!t.is_legal(&[0, 0]), "wrong rank");
        match t.schedule(&[2]) {
            Some(Schedule::Cpu(s)) => assert_eq!(s.chunk, 3),
            other => panic!("{other:?}"),
        }
    }
}
