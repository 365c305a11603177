//! [`EmulatedGpu`]: a [`Backend`] that generates the PTX of a job and runs it in the crate's
//! PTX [`emulator`](crate::emulator) on the host grids' bytes. It needs no GPU: `verify` uses
//! it to check every variant of the code generator against the reference interpreter, and
//! users can run (and debug) their GPU kernels with it on any machine. It is slow (an
//! interpreter of PTX): meant for small grids.
//!
//! Reductions run as on a device: the reduction variant stores one value per reduction block
//! into a partials buffer per reduction, which is downloaded and combined on the host with
//! [`stencil_core::reduce::tree`].
//!
//! Outputs are uploaded with their current values, so kernels that read an output in place
//! (`y = a * x + y`) run as on the CPU.

use stencil_core::ir::{Kernel, Role};
use stencil_core::schedule::Schedule;
use stencil_core::{Backend, Job};
use stencil_core::{ElemType, Element, Error, ErrorKind, Geometry, Result};

use crate::caps::{default_schedule, sample_schedules};
use crate::codegen::halo::{HaloPlan, gather_entry_name, generate_gather};
use crate::codegen::{CodegenOptions, GeneratedKernel, PlantedReductionBug, generate_planted};
use crate::emulator::{LaunchOptions, Memory, Module, Order, ParamValue, launch_with_options};
use crate::steps::{StepMemory, drive, not_gpu};

/// Runs generated PTX in the emulator, on the CPU.
#[derive(Clone, Copy, Debug, Default)]
pub struct EmulatedGpu {
    options: CodegenOptions,
    planted: PlantedReductionBug,
    arch: u32,
    launch: LaunchOptions,
}

impl EmulatedGpu {
    /// An emulated sm_80 device.
    pub fn new() -> Self {
        EmulatedGpu {
            options: CodegenOptions::default(),
            planted: PlantedReductionBug::None,
            arch: 80,
            launch: LaunchOptions::default(),
        }
    }

    /// The same backend generating code with `options` (tests plant bugs through this).
    #[doc(hidden)]
    pub fn with_options(options: CodegenOptions) -> Self {
        EmulatedGpu {
            options,
            ..EmulatedGpu::new()
        }
    }

    /// The same backend with a bug planted in the reduction variant (tests prove they catch
    /// it through this).
    #[doc(hidden)]
    pub fn with_planted_reduction_bug(self, bug: PlantedReductionBug) -> Self {
        EmulatedGpu {
            planted: bug,
            ..self
        }
    }

    /// This backend running the threads of each block and the blocks of each launch in the
    /// given orders (see [`Order`]): a kernel that computes the same in every order has no
    /// race the emulator can see; compare the results of several orders to find one.
    pub fn with_order(self, threads: Order, blocks: Order) -> Self {
        EmulatedGpu {
            launch: LaunchOptions {
                threads,
                blocks,
                ..self.launch
            },
            ..self
        }
    }
}

fn emulator_error(e: crate::emulator::EmulatorError) -> Error {
    Error::new(ErrorKind::Backend, format!("PTX emulator: {e}"))
}

/// The geometries of a job's grids in the kernel's field declaration order.
pub(crate) fn field_geometries<T: Element>(job: &Job<'_, T>) -> Vec<Geometry> {
    let kernel = job.kernel();
    let (mut i, mut o) = (0, 0);
    kernel
        .fields
        .iter()
        .map(|f| match f.role {
            Role::Input => {
                i += 1;
                job.inputs()[i - 1].geom
            }
            Role::Output => {
                o += 1;
                job.outputs()[o - 1].geom
            }
        })
        .collect()
}

fn upload<T: Element>(memory: &mut Memory, data: &[T]) -> u64 {
    match T::ELEM {
        ElemType::F64 => memory.alloc_f64s(&data.iter().map(|v| v.to_f64()).collect::<Vec<_>>()),
        ElemType::F32 => {
            memory.alloc_f32s(&data.iter().map(|v| v.to_f64() as f32).collect::<Vec<_>>())
        }
    }
}

fn download<T: Element>(memory: &Memory, address: u64, data: &mut [T]) -> Result<()> {
    match T::ELEM {
        ElemType::F64 => {
            let values = memory
                .read_f64s(address, data.len())
                .map_err(emulator_error)?;
            for (d, v) in data.iter_mut().zip(values) {
                *d = T::from_f64(v);
            }
        }
        ElemType::F32 => {
            let values = memory
                .read_f32s(address, data.len())
                .map_err(emulator_error)?;
            for (d, v) in data.iter_mut().zip(values) {
                *d = T::from_f64(f64::from(v));
            }
        }
    }
    Ok(())
}

fn param_value<T: Element>(v: T) -> ParamValue {
    match T::ELEM {
        ElemType::F64 => ParamValue::F64(v.to_f64()),
        ElemType::F32 => ParamValue::F32(v.to_f64() as f32),
    }
}

/// A time loop's buffers in the emulator's memory (see `crate::steps`).
struct EmulatorMemory {
    memory: Memory,
    arch: u32,
    launch: LaunchOptions,
    /// Address and element count of each buffer.
    buffers: Vec<(u64, usize)>,
    /// Parsed modules by PTX text.
    modules: std::collections::HashMap<String, Module>,
}

impl EmulatorMemory {
    fn module(&mut self, ptx: String) -> Result<&Module> {
        if !self.modules.contains_key(&ptx) {
            let module = Module::parse(&ptx).map_err(emulator_error)?;
            self.modules.insert(ptx.clone(), module);
        }
        Ok(&self.modules[&ptx])
    }
}

impl<T: Element> StepMemory<T> for EmulatorMemory {
    fn upload(&mut self, data: &[T]) -> Result<usize> {
        let address = upload(&mut self.memory, data);
        self.buffers.push((address, data.len()));
        Ok(self.buffers.len() - 1)
    }

    fn launch(
        &mut self,
        generated: &GeneratedKernel,
        buffers: &[usize],
        params: &[T],
    ) -> Result<()> {
        let mut values: Vec<ParamValue> = buffers
            .iter()
            .map(|&b| ParamValue::U64(self.buffers[b].0))
            .collect();
        values.extend(params.iter().map(|&p| param_value(p)));
        let module = self.module(generated.ptx())?.clone();
        launch_with_options(
            &module,
            &generated.entry,
            generated.launch.grid,
            generated.launch.block,
            &values,
            &mut self.memory,
            self.launch,
        )
        .map_err(emulator_error)?;
        Ok(())
    }

    fn fill_halo(&mut self, buffer: usize, plan: &HaloPlan<T>) -> Result<()> {
        // The device's gather kernel, run in the emulator on index arrays uploaded with it.
        let u32s = |memory: &mut Memory, values: &[u32]| {
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            let address = memory.alloc(bytes.len());
            memory.write(address, &bytes).map(|()| address)
        };
        let m = &mut self.memory;
        let copy_dst = u32s(m, &plan.copy_dst).map_err(emulator_error)?;
        let copy_src = u32s(m, &plan.copy_src).map_err(emulator_error)?;
        let const_dst = u32s(m, &plan.const_dst).map_err(emulator_error)?;
        let const_val = upload(m, &plan.const_val);
        let (n_copy, n_const) = (plan.copy_dst.len() as u32, plan.const_dst.len() as u32);
        let gather = generate_gather(T::ELEM, self.arch).to_string();
        let module = self.module(gather)?.clone();
        let total = n_copy + n_const;
        launch_with_options(
            &module,
            gather_entry_name(T::ELEM),
            [total.div_ceil(256).max(1), 1, 1],
            [256, 1, 1],
            &[
                ParamValue::U64(self.buffers[buffer].0),
                ParamValue::U64(copy_dst),
                ParamValue::U64(copy_src),
                ParamValue::U32(n_copy),
                ParamValue::U64(const_dst),
                ParamValue::U64(const_val),
                ParamValue::U32(n_const),
            ],
            &mut self.memory,
            self.launch,
        )
        .map_err(emulator_error)?;
        Ok(())
    }

    fn download(&mut self, buffer: usize, data: &mut [T]) -> Result<()> {
        download(&self.memory, self.buffers[buffer].0, data)
    }
}

impl<T: Element> Backend<T> for EmulatedGpu {
    fn name(&self) -> String {
        "ptx-emulator".into()
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

    /// Every step in the emulator's memory (grids uploaded once, downloaded once), pairs of
    /// steps fused into one launch when the schedule's `time_steps` is 2 and the rotation
    /// allows (see the crate's `steps` module); halos filled by the device's gather kernel,
    /// run in the emulator.
    fn run_steps(
        &self,
        job: &mut stencil_core::TimeLoop<'_, T>,
        schedule: &Schedule,
        steps: usize,
    ) -> Result<()> {
        let Schedule::Gpu(schedule) = schedule else {
            return Err(not_gpu(schedule));
        };
        let mut memory = EmulatorMemory {
            memory: Memory::new(),
            arch: self.arch,
            launch: self.launch,
            buffers: Vec::new(),
            modules: Default::default(),
        };
        drive(&mut memory, self.arch, job, schedule, steps)
    }

    /// One schedule per step per launch (thread-per-point, and streaming where the kernel
    /// has 2 dimensions or more) and fused pairs of steps.
    fn sample_steps_schedules(&self, kernel: &Kernel, _shape: &[usize]) -> Vec<Schedule> {
        let n = kernel.n_dims;
        let block = match n {
            1 => [32, 1, 1],
            2 => [32, 2, 1],
            _ => [32, 2, 2],
        };
        let plain = stencil_core::GpuSchedule {
            block,
            ..Default::default()
        };
        let mut out = vec![
            plain,
            stencil_core::GpuSchedule {
                time_steps: 2,
                ..plain
            },
        ];
        if n >= 2 {
            out.push(stencil_core::GpuSchedule {
                variant: stencil_core::schedule::GpuVariant::Streaming,
                block: [32, if n == 3 { 2 } else { 1 }, 1],
                ..Default::default()
            });
        }
        out.into_iter().map(Schedule::Gpu).collect()
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

    fn run(&self, job: &mut Job<'_, T>, schedule: &Schedule) -> Result<()> {
        let Schedule::Gpu(schedule) = schedule else {
            return Err(Error::new(
                ErrorKind::InvalidSchedule,
                format!("the PTX emulator backend runs GPU schedules, not {schedule:?}"),
            ));
        };
        let kernel = job.kernel();
        let step = job.step();
        let geoms = field_geometries(job);
        let generated = generate_planted(
            kernel,
            schedule,
            &geoms,
            self.arch,
            self.options,
            self.planted,
        )?;
        let ops: Vec<_> = kernel.reductions.iter().map(|r| r.op).collect();
        if job.shape().contains(&0) {
            // No point: nothing to store, every reduction combines nothing.
            for (r, &op) in ops.iter().enumerate() {
                job.set_reduction(r, stencil_core::reduce::identity(op));
            }
            return Ok(());
        }
        let module = Module::parse(&generated.ptx()).map_err(emulator_error)?;
        let mut memory = Memory::new();
        let (inputs, outputs, params) = job.parts_mut();
        let mut addresses = Vec::with_capacity(kernel.fields.len());
        let (mut i, mut o) = (0, 0);
        for f in &kernel.fields {
            let address = match f.role {
                Role::Input => {
                    i += 1;
                    upload(&mut memory, inputs[i - 1].data)
                }
                Role::Output => {
                    o += 1;
                    upload(&mut memory, outputs[o - 1].data)
                }
            };
            addresses.push(address);
        }
        let mut values: Vec<ParamValue> = addresses.iter().map(|&a| ParamValue::U64(a)).collect();
        values.extend(params.iter().map(|&p| param_value(p)));
        values.extend(crate::codegen::step_argument::<T>(kernel, step).map(param_value));
        let zeros = vec![T::from_f64(0.0); generated.partials];
        let partial_addresses: Vec<u64> = ops.iter().map(|_| upload(&mut memory, &zeros)).collect();
        values.extend(partial_addresses.iter().map(|&a| ParamValue::U64(a)));
        launch_with_options(
            &module,
            &generated.entry,
            generated.launch.grid,
            generated.launch.block,
            &values,
            &mut memory,
            self.launch,
        )
        .map_err(emulator_error)?;
        let mut o = 0;
        for (f, &address) in kernel.fields.iter().zip(&addresses) {
            if f.role == Role::Output {
                download(&memory, address, outputs[o].data)?;
                o += 1;
            }
        }
        let mut partials = Vec::with_capacity(ops.len());
        for &address in &partial_addresses {
            let mut values = zeros.clone();
            download(&memory, address, &mut values)?;
            partials.push(values);
        }
        for (r, value) in crate::codegen::reduce::finish(&ops, &partials)
            .into_iter()
            .enumerate()
        {
            job.set_reduction(r, value);
        }
        Ok(())
    }
}
