//! A genetic algorithm over islands (sub-populations).
//!
//! Barker (001_...): a small population over a few generations; each individual is one point
//! (one gene per dimension), parents are picked by tournament, a child takes each gene from one
//! parent at random (uniform crossover per dimension) and each gene mutates with a small
//! probability; the best individuals survive unchanged (elitism). GSTuner (003_..., section 4.6):
//! the population is split into islands that pass their best individual to the next island of a
//! ring every few generations, and the search ends when any island has converged: the share of
//! its most frequent individual reaches a threshold. With a model, half of the first generation
//! is the model's best guesses (GSTuner seeds its search with model-guided samples).
//!
//! A point measured once is remembered by the [`Search`], so converged populations cost no new
//! trials; illegal children are replaced by random legal points.

use std::collections::HashMap;

use stencil_core::rng::Rng;

use crate::search::{Search, random_legal_point, ranked_candidates};

/// Settings of [`genetic`].
#[derive(Clone, PartialEq, Debug)]
pub struct GeneticConfig {
    /// Islands (sub-populations); 1 is Barker's single population.
    pub islands: usize,
    /// Individuals per island.
    pub island_size: usize,
    /// Most generations.
    pub generations: usize,
    /// Individuals per tournament.
    pub tournament: usize,
    /// Probability that a gene mutates (`None`: one over the number of dimensions).
    pub mutation_rate: Option<f64>,
    /// Best individuals of an island copied unchanged into its next generation.
    pub elite: usize,
    /// Generations between migrations along the ring of islands.
    pub migration_interval: usize,
    /// Stop when the most frequent individual of some island makes up at least this share of
    /// it (GSTuner's MCRT); `None` runs every generation.
    pub similarity_threshold: Option<f64>,
}

impl Default for GeneticConfig {
    fn default() -> Self {
        GeneticConfig {
            islands: 2,
            island_size: 8,
            generations: 12,
            tournament: 2,
            mutation_rate: None,
            elite: 1,
            migration_interval: 2,
            similarity_threshold: Some(0.75),
        }
    }
}

/// One individual and its fitness (seconds; infinite when illegal, failed or unmeasured).
#[derive(Clone, Debug)]
struct Individual {
    genes: Vec<usize>,
    seconds: f64,
}

/// Runs the genetic algorithm (see the module documentation).
pub fn genetic(search: &mut Search<'_>, config: &GeneticConfig, seed: u64) {
    let mut rng = Rng::new(seed);
    let n_islands = config.islands.max(1);
    let size = config.island_size.max(2);
    let n_dims = search.space().n_dims();
    let mutation_rate = config.mutation_rate.unwrap_or(1.0 / n_dims.max(1) as f64);

    // First generation: model guesses for half of it (when there is a model), random points
    // for the rest.
    let guesses = ranked_candidates(search, &mut rng, 1 << 16, 4096);
    let n_guesses = (n_islands * size / 2).min(guesses.len());
    let mut seeds: Vec<Vec<usize>> = guesses.into_iter().take(n_guesses).collect();
    while seeds.len() < n_islands * size {
        match random_legal_point(search, &mut rng, 256) {
            Some(p) => seeds.push(p),
            None => break,
        }
    }
    if seeds.is_empty() {
        return;
    }
    rng.shuffle(&mut seeds);
    let mut islands: Vec<Vec<Individual>> = (0..n_islands)
        .map(|i| {
            (0..size)
                .map(|k| Individual {
                    genes: seeds[(i * size + k) % seeds.len()].clone(),
                    seconds: f64::INFINITY,
                })
                .collect()
        })
        .collect();
    if !evaluate_all(search, &mut islands) {
        return;
    }

    for generation in 1..config.generations {
        if converged(&islands, config.similarity_threshold) {
            tracing::debug!(target: "stencil_tune::genetic", generation, "an island converged");
            return;
        }
        for island in &mut islands {
            *island = breed(search, island, config, mutation_rate, &mut rng);
        }
        if !evaluate_all(search, &mut islands) {
            return;
        }
        if n_islands > 1
            && config.migration_interval > 0
            && generation % config.migration_interval == 0
        {
            migrate(&mut islands);
        }
    }
}

/// Measures every individual; `false` when the search stopped.
fn evaluate_all(search: &mut Search<'_>, islands: &mut [Vec<Individual>]) -> bool {
    for island in islands.iter_mut() {
        for individual in island.iter_mut() {
            if search.is_stopped() {
                return false;
            }
            individual.seconds = search.evaluate(&individual.genes).unwrap_or(f64::INFINITY);
        }
    }
    !search.is_stopped()
}

/// Whether some island's most frequent individual reaches the threshold share.
fn converged(islands: &[Vec<Individual>], threshold: Option<f64>) -> bool {
    let Some(threshold) = threshold else {
        return false;
    };
    islands.iter().any(|island| {
        let mut counts: HashMap<&[usize], usize> = HashMap::new();
        for individual in island {
            *counts.entry(&individual.genes).or_default() += 1;
        }
        let most = counts.values().copied().max().unwrap_or(0);
        most as f64 >= threshold * island.len() as f64
    })
}

/// The next generation of one island.
fn breed(
    search: &Search<'_>,
    island: &[Individual],
    config: &GeneticConfig,
    mutation_rate: f64,
    rng: &mut Rng,
) -> Vec<Individual> {
    let mut sorted: Vec<&Individual> = island.iter().collect();
    sorted.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    let mut next: Vec<Individual> = sorted
        .iter()
        .take(config.elite.min(island.len()))
        .map(|i| (*i).clone())
        .collect();
    let space = search.space();
    while next.len() < island.len() {
        let a = tournament(island, config.tournament, rng);
        let b = tournament(island, config.tournament, rng);
        let mut child: Vec<usize> = (0..space.n_dims())
            .map(|d| {
                if rng.chance(0.5) {
                    a.genes[d]
                } else {
                    b.genes[d]
                }
            })
            .collect();
        for (d, gene) in child.iter_mut().enumerate() {
            if rng.chance(mutation_rate) {
                *gene = mutate(
                    *gene,
                    space.dims()[d].values.len(),
                    space.dims()[d].is_categorical(),
                    rng,
                );
            }
        }
        if !search.is_legal(&child) {
            match random_legal_point(search, rng, 256) {
                Some(p) => child = p,
                None => child = a.genes.clone(),
            }
        }
        next.push(Individual {
            genes: child,
            seconds: f64::INFINITY,
        });
    }
    next
}

/// A new value for a gene: a categorical gene takes any other value; a numeric one usually
/// steps to a neighbouring index (small moves) and sometimes jumps anywhere.
fn mutate(gene: usize, n_values: usize, categorical: bool, rng: &mut Rng) -> usize {
    if n_values <= 1 {
        return gene;
    }
    if categorical || rng.chance(0.3) {
        let other = rng.index(n_values - 1);
        return if other >= gene { other + 1 } else { other };
    }
    let step = 1 + rng.index(2);
    if rng.chance(0.5) {
        gene.saturating_sub(step)
    } else {
        (gene + step).min(n_values - 1)
    }
}

/// The fittest of `size` individuals drawn at random.
fn tournament<'i>(island: &'i [Individual], size: usize, rng: &mut Rng) -> &'i Individual {
    let mut best = &island[rng.index(island.len())];
    for _ in 1..size.max(1) {
        let other = &island[rng.index(island.len())];
        if other.seconds < best.seconds {
            best = other;
        }
    }
    best
}

/// Each island's best replaces the next island's worst (a ring).
fn migrate(islands: &mut [Vec<Individual>]) {
    let bests: Vec<Individual> = islands
        .iter()
        .map(|island| {
            island
                .iter()
                .min_by(|a, b| a.seconds.total_cmp(&b.seconds))
                .cloned()
                .unwrap_or_else(|| island[0].clone())
        })
        .collect();
    let n = islands.len();
    for (i, best) in bests.into_iter().enumerate() {
        let target = &mut islands[(i + 1) % n];
        if let Some(worst) = target
            .iter_mut()
            .max_by(|a, b| a.seconds.total_cmp(&b.seconds))
        {
            *worst = best;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn island(genes: &[[usize; 2]]) -> Vec<Individual> {
        genes
            .iter()
            .map(|g| Individual {
                genes: g.to_vec(),
                seconds: 1.0,
            })
            .collect()
    }

    #[test]
    fn convergence_is_the_share_of_the_most_frequent_individual() {
        let mixed = island(&[[0, 0], [0, 1], [1, 1], [0, 0]]); // most frequent: 2 of 4
        let settled = island(&[[2, 2], [2, 2], [2, 2], [0, 1]]); // 3 of 4
        assert!(!converged(std::slice::from_ref(&mixed), Some(0.75)));
        assert!(converged(std::slice::from_ref(&mixed), Some(0.5)));
        assert!(
            converged(&[mixed.clone(), settled.clone()], Some(0.75)),
            "any island"
        );
        assert!(!converged(&[mixed, settled], None));
    }

    #[test]
    fn migration_replaces_the_next_islands_worst_with_the_best() {
        let mut a = island(&[[0, 0], [0, 1]]);
        a[1].seconds = 0.5;
        let mut b = island(&[[5, 5], [6, 6]]);
        b[0].seconds = 3.0;
        b[1].seconds = 2.0;
        let mut islands = vec![a, b];
        migrate(&mut islands);
        // a's best ([0, 1], 0.5 s) replaced b's worst ([5, 5], 3 s); b's best ([6, 6], 2 s)
        // replaced a's worst ([0, 0], 1 s).
        assert_eq!(islands[1][0].genes, vec![0, 1]);
        assert_eq!(islands[0][0].genes, vec![6, 6]);
    }

    #[test]
    fn mutation_changes_a_categorical_gene_and_stays_in_range() {
        let mut rng = Rng::new(5);
        for _ in 0..200 {
            let g = mutate(1, 3, true, &mut rng);
            assert!(g != 1 && g < 3);
            let n = mutate(0, 4, false, &mut rng);
            assert!(n < 4);
        }
        assert_eq!(mutate(0, 1, false, &mut rng), 0);
    }
}
