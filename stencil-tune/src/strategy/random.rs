//! Random sampling without replacement, stratified over the optimisation combinations.
//!
//! The categorical dimensions (flags, names) form the space's optimisation combinations
//! (GSTuner, 003_..., section 4.5); samples are dealt to the combinations in turn, so every
//! combination of optimisations is tried early instead of the largest one dominating, and the
//! numeric dimensions are drawn uniformly inside each. Without categorical dimensions it is
//! plain uniform sampling.

use std::collections::HashSet;

use stencil_core::rng::Rng;

use crate::search::Search;

/// Spaces up to this many points are enumerated and shuffled; larger ones are sampled.
const ENUMERATE_LIMIT: u64 = 1 << 20;

/// Draws distinct random legal points until the search stops or the space is exhausted.
pub fn random_sampling(search: &mut Search<'_>, seed: u64) {
    let mut rng = Rng::new(seed);
    let space = search.space();
    let categorical: Vec<usize> = (0..space.n_dims())
        .filter(|&d| space.dims()[d].is_categorical())
        .collect();
    // The optimisation combinations: one index per categorical dimension.
    let combinations: Vec<Vec<usize>> = {
        let mut all = vec![Vec::new()];
        for &d in &categorical {
            let n = space.dims()[d].values.len();
            all = all
                .into_iter()
                .flat_map(|prefix| {
                    (0..n).map(move |i| {
                        let mut p = prefix.clone();
                        p.push(i);
                        p
                    })
                })
                .collect();
        }
        all
    };
    if space.n_points() <= ENUMERATE_LIMIT {
        // Small space: shuffle each combination's points, then deal them in turn.
        let mut groups: Vec<Vec<Vec<usize>>> = vec![Vec::new(); combinations.len()];
        for index in 0..space.n_points() {
            let point = space.point_at(index);
            let key: Vec<usize> = categorical.iter().map(|&d| point[d]).collect();
            let c = combinations.iter().position(|k| *k == key).unwrap_or(0);
            groups[c].push(point);
        }
        for group in &mut groups {
            rng.shuffle(group);
            group.reverse(); // popped from the back
        }
        while groups.iter().any(|g| !g.is_empty()) {
            for group in &mut groups {
                if search.is_stopped() {
                    return;
                }
                if let Some(point) = group.pop() {
                    search.evaluate(&point);
                }
            }
        }
        return;
    }
    // Large space: rejection sampling inside each combination.
    let mut open: Vec<bool> = vec![true; combinations.len()];
    let mut tried: HashSet<Vec<usize>> = HashSet::new();
    let attempts = 10_000;
    let mut turn = 0usize;
    while open.iter().any(|&o| o) && !search.is_stopped() {
        let c = turn % combinations.len();
        turn += 1;
        if !open[c] {
            continue;
        }
        let mut drawn = None;
        for _ in 0..attempts {
            let mut point: Vec<usize> = space
                .dims()
                .iter()
                .map(|d| rng.index(d.values.len()))
                .collect();
            for (k, &d) in categorical.iter().enumerate() {
                point[d] = combinations[c][k];
            }
            if tried.insert(point.clone()) {
                drawn = Some(point);
                break;
            }
        }
        match drawn {
            Some(point) => {
                search.evaluate(&point);
            }
            None => open[c] = false,
        }
    }
}
