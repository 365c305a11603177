//! The blocked time loop against plain steps, with what it lends audited: on several
//! workers, with skewed tiles (3-D, value faces, several tiles per worker) and with slabs.

use std::sync::Arc;

use stencil_core::grid::{Boundary, fill_halo};
use stencil_core::rng::Rng;
use stencil_core::row::RowArgs;
use stencil_core::time_loop::WrittenGrid;
use stencil_core::{
    Backend, CpuSchedule, ElemType, FieldViewMut, Geometry, Kernel, KernelBuilder, MAX_DIMS,
    Rotation, Schedule, Stencil, TimeLoop,
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
