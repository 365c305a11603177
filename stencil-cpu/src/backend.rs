//! [`Backend`] for [`CpuBackend`]: cutting a job into core blocks and running them on the pool
//! under a static partition.
//!
//! A run resolves the schedule into a plan (`schedules::plan`), picks its path once (the
//! stencil's generated point loop, unless there is none or the schedule forces the generic
//! evaluator), cuts the interior into the plan's core blocks, and broadcasts to the pool: each
//! worker runs exactly the blocks the [`Partition`] gives it (no work stealing, so a point is
//! always computed by the same pinned thread, the one that first-touched its pages). Each
//! worker keeps one scratch space for all the blocks it runs.

use std::time::Instant;

use stencil_core::schedule::TuningSpace;
use stencil_core::{
    Backend, Capabilities, CpuSchedule, Element, Error, ErrorKind, Job, Kernel, MAX_DIMS, Result,
    Schedule,
};

use crate::generic::{GenericRun, Program};
use crate::input_rows::InputRows;
use crate::output_rows::OutputRows;
use crate::partition::Partition;
use crate::pool::CpuBackend;
use crate::reduce::{self, Reductions};
use crate::schedules;
use crate::specialised::SpecialisedRun;

impl CpuBackend {
    /// The default schedule for an interior of `shape`: about four core blocks per thread, cut
    /// along the outer dimensions (rows stay whole), or chunks of at least 4096 points in 1-D.
    /// These are explicit blocks: [`CpuSchedule::default`] (all-zero blocks) gets them too, and
    /// in 3-D, for a sweep whose grids the cache holds, the cut of the second-innermost
    /// dimension into first-level slabs, which depends on the kernel (see
    /// [`CpuSchedule::tile`](stencil_core::CpuSchedule::tile)).
    pub fn default_cpu_schedule(&self, shape: &[usize]) -> CpuSchedule {
        schedules::default_schedule(shape, self.threads())
    }

    /// The machine's memory bandwidth in bytes per second as this pool sees it: the best of
    /// five copies (streaming stores where the machine has them, so no write-allocate
    /// traffic) between two arrays of four times the effective last-level cache
    /// ([`Machine::llc`](crate::Machine::llc): measured where it was measured, since a
    /// reported size can be a host's hundreds of MiB) and at least 32 MiB each, counting the
    /// bytes read and written. Takes a few tenths of a second (the tuner runs it
    /// once per machine and thread count and caches the result).
    pub fn copy_bandwidth(&self) -> f64 {
        let machine = crate::Machine::detect();
        let elements = (4 * machine.llc()).max(32 << 20) / 8;
        let mut src = vec![0.0f64; elements];
        let mut dst = vec![0.0f64; elements];
        // The source first touched by the pool's workers, in parallel (zeros copy as fast as
        // any other values).
        self.stream_copy(&mut src, &dst, false);
        let streaming = machine.vector != crate::StreamWidth::None;
        self.stream_copy(&mut dst, &src, streaming); // warm-up: first touch of `dst`
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let start = Instant::now();
            self.stream_copy(&mut dst, &src, streaming);
            best = best.min(start.elapsed().as_secs_f64());
        }
        std::hint::black_box(&dst);
        (2 * elements * 8) as f64 / best
    }

    /// A varied sample of legal schedules for an interior of `shape` (see
    /// [`Backend::sample_schedules`]).
    pub fn sample_cpu_schedules(&self, shape: &[usize]) -> Vec<CpuSchedule> {
        schedules::sample_schedules(shape, self.threads())
    }
}

impl<T: Element> Backend<T> for CpuBackend {
    fn name(&self) -> String {
        "cpu".to_string()
    }

    fn default_schedule(&self, _kernel: &Kernel, shape: &[usize]) -> Schedule {
        Schedule::Cpu(self.default_cpu_schedule(shape))
    }

    /// Everything: the reference other backends' tuned winners are checked against;
    /// reductions computed in the order of `stencil_core::reduce` (the same bits under every
    /// schedule and thread count); a region's box tiled as the interior is, shifted to the
    /// box; outputs read in place read at each point before its store (plain stores).
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            regions: true,
            reductions: true,
            in_place: true,
            reference: true,
        }
    }

    /// `true` except for the retimed loop (kernels whose stores are sums of partial sums that
    /// repeat along the row, like the 27-point stencil: it adds in another order) on the
    /// specialised path: the generated and generic loops evaluate the IR's operations in
    /// order, through the same [`Element`] math functions as the interpreter, and the compiler
    /// contracts nothing into fused multiply-adds.
    fn matches_interpreter_bits(&self, kernel: &Kernel, schedule: &Schedule) -> bool {
        let generic = matches!(schedule, Schedule::Cpu(s) if s.force_generic);
        generic || stencil_core::passes::linear::retimed_stores(kernel).is_none()
    }

    fn sample_schedules(&self, _kernel: &Kernel, shape: &[usize]) -> Vec<Schedule> {
        self.sample_cpu_schedules(shape)
            .into_iter()
            .map(Schedule::Cpu)
            .collect()
    }

    fn tuning_device(&self) -> Option<(String, usize)> {
        Some((self.fingerprint().to_string(), self.threads()))
    }

    fn tuning_space(&self, kernel: &Kernel, shape: &[usize]) -> Option<TuningSpace> {
        let machine = crate::Machine::detect();
        let space = crate::ScheduleSpace::new(machine, kernel, shape, self.threads());
        Some(space.tuning_space(machine, kernel.elem().size_bytes(), self.threads()))
    }

    fn row_paddings(&self, kernel: &Kernel, shape: &[usize]) -> Vec<usize> {
        let machine = crate::Machine::detect();
        crate::ScheduleSpace::new(machine, kernel, shape, self.threads())
            .row_paddings()
            .to_vec()
    }

    fn measure_bandwidth(&self) -> Option<f64> {
        Some(self.copy_bandwidth())
    }

    /// The caches sysfs reports ([`Machine::reported_caches`](crate::Machine::reported_caches)).
    fn reported_caches(&self) -> Option<stencil_core::CacheSizes> {
        Some(crate::Machine::detect().reported_caches())
    }

    /// Sizes everything by `caches` from now on, process-wide
    /// ([`set_measured_caches`](crate::set_measured_caches)).
    fn use_measured_caches(&self, caches: stencil_core::CacheSizes) {
        crate::set_measured_caches(caches);
    }

    /// Temporal blocking by wavefront when the schedule's
    /// [`time_depth`](CpuSchedule::time_depth) (or the default's) is above 1 and no grid of
    /// the rotation has a periodic face in dimension 0; steps one after another otherwise (see
    /// the crate's `steps` module).
    ///
    /// # Errors
    /// As [`run`](Backend::run).
    fn run_steps(
        &self,
        job: &mut stencil_core::TimeLoop<'_, T>,
        schedule: &Schedule,
        steps: usize,
    ) -> Result<()> {
        match schedule {
            Schedule::Cpu(s) => self.cpu_run_steps(job, s, steps, |step| {
                <Self as Backend<T>>::run(self, step, schedule)
            }),
            other => Err(Error::new(
                ErrorKind::InvalidSchedule,
                format!("the CPU backend cannot run schedule {other:?}"),
            )),
        }
    }

    /// Temporal blocking across the stages by wavefront, as [`run_steps`](Backend::run_steps)
    /// blocks one kernel's steps (every stage of a step lags the one before by the largest
    /// reach of any stage); the steps of [`StageLoop::step_with`](stencil_core::StageLoop::step_with)
    /// otherwise.
    ///
    /// # Errors
    /// As [`run`](Backend::run).
    fn run_stages(
        &self,
        job: &mut stencil_core::StageLoop<'_, T>,
        schedule: &Schedule,
        steps: usize,
    ) -> Result<()> {
        match schedule {
            Schedule::Cpu(s) => self.cpu_run_stages(job, s, steps, |stage| {
                <Self as Backend<T>>::run(self, stage, schedule)
            }),
            other => Err(Error::new(
                ErrorKind::InvalidSchedule,
                format!("the CPU backend cannot run schedule {other:?}"),
            )),
        }
    }

    /// As many planes of dimension 0 as two slabs of the thickest blocking the tuning
    /// space offers (slab plus lag), and at least enough that the trial grids exceed twice
    /// the last-level cache: every candidate's slabs meet the caches as on the real grids,
    /// and a trial of a large loop costs a fraction of its steps. Plain steps under `sweep`
    /// run in the trial with core blocks cut to the trial's planes
    /// ([`steps_trial_schedule`](Backend::steps_trial_schedule)), so `sweep` does not size
    /// the trial.
    fn steps_trial_shape(&self, kernel: &Kernel, shape: &[usize], _sweep: &Schedule) -> Vec<usize> {
        crate::time_loop::trial_shape(crate::Machine::detect(), kernel, shape)
    }

    /// Plain steps (depth 1 or less) whose core blocks of dimension 0 would leave a worker
    /// without a block on the trial's planes get blocks of the trial's planes over the
    /// workers, so every worker of the loop works in the trial as in the loop; blocked
    /// schedules are sized for the trial grids by their own slabs and run as given.
    fn steps_trial_schedule(&self, schedule: &Schedule, trial_shape: &[usize]) -> Schedule {
        match schedule {
            Schedule::Cpu(s) if s.time_depth <= 1 && s.tile[0] > 0 => {
                let workers = match s.threads {
                    0 => self.threads(),
                    t => t.min(self.threads()),
                }
                .max(1);
                let planes = trial_shape.first().copied().unwrap_or(1);
                let mut tile = s.tile;
                tile[0] = tile[0].min(planes.div_ceil(workers)).max(1);
                Schedule::Cpu(CpuSchedule { tile, ..*s })
            }
            other => *other,
        }
    }

    /// The default schedule with blocking depths 1 to 4 and slabs of 1 to 3 planes (depths
    /// that step counts do not divide, slabs thinner than the lag), one with a single
    /// thread, the generic path blocked, and in 3-D small tiles on two workers (so a share of
    /// dimension 1 holds several tiles on a machine of any size).
    fn sample_steps_schedules(&self, _kernel: &Kernel, shape: &[usize]) -> Vec<Schedule> {
        let default = self.default_cpu_schedule(shape);
        let mut out = Vec::new();
        for (time_depth, time_slab) in [(1, 0), (2, 1), (3, 2), (4, 3), (0, 0)] {
            out.push(CpuSchedule {
                time_depth,
                time_slab,
                ..default
            });
        }
        out.push(CpuSchedule {
            time_depth: 2,
            threads: 1,
            ..default
        });
        out.push(CpuSchedule {
            time_depth: 3,
            time_slab: 2,
            force_generic: true,
            ..default
        });
        if shape.len() >= 3 {
            // Tiles of 3 planes by 2 rows (with faces that are values or user-managed), on two
            // workers.
            let mut tile = default.tile;
            tile[1] = 2;
            out.push(CpuSchedule {
                tile,
                time_depth: 4,
                time_slab: 3,
                threads: 2,
                ..default
            });
        }
        out.into_iter().map(Schedule::Cpu).collect()
    }

    fn steps_tuning_space(
        &self,
        kernel: &Kernel,
        shape: &[usize],
        steps: usize,
        sweep: &Schedule,
    ) -> Option<TuningSpace> {
        let sweep = match sweep {
            Schedule::Cpu(s) => *s,
            _ => self.default_cpu_schedule(shape),
        };
        Some(crate::time_loop::steps_tuning_space(
            crate::Machine::detect(),
            kernel,
            shape,
            self.threads(),
            steps,
            &sweep,
        ))
    }

    /// # Errors
    /// [`ErrorKind::InvalidSchedule`] for a schedule of another backend;
    /// [`ErrorKind::BadArgument`] for an output view whose layout [`Geometry::padded`] does not
    /// produce (outputs are written by row from several threads, which is sound only when
    /// distinct rows are disjoint).
    ///
    /// [`Geometry::padded`]: stencil_core::Geometry::padded
    fn run(&self, job: &mut Job<'_, T>, schedule: &Schedule) -> Result<()> {
        // `Schedule` is non-exhaustive: it may gain variants for other backends.
        let schedule = match schedule {
            Schedule::Cpu(s) => *s,
            other => {
                return Err(Error::new(
                    ErrorKind::InvalidSchedule,
                    format!("the CPU backend cannot run schedule {other:?}"),
                ));
            }
        };
        let stencil = job.stencil();
        let kernel = stencil.kernel();
        let reductions = Reductions::<T>::new(kernel, job.shape());
        let schedule = match reductions {
            Some(_) => reduce::align_schedule(
                &schedule,
                job.shape(),
                schedules::default_schedule(
                    job.shape(),
                    match schedule.threads {
                        0 => self.threads(),
                        n => n.min(self.threads()),
                    }
                    .max(1),
                )
                .tile,
            ),
            None => schedule,
        };
        // The box to compute: the region, or the whole interior.
        let (offset, extents): ([usize; MAX_DIMS], Vec<usize>) = match job.region() {
            Some((lo, hi)) => (lo, (0..job.shape().len()).map(|d| hi[d] - lo[d]).collect()),
            None => ([0; MAX_DIMS], job.shape().to_vec()),
        };
        if extents.contains(&0) {
            return Ok(());
        }
        let streams = job.outputs().len() + kernel.reductions.len();
        let points = extents.iter().product::<usize>() * streams;
        let output_bytes = points * std::mem::size_of::<T>();
        let grid_bytes = output_bytes
            + extents.iter().product::<usize>() * job.inputs().len() * std::mem::size_of::<T>();
        let mut plan = schedules::plan(
            &schedule,
            &extents,
            std::mem::size_of::<T>(),
            self.threads(),
            output_bytes,
            grid_bytes,
            // Only the default's blocks are cut (explicit ones, as tuned schedules have, are
            // not): no analysis for other schedules.
            if schedule.tile[..extents.len().min(MAX_DIMS)]
                .iter()
                .all(|&t| t == 0)
            {
                schedules::slab_bytes_per_row(kernel, &extents)
            } else {
                0
            },
        );
        plan.tiling = plan.tiling.shifted(offset);
        let partition = Partition::new(plan.tiling.n_tiles(), plan.workers, plan.chunk);
        let point_loop = stencil.cpu_loop().filter(|_| !schedule.force_generic);
        let step = job.step();
        let (inputs, outputs, params) = job.parts_mut();
        let inputs: Vec<InputRows<'_, T>> = inputs.iter().map(|&v| InputRows::new(v)).collect();
        let outputs = outputs
            .iter_mut()
            .zip(kernel.outputs())
            .map(|(view, field)| OutputRows::new(view, &kernel.field(field).name))
            .collect::<Result<Vec<_>>>()?;
        match point_loop {
            Some(point_loop) => {
                let run = SpecialisedRun::new(
                    point_loop,
                    plan.tiling,
                    &inputs,
                    &outputs,
                    params,
                    plan.rows,
                    reductions.as_ref(),
                )
                .at_step(step);
                self.execute(
                    partition,
                    points,
                    || run.scratch(),
                    |s, t| {
                        run.run_tile(s, t);
                        run.hand_over(s);
                    },
                );
            }
            None => {
                let program = Program::compile(kernel);
                let options = (plan.rows.row_block, plan.rows.streaming);
                let run = GenericRun::new(
                    &program,
                    plan.tiling,
                    &inputs,
                    &outputs,
                    params,
                    options,
                    reductions.as_ref(),
                )
                .at_step(step);
                self.execute(
                    partition,
                    points,
                    || run.scratch(),
                    |s, t| {
                        run.run_tile(s, t);
                        run.hand_over(s);
                    },
                );
            }
        }
        if let Some(reductions) = reductions {
            for (r, value) in reductions.finish().into_iter().enumerate() {
                job.set_reduction(r, value);
            }
        }
        Ok(())
    }
}
