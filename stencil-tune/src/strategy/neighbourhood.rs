//! Model-ordered neighbourhood search: start from the model's best guess, move one dimension
//! at a time to the fastest neighbour (steepest descent), restart from the next-best unvisited
//! guess (or a random point) at a local optimum. A start that yields no time (abandoned as
//! clearly slower than the best, or failed) hands its descent to the best point measured so
//! far, once per point: a model that ranks poorly (it cannot tell most optimisation switches
//! apart) then still leaves a descent from the baseline the caller measured first.
//!
//! Neighbours of a point change one dimension: a numeric dimension moves up to `max_step`
//! indices either way (values are sorted, so these are the nearest values), a categorical one
//! takes each of its other values (switching an optimisation on or off). Neighbours are
//! measured in the model's order, so with a pruning model the hopeless ones are skipped.

use stencil_core::rng::Rng;

use crate::search::{Search, random_legal_point, ranked_candidates};

/// Settings of [`neighbourhood`].
#[derive(Clone, PartialEq, Debug)]
pub struct NeighbourhoodConfig {
    /// Descents after the first one (each from a new start point).
    pub restarts: usize,
    /// Largest index step of a numeric dimension in one move.
    pub max_step: usize,
    /// Of the restarts, start this fraction from the model's ranking (the rest from random
    /// points); without a model every restart is random.
    pub model_starts: f64,
}

impl Default for NeighbourhoodConfig {
    fn default() -> Self {
        NeighbourhoodConfig {
            restarts: 8,
            max_step: 1,
            model_starts: 0.5,
        }
    }
}

/// Largest space whose points are all ranked by the model; larger ones are sampled.
const RANK_ENUMERATE_LIMIT: u64 = 1 << 16;
/// Points sampled for the ranking of a larger space.
const RANK_SAMPLES: usize = 4096;

/// Greedy descent with restarts (see the module documentation).
pub fn neighbourhood(search: &mut Search<'_>, config: &NeighbourhoodConfig, seed: u64) {
    let mut rng = Rng::new(seed);
    let ranked = ranked_candidates(search, &mut rng, RANK_ENUMERATE_LIMIT, RANK_SAMPLES);
    let mut ranked_next = 0usize;
    let mut descended: Vec<Vec<usize>> = Vec::new();
    for descent in 0..=config.restarts {
        if search.is_stopped() {
            return;
        }
        let from_model = descent == 0 || rng.chance(config.model_starts);
        let start = if from_model && ranked_next < ranked.len() {
            // The best-ranked point not looked at yet.
            while ranked_next < ranked.len() && search.is_visited(&ranked[ranked_next]) {
                ranked_next += 1;
            }
            ranked.get(ranked_next).cloned()
        } else {
            None
        };
        let start = match start {
            Some(p) => Some(p),
            None => fresh_random_point(search, &mut rng),
        };
        let Some(start) = start else {
            return; // nothing legal left to start from
        };
        descend(search, start, config.max_step, &mut descended);
    }
}

/// A random legal point not visited yet (a few hundred draws at most).
fn fresh_random_point(search: &Search<'_>, rng: &mut Rng) -> Option<Vec<usize>> {
    (0..64)
        .filter_map(|_| random_legal_point(search, rng, 16))
        .find(|p| !search.is_visited(p))
}

/// Steepest descent from `start` until no neighbour is faster or the search stops; from the
/// best point so far instead when `start` gives no time and no descent left from that point
/// yet. `descended` holds the points descents started from.
fn descend(
    search: &mut Search<'_>,
    start: Vec<usize>,
    max_step: usize,
    descended: &mut Vec<Vec<usize>>,
) {
    let (mut current, mut current_time) = match search.evaluate(&start) {
        Some(time) => (start, time),
        None => match search.best() {
            Some(best) if !descended.contains(&best.point) => {
                (best.point.clone(), best.trial.seconds)
            }
            _ => return,
        },
    };
    descended.push(current.clone());
    loop {
        let mut neighbours = neighbours_of(search, &current, max_step);
        if search.model().is_some() {
            neighbours.sort_by(|a, b| {
                let pa = search.predict(a).unwrap_or(f64::INFINITY);
                let pb = search.predict(b).unwrap_or(f64::INFINITY);
                pa.total_cmp(&pb)
            });
        }
        let mut best_move: Option<(Vec<usize>, f64)> = None;
        for n in neighbours {
            if search.is_stopped() {
                return;
            }
            if let Some(t) = search.evaluate(&n)
                && t < current_time
                && best_move.as_ref().is_none_or(|(_, b)| t < *b)
            {
                best_move = Some((n, t));
            }
        }
        match best_move {
            Some((p, t)) => {
                current = p;
                current_time = t;
            }
            None => return,
        }
    }
}

/// The legal one-dimension neighbours of `point`.
fn neighbours_of(search: &Search<'_>, point: &[usize], max_step: usize) -> Vec<Vec<usize>> {
    let space = search.space();
    let mut out = Vec::new();
    for (d, dim) in space.dims().iter().enumerate() {
        let n = dim.values.len();
        let candidates: Vec<usize> = if dim.is_categorical() {
            (0..n).filter(|&i| i != point[d]).collect()
        } else {
            (1..=max_step.max(1))
                .flat_map(|s| [point[d].checked_sub(s), Some(point[d] + s)])
                .flatten()
                .filter(|&i| i < n)
                .collect()
        };
        for i in candidates {
            let mut p = point.to_vec();
            p[d] = i;
            if search.is_legal(&p) {
                out.push(p);
            }
        }
    }
    out
}
