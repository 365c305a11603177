//! The CUDA backend through `verify_with`: on a machine with a GPU every sample schedule of
//! the seeds' kernels matches the interpreter; on a machine without one (no driver, no
//! device) every call is a `BackendUnavailable` error, never a panic. The same test runs
//! unchanged on both.

use crate::common;

use stencil::{CudaBackend, ErrorKind, VerifyConfig, verify_with};
use stencil_core::Backend;
use stencil_core::grid::Grid;
use stencil_cuda::CudaDevice;

#[test]
fn cuda_backend_verifies_or_reports_no_gpu() {
    let backend = CudaBackend::new();
    let b64: &dyn Backend<f64> = &backend;
    let b32: &dyn Backend<f32> = &backend;
    let config = VerifyConfig::default();
    let gpu_present = CudaDevice::global().is_ok();
    let results = [
        verify_with(common::laplacian::stencil(), &[b64], &config),
        verify_with(common::gradient::stencil(), &[b64], &config),
        verify_with(common::five_point::stencil(), &[b64], &config),
        verify_with(common::smooth1d::stencil(), &[b64], &config),
        verify_with(common::jacobi7_f32::stencil(), &[b32], &config),
    ];
    for r in results {
        match r {
            Ok(report) => {
                assert!(gpu_present);
                println!("{report}");
            }
            Err(e) => {
                assert!(!gpu_present, "GPU present but verification failed: {e}");
                assert_eq!(e.kind(), ErrorKind::BackendUnavailable, "{e}");
            }
        }
    }
    if !gpu_present {
        println!("no CUDA GPU: every call was BackendUnavailable");
    }
}

/// The process's CUDA device, or `None` after printing why the test skips: without a GPU
/// no device opens, and that is a `BackendUnavailable` error, never a panic.
fn device_or_skip() -> Option<std::sync::Arc<CudaDevice>> {
    match CudaDevice::global() {
        Ok(device) => Some(device),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::BackendUnavailable, "{e}");
            println!("SKIP: no CUDA GPU ({e})");
            None
        }
    }
}

/// `DeviceGrid::copy_from` replaces a device grid's storage in place, which `download`
/// returns, and refuses a grid of another geometry; without a GPU no device opens.
#[test]
fn device_grid_copy_from_replaces_the_storage_or_reports_no_gpu() {
    let Some(device) = device_or_skip() else {
        return;
    };
    let mut host = Grid::<f64, 2>::with_halo([5, 7], 1).unwrap();
    let mut on_device = device.upload(&host).unwrap();
    for (k, v) in host.as_mut_slice().iter_mut().enumerate() {
        *v = k as f64 * 0.5 - 3.0;
    }
    on_device.copy_from(&host).unwrap();
    assert_eq!(on_device.download().unwrap().as_slice(), host.as_slice());

    let other = Grid::<f64, 2>::with_halo([5, 8], 1).unwrap();
    let refused = on_device.copy_from(&other).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::ShapeMismatch, "{refused}");
}

/// A kernel that reads its step gets the step a device-grid launch is given
/// (`CudaDevice::run_at_step`), and `CudaDevice::run`, which has none to give, refuses it;
/// without a GPU no device opens.
#[test]
fn device_grid_launches_pass_the_step_they_are_given_or_report_no_gpu() {
    use stencil_core::schedule::GpuSchedule;
    use stencil_core::{ElemType, KernelBuilder, Stencil};
    let Some(device) = device_or_skip() else {
        return;
    };
    // out = u + 0.5 * step()
    let mut b = KernelBuilder::new("plus_step", 2, ElemType::F64);
    let u = b.input("u");
    let out = b.output("out");
    let value = b.read(u, &[0, 0]);
    let step = b.step();
    let half = b.constant(0.5);
    let scaled = b.mul(half, step);
    let sum = b.add(value, scaled);
    b.store(out, sum);
    let stencil = Stencil::<f64>::new(b.finish().unwrap()).unwrap();
    let mut host = Grid::<f64, 2>::with_halo([6, 9], 1).unwrap();
    for (k, v) in host.as_mut_slice().iter_mut().enumerate() {
        *v = k as f64 * 0.25 - 1.0;
    }
    let input = device.upload(&host).unwrap();
    let mut poisoned = host.like();
    poisoned.as_mut_slice().fill(f64::NAN);
    let mut output = device.upload(&poisoned).unwrap();
    let schedule = GpuSchedule::default();
    let refused = device
        .run(&stencil, &[&input], &mut [&mut output], &[], &schedule)
        .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::BadArgument, "{refused}");
    device
        .run_at_step(&stencil, &[&input], &mut [&mut output], &[], 7, &schedule)
        .unwrap();
    let result = output.download().unwrap();
    for i in 0..6 {
        for j in 0..9 {
            assert_eq!(result[[i, j]], host[[i, j]] + 3.5, "({i}, {j})");
        }
    }
}
