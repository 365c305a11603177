//! The validated kernel call a backend runs: [`Job`].
//!
//! The facade validates a call once by building a [`Job`] (shapes, halos, dimension counts,
//! argument counts, aliasing); a backend receives only valid jobs and may rely on that
//! geometry, which is what lets the CPU backend write output rows through raw pointers
//! soundly. A job knows nothing of backends: restricting it to a region for one
//! (`Job::set_region`) is declared with the backend contract in `backend.rs`.

use crate::analysis::field_radius;
use crate::element::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::ir::Kernel;
use crate::stencil::Stencil;
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
    /// The step number the kernel reads as `step()` ([`Expr::Step`](crate::Expr::Step)).
    step: u64,
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
            step: 0,
        })
    }

    /// Sets the step number the kernel reads as `step()`
    /// ([`Expr::Step`](crate::Expr::Step)): 0 for a new job; a time loop sets each step's
    /// number on its job, and every backend passes it to the kernel.
    pub fn set_step(&mut self, step: u64) {
        self.step = step;
    }

    /// The step number the kernel reads (see [`set_step`](Self::set_step)).
    pub fn step(&self) -> u64 {
        self.step
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

    /// [`set_region`](Self::set_region) with what it needs of the backend: whether it runs
    /// regions and its name (asked only for the error).
    pub(crate) fn restrict_to_region(
        &mut self,
        runs_regions: bool,
        backend_name: impl FnOnce() -> String,
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
        if !runs_regions {
            return Err(Error::new(
                ErrorKind::BackendUnavailable,
                format!(
                    "kernel `{}`: backend `{}` does not run regions (it computes the whole \
                     interior); run the job on the CPU backend, or without a region",
                    self.kernel().name,
                    backend_name()
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
