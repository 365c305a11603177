//! stencil-cuda: the GPU backend (not built yet; this crate holds its place in the workspace).
//!
//! Planned (DESIGN.md section 6): PTX generated directly from the core IR through a typed PTX
//! instruction AST and one printer; variants (thread-per-point, 2.5-D streaming with a register
//! queue, shared-memory tiles, block/cyclic merging, unrolled and concurrent streaming);
//! launch through cudarc with dynamic loading so the workspace builds without CUDA; device
//! grids; and a PTX emulator that runs the emitted PTX on the CPU for verification without a
//! GPU. It will implement `stencil_core::Backend` like the CPU backend, so `stencil::verify`
//! and the tuner pick it up without change.
//!
//! Today it exports nothing: no GPU path exists yet, and the facade runs every kernel on the
//! CPU backend.
