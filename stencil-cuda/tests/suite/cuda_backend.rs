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

/// `DeviceGrid::copy_from` replaces a device grid's storage in place, which `download`
/// returns, and refuses a grid of another geometry; without a GPU no device opens.
#[test]
fn device_grid_copy_from_replaces_the_storage_or_reports_no_gpu() {
    let device = match CudaDevice::global() {
        Ok(device) => device,
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::BackendUnavailable, "{e}");
            println!("SKIP: no CUDA GPU ({e})");
            return;
        }
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
