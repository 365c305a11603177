//! [`Launch`]: one kernel call, bound to its grids and parameters, validated and run.
//!
//! The macro-generated function of a kernel returns a fully bound `Launch`; kernels built at
//! run time bind their arguments by name. `run` is where every run-time misuse becomes an
//! [`Error`]: a missing or unknown argument, grids of different shapes, a halo narrower than the
//! kernel reads, an input whose interior-dependent halo is stale, a grid passed as both input
//! and output (impossible through the borrow checker, checked anyway). After a successful run
//! every output's halo is filled according to its boundary conditions, so the output can be
//! the next sweep's input, and every reduction's result is in its [`Sum`], [`Min`] or [`Max`].

use stencil_core::grid::Grid;
use stencil_core::{
    Backend, Element, Error, ErrorKind, Job, ReductionTarget, Result, Schedule, Stencil,
};
#[cfg(doc)]
use stencil_core::{Max, Min, Sum};
use stencil_cpu::CpuBackend;
use stencil_tune::{TunePolicy, TuningCache};

use crate::padding::{self, PaddingReport};
use crate::tuning::{self, CacheChoice, TuneReport, TuneSettings};

/// One call of a kernel: the stencil, its grids and parameters, and optionally where and how
/// to run it. Nothing happens until [`run`](Launch::run).
#[must_use = "a Launch does nothing until `.run()` is called"]
pub struct Launch<'g, T: Element, const D: usize> {
    stencil: &'g Stencil<T>,
    inputs: Vec<Option<&'g Grid<T, D>>>,
    outputs: Vec<Option<&'g mut Grid<T, D>>>,
    params: Vec<Option<T>>,
    reductions: Vec<Option<&'g mut dyn ReductionTarget<T>>>,
    backend: Option<&'g dyn Backend<T>>,
    schedule: Option<Schedule>,
    tune: TuneSettings,
    error: Option<Error>,
    /// The step number the kernel reads as `step()` (see `at_step`).
    step: u64,
}

impl<'g, T: Element, const D: usize> Launch<'g, T, D> {
    /// A call of `stencil` with no arguments bound yet; bind them with [`input`](Self::input),
    /// [`output`](Self::output) and [`param`](Self::param).
    pub fn new(stencil: &'g Stencil<T>) -> Self {
        let kernel = stencil.kernel();
        let mut launch = Launch {
            stencil,
            inputs: (0..kernel.inputs().count()).map(|_| None).collect(),
            outputs: (0..kernel.outputs().count()).map(|_| None).collect(),
            params: vec![None; kernel.params.len()],
            reductions: (0..kernel.reductions.len()).map(|_| None).collect(),
            backend: None,
            schedule: None,
            tune: TuneSettings::default(),
            error: None,
            step: 0,
        };
        if kernel.n_dims != D {
            launch.error = Some(Error::new(
                ErrorKind::DimensionMismatch,
                format!(
                    "kernel `{}` is {}-D but is launched on {D}-D grids",
                    kernel.name, kernel.n_dims
                ),
            ));
        }
        launch
    }

    /// A fully bound call; used by the code `stencil!` generates (arguments in declaration
    /// order of each kind).
    #[doc(hidden)]
    pub fn from_macro(
        stencil: &'g Stencil<T>,
        inputs: Vec<&'g Grid<T, D>>,
        outputs: Vec<&'g mut Grid<T, D>>,
        params: Vec<T>,
    ) -> Self {
        let mut launch = Launch::new(stencil);
        launch.inputs = inputs.into_iter().map(Some).collect();
        launch.outputs = outputs.into_iter().map(Some).collect();
        launch.params = params.into_iter().map(Some).collect();
        launch
    }

    /// Binds the reductions of a call `stencil!` generated (declaration order); used by the
    /// code it generates.
    #[doc(hidden)]
    pub fn with_reductions(mut self, targets: Vec<&'g mut dyn ReductionTarget<T>>) -> Self {
        if targets.len() != self.reductions.len() {
            let e = Error::new(
                ErrorKind::BadArgument,
                format!(
                    "kernel `{}` has {} reductions, {} given",
                    self.stencil.kernel().name,
                    self.reductions.len(),
                    targets.len()
                ),
            );
            self.fail(e);
            return self;
        }
        self.reductions = targets.into_iter().map(Some).collect();
        self
    }

    /// Binds reduction `name` to `target`, a [`Sum`], [`Min`] or [`Max`] matching the
    /// reduction's declared operation; after a successful [`run`](Self::run) it holds the
    /// result. Binding a reduction twice, or to a target of another operation, makes the call
    /// fail with [`ErrorKind::BadArgument`].
    pub fn reduction(mut self, name: &str, target: &'g mut dyn ReductionTarget<T>) -> Self {
        let kernel = self.stencil.kernel();
        match kernel.reduction_by_name(name) {
            Some(r) if self.reductions[r.index()].is_some() => {
                let e = self.twice(name, "reduction");
                self.fail(e);
            }
            Some(r) if kernel.reductions[r.index()].op != target.op() => {
                let e = Error::new(
                    ErrorKind::BadArgument,
                    format!(
                        "kernel `{}`: reduction `{name}` is a `{}`, not a `{}`",
                        kernel.name,
                        kernel.reductions[r.index()].op.type_name(),
                        target.op().type_name()
                    ),
                );
                self.fail(e);
            }
            Some(r) => self.reductions[r.index()] = Some(target),
            None => {
                let e = self.unknown(name, "reduction");
                self.fail(e);
            }
        }
        self
    }

    /// Binds input field `name` to `grid`. Binding a field twice makes the call fail with
    /// [`ErrorKind::BadArgument`].
    pub fn input(mut self, name: &str, grid: &'g Grid<T, D>) -> Self {
        match self.ordinal(name, stencil_core::Role::Input) {
            Ok(i) if self.inputs[i].is_some() => {
                let e = self.twice(name, "input");
                self.fail(e);
            }
            Ok(i) => self.inputs[i] = Some(grid),
            Err(e) => self.fail(e),
        }
        self
    }

    /// Binds output field `name` to `grid`. Binding a field twice makes the call fail with
    /// [`ErrorKind::BadArgument`].
    pub fn output(mut self, name: &str, grid: &'g mut Grid<T, D>) -> Self {
        match self.ordinal(name, stencil_core::Role::Output) {
            Ok(i) if self.outputs[i].is_some() => {
                let e = self.twice(name, "output");
                self.fail(e);
            }
            Ok(i) => self.outputs[i] = Some(grid),
            Err(e) => self.fail(e),
        }
        self
    }

    /// Binds scalar parameter `name` to `value`. Binding a parameter twice makes the call
    /// fail with [`ErrorKind::BadArgument`].
    pub fn param(mut self, name: &str, value: T) -> Self {
        match self.stencil.kernel().param_by_name(name) {
            Some(p) if self.params[p.index()].is_some() => {
                let e = self.twice(name, "parameter");
                self.fail(e);
            }
            Some(p) => self.params[p.index()] = Some(value),
            None => {
                let e = self.unknown(name, "parameter");
                self.fail(e);
            }
        }
        self
    }

    fn twice(&self, name: &str, what: &str) -> Error {
        Error::new(
            ErrorKind::BadArgument,
            format!(
                "kernel `{}`: {what} `{name}` is given twice",
                self.stencil.kernel().name
            ),
        )
    }

    /// Runs on `backend` instead of the default (the global CPU backend).
    pub fn on(mut self, backend: &'g dyn Backend<T>) -> Self {
        self.backend = Some(backend);
        self
    }

    /// Runs under `schedule`: no tuning, no cache.
    pub fn schedule(mut self, schedule: Schedule) -> Self {
        self.schedule = Some(schedule);
        self
    }

    /// Tunes under `policy` instead of the process's policy ([`tuning::set_policy`],
    /// else `STENCIL_TUNE`, else `quick`). See [`crate::tuning`].
    ///
    /// [`tuning::set_policy`]: crate::tuning::set_policy
    pub fn tune(mut self, policy: TunePolicy) -> Self {
        self.tune.policy = Some(policy);
        self
    }

    /// Reads and stores tuned schedules in `cache` instead of the default cache file
    /// (`STENCIL_TUNE_CACHE`, else the user's cache directory).
    pub fn tuning_cache(mut self, cache: TuningCache) -> Self {
        self.tune.cache = Some(CacheChoice::At(cache));
        self
    }

    /// Uses no tuning cache file: the schedule is tuned once per process.
    pub fn without_tuning_cache(mut self) -> Self {
        self.tune.cache = Some(CacheChoice::Without);
        self
    }

    /// Runs the kernel as step number `step`: the value it reads as `step()` (0 unless set),
    /// as a time loop's step `step` would. A kernel that reads no step ignores it.
    pub fn at_step(mut self, step: u64) -> Self {
        self.step = step;
        self
    }

    /// Validates the call and runs it; then fills every output's halo per its boundaries and
    /// stores every reduction's result in its target (see [`stencil_core::reduce`] for the
    /// order a reduction combines in: the same bits whatever the schedule and thread count).
    /// Without an explicit [`schedule`](Self::schedule), the first call of a kernel on a
    /// shape tunes (or finds its schedule in the tuning cache); see [`crate::tuning`].
    ///
    /// # Errors
    /// - [`ErrorKind::BadArgument`]: an argument is unknown, of the wrong role, unbound, or
    ///   bound twice.
    /// - [`ErrorKind::DimensionMismatch`]: the kernel's dimension count is not `D`.
    /// - [`ErrorKind::ShapeMismatch`]: grids differ in interior shape.
    /// - [`ErrorKind::HaloTooNarrow`]: an input's halo is narrower than the kernel's radius.
    /// - [`ErrorKind::StaleHalo`]: an input's interior changed since its halo was filled and
    ///   one of its boundary conditions depends on the interior; call
    ///   [`Grid::update_halo`].
    /// - [`ErrorKind::AliasedGrids`]: an output shares storage with another grid.
    /// - [`ErrorKind::BackendUnavailable`]: the kernel has reductions or reads an output in
    ///   place, and the backend does not support that ([`stencil_core::check_support`]).
    /// - Backend errors.
    ///
    /// On an error no reduction target is changed.
    pub fn run(self) -> Result<()> {
        self.run_with_report().map(|_| ())
    }

    /// [`run`](Self::run), returning what tuning did: where the schedule came from, how many
    /// trials it took, and the schedule (its `Display` is the line applications print, such
    /// as `tuning: cache hit: block_z=32 ...`).
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub fn run_with_report(self) -> Result<TuneReport> {
        let step = self.step;
        let Bound {
            stencil,
            inputs,
            mut outputs,
            params,
            reductions,
            backend,
            schedule,
            tune,
        } = self.bind()?;
        let kernel = stencil.kernel();
        stencil_core::check_support(backend, kernel)?;
        let (report, reduced) = {
            let input_views = inputs.iter().map(|g| g.view()).collect();
            // Backends write interior points only, so the outputs' halos keep their values.
            let output_views = outputs.iter_mut().map(|g| g.kernel_output_view()).collect();
            let mut job = Job::new(stencil, input_views, output_views, params)?;
            job.set_step(step);
            let report = tuning::schedule_for(backend, &mut job, schedule, &tune)?;
            job.clear_reductions();
            backend.run(&mut job, &report.schedule)?;
            (report, job.reductions().to_vec())
        };
        for grid in outputs {
            grid.refresh_halo();
        }
        let mut values = Vec::with_capacity(reduced.len());
        for (value, r) in reduced.into_iter().zip(&kernel.reductions) {
            values.push(value.ok_or_else(|| {
                Error::new(
                    ErrorKind::BackendUnavailable,
                    format!(
                        "backend `{}` ran kernel `{}` but set no value for reduction `{}`",
                        backend.name(),
                        kernel.name,
                        r.name
                    ),
                )
            })?);
        }
        for (target, value) in reductions.into_iter().zip(values) {
            target.set(value);
        }
        Ok(report)
    }

    /// Times this call with its grids in every row padding the backend's space offers
    /// ([`Backend::row_paddings`]) and returns the fastest: unit-stride padding is part of a
    /// grid's layout, fixed when the grid is allocated, so it is searched here rather than by
    /// the tuner. Each padding runs on copies of the call's inputs
    /// ([`Grid::repadded`]) and fresh outputs of that padding, under the schedule the call
    /// names or else the one tuning chooses for those grids (tuned, cached and remembered
    /// apart from other paddings, per [`crate::tuning`]); each padding's schedule is then timed
    /// against the first padding's in the same alternating rounds (5 rounds of at least 20 ms
    /// a side), and the paddings are ranked by that ratio, which does not drift with the
    /// machine's speed. Two copies of the call's grids exist at a time. The call's own grids
    /// are only copied from: no run reads or writes them. Move to the padding found
    /// with [`Grid::repadded`] or allocate with [`Grid::with_padding`].
    ///
    /// # Errors
    /// As [`run`](Self::run); [`ErrorKind::InvalidShape`] when a padded copy cannot be
    /// allocated.
    pub fn search_padding(self) -> Result<PaddingReport> {
        let Bound {
            stencil,
            inputs,
            outputs,
            params,
            backend,
            schedule,
            tune,
            ..
        } = self.bind()?;
        stencil_core::check_support(backend, stencil.kernel())?;
        let outputs: Vec<&Grid<T, D>> = outputs.into_iter().map(|g| &*g).collect();
        padding::search(&padding::Call {
            stencil,
            inputs: &inputs,
            outputs: &outputs,
            params: &params,
            backend,
            schedule,
            tune: &tune,
        })
    }

    /// The call's arguments, every one bound and every input's halo current.
    fn bind(self) -> Result<Bound<'g, T, D>> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let kernel = self.stencil.kernel();
        let names = |role| -> Vec<&str> {
            kernel
                .fields
                .iter()
                .filter(|f| f.role == role)
                .map(|f| f.name.as_str())
                .collect()
        };
        let input_names = names(stencil_core::Role::Input);
        let output_names = names(stencil_core::Role::Output);
        let missing = |what: &str, name: &str| {
            Error::new(
                ErrorKind::BadArgument,
                format!("kernel `{}`: {what} `{name}` is not bound", kernel.name),
            )
        };
        let mut inputs = Vec::with_capacity(self.inputs.len());
        for (grid, name) in self.inputs.iter().zip(&input_names) {
            let grid = grid.ok_or_else(|| missing("input", name))?;
            if grid.halo_is_stale() {
                return Err(Error::new(
                    ErrorKind::StaleHalo,
                    format!(
                        "kernel `{}`: the interior of input `{name}` changed since its halo was \
                         filled and its boundary conditions depend on the interior; call \
                         `update_halo()` on it first",
                        kernel.name
                    ),
                ));
            }
            inputs.push(grid);
        }
        let mut params = Vec::with_capacity(self.params.len());
        for (value, p) in self.params.iter().zip(&kernel.params) {
            params.push(value.ok_or_else(|| missing("parameter", &p.name))?);
        }
        let mut outputs = Vec::with_capacity(self.outputs.len());
        for (grid, name) in self.outputs.into_iter().zip(&output_names) {
            outputs.push(grid.ok_or_else(|| missing("output", name))?);
        }
        let mut reductions = Vec::with_capacity(self.reductions.len());
        for (target, r) in self.reductions.into_iter().zip(&kernel.reductions) {
            let target = target.ok_or_else(|| missing("reduction", &r.name))?;
            if target.op() != r.op {
                return Err(Error::new(
                    ErrorKind::BadArgument,
                    format!(
                        "kernel `{}`: reduction `{}` is a `{}`, not a `{}`",
                        kernel.name,
                        r.name,
                        r.op.type_name(),
                        target.op().type_name()
                    ),
                ));
            }
            reductions.push(target);
        }
        Ok(Bound {
            stencil: self.stencil,
            inputs,
            outputs,
            params,
            reductions,
            backend: match self.backend {
                Some(b) => b,
                None => CpuBackend::global(),
            },
            schedule: self.schedule,
            tune: self.tune,
        })
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

    fn ordinal(&self, name: &str, role: stencil_core::Role) -> Result<usize> {
        let kernel = self.stencil.kernel();
        let field = kernel
            .field_by_name(name)
            .ok_or_else(|| self.unknown(name, "field"))?;
        let actual = kernel.field(field).role;
        if actual != role {
            return Err(Error::new(
                ErrorKind::BadArgument,
                format!(
                    "kernel `{}`: field `{name}` is an {}, not an {}",
                    kernel.name,
                    role_name(actual),
                    role_name(role)
                ),
            ));
        }
        Ok(kernel.fields[..field.index()]
            .iter()
            .filter(|f| f.role == role)
            .count())
    }
}

/// A call whose arguments are all bound.
struct Bound<'g, T: Element, const D: usize> {
    stencil: &'g Stencil<T>,
    inputs: Vec<&'g Grid<T, D>>,
    outputs: Vec<&'g mut Grid<T, D>>,
    params: Vec<T>,
    reductions: Vec<&'g mut dyn ReductionTarget<T>>,
    backend: &'g dyn Backend<T>,
    schedule: Option<Schedule>,
    tune: TuneSettings,
}

fn role_name(role: stencil_core::Role) -> &'static str {
    match role {
        stencil_core::Role::Input => "input",
        stencil_core::Role::Output => "output",
    }
}
