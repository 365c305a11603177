//! [`Steps`]: a kernel run for many time steps in one call, its grids rotating between steps.
//!
//! A simulation applies one kernel thousands of times, each step's outputs becoming the next
//! step's inputs. Written by hand that is `run()` then `std::mem::swap` in a loop, which
//! streams every grid through memory once per step. `Steps` runs the loop itself, so a
//! backend may advance several steps per trip through memory (temporal blocking; on the CPU
//! see [`CpuBackend`]) and still leave what the hand-written loop leaves.
//!
//! # The rotation
//!
//! How grids move between steps is a list of *chains*, each an output followed by one or more
//! inputs: `out -> u` (a ping-pong: after a step `u` holds the new values, `out` the old
//! ones), `u_next -> u -> u_prev` (three time levels: after a step `u` holds the new values,
//! `u_prev` what `u` held, `u_next` what `u_prev` held, to be overwritten), one chain per
//! field of a system (`un -> u, vn -> v`). Inputs in no chain are read-only (coefficients);
//! outputs in no chain are written by every step. In `stencil!`, the attribute
//! `#[rotate(out -> u)]` declares the rotation and generates `kernel::steps(..)`, which takes
//! the kernel's arguments with every rotating grid borrowed mutably; kernels built at run time
//! name it with [`Steps::rotate`].
//!
//! # What a call leaves
//!
//! After [`run`](Steps::run)`(n)`, every grid, interior and halo, holds what it would hold
//! after `n` iterations of
//!
//! ```text
//! kernel(..).run()?;                 // the same grids and parameters
//! rotate each chain's grids          // for `out -> u`: std::mem::swap(&mut u, &mut out)
//! ```
//!
//! so the names of a chain's inputs hold the newest steps (`u` holds step `n`, a three-level
//! chain's `u_prev` step `n - 1`) and each grid keeps its boundary conditions with its data,
//! as `std::mem::swap` moves them. Every grid a step writes gets its halo filled from its own
//! boundary conditions after that step, as [`Launch::run`](crate::Launch::run) fills its
//! outputs' halos; grids no step wrote (a chain of `L` grids run fewer than `L - 1` steps)
//! are not touched. Parameters are those bound, for every step, unless an
//! [`every`](Steps::every) callback changes them.
//!
//! The values are the same bits as the hand-written loop's when each of its `run()`s uses
//! the schedule the time loop runs (the schedule's fields for sweeps: tiles along the
//! unit-stride dimension, row blocks, the generic path; the time-loop fields play no part in
//! a sweep), and under any schedule for every kernel whose CPU loop computes each point in the
//! order the reference interpreter does. That is every kernel but those whose generated loop
//! is *retimed* (linear kernels whose partial sums are shared along a row, such as the
//! 27-point stencil): they add the same terms in another order, and which points take the
//! vector path depends on where rows are cut, so under another schedule their last bits may
//! differ (as two `run()`s under two schedules may).
//!
//! # Tuning
//!
//! Without [`schedule`](Steps::schedule), the first call of a kernel on a shape tunes the time
//! loop's schedule (on the CPU: how many steps run per trip through memory, and the slab
//! thickness and blocks they run on) or finds it in the tuning cache, as single sweeps are
//! tuned ([`crate::tuning`]); its key also holds the class of the step count
//! ([`steps_class`](stencil_core::time_loop::steps_class): fewer than 8, 64, 512 steps, or
//! more), since the best blocking depends on it, and the single sweep's schedule. First the
//! loop's single sweep is tuned (or found) on the first step's own job, which writes only the
//! grids that step overwrites; then the blocked schedules are compared, in paired rounds,
//! with the loop of plain steps under that sweep schedule (the backend's
//! [baseline](stencil_core::schedule::TuningSpace::baselines)), so the tuned loop is never
//! slower than `run()` and swap under the tuned sweep, within the rule's noise margin. The
//! loop's trials run on copies of the grids' leading planes of the outer dimension (as many
//! as the backend's [`steps_trial_shape`](Backend::steps_trial_shape) asks for), so tuning
//! never changes the simulation; `quick` spends at most about 2 s on both
//! ([`budget_seconds`](crate::tuning::budget_seconds); trials of
//! [`trial_steps`](stencil_core::time_loop::trial_steps) steps: 16 for calls of 64 steps or
//! more, else 8). Interiors under [`MIN_TUNED_POINTS`](crate::tuning::MIN_TUNED_POINTS)
//! points and calls of fewer than 8 steps are not tuned under `quick`.

use std::ops::ControlFlow;
use std::time::Instant;

use stencil_core::grid::{Grid, Side};
use stencil_core::time_loop::WrittenGrid;
use stencil_core::{
    Backend, Element, Error, ErrorKind, FieldId, Kernel, Result, Role, Rotation, Schedule, Stencil,
    TimeLoop,
};
use stencil_cpu::CpuBackend;
use stencil_tune::{TunePolicy, TuningCache};

use crate::distribution::Distribution;
use crate::loop_grid::LoopGrid;
use crate::tuning::{self, CacheChoice, TuneReport, TuneSettings};

/// A time loop of a kernel: its grids, parameters, rotation, and optionally where and how to
/// run it. Nothing happens until [`run`](Steps::run). See the [module documentation](self).
#[must_use = "Steps does nothing until `.run(n)` is called"]
pub struct Steps<'g, T: Element, const D: usize> {
    stencil: &'g Stencil<T>,
    chains: Vec<Vec<String>>,
    /// Per kernel field (declaration order).
    grids: Vec<Option<LoopGrid<'g, T, D>>>,
    params: Vec<Option<T>>,
    backend: Option<&'g dyn Backend<T>>,
    schedule: Option<Schedule>,
    tune: TuneSettings,
    every: Option<Every<'g, T, D>>,
    /// The ranks' domain, for a time loop on distributed grids.
    across: Option<&'g dyn Distribution<T, D>>,
    error: Option<Error>,
}

/// What [`Steps::every`] calls back, and how often.
struct Every<'g, T: Element, const D: usize> {
    interval: usize,
    callback: Callback<'g, T, D>,
}

/// A [`Steps::every`] callback.
type Callback<'g, T, const D: usize> =
    Box<dyn FnMut(&mut LoopState<'_, T, D>) -> Result<ControlFlow<()>> + 'g>;

/// The state of a time loop between steps, as a [`Steps::every`] callback sees it: every grid
/// by its name in the kernel (holding what the names hold after the steps so far, per the
/// rotation), which it may read, and write where the loop was given it mutably
/// ([`grid_mut`](Self::grid_mut)), and the parameters, which it may change for the steps that
/// follow.
pub struct LoopState<'s, T: Element, const D: usize> {
    kernel: &'s Kernel,
    step: usize,
    grids: Vec<StateGrid<'s, T, D>>,
    /// Per grid: whether the callback borrowed it mutably.
    written: Vec<bool>,
    params: &'s mut [T],
}

/// A grid as a callback holds it: read only, or also writable.
enum StateGrid<'s, T: Element, const D: usize> {
    Read(&'s Grid<T, D>),
    Write(&'s mut Grid<T, D>),
}

impl<T: Element, const D: usize> LoopState<'_, T, D> {
    /// Steps done so far by this call of [`Steps::run`].
    pub fn step(&self) -> usize {
        self.step
    }

    /// The grid the kernel names `name`, or `None` when it has no such grid.
    pub fn grid(&self, name: &str) -> Option<&Grid<T, D>> {
        let field = self.kernel.field_by_name(name)?;
        Some(match &self.grids[field.index()] {
            StateGrid::Read(g) => g,
            StateGrid::Write(g) => g,
        })
    }

    /// The grid the kernel names `name`, to change (a perturbation, a source written by
    /// hand, a reset). After the callback returns, the loop brings the halo of every grid
    /// borrowed here up to date from its boundary conditions ([`Grid::refresh_halo`]: faces
    /// that depend on the interior are filled again, `Dirichlet` faces keep their values,
    /// halo points of `UserManaged` faces keep what the callback wrote), so the next step reads
    /// what a `run()` after the same change would read.
    ///
    /// # Errors
    /// [`ErrorKind::BadArgument`] when the kernel has no grid `name`, or the loop was given it
    /// read only ([`Steps::input`]).
    pub fn grid_mut(&mut self, name: &str) -> Result<&mut Grid<T, D>> {
        let kernel = self.kernel;
        let field = kernel.field_by_name(name).ok_or_else(|| {
            Error::new(
                ErrorKind::BadArgument,
                format!("kernel `{}` has no grid `{name}`", kernel.name),
            )
        })?;
        match &mut self.grids[field.index()] {
            StateGrid::Write(g) => {
                self.written[field.index()] = true;
                Ok(g)
            }
            StateGrid::Read(_) => Err(Error::new(
                ErrorKind::BadArgument,
                format!(
                    "kernel `{}`: grid `{name}` was given to the loop read only (`input`), so a \
                     callback cannot change it",
                    kernel.name
                ),
            )),
        }
    }

    /// The value of parameter `name`, or `None` when the kernel has no such parameter.
    pub fn param(&self, name: &str) -> Option<T> {
        let p = self.kernel.param_by_name(name)?;
        Some(self.params[p.index()])
    }

    /// Sets parameter `name` for the steps that follow.
    ///
    /// # Errors
    /// [`ErrorKind::BadArgument`] when the kernel has no parameter `name`.
    pub fn set_param(&mut self, name: &str, value: T) -> Result<()> {
        let p = self.kernel.param_by_name(name).ok_or_else(|| {
            Error::new(
                ErrorKind::BadArgument,
                format!("kernel `{}` has no parameter `{name}`", self.kernel.name),
            )
        })?;
        self.params[p.index()] = value;
        Ok(())
    }
}

/// What a call of [`Steps::run`] did.
#[derive(Clone, Debug)]
pub struct LoopReport {
    /// Steps run (the count asked for, unless a callback stopped the loop).
    pub steps: usize,
    /// Whether a callback stopped the loop early.
    pub stopped: bool,
    /// Where the time loop's schedule came from, and the schedule (see [`TuneReport`];
    /// `seconds_per_sweep` there is per step).
    pub tuning: TuneReport,
    /// Wall-clock seconds of the steps (tuning and callbacks excluded).
    pub seconds: f64,
}

impl<'g, T: Element, const D: usize> Steps<'g, T, D> {
    /// A time loop of `stencil` with no grids, parameters or rotation yet: give them with
    /// [`rotate`](Self::rotate), [`grid`](Self::grid), [`input`](Self::input) and
    /// [`param`](Self::param).
    pub fn new(stencil: &'g Stencil<T>) -> Self {
        let kernel = stencil.kernel();
        let mut steps = Steps {
            stencil,
            chains: Vec::new(),
            grids: (0..kernel.fields.len()).map(|_| None).collect(),
            params: vec![None; kernel.params.len()],
            backend: None,
            schedule: None,
            tune: TuneSettings::default(),
            every: None,
            across: None,
            error: None,
        };
        if kernel.n_dims != D {
            steps.error = Some(Error::new(
                ErrorKind::DimensionMismatch,
                format!(
                    "kernel `{}` is {}-D but is stepped on {D}-D grids",
                    kernel.name, kernel.n_dims
                ),
            ));
        }
        steps
    }

    /// A fully bound time loop; used by the code `stencil!` generates for kernels with a
    /// `#[rotate(..)]` attribute (grids in the kernel's declaration order).
    #[doc(hidden)]
    pub fn from_macro(
        stencil: &'g Stencil<T>,
        chains: &[&[&str]],
        grids: Vec<LoopGrid<'g, T, D>>,
        params: Vec<T>,
    ) -> Self {
        let mut steps = Steps::new(stencil);
        steps.chains = chains
            .iter()
            .map(|c| c.iter().map(|s| s.to_string()).collect())
            .collect();
        steps.grids = grids.into_iter().map(Some).collect();
        steps.params = params.into_iter().map(Some).collect();
        steps
    }

    /// Adds a chain of the rotation: an output, then the inputs it becomes, newest first
    /// (`["out", "u"]` for a ping-pong, `["u_next", "u", "u_prev"]` for three levels).
    /// Checked when the loop runs.
    pub fn rotate<S: AsRef<str>>(mut self, chain: &[S]) -> Self {
        self.chains
            .push(chain.iter().map(|s| s.as_ref().to_string()).collect());
        self
    }

    /// Binds the grid named `name`: one that rotates, or an output.
    pub fn grid(mut self, name: &str, grid: &'g mut Grid<T, D>) -> Self {
        match self.stencil.kernel().field_by_name(name) {
            Some(field) => self.bind(field, name, LoopGrid::Write(grid)),
            None => {
                let e = self.unknown(name, "grid");
                self.fail(e);
            }
        }
        self
    }

    /// Binds the input named `name`, which does not rotate (a coefficient), read only.
    pub fn input(mut self, name: &str, grid: &'g Grid<T, D>) -> Self {
        match self.stencil.kernel().field_by_name(name) {
            Some(field) => self.bind(field, name, LoopGrid::Read(grid)),
            None => {
                let e = self.unknown(name, "grid");
                self.fail(e);
            }
        }
        self
    }

    /// Binds parameter `name` to `value` (for every step, unless a callback changes it).
    pub fn param(mut self, name: &str, value: T) -> Self {
        match self.stencil.kernel().param_by_name(name) {
            Some(p) if self.params[p.index()].is_some() => {
                self.fail(Error::new(
                    ErrorKind::BadArgument,
                    format!(
                        "kernel `{}`: parameter `{name}` is given twice",
                        self.stencil.kernel().name
                    ),
                ));
            }
            Some(p) => self.params[p.index()] = Some(value),
            None => {
                let e = self.unknown(name, "parameter");
                self.fail(e);
            }
        }
        self
    }

    /// Runs on `backend` instead of the default (the global CPU backend).
    pub fn on(mut self, backend: &'g dyn Backend<T>) -> Self {
        self.backend = Some(backend);
        self
    }

    /// Runs under `schedule`: no tuning, no cache. On the CPU,
    /// [`CpuSchedule::time_depth`](crate::CpuSchedule::time_depth) and
    /// [`time_slab`](crate::CpuSchedule::time_slab) pin the temporal blocking.
    pub fn schedule(mut self, schedule: Schedule) -> Self {
        self.schedule = Some(schedule);
        self
    }

    /// Tunes under `policy` instead of the process's policy (see [`crate::tuning`]).
    pub fn tune(mut self, policy: TunePolicy) -> Self {
        self.tune.policy = Some(policy);
        self
    }

    /// Reads and stores tuned schedules in `cache` instead of the default cache file.
    pub fn tuning_cache(mut self, cache: TuningCache) -> Self {
        self.tune.cache = Some(CacheChoice::At(cache));
        self
    }

    /// Runs the time loop on grids distributed over MPI ranks (feature `mpi`): the bound
    /// grids are this rank's local grids of `domain` (from
    /// [`Domain::grid`](crate::mpi::Domain::grid)), every rank runs the same call, and the
    /// owned boxes end as one process's grids would (see [`crate::mpi`]).
    ///
    /// Before the first step and then every `ghost / radius` steps (every step with a ghost
    /// depth of 0), the grids the next step reads are exchanged: every chain's inputs, and
    /// at the start the coefficients bound with [`grid`](Self::grid). Coefficients bound
    /// read-only with [`input`](Self::input) cannot be exchanged by the loop: give them their
    /// halo first ([`Domain::exchange`](crate::mpi::Domain::exchange), which
    /// [`fill_with`](crate::mpi::Domain::fill_with) and
    /// [`scatter`](crate::mpi::Domain::scatter) call). Between exchanges the local loop
    /// applies the grids' boundary conditions on the faces of the global interior only.
    /// With a ghost depth of 0, on a backend that runs regions (the CPU backend), each step
    /// after the first overlaps its exchange with the sweep of the owned box's inner part and
    /// sweeps the shell once the halo has arrived. After the call, the owned boxes hold the
    /// result; ghost zones and halos beyond rank faces are stale until the next exchange. The
    /// schedule is tuned (or found in the cache) by the lowest rank of every group of ranks
    /// with the same local shape, and shared with the group.
    ///
    /// [`run`](Self::run) then also fails with [`ErrorKind::BadArgument`] when the domain's
    /// ghost depth is neither 0 nor at least the kernel's radius, and with the errors of
    /// [`Domain::exchange`](crate::mpi::Domain::exchange) for grids that are not the
    /// domain's. A [`every`](Self::every) callback sees the local grids, and the stop
    /// decision is collective: when the callback returns [`ControlFlow::Break`] on any rank,
    /// every rank stops after that round (so a callback may decide on its rank's data alone).
    #[cfg(feature = "mpi")]
    pub fn across(mut self, domain: &'g crate::mpi::Domain<D>) -> Self
    where
        T: crate::mpi::MpiElement,
    {
        self.across = Some(domain);
        self
    }

    /// Uses no tuning cache file: the schedule is tuned once per process.
    pub fn without_tuning_cache(mut self) -> Self {
        self.tune.cache = Some(CacheChoice::Without);
        self
    }

    /// Calls `callback` after every `interval` steps (and not after the last step unless it
    /// ends an interval), with the grids and parameters as they are then
    /// ([`LoopState`]); returning [`ControlFlow::Break`] stops the loop there. Steps between
    /// callbacks still run blocked. An `interval` of 0 makes [`run`](Self::run) fail with
    /// [`ErrorKind::BadArgument`].
    ///
    /// Across MPI ranks (`across`, feature `mpi`) every rank calls its callback after the
    /// same steps, and the loop stops on every rank when the callback of any rank breaks: the
    /// ranks combine their decisions after each round of callbacks (one all-reduce), so a
    /// callback that decides on its rank's local data (a residual, a blow-up) never stops one
    /// rank alone and leaves the others waiting in the next exchange. Every rank's
    /// [`LoopReport`] then has the same `steps` and `stopped`.
    pub fn every(
        self,
        interval: usize,
        mut callback: impl FnMut(&mut LoopState<'_, T, D>) -> ControlFlow<()> + 'g,
    ) -> Self {
        self.try_every(interval, move |state| Ok(callback(state)))
    }

    /// As [`every`](Self::every), with a callback that may fail: an `Err` (a failed
    /// [`LoopState::set_param`] or [`LoopState::grid_mut`] passed on with `?`, or the
    /// callback's own) stops the loop after the steps done so far, which stay done and rotated
    /// as after a break, and [`run`](Self::run) returns that error. Across MPI ranks the other
    /// ranks stop there too, as after a break on one rank.
    pub fn try_every(
        mut self,
        interval: usize,
        callback: impl FnMut(&mut LoopState<'_, T, D>) -> Result<ControlFlow<()>> + 'g,
    ) -> Self {
        if interval == 0 {
            self.fail(Error::new(
                ErrorKind::BadArgument,
                "a callback every 0 steps: the interval must be at least 1",
            ));
        }
        self.every = Some(Every {
            interval,
            callback: Box::new(callback),
        });
        self
    }

    /// Runs `steps` steps (none for 0), then leaves every grid as the module documentation
    /// says. Without [`schedule`](Self::schedule), the first call on a shape tunes or finds
    /// the schedule in the tuning cache. If a step fails, the grids still hold a consistent
    /// state: the steps done before the failure, rotated.
    ///
    /// # Errors
    /// - [`ErrorKind::BadArgument`]: a grid or parameter unbound, unknown or given twice; a
    ///   rotation that names no chain, a field that is not in the kernel, an input first or
    ///   an output after the first entry of a chain, a field twice; a rotating grid or an
    ///   output bound read-only (use [`grid`](Self::grid)); a callback interval of 0; a
    ///   kernel that reads its point's indices run `across` MPI ranks (feature `mpi`; each
    ///   rank would see its own box's indices, not the global ones). (An unknown
    ///   `STENCIL_TUNE` is no error: it warns once and means the default policy.)
    /// - [`ErrorKind::DimensionMismatch`], [`ErrorKind::ShapeMismatch`]: grids of another
    ///   dimension count or interior shape than the kernel's or each other's.
    /// - [`ErrorKind::HaloTooNarrow`]: a grid's halo is narrower than its own reach, the rule
    ///   of [`Launch::run`](crate::Launch::run): a coefficient's against the kernel's reads of
    ///   it (a coefficient read only at its own point needs no halo), a rotating grid's
    ///   against the reads of every field of its chain (it plays each in turn); outputs in no
    ///   chain need none.
    /// - [`ErrorKind::StaleHalo`]: a grid the first step reads changed since its halo was
    ///   filled and one of its boundary conditions depends on the interior.
    /// - [`ErrorKind::AliasedGrids`]: a grid the loop writes shares storage with another.
    /// - Backend errors.
    pub fn run(mut self, steps: usize) -> Result<LoopReport> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let stencil = self.stencil;
        let kernel = stencil.kernel();
        let rotation = Rotation::new(kernel, &self.chains)?;
        if self.across.is_some() {
            crate::distribution::refuse_indices_across(
                kernel,
                &format!("kernel `{}`", kernel.name),
            )?;
        }
        let params = self.bound_params()?;
        self.check_grids(&rotation)?;
        let backend: &dyn Backend<T> = match self.backend {
            Some(b) => b,
            None => CpuBackend::global(),
        };
        // Steps per halo exchange on distributed grids (all of them otherwise).
        let per_exchange = match self.across {
            Some(across) => across.steps_per_exchange(kernel)?,
            None => usize::MAX,
        };
        let tuning = match (self.schedule, self.across) {
            (Some(schedule), _) => {
                TuneReport::plain(tuning::TuningSource::Given, schedule, String::new())
            }
            (None, None) => self.choose(&rotation, &params, backend, steps)?,
            (None, Some(across)) => {
                let shape: Vec<usize> = grid_ref(&self.grids[0]).shape().to_vec();
                // Tuned for the whole call's step count (which sets how deep the trials may
                // block), as on one process; each local call then runs up to `per_exchange`.
                let per_call = steps;
                across.share_tuning(&shape, &mut || {
                    self.choose(&rotation, &params, backend, per_call)
                })?
            }
        };
        let mut params = params;
        let mut done = 0;
        let mut stopped = false;
        let mut seconds = 0.0;
        let mut every = self.every.take();
        let mut since_callback = 0;
        while done < steps && !stopped {
            let chunk = every
                .as_ref()
                .map_or(steps - done, |e| {
                    (e.interval - since_callback).min(steps - done)
                })
                .min(per_exchange);
            let timer = Instant::now();
            // The overlapped step runs its own jobs, at step 0: a kernel that reads the step
            // takes the exchange-then-step path.
            let overlap = done > 0
                && per_exchange == 1
                && backend.capabilities().regions
                && !kernel.reads_step();
            let result = match self.across {
                Some(across) if overlap => {
                    match across.overlapped_step(
                        stencil,
                        &rotation,
                        &mut self.grids,
                        &params,
                        backend,
                        &tuning.schedule,
                    ) {
                        Some(result) => {
                            if result.is_ok() {
                                self.rotate_grids(&rotation, 1);
                            }
                            (usize::from(result.is_ok()), result)
                        }
                        None => {
                            across.exchange_grids(kernel, &rotation, &mut self.grids, false)?;
                            self.run_chunk(
                                &rotation,
                                &params,
                                backend,
                                &tuning.schedule,
                                [done, chunk],
                            )
                        }
                    }
                }
                Some(across) => {
                    across.exchange_grids(kernel, &rotation, &mut self.grids, done == 0)?;
                    self.run_chunk(&rotation, &params, backend, &tuning.schedule, [done, chunk])
                }
                None => {
                    self.run_chunk(&rotation, &params, backend, &tuning.schedule, [done, chunk])
                }
            };
            seconds += timer.elapsed().as_secs_f64();
            let ran = match result {
                (ran, Ok(())) => ran,
                (_, Err(e)) => return Err(e),
            };
            done += ran;
            since_callback += ran;
            if let Some(every) = &mut every
                && since_callback == every.interval
            {
                since_callback = 0;
                let mut state = LoopState {
                    kernel,
                    step: done,
                    grids: self
                        .grids
                        .iter_mut()
                        .map(|g| match g {
                            Some(LoopGrid::Write(g)) => StateGrid::Write(&mut **g),
                            Some(LoopGrid::Read(g)) => StateGrid::Read(&**g),
                            None => unreachable!("stencil steps: bound before the loop"),
                        })
                        .collect(),
                    written: vec![false; kernel.fields.len()],
                    params: &mut params,
                };
                let outcome = (every.callback)(&mut state);
                let written = state.written;
                // The halos of the grids the callback may have changed, from their conditions.
                for (grid, _) in self.grids.iter_mut().zip(&written).filter(|(_, w)| **w) {
                    if let Some(LoopGrid::Write(grid)) = grid {
                        grid.refresh_halo();
                    }
                }
                let failed = outcome.as_ref().err().cloned();
                stopped = outcome.map_or(true, |flow| flow.is_break());
                // Across ranks every rank stops when any does: a rank that stopped alone
                // would leave the others waiting in the next exchange.
                if let Some(across) = self.across {
                    stopped = across.any_rank(stopped);
                }
                if let Some(e) = failed {
                    return Err(e);
                }
            }
        }
        Ok(LoopReport {
            steps: done,
            stopped,
            tuning,
            seconds,
        })
    }

    /// Runs `steps` steps from the grids as they are, numbered from `first` (the steps done
    /// before), then rotates them so their names hold what they should and refreshes their
    /// halos: the steps done and the backend's result.
    fn run_chunk(
        &mut self,
        rotation: &Rotation,
        params: &[T],
        backend: &dyn Backend<T>,
        schedule: &Schedule,
        [first, steps]: [usize; 2],
    ) -> (usize, Result<()>) {
        let (done, result) = {
            let mut job = match self.job(rotation, params) {
                Ok(job) => job.from_step(first),
                Err(e) => return (0, Err(e)),
            };
            let result = backend.run_steps(&mut job, schedule, steps);
            (job.done(), result)
        };
        self.rotate_grids(rotation, done);
        (done, result)
    }

    /// The validated job over the bound grids, as they are.
    fn job<'s>(&'s mut self, rotation: &Rotation, params: &[T]) -> Result<TimeLoop<'s, T>> {
        let kernel = self.stencil.kernel();
        let across = self.across;
        let written_grid = |grid: &'s mut Grid<T, D>| written_grid(grid, across);
        let mut chain_grids: Vec<Vec<Option<WrittenGrid<'_, T>>>> = rotation
            .chains()
            .iter()
            .map(|c| (0..c.len()).map(|_| None).collect())
            .collect();
        let mut coefficients = Vec::new();
        let mut lone = Vec::new();
        for (i, slot) in self.grids.iter_mut().enumerate() {
            let field = FieldId::new(i);
            let role = kernel.field(field).role;
            let Some(slot) = slot else {
                unreachable!("stencil steps: bindings checked before the job")
            };
            match (rotation.position(field), role, slot) {
                (Some((c, p)), _, LoopGrid::Write(grid)) => {
                    chain_grids[c][p] = Some(written_grid(grid));
                }
                (None, Role::Output, LoopGrid::Write(grid)) => lone.push(written_grid(grid)),
                (None, Role::Input, LoopGrid::Write(grid)) => coefficients.push(grid.view()),
                (None, _, LoopGrid::Read(grid)) => coefficients.push(grid.view()),
                _ => unreachable!("stencil steps: bindings checked before the job"),
            }
        }
        let chains = chain_grids
            .into_iter()
            .map(|c| c.into_iter().map(|g| g.expect("checked")).collect())
            .collect();
        TimeLoop::new(
            self.stencil,
            rotation.clone(),
            chains,
            coefficients,
            lone,
            params.to_vec(),
        )
    }

    /// Rotates each chain's grids by `done` steps (see [`TimeLoop`]) and marks the halo of
    /// every grid the loop wrote as filled.
    fn rotate_grids(&mut self, rotation: &Rotation, done: usize) {
        for chain in rotation.chains() {
            let len = chain.len();
            for _ in 0..done % len {
                // One step of rotation: the grid at position p takes what position p - 1 held.
                for p in (1..len).rev() {
                    let (low, high) = self
                        .grids
                        .split_at_mut(chain[p].index().max(chain[p - 1].index()));
                    let (a, b) = if chain[p].index() > chain[p - 1].index() {
                        (&mut high[0], &mut low[chain[p - 1].index()])
                    } else {
                        (&mut low[chain[p].index()], &mut high[0])
                    };
                    if let (Some(LoopGrid::Write(a)), Some(LoopGrid::Write(b))) = (a, b) {
                        std::mem::swap(&mut **a, &mut **b);
                    }
                }
            }
        }
        if done == 0 {
            return;
        }
        // The steps filled the halo of every grid they wrote; this sets those grids' halo
        // state as `run()` leaves its outputs'. After the rotation a chain's grids at
        // positions 1..=min(done, L - 1) hold steps, and position 0 does once `done >= L`.
        let kernel = self.stencil.kernel();
        for (i, slot) in self.grids.iter_mut().enumerate() {
            let written = match rotation.position(FieldId::new(i)) {
                Some((c, p)) => {
                    let len = rotation.chains()[c].len();
                    (1..=done.min(len - 1)).contains(&p) || (p == 0 && done >= len)
                }
                None => kernel.fields[i].role == Role::Output,
            };
            if let (true, Some(LoopGrid::Write(grid))) = (written, slot) {
                grid.mark_halo_filled();
            }
        }
    }

    /// Every parameter's value.
    fn bound_params(&self) -> Result<Vec<T>> {
        let kernel = self.stencil.kernel();
        self.params
            .iter()
            .zip(&kernel.params)
            .map(|(v, p)| {
                v.ok_or_else(|| {
                    Error::new(
                        ErrorKind::BadArgument,
                        format!(
                            "kernel `{}`: parameter `{}` is not bound",
                            kernel.name, p.name
                        ),
                    )
                })
            })
            .collect()
    }

    /// Checks that every grid is bound as the rotation needs and that the grids the first
    /// step reads have current halos.
    fn check_grids(&self, rotation: &Rotation) -> Result<()> {
        let kernel = self.stencil.kernel();
        for (i, (slot, field)) in self.grids.iter().zip(&kernel.fields).enumerate() {
            let name = &field.name;
            let position = rotation.position(FieldId::new(i));
            let Some(grid) = slot else {
                return Err(Error::new(
                    ErrorKind::BadArgument,
                    format!("kernel `{}`: grid `{name}` is not bound", kernel.name),
                ));
            };
            let written = position.is_some() || field.role == Role::Output;
            if written && matches!(grid, LoopGrid::Read(_)) {
                return Err(Error::new(
                    ErrorKind::BadArgument,
                    format!(
                        "kernel `{}`: grid `{name}` is written by the time loop; bind it with \
                         `grid` (mutably), not `input`",
                        kernel.name
                    ),
                ));
            }
            let read_first = field.role == Role::Input;
            if read_first && grid_ref(slot).halo_is_stale() {
                return Err(Error::new(
                    ErrorKind::StaleHalo,
                    format!(
                        "kernel `{}`: the interior of `{name}` changed since its halo was \
                         filled and its boundary conditions depend on the interior; call \
                         `update_halo()` on it first",
                        kernel.name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The schedule of this time loop on `backend`: remembered, cached or tuned now (on
    /// copies of the grids).
    fn choose(
        &mut self,
        rotation: &Rotation,
        params: &[T],
        backend: &dyn Backend<T>,
        steps: usize,
    ) -> Result<TuneReport> {
        let shape: Vec<usize> = grid_ref(&self.grids[0]).shape().to_vec();
        let padding: Vec<usize> = self.grids.iter().map(|g| grid_ref(g).padding()).collect();
        let kernel = self.stencil.kernel();
        tuning::ensure_caches(backend, kernel, &shape, &self.tune);
        if self.tune.policy() == TunePolicy::Quick && steps < tuning::MIN_TUNED_STEPS {
            return Ok(TuneReport::plain(
                tuning::TuningSource::Default,
                backend.default_schedule(kernel, &shape),
                String::new(),
            ));
        }
        // The single sweep's schedule, tuned (or found) on the first step's own job: it
        // writes only the grids that step overwrites.
        let settings = self.tune.clone();
        let sweep = {
            let mut job = self.job(rotation, params)?;
            job.next_step_job(|job| tuning::choose(backend, job, &settings))??
        };
        // Trials run on copies of the leading planes of every grid (as many as the backend
        // asks for), so they never change the simulation and cost a fraction of its steps.
        let trial_shape = backend.steps_trial_shape(kernel, &shape, &sweep.schedule);
        let mut copies: Vec<Grid<T, D>> = Vec::new();
        let setup = |copies: &mut Vec<Grid<T, D>>| -> Result<()> {
            if copies.is_empty() {
                for slot in &self.grids {
                    copies.push(leading_planes(grid_ref(slot), trial_shape[0])?);
                }
            }
            Ok(())
        };
        let stencil = self.stencil;
        let grids = &self.grids;
        let mut trial = |schedule: &Schedule, trial_steps: usize| -> bool {
            if setup(&mut copies).is_err() {
                return false;
            }
            let mut shadow = Steps::<T, D>::new(stencil);
            shadow.grids = grids
                .iter()
                .zip(copies.iter_mut())
                .map(|(slot, copy)| match slot {
                    Some(LoopGrid::Write(_)) => Some(LoopGrid::Write(copy)),
                    _ => Some(LoopGrid::Read(&*copy)),
                })
                .collect();
            let (_, result) =
                shadow.run_chunk(rotation, params, backend, schedule, [0, trial_steps]);
            result.is_ok()
        };
        tuning::choose_steps(
            backend, stencil, &shape, &padding, steps, &sweep, &self.tune, &mut trial,
        )
    }

    fn bind(&mut self, field: FieldId, name: &str, grid: LoopGrid<'g, T, D>) {
        let slot = &mut self.grids[field.index()];
        if slot.is_some() {
            let e = Error::new(
                ErrorKind::BadArgument,
                format!(
                    "kernel `{}`: grid `{name}` is given twice",
                    self.stencil.kernel().name
                ),
            );
            self.fail(e);
        } else {
            *slot = Some(grid);
        }
    }

    fn fail(&mut self, error: Error) {
        self.error.get_or_insert(error);
    }

    fn unknown(&self, name: &str, what: &str) -> Error {
        Error::new(
            ErrorKind::BadArgument,
            format!(
                "kernel `{}` has no {what} `{name}`",
                self.stencil.kernel().name
            ),
        )
    }
}

/// The grid behind a bound slot (checked bound before use).
fn grid_ref<'s, T: Element, const D: usize>(
    slot: &'s Option<LoopGrid<'_, T, D>>,
) -> &'s Grid<T, D> {
    match slot {
        Some(LoopGrid::Read(g)) => g,
        Some(LoopGrid::Write(g)) => g,
        None => unreachable!("stencil steps: every grid is bound before it is read"),
    }
}

/// A copy of the first `planes` planes of dimension 0 of `grid` (all of it when it has no
/// more), in the same layout and with the same boundary conditions, halo filled.
fn leading_planes<T: Element, const D: usize>(
    grid: &Grid<T, D>,
    planes: usize,
) -> Result<Grid<T, D>> {
    let mut shape = grid.shape();
    if planes >= shape[0] {
        return grid.repadded(grid.padding());
    }
    shape[0] = planes;
    let mut copy = Grid::with_padding(shape, grid.halo(), grid.padding())?;
    copy.fill_with(|p| grid[p]);
    for (d, faces) in grid.boundaries().iter().enumerate() {
        for (side, &face) in [Side::Low, Side::High].into_iter().zip(faces) {
            copy.set_face_boundary(d, side, face)?;
        }
    }
    Ok(copy)
}

/// A written grid as the job sees it: its storage (marked as written) and its faces (on
/// distributed grids, those that apply on this rank).
fn written_grid<'v, T: Element, const D: usize>(
    grid: &'v mut Grid<T, D>,
    across: Option<&dyn Distribution<T, D>>,
) -> WrittenGrid<'v, T> {
    let faces = match across {
        Some(across) => across.local_faces(grid.boundaries()).to_vec(),
        None => grid.boundaries().to_vec(),
    };
    let constant_faces_filled = grid.halo_filled();
    WrittenGrid {
        view: grid.time_loop_view(),
        faces,
        constant_faces_filled,
    }
}
