//! Time loops (`Steps`) against the loop a user writes by hand: `run()` then a rotation of
//! the grids with `std::mem::swap`, step after step. Every grid, interior and halo, must hold
//! the same bits afterwards, for every boundary condition, kernels of one to three
//! dimensions and radius 1 to 4, several fields and three time levels, odd and tiny shapes,
//! 1 to 3 threads, temporal blocking of every depth and slab (step counts that blocks do not
//! divide), generated and generic point loops. Inputs hold random values (halos included),
//! and the time loop's grids are poisoned where the hand-written loop's are not written.

use std::ops::ControlFlow;

use stencil::prelude::*;
use stencil::{CpuBackend, CpuSchedule, ErrorKind, Schedule, Stencil, kernels};
use stencil_test_support::Rng;
use stencil_test_support::grid::fill_storage_random;

stencil! {
    /// A wave equation: three time levels, radius 2 in the outer dimension.
    #[rotate(u_next -> u -> u_prev)]
    fn wave(u_prev: &Grid2<f64>, u: &Grid2<f64>, u_next: &mut Grid2<f64>, c: f64) {
        u_next[i, j] = 2.0 * u[i, j] - u_prev[i, j]
            + c * (u[i-2, j] + u[i+1, j] + u[i, j-1] + u[i, j+1] - 4.0 * u[i, j]);
    }

    /// Two species, a coefficient grid and an output outside the rotation.
    #[rotate(un -> u, vn -> v)]
    fn reaction(u: &Grid2<f64>, v: &Grid2<f64>, k: &Grid2<f64>, un: &mut Grid2<f64>,
                vn: &mut Grid2<f64>, energy: &mut Grid2<f64>, d: f64, f: f64) {
        let uvv = u[i, j] * v[i, j] * v[i, j];
        un[i, j] = u[i, j] + d * (u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1] - 4.0 * u[i, j])
            - uvv + f * (1.0 - u[i, j]);
        vn[i, j] = v[i, j] + 0.5 * d * (v[i-1, j] + v[i+1, j] + v[i, j-1] + v[i, j+1]
            - 4.0 * v[i, j]) + uvv - k[i, j] * v[i, j];
        energy[i, j] = u[i, j] * u[i, j] + v[i, j] * v[i, j];
    }

    /// Reads only below along the outer dimension, two planes away.
    fn lopsided(u: &Grid3<f64>, out: &mut Grid3<f64>, a: f64) {
        out[i, j, k] = a * u[i, j, k] + (1.0 - a) * 0.25
            * (u[i-2, j, k] + u[i, j-1, k] + u[i, j, k+1] + u[i-1, j+1, k-1]);
    }

    /// A wave equation in 3-D: three time levels, reaches of 2 along the two outer
    /// dimensions.
    #[rotate(u_next -> u -> u_prev)]
    fn wave3(u_prev: &Grid3<f64>, u: &Grid3<f64>, u_next: &mut Grid3<f64>, c: f64) {
        u_next[i, j, k] = 2.0 * u[i, j, k] - u_prev[i, j, k]
            + c * (u[i-2, j, k] + u[i+1, j, k] + u[i, j-1, k] + u[i, j+2, k]
                + u[i, j, k-1] + u[i, j, k+1] - 6.0 * u[i, j, k]);
    }

    /// Two species in 3-D, a coefficient grid and an output outside the rotation.
    #[rotate(un -> u, vn -> v)]
    fn reaction3(u: &Grid3<f64>, v: &Grid3<f64>, k: &Grid3<f64>, un: &mut Grid3<f64>,
                 vn: &mut Grid3<f64>, energy: &mut Grid3<f64>, d: f64, f: f64) {
        let uvv = u[i, j, l] * v[i, j, l] * v[i, j, l];
        un[i, j, l] = u[i, j, l] + d * (u[i-1, j, l] + u[i+1, j, l] + u[i, j-1, l]
            + u[i, j+1, l] + u[i, j, l-1] + u[i, j, l+1] - 6.0 * u[i, j, l]) - uvv
            + f * (1.0 - u[i, j, l]);
        vn[i, j, l] = v[i, j, l] + 0.5 * d * (v[i, j-1, l] + v[i, j+1, l] - 2.0 * v[i, j, l])
            + uvv - k[i, j, l] * v[i, j, l];
        energy[i, j, l] = u[i, j, l] * u[i, j, l] + v[i, j, l] * v[i, j, l];
    }

    /// A ping-pong with a coefficient grid.
    fn wave_free(u: &Grid2<f64>, k: &Grid2<f64>, out: &mut Grid2<f64>) {
        out[i, j] = u[i, j] + 0.1 * k[i, j] * (u[i-1, j] + u[i+1, j] - 2.0 * u[i, j]);
    }

    /// No reads along the outer dimension at all.
    fn flat(u: &Grid3<f64>, out: &mut Grid3<f64>) {
        out[i, j, k] = 0.5 * u[i, j, k] + 0.25 * (u[i, j, k-1] + u[i, j+1, k]);
    }
}

/// What these tests draw from the shared generator: values, and boundary conditions.
trait Draw {
    /// A value in [-0.5, 0.5).
    fn value(&mut self) -> f64;
    /// A random condition: any, or with `constant` one whose halo values never depend on
    /// the interior (a value or user-managed).
    fn boundary_of(&mut self, constant: bool) -> Boundary<f64>;
    /// Any condition.
    fn boundary(&mut self) -> Boundary<f64>;
}

impl Draw for Rng {
    fn value(&mut self) -> f64 {
        self.uniform(-0.5, 0.5)
    }
    fn boundary_of(&mut self, constant: bool) -> Boundary<f64> {
        if constant {
            return match self.index(2) {
                0 => Boundary::Dirichlet(self.value()),
                _ => Boundary::UserManaged,
            };
        }
        self.boundary()
    }
    fn boundary(&mut self) -> Boundary<f64> {
        match self.index(5) {
            0 => Boundary::Dirichlet(self.value()),
            1 => Boundary::Periodic,
            2 => Boundary::ZeroGradient,
            3 => Boundary::Reflect,
            _ => Boundary::UserManaged,
        }
    }
}

/// One case: a kernel, its rotation, the grids' shape and halo, parameters.
struct Case<'k> {
    stencil: &'k Stencil<f64>,
    chains: &'k [&'k [&'k str]],
    params: &'k [(&'k str, f64)],
}

/// Random grids for every field of the case's kernel: random interior and halo values,
/// random faces (the same for every grid of a chain unless `mixed`; outputs outside the
/// rotation get theirs too).
fn grids<const D: usize>(
    case: &Case<'_>,
    shape: [usize; D],
    halo: usize,
    random: &mut Rng,
    mixed: bool,
) -> Vec<Grid<f64, D>> {
    grids_with(case, shape, halo, random, mixed, false)
}

/// As [`grids`], with only value and user-managed faces when `constant`.
fn grids_with<const D: usize>(
    case: &Case<'_>,
    shape: [usize; D],
    halo: usize,
    random: &mut Rng,
    mixed: bool,
    constant: bool,
) -> Vec<Grid<f64, D>> {
    let kernel = case.stencil.kernel();
    let faces: [[Boundary<f64>; 2]; D] =
        std::array::from_fn(|_| [random.boundary_of(constant), random.boundary_of(constant)]);
    kernel
        .fields
        .iter()
        .map(|_| {
            let mut g = Grid::<f64, D>::with_halo(shape, halo).unwrap();
            fill_storage_random(&mut g, random, (-0.5, 0.5));
            for (d, pair) in faces.iter().enumerate() {
                for (side, &b) in [Side::Low, Side::High].into_iter().zip(pair) {
                    let b = if mixed && random.index(3) == 0 {
                        random.boundary_of(constant)
                    } else {
                        b
                    };
                    g.set_face_boundary(d, side, b).unwrap();
                }
            }
            g
        })
        .collect()
}

/// Copies of `grids` (interior, halo, faces).
fn copies<const D: usize>(grids: &[Grid<f64, D>]) -> Vec<Grid<f64, D>> {
    grids
        .iter()
        .map(|g| g.repadded(g.padding()).unwrap())
        .collect()
}

/// The hand-written loop: `steps` runs of the kernel on the CPU under the default schedule,
/// each followed by the rotation.
fn by_hand<const D: usize>(case: &Case<'_>, grids: &mut [Grid<f64, D>], steps: usize) {
    let cpu = Schedule::Cpu(CpuSchedule::default());
    by_hand_on(case, grids, steps, CpuBackend::global(), cpu);
}

/// The time loop on `grids` through `backend`, under `schedule` or tuned (without the tuning
/// cache).
fn stepped<const D: usize>(
    case: &Case<'_>,
    grids: &mut [Grid<f64, D>],
    steps: usize,
    backend: &dyn stencil::Backend<f64>,
    schedule: Option<Schedule>,
) {
    let kernel = case.stencil.kernel();
    let mut time_loop = Steps::new(case.stencil).on(backend).without_tuning_cache();
    for chain in case.chains {
        time_loop = time_loop.rotate(chain);
    }
    for (i, g) in grids.iter_mut().enumerate() {
        time_loop = time_loop.grid(&kernel.fields[i].name, g);
    }
    for &(name, value) in case.params {
        time_loop = time_loop.param(name, value);
    }
    if let Some(s) = schedule {
        time_loop = time_loop.schedule(s);
    }
    let report = time_loop.run(steps).unwrap();
    assert_eq!(report.steps, steps);
}

fn assert_same<const D: usize>(got: &[Grid<f64, D>], want: &[Grid<f64, D>], what: &str) {
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        let (g, w) = (g.as_slice(), w.as_slice());
        assert_eq!(g.len(), w.len(), "{what}: grid {k}");
        if let Some(at) = (0..g.len()).find(|&i| g[i].to_bits() != w[i].to_bits()) {
            panic!(
                "{what}: grid {k} differs at storage index {at}: {} vs {}",
                g[at], w[at]
            );
        }
        assert_eq!(
            got[k].boundaries(),
            want[k].boundaries(),
            "{what}: faces of grid {k}"
        );
    }
}

/// The 7-point heat kernel as a ping-pong.
fn heat_case() -> Case<'static> {
    Case {
        stencil: kernels::jacobi7::stencil(),
        chains: &[&["out", "u"]],
        params: &[("c0", 0.4), ("c1", 0.1)],
    }
}

/// The radius-4 star as a ping-pong.
fn star_case() -> Case<'static> {
    Case {
        stencil: kernels::star4::stencil(),
        chains: &[&["out", "u"]],
        params: &[
            ("c0", 0.2),
            ("c1", 0.1),
            ("c2", 0.05),
            ("c3", 0.02),
            ("c4", 0.01),
        ],
    }
}

/// The 27-point stencil (a retimed loop) as a ping-pong.
fn j27_case() -> Case<'static> {
    Case {
        stencil: kernels::jacobi27::stencil(),
        chains: &[&["out", "u"]],
        params: &[("c0", 0.3), ("c1", 0.05), ("c2", 0.02), ("c3", 0.01)],
    }
}

/// `lopsided` as a ping-pong.
fn lopsided_case() -> Case<'static> {
    Case {
        stencil: lopsided::stencil(),
        chains: &[&["out", "u"]],
        params: &[("a", 0.3)],
    }
}

/// Schedules covering blocking depths, slabs, register blocks, prefetch and the generic path.
fn schedules(random: &mut Rng) -> Vec<Option<CpuSchedule>> {
    let mut out = vec![None];
    for depth in [1, 2, 3, 4, 8] {
        let slab = [0, 1, 2, 3, 7][random.index(5)];
        out.push(Some(CpuSchedule {
            time_depth: depth,
            time_slab: slab,
            register_rows: [1, 2, 4][random.index(3)],
            prefetch: [0, 2][random.index(2)],
            force_generic: random.index(4) == 0,
            ..CpuSchedule::default()
        }));
    }
    out
}

/// Schedules for time loops whose faces are all values or user-managed (in 3-D the steps
/// then also skew along dimension 1, in tiles of `time_slab` planes by `tile[1]` rows):
/// depths, slabs and rows per tile from one to more than the grid, register blocks, prefetch
/// and the generic path.
fn tile_schedules(random: &mut Rng) -> Vec<Option<CpuSchedule>> {
    let mut out = vec![None];
    for depth in [2, 3, 4, 5, 8] {
        let mut tile = [0; 4];
        tile[1] = [0, 1, 2, 3, 5, 16, 100][random.index(7)];
        out.push(Some(CpuSchedule {
            tile,
            time_depth: depth,
            time_slab: [0, 1, 2, 3, 7, 16, 100][random.index(7)],
            register_rows: [1, 2, 4][random.index(3)],
            prefetch: [0, 2][random.index(2)],
            force_generic: random.index(4) == 0,
            ..CpuSchedule::default()
        }));
    }
    out
}

/// Runs the case on random grids of each shape, every schedule, 1 to 3 threads, against the
/// hand-written loop.
fn check<const D: usize>(case: &Case<'_>, shapes: &[[usize; D]], halo: usize, seed: u64) {
    check_with(case, shapes, halo, seed, false);
}

/// As [`check`]; with `constant`, on grids whose faces are all values or user-managed, under
/// [`tile_schedules`].
fn check_with<const D: usize>(
    case: &Case<'_>,
    shapes: &[[usize; D]],
    halo: usize,
    seed: u64,
    constant: bool,
) {
    let mut random = Rng::new(seed);
    let backends: Vec<CpuBackend> = (1..=3).map(|t| CpuBackend::new(t).unwrap()).collect();
    for &shape in shapes {
        let schedules = match constant {
            true => tile_schedules(&mut random),
            false => schedules(&mut random),
        };
        for schedule in schedules {
            let backend = &backends[random.index(3)];
            let steps = [1, 2, 5, 9, 13][random.index(5)];
            let mixed = random.index(2) == 0;
            let initial = grids_with(case, shape, halo, &mut random, mixed, constant);
            let mut want = copies(&initial);
            // Outputs whose halo was written by hand (no longer what their faces prescribe):
            // the first step that writes them must fill their constant faces too.
            let kernel = case.stencil.kernel();
            for (g, field) in want.iter_mut().zip(&kernel.fields) {
                if field.role == stencil::ir::Role::Output && random.index(2) == 0 {
                    g.set([-1; D], 7.0).unwrap();
                    g.set(shape.map(|n| n as isize), -7.0).unwrap();
                }
            }
            let mut got = copies(&want);
            // The same point loop and row segments (loops that reassociate along a row give
            // the same bits only then; see `Steps`).
            let cpu = Schedule::Cpu(schedule.unwrap_or_default());
            by_hand_on(case, &mut want, steps, CpuBackend::global(), cpu);
            stepped(case, &mut got, steps, backend, schedule.map(Schedule::Cpu));
            assert_same(
                &got,
                &want,
                &format!(
                    "`{}` {shape:?} steps {steps} threads {} {schedule:?}",
                    case.stencil.kernel().name,
                    backend.threads()
                ),
            );
        }
    }
}

#[test]
fn heat_in_3d_matches_the_hand_written_loop() {
    let case = heat_case();
    check(
        &case,
        &[[7, 5, 9], [1, 3, 4], [2, 1, 1], [36, 30, 33]],
        1,
        1,
    );
    check(&case, &[[11, 6, 5]], 3, 2);
}

#[test]
fn a_radius_4_star_and_the_27_point_stencil_match() {
    let star = star_case();
    check(&star, &[[9, 6, 11], [3, 2, 5], [40, 30, 31]], 4, 3);
    let j27 = j27_case();
    check(&j27, &[[8, 7, 21], [36, 30, 33]], 1, 4);
}

#[test]
fn one_and_two_dimensional_kernels_match() {
    let smooth = Case {
        stencil: kernels::smooth1d::stencil(),
        chains: &[&["out", "u"]],
        params: &[("w", 0.3)],
    };
    check(&smooth, &[[1], [2], [17], [40_000]], 2, 5);
    let five = Case {
        stencil: kernels::five_point::stencil(),
        chains: &[&["out", "u"]],
        params: &[("c0", 0.5), ("c1", 0.125)],
    };
    check(&five, &[[13, 7], [1, 1], [190, 190]], 1, 6);
}

#[test]
fn three_time_levels_rotate_as_by_hand() {
    let case = Case {
        stencil: wave::stencil(),
        chains: &[&["u_next", "u", "u_prev"]],
        params: &[("c", 0.2)],
    };
    check(&case, &[[12, 9], [3, 4], [200, 180]], 2, 7);
}

#[test]
fn several_chains_coefficients_and_outputs_outside_the_rotation() {
    let case = Case {
        stencil: reaction::stencil(),
        chains: &[&["un", "u"], &["vn", "v"]],
        params: &[("d", 0.1), ("f", 0.03)],
    };
    check(&case, &[[10, 11], [1, 5], [190, 190]], 1, 8);
}

#[test]
fn lopsided_and_flat_reaches_along_the_outer_dimension() {
    let lopsided = lopsided_case();
    check(&lopsided, &[[9, 5, 6], [36, 30, 33]], 2, 9);
    let flat = Case {
        stencil: flat::stencil(),
        chains: &[&["out", "u"]],
        params: &[],
    };
    check(&flat, &[[5, 4, 7], [36, 30, 33]], 1, 10);
}

#[test]
fn tiles_skewed_along_two_dimensions_match_for_value_and_user_managed_faces() {
    // Shapes whose shares of dimension 1 are wide enough for tiles at some depths and thread
    // counts and not at others (the large ones run on several workers), shapes thinner than
    // a tile, and odd extents.
    let heat = heat_case();
    check_with(
        &heat,
        &[[9, 70, 60], [20, 40, 45], [3, 25, 4], [1, 30, 2]],
        1,
        21,
        true,
    );
    let star = star_case();
    check_with(&star, &[[12, 90, 32], [7, 50, 9]], 4, 22, true);
    let j27 = j27_case();
    check_with(&j27, &[[10, 64, 55]], 1, 23, true);
    let wave = Case {
        stencil: wave3::stencil(),
        chains: &[&["u_next", "u", "u_prev"]],
        params: &[("c", 0.1)],
    };
    check_with(&wave, &[[11, 80, 40], [6, 33, 5]], 2, 24, true);
    let reaction = Case {
        stencil: reaction3::stencil(),
        chains: &[&["un", "u"], &["vn", "v"]],
        params: &[("d", 0.1), ("f", 0.03)],
    };
    check_with(&reaction, &[[8, 60, 25], [4, 31, 3]], 1, 25, true);
    let lopsided = lopsided_case();
    check_with(&lopsided, &[[10, 50, 70]], 2, 26, true);
}

#[test]
fn a_kernel_built_at_run_time_steps_through_the_generic_path() {
    let generic = kernels::jacobi7::stencil().without_cpu_rows();
    let case = Case {
        stencil: &generic,
        chains: &[&["out", "u"]],
        params: &[("c0", 0.4), ("c1", 0.1)],
    };
    check(&case, &[[6, 5, 7], [36, 30, 33]], 1, 11);
}

#[test]
fn a_callback_sees_the_state_every_interval_and_may_stop_the_loop() {
    let case = heat_case();
    let mut random = Rng::new(12);
    let initial = grids(&case, [9, 8, 10], 1, &mut random, false);
    let mut want = copies(&initial);
    for g in &mut want {
        g.update_halo();
    }
    let mut got = copies(&want);
    let mut seen = Vec::new();
    let (head, tail) = got.split_at_mut(1);
    let report = kernels::jacobi7::stencil();
    let report = Steps::new(report)
        .rotate(&["out", "u"])
        .grid("u", &mut head[0])
        .grid("out", &mut tail[0])
        .param("c0", 0.4)
        .param("c1", 0.1)
        .schedule(Schedule::Cpu(CpuSchedule {
            time_depth: 4,
            ..CpuSchedule::default()
        }))
        .every(3, |state| {
            seen.push((state.step(), state.grid("u").unwrap().to_vec()));
            if state.step() == 9 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .run(20)
        .unwrap();
    assert_eq!(report.steps, 9);
    assert!(report.stopped);
    let mut by_hand_u = Vec::new();
    for _ in 0..3 {
        by_hand(&case, &mut want, 3);
        by_hand_u.push(want[0].to_vec());
    }
    assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), [3, 6, 9]);
    for ((_, got_u), want_u) in seen.iter().zip(&by_hand_u) {
        assert_eq!(got_u, want_u);
    }
    assert_same(&got, &want, "stopped after 9 steps");
}

#[test]
fn a_callback_may_change_a_parameter_for_the_steps_that_follow() {
    let case = Case {
        stencil: kernels::five_point::stencil(),
        chains: &[&["out", "u"]],
        params: &[("c0", 0.5), ("c1", 0.125)],
    };
    let mut random = Rng::new(13);
    let mut want = copies(&grids(&case, [30, 20], 1, &mut random, false));
    let mut got = copies(&want);
    by_hand(&case, &mut want, 4);
    let slower = Case {
        params: &[("c0", 0.5), ("c1", 0.0625)],
        ..case
    };
    by_hand(&slower, &mut want, 4);
    let (head, tail) = got.split_at_mut(1);
    Steps::new(kernels::five_point::stencil())
        .rotate(&["out", "u"])
        .grid("u", &mut head[0])
        .grid("out", &mut tail[0])
        .param("c0", 0.5)
        .param("c1", 0.125)
        .every(4, |state| {
            state.set_param("c1", 0.0625).unwrap();
            assert_eq!(state.param("c1"), Some(0.0625));
            assert!(state.set_param("c9", 1.0).is_err());
            ControlFlow::Continue(())
        })
        .run(8)
        .unwrap();
    assert_same(&got, &want, "parameter changed after 4 steps");
}

#[test]
fn a_callback_may_change_grids_and_its_errors_end_the_loop() {
    let case = Case {
        stencil: kernels::five_point::stencil(),
        chains: &[&["out", "u"]],
        params: &[("c0", 0.5), ("c1", 0.125)],
    };
    let mut random = Rng::new(29);
    // Faces that copy from the interior, so a change left without its halo would show.
    let mut start = grids(&case, [30, 20], 1, &mut random, false);
    for g in &mut start {
        g.set_boundary(Boundary::Periodic);
    }
    let mut want = copies(&start);
    let mut got = copies(&want);
    // By hand: 4 steps, a bump at a point next to the edge, its halo refreshed, 4 more steps.
    by_hand(&case, &mut want, 4);
    want[0][[0, 3]] += 2.0;
    want[0].update_halo();
    by_hand(&case, &mut want, 4);
    let (head, tail) = got.split_at_mut(1);
    let error = Steps::new(kernels::five_point::stencil())
        .rotate(&["out", "u"])
        .grid("u", &mut head[0])
        .grid("out", &mut tail[0])
        .param("c0", 0.5)
        .param("c1", 0.125)
        .try_every(4, |state| {
            if state.step() == 4 {
                state.grid_mut("u")?[[0, 3]] += 2.0;
                assert!(state.grid_mut("nothing").is_err());
                return Ok(ControlFlow::Continue(()));
            }
            // After 8 steps: a mistake passed on with `?` ends the loop with its error.
            state.set_param("c9", 1.0)?;
            Ok(ControlFlow::Continue(()))
        })
        .run(100)
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::BadArgument);
    assert!(error.to_string().contains("c9"), "{error}");
    assert_same(&got, &want, "a bump after 4 steps, an error after 8");

    // A grid given read only cannot be changed by a callback.
    let (mut u, mut out) = (want[0].clone(), want[1].clone());
    let k = want[0].clone();
    let e = Steps::new(wave_free::stencil())
        .rotate(&["out", "u"])
        .grid("u", &mut u)
        .grid("out", &mut out)
        .input("k", &k)
        .try_every(1, |state| {
            state.grid_mut("k")?;
            Ok(ControlFlow::Continue(()))
        })
        .run(3)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadArgument);
    assert!(e.to_string().contains("read only"), "{e}");
}

#[test]
fn misuse_is_an_error() {
    let stencil = kernels::jacobi7::stencil();
    let mut u = Grid3::<f64>::new([4, 4, 4]).unwrap();
    let mut v = u.like();
    let mut w = Grid3::<f64>::new([4, 5, 4]).unwrap();
    fn kind(steps: Steps<'_, f64, 3>) -> ErrorKind {
        steps.run(3).unwrap_err().kind()
    }
    fn params(s: Steps<'_, f64, 3>) -> Steps<'_, f64, 3> {
        s.param("c0", 0.4).param("c1", 0.1)
    }
    // No rotation, an output that is not first, unknown names, an input twice.
    assert_eq!(
        kind(params(
            Steps::new(stencil).grid("u", &mut u).grid("out", &mut v)
        )),
        ErrorKind::BadArgument
    );
    for chain in [
        &["u", "out"][..],
        &["out"],
        &["out", "nope"],
        &["out", "u", "u"],
    ] {
        assert_eq!(
            kind(params(
                Steps::new(stencil)
                    .rotate(chain)
                    .grid("u", &mut u)
                    .grid("out", &mut v)
            )),
            ErrorKind::BadArgument,
            "{chain:?}"
        );
    }
    // A rotating grid bound read-only; a parameter given twice or missing.
    assert_eq!(
        kind(params(
            Steps::new(stencil)
                .rotate(&["out", "u"])
                .input("u", &u)
                .grid("out", &mut v)
        )),
        ErrorKind::BadArgument
    );
    let twice = Steps::new(stencil)
        .rotate(&["out", "u"])
        .grid("u", &mut u)
        .grid("out", &mut v)
        .param("c0", 0.4)
        .param("c0", 0.5)
        .param("c1", 0.1);
    assert_eq!(kind(twice), ErrorKind::BadArgument);
    let missing = Steps::new(stencil)
        .rotate(&["out", "u"])
        .grid("u", &mut u)
        .grid("out", &mut v)
        .param("c0", 0.4);
    assert_eq!(kind(missing), ErrorKind::BadArgument);
    // Grids of different shapes.
    assert_eq!(
        kind(params(
            Steps::new(stencil)
                .rotate(&["out", "u"])
                .grid("u", &mut u)
                .grid("out", &mut w)
        )),
        ErrorKind::ShapeMismatch
    );
    // A callback every 0 steps.
    let zero = params(
        Steps::new(stencil)
            .rotate(&["out", "u"])
            .grid("u", &mut u)
            .grid("out", &mut v),
    )
    .every(0, |_| ControlFlow::Continue(()));
    assert_eq!(kind(zero), ErrorKind::BadArgument);
    // A stale halo on a grid the first step reads.
    u.set_boundary(Boundary::Periodic);
    u[[1, 1, 1]] = 2.0;
    assert_eq!(
        kind(params(
            Steps::new(stencil)
                .rotate(&["out", "u"])
                .grid("u", &mut u)
                .grid("out", &mut v)
        )),
        ErrorKind::StaleHalo
    );
    // A halo narrower than the kernel reads, on the output (read by the second step).
    u.update_halo();
    let mut thin = Grid3::<f64>::with_halo([4, 4, 4], 0).unwrap();
    assert_eq!(
        kind(params(
            Steps::new(stencil)
                .rotate(&["out", "u"])
                .grid("u", &mut u)
                .grid("out", &mut thin)
        )),
        ErrorKind::HaloTooNarrow
    );
    // Zero steps do nothing.
    let before = u.to_vec();
    let report = params(
        Steps::new(stencil)
            .rotate(&["out", "u"])
            .grid("u", &mut u)
            .grid("out", &mut v),
    )
    .run(0)
    .unwrap();
    assert_eq!(report.steps, 0);
    assert_eq!(u.to_vec(), before);
}

#[test]
fn coefficients_read_at_their_point_need_no_halo_in_a_time_loop_as_in_one_run() {
    // The DIA product's seven diagonals are read at their own point: `run()` takes them with
    // a halo of 0, and so does the time loop (`y -> x`), on several workers in skewed tiles
    // (39,168 points, Dirichlet faces) as on one, matching `run()` then swap bit for bit.
    let shape = [34, 32, 36];
    let mut random = Rng::new(0xd1a);
    let diagonals: Vec<Grid3<f64>> = (0..7)
        .map(|_| {
            let mut a = Grid3::<f64>::with_halo(shape, 0).unwrap();
            a.fill_with(|_| 0.3 * random.value());
            a
        })
        .collect();
    let mut x0 = Grid3::<f64>::with_halo(shape, 1).unwrap();
    x0.fill_with(|_| random.value());
    let mut y0 = x0.like();
    y0.fill_with(|_| f64::NAN);
    let a = |k: usize| &diagonals[k];
    let (mut x, mut y) = (x0.repadded(0).unwrap(), y0.repadded(0).unwrap());
    for _ in 0..5 {
        kernels::dia_spmv(&x, a(0), a(1), a(2), a(3), a(4), a(5), a(6), &mut y)
            .run()
            .unwrap();
        std::mem::swap(&mut x, &mut y);
    }
    let schedules = [
        CpuSchedule::default(),
        CpuSchedule {
            time_depth: 4,
            ..CpuSchedule::default()
        },
    ];
    for (backend, schedule) in [CpuBackend::new(2), CpuBackend::new(1)]
        .iter()
        .map(|b| b.as_ref().unwrap())
        .flat_map(|b| schedules.map(|s| (b, s)))
    {
        let (mut xs, mut ys) = (x0.repadded(0).unwrap(), y0.repadded(0).unwrap());
        let mut time_loop = Steps::new(kernels::dia_spmv::stencil())
            .on(backend)
            .schedule(Schedule::Cpu(schedule))
            .rotate(&["y", "x"])
            .grid("x", &mut xs)
            .grid("y", &mut ys);
        for (k, diagonal) in diagonals.iter().enumerate() {
            time_loop = time_loop.input(&format!("a{k}"), diagonal);
        }
        time_loop.run(5).unwrap();
        let what = format!("{} threads, {schedule:?}", backend.threads());
        assert_same(
            &[xs, ys],
            &[x.repadded(0).unwrap(), y.repadded(0).unwrap()],
            &what,
        );
    }
    // A rotating grid still needs the reach of its chain: `y` becomes `x`.
    let mut thin = Grid3::<f64>::with_halo(shape, 0).unwrap();
    let mut time_loop = Steps::new(kernels::dia_spmv::stencil())
        .rotate(&["y", "x"])
        .grid("x", &mut x)
        .grid("y", &mut thin);
    for (k, diagonal) in diagonals.iter().enumerate() {
        time_loop = time_loop.input(&format!("a{k}"), diagonal);
    }
    let err = time_loop.run(1).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::HaloTooNarrow);
    assert!(
        err.to_string()
            .contains("grid `y` has a halo of 0 but needs 1"),
        "{err}"
    );
}

#[test]
fn the_macro_generates_a_typed_time_loop_from_the_rotate_attribute() {
    // Three levels: `wave::steps` takes every grid mutably; after the loop `u` holds the
    // newest step and `u_prev` the one before, as the hand-written rotation leaves them.
    let case = Case {
        stencil: wave::stencil(),
        chains: &[&["u_next", "u", "u_prev"]],
        params: &[("c", 0.2)],
    };
    let mut random = Rng::new(14);
    let mut want = copies(&grids(&case, [40, 31], 2, &mut random, false));
    let mut got = copies(&want);
    by_hand(&case, &mut want, 7);
    let [u_prev, u, u_next] = &mut got[..] else {
        unreachable!()
    };
    let report = wave::steps(u_prev, u, u_next, 0.2).run(7).unwrap();
    assert_eq!(report.steps, 7);
    assert_same(&got, &want, "wave::steps");

    // Two chains, a read-only coefficient grid (borrowed shared) and an output outside the
    // rotation.
    let case = Case {
        stencil: reaction::stencil(),
        chains: &[&["un", "u"], &["vn", "v"]],
        params: &[("d", 0.1), ("f", 0.03)],
    };
    let mut want = copies(&grids(&case, [17, 23], 1, &mut random, false));
    let mut got = copies(&want);
    by_hand(&case, &mut want, 5);
    let [u, v, k, un, vn, energy] = &mut got[..] else {
        unreachable!()
    };
    reaction::steps(u, v, k, un, vn, energy, 0.1, 0.03)
        .run(5)
        .unwrap();
    assert_same(&got, &want, "reaction::steps");
}

/// The hand-written loop through `backend` under `schedule`.
fn by_hand_on<const D: usize>(
    case: &Case<'_>,
    grids: &mut [Grid<f64, D>],
    steps: usize,
    backend: &dyn stencil::Backend<f64>,
    schedule: Schedule,
) {
    let kernel = case.stencil.kernel();
    let index = |name: &str| kernel.field_by_name(name).unwrap().index();
    for _ in 0..steps {
        {
            let (inputs, outputs): (Vec<_>, Vec<_>) = grids
                .iter_mut()
                .enumerate()
                .partition(|(i, _)| kernel.fields[*i].role == stencil::ir::Role::Input);
            let mut launch = Launch::new(case.stencil).on(backend).schedule(schedule);
            for (i, g) in inputs {
                launch = launch.input(&kernel.fields[i].name, g);
            }
            for (i, g) in outputs {
                launch = launch.output(&kernel.fields[i].name, g);
            }
            for &(name, value) in case.params {
                launch = launch.param(name, value);
            }
            launch.run().unwrap();
        }
        for chain in case.chains {
            for p in (1..chain.len()).rev() {
                grids.swap(index(chain[p]), index(chain[p - 1]));
            }
        }
    }
}

/// The case's time loop on the emulated GPU under `schedule`, against the hand-written loop
/// on it, on random grids whose faces are all Dirichlet when `constant` (so pairs of steps
/// fuse), random otherwise.
fn check_emulated<const D: usize>(
    case: &Case<'_>,
    shape: [usize; D],
    schedule: stencil::GpuSchedule,
    constant: bool,
    seed: u64,
) {
    let gpu = stencil::EmulatedGpu::new();
    let mut random = Rng::new(seed);
    for steps in [1, 2, 3, 6, 7] {
        let mut want = copies(&grids(case, shape, 2, &mut random, !constant));
        if constant {
            let value = random.value();
            for g in &mut want {
                g.set_boundary(Boundary::Dirichlet(value));
            }
        }
        let mut got = copies(&want);
        by_hand_on(case, &mut want, steps, &gpu, Schedule::Gpu(schedule));
        stepped(case, &mut got, steps, &gpu, Some(Schedule::Gpu(schedule)));
        let kernel = case.stencil.kernel();
        assert_same(
            &got,
            &want,
            &format!(
                "`{}` emulated {shape:?} {steps} steps {schedule:?}",
                kernel.name
            ),
        );
    }
}

#[test]
fn gpu_time_loops_in_the_emulator_match_the_hand_written_loop_fused_or_not() {
    let heat = heat_case();
    let plain = stencil::GpuSchedule {
        block: [32, 2, 2],
        ..Default::default()
    };
    let fused = stencil::GpuSchedule {
        time_steps: 2,
        ..plain
    };
    check_emulated(&heat, [5, 6, 33], plain, false, 31);
    check_emulated(&heat, [5, 6, 33], fused, true, 32);
    // Fusing asked for, but the faces copy the interior: plain launches, same result.
    check_emulated(&heat, [3, 4, 35], fused, false, 33);
    let streaming = stencil::GpuSchedule {
        variant: stencil::GpuVariant::Streaming,
        block: [32, 4, 1],
        time_steps: 2,
        ..Default::default()
    };
    check_emulated(&heat, [4, 5, 40], streaming, true, 34);
    let five = Case {
        stencil: kernels::five_point::stencil(),
        chains: &[&["out", "u"]],
        params: &[("c0", 0.5), ("c1", 0.125)],
    };
    let fused_2d = stencil::GpuSchedule {
        block: [32, 2, 1],
        time_steps: 2,
        ..Default::default()
    };
    check_emulated(&five, [7, 37], fused_2d, true, 35);
    let smooth = Case {
        stencil: kernels::smooth1d::stencil(),
        chains: &[&["out", "u"]],
        params: &[("w", 0.3)],
    };
    let fused_1d = stencil::GpuSchedule {
        block: [32, 1, 1],
        time_steps: 2,
        ..Default::default()
    };
    check_emulated(&smooth, [70], fused_1d, true, 36);
    // Three levels and two chains: plain launches on the device.
    let wave = Case {
        stencil: wave::stencil(),
        chains: &[&["u_next", "u", "u_prev"]],
        params: &[("c", 0.2)],
    };
    check_emulated(&wave, [9, 33], fused_2d, false, 37);
    let reaction = Case {
        stencil: reaction::stencil(),
        chains: &[&["un", "u"], &["vn", "v"]],
        params: &[("d", 0.1), ("f", 0.03)],
    };
    check_emulated(&reaction, [6, 34], fused_2d, false, 38);
}

#[test]
fn verify_steps_passes_the_seeds_and_the_test_kernels_on_every_backend() {
    for (stencil, chains) in [
        (kernels::jacobi7::stencil(), &[&["out", "u"][..]][..]),
        (kernels::five_point::stencil(), &[&["out", "u"]]),
        (kernels::smooth1d::stencil(), &[&["out", "u"]]),
        (kernels::jacobi27::stencil(), &[&["out", "u"]]),
        (wave::stencil(), &[&["u_next", "u", "u_prev"]]),
        (reaction::stencil(), &[&["un", "u"], &["vn", "v"]]),
    ] {
        let report = stencil::verify_steps(stencil, chains).unwrap();
        assert_eq!(report.backends.len(), 2, "{report}");
        assert!(report.cases > 50, "{report}");
    }
    let generic = kernels::jacobi7::stencil().without_cpu_rows();
    stencil::verify_steps(&generic, &[&["out", "u"]]).unwrap();
    // A rotation that does not fit the kernel.
    let err = stencil::verify_steps(kernels::jacobi7::stencil(), &[&["u", "out"]]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgument);
}

/// A backend whose time loop forgets to fill the halos of what it wrote.
struct ForgetsHalos;

impl stencil::Backend<f64> for ForgetsHalos {
    fn name(&self) -> String {
        "forgets-halos".into()
    }
    fn default_schedule(&self, k: &stencil::Kernel, s: &[usize]) -> Schedule {
        stencil::Backend::<f64>::default_schedule(CpuBackend::global(), k, s)
    }
    fn sample_schedules(&self, k: &stencil::Kernel, s: &[usize]) -> Vec<Schedule> {
        vec![stencil::Backend::<f64>::default_schedule(self, k, s)]
    }
    fn run(&self, job: &mut stencil::Job<'_, f64>, s: &Schedule) -> stencil::Result<()> {
        CpuBackend::global().run(job, s)
    }
    fn run_steps(
        &self,
        job: &mut stencil::TimeLoop<'_, f64>,
        s: &Schedule,
        steps: usize,
    ) -> stencil::Result<()> {
        for _ in 0..steps {
            // The step, then the halo overwritten with what it held before: as if never filled.
            let before: Vec<Vec<f64>> = {
                let (chains, _) = job.grids_mut();
                chains
                    .iter()
                    .flatten()
                    .map(|g| g.view.data.to_vec())
                    .collect()
            };
            job.step_with(|step| CpuBackend::global().run(step, s))?;
            let (chains, _) = job.grids_mut();
            for (g, old) in chains.iter_mut().flatten().zip(before) {
                let interior = interior_indices(&g.view.geom);
                for (k, v) in g.view.data.iter_mut().enumerate() {
                    if !interior.contains(&k) {
                        *v = old[k];
                    }
                }
            }
        }
        Ok(())
    }
}

/// Storage indices of the interior points of a grid of layout `geom`.
fn interior_indices(geom: &stencil::Geometry) -> std::collections::HashSet<usize> {
    let shape = geom.interior().to_vec();
    let mut out = std::collections::HashSet::new();
    let mut p = vec![0isize; shape.len()];
    'points: loop {
        out.insert(geom.index(&p));
        for d in (0..shape.len()).rev() {
            p[d] += 1;
            if (p[d] as usize) < shape[d] {
                continue 'points;
            }
            p[d] = 0;
        }
        return out;
    }
}

#[test]
fn verify_steps_catches_a_time_loop_that_forgets_halos() {
    let planted = ForgetsHalos;
    let err = stencil::verify_steps_with(
        kernels::five_point::stencil(),
        &[&["out", "u"]],
        &[&planted],
        &stencil::VerifyConfig::default(),
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::VerificationFailed, "{err}");
}

/// Every sample schedule of the emulated GPU (shared tiles and their `bar.sync`s included),
/// sweeps and fused time loops, computes the same bits whatever order the emulator runs
/// threads and blocks in: no race the emulator can see.
#[test]
fn emulated_kernels_agree_in_every_thread_and_block_order() {
    use stencil::emulator::Order;
    let orders = [
        (Order::Ascending, Order::Ascending),
        (Order::Descending, Order::Descending),
        (Order::Shuffled(11), Order::Shuffled(12)),
    ];
    let case = heat_case();
    let mut random = Rng::new(40);
    let initial = copies(&grids(&case, [6, 7, 35], 1, &mut random, false));
    let gpu = stencil::EmulatedGpu::new();
    let kernel = case.stencil.kernel();
    for schedule in stencil::Backend::<f64>::sample_schedules(&gpu, kernel, &[6, 7, 35]) {
        let mut results = Vec::new();
        for (threads, blocks) in orders {
            let backend = stencil::EmulatedGpu::new().with_order(threads, blocks);
            let mut g = copies(&initial);
            by_hand_on(&case, &mut g, 1, &backend, schedule);
            results.push(g);
        }
        assert_same(&results[1], &results[0], &format!("sweep {schedule:?}"));
        assert_same(&results[2], &results[0], &format!("sweep {schedule:?}"));
    }
    // Fused pairs of steps (all faces one Dirichlet value, so they fuse).
    let mut fused_grids = copies(&initial);
    for g in &mut fused_grids {
        g.set_boundary(Boundary::Dirichlet(0.25));
    }
    let fused = stencil::GpuSchedule {
        block: [32, 2, 2],
        time_steps: 2,
        ..Default::default()
    };
    let mut results = Vec::new();
    for (threads, blocks) in orders {
        let backend = stencil::EmulatedGpu::new().with_order(threads, blocks);
        let mut g = copies(&fused_grids);
        let (head, tail) = g.split_at_mut(1);
        Steps::new(case.stencil)
            .rotate(&["out", "u"])
            .grid("u", &mut head[0])
            .grid("out", &mut tail[0])
            .param("c0", 0.4)
            .param("c1", 0.1)
            .on(&backend)
            .schedule(Schedule::Gpu(fused))
            .run(5)
            .unwrap();
        results.push(g);
    }
    assert_same(&results[1], &results[0], "fused steps, descending");
    assert_same(&results[2], &results[0], "fused steps, shuffled");
}
