//! Time loops: a kernel applied step after step, its outputs becoming its inputs.
//!
//! A [`Rotation`] says how a kernel's grids move from one step to the next, as *chains*
//! `[output, input_1, .., input_m]`: after a step, `input_1` holds what `output` was just
//! given, `input_2` what `input_1` held, and so on, and `output` gets the storage of `input_m`
//! (to be overwritten by the next step). A heat equation's ping-pong is the chain
//! `[out, u]`; a wave equation's three levels `[u_next, u, u_prev]`; a reaction-diffusion
//! system has one chain per species. Inputs in no chain are read-only coefficients; outputs in
//! no chain are written by every step (the last step's values remain).
//!
//! A [`TimeLoop`] is a validated time loop: the grids of every chain, the coefficients, the
//! parameters and how many steps were done. Step `s` (counting from 1 across the whole job)
//! reads chain level `s - p` at chain position `p` and writes level `s`. The grids hold levels
//! as a ring: with `L` grids in a chain, level `l` lives in the chain's grid
//! `(1 - l) mod L`, so at the start (no step done) position `p` holds level `1 - p` and after
//! `done` steps the grid at position `(p - done) mod L` holds what position `p` names. The
//! caller rotates its grids by `done` at the end ([`TimeLoop::done`]).
//!
//! After every step, every grid the step wrote gets its halo filled from its own boundary
//! conditions, as `Launch::run` fills its outputs' halos: a time loop of `n` steps leaves
//! exactly what `n` calls of the kernel do, each followed by a rotation of the grids
//! (`std::mem::swap` for a ping-pong), boundary conditions moving with their grids.

use crate::analysis::field_radius;
use crate::element::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::grid::fill_halo;
use crate::ir::{FieldId, Kernel, Role};
use crate::job::Job;
pub use crate::loop_grids::{FieldSlot, WrittenGrid, skipping_constant};
use crate::loop_grids::{GridCheck, check_grids};
use crate::stencil::Stencil;
use crate::view::FieldView;

/// How a kernel's fields rotate between steps: chains `[output, input_1, .., input_m]` (see
/// the module documentation).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Rotation {
    chains: Vec<Vec<FieldId>>,
}

/// What is wrong with a chain of a [`Rotation`]: which chain, which entry of it, and why.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct RotationError {
    /// Index of the chain.
    pub chain: usize,
    /// Index of the entry within the chain (0 when the chain as a whole is wrong).
    pub entry: usize,
    /// What is wrong, in words.
    pub message: String,
}

impl Rotation {
    /// The rotation of `kernel` given by chains of field names.
    ///
    /// # Errors
    /// [`ErrorKind::BadArgument`] with [`Rotation::check`]'s first message.
    pub fn new<S: AsRef<str>>(kernel: &Kernel, chains: &[Vec<S>]) -> Result<Rotation> {
        Self::check(kernel, chains).map_err(|errors| {
            let e = &errors[0];
            Error::new(
                ErrorKind::BadArgument,
                format!("kernel `{}`: rotation: {}", kernel.name, e.message),
            )
        })
    }

    /// Checks chains of field names against `kernel`: each chain names an output, then one
    /// or more inputs, all fields of the kernel, and no field is named twice (in one chain or
    /// across chains). Returns the rotation or every violation found.
    ///
    /// # Errors
    /// The violations, each with the chain and entry it concerns.
    pub fn check<S: AsRef<str>>(
        kernel: &Kernel,
        chains: &[Vec<S>],
    ) -> std::result::Result<Rotation, Vec<RotationError>> {
        let mut errors = Vec::new();
        let mut seen: Vec<FieldId> = Vec::new();
        let mut resolved = Vec::new();
        if chains.is_empty() {
            errors.push(RotationError {
                chain: 0,
                entry: 0,
                message: "no chain: name at least one `output -> input` pair".into(),
            });
        }
        for (c, chain) in chains.iter().enumerate() {
            let mut fields = Vec::new();
            // One role error per chain: a reversed chain is one mistake.
            let mut role_reported = false;
            if chain.len() < 2 {
                errors.push(RotationError {
                    chain: c,
                    entry: 0,
                    message: "a chain names an output and at least one input \
                              (`out -> u`)"
                        .into(),
                });
            }
            for (e, name) in chain.iter().enumerate() {
                let name = name.as_ref();
                let Some(field) = kernel.field_by_name(name) else {
                    errors.push(RotationError {
                        chain: c,
                        entry: e,
                        message: format!("`{name}` is not a grid of the kernel"),
                    });
                    continue;
                };
                let role = kernel.field(field).role;
                let wanted = if e == 0 { Role::Output } else { Role::Input };
                if role != wanted {
                    if std::mem::replace(&mut role_reported, true) {
                        continue;
                    }
                    errors.push(RotationError {
                        chain: c,
                        entry: e,
                        message: if e == 0 {
                            format!(
                                "a chain starts with the output that becomes the next step's \
                                 input; `{name}` is an input"
                            )
                        } else {
                            format!(
                                "after its first entry a chain names inputs; `{name}` is an \
                                 output"
                            )
                        },
                    });
                    continue;
                }
                if seen.contains(&field) {
                    errors.push(RotationError {
                        chain: c,
                        entry: e,
                        message: format!("`{name}` is named twice in the rotation"),
                    });
                    continue;
                }
                seen.push(field);
                fields.push(field);
            }
            resolved.push(fields);
        }
        if errors.is_empty() {
            Ok(Rotation { chains: resolved })
        } else {
            Err(errors)
        }
    }

    /// The chains, each `[output, input_1, ..]`.
    pub fn chains(&self) -> &[Vec<FieldId>] {
        &self.chains
    }

    /// The chain and position of `field`, if it rotates.
    pub fn position(&self, field: FieldId) -> Option<(usize, usize)> {
        self.chains.iter().enumerate().find_map(|(c, chain)| {
            chain
                .iter()
                .position(|&f| f == field)
                .map(|position| (c, position))
        })
    }
}

/// Step counts grouped for tuning: a time loop's tuned schedule is cached per class, since
/// the best temporal blocking depends on how many steps a call runs (`0`: fewer than 8, `1`:
/// fewer than 64, `2`: fewer than 512, `3`: more).
pub fn steps_class(steps: usize) -> usize {
    match steps {
        0..8 => 0,
        8..64 => 1,
        64..512 => 2,
        _ => 3,
    }
}

/// Steps each tuning trial of a time loop of `steps` steps runs: 16 for 64 steps or more,
/// else 8. A backend offers temporal blocking depths that divide it, so every candidate runs
/// whole blocks (and may offer its default's depth too, which a trial then runs as one
/// block); a short loop keeps its trials (and its tuning) cheap.
pub fn trial_steps(steps: usize) -> usize {
    if steps >= 64 { 16 } else { 8 }
}

/// A validated time loop (see the module documentation).
#[derive(Debug)]
pub struct TimeLoop<'a, T: Element> {
    stencil: &'a Stencil<T>,
    rotation: Rotation,
    /// Per kernel field (declaration order): where it lives.
    slots: Vec<FieldSlot>,
    coefficients: Vec<FieldView<'a, T>>,
    /// Per chain, its grids in chain order (output first).
    chains: Vec<Vec<WrittenGrid<'a, T>>>,
    lone: Vec<WrittenGrid<'a, T>>,
    params: Vec<T>,
    done: usize,
    /// The number of the loop's first step in the simulation's whole run.
    first: usize,
}

impl<'a, T: Element> TimeLoop<'a, T> {
    /// Validates and bundles a time loop: `chains[c]` holds the grids of the rotation's chain
    /// `c` in chain order, `coefficients` the inputs in no chain and `lone` the outputs in no
    /// chain (each in the kernel's declaration order), `params` every parameter.
    ///
    /// # Errors
    /// - [`ErrorKind::BadArgument`]: a grid or parameter count that does not match; a kernel
    ///   with reductions (a time loop returns no scalars: run such a kernel once per step) or
    ///   reading an output in place.
    /// - [`ErrorKind::DimensionMismatch`], [`ErrorKind::ShapeMismatch`]: as [`Job::new`].
    /// - [`ErrorKind::HaloTooNarrow`]: a grid's halo is narrower than its own reach, the rule
    ///   of [`Job::new`]: a coefficient's against the kernel's reads of it (none for one read
    ///   only at its own point), a chain grid's against the reads of every field of its chain
    ///   (it plays each in turn); outputs outside the rotation need none.
    /// - [`ErrorKind::AliasedGrids`]: two grids share storage, unless both are coefficients.
    pub fn new(
        stencil: &'a Stencil<T>,
        rotation: Rotation,
        chains: Vec<Vec<WrittenGrid<'a, T>>>,
        coefficients: Vec<FieldView<'a, T>>,
        lone: Vec<WrittenGrid<'a, T>>,
        params: Vec<T>,
    ) -> Result<Self> {
        let kernel = stencil.kernel();
        let mut slots = Vec::with_capacity(kernel.fields.len());
        let (mut n_coefficients, mut n_lone) = (0, 0);
        for (i, field) in kernel.fields.iter().enumerate() {
            let id = FieldId::new(i);
            slots.push(match rotation.position(id) {
                Some((chain, position)) => FieldSlot::Chain { chain, position },
                None if field.role == Role::Input => {
                    n_coefficients += 1;
                    FieldSlot::Coefficient(n_coefficients - 1)
                }
                None => {
                    n_lone += 1;
                    FieldSlot::Lone(n_lone - 1)
                }
            });
        }
        let bad = |what: String| Error::new(ErrorKind::BadArgument, what);
        if kernel.has_reductions() {
            return Err(bad(format!(
                "kernel `{}` has reductions, which a time loop cannot return: call it once per \
                 step with `run()`",
                kernel.name
            )));
        }
        if let Some(&field) = crate::analysis::in_place_outputs(kernel).first() {
            return Err(bad(format!(
                "kernel `{}` reads output `{}` in place, which time loops do not support: call \
                 it once per step with `run()`",
                kernel.name,
                kernel.field(field).name
            )));
        }
        if chains.len() != rotation.chains.len()
            || chains
                .iter()
                .zip(&rotation.chains)
                .any(|(grids, ids)| grids.len() != ids.len())
        {
            return Err(bad(format!(
                "kernel `{}`: the grids given do not match the rotation's chains",
                kernel.name
            )));
        }
        if coefficients.len() != n_coefficients || lone.len() != n_lone {
            return Err(bad(format!(
                "kernel `{}` takes {n_coefficients} read-only inputs and {n_lone} outputs outside \
                 the rotation; {} and {} given",
                kernel.name,
                coefficients.len(),
                lone.len()
            )));
        }
        if params.len() != kernel.params.len() {
            return Err(bad(format!(
                "kernel `{}` takes {} parameters, {} given",
                kernel.name,
                kernel.params.len(),
                params.len()
            )));
        }
        let name = |id: FieldId| kernel.field(id).name.as_str();
        let mut grids: Vec<GridCheck<'_>> = Vec::new();
        // Each grid's halo against its own reach, as `Job::new` checks a single sweep's
        // inputs: a coefficient against the kernel's reads of it; a grid of a chain against
        // the reads of every field of its chain, each of which it plays in turn.
        let reach = |id: FieldId| field_radius(kernel, id).max();
        for (ids, chain) in rotation.chains.iter().zip(&chains) {
            let (r, field) = ids
                .iter()
                .map(|&id| (reach(id), name(id)))
                .max_by_key(|&(r, _)| r)
                .unwrap_or((0, ""));
            let why = format!(
                "it plays every field of chain `{}` in turn, and `{field}` is read up to {r} \
                 points away",
                ids.iter()
                    .map(|&id| name(id))
                    .collect::<Vec<_>>()
                    .join(" -> ")
            );
            for (&id, grid) in ids.iter().zip(chain) {
                let mut check = GridCheck::of(name(id), grid.view.geom, grid.view.data, true);
                check.reach = (r, why.clone());
                grids.push(check);
            }
        }
        let slot_of = &slots;
        let of_slot = |wanted: fn(FieldSlot) -> bool| {
            kernel
                .fields
                .iter()
                .enumerate()
                .filter(move |&(i, _)| wanted(slot_of[i]))
                .map(|(i, f)| (FieldId::new(i), f.name.as_str()))
                .collect::<Vec<_>>()
        };
        let coefficient_fields = of_slot(|s| matches!(s, FieldSlot::Coefficient(_)));
        for (&(id, n), view) in coefficient_fields.iter().zip(&coefficients) {
            let mut check = GridCheck::of(n, view.geom, view.data, false);
            let r = reach(id);
            check.reach = (r, format!("it is read up to {r} points away"));
            grids.push(check);
        }
        for (&(_, n), grid) in of_slot(|s| matches!(s, FieldSlot::Lone(_)))
            .iter()
            .zip(&lone)
        {
            grids.push(GridCheck::of(n, grid.view.geom, grid.view.data, true));
        }
        check_grids::<T>(&grids, kernel.n_dims, &format!("kernel `{}`", kernel.name))?;
        for grid in chains.iter().flatten().chain(&lone) {
            if grid.faces.len() != kernel.n_dims || grid.view.data.len() < grid.view.geom.len {
                return Err(bad(format!(
                    "kernel `{}`: a grid's boundary conditions or storage do not match its \
                     layout",
                    kernel.name
                )));
            }
        }
        Ok(TimeLoop {
            stencil,
            rotation,
            slots,
            coefficients,
            chains,
            lone,
            params,
            done: 0,
            first: 0,
        })
    }

    /// This loop, its first step numbered `first` in the simulation's whole run (0 unless
    /// set): the step after `done` steps has number `first + done`, the value its kernel
    /// reads as `step()` ([`Job::step`]). A caller that runs a simulation in several loops
    /// (between callbacks, say) numbers each from the steps done before it.
    pub fn from_step(mut self, first: usize) -> Self {
        self.first = first;
        self
    }

    /// The number of the loop's first step (see [`from_step`](Self::from_step)).
    pub fn first_step(&self) -> usize {
        self.first
    }

    /// The stencil being stepped.
    pub fn stencil(&self) -> &'a Stencil<T> {
        self.stencil
    }

    /// The kernel's IR.
    pub fn kernel(&self) -> &'a Kernel {
        self.stencil.kernel()
    }

    /// The rotation.
    pub fn rotation(&self) -> &Rotation {
        &self.rotation
    }

    /// Where each kernel field (declaration order) lives.
    pub fn slots(&self) -> &[FieldSlot] {
        &self.slots
    }

    /// Interior shape common to every grid.
    pub fn shape(&self) -> &[usize] {
        match self.chains.first().and_then(|c| c.first()) {
            Some(grid) => grid.view.geom.interior(),
            None => unreachable!("stencil-core steps: a rotation has a chain"),
        }
    }

    /// The read-only inputs (declaration order among them).
    pub fn coefficients(&self) -> &[FieldView<'a, T>] {
        &self.coefficients
    }

    /// Parameter values (declaration order); the same for every step.
    pub fn params(&self) -> &[T] {
        &self.params
    }

    /// Replaces the parameter values (between calls that run steps).
    ///
    /// # Errors
    /// [`ErrorKind::BadArgument`] if `params` has not one value per parameter of the kernel
    /// (the values are then left as they were).
    pub fn set_params(&mut self, params: &[T]) -> Result<()> {
        if params.len() != self.params.len() {
            return Err(Error::new(
                ErrorKind::BadArgument,
                format!(
                    "kernel `{}` takes {} parameters, {} given",
                    self.kernel().name,
                    self.params.len(),
                    params.len()
                ),
            ));
        }
        self.params.copy_from_slice(params);
        Ok(())
    }

    /// Steps done so far.
    pub fn done(&self) -> usize {
        self.done
    }

    /// Records that `steps` more steps were done (by a backend that ran them itself).
    pub fn advance(&mut self, steps: usize) {
        self.done += steps;
    }

    /// The index, within its chain, of the grid that chain position `position` reads or
    /// writes at the step after `done` steps.
    pub fn grid_index(&self, chain: usize, position: usize, done: usize) -> usize {
        let len = self.chains[chain].len();
        (position + len - done % len) % len
    }

    /// The grids of every chain, each in chain order (output first).
    pub fn chains(&self) -> &[Vec<WrittenGrid<'a, T>>] {
        &self.chains
    }

    /// The outputs in no chain (declaration order among them).
    pub fn lone(&self) -> &[WrittenGrid<'a, T>] {
        &self.lone
    }

    /// The grids of every chain (chain order) and the lone outputs, for a backend that runs
    /// steps itself.
    pub fn grids_mut(&mut self) -> (&mut [Vec<WrittenGrid<'a, T>>], &mut [WrittenGrid<'a, T>]) {
        (&mut self.chains, &mut self.lone)
    }

    /// Runs one step through `run` (given the step's [`Job`]), then fills the halo of every
    /// grid it wrote from that grid's boundary conditions, and counts it.
    ///
    /// # Errors
    /// What `run` returns (the step is then not counted).
    pub fn step_with(&mut self, run: impl FnOnce(&mut Job<'_, T>) -> Result<()>) -> Result<()> {
        let done = self.done;
        self.next_step_job(run)??;
        self.fill_written_halos(done);
        self.done += 1;
        Ok(())
    }

    /// Calls `run` with the job of the next step (the one [`step_with`](Self::step_with)
    /// would run) without counting it as a step: no halo is filled and nothing rotates. The
    /// job writes only the grids that step overwrites, so running it any number of times
    /// before the step changes nothing the loop leaves (the time loop tunes its single
    /// sweep on it).
    ///
    /// # Errors
    /// The job's validation errors ([`Job::new`]).
    pub fn next_step_job<R>(&mut self, run: impl FnOnce(&mut Job<'_, T>) -> R) -> Result<R> {
        let done = self.done;
        let stencil = self.stencil;
        crate::loop_grids::lend_job(
            stencil,
            (&self.slots, &self.params),
            crate::loop_grids::LoopGrids {
                chains: &mut self.chains,
                lone: &mut self.lone,
                coefficients: &self.coefficients,
            },
            (done, self.first + done),
            run,
        )
    }

    /// Fills the halo of every grid the step after `done` steps wrote.
    fn fill_written_halos(&mut self, done: usize) {
        let outputs: Vec<usize> = (0..self.chains.len())
            .map(|c| self.grid_index(c, 0, done))
            .collect();
        let written = self
            .chains
            .iter_mut()
            .zip(outputs)
            .map(|(chain, g)| &mut chain[g])
            .chain(self.lone.iter_mut());
        for grid in written {
            let faces = grid.fill_faces();
            fill_halo(&mut grid.view, &faces);
            grid.constant_faces_filled = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::Boundary;
    use crate::view::FieldViewMut;
    use crate::{ElemType, Geometry, KernelBuilder};

    /// `out[i] = a[i] * u[i-1] + u[i+1] * k + c[i+2]`: chain `out -> u`, a coefficient `a`
    /// read at its point and `c` read two points away.
    fn stencil() -> Stencil<f64> {
        let mut b = KernelBuilder::new("k", 1, ElemType::F64);
        let u = b.input("u");
        let a = b.input("a");
        let c = b.input("c");
        let out = b.output("out");
        let k = b.param("k");
        let (ra, rl, rr, rc) = (
            b.read(a, &[0]),
            b.read(u, &[-1]),
            b.read(u, &[1]),
            b.read(c, &[2]),
        );
        let k = b.param_ref(k);
        let left = b.mul(ra, rl);
        let right = b.mul(rr, k);
        let sum = b.add(left, right);
        let value = b.add(sum, rc);
        b.store(out, value);
        Stencil::new(b.finish().unwrap()).unwrap()
    }

    /// Storage for a grid of 8 points with halo `halo`.
    fn storage(halo: usize) -> (Geometry, Vec<f64>) {
        let geom = Geometry::new(&[8], halo, 8).unwrap();
        (geom, vec![0.5; geom.len])
    }

    /// A job over grids with halos `[out, u, a, c]`.
    fn job<'s>(
        stencil: &'s Stencil<f64>,
        grids: &'s mut [(Geometry, Vec<f64>)],
    ) -> Result<TimeLoop<'s, f64>> {
        let rotation = Rotation::new(stencil.kernel(), &[vec!["out", "u"]])?;
        let (rotating, coefficients) = grids.split_at_mut(2);
        let chain = rotating
            .iter_mut()
            .map(|(geom, data)| WrittenGrid {
                view: FieldViewMut { geom: *geom, data },
                faces: vec![[Boundary::Dirichlet(0.0); 2]],
                constant_faces_filled: false,
            })
            .collect();
        let coefficients = coefficients
            .iter()
            .map(|(geom, data)| FieldView { geom: *geom, data })
            .collect();
        TimeLoop::new(
            stencil,
            rotation,
            vec![chain],
            coefficients,
            Vec::new(),
            vec![1.0],
        )
    }

    #[test]
    fn each_grid_needs_a_halo_as_wide_as_its_own_reach() {
        let stencil = stencil();
        // `a` is read at its point only: no halo, as for one `run()`.
        let mut grids = [storage(1), storage(1), storage(0), storage(2)];
        assert!(job(&stencil, &mut grids).is_ok());
        // `out` is written, but becomes `u` the step after: it needs `u`'s reach.
        let mut grids = [storage(0), storage(1), storage(0), storage(2)];
        let err = job(&stencil, &mut grids).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::HaloTooNarrow);
        assert!(
            err.message()
                .contains("grid `out` has a halo of 0 but needs 1")
        );
        assert!(
            err.message().contains("chain `out -> u`"),
            "{}",
            err.message()
        );
        // `c` is read two points away.
        let mut grids = [storage(1), storage(1), storage(0), storage(1)];
        let err = job(&stencil, &mut grids).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::HaloTooNarrow);
        assert!(
            err.message()
                .contains("grid `c` has a halo of 1 but needs 2")
        );
    }

    #[test]
    fn set_params_refuses_a_wrong_count_and_keeps_the_values() {
        let stencil = stencil();
        let mut grids = [storage(1), storage(1), storage(0), storage(2)];
        let mut job = job(&stencil, &mut grids).unwrap();
        for wrong in [&[][..], &[1.0, 2.0][..]] {
            let err = job.set_params(wrong).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BadArgument);
            assert!(
                err.message().contains("takes 1 parameters"),
                "{}",
                err.message()
            );
            assert_eq!(job.params(), &[1.0]);
        }
        job.set_params(&[3.0]).unwrap();
        assert_eq!(job.params(), &[3.0]);
    }
}
