//! [`EmulatedGpu`]: a [`Backend`] that generates the PTX of a job and runs it in the crate's
//! PTX [`emulator`](crate::emulator) on the host grids' bytes. It needs no GPU: `verify` uses
//! it to check every variant of the code generator against the reference interpreter, and
//! users can run (and debug) their GPU kernels with it on any machine. It is slow (an
//! interpreter of PTX): meant for small grids.

use stencil_core::backend::{Backend, Job};
use stencil_core::ir::{Kernel, Role};
use stencil_core::schedule::Schedule;
use stencil_core::{ElemType, Element, Error, ErrorKind, Geometry, Result};

use crate::caps::{default_schedule, sample_schedules};
use crate::codegen::{CodegenOptions, generate};
use crate::emulator::{Memory, Module, ParamValue, launch};

/// Runs generated PTX in the emulator, on the CPU.
#[derive(Clone, Copy, Debug, Default)]
pub struct EmulatedGpu {
    options: CodegenOptions,
    arch: u32,
}

impl EmulatedGpu {
    /// An emulated sm_80 device.
    pub fn new() -> Self {
        EmulatedGpu {
            options: CodegenOptions::default(),
            arch: 80,
        }
    }

    /// The same backend generating code with `options` (tests plant bugs through this).
    #[doc(hidden)]
    pub fn with_options(options: CodegenOptions) -> Self {
        EmulatedGpu { options, arch: 80 }
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

    fn run(&self, job: &mut Job<'_, T>, schedule: &Schedule) -> Result<()> {
        let Schedule::Gpu(schedule) = schedule else {
            return Err(Error::new(
                ErrorKind::InvalidSchedule,
                format!("the PTX emulator backend runs GPU schedules, not {schedule:?}"),
            ));
        };
        let kernel = job.kernel();
        let geoms = field_geometries(job);
        let generated = generate(kernel, schedule, &geoms, self.arch, self.options)?;
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
        launch(
            &module,
            &generated.entry,
            generated.launch.grid,
            generated.launch.block,
            &values,
            &mut memory,
        )
        .map_err(emulator_error)?;
        let mut o = 0;
        for (f, &address) in kernel.fields.iter().zip(&addresses) {
            if f.role == Role::Output {
                download(&memory, address, outputs[o].data)?;
                o += 1;
            }
        }
        Ok(())
    }
}
