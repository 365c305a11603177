//! The bookkeeping every strategy shares: budget, memo of measured points, best so far, stop
//! reasons, pruning by a model, `tracing` events and the progress hook.
//!
//! A strategy drives a [`Search`] by calling [`Search::evaluate`] on points; the search decides
//! whether the point is measured (legal, not pruned, budget left), remembers every answer (a
//! point is measured at most once per search, so revisits are free), and stops the search when
//! the trial budget, the time budget or the bound is reached. Strategies poll
//! [`Search::is_stopped`] and return early. Illegal, pruned and remembered points do not count
//! as trials.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use stencil_core::rng::Rng;
use stencil_core::schedule::SearchSpace;

use crate::measure::{Measure, Trial};
use crate::model::Model;

/// When to stop searching. Every limit is optional; the default is unlimited.
#[derive(Clone, Copy, PartialEq, Debug, Default)]
pub struct Budget {
    /// Most points measured.
    pub max_trials: Option<usize>,
    /// Most wall-clock time spent (checked between trials).
    pub max_time: Option<Duration>,
    /// Trials the time limit cannot cut short: a search whose first trials are slow (a
    /// default schedule several times slower than the best) still measures this many points
    /// before `max_time` may stop it. The trial limit and the bound stop still apply.
    pub min_trials: usize,
    /// Stop as soon as a candidate is close enough to a known lower bound.
    pub bound: Option<Bound>,
}

/// A lower bound on the time of any candidate (the roofline) and how close is close enough
/// (Kamil: know when you have reached the machine's limit).
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Bound {
    /// Seconds no candidate can beat.
    pub seconds: f64,
    /// Stop when the best time is at most `seconds * (1 + tolerance)`.
    pub tolerance: f64,
}

impl Budget {
    /// No limit at all.
    pub fn unlimited() -> Budget {
        Budget::default()
    }

    /// At most `n` trials.
    pub fn trials(n: usize) -> Budget {
        Budget {
            max_trials: Some(n),
            ..Budget::default()
        }
    }

    /// This budget with a time limit.
    pub fn with_time(self, max_time: Duration) -> Budget {
        Budget {
            max_time: Some(max_time),
            ..self
        }
    }

    /// This budget with at least `n` trials before the time limit may stop the search.
    pub fn with_min_trials(self, n: usize) -> Budget {
        Budget {
            min_trials: n,
            ..self
        }
    }

    /// This budget with a bound stop.
    pub fn with_bound(self, seconds: f64, tolerance: f64) -> Budget {
        Budget {
            bound: Some(Bound { seconds, tolerance }),
            ..self
        }
    }
}

/// Why a search ended.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum StopReason {
    /// The strategy finished on its own (space exhausted, converged, restarts used up).
    Completed,
    /// The trial budget was spent.
    TrialBudget,
    /// The time budget was spent.
    TimeBudget,
    /// A candidate came within the tolerance of the bound.
    NearBound,
}

/// A measured point.
#[derive(Clone, PartialEq, Debug)]
pub struct Found {
    /// One index per dimension of the space.
    pub point: Vec<usize>,
    /// Its measurement.
    pub trial: Trial,
}

/// What a search found and what it cost.
#[derive(Clone, PartialEq, Debug)]
pub struct Outcome {
    /// The fastest legal point measured, if any was.
    pub best: Option<Found>,
    /// Points measured (calls of [`Measure::measure`]).
    pub trials: usize,
    /// Measurements that returned `None` (failed or abandoned).
    pub failed: usize,
    /// Points skipped because [`Measure::is_legal`] refused them.
    pub illegal: usize,
    /// Points skipped because the model predicted them hopeless.
    pub pruned: usize,
    /// Wall-clock time of the search.
    pub elapsed: Duration,
    /// Why it ended.
    pub stop: StopReason,
    /// Every measured point in order, with its result.
    pub history: Vec<(Vec<usize>, Option<Trial>)>,
}

/// The state reported to the progress hook after each trial.
#[derive(Clone, Copy, Debug)]
pub struct Progress<'a> {
    /// Trials so far (this one included).
    pub trials: usize,
    /// The trial budget, if any.
    pub max_trials: Option<usize>,
    /// Time since the search began.
    pub elapsed: Duration,
    /// The point just measured.
    pub point: &'a [usize],
    /// Its result.
    pub result: Option<Trial>,
    /// The best time so far.
    pub best_seconds: Option<f64>,
}

/// What the memo holds for a point.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Memo {
    Measured(Option<Trial>),
    Illegal,
    Pruned,
}

/// A search in progress (see the module documentation).
pub struct Search<'a> {
    space: &'a SearchSpace,
    measure: &'a mut dyn Measure,
    budget: Budget,
    start: Instant,
    memo: HashMap<Vec<usize>, Memo>,
    history: Vec<(Vec<usize>, Option<Trial>)>,
    best: Option<Found>,
    trials: usize,
    failed: usize,
    illegal: usize,
    pruned: usize,
    stop: Option<StopReason>,
    model: Option<(&'a dyn Model, f64)>,
    progress: Option<&'a mut dyn FnMut(&Progress<'_>)>,
}

impl<'a> Search<'a> {
    /// A search of `space` through `measure` within `budget`; the clock starts now.
    pub fn new(space: &'a SearchSpace, measure: &'a mut dyn Measure, budget: Budget) -> Search<'a> {
        Search {
            space,
            measure,
            budget,
            start: Instant::now(),
            memo: HashMap::new(),
            history: Vec::new(),
            best: None,
            trials: 0,
            failed: 0,
            illegal: 0,
            pruned: 0,
            stop: None,
            model: None,
            progress: None,
        }
    }

    /// Uses `model` to order candidates (strategies ask [`predict`](Search::predict)) and to
    /// prune: a point predicted slower than `prune_factor` times the best measured time is
    /// not measured. Use `f64::INFINITY` to order without pruning.
    pub fn with_model(mut self, model: &'a dyn Model, prune_factor: f64) -> Search<'a> {
        self.model = Some((model, prune_factor));
        self
    }

    /// Calls `hook` after every trial (the facade prints progress from it).
    pub fn with_progress(mut self, hook: &'a mut dyn FnMut(&Progress<'_>)) -> Search<'a> {
        self.progress = Some(hook);
        self
    }

    /// The space searched.
    pub fn space(&self) -> &'a SearchSpace {
        self.space
    }

    /// The model, if one was given.
    pub fn model(&self) -> Option<&'a dyn Model> {
        self.model.map(|(m, _)| m)
    }

    /// The model's predicted seconds for `point` (`None` without a model).
    pub fn predict(&self, point: &[usize]) -> Option<f64> {
        self.model.map(|(m, _)| m.predict(point))
    }

    /// Whether `point` is in the space and legal.
    pub fn is_legal(&self, point: &[usize]) -> bool {
        self.space.contains(point) && self.measure.is_legal(point)
    }

    /// Whether `point` was already looked at (measured, refused or pruned).
    pub fn is_visited(&self, point: &[usize]) -> bool {
        self.memo.contains_key(point)
    }

    /// The best point so far.
    pub fn best(&self) -> Option<&Found> {
        self.best.as_ref()
    }

    /// Trials so far.
    pub fn trials(&self) -> usize {
        self.trials
    }

    /// Whether the search must end (checks the time budget too).
    pub fn is_stopped(&mut self) -> bool {
        if self.stop.is_none() && self.budget.max_trials.is_some_and(|n| self.trials >= n) {
            self.stop = Some(StopReason::TrialBudget);
        }
        if self.stop.is_none()
            && let Some(limit) = self.budget.max_time
            && self.trials >= self.budget.min_trials
            && self.start.elapsed() >= limit
        {
            self.stop = Some(StopReason::TimeBudget);
        }
        self.stop.is_some()
    }

    /// The time of `point`: remembered, or measured now if it is legal, not pruned and the
    /// budget allows. `None` for an illegal, pruned, failed or unmeasured point.
    pub fn evaluate(&mut self, point: &[usize]) -> Option<f64> {
        if let Some(memo) = self.memo.get(point) {
            return match *memo {
                Memo::Measured(trial) => trial.map(|t| t.seconds),
                Memo::Illegal | Memo::Pruned => None,
            };
        }
        if self.is_stopped() {
            return None;
        }
        if !self.is_legal(point) {
            self.illegal += 1;
            self.memo.insert(point.to_vec(), Memo::Illegal);
            return None;
        }
        if let (Some((model, factor)), Some(best)) = (self.model, &self.best)
            && model.predict(point) > factor * best.trial.seconds
        {
            self.pruned += 1;
            self.memo.insert(point.to_vec(), Memo::Pruned);
            tracing::trace!(target: "stencil_tune::trial", point = %self.space.describe(point), "pruned by the model");
            return None;
        }
        let best_so_far = self.best.as_ref().map(|b| b.trial.seconds);
        let result = self.measure.measure(point, best_so_far);
        self.trials += 1;
        self.record(point, result);
        result.map(|t| t.seconds)
    }

    /// Files one measurement: memo, history, best, events, progress, stops.
    fn record(&mut self, point: &[usize], result: Option<Trial>) {
        self.memo.insert(point.to_vec(), Memo::Measured(result));
        self.history.push((point.to_vec(), result));
        match result {
            Some(trial) => {
                if self
                    .best
                    .as_ref()
                    .is_none_or(|b| trial.seconds < b.trial.seconds)
                {
                    self.best = Some(Found {
                        point: point.to_vec(),
                        trial,
                    });
                }
            }
            None => self.failed += 1,
        }
        let best_seconds = self.best.as_ref().map(|b| b.trial.seconds);
        tracing::debug!(
            target: "stencil_tune::trial",
            trial = self.trials,
            point = %self.space.describe(point),
            seconds = result.map(|t| t.seconds),
            spread = result.map(|t| t.spread),
            best = best_seconds,
            "trial"
        );
        if let Some(hook) = self.progress.as_mut() {
            hook(&Progress {
                trials: self.trials,
                max_trials: self.budget.max_trials,
                elapsed: self.start.elapsed(),
                point,
                result,
                best_seconds,
            });
        }
        if let (Some(bound), Some(best)) = (self.budget.bound, best_seconds)
            && best <= bound.seconds * (1.0 + bound.tolerance)
        {
            self.stop.get_or_insert(StopReason::NearBound);
        }
        self.is_stopped();
    }

    /// Measures the `k` fastest measured points once more each (fastest first) and ranks them
    /// by the mean of their two times, so a point that was measured fast once by luck loses
    /// its place; the best becomes the fastest of them by that mean. Each measurement counts
    /// as a trial, and the budget is not checked: this is how a search ends. Nothing happens
    /// with fewer than two measured points.
    pub fn confirm(&mut self, k: usize) {
        let mut measured: Vec<(Vec<usize>, Trial)> = self
            .memo
            .iter()
            .filter_map(|(p, m)| match *m {
                Memo::Measured(Some(t)) => Some((p.clone(), t)),
                _ => None,
            })
            .collect();
        measured.sort_by(|a, b| a.1.seconds.total_cmp(&b.1.seconds).then(a.0.cmp(&b.0)));
        measured.truncate(k);
        if measured.len() < 2 {
            return;
        }
        let mut best: Option<Found> = None;
        for (point, first) in measured {
            let again = self.measure.measure(&point, None);
            self.trials += 1;
            self.history.push((point.clone(), again));
            let best_seconds = self.best.as_ref().map(|b| b.trial.seconds);
            if let Some(hook) = self.progress.as_mut() {
                hook(&Progress {
                    trials: self.trials,
                    max_trials: self.budget.max_trials,
                    elapsed: self.start.elapsed(),
                    point: &point,
                    result: again,
                    best_seconds,
                });
            }
            let trial = match again {
                Some(t) => {
                    let seconds = 0.5 * (first.seconds + t.seconds);
                    Trial {
                        seconds,
                        spread: first
                            .spread
                            .max(t.spread)
                            .max((first.seconds - t.seconds).abs() / seconds),
                        repeats: first.repeats + t.repeats,
                    }
                }
                // Failed or abandoned the second time: it does not stay in the running.
                None => {
                    self.failed += 1;
                    continue;
                }
            };
            tracing::debug!(
                target: "stencil_tune::trial",
                point = %self.space.describe(&point),
                first = first.seconds,
                again = again.map(|t| t.seconds),
                "confirmed"
            );
            self.memo.insert(point.clone(), Memo::Measured(Some(trial)));
            if best
                .as_ref()
                .is_none_or(|b| trial.seconds < b.trial.seconds)
            {
                best = Some(Found { point, trial });
            }
        }
        if best.is_some() {
            self.best = best;
        }
    }

    /// Ends the search.
    pub fn finish(self) -> Outcome {
        Outcome {
            best: self.best,
            trials: self.trials,
            failed: self.failed,
            illegal: self.illegal,
            pruned: self.pruned,
            elapsed: self.start.elapsed(),
            stop: self.stop.unwrap_or(StopReason::Completed),
            history: self.history,
        }
    }
}
/// Legal points of the search's space ordered by the model's prediction, fastest first (ties
/// in enumeration order). Spaces of at most `max_enumerated` points are enumerated in full;
/// larger ones are sampled (`samples` random points). Empty without a model.
pub fn ranked_candidates(
    search: &Search<'_>,
    rng: &mut Rng,
    max_enumerated: u64,
    samples: usize,
) -> Vec<Vec<usize>> {
    let Some(model) = search.model() else {
        return Vec::new();
    };
    let space = search.space();
    let n = space.n_points();
    let points: Vec<Vec<usize>> = if n <= max_enumerated {
        (0..n).map(|i| space.point_at(i)).collect()
    } else {
        let mut drawn: Vec<Vec<usize>> =
            (0..samples).map(|_| space.point_at(rng.below(n))).collect();
        drawn.sort();
        drawn.dedup();
        drawn
    };
    let mut scored: Vec<(f64, Vec<usize>)> = points
        .into_iter()
        .filter(|p| search.is_legal(p))
        .map(|p| (model.predict(&p), p))
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    scored.into_iter().map(|(_, p)| p).collect()
}

/// A uniformly random legal point, trying at most `attempts` draws.
pub(crate) fn random_legal_point(
    search: &Search<'_>,
    rng: &mut Rng,
    attempts: usize,
) -> Option<Vec<usize>> {
    let space = search.space();
    (0..attempts)
        .map(|_| {
            space
                .dims()
                .iter()
                .map(|d| rng.index(d.values.len()))
                .collect::<Vec<usize>>()
        })
        .find(|p| search.is_legal(p))
}
