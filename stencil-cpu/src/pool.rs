//! [`CpuBackend`]: the CPU backend's own pinned rayon thread pool and its constructors.
//!
//! Each backend owns a rayon `ThreadPool` (never rayon's global pool, so a user's own rayon
//! work does not compete with it for the same workers). Worker `i` is pinned to the `i`-th core
//! the machine's NUMA topology places it on ([`Topology::placement`]: consecutive workers share
//! a node, so the static partition's contiguous ranges are node-local), or to the `i`-th core
//! the process may run on when that core is not available, when the pool has no more threads
//! than there are such cores; pinning is best effort (a failure leaves the thread unpinned).
//! All nodes' workers share one pool: jobs are statically partitioned by worker index
//! (`partition`), so a per-node pool would add nothing but a second level of dispatch.
//!
//! [`Topology::placement`]: crate::Topology::placement How a job is cut into tiles and spread
//! over the pool lives in `backend`.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::{ThreadPool, ThreadPoolBuilder};
use stencil_core::{Error, ErrorKind, Result};

/// Environment variable read by [`CpuBackend::global`]: a positive thread count.
pub const THREADS_ENV: &str = "STENCIL_THREADS";

/// The CPU backend: runs jobs tile by tile on its own pinned thread pool.
///
/// Construct one with [`CpuBackend::new`] or share the process-wide one from
/// [`CpuBackend::global`]. It implements [`stencil_core::Backend`] for `f32` and `f64`.
#[derive(Debug)]
pub struct CpuBackend {
    pool: ThreadPool,
    threads: usize,
    pinned: bool,
    fingerprint: String,
    /// Calls that ran work on several workers (see [`PoolActivity`]).
    parallel_runs: AtomicU64,
    /// Time loops run in skewed tiles on several workers (see [`PoolActivity`]).
    tiled_time_loops: AtomicU64,
}

/// What a [`CpuBackend`] has run on its pool since it was built ([`CpuBackend::activity`]):
/// for a test that must know its cases reached the pool, its partitions, tiles and barriers
/// (jobs under [`INLINE_POINTS`](crate::INLINE_POINTS) points run on the calling thread).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolActivity {
    /// Calls that ran work on more than one worker at once: sweeps, time loops, first
    /// touches and bandwidth copies.
    pub parallel_runs: u64,
    /// Time loops run in skewed tiles (3-D and more, faces that are values or user-managed)
    /// on more than one worker, each worker's share of dimension 1 wider than one tile.
    pub tiled_time_loops: u64,
}

impl CpuBackend {
    /// A backend with a pool of `threads` worker threads (0: one per core the process may use).
    ///
    /// Threads are pinned to distinct cores when `threads` does not exceed the number of cores;
    /// a failure to pin is not an error.
    ///
    /// # Errors
    /// [`ErrorKind::Backend`] if the operating system refuses to start the threads.
    pub fn new(threads: usize) -> Result<Self> {
        let threads = if threads == 0 { all_cores() } else { threads };
        let cores = core_affinity::get_core_ids().unwrap_or_default();
        let pinned = !cores.is_empty() && threads <= cores.len();
        let mut builder = ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("stencil-cpu-{i}"));
        if pinned {
            let topology = crate::machine::Machine::detect().topology.clone();
            builder = builder.start_handler(move |i| {
                let (_, cpu) = topology.placement(i, threads);
                let core = cores
                    .iter()
                    .find(|c| c.id == cpu)
                    .copied()
                    .unwrap_or(cores[i]);
                // Best effort: an unpinned worker is slower at worst, never wrong.
                let _ = core_affinity::set_for_current(core);
            });
        }
        let pool = builder.build().map_err(|e| {
            Error::new(
                ErrorKind::Backend,
                format!("cannot start a pool of {threads} CPU threads: {e}"),
            )
        })?;
        Ok(CpuBackend {
            pool,
            threads,
            pinned,
            fingerprint: crate::machine::cpu_fingerprint(),
            parallel_runs: AtomicU64::new(0),
            tiled_time_loops: AtomicU64::new(0),
        })
    }

    /// The process-wide backend, built on first use with one thread per core, or with
    /// `STENCIL_THREADS` threads when that environment variable holds a positive integer.
    ///
    /// # Panics
    /// If the operating system refuses to start the pool's threads on first use.
    pub fn global() -> &'static CpuBackend {
        static GLOBAL: OnceLock<CpuBackend> = OnceLock::new();
        GLOBAL.get_or_init(|| {
            let requested = threads_from_env(std::env::var(THREADS_ENV).ok().as_deref());
            CpuBackend::new(requested)
                .unwrap_or_else(|e| panic!("stencil-cpu: cannot build the global CPU backend: {e}"))
        })
    }

    /// Number of worker threads in the pool.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// What this backend has run on its pool so far (counts since it was built).
    pub fn activity(&self) -> PoolActivity {
        PoolActivity {
            parallel_runs: self.parallel_runs.load(Ordering::Relaxed),
            tiled_time_loops: self.tiled_time_loops.load(Ordering::Relaxed),
        }
    }

    /// Counts a call that runs work on several workers.
    pub(crate) fn count_parallel_run(&self) {
        self.parallel_runs.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a time loop run in skewed tiles on several workers, several tiles each.
    pub(crate) fn count_tiled_time_loop(&self) {
        self.tiled_time_loops.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether the workers were asked to pin themselves to cores (best effort: a worker that
    /// failed to pin runs unpinned).
    pub fn pinned(&self) -> bool {
        self.pinned
    }

    /// Copies `src` into `dst` (equal lengths) on every worker of the pool, each copying one
    /// contiguous share, with streaming stores if `streaming` (a STREAM-copy measurement of
    /// the machine's bandwidth; also a parallel first touch of `dst`).
    ///
    /// # Panics
    /// If the lengths differ.
    pub fn stream_copy<T: stencil_core::Element>(&self, dst: &mut [T], src: &[T], streaming: bool) {
        assert_eq!(dst.len(), src.len(), "stream_copy: unequal lengths");
        // Blocks of 4096 elements: plain copies of this size use ordinary stores (a libc
        // memcpy of a whole share could switch to streaming stores by itself).
        const BLOCK: usize = 4096;
        let n_blocks = dst.len().div_ceil(BLOCK);
        let partition = crate::Partition::new(n_blocks, self.threads, 0);
        let dst = crate::output_rows::SharedSlice::new(dst);
        self.execute(
            partition,
            usize::MAX,
            || (),
            |_, b| {
                let range = b * BLOCK..((b + 1) * BLOCK).min(src.len());
                // SAFETY: the blocks of a partition are disjoint ranges of `dst`, each
                // handed out once.
                let out = unsafe { dst.range(range.clone()) };
                crate::streaming::copy_to(out, &src[range], streaming);
                if streaming {
                    crate::streaming::fence();
                }
            },
        );
    }

    /// The device fingerprint tuned schedules are keyed by: the CPU's model name and core
    /// count (see [`cpu_fingerprint`](crate::cpu_fingerprint)).
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The pool the backend's work runs on.
    pub(crate) fn pool(&self) -> &ThreadPool {
        &self.pool
    }
}

/// Number of cores the process may run on (at least 1).
fn all_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The thread count an environment value asks for: a positive integer, else 0 ("all cores").
fn threads_from_env(value: Option<&str>) -> usize {
    value
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_thread_counts() {
        assert_eq!(threads_from_env(None), 0);
        assert_eq!(threads_from_env(Some("3")), 3);
        assert_eq!(threads_from_env(Some(" 12 ")), 12);
        assert_eq!(threads_from_env(Some("0")), 0);
        assert_eq!(threads_from_env(Some("-2")), 0);
        assert_eq!(threads_from_env(Some("many")), 0);
        assert_eq!(threads_from_env(Some("")), 0);
    }

    #[test]
    fn pools_have_the_requested_size() {
        let one = CpuBackend::new(1).unwrap();
        assert_eq!(one.threads(), 1);
        assert_eq!(one.pool().current_num_threads(), 1);
        let all = CpuBackend::new(0).unwrap();
        assert_eq!(all.threads(), all_cores());
        // More threads than cores: allowed, left unpinned.
        let many = CpuBackend::new(all_cores() + 3).unwrap();
        assert_eq!(many.pool().current_num_threads(), all_cores() + 3);
        assert!(!many.pinned());
    }

    #[test]
    fn the_global_backend_is_shared() {
        let a = CpuBackend::global();
        let b = CpuBackend::global();
        assert!(std::ptr::eq(a, b));
        assert!(a.threads() >= 1);
    }
}
