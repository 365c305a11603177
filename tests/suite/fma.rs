//! Fused multiply-add on request (`#[fma]` in `stencil!` and in text, `KernelBuilder::fma` at
//! run time): the three make the same kernel, the interpreter and an independent loop with
//! `f64::mul_add` agree bit for bit and differ from the unfused kernel, every CPU schedule and
//! the PTX emulator compute the interpreter's bits, and `verify` passes the fused kernels.

use stencil::hash::structural_hash;
use stencil::kernels::{
    five_point_fma, jacobi7, jacobi7_f32_fma, jacobi7_fma, jacobi27_f32_fma, star4_fma,
};
use stencil::prelude::*;
use stencil::{
    Backend, CpuBackend, CpuSchedule, ElemType, EmulatedGpu, KernelBuilder, Launch, Schedule,
    Stencil, interp, verify,
};
use stencil_test_support::Rng;

/// `jacobi7_fma` as text.
const JACOBI7_FMA: &str = "
    #[fma]
    fn jacobi7_fma(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64) {
        out[i, j, k] = c0 * u[i, j, k]
            + c1 * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k]
                  + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1]);
    }";

/// A wave step from text: subtractions of products both ways, and a product of a `let`.
const WAVE_FMA: &str = "
    #[fma]
    fn wave(u: &Grid2<f64>, um: &Grid2<f64>, out: &mut Grid2<f64>, c: f64) {
        let lap = u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1] - 4.0 * u[i, j];
        out[i, j] = 2.0 * u[i, j] - um[i, j] + c * lap;
    }";

/// `jacobi7_fma` through the builder, in the order the language lowers it.
fn jacobi7_built() -> stencil::Kernel {
    let mut b = KernelBuilder::new("jacobi7_fma", 3, ElemType::F64);
    b.fma(true);
    let u = b.input("u");
    let out = b.output("out");
    let (c0, c1) = (b.param("c0"), b.param("c1"));
    let c0 = b.param_ref(c0);
    let centre = b.read(u, &[0, 0, 0]);
    let first = b.mul(c0, centre);
    let c1 = b.param_ref(c1);
    let offsets = [
        [-1, 0, 0],
        [1, 0, 0],
        [0, -1, 0],
        [0, 1, 0],
        [0, 0, -1],
        [0, 0, 1],
    ];
    let mut sum = b.read(u, &offsets[0]);
    for o in &offsets[1..] {
        let r = b.read(u, o);
        sum = b.add(sum, r);
    }
    let second = b.mul(c1, sum);
    let value = b.add(first, second);
    b.store(out, value);
    b.finish().unwrap()
}

#[test]
fn macro_text_and_builder_make_the_same_fused_kernel() {
    let from_macro = jacobi7_fma::stencil().kernel();
    let from_text = stencil::parse::<f64>(JACOBI7_FMA).unwrap();
    assert_eq!(from_text.kernel(), from_macro);
    assert_eq!(&jacobi7_built(), from_macro);
    assert!(from_macro.fma);
    assert!(
        from_macro
            .exprs
            .iter()
            .any(|e| matches!(e, stencil::ir::Expr::Fma { .. })),
        "{from_macro}"
    );
    // The flag and the fused nodes are part of the kernel's identity (tuning-cache keys).
    assert_ne!(
        structural_hash(from_macro),
        structural_hash(jacobi7::stencil().kernel())
    );
    assert!(from_macro.to_string().contains(", fma"));
}

fn random<const D: usize>(shape: [usize; D], halo: usize, rng: &mut Rng) -> Grid<f64, D> {
    let mut g = Grid::<f64, D>::with_halo(shape, halo).unwrap();
    for v in g.as_mut_slice() {
        *v = rng.uniform(-1.0, 1.0);
    }
    g
}

#[test]
fn the_fused_kernel_matches_an_independent_mul_add_loop() {
    let mut rng = Rng::new(0xf3a);
    let shape = [9, 8, 11];
    let u = random(shape, 1, &mut rng);
    let (c0, c1) = (rng.uniform(-1.5, 1.5), rng.uniform(-1.5, 1.5));
    let mut fused = u.like();
    let mut plain = u.like();
    fused.as_mut_slice().fill(-7.25);
    plain.as_mut_slice().fill(-7.25);
    jacobi7_fma(&u, &mut fused, c0, c1).run().unwrap();
    jacobi7(&u, &mut plain, c0, c1).run().unwrap();
    let mut differ = 0;
    for (p, got) in fused.interior_iter() {
        let at = |d: [isize; 3]| {
            u.get([0, 1, 2].map(|a| p[a] as isize + d[a]))
                .expect("in the halo")
        };
        let sum = at([-1, 0, 0])
            + at([1, 0, 0])
            + at([0, -1, 0])
            + at([0, 1, 0])
            + at([0, 0, -1])
            + at([0, 0, 1]);
        let want = c0.mul_add(at([0, 0, 0]), c1 * sum);
        assert_eq!(
            got.to_bits(),
            want.to_bits(),
            "at {p:?}: {got:e} vs {want:e}"
        );
        let unfused = c0 * at([0, 0, 0]) + c1 * sum;
        assert_eq!(plain[p].to_bits(), unfused.to_bits(), "at {p:?}");
        differ += usize::from(got.to_bits() != unfused.to_bits());
    }
    assert!(
        differ > 0,
        "fusing changed no point: the test would not see it"
    );
}

/// Runs `stencil` on `backend` under `schedule` and compares every interior point with the
/// interpreter bit for bit; returns the number of points compared.
fn same_bits_as_interpreter<const D: usize>(
    stencil: &Stencil<f64>,
    backend: &dyn Backend<f64>,
    schedule: Schedule,
    shape: [usize; D],
    seed: u64,
) -> usize {
    let kernel = stencil.kernel();
    let halo = stencil::analysis::radius(kernel).max() as usize;
    let mut rng = Rng::new(seed);
    let inputs: Vec<Grid<f64, D>> = kernel
        .inputs()
        .map(|_| random(shape, halo, &mut rng))
        .collect();
    let params: Vec<f64> = kernel
        .params
        .iter()
        .map(|_| rng.uniform(-1.5, 1.5))
        .collect();
    let mut got: Vec<Grid<f64, D>> = kernel.outputs().map(|_| inputs[0].like()).collect();
    let mut want: Vec<Grid<f64, D>> = kernel.outputs().map(|_| inputs[0].like()).collect();
    for g in got.iter_mut().chain(want.iter_mut()) {
        g.as_mut_slice().fill(-7.25);
    }
    {
        let views: Vec<_> = inputs.iter().map(|g| g.view()).collect();
        let mut outs: Vec<_> = want.iter_mut().map(|g| g.view_mut()).collect();
        interp::run(kernel, &views, &mut outs, &params);
    }
    let mut launch = Launch::new(stencil);
    for (f, g) in kernel.inputs().zip(&inputs) {
        launch = launch.input(&kernel.field(f).name, g);
    }
    for (f, g) in kernel.outputs().zip(got.iter_mut()) {
        launch = launch.output(&kernel.field(f).name, g);
    }
    for (p, &v) in kernel.params.iter().zip(&params) {
        launch = launch.param(&p.name, v);
    }
    let name = backend.name();
    launch
        .on(backend)
        .schedule(schedule)
        .run()
        .unwrap_or_else(|e| panic!("{name} {schedule:?}: {e}"));
    let mut n = 0;
    for (g, w) in got.iter().zip(&want) {
        for ((p, a), (_, b)) in g.interior_iter().zip(w.interior_iter()) {
            assert_eq!(
                a.to_bits(),
                b.to_bits(),
                "`{}` on {name} {schedule:?} at {p:?}: {a:e}, interpreter {b:e}",
                kernel.name
            );
            n += 1;
        }
    }
    n
}

#[test]
fn every_cpu_schedule_and_the_emulator_compute_the_interpreter_bits() {
    let cpu: &dyn Backend<f64> = CpuBackend::global();
    let gpu = EmulatedGpu::new();
    let gpu: &dyn Backend<f64> = &gpu;
    let wave = stencil::parse::<f64>(WAVE_FMA).unwrap();
    let built = Stencil::new(jacobi7_built()).unwrap();
    let mut points = 0;
    for (stencil, seed) in [(jacobi7_fma::stencil(), 1), (&built, 2)] {
        let shape = [5, 6, 7];
        let mut schedules = cpu.sample_schedules(stencil.kernel(), &shape);
        schedules.push(Schedule::Cpu(CpuSchedule {
            force_generic: true,
            ..CpuSchedule::default()
        }));
        for s in schedules {
            points += same_bits_as_interpreter(stencil, cpu, s, shape, seed);
        }
        for s in gpu.sample_schedules(stencil.kernel(), &shape) {
            points += same_bits_as_interpreter(stencil, gpu, s, shape, seed);
        }
    }
    let shape = [13, 17];
    for s in cpu.sample_schedules(wave.kernel(), &shape) {
        points += same_bits_as_interpreter(&wave, cpu, s, shape, 3);
    }
    for s in gpu.sample_schedules(wave.kernel(), &shape) {
        points += same_bits_as_interpreter(&wave, gpu, s, shape, 3);
    }
    assert!(points > 1000, "{points} points compared");
}

#[test]
fn verify_passes_the_fused_kernels() {
    let wave = stencil::parse::<f64>(WAVE_FMA).unwrap();
    let reports = [
        verify(jacobi7_fma::stencil()).unwrap(),
        verify(jacobi7_f32_fma::stencil()).unwrap(),
        verify(jacobi27_f32_fma::stencil()).unwrap(),
        verify(five_point_fma::stencil()).unwrap(),
        verify(star4_fma::stencil()).unwrap(),
        verify(&wave).unwrap(),
    ];
    for r in &reports {
        assert!(r.cases > 0 && r.points > 0, "{r}");
        assert!(r.backends.len() == 2, "CPU and the PTX emulator: {r}");
    }
}
