//! First-call tuning: the schedule a call runs under when it names none.
//!
//! On the first call of a (kernel, shape, element type, backend, device, thread count, row
//! padding of every grid) the schedule is, in order of preference:
//! 1. remembered from an earlier call in this process (no file access after the first call);
//! 2. read from the tuning cache (`STENCIL_TUNE_CACHE`, else the user's cache directory; see
//!    [`stencil_tune::cache`]) — a *cache hit*;
//! 3. under the `off` policy, the performance model's choice, measuring nothing;
//! 4. otherwise tuned: the policy's strategy searches the backend's [`TuningSpace`], timing
//!    each candidate with the harness (warm-up, minimum duration, median of repeats, early
//!    abandon), the backend's default schedule measured first; a winner other than the
//!    default is timed against it in paired rounds ([`time_paired`]) and kept only if faster
//!    there; the winner is stored in the cache for every later process.
//!
//! Every trial computes a full sweep into the call's outputs, so after tuning the outputs hold
//! a correct result whatever schedule ran last (the call then runs the chosen schedule once
//! more). No shadow copies are needed: [`Job::new`] guarantees that no output shares storage
//! with any other grid, and the IR cannot read an output (the verifier rejects it), so a trial
//! can never read what an earlier trial wrote.
//!
//! Interiors under [`MIN_TUNED_POINTS`] points are not tuned under `quick` (their sweeps take
//! well under a millisecond: trials would cost more than they could ever save) and run the
//! backend's default schedule; `thorough` and `exhaustive` tune every size.
//!
//! The machine's bandwidth, which the roofline model and the bound stop need, is measured by
//! the backend once per device and thread count and kept in the same cache file; it is
//! measured again after seven days, and when a tuned sweep beats it by more than
//! [`BANDWIDTH_FAR_OFF`] (a measurement taken under load).
//!
//! **Seeing it.** Each tuning (a sweep, a time loop's, or [`tune_on_device`]'s) emits one
//! `tracing` event at info level, target `stencil::tuning`, message `tuned`, with the fields
//! `kernel`, `shape`, `backend`, `time_loop`, `policy`, `trials`, `seconds` (the tuning's
//! wall time), `schedule` (the chosen schedule in words), `seconds_per_sweep` (per step for a
//! time loop) and, when the machine's bandwidth is known and memory bounds the sweep,
//! `roofline_fraction`. Nothing is emitted for remembered, cached, default or given
//! schedules. An application shows it with any subscriber, e.g. `tracing_subscriber::fmt()
//! .with_env_filter("stencil=info").init()`. On a terminal, a tuning that lasts longer than
//! [`PROGRESS_AFTER`] also shows a progress line on standard error.
//!
//! The policy comes from the call ([`Launch::tune`](crate::Launch::tune)), else the process's
//! [`set_policy`], else `STENCIL_TUNE` (see [`stencil_tune::policy`](mod@stencil_tune::policy)
//! for its spellings; an unknown value warns once and means the default).

use std::collections::HashMap;
use std::fmt;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use stencil_core::hash::KernelHash;
use stencil_core::schedule::TuningSpace;
use stencil_core::{
    Backend, ElemType, Element, Error, ErrorKind, Job, Kernel, Result, Schedule, Stencil,
};
use stencil_cuda::{CudaDevice, DeviceGrid, GpuElement};
use stencil_tune::model::BlockAxis;
use stencil_tune::search::Found;
use stencil_tune::{
    CacheKey, HarnessConfig, Measure, Paired, Progress, Roofline, RooflineModel, TimedMeasure,
    Trial, TuneOptions, TunedEntry, TuningCache, time_paired,
};

/// Interiors with fewer points are not tuned under the `quick` policy (see the module
/// documentation).
pub const MIN_TUNED_POINTS: usize = 1 << 18;

/// Tuning that lasts longer than this shows a progress line on a terminal's standard error.
pub const PROGRESS_AFTER: Duration = Duration::from_millis(500);

/// The process-wide policy: [`set_policy`] overrides `STENCIL_TUNE` for every later call that
/// names no policy, and [`policy()`] is the policy such a call uses.
pub use stencil_tune::policy::{TunePolicy, policy, set_policy};
pub use winner::TOLERANCE_EPS as WINNER_TOLERANCE_EPS;

mod winner;

/// The confirmation of a tuned schedule against the default: a warm-up run of each, then 5
/// paired rounds of at least 20 ms a side ([`time_paired`]).
const CONFIRM: HarnessConfig = HarnessConfig {
    warmup_runs: 1,
    min_repeat: Duration::from_millis(20),
    repeats: 5,
    abandon_ratio: 0.0,
};

/// How a time loop's candidates are timed: each call runs several steps on copies of the
/// grids (tens of milliseconds at 256^3), so one warm-up and two repeats of at least 5 ms
/// leave room for about eight candidates and the confirmation within a second.
const TIME_LOOP_HARNESS: HarnessConfig = HarnessConfig {
    warmup_runs: 1,
    min_repeat: Duration::from_millis(5),
    repeats: 2,
    abandon_ratio: 0.8,
};

/// The confirmation of a time loop's tuned schedule against the default: 3 paired rounds.
const TIME_LOOP_CONFIRM: HarnessConfig = HarnessConfig {
    warmup_runs: 0,
    min_repeat: Duration::from_millis(10),
    repeats: 3,
    abandon_ratio: 0.0,
};

/// Calls of fewer steps are not tuned under `quick` (the tuning would cost more than the
/// steps): they run the backend's default schedule.
pub const MIN_TUNED_STEPS: usize = 8;

/// Seed of the strategies' random choices: tuning is repeatable up to timing noise.
const SEED: u64 = 0x5354_454e_4349_4c31;

/// Where a call's schedule came from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TuningSource {
    /// The call named its schedule.
    Given,
    /// The backend is not tuned, or the interior is below [`MIN_TUNED_POINTS`]: its default.
    Default,
    /// Chosen by an earlier call of this process.
    Remembered,
    /// Read from the tuning cache.
    CacheHit,
    /// The `off` policy: the model's choice, nothing measured.
    Model,
    /// Tuned by this call.
    Tuned,
    /// On grids distributed over MPI ranks: chosen by another rank with the same local
    /// shape (tuned there, or found in its cache) and received from it.
    Shared,
}

/// What first-call tuning did for one call (see the module documentation); its `Display` is
/// the one-line summary applications print, such as `tuning: 24 trials in 0.81 s`.
#[derive(Clone, PartialEq, Debug)]
pub struct TuneReport {
    /// Where the schedule came from.
    pub source: TuningSource,
    /// The schedule the call ran under.
    pub schedule: Schedule,
    /// The schedule in words (the tuning space's dimension names and values).
    pub description: String,
    /// Trials this call measured (0 unless [`TuningSource::Tuned`]).
    pub trials: usize,
    /// Seconds this call spent tuning, bandwidth measurement included.
    pub tuning_seconds: f64,
    /// Measured seconds per sweep of the schedule, when known (tuned now or cached).
    pub seconds_per_sweep: Option<f64>,
    /// Measured fraction of the roofline bound, when known: the single sweep's bound time
    /// over the measured time (for a time loop, per step: above 1 is faster than any single
    /// sweep can be).
    pub roofline_fraction: Option<f64>,
    /// Whether this is a time loop's report ([`crate::Steps`]): its times are per step,
    /// estimated from trials on part of the grids (see the backend's
    /// [`steps_trial_shape`](stencil_core::Backend::steps_trial_shape)).
    pub time_loop: bool,
    /// A winner this call tuned and then did not use: on a backend other than the CPU (see
    /// [`Backend::is_reference`]), a newly tuned single-sweep winner runs once more on the
    /// call's own data and must agree with the CPU backend's result: for kernels of `+`, `-`,
    /// `*`, negation and `abs`, each point within `verify`'s per-point bound, `(4 + 2 n)`
    /// epsilons of the point's magnitude ([`crate::VerifyConfig::tolerance_eps`] defines it);
    /// for other kernels (and points near overflow) within [`WINNER_TOLERANCE_EPS`]
    /// epsilons of the larger of 1 and the output's largest finite magnitude, and each
    /// reduction within as many of the larger of 1 and its value. One that does not is reported
    /// here (the schedule in words and the first disagreement), never cached, and the call
    /// runs the backend's default schedule instead (which must agree in turn, or the call
    /// fails with `VerificationFailed`). `None` otherwise.
    pub rejected: Option<String>,
}

impl TuneReport {
    pub(crate) fn plain(
        source: TuningSource,
        schedule: Schedule,
        description: String,
    ) -> TuneReport {
        TuneReport {
            source,
            schedule,
            description,
            trials: 0,
            tuning_seconds: 0.0,
            seconds_per_sweep: None,
            roofline_fraction: None,
            time_loop: false,
            rejected: None,
        }
    }
}

impl fmt::Display for TuneReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.source {
            TuningSource::Given => write!(f, "tuning: none, schedule given")?,
            TuningSource::Default => write!(f, "tuning: none, default schedule")?,
            TuningSource::Remembered => write!(f, "tuning: remembered")?,
            TuningSource::CacheHit => write!(f, "tuning: cache hit")?,
            TuningSource::Shared => write!(f, "tuning: shared by another rank")?,
            TuningSource::Model => write!(f, "tuning: off, the model's choice")?,
            TuningSource::Tuned => write!(
                f,
                "tuning: {} trials in {:.2} s",
                self.trials, self.tuning_seconds
            )?,
        }
        if !self.description.is_empty() {
            write!(f, ": {}", self.description)?;
        }
        if let Some(s) = self.seconds_per_sweep {
            let per = if self.time_loop { "step" } else { "sweep" };
            write!(f, " ({:.3} ms per {per}", s * 1e3)?;
            if let Some(fr) = self.roofline_fraction.filter(|fr| *fr > 0.0) {
                write!(f, ", {:.0}% of the roofline bound", 100.0 * fr)?;
            }
            write!(f, ")")?;
        }
        if let Some(r) = &self.rejected {
            write!(f, "; rejected the tuned winner {r}")?;
        }
        Ok(())
    }
}

/// How a call is tuned: the policy and the cache (both default to the environment's).
#[derive(Clone, Debug, Default)]
pub(crate) struct TuneSettings {
    pub(crate) policy: Option<TunePolicy>,
    pub(crate) cache: Option<CacheChoice>,
}

/// Which tuning cache a call uses.
#[derive(Clone, Debug)]
pub(crate) enum CacheChoice {
    /// No file: tune every process anew.
    Without,
    /// This file.
    At(TuningCache),
}

/// What an earlier call of this process chose, by everything the choice depends on.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct MemoKey {
    kernel: KernelHash,
    run_time_path: bool,
    shape: Vec<usize>,
    elem: ElemType,
    backend: String,
    device: String,
    threads: usize,
    padding: Vec<usize>,
    policy: TunePolicy,
    cache: Option<PathBuf>,
}

fn memo() -> &'static Mutex<HashMap<MemoKey, (Schedule, String)>> {
    static MEMO: OnceLock<Mutex<HashMap<MemoKey, (Schedule, String)>>> = OnceLock::new();
    MEMO.get_or_init(Mutex::default)
}

/// The schedule `job` runs under: `given` when the call named one (no tuning), else
/// [`choose`]'s.
///
/// # Errors
/// As [`choose`].
pub(crate) fn schedule_for<T: Element>(
    backend: &dyn Backend<T>,
    job: &mut Job<'_, T>,
    given: Option<Schedule>,
    settings: &TuneSettings,
) -> Result<TuneReport> {
    match given {
        Some(schedule) => Ok(TuneReport::plain(
            TuningSource::Given,
            schedule,
            String::new(),
        )),
        None => choose(backend, job, settings),
    }
}

/// Chooses the schedule of `job` on `backend` (running trials on it when tuning) per the module
/// documentation. The caller then runs the returned schedule.
///
/// Tuning itself does not fail (an unknown `STENCIL_TUNE` falls back to the default policy
/// with a warning, see [`policy()`]); the `Result` is the shape every caller propagates.
pub(crate) fn choose<T: Element>(
    backend: &dyn Backend<T>,
    job: &mut Job<'_, T>,
    settings: &TuneSettings,
) -> Result<TuneReport> {
    let stencil = job.stencil();
    let kernel = job.kernel();
    let shape = job.shape().to_vec();
    let target = Target {
        backend: backend.name(),
        device: backend.tuning_device(),
        default: backend.default_schedule(kernel, &shape),
        space: &|| backend.tuning_space(kernel, &shape),
        bandwidth: &|| backend.measure_bandwidth(),
        time_loop: None,
    };
    let padding: Vec<usize> = job
        .inputs()
        .iter()
        .map(|v| v.geom.pad_lines)
        .chain(job.outputs().iter().map(|v| v.geom.pad_lines))
        .collect();
    let call = Call {
        kernel,
        hash: stencil.hash(),
        run_time_path: stencil.cpu_loop().is_none(),
        shape: &shape,
        padding: &padding,
    };
    // Outputs read in place (`y = a x + y`) change with every run, so every trial, and the
    // call's own run after tuning, starts from the values the call was given: a snapshot taken
    // before the first trial (only when there is one) and restored before each later run.
    let in_place: Vec<usize> = stencil_core::analysis::in_place_outputs(kernel)
        .into_iter()
        .filter_map(|f| kernel.outputs().position(|o| o == f))
        .collect();
    let snapshot: std::cell::RefCell<Option<Vec<Vec<T>>>> = std::cell::RefCell::new(None);
    let start_fresh = |job: &mut Job<'_, T>| {
        if in_place.is_empty() {
            return;
        }
        let mut snapshot = snapshot.borrow_mut();
        match &*snapshot {
            None => {
                *snapshot = Some(
                    in_place
                        .iter()
                        .map(|&o| job.outputs()[o].data.to_vec())
                        .collect(),
                );
            }
            Some(saved) => {
                for (&o, values) in in_place.iter().zip(saved) {
                    job.outputs_mut()[o].data.copy_from_slice(values);
                }
            }
        }
    };
    let job = std::cell::RefCell::new(job);
    let check = !backend.is_reference();
    let report = choose_for(
        &call,
        &target,
        settings,
        &mut |schedule| {
            let mut job = job.borrow_mut();
            start_fresh(&mut job);
            backend.run(&mut job, schedule).is_ok()
        },
        &mut |schedule| match check {
            true => {
                let mut job = job.borrow_mut();
                start_fresh(&mut job);
                winner::agrees_with_cpu(backend, &mut job, schedule)
            }
            false => Ok(()),
        },
    );
    if snapshot.borrow().is_some() {
        start_fresh(&mut job.borrow_mut());
    }
    report
}

/// The schedule of a time loop of `stencil` on `backend` over an interior of `shape` (grids
/// padded by `padding` lines, in the kernel's field order) running `steps` steps: remembered,
/// cached or tuned now, `trial(schedule, n)` running `n` steps on copies of the grids of the
/// backend's [`steps_trial_shape`](Backend::steps_trial_shape) (`false`: it failed). Keyed
/// like a sweep's schedule plus the time loop's step-count class.
///
/// Does not fail, as [`choose`].
pub(crate) fn choose_steps<T: Element>(
    backend: &dyn Backend<T>,
    stencil: &Stencil<T>,
    shape: &[usize],
    padding: &[usize],
    steps: usize,
    settings: &TuneSettings,
    trial: &mut dyn FnMut(&Schedule, usize) -> bool,
) -> Result<TuneReport> {
    let kernel = stencil.kernel();
    let default = backend.default_schedule(kernel, shape);
    let policy = settings.policy.unwrap_or_else(stencil_tune::policy);
    if policy == TunePolicy::Quick && steps < MIN_TUNED_STEPS {
        return Ok(TuneReport::plain(
            TuningSource::Default,
            default,
            String::new(),
        ));
    }
    let class = stencil_core::steps::steps_class(steps);
    let trial_steps = stencil_core::steps::trial_steps(steps);
    let trial_shape = backend.steps_trial_shape(kernel, shape);
    let target = Target {
        backend: format!("{} (time loop, steps class {class})", backend.name()),
        device: backend.tuning_device(),
        default,
        space: &|| backend.steps_tuning_space(kernel, shape, steps),
        bandwidth: &|| backend.measure_bandwidth(),
        time_loop: Some(TimeLoopTrials {
            steps: trial_steps,
            scale: shape.iter().product::<usize>() as f64
                / trial_shape.iter().product::<usize>().max(1) as f64,
        }),
    };
    let call = Call {
        kernel,
        hash: stencil.hash(),
        run_time_path: stencil.cpu_loop().is_none(),
        shape,
        padding,
    };
    // Time-loop winners are not checked against the CPU here: trials run on copies of part
    // of the grids, and `verify_steps` covers the time-loop schedules of every backend.
    let mut report = choose_for(
        &call,
        &target,
        settings,
        &mut |schedule| trial(schedule, trial_steps),
        &mut |_| Ok(()),
    )?;
    report.time_loop = true;
    Ok(report)
}

/// Tunes `stencil` on grids resident on `device` (or finds its schedule in the memo or the
/// cache), running trials with [`CudaDevice::run`] on these very grids, and returns the report;
/// run the schedule with `device.run(.., &schedule)`. Timing device-resident sweeps (the
/// device synchronised after each) measures the kernels alone, which trials through
/// [`CudaBackend`](crate::CudaBackend) on host grids cannot: those include uploads and
/// downloads. `policy` and `cache` default as for [`Launch::run`](crate::Launch::run).
///
/// # Errors
/// The errors of [`CudaDevice::run`] for a call that does not fit the kernel (checked by one
///   run of the default schedule first).
pub fn tune_on_device<T: GpuElement, const D: usize>(
    device: &CudaDevice,
    stencil: &Stencil<T>,
    inputs: &[&DeviceGrid<T, D>],
    outputs: &mut [&mut DeviceGrid<T, D>],
    params: &[T],
    policy: Option<TunePolicy>,
    cache: Option<TuningCache>,
) -> Result<TuneReport> {
    let kernel = stencil.kernel();
    let shape: Vec<usize> = match outputs.first() {
        Some(g) => g.shape().to_vec(),
        None => Vec::new(),
    };
    let default = stencil_cuda::caps::default_schedule(kernel, &shape);
    // One checked run first: a call that does not fit the kernel is an error, not a failed
    // trial.
    device.run(stencil, inputs, outputs, params, &default)?;
    device.synchronize()?;
    let caps = device.caps();
    let (major, minor) = caps.compute_capability;
    let target = Target {
        backend: format!("cuda:{} (device grids)", device.ordinal()),
        device: Some((format!("{} sm_{major}{minor}", caps.name), 1)),
        default: Schedule::Gpu(default),
        space: &|| Some(stencil_cuda::runtime::tuning_space(kernel, &shape, caps)),
        bandwidth: &|| device.copy_bandwidth(256 << 20, 10).ok(),
        time_loop: None,
    };
    let padding: Vec<usize> = inputs
        .iter()
        .map(|g| g.geometry().pad_lines)
        .chain(outputs.iter().map(|g| g.geometry().pad_lines))
        .collect();
    let call = Call {
        kernel,
        hash: stencil.hash(),
        // Device grids run the same generated PTX whoever built the kernel.
        run_time_path: false,
        shape: &shape,
        padding: &padding,
    };
    let settings = TuneSettings {
        policy,
        cache: cache.map(CacheChoice::At),
    };
    // Winners on device-resident grids are not checked against the CPU: the grids never
    // leave the device (checking would download every input and output once per tuning).
    choose_for(
        &call,
        &target,
        &settings,
        &mut |schedule| match schedule {
            Schedule::Gpu(s) => {
                device.run(stencil, inputs, outputs, params, s).is_ok()
                    && device.synchronize().is_ok()
            }
            _ => false,
        },
        &mut |_| Ok(()),
    )
}

/// The call being tuned, as the keys see it.
struct Call<'a> {
    kernel: &'a Kernel,
    hash: KernelHash,
    /// Whether the call takes a backend's path for kernels built at run time (the CPU's
    /// generic evaluator, for a stencil without a generated point loop): its best schedule
    /// is a different question, so it is keyed apart.
    run_time_path: bool,
    shape: &'a [usize],
    /// Row padding of every grid (inputs, then outputs), in cache lines: padded grids have
    /// other strides, so their best schedule is keyed apart.
    padding: &'a [usize],
}

/// Where the call runs, as tuning sees it.
struct Target<'a> {
    /// Backend name, part of every key.
    backend: String,
    /// Device fingerprint and thread count; `None`: not tuned.
    device: Option<(String, usize)>,
    /// The schedule an untuned call runs.
    default: Schedule,
    /// The candidates (built only when needed).
    space: &'a dyn Fn() -> Option<TuningSpace>,
    /// Measures the device's bandwidth now.
    bandwidth: &'a dyn Fn() -> Option<f64>,
    /// For a time loop, how its trials run (see [`TimeLoopTrials`]).
    time_loop: Option<TimeLoopTrials>,
}

/// How a time loop's trials relate to the loop: each runs `steps` steps on grids of a part of
/// the loop's interior, `scale` times fewer points. A trial's time divided by `steps` and
/// multiplied by `scale` estimates the loop's time per step. The sweep's roofline bound
/// neither stops nor prunes the search (temporal blocking can beat it), and the machine's
/// bandwidth is not measured for it (a cached measurement gives the report its fraction).
#[derive(Clone, Copy, Debug)]
struct TimeLoopTrials {
    steps: usize,
    scale: f64,
}

/// [`choose`] for any target: `run` runs one sweep under a schedule (`false`: it failed).
///
/// A newly tuned winner other than the default must pass `accept` (which may run it) before
/// it is cached or remembered; one that does not is reported in [`TuneReport::rejected`] and
/// replaced by the default, which must pass `accept` in turn.
fn choose_for(
    call: &Call<'_>,
    target: &Target<'_>,
    settings: &TuneSettings,
    run: &mut dyn FnMut(&Schedule) -> bool,
    accept: &mut dyn FnMut(&Schedule) -> std::result::Result<(), String>,
) -> Result<TuneReport> {
    let kernel = call.kernel;
    let shape = call.shape.to_vec();
    let Some((device, threads)) = target.device.clone() else {
        return Ok(TuneReport::plain(
            TuningSource::Default,
            target.default,
            String::new(),
        ));
    };
    let policy = settings.policy.unwrap_or_else(stencil_tune::policy);
    let n_points: usize = shape.iter().product();
    if policy == TunePolicy::Quick && n_points < MIN_TUNED_POINTS {
        return Ok(TuneReport::plain(
            TuningSource::Default,
            target.default,
            String::new(),
        ));
    }
    let cache = match &settings.cache {
        Some(CacheChoice::Without) => None,
        Some(CacheChoice::At(c)) => Some(c.clone()),
        None => TuningCache::open_default().ok(),
    };
    let memo_key = MemoKey {
        kernel: call.hash,
        run_time_path: call.run_time_path,
        shape: shape.clone(),
        elem: kernel.elem(),
        backend: target.backend.clone(),
        device: device.clone(),
        threads,
        padding: call.padding.to_vec(),
        policy,
        cache: cache.as_ref().map(|c| c.path().to_path_buf()),
    };
    if let Some((schedule, description)) = lock(memo()).get(&memo_key).cloned() {
        return Ok(TuneReport::plain(
            TuningSource::Remembered,
            schedule,
            description,
        ));
    }
    let Some(space) = (target.space)() else {
        return Ok(TuneReport::plain(
            TuningSource::Default,
            target.default,
            String::new(),
        ));
    };
    let mut backend_key = if call.run_time_path {
        format!("{} (run-time kernel)", target.backend)
    } else {
        target.backend.clone()
    };
    if call.padding.iter().any(|&p| p > 0) {
        backend_key = format!("{backend_key} (row padding {:?})", call.padding);
    }
    let cache_key = CacheKey::new(
        kernel,
        &shape,
        &backend_key,
        &device,
        threads,
        space.space(),
    );
    let report = match cache.as_ref().and_then(|c| c.lookup(&cache_key)) {
        Some(entry) if space.schedule(&entry.point).is_some() => cache_hit(&space, &entry),
        _ if policy == TunePolicy::Off => {
            let known = cache.as_ref().and_then(|c| c.bandwidth(&device, threads));
            model_choice(
                &space,
                &roofline(&space, kernel, &shape, known),
                target.default,
            )
        }
        _ => {
            let started = Instant::now();
            let measured = match target.time_loop {
                Some(_) => cache.as_ref().and_then(|c| c.bandwidth(&device, threads)),
                None => bandwidth(target.bandwidth, cache.as_ref(), &device, threads),
            };
            let mut search = |measured: Option<f64>| {
                let roofline = roofline(&space, kernel, &shape, measured);
                // The bound stop needs a measured bandwidth and a sweep that memory bounds:
                // one whose traffic is several times the largest cache.
                let traffic = roofline.bytes_per_point * roofline.n_points;
                let memory_bound = traffic > (4 * space.largest_cache_bytes) as f64;
                let bound = measured
                    .filter(|_| memory_bound)
                    .map(|_| roofline.bound_seconds());
                let tuned = Tuned {
                    space: &space,
                    roofline: &roofline,
                    bound,
                    prune: memory_bound && target.time_loop.is_none(),
                    started,
                    time_loop: target.time_loop,
                };
                tuned.search(&kernel.name, target.default, &mut *run, policy)
            };
            let (mut report, mut entry) = search(measured);
            if let Some(cache) = &cache
                && target.time_loop.is_none()
                && report
                    .roofline_fraction
                    .is_some_and(|f| f > BANDWIDTH_FAR_OFF)
                && let Some(new) = (target.bandwidth)().filter(|b| b.is_finite() && *b > 0.0)
            {
                // A sweep this much faster than the bandwidth allows: the measurement was
                // taken under load, and its bound may have stopped the search early. Measure
                // again, cache it, and search again against it.
                if let Err(e) = cache.store_bandwidth(&device, threads, new) {
                    tracing::warn!(target: "stencil::tuning", error = %e, "could not cache the measured bandwidth");
                }
                (report, entry) = search(Some(new));
            }
            if report.schedule != target.default
                && let Err(reason) = accept(&report.schedule)
            {
                tracing::warn!(
                    target: "stencil::tuning",
                    kernel = %kernel.name,
                    backend = %target.backend,
                    schedule = %report.description,
                    %reason,
                    "the tuned schedule disagrees with the CPU backend on this call's data: \
                     not cached, running the default schedule"
                );
                accept(&target.default).map_err(|default_reason| {
                    Error::new(
                        ErrorKind::VerificationFailed,
                        format!(
                            "`{}` on {}: the tuned schedule ({}) and the default schedule both \
                             disagree with the CPU backend on this call's data: {reason}; \
                             default: {default_reason}",
                            kernel.name, target.backend, report.description
                        ),
                    )
                })?;
                report.rejected = Some(format!("({}): {reason}", report.description));
                report.schedule = target.default;
                report.description = space
                    .default_point
                    .as_ref()
                    .map(|p| space.space().describe(p))
                    .unwrap_or_default();
                report.seconds_per_sweep = None;
                report.roofline_fraction = None;
                entry = None;
            }
            if let (Some(cache), Some(entry)) = (&cache, entry)
                && let Err(e) = cache.store(cache_key, entry)
            {
                tracing::warn!(target: "stencil::tuning", error = %e, "could not store the tuned schedule");
            }
            tracing::info!(
                target: "stencil::tuning",
                kernel = %kernel.name,
                shape = ?shape,
                backend = %target.backend,
                time_loop = target.time_loop.is_some(),
                policy = %policy,
                trials = report.trials,
                seconds = report.tuning_seconds,
                schedule = %report.description,
                seconds_per_sweep = report.seconds_per_sweep,
                roofline_fraction = report.roofline_fraction,
                "tuned"
            );
            report
        }
    };
    if report.source != TuningSource::Default {
        lock(memo()).insert(memo_key, (report.schedule, report.description.clone()));
    }
    Ok(report)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn cache_hit(space: &TuningSpace, entry: &TunedEntry) -> TuneReport {
    let schedule = space.schedule(&entry.point).expect("checked by the caller");
    TuneReport {
        source: TuningSource::CacheHit,
        schedule,
        description: space.space().describe(&entry.point),
        trials: 0,
        tuning_seconds: 0.0,
        seconds_per_sweep: (entry.seconds > 0.0).then_some(entry.seconds),
        roofline_fraction: (entry.roofline_fraction > 0.0).then_some(entry.roofline_fraction),
        time_loop: false,
        rejected: None,
    }
}

/// A tuned single sweep that moves its compulsory bytes this many times faster than the
/// cached bandwidth allows shows that the bandwidth was measured under load (and its bound
/// may have stopped the search at once): the bandwidth is measured again and cached, and the
/// search runs again against it. (A sweep cannot show a bandwidth measured too high.)
pub const BANDWIDTH_FAR_OFF: f64 = 1.5;

/// Nominal bandwidth for ranking candidates when none was measured (the ranking does not
/// depend on it unless the kernel is compute-bound).
const NOMINAL_BANDWIDTH: f64 = 1.0e11;

/// The device's bandwidth: cached, or measured now (`measure`) and cached.
fn bandwidth(
    measure: &dyn Fn() -> Option<f64>,
    cache: Option<&TuningCache>,
    device: &str,
    threads: usize,
) -> Option<f64> {
    match cache {
        Some(cache) => {
            let cached = cache.bandwidth(device, threads).filter(|bw| *bw > 0.0);
            cached.or_else(|| {
                let bw = measure()?;
                Some(cache.bandwidth_or_measure(device, threads, || bw))
            })
        }
        None => measure(),
    }
    .filter(|bw| bw.is_finite() && *bw > 0.0)
}

/// The roofline of `kernel` on `shape` with the space's block-size term.
fn roofline(
    space: &TuningSpace,
    kernel: &Kernel,
    shape: &[usize],
    bandwidth: Option<f64>,
) -> Roofline {
    let n_points: usize = shape.iter().product();
    let axes = shape
        .iter()
        .enumerate()
        .map(
            |(d, &full)| match space.block_dims.get(d).copied().flatten() {
                Some(dim) => BlockAxis::Tuned { dim, full },
                None => BlockAxis::Fixed(full),
            },
        )
        .collect();
    Roofline::for_kernel(
        kernel,
        n_points,
        bandwidth.unwrap_or(NOMINAL_BANDWIDTH),
        space.peak_flops,
    )
    .with_cache_fit(kernel, space.cache_bytes as f64, axes)
}

/// Legality only: what the model's choice consults (it measures nothing).
struct Legality<'a>(&'a TuningSpace);

impl Measure for Legality<'_> {
    fn is_legal(&self, point: &[usize]) -> bool {
        self.0.schedule(point).is_some()
    }

    fn measure(&mut self, _point: &[usize], _best_so_far: Option<f64>) -> Option<Trial> {
        None
    }
}

/// The `off` policy: the legal point the model predicts fastest; `default` (what an untuned
/// call runs) when the model ranks the default point as fast, or finds no legal point.
fn model_choice(space: &TuningSpace, roofline: &Roofline, default: Schedule) -> TuneReport {
    let model = RooflineModel {
        roofline: roofline.clone(),
        space: space.space(),
    };
    let choice = stencil_tune::model_choice(space.space(), &mut Legality(space), &model, SEED);
    let point = match (choice, &space.default_point) {
        (Some(c), Some(d)) if space.schedule(d).is_some() => {
            if roofline.predict(space.space(), d) <= roofline.predict(space.space(), &c) {
                d.clone()
            } else {
                c
            }
        }
        (Some(c), _) => c,
        (None, Some(d)) => d.clone(),
        (None, None) => Vec::new(),
    };
    match space.schedule(&point) {
        Some(schedule) => TuneReport::plain(
            TuningSource::Model,
            schedule,
            space.space().describe(&point),
        ),
        None => TuneReport::plain(TuningSource::Model, default, String::new()),
    }
}

/// One search: the space, its roofline and when tuning started.
struct Tuned<'a> {
    space: &'a TuningSpace,
    roofline: &'a Roofline,
    /// The machine's bound in seconds per sweep, when the bandwidth was measured and memory
    /// bounds the sweep.
    bound: Option<f64>,
    /// Whether the model may prune (its times are comparable with measured ones).
    prune: bool,
    started: Instant,
    /// For a time loop, how its trials run (see [`Target::time_loop`]).
    time_loop: Option<TimeLoopTrials>,
}

impl Tuned<'_> {
    /// Searches per `policy`, timing candidates on `backend` with `job`; the report and the
    /// cache entry of the winner (`None` when no candidate ran).
    fn search(
        &self,
        kernel_name: &str,
        default: Schedule,
        run: &mut dyn FnMut(&Schedule) -> bool,
        policy: TunePolicy,
    ) -> (TuneReport, Option<TunedEntry>) {
        let space = self.space;
        // A trial's time over the loop's time per step (1 for a sweep).
        let steps = self.time_loop.map_or(1.0, |t| t.steps as f64 / t.scale);
        // A time loop's trial time is per trial of several steps: no sweep bound applies.
        let bound = self.bound.filter(|_| self.time_loop.is_none());
        let mut plan = policy.plan(space.space().n_points(), bound);
        if self.time_loop.is_some() {
            plan.harness = TIME_LOOP_HARNESS;
        }
        let model = RooflineModel {
            roofline: self.roofline.clone(),
            space: space.space(),
        };
        let mut measure = TimedMeasure::new(
            plan.harness,
            |p: &[usize]| space.schedule(p).is_some(),
            |p: &[usize]| match space.schedule(p) {
                Some(schedule) => run(&schedule),
                None => false,
            },
        );
        let baseline: Vec<Vec<usize>> = space.default_point.iter().cloned().collect();
        let mut line = ProgressLine::new(kernel_name.to_string(), self.started);
        let mut hook = |p: &Progress<'_>| line.update(p);
        let options = TuneOptions {
            model: Some(&model),
            bound_seconds: bound,
            seed: SEED,
            prune: self.prune,
            baseline: &baseline,
        };
        let outcome = stencil_tune::tune(
            policy,
            space.space(),
            &mut measure,
            options,
            Some(&mut hook),
        );
        let fraction = |seconds: f64| self.bound.map(|_| self.roofline.fraction_of_bound(seconds));
        // Per step, for a time loop.
        let outcome = stencil_tune::search::Outcome {
            best: outcome.best.map(|mut found| {
                found.trial.seconds /= steps;
                found
            }),
            ..outcome
        };
        let best = outcome.best.as_ref().map(|found| {
            let default_point = space
                .default_point
                .as_ref()
                .filter(|p| space.schedule(p).is_some());
            match (default_point, space.schedule(&found.point)) {
                (Some(point), Some(winner)) if *point != found.point => {
                    let baseline = space.schedule(point).expect("checked legal");
                    // Both closures run sweeps through the one `run`, never at once.
                    let run = std::cell::RefCell::new(&mut *run);
                    let confirm = match self.time_loop {
                        Some(_) => &TIME_LOOP_CONFIRM,
                        None => &CONFIRM,
                    };
                    let paired =
                        time_paired(confirm, &mut || (*run.borrow_mut())(&baseline), &mut || {
                            (*run.borrow_mut())(&winner)
                        });
                    confirmed(
                        found,
                        point,
                        paired.map(|p| Paired {
                            first: p.first / steps,
                            second: p.second / steps,
                            ..p
                        }),
                    )
                }
                _ => found.clone(),
            }
        });
        line.finish();
        // The search and the confirmation (and the bandwidth measurement before them).
        let tuning_seconds = self.started.elapsed().as_secs_f64();
        match &best {
            Some(found) => {
                let schedule = space
                    .schedule(&found.point)
                    .expect("measured points are legal");
                let mut entry =
                    TunedEntry::new(space.space(), found, &outcome, Some(self.roofline));
                if self.bound.is_none() {
                    // Not memory-bound (or no measured bandwidth): no meaningful fraction.
                    entry.roofline_fraction = 0.0;
                }
                let report = TuneReport {
                    source: TuningSource::Tuned,
                    schedule,
                    description: space.space().describe(&found.point),
                    trials: outcome.trials,
                    tuning_seconds,
                    seconds_per_sweep: Some(found.trial.seconds),
                    roofline_fraction: fraction(found.trial.seconds),
                    time_loop: false,
                    rejected: None,
                };
                (report, Some(entry))
            }
            None => {
                // Every candidate failed: run the default and let it report its error.
                let report = TuneReport {
                    source: TuningSource::Tuned,
                    schedule: default,
                    description: String::new(),
                    trials: outcome.trials,
                    tuning_seconds,
                    seconds_per_sweep: None,
                    roofline_fraction: None,
                    time_loop: false,
                    rejected: None,
                };
                (report, None)
            }
        }
    }
}

/// The search's winner `found`, or the default point when the two, timed against each other
/// in paired rounds (`paired`: default first), show the winner no faster than the default.
///
/// The search times its candidates one after another, so on a shared machine whose speed
/// drifts a candidate timed after the machine sped up looks faster than the default measured
/// before: the 5-point stencil at 8192^2 on 2 threads was once tuned to a schedule that ran
/// at 18.95 ms against the default's 12.90 ms in the bench. Timed in the same rounds, the
/// drift cancels. A failed paired run keeps the winner (the search measured it).
fn confirmed(found: &Found, default_point: &[usize], paired: Option<Paired>) -> Found {
    match paired {
        Some(p) if p.ratio >= 1.0 => {
            tracing::debug!(
                target: "stencil::tuning",
                ratio = p.ratio,
                "the tuned schedule is no faster than the default timed alongside it: default kept"
            );
            Found {
                point: default_point.to_vec(),
                trial: Trial {
                    seconds: p.first,
                    spread: 0.0,
                    repeats: CONFIRM.repeats,
                },
            }
        }
        _ => found.clone(),
    }
}

/// Whether the progress line should be drawn now: tuning has lasted at least
/// [`PROGRESS_AFTER`], standard error is a terminal, and the line was last drawn at least
/// [`PROGRESS_EVERY`] ago (`since_drawn`; `None`: never drawn).
fn progress_due(elapsed: Duration, terminal: bool, since_drawn: Option<Duration>) -> bool {
    terminal && elapsed >= PROGRESS_AFTER && since_drawn.is_none_or(|d| d >= PROGRESS_EVERY)
}

/// The least interval between two redraws of the progress line.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// A one-line progress display on standard error, shown only on a terminal and only once
/// tuning has lasted [`PROGRESS_AFTER`]: redrawn after trials, and drawn a last time when the
/// search ends, so a tuning that passes the threshold during its last trial or its
/// confirmation still shows one.
struct ProgressLine {
    kernel: String,
    started: Instant,
    terminal: bool,
    drawn: Option<Instant>,
    trials: usize,
    max_trials: Option<usize>,
    best_seconds: Option<f64>,
}

impl ProgressLine {
    fn new(kernel: String, started: Instant) -> ProgressLine {
        ProgressLine {
            kernel,
            started,
            terminal: std::io::stderr().is_terminal(),
            drawn: None,
            trials: 0,
            max_trials: None,
            best_seconds: None,
        }
    }

    fn update(&mut self, p: &Progress<'_>) {
        self.trials = p.trials;
        self.max_trials = p.max_trials;
        self.best_seconds = p.best_seconds;
        let since_drawn = self.drawn.map(|t| t.elapsed());
        if progress_due(self.started.elapsed(), self.terminal, since_drawn) {
            self.draw();
        }
    }

    fn draw(&mut self) {
        self.drawn = Some(Instant::now());
        let budget = self.max_trials.map_or(String::new(), |n| format!("/{n}"));
        let best = self
            .best_seconds
            .map_or(String::new(), |s| format!(", best {:.3} ms", s * 1e3));
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\rtuning `{}`: trial {}{budget}{best} ({:.1} s)   ",
            self.kernel,
            self.trials,
            self.started.elapsed().as_secs_f64()
        );
        let _ = err.flush();
    }

    /// Draws the final state (when the tuning lasted long enough) and ends the line.
    fn finish(&mut self) {
        if progress_due(self.started.elapsed(), self.terminal, None) {
            self.draw();
        }
        if self.drawn.is_some() {
            let _ = writeln!(std::io::stderr());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(point: &[usize], seconds: f64) -> Found {
        Found {
            point: point.to_vec(),
            trial: Trial {
                seconds,
                spread: 0.0,
                repeats: 3,
            },
        }
    }

    fn paired(first: f64, second: f64, ratio: f64) -> Option<Paired> {
        Some(Paired {
            first,
            second,
            ratio,
        })
    }

    #[test]
    fn a_winner_no_faster_than_the_default_alongside_it_gives_way() {
        // The search saw the winner at 11.0 ms after the default at 12.9 ms, but timed in
        // the same rounds the winner is 1.47 times slower.
        let winner = found(&[3, 1, 0], 0.0110);
        let kept = confirmed(&winner, &[0, 0, 0], paired(0.0129, 0.0190, 1.47));
        assert_eq!(kept.point, vec![0, 0, 0]);
        assert_eq!(kept.trial.seconds, 0.0129);
        // A tie keeps the default too.
        assert_eq!(
            confirmed(&winner, &[0, 0, 0], paired(0.01, 0.01, 1.0)).point,
            vec![0, 0, 0]
        );
    }

    #[test]
    fn the_progress_line_shows_from_half_a_second_on_a_terminal_only() {
        let ms = Duration::from_millis;
        assert!(!progress_due(ms(499), true, None));
        assert!(progress_due(ms(500), true, None));
        assert!(progress_due(ms(700), true, None));
        assert!(!progress_due(ms(5000), false, None), "never off a terminal");
        // Redrawn at most every 250 ms.
        assert!(!progress_due(ms(900), true, Some(ms(100))));
        assert!(progress_due(ms(900), true, Some(ms(250))));
    }

    #[test]
    fn a_winner_faster_alongside_the_default_stays() {
        let winner = found(&[3, 1, 0], 0.0110);
        assert_eq!(
            confirmed(&winner, &[0, 0, 0], paired(0.0129, 0.0112, 0.87)),
            winner
        );
        // When the paired runs fail, the search's measurement stands.
        assert_eq!(confirmed(&winner, &[0, 0, 0], None), winner);
    }
}
