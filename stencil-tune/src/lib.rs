//! stencil-tune: the backend-independent half of the tuner (see ARCHITECTURE.md, `stencil-tune`).
//!
//! - [`engine`]: first-call tuning as a whole: memo, cache, the `quick` search, paired
//!   decisions, time budgets, the machine's bandwidth and caches (the facade binds calls to it);
//! - [`search`]: budgets, stop reasons and the bookkeeping every strategy shares ([`Search`]);
//! - [`strategy`]: exhaustive, random sampling, model-ordered neighbourhood search, genetic
//!   algorithm;
//! - [`model`]: the [`Model`] trait and the [`Roofline`] model (bytes and flops per point
//!   against bandwidth and peak, plus a cache-fit term for block sizes);
//! - [`measure`]: the [`Measure`] trait strategies measure through;
//! - [`harness`]: robust timing of real runs (warm-up, minimum duration, median of repeats,
//!   early abandon);
//! - [`simulated`]: replayed and synthetic timings for noise-free tests;
//! - [`cache`]: the persistent, versioned tuning cache ("wisdom");
//! - [`probe`]: the effective capacities of the CPU's caches, measured by a working-set
//!   sweep (what the system reports is not always what a process gets);
//! - [`policy`](mod@policy): `off | quick | thorough | exhaustive`, from `STENCIL_TUNE` or the API.
//!
//! It depends on stencil-core only and never names a backend: a backend describes its
//! candidates as a `SearchSpace` (stencil-core) and answers legality
//! and timings through [`Measure`]. [`tune`] ties a policy, a space and a source together.
#![forbid(unsafe_code)]

pub mod cache;
pub mod engine;
pub mod harness;
pub mod measure;
pub mod model;
pub mod policy;
pub mod probe;
pub mod search;
pub mod simulated;
pub mod strategy;

pub use cache::{CacheError, CacheKey, TunedEntry, TuningCache};
pub use harness::{HarnessConfig, Paired, TimedMeasure, time_paired, time_runs};
pub use measure::{Measure, Trial};
pub use model::{Model, Roofline, RooflineModel};
pub use policy::{Plan, PolicyError, TunePolicy, policy, set_policy};
pub use search::{Bound, Budget, Found, Outcome, Progress, Search, StopReason};
pub use strategy::{GeneticConfig, NeighbourhoodConfig, Strategy};

use stencil_core::schedule::SearchSpace;

/// Options of [`tune`] beyond the policy.
#[derive(Clone, Copy, Default)]
pub struct TuneOptions<'a> {
    /// Orders and prunes candidates; also gives the start of the neighbourhood search.
    pub model: Option<&'a dyn Model>,
    /// The machine's bound for this kernel (seconds per sweep), for the bound stop.
    pub bound_seconds: Option<f64>,
    /// Seed of the strategies' random choices.
    pub seed: u64,
    /// Whether the model prunes (skips points it predicts slower than the plan's prune factor
    /// times the best measured time). Only sound when the model's times are comparable with
    /// measured ones: a roofline built on memory bandwidth over-predicts a sweep that runs
    /// from cache, and would prune everything.
    pub prune: bool,
    /// Points measured first, before the strategy starts (the backend's default schedule): the
    /// outcome is never slower than the fastest of them, up to measurement noise.
    pub baseline: &'a [Vec<usize>],
}

/// Searches `space` through `measure` as `policy` plans it (see [`TunePolicy::plan`]),
/// calling `progress` after every trial. Under [`TunePolicy::Off`] nothing is measured and the
/// outcome has no best point: the caller uses the model's choice.
pub fn tune(
    policy: TunePolicy,
    space: &SearchSpace,
    measure: &mut dyn Measure,
    options: TuneOptions<'_>,
    progress: Option<&mut dyn FnMut(&Progress<'_>)>,
) -> Outcome {
    let plan = policy.plan(space.n_points(), options.bound_seconds);
    let mut search = Search::new(space, measure, plan.budget);
    if let Some(model) = options.model {
        let factor = if options.prune {
            plan.prune_factor
        } else {
            f64::INFINITY
        };
        search = search.with_model(model, factor);
    }
    if let Some(hook) = progress {
        search = search.with_progress(hook);
    }
    if let Some(strategy) = &plan.strategy {
        for point in options.baseline {
            search.evaluate(point);
        }
        strategy::run(strategy, &mut search, options.seed);
        search.confirm(plan.confirm);
    }
    search.finish()
}

/// The legal point `model` predicts fastest, measuring nothing (what [`TunePolicy::Off`]
/// runs). Spaces of up to 65536 points are ranked in full, larger ones from 4096 points drawn
/// with `seed`. `None` when no legal point was found.
pub fn model_choice(
    space: &SearchSpace,
    measure: &mut dyn Measure,
    model: &dyn Model,
    seed: u64,
) -> Option<Vec<usize>> {
    let search = Search::new(space, measure, Budget::trials(0)).with_model(model, f64::INFINITY);
    let mut rng = stencil_core::rng::Rng::new(seed);
    search::ranked_candidates(&search, &mut rng, 1 << 16, 4096)
        .into_iter()
        .next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulated::{Simulated, landscapes};

    fn space() -> SearchSpace {
        SearchSpace::new()
            .with_ints("a", 0..10)
            .with_ints("b", 0..10)
            .with_ints("c", 0..10)
    }

    #[test]
    fn off_measures_nothing() {
        let space = space();
        let mut source =
            Simulated::new(|p: &[usize]| Some(landscapes::bowl(vec![3, 3, 3], 0.1)(p)));
        let outcome = tune(
            TunePolicy::Off,
            &space,
            &mut source,
            TuneOptions::default(),
            None,
        );
        assert_eq!(outcome.trials, 0);
        assert!(outcome.best.is_none());
        assert!(source.log.is_empty());
    }

    #[test]
    fn quick_starts_from_the_model_and_keeps_to_its_budget() {
        let space = space();
        let centre = vec![7, 2, 5];
        let bowl = landscapes::bowl(centre.clone(), 0.1);
        let mut source = Simulated::new(move |p: &[usize]| Some(bowl(p)));
        let model_bowl = landscapes::bowl(centre.clone(), 0.1);
        let model = move |p: &[usize]| model_bowl(p);
        let mut progress_calls = 0;
        let mut hook = |_: &Progress<'_>| progress_calls += 1;
        let options = TuneOptions {
            model: Some(&model),
            bound_seconds: None,
            seed: 1,
            prune: true,
            baseline: &[],
        };
        let outcome = tune(
            TunePolicy::Quick,
            &space,
            &mut source,
            options,
            Some(&mut hook),
        );
        assert!(outcome.trials <= 24 + 3, "24 trials and 3 confirmations");
        assert_eq!(outcome.best.expect("best").point, centre);
        assert_eq!(progress_calls, outcome.trials);
        // The model's best guess is the first point measured.
        assert_eq!(source.log[0], centre);
    }

    #[test]
    fn thorough_stops_at_the_bound() {
        let space = space();
        let bowl = landscapes::bowl(vec![7, 2, 5], 0.1);
        let mut source = Simulated::new(move |p: &[usize]| Some(bowl(p)));
        // The optimum takes 1 s and its neighbours 1.1 s; thorough stops within 2% of the
        // bound, so a bound of 1.08 s is reached by those seven points only.
        let options = TuneOptions {
            model: None,
            bound_seconds: Some(1.08),
            seed: 3,
            prune: true,
            baseline: &[],
        };
        let outcome = tune(TunePolicy::Thorough, &space, &mut source, options, None);
        assert_eq!(outcome.stop, StopReason::NearBound);
        assert!(outcome.best.expect("best").trial.seconds <= 1.08 * 1.02);
        assert!(outcome.trials < 200);
    }

    #[test]
    fn the_model_choice_is_the_best_predicted_legal_point() {
        let space = space();
        // Illegal unless a <= 5; the model prefers large a, then b = 3, c = 8.
        let mut source = Simulated::new(|p: &[usize]| (p[0] <= 5).then_some(1.0));
        let model = |p: &[usize]| {
            10.0 - p[0] as f64 + (p[1] as f64 - 3.0).abs() + (p[2] as f64 - 8.0).abs()
        };
        let choice = model_choice(&space, &mut source, &model, 0);
        assert_eq!(choice, Some(vec![5, 3, 8]));
        assert!(source.log.is_empty(), "nothing measured");
    }

    #[test]
    fn the_baseline_is_measured_first_and_bounds_the_outcome() {
        let space = space();
        // A landscape the model misleads: it predicts the corner best, the truth is a bowl
        // around (1, 1, 1), and the baseline sits at that bowl's centre.
        let bowl = landscapes::bowl(vec![1, 1, 1], 0.1);
        let mut source = Simulated::new(move |p: &[usize]| Some(bowl(p)));
        let model = |p: &[usize]| (27 - p[0] - p[1] - p[2]) as f64;
        let baseline = [vec![1, 1, 1]];
        let options = TuneOptions {
            model: Some(&model),
            bound_seconds: None,
            seed: 5,
            prune: true,
            baseline: &baseline,
        };
        let outcome = tune(TunePolicy::Quick, &space, &mut source, options, None);
        assert_eq!(source.log[0], vec![1, 1, 1]);
        assert_eq!(outcome.best.expect("best").point, vec![1, 1, 1]);
    }

    /// A source whose first measurement of point `[lucky]` is fast by luck, and slow after.
    struct Noisy {
        lucky: usize,
        calls: Vec<usize>,
    }

    impl Measure for Noisy {
        fn measure(&mut self, point: &[usize], _best: Option<f64>) -> Option<Trial> {
            let seen = self.calls.iter().filter(|&&p| p == point[0]).count();
            self.calls.push(point[0]);
            let seconds = if point[0] == self.lucky {
                if seen == 0 { 0.5 } else { 2.0 }
            } else {
                1.0 + 0.1 * point[0] as f64
            };
            Some(Trial::exact(seconds))
        }
    }

    #[test]
    fn confirmation_unseats_a_lucky_measurement() {
        let space = SearchSpace::new().with_ints("a", 0..6);
        let run = |confirm: bool| {
            let mut source = Noisy {
                lucky: 4,
                calls: Vec::new(),
            };
            let mut search = Search::new(&space, &mut source, Budget::unlimited());
            strategy::run(&Strategy::Exhaustive, &mut search, 0);
            if confirm {
                search.confirm(3);
            }
            let outcome = search.finish();
            (outcome, source.calls)
        };
        let (plain, _) = run(false);
        assert_eq!(
            plain.best.expect("best").point,
            vec![4],
            "lucky without confirmation"
        );
        let (confirmed, calls) = run(true);
        let best = confirmed.best.expect("best");
        // Point 4 averages 1.25 s over its two measurements; point 0 measures 1.0 s twice.
        assert_eq!(best.point, vec![0]);
        assert_eq!(best.trial.seconds, 1.0);
        assert_eq!(best.trial.repeats, 2);
        // The three fastest first measurements (4, 0, 1) were measured again, fastest first.
        assert_eq!(&calls[6..], &[4, 0, 1]);
        assert_eq!(confirmed.trials, 9);
    }

    #[test]
    fn exhaustive_policy_measures_every_point() {
        let space = SearchSpace::new()
            .with_ints("a", 0..30)
            .with_ints("b", 0..4);
        let mut source = Simulated::new(|p: &[usize]| Some(1.0 + (p[0] * 4 + p[1]) as f64 % 7.0));
        let outcome = tune(
            TunePolicy::Exhaustive,
            &space,
            &mut source,
            TuneOptions::default(),
            None,
        );
        assert_eq!(outcome.trials, 120 + 5, "every point, then 5 confirmations");
        assert_eq!(outcome.stop, StopReason::Completed);
    }
}
