//! The GPU backend's schedule: thread mapping and blocking of the generated PTX kernel.
//!
//! Plain data: the tuner searches values of it, the GPU backend interprets it.

/// A schedule of the GPU backend (placeholder until the GPU backend defines its variants).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct GpuSchedule {
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
}
