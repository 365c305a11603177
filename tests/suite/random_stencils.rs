//! GSTuner's random stencils (Algorithm 1: symmetric patterns, orders 1-4, 2-D and 3-D), built
//! at run time as IR and verified on the CPU backend's generic path against the reference
//! interpreter. (The same generator's kernels also go through the macro: see
//! `generated-tests/`.) A quick run draws the first seeds' kernels (16 in f64, 8 in f32),
//! `STENCIL_FULL_TESTS=1` all of them (40 and 24).

use stencil::random::{RandomStencilConfig, random_stencil};
use stencil::{ElemType, Element, Stencil, verify};

fn check_all<T: Element>(elem: ElemType, seeds: std::ops::Range<u64>) -> usize {
    let mut verified = 0;
    for seed in seeds {
        for n_dims in [2, 3] {
            for order in 1..=4 {
                let config =
                    RandomStencilConfig::new(n_dims, order, elem, seed * 31 + order as u64);
                let kernel = random_stencil(&config);
                let name = kernel.name.clone();
                let stencil = Stencil::<T>::new(kernel)
                    .unwrap_or_else(|e| panic!("{name}: generated kernel rejected: {e}"));
                let report = verify(&stencil).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(report.points > 0, "{report}");
                verified += 1;
            }
        }
    }
    verified
}

/// The seeds a run draws from: `full` on a full run, its first `quick` on a quick one (8
/// kernels per seed: 2-D and 3-D, orders 1 to 4).
fn seeds(full: std::ops::Range<u64>, quick: u64) -> std::ops::Range<u64> {
    let end = crate::quick_or_full(full.start + quick, full.end, "later random-stencil seeds");
    full.start..end
}

#[test]
fn random_f64_stencils_match_the_interpreter() {
    let seeds = seeds(0..5, 2);
    assert_eq!(
        check_all::<f64>(ElemType::F64, seeds.clone()),
        8 * seeds.count()
    );
}

#[test]
fn random_f32_stencils_match_the_interpreter() {
    let seeds = seeds(100..103, 1);
    assert_eq!(
        check_all::<f32>(ElemType::F32, seeds.clone()),
        8 * seeds.count()
    );
}
