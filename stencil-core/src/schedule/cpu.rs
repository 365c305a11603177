//! The CPU backend's schedule: how the interior is cut into blocks and run on threads.
//!
//! Plain data: the tuner searches values of it, the CPU backend interprets it. The levels follow
//! Datta et al.'s decomposition (002_..., section 4, Table 2): the whole interior is the node
//! block; it is cut into core blocks of extents [`tile`](CpuSchedule::tile) (CX, CY, CZ);
//! consecutive core blocks form chunks of [`chunk`](CpuSchedule::chunk) blocks dealt
//! round-robin to the threads (a static partition: a point is always computed by the same
//! thread); a thread walks its core blocks row by row, handing the point loop runs of at most
//! [`row_block`](CpuSchedule::row_block) points (the register/unit-stride block). Output
//! stores are plain or non-temporal ([`stores`](CpuSchedule::stores)), and input rows may be
//! prefetched [`prefetch`](CpuSchedule::prefetch) rows ahead. Every value is legal: 0 means
//! "the backend's default" for every numeric field but `prefetch` (where 0 means none), so
//! `CpuSchedule::default()` (which prefetches [`DEFAULT_PREFETCH_ROWS`] rows ahead) is the
//! backend's default schedule.

use crate::ir::MAX_DIMS;

/// Rows ahead that [`CpuSchedule::default()`] prefetches. Measured on the development
/// machine (2 Zen 5 cores, 256^3, 2 threads, medians of 7): the 27-point stencil 15.7 ms
/// without, 11.9 ms with (8.6 ms with streaming stores as well); the 7-point 11.8 ms
/// streaming without, 9.2 ms with; 2 and 4 rows ahead within noise of each other.
pub const DEFAULT_PREFETCH_ROWS: usize = 2;

/// How a CPU schedule writes output points.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum CpuStores {
    /// The backend chooses (the CPU backend streams when a sweep's outputs are several times
    /// its last-level cache, and uses plain stores otherwise).
    #[default]
    Auto,
    /// Ordinary stores (the output's cache lines are read before they are written).
    Plain,
    /// Non-temporal (streaming) stores, which skip the read of the output's cache lines; a
    /// machine without them falls back to ordinary stores.
    Streaming,
}

/// A schedule of the CPU backend: how the interior is cut into blocks and run on threads.
///
/// Every schedule computes the same result; only speed differs.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct CpuSchedule {
    /// Core-block extents per dimension (clamped to the interior; 0 means "whole extent"). The
    /// last entry of the kernel's dimensions is the row-length limit.
    pub tile: [usize; MAX_DIMS],
    /// Threads to use; 0 means every thread of the backend's pool.
    pub threads: usize,
    /// Run the generic (IR-evaluating) path even when a generated point loop exists.
    pub force_generic: bool,
    /// Consecutive core blocks per chunk dealt round-robin to the threads; 0 means one
    /// contiguous chunk per thread (the first-touch partition).
    pub chunk: usize,
    /// Most points handed to the point loop at once (the unit-stride register/cache block);
    /// 0 means the backend's default.
    pub row_block: usize,
    /// Output stores: plain, streaming, or the backend's choice.
    pub stores: CpuStores,
    /// Software prefetch of the inputs' rows this many rows ahead; 0 means none. The
    /// generated point loop prefetches the input row a sweep meets first (largest offset
    /// along the outer dimensions), so memory streams while the core computes.
    pub prefetch: usize,
}

impl Default for CpuSchedule {
    fn default() -> Self {
        CpuSchedule {
            tile: [0; MAX_DIMS],
            threads: 0,
            force_generic: false,
            chunk: 0,
            row_block: 0,
            stores: CpuStores::Auto,
            prefetch: DEFAULT_PREFETCH_ROWS,
        }
    }
}
