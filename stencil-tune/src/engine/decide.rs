//! One tuning decision over a [`TuningSpace`]: search for candidates under the policy, then
//! let paired comparisons decide which, if any, replaces the default.
//!
//! 1. The default point (the backend's untuned schedule) runs once untimed (warm-up; its
//!    time sets how many runs make a sample, see [`Sampler`]) and is sampled; so is every
//!    [baseline](TuningSpace::baselines).
//! 2. The search: `quick` screens, combines and refines (the `quick` module); `thorough`
//!    runs the genetic algorithm (exhaustive for spaces of at most 200 points) and
//!    `exhaustive` every point, both timing each point by the median of 3 (5) samples. The
//!    search ends at its deadline: the policy's budget less what the comparisons of step 3
//!    are expected to cost.
//! 3. The tournament: the incumbent starts as the default; the fastest candidates of the
//!    search (2 for `quick`, 3 for the others, those whose fastest sample beat the
//!    incumbent's), then each baseline, challenge it in paired rounds
//!    ([`paired`](super::paired)) and replace it only under
//!    [`PAIRED_RULE`]. The first challenger is compared when its
//!    rounds end within [`HARD_OVERRUN`] times the budget, later ones within the budget,
//!    baselines always; a decision cut short by the budget says so
//!    ([`Decision::cut_short`]).
//!
//! The search leaves room in the budget for the baselines' comparisons and one
//! challenger's; the screen of the first dimensions of the `quick` search (the stores and
//! register rows on the CPU) may run to [`HARD_OVERRUN`] times the budget, so a sweep too
//! slow for the budget still gets its most important choices made.
//!
//! So the search's single samples, however noisy, never decide alone: the chosen schedule
//! replaced the default (and each baseline) only by winning paired rounds under the rule.

use stencil_core::schedule::TuningSpace;

use super::paired::{Comparison, DECISIVE_ROUNDS, PAIRED_RULE, compare};
use super::quick::{self, Deadlines, Ended, Samples};
use super::runs::{Runs, Sampler};
use crate::measure::{Measure, Trial};
use crate::model::Model;
use crate::policy::TunePolicy;
use crate::search::{Budget, Search};
use crate::strategy::{self, GeneticConfig, Strategy};

/// How one decision runs.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct DecidePlan {
    /// The policy (`off` never reaches the engine's search).
    pub policy: TunePolicy,
    /// Seconds of the runs' clock by which the decision should be made (`None`: no limit).
    pub budget_seconds: Option<f64>,
    /// Whether each sample is preceded by an untimed run of the same point (for working sets
    /// that stay in cache, see [`Sampler`]).
    pub settle: bool,
    /// Seed of the strategies' random choices.
    pub seed: u64,
}

/// What a decision chose and why.
#[derive(Clone, PartialEq, Debug)]
pub struct Decision {
    /// The chosen point.
    pub point: Vec<usize>,
    /// Its seconds per run: the median of its rounds in the comparison that chose it, else
    /// its fastest sample.
    pub seconds: f64,
    /// Relative spread of the samples behind `seconds`.
    pub spread: f64,
    /// Distinct points measured (each by one or more samples).
    pub trials: usize,
    /// Runs made, warm-up and settling runs included.
    pub runs: usize,
    /// Every paired comparison, in order.
    pub evidence: Vec<Comparison>,
    /// Whether the budget ended the search or the tournament before their end.
    pub cut_short: bool,
}

/// A decision may run over its budget by this factor to screen the dimensions that matter
/// most and to compare its best challenger (a sweep too slow for the budget).
pub const HARD_OVERRUN: f64 = 2.0;

/// Challengers the tournament takes from the search.
fn challengers(policy: TunePolicy) -> usize {
    match policy {
        TunePolicy::Quick | TunePolicy::Off => 2,
        TunePolicy::Thorough | TunePolicy::Exhaustive => 3,
    }
}

/// Decides over `space` as the module documentation describes, running points through
/// `runs`; `None` when no point could run (the default and every candidate failed).
pub fn decide(
    space: &TuningSpace,
    model: Option<&dyn Model>,
    runs: &mut dyn Runs,
    plan: &DecidePlan,
) -> Option<Decision> {
    let describe = |p: &[usize]| space.space().describe(p);
    let start = start_point(space)?;
    let mut sampler = Sampler::new(runs, plan.settle);
    let first = sampler.warm_up(&start)?;
    sampler.calibrate(first);
    let mut samples = Samples::default();
    let mut cut_short = false;
    samples.add(&start, sampler.sample(&start)?);
    let baselines: Vec<Vec<usize>> = space
        .baselines
        .iter()
        .filter(|b| **b != start && space.schedule(b).is_some())
        .cloned()
        .collect();
    for b in &baselines {
        match sampler.sample(b) {
            Some(t) => samples.add(b, t),
            None => samples.failed.push(b.clone()),
        }
    }
    // What one comparison costs: two samples per round for a decisive verdict at about the
    // default's speed. The search leaves room for the baselines' comparisons and one
    // challenger's.
    let comparison_samples = 2.0 * (DECISIVE_ROUNDS + 1) as f64;
    let n_challengers = challengers(plan.policy);
    let soft = plan.budget_seconds.unwrap_or(f64::INFINITY);
    let hard = HARD_OVERRUN * soft;
    let deadlines = Deadlines {
        soft_budget: soft,
        hard_budget: hard,
        reserve_samples: comparison_samples * (1 + baselines.len()) as f64,
        warm_up: first,
    };
    match plan.policy {
        TunePolicy::Off | TunePolicy::Quick => {
            if quick::run(space, model, &mut sampler, &mut samples, &start, deadlines)
                == Ended::Deadline
            {
                cut_short = true;
            }
        }
        TunePolicy::Thorough | TunePolicy::Exhaustive => {
            cut_short |= global_search(
                space,
                model,
                &mut sampler,
                &mut samples,
                plan,
                &deadlines,
                &start,
            );
        }
    }
    // The tournament.
    let mut incumbent = start.clone();
    let mut evidence: Vec<Comparison> = Vec::new();
    // The first challenger is compared unless that overruns the hard limit; later ones
    // only within the budget.
    let over_budget = |sampler: &Sampler<'_>, samples: &Samples, taken: usize| {
        let limit = if taken == 0 { hard } else { soft };
        let typical = samples.best_of(&start).map_or(first, |t| t.min(first));
        sampler.elapsed() + comparison_samples * sampler.sample_cost(typical) > limit
    };
    let mut taken = 0;
    for (point, best) in samples.ranked() {
        if taken == n_challengers {
            break;
        }
        if point == incumbent || baselines.contains(&point) || point == start {
            continue;
        }
        let incumbent_best = samples.best_of(&incumbent).unwrap_or(f64::INFINITY);
        if best >= incumbent_best {
            break;
        }
        if over_budget(&sampler, &samples, taken) {
            cut_short = true;
            break;
        }
        taken += 1;
        let prior = samples.best_of(&incumbent).zip(samples.best_of(&point));
        if let Some(c) = compare(
            &mut sampler,
            &PAIRED_RULE,
            &incumbent,
            &point,
            prior,
            &describe,
        ) {
            for (&a, &b) in c.incumbent_seconds.iter().zip(&c.challenger_seconds) {
                samples.add(&incumbent, a);
                samples.add(&point, b);
            }
            if c.replaced {
                incumbent = point.clone();
            }
            evidence.push(c);
        }
    }
    // Baselines last: each challenges the winner of the search's challengers.
    for b in &baselines {
        if samples.best_of(b).is_none() {
            continue;
        }
        let prior = samples.best_of(&incumbent).zip(samples.best_of(b));
        if let Some(c) = compare(&mut sampler, &PAIRED_RULE, &incumbent, b, prior, &describe) {
            if c.replaced {
                incumbent = b.clone();
            }
            evidence.push(c);
        }
    }
    let (seconds, spread) = match evidence.iter().rev().find(|c| {
        (c.replaced && describe(&incumbent) == c.challenger)
            || (!c.replaced && describe(&incumbent) == c.incumbent)
    }) {
        Some(c) => {
            let mine = if c.replaced {
                &c.challenger_seconds
            } else {
                &c.incumbent_seconds
            };
            spread_of(mine)
        }
        None => (samples.best_of(&incumbent).unwrap_or(first), 0.0),
    };
    Some(Decision {
        point: incumbent,
        seconds,
        spread,
        trials: samples.points(),
        runs: sampler.runs_made,
        evidence,
        cut_short,
    })
}

/// Median and relative spread of `seconds`.
fn spread_of(seconds: &[f64]) -> (f64, f64) {
    let median = crate::harness::median(seconds);
    let lo = seconds.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = seconds.iter().copied().fold(0.0, f64::max);
    let spread = if median > 0.0 {
        (hi - lo) / median
    } else {
        0.0
    };
    (median, spread)
}

/// The default point when legal, else the legal point the model ranks first.
fn start_point(space: &TuningSpace) -> Option<Vec<usize>> {
    if let Some(d) = space.default_point.as_ref()
        && space.schedule(d).is_some()
    {
        return Some(d.clone());
    }
    let n = space.space().n_points();
    (0..n.min(1 << 16))
        .map(|i| space.space().point_at(i))
        .find(|p| space.schedule(p).is_some())
}

/// `thorough` and `exhaustive`: the strategies of [`strategy`] over samples (median of 3 or
/// 5), their results added to `samples`; whether the deadline cut the search.
fn global_search(
    space: &TuningSpace,
    model: Option<&dyn Model>,
    sampler: &mut Sampler<'_>,
    samples: &mut Samples,
    plan: &DecidePlan,
    deadlines: &Deadlines,
    start: &[usize],
) -> bool {
    let (deadline, _) = deadlines.now(sampler, samples, start);
    let n_points = space.space().n_points();
    let (strategy, repeats, max_trials) = match plan.policy {
        TunePolicy::Exhaustive => (Strategy::Exhaustive, 5, None),
        _ if n_points <= 200 => (Strategy::Exhaustive, 3, Some(200)),
        _ => (
            Strategy::Genetic(GeneticConfig {
                island_size: 10,
                generations: 25,
                ..GeneticConfig::default()
            }),
            3,
            Some(200),
        ),
    };
    let mut measure = SampledMeasure {
        space,
        sampler,
        repeats,
        deadline,
        cut: false,
    };
    let budget = Budget {
        max_trials,
        ..Budget::default()
    };
    let mut search = Search::new(space.space(), &mut measure, budget);
    if let Some(model) = model {
        search = search.with_model(model, f64::INFINITY);
    }
    if let Some(d) = &space.default_point {
        search.evaluate(d);
    }
    strategy::run(&strategy, &mut search, plan.seed);
    let outcome = search.finish();
    for (point, trial) in outcome.history {
        match trial {
            Some(t) => samples.add(&point, t.seconds),
            None if !samples.is_sampled(&point) => samples.abandoned += 1,
            None => {}
        }
    }
    measure.cut
}

/// A [`Measure`] over the sampler for the strategies: the median of `repeats` samples; no
/// more measurements once the deadline passed (the strategy then finds nothing new).
struct SampledMeasure<'a, 'r> {
    space: &'a TuningSpace,
    sampler: &'a mut Sampler<'r>,
    repeats: usize,
    deadline: f64,
    cut: bool,
}

impl Measure for SampledMeasure<'_, '_> {
    fn is_legal(&self, point: &[usize]) -> bool {
        self.space.schedule(point).is_some()
    }

    fn measure(&mut self, point: &[usize], best_so_far: Option<f64>) -> Option<Trial> {
        if self.sampler.elapsed() >= self.deadline {
            self.cut = true;
            return None;
        }
        let mut times = Vec::with_capacity(self.repeats);
        for i in 0..self.repeats {
            let t = self.sampler.sample(point)?;
            // Hopeless after its first sample: twice the best so far.
            if i == 0 && best_so_far.is_some_and(|b| t > 2.0 * b) {
                return None;
            }
            times.push(t);
        }
        let (seconds, spread) = spread_of(&times);
        Some(Trial {
            seconds,
            spread,
            repeats: times.len() as u32,
        })
    }
}
