//! [`CacheSizes`]: the capacities of a CPU's data caches as plain data, as the system reports
//! them or as a working-set sweep measured them (stencil-tune's probe). Backends size their
//! blocks, their temporal blocking and their streaming-store choice by these.

/// Capacities of a CPU's data caches, in bytes: the first- and second-level caches of one
/// core, and the last level as one process sees it (on a virtual machine, or with other
/// processes running, less than the chip has). A level of 0 is unknown.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CacheSizes {
    /// First-level data cache of one core.
    pub l1_bytes: usize,
    /// Second-level cache of one core.
    pub l2_bytes: usize,
    /// Last-level cache, as one process sees it.
    pub llc_bytes: usize,
}
