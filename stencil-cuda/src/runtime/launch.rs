//! Device-resident grids in use: uploading a host grid ([`CudaDevice::upload`]) and running
//! a stencil on [`DeviceGrid`]s ([`CudaDevice::run`], [`CudaDevice::run_reducing`]), after
//! the checks [`Job::new`](stencil_core::Job::new) makes of host grids.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use stencil_core::grid::Grid;
use stencil_core::ir::{Kernel, Role};
use stencil_core::schedule::GpuSchedule;
use stencil_core::{Error, ErrorKind, Geometry, Result, Stencil};

use super::grid::DeviceGrid;
use super::{CudaDevice, GpuElement, driver_error};
use crate::codegen;

impl CudaDevice {
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

    /// Runs `stencil` once on device grids: `inputs` and `outputs` in the kernel's declaration
    /// order of each kind, `params` likewise. An output the kernel reads in place
    /// (`y = a * x + y`) gives each point its value from before the call. Asynchronous: call
    /// [`synchronize`](Self::synchronize) or download to wait. A kernel that reads its step
    /// (`step()`) needs it given: [`run_at_step`](Self::run_at_step).
    ///
    /// # Errors
    /// [`ErrorKind::BadArgument`] / [`ErrorKind::ShapeMismatch`] /
    /// [`ErrorKind::HaloTooNarrow`] for calls that do not fit the kernel (the checks of
    /// [`Job::new`](stencil_core::Job::new); each input's halo against the reach of the
    /// kernel's reads of it); [`ErrorKind::BadArgument`] for a kernel that reads its step;
    /// a grid of another device; generator and driver errors;
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
        self.run_on_step(stencil, inputs, outputs, params, None, schedule)
    }

    /// [`run`](Self::run) as time step `step`: the value a kernel's `step()` reads, as
    /// `Launch::at_step` gives it on host grids, for device-resident time loops the caller
    /// drives. For a kernel that does not read its step, the same as `run`.
    ///
    /// # Errors
    /// As [`run`](Self::run), without the refusal of kernels that read their step.
    pub fn run_at_step<T: GpuElement, const D: usize>(
        &self,
        stencil: &Stencil<T>,
        inputs: &[&DeviceGrid<T, D>],
        outputs: &mut [&mut DeviceGrid<T, D>],
        params: &[T],
        step: u64,
        schedule: &GpuSchedule,
    ) -> Result<()> {
        self.run_on_step(stencil, inputs, outputs, params, Some(step), schedule)
    }

    /// [`run`](Self::run) and [`run_at_step`](Self::run_at_step).
    fn run_on_step<T: GpuElement, const D: usize>(
        &self,
        stencil: &Stencil<T>,
        inputs: &[&DeviceGrid<T, D>],
        outputs: &mut [&mut DeviceGrid<T, D>],
        params: &[T],
        step: Option<u64>,
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
        self.launch_on_grids(stencil, inputs, outputs, params, step, schedule)
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
        self.run_reducing_on_step(stencil, inputs, outputs, params, None, schedule)
    }

    /// [`run_reducing`](Self::run_reducing) as time step `step` (see
    /// [`run_at_step`](Self::run_at_step)).
    ///
    /// # Errors
    /// As [`run_reducing`](Self::run_reducing), without the refusal of kernels that read
    /// their step.
    pub fn run_reducing_at_step<T: GpuElement, const D: usize>(
        &self,
        stencil: &Stencil<T>,
        inputs: &[&DeviceGrid<T, D>],
        outputs: &mut [&mut DeviceGrid<T, D>],
        params: &[T],
        step: u64,
        schedule: &GpuSchedule,
    ) -> Result<Vec<T>> {
        self.run_reducing_on_step(stencil, inputs, outputs, params, Some(step), schedule)
    }

    /// [`run_reducing`](Self::run_reducing) and
    /// [`run_reducing_at_step`](Self::run_reducing_at_step).
    fn run_reducing_on_step<T: GpuElement, const D: usize>(
        &self,
        stencil: &Stencil<T>,
        inputs: &[&DeviceGrid<T, D>],
        outputs: &mut [&mut DeviceGrid<T, D>],
        params: &[T],
        step: Option<u64>,
        schedule: &GpuSchedule,
    ) -> Result<Vec<T>> {
        let kernel = stencil.kernel();
        let Some((buffers, len)) =
            self.launch_on_grids(stencil, inputs, outputs, params, step, schedule)?
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

    /// The launch of [`run`](Self::run) and [`run_reducing`](Self::run_reducing) at time step
    /// `step` (`None`: not given, refused for a kernel that reads it): returns the
    /// reductions' partials buffers and their length, `None` when the interior is empty (no
    /// launch).
    #[allow(clippy::type_complexity)]
    fn launch_on_grids<T: GpuElement, const D: usize>(
        &self,
        stencil: &Stencil<T>,
        inputs: &[&DeviceGrid<T, D>],
        outputs: &mut [&mut DeviceGrid<T, D>],
        params: &[T],
        step: Option<u64>,
        schedule: &GpuSchedule,
    ) -> Result<Option<(Vec<CudaSlice<T>>, usize)>> {
        let kernel = stencil.kernel();
        check_call(kernel, inputs, outputs, params.len())?;
        let step = step_given(kernel, step)?;
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
        let step = crate::codegen::step_argument::<T>(kernel, step);
        if let Some(step) = &step {
            builder.arg(step);
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
}

/// The step a device-grid launch passes: `step`, or 0 for a kernel that does not read it;
/// [`ErrorKind::BadArgument`] when the kernel reads it and none was given.
fn step_given(kernel: &Kernel, step: Option<u64>) -> Result<u64> {
    match step {
        Some(step) => Ok(step),
        None if kernel.reads_step() => Err(Error::new(
            ErrorKind::BadArgument,
            format!(
                "kernel `{}` reads its step: give it with `CudaDevice::run_at_step` \
                 (or `run_reducing_at_step`)",
                kernel.name
            ),
        )),
        None => Ok(0),
    }
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
    use stencil_core::{ElemType, KernelBuilder};

    /// `out = u + step()` (with `reads_step`) or `out = u`.
    fn kernel(reads_step: bool) -> Kernel {
        let mut b = KernelBuilder::new("k", 1, ElemType::F64);
        let u = b.input("u");
        let out = b.output("out");
        let mut value = b.read(u, &[0]);
        if reads_step {
            let step = b.step();
            value = b.add(value, step);
        }
        b.store(out, value);
        b.finish().expect("kernel")
    }

    #[test]
    fn a_kernel_that_reads_its_step_needs_it_given_on_device_grids() {
        let err = step_given(&kernel(true), None).expect_err("no step given");
        assert_eq!(err.kind(), ErrorKind::BadArgument);
        assert!(err.to_string().contains("run_at_step"), "{err}");
        assert_eq!(step_given(&kernel(true), Some(7)).expect("given"), 7);
        // A kernel that does not read it runs with or without one.
        assert_eq!(step_given(&kernel(false), None).expect("not read"), 0);
        assert_eq!(step_given(&kernel(false), Some(7)).expect("not read"), 7);
    }
}
