//! stencil-cpu: the CPU backend (see ARCHITECTURE.md, `stencil-cpu`).
//!
//! [`CpuBackend`] owns a pinned rayon thread pool and implements [`stencil_core::Backend`] for
//! `f32` and `f64`. A run cuts the interior into the tiles of a [`stencil_core::CpuSchedule`]
//! (module `tiling`), spreads them over the pool (`backend`), and walks each tile row by row:
//! a row is a run of points along the unit-stride dimension. Rows go either to the point loop
//! `stencil!` generated ([`stencil_core::row::RowFn`], module `specialised`; several adjacent
//! rows per call under a register block, which the generated loop jams) or, for kernels
//! built at run time and `force_generic` schedules, to a row-vectorised IR evaluator
//! (`generic`, one row at a time). Both write interior points only, and nothing else.
//!
//! The schedule space ([`ScheduleSpace`]) is derived from the machine's described
//! capabilities ([`Machine`]: cores, caches and NUMA nodes from sysfs, vector width by run-time
//! detection), its caches as measured where a working-set sweep measured them
//! ([`set_measured_caches`]). Core blocks are dealt to workers by a static [`Partition`] (no work stealing),
//! which [`CpuBackend::first_touch`] also uses to place grid pages; outputs may be written with
//! streaming stores (module `streaming`).
//!
//! Assumes what [`stencil_core::Job::new`] checks: all grids share the interior shape, input
//! halos cover the kernel's radius, and outputs share storage with nothing; checks itself that
//! every output's layout is one [`stencil_core::Geometry::padded`] produces. That is what makes
//! the one `unsafe` idea of the crate sound: outputs are written by many threads at once
//! through raw pointers (`output_rows`), each row slice handed out exactly once. Inputs are
//! read through bounds-checked slices of exactly the row segments read (`input_rows`), never
//! a slice over a whole grid: a time loop's skewed tiles read a grid while other workers write
//! other rows of it, and lend each tile only the rows it reads (the `time_loop` module's
//! "Unsafe").

mod backend;
mod first_touch;
mod generic;
mod input_rows;
pub mod lanes;
mod machine;
mod output_rows;
mod partition;
mod pool;
mod reduce;
mod schedules;
mod space;
mod specialised;
mod streaming;
mod tiling;
mod time_loop;

pub use machine::{Machine, Topology, cpu_fingerprint, set_cache_sharers, set_measured_caches};
pub use partition::Partition;
pub use pool::{
    CpuBackend, INLINE_POINTS, PoolActivity, THREADS_ENV, allowed_cpus, core_share, set_core_share,
};
pub use schedules::{
    AUTO_PREFETCH_CACHES, AUTO_STREAMING_CACHES, DEFAULT_STREAMING_ROW_BLOCK,
    LONG_ROW_REGISTER_ROWS, MIN_1D_CHUNK, MIN_SLAB_ROWS,
};
pub use space::ScheduleSpace;
pub use stencil_core::{CpuSchedule, CpuStores, DEFAULT_PREFETCH_ROWS, PREFETCH_AUTO};
pub use streaming::{LINE_BYTES, StreamWidth, stream_line};
pub use time_loop::{DEEP_TIME_DEPTH, DEFAULT_TILE, DEFAULT_TIME_DEPTH, TIME_DEPTHS};
