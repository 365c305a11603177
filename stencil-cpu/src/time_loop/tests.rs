//! The blocked time loop against plain steps, with what it lends audited: on several
//! workers, with skewed tiles (3-D, value faces, several tiles per worker) and with slabs.

use std::sync::Arc;

use stencil_core::grid::{Boundary, fill_halo};
use stencil_core::rng::Rng;
use stencil_core::row::RowArgs;
use stencil_core::time_loop::WrittenGrid;
use stencil_core::{
    Backend, CpuSchedule, ElemType, FieldViewMut, Geometry, Kernel, KernelBuilder, MAX_DIMS,
    Rotation, Schedule, StageLoop, Stencil, TimeLoop,
};

use super::audit::{self, Audit, conflicts};
use super::{TimeBlocking, time_blocking};
use crate::input_rows::RowBox;
use crate::machine::Machine;
use crate::pool::CpuBackend;

/// `out = c0 * u + c1 * (the six neighbours of u)`, built at run time.
fn heat_kernel() -> Kernel {
    let mut b = KernelBuilder::new("heat", 3, ElemType::F64);
    let u = b.input("u");
    let out = b.output("out");
    let (c0, c1) = (b.param("c0"), b.param("c1"));
    let center = b.read(u, &[0, 0, 0]);
    let mut sum = b.read(u, &[-1, 0, 0]);
    for offset in [[1, 0, 0], [0, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0, 1]] {
        let r = b.read(u, &offset);
        sum = b.add(sum, r);
    }
    let (c0, c1) = (b.param_ref(c0), b.param_ref(c1));
    let a = b.mul(c0, center);
    let s = b.mul(c1, sum);
    let value = b.add(a, s);
    b.store(out, value);
    b.finish().unwrap()
}

/// The heat kernel's row by hand, in the kernel's order (the specialised path).
fn heat_rows(args: &RowArgs<'_, f64>, outs: &mut [&mut [f64]]) {
    let n = args.len();
    let read = |o: [isize; 3]| &args.input(0, [o[0], o[1], o[2], 0])[..n];
    let [c, xm, xp, ym, yp, zm, zp] = [
        [0, 0, 0],
        [-1, 0, 0],
        [1, 0, 0],
        [0, -1, 0],
        [0, 1, 0],
        [0, 0, -1],
        [0, 0, 1],
    ]
    .map(read);
    let (c0, c1) = (args.param(0), args.param(1));
    for x in 0..n {
        outs[0][x] = c0 * c[x] + c1 * (xm[x] + xp[x] + ym[x] + yp[x] + zm[x] + zp[x]);
    }
}

/// What one case did: the grids (out, u) after the blocked loop and after plain steps, the
/// audit of the blocked loop and its blocking.
struct Outcome {
    blocked: Vec<Vec<f64>>,
    plain: Vec<Vec<f64>>,
    audit: Arc<Audit>,
    blocking: TimeBlocking,
}

/// `steps` steps of `stencil` (chain `out -> u`, every face `face`) on random grids of
/// `shape`, blocked under `schedule` on `backend` and one after another.
fn run_case(
    stencil: &Stencil<f64>,
    backend: &CpuBackend,
    (shape, face): ([usize; 3], Boundary<f64>),
    schedule: CpuSchedule,
    steps: usize,
) -> Outcome {
    let geom = Geometry::new(&shape, 1, 8).unwrap();
    let faces = vec![[face; 2]; 3];
    let mut rng = Rng::new(0x7e57_a0d1);
    let mut initial: Vec<Vec<f64>> = (0..2)
        .map(|_| (0..geom.len).map(|_| rng.uniform(-1.0, 1.0)).collect())
        .collect();
    for data in &mut initial {
        fill_halo(&mut FieldViewMut { geom, data }, &faces);
    }
    let rotation = Rotation::new(stencil.kernel(), &[vec!["out", "u"]]).unwrap();
    let params = vec![0.4, 0.1];
    let run = |grids: &mut [Vec<f64>], blocked: bool| -> Option<(Arc<Audit>, TimeBlocking)> {
        let chain = grids
            .iter_mut()
            .map(|data| WrittenGrid {
                view: FieldViewMut { geom, data },
                faces: faces.clone(),
                constant_faces_filled: false,
            })
            .collect();
        let mut job = TimeLoop::new(
            stencil,
            rotation.clone(),
            vec![chain],
            Vec::new(),
            Vec::new(),
            params.clone(),
        )
        .unwrap();
        if !blocked {
            let plain = Schedule::Cpu(CpuSchedule::default());
            for _ in 0..steps {
                job.step_with(|step| backend.run(step, &plain)).unwrap();
            }
            return None;
        }
        let blocking = {
            let stages = stencil_core::StageLoop::of_time_loop(&mut job);
            let workers = super::wavefront::workers(backend, &stages, &schedule);
            time_blocking(Machine::detect(), &stages, &schedule, workers)
        };
        let (result, audit) = audit::audited(|| {
            backend.cpu_run_steps(&mut job, &schedule, steps, |step| {
                stencil_core::Backend::run(backend, step, &Schedule::Cpu(schedule))
            })
        });
        result.unwrap();
        Some((audit, blocking))
    };
    let mut blocked = initial.clone();
    let (audit, blocking) = run(&mut blocked, true).unwrap();
    let mut plain = initial;
    run(&mut plain, false);
    Outcome {
        blocked,
        plain,
        audit,
        blocking,
    }
}

/// Asserts the two runs left the same bits everywhere, and that no phase broke the
/// discipline.
fn check(outcome: &Outcome, what: &str) {
    for (g, (a, b)) in outcome.blocked.iter().zip(&outcome.plain).enumerate() {
        let differ = a
            .iter()
            .zip(b)
            .position(|(x, y)| x.to_bits() != y.to_bits());
        assert_eq!(differ, None, "{what}: grid {g} differs from plain steps");
    }
    let accesses = outcome.audit.accesses();
    let found = conflicts(&accesses, 2);
    assert!(
        found.is_empty(),
        "{what}: {} accesses meet another worker's writes in their phase, e.g. {:?}",
        found.len(),
        found[0]
    );
}

/// The most boxes one worker wrote of one grid in one phase.
fn most_writes_per_worker_and_phase(audit: &Audit) -> usize {
    let mut count = std::collections::HashMap::new();
    for a in audit.accesses().iter().filter(|a| a.write) {
        *count.entry((a.worker, a.phase, a.grid)).or_insert(0) += 1;
    }
    count.into_values().max().unwrap_or(0)
}

/// The phases in which at least one of `workers` writes nothing.
fn idle_phases(accesses: &[audit::Access], workers: usize) -> usize {
    let mut writers = std::collections::BTreeMap::<usize, std::collections::BTreeSet<usize>>::new();
    for a in accesses.iter().filter(|a| a.write) {
        writers.entry(a.phase).or_default().insert(a.worker);
    }
    let phases = accesses.iter().map(|a| a.phase + 1).max().unwrap_or(0);
    (0..phases)
        .filter(|p| writers.get(p).is_none_or(|w| w.len() < workers))
        .count()
}

/// The shapes of the tiles' and the slabs' cases: above the pool's threshold, or under Miri
/// (where every job reaches the workers) as small as the blocking allows.
const TILES_SHAPE: [usize; 3] = if cfg!(miri) { [3, 30, 3] } else { [12, 45, 64] };
const SLABS_SHAPE: [usize; 3] = if cfg!(miri) { [4, 6, 3] } else { [10, 40, 90] };

#[test]
fn skewed_tiles_lend_each_run_only_rows_no_other_worker_writes_in_its_phase() {
    // 3 workers (a middle share shrinks on both sides), 34,560 points (above the pool's
    // threshold), shares of 15 rows cut into tiles of 4 rows (10 rows under Miri), depth 4
    // then 3.
    let backend = CpuBackend::new(3).unwrap();
    let mut tile = [0; MAX_DIMS];
    tile[1] = 4;
    let schedule = CpuSchedule {
        tile,
        time_depth: 4,
        time_slab: 3,
        ..CpuSchedule::default()
    };
    let generic = Stencil::new(heat_kernel()).unwrap();
    let rows = Stencil::with_cpu_rows(heat_kernel(), heat_rows).unwrap();
    for (stencil, path) in [(&generic, "generic"), (&rows, "rows")] {
        for face in [Boundary::Dirichlet(0.25), Boundary::UserManaged] {
            let what = format!("{path} path, faces {face:?}");
            let tiled = backend.activity().tiled_time_loops;
            let outcome = run_case(stencil, &backend, (TILES_SHAPE, face), schedule, 7);
            assert!(outcome.blocking.tiles, "{what}: {:?}", outcome.blocking);
            assert_eq!(backend.activity().tiled_time_loops, tiled + 1, "{what}");
            let accesses = outcome.audit.accesses();
            let workers: std::collections::BTreeSet<usize> =
                accesses.iter().map(|a| a.worker).collect();
            assert_eq!(workers.len(), 3, "{what}: workers {workers:?}");
            assert!(
                most_writes_per_worker_and_phase(&outcome.audit) > 4,
                "{what}: several tiles per worker and phase"
            );
            check(&outcome, &what);
            // No worker waits while others compute triangles: each phase computes the
            // triangles of one slab with the trapezoids of the next, so only the phase that
            // ends a block (its last slab's triangles) leaves a worker without writes.
            let idle = idle_phases(&accesses, 3);
            assert_eq!(idle, 2, "{what}: phases with an idle worker (2 blocks)");
            // The check sees the fault this lending fixes: each run lent the whole grid, as
            // a `&[T]` over all of it was, meets the rows other workers write meanwhile.
            let whole = RowBox::whole(&Geometry::new(&TILES_SHAPE, 1, 8).unwrap());
            let as_before: Vec<_> = accesses
                .iter()
                .map(|&a| match a.write {
                    true => a,
                    false => audit::Access { rows: whole, ..a },
                })
                .collect();
            assert!(!conflicts(&as_before, 2).is_empty(), "{what}");
        }
    }
}

#[test]
fn slabs_on_several_workers_lend_rows_no_other_worker_writes_in_their_phase() {
    // Faces that copy from the interior: slabs (every worker on the same step, worker 0
    // filling halos between barriers), on the generic and the hand-written path.
    let backend = CpuBackend::new(2).unwrap();
    let schedule = CpuSchedule {
        time_depth: 3,
        time_slab: 2,
        ..CpuSchedule::default()
    };
    let generic = Stencil::new(heat_kernel()).unwrap();
    let rows = Stencil::with_cpu_rows(heat_kernel(), heat_rows).unwrap();
    for (stencil, path) in [(&generic, "generic"), (&rows, "rows")] {
        for face in [Boundary::ZeroGradient, Boundary::Reflect] {
            let what = format!("{path} path, faces {face:?}");
            let outcome = run_case(stencil, &backend, (SLABS_SHAPE, face), schedule, 5);
            assert!(
                !outcome.blocking.tiles && outcome.blocking.depth == 3,
                "{what}"
            );
            let accesses = outcome.audit.accesses();
            assert!(accesses.iter().any(|a| a.worker == 1), "{what}: one worker");
            check(&outcome, &what);
        }
    }
}

/// `tmp = u + a * (the six neighbours of u - 6 u)`, Heun's first stage, built at run time.
fn euler_kernel() -> Kernel {
    let mut b = KernelBuilder::new("euler", 3, ElemType::F64);
    let u = b.input("u");
    let tmp = b.output("tmp");
    let a = b.param("a");
    let center = b.read(u, &[0, 0, 0]);
    let mut sum = b.read(u, &[-1, 0, 0]);
    for offset in [[1, 0, 0], [0, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0, 1]] {
        let r = b.read(u, &offset);
        sum = b.add(sum, r);
    }
    let six = b.constant(6.0);
    let c6 = b.mul(six, center);
    let lap = b.sub(sum, c6);
    let a = b.param_ref(a);
    let delta = b.mul(a, lap);
    let value = b.add(center, delta);
    b.store(tmp, value);
    b.finish().unwrap()
}

/// `out = (u + tmp[+1, 0, 0] + tmp[0, -1, 0]) / 3`, a second stage reading the first's
/// temporary at its neighbours.
fn average_kernel() -> Kernel {
    let mut b = KernelBuilder::new("average", 3, ElemType::F64);
    let u = b.input("u");
    let tmp = b.input("tmp");
    let out = b.output("out");
    let c = b.read(u, &[0, 0, 0]);
    let t1 = b.read(tmp, &[1, 0, 0]);
    let t2 = b.read(tmp, &[0, -1, 0]);
    let s = b.add(c, t1);
    let s = b.add(s, t2);
    let third = b.constant(1.0 / 3.0);
    let value = b.mul(s, third);
    b.store(out, value);
    b.finish().unwrap()
}

/// Two stages (`tmp` a grid in no chain, `out -> u` a chain) with a source on `tmp` and
/// receivers on `out`, blocked and plain: the grids (u, out, tmp), the traces, the audit and
/// the blocking.
fn run_stages_case(
    backend: &CpuBackend,
    (shape, face): ([usize; 3], Boundary<f64>),
    schedule: CpuSchedule,
    steps: usize,
) -> (Outcome, [Vec<Vec<f64>>; 2]) {
    use stencil_core::sparse::{ReceiverSet, SourceSet, Target, corners};
    use stencil_core::stages::{GridNames, Stage};
    use stencil_core::time_loop::FieldSlot;
    let euler = Stencil::new(euler_kernel()).unwrap();
    let average = Stencil::new(average_kernel()).unwrap();
    let geom = Geometry::new(&shape, 1, 8).unwrap();
    let faces = vec![[face; 2]; 3];
    let mut rng = Rng::new(0x0057_a6e5);
    let mut initial: Vec<Vec<f64>> = (0..3)
        .map(|_| (0..geom.len).map(|_| rng.uniform(-1.0, 1.0)).collect())
        .collect();
    for data in &mut initial {
        fill_halo(&mut FieldViewMut { geom, data }, &faces);
    }
    let position = |p: [f64; 3]| corners::<f64>(&p, &shape).unwrap();
    let run = |grids: &mut [Vec<f64>], blocked: bool| {
        let (chain, tmp) = grids.split_at_mut(2);
        fn written<'d>(
            data: &'d mut [f64],
            geom: Geometry,
            faces: &[[Boundary<f64>; 2]],
        ) -> WrittenGrid<'d, f64> {
            WrittenGrid {
                view: FieldViewMut { geom, data },
                faces: faces.to_vec(),
                constant_faces_filled: false,
            }
        }
        // Chain `out -> u`: grids[1] is `out`, grids[0] is `u`.
        let (u, out) = chain.split_at_mut(1);
        let chain_slot = |position| FieldSlot::Chain { chain: 0, position };
        let stages = vec![
            Stage {
                name: "euler".into(),
                stencil: &euler,
                slots: vec![chain_slot(1), FieldSlot::Lone(0)],
                params: vec![0.1],
            },
            Stage {
                name: "average".into(),
                stencil: &average,
                slots: vec![chain_slot(1), FieldSlot::Lone(0), chain_slot(0)],
                params: Vec::new(),
            },
        ];
        let names = GridNames {
            chains: vec![vec!["out".into(), "u".into()]],
            lone: vec!["tmp".into()],
            coefficients: Vec::new(),
        };
        let mut job = StageLoop::new(
            stages,
            vec![vec![
                written(&mut out[0], geom, &faces),
                written(&mut u[0], geom, &faces),
            ]],
            vec![written(&mut tmp[0], geom, &faces)],
            Vec::new(),
            names,
            0,
        )
        .unwrap();
        job.add_sources(SourceSet {
            target: Target::Lone(0),
            stage: 0,
            points: vec![position([5.5, 20.0, 30.25]), position([0.0, 44.0, 1.0])],
            series: vec![vec![0.5; steps], (0..steps).map(|s| s as f64).collect()],
        })
        .unwrap();
        job.add_receivers(ReceiverSet {
            target: Target::Chain(0),
            stage: 1,
            points: vec![position([3.0, 17.5, 9.0]), position([1.25, 30.0, 60.0])],
            interval: 2,
            traces: vec![Vec::new(); 2],
        })
        .unwrap();
        if !blocked {
            let plain = Schedule::Cpu(CpuSchedule::default());
            for _ in 0..steps {
                job.step_with(|stage| backend.run(stage, &plain)).unwrap();
            }
            let traces = job.receivers()[0].traces.clone();
            return (None, traces);
        }
        let workers = super::wavefront::workers(backend, &job, &schedule);
        let blocking = time_blocking(Machine::detect(), &job, &schedule, workers);
        let (result, audit) = audit::audited(|| {
            backend.cpu_run_stages(&mut job, &schedule, steps, |stage| {
                stencil_core::Backend::run(backend, stage, &Schedule::Cpu(schedule))
            })
        });
        result.unwrap();
        let traces = job.receivers()[0].traces.clone();
        (Some((audit, blocking)), traces)
    };
    let mut blocked = initial.clone();
    let (audited, blocked_traces) = run(&mut blocked, true);
    let (audit, blocking) = audited.unwrap();
    let mut plain = initial;
    let (_, plain_traces) = run(&mut plain, false);
    (
        Outcome {
            blocked,
            plain,
            audit,
            blocking,
        },
        [blocked_traces, plain_traces],
    )
}

#[test]
fn stages_in_tiles_and_slabs_lend_rows_no_other_worker_writes_in_their_phase() {
    let backend = CpuBackend::new(3).unwrap();
    let mut tile = [0; MAX_DIMS];
    tile[1] = 4;
    let tiles = CpuSchedule {
        tile,
        time_depth: 3,
        time_slab: 3,
        ..CpuSchedule::default()
    };
    let slabs = CpuSchedule {
        time_depth: 2,
        time_slab: 2,
        ..CpuSchedule::default()
    };
    let shape = if cfg!(miri) { [3, 40, 3] } else { [12, 60, 64] };
    for (schedule, face, tiled) in [
        (tiles, Boundary::Dirichlet(0.25), true),
        (tiles, Boundary::UserManaged, true),
        (slabs, Boundary::ZeroGradient, false),
    ] {
        let what = format!("faces {face:?}, tiles {tiled}");
        let (outcome, [blocked, plain]) = run_stages_case(&backend, (shape, face), schedule, 7);
        assert_eq!(
            outcome.blocking.tiles, tiled,
            "{what}: {:?}",
            outcome.blocking
        );
        assert!(outcome.blocking.depth > 1, "{what}");
        let workers: std::collections::BTreeSet<usize> =
            outcome.audit.accesses().iter().map(|a| a.worker).collect();
        assert_eq!(workers.len(), 3, "{what}: workers {workers:?}");
        check(&outcome, &what);
        assert_eq!(blocked.len(), 2);
        assert_eq!(blocked[0].len(), 3, "{what}: samples after steps 2, 4, 6");
        for (a, b) in blocked.iter().zip(&plain) {
            assert!(
                a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()),
                "{what}: traces differ"
            );
        }
    }
}

#[test]
fn blocked_loops_prefetch_in_slabs_only_on_request() {
    use super::wavefront::prefetch_rows;
    let auto = CpuSchedule::default();
    let asked = CpuSchedule {
        prefetch: 2,
        ..CpuSchedule::default()
    };
    // A sweep over grids beyond the cache would prefetch by default: a blocked loop reads
    // from cache, so by default it does not.
    assert_eq!(prefetch_rows(&auto, false), 0, "slabs, default");
    assert_eq!(prefetch_rows(&asked, false), 2, "slabs, requested");
    assert_eq!(prefetch_rows(&asked, true), 0, "tiles never");
    assert_eq!(prefetch_rows(&auto, true), 0, "tiles never");
}
