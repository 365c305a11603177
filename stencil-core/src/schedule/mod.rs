//! Schedules: how a kernel runs, kept apart from what it computes (Halide's algorithm /
//! schedule split). Passes and backends take `(&Kernel, &Schedule)`; the tuner only ever
//! changes the schedule. Each backend's schedule is plain data in its own module.

mod caches;
mod cpu;
mod gpu;
mod space;
mod tuning;
#[doc(hidden)]
pub mod wire;

pub use caches::CacheSizes;
pub use cpu::{CpuSchedule, CpuStores, DEFAULT_PREFETCH_ROWS, JAMMED_ROWS, PREFETCH_AUTO};
pub use gpu::{GpuSchedule, GpuVariant, MergeKind};
pub use space::{DimValue, Dimension, SearchSpace, Searchable};
pub use tuning::TuningSpace;

/// A schedule for some backend (the algorithm is the [`Kernel`](crate::Kernel); this is how it runs).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum Schedule {
    /// For the CPU backend.
    Cpu(CpuSchedule),
    /// For the GPU backend.
    Gpu(GpuSchedule),
}
