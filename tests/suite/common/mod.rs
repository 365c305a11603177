//! What the tests share beyond `stencil_test_support` and `stencil::kernels`: a 64^3 random
//! grid, a fresh tuning cache file, and a backend that declares none of the optional
//! capabilities.

#![allow(dead_code)] // Each test crate uses its own part.

use std::path::PathBuf;

use stencil::prelude::*;
use stencil_test_support::Rng;

/// 64^3 = 2^18 points: the smallest interior `quick` tunes.
pub(crate) const N: usize = 64;

/// A tuning cache file in a fresh directory named after this process, `suite` and `name`.
pub(crate) fn temp_cache(suite: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stencil-{suite}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join("tuning.json")
}

/// An `N`^3 grid of random values in [-0.5, 0.5) drawn from `seed`, halo filled.
pub(crate) fn random_grid(seed: u64) -> Grid3<f64> {
    let halo = stencil::DEFAULT_HALO;
    stencil_test_support::grid::random_grid([N, N, N], halo, &mut Rng::new(seed), (-0.5, 0.5))
}

/// The CPU backend behind the `Backend` trait's defaults for every optional capability
/// (`Capabilities::default()`: no reductions, no outputs read in place), to test what the facade does with a
/// backend that cannot run a kernel.
pub(crate) struct PlainCpu;

impl stencil::Backend<f64> for PlainCpu {
    fn name(&self) -> String {
        "plain-cpu".into()
    }
    fn default_schedule(&self, kernel: &stencil::Kernel, shape: &[usize]) -> stencil::Schedule {
        <stencil::CpuBackend as stencil::Backend<f64>>::default_schedule(
            stencil::CpuBackend::global(),
            kernel,
            shape,
        )
    }
    fn sample_schedules(
        &self,
        kernel: &stencil::Kernel,
        shape: &[usize],
    ) -> Vec<stencil::Schedule> {
        <stencil::CpuBackend as stencil::Backend<f64>>::sample_schedules(
            stencil::CpuBackend::global(),
            kernel,
            shape,
        )
    }
    fn run(
        &self,
        job: &mut stencil::Job<'_, f64>,
        schedule: &stencil::Schedule,
    ) -> stencil::Result<()> {
        stencil::Backend::run(stencil::CpuBackend::global(), job, schedule)
    }
}
