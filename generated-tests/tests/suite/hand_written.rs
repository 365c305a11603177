//! Hand-written kernels that use the whole language (`let`, `select`, `if`, every math
//! function, comparisons and connectives, several inputs and outputs stored out of declaration
//! order), called as a user calls them (the typed function, positional arguments, tuned), and
//! compared over several time steps with the source-text evaluator, which applies every
//! boundary condition by its own reading of the documented rules. Then every sampled CPU
//! schedule on grids with padded rows.

use crate::evaluator;

use std::collections::HashMap;

use evaluator::{Program, Real};
use stencil::prelude::*;
use stencil::{Backend, CpuBackend, Element, Grid, Launch, Schedule, TunePolicy};
use stencil_test_support::Rng;
use stencil_test_support::grid::{fill_random, poison};

/// Defines the kernels and keeps their text: the evaluator reads exactly what the macro read.
macro_rules! kernels_with_source {
    ($($t:tt)*) => {
        stencil! { $($t)* }
        const SOURCE: &str = stringify!($($t)*);
    };
}

kernels_with_source! {
    fn waves(u: &Grid2<f64>, v: &Grid2<f64>, a: &mut Grid2<f64>, b: &mut Grid2<f64>, dt: f64, h: f64) {
        let lap = u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1] - 4.0 * u[i, j];
        b[i, j] = select(lap > 0.0 && v[i, j] < 0.5, sqrt(abs(lap)) * dt, -(lap / h) + 0.5 * v[i-2, j+1]);
        a[i, j] = 0.25 * (max(min(exp(0.5 * u[i, j+1]) - ln(abs(v[i-2, j]) + 1.0), 2.0), pow(abs(u[i, j]), 1.5))
            + if !(u[i, j] >= 0.0) || v[i, j] == 0.0 { sin(v[i, j]) } else { cos(u[i+1, j+1]) * tan(0.5 * v[i, j]) }
            + tanh(u[i-1, j-1]) + floor(4.0 * v[i, j]) / 8.0 - ceil(3.0 * u[i, j]) / 8.0);
    }

    fn lopsided(u: &Grid3<f32>, w: &Grid3<f32>, out: &mut Grid3<f32>, c: f32) {
        out[i, j, k] = 0.375 * u[i-2, j, k] - 0.125 * u[i+1, j, k] + c * (u[i, j-1, k+2] - 0.5 * u[i, j+2, k])
            + 0.0625 * u[i+1, j+1, k-1] - w[i, j, k-2] * u[i, j, k] + 0.25 * w[i, j+1, k];
    }
}

/// The value a read at `p` sees under `boundary` on every face, from the interior values alone,
/// by the rules documented on `Boundary`, applied to each out-of-range coordinate in turn.
fn fetch<T: Copy>(interior: &[T], shape: &[usize], p: &[isize], boundary: Boundary<T>) -> T {
    let mut q = Vec::with_capacity(p.len());
    for (&c, &n) in p.iter().zip(shape) {
        let n = n as isize;
        q.push(if (0..n).contains(&c) {
            c
        } else {
            match boundary {
                Boundary::Dirichlet(v) => return v,
                Boundary::Periodic => c.rem_euclid(n),
                Boundary::ZeroGradient => c.clamp(0, n - 1),
                Boundary::Reflect if n == 1 => 0,
                Boundary::Reflect => {
                    let period = 2 * (n - 1);
                    let m = c.rem_euclid(period);
                    if m >= n { period - m } else { m }
                }
                _ => panic!("no rule to apply for {c} outside 0..{n}"),
            }
        });
    }
    let mut index = 0;
    for (&c, &n) in q.iter().zip(shape) {
        index = index * n + c as usize;
    }
    interior[index]
}

/// Interior values in row-major order.
fn interior<T: Element, const D: usize>(g: &Grid<T, D>) -> Vec<T> {
    g.interior_iter().map(|(_, v)| v).collect()
}

/// Every interior point in row-major order.
fn points(shape: &[usize]) -> Vec<Vec<isize>> {
    let mut out = vec![vec![]];
    for &n in shape {
        out = out
            .into_iter()
            .flat_map(|p| {
                (0..n as isize).map(move |c| {
                    let mut q = p.clone();
                    q.push(c);
                    q
                })
            })
            .collect();
    }
    out
}

/// Whether `got` is `want`: bit for bit where the schedule keeps the interpreter's order, else
/// within 1e-12 relative (a kernel with `select` and functions has no per-point bound the
/// evaluator can derive, and a reassociated sum differs in its last bits only).
fn same<T: Real>(got: T, want: T, exact: bool) -> bool {
    if exact {
        got.bits() == want.bits()
    } else {
        (got.as_f64() - want.as_f64()).abs() <= 1e-12 * (1.0 + want.as_f64().abs())
    }
}

#[test]
fn every_boundary_condition_over_several_steps_matches_the_source() {
    let program = Program::parse_named(SOURCE, "waves");
    let shape = [19usize, 13];
    let (dt, h) = (0.1, 0.7);
    let params: HashMap<String, f64> = [("dt".into(), dt), ("h".into(), h)].into();
    let cpu = CpuBackend::global();
    for boundary in [
        Boundary::Dirichlet(0.3),
        Boundary::Periodic,
        Boundary::ZeroGradient,
        Boundary::Reflect,
    ] {
        let mut rng = Rng::new(7);
        let mut u = Grid2::<f64>::with_halo(shape, 2).unwrap();
        let mut v = Grid2::<f64>::with_halo(shape, 2).unwrap();
        fill_random(&mut u, &mut rng, (-1.0, 1.0));
        fill_random(&mut v, &mut rng, (-1.0, 1.0));
        u.set_boundary(boundary);
        v.set_boundary(boundary);
        let mut want_u = interior(&u);
        let mut want_v = interior(&v);
        for step in 0..4 {
            let mut a = Grid2::<f64>::with_halo(shape, 2).unwrap();
            let mut b = Grid2::<f64>::with_halo(shape, 2).unwrap();
            poison(&mut a, f64::NAN);
            poison(&mut b, f64::NAN);
            let report = waves(&u, &v, &mut a, &mut b, dt, h)
                .without_tuning_cache()
                .run_with_report()
                .unwrap();
            let exact = <CpuBackend as Backend<f64>>::matches_interpreter_bits(
                cpu,
                waves::stencil().kernel(),
                &report.schedule,
            );
            let read = |name: &str, p: &[isize]| {
                let values = if name == "u" { &want_u } else { &want_v };
                fetch(values, &shape, p, boundary)
            };
            let (mut next_u, mut next_v) = (Vec::new(), Vec::new());
            for p in points(&shape) {
                for (name, want, _) in program.eval(&p, &params, &read) {
                    let (grid, next) = if name == "a" {
                        (&a, &mut next_u)
                    } else {
                        (&b, &mut next_v)
                    };
                    let got = grid.get([p[0], p[1]]).unwrap();
                    assert!(
                        same(got, want, exact),
                        "{boundary:?}, step {step}, {name} at {p:?}: {got} vs {want} \
                         under {:?}",
                        report.schedule
                    );
                    next.push(want);
                }
            }
            // The next step reads this one's outputs: a as u, b as v.
            a.set_boundary(boundary);
            b.set_boundary(boundary);
            (u, v) = (a, b);
            (want_u, want_v) = (next_u, next_v);
        }
    }
}

#[test]
fn every_sampled_schedule_on_padded_grids_matches_the_source() {
    let program = Program::parse_named(SOURCE, "lopsided");
    let shape = [9usize, 11, 21];
    let c = 0.7f32;
    let params: HashMap<String, f32> = [("c".into(), c)].into();
    let mut rng = Rng::new(11);
    let mut u = Grid3::<f32>::with_padding(shape, 2, 1).unwrap();
    let mut w = Grid3::<f32>::with_padding(shape, 2, 1).unwrap();
    fill_random(&mut u, &mut rng, (-1.0, 1.0));
    fill_random(&mut w, &mut rng, (-1.0, 1.0));
    u.set_boundary(Boundary::Periodic);
    w.set_boundary(Boundary::ZeroGradient);
    let (want_u, want_w) = (interior(&u), interior(&w));
    let read = |name: &str, p: &[isize]| {
        if name == "u" {
            fetch(&want_u, &shape, p, Boundary::Periodic)
        } else {
            fetch(&want_w, &shape, p, Boundary::ZeroGradient)
        }
    };
    let want: Vec<f32> = points(&shape)
        .iter()
        .map(|p| program.eval(p, &params, &read)[0].1)
        .collect();
    let cpu = CpuBackend::global();
    let kernel = lopsided::stencil().kernel();
    let schedules = <CpuBackend as Backend<f32>>::sample_schedules(cpu, kernel, &shape);
    assert!(schedules.len() > 3);
    for schedule in schedules.into_iter().map(Some).chain([None]) {
        let mut out = Grid3::<f32>::with_padding(shape, 2, 1).unwrap();
        poison(&mut out, f32::NAN);
        let mut launch = Launch::new(lopsided::stencil())
            .input("u", &u)
            .input("w", &w)
            .output("out", &mut out)
            .param("c", c)
            .without_tuning_cache();
        launch = match schedule {
            Some(s) => launch.schedule(s),
            None => launch.tune(TunePolicy::Quick),
        };
        let report = launch.run_with_report().unwrap();
        let chosen: Schedule = report.schedule;
        let exact = <CpuBackend as Backend<f32>>::matches_interpreter_bits(cpu, kernel, &chosen);
        for (p, want) in points(&shape).iter().zip(&want) {
            let got = out.get([p[0], p[1], p[2]]).unwrap();
            // The kernel is linear: a reassociated sum of 8 products stays within 32 ulp of
            // the sum of magnitudes (at most 3.5 for values in [-1, 1]).
            let ok = if exact {
                got.to_bits() == want.to_bits()
            } else {
                (got - want).abs() <= 32.0 * f32::EPSILON * 3.5
            };
            assert!(ok, "{p:?}: {got} vs {want} under {chosen:?}");
        }
    }
}
