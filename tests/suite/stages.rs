//! Time loops of several kernels per step (`Stages`) against the loop a user writes by hand:
//! each stage's `run()` in order, the sources added and the receivers sampled by this file's
//! own interpolation, the halos refreshed, the grids rotated with `std::mem::swap`. Every
//! grid, interior and halo, and every trace must hold the same bits afterwards: a staggered
//! 2-D acoustic solver (two stages, three chains, coefficients, sources and receivers on and
//! off the grid) under every boundary condition, and a 3-D Heun scheme (a temporary grid in no
//! chain, read by the second stage) in skewed tiles; 1 and 2 threads, blocking depths that the
//! step count does not divide, generated and generic point loops, and the PTX emulator. The
//! blocked loop's written grids start poisoned where the plain loop's start random.

use stencil::prelude::*;
use stencil::{
    Backend, CpuBackend, CpuSchedule, EmulatedGpu, ErrorKind, Receivers, Schedule, Sources, Stage,
    Stages, Stencil,
};
use stencil_test_support::Rng;
use stencil_test_support::grid::fill_storage_random;

stencil! {
    /// Velocities (`vx` half a cell along `i`, `vy` along `j`) from the pressure gradient.
    fn velocity2(p: &Grid2<f64>, vx: &Grid2<f64>, vy: &Grid2<f64>, b: &Grid2<f64>,
                 vx_next: &mut Grid2<f64>, vy_next: &mut Grid2<f64>, dt: f64) {
        vx_next[i, j] = vx[i, j] + dt * b[i, j] * (p[i+1, j] - p[i, j]);
        vy_next[i, j] = vy[i, j] + dt * b[i, j] * (p[i, j+1] - p[i, j]);
    }

    /// Pressure from the divergence of the velocities.
    fn pressure2(p: &Grid2<f64>, vx: &Grid2<f64>, vy: &Grid2<f64>, k: &Grid2<f64>,
                 p_next: &mut Grid2<f64>, dt: f64) {
        p_next[i, j] = p[i, j] + dt * k[i, j] * (vx[i, j] - vx[i-1, j] + vy[i, j] - vy[i, j-1]);
    }

    /// The Laplacian of `u` into a temporary, reaching two points along `i`.
    fn lap2(u: &Grid2<f64>, l: &mut Grid2<f64>) {
        l[i, j] = u[i-2, j] + u[i+1, j] + u[i, j-1] + u[i, j+1] - 4.0 * u[i, j];
    }

    /// A leapfrog step from the temporary: three time levels.
    fn leap2(u: &Grid2<f64>, u_prev: &Grid2<f64>, l: &Grid2<f64>, u_next: &mut Grid2<f64>,
             c: f64) {
        u_next[i, j] = 2.0 * u[i, j] - u_prev[i, j] + c * (l[i, j] + 0.5 * l[i+1, j-1]);
    }

    /// A 1-D smoothing stage into a temporary.
    fn smooth1(u: &Grid1<f64>, t: &mut Grid1<f64>, w: f64) {
        t[i] = u[i] + w * (u[i-1] - 2.0 * u[i] + u[i+1]);
    }

    /// A 1-D second stage reading the temporary and the previous level.
    fn mix1(u: &Grid1<f64>, t: &Grid1<f64>, u_next: &mut Grid1<f64>) {
        u_next[i] = 0.5 * (u[i] + t[i+1]) - 0.25 * t[i-2];
    }

    /// Heun's first stage: an Euler step of the heat equation into a temporary.
    fn euler3(u: &Grid3<f64>, tmp: &mut Grid3<f64>, a: f64) {
        tmp[i, j, k] = u[i, j, k] + a * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k]
            + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1] - 6.0 * u[i, j, k]);
    }

    /// Heun's second stage: the average of the two slopes.
    fn heun3(u: &Grid3<f64>, tmp: &Grid3<f64>, u_next: &mut Grid3<f64>, a: f64) {
        u_next[i, j, k] = 0.5 * (u[i, j, k] + tmp[i, j, k] + a * (tmp[i-1, j, k]
            + tmp[i+1, j, k] + tmp[i, j-1, k] + tmp[i, j+1, k] + tmp[i, j, k-1]
            + tmp[i, j, k+1] - 6.0 * tmp[i, j, k]));
    }
}

/// One stage as the test describes it: the kernel, each field's loop grid, parameters.
struct StageSpec {
    stencil: &'static Stencil<f64>,
    /// `(field, grid)` for every field of the kernel.
    grids: Vec<(&'static str, &'static str)>,
    params: Vec<(&'static str, f64)>,
}

/// A loop: its grid names (the first `written` of them written by some stage or rotating),
/// its chains and stages, sources `(grid, position, series)` and receivers `(grid,
/// positions, every)`.
struct Spec<const D: usize> {
    names: Vec<&'static str>,
    chains: Vec<Vec<&'static str>>,
    stages: Vec<StageSpec>,
    sources: Vec<(&'static str, [f64; D], Vec<f64>)>,
    receivers: Vec<(&'static str, Vec<[f64; D]>, usize)>,
    /// Grids every step overwrites in full (poisoned in the blocked loop's copy).
    overwritten: Vec<&'static str>,
}

impl<const D: usize> Spec<D> {
    fn index(&self, name: &str) -> usize {
        self.names.iter().position(|n| *n == name).unwrap()
    }
}

/// Interpolation corners of `position`, written here from the documented rule: multilinear
/// weights (products in dimension order, in f64), corner `c` upper along `d` when bit `d` is
/// set, zero weights dropped.
fn corners<const D: usize>(position: [f64; D]) -> Vec<([usize; D], f64)> {
    let mut out = Vec::new();
    for c in 0..1usize << D {
        let mut weight = 1.0;
        let mut point = [0usize; D];
        for d in 0..D {
            let f = position[d].floor();
            let t = position[d] - f;
            let upper = (c >> d) & 1 == 1;
            weight *= if upper { t } else { 1.0 - t };
            point[d] = f as usize + usize::from(upper);
        }
        if weight != 0.0 {
            out.push((point, weight));
        }
    }
    out
}

/// The hand-written loop: returns the receivers' traces.
fn plain<const D: usize>(
    spec: &Spec<D>,
    grids: &mut [Option<Grid<f64, D>>],
    steps: usize,
    schedule: Schedule,
    backend: Option<&dyn Backend<f64>>,
) -> Vec<Vec<Vec<f64>>> {
    let mut traces: Vec<Vec<Vec<f64>>> = spec
        .receivers
        .iter()
        .map(|(_, points, _)| vec![Vec::new(); points.len()])
        .collect();
    for step in 0..steps {
        for stage in &spec.stages {
            let kernel = stage.stencil.kernel();
            let outputs: Vec<(&str, usize)> = stage
                .grids
                .iter()
                .filter(|(f, _)| {
                    kernel.field(kernel.field_by_name(f).unwrap()).role == stencil::ir::Role::Output
                })
                .map(|&(f, g)| (f, spec.index(g)))
                .collect();
            let mut taken: Vec<(&str, usize, Grid<f64, D>)> = outputs
                .iter()
                .map(|&(f, g)| (f, g, grids[g].take().unwrap()))
                .collect();
            {
                let mut launch = stencil::Launch::new(stage.stencil).schedule(schedule);
                if let Some(backend) = backend {
                    launch = launch.on(backend);
                }
                for &(f, g) in &stage.grids {
                    if outputs.iter().all(|&(o, _)| o != f) {
                        launch = launch.input(f, grids[spec.index(g)].as_ref().unwrap());
                    }
                }
                for (f, _, grid) in taken.iter_mut() {
                    launch = launch.output(f, grid);
                }
                for &(p, v) in &stage.params {
                    launch = launch.param(p, v);
                }
                launch.run().unwrap();
            }
            for (_, g, grid) in &mut taken {
                for (name, position, series) in &spec.sources {
                    if spec.index(name) == *g {
                        for (point, weight) in corners(*position) {
                            grid[point] += weight * series[step];
                        }
                    }
                }
                grid.update_halo();
            }
            for (_, g, grid) in taken {
                for ((name, points, every), traces) in spec.receivers.iter().zip(&mut traces) {
                    if spec.index(name) == g && (step + 1) % every == 0 {
                        for (position, trace) in points.iter().zip(traces.iter_mut()) {
                            let mut sum: Option<f64> = None;
                            for (point, weight) in corners(*position) {
                                let term = weight * grid[point];
                                sum = Some(sum.map_or(term, |s| s + term));
                            }
                            trace.push(sum.unwrap());
                        }
                    }
                }
                grids[g] = Some(grid);
            }
        }
        for chain in &spec.chains {
            // After a step a chain's second name holds the first's, and so on; the first
            // gets the last one's storage.
            for p in (1..chain.len()).rev() {
                let (a, b) = (spec.index(chain[p]), spec.index(chain[p - 1]));
                grids.swap(a, b);
            }
        }
    }
    traces
}

/// The same loop through `Stages`.
fn staged<const D: usize>(
    spec: &Spec<D>,
    grids: &mut [Option<Grid<f64, D>>],
    steps: usize,
    schedule: Schedule,
    backend: Option<&dyn Backend<f64>>,
) -> Vec<Vec<Vec<f64>>> {
    let sources: Vec<Sources<f64, D>> = spec
        .sources
        .iter()
        .map(|(_, position, series)| Sources::new().point(*position, series.clone()))
        .collect();
    let mut receivers: Vec<Receivers<f64, D>> = spec
        .receivers
        .iter()
        .map(|(_, points, every)| Receivers::new(points.clone()).every(*every))
        .collect();
    let mut looped = Stages::new().schedule(schedule);
    if let Some(backend) = backend {
        looped = looped.on(backend);
    }
    for (name, grid) in spec.names.iter().zip(grids.iter_mut()) {
        let grid = grid.as_mut().unwrap();
        let written = spec.chains.iter().flatten().any(|n| n == name)
            || spec.stages.iter().any(|s| {
                let kernel = s.stencil.kernel();
                s.grids.iter().any(|&(f, g)| {
                    g == *name
                        && kernel.field(kernel.field_by_name(f).unwrap()).role
                            == stencil::ir::Role::Output
                })
            });
        looped = if written {
            looped.grid(name, grid)
        } else {
            looped.input(name, grid)
        };
    }
    for chain in &spec.chains {
        looped = looped.rotate(chain);
    }
    for stage in &spec.stages {
        let mut s = Stage::new(stage.stencil);
        for &(f, g) in &stage.grids {
            if f != g {
                s = s.bind(f, g);
            }
        }
        for &(p, v) in &stage.params {
            s = s.param(p, v);
        }
        looped = looped.stage(s);
    }
    for ((name, _, _), sources) in spec.sources.iter().zip(&sources) {
        looped = looped.sources(name, sources);
    }
    for ((name, _, _), receivers) in spec.receivers.iter().zip(receivers.iter_mut()) {
        looped = looped.receivers(name, receivers);
    }
    let report = looped.run(steps).unwrap();
    assert_eq!(report.steps, steps);
    receivers.iter().map(|r| r.traces().to_vec()).collect()
}

/// Runs `spec` both ways from the same random grids and compares every bit.
fn compare<const D: usize>(
    spec: &Spec<D>,
    initial: &[Grid<f64, D>],
    steps: usize,
    schedule: Schedule,
    backend: Option<&dyn Backend<f64>>,
    what: &str,
) {
    let mut expected: Vec<Option<Grid<f64, D>>> = initial.iter().cloned().map(Some).collect();
    let expected_traces = plain(spec, &mut expected, steps, schedule, backend);
    let mut got: Vec<Option<Grid<f64, D>>> = initial.iter().cloned().map(Some).collect();
    for name in &spec.overwritten {
        let grid = got[spec.index(name)].as_mut().unwrap();
        let poison = -7.25e300;
        grid.fill_with(|_| poison);
    }
    let got_traces = staged(spec, &mut got, steps, schedule, backend);
    for (name, (a, b)) in spec.names.iter().zip(got.iter().zip(&expected)) {
        let (a, b) = (a.as_ref().unwrap(), b.as_ref().unwrap());
        let same = a
            .as_slice()
            .iter()
            .zip(b.as_slice())
            .all(|(x, y)| x.to_bits() == y.to_bits());
        assert!(same, "{what}: grid `{name}` differs from the plain loop's");
        assert_eq!(a.boundaries(), b.boundaries(), "{what}: `{name}`'s faces");
    }
    assert_eq!(got_traces.len(), expected_traces.len());
    for (g, e) in got_traces.iter().zip(&expected_traces) {
        for (x, y) in g.iter().zip(e) {
            assert_eq!(x.len(), y.len(), "{what}: samples");
            assert!(
                x.iter().zip(y).all(|(a, b)| a.to_bits() == b.to_bits()),
                "{what}: a trace differs"
            );
        }
    }
}

/// A random face: any condition, or with `constant` one whose halo never depends on the
/// interior.
fn face(rng: &mut Rng, constant: bool) -> Boundary<f64> {
    match rng.index(if constant { 2 } else { 5 }) {
        0 => Boundary::Dirichlet(rng.uniform(-0.5, 0.5)),
        1 => Boundary::UserManaged,
        2 => Boundary::Periodic,
        3 => Boundary::ZeroGradient,
        _ => Boundary::Reflect,
    }
}

/// Random grids (interior and halo) for `spec`, every grid with the faces `faces`.
fn random_grids<const D: usize>(
    spec: &Spec<D>,
    shape: [usize; D],
    faces: [[Boundary<f64>; 2]; D],
    rng: &mut Rng,
) -> Vec<Grid<f64, D>> {
    spec.names
        .iter()
        .map(|_| {
            let mut g = Grid::<f64, D>::with_halo(shape, 1).unwrap();
            for (d, pair) in faces.iter().enumerate() {
                g.set_face_boundary(d, Side::Low, pair[0]).unwrap();
                g.set_face_boundary(d, Side::High, pair[1]).unwrap();
            }
            fill_storage_random(&mut g, rng, (-0.5, 0.5));
            g.update_halo();
            g
        })
        .collect()
}

/// The staggered acoustic loop with sources on and between grid points and receivers.
fn acoustic(shape: [usize; 2], steps: usize) -> Spec<2> {
    let ricker = |shift: f64| -> Vec<f64> {
        (0..steps)
            .map(|s| {
                let t = (s as f64 - shift) * 0.3;
                (1.0 - 2.0 * t * t) * (-t * t).exp()
            })
            .collect()
    };
    let (n0, n1) = (shape[0] as f64, shape[1] as f64);
    Spec {
        names: vec!["p", "p_next", "vx", "vx_next", "vy", "vy_next", "b", "k"],
        chains: vec![
            vec!["p_next", "p"],
            vec!["vx_next", "vx"],
            vec!["vy_next", "vy"],
        ],
        stages: vec![
            StageSpec {
                stencil: velocity2::stencil(),
                grids: vec![
                    ("p", "p"),
                    ("vx", "vx"),
                    ("vy", "vy"),
                    ("b", "b"),
                    ("vx_next", "vx_next"),
                    ("vy_next", "vy_next"),
                ],
                params: vec![("dt", 0.4)],
            },
            StageSpec {
                stencil: pressure2::stencil(),
                grids: vec![
                    ("p", "p"),
                    ("vx", "vx_next"),
                    ("vy", "vy_next"),
                    ("k", "k"),
                    ("p_next", "p_next"),
                ],
                params: vec![("dt", 0.4)],
            },
        ],
        sources: vec![
            ("p_next", [n0 / 2.0, n1 / 3.0], ricker(4.0)),
            (
                "p_next",
                [(n0 / 3.0).floor() + 0.25, n1 / 2.0 + 0.5],
                ricker(2.0),
            ),
            ("vx_next", [0.0, n1 - 1.0], ricker(1.0)),
        ],
        receivers: vec![
            (
                "p_next",
                (0..6)
                    .map(|r| [n0 / 4.0 + 0.5, r as f64 * (n1 - 1.0) / 5.0])
                    .chain([[n0 - 1.0, n1 - 1.0], [n0 / 2.0, n1 / 3.0]])
                    .collect(),
                1,
            ),
            ("vy_next", vec![[1.5, 2.25]], 3),
        ],
        overwritten: vec!["p_next", "vx_next", "vy_next"],
    }
}

fn cpu(depth: usize, slab: usize, threads: usize) -> Schedule {
    Schedule::Cpu(CpuSchedule {
        time_depth: depth,
        time_slab: slab,
        threads,
        ..CpuSchedule::default()
    })
}

#[test]
fn a_staggered_acoustic_loop_with_sources_and_receivers_matches_the_plain_loop() {
    let mut rng = Rng::new(0x57a9_e5ed);
    // Enough points that two workers run (three outputs of 97 x 113 points).
    let shape = [97, 113];
    let steps = 7;
    let spec = acoustic(shape, steps);
    let schedules = [
        ("plain steps", cpu(1, 0, 0)),
        ("depth 2, slabs of 3", cpu(2, 3, 0)),
        ("depth 4, slabs of 5, two threads", cpu(4, 5, 2)),
        ("depth 3, slabs of 1, one thread", cpu(3, 1, 1)),
        ("depth 16, the default slab", cpu(16, 0, 0)),
        (
            "depth 4, generic loop",
            Schedule::Cpu(CpuSchedule {
                force_generic: true,
                ..match cpu(4, 8, 2) {
                    Schedule::Cpu(s) => s,
                    _ => unreachable!(),
                }
            }),
        ),
    ];
    // Every condition on some face, several draws.
    for draw in 0..4 {
        let mut faces = [
            [face(&mut rng, false), face(&mut rng, false)],
            [face(&mut rng, false), face(&mut rng, false)],
        ];
        // A periodic face of dimension 0 runs the steps one after another: the first draws
        // block.
        while draw < 3 && faces[0].contains(&Boundary::Periodic) {
            faces[0] = [face(&mut rng, false), face(&mut rng, false)];
        }
        let initial = random_grids(&spec, shape, faces, &mut rng);
        for (what, schedule) in &schedules {
            compare(
                &spec,
                &initial,
                steps,
                *schedule,
                None,
                &format!("{what}, faces {faces:?} (draw {draw})"),
            );
        }
    }
}

/// Heun's scheme for the heat equation in 3-D: the first stage writes a temporary in no chain,
/// the second reads it.
fn heun(shape: [usize; 3], steps: usize) -> Spec<3> {
    let series: Vec<f64> = (0..steps).map(|s| 0.1 * s as f64 - 0.2).collect();
    Spec {
        names: vec!["u", "u_next", "tmp"],
        chains: vec![vec!["u_next", "u"]],
        stages: vec![
            StageSpec {
                stencil: euler3::stencil(),
                grids: vec![("u", "u"), ("tmp", "tmp")],
                params: vec![("a", 0.1)],
            },
            StageSpec {
                stencil: heun3::stencil(),
                grids: vec![("u", "u"), ("tmp", "tmp"), ("u_next", "u_next")],
                params: vec![("a", 0.1)],
            },
        ],
        sources: vec![
            ("tmp", [1.0, 2.5, 3.0], series.clone()),
            ("u_next", [shape[0] as f64 - 1.5, 17.0, 5.25], series),
        ],
        receivers: vec![(
            "u_next",
            vec![[0.0, 0.0, 0.0], [20.5, 31.75, 7.0], [39.0, 63.0, 23.0]],
            2,
        )],
        overwritten: vec!["u_next", "tmp"],
    }
}

#[test]
fn a_heun_scheme_in_skewed_tiles_matches_the_plain_loop() {
    let mut rng = Rng::new(0x004e_0e3d);
    let shape = [40, 64, 24];
    let steps = 9;
    let spec = heun(shape, steps);
    let tiles = |depth: usize, slab: usize, block: usize, threads: usize| {
        Schedule::Cpu(CpuSchedule {
            time_depth: depth,
            time_slab: slab,
            threads,
            tile: [0, block, 0, 0],
            ..CpuSchedule::default()
        })
    };
    let backend = CpuBackend::new(2).unwrap();
    let before = backend.activity().tiled_time_loops;
    for draw in 0..3 {
        // Value and user-managed faces, so the steps skew in tiles too.
        let constant = draw < 2;
        let faces: [[Boundary<f64>; 2]; 3] =
            std::array::from_fn(|_| [face(&mut rng, constant), face(&mut rng, constant)]);
        let initial = random_grids(&spec, shape, faces, &mut rng);
        for (what, schedule) in [
            ("tiles of 4 rows, depth 2", tiles(2, 4, 4, 2)),
            ("tiles of 6 rows, depth 4", tiles(4, 5, 6, 2)),
            ("depth 3, one thread", tiles(3, 8, 8, 1)),
            ("plain steps", tiles(1, 0, 0, 2)),
        ] {
            compare(
                &spec,
                &initial,
                steps,
                schedule,
                Some(&backend),
                &format!("{what}, faces {faces:?}"),
            );
        }
    }
    assert!(
        backend.activity().tiled_time_loops > before,
        "no loop ran in skewed tiles"
    );
}

#[test]
fn three_time_levels_and_a_temporary_across_two_stages_match_the_plain_loop() {
    let mut rng = Rng::new(0x0003_1e7e);
    let shape = [90, 120];
    let steps = 11;
    let spec = Spec {
        names: vec!["u", "u_prev", "u_next", "l"],
        chains: vec![vec!["u_next", "u", "u_prev"]],
        stages: vec![
            StageSpec {
                stencil: lap2::stencil(),
                grids: vec![("u", "u"), ("l", "l")],
                params: vec![],
            },
            StageSpec {
                stencil: leap2::stencil(),
                grids: vec![
                    ("u", "u"),
                    ("u_prev", "u_prev"),
                    ("l", "l"),
                    ("u_next", "u_next"),
                ],
                params: vec![("c", 0.05)],
            },
        ],
        sources: vec![("l", [40.5, 60.0], vec![0.25; steps])],
        receivers: vec![("u_next", vec![[3.0, 4.5], [89.0, 119.0]], 1)],
        overwritten: vec!["u_next", "l"],
    };
    for draw in 0..3 {
        let mut faces = [
            [face(&mut rng, false), face(&mut rng, false)],
            [face(&mut rng, false), face(&mut rng, false)],
        ];
        while faces[0].contains(&Boundary::Periodic) {
            faces[0] = [face(&mut rng, false), face(&mut rng, false)];
        }
        let initial = random_grids(&spec, shape, faces, &mut rng);
        // Halos of 2: `lap2` reads two points along `i`.
        let halo2: Vec<Grid2<f64>> = initial
            .iter()
            .map(|g| {
                let mut h = Grid2::<f64>::with_halo(shape, 2).unwrap();
                for (d, pair) in g.boundaries().iter().enumerate() {
                    h.set_face_boundary(d, Side::Low, pair[0]).unwrap();
                    h.set_face_boundary(d, Side::High, pair[1]).unwrap();
                }
                h.fill_with(|p| g[p]);
                h
            })
            .collect();
        for (what, schedule) in [
            ("plain steps", cpu(1, 0, 0)),
            ("depth 3, slabs of 4, two threads", cpu(3, 4, 2)),
            ("depth 5, slabs of 2, one thread", cpu(5, 2, 1)),
        ] {
            compare(
                &spec,
                &halo2,
                steps,
                schedule,
                None,
                &format!("{what}, faces {faces:?} (draw {draw})"),
            );
        }
    }
}

#[test]
fn one_dimensional_stages_match_the_plain_loop() {
    let mut rng = Rng::new(0x0001_d1d1);
    let shape = [40_000];
    let steps = 6;
    let spec = Spec {
        names: vec!["u", "u_next", "t"],
        chains: vec![vec!["u_next", "u"]],
        stages: vec![
            StageSpec {
                stencil: smooth1::stencil(),
                grids: vec![("u", "u"), ("t", "t")],
                params: vec![("w", 0.2)],
            },
            StageSpec {
                stencil: mix1::stencil(),
                grids: vec![("u", "u"), ("t", "t"), ("u_next", "u_next")],
                params: vec![],
            },
        ],
        sources: vec![("u_next", [123.25], vec![1.0; steps])],
        receivers: vec![("t", vec![[0.0], [39_999.0], [20_000.5]], 2)],
        overwritten: vec!["u_next", "t"],
    };
    for faces in [
        [[Boundary::Dirichlet(0.5), Boundary::ZeroGradient]],
        [[Boundary::Reflect, Boundary::UserManaged]],
    ] {
        let initial: Vec<Grid1<f64>> = random_grids(&spec, shape, faces, &mut rng)
            .into_iter()
            .map(|g| {
                let mut h = Grid1::<f64>::with_halo(shape, 2).unwrap();
                h.set_face_boundary(0, Side::Low, faces[0][0]).unwrap();
                h.set_face_boundary(0, Side::High, faces[0][1]).unwrap();
                h.fill_with(|p| g[p]);
                h
            })
            .collect();
        for (what, schedule) in [
            ("plain steps", cpu(1, 0, 0)),
            ("depth 2, slabs of 5000, two threads", cpu(2, 5000, 2)),
            ("depth 4, the default slab", cpu(4, 0, 0)),
        ] {
            compare(
                &spec,
                &initial,
                steps,
                schedule,
                None,
                &format!("{what}, faces {faces:?}"),
            );
        }
    }
}

#[test]
fn stage_loops_on_the_emulated_gpu_match_its_plain_loop() {
    let gpu = EmulatedGpu::new();
    let mut rng = Rng::new(0x006e_0700);
    let shape = [9, 13];
    let steps = 3;
    let spec = acoustic(shape, steps);
    let faces = [
        [Boundary::Dirichlet(0.25), Boundary::Periodic],
        [Boundary::Reflect, Boundary::ZeroGradient],
    ];
    let initial = random_grids(&spec, shape, faces, &mut rng);
    let schedule = Backend::<f64>::default_schedule(&gpu, velocity2::stencil().kernel(), &shape);
    compare(&spec, &initial, steps, schedule, Some(&gpu), "emulated GPU");
}

#[test]
fn a_loop_run_in_two_calls_continues_its_sources_and_receivers() {
    let mut rng = Rng::new(0x0002_ca11);
    let shape = [33, 29];
    let spec = acoustic(shape, 9);
    let faces = [[Boundary::Dirichlet(0.0); 2], [Boundary::ZeroGradient; 2]];
    let initial = random_grids(&spec, shape, faces, &mut rng);
    let schedule = cpu(2, 4, 0);
    let mut whole: Vec<Option<Grid2<f64>>> = initial.iter().cloned().map(Some).collect();
    let whole_traces = staged(&spec, &mut whole, 9, schedule, None);
    // Five steps, then four more from step 5: the sources read their series from there and
    // the receivers keep counting their interval (every 3 steps: samples after 3, 6 and 9).
    let mut split: Vec<Option<Grid2<f64>>> = initial.iter().cloned().map(Some).collect();
    let first = staged(&spec, &mut split, 5, schedule, None);
    let second = staged_from(&spec, &mut split, 5, 4, schedule);
    for (name, (a, b)) in spec.names.iter().zip(split.iter().zip(&whole)) {
        assert_eq!(
            a.as_ref().unwrap().as_slice(),
            b.as_ref().unwrap().as_slice(),
            "grid `{name}`"
        );
    }
    for (set, whole) in whole_traces.iter().enumerate() {
        for (r, trace) in whole.iter().enumerate() {
            let joined: Vec<f64> = first[set][r]
                .iter()
                .chain(&second[set][r])
                .copied()
                .collect();
            assert_eq!(&joined, trace, "receiver set {set}, receiver {r}");
        }
    }
    assert_eq!(whole_traces[1][0].len(), 3);
}

/// `staged` from step `first` for `steps` steps.
fn staged_from(
    spec: &Spec<2>,
    grids: &mut [Option<Grid2<f64>>],
    first: usize,
    steps: usize,
    schedule: Schedule,
) -> Vec<Vec<Vec<f64>>> {
    let sources: Vec<Sources<f64, 2>> = spec
        .sources
        .iter()
        .map(|(_, position, series)| Sources::new().point(*position, series.clone()))
        .collect();
    let mut receivers: Vec<Receivers<f64, 2>> = spec
        .receivers
        .iter()
        .map(|(_, points, every)| Receivers::new(points.clone()).every(*every))
        .collect();
    let mut looped = Stages::new().schedule(schedule).first_step(first);
    for (name, grid) in spec.names.iter().zip(grids.iter_mut()) {
        let grid = grid.as_mut().unwrap();
        looped = if ["b", "k"].contains(name) {
            looped.input(name, grid)
        } else {
            looped.grid(name, grid)
        };
    }
    for chain in &spec.chains {
        looped = looped.rotate(chain);
    }
    looped = looped
        .stage(velocity_stage_s(0.4))
        .stage(pressure_stage_s(0.4));
    for ((name, _, _), sources) in spec.sources.iter().zip(&sources) {
        looped = looped.sources(name, sources);
    }
    for ((name, _, _), receivers) in spec.receivers.iter().zip(receivers.iter_mut()) {
        looped = looped.receivers(name, receivers);
    }
    assert_eq!(looped.run(steps).unwrap().steps, steps);
    receivers.iter().map(|r| r.traces().to_vec()).collect()
}

fn velocity_stage_s(dt: f64) -> Stage<'static, f64> {
    Stage::new(velocity2::stencil()).param("dt", dt)
}

fn pressure_stage_s(dt: f64) -> Stage<'static, f64> {
    Stage::new(pressure2::stencil())
        .bind("vx", "vx_next")
        .bind("vy", "vy_next")
        .param("dt", dt)
}

/// Grids for the acoustic loop, bound by name, with one change made by `misuse`.
fn misuse(
    change: impl for<'a> FnOnce(Stages<'a, f64, 2>, &'a mut Grid2<f64>) -> Stages<'a, f64, 2>,
) -> stencil::Error {
    let shape = [16, 16];
    let mut g: Vec<Grid2<f64>> = (0..9).map(|_| Grid2::new(shape).unwrap()).collect();
    let (first, rest) = g.split_at_mut(8);
    let [p, p_next, vx, vx_next, vy, vy_next, b, k] = first else {
        unreachable!()
    };
    let looped = Stages::new()
        .grid("p", p)
        .grid("p_next", p_next)
        .grid("vx", vx)
        .grid("vx_next", vx_next)
        .grid("vy", vy)
        .grid("vy_next", vy_next)
        .input("b", b)
        .input("k", k)
        .rotate(&["p_next", "p"])
        .rotate(&["vx_next", "vx"])
        .rotate(&["vy_next", "vy"]);
    change(looped, &mut rest[0]).run(4).unwrap_err()
}

fn velocity_stage() -> Stage<'static, f64> {
    velocity_stage_s(0.1)
}

fn pressure_stage() -> Stage<'static, f64> {
    pressure_stage_s(0.1)
}

/// A change to a loop, given a spare grid.
type Change = dyn for<'a> FnOnce(Stages<'a, f64, 2>, &'a mut Grid2<f64>) -> Stages<'a, f64, 2>;

#[test]
fn misuse_is_a_documented_error_naming_the_stage_and_grid() {
    let cases: Vec<(&str, ErrorKind, &str, Box<Change>)> = vec![
        (
            "stages in the wrong order",
            ErrorKind::BadArgument,
            "writes later in the step",
            Box::new(|l, _| l.stage(pressure_stage()).stage(velocity_stage())),
        ),
        (
            "a field bound to a grid the loop does not have",
            ErrorKind::BadArgument,
            "`b_new`, which is not a grid of the loop",
            Box::new(|l, _| {
                l.stage(velocity_stage().bind("b", "b_new"))
                    .stage(pressure_stage())
            }),
        ),
        (
            "a field the kernel does not have",
            ErrorKind::BadArgument,
            "has no grid `q`",
            Box::new(|l, _| l.stage(velocity_stage().bind("q", "p"))),
        ),
        (
            "a parameter not set",
            ErrorKind::BadArgument,
            "parameter `dt` is not set",
            Box::new(|l, _| {
                l.stage(Stage::new(velocity2::stencil()))
                    .stage(pressure_stage())
            }),
        ),
        (
            "a stage reading the grid it writes",
            ErrorKind::BadArgument,
            "cannot read the grid it writes",
            Box::new(|l, _| {
                l.stage(velocity_stage())
                    .stage(pressure_stage().bind("p", "p_next"))
            }),
        ),
        (
            "two stages writing one grid",
            ErrorKind::BadArgument,
            "writes `p_next`, which stage",
            Box::new(|l, _| {
                l.stage(velocity_stage())
                    .stage(pressure_stage())
                    .stage(pressure_stage().named("again"))
            }),
        ),
        (
            "an input written",
            ErrorKind::BadArgument,
            "given with `input`",
            Box::new(|l, _| {
                l.stage(velocity_stage())
                    .stage(pressure_stage().bind("p_next", "k"))
            }),
        ),
        (
            "a grid of another shape",
            ErrorKind::ShapeMismatch,
            "has shape",
            Box::new(|l, extra| {
                *extra = Grid2::new([16, 17]).unwrap();
                l.input("b2", extra)
                    .stage(velocity_stage().bind("b", "b2"))
                    .stage(pressure_stage())
            }),
        ),
        (
            "a source on a grid no stage writes",
            ErrorKind::BadArgument,
            "no stage writes",
            Box::new(|l, _| {
                let sources: &'static Sources<f64, 2> =
                    Box::leak(Box::new(Sources::new().point([3.0, 3.0], vec![1.0; 4])));
                l.stage(velocity_stage())
                    .stage(pressure_stage())
                    .sources("p", sources)
            }),
        ),
        (
            "a source's series shorter than the loop",
            ErrorKind::BadArgument,
            "amplitudes",
            Box::new(|l, _| {
                let sources: &'static Sources<f64, 2> =
                    Box::leak(Box::new(Sources::new().point([3.0, 3.0], vec![1.0; 3])));
                l.stage(velocity_stage())
                    .stage(pressure_stage())
                    .sources("p_next", sources)
            }),
        ),
        (
            "a receiver outside the interior",
            ErrorKind::BadArgument,
            "outside the interior",
            Box::new(|l, _| {
                let receivers: &'static mut Receivers<f64, 2> =
                    Box::leak(Box::new(Receivers::new(vec![[15.5, 0.0]])));
                l.stage(velocity_stage())
                    .stage(pressure_stage())
                    .receivers("p_next", receivers)
            }),
        ),
        (
            "receivers every 0 steps",
            ErrorKind::BadArgument,
            "0 given",
            Box::new(|l, _| {
                let receivers: &'static mut Receivers<f64, 2> =
                    Box::leak(Box::new(Receivers::new(vec![[1.0, 1.0]]).every(0)));
                l.stage(velocity_stage())
                    .stage(pressure_stage())
                    .receivers("p_next", receivers)
            }),
        ),
    ];
    for (what, kind, message, change) in cases {
        let e = misuse(change);
        assert_eq!(e.kind(), kind, "{what}: {e}");
        assert!(e.to_string().contains(message), "{what}: {e}");
    }
}

#[test]
fn a_refused_loop_writes_nothing() {
    let shape = [12, 12];
    let mut rng = Rng::new(5);
    let spec = acoustic(shape, 2);
    let mut grids = random_grids(&spec, shape, [[Boundary::Periodic; 2]; 2], &mut rng);
    // A point of `vx` changed after its halo was filled: its periodic halo is stale.
    grids[2][[3, 3]] = 0.5;
    let before = grids.clone();
    let [p, p_next, vx, vx_next, vy, vy_next, b, k] = &mut grids[..] else {
        unreachable!()
    };
    let e = Stages::new()
        .grid("p", p)
        .grid("p_next", p_next)
        .grid("vx", vx)
        .grid("vx_next", vx_next)
        .grid("vy", vy)
        .grid("vy_next", vy_next)
        .input("b", b)
        .input("k", k)
        .rotate(&["p_next", "p"])
        .rotate(&["vx_next", "vx"])
        .rotate(&["vy_next", "vy"])
        .stage(velocity_stage())
        .stage(pressure_stage())
        .run(2)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::StaleHalo, "{e}");
    assert!(e.to_string().contains("`vx`"), "{e}");
    for (a, b) in grids.iter().zip(&before) {
        assert_eq!(a.as_slice(), b.as_slice());
    }
}
