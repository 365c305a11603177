//! The shifted point loop (each input row loaded once per vector, its neighbours along the row
//! by lane shifts): where a run's rows fit it, it computes them, and it computes the plain
//! loop's bits. Each case runs on a one-thread backend (which computes on the calling thread,
//! whose count of shifted rows the test reads), over NaN-poisoned outputs, against the
//! reference interpreter on random grids.

use stencil::__private::lanes::{F64, Lanes, shifted_rows};
use stencil::kernels::{jacobi7, jacobi7_f32, star4};
use stencil::prelude::*;
use stencil::{Backend, CpuBackend, CpuSchedule, CpuStores, Element, Job, Schedule, Stencil};
use stencil_core::interp;
use stencil_test_support::Rng;

stencil! {
    fn flux(u: &Grid2<f32>, v: &Grid2<f32>, f: &mut Grid2<f32>, g: &mut Grid2<f32>, h: f32) {
        let du = (u[i, j+1] - u[i, j-1]) / h;
        f[i, j] = du * v[i, j] - 0.5 * (v[i, j+2] - v[i, j-2]);
        g[i, j] = u[i-1, j] + u[i+1, j] - du / (1.0 + v[i, j+1] * v[i, j+1]);
    }

    fn wide(u: &Grid2<f64>, out: &mut Grid2<f64>, c: f64) {
        out[i, j] = c * (u[i, j-4] + u[i, j+4]) - u[i, j-3] * u[i, j+3] + u[i-1, j] + u[i+1, j];
    }

    // Products of reads: no retimed form (whose sums are reassociated), so the shifted loop.
    fn burgers(u: &Grid1<f64>, out: &mut Grid1<f64>, a: f64) {
        out[i] = u[i] - a * u[i] * (u[i+1] - u[i-1]) + (1.0 - 2.0 * a) * u[i-1] * u[i+1];
    }
}

/// Runs `stencil` on random inputs of `shape` (halo `halo`) under `schedule` on one thread
/// and checks every output against the interpreter bit for bit (a NaN left in a poisoned
/// output fails); returns the rows the shifted loop computed.
fn run<T: Element, const D: usize>(
    stencil: &Stencil<T>,
    shape: [usize; D],
    halo: usize,
    schedule: CpuSchedule,
    seed: u64,
) -> u64 {
    let kernel = stencil.kernel();
    let mut rng = Rng::new(seed);
    let inputs: Vec<Grid<T, D>> = (0..kernel.inputs().count())
        .map(|_| {
            let mut g = Grid::<T, D>::with_halo(shape, halo).unwrap();
            for v in g.as_mut_slice() {
                *v = T::from_f64(rng.uniform(-1.0, 1.0));
            }
            g
        })
        .collect();
    let n_outputs = kernel.outputs().count();
    let params: Vec<T> = (0..kernel.params.len())
        .map(|_| T::from_f64(rng.uniform(0.2, 0.9)))
        .collect();
    let mut expected: Vec<Grid<T, D>> = (0..n_outputs)
        .map(|_| Grid::<T, D>::with_halo(shape, halo).unwrap())
        .collect();
    let views: Vec<_> = inputs.iter().map(Grid::view).collect();
    let mut expected_views: Vec<_> = expected.iter_mut().map(Grid::view_mut).collect();
    interp::run(kernel, &views, &mut expected_views, &params);
    drop(expected_views);
    let mut outputs: Vec<Grid<T, D>> = (0..n_outputs)
        .map(|_| {
            let mut g = Grid::<T, D>::with_halo(shape, halo).unwrap();
            g.fill(T::from_f64(f64::NAN));
            g
        })
        .collect();
    let backend = CpuBackend::new(1).unwrap();
    let before = shifted_rows();
    let mut job = Job::new(
        stencil,
        inputs.iter().map(Grid::view).collect(),
        outputs.iter_mut().map(Grid::view_mut).collect(),
        params.clone(),
    )
    .unwrap();
    backend.run(&mut job, &Schedule::Cpu(schedule)).unwrap();
    drop(job);
    let shifted = shifted_rows() - before;
    for (k, (got, want)) in outputs.iter().zip(&expected).enumerate() {
        for ((at, g), (_, w)) in got.interior_iter().zip(want.interior_iter()) {
            assert!(
                g.to_f64().to_bits() == w.to_f64().to_bits(),
                "{}: output {k} at {at:?}: {g:?} where the interpreter gives {w:?} \
                 ({schedule:?})",
                kernel.name
            );
        }
    }
    shifted
}

fn without_prefetch() -> CpuSchedule {
    CpuSchedule {
        prefetch: 0,
        stores: CpuStores::Plain,
        ..CpuSchedule::default()
    }
}

#[test]
fn the_shifted_loop_computes_the_rows_that_fit_it_with_the_plain_loops_bits() {
    // Shifted only with single-instruction lane shifts (AVX-512F), counted only in builds
    // with debug assertions; the bits are checked in every build.
    let counted = cfg!(debug_assertions) && F64::SINGLE_SHIFTS;
    if !F64::SINGLE_SHIFTS {
        println!("SKIP: this build has no single-instruction lane shifts (no AVX-512F): bits only");
    }
    let rows_of = |shape: &[usize]| shape[..shape.len() - 1].iter().product::<usize>() as u64;
    // Rows of 70 points: aligned, two vectors and more in every build.
    let seven = [4, 5, 70];
    let shifted = run(jacobi7::stencil(), seven, 1, without_prefetch(), 1);
    assert!(!counted || shifted == rows_of(&seven), "{shifted}");
    let shifted = run(jacobi7_f32::stencil(), seven, 1, without_prefetch(), 2);
    assert!(!counted || shifted == rows_of(&seven), "{shifted}");
    // Reach 4 along the row.
    let shifted = run(wide::stencil(), [9, 90], 4, without_prefetch(), 3);
    assert!(!counted || shifted == 9, "{shifted}");
    // The radius-4 star reads 17 input rows: too many to carry, so the plain loop.
    let shifted = run(star4::stencil(), [9, 9, 90], 4, without_prefetch(), 9);
    assert!(!counted || shifted == 0, "{shifted}");
    // Two inputs, two outputs, `let`, `/` and `-`, f32; and a 1-D kernel.
    let shifted = run(flux::stencil(), [6, 100], 2, without_prefetch(), 4);
    assert!(!counted || shifted == 6, "{shifted}");
    let shifted = run(burgers::stencil(), [200], 1, without_prefetch(), 5);
    assert!(!counted || shifted == 1, "{shifted}");
    // Blocks along the row of 37 points: the second block's rows start off the line, so each
    // has a head and a tail the plain loop computes around the shifted vectors.
    let blocked = CpuSchedule {
        tile: [0, 0, 37, 0],
        ..without_prefetch()
    };
    let shifted = run(jacobi7::stencil(), [3, 4, 74], 1, blocked, 6);
    assert!(!counted || shifted == 24, "{shifted}");
}

#[test]
fn rows_that_do_not_fit_the_shifted_loop_take_the_plain_one() {
    // Too short for two vectors after the head, in any build; and sweeps that prefetch or
    // stream (from memory) keep the plain loop.
    assert_eq!(
        run(jacobi7::stencil(), [3, 4, 12], 1, without_prefetch(), 7),
        0
    );
    for schedule in [
        CpuSchedule {
            prefetch: 2,
            ..without_prefetch()
        },
        CpuSchedule {
            stores: CpuStores::Streaming,
            ..without_prefetch()
        },
        CpuSchedule {
            register_rows: 2,
            ..without_prefetch()
        },
    ] {
        assert_eq!(run(jacobi7::stencil(), [4, 6, 70], 1, schedule, 8), 0);
    }
}
