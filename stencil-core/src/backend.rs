//! What a backend is: the [`Backend`] trait and the validated [`Job`] it runs.
//!
//! The facade validates a call once by building a [`Job`] (shapes, halos, dimension counts,
//! argument counts); a backend receives only valid jobs and may rely on that geometry, which
//! is what lets the CPU backend write output rows through raw pointers soundly.

use crate::analysis::field_radius;
use crate::capabilities::Capabilities;
use crate::element::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::ir::Kernel;
use crate::schedule::{CacheSizes, Schedule, TuningSpace};
use crate::stencil::Stencil;
use crate::time_loop::TimeLoop;
use crate::view::{FieldView, FieldViewMut, Geometry};

/// One validated kernel call: the stencil, its grids and its parameters.
///
/// Constructed only through [`Job::new`], which checks every precondition a backend relies
/// on; fields are read through accessors.
#[derive(Debug)]
pub struct Job<'a, T: Element> {
    stencil: &'a Stencil<T>,
    inputs: Vec<FieldView<'a, T>>,
    outputs: Vec<FieldViewMut<'a, T>>,
    params: Vec<T>,
    /// The reductions' results, set by the backend that runs the job.
    reduced: Vec<Option<T>>,
    /// The box of interior points to compute (`lo[d]..hi[d]`), when not the whole interior.
    region: Option<([usize; crate::ir::MAX_DIMS], [usize; crate::ir::MAX_DIMS])>,
}

impl<'a, T: Element> Job<'a, T> {
    /// Validates and bundles a call. `inputs`, `outputs` and `params` are in the kernel's
    /// declaration order of each kind.
    ///
    /// # Errors
    /// - [`ErrorKind::BadArgument`]: wrong number of inputs, outputs or parameters; a view
    ///   whose geometry is not a grid's layout over exactly its storage
    ///   ([`check_layout`](crate::view::check_layout)).
    /// - [`ErrorKind::DimensionMismatch`]: a grid's dimension count differs from the kernel's.
    /// - [`ErrorKind::ShapeMismatch`]: grids differ in interior shape.
    /// - [`ErrorKind::HaloTooNarrow`]: an input's halo is narrower than that input's own
    ///   reads reach ([`field_radius`]: an input read only at its own point needs no halo).
    /// - [`ErrorKind::AliasedGrids`]: two grids share storage.
    pub fn new(
        stencil: &'a Stencil<T>,
        inputs: Vec<FieldView<'a, T>>,
        outputs: Vec<FieldViewMut<'a, T>>,
        params: Vec<T>,
    ) -> Result<Self> {
        let kernel = stencil.kernel();
        let count = |what: &str, expected: usize, found: usize| -> Result<()> {
            if expected == found {
                Ok(())
            } else {
                Err(Error::new(
                    ErrorKind::BadArgument,
                    format!(
                        "kernel `{}` takes {expected} {what}, {found} given",
                        kernel.name
                    ),
                ))
            }
        };
        count("inputs", kernel.inputs().count(), inputs.len())?;
        count("outputs", kernel.outputs().count(), outputs.len())?;
        count("parameters", kernel.params.len(), params.len())?;

        let names_in: Vec<&str> = kernel
            .inputs()
            .map(|f| kernel.field(f).name.as_str())
            .collect();
        let names_out: Vec<&str> = kernel
            .outputs()
            .map(|f| kernel.field(f).name.as_str())
            .collect();
        let geoms: Vec<(&str, Geometry)> = names_in
            .iter()
            .zip(&inputs)
            .map(|(n, v)| (*n, v.geom))
            .chain(names_out.iter().zip(&outputs).map(|(n, v)| (*n, v.geom)))
            .collect();
        for (name, len, geom) in names_in
            .iter()
            .zip(&inputs)
            .map(|(n, v)| (*n, v.data.len(), &v.geom))
            .chain(
                names_out
                    .iter()
                    .zip(&outputs)
                    .map(|(n, v)| (*n, v.data.len(), &v.geom)),
            )
        {
            crate::view::check_layout::<T>(name, geom, len)?;
        }
        let Some(&(first_name, first)) = geoms.first() else {
            return Err(Error::new(
                ErrorKind::BadArgument,
                format!("kernel `{}` takes no grid", kernel.name),
            ));
        };
        for &(name, g) in &geoms {
            if g.n_dims != kernel.n_dims {
                return Err(Error::new(
                    ErrorKind::DimensionMismatch,
                    format!(
                        "kernel `{}` is {}-D but grid `{name}` is {}-D",
                        kernel.name, kernel.n_dims, g.n_dims
                    ),
                ));
            }
            if g.interior() != first.interior() {
                return Err(Error::new(
                    ErrorKind::ShapeMismatch,
                    format!(
                        "grid `{name}` has shape {:?} but grid `{first_name}` has shape {:?}",
                        g.interior(),
                        first.interior()
                    ),
                ));
            }
        }
        for ((name, v), field) in names_in.iter().zip(&inputs).zip(kernel.inputs()) {
            let reach = field_radius(kernel, field).max();
            if (v.geom.halo as u64) < u64::from(reach) {
                return Err(Error::new(
                    ErrorKind::HaloTooNarrow,
                    format!(
                        "kernel `{}` reads input `{name}` up to {reach} points away but it has \
                         a halo of {}: allocate it with `Grid::with_halo(shape, {reach})` \
                         (`Grid::new` gives a halo of {})",
                        kernel.name,
                        v.geom.halo,
                        crate::grid::DEFAULT_HALO
                    ),
                ));
            }
        }
        // Inputs may share storage with each other (the same grid read twice); an output may
        // share storage with nothing.
        let ranges: Vec<(&str, bool, std::ops::Range<usize>)> = names_in
            .iter()
            .zip(&inputs)
            .map(|(n, v)| (*n, false, v.data.as_ptr_range()))
            .chain(
                names_out
                    .iter()
                    .zip(&outputs)
                    .map(|(n, v)| (*n, true, v.data.as_ptr_range())),
            )
            .map(|(n, out, r)| (n, out, r.start as usize..r.end as usize))
            .collect();
        for (a, (name_a, out_a, ra)) in ranges.iter().enumerate() {
            for (name_b, out_b, rb) in &ranges[a + 1..] {
                let overlap = ra.start < rb.end && rb.start < ra.end;
                if overlap && (*out_a || *out_b) {
                    return Err(Error::new(
                        ErrorKind::AliasedGrids,
                        format!("grids `{name_a}` and `{name_b}` share storage"),
                    ));
                }
            }
        }
        Ok(Job {
            stencil,
            inputs,
            outputs,
            params,
            reduced: vec![None; kernel.reductions.len()],
            region: None,
        })
    }

    /// The stencil being run.
    pub fn stencil(&self) -> &'a Stencil<T> {
        self.stencil
    }

    /// The kernel's IR.
    pub fn kernel(&self) -> &'a Kernel {
        self.stencil.kernel()
    }

    /// Interior shape of the iteration (common to all grids), first `n_dims` entries.
    pub fn shape(&self) -> &[usize] {
        match self.outputs.first() {
            Some(out) => out.geom.interior(),
            // `Job::new` saw at least one grid.
            None => self.inputs[0].geom.interior(),
        }
    }

    /// Stores the result of reduction number `reduction` (declaration order); a backend that
    /// runs a kernel with reductions sets every one, combined in the order of
    /// [`crate::reduce`].
    ///
    /// # Panics
    /// If `reduction` is out of range (a backend bug).
    pub fn set_reduction(&mut self, reduction: usize, value: T) {
        self.reduced[reduction] = Some(value);
    }

    /// The reductions' results in declaration order, `None` where the backend set none.
    pub fn reductions(&self) -> &[Option<T>] {
        &self.reduced
    }

    /// Forgets the reductions' results (before a run whose results are wanted).
    pub fn clear_reductions(&mut self) {
        self.reduced.fill(None);
    }

    /// Input views, in declaration order.
    pub fn inputs(&self) -> &[FieldView<'a, T>] {
        &self.inputs
    }

    /// Output views, in declaration order.
    pub fn outputs_mut(&mut self) -> &mut [FieldViewMut<'a, T>] {
        &mut self.outputs
    }

    /// Output views, read-only.
    pub fn outputs(&self) -> &[FieldViewMut<'a, T>] {
        &self.outputs
    }

    /// Parameter values, in declaration order.
    pub fn params(&self) -> &[T] {
        &self.params
    }

    /// Restricts the job to the box `lo[d]..hi[d]` of the interior (one entry per dimension)
    /// for a run on `backend`, which computes only the box's points and writes no other
    /// output point. An empty box computes nothing. Only a backend that
    /// [runs regions](Capabilities::regions) takes a region (another would compute
    /// the whole interior): run the job on the backend named here.
    ///
    /// # Errors
    /// - [`ErrorKind::BadArgument`] for a box with another dimension count than the kernel's
    ///   or reaching past the interior, or on a kernel with reductions (a reduction is over
    ///   the whole interior).
    /// - [`ErrorKind::BackendUnavailable`] when `backend` does not support regions (as
    ///   [`check_support`] refuses what a backend does not compute).
    ///
    /// An error leaves the job's region as it was.
    pub fn set_region(
        &mut self,
        backend: &dyn Backend<T>,
        lo: &[usize],
        hi: &[usize],
    ) -> Result<()> {
        let shape = self.shape().to_vec();
        let bad = lo.len() != shape.len()
            || hi.len() != shape.len()
            || lo
                .iter()
                .zip(hi)
                .zip(&shape)
                .any(|((&l, &h), &n)| l > h || h > n);
        if bad {
            return Err(Error::new(
                ErrorKind::BadArgument,
                format!("region {lo:?}..{hi:?} of an interior of shape {shape:?}"),
            ));
        }
        if self.kernel().has_reductions() {
            return Err(Error::new(
                ErrorKind::BadArgument,
                format!(
                    "kernel `{}` has reductions, which cover the whole interior: it runs on no \
                     region",
                    self.kernel().name
                ),
            ));
        }
        if !backend.capabilities().regions {
            return Err(Error::new(
                ErrorKind::BackendUnavailable,
                format!(
                    "kernel `{}`: backend `{}` does not run regions (it computes the whole \
                     interior); run the job on the CPU backend, or without a region",
                    self.kernel().name,
                    backend.name()
                ),
            ));
        }
        let mut l = [0; crate::ir::MAX_DIMS];
        let mut h = [1; crate::ir::MAX_DIMS];
        l[..lo.len()].copy_from_slice(lo);
        h[..hi.len()].copy_from_slice(hi);
        self.region = Some((l, h));
        Ok(())
    }

    /// The box of the interior to compute ([`set_region`](Self::set_region)), `None` for the
    /// whole interior. Entries beyond the kernel's dimensions are `0..1`.
    pub fn region(&self) -> Option<([usize; crate::ir::MAX_DIMS], [usize; crate::ir::MAX_DIMS])> {
        self.region
    }

    /// Splits the job into its parts (inputs, outputs, parameters) for a backend that needs
    /// to borrow them separately.
    pub fn parts_mut(&mut self) -> (&[FieldView<'a, T>], &mut [FieldViewMut<'a, T>], &[T]) {
        (&self.inputs, &mut self.outputs, &self.params)
    }
}

/// `Ok` when `backend` can run `kernel`: [`ErrorKind::BackendUnavailable`] for a kernel with
/// reductions on a backend that does not compute them ([`Capabilities::reductions`]), or
/// one reading an output in place on a backend that does not run such kernels
/// ([`Capabilities::in_place`]). The facade calls it before every run.
///
/// # Errors
/// As above, naming the kernel, the backend and what is missing.
pub fn check_support<T: Element>(backend: &dyn Backend<T>, kernel: &Kernel) -> Result<()> {
    let capabilities = backend.capabilities();
    let missing = if kernel.has_reductions() && !capabilities.reductions {
        "reductions"
    } else if !crate::analysis::in_place_outputs(kernel).is_empty() && !capabilities.in_place {
        "outputs read in place"
    } else {
        return Ok(());
    };
    Err(Error::new(
        ErrorKind::BackendUnavailable,
        format!(
            "kernel `{}` has {missing}, which backend `{}` does not support; run it on the CPU \
             backend",
            kernel.name,
            backend.name()
        ),
    ))
}

/// A backend: something that runs validated jobs under a schedule.
///
/// Backends describe themselves with data (name, availability, schedules); shared logic such
/// as `verify` never matches on which backend it holds.
pub trait Backend<T: Element>: Send + Sync {
    /// Human-readable name (`"cpu"`, `"cuda:0"`, ...).
    fn name(&self) -> String;

    /// The schedule used when nothing better is known.
    fn default_schedule(&self, kernel: &Kernel, shape: &[usize]) -> Schedule;

    /// A small, varied sample of legal schedules for `kernel` on `shape` (used by `verify`):
    /// tiles that do and do not divide the shape, one and several threads, generic and
    /// specialised paths.
    fn sample_schedules(&self, kernel: &Kernel, shape: &[usize]) -> Vec<Schedule>;

    /// Whether this backend computes every point of `kernel` under `schedule` (single sweeps
    /// and time loops) with the reference interpreter's operations in the interpreter's order
    /// and element type, so that every result is the interpreter's bits. `verify` and
    /// `verify_steps` then compare exactly instead of within a tolerance. The default is
    /// `false`: a backend that reassociates, contracts into fused multiply-adds or uses its
    /// own math functions must not claim it.
    fn matches_interpreter_bits(&self, kernel: &Kernel, schedule: &Schedule) -> bool {
        let _ = (kernel, schedule);
        false
    }

    /// What this backend computes beyond plain sweeps (regions, reductions, outputs read in
    /// place) and whether it is the tuner's reference; see [`Capabilities`]. The default is
    /// [`Capabilities::default`], all `false`: regions and such kernels are then refused
    /// ([`Job::set_region`], [`check_support`]) and tuned winners are checked against the CPU
    /// backend.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    /// Runs `job` under `schedule`: writes every interior point of every output, nothing else.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidSchedule`] if `schedule` is not for this backend; backend-specific
    /// failures otherwise.
    fn run(&self, job: &mut Job<'_, T>, schedule: &Schedule) -> Result<()>;

    /// Runs `steps` more steps of the time loop `job` under `schedule`, leaving
    /// [`TimeLoop::done`] advanced by `steps`. Each step computes what [`run`](Self::run)
    /// computes and fills the halo of every grid it wrote (see [`crate::time_loop`]); a backend may
    /// run several steps per trip through memory (temporal blocking) as long as every value
    /// it leaves is the one the steps one after another leave, bit for bit. The default runs
    /// the steps one after another through [`run`](Self::run).
    ///
    /// # Errors
    /// As [`run`](Self::run); steps done before an error are counted in `job`.
    fn run_steps(
        &self,
        job: &mut TimeLoop<'_, T>,
        schedule: &Schedule,
        steps: usize,
    ) -> Result<()> {
        for _ in 0..steps {
            job.step_with(|step| self.run(step, schedule))?;
        }
        Ok(())
    }

    /// A varied sample of legal schedules for time loops of `kernel` on `shape` (used by
    /// `verify_steps`): the default [`sample_schedules`](Self::sample_schedules), which a
    /// backend overrides to cover its time-loop options (temporal blocking depths and slabs,
    /// fused steps).
    fn sample_steps_schedules(&self, kernel: &Kernel, shape: &[usize]) -> Vec<Schedule> {
        self.sample_schedules(kernel, shape)
    }

    /// The candidates the tuner may choose from for a time loop of `kernel` on an interior of
    /// `shape` running about `steps` steps per call, or `None` (the default) when time loops on
    /// this backend are not tuned (they then run [`default_schedule`](Self::default_schedule)).
    /// Each trial runs [`trial_steps`](crate::time_loop::trial_steps)`(steps)` steps, which a
    /// candidate's temporal blocking should divide. `sweep` is the schedule the loop's single
    /// sweep runs under (tuned or default): a backend should offer steps one after another
    /// under it as a [baseline](TuningSpace::baselines), so the tuned loop is never slower
    /// than plain steps of its sweep.
    fn steps_tuning_space(
        &self,
        kernel: &Kernel,
        shape: &[usize],
        steps: usize,
        sweep: &Schedule,
    ) -> Option<TuningSpace> {
        let _ = (kernel, shape, steps, sweep);
        None
    }

    /// The interior shape of the grids a time loop's tuning trials run on, for a loop of
    /// `kernel` on an interior of `shape` whose single sweep runs under `sweep`: `shape`
    /// itself (the default), or a part of it that is cheaper to step yet meets the backend's
    /// blocks and caches as `shape` does, under `sweep` too (trials compare candidates with
    /// each other, never with the real loop).
    fn steps_trial_shape(&self, kernel: &Kernel, shape: &[usize], sweep: &Schedule) -> Vec<usize> {
        let _ = (kernel, sweep);
        shape.to_vec()
    }

    /// The schedule a time loop's tuning trial on grids of `trial_shape` (from
    /// [`steps_trial_shape`](Self::steps_trial_shape)) runs for the candidate `schedule` of
    /// the whole loop: `schedule` itself (the default), or the same schedule with the blocks
    /// that would leave workers idle on the trial's smaller grids cut to fit them (a sweep's
    /// core blocks sized for the whole grid), so that the trial costs the candidate what the
    /// whole loop would, per point.
    fn steps_trial_schedule(&self, schedule: &Schedule, trial_shape: &[usize]) -> Schedule {
        let _ = trial_shape;
        *schedule
    }

    /// What a tuned schedule on this backend depends on besides the kernel and the shape: the
    /// device's fingerprint (CPU model and core count; GPU name and compute capability) and the
    /// number of threads a schedule runs on. `None` (the default) means the backend is not
    /// tuned: calls run its default schedule.
    fn tuning_device(&self) -> Option<(String, usize)> {
        None
    }

    /// The candidates the tuner may choose from for `kernel` on an interior of `shape`, or
    /// `None` (the default) when the backend is not tuned.
    fn tuning_space(&self, kernel: &Kernel, shape: &[usize]) -> Option<TuningSpace> {
        let _ = (kernel, shape);
        None
    }

    /// The row paddings (in cache lines, see [`Grid::with_padding`](crate::grid::Grid::with_padding))
    /// worth timing for `kernel` on an interior of `shape`: the layout axis of the backend's
    /// schedule space, searched at allocation time by `Launch::search_padding` (a grid's
    /// layout cannot change under a run). `[0]` (the default) for a backend whose speed does
    /// not depend on the host grids' layout.
    fn row_paddings(&self, kernel: &Kernel, shape: &[usize]) -> Vec<usize> {
        let _ = (kernel, shape);
        vec![0]
    }

    /// The device's memory bandwidth in bytes per second, measured now (the tuner caches it
    /// per device). `None` (the default) when the backend cannot measure it.
    fn measure_bandwidth(&self) -> Option<f64> {
        None
    }

    /// The device's CPU caches as the system reports them (for the CPU backend, sysfs), which
    /// a working-set sweep checks (stencil-tune's probe) before the backend is told what it
    /// measured ([`use_measured_caches`](Self::use_measured_caches)). `None` (the default)
    /// when the backend has no CPU caches to measure (GPU backends).
    fn reported_caches(&self) -> Option<CacheSizes> {
        None
    }

    /// Tells the backend the cache capacities measured on its device: from now on it sizes
    /// everything that depends on them (blocks, temporal blocking, streaming stores, its
    /// tuning spaces' cache figures) by `caches` instead of the reported ones. The default
    /// ignores them (a backend without CPU caches).
    fn use_measured_caches(&self, caches: CacheSizes) {
        let _ = caches;
    }
}
