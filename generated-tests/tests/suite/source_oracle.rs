//! Every generated kernel, run through the public API (`Launch`: argument binding by name, halo
//! handling, the macro's compiled loops) under every CPU schedule the verifier samples, is
//! compared with an evaluator that reads only the kernel's source text (`evaluator`: no IR, no
//! builder, no macro, no interpreter). Results must be the evaluator's bits wherever the backend
//! keeps the interpreter's order, and within a per-point bound where it reassociates. A quick
//! run launches every fourth kernel (`sampled`), `STENCIL_FULL_TESTS=1` every one.
//!
//! Then bugs are planted in the IR, as a wrong lowering or builder would make them (an offset
//! mirrored on one axis, two inputs or two parameters swapped, a coefficient off by one unit),
//! and the comparison must catch each on the kernels with asymmetric coefficients.

use crate::evaluator;

use std::collections::HashMap;

use evaluator::{Program, Real};
use stencil::ir::Expr;
use stencil::{
    Backend, Boundary, CpuBackend, Element, Grid, Kernel, Launch, Schedule, Stencil, TunePolicy,
};
use stencil_generated_tests::{Generated, generated_f32, generated_f64};
use stencil_test_support::Rng;
use stencil_test_support::grid::poisoned_grid;

use crate::sampled;

/// Inputs with random interiors and random user-managed halos, and random parameters.
struct Case<T: Element, const D: usize> {
    shape: [usize; D],
    inputs: Vec<(String, Grid<T, D>)>,
    params: Vec<(String, T)>,
}

fn case<T: Element + Real, const D: usize>(
    program: &Program,
    shape: [usize; D],
    halo: usize,
    seed: u64,
) -> Case<T, D> {
    let mut rng = Rng::new(seed);
    let inputs = program
        .fields
        .iter()
        .filter(|(_, output)| !output)
        .map(|(name, _)| {
            let mut g = Grid::<T, D>::with_halo(shape, halo).unwrap();
            g.set_boundary(Boundary::UserManaged);
            for_each_point(shape, halo as isize, |p| {
                g.set(p, T::of_f64(rng.uniform(-1.0, 1.0))).unwrap();
            });
            (name.clone(), g)
        })
        .collect();
    let params = program
        .params
        .iter()
        .map(|name| (name.clone(), T::of_f64(rng.uniform(-1.0, 1.0))))
        .collect();
    Case {
        shape,
        inputs,
        params,
    }
}

/// Calls `f` at every point of the box `[-pad, n + pad)` in row-major order.
fn for_each_point<const D: usize>(shape: [usize; D], pad: isize, mut f: impl FnMut([isize; D])) {
    let mut p = [-pad; D];
    'outer: loop {
        f(p);
        for d in (0..D).rev() {
            p[d] += 1;
            if p[d] < shape[d] as isize + pad {
                continue 'outer;
            }
            p[d] = -pad;
        }
        return;
    }
}

/// Runs `stencil` through `Launch` under `schedule` (`None`: the default schedule, untuned) on
/// `case`, with every output poisoned first, and returns the outputs by name.
fn launch<T: Element + Real, const D: usize>(
    stencil: &Stencil<T>,
    program: &Program,
    case: &Case<T, D>,
    halo: usize,
    schedule: Option<Schedule>,
) -> Vec<(String, Grid<T, D>)> {
    let mut outputs: Vec<(String, Grid<T, D>)> = program
        .fields
        .iter()
        .filter(|(_, output)| *output)
        .map(|(name, _)| {
            let g = poisoned_grid(case.shape, halo, T::of_f64(f64::NAN));
            (name.clone(), g)
        })
        .collect();
    let mut l = Launch::new(stencil).tune(TunePolicy::Off);
    for (name, g) in &case.inputs {
        l = l.input(name, g);
    }
    for (name, g) in &mut outputs {
        l = l.output(name, g);
    }
    for (name, v) in &case.params {
        l = l.param(name, *v);
    }
    if let Some(s) = schedule {
        l = l.schedule(s);
    }
    l.run()
        .unwrap_or_else(|e| panic!("{}: {e}", stencil.kernel().name));
    outputs
}

/// The first point where `outputs` disagree with the evaluator, exactly or within
/// `64·eps·(magnitude + smallest f32 normal)` where the evaluator can bound the magnitude (the
/// sum of the absolute values of the terms: linear kernels), as a message.
fn first_difference<T: Element + Real, const D: usize>(
    program: &Program,
    case: &Case<T, D>,
    outputs: &[(String, Grid<T, D>)],
    exact: bool,
) -> Option<String> {
    let params: HashMap<String, T> = case.params.iter().cloned().collect();
    let grids: HashMap<&str, &Grid<T, D>> =
        case.inputs.iter().map(|(n, g)| (n.as_str(), g)).collect();
    let read = |name: &str, p: &[isize]| -> T {
        let p: [isize; D] = p.try_into().unwrap();
        grids[name]
            .get(p)
            .unwrap_or_else(|| panic!("read of {name} at {p:?} outside its halo"))
    };
    let mut difference = None;
    for_each_point(case.shape, 0, |p| {
        if difference.is_some() {
            return;
        }
        for (name, want, magnitude) in program.eval(&p, &params, &read) {
            let grid = &outputs.iter().find(|(n, _)| *n == name).unwrap().1;
            let got: T = grid.get(p).unwrap();
            let ok = if exact {
                got.bits() == want.bits()
            } else {
                match magnitude {
                    Some(m) => {
                        let bound = 64.0 * T::EPS * (m + f64::from(f32::MIN_POSITIVE));
                        (got.as_f64() - want.as_f64()).abs() <= bound
                    }
                    None => got.bits() == want.bits(),
                }
            };
            if !ok {
                difference = Some(format!(
                    "{name} at {p:?}: launched {got:?}, source says {want:?} ({})",
                    if exact { "exact" } else { "bounded" }
                ));
                return;
            }
        }
    });
    difference
}

/// The shape each kernel runs on: odd sizes that divide by nothing the schedules use.
fn shape<const D: usize>(seed: u64) -> [usize; D] {
    let mut s = [0; D];
    for (d, n) in s.iter_mut().enumerate() {
        *n = if D == 2 { [37, 23][d] } else { [11, 9, 13][d] } + (seed as usize >> d) % 3;
    }
    s
}

fn check_one<T: Element + Real, const D: usize>(g: &Generated<T>) -> usize {
    let program = Program::parse(g.source);
    assert_eq!(program.n_dims, D);
    let kernel = g.stencil.kernel();
    let halo = g.config.order as usize;
    let shape = shape::<D>(g.config.seed);
    let case = case::<T, D>(&program, shape, halo, g.config.seed);
    let cpu = CpuBackend::global();
    let mut schedules: Vec<Option<Schedule>> = vec![None];
    schedules.extend(
        <CpuBackend as Backend<T>>::sample_schedules(cpu, kernel, &shape)
            .into_iter()
            .map(Some),
    );
    for schedule in &schedules {
        let outputs = launch(g.stencil, &program, &case, halo, *schedule);
        let effective = schedule
            .unwrap_or_else(|| <CpuBackend as Backend<T>>::default_schedule(cpu, kernel, &shape));
        let exact = <CpuBackend as Backend<T>>::matches_interpreter_bits(cpu, kernel, &effective);
        if let Some(d) = first_difference(&program, &case, &outputs, exact) {
            panic!("{} under {schedule:?}: {d}\n{}", kernel.name, g.source);
        }
    }
    schedules.len()
}

fn check_all<T: Element + Real>(kernels: &[Generated<T>]) -> usize {
    kernels
        .iter()
        .map(|g| match g.config.n_dims {
            2 => check_one::<T, 2>(g),
            3 => check_one::<T, 3>(g),
            n => panic!("no {n}-D generated kernels expected"),
        })
        .sum()
}

#[test]
fn launched_kernels_compute_what_their_source_text_says() {
    assert!(generated_f64().len() + generated_f32().len() >= 50);
    let f64s = sampled(generated_f64());
    let f32s = sampled(generated_f32());
    let runs = check_all(&f64s) + check_all(&f32s);
    // Guard: every kernel ran under the default schedule and sampled ones.
    assert!(runs >= 3 * (f64s.len() + f32s.len()), "only {runs} runs");
}

/// A wrong lowering or builder, made by editing the IR of a correct kernel.
#[derive(Clone, Copy, Debug)]
enum Plant {
    /// Every read's offset is mirrored on the first axis any read moves along (a sign
    /// convention flipped on one axis).
    MirrorAxis,
    /// The first two inputs swap names (an argument-order bug).
    SwapInputs,
    /// The first two parameters swap names.
    SwapParams,
    /// The first non-unit constant is off by 1/512.
    NudgeConstant,
}

fn plant(kernel: &Kernel, bug: Plant) -> Option<Kernel> {
    let mut k = kernel.clone();
    match bug {
        Plant::MirrorAxis => {
            let d = k.exprs.iter().find_map(|x| match x {
                Expr::Read { offset, .. } => offset.0.iter().position(|&o| o != 0),
                _ => None,
            })?;
            for x in &mut k.exprs {
                if let Expr::Read { offset, .. } = x {
                    offset.0[d] = -offset.0[d];
                }
            }
        }
        Plant::SwapInputs => {
            let inputs: Vec<usize> = (0..k.fields.len())
                .filter(|&f| k.fields[f].role == stencil::ir::Role::Input)
                .collect();
            let [a, b] = inputs.get(..2)?.try_into().ok()?;
            let name = k.fields[a].name.clone();
            k.fields[a].name = std::mem::replace(&mut k.fields[b].name, name);
        }
        Plant::SwapParams => {
            if k.params.len() < 2 {
                return None;
            }
            let name = k.params[0].name.clone();
            k.params[0].name = std::mem::replace(&mut k.params[1].name, name);
        }
        Plant::NudgeConstant => {
            let c = k.exprs.iter_mut().find_map(|x| match x {
                Expr::Const(c) if c.abs() != 1.0 && *c != 0.125 => Some(c),
                _ => None,
            })?;
            *c += 1.0 / 512.0;
        }
    }
    Some(k)
}

/// Runs `bug` planted in `g`'s IR through `Launch` (default schedule) and says whether the
/// evaluator of the unchanged source catches it, even within the per-point bound; `None` when
/// the bug does not apply to this kernel.
fn caught<T: Element + Real, const D: usize>(g: &Generated<T>, bug: Plant) -> Option<bool> {
    let program = Program::parse(g.source);
    let planted = Stencil::<T>::new(plant(g.stencil.kernel(), bug)?).unwrap();
    let halo = g.config.order as usize;
    let case = case::<T, D>(&program, shape::<D>(g.config.seed), halo, g.config.seed);
    let outputs = launch(&planted, &program, &case, halo, None);
    Some(first_difference(&program, &case, &outputs, false).is_some())
}

#[test]
fn bugs_planted_in_the_ir_are_caught_on_asymmetric_kernels() {
    let kernels = generated_f64();
    for bug in [
        Plant::MirrorAxis,
        Plant::SwapInputs,
        Plant::SwapParams,
        Plant::NudgeConstant,
    ] {
        let mut applied = 0;
        for g in kernels.iter().filter(|g| g.config.asymmetric) {
            let result = match g.config.n_dims {
                2 => caught::<f64, 2>(g, bug),
                _ => caught::<f64, 3>(g, bug),
            };
            if let Some(was_caught) = result {
                assert!(
                    was_caught,
                    "{bug:?} in {} went unnoticed",
                    g.stencil.kernel().name
                );
                applied += 1;
            }
        }
        assert!(applied >= 2, "{bug:?} applied to only {applied} kernels");
    }
}

#[test]
fn a_mirrored_axis_is_invisible_on_symmetric_linear_kernels() {
    // Why the generator draws asymmetric coefficients: with one coefficient per symmetry orbit,
    // a lowering that flips the sign of one axis computes the same function (up to rounding).
    let mut applied = 0;
    for g in generated_f64()
        .iter()
        .filter(|g| !g.config.asymmetric && !g.config.nonlinear)
    {
        let result = match g.config.n_dims {
            2 => caught::<f64, 2>(g, Plant::MirrorAxis),
            _ => caught::<f64, 3>(g, Plant::MirrorAxis),
        };
        assert_eq!(result, Some(false), "{}", g.stencil.kernel().name);
        applied += 1;
    }
    assert!(applied >= 2, "only {applied} symmetric linear kernels");
}
