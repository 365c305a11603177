//! [`CpuBackend`]: the CPU backend's own pinned rayon thread pool, its constructors, and the
//! two ways work reaches it: core blocks on their owning workers (`execute`, or the calling
//! thread under [`INLINE_POINTS`] points and for a pool of one thread) and one task per worker (`on_workers`), which the
//! sweeps (`backend`) and the time loop's executors (`time_loop`) both call.
//!
//! Each backend owns a rayon `ThreadPool` (never rayon's global pool, so a user's own rayon
//! work does not compete with it for the same workers). Worker `i` is pinned to the `i`-th core
//! the machine's NUMA topology places it on ([`Topology::placement`]: consecutive workers share
//! a node, so the static partition's contiguous ranges are node-local), among the cores the
//! process may run on, when the pool has no more threads than there are such cores; pinning
//! is best effort (a failure leaves the thread unpinned). All nodes' workers share one pool:
//! jobs are statically partitioned by worker index (`partition`), so a per-node pool would
//! add nothing but a second level of dispatch.
//!
//! Processes that run on the same cores at once (MPI ranks on one machine that the launcher
//! did not bind apart) declare it with [`set_core_share`]: pools built afterwards take this
//! process's share of the cores ([`Topology::share`]), so the ranks' workers never stack on
//! one core, and by default as many threads as the share holds.
//!
//! [`Topology::placement`]: crate::Topology::placement
//! [`Topology::share`]: crate::Topology::share
//!
//! How a job is cut into tiles lives in `backend`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use rayon::{ThreadPool, ThreadPoolBuilder};
use stencil_core::{Error, ErrorKind, Result};

use crate::partition::Partition;

/// Environment variable read by [`CpuBackend::global`]: a positive thread count.
pub const THREADS_ENV: &str = "STENCIL_THREADS";

/// Jobs of fewer points (interior points times outputs) run on the calling thread: handing a
/// job to the pool (waking a worker and waiting for it) costs about 10 us, more than
/// computing 2^15 points does (the 7-point stencil on an 8^3 grid took 13 us per call through
/// the pool and 3 us on the caller).
pub const INLINE_POINTS: usize = 1 << 15;

/// This process's share of the cores it may run on: `(index, count)` ([`set_core_share`]).
static CORE_SHARE: Mutex<(usize, usize)> = Mutex::new((0, 1));

/// The process-wide backend ([`CpuBackend::global`]).
static GLOBAL: OnceLock<CpuBackend> = OnceLock::new();

/// Declares that this process is the `index`-th of `count` processes on this machine that
/// may run on the same cores and run stencils at the same time (MPI ranks that the launcher
/// did not bind to distinct cores): every pool built afterwards ([`CpuBackend::new`], and
/// [`CpuBackend::global`] on its first use) takes this process's share of those cores
/// ([`Topology::share`](crate::Topology::share): disjoint from the other processes' shares
/// while there are at least as many cores as processes). Its workers are pinned within the
/// share when they fit in it (left unpinned when more threads are asked for), and a thread
/// count of 0, the default, means the share's size: the cores over `count`, at least 1
/// (`STENCIL_THREADS` and an explicit count still win). A `count` of 0 counts as 1 (the
/// whole machine, the default). `stencil::mpi::Domain::build` calls it.
///
/// Returns `false` when the global backend had already started, which this cannot change:
/// it keeps the threads it started with and the cores they were pinned to (declare the
/// share, or build the domain, before anything runs on the global backend).
pub fn set_core_share(index: usize, count: usize) -> bool {
    let count = count.max(1);
    *CORE_SHARE.lock().unwrap_or_else(|e| e.into_inner()) = (index % count, count);
    GLOBAL.get().is_none()
}

/// This process's share of the cores, as [`set_core_share`] last set it: `(index, count)`.
pub fn core_share() -> (usize, usize) {
    *CORE_SHARE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The CPUs this process may run on (its affinity mask), ascending; empty when the
/// operating system does not say.
pub fn allowed_cpus() -> Vec<usize> {
    let mut cpus: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .iter()
        .map(|c| c.id)
        .collect();
    cpus.sort_unstable();
    cpus
}

/// The CPU backend: runs jobs tile by tile on its own pinned thread pool.
///
/// Construct one with [`CpuBackend::new`] or share the process-wide one from
/// [`CpuBackend::global`]. It implements [`stencil_core::Backend`] for `f32` and `f64`.
#[derive(Debug)]
pub struct CpuBackend {
    pool: ThreadPool,
    threads: usize,
    pinned: bool,
    /// Per worker, the CPU it was asked to pin itself to (empty when unpinned).
    cpus: Vec<usize>,
    fingerprint: String,
    /// Calls that ran work on several workers (see [`PoolActivity`]).
    parallel_runs: AtomicU64,
    /// Time loops run in skewed tiles on several workers (see [`PoolActivity`]).
    tiled_time_loops: AtomicU64,
}

/// What a [`CpuBackend`] has run on its pool since it was built ([`CpuBackend::activity`]):
/// for a test that must know its cases reached the pool, its partitions, tiles and barriers
/// (jobs under [`INLINE_POINTS`] points, and every job of a one-thread pool, run on the
/// calling thread).
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
    /// A backend with a pool of `threads` worker threads (0: one per core of this process's
    /// share of the cores it may use, see [`set_core_share`]; all of them by default).
    ///
    /// Threads are pinned to distinct cores of the share when `threads` does not exceed the
    /// share's cores ([`cpus`](Self::cpus) says which); a failure to pin is not an error.
    ///
    /// # Errors
    /// [`ErrorKind::Backend`] if the operating system refuses to start the threads.
    pub fn new(threads: usize) -> Result<Self> {
        let allowed = allowed_cpus();
        let (index, count) = core_share();
        let share = crate::machine::Machine::detect()
            .topology
            .restricted(&allowed)
            .share(index, count);
        let threads = if threads == 0 {
            default_threads(all_cores(), count, share.n_cpus())
        } else {
            threads
        };
        let pinned = !allowed.is_empty() && threads <= share.n_cpus();
        let cpus: Vec<usize> = if pinned {
            (0..threads)
                .map(|w| share.placement(w, threads).1)
                .collect()
        } else {
            Vec::new()
        };
        let mut builder = ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("stencil-cpu-{i}"));
        if pinned {
            let cpus = cpus.clone();
            builder = builder.start_handler(move |i| {
                // Best effort: an unpinned worker is slower at worst, never wrong.
                let _ = core_affinity::set_for_current(core_affinity::CoreId { id: cpus[i] });
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
            cpus,
            fingerprint: crate::machine::cpu_fingerprint(),
            parallel_runs: AtomicU64::new(0),
            tiled_time_loops: AtomicU64::new(0),
        })
    }

    /// The process-wide backend, built on first use with one thread per core of this
    /// process's share of the cores ([`set_core_share`]; all of them by default), or with
    /// `STENCIL_THREADS` threads when that environment variable holds a positive integer.
    ///
    /// # Panics
    /// If the operating system refuses to start the pool's threads on first use.
    pub fn global() -> &'static CpuBackend {
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

    /// The CPU each worker was asked to pin itself to (worker `i` to `cpus()[i]`, best
    /// effort); empty when the pool is not pinned.
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
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

/// The default thread count of a pool: this process's part of the `all` cores it may use
/// when `count` processes share them, at least 1 and at most the `share` cores it is pinned
/// within.
fn default_threads(all: usize, count: usize, share: usize) -> usize {
    (all / count.max(1)).max(1).min(share.max(1))
}

/// The thread count an environment value asks for: a positive integer, else 0 ("all cores").
fn threads_from_env(value: Option<&str>) -> usize {
    value
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0)
}

/// Running work on the pool: core blocks on their owning workers, or one task per worker.
impl CpuBackend {
    /// Runs `block(scratch, index)` for every core block of `partition` on the worker that owns
    /// it, each worker with scratch space from `scratch`; or, for a job of fewer than
    /// [`INLINE_POINTS`] points (`points`) or a pool of one thread, every block on the
    /// calling thread.
    pub(crate) fn execute<S>(
        &self,
        partition: Partition,
        points: usize,
        scratch: impl Fn() -> S + Sync + Send,
        block: impl Fn(&mut S, usize) + Sync + Send,
    ) {
        // Inline below `INLINE_POINTS`, and always on a pool of one thread: handing the job to
        // that thread would only add the wake-up and the wait (on a VM, waking an idle vCPU
        // costs tens of microseconds: a 64^3 7-point sweep took 194 us through a one-thread
        // pool and 143 us on the caller).
        if points < INLINE_POINTS || self.threads() == 1 {
            let mut s = scratch();
            for w in 0..partition.workers() {
                for b in partition.blocks_of(w) {
                    block(&mut s, b);
                }
            }
            return;
        }
        let threads = self.threads();
        let busy = (0..partition.workers())
            .filter(|&w| partition.blocks_of(w).next().is_some())
            .take(2)
            .count();
        if busy > 1 {
            self.count_parallel_run();
        }
        self.pool().broadcast(|ctx| {
            // Pool thread `i` runs the blocks of workers `i`, `i + threads`, ...: all of them
            // when the schedule asks for no more workers than the pool has.
            let mut s = None;
            let mut w = ctx.index();
            while w < partition.workers() {
                let s = s.get_or_insert_with(&scratch);
                for b in partition.blocks_of(w) {
                    block(s, b);
                }
                w += threads;
            }
        });
    }

    /// Runs `work(w)` for every worker `w` in `0..workers` at once, each on its own pool
    /// thread (`workers` at most the pool's size), or on the calling thread when `workers`
    /// is 1.
    pub(crate) fn on_workers(&self, workers: usize, work: impl Fn(usize) + Sync + Send) {
        if workers <= 1 {
            work(0);
            return;
        }
        assert!(
            workers <= self.threads(),
            "stencil-cpu: {workers} workers on a pool of {}",
            self.threads()
        );
        self.count_parallel_run();
        self.pool().broadcast(|ctx| {
            if ctx.index() < workers {
                work(ctx.index());
            }
        });
    }
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
    fn processes_sharing_the_cores_default_to_their_share() {
        assert_eq!(default_threads(16, 1, 16), 16);
        assert_eq!(default_threads(16, 4, 4), 4);
        assert_eq!(default_threads(2, 2, 1), 1);
        // More processes than cores: one thread each.
        assert_eq!(default_threads(2, 4, 1), 1);
        assert_eq!(default_threads(16, 3, 5), 5);
        assert_eq!(default_threads(16, 3, 6), 5);
        assert_eq!(default_threads(8, 0, 8), 8);
    }

    #[test]
    fn pools_have_the_requested_size() {
        let one = CpuBackend::new(1).unwrap();
        assert_eq!(one.threads(), 1);
        assert_eq!(one.pool().current_num_threads(), 1);
        let all = CpuBackend::new(0).unwrap();
        assert_eq!(all.threads(), all_cores());
        if all.pinned() {
            // One process (no share declared): one worker per core it may use.
            let mut cpus = all.cpus().to_vec();
            cpus.sort_unstable();
            cpus.dedup();
            assert_eq!(cpus.len(), all.threads());
            assert!(cpus.iter().all(|c| allowed_cpus().contains(c)));
        }
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
