//! [`CudaBackend`]: the [`Backend`] that runs jobs on host grids on the CUDA device (upload,
//! launch, download per call), so `verify` and `Launch::on` reach the GPU like any backend.

use std::sync::{Arc, OnceLock};

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use stencil_core::backend::{Backend, Job};
use stencil_core::ir::{Kernel, Role};
use stencil_core::schedule::Schedule;
use stencil_core::{Error, ErrorKind, Result};

use super::{CudaDevice, GpuElement, driver_error};
use crate::caps::{default_schedule, sample_schedules};

/// The GPU backend: runs jobs on host grids by uploading them, launching the generated kernel
/// and downloading the outputs (per call; keep [`DeviceGrid`](super::DeviceGrid)s and use [`CudaDevice::run`]
/// for many sweeps). Without a driver or GPU every run is an `Err`.
#[derive(Debug, Default)]
pub struct CudaBackend {
    device: OnceLock<Result<Arc<CudaDevice>>>,
}

impl From<Arc<CudaDevice>> for CudaBackend {
    /// A backend on an already opened device (device selection: [`CudaDevice::new`]).
    fn from(device: Arc<CudaDevice>) -> Self {
        let backend = CudaBackend::default();
        // A fresh OnceLock is empty, so this cannot fail.
        let _ = backend.device.set(Ok(device));
        backend
    }
}

impl CudaBackend {
    /// A backend on device 0 (opened on first use); `CudaBackend::from(device)` picks another.
    pub fn new() -> Self {
        CudaBackend::default()
    }

    /// The device, or why there is none.
    ///
    /// # Errors
    /// As [`CudaDevice::new`].
    pub fn device(&self) -> Result<Arc<CudaDevice>> {
        self.device.get_or_init(CudaDevice::global).clone()
    }
}

impl<T: GpuElement> Backend<T> for CudaBackend {
    fn name(&self) -> String {
        match self.device() {
            Ok(d) => format!("cuda:{}", d.ordinal()),
            Err(_) => "cuda (unavailable)".into(),
        }
    }

    fn default_schedule(&self, kernel: &Kernel, shape: &[usize]) -> Schedule {
        Schedule::Gpu(default_schedule(kernel, shape))
    }

    fn sample_schedules(&self, kernel: &Kernel, _shape: &[usize]) -> Vec<Schedule> {
        sample_schedules(kernel)
            .into_iter()
            .map(Schedule::Gpu)
            .collect()
    }

    fn run(&self, job: &mut Job<'_, T>, schedule: &Schedule) -> Result<()> {
        let Schedule::Gpu(schedule) = schedule else {
            return Err(Error::new(
                ErrorKind::InvalidSchedule,
                format!("the CUDA backend runs GPU schedules, not {schedule:?}"),
            ));
        };
        let device = self.device()?;
        let kernel = job.kernel();
        let geoms = crate::emulated::field_geometries(job);
        let loaded = device.function(kernel, schedule, &geoms)?;
        let s = &device.stream;
        let (inputs, outputs, params) = job.parts_mut();
        let ins: Vec<CudaSlice<T>> = inputs
            .iter()
            .map(|v| s.clone_htod(v.data))
            .collect::<std::result::Result<_, _>>()
            .map_err(driver_error("upload"))?;
        let mut outs: Vec<CudaSlice<T>> = outputs
            .iter()
            .map(|v| s.clone_htod(&*v.data))
            .collect::<std::result::Result<_, _>>()
            .map_err(driver_error("upload"))?;
        let config = LaunchConfig {
            grid_dim: loaded.launch.grid.into(),
            block_dim: loaded.launch.block.into(),
            shared_mem_bytes: 0,
        };
        {
            let mut builder = s.launch_builder(&loaded.function);
            let mut in_iter = ins.iter();
            let mut out_iter = outs.iter_mut();
            for f in &kernel.fields {
                match f.role {
                    Role::Input => {
                        builder.arg(in_iter.next().expect("job input"));
                    }
                    Role::Output => {
                        builder.arg(out_iter.next().expect("job output"));
                    }
                }
            }
            for p in params {
                builder.arg(p);
            }
            // SAFETY: as in `CudaDevice::run`: arguments match the entry's parameters, the
            // buffers hold whole grids of the geometries the code was generated for (the job
            // validated shapes and halos), and outputs are distinct buffers.
            unsafe { builder.launch(config) }.map_err(driver_error("kernel launch"))?;
        }
        for (buf, view) in outs.iter().zip(outputs.iter_mut()) {
            s.memcpy_dtoh(buf, &mut *view.data)
                .map_err(driver_error("download"))?;
        }
        device.synchronize()
    }
}
