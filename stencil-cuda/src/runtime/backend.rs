//! [`CudaBackend`]: the [`Backend`] that runs jobs on host grids on the CUDA device (upload,
//! launch, download per call), so `verify` and `Launch::on` reach the GPU like any backend.

use std::sync::{Arc, OnceLock};

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use stencil_core::ir::{Kernel, Role};
use stencil_core::schedule::{Schedule, Searchable, TuningSpace};
use stencil_core::{Backend, Job};
use stencil_core::{Error, ErrorKind, Result};

use super::{CudaDevice, GpuElement, driver_error};
use crate::caps::{DeviceCaps, GpuSearch, default_schedule, sample_schedules};

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

    fn tuning_device(&self) -> Option<(String, usize)> {
        let device = self.device().ok()?;
        let caps = device.caps();
        let (major, minor) = caps.compute_capability;
        Some((format!("{} sm_{major}{minor}", caps.name), 1))
    }

    fn tuning_space(&self, kernel: &Kernel, shape: &[usize]) -> Option<TuningSpace> {
        let device = self.device().ok()?;
        Some(tuning_space(kernel, shape, device.caps()))
    }

    fn measure_bandwidth(&self) -> Option<f64> {
        self.device().ok()?.copy_bandwidth(256 << 20, 10).ok()
    }

    fn steps_tuning_space(
        &self,
        kernel: &Kernel,
        shape: &[usize],
        _steps: usize,
        _sweep: &Schedule,
    ) -> Option<TuningSpace> {
        let device = self.device().ok()?;
        Some(steps_tuning_space(kernel, shape, device.caps()))
    }

    /// Every step on the device: the grids uploaded once and downloaded once, halos filled on
    /// the device, pairs of steps fused into one launch when the schedule's `time_steps` is
    /// 2 and the rotation allows (see [`CudaDevice::run_steps`] for device-resident grids).
    fn run_steps(
        &self,
        job: &mut stencil_core::TimeLoop<'_, T>,
        schedule: &Schedule,
        steps: usize,
    ) -> Result<()> {
        let Schedule::Gpu(schedule) = schedule else {
            return Err(crate::steps::not_gpu(schedule));
        };
        let device = self.device()?;
        let arch = device.caps().arch();
        let mut memory = super::DeviceMemory::new(device);
        crate::steps::drive(&mut memory, arch, job, schedule, steps)
    }

    /// Reductions, and outputs read in place (`y = a * x + y`): every output is uploaded with
    /// its values, and every variant reads it at the point it stores, before the store (see
    /// the `codegen` module), so each point sees the value from before the sweep. No regions:
    /// every launch computes the whole interior.
    fn capabilities(&self) -> stencil_core::Capabilities {
        stencil_core::Capabilities {
            reductions: true,
            in_place: true,
            ..stencil_core::Capabilities::default()
        }
    }

    /// Uploads the job's grids, launches, downloads the outputs; for a kernel with reductions
    /// also downloads each thread block's value and combines them on the host in the order
    /// of [`stencil_core::reduce`].
    fn run(&self, job: &mut Job<'_, T>, schedule: &Schedule) -> Result<()> {
        let Schedule::Gpu(schedule) = schedule else {
            return Err(Error::new(
                ErrorKind::InvalidSchedule,
                format!("the CUDA backend runs GPU schedules, not {schedule:?}"),
            ));
        };
        let device = self.device()?;
        let kernel = job.kernel();
        let geoms = crate::emulated_gpu::field_geometries(job);
        crate::codegen::check_halos(kernel, &geoms)?;
        let loaded = device.function(kernel, schedule, &geoms)?;
        if job.shape().contains(&0) {
            // No point: nothing to store, every reduction combines nothing.
            for (r, red) in kernel.reductions.iter().enumerate() {
                job.set_reduction(r, stencil_core::reduce::identity(red.op));
            }
            return Ok(());
        }
        let partials = device.partial_buffers::<T>(kernel.reductions.len(), loaded.partials)?;
        let step = crate::codegen::step_argument::<T>(kernel, job.step());
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
            if let Some(step) = &step {
                builder.arg(step);
            }
            for buf in &partials {
                builder.arg(buf);
            }
            // SAFETY: as in `CudaDevice::run`: arguments match the entry's parameters (fields,
            // scalars, one partials buffer per reduction of the length the generator gave),
            // the buffers hold whole grids of the geometries the code was generated for (the
            // job validated shapes, `check_halos` every input's halo against its reads), and
            // outputs are distinct buffers, read (in place) and written at interior points only.
            unsafe { builder.launch(config) }.map_err(driver_error("kernel launch"))?;
        }
        for (buf, view) in outs.iter().zip(outputs.iter_mut()) {
            s.memcpy_dtoh(buf, &mut *view.data)
                .map_err(driver_error("download"))?;
        }
        let values = device.finish_partials(kernel, &partials, loaded.partials)?;
        device.synchronize()?;
        for (r, value) in values.into_iter().enumerate() {
            job.set_reduction(r, value);
        }
        Ok(())
    }
}

/// Nominal clock for the peak-rate estimate (the roofline only needs its order of magnitude).
const NOMINAL_CLOCK_HZ: f64 = 1.5e9;

/// Nominal last-level (L2) cache of the data-centre GPUs the backend targets (A100: 40 MB,
/// H100: 50 MB).
const NOMINAL_L2_BYTES: usize = 50 << 20;

/// The tuner's view of the GPU schedules of `kernel` on `shape` for `caps` (the space of
/// [`GpuSearch`]): legal points per [`crate::caps::is_legal`], the default schedule's point
/// measured first, no block-size term (thread blocks are not cache blocks), a nominal peak of
/// one fused multiply-add per lane per cycle (64 lanes per SM in f64, 128 in f32).
///
/// Trials through [`CudaBackend`] time whole calls, uploads and downloads included; those are
/// the same for every schedule, so they add noise but do not change the ranking.
pub fn tuning_space(kernel: &Kernel, shape: &[usize], caps: &DeviceCaps) -> TuningSpace {
    let search = GpuSearch::new(kernel, shape, caps);
    let default = default_schedule(kernel, shape);
    let space = search.space().clone();
    let default_point = (0..space.n_points())
        .map(|i| space.point_at(i))
        .find(|p| search.schedule(p) == default && search.is_legal(p));
    let lanes = if kernel.elem().size_bytes() == 8 {
        64
    } else {
        128
    };
    let mut tuning = TuningSpace::new(space, move |p| {
        search
            .is_legal(p)
            .then(|| Schedule::Gpu(search.schedule(p)))
    });
    tuning.default_point = default_point;
    tuning.peak_flops = f64::from(caps.sm_count * lanes * 2) * NOMINAL_CLOCK_HZ;
    tuning.largest_cache_bytes = NOMINAL_L2_BYTES;
    tuning
}

/// The tuner's view of a GPU time loop's schedules: [`tuning_space`]'s, plus a last dimension
/// `time_steps` (1, or 2 for fused pairs of steps: thread-per-point schedules without merging
/// only, whose grown tile fits the device's shared memory). The default point is the single
/// sweep's default, one step per launch.
pub fn steps_tuning_space(kernel: &Kernel, shape: &[usize], caps: &DeviceCaps) -> TuningSpace {
    let sweep = tuning_space(kernel, shape, caps);
    let space = sweep.space().clone().with_ints("time_steps", [1i64, 2]);
    let default_point = sweep.default_point.clone().map(|mut p| {
        p.push(0);
        p
    });
    let (peak, largest) = (sweep.peak_flops, sweep.largest_cache_bytes);
    let kernel = kernel.clone();
    let shared = caps.shared_memory_per_block;
    let mut tuning = TuningSpace::new(space, move |p| {
        let (last, sweep_point) = p.split_last()?;
        let Schedule::Gpu(mut s) = sweep.schedule(sweep_point)? else {
            return None;
        };
        s.time_steps = [1, 2][*last];
        let fusable = s.variant == stencil_core::schedule::GpuVariant::ThreadPerPoint
            && s.merge == 1
            && crate::codegen::fused_shared_bytes(&kernel, &s) <= shared;
        (s.time_steps == 1 || fusable).then_some(Schedule::Gpu(s))
    });
    tuning.default_point = default_point;
    tuning.peak_flops = peak;
    tuning.largest_cache_bytes = largest;
    tuning
}

#[cfg(test)]
mod tests {
    use super::*;
    use stencil_core::{ElemType, KernelBuilder};

    fn heat() -> Kernel {
        let mut b = KernelBuilder::new("heat", 3, ElemType::F64);
        let u = b.input("u");
        let out = b.output("out");
        let mut sum = b.read(u, &[0, 0, 0]);
        for d in 0..3 {
            for s in [-1, 1] {
                let mut offset = [0; 3];
                offset[d] = s;
                let r = b.read(u, &offset);
                sum = b.add(sum, r);
            }
        }
        b.store(out, sum);
        b.finish().expect("kernel")
    }

    #[test]
    fn the_tuners_view_holds_the_default_and_only_legal_schedules() {
        let kernel = heat();
        let shape = [256, 256, 256];
        let caps = DeviceCaps::sm_90();
        let tuning = tuning_space(&kernel, &shape, &caps);
        let point = tuning.default_point.clone().expect("default in the space");
        assert_eq!(
            tuning.schedule(&point),
            Some(Schedule::Gpu(default_schedule(&kernel, &shape)))
        );
        let mut legal = 0;
        for i in 0..tuning.space().n_points() {
            let p = tuning.space().point_at(i);
            if let Some(Schedule::Gpu(s)) = tuning.schedule(&p) {
                assert!(crate::caps::is_legal(&kernel, &shape, &caps, &s), "{s:?}");
                legal += 1;
            }
        }
        assert!(legal > 10, "{legal} legal schedules");
        assert!(tuning.peak_flops > 1e12 && tuning.peak_flops < 1e15);
    }
}
