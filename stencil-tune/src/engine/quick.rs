//! The `quick` search: screen the dimensions that move time most, one at a time from the
//! best point so far, then descend from the best point while the budget lasts.
//!
//! 1. **Screen.** In the space's [`screening`](stencil_core::schedule::TuningSpace::screening)
//!    order (for the CPU: stores, register rows, the middle and unit-stride blocks,
//!    prefetch, ...), each dimension's other values are sampled at the best point found so
//!    far, and the best value is kept before the next dimension: so a dimension that only
//!    helps with another's value (register rows with streaming stores) is screened where it
//!    helps. The first [`MANDATORY_DIMS`] dimensions try every value, each sampled right
//!    after the current point (a pair; a pair whose current sample shows a neighbour's burst
//!    does not count), more valid pairs while none shows a clear gain (up to 3 for the first
//!    dimension, 2 for the second), and move to the value of the lowest ratio; they are
//!    screened until the hard deadline. The others take the values
//!    the model ranks best and the largest (the whole axis) of a dimension with many values,
//!    one sample each (two when within 10% of the best, and a second after the others when
//!    above 1.5 times the current point's), and move to the fastest.
//! 2. **Refine.** Steepest descent over one-dimension moves from the fastest point so far,
//!    the screening's dimensions first, each dimension's moves in the model's order, while
//!    time remains before the deadline.
//!
//! No step stops on the model's word: the model orders candidates, it never prunes one or
//! ends the search. What the search finds is only a list of candidates: which of them, if
//! any, replaces the default is decided by paired comparisons (see [`paired`](super::paired)).

use std::collections::HashMap;

use stencil_core::schedule::TuningSpace;

use super::runs::Sampler;
use crate::model::Model;

/// A second sample is taken of a point whose first comes within this factor of the best.
const RESAMPLE_WITHIN: f64 = 1.10;

/// A sample of the current point more than this many times its fastest disturbs its pair
/// (the same factor as the paired comparisons').
const DISTURBED: f64 = super::paired::PAIRED_RULE.disturbed;

/// A candidate of the first dimensions whose first paired ratio to the current point is
/// not below `1 -` this gets a second pair.
const PAIRED_SCREEN_GAIN: f64 = 0.05;

/// A screening sample above this many times the default's is taken again after the screen
/// (a neighbour's burst, or a truly slow point: the second sample tells).
const SUSPECT_ABOVE: f64 = 1.5;

/// Values of a many-valued dimension the screen tries: the model's best few.
const SCREEN_VALUES: usize = 2;

/// Samples taken so far, per point (seconds per run).
#[derive(Default, Debug)]
pub(crate) struct Samples {
    by_point: HashMap<Vec<usize>, Vec<f64>>,
    /// Points in the order first sampled.
    order: Vec<Vec<usize>>,
    /// Points sampled whose runs failed.
    pub(crate) failed: Vec<Vec<usize>>,
    /// Points a global search measured and abandoned (clearly slower than its best).
    pub(crate) abandoned: usize,
}

impl Samples {
    pub(crate) fn add(&mut self, point: &[usize], seconds: f64) {
        match self.by_point.get_mut(point) {
            Some(v) => v.push(seconds),
            None => {
                self.by_point.insert(point.to_vec(), vec![seconds]);
                self.order.push(point.to_vec());
            }
        }
    }

    /// Samples of `point`.
    pub(crate) fn count_of(&self, point: &[usize]) -> usize {
        self.by_point.get(point).map_or(0, Vec::len)
    }

    /// The fastest sample of `point`.
    pub(crate) fn best_of(&self, point: &[usize]) -> Option<f64> {
        self.by_point
            .get(point)
            .map(|v| v.iter().copied().fold(f64::INFINITY, f64::min))
    }

    pub(crate) fn is_sampled(&self, point: &[usize]) -> bool {
        self.by_point.contains_key(point) || self.failed.iter().any(|p| p == point)
    }

    /// The fastest point and its fastest sample.
    pub(crate) fn best(&self) -> Option<(Vec<usize>, f64)> {
        self.ranked().into_iter().next()
    }

    /// Every sampled point with its fastest sample, fastest first (ties in sampling order).
    pub(crate) fn ranked(&self) -> Vec<(Vec<usize>, f64)> {
        let mut v: Vec<(Vec<usize>, f64)> = self
            .order
            .iter()
            .map(|p| (p.clone(), self.best_of(p).unwrap_or(f64::INFINITY)))
            .collect();
        v.sort_by(|a, b| a.1.total_cmp(&b.1));
        v
    }

    /// Distinct points measured (sampled, failed or abandoned).
    pub(crate) fn points(&self) -> usize {
        self.by_point.len() + self.failed.len() + self.abandoned
    }
}

/// The screen's first dimensions (in the screening order) are tried until the hard
/// deadline: on the CPU the stores and the register rows, whose wrong choice costs most.
pub(crate) const MANDATORY_DIMS: usize = 2;

/// When the search must end: the soft deadline (the budget less the comparisons to come)
/// ends every step but the screen of the first [`MANDATORY_DIMS`] dimensions, which only the
/// hard deadline (twice the budget, less the comparisons) ends. The comparisons to come are
/// `reserve_samples` samples at the start point's speed, which is re-read from its fastest
/// sample at every check (a burst during its first samples must not shrink the search).
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) struct Deadlines {
    pub(crate) soft_budget: f64,
    pub(crate) hard_budget: f64,
    pub(crate) reserve_samples: f64,
    /// The start point's warm-up run (its speed until a sample is faster).
    pub(crate) warm_up: f64,
}

impl Deadlines {
    /// The (soft, hard) deadlines now.
    pub(crate) fn now(
        &self,
        sampler: &Sampler<'_>,
        samples: &Samples,
        start: &[usize],
    ) -> (f64, f64) {
        let typical = samples
            .best_of(start)
            .map_or(self.warm_up, |t| t.min(self.warm_up));
        let reserve = self.reserve_samples * sampler.sample_cost(typical);
        (
            (self.soft_budget - reserve).max(0.0),
            (self.hard_budget - reserve).max(0.0),
        )
    }
}

/// How a [`run`] ended.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Ended {
    /// Every step ran to its end.
    Completed,
    /// The deadline stopped it.
    Deadline,
}

/// The quick search over `space` from `start`, sampling through `sampler` until its
/// deadlines (see the module documentation); what it measured is in `samples`.
pub(crate) fn run(
    space: &TuningSpace,
    model: Option<&dyn Model>,
    sampler: &mut Sampler<'_>,
    samples: &mut Samples,
    start: &[usize],
    deadlines: Deadlines,
) -> Ended {
    let mut s = Quick {
        space,
        model,
        sampler,
        samples,
        deadlines,
        start: start.to_vec(),
    };
    let t_start = match s.samples.best_of(start) {
        Some(t) => t,
        None => match s.sample(start) {
            Some(t) => t,
            None => return Ended::Completed,
        },
    };
    // 1. Screen, one dimension at a time, from the best point so far.
    let order = s.screening_order();
    let mut current = start.to_vec();
    let mut t_current = t_start;
    for (rank, &dim) in order.iter().enumerate() {
        let mandatory = rank < MANDATORY_DIMS;
        let candidates: Vec<Vec<usize>> = s
            .screen_candidates(&current, dim, mandatory)
            .into_iter()
            .filter(|p| !s.samples.is_sampled(p))
            .collect();
        let moved = if mandatory {
            match s.screen_paired(&current, &candidates, if rank == 0 { 3 } else { 2 }) {
                Some(moved) => moved,
                None => return Ended::Deadline,
            }
        } else {
            match s.screen_plain(&candidates, t_current) {
                Some(()) => None,
                None => return Ended::Deadline,
            }
        };
        // Move to the dimension's best value: the paired screen's choice, or the value whose
        // fastest sample beats the current point's.
        match moved {
            Some(p) => {
                t_current = s.samples.best_of(&p).unwrap_or(t_current);
                current = p;
            }
            None => {
                for v in 0..space.space().dims()[dim].values.len() {
                    let mut p = current.clone();
                    p[dim] = v;
                    if let Some(t) = s.samples.best_of(&p)
                        && t < t_current
                    {
                        (current, t_current) = (p, t);
                    }
                }
            }
        }
    }
    // 2. Refine: steepest descent from the best point, the screening's dimensions first.
    let mut visited_from: Vec<Vec<usize>> = Vec::new();
    while let Some((current, t_current)) = s.samples.best() {
        if visited_from.contains(&current) {
            return Ended::Completed;
        }
        visited_from.push(current.clone());
        let mut improved = false;
        for n in s.neighbours(&current, &order) {
            if s.samples.is_sampled(&n) {
                continue;
            }
            if s.out_of_time() {
                return Ended::Deadline;
            }
            if s.sample(&n).is_some_and(|t| t < t_current) {
                improved = true;
            }
        }
        if !improved {
            return Ended::Completed;
        }
    }
    Ended::Completed
}

struct Quick<'s, 'r> {
    space: &'s TuningSpace,
    model: Option<&'s dyn Model>,
    sampler: &'s mut Sampler<'r>,
    samples: &'s mut Samples,
    deadlines: Deadlines,
    start: Vec<usize>,
}

impl Quick<'_, '_> {
    /// Whether the soft deadline (`hard`: the hard one) has passed.
    fn past(&self, hard: bool) -> bool {
        let (soft, hard_deadline) = self.deadlines.now(self.sampler, self.samples, &self.start);
        self.sampler.elapsed() >= if hard { hard_deadline } else { soft }
    }

    fn out_of_time(&self) -> bool {
        self.past(false)
    }

    /// Samples `point` (twice when the first sample comes close to the best); its fastest
    /// sample, `None` when it failed.
    fn sample(&mut self, point: &[usize]) -> Option<f64> {
        let best = self.samples.best().map(|b| b.1);
        let Some(t) = self.sampler.sample(point) else {
            self.samples.failed.push(point.to_vec());
            return None;
        };
        self.samples.add(point, t);
        if best.is_some_and(|b| t <= b * RESAMPLE_WITHIN)
            && !self.out_of_time()
            && let Some(again) = self.sampler.sample(point)
        {
            self.samples.add(point, again);
        }
        self.samples.best_of(point)
    }

    /// Screens `candidates` (values of one of the first dimensions) against `current` in
    /// pairs: a sample of the current point and one of the candidate, one right after the
    /// other. A pair whose current sample is more than [`DISTURBED`] times the current
    /// point's fastest is disturbed (a neighbour's burst) and does not count; a valid pair
    /// gives the candidate's ratio to the current point. A candidate gets another pair while
    /// it has no valid one, or one valid pair that shows no clear gain (a burst may have
    /// started between its two runs): two valid pairs, three pairs in all at most. The
    /// candidate
    /// of the lowest ratio below 1 is returned to move to; `None` inside when none gains;
    /// `None` outside when the deadline (`hard`: the hard one) passed.
    fn screen_paired(
        &mut self,
        current: &[usize],
        candidates: &[Vec<usize>],
        valid_pairs: usize,
    ) -> Option<Option<Vec<usize>>> {
        let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); candidates.len()];
        for pair in 0..=valid_pairs {
            for (i, point) in candidates.iter().enumerate() {
                let best = ratios[i].iter().copied().fold(f64::INFINITY, f64::min);
                let wanted = ratios[i].is_empty()
                    || (ratios[i].len() < valid_pairs && best >= 1.0 - PAIRED_SCREEN_GAIN);
                if !wanted {
                    continue;
                }
                if self.past(true) {
                    return None;
                }
                let c_min = self.samples.best_of(current).unwrap_or(f64::INFINITY);
                let (c, x) = if pair % 2 == 0 {
                    let c = self.sampler.sample(current);
                    (c, self.sampler.sample(point))
                } else {
                    let x = self.sampler.sample(point);
                    (self.sampler.sample(current), x)
                };
                if let Some(c) = c {
                    self.samples.add(current, c);
                }
                match (c, x) {
                    (Some(c), Some(x)) => {
                        self.samples.add(point, x);
                        if c <= DISTURBED * c_min {
                            ratios[i].push(x / c);
                        }
                    }
                    (_, None) => self.samples.failed.push(point.clone()),
                    _ => {}
                }
            }
        }
        let best = ratios
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let m = r.iter().copied().fold(f64::INFINITY, f64::min);
                (m < 1.0).then_some((i, m))
            })
            .min_by(|a, b| a.1.total_cmp(&b.1));
        Some(best.map(|(i, _)| candidates[i].clone()))
    }

    /// Screens `candidates` with one sample each (two when close to the best, see
    /// [`sample`](Self::sample)), and samples again, once the others are done, those above
    /// [`SUSPECT_ABOVE`] times `t_current`. `None` when the soft deadline passed.
    fn screen_plain(&mut self, candidates: &[Vec<usize>], t_current: f64) -> Option<()> {
        let mut suspects: Vec<&Vec<usize>> = Vec::new();
        for point in candidates {
            if self.out_of_time() {
                return None;
            }
            if let Some(t) = self.sample(point)
                && self.samples.count_of(point) < 2
                && t > SUSPECT_ABOVE * t_current
            {
                suspects.push(point);
            }
        }
        for point in suspects {
            if self.out_of_time() {
                return None;
            }
            if let Some(t) = self.sampler.sample(point) {
                self.samples.add(point, t);
            }
        }
        Some(())
    }

    fn predict(&self, point: &[usize]) -> f64 {
        self.model.map_or(0.0, |m| m.predict(point))
    }

    /// The changes of dimension `dim` of `current` the screen samples, in the model's order:
    /// every other value of a categorical, mandatory or few-valued dimension; otherwise the
    /// model's best [`SCREEN_VALUES`] and the largest value (the whole axis for block
    /// extents).
    fn screen_candidates(&self, current: &[usize], dim: usize, mandatory: bool) -> Vec<Vec<usize>> {
        let dims = self.space.space().dims();
        let n = dims[dim].values.len();
        let mut values: Vec<(usize, Vec<usize>)> = (0..n)
            .filter(|&v| v != current[dim])
            .map(|v| {
                let mut p = current.to_vec();
                p[dim] = v;
                (v, p)
            })
            .filter(|(_, p)| self.space.schedule(p).is_some())
            .collect();
        let largest = values.last().cloned();
        values.sort_by(|a, b| self.predict(&a.1).total_cmp(&self.predict(&b.1)));
        if !mandatory && !dims[dim].is_categorical() && values.len() > SCREEN_VALUES + 1 {
            values.truncate(SCREEN_VALUES);
            if let Some(l) = largest
                && !values.iter().any(|v| v.0 == l.0)
            {
                values.push(l);
            }
        }
        values.into_iter().map(|(_, p)| p).collect()
    }

    /// The dimensions in screening order: the space's, then the others in order.
    fn screening_order(&self) -> Vec<usize> {
        let dims = self.space.space().dims();
        if self.space.screening.is_empty() {
            (0..dims.len()).collect()
        } else {
            let mut o: Vec<usize> = self
                .space
                .screening
                .iter()
                .copied()
                .filter(|&d| d < dims.len())
                .collect();
            let rest: Vec<usize> = (0..dims.len()).filter(|d| !o.contains(d)).collect();
            o.extend(rest);
            o
        }
    }

    /// The legal one-dimension moves of `point` (a numeric dimension one index either way,
    /// a categorical one to each other value), dimensions in `order`, each dimension's moves
    /// in the model's order.
    fn neighbours(&self, point: &[usize], order: &[usize]) -> Vec<Vec<usize>> {
        let dims = self.space.space().dims();
        let mut out = Vec::new();
        for &d in order {
            let n = dims[d].values.len();
            let targets: Vec<usize> = if dims[d].is_categorical() {
                (0..n).filter(|&v| v != point[d]).collect()
            } else {
                [point[d].checked_sub(1), Some(point[d] + 1)]
                    .into_iter()
                    .flatten()
                    .filter(|&v| v < n)
                    .collect()
            };
            let mut moves: Vec<Vec<usize>> = targets
                .into_iter()
                .map(|v| {
                    let mut p = point.to_vec();
                    p[d] = v;
                    p
                })
                .filter(|p| self.space.schedule(p).is_some())
                .collect();
            moves.sort_by(|a, b| self.predict(a).total_cmp(&self.predict(b)));
            out.extend(moves);
        }
        out
    }
}
