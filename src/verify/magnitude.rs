//! Per-point error bounds for backends that do not compute the interpreter's bits.
//!
//! A backend that reassociates a sum, factors a coefficient out of several terms or contracts
//! a product and a sum into a fused multiply-add changes how a point's value is rounded, by
//! at most a few units in the last place of the largest partial result, never of the final
//! value (which may be small where large terms cancel). For a kernel made of `+`, `-`, `*`,
//! negation, `abs` and fused multiply-adds (`#[fma]`) over reads, parameters and constants,
//! the *magnitude* of a point (the
//! same expression with every constant, parameter and input value replaced by its absolute
//! value and every subtraction by an addition) bounds every partial result of every order of
//! evaluation, so `|got - want| <= (4 + 2 * operations) * epsilon * magnitude` (plus the
//! smallest normal number, for results that underflow) holds for every correct order and
//! catches a dropped or wrong term anywhere its share of the magnitude exceeds that many
//! units in the last place. Kernels with other operations (division, functions, `min`/`max`,
//! `select`: a tiny difference may move a result arbitrarily) have no such bound here.

use stencil_core::grid::Grid;
use stencil_core::ir::{BinaryOp, Expr, Kernel, UnaryOp};
use stencil_core::{
    Backend, ElemType, Element, FieldView, FieldViewMut, Geometry, Job, Result, Stencil, interp,
};
use stencil_cpu::CpuBackend;

/// The magnitudes of `kernel` at every interior point of outputs of interior `shape` (with
/// `halo`), computed in `f64` from `inputs` (all of their points, halo included) and
/// `params`, with the bound's factor in units of `T`'s epsilon; `None` when the kernel uses
/// an operation the bound does not cover.
pub(super) fn magnitudes<T: Element, const D: usize>(
    kernel: &Kernel,
    inputs: &[Grid<T, D>],
    params: &[T],
    (shape, halo): ([usize; D], usize),
) -> Result<Option<(Vec<Grid<f64, D>>, f64)>> {
    if !stencil_core::analysis::in_place_outputs(kernel).is_empty() {
        // Outputs read in place hold values the rewritten kernel does not see.
        return Ok(None);
    }
    let Some(abs_kernel) = absolute(kernel) else {
        return Ok(None);
    };
    let abs_inputs: Vec<Grid<f64, D>> = inputs.iter().map(absolute_copy).collect::<Result<_>>()?;
    let abs_params: Vec<f64> = params.iter().map(|p| p.to_f64().abs()).collect();
    let mut outputs: Vec<Grid<f64, D>> = (0..kernel.outputs().count())
        .map(|_| Grid::<f64, D>::with_halo(shape, halo))
        .collect::<Result<_>>()?;
    {
        let views: Vec<_> = abs_inputs.iter().map(|g| g.view()).collect();
        let mut outs: Vec<_> = outputs.iter_mut().map(|g| g.view_mut()).collect();
        interp::run(&abs_kernel, &views, &mut outs, &abs_params);
    }
    Ok(Some((outputs, factor(kernel))))
}

/// [`magnitudes`] for the data of a validated `job` (grids of any layout): each output's
/// magnitudes as an `f64` layout of its interior and halo and its values, with the bound's
/// factor; `None` when the kernel writes no grid or uses an operation the bound does not
/// cover. The job's grids may be large (the tuner's winner check passes the call's own), so
/// the rewritten kernel runs on the CPU backend over absolute copies of the inputs in `f64`
/// (memory for one more copy of every grid in `f64`).
pub(crate) fn job_magnitudes<T: Element>(job: &Job<'_, T>) -> Result<MagnitudeGrids> {
    let kernel = job.kernel();
    if job.outputs().is_empty() || !stencil_core::analysis::in_place_outputs(kernel).is_empty() {
        return Ok(None);
    }
    let Some(abs_kernel) = absolute(kernel) else {
        return Ok(None);
    };
    let stencil = Stencil::<f64>::new(abs_kernel)?;
    let layout = |geom: &Geometry| Geometry::new(geom.interior(), geom.halo, 8);
    let mut inputs = Vec::with_capacity(job.inputs().len());
    for view in job.inputs() {
        let geom = layout(&view.geom)?;
        let mut data = vec![0.0; geom.len];
        for_each_stored_row(&view.geom, |p, len| {
            let (from, to) = (view.geom.index(p), geom.index(p));
            for (d, v) in data[to..to + len]
                .iter_mut()
                .zip(&view.data[from..from + len])
            {
                *d = v.to_f64().abs();
            }
        });
        inputs.push((geom, data));
    }
    let mut outputs: Vec<(Geometry, Vec<f64>)> = job
        .outputs()
        .iter()
        .map(|o| layout(&o.geom).map(|geom| (geom, vec![0.0; geom.len])))
        .collect::<Result<_>>()?;
    let params: Vec<f64> = job.params().iter().map(|p| p.to_f64().abs()).collect();
    {
        let views = inputs
            .iter()
            .map(|(geom, data)| FieldView { geom: *geom, data })
            .collect();
        let outs = outputs
            .iter_mut()
            .map(|(geom, data)| FieldViewMut { geom: *geom, data })
            .collect();
        let mut abs_job = Job::new(&stencil, views, outs, params)?;
        let cpu = CpuBackend::global();
        let schedule = Backend::<f64>::default_schedule(cpu, stencil.kernel(), abs_job.shape());
        cpu.run(&mut abs_job, &schedule)?;
    }
    Ok(Some((outputs, factor(kernel))))
}

/// What [`job_magnitudes`] returns: per output, a layout and its magnitudes; the factor.
pub(crate) type MagnitudeGrids = Option<(Vec<(Geometry, Vec<f64>)>, f64)>;

/// Calls `f` with the first point of every row of `geom`'s interior and halo (halo points
/// included, last dimension fixed at `-halo`) and the row's length.
fn for_each_stored_row(geom: &Geometry, mut f: impl FnMut(&[isize], usize)) {
    let h = geom.halo as isize;
    let shape = geom.interior();
    let last = shape.len() - 1;
    let mut point = vec![-h; shape.len()];
    loop {
        f(&point, shape[last] + 2 * geom.halo);
        // Odometer over the rows, last dimension but one fastest.
        let mut d = last;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            point[d] += 1;
            if point[d] < shape[d] as isize + h {
                break;
            }
            point[d] = -h;
        }
    }
}

/// The allowed difference at a point of magnitude `magnitude`, for a kernel whose bound has
/// `factor` units of `T`'s epsilon.
pub(crate) fn bound<T: Element>(magnitude: f64, factor: f64) -> f64 {
    let smallest_normal = match T::ELEM {
        ElemType::F32 => f64::from(f32::MIN_POSITIVE),
        ElemType::F64 => f64::MIN_POSITIVE,
    };
    factor * (T::EPSILON.to_f64() * magnitude + smallest_normal)
}

/// `4 + 2 * operations`: every order of `n` additions differs from another by at most
/// `2 (n - 1)` units in the last place of the magnitude, and each contraction or factoring
/// by one more.
fn factor(kernel: &Kernel) -> f64 {
    let operations = kernel
        .exprs
        .iter()
        .map(|e| match e {
            Expr::Unary { .. } | Expr::Binary { .. } => 1,
            // A multiplication and an addition.
            Expr::Fma { .. } => 2,
            _ => 0,
        })
        .sum::<usize>();
    (4 + 2 * operations) as f64
}

/// `kernel` computing magnitudes in `f64` (see the module documentation), or `None`.
fn absolute(kernel: &Kernel) -> Option<Kernel> {
    let mut k = kernel.clone();
    for field in &mut k.fields {
        field.elem = ElemType::F64;
    }
    for param in &mut k.params {
        param.elem = ElemType::F64;
    }
    for reduction in &mut k.reductions {
        reduction.elem = ElemType::F64;
    }
    for e in &mut k.exprs {
        *e = match *e {
            Expr::Const(c) => Expr::Const(c.abs()),
            Expr::Param(_) | Expr::Read { .. } | Expr::Let(_) => continue,
            Expr::Unary {
                op: UnaryOp::Neg | UnaryOp::Abs,
                arg,
            } => Expr::Unary {
                op: UnaryOp::Abs,
                arg,
            },
            Expr::Binary {
                op: BinaryOp::Add | BinaryOp::Sub,
                lhs,
                rhs,
            } => Expr::Binary {
                op: BinaryOp::Add,
                lhs,
                rhs,
            },
            Expr::Binary {
                op: BinaryOp::Mul, ..
            } => continue,
            // `|a| * |b| + |c|`: the operands are already absolute.
            Expr::Fma { .. } => continue,
            _ => return None,
        };
    }
    Some(k)
}

/// `grid`'s absolute values in `f64`, halo included.
fn absolute_copy<T: Element, const D: usize>(grid: &Grid<T, D>) -> Result<Grid<f64, D>> {
    let (shape, halo) = (grid.shape(), grid.halo());
    let mut copy = Grid::<f64, D>::with_halo(shape, halo)?;
    let h = halo as isize;
    let mut point = [-h; D];
    loop {
        if let Some(v) = grid.get(point) {
            copy.set(point, v.to_f64().abs())?;
        }
        // Odometer over the interior and halo, last dimension fastest.
        let mut d = D;
        loop {
            if d == 0 {
                return Ok(copy);
            }
            d -= 1;
            point[d] += 1;
            if point[d] < shape[d] as isize + h {
                break;
            }
            point[d] = -h;
        }
    }
}
