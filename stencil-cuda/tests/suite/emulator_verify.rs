//! Every variant of the seeds' kernels and of 36 random stencils, run in the PTX emulator on
//! random grids (interior and halo) through `stencil::verify_with`, matches the reference
//! interpreter (kernels using every transcendental function included); a planted off-by-one
//! in the generated PTX is caught.

use crate::common;

use stencil::{ElemType, ErrorKind, Kernel, Stencil, VerifyConfig, verify_with};
use stencil_core::Backend;
use stencil_cuda::{CodegenOptions, EmulatedGpu};

fn verify_kernel(kernel: &Kernel, backend: &EmulatedGpu) -> stencil::Result<stencil::VerifyReport> {
    let config = VerifyConfig::default();
    match kernel.elem() {
        ElemType::F64 => {
            let s = Stencil::<f64>::new(kernel.clone())?;
            let b: &dyn Backend<f64> = backend;
            verify_with(&s, &[b], &config)
        }
        ElemType::F32 => {
            let s = Stencil::<f32>::new(kernel.clone())?;
            let b: &dyn Backend<f32> = backend;
            verify_with(&s, &[b], &config)
        }
    }
}

#[test]
fn seed_kernels_match_the_interpreter_in_every_variant() {
    let (f64s, f32s) = common::seed_kernels();
    let gpu = EmulatedGpu::new();
    for k in f64s.iter().chain(&f32s) {
        let report = verify_kernel(k, &gpu).unwrap_or_else(|e| panic!("{}: {e}", k.name));
        assert!(report.cases >= 15, "{report}");
        println!("{report}");
    }
}

#[test]
fn random_stencils_match_the_interpreter_in_every_variant() {
    let gpu = EmulatedGpu::new();
    let kernels = common::random_kernels(36);
    for k in &kernels {
        let report = verify_kernel(k, &gpu).unwrap_or_else(|e| panic!("{}: {e}", k.name));
        assert!(report.points > 0, "{report}");
    }
    println!("{} random stencils verified", kernels.len());
}

#[test]
fn a_planted_off_by_one_is_caught() {
    let planted = EmulatedGpu::with_options(CodegenOptions {
        planted_off_by_one: true,
    });
    let k = common::laplacian::stencil().kernel().clone();
    let err = verify_kernel(&k, &planted).expect_err("the planted bug must be caught");
    assert_eq!(err.kind(), ErrorKind::VerificationFailed, "{err}");
    // The same kernel without the bug passes, so the failure is the bug's.
    verify_kernel(&k, &EmulatedGpu::new()).expect("clean generator");
}

#[test]
fn transcendental_functions_match_on_large_shapes() {
    // The seeds' list runs them on the default shapes; these add more points per case, under
    // a tolerance of 64 eps instead of 4096 (the routines are within 2 ulp of std).
    let gpu = EmulatedGpu::new();
    let config = VerifyConfig {
        shapes: Some(vec![vec![41, 67]]),
        tolerance_eps: 64.0,
        ..VerifyConfig::default()
    };
    let b: &dyn Backend<f64> = &gpu;
    let report = verify_with(common::transcendental::stencil(), &[b], &config)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(report.points >= 41 * 67, "{report}");
    let config = VerifyConfig {
        shapes: Some(vec![vec![1021]]),
        tolerance_eps: 64.0,
        ..VerifyConfig::default()
    };
    let b: &dyn Backend<f32> = &gpu;
    verify_with(common::transcendental_f32::stencil(), &[b], &config)
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn larger_ragged_shapes_match_in_every_variant() {
    let gpu = EmulatedGpu::new();
    let config = VerifyConfig {
        shapes: Some(vec![vec![9, 10, 70], vec![20, 3, 31]]),
        ..VerifyConfig::default()
    };
    for k in [
        common::laplacian::stencil(),
        common::jacobi27::stencil(),
        common::star4::stencil(),
    ] {
        let b: &dyn Backend<f64> = &gpu;
        let report = verify_with(k, &[b], &config).unwrap_or_else(|e| panic!("{e}"));
        assert!(report.cases >= 20, "{report}");
    }
    let config = VerifyConfig {
        shapes: Some(vec![vec![37, 130], vec![5, 64]]),
        ..VerifyConfig::default()
    };
    let b: &dyn Backend<f32> = &gpu;
    verify_with(common::upwind::stencil(), &[b], &config).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_cpu_schedule_is_an_invalid_schedule() {
    let gpu = EmulatedGpu::new();
    let mut u = stencil::Grid2::<f64>::with_halo([4, 4], 2).unwrap();
    u.fill_with(|[i, j]| (i * 4 + j) as f64);
    let mut out = u.like();
    let s = common::five_point::stencil();
    let mut job =
        stencil::Job::new(s, vec![u.view()], vec![out.view_mut()], vec![0.5, 0.25]).unwrap();
    let err = gpu
        .run(
            &mut job,
            &stencil::Schedule::Cpu(stencil::CpuSchedule::default()),
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidSchedule);
}
