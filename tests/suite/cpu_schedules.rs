//! The CPU backend's schedule space against the reference interpreter: schedules sampled from
//! `ScheduleSpace` (for the running machine and for described machines with other caches,
//! vector widths and NUMA nodes), plus one-thread, generic-path, streaming, odd-block and
//! register-block variants, on tiny, prime and non-dividing shapes, through `verify_with` (random grids, NaN
//! poisoned outputs, every output compared with `interp::run`), and a check that the retimed
//! loop runs where it pays.

use stencil::kernels::{jacobi7, jacobi27, jacobi27_f32};
use stencil::prelude::*;
use stencil::{
    Backend, CpuBackend, CpuSchedule, Element, Job, Kernel, Result, Schedule, Stencil,
    VerifyConfig, verify_with,
};
use stencil_cpu::{CpuStores, Machine, ScheduleSpace, StreamWidth, Topology};
use stencil_test_support::Rng;
use stencil_test_support::grid::fill_random;

stencil! {
    fn twenty_seven_point(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64, c2: f64) {
        let faces = u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k] + u[i, j+1, k]
            + u[i, j, k-1] + u[i, j, k+1];
        let edges = u[i-1, j-1, k] + u[i-1, j+1, k] + u[i+1, j-1, k] + u[i+1, j+1, k]
            + u[i-1, j, k-1] + u[i-1, j, k+1] + u[i+1, j, k-1] + u[i+1, j, k+1]
            + u[i, j-1, k-1] + u[i, j-1, k+1] + u[i, j+1, k-1] + u[i, j+1, k+1];
        let corners = u[i-1, j-1, k-1] + u[i-1, j-1, k+1] + u[i-1, j+1, k-1] + u[i-1, j+1, k+1]
            + u[i+1, j-1, k-1] + u[i+1, j-1, k+1] + u[i+1, j+1, k-1] + u[i+1, j+1, k+1];
        out[i, j, k] = c0 * u[i, j, k] + c1 * (faces + corners) + c2 * edges;
    }

    fn gradient(u: &Grid3<f32>, x: &mut Grid3<f32>, y: &mut Grid3<f32>, z: &mut Grid3<f32>,
                a: f32) {
        x[i, j, k] = a * (u[i+1, j, k] - u[i-1, j, k]);
        y[i, j, k] = a * (u[i, j+1, k] - u[i, j-1, k]);
        z[i, j, k] = a * (u[i, j, k+1] - u[i, j, k-1]);
    }

    fn five_point(u: &Grid2<f64>, out: &mut Grid2<f64>, c0: f64, c1: f64) {
        out[i, j] = c0 * u[i, j] + c1 * (u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1]);
    }

    /// Retimed with different coefficients at each unit-stride displacement (one partial
    /// sum of nine reads used at three), one class subtracted: a shift in the wrong direction
    /// or by the wrong amount changes the result.
    fn skewed_planes(u: &Grid3<f64>, out: &mut Grid3<f64>, a: f64, b: f64, c: f64) {
        out[i, j, k] = a * (u[i-1, j-1, k-1] + u[i-1, j, k-1] + u[i-1, j+1, k-1]
                          + u[i, j-1, k-1] + u[i, j, k-1] + u[i, j+1, k-1]
                          + u[i+1, j-1, k-1] + u[i+1, j, k-1] + u[i+1, j+1, k-1])
            + b * (u[i-1, j-1, k] + u[i-1, j, k] + u[i-1, j+1, k]
                 + u[i, j-1, k] + u[i, j, k] + u[i, j+1, k]
                 + u[i+1, j-1, k] + u[i+1, j, k] + u[i+1, j+1, k])
            - c * (u[i-1, j-1, k+1] + u[i-1, j, k+1] + u[i-1, j+1, k+1]
                 + u[i, j-1, k+1] + u[i, j, k+1] + u[i, j+1, k+1]
                 + u[i+1, j-1, k+1] + u[i+1, j, k+1] + u[i+1, j+1, k+1]);
    }

    /// Retimed in 2-D with shifts by two, computed coefficients and a constant one.
    fn skewed_columns(u: &Grid2<f32>, out: &mut Grid2<f32>, a: f32, b: f32) {
        out[i, j] = a * (u[i-1, j-2] + u[i, j-2] + u[i+1, j-2])
            + (a + b) * (u[i-1, j-1] + u[i, j-1] + u[i+1, j-1])
            - b * (u[i-1, j] + u[i, j] + u[i+1, j])
            + 0.5 * (u[i-1, j+1] + u[i, j+1] + u[i+1, j+1])
            - (a * b) * (u[i-1, j+2] + u[i, j+2] + u[i+1, j+2]);
    }

    fn smooth_1d(u: &Grid1<f32>, out: &mut Grid1<f32>) {
        out[i] = 0.25 * u[i-1] + 0.5 * u[i] + 0.25 * u[i+1];
    }
}

/// Machines to derive spaces from: the running one and described ones.
fn machines() -> Vec<Machine> {
    let mut small = Machine::detect().clone();
    small.l1_bytes = 16 << 10;
    small.l2_bytes = 64 << 10;
    small.vector = StreamWidth::Sse2;
    let mut numa = Machine::detect().clone();
    numa.cores = 8;
    numa.topology = Topology::new(vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
    numa.l2_bytes = 8 << 20;
    let mut plain = Machine::detect().clone();
    plain.vector = StreamWidth::None;
    vec![Machine::detect().clone(), small, numa, plain]
}

/// The CPU backend, offering `verify` a sample of its schedule space instead of its own
/// sample.
struct SpaceSample {
    cpu: CpuBackend,
}

impl SpaceSample {
    fn schedules(&self, kernel: &Kernel, shape: &[usize]) -> Vec<CpuSchedule> {
        let mut all = Vec::new();
        for machine in machines() {
            for workers in [1, self.cpu.threads(), 3] {
                let space = ScheduleSpace::new(&machine, kernel, shape, workers);
                assert!(!space.is_empty());
                // First, last and an evenly spread handful.
                let n = space.len();
                for i in [0, n - 1, n / 3, n / 2, 2 * n / 3] {
                    let s = space.get(i);
                    assert!(space.contains(&s));
                    if !all.contains(&s) {
                        all.push(s);
                    }
                }
            }
        }
        // Variants outside the space: one thread, the generic path, odd blocks, register
        // blocks of every jammed count and one without a jammed loop.
        let base = all.clone();
        for (k, s) in base.iter().enumerate().step_by(3) {
            all.push(CpuSchedule {
                threads: 1 + k % 2,
                force_generic: k % 2 == 0,
                row_block: [0, 1, 3, 17][k % 4],
                stores: [CpuStores::Streaming, CpuStores::Auto, CpuStores::Plain][k % 3],
                prefetch: k % 3,
                chunk: k % 4,
                register_rows: [2, 4, 3, 1][(k / 6) % 4],
                ..*s
            });
        }
        // A guard: the sample jams rows through the generated loops, not only the generic path.
        if shape.len() >= 2 {
            for rows in [2, 4] {
                assert!(
                    all.iter()
                        .any(|s| s.register_rows == rows && !s.force_generic),
                    "no schedule of {rows} register rows for {shape:?}"
                );
            }
        }
        all
    }
}

impl<T: Element> Backend<T> for SpaceSample {
    fn name(&self) -> String {
        "cpu (schedule-space sample)".to_string()
    }

    fn default_schedule(&self, kernel: &Kernel, shape: &[usize]) -> Schedule {
        <CpuBackend as Backend<T>>::default_schedule(&self.cpu, kernel, shape)
    }

    fn sample_schedules(&self, kernel: &Kernel, shape: &[usize]) -> Vec<Schedule> {
        self.schedules(kernel, shape)
            .into_iter()
            .map(Schedule::Cpu)
            .collect()
    }

    fn run(&self, job: &mut Job<'_, T>, schedule: &Schedule) -> Result<()> {
        self.cpu.run(job, schedule)
    }
}

fn check<T: Element>(stencil: &Stencil<T>, shapes: &[&[usize]]) {
    let backend = SpaceSample {
        cpu: CpuBackend::new(2).unwrap(),
    };
    let config = VerifyConfig {
        shapes: Some(shapes.iter().map(|s| s.to_vec()).collect()),
        ..VerifyConfig::default()
    };
    let report = verify_with(stencil, &[&backend], &config).unwrap_or_else(|e| panic!("{e}"));
    assert!(report.cases >= 10 * shapes.len(), "{report}");
}

#[test]
fn three_d_kernels_agree_with_the_interpreter_under_sampled_schedules() {
    let shapes: &[&[usize]] = &[&[1, 1, 1], &[2, 3, 5], &[5, 37, 70], &[9, 33, 130]];
    check(jacobi7::stencil(), shapes);
    check(twenty_seven_point::stencil(), shapes);
    check(gradient::stencil(), shapes);
    // The retimed loop needs rows of two vectors and more: long, odd and just-too-short rows.
    let long: &[&[usize]] = &[
        &[3, 4, 131],
        &[2, 5, 16],
        &[4, 3, 33],
        &[2, 2, 15],
        &[3, 3, 64],
    ];
    check(jacobi27::stencil(), long);
    check(jacobi27_f32::stencil(), long);
    check(skewed_planes::stencil(), long);
}

#[test]
fn two_d_and_one_d_kernels_agree_with_the_interpreter_under_sampled_schedules() {
    check(
        five_point::stencil(),
        &[&[1, 1], &[3, 4100], &[7, 1031], &[40, 17]],
    );
    check(smooth_1d::stencil(), &[&[1], &[5000], &[4099]]);
    check(
        skewed_columns::stencil(),
        &[&[3, 70], &[5, 33], &[2, 32], &[4, 31], &[1, 200]],
    );
}

#[test]
fn every_store_mode_gives_the_same_result() {
    // Auto is what `CpuSchedule::default()` asks for; plain and streaming stores must agree
    // with it exactly (the values are computed the same way, only the stores differ).
    let backend = CpuBackend::new(2).unwrap();
    let n = 64;
    let mut u = Grid3::<f64>::with_halo([n, n, n], 1).unwrap();
    backend.first_touch(&mut u, &CpuSchedule::default(), |[i, j, k]| {
        ((i * 7 + j * 13 + k * 29) % 97) as f64 * 0.01 - 0.3
    });
    let mut results = Vec::new();
    for stores in [CpuStores::Auto, CpuStores::Plain, CpuStores::Streaming] {
        let mut out = Grid3::<f64>::with_halo([n, n, n], 1).unwrap();
        out.fill(f64::NAN);
        let schedule = CpuSchedule {
            stores,
            ..CpuSchedule::default()
        };
        jacobi7(&u, &mut out, 0.4, 0.1)
            .on(&backend)
            .schedule(Schedule::Cpu(schedule))
            .run()
            .unwrap();
        results.push(out.to_vec());
    }
    // An independent check of one point.
    let at = |i: usize, j: usize, k: usize| u.get([i as isize, j as isize, k as isize]).unwrap();
    let expected = 0.4 * at(5, 6, 7)
        + 0.1 * (at(4, 6, 7) + at(6, 6, 7) + at(5, 5, 7) + at(5, 7, 7) + at(5, 6, 6) + at(5, 6, 8));
    let index = (5 * n + 6) * n + 7;
    assert!((results[0][index] - expected).abs() < 1e-14);
    assert!(results[0].iter().all(|v| v.is_finite()));
    assert_eq!(results[0], results[1]);
    assert_eq!(results[0], results[2]);
}

/// Which loop ran shows in the last bits: the plain point loop evaluates a kernel's sums in
/// the interpreter's order, bit for bit, while the retimed loop reassociates them. So on
/// random data the 27-point stencil (whose partial sums pay) must agree with the interpreter
/// to rounding but not everywhere bit for bit, and the 7-point stencil (no retimed form) bit
/// for bit: a retimed loop that declined every row, leaving it to the plain loop, fails here.
#[test]
fn the_retimed_loop_runs_where_it_pays() {
    use stencil::__private::lanes::{F64, Lanes};
    use stencil_core::interp;
    if !F64::FAST_SHIFTS {
        println!("SKIP: this build has no single-instruction lane shifts (no AVX2)");
        return;
    }
    let shape = [6, 9, 70];
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    let mut u = Grid3::<f64>::with_halo(shape, 1).unwrap();
    fill_random(&mut u, &mut rng, (-1.0, 1.0));
    let backend = CpuBackend::new(2).unwrap();
    let params = [0.4, 0.15, 0.07, -0.03];
    for (stencil, retimed) in [(jacobi27::stencil(), true), (jacobi7::stencil(), false)] {
        let kernel = stencil.kernel();
        let params = &params[..kernel.params.len()];
        let mut expected = Grid3::<f64>::with_halo(shape, 1).unwrap();
        interp::run(kernel, &[u.view()], &mut [expected.view_mut()], params);
        for stores in [CpuStores::Plain, CpuStores::Streaming] {
            let mut out = Grid3::<f64>::with_halo(shape, 1).unwrap();
            out.fill(f64::NAN);
            let schedule = Schedule::Cpu(CpuSchedule {
                stores,
                ..CpuSchedule::default()
            });
            let mut job = Job::new(
                stencil,
                vec![u.view()],
                vec![out.view_mut()],
                params.to_vec(),
            )
            .unwrap();
            backend.run(&mut job, &schedule).unwrap();
            drop(job);
            let pairs: Vec<(f64, f64)> = out
                .interior_iter()
                .zip(expected.interior_iter())
                .map(|((_, got), (_, want))| (got, want))
                .collect();
            assert!(pairs.iter().all(|&(got, want)| (got - want).abs() <= 1e-14));
            let differing = pairs.iter().filter(|&&(got, want)| got != want).count();
            if retimed {
                assert!(
                    differing > pairs.len() / 10,
                    "{differing} of {}",
                    pairs.len()
                );
            } else {
                assert_eq!(differing, 0);
            }
        }
    }
}
