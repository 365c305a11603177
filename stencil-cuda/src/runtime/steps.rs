//! Time loops on the CUDA device: the launches of `crate::steps` on device memory, for host
//! grids through [`CudaBackend`](super::CudaBackend) (uploaded once, downloaded once) and for
//! device-resident grids through [`CudaDevice::run_steps`] (no host copy at all).

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use stencil_core::grid::Boundary;
use stencil_core::ir::Role;
use stencil_core::schedule::GpuSchedule;
use stencil_core::time_loop::FieldSlot;
use stencil_core::{Error, ErrorKind, Result, Rotation, Stencil};

use super::grid::DeviceHaloPlan;
use super::{CudaDevice, DeviceGrid, GpuElement, driver_error};
use crate::codegen::halo::HaloPlan;
use crate::codegen::{FusedPair, GeneratedKernel};
use crate::steps::{Launches, StepMemory};

/// A buffer of a device time loop: owned (uploaded from a host grid) or a device grid's.
enum Buffer<'g, T: GpuElement> {
    Owned(CudaSlice<T>),
    Grid(&'g mut CudaSlice<T>),
    Shared(&'g CudaSlice<T>),
}

impl<T: GpuElement> Buffer<'_, T> {
    fn slice(&self) -> &CudaSlice<T> {
        match self {
            Buffer::Owned(s) => s,
            Buffer::Grid(s) => s,
            Buffer::Shared(s) => s,
        }
    }
}

/// A time loop's buffers in device memory.
pub(crate) struct DeviceMemory<'g, T: GpuElement> {
    device: Arc<CudaDevice>,
    buffers: Vec<Buffer<'g, T>>,
    /// Loaded entries by PTX text.
    functions: HashMap<String, CudaFunction>,
    /// Halo plans on the device, by buffer.
    halos: HashMap<usize, DeviceHaloPlan<T>>,
}

impl<'g, T: GpuElement> DeviceMemory<'g, T> {
    pub(crate) fn new(device: Arc<CudaDevice>) -> Self {
        DeviceMemory {
            device,
            buffers: Vec::new(),
            functions: HashMap::new(),
            halos: HashMap::new(),
        }
    }

    fn function(&mut self, generated: &GeneratedKernel) -> Result<CudaFunction> {
        let ptx = generated.ptx();
        if let Some(f) = self.functions.get(&ptx) {
            return Ok(f.clone());
        }
        if generated.shared_bytes > self.device.caps.shared_memory_per_block {
            return Err(Error::new(
                ErrorKind::InvalidSchedule,
                format!(
                    "a time-loop kernel needs {} bytes of shared memory; {} has {}",
                    generated.shared_bytes,
                    self.device.caps.name,
                    self.device.caps.shared_memory_per_block
                ),
            ));
        }
        let module = self
            .device
            .ctx
            .load_module(Ptx::from_src(ptx.clone()))
            .map_err(driver_error("loading generated PTX"))?;
        let function = module
            .load_function(&generated.entry)
            .map_err(driver_error("finding the generated entry"))?;
        self.functions.insert(ptx, function.clone());
        Ok(function)
    }
}

impl<T: GpuElement> StepMemory<T> for DeviceMemory<'_, T> {
    fn upload(&mut self, data: &[T]) -> Result<usize> {
        let slice = self
            .device
            .stream
            .clone_htod(data)
            .map_err(driver_error("upload"))?;
        self.buffers.push(Buffer::Owned(slice));
        Ok(self.buffers.len() - 1)
    }

    fn launch(
        &mut self,
        generated: &GeneratedKernel,
        buffers: &[usize],
        params: &[T],
    ) -> Result<()> {
        let function = self.function(generated)?;
        let config = LaunchConfig {
            grid_dim: generated.launch.grid.into(),
            block_dim: generated.launch.block.into(),
            shared_mem_bytes: 0,
        };
        let stream = Arc::clone(&self.device.stream);
        let mut builder = stream.launch_builder(&function);
        for &b in buffers {
            builder.arg(self.buffers[b].slice());
        }
        for p in params {
            builder.arg(p);
        }
        // SAFETY: as in `CudaDevice::run`: one device pointer per field in declaration order
        // (each a whole grid of the geometry the code was generated for), then the scalars;
        // the generated code writes the output buffers at interior points only, and the time
        // loop binds every output to a buffer no input of the launch uses.
        unsafe { builder.launch(config) }.map_err(driver_error("kernel launch"))?;
        Ok(())
    }

    fn fill_halo(&mut self, buffer: usize, plan: &HaloPlan<T>) -> Result<()> {
        // A buffer's plan is the same on every call: its arrays go to the device once.
        if !self.halos.contains_key(&buffer) {
            let uploaded = DeviceHaloPlan::upload(&self.device, plan.clone())?;
            self.halos.insert(buffer, uploaded);
        }
        let data = match &mut self.buffers[buffer] {
            Buffer::Owned(s) => s,
            Buffer::Grid(s) => &mut **s,
            Buffer::Shared(_) => unreachable!("stencil-cuda: a read-only buffer is never written"),
        };
        self.halos[&buffer].apply(&self.device, data)
    }

    fn download(&mut self, buffer: usize, data: &mut [T]) -> Result<()> {
        self.device
            .stream
            .memcpy_dtoh(self.buffers[buffer].slice(), data)
            .map_err(driver_error("download"))?;
        self.device.synchronize()
    }
}

/// A grid of a device time loop, in the kernel's field order: read only (a coefficient), or
/// read and written (rotating, or an output).
pub enum DeviceField<'g, T: GpuElement, const D: usize> {
    /// A read-only input.
    Read(&'g DeviceGrid<T, D>),
    /// A grid the loop rotates or writes.
    Write(&'g mut DeviceGrid<T, D>),
}

impl CudaDevice {
    /// Runs `steps` steps of `stencil` on device-resident grids, their rotation given by
    /// `rotation` (see `stencil_core::time_loop`): `fields` holds one grid per kernel field in
    /// declaration order. No data crosses to the host. Each step's written grids get their
    /// halos filled on the device from their boundary conditions; when `schedule.time_steps`
    /// is 2 and the rotation allows (a ping-pong pair with the same constant faces, one
    /// output), pairs of steps run as one fused launch. Afterwards the grids are rotated as
    /// the host time loop rotates host grids: each name holds what `steps` rounds of a launch
    /// then a rotation of the `DeviceGrid` values leave. Asynchronous: call
    /// [`synchronize`](Self::synchronize) or download to wait.
    ///
    /// The halos of the grids must be current (as after upload from host grids with current
    /// halos, or [`DeviceGrid::update_halo`]): the fused launch reads the target grid's
    /// constant halo.
    ///
    /// # Errors
    /// [`ErrorKind::BadArgument`] for a rotation or fields that do not fit the kernel, a kernel
    /// with reductions or one that reads an output in place (as host time loops refuse them),
    /// or a grid of another device; [`ErrorKind::ShapeMismatch`] / [`ErrorKind::HaloTooNarrow`] as
    /// for [`run`](Self::run); generator and driver errors.
    pub fn run_steps<T: GpuElement, const D: usize>(
        self: &Arc<Self>,
        stencil: &Stencil<T>,
        rotation: &Rotation,
        fields: &mut [DeviceField<'_, T, D>],
        params: &[T],
        schedule: &GpuSchedule,
        steps: usize,
    ) -> Result<()> {
        let kernel = stencil.kernel();
        let bad = |what: String| Error::new(ErrorKind::BadArgument, what);
        if fields.len() != kernel.fields.len() || params.len() != kernel.params.len() {
            return Err(bad(format!(
                "kernel `{}` takes {} grids and {} parameters; {} and {} given",
                kernel.name,
                kernel.fields.len(),
                kernel.params.len(),
                fields.len(),
                params.len()
            )));
        }
        if kernel.has_reductions() {
            return Err(bad(format!(
                "kernel `{}` has reductions, which a time loop cannot return: call it once per \
                 step with `CudaDevice::run_reducing`",
                kernel.name
            )));
        }
        if let Some(&field) = stencil_core::analysis::in_place_outputs(kernel).first() {
            return Err(bad(format!(
                "kernel `{}` reads output `{}` in place, which time loops do not support: call \
                 it once per step with `CudaDevice::run`",
                kernel.name,
                kernel.field(field).name
            )));
        }
        let radius = stencil_core::analysis::radius(kernel).max() as usize;
        let first = match &fields[0] {
            DeviceField::Read(g) => g.shape,
            DeviceField::Write(g) => g.shape,
        };
        let mut slots = Vec::with_capacity(fields.len());
        let (mut n_coefficients, mut n_lone) = (0, 0);
        for (i, (field, grid)) in kernel.fields.iter().zip(fields.iter()).enumerate() {
            let (g, written) = match grid {
                DeviceField::Read(g) => (&**g, false),
                DeviceField::Write(g) => (&**g, true),
            };
            if !Arc::ptr_eq(&g.device, self) {
                return Err(bad("a device grid belongs to another CUDA device".into()));
            }
            if g.shape != first {
                return Err(Error::new(
                    ErrorKind::ShapeMismatch,
                    format!(
                        "grid `{}` has shape {:?}, not {first:?}",
                        field.name, g.shape
                    ),
                ));
            }
            let position = rotation.position(stencil_core::FieldId::new(i));
            if (position.is_some() || field.role == Role::Output) && !written {
                return Err(bad(format!(
                    "grid `{}` is written by the time loop; pass it as DeviceField::Write",
                    field.name
                )));
            }
            let read = position.is_some() || field.role == Role::Input;
            if read && g.geom.halo < radius {
                return Err(Error::new(
                    ErrorKind::HaloTooNarrow,
                    format!(
                        "kernel `{}` reads up to {radius} points away but grid `{}` has a halo \
                         of {}",
                        kernel.name, field.name, g.geom.halo
                    ),
                ));
            }
            slots.push(match position {
                Some((chain, position)) => FieldSlot::Chain { chain, position },
                None if field.role == Role::Input => {
                    n_coefficients += 1;
                    FieldSlot::Coefficient(n_coefficients - 1)
                }
                None => {
                    n_lone += 1;
                    FieldSlot::Lone(n_lone - 1)
                }
            });
        }
        // The pair that may fuse: one chain of two grids with the same constant faces.
        let chains = rotation.chains();
        let faces_of = |i: usize| match &fields[i] {
            DeviceField::Read(g) => g.boundaries,
            DeviceField::Write(g) => g.boundaries,
        };
        let fused = (schedule.time_steps == 2
            && schedule.merge == 1
            && chains.len() == 1
            && chains[0].len() == 2
            && kernel.outputs().count() == 1
            && !kernel.reads_step()
            && !kernel.reads_indices())
        .then(|| (chains[0][0].index(), chains[0][1].index()))
        .filter(|&(o, u)| {
            let constant =
                |f: [[Boundary<T>; 2]; D]| f.iter().flatten().all(|b| !b.depends_on_interior());
            faces_of(o) == faces_of(u) && constant(faces_of(o))
        })
        .map(|(output, input)| FusedPair { output, input });
        let mut launches = Launches {
            slots,
            rings: chains
                .iter()
                .map(|c| c.iter().map(|f| f.index()).collect())
                .collect(),
            lone: Vec::new(),
            coefficients: Vec::new(),
            geoms: Vec::new(),
            faces: Vec::new(),
            params: params.to_vec(),
            fused,
            first_step: 0,
        };
        // Buffer `i` is field `i`'s grid.
        let mut memory = DeviceMemory::new(Arc::clone(self));
        for (i, field) in fields.iter_mut().enumerate() {
            match launches.slots[i] {
                FieldSlot::Lone(_) => launches.lone.push(i),
                FieldSlot::Coefficient(_) => launches.coefficients.push(i),
                FieldSlot::Chain { .. } => {}
            }
            let (geom, faces, buffer) = match field {
                DeviceField::Read(g) => (g.geom, g.boundaries.to_vec(), Buffer::Shared(&g.data)),
                DeviceField::Write(g) => (g.geom, g.boundaries.to_vec(), Buffer::Grid(&mut g.data)),
            };
            launches.geoms.push(geom);
            launches.faces.push(faces);
            memory.buffers.push(buffer);
        }
        launches.run(&mut memory, (kernel, self.caps.arch()), schedule, steps)?;
        drop(memory);
        // Rotate the grids: the grid at chain position p is the one whose buffer the ring
        // holds there.
        for (chain, ring) in chains.iter().zip(&launches.rings) {
            let mut at: Vec<usize> = chain.iter().map(|f| f.index()).collect();
            for (p, &buffer) in ring.iter().enumerate() {
                let target = chain[p].index();
                let from = at
                    .iter()
                    .position(|&b| b == buffer)
                    .unwrap_or_else(|| unreachable!("stencil-cuda: a ring holds its buffers"));
                let source = chain[from].index();
                if source != target {
                    swap_fields(fields, target, source);
                    at.swap(p, from);
                }
            }
        }
        Ok(())
    }
}

/// Swaps the grids of fields `a` and `b` (both written by the loop).
fn swap_fields<T: GpuElement, const D: usize>(
    fields: &mut [DeviceField<'_, T, D>],
    a: usize,
    b: usize,
) {
    let (low, high) = fields.split_at_mut(a.max(b));
    let (x, y) = (&mut low[a.min(b)], &mut high[0]);
    if let (DeviceField::Write(x), DeviceField::Write(y)) = (x, y) {
        std::mem::swap(&mut **x, &mut **y);
    }
}
