//! The CUDA runtime: device selection, a module cache, device-resident grids, typed launches,
//! and [`CudaBackend`], all through cudarc with dynamic loading.
//!
//! Nothing here panics for want of CUDA: [`CudaDevice::new`] checks that the driver library
//! can be loaded *before* touching cudarc's context API (which panics without libcuda), and
//! every failure (no driver, no device, a module the driver rejects) is an [`Error`] of kind
//! [`ErrorKind::BackendUnavailable`] or [`ErrorKind::Backend`].
//!
//! Modules are cached per device, keyed by the kernel's structural hash, the architecture, the
//! schedule and the grids' geometries (geometry is baked into the generated code).
//!
//! Device grids are in `grid.rs`, the [`Backend`](stencil_core::Backend) implementation in `backend.rs`.
//!
//! Halos: [`DeviceGrid::update_halo`] fills a grid's halo on the device from its boundary
//! conditions with a generated gather kernel (see [`crate::codegen::halo`]); kernels write
//! interior points only, so halos of constant conditions persist across sweeps.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;
use stencil_core::hash::{KernelHash, structural_hash};
use stencil_core::ir::Kernel;
use stencil_core::schedule::GpuSchedule;
use stencil_core::{Element, Error, ErrorKind, Geometry, Result};

use crate::caps::DeviceCaps;
use crate::codegen::{self, CodegenOptions, LaunchDims};

mod backend;
mod grid;
mod launch;
mod steps;

pub use backend::{CudaBackend, steps_tuning_space, tuning_space};
pub use grid::DeviceGrid;
pub use steps::DeviceField;
pub(crate) use steps::DeviceMemory;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// An element type that lives in device memory: `f32` or `f64` (sealed).
pub trait GpuElement: Element + DeviceRepr + ValidAsZeroBits + sealed::Sealed {}
impl GpuElement for f32 {}
impl GpuElement for f64 {}

fn driver_error(what: &str) -> impl Fn(cudarc::driver::DriverError) -> Error + '_ {
    move |e| Error::new(ErrorKind::Backend, format!("CUDA driver: {what}: {e:?}"))
}

fn unavailable(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::BackendUnavailable, message)
}

/// Whether the NVIDIA driver library can be loaded on this machine (not whether a device
/// exists: [`CudaDevice::new`] answers that).
pub fn driver_present() -> bool {
    // SAFETY: `is_culib_present` only tries to open the driver library by its usual names
    // and closes it again; it touches no CUDA state.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct CacheKey {
    hash: KernelHash,
    schedule: GpuSchedule,
    geoms: Vec<Geometry>,
}

#[derive(Clone, Debug)]
struct Loaded {
    function: CudaFunction,
    launch: LaunchDims,
    /// Block values per reduction ([`codegen::GeneratedKernel::partials`]).
    partials: usize,
}

/// One CUDA device: its context and stream, capabilities, and module cache.
#[derive(Debug)]
pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    caps: DeviceCaps,
    ordinal: usize,
    cache: Mutex<HashMap<CacheKey, Loaded>>,
    halo_functions: Mutex<HashMap<stencil_core::ElemType, CudaFunction>>,
}

impl CudaDevice {
    /// Opens device `ordinal`.
    ///
    /// # Errors
    /// [`ErrorKind::BackendUnavailable`] when the driver library is missing, the driver fails
    /// to initialise, or there is no device `ordinal`.
    pub fn new(ordinal: usize) -> Result<Arc<CudaDevice>> {
        if !driver_present() {
            return Err(unavailable(
                "no NVIDIA driver: libcuda could not be loaded (the GPU backend needs the driver only, no toolkit)",
            ));
        }
        let count = CudaContext::device_count()
            .map_err(|e| unavailable(format!("the CUDA driver did not initialise: {e:?}")))?;
        if ordinal >= count.max(0) as usize {
            return Err(unavailable(format!(
                "no CUDA device {ordinal}: {count} device(s) present"
            )));
        }
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| unavailable(format!("cannot open CUDA device {ordinal}: {e:?}")))?;
        let stream = ctx.default_stream();
        let caps = read_caps(&ctx)?;
        Ok(Arc::new(CudaDevice {
            ctx,
            stream,
            caps,
            ordinal,
            cache: Mutex::new(HashMap::new()),
            halo_functions: Mutex::new(HashMap::new()),
        }))
    }

    /// Device 0, opened once per process.
    ///
    /// # Errors
    /// As [`CudaDevice::new`] (the same error on every call).
    pub fn global() -> Result<Arc<CudaDevice>> {
        static DEVICE: OnceLock<Result<Arc<CudaDevice>>> = OnceLock::new();
        DEVICE.get_or_init(|| CudaDevice::new(0)).clone()
    }

    /// The number of CUDA devices (0 without a driver).
    pub fn count() -> usize {
        if !driver_present() {
            return 0;
        }
        CudaContext::device_count().map_or(0, |n| n.max(0) as usize)
    }

    /// The device's ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The device's capabilities.
    pub fn caps(&self) -> &DeviceCaps {
        &self.caps
    }

    /// Waits for all work queued on the device.
    ///
    /// # Errors
    /// [`ErrorKind::Backend`] when an earlier launch failed.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(driver_error("synchronize"))
    }

    /// The compiled function for (kernel, schedule, geometries), from the cache or generated,
    /// JIT-compiled by the driver and cached.
    fn function(
        &self,
        kernel: &Kernel,
        schedule: &GpuSchedule,
        geoms: &[Geometry],
    ) -> Result<Loaded> {
        let key = CacheKey {
            hash: structural_hash(kernel),
            schedule: *schedule,
            geoms: geoms.to_vec(),
        };
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = cache.get(&key) {
            return Ok(l.clone());
        }
        let generated = codegen::generate(
            kernel,
            schedule,
            geoms,
            self.caps.arch(),
            CodegenOptions::default(),
        )?;
        if generated.shared_bytes > self.caps.shared_memory_per_block {
            return Err(Error::new(
                ErrorKind::InvalidSchedule,
                format!(
                    "schedule {schedule:?} needs {} bytes of shared memory; {} has {}",
                    generated.shared_bytes, self.caps.name, self.caps.shared_memory_per_block
                ),
            ));
        }
        let module = self
            .ctx
            .load_module(Ptx::from_src(generated.ptx()))
            .map_err(driver_error("loading generated PTX"))?;
        let function = module
            .load_function(&generated.entry)
            .map_err(driver_error("finding the generated entry"))?;
        let loaded = Loaded {
            function,
            launch: generated.launch,
            partials: generated.partials,
        };
        cache.insert(key, loaded.clone());
        Ok(loaded)
    }

    /// Zeroed buffers for the block values of `n` reductions of `len` values each.
    fn partial_buffers<T: GpuElement>(&self, n: usize, len: usize) -> Result<Vec<CudaSlice<T>>> {
        (0..n)
            .map(|_| self.stream.alloc_zeros::<T>(len.max(1)))
            .collect::<std::result::Result<_, _>>()
            .map_err(driver_error("allocating the reductions' partials"))
    }

    /// Downloads the block values of `kernel`'s reductions and combines them in the order of
    /// [`stencil_core::reduce`].
    fn finish_partials<T: GpuElement>(
        &self,
        kernel: &Kernel,
        buffers: &[CudaSlice<T>],
        len: usize,
    ) -> Result<Vec<T>> {
        let ops: Vec<_> = kernel.reductions.iter().map(|r| r.op).collect();
        let mut partials = Vec::with_capacity(buffers.len());
        for buf in buffers {
            let mut host = vec![T::from_f64(0.0); len.max(1)];
            self.stream
                .memcpy_dtoh(buf, &mut host)
                .map_err(driver_error("downloading the reductions' partials"))?;
            host.truncate(len);
            partials.push(host);
        }
        Ok(codegen::reduce::finish(&ops, &partials))
    }

    /// Measured device-to-device copy bandwidth in bytes per second (reads plus writes), the
    /// bound a memory-bound stencil is compared with: the best of `reps` copies of `bytes`.
    ///
    /// # Errors
    /// Driver errors.
    pub fn copy_bandwidth(&self, bytes: usize, reps: usize) -> Result<f64> {
        let n = bytes / 8;
        let src: CudaSlice<f64> = self.stream.alloc_zeros(n).map_err(driver_error("alloc"))?;
        let mut dst: CudaSlice<f64> = self.stream.alloc_zeros(n).map_err(driver_error("alloc"))?;
        let mut best = f64::INFINITY;
        for _ in 0..reps.max(2) {
            self.synchronize()?;
            let t = std::time::Instant::now();
            self.stream
                .memcpy_dtod(&src, &mut dst)
                .map_err(driver_error("copy"))?;
            self.synchronize()?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        Ok(2.0 * (n * 8) as f64 / best)
    }
}

fn read_caps(ctx: &Arc<CudaContext>) -> Result<DeviceCaps> {
    use cudarc::driver::sys::CUdevice_attribute as A;
    let attr = |a: A| -> Result<u32> {
        ctx.attribute(a)
            .map(|v| v.max(0) as u32)
            .map_err(driver_error("device attribute"))
    };
    let (major, minor) = ctx
        .compute_capability()
        .map_err(driver_error("compute capability"))?;
    Ok(DeviceCaps {
        name: ctx.name().map_err(driver_error("device name"))?,
        compute_capability: (major.max(0) as u32, minor.max(0) as u32),
        max_threads_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        shared_memory_per_block: u64::from(attr(
            A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
        )?),
        registers_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
        max_threads_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
        sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        warp_size: attr(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_driver_is_an_error_not_a_panic() {
        let backend = CudaBackend::new();
        match backend.device() {
            Ok(d) => println!("CUDA device present: {}", d.caps().name),
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::BackendUnavailable, "{e}");
                assert!(!e.message().is_empty());
            }
        }
    }
}
