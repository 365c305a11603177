//! Outputs read in place (`y = a x + y`) and inputs that need only the halo their own reads
//! reach: against plain loops and the interpreter, under tuning (which must not apply the
//! update more than once), every sampled schedule and the generic path, and on the emulated
//! GPU; misuse, and backends that cannot run them, are errors.

use crate::common;

use stencil::prelude::*;
use stencil::{
    CpuBackend, CpuSchedule, EmulatedGpu, ErrorKind, KernelBuilder, Schedule, Stencil, TunePolicy,
    interp, verify,
};
use stencil_test_support::Rng;

stencil! {
    /// `y = a x + y`, in place.
    pub fn axpy(x: &Grid1<f64>, y: &mut Grid1<f64>, a: f64) {
        y[i] = a * x[i] + y[i];
    }
}

stencil! {
    /// An explicit diffusion step in place on `u` from a neighbour sum of `v`, with a variable
    /// coefficient read only at its point (so it needs no halo).
    pub fn accumulate(v: &Grid3<f64>, kappa: &Grid3<f64>, u: &mut Grid3<f64>, dt: f64) {
        u[i, j, k] = u[i, j, k]
            + dt * kappa[i, j, k] * (v[i - 1, j, k] + v[i + 1, j, k] + v[i, j - 1, k]
                + v[i, j + 1, k] + v[i, j, k - 1] + v[i, j, k + 1] - 6.0 * v[i, j, k]);
    }
}

stencil! {
    /// CG's residual update in place, with its norm.
    pub fn update_norm(q: &Grid2<f32>, r: &mut Grid2<f32>, rr: &mut Sum<f32>, alpha: f32) {
        let v = r[i, j] - alpha * q[i, j];
        r[i, j] = v;
        rr += v * v;
    }
}

fn random<const D: usize>(shape: [usize; D], halo: usize, seed: u64) -> Grid<f64, D> {
    let mut rng = Rng::new(seed);
    let mut g = Grid::<f64, D>::with_halo(shape, halo).unwrap();
    g.fill_with(|_| rng.uniform(-1.0, 1.0));
    g.update_halo();
    g
}

#[test]
fn axpy_in_place_applies_the_update_exactly_once_even_while_tuning() {
    // Large enough that `quick` tunes (trials run the kernel many times).
    let n = 1 << 19;
    let x = random([n], 0, 1);
    let y0 = random([n], 0, 2);
    let mut y = y0.clone();
    let report = axpy(&x, &mut y, 0.75)
        .tune(TunePolicy::Quick)
        .without_tuning_cache()
        .run_with_report()
        .unwrap();
    assert!(report.trials > 1, "the case must tune: {report}");
    for i in 0..n {
        assert_eq!(
            y[[i]].to_bits(),
            (0.75 * x[[i]] + y0[[i]]).to_bits(),
            "at {i}"
        );
    }
    // And once more: twice the update.
    axpy(&x, &mut y, 0.75).run().unwrap();
    for i in (0..n).step_by(997) {
        let once = 0.75 * x[[i]] + y0[[i]];
        assert_eq!(y[[i]].to_bits(), (0.75 * x[[i]] + once).to_bits(), "at {i}");
    }
}

#[test]
fn in_place_kernels_match_plain_loops_under_every_sampled_schedule() {
    let shape = [7, 9, 133];
    let v = random(shape, 1, 3);
    let kappa = random(shape, 0, 4);
    let u0 = random(shape, 0, 5);
    let threads = [1, 2];
    for t in threads {
        let backend = CpuBackend::new(t).unwrap();
        let mut schedules = backend.sample_cpu_schedules(&shape);
        schedules.push(CpuSchedule {
            force_generic: true,
            ..CpuSchedule::default()
        });
        for schedule in schedules {
            let mut u = u0.clone();
            accumulate(&v, &kappa, &mut u, 0.1)
                .on(&backend)
                .schedule(Schedule::Cpu(schedule))
                .run()
                .unwrap();
            for (p, got) in u.interior_iter() {
                let at = |d: [isize; 3]| {
                    v.get([
                        p[0] as isize + d[0],
                        p[1] as isize + d[1],
                        p[2] as isize + d[2],
                    ])
                    .unwrap()
                };
                let lap = at([-1, 0, 0])
                    + at([1, 0, 0])
                    + at([0, -1, 0])
                    + at([0, 1, 0])
                    + at([0, 0, -1])
                    + at([0, 0, 1])
                    - 6.0 * at([0, 0, 0]);
                let want = u0[p] + 0.1 * kappa[p] * lap;
                assert_eq!(got.to_bits(), want.to_bits(), "{schedule:?} at {p:?}");
            }
        }
    }
}

#[test]
fn in_place_kernels_verify_against_the_interpreter() {
    verify(axpy::stencil()).unwrap();
    verify(accumulate::stencil()).unwrap();
    verify(update_norm::stencil()).unwrap();
    // Built at run time: the generic path.
    let mut b = KernelBuilder::new("scale_in_place", 2, stencil::ElemType::F64);
    let y = b.output("y");
    let c = b.param("c");
    let own = b.read(y, &[0, 0]);
    let cr = b.param_ref(c);
    let v = b.mul(cr, own);
    b.store(y, v);
    let stencil = Stencil::new(b.finish().unwrap()).unwrap();
    verify(&stencil).unwrap();
    let mut g = random([5, 300], 0, 9);
    let before = g.clone();
    Launch::new(&stencil)
        .output("y", &mut g)
        .param("c", 3.0)
        .run()
        .unwrap();
    for (p, v) in g.interior_iter() {
        assert_eq!(v.to_bits(), (3.0 * before[p]).to_bits());
    }
}

#[test]
fn the_residual_update_in_place_gives_the_new_values_and_their_norm() {
    let shape = [37, 1001];
    let mut rng = Rng::new(7);
    let mut q = Grid2::<f32>::with_halo(shape, 0).unwrap();
    q.fill_with(|_| rng.uniform(-1.0, 1.0) as f32);
    let mut r = Grid2::<f32>::with_halo(shape, 0).unwrap();
    r.fill_with(|_| rng.uniform(-1.0, 1.0) as f32);
    let r0 = r.clone();
    let mut rr = Sum::new();
    update_norm(&q, &mut r, &mut rr, 0.5).run().unwrap();
    let mut expected_r = r0.clone();
    let want = interp::run_reducing(
        update_norm::stencil().kernel(),
        &[q.view()],
        &mut [expected_r.view_mut()],
        &[0.5],
    );
    assert_eq!(rr.value().to_bits(), want[0].to_bits());
    for (p, v) in r.interior_iter() {
        assert_eq!(v.to_bits(), (r0[p] - 0.5 * q[p]).to_bits(), "at {p:?}");
        assert_eq!(v.to_bits(), expected_r[p].to_bits());
    }
}

#[test]
fn each_input_needs_only_the_halo_its_own_reads_reach() {
    let shape = [6, 7, 8];
    // `kappa` and `u` are read at their point only: no halo at all. `v` needs 1.
    let v = random(shape, 1, 11);
    let kappa = random(shape, 0, 12);
    let mut u = random(shape, 0, 13);
    accumulate(&v, &kappa, &mut u, 0.5).run().unwrap();
    // `v` with no halo is refused, naming `v` and the halo it needs.
    let narrow = random(shape, 0, 14);
    let e = accumulate(&narrow, &kappa, &mut u, 0.5).run().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::HaloTooNarrow, "{e}");
    assert!(e.to_string().contains("input `v`"), "{e}");
    assert!(e.to_string().contains("Grid::with_halo(shape, 1)"), "{e}");
    // The seeds' DIA product: seven coefficient grids read at their point, without halos.
    let x = random(shape, 1, 15);
    let a: Vec<Grid3<f64>> = (0..7).map(|s| random(shape, 0, 20 + s)).collect();
    let mut y = Grid3::<f64>::with_halo(shape, 0).unwrap();
    stencil::kernels::dia_spmv(&x, &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], &mut y)
        .run()
        .unwrap();
    let mut want = Grid3::<f64>::with_halo(shape, 0).unwrap();
    let views: Vec<_> = std::iter::once(x.view())
        .chain(a.iter().map(|g| g.view()))
        .collect();
    interp::run(
        stencil::kernels::dia_spmv::stencil().kernel(),
        &views,
        &mut [want.view_mut()],
        &[],
    );
    assert!(
        y.interior_iter()
            .all(|(p, v)| v.to_bits() == want[p].to_bits())
    );
}

#[test]
fn backends_and_time_loops_that_cannot_run_in_place_say_so() {
    let x = random([300], 0, 1);
    let mut y = random([300], 0, 2);
    let y0 = y.clone();
    let refusing = common::PlainCpu;
    let e = axpy(&x, &mut y, 2.0).on(&refusing).run().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BackendUnavailable, "{e}");
    assert!(e.to_string().contains("in place"), "{e}");
    assert!(
        y.interior_iter()
            .all(|(p, v)| v.to_bits() == y0[p].to_bits())
    );
    let e = stencil::verify_with(axpy::stencil(), &[&refusing], &Default::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BackendUnavailable, "{e}");
    let mut u = random([300], 1, 3);
    let e = Steps::new(axpy::stencil())
        .rotate(&["y", "x"])
        .grid("x", &mut u)
        .grid("y", &mut y)
        .param("a", 1.0)
        .run(3)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadArgument, "{e}");
}

#[test]
fn the_emulated_gpu_runs_outputs_in_place() {
    let x = random([300], 0, 1);
    let y0 = random([300], 0, 2);
    let gpu = EmulatedGpu::new();
    let mut y = y0.clone();
    axpy(&x, &mut y, 2.0).on(&gpu).run().unwrap();
    for (p, v) in y.interior_iter() {
        let want = 2.0 * x[p] + y0[p];
        let ulps = (v.to_bits() as i64 - want.to_bits() as i64).unsigned_abs();
        assert!(ulps <= 1, "at {p:?}: {v:e}, expected {want:e}");
    }
    let report = stencil::verify_with(axpy::stencil(), &[&gpu], &Default::default()).unwrap();
    assert!(report.cases > 0, "{report}");
}
