//! [`Backend`] for [`CpuBackend`]: cutting a job into tiles and spreading them over the pool.
//!
//! A run picks its path once (the stencil's generated point loop, unless there is none or the
//! schedule forces the generic evaluator), cuts the interior into the schedule's tiles, and
//! hands tile indices to rayon. With all the pool's threads, every tile is a rayon item (work
//! stealing balances uneven tiles); with fewer (`threads = n`), the tiles are dealt into `n`
//! contiguous groups and each group runs on one worker. Each worker keeps one scratch space
//! for all the tiles it runs.

use rayon::prelude::*;
use stencil_core::{
    Backend, CpuSchedule, Element, Error, ErrorKind, Job, Kernel, Result, Schedule,
};

use crate::generic::{GenericRun, Program};
use crate::output_rows::OutputRows;
use crate::pool::CpuBackend;
use crate::schedules;
use crate::specialised::SpecialisedRun;
use crate::tiling::Tiling;

impl CpuBackend {
    /// The default schedule for an interior of `shape`: about four tiles per thread, cut along
    /// the outer dimensions (rows stay whole), or chunks of at least 4096 points in 1-D.
    pub fn default_cpu_schedule(&self, shape: &[usize]) -> CpuSchedule {
        schedules::default_schedule(shape, self.threads())
    }

    /// A varied sample of legal schedules for an interior of `shape` (see
    /// [`Backend::sample_schedules`]).
    pub fn sample_cpu_schedules(&self, shape: &[usize]) -> Vec<CpuSchedule> {
        schedules::sample_schedules(shape, self.threads())
    }

    /// Runs `tile(scratch, index)` for every tile index below `n_tiles` on at most `workers`
    /// threads of the pool, each worker with scratch space from `scratch`.
    fn execute<S>(
        &self,
        n_tiles: usize,
        workers: usize,
        scratch: impl Fn() -> S + Sync + Send,
        tile: impl Fn(&mut S, usize) + Sync + Send,
    ) {
        let workers = workers.clamp(1, n_tiles.max(1));
        self.pool().install(|| {
            if workers >= self.threads().min(n_tiles) {
                (0..n_tiles)
                    .into_par_iter()
                    .for_each_init(&scratch, |s, t| tile(s, t));
            } else {
                (0..workers).into_par_iter().for_each(|group| {
                    let mut s = scratch();
                    for t in group * n_tiles / workers..(group + 1) * n_tiles / workers {
                        tile(&mut s, t);
                    }
                });
            }
        });
    }
}

impl<T: Element> Backend<T> for CpuBackend {
    fn name(&self) -> String {
        "cpu".to_string()
    }

    fn default_schedule(&self, _kernel: &Kernel, shape: &[usize]) -> Schedule {
        Schedule::Cpu(self.default_cpu_schedule(shape))
    }

    fn sample_schedules(&self, _kernel: &Kernel, shape: &[usize]) -> Vec<Schedule> {
        self.sample_cpu_schedules(shape)
            .into_iter()
            .map(Schedule::Cpu)
            .collect()
    }

    /// # Errors
    /// [`ErrorKind::InvalidSchedule`] for a schedule of another backend;
    /// [`ErrorKind::BadArgument`] for an output view whose layout [`Geometry::new`] does not
    /// produce (outputs are written by row from several threads, which is sound only when
    /// distinct rows are disjoint).
    ///
    /// [`Geometry::new`]: stencil_core::Geometry::new
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
        let tiling = Tiling::new(job.shape(), &schedule.tile);
        let workers = match schedule.threads {
            0 => self.threads(),
            n => n.min(self.threads()),
        };
        let rows = stencil.cpu_rows().filter(|_| !schedule.force_generic);
        let kernel = stencil.kernel();
        let (inputs, outputs, params) = job.parts_mut();
        let outputs = outputs
            .iter_mut()
            .zip(kernel.outputs())
            .map(|(view, field)| OutputRows::new(view, &kernel.field(field).name))
            .collect::<Result<Vec<_>>>()?;
        match rows {
            Some(rows) => {
                let run = SpecialisedRun::new(rows, tiling, inputs, &outputs, params);
                self.execute(
                    tiling.n_tiles(),
                    workers,
                    || run.scratch(),
                    |s, t| run.run_tile(s, t),
                );
            }
            None => {
                let program = Program::compile(kernel);
                let run = GenericRun::new(program, tiling, inputs, &outputs, params);
                self.execute(
                    tiling.n_tiles(),
                    workers,
                    || run.scratch(),
                    |s, t| run.run_tile(s, t),
                );
            }
        }
        Ok(())
    }
}
