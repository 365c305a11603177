//! Search strategies over a [`Search`]: exhaustive, random sampling, model-ordered
//! neighbourhood search and a genetic algorithm, plus [`run`] to pick one by value.
//!
//! Every strategy is a plain function of the search (and a seed where it draws random numbers),
//! deterministic for a given seed and measurement source. Strategies only propose legal points
//! (the search refuses the others without measuring them) and return when the search stops.

mod exhaustive;
mod genetic;
mod neighbourhood;
mod random;

pub use exhaustive::exhaustive;
pub use genetic::{GeneticConfig, genetic};
pub use neighbourhood::{NeighbourhoodConfig, neighbourhood};
pub use random::random_sampling;

use crate::search::Search;

/// A strategy chosen by value (for policies and configuration).
#[derive(Clone, PartialEq, Debug)]
pub enum Strategy {
    /// Every point, in enumeration order ([`exhaustive`]).
    Exhaustive,
    /// Uniform sampling without replacement, stratified over the categorical dimensions
    /// ([`random_sampling`]).
    Random,
    /// Greedy one-dimension moves from the model's best guess, with restarts ([`neighbourhood`]).
    Neighbourhood(NeighbourhoodConfig),
    /// A genetic algorithm over islands ([`genetic`]).
    Genetic(GeneticConfig),
}

/// Runs `strategy` on `search` with random numbers from `seed`.
pub fn run(strategy: &Strategy, search: &mut Search<'_>, seed: u64) {
    match strategy {
        Strategy::Exhaustive => exhaustive(search),
        Strategy::Random => random_sampling(search, seed),
        Strategy::Neighbourhood(config) => neighbourhood(search, config, seed),
        Strategy::Genetic(config) => genetic(search, config, seed),
    }
}

#[cfg(test)]
mod tests;
