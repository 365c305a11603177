//! The CPU backend's schedule: how the interior is cut into tiles and run on threads.
//!
//! Plain data: the tuner searches values of it, the CPU backend interprets it.

use crate::ir::MAX_DIMS;

/// A schedule of the CPU backend: how the interior is cut into tiles and run on threads.
///
/// Every schedule computes the same result; only speed differs.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct CpuSchedule {
    /// Tile extents per dimension (clamped to the interior; 0 means "whole extent"). The last
    /// entry of the kernel's dimensions is the row-length limit.
    pub tile: [usize; MAX_DIMS],
    /// Threads to use; 0 means every thread of the backend's pool.
    pub threads: usize,
    /// Run the generic (IR-evaluating) path even when a generated point loop exists.
    pub force_generic: bool,
}

impl Default for CpuSchedule {
    fn default() -> Self {
        CpuSchedule {
            tile: [0; MAX_DIMS],
            threads: 0,
            force_generic: false,
        }
    }
}
