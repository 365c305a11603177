//! What a backend is: the [`Backend`] trait, the support check the facade makes before every
//! run ([`check_support`]), and [`Job::set_region`], which asks the backend whether it runs
//! regions.
//!
//! A backend receives only jobs validated by [`Job::new`] (`job.rs`) and time loops validated
//! by [`TimeLoop::new`] (`time_loop.rs`), and may rely on their geometry.

use crate::capabilities::Capabilities;
use crate::element::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::ir::Kernel;
use crate::job::Job;
use crate::schedule::{CacheSizes, Schedule, TuningSpace};
use crate::stages::StageLoop;
use crate::time_loop::TimeLoop;

/// Restricting a job to a region needs to know whether the backend runs regions, so it
/// lives with the backend contract rather than with [`Job`]'s other methods.
impl<T: Element> Job<'_, T> {
    /// Restricts the job to the box `lo[d]..hi[d]` of the interior (one entry per dimension)
    /// for a run on `backend`, which computes only the box's points and writes no other
    /// output point. An empty box computes nothing. Only a backend that
    /// [runs regions](Capabilities::regions) takes a region (another would compute
    /// the whole interior): run the job on the backend named here.
    ///
    /// # Errors
    /// - [`ErrorKind::BadArgument`] for a box with another dimension count than the kernel's
    ///   or reaching past the interior, or on a kernel with reductions (a reduction is over
    ///   the whole interior).
    /// - [`ErrorKind::BackendUnavailable`] when `backend` does not support regions (as
    ///   [`check_support`] refuses what a backend does not compute).
    ///
    /// An error leaves the job's region as it was.
    pub fn set_region(
        &mut self,
        backend: &dyn Backend<T>,
        lo: &[usize],
        hi: &[usize],
    ) -> Result<()> {
        self.restrict_to_region(backend.capabilities().regions, || backend.name(), lo, hi)
    }
}

/// `Ok` when `backend` can run `kernel`: [`ErrorKind::BackendUnavailable`] for a kernel with
/// reductions on a backend that does not compute them ([`Capabilities::reductions`]), or
/// one reading an output in place on a backend that does not run such kernels
/// ([`Capabilities::in_place`]). The facade calls it before every run.
///
/// # Errors
/// As above, naming the kernel, the backend and what is missing.
pub fn check_support<T: Element>(backend: &dyn Backend<T>, kernel: &Kernel) -> Result<()> {
    let capabilities = backend.capabilities();
    let missing = if kernel.has_reductions() && !capabilities.reductions {
        "reductions"
    } else if !crate::analysis::in_place_outputs(kernel).is_empty() && !capabilities.in_place {
        "outputs read in place"
    } else {
        return Ok(());
    };
    Err(Error::new(
        ErrorKind::BackendUnavailable,
        format!(
            "kernel `{}` has {missing}, which backend `{}` does not support; run it on the CPU \
             backend",
            kernel.name,
            backend.name()
        ),
    ))
}

/// A backend: something that runs validated jobs under a schedule.
///
/// Backends describe themselves with data (name, availability, schedules); shared logic such
/// as `verify` never matches on which backend it holds.
pub trait Backend<T: Element>: Send + Sync {
    /// Human-readable name (`"cpu"`, `"cuda:0"`, ...).
    fn name(&self) -> String;

    /// The schedule used when nothing better is known.
    fn default_schedule(&self, kernel: &Kernel, shape: &[usize]) -> Schedule;

    /// A small, varied sample of legal schedules for `kernel` on `shape` (used by `verify`):
    /// tiles that do and do not divide the shape, one and several threads, generic and
    /// specialised paths.
    fn sample_schedules(&self, kernel: &Kernel, shape: &[usize]) -> Vec<Schedule>;

    /// Whether this backend computes every point of `kernel` under `schedule` (single sweeps
    /// and time loops) with the reference interpreter's operations in the interpreter's order
    /// and element type, so that every result is the interpreter's bits. `verify` and
    /// `verify_steps` then compare exactly instead of within a tolerance. The default is
    /// `false`: a backend that reassociates, contracts into fused multiply-adds or uses its
    /// own math functions must not claim it.
    fn matches_interpreter_bits(&self, kernel: &Kernel, schedule: &Schedule) -> bool {
        let _ = (kernel, schedule);
        false
    }

    /// What this backend computes beyond plain sweeps (regions, reductions, outputs read in
    /// place) and whether it is the tuner's reference; see [`Capabilities`]. The default is
    /// [`Capabilities::default`], all `false`: regions and such kernels are then refused
    /// ([`Job::set_region`], [`check_support`]) and tuned winners are checked against the CPU
    /// backend.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    /// Runs `job` under `schedule`: writes every interior point of every output, nothing else.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidSchedule`] if `schedule` is not for this backend; backend-specific
    /// failures otherwise.
    fn run(&self, job: &mut Job<'_, T>, schedule: &Schedule) -> Result<()>;

    /// Runs `steps` more steps of the time loop `job` under `schedule`, leaving
    /// [`TimeLoop::done`] advanced by `steps`. Each step computes what [`run`](Self::run)
    /// computes and fills the halo of every grid it wrote (see [`crate::time_loop`]); a backend may
    /// run several steps per trip through memory (temporal blocking) as long as every value
    /// it leaves is the one the steps one after another leave, bit for bit. The default runs
    /// the steps one after another through [`run`](Self::run).
    ///
    /// # Errors
    /// As [`run`](Self::run); steps done before an error are counted in `job`.
    fn run_steps(
        &self,
        job: &mut TimeLoop<'_, T>,
        schedule: &Schedule,
        steps: usize,
    ) -> Result<()> {
        for _ in 0..steps {
            job.step_with(|step| self.run(step, schedule))?;
        }
        Ok(())
    }

    /// Runs `steps` more steps of the multi-stage loop `job` under `schedule` (every stage's
    /// sweep under its sweep fields), leaving [`StageLoop::done`] advanced by `steps` and the
    /// receivers' samples appended. Every value left is the one the steps of
    /// [`StageLoop::step_with`] leave, bit for bit; a backend may block in time across the
    /// stages. The default runs the steps one after another through [`run`](Self::run).
    ///
    /// # Errors
    /// As [`run`](Self::run); steps done before an error are counted in `job`.
    fn run_stages(
        &self,
        job: &mut StageLoop<'_, T>,
        schedule: &Schedule,
        steps: usize,
    ) -> Result<()> {
        for _ in 0..steps {
            job.step_with(|stage| self.run(stage, schedule))?;
        }
        Ok(())
    }

    /// A varied sample of legal schedules for time loops of `kernel` on `shape` (used by
    /// `verify_steps`): the default [`sample_schedules`](Self::sample_schedules), which a
    /// backend overrides to cover its time-loop options (temporal blocking depths and slabs,
    /// fused steps).
    fn sample_steps_schedules(&self, kernel: &Kernel, shape: &[usize]) -> Vec<Schedule> {
        self.sample_schedules(kernel, shape)
    }

    /// The candidates the tuner may choose from for a time loop of `kernel` on an interior of
    /// `shape` running about `steps` steps per call, or `None` (the default) when time loops on
    /// this backend are not tuned (they then run [`default_schedule`](Self::default_schedule)).
    /// Each trial runs [`trial_steps`](crate::time_loop::trial_steps)`(steps)` steps, which a
    /// candidate's temporal blocking should divide. `sweep` is the schedule the loop's single
    /// sweep runs under (tuned or default): a backend should offer steps one after another
    /// under it as a [baseline](TuningSpace::baselines), so the tuned loop is never slower
    /// than plain steps of its sweep.
    fn steps_tuning_space(
        &self,
        kernel: &Kernel,
        shape: &[usize],
        steps: usize,
        sweep: &Schedule,
    ) -> Option<TuningSpace> {
        let _ = (kernel, shape, steps, sweep);
        None
    }

    /// The interior shape of the grids a time loop's tuning trials run on, for a loop of
    /// `kernel` on an interior of `shape` whose single sweep runs under `sweep`: `shape`
    /// itself (the default), or a part of it that is cheaper to step yet meets the backend's
    /// blocks and caches as `shape` does, under `sweep` too (trials compare candidates with
    /// each other, never with the real loop).
    fn steps_trial_shape(&self, kernel: &Kernel, shape: &[usize], sweep: &Schedule) -> Vec<usize> {
        let _ = (kernel, sweep);
        shape.to_vec()
    }

    /// The schedule a time loop's tuning trial on grids of `trial_shape` (from
    /// [`steps_trial_shape`](Self::steps_trial_shape)) runs for the candidate `schedule` of
    /// the whole loop: `schedule` itself (the default), or the same schedule with the blocks
    /// that would leave workers idle on the trial's smaller grids cut to fit them (a sweep's
    /// core blocks sized for the whole grid), so that the trial costs the candidate what the
    /// whole loop would, per point.
    fn steps_trial_schedule(&self, schedule: &Schedule, trial_shape: &[usize]) -> Schedule {
        let _ = trial_shape;
        *schedule
    }

    /// What a tuned schedule on this backend depends on besides the kernel and the shape: the
    /// device's fingerprint (CPU model and core count; GPU name and compute capability) and the
    /// number of threads a schedule runs on. `None` (the default) means the backend is not
    /// tuned: calls run its default schedule.
    fn tuning_device(&self) -> Option<(String, usize)> {
        None
    }

    /// The candidates the tuner may choose from for `kernel` on an interior of `shape`, or
    /// `None` (the default) when the backend is not tuned.
    fn tuning_space(&self, kernel: &Kernel, shape: &[usize]) -> Option<TuningSpace> {
        let _ = (kernel, shape);
        None
    }

    /// The row paddings (in cache lines, see [`Grid::with_padding`](crate::grid::Grid::with_padding))
    /// worth timing for `kernel` on an interior of `shape`: the layout axis of the backend's
    /// schedule space, searched at allocation time by `Launch::search_padding` (a grid's
    /// layout cannot change under a run). `[0]` (the default) for a backend whose speed does
    /// not depend on the host grids' layout.
    fn row_paddings(&self, kernel: &Kernel, shape: &[usize]) -> Vec<usize> {
        let _ = (kernel, shape);
        vec![0]
    }

    /// The device's memory bandwidth in bytes per second, measured now (the tuner caches it
    /// per device). `None` (the default) when the backend cannot measure it.
    fn measure_bandwidth(&self) -> Option<f64> {
        None
    }

    /// The device's CPU caches as the system reports them (for the CPU backend, sysfs), which
    /// a working-set sweep checks (stencil-tune's probe) before the backend is told what it
    /// measured ([`use_measured_caches`](Self::use_measured_caches)). `None` (the default)
    /// when the backend has no CPU caches to measure (GPU backends).
    fn reported_caches(&self) -> Option<CacheSizes> {
        None
    }

    /// Tells the backend the cache capacities measured on its device: from now on it sizes
    /// everything that depends on them (blocks, temporal blocking, streaming stores, its
    /// tuning spaces' cache figures) by `caches` instead of the reported ones. The default
    /// ignores them (a backend without CPU caches).
    fn use_measured_caches(&self, caches: CacheSizes) {
        let _ = caches;
    }
}
