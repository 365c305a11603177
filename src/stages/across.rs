//! [`Stages::across`]: a loop of several kernels per step on grids distributed over MPI
//! ranks, through [`StageDistribution`] (implemented by `stencil::mpi::Domain`).
//!
//! Every rank checks the call, then all agree (one error on every rank, or none) before
//! anything is exchanged. With a ghost depth of at least the sum of the stages' radii, each
//! exchange of the grids a step reads before writing them is followed by a chunk of steps of
//! the local loop over the whole local interior (blocked in time like any [`StageLoop`]);
//! with no ghost zone, every stage runs on its own and the grids it wrote that some stage
//! reads are exchanged right after it. Sources are added at every local copy of their
//! corners; receivers sample the corners each rank owns as single-corner receivers, whose
//! terms every rank gathers and sums in the documented corner order.

use std::hash::{Hash, Hasher};
use std::time::Instant;

use stencil_core::sparse::Corner;
use stencil_core::stages::GridNames;
use stencil_core::time_loop::FieldSlot;
use stencil_core::{Element, Error, ErrorKind, MAX_DIMS, Result, Role};

use super::{
    Resolved, ResolvedStage, SourcePoints, Sparse, Stages, StagesReport, grid_of, run_loop,
};
use crate::distribution::StageDistribution;
use crate::loop_grid::LoopGrid;

/// How often a loop across ranks exchanges.
#[derive(Clone, Copy, Debug)]
enum Exchanges {
    /// No ghost zone: after every stage, the grids it wrote that a stage reads.
    AfterEachStage,
    /// Once per this many steps, the grids a step reads before a stage writes them.
    Every(usize),
}

/// A receiver set cut over the ranks: each corner of each receiver is sampled by the rank
/// that owns it, as a receiver of that one corner (whose sample is `weight * value`).
struct SplitReceivers<T> {
    grid: String,
    interval: usize,
    /// Per receiver, per corner (in corner order): its owner and its index among the
    /// corners that rank owns.
    place: Vec<Vec<(usize, usize)>>,
    /// Per rank, how many corners it owns.
    per_rank: Vec<usize>,
    /// This rank's corners, each a receiver of one corner, in local coordinates.
    mine: Vec<Vec<Corner<T>>>,
    /// This rank's samples so far, per corner it owns.
    samples: Vec<Vec<T>>,
}

/// A loop across ranks, checked on this rank.
struct Prepared<T> {
    plan: Resolved<T>,
    exchanges: Exchanges,
    /// Per source set: the grid, the local copies of each source's corners (sources with none
    /// left out) and those sources' series.
    sources: Vec<SourcePoints<T>>,
    receivers: Vec<SplitReceivers<T>>,
}

impl<T: Element, const D: usize> Stages<'_, T, D> {
    /// [`run`](Self::run) on distributed grids (see the module documentation of
    /// [`crate::stages`]).
    pub(super) fn run_across(
        &mut self,
        across: &dyn StageDistribution<T, D>,
        steps: usize,
    ) -> Result<StagesReport> {
        // Every rank's checks, agreed on before anything is exchanged: a rank that returned
        // alone would leave the others waiting in the first exchange.
        let prepared = self.prepare(across, steps);
        let status = prepared.as_ref().map(|_| ()).map_err(Clone::clone);
        across.agree(status, self.fingerprint(steps))?;
        let mut prepared = prepared?;
        let shape = self.shape()?;
        let (backend, schedule) = self.backend_and_schedule(&shape);
        let plan = &prepared.plan;
        let timer = Instant::now();
        // The grids a step reads before a stage writes them: the chains' earlier levels,
        // and (once) the coefficients the loop may exchange.
        let chain_inputs: Vec<usize> = (0..self.grids.len())
            .filter(|&g| matches!(plan.slot[g], FieldSlot::Chain { position, .. } if position >= 1))
            .collect();
        for g in 0..self.grids.len() {
            let coefficient = matches!(plan.slot[g], FieldSlot::Coefficient(_));
            if chain_inputs.contains(&g) || (coefficient && self.is_read(plan, g)) {
                self.exchange_grid(across, g)?;
            }
        }
        let mut done = 0;
        let first = self.first;
        match prepared.exchanges {
            Exchanges::Every(per_exchange) => {
                while done < steps {
                    if done > 0 {
                        for &g in &chain_inputs {
                            self.exchange_grid(across, g)?;
                        }
                    }
                    let chunk = per_exchange.min(steps - done);
                    let sparse = Sparse {
                        sources: prepared.sources.clone(),
                        receivers: prepared
                            .receivers
                            .iter()
                            .map(|set| (set.grid.clone(), set.mine.clone(), set.interval))
                            .collect(),
                    };
                    let (ran, traces, result) =
                        self.with_loop(plan, sparse, first + done, Some(across), |job| {
                            run_loop(job, backend, &schedule, chunk)
                        })?;
                    keep_samples(&mut prepared.receivers, (0..traces.len()).zip(traces));
                    self.rotate_grids(&plan.names, &plan.slot, ran);
                    done += ran;
                    result?;
                }
            }
            Exchanges::AfterEachStage => {
                for _ in 0..steps {
                    for s in 0..plan.stages.len() {
                        let one = self.one_stage(plan, s);
                        let writes = |grid: &str| one.names.lone.iter().any(|n| n == grid);
                        let source_sets: Vec<usize> = (0..prepared.sources.len())
                            .filter(|&k| writes(&prepared.sources[k].0))
                            .collect();
                        let receiver_sets: Vec<usize> = (0..prepared.receivers.len())
                            .filter(|&k| writes(&prepared.receivers[k].grid))
                            .collect();
                        let sparse = Sparse {
                            sources: source_sets
                                .iter()
                                .map(|&k| prepared.sources[k].clone())
                                .collect(),
                            receivers: receiver_sets
                                .iter()
                                .map(|&k| {
                                    let set = &prepared.receivers[k];
                                    (set.grid.clone(), set.mine.clone(), set.interval)
                                })
                                .collect(),
                        };
                        let (_, traces, result) =
                            self.with_loop(&one, sparse, first + done, Some(across), |job| {
                                run_loop(job, backend, &schedule, 1)
                            })?;
                        keep_samples(
                            &mut prepared.receivers,
                            receiver_sets.iter().copied().zip(traces),
                        );
                        result?;
                        for g in 0..self.grids.len() {
                            if matches!(one.slot[g], FieldSlot::Lone(_)) && self.is_read(plan, g) {
                                self.exchange_grid(across, g)?;
                            }
                        }
                    }
                    self.rotate_grids(&plan.names, &plan.slot, 1);
                    done += 1;
                }
            }
        }
        let seconds = timer.elapsed().as_secs_f64();
        let (_, ranks) = across.rank_and_ranks();
        for (set, (_, receivers)) in prepared.receivers.iter().zip(&mut self.receivers) {
            // The samples after steps `first + 1 ..= first + done` whose number is a
            // multiple of the interval.
            let n = (first + done) / set.interval - first / set.interval;
            let mut mine = Vec::with_capacity(set.mine.len() * n);
            for samples in &set.samples {
                mine.extend((0..n).map(|t| samples.get(t).copied().unwrap_or(T::ZERO)));
            }
            let counts: Vec<usize> = set.per_rank.iter().map(|c| c * n).collect();
            let all = across.all_gather(&mine, &counts);
            let start: Vec<usize> = counts
                .iter()
                .scan(0, |at, &c| {
                    let s = *at;
                    *at += c;
                    Some(s)
                })
                .collect();
            debug_assert_eq!(start.len(), ranks);
            for (trace, place) in receivers.traces.iter_mut().zip(&set.place) {
                // Summed from the first term in corner order, as one process sums them.
                trace.extend((0..n).map(|t| {
                    place
                        .iter()
                        .map(|&(owner, k)| all[start[owner] + k * n + t])
                        .reduce(|sum, term| sum + term)
                        .unwrap_or(T::ZERO)
                }));
            }
        }
        Ok(StagesReport {
            steps: done,
            schedule,
            seconds,
        })
    }

    /// This rank's checks of a loop across ranks and its share of the sparse points.
    fn prepare(
        &mut self,
        across: &dyn StageDistribution<T, D>,
        steps: usize,
    ) -> Result<Prepared<T>> {
        let plan = self.resolve()?;
        for stage in &plan.stages {
            let def = &self.stages[stage.index];
            crate::distribution::refuse_indices_across(
                def.stencil.kernel(),
                &format!("stage `{}`", def.name),
            )?;
        }
        for (name, grid) in &self.grids {
            across
                .check_grid(grid_of(grid))
                .map_err(|e| Error::new(e.kind(), format!("grid `{name}`: {}", e.message())))?;
        }
        // Ghost points go stale by each stage's radius per stage; the chunk between two
        // exchanges must not reach the owned box.
        let reach: usize = plan
            .stages
            .iter()
            .map(|s| {
                let kernel = self.stages[s.index].stencil.kernel();
                stencil_core::analysis::radius(kernel).max() as usize
            })
            .sum();
        let exchanges = match (reach, across.ghost()) {
            (0, _) => Exchanges::Every(usize::MAX),
            (_, 0) => Exchanges::AfterEachStage,
            (r, g) if g >= r => Exchanges::Every(g / r),
            (r, g) => {
                return Err(Error::new(
                    ErrorKind::BadArgument,
                    format!(
                        "the stages of a step read {r} points away in all (the sum of their \
                         radii) but the domain's ghost zones are {g} deep: use a ghost depth \
                         of 0 (exchanges after every stage) or at least {r}"
                    ),
                ));
            }
        };
        let global = across.global_shape();
        let sparse = self.global_sparse(&global, steps)?;
        let widen = |p: [usize; D]| -> [usize; MAX_DIMS] {
            std::array::from_fn(|d| if d < D { p[d] } else { 0 })
        };
        let narrow = |c: &Corner<T>| -> [usize; D] { std::array::from_fn(|d| c.point[d]) };
        let sources = sparse
            .sources
            .into_iter()
            .map(|(grid, points, series)| {
                let (points, series): (Vec<_>, Vec<_>) = points
                    .into_iter()
                    .zip(series)
                    .map(|(corners, series)| {
                        let local: Vec<Corner<T>> = corners
                            .iter()
                            .flat_map(|c| {
                                across.local_copies(narrow(c)).into_iter().map(|p| Corner {
                                    point: widen(p),
                                    weight: c.weight,
                                })
                            })
                            .collect();
                        (local, series)
                    })
                    .filter(|(local, _)| !local.is_empty())
                    .unzip();
                (grid, points, series)
            })
            .collect();
        let (rank, ranks) = across.rank_and_ranks();
        let origin = across.origin();
        let receivers = sparse
            .receivers
            .into_iter()
            .map(|(grid, points, interval)| {
                let mut per_rank = vec![0; ranks];
                let mut mine = Vec::new();
                let place = points
                    .iter()
                    .map(|corners| {
                        corners
                            .iter()
                            .map(|c| {
                                let point = narrow(c);
                                let owner = across.owner(point);
                                if owner == rank {
                                    let local = std::array::from_fn(|d| {
                                        (point[d] as isize - origin[d]) as usize
                                    });
                                    mine.push(vec![Corner {
                                        point: widen(local),
                                        weight: c.weight,
                                    }]);
                                }
                                per_rank[owner] += 1;
                                (owner, per_rank[owner] - 1)
                            })
                            .collect()
                    })
                    .collect();
                let samples = vec![Vec::new(); mine.len()];
                SplitReceivers {
                    grid,
                    interval,
                    place,
                    per_rank,
                    mine,
                    samples,
                }
            })
            .collect();
        let prepared = Prepared {
            plan,
            exchanges,
            sources,
            receivers,
        };
        // The rest of the rules (which stage writes what, halos against reach, aliasing,
        // sparse points on written grids), on a loop built and dropped unrun.
        self.with_loop(
            &prepared.plan,
            self.dry_sparse(&prepared),
            0,
            Some(across),
            |_| (),
        )?;
        Ok(prepared)
    }

    /// The sparse points of `prepared` with no series, for a loop that is checked, not run.
    fn dry_sparse(&self, prepared: &Prepared<T>) -> Sparse<T> {
        Sparse {
            sources: prepared
                .sources
                .iter()
                .map(|(grid, _, _)| (grid.clone(), Vec::new(), Vec::new()))
                .collect(),
            receivers: prepared
                .receivers
                .iter()
                .map(|set| (set.grid.clone(), Vec::new(), set.interval))
                .collect(),
        }
    }

    /// The loop of stage `s` of `plan` alone: the grids it writes as grids in no chain, every
    /// other grid read only.
    fn one_stage(&self, plan: &Resolved<T>, s: usize) -> Resolved<T> {
        let stage = &plan.stages[s];
        let fields = &self.stages[stage.index].stencil.kernel().fields;
        let mut names = GridNames::default();
        let mut slot: Vec<Option<FieldSlot>> = vec![None; plan.slot.len()];
        for (field, &g) in fields.iter().zip(&stage.grids) {
            if field.role == Role::Output && slot[g].is_none() {
                slot[g] = Some(FieldSlot::Lone(names.lone.len()));
                names.lone.push(self.grids[g].0.clone());
            }
        }
        for (g, s) in slot.iter_mut().enumerate() {
            if s.is_none() {
                *s = Some(FieldSlot::Coefficient(names.coefficients.len()));
                names.coefficients.push(self.grids[g].0.clone());
            }
        }
        Resolved {
            names,
            slot: slot.into_iter().map(|s| s.expect("placed")).collect(),
            stages: vec![ResolvedStage {
                index: stage.index,
                grids: stage.grids.clone(),
                params: stage.params.clone(),
            }],
        }
    }

    /// Whether some stage reads grid `g` (for a chain's grid: any grid of its chain, which
    /// each plays in turn).
    fn is_read(&self, plan: &Resolved<T>, g: usize) -> bool {
        let same = |h: usize| match (plan.slot[g], plan.slot[h]) {
            (FieldSlot::Chain { chain: a, .. }, FieldSlot::Chain { chain: b, .. }) => a == b,
            _ => g == h,
        };
        plan.stages.iter().any(|stage| {
            let fields = &self.stages[stage.index].stencil.kernel().fields;
            fields
                .iter()
                .zip(&stage.grids)
                .any(|(f, &h)| f.role == Role::Input && same(h))
        })
    }

    /// Exchanges loop grid `g` (grids given read only are the caller's to exchange).
    fn exchange_grid(&mut self, across: &dyn StageDistribution<T, D>, g: usize) -> Result<()> {
        match &mut self.grids[g].1 {
            LoopGrid::Write(grid) => across.exchange(grid),
            LoopGrid::Read(_) => Ok(()),
        }
    }

    /// A hash of what every rank must give alike: steps, first step, grids' names and
    /// boundary conditions, chains, stages and their bindings, the sparse points' grids,
    /// positions, series lengths and intervals.
    fn fingerprint(&self, steps: usize) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (steps, self.first, &self.chains).hash(&mut h);
        for (name, grid) in &self.grids {
            // The global boundary conditions, which every rank's exchange plans follow.
            (name, format!("{:?}", grid_of(grid).boundaries())).hash(&mut h);
        }
        for stage in &self.stages {
            (&stage.name, &stage.stencil.kernel().name, &stage.bindings).hash(&mut h);
            for (name, _) in &stage.params {
                name.hash(&mut h);
            }
        }
        for (grid, set) in &self.sources {
            grid.hash(&mut h);
            for (p, s) in set.positions.iter().zip(&set.series) {
                (p.map(f64::to_bits), s.len()).hash(&mut h);
            }
        }
        for (grid, set) in &self.receivers {
            (grid, set.interval).hash(&mut h);
            for p in &set.positions {
                p.map(f64::to_bits).hash(&mut h);
            }
        }
        h.finish()
    }
}

/// Appends each set's new samples (`(set, traces)`, a trace per corner this rank owns).
fn keep_samples<T: Element>(
    receivers: &mut [SplitReceivers<T>],
    new: impl IntoIterator<Item = (usize, Vec<Vec<T>>)>,
) {
    for (k, traces) in new {
        for (kept, trace) in receivers[k].samples.iter_mut().zip(traces) {
            kept.extend(trace);
        }
    }
}
