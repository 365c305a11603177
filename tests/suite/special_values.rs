//! `VerifyConfig::special_values`: NaN, infinities, signed zeros, subnormals and huge values in
//! the inputs, with the semantics of `min`, `max`, comparisons and `select` on NaN the same on
//! the CPU backend (bit for bit) and in the PTX emulator; and planted backends that flush NaN or
//! subnormals, invisible to the default mode, caught by it.

use stencil::prelude::*;
use stencil::{
    Backend, CpuBackend, EmulatedGpu, ErrorKind, Job, Kernel, Schedule, Stencil, VerifyConfig,
    kernels, verify_with,
};

stencil! {
    /// Every operation whose special-value semantics could differ between backends.
    pub fn corner_cases(u: &Grid2<f64>, v: &Grid2<f64>, out: &mut Grid2<f64>, s: f64) {
        let m = min(u[i-1, j], v[i, j]) + max(v[i+1, j], u[i, j]);
        let c = select(u[i, j] > v[i, j] || !(u[i, j+1] <= 0.5), u[i, j] - v[i, j], m);
        let d = if u[i, j] == v[i, j-1] { 1.0 } else { u[i, j] / v[i, j] };
        out[i, j] = c + s * d + abs(u[i, j-1]) * sqrt(abs(v[i, j+1])) - (u[i+1, j] - u[i+1, j]);
    }

    /// Subnormal inputs reach the output (and NaN inputs do not: `max` returns -1 for them).
    pub fn keep(u: &Grid2<f64>, out: &mut Grid2<f64>) {
        out[i, j] = max(u[i, j], -1.0);
    }

    /// The same in f32, with functions.
    pub fn corner_cases_f32(u: &Grid2<f32>, out: &mut Grid2<f32>) {
        let a = max(u[i, j], 0.0) - min(u[i-1, j], -0.0);
        out[i, j] = select(a != a, -1.0, a) + tanh(u[i, j+1]) + floor(u[i+1, j]) * ceil(u[i, j-1]);
    }
}

fn special() -> VerifyConfig {
    VerifyConfig {
        special_values: true,
        ..VerifyConfig::default()
    }
}

fn check<T: stencil::Element>(stencil: &Stencil<T>) {
    let cpu: &dyn Backend<T> = CpuBackend::global();
    let gpu = EmulatedGpu::new();
    let mut backends = vec![cpu];
    if stencil_cuda::codegen::check_kernel(stencil.kernel()).is_ok() {
        backends.push(&gpu);
    }
    let report = verify_with(stencil, &backends, &special())
        .unwrap_or_else(|e| panic!("{}: {e}", stencil.kernel().name));
    assert!(report.points > 0, "{report}");
}

#[test]
fn seeds_and_corner_cases_agree_on_special_values_on_every_backend() {
    check(kernels::laplacian::stencil());
    check(kernels::jacobi7::stencil());
    check(kernels::jacobi27::stencil());
    check(kernels::jacobi7_f32::stencil());
    check(kernels::five_point::stencil());
    check(kernels::gradient::stencil());
    check(kernels::dia_spmv::stencil());
    check(corner_cases::stencil());
    check(corner_cases_f32::stencil());
    check(keep::stencil());
}

/// The CPU backend, then every NaN (`nan`) or every subnormal (`!nan`) in the outputs
/// replaced by zero, as a backend that flushes them would leave it.
struct Flushes {
    nan: bool,
}

impl Backend<f64> for Flushes {
    fn name(&self) -> String {
        format!(
            "cpu flushing {}",
            if self.nan { "NaN" } else { "subnormals" }
        )
    }
    fn default_schedule(&self, kernel: &Kernel, shape: &[usize]) -> Schedule {
        <CpuBackend as Backend<f64>>::default_schedule(CpuBackend::global(), kernel, shape)
    }
    fn sample_schedules(&self, kernel: &Kernel, shape: &[usize]) -> Vec<Schedule> {
        vec![self.default_schedule(kernel, shape)]
    }
    fn matches_interpreter_bits(&self, _: &Kernel, _: &Schedule) -> bool {
        !self.nan
    }
    fn run(&self, job: &mut Job<'_, f64>, schedule: &Schedule) -> stencil::Result<()> {
        <CpuBackend as Backend<f64>>::run(CpuBackend::global(), job, schedule)?;
        let nan = self.nan;
        for out in job.outputs_mut() {
            let shape = out.geom.interior().to_vec();
            for i in 0..shape[0] as isize {
                for j in 0..shape[1] as isize {
                    let v = out.get(&[i, j]);
                    let flush = if nan { v.is_nan() } else { v.is_subnormal() };
                    if flush {
                        out.set(&[i, j], 0.0);
                    }
                }
            }
        }
        Ok(())
    }
}

#[test]
fn backends_that_flush_nan_or_subnormals_pass_the_default_mode_and_fail_this_one() {
    for nan in [true, false] {
        let backend = Flushes { nan };
        let b: &dyn Backend<f64> = &backend;
        let stencil = if nan {
            kernels::five_point::stencil()
        } else {
            keep::stencil()
        };
        verify_with(stencil, &[b], &VerifyConfig::default())
            .expect("ordinary values never produce NaN or subnormals here");
        let err = verify_with(stencil, &[b], &special()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::VerificationFailed, "{err}");
    }
}
