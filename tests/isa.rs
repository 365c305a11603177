//! The suite's modules whose generated loops change with the instruction set: the CPU schedule
//! spaces and the seeds' kernels (the retimed loop's lane types differ per instruction set;
//! `stencil_cpu::lanes`). `.ci/run` builds this binary alone for other targets
//! (`RUSTFLAGS="-C target-cpu=x86-64" cargo test --release --test isa`), so those builds
//! compile two modules instead of the whole suite. A plain `cargo test` does not build it
//! (`test = false` in Cargo.toml): `suite` runs the same modules.

#[path = "suite/cpu_schedules.rs"]
mod cpu_schedules;
#[path = "suite/seeds.rs"]
mod seeds;
