//! PTX code generation from the core IR: one entry per (kernel, schedule, grid geometry).
//!
//! Owns the mapping of kernel dimensions onto the canonical `(z, y, x)` axes of a launch, the
//! kernel arguments (one `u64` pointer per field, in declaration order, pointing at the grid's
//! storage base; then the scalar parameters as `f32`/`f64`), the evaluation of the kernel body
//! at one point into PTX instructions, and the launch configuration. Grid geometry (shape,
//! strides, origin, halo) is baked into the code as immediates, so a module is specific to
//! the geometry of its grids; the runtime's module cache keys on it.
//!
//! Variants live in `point.rs` (thread-per-point) and `stream.rs` (2.5-D streaming with a
//! register queue, and its shared-memory-tile form); kernels with reductions have their own
//! thread-per-point variant in `reduce.rs` (one thread block per reduction block of
//! [`stencil_core::reduce`]). Assumes a verified kernel and geometries that passed
//! [`Job::new`](stencil_core::Job::new) (same interior shape); every input's halo is checked
//! here against the reach of the kernel's reads of it ([`check_halos`]), so generated code never
//! reads outside a grid's storage.
//!
//! Outputs read in place (`y = a * x + y`: an output read at offset zero before its store, see
//! [`stencil_core::analysis::in_place_outputs`]) are read in every variant straight from the
//! output's own buffer and geometry at the point the thread is about to store, before the
//! store, never through a register queue or a shared tile: a point is read and written only by
//! the thread that computes it, so no thread or block order can let one read see a value of
//! this sweep, and the schedule space needs no restriction for such kernels. The fused-steps
//! kernel does not take them (time loops refuse them in core).
//!
//! Math: every function of the IR is supported. `neg abs sqrt floor ceil min max div`,
//! comparisons, logic and selects are native instructions; `exp ln sin cos tan tanh pow` have
//! no accurate PTX instruction and are emitted inline by `math/` (range reduction and
//! polynomials in f64, within 1-2 ulp of Rust's std; the accuracy table and the argument
//! range of `sin cos tan` are in that module's documentation).

mod context;
mod eval;
mod fused;
pub mod halo;
mod math;
mod point;
pub(crate) mod reduce;
mod stream;
mod stream_state;
#[cfg(test)]
mod tests;
mod tile;

use stencil_core::ir::{Expr, Kernel, Role};
use stencil_core::schedule::{GpuSchedule, GpuVariant};
use stencil_core::{Element, Error, ErrorKind, Geometry, Result};

pub use context::{CodegenOptions, LaunchDims, PlantedReductionBug};
pub use fused::FusedPair;

use context::{Ctx, axis_dims};

use crate::ptx::Module;

/// Largest static shared memory of one block (PTX's static limit on every target).
pub const STATIC_SHARED_LIMIT: u64 = 48 * 1024;

/// A generated kernel: its PTX module, entry name and launch configuration.
#[derive(Clone, PartialEq, Debug)]
pub struct GeneratedKernel {
    /// The module (one entry).
    pub module: Module,
    /// Name of the entry.
    pub entry: String,
    /// Grid and block dimensions to launch with.
    pub launch: LaunchDims,
    /// Static shared memory per block, in bytes.
    pub shared_bytes: u64,
    /// Block values per reduction (0 for a kernel without reductions): the entry takes, after
    /// the scalar parameters, one `u64` pointer per reduction (declaration order) to a buffer of
    /// this many elements, and stores there the value of every reduction block, rows in C
    /// order (see [`stencil_core::reduce`]); the host combines them with
    /// [`stencil_core::reduce::tree`].
    pub partials: usize,
}

impl GeneratedKernel {
    /// The module as PTX text.
    pub fn ptx(&self) -> String {
        self.module.to_string()
    }
}

/// Generates the PTX for `kernel` under `schedule`, for grids of the given geometries (one per
/// field, in the kernel's declaration order), targeting `sm_<arch>` (70, 80, 90, ...; targets
/// above 90 emit sm_90 PTX, which the driver compiles forward).
///
/// A kernel with reductions has one variant (see `reduce.rs`): thread per point with blocks
/// of `256 / merge` x 1 x 1 threads, each block covering one block of 256 points of a row
/// ([`is_reduction_schedule`]).
///
/// # Errors
/// - [`ErrorKind::BackendUnavailable`]: the kernel has more than 3 dimensions.
/// - [`ErrorKind::InvalidSchedule`]: the schedule is malformed (zero or too many threads, a
///   streaming variant with block z > 1, shared tiles over the 48 KiB static limit, a grid
///   over the launch limits), or the kernel has reductions and the schedule is not a
///   reduction schedule.
/// - [`ErrorKind::BadArgument`]: the geometries do not match the kernel's fields.
/// - [`ErrorKind::HaloTooNarrow`]: an input's halo is narrower than the kernel's reads of it
///   reach.
pub fn generate(
    kernel: &Kernel,
    schedule: &GpuSchedule,
    geoms: &[Geometry],
    arch: u32,
    options: CodegenOptions,
) -> Result<GeneratedKernel> {
    generate_entry(
        kernel,
        schedule,
        geoms,
        arch,
        options,
        None,
        PlantedReductionBug::None,
    )
}

/// [`generate`] with a bug planted in the reduction variant (test-only).
///
/// # Errors
/// As [`generate`].
#[doc(hidden)]
pub fn generate_planted(
    kernel: &Kernel,
    schedule: &GpuSchedule,
    geoms: &[Geometry],
    arch: u32,
    options: CodegenOptions,
    bug: PlantedReductionBug,
) -> Result<GeneratedKernel> {
    generate_entry(kernel, schedule, geoms, arch, options, None, bug)
}

/// Generates the fused-steps kernel: two steps of the time loop whose ping-pong pair is
/// `pair` in one launch (see the `fused` module), with thread-per-point blocks of
/// `schedule.block` (its other fields are ignored), for grids of the given geometries.
///
/// # Errors
/// As [`generate`]; [`ErrorKind::InvalidSchedule`] also when the kernel has an output besides
/// `pair.output`, the schedule merges points, the kernel has reductions, or it reads an output
/// in place (time loops refuse such kernels).
pub fn generate_fused(
    kernel: &Kernel,
    schedule: &GpuSchedule,
    geoms: &[Geometry],
    arch: u32,
    pair: FusedPair,
) -> Result<GeneratedKernel> {
    let point = GpuSchedule {
        variant: GpuVariant::ThreadPerPoint,
        stream_chunk: 0,
        unroll: 1,
        ..*schedule
    };
    generate_entry(
        kernel,
        &point,
        geoms,
        arch,
        CodegenOptions::default(),
        Some(pair),
        PlantedReductionBug::None,
    )
}

fn generate_entry(
    kernel: &Kernel,
    schedule: &GpuSchedule,
    geoms: &[Geometry],
    arch: u32,
    options: CodegenOptions,
    fused: Option<FusedPair>,
    planted: PlantedReductionBug,
) -> Result<GeneratedKernel> {
    check_kernel(kernel)?;
    check_schedule(schedule)?;
    if kernel.has_reductions() && (fused.is_some() || !is_reduction_schedule(schedule)) {
        return Err(Error::new(
            ErrorKind::InvalidSchedule,
            format!(
                "kernel `{}` has reductions: the GPU backend computes them with thread-per-point \
                 blocks of 256 / merge x 1 x 1 threads (merge 1, 2 or 4), one step per launch, \
                 not {schedule:?}",
                kernel.name
            ),
        ));
    }
    if fused.is_some()
        && let Some(&field) = stencil_core::analysis::in_place_outputs(kernel).first()
    {
        return Err(Error::new(
            ErrorKind::InvalidSchedule,
            format!(
                "kernel `{}` reads output `{}` in place: the fused-steps kernel does not take                  such kernels (time loops refuse them); run one step per launch",
                kernel.name,
                kernel.field(field).name
            ),
        ));
    }
    if geoms.len() != kernel.fields.len() || geoms.iter().any(|g| g.n_dims != kernel.n_dims) {
        return Err(Error::new(
            ErrorKind::BadArgument,
            format!(
                "kernel `{}` has {} fields of {} dimensions; {} geometries given",
                kernel.name,
                kernel.fields.len(),
                kernel.n_dims,
                geoms.len()
            ),
        ));
    }
    check_halos(kernel, geoms)?;
    let mut ctx = Ctx::new(kernel, schedule, geoms, options, fused.is_some())?;
    ctx.planted = planted;
    let mut partials = 0;
    let launch = match (fused, schedule.variant) {
        (Some(pair), _) => fused::emit(&mut ctx, pair)?,
        (None, _) if kernel.has_reductions() => {
            partials = reduce::partials(ctx.kernel.n_dims, ctx.shape);
            reduce::emit(&mut ctx)?
        }
        (None, GpuVariant::ThreadPerPoint) => point::emit(&mut ctx)?,
        (None, GpuVariant::Streaming | GpuVariant::SharedTile) => stream::emit(&mut ctx)?,
    };
    for (axis, &n) in launch.grid.iter().enumerate() {
        let limit = if axis == 0 { i32::MAX as u32 } else { 65535 };
        if n > limit {
            return Err(Error::new(
                ErrorKind::InvalidSchedule,
                format!(
                    "schedule {schedule:?} needs {n} blocks along axis {axis}, over the limit {limit}"
                ),
            ));
        }
    }
    let entry_name = ctx.entry_name.clone();
    let entry = ctx.b.finish();
    let shared_bytes = entry.shared_bytes();
    if shared_bytes > STATIC_SHARED_LIMIT {
        return Err(Error::new(
            ErrorKind::InvalidSchedule,
            format!(
                "schedule {schedule:?} needs {shared_bytes} bytes of shared memory, over {STATIC_SHARED_LIMIT}"
            ),
        ));
    }
    Ok(GeneratedKernel {
        module: Module {
            version: (8, 0),
            target: arch.clamp(70, 90),
            entries: vec![entry],
        },
        entry: entry_name,
        launch,
        shared_bytes,
        partials,
    })
}

/// Whether the generator can express `kernel` at all: it can, every function and reductions
/// included, when the kernel has 1 to 3 dimensions.
///
/// # Errors
/// [`ErrorKind::BackendUnavailable`] naming what is missing.
pub fn check_kernel(kernel: &Kernel) -> Result<()> {
    check_dimensions(kernel)
}

/// The value of an entry's step parameter for step number `step`, for a kernel that reads
/// the step (`None` for one that does not: its entry has no such parameter). The entry's
/// parameters are every field's address, every scalar parameter, then this, then any
/// reduction's partials.
pub fn step_argument<T: Element>(kernel: &Kernel, step: u64) -> Option<T> {
    kernel.reads_step().then(|| T::from_f64(step as f64))
}

fn check_dimensions(kernel: &Kernel) -> Result<()> {
    if kernel.n_dims == 0 || kernel.n_dims > 3 {
        return Err(Error::new(
            ErrorKind::BackendUnavailable,
            format!(
                "the GPU backend runs 1- to 3-D kernels; `{}` is {}-D",
                kernel.name, kernel.n_dims
            ),
        ));
    }
    Ok(())
}

/// Whether `s` is a schedule of the reduction variant: thread per point, one step, no
/// streaming options, blocks of `block x` x 1 x 1 threads with `block x * merge` = 256
/// ([`stencil_core::reduce::BLOCK`]), so one thread block covers one reduction block.
pub fn is_reduction_schedule(s: &GpuSchedule) -> bool {
    s.variant == GpuVariant::ThreadPerPoint
        && s.block[1] == 1
        && s.block[2] == 1
        && s.stream_chunk == 0
        && s.unroll == 1
        && s.time_steps <= 1
        && matches!(s.merge, 1 | 2 | 4)
        && u64::from(s.block[0]) * u64::from(s.merge) == stencil_core::reduce::BLOCK as u64
}

/// Per field (declaration order), per kernel dimension: how far the kernel's reads of it
/// reach from the point computed (0 for outputs and unread inputs). Every variant reads an
/// input only at these displacements of interior points (tiles load each input's own
/// displacement range), so a halo at least this wide keeps every access inside the grid.
pub fn field_reach(kernel: &Kernel) -> Vec<[u32; 3]> {
    let mut reach = vec![[0u32; 3]; kernel.fields.len()];
    for e in &kernel.exprs {
        if let Expr::Read { field, offset } = e {
            for (d, r) in reach[field.index()]
                .iter_mut()
                .enumerate()
                .take(kernel.n_dims)
            {
                *r = (*r).max(offset.get(d).unsigned_abs());
            }
        }
    }
    reach
}

/// Checks every input's halo (every field's, for a kernel that reads an output) against the
/// reach of the kernel's reads of it ([`field_reach`]): the GPU backends call it before every
/// launch, so a halo narrower than the code reads is an error, never an access outside a grid.
///
/// # Errors
/// [`ErrorKind::HaloTooNarrow`] naming the input, its halo and the reach; [`ErrorKind::BadArgument`]
/// when the geometries do not match the kernel's fields.
pub fn check_halos(kernel: &Kernel, geoms: &[Geometry]) -> Result<()> {
    if geoms.len() != kernel.fields.len() {
        return Err(Error::new(
            ErrorKind::BadArgument,
            format!(
                "kernel `{}` has {} fields; {} geometries given",
                kernel.name,
                kernel.fields.len(),
                geoms.len()
            ),
        ));
    }
    for ((field, reach), g) in kernel.fields.iter().zip(field_reach(kernel)).zip(geoms) {
        let need = reach.iter().copied().max().unwrap_or(0) as usize;
        if g.halo < need {
            return Err(Error::new(
                ErrorKind::HaloTooNarrow,
                format!(
                    "kernel `{}` reads `{}` up to {need} points away (per dimension: {:?}) \
                     but its grid has a halo of {}: the GPU code would read outside the grid; \
                     allocate it with a halo of at least {need}",
                    kernel.name,
                    field.name,
                    &reach[..kernel.n_dims],
                    g.halo
                ),
            ));
        }
    }
    Ok(())
}

/// Structural checks of a schedule that do not depend on the device.
///
/// # Errors
/// [`ErrorKind::InvalidSchedule`] naming the problem.
pub fn check_schedule(s: &GpuSchedule) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::new(
            ErrorKind::InvalidSchedule,
            format!("GPU schedule {s:?}: {why}"),
        ))
    };
    let threads: u64 = s.block.iter().map(|&v| u64::from(v)).product();
    if threads == 0 || threads > 1024 {
        return bad("a block has 1 to 1024 threads");
    }
    if s.block[2] > 64 {
        return bad("block z is at most 64");
    }
    if s.merge == 0 || s.merge > 16 {
        return bad("the merge factor is 1 to 16");
    }
    if s.unroll == 0 || s.unroll > 16 {
        return bad("the unroll factor is 1 to 16");
    }
    if s.variant != GpuVariant::ThreadPerPoint && s.block[2] != 1 {
        return bad("streaming variants use 2-D blocks (block z = 1)");
    }
    Ok(())
}

/// Static shared memory (bytes per block) that `schedule` needs for `kernel`: the rings of
/// the shared-tile variant (per input: planes x (block y + halo) x (block x * merge + halo)
/// elements; outputs read in place have no ring: they are read from global memory), 0 for
/// the other variants.
pub fn shared_bytes(kernel: &Kernel, schedule: &GpuSchedule) -> u64 {
    if schedule.variant != GpuVariant::SharedTile {
        return 0;
    }
    let axes = axis_dims(schedule.variant, kernel.n_dims);
    let mut ranges: std::collections::BTreeMap<usize, [(i64, i64); 3]> = Default::default();
    for e in &kernel.exprs {
        if let Expr::Read { field, offset } = e
            && kernel.field(*field).role == Role::Input
        {
            let r = ranges.entry(field.index()).or_insert([(0, 0); 3]);
            for (a, dim) in axes.iter().enumerate() {
                let d = dim.map_or(0, |d| i64::from(offset.get(d)));
                r[a].0 = r[a].0.min(d);
                r[a].1 = r[a].1.max(d);
            }
        }
    }
    let esz = kernel.elem().size_bytes() as i64;
    let w0 = i64::from(schedule.block[0]) * i64::from(schedule.merge);
    let h0 = i64::from(schedule.block[1]);
    ranges
        .values()
        .map(|r| {
            let planes = r[0].1 - r[0].0 + 1;
            let h = h0 + r[1].1 - r[1].0;
            let w = w0 + r[2].1 - r[2].0;
            (planes * h * w * esz) as u64
        })
        .sum()
}

/// Static shared memory (bytes per block) of the fused-steps kernel of `kernel` with the
/// blocks of `schedule`: the middle step over the block grown by the kernel's reach along
/// every axis (the reach over all inputs, an upper bound of the rotating input's).
pub fn fused_shared_bytes(kernel: &Kernel, schedule: &GpuSchedule) -> u64 {
    let axes = axis_dims(GpuVariant::ThreadPerPoint, kernel.n_dims);
    let r = stencil_core::analysis::radius(kernel);
    let block = [schedule.block[2], schedule.block[1], schedule.block[0]];
    let cells: u64 = (0..3)
        .map(|a| {
            let reach = axes[a].map_or(0, |d| u64::from(r.in_dim(d)));
            u64::from(block[a]) + 2 * reach
        })
        .product();
    cells * kernel.elem().size_bytes() as u64
}
