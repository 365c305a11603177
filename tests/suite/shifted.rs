//! The shifted point loop (each input row loaded once per vector, its neighbours along the row
//! by lane shifts): where a run's rows fit it, it computes them, and it computes the plain
//! loop's bits. Each case runs on a one-thread backend (which computes on the calling thread,
//! whose count of shifted rows the test reads), over NaN-poisoned outputs, against the
//! reference interpreter on random grids.

use stencil::__private::lanes::{F64, Lanes, shifted_rows};
use stencil::kernels::{
    five_point_fma, jacobi7, jacobi7_f32, jacobi7_f32_fma, jacobi7_fma, jacobi27, jacobi27_f32,
    jacobi27_f32_fma, jacobi27_fma, star4, star4_fma,
};
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

    // Nine rows read displaced along the row: more than the shifted loop carries.
    fn crowded(u: &Grid2<f64>, out: &mut Grid2<f64>) {
        out[i, j] = u[i-4, j-1] * u[i-4, j+1] + u[i-3, j-1] * u[i-3, j+1]
            + u[i-2, j-1] * u[i-2, j+1] + u[i-1, j-1] * u[i-1, j+1] + u[i, j-1] * u[i, j+1]
            + u[i+1, j-1] * u[i+1, j+1] + u[i+2, j-1] * u[i+2, j+1]
            + u[i+3, j-1] * u[i+3, j+1] + u[i+4, j-1] * u[i+4, j+1];
    }

    // Fused multiply-adds, two of them of a negated read and a negated constant.
    #[fma]
    fn wave_fma(u: &Grid2<f64>, um: &Grid2<f64>, out: &mut Grid2<f64>, c: f64) {
        let lap = u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1] - 4.0 * u[i, j];
        out[i, j] = 2.0 * u[i, j] - um[i, j] + c * lap;
    }

    // Negations, unfused.
    fn upwind(u: &Grid2<f32>, out: &mut Grid2<f32>, a: f32) {
        out[i, j] = -(a * (u[i, j] - u[i, j-1])) + -u[i-1, j] * -0.5;
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
    run_within(stencil, shape, halo, schedule, seed, 0.0)
}

/// [`run`], with each output within `tolerance` of the interpreter's, relative to its size
/// where that exceeds 1 (0: bit for bit); returns the rows the run-level loop computed.
fn run_within<T: Element, const D: usize>(
    stencil: &Stencil<T>,
    shape: [usize; D],
    halo: usize,
    schedule: CpuSchedule,
    seed: u64,
    tolerance: f64,
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
            let (g, w) = (g.to_f64(), w.to_f64());
            let agrees = if tolerance == 0.0 {
                g.to_bits() == w.to_bits()
            } else {
                (g - w).abs() <= tolerance * w.abs().max(1.0)
            };
            assert!(
                agrees,
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
    // Rows of 70 points: several vectors and a part of one in every build.
    let seven = [4, 5, 70];
    let shifted = run(jacobi7::stencil(), seven, 1, without_prefetch(), 1);
    assert!(!counted || shifted == rows_of(&seven), "{shifted}");
    let shifted = run(jacobi7_f32::stencil(), seven, 1, without_prefetch(), 2);
    assert!(!counted || shifted == rows_of(&seven), "{shifted}");
    // Reach 4 along the row.
    let shifted = run(wide::stencil(), [9, 90], 4, without_prefetch(), 3);
    assert!(!counted || shifted == 9, "{shifted}");
    // The radius-4 star reads 17 input rows, one of them displaced along the row (carried).
    let shifted = run(star4::stencil(), [9, 9, 90], 4, without_prefetch(), 9);
    assert!(!counted || shifted == 81, "{shifted}");
    // Two inputs, two outputs, `let`, `/` and `-`, f32; and a 1-D kernel.
    let shifted = run(flux::stencil(), [6, 100], 2, without_prefetch(), 4);
    assert!(!counted || shifted == 6, "{shifted}");
    let shifted = run(burgers::stencil(), [200], 1, without_prefetch(), 5);
    assert!(!counted || shifted == 1, "{shifted}");
    // Blocks along the row of 37 points: the second block's rows start off the line, and each
    // ends in a part of a vector, computed by the row's last vector again.
    let blocked = CpuSchedule {
        tile: [0, 0, 37, 0],
        ..without_prefetch()
    };
    let shifted = run(jacobi7::stencil(), [3, 4, 74], 1, blocked, 6);
    assert!(!counted || shifted == 24, "{shifted}");
    // Rows of one vector and of a vector and a part, f64 and f32 (8 and 16 lanes).
    for n in [8, 11, 16, 19] {
        let shifted = run(
            jacobi7::stencil(),
            [3, 2, n],
            1,
            without_prefetch(),
            10 + n as u64,
        );
        assert!(!counted || shifted == 6, "{n}: {shifted}");
        let shifted = run(
            jacobi7_f32::stencil(),
            [3, 2, n],
            1,
            without_prefetch(),
            30 + n as u64,
        );
        assert!(
            !counted || shifted == if n < 16 { 0 } else { 6 },
            "{n}: {shifted}"
        );
    }
}

#[test]
fn fused_kernels_take_the_shifted_loop_with_the_plain_loops_bits() {
    // `#[fma]` kernels' fused nodes round once lane-wise, as the plain loop's `mul_add` per
    // point: the interpreter's bits, on rows of several vectors and a part (a halo of 2 in
    // 2-D, so the first row's windows stay in the storage).
    let counted = cfg!(debug_assertions) && F64::SINGLE_SHIFTS;
    if !F64::SINGLE_SHIFTS {
        println!("SKIP: this build has no single-instruction lane shifts (no AVX-512F): bits only");
    }
    let shape = [3, 4, 70];
    let shifted = run(jacobi7_fma::stencil(), shape, 1, without_prefetch(), 50);
    assert!(!counted || shifted == 12, "{shifted}");
    let shifted = run(jacobi7_f32_fma::stencil(), shape, 1, without_prefetch(), 51);
    assert!(!counted || shifted == 12, "{shifted}");
    let shifted = run(star4_fma::stencil(), [9, 9, 75], 4, without_prefetch(), 52);
    assert!(!counted || shifted == 81, "{shifted}");
    let shifted = run(
        five_point_fma::stencil(),
        [7, 83],
        2,
        without_prefetch(),
        53,
    );
    assert!(!counted || shifted == 7, "{shifted}");
    let shifted = run(wave_fma::stencil(), [6, 41], 2, without_prefetch(), 54);
    assert!(!counted || shifted == 6, "{shifted}");
    let shifted = run(upwind::stencil(), [6, 41], 2, without_prefetch(), 55);
    assert!(!counted || shifted == 6, "{shifted}");
}

#[test]
fn rows_that_do_not_fit_the_shifted_loop_take_the_plain_one() {
    // Shorter than a vector, in any build; and sweeps that prefetch or stream (from memory)
    // keep the plain loop.
    assert_eq!(
        run(jacobi7::stencil(), [3, 4, 3], 1, without_prefetch(), 7),
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
    // More rows read displaced along the row than the loop carries.
    assert_eq!(
        run(crowded::stencil(), [5, 70], 4, without_prefetch(), 11),
        0
    );
}

#[test]
fn the_retimed_loop_takes_whole_runs_of_rows() {
    // The 27-point stencil's retimed loop (partial sums shared along the row, reassociated:
    // to rounding) computes a run's rows in one call when it neither prefetches nor streams;
    // its rows are counted with the shifted loop's, in builds with debug assertions.
    let counted = cfg!(debug_assertions) && F64::FAST_SHIFTS;
    if !F64::FAST_SHIFTS {
        println!("SKIP: this build has no fast lane shifts (no AVX2): values only");
    }
    let lanes = <stencil::__private::lanes::F64 as Lanes>::N;
    // Rows of several vectors and a part, of one vector and a part, and of exactly one.
    for n in [70, lanes + 3, lanes] {
        let shape = [3, 4, n];
        let shifted = run_within(jacobi27::stencil(), shape, 2, without_prefetch(), 40, 1e-13);
        assert!(!counted || shifted == 12, "{n}: {shifted}");
        // With a halo of 1, the windows of the grid's first and last rows (a vector wider
        // than the row, a row across and a plane up) may leave the storage: such runs take
        // the row-at-a-time loop, the others the run-level one.
        let shifted = run_within(jacobi27::stencil(), shape, 1, without_prefetch(), 42, 1e-13);
        assert!(!counted || (1..=12).contains(&shifted), "{n}: {shifted}");
        // Prefetching: the row-at-a-time retimed loop, the same values.
        let prefetching = CpuSchedule {
            prefetch: 2,
            ..without_prefetch()
        };
        let shifted = run_within(jacobi27::stencil(), shape, 2, prefetching, 40, 1e-13);
        assert_eq!(shifted, 0, "{n}");
    }
    // Fused (`#[fma]`): linear all the same, so retimed, to rounding.
    let shifted = run_within(
        jacobi27_fma::stencil(),
        [3, 4, 70],
        2,
        without_prefetch(),
        43,
        1e-13,
    );
    assert!(!counted || shifted == 12, "{shifted}");
    let shifted = run_within(
        jacobi27_f32_fma::stencil(),
        [3, 4, 70],
        2,
        without_prefetch(),
        44,
        1e-5,
    );
    assert!(!counted || shifted == 12, "{shifted}");
    let f32_lanes = <stencil::__private::lanes::F32 as Lanes>::N;
    for n in [64, f32_lanes + 5, f32_lanes - 1] {
        let shifted = run_within(
            jacobi27_f32::stencil(),
            [2, 5, n],
            2,
            without_prefetch(),
            41,
            1e-5,
        );
        let vectors = counted && n >= f32_lanes;
        assert!(
            shifted == if vectors { 10 } else { 0 } || !counted,
            "{n}: {shifted}"
        );
    }
}
