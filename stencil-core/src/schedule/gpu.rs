//! The GPU backend's schedule: thread mapping and blocking of the generated PTX kernel.
//!
//! Plain data: the tuner searches values of it, the GPU backend (stencil-cuda) interprets it.
//! Coordinates: `x` is the unit-stride (last) dimension of the kernel; the streaming variants
//! walk the outermost dimension (dimension 0) in a loop, the thread-per-point variant maps
//! `x`, `y`, `z` to the last three dimensions.

/// How threads are mapped to points.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum GpuVariant {
    /// One thread per point (times the merge factor), a 3-D grid of blocks.
    #[default]
    ThreadPerPoint,
    /// 2.5-D blocking: 2-D thread blocks over the two inner dimensions; each thread walks the
    /// outermost dimension and keeps the input column values it reuses in a register queue.
    Streaming,
    /// As `Streaming`, but each input's planes are staged in a shared-memory ring of tiles
    /// (with halo), loaded cooperatively by the block between `bar.sync`s.
    SharedTile,
}

/// How the points of one thread are laid out along `x` when the merge factor exceeds 1.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum MergeKind {
    /// Consecutive points: thread `t` handles `t*m .. t*m+m` (shares reads between them).
    #[default]
    Block,
    /// Strided points: thread `t` handles `t, t+bx, ..` (keeps loads coalesced).
    Cyclic,
}

/// A schedule of the GPU backend.
///
/// Every legal schedule computes the same result; only speed differs. Legality (block x a
/// multiple of 32, at most 1024 threads, shared memory that fits) depends on the device and is
/// checked by the GPU backend.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct GpuSchedule {
    /// Thread mapping.
    pub variant: GpuVariant,
    /// Threads per block in x, y, z (z is 1 for the streaming variants).
    pub block: [u32; 3],
    /// Points per thread along x (1 = no merging).
    pub merge: u32,
    /// Layout of the merged points.
    pub merge_kind: MergeKind,
    /// Concurrent streaming: points of the outermost dimension per block along `blockIdx.z`
    /// (0 = the whole extent in one block column). Streaming variants only.
    pub stream_chunk: u32,
    /// Unroll factor of the streaming loop (1 = not unrolled). Streaming variants only.
    pub unroll: u32,
    /// Time loops only: steps per launch. 1 runs one launch per step; 2 runs pairs of steps
    /// of a ping-pong rotation (`out -> u`) in one launch of the fused-steps kernel (the
    /// middle step in shared memory; thread-per-point blocks of `block`, no merging) where the
    /// kernel and the grids allow it (one output; `out`'s faces all constant), the other
    /// steps one per launch. Single sweeps ignore it.
    pub time_steps: u32,
}

impl Default for GpuSchedule {
    fn default() -> Self {
        GpuSchedule {
            variant: GpuVariant::ThreadPerPoint,
            block: [32, 4, 1],
            merge: 1,
            merge_kind: MergeKind::Block,
            stream_chunk: 0,
            unroll: 1,
            time_steps: 1,
        }
    }
}
