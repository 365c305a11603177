//! Strategy tests on simulated landscapes: no timing noise, known optima computed
//! independently of the strategies.

use std::collections::HashSet;
use std::time::Duration;

use stencil_core::schedule::{DimValue, SearchSpace};

use super::*;
use crate::measure::{Measure, Trial};
use crate::search::{Budget, Outcome, StopReason};
use crate::simulated::{Simulated, landscapes, replay};

/// 12 x 12 x 8 numeric values and a streaming-stores flag: 2304 points.
fn space() -> SearchSpace {
    SearchSpace::new()
        .with_ints("tile_z", 1..=12)
        .with_ints("tile_y", (1..=12).map(|v| v * 4))
        .with_ints("row_block", (0..8).map(|v| 1 << v))
        .with("stores", vec![DimValue::Flag(false), DimValue::Flag(true)])
}

/// The legality rule of the test backend: tile_z + tile_y indices at most 18 (like a limit
/// on threads per block).
fn legal(p: &[usize]) -> bool {
    p[0] + p[1] <= 18
}

/// A landscape restricted to legal points; streaming stores make every point 20% faster.
fn legal_only(f: impl Fn(&[usize]) -> f64) -> impl Fn(&[usize]) -> Option<f64> {
    move |p: &[usize]| legal(p).then(|| f(p) * if p[3] == 1 { 0.8 } else { 1.0 })
}

/// Runs `strategy` and checks the invariants every search keeps: nothing illegal measured,
/// nothing measured twice, the best is legal and is the minimum of what was measured.
fn run_checked<F: Fn(&[usize]) -> Option<f64>>(
    strategy: &Strategy,
    source: &mut Simulated<F>,
    budget: Budget,
    model: Option<&dyn crate::model::Model>,
    seed: u64,
) -> Outcome {
    let space = space();
    let outcome = {
        let mut search = Search::new(&space, source, budget);
        if let Some(m) = model {
            search = search.with_model(m, f64::INFINITY);
        }
        run(strategy, &mut search, seed);
        search.finish()
    };
    let mut seen = HashSet::new();
    for p in &source.log {
        assert!(source.is_legal(p), "illegal point measured: {p:?}");
        assert!(seen.insert(p.clone()), "point measured twice: {p:?}");
    }
    assert_eq!(outcome.trials, source.log.len());
    if let Some(best) = &outcome.best {
        assert!(legal(&best.point));
        let min = outcome
            .history
            .iter()
            .filter_map(|(_, t)| t.map(|t| t.seconds))
            .fold(f64::INFINITY, f64::min);
        assert_eq!(best.trial.seconds, min);
    }
    outcome
}

fn strategies() -> Vec<Strategy> {
    vec![
        Strategy::Exhaustive,
        Strategy::Random,
        Strategy::Neighbourhood(NeighbourhoodConfig::default()),
        Strategy::Genetic(GeneticConfig::default()),
    ]
}

#[test]
fn exhaustive_equals_brute_force() {
    let f = legal_only(landscapes::noise(11));
    // Brute force with its own loops, not through the space's enumeration.
    let mut brute: Option<(Vec<usize>, f64)> = None;
    let mut n_legal = 0;
    for a in 0..12 {
        for b in 0..12 {
            for c in 0..8 {
                for s in 0..2 {
                    let p = vec![a, b, c, s];
                    if let Some(t) = f(&p) {
                        n_legal += 1;
                        if brute.as_ref().is_none_or(|(_, bt)| t < *bt) {
                            brute = Some((p, t));
                        }
                    }
                }
            }
        }
    }
    let (brute_point, brute_time) = brute.expect("some legal point");
    let mut source = Simulated::new(f);
    let outcome = run_checked(
        &Strategy::Exhaustive,
        &mut source,
        Budget::unlimited(),
        None,
        0,
    );
    let best = outcome.best.expect("a best point");
    assert_eq!(best.point, brute_point);
    assert_eq!(best.trial.seconds, brute_time);
    assert_eq!(outcome.trials, n_legal);
    assert_eq!(outcome.illegal, 2304 - n_legal);
    assert_eq!(outcome.stop, StopReason::Completed);
}

#[test]
fn exhaustive_replays_recorded_timings() {
    let records = vec![
        (vec![0, 0, 0, 0], 3.0),
        (vec![2, 3, 1, 1], 1.25),
        (vec![5, 5, 5, 0], 2.0),
        (vec![11, 1, 7, 1], 1.5),
    ];
    let space = space();
    let mut source = replay(&records);
    let mut search = Search::new(&space, &mut source, Budget::unlimited());
    exhaustive(&mut search);
    let outcome = search.finish();
    assert_eq!(outcome.trials, 4, "only recorded points are legal");
    let best = outcome.best.expect("best");
    assert_eq!(best.point, vec![2, 3, 1, 1]);
    assert_eq!(best.trial.seconds, 1.25);
}

#[test]
fn neighbourhood_and_genetic_find_the_bowl_optimum() {
    let centre = vec![6, 9, 3, 1];
    for seed in 0..8 {
        let mut source = Simulated::new(legal_only(landscapes::bowl(centre.clone(), 0.05)));
        let outcome = run_checked(
            &Strategy::Neighbourhood(NeighbourhoodConfig::default()),
            &mut source,
            Budget::trials(120),
            None,
            seed,
        );
        assert_eq!(
            outcome.best.expect("best").point,
            centre,
            "neighbourhood, seed {seed}"
        );

        let mut source = Simulated::new(legal_only(landscapes::bowl(centre.clone(), 0.05)));
        let outcome = run_checked(
            &Strategy::Genetic(GeneticConfig {
                similarity_threshold: None,
                generations: 40,
                ..GeneticConfig::default()
            }),
            &mut source,
            Budget::trials(300),
            None,
            seed,
        );
        assert_eq!(
            outcome.best.expect("best").point,
            centre,
            "genetic, seed {seed}"
        );
    }
}

#[test]
fn genetic_finds_the_optimum_of_a_rugged_landscape() {
    let centre = vec![4, 7, 5, 1];
    for seed in 0..8 {
        let mut source = Simulated::new(legal_only(landscapes::rugged(centre.clone(), 0.02, 0.3)));
        let outcome = run_checked(
            &Strategy::Genetic(GeneticConfig {
                islands: 2,
                island_size: 12,
                generations: 60,
                similarity_threshold: None,
                ..GeneticConfig::default()
            }),
            &mut source,
            Budget::trials(400),
            None,
            seed,
        );
        assert_eq!(outcome.best.expect("best").point, centre, "seed {seed}");
    }
    // Random sampling with the same budget mostly misses it (a guard that the landscape is
    // hard): about one seed in six finds it.
    let mut found_by_random = 0;
    for seed in 0..8 {
        let mut source = Simulated::new(legal_only(landscapes::rugged(centre.clone(), 0.02, 0.3)));
        let outcome = run_checked(
            &Strategy::Random,
            &mut source,
            Budget::trials(400),
            None,
            seed,
        );
        found_by_random += usize::from(outcome.best.expect("best").point == centre);
    }
    assert!(
        found_by_random <= 4,
        "random found it {found_by_random} times in 8"
    );
}

#[test]
fn neighbourhood_steps_over_ripples_without_a_model() {
    let centre = vec![4, 7, 5, 1];
    for seed in 0..8 {
        let mut source = Simulated::new(legal_only(landscapes::rugged(centre.clone(), 0.02, 0.3)));
        let config = NeighbourhoodConfig {
            restarts: 1000,
            max_step: 3,
            ..NeighbourhoodConfig::default()
        };
        let outcome = run_checked(
            &Strategy::Neighbourhood(config),
            &mut source,
            Budget::trials(400),
            None,
            seed,
        );
        assert_eq!(outcome.best.expect("best").point, centre, "seed {seed}");
    }
}

#[test]
fn neighbourhood_with_restarts_finds_the_optimum_of_a_rugged_landscape() {
    let centre = vec![4, 7, 5, 1];
    for seed in 0..8 {
        let mut source = Simulated::new(legal_only(landscapes::rugged(centre.clone(), 0.02, 0.3)));
        // The model knows the trend (the bowl) but not the ripple.
        let trend = landscapes::bowl(centre.clone(), 0.02);
        let model = move |p: &[usize]| trend(p) + if p[3] == 1 { 0.0 } else { 0.5 };
        let outcome = run_checked(
            &Strategy::Neighbourhood(NeighbourhoodConfig::default()),
            &mut source,
            Budget::trials(60),
            Some(&model),
            seed,
        );
        assert_eq!(outcome.best.expect("best").point, centre, "seed {seed}");
    }
}

#[test]
fn a_model_that_hints_at_the_needle_finds_it() {
    let needle = vec![9, 2, 6, 0];
    let hint = {
        let needle = needle.clone();
        move |p: &[usize]| {
            p.iter()
                .zip(&needle)
                .map(|(&a, &b)| (a as f64 - b as f64).abs())
                .sum::<f64>()
        }
    };
    for seed in 0..4 {
        let mut source =
            Simulated::new(legal_only(landscapes::plateau_needle(needle.clone(), 0.25)));
        let outcome = run_checked(
            &Strategy::Neighbourhood(NeighbourhoodConfig::default()),
            &mut source,
            Budget::trials(20),
            Some(&hint),
            seed,
        );
        assert_eq!(outcome.best.expect("best").point, needle);

        let mut source =
            Simulated::new(legal_only(landscapes::plateau_needle(needle.clone(), 0.25)));
        let outcome = run_checked(
            &Strategy::Genetic(GeneticConfig::default()),
            &mut source,
            Budget::trials(40),
            Some(&hint),
            seed,
        );
        assert_eq!(outcome.best.expect("best").point, needle);
    }
    // Without the hint the neighbourhood search is lost on the plateau within the same budget.
    let mut source = Simulated::new(legal_only(landscapes::plateau_needle(needle.clone(), 0.25)));
    let outcome = run_checked(
        &Strategy::Neighbourhood(NeighbourhoodConfig::default()),
        &mut source,
        Budget::trials(20),
        None,
        0,
    );
    assert_ne!(outcome.best.expect("best").point, needle);
}

#[test]
fn trial_budget_is_honoured_by_every_strategy() {
    for strategy in strategies() {
        for n in [0, 1, 7, 33] {
            let mut source = Simulated::new(legal_only(landscapes::noise(3)));
            let outcome = run_checked(&strategy, &mut source, Budget::trials(n), None, 5);
            assert_eq!(outcome.trials, n, "{strategy:?}");
            assert_eq!(outcome.stop, StopReason::TrialBudget, "{strategy:?}");
        }
    }
}

/// A time limit spent by the first trial does not stop the search before its minimum: a
/// slow default schedule is never the only point measured.
#[test]
fn time_budget_leaves_the_minimum_trials_to_every_strategy() {
    for strategy in strategies() {
        let mut source =
            Simulated::new(legal_only(landscapes::noise(4))).with_delay(Duration::from_millis(5));
        let budget = Budget::unlimited()
            .with_time(Duration::from_millis(1))
            .with_min_trials(4);
        let outcome = run_checked(&strategy, &mut source, budget, None, 5);
        assert_eq!(outcome.stop, StopReason::TimeBudget, "{strategy:?}");
        assert_eq!(outcome.trials, 4, "{strategy:?}");
        // Without the minimum the same search stops after its first trial.
        let mut source =
            Simulated::new(legal_only(landscapes::noise(4))).with_delay(Duration::from_millis(5));
        let budget = Budget::unlimited().with_time(Duration::from_millis(1));
        let outcome = run_checked(&strategy, &mut source, budget, None, 5);
        assert_eq!(outcome.trials, 1, "{strategy:?}");
    }
}

#[test]
fn time_budget_is_honoured_by_every_strategy() {
    for strategy in strategies() {
        let mut source =
            Simulated::new(legal_only(landscapes::noise(4))).with_delay(Duration::from_millis(2));
        let budget = Budget::unlimited().with_time(Duration::from_millis(30));
        let outcome = run_checked(&strategy, &mut source, budget, None, 5);
        assert_eq!(outcome.stop, StopReason::TimeBudget, "{strategy:?}");
        // At least 2 ms per trial: no more than 15 trials fit before the limit is seen.
        assert!(
            outcome.trials <= 16,
            "{strategy:?}: {} trials",
            outcome.trials
        );
        assert!(outcome.trials >= 1);
    }
}

#[test]
fn the_search_stops_near_the_bound() {
    let centre = vec![6, 9, 3, 1];
    for strategy in strategies() {
        let mut source = Simulated::new(legal_only(landscapes::bowl(centre.clone(), 0.05)));
        // The optimum takes 0.8 s; stop within 10% of it.
        let budget = Budget::unlimited().with_bound(0.8, 0.10);
        let outcome = run_checked(&strategy, &mut source, budget, None, 9);
        assert_eq!(outcome.stop, StopReason::NearBound, "{strategy:?}");
        let limit = 0.8 * (1.0 + 0.10);
        let best = outcome.best.expect("best").trial.seconds;
        assert!(best <= limit, "{strategy:?}: {best}");
        // It stopped at the first point inside the tolerance.
        let inside = outcome
            .history
            .iter()
            .filter(|(_, t)| t.is_some_and(|t| t.seconds <= limit))
            .count();
        assert_eq!(inside, 1, "{strategy:?}");
        let last = outcome
            .history
            .last()
            .and_then(|(_, t)| *t)
            .expect("last trial");
        assert!(last.seconds <= limit, "{strategy:?}");
    }
}

#[test]
fn the_same_seed_gives_the_same_search() {
    for strategy in strategies() {
        let histories: Vec<Vec<Vec<usize>>> = [1, 1, 2]
            .iter()
            .map(|&seed| {
                let mut source = Simulated::new(legal_only(landscapes::noise(8)));
                run_checked(&strategy, &mut source, Budget::trials(50), None, seed);
                source.log
            })
            .collect();
        assert_eq!(histories[0], histories[1], "{strategy:?}");
        if strategy != Strategy::Exhaustive {
            assert_ne!(histories[0], histories[2], "{strategy:?}");
        }
    }
}

#[test]
fn a_pruning_model_skips_hopeless_points() {
    let centre = vec![6, 9, 3, 1];
    let bowl = landscapes::bowl(centre.clone(), 0.05);
    // A model that predicts the landscape exactly (less the 20% of streaming stores).
    let model = move |p: &[usize]| bowl(p) * if p[3] == 1 { 0.8 } else { 1.0 };
    let space = space();
    let mut source = Simulated::new(legal_only(landscapes::bowl(centre.clone(), 0.05)));
    let mut search = Search::new(&space, &mut source, Budget::unlimited()).with_model(&model, 1.5);
    exhaustive(&mut search);
    let outcome = search.finish();
    assert!(outcome.pruned > 0);
    assert_eq!(outcome.best.expect("best").point, centre);
    // Every measured point was within 1.5x of the best time measured before it.
    let mut best = f64::INFINITY;
    for (p, t) in &outcome.history {
        assert!(model(p) <= 1.5 * best || best == f64::INFINITY);
        best = best.min(t.expect("legal").seconds);
    }
}

#[test]
fn random_sampling_tries_every_optimisation_combination_first() {
    let space = SearchSpace::new().with_ints("tile", 1..=50).with(
        "variant",
        vec![
            DimValue::Name("plain".into()),
            DimValue::Name("streaming".into()),
            DimValue::Name("shared".into()),
        ],
    );
    let mut source = Simulated::new(|p: &[usize]| Some(1.0 + p[0] as f64));
    let mut search = Search::new(&space, &mut source, Budget::trials(6));
    random_sampling(&mut search, 3);
    drop(search);
    let variants: Vec<usize> = source.log.iter().map(|p| p[1]).collect();
    let mut first_three = variants[..3].to_vec();
    first_three.sort_unstable();
    assert_eq!(first_three, vec![0, 1, 2]);
    let mut next_three = variants[3..].to_vec();
    next_three.sort_unstable();
    assert_eq!(next_three, vec![0, 1, 2]);
}

#[test]
fn random_sampling_without_budget_covers_every_legal_point_once() {
    let mut source = Simulated::new(legal_only(landscapes::noise(5)));
    let outcome = run_checked(&Strategy::Random, &mut source, Budget::unlimited(), None, 2);
    let n_legal = (0..12usize)
        .flat_map(|a| (0..12usize).map(move |b| a + b))
        .filter(|s| *s <= 18)
        .count()
        * 8
        * 2;
    assert_eq!(outcome.trials, n_legal);
    assert_eq!(outcome.stop, StopReason::Completed);
}

#[test]
fn progress_is_reported_after_every_trial() {
    let space = space();
    let mut source = Simulated::new(legal_only(landscapes::noise(6)));
    let mut reports: Vec<(usize, Option<f64>)> = Vec::new();
    let mut hook = |p: &crate::search::Progress<'_>| reports.push((p.trials, p.best_seconds));
    let mut search = Search::new(&space, &mut source, Budget::trials(12)).with_progress(&mut hook);
    genetic(&mut search, &GeneticConfig::default(), 4);
    let outcome = search.finish();
    assert_eq!(reports.len(), 12);
    assert_eq!(
        reports.iter().map(|r| r.0).collect::<Vec<_>>(),
        (1..=12).collect::<Vec<_>>()
    );
    // The best time never gets worse and ends at the outcome's best.
    assert!(reports.windows(2).all(|w| w[1].1 <= w[0].1));
    assert_eq!(reports[11].1, outcome.best.map(|b| b.trial.seconds));
}

#[test]
fn illegal_points_are_never_measured_or_returned() {
    // Most of the space is illegal: only tile_z == tile_y indices are allowed.
    let diagonal = |p: &[usize]| (p[0] == p[1] && legal(p)).then(|| 1.0 + (p[2] + p[0]) as f64);
    for strategy in strategies() {
        for seed in 0..3 {
            let mut source = Simulated::new(diagonal);
            let outcome = run_checked(&strategy, &mut source, Budget::trials(40), None, seed);
            let best = outcome.best.expect("a legal point was found");
            assert_eq!(best.point[0], best.point[1], "{strategy:?}");
        }
    }
}

/// A simulated source that abandons, as the timing harness does, every point clearly slower
/// (by more than 1/0.8) than the best time so far: it yields no time for them.
struct Abandoning<F>(Simulated<F>);

impl<F: Fn(&[usize]) -> Option<f64>> Measure for Abandoning<F> {
    fn is_legal(&self, point: &[usize]) -> bool {
        self.0.is_legal(point)
    }

    fn measure(&mut self, point: &[usize], best_so_far: Option<f64>) -> Option<Trial> {
        let trial = self.0.measure(point, best_so_far)?;
        match best_so_far {
            Some(best) if trial.seconds * 0.8 > best => None,
            _ => Some(trial),
        }
    }
}

/// Regression: a model that ranks the far corner of the space first (it cannot tell the
/// optimisation switches apart) made every descent start at a point the harness abandoned,
/// and the search ended after its restarts without one move. The failed starts now hand their
/// descent to the best point measured, the baseline, which leads to the optimum.
#[test]
fn abandoned_starts_descend_from_the_baseline() {
    let centre = vec![6, 9, 3, 1];
    let baseline = vec![5, 8, 3, 1];
    let far_first = |p: &[usize]| -> f64 { p.iter().map(|&x| x as f64).sum() };
    let space = space();
    let mut source = Abandoning(Simulated::new(legal_only(landscapes::bowl(
        centre.clone(),
        0.5,
    ))));
    let outcome = {
        let mut search = Search::new(&space, &mut source, Budget::trials(60))
            .with_model(&far_first, f64::INFINITY);
        assert!(search.evaluate(&baseline).is_some());
        run(
            &Strategy::Neighbourhood(NeighbourhoodConfig {
                restarts: 4,
                ..NeighbourhoodConfig::default()
            }),
            &mut search,
            3,
        );
        search.finish()
    };
    let best = outcome.best.expect("best");
    assert_eq!(best.point, centre, "after {} trials", outcome.trials);
}
