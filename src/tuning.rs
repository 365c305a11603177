//! First-call tuning, as a call sees it: the glue that binds a call's grids to the tuning
//! engine ([`stencil_tune::engine`]), which decides everything else.
//!
//! On the first call of a (kernel, shape, element type, backend, device, thread count, row
//! padding of every grid) the schedule is, in order of preference:
//! 1. remembered from an earlier call in this process (no file access after the first call);
//! 2. read from the tuning cache (`STENCIL_TUNE_CACHE`, else the user's cache directory; see
//!    [`stencil_tune::cache`]) — a *cache hit*;
//! 3. under the `off` policy, the performance model's choice, measuring nothing;
//! 4. otherwise tuned within the policy's time budget ([`budget_seconds`]: `quick` 1 s for a
//!    sweep, 2 s for a time loop; `thorough` 10 s): a search for candidates (`quick`: the
//!    dimensions that move time most first — for the CPU stores, register rows, blocks,
//!    prefetch — then a descent from the best), then paired comparisons: a candidate
//!    replaces the backend's default schedule only when interleaved samples of both on the
//!    call's own data show it faster beyond their noise ([`PAIRED_RULE`]); the comparisons
//!    are kept in [`TuneReport::evidence`], and a search the budget cut short says so
//!    ([`TuneReport::cut_short`]). The winner is stored in the cache for every later process.
//!
//! Every trial computes a full sweep into the call's outputs, so after tuning the outputs hold
//! a correct result whatever schedule ran last (the call then runs the chosen schedule once
//! more). No shadow copies are needed: [`Job::new`] guarantees that no output shares storage
//! with any other grid, and the IR cannot read an output except in place (outputs read in
//! place are restored before every trial), so a trial can never read what an earlier trial
//! wrote.
//!
//! A time loop ([`Steps`](crate::Steps)) first finds its single sweep's schedule (tuned on
//! its first step's own job, which writes only the grids that step overwrites), then decides
//! among its blocked schedules on copies of the grids' leading planes, against the loop of
//! plain steps under that sweep schedule: the tuned loop is never slower than `run()` and
//! swap under the tuned sweep, within the rule's noise.
//!
//! Interiors under [`MIN_TUNED_POINTS`] points are not tuned under `quick` (their sweeps take
//! well under a millisecond: trials would cost more than they could ever save) and run the
//! backend's default schedule; `thorough` and `exhaustive` tune every size.
//!
//! The machine's bandwidth, which the roofline model and its fractions need, is measured by
//! the backend once per device and thread count and kept in the same cache file; it is
//! measured again after seven days, and when a tuned sweep beats it by more than
//! [`BANDWIDTH_FAR_OFF`] (a measurement taken under load).
//!
//! **Seeing it.** Each tuning (a sweep, a time loop's, or [`tune_on_device`]'s) emits one
//! `tracing` event at info level, target `stencil::tuning`, message `tuned`, with the fields
//! `kernel`, `shape`, `backend`, `time_loop`, `policy`, `trials`, `seconds` (the tuning's
//! wall time), `cut_short`, `schedule` (the chosen schedule in words), `seconds_per_sweep`
//! (per step for a time loop), `roofline_fraction` (when the machine's bandwidth is known and
//! memory bounds the sweep) and `evidence` (the comparison that chose the schedule). Nothing
//! is emitted for remembered, cached, default or given schedules. An application shows it
//! with any subscriber, e.g. `tracing_subscriber::fmt().with_env_filter("stencil=info")
//! .init()`. On a terminal, a tuning that lasts longer than [`PROGRESS_AFTER`] also shows a
//! progress line on standard error.
//!
//! The policy comes from the call ([`Launch::tune`](crate::Launch::tune)), else the process's
//! [`set_policy`], else `STENCIL_TUNE` (see [`stencil_tune::policy`](mod@stencil_tune::policy)
//! for its spellings; an unknown value warns once and means the default).

use std::cell::RefCell;

use stencil_core::{Backend, Element, Job, Result, Schedule, Stencil};
use stencil_cuda::{CudaDevice, DeviceGrid, GpuElement};
use stencil_tune::TuningCache;
use stencil_tune::engine::{self, Call, Target, TimeLoopTrials};

/// Tuning that lasts longer than this shows a progress line on a terminal's standard error.
pub use stencil_tune::engine::progress::PROGRESS_AFTER;
pub use stencil_tune::engine::{
    BANDWIDTH_FAR_OFF, CacheChoice, Comparison, MIN_TUNED_POINTS, MIN_TUNED_STEPS, PAIRED_RULE,
    PairedRule, TuneReport, TuningSource, budget_seconds,
};
/// The process-wide policy: [`set_policy`] overrides `STENCIL_TUNE` for every later call that
/// names no policy, and [`policy()`] is the policy such a call uses.
pub use stencil_tune::policy::{TunePolicy, policy, set_policy};
pub use winner::TOLERANCE_EPS as WINNER_TOLERANCE_EPS;

mod winner;

/// How a call is tuned: the policy and the cache (both default to the environment's).
pub(crate) type TuneSettings = engine::Settings;

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
/// # Errors
/// `VerificationFailed` when a tuned GPU winner and the default schedule both disagree with
/// the CPU backend on the call's data. Tuning itself does not fail.
pub(crate) fn choose<T: Element>(
    backend: &dyn Backend<T>,
    job: &mut Job<'_, T>,
    settings: &TuneSettings,
) -> Result<TuneReport> {
    let stencil = job.stencil();
    let kernel = job.kernel();
    let shape = job.shape().to_vec();
    ensure_caches(backend, kernel, &shape, settings);
    let target = Target {
        backend: backend.name(),
        device: backend.tuning_device(),
        default: backend.default_schedule(kernel, &shape),
        space: &|| backend.tuning_space(kernel, &shape),
        bandwidth: &|| backend.measure_bandwidth(),
        time_loop: None,
        spent_seconds: 0.0,
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
    let snapshot: RefCell<Option<Vec<Vec<T>>>> = RefCell::new(None);
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
    let job = RefCell::new(job);
    let check = !backend.capabilities().reference;
    let report = engine::choose(
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

/// Grids of fewer bytes in all do not need the machine's measured caches: every decision
/// they meet is the same whatever the last level holds.
pub const CACHES_MATTER_FROM_BYTES: usize = 4 << 20;

/// Makes `backend` size everything by the machine's measured cache capacities
/// ([`stencil_tune::engine::machine::caches`]: remembered, cached for a week, or measured
/// now by a working-set sweep of tens of milliseconds) before a call of `kernel` on `shape`
/// decides anything, when the backend has CPU caches to measure
/// ([`Backend::reported_caches`]) and the call's grids hold at least
/// [`CACHES_MATTER_FROM_BYTES`]. Under the `off` policy nothing is measured: a measurement
/// already cached is used, else the reported sizes stand.
pub(crate) fn ensure_caches<T: Element>(
    backend: &dyn Backend<T>,
    kernel: &stencil_core::Kernel,
    shape: &[usize],
    settings: &TuneSettings,
) {
    let bytes = shape.iter().product::<usize>() * kernel.fields.len() * kernel.elem().size_bytes();
    if bytes < CACHES_MATTER_FROM_BYTES {
        return;
    }
    let (Some(reported), Some((device, _))) = (backend.reported_caches(), backend.tuning_device())
    else {
        return;
    };
    let may_measure = settings.policy() != TunePolicy::Off;
    let cache = settings.cache();
    if let Some((sizes, _)) =
        engine::machine::caches(cache.as_ref(), &device, reported, may_measure)
    {
        backend.use_measured_caches(sizes);
    }
}

/// The schedule of a time loop of `stencil` on `backend` over an interior of `shape` (grids
/// padded by `padding` lines, in the kernel's field order) running `steps` steps: remembered,
/// cached or tuned now against the loop of plain steps under `sweep` (the single sweep's own
/// schedule, found `sweep_seconds` ago), `trial(schedule, n)` running `n` steps on copies of
/// the grids of the backend's [`steps_trial_shape`](Backend::steps_trial_shape), each
/// candidate as its [`steps_trial_schedule`](Backend::steps_trial_schedule) runs it there
/// (`false`: it failed). Keyed like a sweep's schedule plus the time loop's step-count class and the
/// sweep schedule.
///
/// Does not fail, as [`choose`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn choose_steps<T: Element>(
    backend: &dyn Backend<T>,
    stencil: &Stencil<T>,
    shape: &[usize],
    padding: &[usize],
    steps: usize,
    sweep: &TuneReport,
    settings: &TuneSettings,
    trial: &mut dyn FnMut(&Schedule, usize) -> bool,
) -> Result<TuneReport> {
    let kernel = stencil.kernel();
    let default = backend.default_schedule(kernel, shape);
    let class = stencil_core::time_loop::steps_class(steps);
    let trial_steps = stencil_core::time_loop::trial_steps(steps);
    let trial_shape = backend.steps_trial_shape(kernel, shape, &sweep.schedule);
    let target = Target {
        backend: format!(
            "{} (time loop, steps class {class}, sweep {})",
            backend.name(),
            sweep.description
        ),
        device: backend.tuning_device(),
        default,
        space: &|| backend.steps_tuning_space(kernel, shape, steps, &sweep.schedule),
        bandwidth: &|| backend.measure_bandwidth(),
        time_loop: Some(TimeLoopTrials {
            steps: trial_steps,
            scale: shape.iter().product::<usize>() as f64
                / trial_shape.iter().product::<usize>().max(1) as f64,
        }),
        spent_seconds: sweep.tuning_seconds,
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
    let mut report = engine::choose(
        &call,
        &target,
        settings,
        &mut |schedule| {
            trial(
                &backend.steps_trial_schedule(schedule, &trial_shape),
                trial_steps,
            )
        },
        &mut |_| Ok(()),
    )?;
    report.time_loop = true;
    report.tuning_seconds += sweep.tuning_seconds;
    report.trials += sweep.trials;
    Ok(report)
}

/// Tunes `stencil` on grids resident on `device` (or finds its schedule in the memo or the
/// cache), running trials with [`CudaDevice::run_at_step`] at step 0 on these very grids, and
/// returns the report; run the schedule with `device.run(.., &schedule)` (`run_at_step` for a
/// kernel that reads its step). Timing device-resident sweeps (the
/// device synchronised after each) measures the kernels alone, which trials through
/// [`CudaBackend`](crate::CudaBackend) on host grids cannot: those include uploads and
/// downloads. `policy` and `cache` default as for [`Launch::run`](crate::Launch::run).
///
/// # Errors
/// The errors of [`CudaDevice::run_at_step`] for a call that does not fit the kernel (checked
///   by one run of the default schedule first).
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
    device.run_at_step(stencil, inputs, outputs, params, 0, &default)?;
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
        spent_seconds: 0.0,
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
    engine::choose(
        &call,
        &target,
        &settings,
        &mut |schedule| match schedule {
            Schedule::Gpu(s) => {
                device
                    .run_at_step(stencil, inputs, outputs, params, 0, s)
                    .is_ok()
                    && device.synchronize().is_ok()
            }
            _ => false,
        },
        &mut |_| Ok(()),
    )
}
