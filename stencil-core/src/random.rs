//! Random stencils with symmetric neighbour patterns (GSTuner's Algorithm 1), for verifying
//! every backend on shapes nobody wrote by hand, and [`to_macro_source`] to replay any kernel
//! through the `stencil!` macro.
//!
//! # The pattern (Sun et al., GSTuner, section 4.2)
//! The neighbourhood of radius `order` is split into `2^n_dims` overlapping local regions (the
//! orthants, sharing the axes). Sampling happens in the first region only (every coordinate
//! `>= 0`): order-1 points are drawn among the neighbours of the centre; order-`n` points among
//! the neighbours of the order-`n-1` points drawn, keeping only points of Chebyshev distance
//! exactly `n` (the algorithm's deletion of order `n-1` and `n-2` points). Each candidate is kept
//! with probability `density`, and at least one is kept per order, so the stencil has exactly
//! the requested order. The points are then mirrored into every other region (every sign
//! flip), and duplicates removed. The centre is always read.
//!
//! # The kernel
//! One output `out`; one or more inputs (`u`, `v`, ...), each with its own pattern (the first
//! input's has the requested order, the others an order no larger). Points in one symmetry orbit
//! (equal absolute offsets) share a coefficient, or with `asymmetric` every point has its own; a
//! coefficient is a constant (a multiple of 1/512, exact in f32) or, with probability
//! `param_probability`, a parameter `c0`, `c1`, .... With `nonlinear`, each input's sum may gain
//! a product of two reads, becomes a `let`, and the total goes through a random nonlinear
//! function (`abs`, `max`, `min`, a select, `sqrt(abs(.))`, `tanh`), to exercise more of the IR.
//!
//! [`random_stencil`] gives the kernel as IR; [`random_stencil_source`] gives the same draw as
//! `stencil!` source written without the IR (an independent oracle's input), and
//! [`to_macro_source`] prints any IR kernel as source.

mod macro_source;
mod recipe;

use std::collections::{BTreeMap, BTreeSet};

pub use macro_source::to_macro_source;

use crate::element::ElemType;
use crate::ir::{Kernel, MAX_DIMS, MAX_RADIUS, Offset};
use crate::rng::Rng;
use recipe::{Coefficient, Nonlinear, Recipe, Term};

/// Names of the inputs, in order (so at most this many inputs).
const INPUT_NAMES: [&str; 4] = ["u", "v", "w", "z"];

/// What [`random_stencil`] generates.
#[derive(Clone, PartialEq, Debug)]
pub struct RandomStencilConfig {
    /// Dimensions, 1 to [`MAX_DIMS`] (GSTuner uses 2 and 3).
    pub n_dims: usize,
    /// Order (Chebyshev radius) of the first input's pattern, 1 to [`MAX_RADIUS`] (GSTuner:
    /// 1 to 4).
    pub order: u32,
    /// Element type of every field and parameter.
    pub elem: ElemType,
    /// Seed; the same configuration always gives the same kernel.
    pub seed: u64,
    /// The number of inputs is drawn uniformly from `1..=max_inputs` (1 to 4; default 2).
    pub max_inputs: usize,
    /// Probability that a candidate neighbour is sampled, in `(0, 1]` (default 0.3: a 3-D
    /// input pattern then has about 9 points on average at order 1, about 110 at order 4).
    pub density: f64,
    /// Probability that an orbit's coefficient is a parameter rather than a constant
    /// (default 0.25).
    pub param_probability: f64,
    /// Pass the sum through a random nonlinear function via `let`s, and add to each input's
    /// sum, with probability 1/2, a product of two reads (default false).
    pub nonlinear: bool,
    /// Give every point its own coefficient instead of one per symmetry orbit (default
    /// false), so that a mirrored offset (a sign flipped on one axis) changes the result.
    pub asymmetric: bool,
}

impl RandomStencilConfig {
    /// The defaults above for the given shape, type and seed.
    pub fn new(n_dims: usize, order: u32, elem: ElemType, seed: u64) -> Self {
        RandomStencilConfig {
            n_dims,
            order,
            elem,
            seed,
            max_inputs: 2,
            density: 0.3,
            param_probability: 0.25,
            nonlinear: false,
            asymmetric: false,
        }
    }
}

/// Algorithm 1: a random symmetric pattern of exactly order `order`, sorted ascending, centre
/// included. Offsets have zeros beyond `n_dims`.
///
/// # Panics
/// If `n_dims` is not in `1..=MAX_DIMS` or `order` not in `1..=MAX_RADIUS`.
pub fn random_pattern(n_dims: usize, order: u32, density: f64, rng: &mut Rng) -> Vec<Offset> {
    assert!(
        (1..=MAX_DIMS).contains(&n_dims),
        "random_pattern: n_dims {n_dims} not in 1..={MAX_DIMS}"
    );
    assert!(
        (1..=MAX_RADIUS).contains(&order),
        "random_pattern: order {order} not in 1..={MAX_RADIUS}"
    );
    let mut sampled = BTreeSet::from([Offset::ZERO]);
    let mut previous = BTreeSet::from([Offset::ZERO]);
    for n in 1..=order {
        let candidates: Vec<Offset> = previous
            .iter()
            .flat_map(|p| box_neighbours(*p, n_dims))
            .filter(|q| q.0.iter().all(|&c| c >= 0) && q.chebyshev() == n)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut selected: BTreeSet<Offset> = candidates
            .iter()
            .copied()
            .filter(|_| rng.chance(density))
            .collect();
        if selected.is_empty() {
            selected.insert(candidates[rng.index(candidates.len())]);
        }
        sampled.extend(selected.iter().copied());
        previous = selected;
    }
    let mut mirrored = BTreeSet::new();
    for p in &sampled {
        for signs in 0..1u32 << n_dims {
            let mut q = *p;
            for d in 0..n_dims {
                if signs & (1 << d) != 0 {
                    q.0[d] = -q.0[d];
                }
            }
            mirrored.insert(q);
        }
    }
    mirrored.into_iter().collect()
}

/// The `3^n_dims - 1` points at Chebyshev distance 1 from `p`.
fn box_neighbours(p: Offset, n_dims: usize) -> Vec<Offset> {
    let mut out = vec![p];
    for d in 0..n_dims {
        out = out
            .into_iter()
            .flat_map(|q| {
                [-1, 0, 1].map(|delta| {
                    let mut r = q;
                    r.0[d] += delta;
                    r
                })
            })
            .collect();
    }
    out.retain(|q| *q != p);
    out
}

/// A random verified kernel as described in the module documentation.
///
/// # Panics
/// If the configuration is out of the ranges documented on [`RandomStencilConfig`].
pub fn random_stencil(config: &RandomStencilConfig) -> Kernel {
    draw(config).to_kernel()
}

/// The kernel [`random_stencil`] draws for `config`, as a `stencil! { pub fn ... }`
/// invocation written from the generator's own description of it, not from the IR: the text
/// and the IR are two independent renderings of one draw (same tree, same evaluation order),
/// so the text is an oracle for the builder, the macro's lowering and every backend.
///
/// # Panics
/// As [`random_stencil`].
pub fn random_stencil_source(config: &RandomStencilConfig) -> String {
    draw(config).to_source()
}

/// Draws the kernel's pattern, coefficients and nonlinearity.
fn draw(config: &RandomStencilConfig) -> Recipe {
    assert!(
        (1..=INPUT_NAMES.len()).contains(&config.max_inputs),
        "random_stencil: max_inputs {} not in 1..={}",
        config.max_inputs,
        INPUT_NAMES.len()
    );
    assert!(
        config.density > 0.0 && config.density <= 1.0,
        "random_stencil: density {} not in (0, 1]",
        config.density
    );
    let mut rng = Rng::new(config.seed);
    let n_inputs = 1 + rng.index(config.max_inputs);
    let name = format!(
        "random_{}d_order{}_{:016x}",
        config.n_dims, config.order, config.seed
    );
    let mut n_params = 0;
    let mut coefficient = |rng: &mut Rng| {
        if rng.chance(config.param_probability) {
            n_params += 1;
            Coefficient::Param(n_params - 1)
        } else {
            let numerator = loop {
                let n = rng.range(-1023, 1024);
                if n != 0 {
                    break n;
                }
            };
            Coefficient::Const(numerator as f64 / 512.0)
        }
    };
    let mut sums = Vec::new();
    let mut patterns = Vec::new();
    for i in 0..n_inputs {
        let order = if i == 0 {
            config.order
        } else {
            1 + rng.index(config.order as usize) as u32
        };
        let pattern = random_pattern(config.n_dims, order, config.density, &mut rng);
        // Points sharing a coefficient: orbits under reflection (points with the same absolute
        // offsets), or each point alone when asymmetric.
        let groups: Vec<Vec<Offset>> = if config.asymmetric {
            pattern.iter().map(|p| vec![*p]).collect()
        } else {
            let mut orbits: BTreeMap<[u32; MAX_DIMS], Vec<Offset>> = BTreeMap::new();
            for p in &pattern {
                orbits
                    .entry(p.0.map(i32::unsigned_abs))
                    .or_default()
                    .push(*p);
            }
            orbits.into_values().collect()
        };
        let terms: Vec<Term> = groups
            .into_iter()
            .map(|reads| Term {
                coefficient: coefficient(&mut rng),
                reads,
                times: None,
            })
            .collect();
        sums.push(terms);
        patterns.push(pattern);
    }
    if config.nonlinear {
        // Product terms: a read of this input times a read of any input, both inside the
        // inputs' own patterns (so the footprint stays the pattern).
        for i in 0..n_inputs {
            if rng.chance(0.5) {
                let p = patterns[i][rng.index(patterns[i].len())];
                let j = rng.index(n_inputs);
                let q = patterns[j][rng.index(patterns[j].len())];
                let term = Term {
                    coefficient: coefficient(&mut rng),
                    reads: vec![p],
                    times: Some((j, q)),
                };
                sums[i].push(term);
            }
        }
    }
    let nonlinear = config.nonlinear.then(|| {
        let threshold = rng.range(-64, 64) as f64 / 128.0;
        match rng.index(6) {
            0 => Nonlinear::Abs,
            1 => Nonlinear::Max(threshold),
            2 => Nonlinear::Min(threshold),
            3 => Nonlinear::Leaky(threshold),
            4 => Nonlinear::SqrtAbs,
            _ => Nonlinear::Tanh,
        }
    });
    Recipe {
        name,
        n_dims: config.n_dims,
        elem: config.elem,
        inputs: INPUT_NAMES[..n_inputs].to_vec(),
        n_params,
        sums,
        nonlinear,
    }
}

/// `count` configurations spread over the generator's options, for test sets: seed `s` (0 to
/// `count - 1`) takes `[2, 3, 1][s % 3]` dimensions, order `1 + s / 3 % 4`, `f64` for even
/// seeds and `f32` for odd ones, nonlinear terms for every fifth seed, and density
/// `[0.5, 0.2, 1.0][s % 3]` (other options as [`RandomStencilConfig::new`] sets them).
pub fn spread_configs(count: u64) -> Vec<RandomStencilConfig> {
    (0..count)
        .map(|seed| {
            let n_dims = [2, 3, 1][(seed % 3) as usize];
            let order = 1 + (seed / 3 % 4) as u32;
            let elem = if seed % 2 == 0 {
                ElemType::F64
            } else {
                ElemType::F32
            };
            let mut c = RandomStencilConfig::new(n_dims, order, elem, seed);
            c.nonlinear = seed % 5 == 0;
            c.density = [0.5, 0.2, 1.0][(seed % 3) as usize];
            c
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{features, footprint};
    use crate::verify;

    fn configs() -> Vec<RandomStencilConfig> {
        spread_configs(200)
    }

    #[test]
    fn two_hundred_random_stencils_verify_and_have_the_requested_shape() {
        let mut seen_inputs = BTreeSet::new();
        for c in configs() {
            let k = random_stencil(&c);
            verify(&k).unwrap();
            assert_eq!(k.n_dims, c.n_dims);
            assert_eq!(k.elem(), c.elem);
            assert_eq!(k.outputs().count(), 1);
            let f = features(&k);
            assert_eq!(f.order, c.order, "{k}");
            assert_eq!(f.nnz_by_order[0], f.n_inputs, "the centre is always read");
            seen_inputs.insert(f.n_inputs);
            // Every order from 1 up to the requested one is present in the first input.
            let first = &footprint(&k).inputs[0].offsets;
            for r in 1..=c.order {
                assert!(
                    first.iter().any(|o| o.chebyshev() == r),
                    "order {r} missing"
                );
            }
        }
        assert_eq!(seen_inputs, BTreeSet::from([1, 2]));
    }

    #[test]
    fn asymmetric_kernels_give_each_point_its_own_coefficient() {
        for mut c in configs() {
            c.asymmetric = true;
            c.param_probability = 0.0;
            let recipe = draw(&c);
            let terms = &recipe.sums[0];
            assert!(terms.iter().all(|t| t.reads.len() == 1));
            assert_eq!(
                terms.iter().filter(|t| t.times.is_none()).count(),
                footprint(&recipe.to_kernel()).inputs[0].offsets.len()
            );
        }
    }

    #[test]
    fn patterns_are_symmetric_under_every_reflection() {
        for c in configs() {
            let k = random_stencil(&c);
            for input in footprint(&k).inputs {
                let set: BTreeSet<Offset> = input.offsets.iter().copied().collect();
                for p in &input.offsets {
                    for d in 0..c.n_dims {
                        let mut q = *p;
                        q.0[d] = -q.0[d];
                        assert!(set.contains(&q), "{p:?} without its mirror in dim {d}");
                    }
                }
            }
        }
    }

    #[test]
    fn pattern_grows_from_neighbours_of_the_previous_order() {
        // Every non-centre point of the first orthant is adjacent to a point one order lower.
        let mut rng = Rng::new(5);
        for _ in 0..50 {
            let pattern = random_pattern(3, 4, 0.3, &mut rng);
            let set: BTreeSet<Offset> = pattern.iter().copied().collect();
            for p in pattern.iter().filter(|p| p.0.iter().all(|&c| c >= 0)) {
                let r = p.chebyshev();
                if r > 0 {
                    assert!(
                        box_neighbours(*p, 3)
                            .iter()
                            .any(|q| q.chebyshev() == r - 1 && set.contains(q)),
                        "{p:?} has no parent"
                    );
                }
            }
        }
    }

    #[test]
    fn full_density_gives_the_full_box_and_seeds_are_reproducible() {
        let mut rng = Rng::new(0);
        assert_eq!(random_pattern(2, 2, 1.0, &mut rng).len(), 25);
        assert_eq!(random_pattern(3, 1, 1.0, &mut rng).len(), 27);
        let c = RandomStencilConfig::new(3, 2, ElemType::F64, 77);
        assert_eq!(random_stencil(&c), random_stencil(&c));
        let other = RandomStencilConfig {
            seed: 78,
            ..c.clone()
        };
        assert_ne!(random_stencil(&c), random_stencil(&other));
    }
}
