//! Time loops of several kernels per step (stages), with sparse sources and receivers.
//!
//! A [`StageLoop`] is a validated loop whose every step runs an ordered list of [`Stage`]s,
//! each a kernel with its fields bound to the loop's grids (by [`FieldSlot`], as a
//! [`TimeLoop`] binds its one kernel's). The loop's grids are those of a [`TimeLoop`]: chains
//! (rings of time levels: position `p` names level `s - p` at step `s`, level `l` living in
//! the chain's grid `(1 - l) mod L`), written grids in no chain (*lone*: written every step,
//! not rotated) and read-only coefficients. Each step, in stage order:
//!
//! 1. the stage computes every interior point of each grid it writes (a chain's position 0 or a
//!    lone grid), reading each grid it reads as it is at that moment: position 0 of a chain
//!    or a lone grid holds what an earlier stage of the same step wrote there;
//! 2. the sources of each grid it wrote are added ([`crate::sparse`]);
//! 3. the halo of each grid it wrote is filled from that grid's boundary conditions;
//! 4. the receivers of each grid it wrote are sampled.
//!
//! That is the loop of [`step_with`](StageLoop::step_with), which backends without temporal
//! blocking run, and every backend leaves the same values. The rules, checked by
//! [`StageLoop::new`]:
//!
//! - each chain's position 0 and each lone grid is written by exactly one stage, and read
//!   within a step only by stages after that one (reading a level a stage of the same step has
//!   not written yet would read a stale one);
//! - a stage never reads a grid it writes (a cycle within the stage: use two grids);
//! - positions 1 and beyond of a chain and coefficients are only read;
//! - every grid has one shape, a halo as wide as every stage's reach into it (a chain's
//!   grids, which play every position in turn, as wide as the reads of any position), and no
//!   written grid shares storage with another grid.

use crate::analysis::{field_radius, in_place_outputs};
use crate::element::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::grid::fill_halo;
use crate::ir::{FieldId, Role};
use crate::job::Job;
use crate::loop_grids::{FieldSlot, GridCheck, WrittenGrid, check_grids};
use crate::sparse::{ReceiverSet, SourceSet, Target};
use crate::stencil::Stencil;
use crate::time_loop::TimeLoop;
use crate::view::FieldView;

/// One kernel of a step and where its fields live.
#[derive(Debug)]
pub struct Stage<'a, T: Element> {
    /// The stage's name, for messages.
    pub name: String,
    /// The kernel.
    pub stencil: &'a Stencil<T>,
    /// Per kernel field (declaration order): the loop's grid it reads or writes.
    pub slots: Vec<FieldSlot>,
    /// Parameter values (declaration order).
    pub params: Vec<T>,
}

/// A loop grid's name, by slot.
#[derive(Clone, Debug, Default)]
pub struct GridNames {
    /// Per chain, its grids' names in chain order.
    pub chains: Vec<Vec<String>>,
    /// The lone grids' names.
    pub lone: Vec<String>,
    /// The coefficients' names.
    pub coefficients: Vec<String>,
}

impl GridNames {
    /// The name of the grid `slot` names.
    pub fn of(&self, slot: FieldSlot) -> &str {
        match slot {
            FieldSlot::Chain { chain, position } => &self.chains[chain][position],
            FieldSlot::Lone(k) => &self.lone[k],
            FieldSlot::Coefficient(k) => &self.coefficients[k],
        }
    }
}

/// What a loop made from a [`TimeLoop`] did: its steps and its grids' halo flags.
#[derive(Debug)]
pub struct LoopEnd {
    done: usize,
    flags: Vec<bool>,
}

impl LoopEnd {
    /// Copies the grids' halo flags to `job` and advances it to the steps done.
    pub fn apply<T: Element>(self, job: &mut TimeLoop<'_, T>) {
        let steps = self.done - job.done();
        let (chains, lone) = job.grids_mut();
        for (g, flag) in chains
            .iter_mut()
            .flatten()
            .chain(lone.iter_mut())
            .zip(self.flags)
        {
            g.constant_faces_filled = flag;
        }
        job.advance(steps);
    }
}

/// A validated multi-stage time loop (see the module documentation).
#[derive(Debug)]
pub struct StageLoop<'a, T: Element> {
    stages: Vec<Stage<'a, T>>,
    chains: Vec<Vec<WrittenGrid<'a, T>>>,
    lone: Vec<WrittenGrid<'a, T>>,
    coefficients: Vec<FieldView<'a, T>>,
    names: GridNames,
    sources: Vec<SourceSet<T>>,
    receivers: Vec<ReceiverSet<T>>,
    done: usize,
    first: usize,
}

impl<'a, T: Element> StageLoop<'a, T> {
    /// Validates and bundles a loop: the stages in step order, the grids of each chain in
    /// chain order, the lone grids and the coefficients (each in the order of `names`),
    /// `first` the number of the loop's first step in the simulation's whole run (sources
    /// read their series from there, receivers count their interval from there; the chains'
    /// grids are at their positions, as before any step).
    ///
    /// # Errors
    /// - [`ErrorKind::BadArgument`]: no stage; a count of slots or parameters that does not
    ///   match a stage's kernel; a kernel with reductions or reading an output in place; a
    ///   slot out of range, an output bound to a read-only grid, a broken rule of the module
    ///   documentation (each message names the stage and grid).
    /// - [`ErrorKind::DimensionMismatch`], [`ErrorKind::ShapeMismatch`],
    ///   [`ErrorKind::HaloTooNarrow`], [`ErrorKind::AliasedGrids`]: as [`TimeLoop::new`].
    pub fn new(
        stages: Vec<Stage<'a, T>>,
        chains: Vec<Vec<WrittenGrid<'a, T>>>,
        lone: Vec<WrittenGrid<'a, T>>,
        coefficients: Vec<FieldView<'a, T>>,
        names: GridNames,
        first: usize,
    ) -> Result<Self> {
        let bad = |what: String| Error::new(ErrorKind::BadArgument, what);
        if stages.is_empty() {
            return Err(bad("a time loop of stages needs at least one stage".into()));
        }
        if names.chains.len() != chains.len()
            || names
                .chains
                .iter()
                .zip(&chains)
                .any(|(n, g)| n.len() != g.len())
            || names.lone.len() != lone.len()
            || names.coefficients.len() != coefficients.len()
            || chains.iter().any(|c| c.is_empty())
        {
            return Err(bad("the grids given do not match their names".into()));
        }
        // The stage writing each chain's level and each lone grid.
        let mut chain_writer: Vec<Option<usize>> = vec![None; chains.len()];
        let mut lone_writer: Vec<Option<usize>> = vec![None; lone.len()];
        // Per grid (chains' grids in order, then lone, then coefficients): the reach needed.
        let n_chain_grids: usize = chains.iter().map(Vec::len).sum();
        let mut reach =
            vec![(0u32, String::new()); n_chain_grids + lone.len() + coefficients.len()];
        let chain_base: Vec<usize> = chains
            .iter()
            .scan(0, |base, c| {
                let b = *base;
                *base += c.len();
                Some(b)
            })
            .collect();
        for (s, stage) in stages.iter().enumerate() {
            let kernel = stage.stencil.kernel();
            let who = format!("stage `{}` (kernel `{}`)", stage.name, kernel.name);
            if stage.slots.len() != kernel.fields.len() {
                return Err(bad(format!(
                    "{who} has {} grids; {} bound",
                    kernel.fields.len(),
                    stage.slots.len()
                )));
            }
            if stage.params.len() != kernel.params.len() {
                return Err(bad(format!(
                    "{who} takes {} parameters, {} given",
                    kernel.params.len(),
                    stage.params.len()
                )));
            }
            if kernel.has_reductions() {
                return Err(bad(format!(
                    "{who} has reductions, which a time loop cannot return"
                )));
            }
            if let Some(&field) = in_place_outputs(kernel).first() {
                return Err(bad(format!(
                    "{who} reads output `{}` in place, which time loops do not support",
                    kernel.field(field).name
                )));
            }
            for (i, (&slot, field)) in stage.slots.iter().zip(&kernel.fields).enumerate() {
                let in_range = match slot {
                    FieldSlot::Chain { chain, position } => {
                        chain < chains.len() && position < chains[chain].len()
                    }
                    FieldSlot::Lone(k) => k < lone.len(),
                    FieldSlot::Coefficient(k) => k < coefficients.len(),
                };
                if !in_range {
                    return Err(bad(format!(
                        "{who}: field `{}` bound to no grid",
                        field.name
                    )));
                }
                let grid = names.of(slot).to_string();
                if field.role == Role::Output {
                    let writer = match slot {
                        FieldSlot::Chain { chain, position: 0 } => &mut chain_writer[chain],
                        FieldSlot::Lone(k) => &mut lone_writer[k],
                        _ => {
                            return Err(bad(format!(
                                "{who} writes `{grid}` into `{grid}`, which holds an earlier \
                                 step or a coefficient and is only read: a stage writes a \
                                 chain's first grid or a grid in no chain"
                            )));
                        }
                    };
                    if let Some(other) = writer.replace(s) {
                        return Err(bad(format!(
                            "{who} writes `{grid}`, which stage `{}` writes too: each grid is \
                             written by one stage of a step",
                            stages[other].name
                        )));
                    }
                }
                let r = field_radius(kernel, FieldId::new(i)).max();
                let index = match slot {
                    FieldSlot::Chain { chain, .. } => {
                        // Every grid of the chain plays this position in turn.
                        for g in 0..chains[chain].len() {
                            let e = &mut reach[chain_base[chain] + g];
                            if r > e.0 {
                                *e = (r, format!("{who} reads `{grid}` up to {r} points away"));
                            }
                        }
                        None
                    }
                    FieldSlot::Lone(k) => Some(n_chain_grids + k),
                    FieldSlot::Coefficient(k) => Some(n_chain_grids + lone.len() + k),
                };
                if let Some(index) = index
                    && r > reach[index].0
                {
                    reach[index] = (r, format!("{who} reads `{grid}` up to {r} points away"));
                }
            }
        }
        for (c, writer) in chain_writer.iter().enumerate() {
            if writer.is_none() {
                return Err(bad(format!(
                    "no stage writes `{}`, the first grid of chain `{}`",
                    names.chains[c][0],
                    names.chains[c].join(" -> ")
                )));
            }
        }
        for (k, writer) in lone_writer.iter().enumerate() {
            if writer.is_none() {
                return Err(bad(format!(
                    "no stage writes `{}` (a grid that rotates with nothing is written by a \
                     stage; pass a read-only grid as an input)",
                    names.lone[k]
                )));
            }
        }
        // Reads of a step's fresh levels only after their writer, never of the stage's own.
        for (s, stage) in stages.iter().enumerate() {
            let kernel = stage.stencil.kernel();
            let outputs: Vec<FieldSlot> = stage
                .slots
                .iter()
                .zip(&kernel.fields)
                .filter(|(_, f)| f.role == Role::Output)
                .map(|(&slot, _)| slot)
                .collect();
            for (&slot, field) in stage.slots.iter().zip(&kernel.fields) {
                if field.role != Role::Input {
                    continue;
                }
                let writer = match slot {
                    FieldSlot::Chain { chain, position: 0 } => chain_writer[chain],
                    FieldSlot::Lone(k) => lone_writer[k],
                    _ => continue,
                };
                let grid = names.of(slot);
                if outputs.contains(&slot) {
                    return Err(bad(format!(
                        "stage `{}` reads `{grid}` (as `{}`) and writes it: a stage cannot read \
                         the grid it writes",
                        stage.name, field.name
                    )));
                }
                if let Some(w) = writer
                    && w > s
                {
                    return Err(bad(format!(
                        "stage `{}` reads `{grid}` (as `{}`), which stage `{}` writes later in \
                         the step: a stage reads a grid of this step only after the stage that \
                         writes it",
                        stage.name, field.name, stages[w].name
                    )));
                }
            }
        }
        let n_dims = stages[0].stencil.kernel().n_dims;
        for stage in &stages {
            let kernel = stage.stencil.kernel();
            if kernel.n_dims != n_dims {
                return Err(Error::new(
                    ErrorKind::DimensionMismatch,
                    format!(
                        "stage `{}` is {}-D but stage `{}` is {n_dims}-D",
                        stage.name, kernel.n_dims, stages[0].name
                    ),
                ));
            }
        }
        // Shapes, layouts, halos, aliasing: in the order of `reach`.
        let mut grids: Vec<GridCheck<'_>> = Vec::new();
        for (c, chain) in chains.iter().enumerate() {
            for (p, grid) in chain.iter().enumerate() {
                let name = &names.chains[c][p];
                grids.push(GridCheck::of(name, grid.view.geom, grid.view.data, true));
            }
        }
        for (k, grid) in lone.iter().enumerate() {
            let name = &names.lone[k];
            grids.push(GridCheck::of(name, grid.view.geom, grid.view.data, true));
        }
        for (k, view) in coefficients.iter().enumerate() {
            let name = &names.coefficients[k];
            grids.push(GridCheck::of(name, view.geom, view.data, false));
        }
        for (check, reach) in grids.iter_mut().zip(reach) {
            check.reach = reach;
        }
        check_grids::<T>(&grids, n_dims, "the loop")?;
        for grid in chains.iter().flatten().chain(&lone) {
            if grid.faces.len() != n_dims || grid.view.data.len() < grid.view.geom.len {
                return Err(bad(
                    "a grid's boundary conditions or storage do not match its layout".into(),
                ));
            }
        }
        Ok(StageLoop {
            stages,
            chains,
            lone,
            coefficients,
            names,
            sources: Vec::new(),
            receivers: Vec::new(),
            done: 0,
            first,
        })
    }

    /// The single-kernel loop `job` as a loop of one stage over the same grids (borrowed for
    /// the new loop's life; its [`done`](Self::done) counts from `job`'s). Apply what it did to
    /// `job` with [`end`](Self::end).
    pub fn of_time_loop<'j>(job: &'j mut TimeLoop<'_, T>) -> StageLoop<'j, T> {
        let stencil: &'j Stencil<T> = job.stencil();
        let slots = job.slots().to_vec();
        let params = job.params().to_vec();
        let coefficients: Vec<FieldView<'j, T>> = job.coefficients().to_vec();
        let done = job.done();
        let kernel = stencil.kernel();
        let name_of = |wanted: &dyn Fn(FieldSlot) -> bool| -> Vec<String> {
            kernel
                .fields
                .iter()
                .zip(&slots)
                .filter(|&(_, &s)| wanted(s))
                .map(|(f, _)| f.name.clone())
                .collect()
        };
        let names = GridNames {
            chains: job
                .rotation()
                .chains()
                .iter()
                .map(|c| c.iter().map(|&f| kernel.field(f).name.clone()).collect())
                .collect(),
            lone: name_of(&|s| matches!(s, FieldSlot::Lone(_))),
            coefficients: name_of(&|s| matches!(s, FieldSlot::Coefficient(_))),
        };
        let first = job.first_step();
        let (chains, lone) = job.grids_mut();
        let borrow = |g: &'j mut WrittenGrid<'_, T>| WrittenGrid {
            view: g.view.reborrow(),
            faces: g.faces.clone(),
            constant_faces_filled: g.constant_faces_filled,
        };
        StageLoop {
            stages: vec![Stage {
                name: kernel.name.clone(),
                stencil,
                slots,
                params,
            }],
            chains: chains
                .iter_mut()
                .map(|c| c.iter_mut().map(borrow).collect())
                .collect(),
            lone: lone.iter_mut().map(borrow).collect(),
            coefficients,
            names,
            sources: Vec::new(),
            receivers: Vec::new(),
            done,
            first,
        }
    }

    /// Ends a loop made by [`of_time_loop`](Self::of_time_loop): what it did, to be applied
    /// to the time loop with [`LoopEnd::apply`] once this loop's borrow of it is over.
    pub fn end(self) -> LoopEnd {
        LoopEnd {
            done: self.done,
            flags: self
                .chains
                .iter()
                .flatten()
                .chain(&self.lone)
                .map(|g| g.constant_faces_filled)
                .collect(),
        }
    }

    /// Adds sources to the loop (validated by the caller against the loop's targets; see
    /// [`target`](Self::target)).
    ///
    /// # Errors
    /// [`ErrorKind::BadArgument`] when the set's stage does not write its target.
    pub fn add_sources(&mut self, set: SourceSet<T>) -> Result<()> {
        self.check_target(set.target, set.stage)?;
        self.sources.push(set);
        Ok(())
    }

    /// Adds receivers to the loop, as [`add_sources`](Self::add_sources).
    ///
    /// # Errors
    /// As [`add_sources`](Self::add_sources), and an interval of 0.
    pub fn add_receivers(&mut self, set: ReceiverSet<T>) -> Result<()> {
        self.check_target(set.target, set.stage)?;
        if set.interval == 0 {
            return Err(Error::new(
                ErrorKind::BadArgument,
                "receivers sample every `interval` steps: 0 given",
            ));
        }
        self.receivers.push(set);
        Ok(())
    }

    fn check_target(&self, target: Target, stage: usize) -> Result<()> {
        let writes = self.stages.get(stage).is_some_and(|s| {
            s.slots
                .iter()
                .zip(&s.stencil.kernel().fields)
                .any(|(&slot, f)| f.role == Role::Output && Self::slot_target(slot) == Some(target))
        });
        if writes {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::BadArgument,
                "sparse points name a grid their stage does not write",
            ))
        }
    }

    /// The written grid a slot names, if it names one (a chain's position 0 or a lone grid).
    pub fn slot_target(slot: FieldSlot) -> Option<Target> {
        match slot {
            FieldSlot::Chain { chain, position: 0 } => Some(Target::Chain(chain)),
            FieldSlot::Lone(k) => Some(Target::Lone(k)),
            _ => None,
        }
    }

    /// The written grid named `name` and the stage that writes it, if a stage writes it.
    pub fn target(&self, name: &str) -> Option<(Target, usize)> {
        let target = if let Some(c) = self.names.chains.iter().position(|c| c[0] == name) {
            Target::Chain(c)
        } else {
            Target::Lone(self.names.lone.iter().position(|n| n == name)?)
        };
        let stage = self.stages.iter().position(|s| {
            s.slots
                .iter()
                .zip(&s.stencil.kernel().fields)
                .any(|(&slot, f)| f.role == Role::Output && Self::slot_target(slot) == Some(target))
        })?;
        Some((target, stage))
    }

    /// The stages, in step order.
    pub fn stages(&self) -> &[Stage<'a, T>] {
        &self.stages
    }

    /// The grids' names.
    pub fn names(&self) -> &GridNames {
        &self.names
    }

    /// The sources.
    pub fn sources(&self) -> &[SourceSet<T>] {
        &self.sources
    }

    /// The receivers, with their traces so far.
    pub fn receivers(&self) -> &[ReceiverSet<T>] {
        &self.receivers
    }

    /// The receivers, mutably (a backend appends samples; the caller takes the traces).
    pub fn receivers_mut(&mut self) -> &mut [ReceiverSet<T>] {
        &mut self.receivers
    }

    /// Interior shape common to every grid.
    pub fn shape(&self) -> &[usize] {
        match self
            .chains
            .first()
            .and_then(|c| c.first())
            .or(self.lone.first())
        {
            Some(grid) => grid.view.geom.interior(),
            None => self.coefficients[0].geom.interior(),
        }
    }

    /// The read-only grids.
    pub fn coefficients(&self) -> &[FieldView<'a, T>] {
        &self.coefficients
    }

    /// The grids of every chain, each in chain order.
    pub fn chains(&self) -> &[Vec<WrittenGrid<'a, T>>] {
        &self.chains
    }

    /// The lone grids.
    pub fn lone(&self) -> &[WrittenGrid<'a, T>] {
        &self.lone
    }

    /// The chains' and lone grids, for a backend that runs steps itself.
    pub fn grids_mut(&mut self) -> (&mut [Vec<WrittenGrid<'a, T>>], &mut [WrittenGrid<'a, T>]) {
        (&mut self.chains, &mut self.lone)
    }

    /// Whether some stage reads lone grid `k` (else its halo need only be filled at the end).
    pub fn lone_is_read(&self, k: usize) -> bool {
        self.stages.iter().any(|s| {
            s.slots
                .iter()
                .zip(&s.stencil.kernel().fields)
                .any(|(&slot, f)| f.role == Role::Input && slot == FieldSlot::Lone(k))
        })
    }

    /// Steps done (by this loop, or for one made by [`of_time_loop`](Self::of_time_loop)
    /// by the time loop).
    pub fn done(&self) -> usize {
        self.done
    }

    /// The number, in the simulation's whole run, of the step after `before` steps of this
    /// loop, less one: the index of its amplitudes in the sources' series.
    pub fn step_number(&self, before: usize) -> usize {
        self.first + before
    }

    /// Records that `steps` more steps were done (by a backend that ran them itself).
    pub fn advance(&mut self, steps: usize) {
        self.done += steps;
    }

    /// The index, within its chain, of the grid that position `position` names at the step
    /// after `before` steps.
    pub fn grid_index(&self, chain: usize, position: usize, before: usize) -> usize {
        let len = self.chains[chain].len();
        (position + len - before % len) % len
    }

    /// Runs one step, stage by stage, each through `run` (given the stage's [`Job`]), adding
    /// sources, filling halos and sampling receivers as the module documentation says, and
    /// counts it.
    ///
    /// # Errors
    /// What `run` returns (the step is then not counted, and the grids hold the stages so far).
    pub fn step_with(&mut self, mut run: impl FnMut(&mut Job<'_, T>) -> Result<()>) -> Result<()> {
        let before = self.done;
        for s in 0..self.stages.len() {
            self.stage_job(s, before, &mut run)??;
            let written = self.written_by(s, before);
            for &(target, chain_index) in &written {
                let grid = match target {
                    Target::Chain(c) => &mut self.chains[c][chain_index],
                    Target::Lone(k) => &mut self.lone[k],
                };
                for set in self.sources.iter().filter(|set| set.target == target) {
                    set.increments(self.first + before, |point, inc| {
                        let i = grid.view.geom.index(&point.map(|p| p as isize));
                        grid.view.data[i] = grid.view.data[i] + inc;
                    });
                }
                let faces = grid.fill_faces();
                fill_halo(&mut grid.view, &faces);
                grid.constant_faces_filled = true;
            }
            for &(target, chain_index) in &written {
                let view = match target {
                    Target::Chain(c) => &self.chains[c][chain_index].view,
                    Target::Lone(k) => &self.lone[k].view,
                };
                for set in self.receivers.iter_mut().filter(|set| set.target == target) {
                    if !set.samples_after(self.first + before) {
                        continue;
                    }
                    for r in 0..set.points.len() {
                        let values: Vec<T> = set.points[r]
                            .iter()
                            .map(|c| view.data[view.geom.index(&c.point.map(|p| p as isize))])
                            .collect();
                        let sample = set.combine(r, values);
                        set.traces[r].push(sample);
                    }
                }
            }
        }
        self.done += 1;
        Ok(())
    }

    /// The grids stage `stage` writes at the step after `before` steps: each target with its
    /// grid's index in its chain (0 for a lone grid).
    pub fn written_by(&self, stage: usize, before: usize) -> Vec<(Target, usize)> {
        let s = &self.stages[stage];
        s.slots
            .iter()
            .zip(&s.stencil.kernel().fields)
            .filter(|(_, f)| f.role == Role::Output)
            .filter_map(|(&slot, _)| match Self::slot_target(slot)? {
                Target::Chain(c) => Some((Target::Chain(c), self.grid_index(c, 0, before))),
                lone => Some((lone, 0)),
            })
            .collect()
    }

    /// Calls `run` with the job of stage `stage` at the step after `before` steps.
    fn stage_job<R>(
        &mut self,
        stage: usize,
        before: usize,
        run: impl FnOnce(&mut Job<'_, T>) -> R,
    ) -> Result<R> {
        let stage = &self.stages[stage];
        crate::loop_grids::lend_job(
            stage.stencil,
            (&stage.slots, &stage.params),
            crate::loop_grids::LoopGrids {
                chains: &mut self.chains,
                lone: &mut self.lone,
                coefficients: &self.coefficients,
            },
            (before, self.first + before),
            run,
        )
    }
}
