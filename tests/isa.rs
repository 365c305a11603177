//! The suite's modules whose generated loops change with the instruction set: the CPU schedule
//! spaces and the seeds' kernels (the retimed loop's lane types differ per instruction set;
//! `stencil_cpu::lanes`), and the kernels with fused multiply-add (`mul_add` is an FMA
//! instruction only with the `fma` target feature, a library call on baseline x86-64, with
//! the same bits). `.ci/run` builds this binary alone for other targets
//! (`RUSTFLAGS="-C target-cpu=x86-64" cargo test --release --test isa`), so those builds
//! compile three modules instead of the whole suite. A plain `cargo test` does not build it
//! (`test = false` in Cargo.toml): `suite` runs the same modules.

#[path = "suite/cpu_schedules.rs"]
mod cpu_schedules;
#[path = "suite/fma.rs"]
mod fma;
#[path = "suite/seeds.rs"]
mod seeds;
