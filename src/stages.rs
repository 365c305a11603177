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
//! yet. They run on one process (no MPI).

use std::time::Instant;

use stencil_core::grid::Grid;
use stencil_core::sparse::{ReceiverSet, SourceSet, corners};
use stencil_core::stages::{GridNames, Stage as CoreStage, StageLoop};
use stencil_core::time_loop::{FieldSlot, WrittenGrid};
use stencil_core::{
    Backend, Element, Error, ErrorKind, FieldView, Result, Role, Schedule, Stencil,
};
use stencil_cpu::CpuBackend;

use crate::loop_grid::LoopGrid;
use crate::tuning::{self, TuneSettings};

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
    pub fn run(mut self, steps: usize) -> Result<StagesReport> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let bad = |m: String| Error::new(ErrorKind::BadArgument, m);
        if self.stages.is_empty() {
            return Err(bad("a time loop of stages needs at least one stage".into()));
        }
        // Slots: chains first, then written grids some stage writes, then read-only ones.
        let index_of = |name: &str| self.grids.iter().position(|(n, _)| n == name);
        let mut slot: Vec<Option<FieldSlot>> = vec![None; self.grids.len()];
        let mut names = GridNames::default();
        for (c, chain) in self.chains.iter().enumerate() {
            let mut chain_names = Vec::new();
            for (p, name) in chain.iter().enumerate() {
                let Some(g) = index_of(name) else {
                    return Err(bad(format!(
                        "chain `{}` names `{name}`, which is not a grid of the loop",
                        chain.join(" -> ")
                    )));
                };
                if matches!(self.grids[g].1, LoopGrid::Read(_)) {
                    return Err(bad(format!(
                        "`{name}` rotates; give it with `grid` (mutably), not `input`"
                    )));
                }
                if slot[g].is_some() {
                    return Err(bad(format!("`{name}` is named twice in the rotation")));
                }
                slot[g] = Some(FieldSlot::Chain {
                    chain: c,
                    position: p,
                });
                chain_names.push(name.clone());
            }
            if chain.len() < 2 {
                return Err(bad(format!(
                    "chain `{}`: a chain names the grid a step writes and at least one it \
                     becomes",
                    chain.join(" -> ")
                )));
            }
            names.chains.push(chain_names);
        }
        // Each stage's fields resolved to loop grids by name.
        let mut stage_grids: Vec<Vec<usize>> = Vec::new();
        let mut stage_params: Vec<Vec<T>> = Vec::new();
        for stage in &self.stages {
            let kernel = stage.stencil.kernel();
            let who = format!("stage `{}` (kernel `{}`)", stage.name, kernel.name);
            if kernel.n_dims != D {
                return Err(Error::new(
                    ErrorKind::DimensionMismatch,
                    format!(
                        "{who} is {}-D but the loop's grids are {D}-D",
                        kernel.n_dims
                    ),
                ));
            }
            for (field, _) in &stage.bindings {
                if kernel.field_by_name(field).is_none() {
                    return Err(bad(format!("{who} has no grid `{field}` to bind")));
                }
                if stage.bindings.iter().filter(|(f, _)| f == field).count() > 1 {
                    return Err(bad(format!("{who}: grid `{field}` is bound twice")));
                }
            }
            let mut grids = Vec::new();
            for field in &kernel.fields {
                let grid = stage
                    .bindings
                    .iter()
                    .find(|(f, _)| *f == field.name)
                    .map_or(field.name.as_str(), |(_, g)| g.as_str());
                let Some(g) = index_of(grid) else {
                    return Err(bad(format!(
                        "{who}: its grid `{}` is bound to `{grid}`, which is not a grid of the \
                         loop (give it with `grid` or `input`, or bind the field to another \
                         with `Stage::bind`)",
                        field.name
                    )));
                };
                if field.role == Role::Output && slot[g].is_none() {
                    if matches!(self.grids[g].1, LoopGrid::Read(_)) {
                        return Err(bad(format!(
                            "{who} writes `{grid}`, which was given with `input`: give it with \
                             `grid` (mutably)"
                        )));
                    }
                    slot[g] = Some(FieldSlot::Lone(names.lone.len()));
                    names.lone.push(grid.to_string());
                }
                grids.push(g);
            }
            for (name, _) in &stage.params {
                if kernel.param_by_name(name).is_none() {
                    return Err(bad(format!("{who} has no parameter `{name}`")));
                }
            }
            let mut params = Vec::new();
            for p in &kernel.params {
                let mut given = stage.params.iter().filter(|(n, _)| *n == p.name);
                match (given.next(), given.next()) {
                    (Some(&(_, v)), None) => params.push(v),
                    (None, _) => {
                        return Err(bad(format!("{who}: parameter `{}` is not set", p.name)));
                    }
                    (Some(_), Some(_)) => {
                        return Err(bad(format!("{who}: parameter `{}` is set twice", p.name)));
                    }
                }
            }
            stage_grids.push(grids);
            stage_params.push(params);
        }
        for (g, (name, _)) in self.grids.iter().enumerate() {
            if slot[g].is_none() {
                slot[g] = Some(FieldSlot::Coefficient(names.coefficients.len()));
                names.coefficients.push(name.clone());
            }
        }
        let slot: Vec<FieldSlot> = slot
            .into_iter()
            .map(|s| s.expect("every grid placed"))
            .collect();
        // Halos current for every grid a stage reads.
        for (stage, grids) in self.stages.iter().zip(&stage_grids) {
            for (field, &g) in stage.stencil.kernel().fields.iter().zip(grids) {
                let grid = match &self.grids[g].1 {
                    LoopGrid::Read(grid) => &**grid,
                    LoopGrid::Write(grid) => &**grid,
                };
                if field.role == Role::Input && grid.halo_is_stale() {
                    return Err(Error::new(
                        ErrorKind::StaleHalo,
                        format!(
                            "the interior of `{}` changed since its halo was filled and its \
                             boundary conditions depend on the interior; call `update_halo()` \
                             on it first",
                            self.grids[g].0
                        ),
                    ));
                }
            }
        }
        let shape: Vec<usize> = match &self.grids.first() {
            Some((_, LoopGrid::Read(g))) => g.shape().to_vec(),
            Some((_, LoopGrid::Write(g))) => g.shape().to_vec(),
            None => return Err(bad("a time loop of stages needs grids".into())),
        };
        let backend: &dyn Backend<T> = match self.backend {
            Some(b) => b,
            None => CpuBackend::global(),
        };
        let first_kernel = self.stages[0].stencil.kernel();
        let schedule = match self.schedule {
            Some(s) => s,
            None => {
                tuning::ensure_caches(backend, first_kernel, &shape, &TuneSettings::default());
                backend.default_schedule(first_kernel, &shape)
            }
        };
        // Sparse points, resolved before any grid is lent.
        let mut source_sets = Vec::new();
        for (grid, sources) in &self.sources {
            let mut points = Vec::new();
            for (position, series) in sources.positions.iter().zip(&sources.series) {
                points.push(corners::<T>(position, &shape)?);
                if series.len() < self.first + steps {
                    return Err(bad(format!(
                        "a source of `{grid}` has {} amplitudes; a loop of {steps} steps from \
                         step {} needs {}",
                        series.len(),
                        self.first,
                        self.first + steps
                    )));
                }
            }
            source_sets.push((grid.clone(), points, sources.series.clone()));
        }
        let mut receiver_sets = Vec::new();
        for (grid, receivers) in &self.receivers {
            let points = receivers
                .positions
                .iter()
                .map(|p| corners::<T>(p, &shape))
                .collect::<Result<Vec<_>>>()?;
            receiver_sets.push((grid.clone(), points, receivers.interval));
        }
        let timer = Instant::now();
        let (done, traces, result) = {
            let mut chain_grids: Vec<Vec<Option<WrittenGrid<'_, T>>>> = names
                .chains
                .iter()
                .map(|c| c.iter().map(|_| None).collect())
                .collect();
            let mut lone: Vec<Option<WrittenGrid<'_, T>>> =
                names.lone.iter().map(|_| None).collect();
            let mut coefficients: Vec<Option<FieldView<'_, T>>> =
                names.coefficients.iter().map(|_| None).collect();
            for ((_, grid), &s) in self.grids.iter_mut().zip(&slot) {
                match (s, grid) {
                    (FieldSlot::Chain { chain, position }, LoopGrid::Write(g)) => {
                        chain_grids[chain][position] = Some(written(g));
                    }
                    (FieldSlot::Lone(k), LoopGrid::Write(g)) => lone[k] = Some(written(g)),
                    (FieldSlot::Coefficient(k), LoopGrid::Write(g)) => {
                        coefficients[k] = Some(g.view());
                    }
                    (FieldSlot::Coefficient(k), LoopGrid::Read(g)) => {
                        coefficients[k] = Some(g.view());
                    }
                    _ => unreachable!("stencil stages: read-only grids are coefficients"),
                }
            }
            let stages = self
                .stages
                .iter()
                .zip(&stage_grids)
                .zip(stage_params)
                .map(|((stage, grids), params)| CoreStage {
                    name: stage.name.clone(),
                    stencil: stage.stencil,
                    slots: grids.iter().map(|&g| slot[g]).collect(),
                    params,
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
                self.first,
            )?;
            let target = |job: &StageLoop<'_, T>, grid: &str| {
                job.target(grid).ok_or_else(|| {
                    bad(format!(
                        "sparse points name `{grid}`, which no stage writes: sources and \
                         receivers go on a grid a stage writes (a chain's first grid)"
                    ))
                })
            };
            for (grid, points, series) in source_sets {
                let (target, stage) = target(&job, &grid)?;
                job.add_sources(SourceSet {
                    target,
                    stage,
                    points,
                    series,
                })?;
            }
            for (grid, points, interval) in receiver_sets {
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
            let result = backend.run_stages(&mut job, &schedule, steps);
            let done = job.done();
            let traces: Vec<Vec<Vec<T>>> = job
                .receivers_mut()
                .iter_mut()
                .map(|set| std::mem::take(&mut set.traces))
                .collect();
            (done, traces, result)
        };
        let seconds = timer.elapsed().as_secs_f64();
        for ((_, receivers), traces) in self.receivers.iter_mut().zip(traces) {
            for (kept, new) in receivers.traces.iter_mut().zip(traces) {
                kept.extend(new);
            }
        }
        self.rotate_grids(&names, &slot, done);
        result?;
        Ok(StagesReport {
            steps: done,
            schedule,
            seconds,
        })
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

/// A written grid as the loop sees it.
fn written<'v, T: Element, const D: usize>(grid: &'v mut Grid<T, D>) -> WrittenGrid<'v, T> {
    let faces = grid.boundaries().to_vec();
    let constant_faces_filled = grid.halo_filled();
    WrittenGrid {
        view: grid.time_loop_view(),
        faces,
        constant_faces_filled,
    }
}
