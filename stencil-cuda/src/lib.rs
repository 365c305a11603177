//! stencil-cuda: the GPU backend. PTX is generated directly from the core IR (so users need
//! only the NVIDIA driver, no toolkit) and launched through cudarc with dynamic loading (so
//! the crate builds and its tests pass on a machine with no CUDA at all).
//!
//! - [`ptx`]: a typed PTX AST with one printer (the only place that spells PTX);
//! - [`codegen`]: the variants of [`GpuSchedule`](stencil_core::GpuSchedule) (thread per point,
//!   2.5-D streaming with a register queue, shared-memory tiles; block/cyclic merging,
//!   unrolled and concurrent streaming) generated from a `Kernel`, the reduction variant of
//!   kernels with reductions (one thread block per block of `stencil_core::reduce`, the
//!   blocks' values combined on the host), and the device halo gather;
//! - [`caps`]: device capabilities as plain data and the legal schedule space derived from
//!   them (also as the tuner's search space);
//! - [`runtime`]: device selection, module cache, device-resident grids, typed launches and
//!   [`CudaBackend`]; without a driver or GPU every call is an `Err`, never a panic;
//! - [`emulator`]: a PTX emulator that runs the generated kernels on the CPU;
//! - `steps`: time loops on the device (or in the emulator), pairs of steps fused into one
//!   launch where the rotation allows;
//! - [`emulated_gpu`]: [`EmulatedGpu`], a backend running generated PTX in the emulator, for
//!   verification and debugging on machines with no GPU.
//!
//! Verification without a GPU: `tests/suite/ptxas.rs` assembles every variant with NVIDIA's
//! ptxas (found through `STENCIL_PTXAS`, then `PATH`), `tests/suite/emulator_verify.rs` runs
//! every variant through `stencil::verify_with` on [`EmulatedGpu`], and `tests/suite/golden.rs`
//! keeps golden PTX (`STENCIL_BLESS=1 cargo test -p stencil-cuda --test suite -- golden::`
//! regenerates it).

pub mod caps;
pub mod codegen;
pub mod emulated_gpu;
pub mod emulator;
pub mod ptx;
pub mod runtime;
mod steps;

pub use caps::{DeviceCaps, GpuSearch, schedule_space};
pub use codegen::{
    CodegenOptions, FusedPair, GeneratedKernel, LaunchDims, generate, generate_fused,
    is_reduction_schedule,
};
pub use emulated_gpu::EmulatedGpu;
pub use runtime::{CudaBackend, CudaDevice, DeviceField, DeviceGrid, GpuElement};
