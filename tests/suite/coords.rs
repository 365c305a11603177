//! Kernels that read their point's indices (`i`, `j`, `k` as values) and the step number
//! (`step()`): every CPU schedule (generated and generic point loops, register rows, row
//! blocks, streaming stores, prefetch, one to three threads, regions), time loops blocked in
//! slabs and in skewed tiles (where a wavefront sub-step with the wrong step number would
//! show), `Stages` with a time-dependent source term, `Steps` in chunks between callbacks,
//! kernels from text and the PTX emulator, each against the reference interpreter at the
//! right step and against a loop written here from the formula, bit for bit.

use stencil::prelude::*;
use stencil::{
    Backend, CpuBackend, CpuSchedule, CpuStores, Element, EmulatedGpu, Schedule, Stage, Stages,
    Stencil, Steps, interp,
};
use stencil_test_support::Rng;
use stencil_test_support::grid::{fill_random, poison};

stencil! {
    /// A mask by index, a time-dependent term and coefficients from the indices.
    fn coords3(u: &Grid3<f64>, out: &mut Grid3<f64>, a: f64, dt: f64) {
        let t = dt * step();
        let mask = if i < 3.0 || k >= 5.0 { 0.5 } else { 1.0 };
        out[i, j, k] = mask * (a * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k] + u[i, j+1, k]
            + u[i, j, k-1] + u[i, j, k+1]) + 0.01 * sin(t + 0.1 * j)) + 0.001 * k - 0.002 * i;
    }

    /// Indices and the step in `f32`.
    fn coords2(u: &Grid2<f32>, out: &mut Grid2<f32>, c: f32) {
        out[i, j] = c * (u[i, j-1] + u[i, j+1]) + i * 0.5 + j * 0.25 + step();
    }

    /// A select by index, scaled by the step.
    fn coords1(u: &Grid1<f64>, out: &mut Grid1<f64>) {
        out[i] = select(i > 4.0, u[i-1], u[i+1]) * (0.5 + 0.25 * step()) + 0.125 * i;
    }

    /// A reduction over index-weighted values.
    fn coord_sum(u: &Grid2<f64>, s: &mut Sum<f64>) {
        s += u[i, j] * i + j * step();
    }

    /// Heun's first stage with a time-dependent source on a band of rows.
    fn forced_euler(u: &Grid2<f64>, tmp: &mut Grid2<f64>, a: f64, dt: f64) {
        let source = if j >= 3.0 && j < 6.0 { sin(dt * step()) } else { 0.0 };
        tmp[i, j] = u[i, j] + a * (u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1]
            - 4.0 * u[i, j]) + source;
    }

    /// Heun's second stage.
    fn forced_heun(u: &Grid2<f64>, tmp: &Grid2<f64>, u_next: &mut Grid2<f64>, a: f64) {
        u_next[i, j] = 0.5 * (u[i, j] + tmp[i, j] + a * (tmp[i-1, j] + tmp[i+1, j]
            + tmp[i, j-1] + tmp[i, j+1] - 4.0 * tmp[i, j])) + 0.0001 * step() * i;
    }
}

const POISON: f64 = -7.25e101;

/// `coords3` at `point` from the formula, in the interpreter's order of operations.
fn coords3_at(u: &Grid3<f64>, [i, j, k]: [usize; 3], a: f64, dt: f64, step: u64) -> f64 {
    let at = |di: isize, dj: isize, dk: isize| {
        u.get([i as isize + di, j as isize + dj, k as isize + dk])
            .unwrap()
    };
    let (fi, fj, fk) = (i as f64, j as f64, k as f64);
    let t = dt * step as f64;
    let mask = if fi < 3.0 || fk >= 5.0 { 0.5 } else { 1.0 };
    let sum = at(-1, 0, 0) + at(1, 0, 0) + at(0, -1, 0) + at(0, 1, 0) + at(0, 0, -1) + at(0, 0, 1);
    mask * (a * sum + 0.01 * Element::sin(t + 0.1 * fj)) + 0.001 * fk - 0.002 * fi
}

/// `coords2` from the formula.
fn coords2_at(u: &Grid2<f32>, [i, j]: [usize; 2], c: f32, step: u64) -> f32 {
    let at = |dj: isize| u.get([i as isize, j as isize + dj]).unwrap();
    c * (at(-1) + at(1)) + i as f32 * 0.5 + j as f32 * 0.25 + step as f32
}

/// `coords1` from the formula.
fn coords1_at(u: &Grid1<f64>, i: usize, step: u64) -> f64 {
    let at = |d: isize| u.get([i as isize + d]).unwrap();
    let picked = if i as f64 > 4.0 { at(-1) } else { at(1) };
    picked * (0.5 + 0.25 * step as f64) + 0.125 * i as f64
}

/// Every point of `grid`'s interior.
fn points<const D: usize>(shape: [usize; D]) -> Vec<[usize; D]> {
    let mut out = vec![[0; D]];
    for d in 0..D {
        out = out
            .into_iter()
            .flat_map(|p| {
                (0..shape[d]).map(move |x| {
                    let mut q = p;
                    q[d] = x;
                    q
                })
            })
            .collect();
    }
    out
}

fn signed<const D: usize>(p: [usize; D]) -> [isize; D] {
    p.map(|x| x as isize)
}

/// Single-sweep schedules: the generated and generic loops, register rows, row blocks,
/// stores, prefetch, chunks and 1 to 3 threads.
fn sweep_schedules() -> Vec<CpuSchedule> {
    let mut out = vec![CpuSchedule::default()];
    for k in 0..12 {
        out.push(CpuSchedule {
            threads: 1 + k % 3,
            force_generic: k % 4 == 1,
            row_block: [0, 1, 3, 17][k % 4],
            register_rows: [1, 2, 3, 4][(k / 2) % 4],
            stores: [CpuStores::Auto, CpuStores::Streaming, CpuStores::Plain][k % 3],
            prefetch: k % 3,
            chunk: k % 2,
            tile: [[0; 4], [2, 3, 5, 0], [5, 0, 7, 0]][k % 3],
            ..CpuSchedule::default()
        });
    }
    out
}

/// The interpreter at `step` on `inputs`, into a copy of `out`.
fn interp_at<T: Element, const D: usize>(
    stencil: &Stencil<T>,
    inputs: &[&Grid<T, D>],
    out: &Grid<T, D>,
    params: &[T],
    step: u64,
) -> Grid<T, D> {
    let mut expected = out.clone();
    let views: Vec<_> = inputs.iter().map(|g| g.view()).collect();
    let mut outs = vec![expected.kernel_output_view()];
    interp::run_at_step(stencil.kernel(), &views, &mut outs, params, step);
    drop(outs);
    expected
}

fn same_interior<T: Element, const D: usize>(a: &Grid<T, D>, b: &Grid<T, D>, what: &str) {
    for p in points(a.shape()) {
        let (x, y) = (a.get(signed(p)).unwrap(), b.get(signed(p)).unwrap());
        assert!(
            x.to_f64().to_bits() == y.to_f64().to_bits(),
            "{what}: {x:?} != {y:?} at {p:?}"
        );
    }
}

#[test]
fn index_and_step_values_match_the_formula_and_the_interpreter_on_every_cpu_schedule() {
    let mut rng = Rng::new(0xc0_0d5);
    let backends: Vec<CpuBackend> = (1..=3).map(|t| CpuBackend::new(t).unwrap()).collect();
    // Tiny, odd, and enough points (41 * 29 * 31) for the backend's thread pool.
    for shape in [[1, 1, 1], [5, 7, 9], [41, 29, 31]] {
        let mut u = Grid3::<f64>::with_halo(shape, 1).unwrap();
        fill_random(&mut u, &mut rng, (-1.0, 1.0));
        let (a, dt) = (0.3, 0.07);
        for (n, schedule) in sweep_schedules().into_iter().enumerate() {
            let step = [0, 1, 7, 12345][n % 4];
            let mut out = Grid3::<f64>::with_halo(shape, 1).unwrap();
            poison(&mut out, POISON);
            let backend = &backends[n % 3];
            coords3(&u, &mut out, a, dt)
                .on(backend)
                .schedule(Schedule::Cpu(schedule))
                .at_step(step)
                .run()
                .unwrap();
            let what = format!("shape {shape:?}, step {step}, {schedule:?}");
            for p in points(shape) {
                let expected = coords3_at(&u, p, a, dt, step);
                let found = out.get(signed(p)).unwrap();
                assert_eq!(found.to_bits(), expected.to_bits(), "{what} at {p:?}");
            }
            let oracle = interp_at(coords3::stencil(), &[&u], &out, &[a, dt], step);
            same_interior(&out, &oracle, &what);
        }
    }
    for shape in [[1, 1], [3, 17], [190, 181]] {
        let mut u = Grid2::<f32>::with_halo(shape, 1).unwrap();
        fill_random(&mut u, &mut rng, (-1.0, 1.0));
        for (n, schedule) in sweep_schedules().into_iter().enumerate() {
            let step = [3, 0, 9, 100][n % 4];
            let mut out = Grid2::<f32>::with_halo(shape, 1).unwrap();
            poison(&mut out, POISON as f32);
            coords2(&u, &mut out, 0.75)
                .on(&backends[n % 3])
                .schedule(Schedule::Cpu(schedule))
                .at_step(step)
                .run()
                .unwrap();
            for p in points(shape) {
                let expected = coords2_at(&u, p, 0.75, step);
                let found = out.get(signed(p)).unwrap();
                assert_eq!(
                    found.to_bits(),
                    expected.to_bits(),
                    "{shape:?} {schedule:?} {p:?}"
                );
            }
        }
    }
    for len in [1, 6, 40_000] {
        let mut u = Grid1::<f64>::with_halo([len], 1).unwrap();
        fill_random(&mut u, &mut rng, (-1.0, 1.0));
        for (n, schedule) in sweep_schedules().into_iter().enumerate() {
            let step = [2, 5][n % 2];
            let mut out = Grid1::<f64>::with_halo([len], 1).unwrap();
            poison(&mut out, POISON);
            coords1(&u, &mut out)
                .on(&backends[n % 3])
                .schedule(Schedule::Cpu(schedule))
                .at_step(step)
                .run()
                .unwrap();
            for i in 0..len {
                let expected = coords1_at(&u, i, step);
                let found = out.get([i as isize]).unwrap();
                assert_eq!(
                    found.to_bits(),
                    expected.to_bits(),
                    "{len} {schedule:?} {i}"
                );
            }
        }
    }
}

#[test]
fn a_run_without_at_step_is_step_zero() {
    let mut rng = Rng::new(5);
    let mut u = Grid2::<f32>::with_halo([4, 6], 1).unwrap();
    fill_random(&mut u, &mut rng, (-1.0, 1.0));
    let mut out = Grid2::<f32>::with_halo([4, 6], 1).unwrap();
    coords2(&u, &mut out, 2.0).run().unwrap();
    for p in points([4, 6]) {
        let expected = coords2_at(&u, p, 2.0, 0);
        assert_eq!(out.get(signed(p)).unwrap().to_bits(), expected.to_bits());
    }
}

#[test]
fn reductions_over_index_values_match_the_interpreter_on_both_paths() {
    let mut rng = Rng::new(0x5e_d0c5);
    for shape in [[3, 5], [190, 181]] {
        let mut u = Grid2::<f64>::with_halo(shape, 0).unwrap();
        fill_random(&mut u, &mut rng, (-1.0, 1.0));
        let step = 3;
        let views = [u.view()];
        let mut no_outputs: [stencil::FieldViewMut<'_, f64>; 0] = [];
        let expected = interp::run_at_step(
            coord_sum::stencil().kernel(),
            &views,
            &mut no_outputs,
            &[],
            step,
        );
        for schedule in sweep_schedules() {
            for threads in [1, 2] {
                let backend = CpuBackend::new(threads).unwrap();
                let mut sum = Sum::<f64>::default();
                coord_sum(&u, &mut sum)
                    .on(&backend)
                    .schedule(Schedule::Cpu(schedule))
                    .at_step(step)
                    .run()
                    .unwrap();
                assert_eq!(
                    sum.value().to_bits(),
                    expected[0].to_bits(),
                    "{shape:?} {schedule:?}"
                );
            }
        }
    }
}

/// Runs `coords3` for `steps` steps by hand: the interpreter at each step's number, the halo
/// refreshed, the grids swapped.
fn coords3_plain(u: &mut Grid3<f64>, out: &mut Grid3<f64>, steps: usize, first: u64) {
    for s in 0..steps {
        let expected = interp_at(
            coords3::stencil(),
            &[u],
            out,
            &[0.15, 0.3],
            first + s as u64,
        );
        *out = expected;
        out.update_halo();
        std::mem::swap(u, out);
    }
}

#[test]
fn time_loops_in_slabs_and_skewed_tiles_number_every_sub_step() {
    let mut rng = Rng::new(0x7_1e5);
    // Enough points for two workers.
    let shape = [40, 30, 33];
    let backend = CpuBackend::new(2).unwrap();
    let before = backend.activity().tiled_time_loops;
    let mut initial = Grid3::<f64>::with_halo(shape, 1).unwrap();
    fill_random(&mut initial, &mut rng, (-1.0, 1.0));
    let slabs = |depth: usize, slab: usize, generic: bool| CpuSchedule {
        time_depth: depth,
        time_slab: slab,
        force_generic: generic,
        ..CpuSchedule::default()
    };
    let tiles = |depth: usize, slab: usize, rows: usize, generic: bool| CpuSchedule {
        tile: [0, rows, 0, 0],
        ..slabs(depth, slab, generic)
    };
    let schedules = [
        slabs(1, 0, false),
        slabs(2, 3, false),
        slabs(4, 5, true),
        slabs(3, 7, false),
        tiles(2, 4, 5, false),
        tiles(4, 3, 7, false),
        tiles(3, 5, 2, true),
        tiles(8, 16, 16, false),
    ];
    let steps = 9;
    let mut expected_u = initial.clone();
    let mut expected_out = initial.clone();
    poison(&mut expected_out, 0.0);
    coords3_plain(&mut expected_u, &mut expected_out, steps, 0);
    for schedule in schedules {
        let mut u = initial.clone();
        let mut out = Grid3::<f64>::with_halo(shape, 1).unwrap();
        poison(&mut out, POISON);
        Steps::new(coords3::stencil())
            .rotate(&["out", "u"])
            .grid("u", &mut u)
            .grid("out", &mut out)
            .param("a", 0.15)
            .param("dt", 0.3)
            .on(&backend)
            .schedule(Schedule::Cpu(schedule))
            .run(steps)
            .unwrap();
        let what = format!("{schedule:?}");
        same_interior(&u, &expected_u, &what);
        same_interior(&out, &expected_out, &what);
    }
    assert!(
        backend.activity().tiled_time_loops > before,
        "no loop ran in skewed tiles"
    );
}

#[test]
fn steps_between_callbacks_count_from_the_loop_s_start() {
    let mut rng = Rng::new(0xca11);
    let shape = [9, 8, 10];
    let mut initial = Grid3::<f64>::with_halo(shape, 1).unwrap();
    fill_random(&mut initial, &mut rng, (-1.0, 1.0));
    let steps = 7;
    let mut expected_u = initial.clone();
    let mut expected_out = initial.clone();
    coords3_plain(&mut expected_u, &mut expected_out, steps, 0);
    let mut u = initial.clone();
    let mut out = Grid3::<f64>::with_halo(shape, 1).unwrap();
    let mut seen = Vec::new();
    Steps::new(coords3::stencil())
        .rotate(&["out", "u"])
        .grid("u", &mut u)
        .grid("out", &mut out)
        .param("a", 0.15)
        .param("dt", 0.3)
        .schedule(Schedule::Cpu(CpuSchedule {
            time_depth: 2,
            ..CpuSchedule::default()
        }))
        .every(3, |state| {
            seen.push(state.step());
            std::ops::ControlFlow::Continue(())
        })
        .run(steps)
        .unwrap();
    assert_eq!(seen, [3, 6]);
    same_interior(&u, &expected_u, "chunks of 3, 3, 1 steps");
}

#[test]
fn stages_with_a_time_dependent_source_match_the_plain_loop_from_any_first_step() {
    let mut rng = Rng::new(0x57a6e5);
    // Enough points for two workers.
    let shape = [190, 181];
    let mut initial = Grid2::<f64>::with_halo(shape, 1).unwrap();
    fill_random(&mut initial, &mut rng, (-1.0, 1.0));
    let (a, dt) = (0.1, 0.25);
    let steps = 7;
    for first in [0usize, 11] {
        // The plain loop: each stage's run() at the step's number, then the swap.
        let mut u = initial.clone();
        let mut tmp = Grid2::<f64>::with_halo(shape, 1).unwrap();
        let mut u_next = Grid2::<f64>::with_halo(shape, 1).unwrap();
        for s in 0..steps {
            let step = (first + s) as u64;
            forced_euler(&u, &mut tmp, a, dt)
                .at_step(step)
                .run()
                .unwrap();
            forced_heun(&u, &tmp, &mut u_next, a)
                .at_step(step)
                .run()
                .unwrap();
            std::mem::swap(&mut u, &mut u_next);
        }
        let expected = u;
        for (depth, slab, threads, generic) in [
            (1, 0, 1, false),
            (2, 5, 2, false),
            (4, 3, 2, true),
            (3, 0, 1, false),
        ] {
            let backend = CpuBackend::new(threads).unwrap();
            let mut u = initial.clone();
            let mut tmp = Grid2::<f64>::with_halo(shape, 1).unwrap();
            let mut u_next = Grid2::<f64>::with_halo(shape, 1).unwrap();
            poison(&mut tmp, POISON);
            poison(&mut u_next, POISON);
            Stages::new()
                .grid("u", &mut u)
                .grid("tmp", &mut tmp)
                .grid("u_next", &mut u_next)
                .rotate(&["u_next", "u"])
                .stage(
                    Stage::new(forced_euler::stencil())
                        .param("a", a)
                        .param("dt", dt),
                )
                .stage(Stage::new(forced_heun::stencil()).param("a", a))
                .first_step(first)
                .on(&backend)
                .schedule(Schedule::Cpu(CpuSchedule {
                    time_depth: depth,
                    time_slab: slab,
                    force_generic: generic,
                    ..CpuSchedule::default()
                }))
                .run(steps)
                .unwrap();
            same_interior(
                &u,
                &expected,
                &format!("first {first}, depth {depth}, slab {slab}"),
            );
        }
    }
}

#[test]
fn kernels_from_text_read_indices_and_the_step() {
    let stencil = stencil::parse::<f64>(
        "fn ramp(u: &Grid2<f64>, out: &mut Grid2<f64>, h: f64) {
            out[x, y] = u[x, y] + h * x - y * step();
        }",
    )
    .unwrap();
    let mut rng = Rng::new(77);
    let mut u = Grid2::<f64>::with_halo([6, 5], 0).unwrap();
    fill_random(&mut u, &mut rng, (-1.0, 1.0));
    let mut out = Grid2::<f64>::with_halo([6, 5], 0).unwrap();
    poison(&mut out, POISON);
    stencil::Launch::new(&stencil)
        .input("u", &u)
        .output("out", &mut out)
        .param("h", 0.5)
        .at_step(4)
        .run()
        .unwrap();
    for p @ [x, y] in points([6, 5]) {
        let expected = u.get(signed(p)).unwrap() + 0.5 * x as f64 - y as f64 * 4.0;
        assert_eq!(out.get(signed(p)).unwrap().to_bits(), expected.to_bits());
    }
    // The printer's kernel source reads the same values back.
    let source = stencil::random::to_macro_source(stencil.kernel());
    let inner = source
        .trim()
        .strip_prefix("stencil!")
        .and_then(|rest| rest.trim().strip_prefix('{'))
        .and_then(|rest| rest.strip_suffix('}'))
        .unwrap();
    let again = stencil::parse::<f64>(inner).unwrap();
    assert_eq!(again.kernel(), stencil.kernel(), "{source}");
}

#[test]
fn misused_index_values_and_step_calls_are_errors_at_their_tokens() {
    for (source, expected, at) in [
        (
            "fn f(u: &Grid2<f64>, out: &mut Grid2<f64>) { out[i, j] = u[i, j] + k; }",
            "unknown name `k`: the kernel is 2-dimensional, its index variables are `i`, `j`",
            "k",
        ),
        (
            "fn f(u: &Grid1<f64>, out: &mut Grid1<f64>) { out[i] = u[i] * step(2.0); }",
            "`step` takes 0 arguments, found 1",
            "step(2.0)",
        ),
    ] {
        let error = stencil::parse::<f64>(source).unwrap_err();
        let message = error.to_string();
        assert!(message.contains(expected), "{message}");
        let column = source.find(at).unwrap() + 1;
        assert!(
            message.contains(&format!("line 1, column {column}:")),
            "{message} (expected at column {column})"
        );
    }
}

#[test]
fn the_ptx_emulator_reads_indices_and_the_step() {
    let emulated = EmulatedGpu::new();
    let backend: &dyn Backend<f64> = &emulated;
    let mut rng = Rng::new(0xe0_1a7e);
    let shape = [6, 7, 9];
    let mut u = Grid3::<f64>::with_halo(shape, 1).unwrap();
    fill_random(&mut u, &mut rng, (-1.0, 1.0));
    for schedule in backend.sample_schedules(coords3::stencil().kernel(), &shape) {
        let mut out = Grid3::<f64>::with_halo(shape, 1).unwrap();
        poison(&mut out, POISON);
        coords3(&u, &mut out, 0.2, 0.1)
            .on(backend)
            .schedule(schedule)
            .at_step(6)
            .run()
            .unwrap();
        let oracle = interp_at(coords3::stencil(), &[&u], &out, &[0.2, 0.1], 6);
        // The emulator's `sin` is the PTX library's, not the interpreter's: within a few ulps.
        for p in points(shape) {
            let (x, y) = (out.get(signed(p)).unwrap(), oracle.get(signed(p)).unwrap());
            assert!(
                (x - y).abs() <= 1e-14 * (1.0 + y.abs()),
                "{schedule:?} {p:?}: {x} {y}"
            );
        }
    }
    let emulated32: &dyn Backend<f32> = &emulated;
    let mut v = Grid2::<f32>::with_halo([5, 11], 1).unwrap();
    fill_random(&mut v, &mut rng, (-1.0, 1.0));
    for schedule in emulated32.sample_schedules(coords2::stencil().kernel(), &[5, 11]) {
        let mut out = Grid2::<f32>::with_halo([5, 11], 1).unwrap();
        poison(&mut out, POISON as f32);
        coords2(&v, &mut out, 0.5)
            .on(emulated32)
            .schedule(schedule)
            .at_step(3)
            .run()
            .unwrap();
        for p in points([5, 11]) {
            let expected = coords2_at(&v, p, 0.5, 3);
            assert_eq!(
                out.get(signed(p)).unwrap().to_bits(),
                expected.to_bits(),
                "{schedule:?}"
            );
        }
    }
}

#[test]
fn time_loops_on_the_ptx_emulator_number_their_steps() {
    let emulated = EmulatedGpu::new();
    let report = stencil::verify_steps_with(
        coords2::stencil(),
        &[&["out", "u"]],
        &[&emulated as &dyn Backend<f32>, CpuBackend::global()],
        &stencil::VerifyConfig::default(),
    )
    .unwrap();
    assert!(report.cases > 0);
}
