//! The check a newly tuned winner of a backend other than the reference passes before it is
//! cached: it runs once more on the call's own data, the CPU backend runs the same job under
//! its default schedule, and every interior point of every output must agree: the same bits,
//! both NaN, or close, by the bounds `verify` uses for code that does not compute the
//! interpreter's bits. For kernels made of `+`, `-`, `*`, negation and `abs` (without
//! outputs read in place), each point within `verify`'s per-point bound, `(4 + 2 n)`
//! epsilons of the point's magnitude (the kernel on absolute values, computed in `f64` on the
//! CPU backend), which every order of evaluation and contraction of a correct backend keeps,
//! and a wrong offset or a lost term exceeds wherever it moves the point by more than that
//! many units in the last place of its magnitude (on a smooth `f32` field, the whole-output
//! tolerance below, about 5e-4 of the largest value, let a wrong offset through); a point
//! whose magnitude is NaN must be NaN; a point whose magnitude is infinite or above 2^-20 of
//! the largest finite value, where a correct order may overflow and another not, is held to
//! the tolerance below. For other kernels (division, functions, `min`/`max`, `select`: a tiny
//! difference may move a result anywhere, and the GPU's functions round differently), within
//! [`TOLERANCE_EPS`] epsilons of the larger of 1 and the output's largest finite magnitude.
//! Every reduction must agree within that tolerance of the larger of 1 and the CPU's result.
//! Outputs read in place start both runs from the same values. Schedules nothing ran before
//! (the tuner's space is large) are where a code generator's bug or a device's quirk would
//! hide; this catches it on the data it would corrupt, at the cost of one more sweep on each
//! backend per tuning (and one of the magnitudes on the CPU, with `f64` copies of the grids).

use std::ops::ControlFlow;

use stencil_core::{Backend, ElemType, Element, Job, Schedule};
use stencil_cpu::CpuBackend;

use crate::verify::CLEAR_OF_OVERFLOW;
use crate::verify::magnitude;

/// Tolerance of the comparison where the per-point bound does not apply (see the module
/// documentation), in units of the element type's epsilon times the scale.
pub const TOLERANCE_EPS: f64 = 4096.0;

/// Runs `job` under `schedule` on `backend` and under the CPU backend's default schedule, and
/// compares the outputs; `Err` says where they first disagree. Leaves the CPU's results in
/// the outputs.
pub(super) fn agrees_with_cpu<T: Element>(
    backend: &dyn Backend<T>,
    job: &mut Job<'_, T>,
    schedule: &Schedule,
) -> Result<(), String> {
    let kernel = job.kernel();
    let in_place: Vec<usize> = stencil_core::analysis::in_place_outputs(kernel)
        .into_iter()
        .filter_map(|f| kernel.outputs().position(|o| o == f))
        .collect();
    let before: Vec<Vec<T>> = in_place
        .iter()
        .map(|&o| job.outputs()[o].data.to_vec())
        .collect();
    job.clear_reductions();
    backend
        .run(job, schedule)
        .map_err(|e| format!("it failed to run: {e}"))?;
    let got: Vec<Vec<T>> = job.outputs().iter().map(|o| o.data.to_vec()).collect();
    let got_reduced = job.reductions().to_vec();
    for (&o, values) in in_place.iter().zip(&before) {
        job.outputs_mut()[o].data.copy_from_slice(values);
    }
    let cpu = CpuBackend::global();
    let reference = <CpuBackend as Backend<T>>::default_schedule(cpu, kernel, job.shape());
    cpu.run(job, &reference)
        .map_err(|e| format!("the CPU backend could not run the call: {e}"))?;
    for ((got, want), r) in got_reduced
        .iter()
        .zip(job.reductions())
        .zip(&kernel.reductions)
    {
        let (Some(g), Some(w)) = (got, want) else {
            return Err(format!("reduction `{}` was not set", r.name));
        };
        let (g, w) = (g.to_f64(), w.to_f64());
        let tolerance = TOLERANCE_EPS * T::EPSILON.to_f64() * w.abs().max(1.0);
        let same = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
        if !same && (g - w).abs() >= tolerance {
            return Err(format!(
                "reduction `{}`: the CPU backend computes {w:e}, this schedule {g:e} \
                 (tolerance {tolerance:e})",
                r.name
            ));
        }
    }
    let names: Vec<String> = kernel
        .outputs()
        .map(|f| kernel.field(f).name.clone())
        .collect();
    // Where the bound cannot be computed (it always can for a valid job), the tolerance holds.
    let magnitudes = magnitude::job_magnitudes(job).ok().flatten();
    let largest = match T::ELEM {
        ElemType::F64 => f64::MAX,
        ElemType::F32 => f64::from(f32::MAX),
    };
    for (o, ((out, got), name)) in job.outputs().iter().zip(&got).zip(&names).enumerate() {
        let mut scale = 1.0f64;
        for_each_interior(out.geom.interior(), |p| {
            let m = out.data[out.geom.index(p)].to_f64().abs();
            if m.is_finite() {
                scale = scale.max(m);
            }
            ControlFlow::Continue(())
        });
        let tolerance = TOLERANCE_EPS * T::EPSILON.to_f64() * scale;
        let per_point = magnitudes
            .as_ref()
            .map(|(grids, factor)| (&grids[o], *factor));
        let mut disagreement = None;
        for_each_interior(out.geom.interior(), |p| {
            let i = out.geom.index(p);
            let (g, w) = (got[i].to_f64(), out.data[i].to_f64());
            let same = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
            if same {
                return ControlFlow::Continue(());
            }
            let bound = per_point.map(|((geom, m), factor)| (m[geom.index(p)], factor));
            let how = match bound {
                Some((m, _)) if m.is_nan() => "a NaN reached the point".to_string(),
                Some((m, factor)) if m.is_finite() && m <= CLEAR_OF_OVERFLOW * largest => {
                    let bound = magnitude::bound::<T>(m, factor);
                    if (g - w).abs() <= bound {
                        return ControlFlow::Continue(());
                    }
                    format!("per-point bound {bound:e}: {factor} epsilons of the magnitude {m:e}")
                }
                _ if (g - w).abs() < tolerance => return ControlFlow::Continue(()),
                _ => format!("tolerance {tolerance:e}"),
            };
            disagreement = Some(format!(
                "output `{name}` at {p:?}: the CPU backend computes {w:e}, this schedule {g:e} \
                 ({how})"
            ));
            ControlFlow::Break(())
        });
        if let Some(d) = disagreement {
            return Err(d);
        }
    }
    Ok(())
}

/// Calls `f` at every point of an interior of `shape`, in row-major order, until it breaks.
fn for_each_interior(shape: &[usize], mut f: impl FnMut(&[isize]) -> ControlFlow<()>) {
    if shape.contains(&0) {
        return;
    }
    let mut p = vec![0isize; shape.len()];
    'points: loop {
        if f(&p).is_break() {
            return;
        }
        for d in (0..shape.len()).rev() {
            p[d] += 1;
            if (p[d] as usize) < shape[d] {
                continue 'points;
            }
            p[d] = 0;
        }
        return;
    }
}
