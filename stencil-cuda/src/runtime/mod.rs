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
    CudaContext, CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg,
    ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;
use stencil_core::grid::Grid;
use stencil_core::hash::{KernelHash, structural_hash};
use stencil_core::ir::{Kernel, Role};
use stencil_core::schedule::GpuSchedule;
use stencil_core::{Element, Error, ErrorKind, Geometry, Result, Stencil};

use crate::caps::DeviceCaps;
use crate::codegen::{self, CodegenOptions, LaunchDims};

mod backend;
mod grid;
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

    /// Copies `grid` (interior, halo and padding) to the device.
    ///
    /// # Errors
    /// [`ErrorKind::Backend`] when allocation or the copy fails.
    pub fn upload<T: GpuElement, const D: usize>(
        self: &Arc<Self>,
        grid: &Grid<T, D>,
    ) -> Result<DeviceGrid<T, D>> {
        let data = self
            .stream
            .clone_htod(grid.as_slice())
            .map_err(driver_error("upload"))?;
        Ok(DeviceGrid {
            device: Arc::clone(self),
            data,
            geom: *grid.geometry(),
            shape: grid.shape(),
            boundaries: *grid.boundaries(),
            halo: None,
        })
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

    /// Runs `stencil` once on device grids: `inputs` and `outputs` in the kernel's declaration
    /// order of each kind, `params` likewise. An output the kernel reads in place
    /// (`y = a * x + y`) gives each point its value from before the call. Asynchronous: call
    /// [`synchronize`](Self::synchronize) or download to wait.
    ///
    /// # Errors
    /// [`ErrorKind::BadArgument`] / [`ErrorKind::ShapeMismatch`] /
    /// [`ErrorKind::HaloTooNarrow`] for calls that do not fit the kernel (the checks of
    /// [`Job::new`](stencil_core::Job::new); each input's halo against the reach of the
    /// kernel's reads of it); a grid of another device; generator and driver errors;
    /// [`ErrorKind::BackendUnavailable`] for a kernel with reductions, whose results this
    /// call has nowhere to put: use [`run_reducing`](Self::run_reducing).
    pub fn run<T: GpuElement, const D: usize>(
        &self,
        stencil: &Stencil<T>,
        inputs: &[&DeviceGrid<T, D>],
        outputs: &mut [&mut DeviceGrid<T, D>],
        params: &[T],
        schedule: &GpuSchedule,
    ) -> Result<()> {
        let kernel = stencil.kernel();
        if kernel.has_reductions() {
            return Err(Error::new(
                ErrorKind::BackendUnavailable,
                format!(
                    "kernel `{}` has reductions: run it on device grids with \
                     `CudaDevice::run_reducing`, which returns their results",
                    kernel.name
                ),
            ));
        }
        self.launch_on_grids(stencil, inputs, outputs, params, schedule)
            .map(drop)
    }

    /// Runs `stencil` once on device grids, as [`run`](Self::run), and returns the results of
    /// its reductions in declaration order (empty for a kernel without reductions), combined
    /// in the order of [`stencil_core::reduce`]: each thread block's value computed on the
    /// device, the blocks' values combined on the host. Waits for the launch.
    ///
    /// # Errors
    /// As [`run`](Self::run), without the refusal of reductions.
    pub fn run_reducing<T: GpuElement, const D: usize>(
        &self,
        stencil: &Stencil<T>,
        inputs: &[&DeviceGrid<T, D>],
        outputs: &mut [&mut DeviceGrid<T, D>],
        params: &[T],
        schedule: &GpuSchedule,
    ) -> Result<Vec<T>> {
        let kernel = stencil.kernel();
        let Some((buffers, len)) =
            self.launch_on_grids(stencil, inputs, outputs, params, schedule)?
        else {
            // An empty interior: every reduction combines nothing.
            return Ok(kernel
                .reductions
                .iter()
                .map(|r| stencil_core::reduce::identity(r.op))
                .collect());
        };
        let values = self.finish_partials(kernel, &buffers, len)?;
        self.synchronize()?;
        Ok(values)
    }

    /// The launch of [`run`](Self::run) and [`run_reducing`](Self::run_reducing): returns the
    /// reductions' partials buffers and their length, `None` when the interior is empty (no
    /// launch).
    #[allow(clippy::type_complexity)]
    fn launch_on_grids<T: GpuElement, const D: usize>(
        &self,
        stencil: &Stencil<T>,
        inputs: &[&DeviceGrid<T, D>],
        outputs: &mut [&mut DeviceGrid<T, D>],
        params: &[T],
        schedule: &GpuSchedule,
    ) -> Result<Option<(Vec<CudaSlice<T>>, usize)>> {
        let kernel = stencil.kernel();
        check_call(kernel, inputs, outputs, params.len())?;
        for g in inputs
            .iter()
            .map(|g| &g.device)
            .chain(outputs.iter().map(|g| &g.device))
        {
            if !std::ptr::eq(Arc::as_ptr(g), self) {
                return Err(Error::new(
                    ErrorKind::BadArgument,
                    "a device grid belongs to another CUDA device",
                ));
            }
        }
        let geoms: Vec<Geometry> = {
            let (mut i, mut o) = (0, 0);
            kernel
                .fields
                .iter()
                .map(|f| match f.role {
                    Role::Input => {
                        i += 1;
                        inputs[i - 1].geom
                    }
                    Role::Output => {
                        o += 1;
                        outputs[o - 1].geom
                    }
                })
                .collect()
        };
        codegen::check_halos(kernel, &geoms)?;
        let loaded = self.function(kernel, schedule, &geoms)?;
        if geoms[0].interior().contains(&0) {
            return Ok(None);
        }
        let partials = self.partial_buffers::<T>(kernel.reductions.len(), loaded.partials)?;
        let config = LaunchConfig {
            grid_dim: loaded.launch.grid.into(),
            block_dim: loaded.launch.block.into(),
            shared_mem_bytes: 0,
        };
        let mut builder = self.stream.launch_builder(&loaded.function);
        let mut outs = outputs.iter_mut();
        let mut ins = inputs.iter();
        for f in &kernel.fields {
            match f.role {
                Role::Input => {
                    builder.arg(&ins.next().expect("checked input count").data);
                }
                Role::Output => {
                    builder.arg(&mut outs.next().expect("checked output count").data);
                }
            }
        }
        for p in params {
            builder.arg(p);
        }
        for buf in &partials {
            builder.arg(buf);
        }
        // SAFETY: the arguments match the entry's parameters exactly (one device pointer per
        // field in declaration order, then the scalars of the kernel's element type, then one
        // partials buffer per reduction of `loaded.partials` elements, as the generator
        // declared them), and the code was generated for these very geometries, whose storage
        // the buffers hold in full; every input's halo covers the reach of its reads
        // (`check_halos`), so every access stays inside interior plus halo; outputs (distinct
        // `&mut` buffers) are read in place and written at interior points only, partials at
        // indices below their length.
        unsafe { builder.launch(config) }.map_err(driver_error("kernel launch"))?;
        Ok(Some((partials, loaded.partials)))
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

/// The checks of [`Job::new`](stencil_core::Job::new) for device grids (Rust's borrows
/// already rule out aliasing).
fn check_call<T: GpuElement, const D: usize>(
    kernel: &Kernel,
    inputs: &[&DeviceGrid<T, D>],
    outputs: &[&mut DeviceGrid<T, D>],
    n_params: usize,
) -> Result<()> {
    let counts = [
        ("inputs", kernel.inputs().count(), inputs.len()),
        ("outputs", kernel.outputs().count(), outputs.len()),
        ("parameters", kernel.params.len(), n_params),
    ];
    for (what, want, got) in counts {
        if want != got {
            return Err(Error::new(
                ErrorKind::BadArgument,
                format!("kernel `{}` takes {want} {what}, {got} given", kernel.name),
            ));
        }
    }
    if kernel.n_dims != D {
        return Err(Error::new(
            ErrorKind::DimensionMismatch,
            format!(
                "kernel `{}` is {}-D, grids are {D}-D",
                kernel.name, kernel.n_dims
            ),
        ));
    }
    if kernel.elem() != T::ELEM {
        return Err(Error::new(
            ErrorKind::ElementTypeMismatch,
            format!("kernel `{}` computes in {}", kernel.name, kernel.elem()),
        ));
    }
    let Some(shape) = outputs
        .first()
        .map(|g| g.shape)
        .or_else(|| inputs.first().map(|g| g.shape))
    else {
        return Err(Error::new(
            ErrorKind::BadArgument,
            format!("kernel `{}` takes no grid", kernel.name),
        ));
    };
    for g in inputs.iter().copied().chain(outputs.iter().map(|g| &**g)) {
        if g.shape != shape {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                format!("device grids of shapes {:?} and {shape:?}", g.shape),
            ));
        }
    }
    // Halos: `codegen::check_halos` on the geometries, per input against its own reach.
    Ok(())
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
