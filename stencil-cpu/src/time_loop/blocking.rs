//! How a time loop is blocked: [`TimeBlocking`], the depth, slab and tile sizes that
//! `time_blocking` resolves from the schedule, the job and the machine, and that the wavefront
//! runs.

/// How a time loop is blocked, resolved against the job and the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimeBlocking {
    /// Steps per trip through memory (1: none).
    pub(crate) depth: usize,
    /// Planes of dimension 0 per slab.
    pub(crate) slab: usize,
    /// Planes each step of a block lags the one before (the kernel's reach along dimension 0).
    pub(crate) lag: usize,
    /// Rows of dimension 1 per block of a worker's share of a slab (3-D and more); with
    /// `tiles`, rows of dimension 1 per tile.
    pub(crate) block: usize,
    /// Whether the steps also skew along dimension 1 (tiles of `slab` planes by `block` rows
    /// carried through every step of a block while in the second-level cache, see
    /// `wavefront`), rather than each step passing over a whole slab.
    pub(crate) tiles: bool,
    /// Rows each step lags the one before along dimension 1 with `tiles` (the kernel's reach
    /// along dimension 1).
    pub(crate) lag_y: usize,
}
