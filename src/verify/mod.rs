//! `verify`: run a kernel through every available backend and a sample of schedules on random
//! grids, and compare with the reference interpreter.
//!
//! Every case: random interior *and* halo values for the inputs (so a backend that reads the
//! wrong halo point is caught), random parameters, outputs poisoned first with a distinctive
//! number, not a NaN (so no NaN a kernel computes is taken for an unwritten point), then
//! three checks: every interior point of every output matches the
//! interpreter (bit for bit where the backend computes the interpreter's bits,
//! [`Backend::matches_interpreter_bits`]; else within a per-point bound for kernels of sums and
//! products, or a tolerance scaled to the element type and the output's largest magnitude:
//! see [`VerifyConfig::tolerance_eps`]); no
//! halo or padding element of an output was written; no input element changed. Shapes include
//! size-1 dimensions, primes, and shapes smaller than the schedules' tiles, and for backends
//! whose schedules run on several threads one shape large enough for the CPU backend's pool
//! (smaller jobs run on the calling thread), so its partitions, barriers and skewed time-loop
//! tiles are checked too; every other shape gives each grid of the call a different row
//! padding ([`Grid::with_padding`]), so a backend that assumes the fields share strides is
//! caught.
//!
//! A kernel with fused multiply-add (`#[fma]`) has the interpreter evaluating its fused nodes
//! as oracle, so backends that keep the interpreter's operations are held to those bits like
//! any kernel's (every CPU schedule but the retimed loop; the PTX emulator and GPU code within
//! the per-point bound); in addition, each shape's fused oracle is checked against the same
//! kernel without fusion within the per-point bound (the rounding change is bounded; see
//! `fused.rs`).

use std::fmt;

use stencil_core::grid::{Boundary, Grid};
use stencil_core::rng::Rng;
use stencil_core::{
    Backend, ElemType, Element, Error, ErrorKind, FieldViewMut, Geometry, Job, Result, Schedule,
    Stencil, analysis, interp,
};
use stencil_cpu::CpuBackend;
use stencil_cuda::EmulatedGpu;

mod agree;
mod config;
mod fused;
pub(crate) mod magnitude;
mod steps;

pub use config::VerifyConfig;
pub use steps::{verify_steps, verify_steps_with};

pub(crate) use agree::CLEAR_OF_OVERFLOW;
use agree::{agrees, bits, special_agrees};

/// What `verify` checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyReport {
    /// Kernel name.
    pub kernel: String,
    /// Backends run.
    pub backends: Vec<String>,
    /// Number of (backend, schedule, shape) cases run and compared.
    pub cases: usize,
    /// Number of interior points compared over all cases and outputs.
    pub points: usize,
}

impl VerifyReport {
    /// No cases yet, of `kernel` on `backends`.
    fn empty<T: Element>(kernel: &stencil_core::Kernel, backends: &[&dyn Backend<T>]) -> Self {
        VerifyReport {
            kernel: kernel.name.clone(),
            backends: backends.iter().map(|b| b.name()).collect(),
            cases: 0,
            points: 0,
        }
    }

    /// The report, or [`ErrorKind::VerificationFailed`] from `what` when no case ran.
    fn unless_empty(self, what: &str) -> Result<Self> {
        if self.cases == 0 {
            return Err(Error::new(
                ErrorKind::VerificationFailed,
                format!("{what} `{}`: no case was run", self.kernel),
            ));
        }
        Ok(self)
    }
}

impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kernel `{}`: {} cases, {} points on [{}] match the reference interpreter",
            self.kernel,
            self.cases,
            self.points,
            self.backends.join(", ")
        )
    }
}

/// Verifies `stencil` with the default [`VerifyConfig`] on every backend available on any
/// machine: the CPU backend, and the GPU code generator through the PTX emulator for every
/// kernel the GPU backend accepts (so GPU code is checked on machines without a GPU). On a
/// machine with a GPU, add [`CudaBackend`](crate::CudaBackend) through [`verify_with`].
///
/// # Errors
/// [`ErrorKind::VerificationFailed`] naming the backend, schedule, shape, point, expected and
/// found values at the first disagreement; any error a backend returns.
pub fn verify<T: Element>(stencil: &Stencil<T>) -> Result<VerifyReport> {
    let cpu: &dyn Backend<T> = CpuBackend::global();
    let emulated = EmulatedGpu::new();
    let mut backends = vec![cpu];
    if stencil_cuda::codegen::check_kernel(stencil.kernel()).is_ok()
        && stencil_core::check_support::<T>(&emulated, stencil.kernel()).is_ok()
    {
        backends.push(&emulated);
    }
    verify_with(stencil, &backends, &VerifyConfig::default())
}

/// Verifies `stencil` on the given backends.
///
/// # Errors
/// As [`verify`]; [`ErrorKind::BadArgument`] when `backends` is empty or a configured shape
/// has the wrong number of dimensions.
pub fn verify_with<T: Element>(
    stencil: &Stencil<T>,
    backends: &[&dyn Backend<T>],
    config: &VerifyConfig,
) -> Result<VerifyReport> {
    if backends.is_empty() {
        return Err(Error::new(
            ErrorKind::BadArgument,
            "verify: no backend given",
        ));
    }
    match stencil.kernel().n_dims {
        1 => verify_dims::<T, 1>(stencil, backends, config),
        2 => verify_dims::<T, 2>(stencil, backends, config),
        3 => verify_dims::<T, 3>(stencil, backends, config),
        4 => verify_dims::<T, 4>(stencil, backends, config),
        n => Err(Error::new(
            ErrorKind::DimensionMismatch,
            format!("verify: {n}-D kernels are not supported"),
        )),
    }
}

/// One shape of the cases, and whether it is there to reach a thread pool (see
/// [`default_shapes`]).
#[derive(Clone, Copy, Debug)]
struct CaseShape<const D: usize> {
    shape: [usize; D],
    pool: bool,
}

impl<const D: usize> CaseShape<D> {
    /// Whether `backend` runs this shape's cases: every shape but those for a pool, which
    /// only backends whose schedules run on several threads get.
    fn runs_on<T: Element>(&self, backend: &dyn Backend<T>) -> bool {
        !self.pool || runs_on_threads(backend)
    }
}

/// Whether `backend`'s schedules run on several threads ([`Backend::tuning_device`]'s
/// thread count): the CPU backend's pool, not the PTX emulator nor a GPU.
fn runs_on_threads<T: Element>(backend: &dyn Backend<T>) -> bool {
    backend
        .tuning_device()
        .is_some_and(|(_, threads)| threads > 1)
}

/// The shapes `config` asks for (the built-in ones by default), each `D`-D.
///
/// # Errors
/// [`ErrorKind::BadArgument`] naming `what` for a shape of another dimension count.
fn config_shapes<const D: usize>(config: &VerifyConfig, what: &str) -> Result<Vec<CaseShape<D>>> {
    let shapes = match &config.shapes {
        Some(s) => s.iter().map(|shape| (shape.clone(), false)).collect(),
        None => default_shapes(D),
    };
    shapes
        .iter()
        .map(|(shape, pool)| {
            let shape = shape.as_slice().try_into().map_err(|_| {
                Error::new(
                    ErrorKind::BadArgument,
                    format!("{what}: shape {shape:?} is not {D}-D"),
                )
            })?;
            Ok(CaseShape { shape, pool: *pool })
        })
        .collect()
}

/// The built-in shapes: size-1 dimensions, tiny, prime and mixed extents, and one shape per
/// dimension count of just over [`INLINE_POINTS`](stencil_cpu::INLINE_POINTS) points (marked
/// `true`), the least for which the CPU backend runs a job on its pool rather than on the
/// calling thread: its partitions, and in a time loop the workers' barriers and, in 3-D and
/// 4-D, the skewed tiles (each share of dimension 1 on two workers wider than
/// `3 (depth - 1)` times a reach of up to 4, and than the sampled tile rows). Those run only
/// on backends whose schedules run on several threads (the PTX emulator would take seconds
/// per case), at an even position (exact halos, and in `verify_steps` value faces, which the
/// tiles need).
fn default_shapes(n_dims: usize) -> Vec<(Vec<usize>, bool)> {
    let table: &[(&[usize], bool)] = match n_dims {
        1 => &[
            (&[1], false),
            (&[2], false),
            (&[7], false),
            (&[64], false),
            (&[33_023], true),
            (&[1031], false),
        ],
        2 => &[
            (&[1, 1], false),
            (&[1, 9], false),
            (&[5, 1], false),
            (&[3, 7], false),
            (&[13, 17], false),
            (&[33, 65], false),
            (&[181, 183], true),
        ],
        3 => &[
            (&[1, 1, 1], false),
            (&[2, 3, 5], false),
            (&[1, 7, 1], false),
            (&[7, 11, 13], false),
            (&[5, 80, 83], true),
            (&[17, 4, 33], false),
        ],
        _ => &[
            (&[1, 1, 1, 1], false),
            (&[2, 3, 1, 5], false),
            (&[3, 80, 2, 71], true),
            (&[3, 5, 4, 7], false),
        ],
    };
    table.iter().map(|&(s, pool)| (s.to_vec(), pool)).collect()
}

/// The value outputs are filled with before a run: marks "not written". It is a number, not a
/// NaN: Rust keeps no NaN payload through a cast or an operation (an optimised build folds a
/// NaN of a distinctive payload built by casts into the NaN `f32` arithmetic returns, so a
/// kernel computing NaN would read as unwritten), while a number survives every conversion
/// and copy bit for bit, and no NaN a kernel computes can equal it. A kernel may still
/// compute this exact value, so a point found holding it is only reported unwritten if it
/// also holds [`second_poison`] when the case runs again with that poison: a computed value
/// does not depend on the poison. Both are negative numbers near `-5e29` with many mantissa
/// bits set (exact in `f32`), outside the random inputs' range and every special value.
fn poison<T: Element>() -> T {
    match T::ELEM {
        ElemType::F64 => T::from_f64(f64::from_bits(0xc61c_dead_beef_0bad)),
        ElemType::F32 => T::from_f64(f64::from(f32::from_bits(0xf0e5_0bad))),
    }
}

/// The poison of the confirming run (see [`poison`]).
fn second_poison<T: Element>() -> T {
    match T::ELEM {
        ElemType::F64 => T::from_f64(f64::from_bits(0xc61a_0dd0_f00d_0bad)),
        ElemType::F32 => T::from_f64(f64::from(f32::from_bits(0xf0d1_f00d))),
    }
}

/// One of the special values of [`VerifyConfig::special_values`], drawn uniformly.
fn special<T: Element>(rng: &mut Rng) -> T {
    let (subnormal, max, large) = match T::ELEM {
        ElemType::F64 => (f64::from_bits(1), f64::MAX, 1e300),
        ElemType::F32 => (
            f64::from(f32::from_bits(1)),
            f64::from(f32::MAX),
            f64::from(1e30f32),
        ),
    };
    let values = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        subnormal,
        -subnormal,
        max,
        -max,
        large,
    ];
    T::from_f64(values[rng.index(values.len())])
}

/// One run of a case: the outputs, and the reductions the backend set.
type RunResult<T, const D: usize> = (Vec<Grid<T, D>>, Vec<Option<T>>);

fn verify_dims<T: Element, const D: usize>(
    stencil: &Stencil<T>,
    backends: &[&dyn Backend<T>],
    config: &VerifyConfig,
) -> Result<VerifyReport> {
    let kernel = stencil.kernel();
    let shapes = config_shapes::<D>(config, "verify")?;
    let radius = analysis::radius(kernel).max() as usize;
    let n_inputs = kernel.inputs().count();
    let n_outputs = kernel.outputs().count();
    let mut rng = Rng::new(config.seed);
    let mut report = VerifyReport::empty(kernel, backends);
    for (shape_idx, case_shape) in shapes.iter().enumerate() {
        let shape = case_shape.shape;
        if !backends.iter().any(|b| case_shape.runs_on(*b)) {
            continue;
        }
        // Alternate halo widths: exactly the radius, and wider. The wider cases also pad
        // their grids' rows, each grid differently (the fields of one call then have different
        // strides).
        let halo = radius + shape_idx % 2;
        let padding = |field: usize| {
            if shape_idx % 2 == 0 {
                0
            } else {
                (field + shape_idx / 2) % 3
            }
        };
        let mut inputs = Vec::with_capacity(n_inputs);
        for i in 0..n_inputs {
            let mut g = Grid::<T, D>::with_padding(shape, halo, padding(i))?;
            g.set_boundary(Boundary::UserManaged);
            for v in g.as_mut_slice() {
                *v = T::from_f64(rng.uniform(-1.0, 1.0));
                if config.special_values && rng.chance(1.0 / 6.0) {
                    *v = special(&mut rng);
                }
            }
            g.update_halo();
            inputs.push(g);
        }
        let params: Vec<T> = kernel
            .params
            .iter()
            .map(|_| T::from_f64(rng.uniform(-1.5, 1.5)))
            .collect();

        // Outputs read in place start from random interior values, the same for the oracle
        // and every run (their halos still hold the poison).
        let in_place: Vec<bool> = kernel
            .outputs()
            .map(|f| analysis::in_place_outputs(kernel).contains(&f))
            .collect();
        let initial: Vec<Vec<T>> = in_place
            .iter()
            .map(|&read| {
                let count = if read { shape.iter().product() } else { 0 };
                (0..count)
                    .map(|_| T::from_f64(rng.uniform(-1.0, 1.0)))
                    .collect()
            })
            .collect();
        let start = |g: &mut Grid<T, D>, o: usize| {
            if initial[o].is_empty() {
                return;
            }
            let points: Vec<[usize; D]> = g.interior_iter().map(|(p, _)| p).collect();
            for (point, &v) in points.into_iter().zip(&initial[o]) {
                g[point] = v;
            }
        };
        // The oracle.
        let mut expected: Vec<Grid<T, D>> = (0..n_outputs)
            .map(|_| Grid::<T, D>::with_halo(shape, halo))
            .collect::<Result<_>>()?;
        for (o, g) in expected.iter_mut().enumerate() {
            start(g, o);
        }
        let expected_reductions = {
            let views: Vec<_> = inputs.iter().map(|g| g.view()).collect();
            let mut outs: Vec<FieldViewMut<'_, T>> =
                expected.iter_mut().map(|g| g.view_mut()).collect();
            interp::run_reducing(kernel, &views, &mut outs, &params)
        };
        if kernel.fma {
            let oracle = fused::Fused {
                outputs: &expected,
                reductions: &expected_reductions,
                start: &start,
            };
            fused::check_rounding_change(kernel, &inputs, &params, (shape, halo), &oracle, config)?;
        }
        // Per-point bounds for backends that reassociate (kernels of sums and products), when
        // a backend on this shape has a schedule that does.
        let reassociates = backends
            .iter()
            .filter(|b| case_shape.runs_on(**b))
            .any(|b| {
                b.sample_schedules(kernel, &shape)
                    .iter()
                    .any(|s| !b.matches_interpreter_bits(kernel, s))
            });
        let magnitudes = match reassociates {
            true => magnitude::magnitudes(kernel, &inputs, &params, (shape, halo))?,
            false => None,
        };
        let scales: Vec<f64> = expected
            .iter()
            .map(|g| {
                g.interior_iter()
                    .map(|(_, v)| v.to_f64().abs())
                    .filter(|v| v.is_finite())
                    .fold(1.0, f64::max)
            })
            .collect();
        let input_copies: Vec<Vec<u64>> = inputs
            .iter()
            .map(|g| g.as_slice().iter().map(|&v| bits(v)).collect())
            .collect();

        for backend in backends.iter().filter(|b| case_shape.runs_on(**b)) {
            stencil_core::check_support(*backend, kernel)?;
            for schedule in backend.sample_schedules(kernel, &shape) {
                let run = |poison: T| -> Result<RunResult<T, D>> {
                    let mut outputs: Vec<Grid<T, D>> = (0..n_outputs)
                        .map(|o| Grid::<T, D>::with_padding(shape, halo, padding(n_inputs + o)))
                        .collect::<Result<_>>()?;
                    for (o, g) in outputs.iter_mut().enumerate() {
                        g.set_boundary(Boundary::UserManaged);
                        g.as_mut_slice().fill(poison);
                        start(g, o);
                    }
                    {
                        let views = inputs.iter().map(|g| g.view()).collect();
                        let outs = outputs.iter_mut().map(|g| g.view_mut()).collect();
                        let mut job = Job::new(stencil, views, outs, params.clone())?;
                        backend.run(&mut job, &schedule)?;
                        let reduced = job.reductions().to_vec();
                        Ok((outputs, reduced))
                    }
                };
                let (outputs, reduced) = run(poison())?;
                // Points holding the poison: unwritten only if they hold the second poison
                // in a second run too.
                let suspicious = outputs
                    .iter()
                    .any(|g| g.as_slice().iter().any(|&v| bits(v) == bits(poison::<T>())));
                let confirmed = if suspicious {
                    Some(run(second_poison())?.0)
                } else {
                    None
                };
                let exact = backend.matches_interpreter_bits(kernel, &schedule);
                let case = Case {
                    kernel: &kernel.name,
                    backend: backend.name(),
                    schedule,
                    shape: &shape,
                    padding: (0..n_inputs + n_outputs).map(padding).collect(),
                };
                for (o, (got, want)) in outputs.iter().zip(&expected).enumerate() {
                    let name = &kernel.field(kernel.outputs().nth(o).expect("output")).name;
                    let again = confirmed.as_ref().map(|c| &c[o]);
                    let allowed = match (exact, &magnitudes) {
                        (true, _) => Allowed::Exact,
                        (false, Some((m, factor))) => Allowed::PerPoint(&m[o], *factor),
                        (false, None) => Allowed::Scaled(scales[o]),
                    };
                    report.points += compare(&case, name, (got, again), want, allowed, config)?;
                }
                compare_reductions(&case, kernel, &reduced, &expected_reductions, exact, config)?;
                for (i, (g, copy)) in inputs.iter().zip(&input_copies).enumerate() {
                    if g.as_slice().iter().zip(copy).any(|(&v, &b)| bits(v) != b) {
                        let name = &kernel.field(kernel.inputs().nth(i).expect("input")).name;
                        return Err(case.fail(format!("input `{name}` was modified")));
                    }
                }
                report.cases += 1;
            }
        }
    }
    report.unless_empty("verify")
}

struct Case<'a> {
    kernel: &'a str,
    backend: String,
    schedule: Schedule,
    shape: &'a [usize],
    /// Row padding (cache lines) of each grid: inputs, then outputs.
    padding: Vec<usize>,
}

impl Case<'_> {
    fn fail(&self, what: String) -> Error {
        Error::new(
            ErrorKind::VerificationFailed,
            format!(
                "verify `{}` on {} with {:?}, shape {:?}, row padding {:?}: {what}",
                self.kernel, self.backend, self.schedule, self.shape, self.padding
            ),
        )
    }
}

/// Compares a run's reductions with the oracle's: the same bits (any NaN for a NaN) when
/// `exact`, else within [`VerifyConfig::tolerance_eps`] epsilons of `max(1, |expected|)`.
fn compare_reductions<T: Element>(
    case: &Case<'_>,
    kernel: &stencil_core::Kernel,
    got: &[Option<T>],
    want: &[T],
    exact: bool,
    config: &VerifyConfig,
) -> Result<()> {
    for ((got, &want), r) in got.iter().zip(want).zip(&kernel.reductions) {
        let Some(got) = *got else {
            return Err(case.fail(format!("reduction `{}` was not set", r.name)));
        };
        let tol = config.tolerance_eps * T::EPSILON.to_f64() * want.to_f64().abs().max(1.0);
        if !agrees(got, want, exact, tol) {
            return Err(case.fail(format!(
                "reduction `{}`: expected {:e}, found {:e} ({})",
                r.name,
                want.to_f64(),
                got.to_f64(),
                if exact {
                    "exactly"
                } else {
                    "within the tolerance"
                }
            )));
        }
    }
    Ok(())
}

/// How far a backend's value may be from the oracle's.
enum Allowed<'a, const D: usize> {
    /// Not at all: the same bits (any NaN for a NaN).
    Exact,
    /// Per point: [`magnitude::bound`] of the point's magnitude in this grid, with this
    /// factor.
    PerPoint(&'a Grid<f64, D>, f64),
    /// [`VerifyConfig::tolerance_eps`] epsilons times this scale, at every point.
    Scaled(f64),
}

/// Compares one output with the oracle; returns the number of interior points compared.
/// `got` is the output of the run with [`poison`], `again` the same output of the confirming
/// run with [`second_poison`] when there was one: a point (or storage element) is unwritten
/// when it holds the poison of each run. Values must agree as `allowed` says.
fn compare<T: Element, const D: usize>(
    case: &Case<'_>,
    name: &str,
    (got, again): (&Grid<T, D>, Option<&Grid<T, D>>),
    want: &Grid<T, D>,
    allowed: Allowed<'_, D>,
    config: &VerifyConfig,
) -> Result<usize> {
    let poison_bits = bits(poison::<T>());
    let second_bits = bits(second_poison::<T>());
    let unwritten = |index: usize, v: T| {
        bits(v) == poison_bits && again.is_none_or(|a| bits(a.as_slice()[index]) == second_bits)
    };
    let mut n = 0;
    let geom = *got.geometry();
    let (got_data, want_data) = (got.as_slice(), want.as_slice());
    let magnitudes = match allowed {
        Allowed::PerPoint(m, _) => Some(m),
        _ => None,
    };
    // Row by row: each interior row's first point, then its points along the row.
    let shape = geom.shape;
    let rows: usize = shape[..D - 1].iter().product();
    let row_len = shape[D - 1];
    let mut interior = vec![false; got_data.len()];
    for r in 0..rows {
        let mut point = [0usize; D];
        let mut rest = r;
        for d in (0..D - 1).rev() {
            point[d] = rest % shape[d];
            rest /= shape[d];
        }
        let at = |grid: &Geometry| grid.index(&point.map(|c| c as isize));
        let (got_at, want_at) = (at(&geom), at(want.geometry()));
        let magnitude_at = magnitudes.map(|m| (m.as_slice(), at(m.geometry())));
        interior[got_at..got_at + row_len].fill(true);
        for j in 0..row_len {
            point[D - 1] = j;
            let (g, w) = (got_data[got_at + j], want_data[want_at + j]);
            if unwritten(got_at + j, g) {
                return Err(case.fail(format!("output `{name}` at {point:?} was not written")));
            }
            let magnitude = magnitude_at.map(|(m, m_at)| m[m_at + j]);
            let (exact, tol) = match (&allowed, magnitude) {
                (Allowed::PerPoint(_, factor), Some(m)) => {
                    (false, magnitude::bound::<T>(m, *factor))
                }
                (Allowed::Scaled(scale), _) => {
                    (false, config.tolerance_eps * T::EPSILON.to_f64() * scale)
                }
                _ => (true, 0.0),
            };
            let ok = if config.special_values && !exact {
                special_agrees(g, w, magnitude, tol, config)
            } else {
                agrees(g, w, exact, tol)
            };
            if !ok {
                let how = match (&allowed, magnitude) {
                    (Allowed::PerPoint(_, factor), Some(m)) => format!(
                        "per-point bound {tol:e}: {factor} epsilons of the point's magnitude {m:e}"
                    ),
                    (Allowed::Scaled(_), _) => format!("tolerance {tol:e}"),
                    _ => "exactly: the backend keeps the interpreter's arithmetic".into(),
                };
                let (g, w) = (g.to_f64(), w.to_f64());
                return Err(case.fail(format!(
                    "output `{name}` at {point:?}: expected {w:e}, found {g:e} ({how})"
                )));
            }
            n += 1;
        }
    }
    // Everything outside the interior must still be poison.
    for (idx, &v) in got_data.iter().enumerate() {
        if !interior[idx] && !unwritten(idx, v) {
            return Err(case.fail(format!(
                "output `{name}`: storage element {idx} outside the interior was written"
            )));
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The NaNs `f32` and `f64` arithmetic returns here (`0 / 0`, `ln` of a negative, the
    /// constants), computed at run time.
    fn computed_nans<T: Element>() -> Vec<T> {
        let zero = || std::hint::black_box(T::ZERO);
        let minus_one = std::hint::black_box(-T::ONE);
        vec![
            zero() / zero(),
            minus_one.ln(),
            T::NAN,
            -T::NAN,
            T::from_f64(f64::NAN),
            T::from_f64(std::hint::black_box(f64::NAN)),
        ]
    }

    fn check_poisons<T: Element>() {
        let (first, second) = (poison::<T>(), second_poison::<T>());
        for p in [first, second] {
            // A number: no NaN a kernel computes can have its bits, whatever the compiler
            // makes of NaN payloads (it folded the earlier NaN poisons into f32's one NaN).
            assert!(p.to_f64().is_finite(), "{p:?}");
            assert_eq!(bits(T::from_f64(p.to_f64())), bits(p), "{p:?}");
            assert_eq!(bits(std::hint::black_box(p)), bits(p), "{p:?}");
            for nan in computed_nans::<T>() {
                assert_ne!(bits(nan), bits(p), "{nan:?} {p:?}");
            }
        }
        assert_ne!(bits(first), bits(second));
    }

    #[test]
    fn poisons_are_numbers_no_computed_nan_can_equal() {
        check_poisons::<f32>();
        check_poisons::<f64>();
    }
}
