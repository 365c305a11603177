//! The CUDA backend through `verify_with`: on a machine with a GPU every sample schedule of
//! the seeds' kernels matches the interpreter; on a machine without one (no driver, no
//! device) every call is a `BackendUnavailable` error, never a panic. The same test runs
//! unchanged on both.

use crate::common;

use stencil::{CudaBackend, ErrorKind, VerifyConfig, verify_with};
use stencil_core::Backend;
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
