//! The tuning engine: everything first-call tuning decides, behind closures that run a
//! schedule, so it is tested without a backend (the facade binds a call's grids to it).
//!
//! [`choose`] gives the schedule of a call, in order of preference:
//! 1. remembered from an earlier call of this process (kept in memory; no file access);
//! 2. read from the tuning cache (a *cache hit*);
//! 3. under the `off` policy, the performance model's choice, measuring nothing;
//! 4. otherwise decided now ([`decide()`]): a search for candidates under the policy's budget
//!    ([`budget_seconds`]), then paired comparisons against the default under one rule
//!    ([`PAIRED_RULE`]), whose evidence the [`TuneReport`] keeps; the winner goes to the
//!    cache.
//!
//! Interiors under [`MIN_TUNED_POINTS`] points are not tuned under `quick`, nor time loops of
//! fewer than [`MIN_TUNED_STEPS`] steps: they run the backend's default schedule.
//!
//! The machine's bandwidth, which the roofline model needs, is measured by the backend once
//! per device and thread count and kept in the cache file; it is measured again after seven
//! days, and when a tuned sweep beats it by more than [`BANDWIDTH_FAR_OFF`] (a measurement
//! taken under load). The machine's cache capacities are measured the same way
//! ([`machine`]).

pub mod decide;
mod locks;
pub mod machine;
pub mod paired;
pub mod progress;
mod quick;
mod report;
pub mod runs;
#[cfg(test)]
mod tests;

pub use decide::{DecidePlan, Decision, decide};
pub use paired::{Comparison, PAIRED_RULE, PairedRule};
pub use report::{TuneReport, TuningSource};
pub use runs::{MIN_SAMPLE_SECONDS, Runs, Sampler, TimedRuns};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use stencil_core::hash::KernelHash;
use stencil_core::schedule::TuningSpace;
use stencil_core::{ElemType, Error, ErrorKind, Kernel, Result, Schedule};

use crate::cache::{CacheKey, TunedEntry, TuningCache};
use crate::model::{BlockAxis, Roofline, RooflineModel};
use crate::policy::TunePolicy;
use locks::lock;
use progress::ProgressLine;

/// Interiors with fewer points are not tuned under the `quick` policy: their sweeps take
/// well under a millisecond, so trials would cost more than they could ever save.
pub const MIN_TUNED_POINTS: usize = 1 << 18;

/// Time loops of fewer steps are not tuned under `quick` (the tuning would cost more than
/// the steps): they run the backend's default schedule.
pub const MIN_TUNED_STEPS: usize = 8;

/// A tuned single sweep that moves its compulsory bytes this many times faster than the
/// cached bandwidth allows shows that the bandwidth was measured under load: the bandwidth
/// is measured again and cached, and the decision is made again against it.
pub const BANDWIDTH_FAR_OFF: f64 = 1.5;

/// Seconds a decision may take, per policy and kind of call: `quick` 1 s for a sweep and 2 s
/// for a time loop (its sweep's own tuning included), `thorough` 10 s, `exhaustive`
/// unlimited. The budget starts after the machine's measurements (bandwidth and caches, once
/// per machine a week), which a report's tuning time counts. A decision runs its default and baselines whatever the budget, so a sweep
/// slower than a tenth of the budget can overrun it; one cut short says so
/// ([`TuneReport::cut_short`]).
pub fn budget_seconds(policy: TunePolicy, time_loop: bool) -> Option<f64> {
    match policy {
        TunePolicy::Off => Some(0.0),
        TunePolicy::Quick if time_loop => Some(2.0),
        TunePolicy::Quick => Some(1.0),
        TunePolicy::Thorough => Some(10.0),
        TunePolicy::Exhaustive => None,
    }
}

/// Seed of the strategies' random choices: tuning is repeatable up to timing noise.
const SEED: u64 = 0x5354_454e_4349_4c31;

/// Nominal bandwidth for ranking candidates when none was measured (the ranking does not
/// depend on it unless the kernel is compute-bound).
const NOMINAL_BANDWIDTH: f64 = 1.0e11;

/// How a call is tuned: the policy and the cache (both default to the environment's).
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// The policy; `None`: the process's ([`policy`](crate::policy::policy)).
    pub policy: Option<TunePolicy>,
    /// The cache; `None`: the default file.
    pub cache: Option<CacheChoice>,
}

impl Settings {
    /// The policy in force for this call.
    pub fn policy(&self) -> TunePolicy {
        self.policy.unwrap_or_else(crate::policy)
    }

    /// The cache this call uses, if any.
    pub fn cache(&self) -> Option<TuningCache> {
        match &self.cache {
            Some(CacheChoice::Without) => None,
            Some(CacheChoice::At(c)) => Some(c.clone()),
            None => TuningCache::open_default().ok(),
        }
    }
}

/// Which tuning cache a call uses.
#[derive(Clone, Debug)]
pub enum CacheChoice {
    /// No file: tune every process anew.
    Without,
    /// This file.
    At(TuningCache),
}

/// The call being tuned, as the keys see it.
pub struct Call<'a> {
    /// The kernel.
    pub kernel: &'a Kernel,
    /// Its structural hash.
    pub hash: KernelHash,
    /// Whether the call takes a backend's path for kernels built at run time (the CPU's
    /// generic evaluator, for a stencil without a generated point loop): its best schedule
    /// is a different question, so it is keyed apart.
    pub run_time_path: bool,
    /// The interior's shape.
    pub shape: &'a [usize],
    /// Row padding of every grid (inputs, then outputs), in cache lines: padded grids have
    /// other strides, so their best schedule is keyed apart.
    pub padding: &'a [usize],
}

/// Where the call runs, as tuning sees it.
pub struct Target<'a> {
    /// Backend name, part of every key.
    pub backend: String,
    /// Device fingerprint and thread count; `None`: not tuned.
    pub device: Option<(String, usize)>,
    /// The schedule an untuned call runs.
    pub default: Schedule,
    /// The candidates (built only when needed).
    pub space: &'a dyn Fn() -> Option<TuningSpace>,
    /// Measures the device's bandwidth now.
    pub bandwidth: &'a dyn Fn() -> Option<f64>,
    /// For a time loop, how its trials run (see [`TimeLoopTrials`]).
    pub time_loop: Option<TimeLoopTrials>,
    /// Seconds already spent on this call's tuning elsewhere (a time loop's sweep), taken
    /// from its budget.
    pub spent_seconds: f64,
}

/// How a time loop's trials relate to the loop: each runs `steps` steps on grids of a part of
/// the loop's interior, `scale` times fewer points. A trial's time divided by `steps` and
/// multiplied by `scale` estimates the loop's time per step. The sweep's roofline bound
/// neither stops nor orders the search (temporal blocking can beat it), and the machine's
/// bandwidth is not measured for it (a cached measurement gives the report its fraction).
#[derive(Clone, Copy, Debug)]
pub struct TimeLoopTrials {
    /// Steps per trial.
    pub steps: usize,
    /// Points of the loop's interior over points of a trial's.
    pub scale: f64,
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

/// Chooses the schedule of `call` on `target` per the module documentation: `run` runs one
/// sweep (or one trial loop) under a schedule (`false`: it failed). A newly tuned winner
/// other than the default must pass `accept` (which may run it) before it is cached or
/// remembered; one that does not is reported in [`TuneReport::rejected`] and replaced by the
/// default, which must pass `accept` in turn.
///
/// # Errors
/// [`ErrorKind::VerificationFailed`] when the tuned winner and the default both fail
/// `accept`. Tuning itself does not fail.
pub fn choose(
    call: &Call<'_>,
    target: &Target<'_>,
    settings: &Settings,
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
    let policy = settings.policy();
    let n_points: usize = shape.iter().product();
    if policy == TunePolicy::Quick && n_points < MIN_TUNED_POINTS {
        return Ok(TuneReport::plain(
            TuningSource::Default,
            target.default,
            String::new(),
        ));
    }
    let cache = settings.cache();
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
        Some(entry) if space.schedule(&entry.point).is_some() => {
            cache_hit(&space, &entry, target.time_loop.is_some())
        }
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
                None => machine::bandwidth(target.bandwidth, cache.as_ref(), &device, threads),
            };
            // The decision's budget starts once the machine is measured (a machine's first
            // tuning measures its bandwidth and caches first; `tuning_seconds` counts it).
            let tuned = Tuning {
                kernel,
                shape: &shape,
                space: &space,
                target,
                policy,
                started,
                deciding: Instant::now(),
            };
            let (mut report, mut entry) = tuned.decide(measured, run);
            if let Some(cache) = &cache
                && target.time_loop.is_none()
                && report
                    .roofline_fraction
                    .is_some_and(|f| f > BANDWIDTH_FAR_OFF)
                && let Some(new) = (target.bandwidth)().filter(|b| b.is_finite() && *b > 0.0)
            {
                // A sweep this much faster than the bandwidth allows: the measurement was
                // taken under load. Measure again, cache it, and decide again against it.
                if let Err(e) = cache.store_bandwidth(&device, threads, new) {
                    tracing::warn!(target: "stencil::tuning", error = %e, "could not cache the measured bandwidth");
                }
                (report, entry) = tuned.decide(Some(new), run);
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
                cut_short = report.cut_short,
                schedule = %report.description,
                seconds_per_sweep = report.seconds_per_sweep,
                roofline_fraction = report.roofline_fraction,
                evidence = %report.evidence_summary(),
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

fn cache_hit(space: &TuningSpace, entry: &TunedEntry, time_loop: bool) -> TuneReport {
    let schedule = space.schedule(&entry.point).expect("checked by the caller");
    TuneReport {
        seconds_per_sweep: (entry.seconds > 0.0).then_some(entry.seconds),
        roofline_fraction: (entry.roofline_fraction > 0.0).then_some(entry.roofline_fraction),
        time_loop,
        ..TuneReport::plain(
            TuningSource::CacheHit,
            schedule,
            space.space().describe(&entry.point),
        )
    }
}

/// The roofline of `kernel` on `shape` with the space's block-size and store terms.
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
    let roofline = Roofline::for_kernel(
        kernel,
        n_points,
        bandwidth.unwrap_or(NOMINAL_BANDWIDTH),
        space.peak_flops,
    )
    .with_cache_fit(kernel, space.cache_bytes as f64, axes);
    match space.stores_dim {
        Some((dim, streaming)) => {
            roofline.with_stores(kernel, dim, streaming, space.largest_cache_bytes as f64)
        }
        None => roofline,
    }
}

/// The `off` policy: the legal point the model predicts fastest; `default` (what an untuned
/// call runs) when the model ranks the default point as fast, or finds no legal point.
fn model_choice(space: &TuningSpace, roofline: &Roofline, default: Schedule) -> TuneReport {
    let model = RooflineModel {
        roofline: roofline.clone(),
        space: space.space(),
    };
    let mut legality = Legality(space);
    let choice = crate::model_choice(space.space(), &mut legality, &model, SEED);
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

/// Legality only: what the model's choice consults (it measures nothing).
struct Legality<'a>(&'a TuningSpace);

impl crate::Measure for Legality<'_> {
    fn is_legal(&self, point: &[usize]) -> bool {
        self.0.schedule(point).is_some()
    }

    fn measure(&mut self, _point: &[usize], _best: Option<f64>) -> Option<crate::Trial> {
        None
    }
}

/// One tuning decision of a call.
struct Tuning<'a> {
    kernel: &'a Kernel,
    shape: &'a [usize],
    space: &'a TuningSpace,
    target: &'a Target<'a>,
    policy: TunePolicy,
    /// When the tuning began (machine measurements included).
    started: Instant,
    /// When the decision began: the clock of its budget.
    deciding: Instant,
}

impl Tuning<'_> {
    /// Decides against the bandwidth `measured`; the report and the cache entry of the
    /// winner (`None` when nothing could run).
    fn decide(
        &self,
        measured: Option<f64>,
        run: &mut dyn FnMut(&Schedule) -> bool,
    ) -> (TuneReport, Option<TunedEntry>) {
        let space = self.space;
        let roofline = roofline(space, self.kernel, self.shape, measured);
        // The sweep's bound (and the fraction of it) needs a measured bandwidth and a sweep
        // that memory bounds: one whose traffic is several times the largest cache.
        let traffic = roofline.bytes_per_point * roofline.n_points;
        let memory_bound = traffic > (4 * space.largest_cache_bytes) as f64;
        let fraction_known = measured.is_some() && memory_bound;
        // A trial's time over the loop's time per step (1 for a sweep).
        let per_step = self
            .target
            .time_loop
            .map_or(1.0, |t| t.steps as f64 / t.scale);
        let model = RooflineModel {
            roofline: roofline.clone(),
            space: space.space(),
        };
        // Samples settle (an untimed run of the same schedule first) when the call's grids
        // stay in cache between runs.
        let bytes: usize = self.shape.iter().product::<usize>()
            * self.kernel.fields.len()
            * self.kernel.elem().size_bytes();
        let settle = bytes <= 2 * space.largest_cache_bytes;
        let plan = DecidePlan {
            policy: self.policy,
            budget_seconds: budget_seconds(self.policy, self.target.time_loop.is_some())
                .map(|b| (b - self.target.spent_seconds).max(0.25 * b)),
            settle,
            seed: SEED,
        };
        let mut line = ProgressLine::new(self.kernel.name.clone(), self.started);
        // The time-loop model's times are a sweep's: it still orders the candidates.
        let decision = {
            let mut runs = TimedRuns::new(self.deciding, |p: &[usize]| {
                let ok = match space.schedule(p) {
                    Some(schedule) => run(&schedule),
                    None => false,
                };
                line.tick();
                ok
            });
            decide(space, Some(&model), &mut runs, &plan)
        };
        line.finish();
        let tuning_seconds = self.started.elapsed().as_secs_f64();
        match decision {
            Some(d) => {
                let schedule = space.schedule(&d.point).expect("decided points are legal");
                let seconds = d.seconds / per_step;
                let fraction = fraction_known.then(|| roofline.fraction_of_bound(seconds));
                let entry = TunedEntry {
                    point: d.point.clone(),
                    schedule: space.space().describe(&d.point),
                    seconds,
                    bytes_per_second: roofline.bytes_per_second(seconds),
                    roofline_fraction: fraction.unwrap_or(0.0),
                    trials: d.trials,
                    tuning_seconds,
                    spread: d.spread,
                }
                .sanitised();
                let report = TuneReport {
                    trials: d.trials,
                    tuning_seconds,
                    seconds_per_sweep: Some(seconds),
                    roofline_fraction: fraction,
                    time_loop: self.target.time_loop.is_some(),
                    evidence: d.evidence,
                    cut_short: d.cut_short,
                    ..TuneReport::plain(
                        TuningSource::Tuned,
                        schedule,
                        space.space().describe(&d.point),
                    )
                };
                (report, Some(entry))
            }
            None => (
                // Nothing could run: run the default and let it report its error.
                TuneReport {
                    tuning_seconds,
                    time_loop: self.target.time_loop.is_some(),
                    ..TuneReport::plain(TuningSource::Tuned, self.target.default, String::new())
                },
                None,
            ),
        }
    }
}
