//! [`Stages`]: time loops of several kernels per step, grids bound by name, with sources and
//! receivers in the loop.
//!
//! A staggered wave solver updates velocities from pressure, then pressure from the new
//! velocities; a Runge-Kutta scheme runs two to four stages per step; a seismic code adds a
//! source and records receivers every step. `Stages` runs such a step as one loop, so the CPU
//! backend can block in time across all of it (each tile advancing through every stage of
//! every step of a block, see [`CpuBackend`]) and still leave exactly what
//! the plain loop leaves.
//!
//! # Grids by name
//!
//! The loop's grids have names of their own, given with [`grid`](Stages::grid) (written or
//! rotating, borrowed mutably) and [`input`](Stages::input) (read only). Each [`Stage`] binds
//! its kernel's fields to them by name: a field is bound to the loop grid of its own name
//! unless [`Stage::bind`] says otherwise, and its parameters are given by name
//! ([`Stage::param`]). A grid bound to the wrong field is an error naming both, never a silent
//! swap. Chains ([`rotate`](Stages::rotate)) say how grids move between steps, as for
//! [`Steps`](crate::Steps): `["p_next", "p"]`, `["u_next", "u", "u_prev"]`.
//!
//! # What a step does
//!
//! In stage order, each stage:
//!
//! 1. computes every interior point of each grid it writes, reading each grid as it is at that
//!    moment (a chain's first grid, or a written grid in no chain, holds what an earlier stage
//!    of this step wrote there);
//! 2. then the [`Sources`] of each grid it wrote are added;
//! 3. then the halo of each grid it wrote is filled from that grid's boundary conditions;
//! 4. then the [`Receivers`] of each grid it wrote are sampled.
//!
//! After the last stage the chains rotate. After [`run`](Stages::run)`(n)` every grid, interior
//! and halo, holds what this plain loop leaves, bit for bit, for every kernel whose CPU loop
//! keeps the reference interpreter's order (as for [`Steps`](crate::Steps): all but retimed
//! linear kernels under another schedule):
//!
//! ```text
//! for step in 0..n {
//!     for stage in stages {
//!         stage's kernel(..).run()?;                  // its grids as bound for this step
//!         for each source of a grid it wrote:         // in the order given
//!             for each corner: g[corner] = g[corner] + weight * series[first_step + step]
//!         refresh the halo of each grid it wrote;
//!         sample the receivers of each grid it wrote; // when (first_step + step + 1) % every == 0
//!     }
//!     rotate each chain                               // std::mem::swap for two grids
//! }
//! ```
//!
//! Interpolation weights and the order of the sums are those of [`stencil_core::sparse`]:
//! multilinear weights (a position on a grid point touches that point alone), each corner's
//! increment `weight * amplitude` rounded in the element type and added to the point, a
//! receiver's sample `w_0 * g_0 + w_1 * g_1 + ..` over its corners in order.
//!
//! # Rules, checked when the loop runs
//!
//! Each chain's first grid and each written grid in no chain is written by exactly one stage,
//! and read within a step only by later stages; a stage never reads a grid it writes; the
//! other grids of a chain and the inputs are only read. Sources and receivers name a grid a
//! stage writes (a chain's first grid, `p_next`, not `p`), at positions inside the interior.
//! Every grid has one shape, a halo as wide as every stage's reads of it (a chain's grids as
//! wide as the reads of any of its names), and no written grid shares storage. Breaking one is
//! an [`ErrorKind::BadArgument`] (or the shape, halo and aliasing kinds) naming the stage and
//! grid, before anything is written.
//!
//! # Schedules
//!
//! Without [`schedule`](Stages::schedule), the backend's default schedule for the first stage's
//! kernel runs every stage (on the CPU: temporal blocking of a default depth when the grids
//! exceed half the measured last-level cache, slabs sized to it). Stage loops are not tuned
//! yet.
//!
//! # Across MPI ranks
//!
//! With `Stages::across` (feature `mpi`) the loop runs on grids distributed over MPI ranks
//! (`stencil::mpi`): every grid is this rank's local grid of the domain, every rank makes the
//! same call, and sources and receivers keep their **global** positions. After
//! [`run`](Stages::run)`(n)` every grid's owned box (so the interior `Domain::gather` gives)
//! holds what one process's loop over the global grids leaves, bit for bit, and every rank's
//! [`Receivers`] get the same traces as one process's, bit for bit (on every rank, not only
//! on rank 0), for every boundary condition and rank count. Ghost zones and halos beyond rank
//! faces are stale until the next exchange, as after `Steps::across`.
//!
//! - **Exchanges.** Let `R` be the sum of the stages' radii (the points a whole step reads
//!   away). With a ghost depth `g >= R`, the grids a step reads before a stage writes them (the
//!   chains' earlier levels, and before the first step the coefficients given with
//!   [`grid`](Stages::grid)) are exchanged, then `g / R` steps run on the local interior, ghost
//!   zones included, as one local loop (blocked in time on the CPU like any stage loop; the
//!   ghost zones go stale by at most `R` points per step, never reaching the owned box). With a
//!   ghost depth of 0 every stage runs on its own, and right after it the grids it wrote that a
//!   stage reads are exchanged (only those). A ghost depth between 1 and `R - 1` is an error.
//!   Coefficients given with [`input`](Stages::input) are not exchanged by the loop: give them
//!   their halo first (`Domain::exchange`, `fill_with`, `scatter`).
//! - **Sources** are added on each rank at every copy of their corners in its local interior:
//!   at the corners it owns, and, with ghost zones, at their copies there (which the ghost
//!   zones' redundant steps need and the next exchange overwrites with the owner's values). So
//!   in the owned boxes each corner gets each increment exactly once, from its owner, in the
//!   documented order, also when a source's corners straddle ranks.
//! - **Receivers** are sampled where their corners are: each rank takes, for every corner it
//!   owns, the term `weight * value` (the owned box is always current), and after the loop
//!   every rank gathers every rank's terms and sums each receiver's in corner order from the
//!   first term, exactly as one process does ([`stencil_core::sparse`]). The traces are
//!   appended on every rank.
//! - **Errors.** Every rank checks the call (its grids against the domain's local shape, halo
//!   and periodic faces; the rules above; positions against the **global** interior; the ghost
//!   depth against `R`; no stage's kernel may read its point's indices, which each rank would
//!   see for its own box: an [`ErrorKind::BadArgument`]; `step()` is the global step), then
//!   the ranks agree before anything is exchanged: when any rank's
//!   check fails, [`run`](Stages::run) returns an error on every rank (that rank's own error
//!   where it failed, else the lowest failing rank's kind and message), and when the ranks'
//!   calls differ (steps, first step, grid names and boundary conditions, chains, stages and
//!   their bindings, sparse positions, series lengths, intervals) an
//!   [`ErrorKind::BadArgument`] on every rank, never a hang.

use std::time::Instant;

use stencil_core::grid::Grid;
use stencil_core::sparse::{Corner, ReceiverSet, SourceSet, corners};
use stencil_core::stages::{GridNames, Stage as CoreStage, StageLoop};
use stencil_core::time_loop::{FieldSlot, WrittenGrid};
use stencil_core::{Backend, Element, Error, ErrorKind, FieldView, Result, Schedule, Stencil};
use stencil_cpu::CpuBackend;

use crate::distribution::StageDistribution;
use crate::loop_grid::LoopGrid;
use crate::tuning::{self, TuneSettings};

mod across;
mod resolve;

/// A loop's grids and stages resolved by name (see `Stages::resolve`).
pub(super) struct Resolved<T> {
    /// The grids' names by slot.
    pub(super) names: GridNames,
    /// Per loop grid (in the order given): its slot.
    pub(super) slot: Vec<FieldSlot>,
    /// The stages the loop runs, in step order.
    pub(super) stages: Vec<ResolvedStage<T>>,
}

/// A stage of a [`Resolved`] loop.
pub(super) struct ResolvedStage<T> {
    /// Which of the loop's stages.
    pub(super) index: usize,
    /// Per kernel field: the loop grid (index in the order given).
    pub(super) grids: Vec<usize>,
    /// Parameter values (declaration order).
    pub(super) params: Vec<T>,
}

/// One kernel of a step: its fields bound to the loop's grids by name, its parameters by name.
#[derive(Clone, Debug)]
pub struct Stage<'g, T: Element> {
    stencil: &'g Stencil<T>,
    name: String,
    bindings: Vec<(String, String)>,
    params: Vec<(String, T)>,
}

impl<'g, T: Element> Stage<'g, T> {
    /// A stage running `stencil`, named after its kernel, every field bound to the loop grid
    /// of the same name.
    pub fn new(stencil: &'g Stencil<T>) -> Self {
        Stage {
            stencil,
            name: stencil.kernel().name.clone(),
            bindings: Vec::new(),
            params: Vec::new(),
        }
    }

    /// Names the stage (for messages; two stages of one kernel need two names).
    pub fn named(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self
    }

    /// Binds the kernel's field `field` to the loop grid `grid`.
    pub fn bind(mut self, field: &str, grid: &str) -> Self {
        self.bindings.push((field.to_string(), grid.to_string()));
        self
    }

    /// Sets the kernel's parameter `name` for every step.
    pub fn param(mut self, name: &str, value: T) -> Self {
        self.params.push((name.to_string(), value));
        self
    }
}

/// Point sources: positions (index coordinates, see [`stencil_core::sparse`]) each with an
/// amplitude per step.
#[derive(Clone, Debug, Default)]
pub struct Sources<T: Element, const D: usize> {
    positions: Vec<[f64; D]>,
    series: Vec<Vec<T>>,
}

impl<T: Element, const D: usize> Sources<T, D> {
    /// No sources.
    pub fn new() -> Self {
        Sources {
            positions: Vec::new(),
            series: Vec::new(),
        }
    }

    /// Adds a source at `position` whose amplitude at step `s` (from 0) is `series[s]`; a
    /// loop of `n` steps starting at step `first` needs `first + n` values.
    pub fn point(mut self, position: [f64; D], series: Vec<T>) -> Self {
        self.positions.push(position);
        self.series.push(series);
        self
    }

    /// How many sources.
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }
}

/// Receivers: positions (index coordinates) sampled every `every` steps into traces the
/// caller keeps (`traces()[receiver][sample]`); a run appends its samples.
#[derive(Clone, Debug)]
pub struct Receivers<T: Element, const D: usize> {
    positions: Vec<[f64; D]>,
    interval: usize,
    traces: Vec<Vec<T>>,
}

impl<T: Element, const D: usize> Receivers<T, D> {
    /// Receivers at `positions`, sampled after every step.
    pub fn new(positions: Vec<[f64; D]>) -> Self {
        let traces = vec![Vec::new(); positions.len()];
        Receivers {
            positions,
            interval: 1,
            traces,
        }
    }

    /// Samples after every step whose number (from 1, counting from the loop's first step
    /// `first`, see [`Stages::first_step`]) is a multiple of `interval` (0 is an error when
    /// the loop runs).
    pub fn every(mut self, interval: usize) -> Self {
        self.interval = interval;
        self
    }

    /// The samples so far, per receiver (`[receivers][samples]`).
    pub fn traces(&self) -> &[Vec<T>] {
        &self.traces
    }

    /// The samples so far of receiver `r`.
    ///
    /// # Panics
    /// If `r` is not a receiver.
    pub fn trace(&self, r: usize) -> &[T] {
        &self.traces[r]
    }

    /// Forgets the samples.
    pub fn clear(&mut self) {
        self.traces.iter_mut().for_each(Vec::clear);
    }
}

/// What [`Stages::run`] did.
#[derive(Clone, Debug)]
pub struct StagesReport {
    /// Steps run.
    pub steps: usize,
    /// The schedule every stage ran under.
    pub schedule: Schedule,
    /// Wall-clock seconds of the steps.
    pub seconds: f64,
}

/// A time loop of several kernels per step (see the [module documentation](self)).
#[must_use = "Stages does nothing until `.run(n)` is called"]
pub struct Stages<'g, T: Element, const D: usize> {
    grids: Vec<(String, LoopGrid<'g, T, D>)>,
    chains: Vec<Vec<String>>,
    stages: Vec<Stage<'g, T>>,
    sources: Vec<(String, &'g Sources<T, D>)>,
    receivers: Vec<(String, &'g mut Receivers<T, D>)>,
    backend: Option<&'g dyn Backend<T>>,
    schedule: Option<Schedule>,
    first: usize,
    /// The ranks' domain, for a loop on distributed grids.
    across: Option<&'g dyn StageDistribution<T, D>>,
    error: Option<Error>,
}

impl<T: Element, const D: usize> Default for Stages<'_, T, D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'g, T: Element, const D: usize> Stages<'g, T, D> {
    /// A loop with no grids or stages yet.
    pub fn new() -> Self {
        Stages {
            grids: Vec::new(),
            chains: Vec::new(),
            stages: Vec::new(),
            sources: Vec::new(),
            receivers: Vec::new(),
            backend: None,
            schedule: None,
            first: 0,
            across: None,
            error: None,
        }
    }

    /// Adds the grid `name`, which the loop may write or rotate.
    pub fn grid(mut self, name: &str, grid: &'g mut Grid<T, D>) -> Self {
        self.add(name, LoopGrid::Write(grid));
        self
    }

    /// Adds the read-only grid `name` (a coefficient).
    pub fn input(mut self, name: &str, grid: &'g Grid<T, D>) -> Self {
        self.add(name, LoopGrid::Read(grid));
        self
    }

    /// Adds a chain: the grid the step writes, then the names it becomes, newest first.
    pub fn rotate<S: AsRef<str>>(mut self, chain: &[S]) -> Self {
        self.chains
            .push(chain.iter().map(|s| s.as_ref().to_string()).collect());
        self
    }

    /// Appends a stage to every step.
    pub fn stage(mut self, stage: Stage<'g, T>) -> Self {
        self.stages.push(stage);
        self
    }

    /// Adds `sources` to grid `grid` after the stage that writes it, every step.
    pub fn sources(mut self, grid: &str, sources: &'g Sources<T, D>) -> Self {
        self.sources.push((grid.to_string(), sources));
        self
    }

    /// Samples `receivers` from grid `grid` after the stage that writes it (and its sources).
    pub fn receivers(mut self, grid: &str, receivers: &'g mut Receivers<T, D>) -> Self {
        self.receivers.push((grid.to_string(), receivers));
        self
    }

    /// The number of the loop's first step (default 0): sources read their series from there,
    /// receivers count their interval from there. A simulation run in several calls passes
    /// the steps done so far.
    pub fn first_step(mut self, first: usize) -> Self {
        self.first = first;
        self
    }

    /// Runs on `backend` instead of the global CPU backend.
    pub fn on(mut self, backend: &'g dyn Backend<T>) -> Self {
        self.backend = Some(backend);
        self
    }

    /// Runs every stage under `schedule`.
    pub fn schedule(mut self, schedule: Schedule) -> Self {
        self.schedule = Some(schedule);
        self
    }

    /// Runs the loop on grids distributed over MPI ranks (feature `mpi`): every grid is this
    /// rank's local grid of `domain` (from [`Domain::grid`](crate::mpi::Domain::grid)), every
    /// rank makes the same call (the same stages, grids by name, chains, sources and
    /// receivers, at global positions), and every grid's owned box and every trace end as one
    /// process's loop leaves them, bit for bit. See [Across MPI ranks](self#across-mpi-ranks)
    /// for the exchanges, where sparse points are applied and how traces are combined.
    #[cfg(feature = "mpi")]
    pub fn across(mut self, domain: &'g crate::mpi::Domain<D>) -> Self
    where
        T: crate::mpi::MpiElement,
    {
        self.across = Some(domain);
        self
    }

    /// Runs `steps` steps, then rotates the grids so their names hold what the plain loop of
    /// the module documentation leaves, and appends the receivers' samples.
    ///
    /// # Errors
    /// - [`ErrorKind::BadArgument`]: a name given twice or naming nothing (grid, field,
    ///   parameter), a parameter not set, a grid written or rotated that was given with
    ///   `input`, a rule of the module documentation broken, a source's series shorter than
    ///   the loop, a position outside the interior, an interval of 0.
    /// - [`ErrorKind::DimensionMismatch`], [`ErrorKind::ShapeMismatch`],
    ///   [`ErrorKind::HaloTooNarrow`], [`ErrorKind::AliasedGrids`]: as [`Steps`](crate::Steps).
    /// - [`ErrorKind::StaleHalo`]: a grid a stage reads changed since its halo was filled and
    ///   one of its boundary conditions depends on the interior.
    /// - Backend errors (the steps done before one stay done and rotated).
    /// - Across MPI ranks (`across`, feature `mpi`): also a grid that is not a local grid of
    ///   the domain ([`ErrorKind::ShapeMismatch`], [`ErrorKind::HaloTooNarrow`], or
    ///   [`ErrorKind::BadArgument`] for periodic faces other than the domain's), a ghost depth
    ///   between 1 and the sum of the stages' radii less one, a position outside the global
    ///   interior, and calls that differ between ranks ([`ErrorKind::BadArgument`]); each on
    ///   every rank alike (see [Across MPI ranks](self#across-mpi-ranks)).
    pub fn run(mut self, steps: usize) -> Result<StagesReport> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if let Some(across) = self.across {
            return self.run_across(across, steps);
        }
        let plan = self.resolve()?;
        let shape = self.shape()?;
        let (backend, schedule) = self.backend_and_schedule(&shape);
        // Sparse points, resolved before any grid is lent.
        let sparse = self.global_sparse(&shape, steps)?;
        let timer = Instant::now();
        let first = self.first;
        let (done, traces, result) = self.with_loop(&plan, sparse, first, None, |job| {
            run_loop(job, backend, &schedule, steps)
        })?;
        let seconds = timer.elapsed().as_secs_f64();
        for ((_, receivers), traces) in self.receivers.iter_mut().zip(traces) {
            for (kept, new) in receivers.traces.iter_mut().zip(traces) {
                kept.extend(new);
            }
        }
        self.rotate_grids(&plan.names, &plan.slot, done);
        result?;
        Ok(StagesReport {
            steps: done,
            schedule,
            seconds,
        })
    }

    /// The interior shape of the loop's first grid.
    fn shape(&self) -> Result<Vec<usize>> {
        match self.grids.first() {
            Some((_, grid)) => Ok(grid_of(grid).shape().to_vec()),
            None => Err(Error::new(
                ErrorKind::BadArgument,
                "a time loop of stages needs grids",
            )),
        }
    }

    /// The backend and the schedule every stage runs under, on grids of `shape`.
    fn backend_and_schedule(&self, shape: &[usize]) -> (&'g dyn Backend<T>, Schedule) {
        let backend: &'g dyn Backend<T> = match self.backend {
            Some(b) => b,
            None => CpuBackend::global(),
        };
        let first_kernel = self.stages[0].stencil.kernel();
        let schedule = match self.schedule {
            Some(s) => s,
            None => {
                tuning::ensure_caches(backend, first_kernel, shape, &TuneSettings::default());
                backend.default_schedule(first_kernel, shape)
            }
        };
        (backend, schedule)
    }

    /// The sources' and receivers' corners on an interior of `shape`, with the sources'
    /// series checked against a loop of `steps` steps.
    fn global_sparse(&self, shape: &[usize], steps: usize) -> Result<Sparse<T>> {
        let mut sources = Vec::new();
        for (grid, set) in &self.sources {
            let mut points = Vec::new();
            for (position, series) in set.positions.iter().zip(&set.series) {
                points.push(corners::<T>(position, shape)?);
                if series.len() < self.first + steps {
                    return Err(Error::new(
                        ErrorKind::BadArgument,
                        format!(
                            "a source of `{grid}` has {} amplitudes; a loop of {steps} steps \
                             from step {} needs {}",
                            series.len(),
                            self.first,
                            self.first + steps
                        ),
                    ));
                }
            }
            sources.push((grid.clone(), points, set.series.clone()));
        }
        let mut receivers = Vec::new();
        for (grid, set) in &self.receivers {
            let points = set
                .positions
                .iter()
                .map(|p| corners::<T>(p, shape))
                .collect::<Result<Vec<_>>>()?;
            receivers.push((grid.clone(), points, set.interval));
        }
        Ok(Sparse { sources, receivers })
    }

    /// Lends the grids to a [`StageLoop`] of `plan`'s stages from step `first`, with the
    /// sparse points `sparse` (sets naming a grid none of the stages writes are an error),
    /// and calls `f` with it. On distributed grids (`across`) the written grids apply their
    /// boundary conditions on the faces of the global interior only.
    fn with_loop<R>(
        &mut self,
        plan: &Resolved<T>,
        sparse: Sparse<T>,
        first: usize,
        across: Option<&dyn StageDistribution<T, D>>,
        f: impl FnOnce(&mut StageLoop<'_, T>) -> R,
    ) -> Result<R> {
        let names = &plan.names;
        let mut chain_grids: Vec<Vec<Option<WrittenGrid<'_, T>>>> = names
            .chains
            .iter()
            .map(|c| c.iter().map(|_| None).collect())
            .collect();
        let mut lone: Vec<Option<WrittenGrid<'_, T>>> = names.lone.iter().map(|_| None).collect();
        let mut coefficients: Vec<Option<FieldView<'_, T>>> =
            names.coefficients.iter().map(|_| None).collect();
        for ((_, grid), &s) in self.grids.iter_mut().zip(&plan.slot) {
            match (s, grid) {
                (FieldSlot::Chain { chain, position }, LoopGrid::Write(g)) => {
                    chain_grids[chain][position] = Some(written(g, across));
                }
                (FieldSlot::Lone(k), LoopGrid::Write(g)) => lone[k] = Some(written(g, across)),
                (FieldSlot::Coefficient(k), LoopGrid::Write(g)) => {
                    coefficients[k] = Some(g.view());
                }
                (FieldSlot::Coefficient(k), LoopGrid::Read(g)) => {
                    coefficients[k] = Some(g.view());
                }
                _ => unreachable!("stencil stages: read-only grids are coefficients"),
            }
        }
        let stages = plan
            .stages
            .iter()
            .map(|stage| {
                let def = &self.stages[stage.index];
                CoreStage {
                    name: def.name.clone(),
                    stencil: def.stencil,
                    slots: stage.grids.iter().map(|&g| plan.slot[g]).collect(),
                    params: stage.params.clone(),
                }
            })
            .collect();
        let mut job = StageLoop::new(
            stages,
            chain_grids
                .into_iter()
                .map(|c| c.into_iter().map(|g| g.expect("placed")).collect())
                .collect(),
            lone.into_iter().map(|g| g.expect("placed")).collect(),
            coefficients
                .into_iter()
                .map(|g| g.expect("placed"))
                .collect(),
            names.clone(),
            first,
        )?;
        let target = |job: &StageLoop<'_, T>, grid: &str| {
            job.target(grid).ok_or_else(|| {
                Error::new(
                    ErrorKind::BadArgument,
                    format!(
                        "sparse points name `{grid}`, which no stage writes: sources and \
                         receivers go on a grid a stage writes (a chain's first grid)"
                    ),
                )
            })
        };
        for (grid, points, series) in sparse.sources {
            let (target, stage) = target(&job, &grid)?;
            job.add_sources(SourceSet {
                target,
                stage,
                points,
                series,
            })?;
        }
        for (grid, points, interval) in sparse.receivers {
            let (target, stage) = target(&job, &grid)?;
            let traces = vec![Vec::new(); points.len()];
            job.add_receivers(ReceiverSet {
                target,
                stage,
                points,
                interval,
                traces,
            })?;
        }
        Ok(f(&mut job))
    }

    /// Rotates each chain's grids by `done` steps and marks the halo of every grid the loop
    /// wrote as filled.
    fn rotate_grids(&mut self, names: &GridNames, slot: &[FieldSlot], done: usize) {
        for chain in &names.chains {
            let len = chain.len();
            let index: Vec<usize> = chain
                .iter()
                .map(|n| self.grids.iter().position(|(g, _)| g == n).expect("named"))
                .collect();
            for _ in 0..done % len {
                // One step of rotation: the grid at position p takes what position p - 1 held.
                for p in (1..len).rev() {
                    let (a, b) = (index[p].min(index[p - 1]), index[p].max(index[p - 1]));
                    let (low, high) = self.grids.split_at_mut(b);
                    if let (LoopGrid::Write(x), LoopGrid::Write(y)) =
                        (&mut low[a].1, &mut high[0].1)
                    {
                        std::mem::swap(&mut **x, &mut **y);
                    }
                }
            }
        }
        if done == 0 {
            return;
        }
        for ((_, grid), &s) in self.grids.iter_mut().zip(slot) {
            let written = match s {
                FieldSlot::Chain { chain, position } => {
                    let len = names.chains[chain].len();
                    (1..=done.min(len - 1)).contains(&position) || (position == 0 && done >= len)
                }
                FieldSlot::Lone(_) => true,
                FieldSlot::Coefficient(_) => false,
            };
            if let (true, LoopGrid::Write(grid)) = (written, grid) {
                grid.mark_halo_filled();
            }
        }
    }

    fn add(&mut self, name: &str, grid: LoopGrid<'g, T, D>) {
        if self.grids.iter().any(|(n, _)| n == name) {
            self.error.get_or_insert(Error::new(
                ErrorKind::BadArgument,
                format!("grid `{name}` is given twice"),
            ));
        } else {
            self.grids.push((name.to_string(), grid));
        }
    }
}

/// Sparse points as a [`StageLoop`] takes them: per set, the grid's name, each point's
/// corners, and the sources' series or the receivers' interval.
struct Sparse<T> {
    sources: Vec<SourcePoints<T>>,
    receivers: Vec<ReceiverPoints<T>>,
}

/// A source set: the grid's name, each source's corners and each source's series.
type SourcePoints<T> = (String, Vec<Vec<Corner<T>>>, Vec<Vec<T>>);

/// A receiver set: the grid's name, each receiver's corners and the interval.
type ReceiverPoints<T> = (String, Vec<Vec<Corner<T>>>, usize);

/// Runs `steps` steps of `job` on `backend`: the steps done, each receiver set's new samples
/// and the backend's result.
fn run_loop<T: Element>(
    job: &mut StageLoop<'_, T>,
    backend: &dyn Backend<T>,
    schedule: &Schedule,
    steps: usize,
) -> (usize, Vec<Vec<Vec<T>>>, Result<()>) {
    let result = backend.run_stages(job, schedule, steps);
    let traces = job
        .receivers_mut()
        .iter_mut()
        .map(|set| std::mem::take(&mut set.traces))
        .collect();
    (job.done(), traces, result)
}

/// The grid behind a loop grid.
fn grid_of<'s, T: Element, const D: usize>(grid: &'s LoopGrid<'_, T, D>) -> &'s Grid<T, D> {
    match grid {
        LoopGrid::Read(g) => g,
        LoopGrid::Write(g) => g,
    }
}

/// A written grid as the loop sees it (on distributed grids, with the faces that apply on
/// this rank).
fn written<'v, T: Element, const D: usize>(
    grid: &'v mut Grid<T, D>,
    across: Option<&dyn StageDistribution<T, D>>,
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
