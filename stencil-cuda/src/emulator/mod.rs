//! A PTX emulator: runs the kernels stencil-cuda generates on the CPU, so they can be tested and
//! debugged on a machine with no GPU.
//!
//! It executes exactly the PTX subset the code generator emits (the contract is
//! `notes/ptx_subset.md`): a module header, `.entry` kernels with `.u32 .s32 .u64 .f32 .f64`
//! parameters, `.reg` and static `.shared` declarations, integer and float arithmetic,
//! conversions, comparisons and predicates, global and shared loads and stores, `bar.sync 0`,
//! branches and loops. Anything else is rejected by [`Module::parse`] with an error naming the
//! line and the construct.
//!
//! # Use
//!
//! ```
//! use stencil_cuda::emulator::{launch, Memory, Module, ParamValue};
//!
//! let ptx = "
//! .version 8.0
//! .target sm_80
//! .address_size 64
//! .visible .entry scale(.param .u64 data, .param .f64 factor, .param .u32 n)
//! {
//!     .reg .pred %p<2>; .reg .b32 %r<5>; .reg .b64 %rd<4>; .reg .f64 %fd<3>;
//!     ld.param.u64 %rd1, [data];
//!     ld.param.f64 %fd1, [factor];
//!     ld.param.u32 %r1, [n];
//!     mov.u32 %r2, %ctaid.x;
//!     mov.u32 %r3, %ntid.x;
//!     mov.u32 %r4, %tid.x;
//!     mad.lo.s32 %r2, %r2, %r3, %r4;
//!     setp.ge.u32 %p1, %r2, %r1;
//!     @%p1 bra DONE;
//!     cvta.to.global.u64 %rd1, %rd1;
//!     mul.wide.u32 %rd2, %r2, 8;
//!     add.s64 %rd3, %rd1, %rd2;
//!     ld.global.f64 %fd2, [%rd3];
//!     mul.rn.f64 %fd2, %fd2, %fd1;
//!     st.global.f64 [%rd3], %fd2;
//! DONE:
//!     ret;
//! }";
//! let module = Module::parse(ptx)?;
//! let mut memory = Memory::new();
//! let data = memory.alloc_f64s(&[1.0, 2.0, 3.0]);
//! let params = [ParamValue::U64(data), ParamValue::F64(0.5), ParamValue::U32(3)];
//! let stats = launch(&module, "scale", [1, 1, 1], [32, 1, 1], &params, &mut memory)?;
//! assert_eq!(memory.read_f64s(data, 3)?, [0.5, 1.0, 1.5]);
//! assert_eq!(stats.global_stores, 3);
//! # Ok::<(), stencil_cuda::emulator::EmulatorError>(())
//! ```
//!
//! # Semantics
//!
//! - Blocks run one after another. Inside a block every thread has its own registers and program
//!   counter; each live thread runs until it reaches `bar.sync` or exits, then the waiting
//!   threads are released together. Exited threads do not count toward a barrier. Threads that
//!   wait at *different* `bar.sync` instructions (a barrier in divergent code) are reported as
//!   [`EmulatorErrorKind::BarrierDeadlock`]; a thread that runs more than
//!   [`LaunchOptions::max_instructions_per_thread`] instructions (a runaway loop, or one spinning
//!   while its block waits) is reported as [`EmulatorErrorKind::StepLimit`]. No launch hangs.
//! - Arithmetic is exact to the type: integers wrap, `mul.wide` keeps the full product, float
//!   operations round to nearest-even in their own type (`f32` in `f32`), `fma` is fused, float
//!   `min`/`max` ignore a NaN operand (IEEE minNum/maxNum), `setp` comparisons without the `u`
//!   suffix are false on NaN (`ne` too), the `u` forms are true on NaN.
//! - `ex2`, `lg2`, `sin` and `cos` (`.approx.f32`) use Rust's `f32` functions. On hardware these
//!   are approximations, so a GPU's results may differ from the emulator's in the last bits.
//! - Every global access must lie inside one [`Memory`] allocation and every shared access
//!   inside one `.shared` variable, naturally aligned; otherwise the launch fails naming the
//!   instruction, thread, block and address.
//! - Shared memory is filled with the byte `0xFF` at the start of every block (hardware leaves
//!   it undefined): a float read before any write is a NaN and shows up in results.
//! - Reading a register the thread never wrote is an error
//!   ([`EmulatorErrorKind::UnwrittenRegister`]); this catches generator bugs that hardware would
//!   turn into garbage.
//! - Global memory is not cached or reordered: a store is visible to every later load, of any
//!   thread or block. Races that hardware would expose are therefore not detected.

mod decode;
mod error;
mod eval;
mod executor;
mod lexer;
mod memory;
mod options;
mod parser;
mod program;
mod raw;
#[cfg(test)]
mod tests;

pub use error::{EmulatorError, EmulatorErrorKind};
pub use executor::LaunchStats;
pub use memory::Memory;
pub use options::{LaunchOptions, Order};
pub use program::{Param, ParamType};

use executor::LaunchPlan;
use program::Entry;

/// A parsed and decoded PTX module: one or more `.entry` kernels, ready to launch any number of
/// times.
#[derive(Clone, Debug)]
pub struct Module {
    entries: Vec<Entry>,
    source_lines: Vec<String>,
}

impl Module {
    /// Parses `text` (the PTX subset), resolves labels and register declarations, and checks each
    /// operand against its instruction's type. The error names the 1-based line and the construct.
    pub fn parse(text: &str) -> Result<Module, EmulatorError> {
        Ok(Module {
            entries: parser::parse_entries(text)?,
            source_lines: text.lines().map(str::to_string).collect(),
        })
    }

    /// The names of the module's entries, in source order.
    pub fn entry_names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    /// The declared parameters of entry `name`, or `None` if there is no such entry.
    pub fn params(&self, name: &str) -> Option<&[Param]> {
        self.entry(name).map(|e| e.params.as_slice())
    }

    /// The static shared memory of entry `name` in bytes, or `None` if there is no such entry.
    pub fn shared_bytes(&self, name: &str) -> Option<u64> {
        self.entry(name).map(|e| e.shared_bytes)
    }

    fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }
}

/// One launch argument; its variant must match the entry's `.param` type exactly.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum ParamValue {
    /// For `.param .u32`.
    U32(u32),
    /// For `.param .s32`.
    S32(i32),
    /// For `.param .u64`; pointers are addresses from [`Memory::alloc`].
    U64(u64),
    /// For `.param .f32`.
    F32(f32),
    /// For `.param .f64`.
    F64(f64),
}

impl ParamValue {
    fn ty(self) -> ParamType {
        match self {
            ParamValue::U32(_) => ParamType::U32,
            ParamValue::S32(_) => ParamType::S32,
            ParamValue::U64(_) => ParamType::U64,
            ParamValue::F32(_) => ParamType::F32,
            ParamValue::F64(_) => ParamType::F64,
        }
    }

    fn bits(self) -> u64 {
        match self {
            ParamValue::U32(value) => u64::from(value),
            ParamValue::S32(value) => u64::from(value as u32),
            ParamValue::U64(value) => value,
            ParamValue::F32(value) => u64::from(value.to_bits()),
            ParamValue::F64(value) => value.to_bits(),
        }
    }
}

/// Runs entry `entry` of `module` over a `grid` of blocks of `block` threads with `params`,
/// reading and writing `memory`, under the default [`LaunchOptions`].
pub fn launch(
    module: &Module,
    entry: &str,
    grid: [u32; 3],
    block: [u32; 3],
    params: &[ParamValue],
    memory: &mut Memory,
) -> Result<LaunchStats, EmulatorError> {
    launch_with_options(
        module,
        entry,
        grid,
        block,
        params,
        memory,
        LaunchOptions::default(),
    )
}

/// [`launch`] with explicit [`LaunchOptions`].
///
/// Checks the dimensions against CUDA's limits (block x and y at most 1024, z at most 64, at
/// most 1024 threads per block; grid y and z at most 65535; none zero) and `params` against the
/// entry's declaration, then executes.
pub fn launch_with_options(
    module: &Module,
    entry: &str,
    grid: [u32; 3],
    block: [u32; 3],
    params: &[ParamValue],
    memory: &mut Memory,
    options: LaunchOptions,
) -> Result<LaunchStats, EmulatorError> {
    let Some(found) = module.entry(entry) else {
        return Err(EmulatorError::new(
            EmulatorErrorKind::UnknownEntry,
            format!(
                "no entry `{entry}` in the module (entries: {})",
                module.entry_names().join(", ")
            ),
        ));
    };
    let threads = block.iter().map(|&n| u64::from(n)).product::<u64>();
    let block_ok = block[0] <= 1024 && block[1] <= 1024 && block[2] <= 64 && threads <= 1024;
    let grid_ok = grid[0] < 1 << 31 && grid[1] <= 65535 && grid[2] <= 65535;
    if grid.contains(&0) || block.contains(&0) || !block_ok || !grid_ok {
        return Err(EmulatorError::new(
            EmulatorErrorKind::InvalidLaunch,
            format!("invalid launch of `{entry}`: grid {grid:?}, block {block:?}"),
        ));
    }
    if params.len() != found.params.len() {
        return Err(EmulatorError::new(
            EmulatorErrorKind::ParamMismatch,
            format!(
                "`{entry}` takes {} parameters, {} given",
                found.params.len(),
                params.len()
            ),
        ));
    }
    for (index, (value, declared)) in params.iter().zip(&found.params).enumerate() {
        if value.ty() != declared.ty {
            return Err(EmulatorError::new(
                EmulatorErrorKind::ParamMismatch,
                format!(
                    "parameter {index} `{}` of `{entry}` is declared {:?}, given {value:?}",
                    declared.name, declared.ty
                ),
            ));
        }
    }
    let plan = LaunchPlan {
        entry: found,
        source_lines: &module.source_lines,
        grid,
        block,
        params: params.iter().map(|value| value.bits()).collect(),
        options,
    };
    executor::execute(&plan, memory)
}
