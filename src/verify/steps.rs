//! `verify_steps`: a kernel's time loop ([`Steps`](crate::Steps)) on every backend and a
//! sample of its time-loop schedules, against a loop of the reference interpreter.
//!
//! Every case: random interior and halo values in every grid, random boundary conditions (the
//! same for the grids of a chain; one case in two all Dirichlet, so GPU pairs of steps fuse
//! and CPU steps run in skewed tiles), random parameters, the interiors of the grids the first
//! step writes poisoned, then a few step counts (1, 2, 3, 5: counts that blocking depths do
//! not divide; 5 alone on the shapes that reach the CPU backend's thread pool, which only
//! backends that run on several threads get: see `default_shapes`). The oracle runs
//! [`interp::run_at_step`] step after step (step `n` reading `step()` as `n`), fills each written grid's halo from its boundary
//! conditions and rotates the grids as the time loop documents. Every grid, interior and halo,
//! must match it (bit for bit where the backend computes the interpreter's bits, else within
//! [`VerifyConfig::tolerance_eps`]), and no poison may remain.

use std::ops::ControlFlow;

use stencil_core::grid::{Boundary, Grid, Side};
use stencil_core::rng::Rng;
use stencil_core::{
    Backend, Element, Error, ErrorKind, FieldId, FieldViewMut, Result, Role, Rotation, Schedule,
    Stencil, interp,
};
use stencil_cpu::CpuBackend;
use stencil_cuda::EmulatedGpu;

use super::agree::{agrees, bits};
use super::{VerifyConfig, VerifyReport, config_shapes, poison};
use crate::Steps;

/// Verifies the time loop of `stencil` with rotation `chains` (each an output, then the inputs
/// it becomes: `&[&["out", "u"]]`) on the CPU backend and, for kernels the GPU backend
/// accepts, the PTX emulator, with the default [`VerifyConfig`].
///
/// # Errors
/// [`ErrorKind::VerificationFailed`] naming the backend, schedule, shape, step count, grid and
/// point of the first disagreement; [`ErrorKind::BadArgument`] for a rotation that does not
/// fit the kernel; any error a backend returns.
pub fn verify_steps<T: Element>(stencil: &Stencil<T>, chains: &[&[&str]]) -> Result<VerifyReport> {
    let cpu: &dyn Backend<T> = CpuBackend::global();
    let emulated = EmulatedGpu::new();
    let mut backends = vec![cpu];
    if stencil_cuda::codegen::check_kernel(stencil.kernel()).is_ok() {
        backends.push(&emulated);
    }
    verify_steps_with(stencil, chains, &backends, &VerifyConfig::default())
}

/// [`verify_steps`] on the given backends and configuration.
///
/// # Errors
/// As [`verify_steps`]; [`ErrorKind::BadArgument`] when `backends` is empty or a configured
/// shape has the wrong number of dimensions.
pub fn verify_steps_with<T: Element>(
    stencil: &Stencil<T>,
    chains: &[&[&str]],
    backends: &[&dyn Backend<T>],
    config: &VerifyConfig,
) -> Result<VerifyReport> {
    if backends.is_empty() {
        return Err(Error::new(
            ErrorKind::BadArgument,
            "verify_steps: no backend given",
        ));
    }
    let chains: Vec<Vec<&str>> = chains.iter().map(|c| c.to_vec()).collect();
    let rotation = Rotation::new(stencil.kernel(), &chains)?;
    match stencil.kernel().n_dims {
        1 => verify_dims::<T, 1>(stencil, &rotation, &chains, backends, config),
        2 => verify_dims::<T, 2>(stencil, &rotation, &chains, backends, config),
        3 => verify_dims::<T, 3>(stencil, &rotation, &chains, backends, config),
        4 => verify_dims::<T, 4>(stencil, &rotation, &chains, backends, config),
        n => Err(Error::new(
            ErrorKind::DimensionMismatch,
            format!("verify_steps: {n}-D kernels are not supported"),
        )),
    }
}

/// Step counts of every case.
const STEPS: [usize; 4] = [1, 2, 3, 5];

/// Step counts of the cases on a shape for a thread pool (costlier): the largest of
/// [`STEPS`], which blocks do not divide and which passes every grid of chains of up to 5.
const POOL_STEPS: [usize; 1] = [5];

fn verify_dims<T: Element, const D: usize>(
    stencil: &Stencil<T>,
    rotation: &Rotation,
    chains: &[Vec<&str>],
    backends: &[&dyn Backend<T>],
    config: &VerifyConfig,
) -> Result<VerifyReport> {
    let kernel = stencil.kernel();
    let shapes = config_shapes::<D>(config, "verify_steps")?;
    let radius = stencil_core::analysis::radius(kernel).max() as usize;
    let mut rng = Rng::new(config.seed ^ 0x57e9);
    let mut report = VerifyReport::empty(kernel, backends);
    for (shape_idx, case_shape) in shapes.iter().enumerate() {
        let shape = case_shape.shape;
        if !backends.iter().any(|b| case_shape.runs_on(*b)) {
            continue;
        }
        let halo = radius + shape_idx % 2;
        let dirichlet = shape_idx % 2 == 0;
        let initial = random_grids::<T, D>(stencil, rotation, shape, halo, dirichlet, &mut rng)?;
        let params: Vec<T> = kernel
            .params
            .iter()
            .map(|_| T::from_f64(rng.uniform(-0.5, 0.5)))
            .collect();
        let step_counts: &[usize] = if case_shape.pool { &POOL_STEPS } else { &STEPS };
        for &steps in step_counts {
            let mut want = copies(&initial)?;
            oracle(stencil, chains, &mut want, &params, steps);
            for backend in backends.iter().filter(|b| case_shape.runs_on(**b)) {
                for schedule in backend.sample_steps_schedules(kernel, &shape) {
                    let mut got = copies(&initial)?;
                    run(
                        stencil,
                        chains,
                        &mut got,
                        &params,
                        (*backend, schedule),
                        steps,
                    )?;
                    let what = format!(
                        "verify_steps `{}` on {} with {schedule:?}, shape {shape:?}, {steps} steps",
                        kernel.name,
                        backend.name()
                    );
                    let exact = backend.matches_interpreter_bits(kernel, &schedule);
                    report.points += compare(kernel, &got, &want, (config, exact), &what)?;
                    report.cases += 1;
                }
            }
        }
    }
    report.unless_empty("verify_steps")
}

/// One grid per field: random values everywhere, random faces (the same within a chain;
/// all one Dirichlet value when `dirichlet`), the interiors of the grids the first step
/// writes poisoned.
fn random_grids<T: Element, const D: usize>(
    stencil: &Stencil<T>,
    rotation: &Rotation,
    shape: [usize; D],
    halo: usize,
    dirichlet: bool,
    rng: &mut Rng,
) -> Result<Vec<Grid<T, D>>> {
    let kernel = stencil.kernel();
    let value = T::from_f64(rng.uniform(-1.0, 1.0));
    let random_face = |rng: &mut Rng| -> Boundary<T> {
        if dirichlet {
            return Boundary::Dirichlet(value);
        }
        match rng.below(5) {
            0 => Boundary::Dirichlet(T::from_f64(rng.uniform(-1.0, 1.0))),
            1 => Boundary::Periodic,
            2 => Boundary::ZeroGradient,
            3 => Boundary::Reflect,
            _ => Boundary::UserManaged,
        }
    };
    let chain_faces: Vec<[[Boundary<T>; 2]; D]> = rotation
        .chains()
        .iter()
        .map(|_| std::array::from_fn(|_| [random_face(rng), random_face(rng)]))
        .collect();
    let mut grids = Vec::with_capacity(kernel.fields.len());
    for (i, field) in kernel.fields.iter().enumerate() {
        let mut g = Grid::<T, D>::with_halo(shape, halo)?;
        for v in g.as_mut_slice() {
            *v = T::from_f64(rng.uniform(-1.0, 1.0));
        }
        let faces: [[Boundary<T>; 2]; D] = match rotation.position(FieldId::new(i)) {
            Some((c, _)) => chain_faces[c],
            None => std::array::from_fn(|_| [random_face(rng), random_face(rng)]),
        };
        for (d, pair) in faces.iter().enumerate() {
            for (side, &face) in [Side::Low, Side::High].into_iter().zip(pair) {
                g.set_face_boundary(d, side, face)?;
            }
        }
        let written_first = field.role == Role::Output;
        if written_first {
            let points: Vec<[usize; D]> = g.interior_iter().map(|(p, _)| p).collect();
            for p in points {
                g[p] = poison();
            }
            // The poison is in the interior only; the halo keeps what the faces give.
            g.update_halo();
        }
        grids.push(g);
    }
    Ok(grids)
}

fn copies<T: Element, const D: usize>(grids: &[Grid<T, D>]) -> Result<Vec<Grid<T, D>>> {
    grids.iter().map(|g| g.repadded(g.padding())).collect()
}

/// The reference loop: the interpreter, the written grids' halos filled, the rotation.
fn oracle<T: Element, const D: usize>(
    stencil: &Stencil<T>,
    chains: &[Vec<&str>],
    grids: &mut [Grid<T, D>],
    params: &[T],
    steps: usize,
) {
    let kernel = stencil.kernel();
    let index = |name: &str| {
        kernel
            .field_by_name(name)
            .unwrap_or_else(|| unreachable!("verify_steps: rotation checked"))
            .index()
    };
    for step in 0..steps {
        {
            let (inputs, outputs): (Vec<(usize, &mut Grid<T, D>)>, Vec<_>) = grids
                .iter_mut()
                .enumerate()
                .partition(|(i, _)| kernel.fields[*i].role == Role::Input);
            let views: Vec<_> = inputs.iter().map(|(_, g)| g.view()).collect();
            let mut outs: Vec<(usize, &mut Grid<T, D>)> = outputs;
            let mut out_views: Vec<FieldViewMut<'_, T>> = outs
                .iter_mut()
                .map(|(_, g)| g.kernel_output_view())
                .collect();
            interp::run_at_step(kernel, &views, &mut out_views, params, step as u64);
        }
        for (g, field) in grids.iter_mut().zip(&kernel.fields) {
            if field.role == Role::Output {
                g.update_halo();
            }
        }
        for chain in chains {
            for p in (1..chain.len()).rev() {
                grids.swap(index(chain[p]), index(chain[p - 1]));
            }
        }
    }
}

/// The time loop on `backend` under `schedule`.
fn run<T: Element, const D: usize>(
    stencil: &Stencil<T>,
    chains: &[Vec<&str>],
    grids: &mut [Grid<T, D>],
    params: &[T],
    (backend, schedule): (&dyn Backend<T>, Schedule),
    steps: usize,
) -> Result<()> {
    let kernel = stencil.kernel();
    let mut time_loop = Steps::new(stencil).on(backend).schedule(schedule);
    for chain in chains {
        time_loop = time_loop.rotate(chain);
    }
    for (g, field) in grids.iter_mut().zip(&kernel.fields) {
        time_loop = time_loop.grid(&field.name, g);
    }
    for (value, p) in params.iter().zip(&kernel.params) {
        time_loop = time_loop.param(&p.name, *value);
    }
    // A callback that never stops the loop, so chunks and callbacks are exercised too.
    let time_loop = time_loop.every(2, |_| ControlFlow::Continue(()));
    time_loop.run(steps).map(|_| ())
}

/// Compares every grid, interior and halo, with the oracle's (the same bits when `exact`);
/// the number of values compared.
fn compare<T: Element, const D: usize>(
    kernel: &stencil_core::Kernel,
    got: &[Grid<T, D>],
    want: &[Grid<T, D>],
    (config, exact): (&VerifyConfig, bool),
    what: &str,
) -> Result<usize> {
    let poison_bits = bits(poison::<T>());
    let mut n = 0;
    for ((g, w), field) in got.iter().zip(want).zip(&kernel.fields) {
        let scale = w
            .as_slice()
            .iter()
            .map(|v| v.to_f64().abs())
            .filter(|v| v.is_finite())
            .fold(1.0, f64::max);
        let tol = config.tolerance_eps * T::EPSILON.to_f64() * scale;
        for (k, (&a, &b)) in g.as_slice().iter().zip(w.as_slice()).enumerate() {
            let (x, y) = (a.to_f64(), b.to_f64());
            if bits(a) == poison_bits && bits(b) != poison_bits {
                return Err(Error::new(
                    ErrorKind::VerificationFailed,
                    format!("{what}: grid `{}` element {k} was not written", field.name),
                ));
            }
            if !agrees(a, b, exact, tol) {
                let allowed = match exact {
                    true => "exactly".to_string(),
                    false => format!("tolerance {tol:e}"),
                };
                return Err(Error::new(
                    ErrorKind::VerificationFailed,
                    format!(
                        "{what}: grid `{}` element {k}: expected {y:e}, found {x:e} ({allowed})",
                        field.name
                    ),
                ));
            }
            n += 1;
        }
    }
    Ok(n)
}
