//! What the tests share: the 7-point heat kernel, a 64^3 random grid, a fresh tuning cache
//! file, and a backend that declares none of the optional capabilities.

#![allow(dead_code)] // Each test crate uses its own part.

use std::path::PathBuf;

use stencil::prelude::*;

stencil! {
    pub(crate) fn heat(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64) {
        out[i, j, k] = c0 * u[i, j, k]
            + c1 * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k]
                  + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1]);
    }
}

/// 64^3 = 2^18 points: the smallest interior `quick` tunes.
pub(crate) const N: usize = 64;

/// A tuning cache file in a fresh directory named after this process, `suite` and `name`.
pub(crate) fn temp_cache(suite: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stencil-{suite}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join("tuning.json")
}

/// An `N`^3 grid of random values in [-0.5, 0.5) (xorshift from `seed`), halo filled.
pub(crate) fn random_grid(seed: u64) -> Grid3<f64> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut u = Grid3::<f64>::new([N, N, N]).expect("grid");
    u.fill_with(|_| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    });
    u
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
