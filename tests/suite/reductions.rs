//! Reductions (`Sum`, `Min`, `Max`): against the reference interpreter, against plain loops,
//! against an independent implementation of the documented order, bit-identical across
//! threads and schedules, and every misuse an `Err`.

use crate::common;

use stencil::prelude::*;
use stencil::{
    CpuBackend, CpuSchedule, ErrorKind, KernelBuilder, ReduceOp, Schedule, Stencil, VerifyConfig,
    interp, verify, verify_with,
};

use stencil_test_support::Rng;

stencil! {
    /// The dot product of two vectors.
    pub fn dot(x: &Grid1<f64>, y: &Grid1<f64>, s: &mut Sum<f64>) {
        s += x[i] * y[i];
    }
}

stencil! {
    /// The residual of the 7-point Laplacian and its squared norm in one sweep.
    pub fn residual(u: &Grid3<f64>, b: &Grid3<f64>, r: &mut Grid3<f64>, rr: &mut Sum<f64>, h2: f64) {
        let res = b[i, j, k]
            - (6.0 * u[i, j, k] - u[i - 1, j, k] - u[i + 1, j, k] - u[i, j - 1, k]
                - u[i, j + 1, k] - u[i, j, k - 1] - u[i, j, k + 1]) / h2;
        r[i, j, k] = res;
        rr += res * res;
    }
}

stencil! {
    /// The smallest and largest value and the sum of a 2-D field, in f32.
    pub fn extremes(u: &Grid2<f32>, lo: &mut Min<f32>, hi: &mut Max<f32>, total: &mut Sum<f32>) {
        lo = min(lo, u[i, j]);
        hi = max(hi, u[i, j]);
        total += u[i, j];
    }
}

fn random_grid<const D: usize>(shape: [usize; D], seed: u64) -> Grid<f64, D> {
    let halo = stencil::DEFAULT_HALO;
    stencil_test_support::grid::random_grid(shape, halo, &mut Rng::new(seed), (-1.0, 1.0))
}

/// The documented order written out again from its description, sharing no code with the
/// library: rows in C order, blocks of 256 points of a row, 32 lanes per block by position,
/// the lanes and then the blocks each combined by a pairwise tree that splits `n` values into
/// the first `n / 2` and the rest.
fn documented_sum(rows: &[Vec<f64>]) -> f64 {
    fn tree(v: &[f64]) -> f64 {
        match v.len() {
            0 => 0.0,
            1 => v[0],
            n => tree(&v[..n / 2]) + tree(&v[n / 2..]),
        }
    }
    let mut blocks = Vec::new();
    for row in rows {
        for block in row.chunks(256) {
            let mut lanes = [0.0f64; 32];
            for (p, &v) in block.iter().enumerate() {
                lanes[p % 32] += v;
            }
            blocks.push(tree(&lanes));
        }
    }
    tree(&blocks)
}

#[test]
fn dot_follows_the_documented_order_bit_for_bit() {
    for n in [1, 7, 255, 256, 257, 1000, 4099, 70_001] {
        let x = random_grid([n], 1 + n as u64);
        let y = random_grid([n], 2 + n as u64);
        let mut s = Sum::new();
        dot(&x, &y, &mut s).run().unwrap();
        let products: Vec<f64> = (0..n).map(|i| x[[i]] * y[[i]]).collect();
        assert_eq!(
            s.value().to_bits(),
            documented_sum(std::slice::from_ref(&products)).to_bits(),
            "n = {n}"
        );
        let plain: f64 = products.iter().sum();
        assert!((s.value() - plain).abs() <= 1e-12 * n as f64, "n = {n}");
    }
}

#[test]
fn residual_and_its_norm_in_one_sweep_match_plain_loops() {
    let shape = [13, 17, 300];
    let u = random_grid(shape, 11);
    let b = random_grid(shape, 12);
    let mut r = Grid3::<f64>::new(shape).unwrap();
    r.as_mut_slice().fill(f64::NAN);
    let mut rr = Sum::new();
    let h2 = 0.25;
    residual(&u, &b, &mut r, &mut rr, h2).run().unwrap();
    let mut rows = Vec::new();
    for i in 0..shape[0] {
        for j in 0..shape[1] {
            let mut row = Vec::new();
            for k in 0..shape[2] {
                let at = |di: isize, dj: isize, dk: isize| {
                    u.get([i as isize + di, j as isize + dj, k as isize + dk])
                        .unwrap()
                };
                let res = b[[i, j, k]]
                    - (6.0 * at(0, 0, 0)
                        - at(-1, 0, 0)
                        - at(1, 0, 0)
                        - at(0, -1, 0)
                        - at(0, 1, 0)
                        - at(0, 0, -1)
                        - at(0, 0, 1))
                        / h2;
                assert_eq!(r[[i, j, k]].to_bits(), res.to_bits(), "r at {i} {j} {k}");
                row.push(res * res);
            }
            rows.push(row);
        }
    }
    assert_eq!(rr.value().to_bits(), documented_sum(&rows).to_bits());
}

#[test]
fn min_max_and_sum_of_f32_match_plain_loops_and_ignore_nan() {
    let shape = [9, 1030];
    let mut rng = Rng::new(5);
    let mut u = Grid2::<f32>::new(shape).unwrap();
    u.fill_with(|_| rng.uniform(-100.0, 100.0) as f32);
    u[[4, 700]] = f32::NAN;
    u.update_halo();
    let (mut lo, mut hi, mut total) = (Min::new(), Max::new(), Sum::new());
    extremes(&u, &mut lo, &mut hi, &mut total).run().unwrap();
    let values: Vec<f32> = u.interior_iter().map(|(_, v)| v).collect();
    let finite = values.iter().copied().filter(|v| !v.is_nan());
    assert_eq!(lo.value(), finite.clone().fold(f32::INFINITY, f32::min));
    assert_eq!(hi.value(), finite.fold(f32::NEG_INFINITY, f32::max));
    assert!(total.value().is_nan(), "a sum with a NaN value is NaN");
}

/// `extremes` of `u` on the reference interpreter, the CPU backend (1 and 3 threads, every
/// sampled schedule, the generic path) and the PTX emulator: `(lo, hi)` of each, labelled.
fn extremes_everywhere(u: &Grid2<f32>) -> Vec<(String, f32, f32)> {
    let shape = u.shape();
    let mut results = Vec::new();
    let want = interp::run_reducing(extremes::stencil().kernel(), &[u.view()], &mut [], &[]);
    results.push(("interpreter".to_string(), want[0], want[1]));
    for threads in [1, 3] {
        let backend = CpuBackend::new(threads).unwrap();
        let mut schedules = backend.sample_cpu_schedules(&shape);
        schedules.push(CpuSchedule {
            force_generic: true,
            ..CpuSchedule::default()
        });
        for schedule in schedules {
            let (mut lo, mut hi, mut total) = (Min::new(), Max::new(), Sum::new());
            extremes(u, &mut lo, &mut hi, &mut total)
                .on(&backend)
                .schedule(Schedule::Cpu(schedule))
                .run()
                .unwrap();
            results.push((
                format!("{threads} threads, {schedule:?}"),
                lo.value(),
                hi.value(),
            ));
        }
    }
    let gpu = stencil::EmulatedGpu::new();
    let (mut lo, mut hi, mut total) = (Min::new(), Max::new(), Sum::new());
    extremes(u, &mut lo, &mut hi, &mut total)
        .on(&gpu)
        .tune(stencil::TunePolicy::Off)
        .run()
        .unwrap();
    results.push(("PTX emulator".to_string(), lo.value(), hi.value()));
    results
}

#[test]
fn min_and_max_of_an_all_nan_interior_are_nan_on_every_backend() {
    for shape in [[2, 3], [9, 1030]] {
        let mut u = Grid2::<f32>::new(shape).unwrap();
        u.fill(f32::NAN);
        for (what, lo, hi) in extremes_everywhere(&u) {
            assert!(lo.is_nan() && hi.is_nan(), "{shape:?} on {what}: {lo} {hi}");
        }
    }
}

#[test]
fn min_and_max_of_nans_and_numbers_are_the_extreme_numbers_on_every_backend() {
    // NaN everywhere but a few points, some alone in their lane, block or row.
    let shape = [9, 1030];
    let mut u = Grid2::<f32>::new(shape).unwrap();
    u.fill(f32::NAN);
    for (p, v) in [
        ([0, 0], 1.5),
        ([3, 257], -7.0),
        ([3, 258], 2.0),
        ([8, 1029], 9.0),
    ] {
        u[p] = v;
    }
    u.update_halo();
    for (what, lo, hi) in extremes_everywhere(&u) {
        assert_eq!((lo, hi), (-7.0, 9.0), "{what}");
    }
}

/// The same bits under every sampled schedule and 1, 2 and 3 threads.
#[test]
fn reductions_are_bit_identical_across_threads_and_schedules() {
    let shape = [11, 19, 613];
    let u = random_grid(shape, 21);
    let b = random_grid(shape, 22);
    let mut reference = None;
    for threads in [1, 2, 3] {
        let backend = CpuBackend::new(threads).unwrap();
        let mut schedules = backend.sample_cpu_schedules(&shape);
        schedules.push(CpuSchedule {
            tile: [3, 5, 100, 0],
            row_block: 7,
            register_rows: 4,
            ..CpuSchedule::default()
        });
        for schedule in schedules {
            let mut r = Grid3::<f64>::new(shape).unwrap();
            let mut rr = Sum::new();
            residual(&u, &b, &mut r, &mut rr, 0.5)
                .on(&backend)
                .schedule(Schedule::Cpu(schedule))
                .run()
                .unwrap();
            let bits = rr.value().to_bits();
            assert_eq!(
                *reference.get_or_insert(bits),
                bits,
                "{threads} threads, {schedule:?}"
            );
        }
    }
}

fn built_kernel(n_dims: usize) -> Stencil<f64> {
    // Run time kernels take the generic path: a weighted neighbour sum stored, and its sum,
    // minimum and maximum.
    let mut k = KernelBuilder::new("built", n_dims, stencil::ElemType::F64);
    let u = k.input("u");
    let out = k.output("out");
    let w = k.param("w");
    let s = k.reduction("s", ReduceOp::Sum);
    let lo = k.reduction("lo", ReduceOp::Min);
    let hi = k.reduction("hi", ReduceOp::Max);
    let mut minus = vec![0; n_dims];
    minus[n_dims - 1] = -1;
    let centre = k.read(u, &vec![0; n_dims]);
    let left = k.read(u, &minus);
    let wl = k.param_ref(w);
    let scaled = k.mul(wl, left);
    let v = k.add(centre, scaled);
    k.store(out, v);
    let sq = k.mul(v, v);
    k.reduce(s, sq);
    k.reduce(lo, v);
    k.reduce(hi, centre);
    Stencil::new(k.finish().unwrap()).unwrap()
}

#[test]
fn kernels_built_at_run_time_verify_on_every_sampled_schedule() {
    for n_dims in 1..=3 {
        let report = verify(&built_kernel(n_dims)).unwrap();
        assert!(report.cases > 0, "{n_dims}-D");
    }
    verify(residual::stencil()).unwrap();
    verify(dot::stencil()).unwrap();
    verify(extremes::stencil()).unwrap();
}

#[test]
fn kernels_built_at_run_time_bind_reductions_by_name() {
    let stencil = built_kernel(2);
    let u = random_grid([5, 600], 3);
    let mut out = Grid2::<f64>::new([5, 600]).unwrap();
    let (mut s, mut lo, mut hi) = (Sum::new(), Min::new(), Max::new());
    Launch::new(&stencil)
        .input("u", &u)
        .output("out", &mut out)
        .param("w", 0.5)
        .reduction("s", &mut s)
        .reduction("lo", &mut lo)
        .reduction("hi", &mut hi)
        .run()
        .unwrap();
    let mut expected_out = Grid2::<f64>::new([5, 600]).unwrap();
    let want = interp::run_reducing(
        stencil.kernel(),
        &[u.view()],
        &mut [expected_out.view_mut()],
        &[0.5],
    );
    assert_eq!(
        [s.value(), lo.value(), hi.value()].map(f64::to_bits),
        [want[0], want[1], want[2]].map(f64::to_bits)
    );
}

#[test]
fn misuse_is_an_error_and_leaves_the_targets_alone() {
    let stencil = built_kernel(1);
    let u = random_grid([300], 4);
    let mut out = Grid1::<f64>::new([300]).unwrap();
    fn call<'g>(
        stencil: &'g Stencil<f64>,
        u: &'g Grid1<f64>,
        out: &'g mut Grid1<f64>,
    ) -> Launch<'g, f64, 1> {
        Launch::new(stencil)
            .input("u", u)
            .output("out", out)
            .param("w", 1.0)
    }

    // Unbound.
    let mut s = Sum::new();
    let (mut lo, mut hi) = (Min::new(), Max::new());
    let e = call(&stencil, &u, &mut out)
        .reduction("s", &mut s)
        .run()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadArgument, "{e}");
    assert!(e.to_string().contains("`lo` is not bound"), "{e}");

    // A target of the wrong operation, an unknown name, twice.
    let mut wrong = Max::new();
    let e = call(&stencil, &u, &mut out)
        .reduction("lo", &mut wrong)
        .run()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadArgument);
    assert!(e.to_string().contains("is a `Min`, not a `Max`"), "{e}");
    let e = call(&stencil, &u, &mut out)
        .reduction("nope", &mut s)
        .run()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadArgument);
    let mut s2 = Sum::new();
    let e = call(&stencil, &u, &mut out)
        .reduction("s", &mut s)
        .reduction("s", &mut s2)
        .run()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadArgument);

    // A backend that does not compute reductions.
    let gpu = common::PlainCpu;
    let e = call(&stencil, &u, &mut out)
        .reduction("s", &mut s)
        .reduction("lo", &mut lo)
        .reduction("hi", &mut hi)
        .on(&gpu)
        .run()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BackendUnavailable, "{e}");
    let e = verify_with(&stencil, &[&gpu], &VerifyConfig::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BackendUnavailable, "{e}");
    assert_eq!(s.value(), 0.0);
    assert_eq!(lo.value(), f64::INFINITY);
    assert_eq!(hi.value(), f64::NEG_INFINITY);

    // A time loop cannot return reductions.
    let mut v = u.clone();
    let mut w = u.like();
    let e = Steps::new(&stencil)
        .rotate(&["out", "u"])
        .grid("u", &mut v)
        .grid("out", &mut w)
        .param("w", 1.0)
        .run(2)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadArgument, "{e}");
}

/// A hand-written row function writes each point's value of a reduction into the slice after
/// the outputs (the row contract); the backend cuts it into blocks, with the same bits.
#[test]
fn hand_written_row_functions_give_the_same_bits() {
    fn rows(args: &stencil_core::row::RowArgs<'_, f64>, outputs: &mut [&mut [f64]]) {
        let n = args.len();
        let (x, y) = (args.span(0, [0; 4], 0, n), args.span(1, [0; 4], 0, n));
        for (i, s) in outputs[0].iter_mut().enumerate() {
            *s = x[i] * y[i];
        }
    }
    let kernel = dot2::stencil().kernel().clone();
    let hand = Stencil::with_cpu_rows(kernel, rows).unwrap();
    verify(&hand).unwrap();
    let x = random_grid([3, 1000], 31);
    let y = random_grid([3, 1000], 32);
    let mut expected = None;
    for stencil in [&hand, dot2::stencil()] {
        let mut s = Sum::new();
        Launch::new(stencil)
            .input("x", &x)
            .input("y", &y)
            .reduction("s", &mut s)
            .run()
            .unwrap();
        assert_eq!(
            *expected.get_or_insert(s.value().to_bits()),
            s.value().to_bits()
        );
    }
}

stencil! {
    /// The dot product of two 2-D fields.
    pub fn dot2(x: &Grid2<f64>, y: &Grid2<f64>, s: &mut Sum<f64>) {
        s += x[i, j] * y[i, j];
    }
}
