//! Every schedule the GPU tuner can return for the seeds' kernels (the whole legal space of
//! `runtime::steps_tuning_space`, which holds the single-sweep space and the fused pairs of
//! steps, on a shape large enough that every option is legal) is assembled by `ptxas` and run
//! in the PTX emulator against the reference interpreter; for random stencils, a seeded sample
//! of their space. A schedule nothing ever executed can then never be a tuned winner.
//!
//! A quick run (`cargo test`) takes a seeded sample of each seed kernel's space (sweeps and
//! fused pairs both) and fewer random stencils; `STENCIL_FULL_TESTS=1` takes every schedule
//! (with the suite's other full-only parts, about 4 minutes with `ptxas` on two cores).
//!
//! Spaces are taken for the described sm_80 device (the static shared-memory cap of 48 KiB
//! makes the sm_90 space the same); PTX is generated for the small shapes the emulator runs,
//! identical texts are assembled once, for sm_80.

use crate::common;
use crate::quick_or_full;

use std::collections::BTreeSet;

use stencil::{
    ElemType, Element, Job, Kernel, Schedule, Stencil, VerifyConfig, verify_steps_with, verify_with,
};
use stencil_core::schedule::GpuSchedule;
use stencil_core::{Backend, Geometry, Role};
use stencil_cuda::caps::DeviceCaps;
use stencil_cuda::{CodegenOptions, EmulatedGpu, FusedPair, generate, generate_fused};
use stencil_test_support::Rng;

/// A shape on which no option of the space is illegal for its size (streaming chunks must be
/// shorter than the outer extent).
fn tuning_shape(kernel: &Kernel) -> Vec<usize> {
    match kernel.n_dims {
        1 => vec![1 << 24],
        2 => vec![4096, 4096],
        _ => vec![256, 256, 256],
    }
}

/// The small shape each schedule runs on in the emulator: odd, smaller than the larger blocks.
fn emulated_shape(kernel: &Kernel) -> Vec<usize> {
    match kernel.n_dims {
        1 => vec![300],
        2 => vec![13, 40],
        _ => vec![9, 7, 20],
    }
}

/// Every schedule the tuner can return for `kernel`: each legal point of its time-loop space
/// (single sweeps are its `time_steps == 1` half). Fused pairs of steps only where the kernel
/// has a ping-pong pair to fuse (elsewhere a time loop runs them as single steps, which the
/// sweeps cover).
fn tuner_schedules(kernel: &Kernel) -> Vec<GpuSchedule> {
    let fusable = fused_pair(kernel).is_some();
    let space = stencil_cuda::runtime::steps_tuning_space(
        kernel,
        &tuning_shape(kernel),
        &DeviceCaps::sm_80(),
    );
    let points = space.space();
    (0..points.n_points())
        .filter_map(|i| space.schedule(&points.point_at(i)))
        .map(|s| match s {
            Schedule::Gpu(g) => g,
            other => panic!("a GPU space gave {other:?}"),
        })
        .filter(|s| s.time_steps == 1 || fusable)
        .collect()
}

/// The ping-pong pair a time loop of `kernel` fuses: its one output and its first input.
fn fused_pair(kernel: &Kernel) -> Option<FusedPair> {
    let outputs: Vec<usize> = (0..kernel.fields.len())
        .filter(|&f| kernel.fields[f].role == Role::Output)
        .collect();
    let input = (0..kernel.fields.len()).find(|&f| kernel.fields[f].role == Role::Input)?;
    match outputs.as_slice() {
        [output] => Some(FusedPair {
            output: *output,
            input,
        }),
        _ => None,
    }
}

/// A seeded sample of `count` schedules (all of them when there are fewer).
fn sample(mut schedules: Vec<GpuSchedule>, count: usize, seed: u64) -> Vec<GpuSchedule> {
    Rng::new(seed).shuffle(&mut schedules);
    schedules.truncate(count);
    schedules
}

/// What a run checks of a seed kernel's space: every schedule on a full run; on a quick run a
/// seeded sample (seed: the kernel's index among the seeds) of 16 single sweeps and 8 fused
/// pairs, so both halves of the space are exercised.
fn seed_sample(schedules: Vec<GpuSchedule>, index: u64) -> Vec<GpuSchedule> {
    let (fused, sweeps): (Vec<GpuSchedule>, Vec<GpuSchedule>) =
        schedules.into_iter().partition(|s| s.time_steps == 2);
    let (n_sweeps, n_fused) = quick_or_full(
        (16, 8),
        (usize::MAX, usize::MAX),
        "a seed kernel's whole tuning space",
    );
    let mut picked = sample(sweeps, n_sweeps, index);
    picked.extend(sample(fused, n_fused, index));
    picked
}

/// How many random stencils, and schedules of each one's space, a run checks: 12 and 25 on a
/// full run, 4 and 8 on a quick one.
fn random_sample() -> (u64, usize) {
    quick_or_full((4, 8), (12, 25), "8 of 12 random stencils' spaces")
}

/// The distinct PTX modules of `schedules`, generated for the emulated shape and sm_80.
fn modules(kernel: &Kernel, schedules: &[GpuSchedule]) -> BTreeSet<String> {
    let shape = emulated_shape(kernel);
    let halo = stencil_core::analysis::radius(kernel).max().max(1) as usize;
    let geoms: Vec<Geometry> = kernel
        .fields
        .iter()
        .map(|_| Geometry::new(&shape, halo, kernel.elem().size_bytes()).expect("geometry"))
        .collect();
    schedules
        .iter()
        .map(|s| {
            let g = if s.time_steps == 2 {
                let pair = fused_pair(kernel).expect("fused schedules need a ping-pong pair");
                generate_fused(kernel, s, &geoms, 80, pair)
            } else {
                generate(kernel, s, &geoms, 80, CodegenOptions::default())
            };
            g.unwrap_or_else(|e| panic!("{} {s:?}: {e}", kernel.name))
                .ptx()
        })
        .collect()
}

/// Assembles every module with `ptxas` (in batches, at `-O0`: this checks what `ptxas`
/// accepts; spills are checked on the sampled schedules by the `ptxas` module) on all cores;
/// returns how many.
fn assemble_all(label: &str, modules: &[String]) -> usize {
    let Some(ptxas) = common::ptxas::ptxas() else {
        return 0;
    };
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(8);
    let tagged: Vec<(String, String)> = modules
        .iter()
        .enumerate()
        .map(|(i, ptx)| (format!("{label}_{i}"), ptx.clone()))
        .collect();
    // Contiguous shares, one per worker, each assembled in batches.
    let share = tagged.len().div_ceil(workers).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = tagged
            .chunks(share)
            .map(|part| {
                let ptxas = &ptxas;
                scope.spawn(move || common::ptxas::assemble_batched(ptxas, part, 80))
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("worker")).sum()
    })
}

fn kernels_with_modules(kernels: &[(Kernel, Vec<GpuSchedule>)]) -> Vec<String> {
    let mut all = BTreeSet::new();
    for (k, schedules) in kernels {
        all.extend(modules(k, schedules));
    }
    all.into_iter().collect()
}

#[test]
fn every_schedule_of_the_seeds_assembles() {
    let (f64s, f32s) = common::seed_kernels();
    let mut space = 0;
    let kernels: Vec<(Kernel, Vec<GpuSchedule>)> = f64s
        .into_iter()
        .chain(f32s)
        .enumerate()
        .map(|(i, k)| {
            let s = tuner_schedules(&k);
            space += s.len();
            (k, seed_sample(s, i as u64))
        })
        .collect();
    assert!(space > 5000, "only {space} schedules in the seeds' spaces");
    let schedules: usize = kernels.iter().map(|(_, s)| s.len()).sum();
    let modules = kernels_with_modules(&kernels);
    let assembled = assemble_all("space_seed", &modules);
    println!(
        "{schedules} of {space} schedules of {} seed kernels: {} distinct modules, {assembled} assembled",
        kernels.len(),
        modules.len()
    );
}

#[test]
fn a_sample_of_every_random_stencils_space_assembles() {
    let (count, per_kernel) = random_sample();
    let kernels: Vec<(Kernel, Vec<GpuSchedule>)> = common::random_kernels(count)
        .into_iter()
        .enumerate()
        .map(|(i, k)| {
            let s = sample(tuner_schedules(&k), per_kernel, i as u64);
            (k, s)
        })
        .collect();
    let modules = kernels_with_modules(&kernels);
    // Distinct schedules mostly give distinct modules (a few coincide).
    let least = count as usize * per_kernel / 3;
    assert!(modules.len() > least, "{} modules", modules.len());
    assemble_all("space_random", &modules);
}

/// The emulator, offering exactly the given schedules to `verify`.
struct Space {
    gpu: EmulatedGpu,
    sweeps: Vec<Schedule>,
    fused: Vec<Schedule>,
}

impl<T: Element> Backend<T> for Space {
    fn name(&self) -> String {
        "ptx-emulator (the tuner's space)".into()
    }
    fn default_schedule(&self, kernel: &Kernel, shape: &[usize]) -> Schedule {
        <EmulatedGpu as Backend<T>>::default_schedule(&self.gpu, kernel, shape)
    }
    fn sample_schedules(&self, _: &Kernel, _: &[usize]) -> Vec<Schedule> {
        self.sweeps.clone()
    }
    fn sample_steps_schedules(&self, _: &Kernel, _: &[usize]) -> Vec<Schedule> {
        self.fused.clone()
    }
    fn run(&self, job: &mut Job<'_, T>, schedule: &Schedule) -> stencil::Result<()> {
        <EmulatedGpu as Backend<T>>::run(&self.gpu, job, schedule)
    }
    fn run_steps(
        &self,
        job: &mut stencil_core::TimeLoop<'_, T>,
        schedule: &Schedule,
        steps: usize,
    ) -> stencil::Result<()> {
        <EmulatedGpu as Backend<T>>::run_steps(&self.gpu, job, schedule, steps)
    }
}

/// Runs `schedules` of `kernel` in the emulator through `verify` (single sweeps) and
/// `verify_steps` (fused pairs, rotating the output into the first input); returns the number
/// of cases compared.
fn emulate<T: Element>(kernel: &Kernel, schedules: &[GpuSchedule]) -> usize {
    let stencil = Stencil::<T>::new(kernel.clone()).unwrap();
    let (fused, sweeps): (Vec<GpuSchedule>, Vec<GpuSchedule>) =
        schedules.iter().partition(|s| s.time_steps == 2);
    let backend = Space {
        gpu: EmulatedGpu::new(),
        sweeps: sweeps.into_iter().map(Schedule::Gpu).collect(),
        fused: fused.into_iter().map(Schedule::Gpu).collect(),
    };
    let config = VerifyConfig {
        shapes: Some(vec![emulated_shape(kernel)]),
        ..VerifyConfig::default()
    };
    let b: &dyn Backend<T> = &backend;
    let mut cases = verify_with(&stencil, &[b], &config)
        .unwrap_or_else(|e| panic!("{}: {e}", kernel.name))
        .cases;
    // The transcendental test kernels iterate `exp` of `exp`: their time loops diverge, and
    // two correct implementations of `exp` (the emulator's PTX approximations and libm) part
    // within a few steps. Their fused modules are assembled above and their sweeps verified.
    let iterable = !kernel.name.starts_with("transcendental");
    if let (Some(pair), false, true) = (fused_pair(kernel), backend.fused.is_empty(), iterable) {
        let chain = [
            kernel.fields[pair.output].name.as_str(),
            kernel.fields[pair.input].name.as_str(),
        ];
        cases += verify_steps_with(&stencil, &[&chain], &[b], &config)
            .unwrap_or_else(|e| panic!("{} (fused steps): {e}", kernel.name))
            .cases;
    }
    cases
}

fn emulate_kernel(kernel: &Kernel, schedules: &[GpuSchedule]) -> usize {
    match kernel.elem() {
        ElemType::F64 => emulate::<f64>(kernel, schedules),
        ElemType::F32 => emulate::<f32>(kernel, schedules),
    }
}

/// One test per seed kernel, so the harness spreads them over the cores: the whole space on a
/// full run, `seed_sample`'s sample on a quick one.
macro_rules! emulate_whole_space {
    ($($test:ident: $index:expr),* $(,)?) => {$(
        #[test]
        fn $test() {
            let (f64s, f32s) = common::seed_kernels();
            let kernel = f64s.into_iter().chain(f32s).nth($index).expect("a seed kernel");
            let schedules = seed_sample(tuner_schedules(&kernel), $index);
            let cases = emulate_kernel(&kernel, &schedules);
            let sweeps = schedules.iter().filter(|s| s.time_steps == 1).count();
            assert!(cases >= sweeps, "{}: {cases} cases", kernel.name);
        }
    )*};
}

emulate_whole_space! {
    emulator_runs_every_schedule_of_laplacian: 0,
    emulator_runs_every_schedule_of_divergence: 1,
    emulator_runs_every_schedule_of_gradient: 2,
    emulator_runs_every_schedule_of_jacobi7: 3,
    emulator_runs_every_schedule_of_jacobi27: 4,
    emulator_runs_every_schedule_of_five_point: 5,
    emulator_runs_every_schedule_of_star4: 6,
    emulator_runs_every_schedule_of_dia_spmv: 7,
    emulator_runs_every_schedule_of_smooth1d: 8,
    emulator_runs_every_schedule_of_native_math: 9,
    emulator_runs_every_schedule_of_transcendental: 10,
    emulator_runs_every_schedule_of_jacobi7_f32: 11,
    emulator_runs_every_schedule_of_upwind: 12,
    emulator_runs_every_schedule_of_transcendental_f32: 13,
}

#[test]
fn the_seed_list_is_the_one_the_space_tests_name() {
    let (f64s, f32s) = common::seed_kernels();
    let names: Vec<String> = f64s.iter().chain(&f32s).map(|k| k.name.clone()).collect();
    assert_eq!(
        names,
        [
            "laplacian",
            "divergence",
            "gradient",
            "jacobi7",
            "jacobi27",
            "five_point",
            "star4",
            "dia_spmv",
            "smooth1d",
            "native_math",
            "transcendental",
            "jacobi7_f32",
            "upwind",
            "transcendental_f32"
        ]
    );
}

#[test]
fn emulator_runs_a_sample_of_every_random_stencils_space() {
    let (count, per_kernel) = random_sample();
    for (i, kernel) in common::random_kernels(count).iter().enumerate() {
        let schedules = sample(tuner_schedules(kernel), per_kernel, i as u64);
        let cases = emulate_kernel(kernel, &schedules);
        let sweeps = schedules.iter().filter(|s| s.time_steps == 1).count();
        assert!(cases >= sweeps, "{}: {cases} cases", kernel.name);
    }
}
