//! A tuned winner on a backend other than the CPU is checked against the CPU backend's result on
//! the call's own data before it is cached: a wrong variant that wins the timing is rejected,
//! reported in `TuneReport::rejected`, never cached, and the call runs the default schedule
//! (correctly); when the default is wrong too the call fails with `VerificationFailed`.
//!
//! The backend under test is the PTX emulator behind a two-point tuning space: the default
//! schedule and a thread-per-point schedule generated with a planted off-by-one, which runs
//! without the delay the correct schedules get, so it wins every timing. In `f32` on a smooth
//! field the wrong offset moves every point by less than the whole-output tolerance: the
//! per-point bound rejects it.

use std::time::{Duration, Instant};

use stencil::prelude::*;
use stencil::{
    Backend, Element, EmulatedGpu, ErrorKind, GpuSchedule, Job, Kernel, Launch, Schedule,
    TunePolicy, TuningCache, TuningSource, kernels,
};
use stencil_core::schedule::{DimValue, SearchSpace, TuningSpace};
use stencil_cuda::CodegenOptions;

/// Makes a correct schedule's run at least 4 times as long as the emulation itself took (and
/// at least 30 ms), so the planted variant wins every timing by far on a loaded machine too.
fn slow_down(started: Instant) {
    let took = started.elapsed();
    std::thread::sleep((3 * took).max(Duration::from_millis(30)));
}

/// The emulator, with one schedule (`wrong`) run by a generator with a planted bug.
struct OneWrongVariant {
    correct: EmulatedGpu,
    planted: EmulatedGpu,
    wrong: GpuSchedule,
    /// Whether the default schedule is wrong as well.
    default_wrong: bool,
}

impl OneWrongVariant {
    fn new(default_wrong: bool) -> Self {
        OneWrongVariant {
            correct: EmulatedGpu::new(),
            planted: EmulatedGpu::with_options(CodegenOptions {
                planted_off_by_one: true,
            }),
            wrong: GpuSchedule {
                block: [32, 4, 1],
                ..GpuSchedule::default()
            },
            default_wrong,
        }
    }

    fn default_gpu(&self) -> GpuSchedule {
        GpuSchedule {
            block: [64, 2, 1],
            ..GpuSchedule::default()
        }
    }
}

impl<T: Element> Backend<T> for OneWrongVariant {
    fn name(&self) -> String {
        "emulated gpu with one wrong variant".into()
    }
    fn default_schedule(&self, _: &Kernel, _: &[usize]) -> Schedule {
        Schedule::Gpu(self.default_gpu())
    }
    fn sample_schedules(&self, _: &Kernel, _: &[usize]) -> Vec<Schedule> {
        vec![Schedule::Gpu(self.default_gpu()), Schedule::Gpu(self.wrong)]
    }
    fn run(&self, job: &mut Job<'_, T>, schedule: &Schedule) -> stencil::Result<()> {
        let fast = *schedule == Schedule::Gpu(self.wrong);
        let started = Instant::now();
        let result = if fast || self.default_wrong {
            self.planted.run(job, schedule)
        } else {
            self.correct.run(job, schedule)
        };
        if !fast {
            slow_down(started);
        }
        result
    }
    fn tuning_device(&self) -> Option<(String, usize)> {
        Some(("emulated test device".into(), 1))
    }
    fn tuning_space(&self, _: &Kernel, _: &[usize]) -> Option<TuningSpace> {
        let (default, wrong) = (self.default_gpu(), self.wrong);
        let space = SearchSpace::new().with(
            "variant",
            vec![
                DimValue::Name("default".into()),
                DimValue::Name("planted".into()),
            ],
        );
        let mut tuning = TuningSpace::new(space, move |p| {
            Some(Schedule::Gpu(if p[0] == 0 { default } else { wrong }))
        });
        tuning.default_point = Some(vec![0]);
        Some(tuning)
    }
}

fn grids() -> (Grid2<f64>, Grid2<f64>) {
    let mut u = Grid2::<f64>::new([24, 40]).unwrap();
    u.fill_with(|[i, j]| ((i * 7 + j * 3) % 11) as f64 - 4.5);
    (u.clone(), u)
}

fn on_cpu(u: &Grid2<f64>) -> Grid2<f64> {
    let mut out = u.like();
    Launch::new(kernels::five_point::stencil())
        .input("u", u)
        .output("out", &mut out)
        .param("c0", 0.5)
        .param("c1", 0.125)
        .tune(TunePolicy::Off)
        .run()
        .unwrap();
    out
}

fn temp_cache(name: &str) -> TuningCache {
    let path = std::env::temp_dir().join(format!(
        "stencil-winner-check-{name}-{}.json",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    TuningCache::at(path)
}

#[test]
fn a_wrong_winner_is_rejected_reported_and_not_cached() {
    let backend = OneWrongVariant::new(false);
    let (u, _) = grids();
    let mut out = u.like();
    out.fill(f64::NAN);
    let cache = temp_cache("rejected");
    let report = Launch::new(kernels::five_point::stencil())
        .input("u", &u)
        .output("out", &mut out)
        .param("c0", 0.5)
        .param("c1", 0.125)
        .on(&backend)
        .tune(TunePolicy::Thorough)
        .tuning_cache(cache.clone())
        .run_with_report()
        .unwrap();
    assert_eq!(report.source, TuningSource::Tuned, "{report}");
    let rejected = report
        .rejected
        .as_deref()
        .expect("the planted winner is rejected");
    assert!(rejected.contains("planted"), "{rejected}");
    assert!(rejected.contains("output `out` at"), "{rejected}");
    assert_eq!(report.schedule, Schedule::Gpu(backend.default_gpu()));
    assert!(
        report.to_string().contains("rejected the tuned winner"),
        "{report}"
    );
    // The call's result is the default schedule's, which is right.
    let want = on_cpu(&u);
    for (p, w) in want.interior_iter() {
        assert_eq!(out[p], w, "{p:?}");
    }
    assert!(cache.entries().is_empty(), "a rejected winner was cached");
    let _ = std::fs::remove_file(cache.path());
}

#[test]
fn a_right_winner_is_kept_and_cached() {
    // Control: the same backend without the bug keeps its winner (the faster, undelayed
    // schedule) and caches it, so the rejection above is the check's doing.
    let mut backend = OneWrongVariant::new(false);
    backend.planted = EmulatedGpu::new();
    let (u, _) = grids();
    let mut out = u.like();
    let cache = temp_cache("kept");
    let report = Launch::new(kernels::five_point::stencil())
        .input("u", &u)
        .output("out", &mut out)
        .param("c0", 0.5)
        .param("c1", 0.125)
        .on(&backend)
        .tune(TunePolicy::Thorough)
        .tuning_cache(cache.clone())
        .run_with_report()
        .unwrap();
    assert_eq!(report.rejected, None, "{report}");
    assert_eq!(report.schedule, Schedule::Gpu(backend.wrong), "{report}");
    assert_eq!(cache.entries().len(), 1);
    let _ = std::fs::remove_file(cache.path());
}

#[test]
fn a_wrong_default_behind_a_wrong_winner_fails_the_call() {
    let backend = OneWrongVariant::new(true);
    let (u, _) = grids();
    let mut out = u.like();
    let err = Launch::new(kernels::five_point::stencil())
        .input("u", &u)
        .output("out", &mut out)
        .param("c0", 0.5)
        .param("c1", 0.125)
        .on(&backend)
        .tune(TunePolicy::Thorough)
        .without_tuning_cache()
        .run()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::VerificationFailed, "{err}");
    assert!(err.to_string().contains("both disagree"), "{err}");
}

stencil! {
    /// `kernels::five_point` in `f32`.
    pub fn five_point32(u: &Grid2<f32>, out: &mut Grid2<f32>, c0: f32, c1: f32) {
        out[i, j] = c0 * u[i, j] + c1 * (u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1]);
    }
}

/// A smooth `f32` field of interior `shape`: `1 + 1e-4 (i + j)`, halo included
/// (user-managed). Each test tunes its own shape: the process remembers tuned schedules.
fn smooth_f32(shape: [usize; 2]) -> Grid2<f32> {
    let mut u = Grid2::<f32>::new(shape).unwrap();
    u.set_boundary(stencil::Boundary::UserManaged);
    let h = u.halo() as isize;
    for i in -h..shape[0] as isize + h {
        for j in -h..shape[1] as isize + h {
            u.set([i, j], 1.0 + 1e-4 * (i + j) as f32).unwrap();
        }
    }
    u
}

/// `five_point32` of `u` (c0 = 0.5, c1 = 0.125) on `backend` under `schedule`, or tuned
/// thoroughly (no cache) without one: the output and the report.
fn five_point32_on(
    backend: &dyn Backend<f32>,
    u: &Grid2<f32>,
    schedule: Option<Schedule>,
) -> (Grid2<f32>, stencil::TuneReport) {
    let mut out = u.like();
    let mut launch = five_point32(u, &mut out, 0.5, 0.125).on(backend);
    launch = match schedule {
        Some(s) => launch.schedule(s),
        None => launch.tune(TunePolicy::Thorough).without_tuning_cache(),
    };
    let report = launch.run_with_report().unwrap();
    (out, report)
}

#[test]
fn a_wrong_offset_on_a_smooth_f32_field_is_rejected_by_the_per_point_bound() {
    let backend = OneWrongVariant::new(false);
    let u = smooth_f32([24, 40]);
    // The planted variant reads `u[i, j + 1]` for `u[i, j]` (and likewise for the reads along
    // `i`): every point moves by about (c0 + 2 c1) 1e-4 = 7.5e-5, below the whole-output
    // tolerance (4096 f32 epsilons of the largest value, about 1: 4.9e-4), far above the
    // per-point bound (16 epsilons of a magnitude of about 1: 1.9e-6).
    let (right, _) = five_point32_on(&backend.correct, &u, Some(Schedule::Gpu(backend.wrong)));
    let (wrong, _) = five_point32_on(&backend.planted, &u, Some(Schedule::Gpu(backend.wrong)));
    let scale = right
        .interior_iter()
        .map(|(_, v)| v.abs())
        .fold(1.0f32, f32::max);
    let largest_move = right
        .interior_iter()
        .map(|(p, v)| (wrong[p] - v).abs())
        .fold(0.0f32, f32::max);
    let tolerance = stencil::tuning::WINNER_TOLERANCE_EPS as f32 * f32::EPSILON * scale;
    assert!(
        largest_move > 1e-5 && largest_move < tolerance,
        "the planted offset moves points by {largest_move:e}; the whole-output tolerance is \
         {tolerance:e}"
    );
    let (out, report) = five_point32_on(&backend, &u, None);
    assert_eq!(report.source, TuningSource::Tuned, "{report}");
    let rejected = report
        .rejected
        .as_deref()
        .expect("the planted winner is rejected");
    assert!(rejected.contains("planted"), "{rejected}");
    assert!(rejected.contains("per-point bound"), "{rejected}");
    assert_eq!(report.schedule, Schedule::Gpu(backend.default_gpu()));
    // The call's result is the default schedule's, which is right.
    let (want, _) = five_point32_on(
        &backend.correct,
        &u,
        Some(Schedule::Gpu(backend.default_gpu())),
    );
    for (p, w) in want.interior_iter() {
        assert_eq!(out[p].to_bits(), w.to_bits(), "{p:?}");
    }
}

#[test]
fn a_right_f32_winner_is_kept_under_the_per_point_bound() {
    // Control: the GPU's own order and contractions in f32 stay within the per-point bound,
    // on the smooth field and on random values.
    let mut backend = OneWrongVariant::new(false);
    backend.planted = EmulatedGpu::new();
    let mut rng = stencil_test_support::Rng::new(7);
    let mut random = Grid2::<f32>::new([24, 44]).unwrap();
    random.fill_with(|_| rng.uniform(-1.0, 1.0) as f32);
    random.update_halo();
    for u in [smooth_f32([26, 40]), random] {
        let (_, report) = five_point32_on(&backend, &u, None);
        assert_eq!(report.rejected, None, "{report}");
        assert_eq!(report.schedule, Schedule::Gpu(backend.wrong), "{report}");
    }
}

stencil! {
    /// A dot product of 2-D fields: a kernel whose only result is a reduction.
    pub fn dot2(x: &Grid2<f64>, y: &Grid2<f64>, s: &mut Sum<f64>) {
        s += x[i, j] * y[i, j];
    }
}

/// The emulator behind a two-point space of legal reduction schedules; the second (fast)
/// one reports its reduction off by one.
struct WrongReduction {
    gpu: EmulatedGpu,
    schedules: [Schedule; 2],
}

impl Backend<f64> for WrongReduction {
    fn name(&self) -> String {
        "emulated gpu with one wrong reduction".into()
    }
    fn default_schedule(&self, _: &Kernel, _: &[usize]) -> Schedule {
        self.schedules[0]
    }
    fn sample_schedules(&self, _: &Kernel, _: &[usize]) -> Vec<Schedule> {
        self.schedules.to_vec()
    }
    fn capabilities(&self) -> stencil::Capabilities {
        stencil::Capabilities {
            reductions: true,
            ..stencil::Capabilities::default()
        }
    }
    fn run(&self, job: &mut Job<'_, f64>, schedule: &Schedule) -> stencil::Result<()> {
        let wrong = *schedule == self.schedules[1];
        let started = Instant::now();
        self.gpu.run(job, schedule)?;
        if !wrong {
            slow_down(started);
        }
        if wrong {
            let value = job.reductions()[0].expect("the emulator sets the reduction");
            job.set_reduction(0, value + 1.0);
        }
        Ok(())
    }
    fn tuning_device(&self) -> Option<(String, usize)> {
        Some(("emulated test device".into(), 1))
    }
    fn tuning_space(&self, _: &Kernel, _: &[usize]) -> Option<TuningSpace> {
        let space = SearchSpace::new().with(
            "variant",
            vec![
                DimValue::Name("default".into()),
                DimValue::Name("planted".into()),
            ],
        );
        let schedules = self.schedules;
        let mut tuning = TuningSpace::new(space, move |p| Some(schedules[p[0]]));
        tuning.default_point = Some(vec![0]);
        Some(tuning)
    }
}

#[test]
fn a_winner_with_a_wrong_reduction_is_rejected() {
    let gpu = EmulatedGpu::new();
    let (x, y) = grids();
    let legal =
        <EmulatedGpu as Backend<f64>>::sample_schedules(&gpu, dot2::stencil().kernel(), &x.shape());
    let backend = WrongReduction {
        gpu,
        schedules: [legal[0], legal[1]],
    };
    let mut s = Sum::new();
    let report = dot2(&x, &y, &mut s)
        .on(&backend)
        .tune(TunePolicy::Thorough)
        .without_tuning_cache()
        .run_with_report()
        .unwrap();
    let rejected = report
        .rejected
        .as_deref()
        .expect("the planted winner is rejected");
    assert!(rejected.contains("reduction `s`"), "{rejected}");
    let mut want = Sum::new();
    dot2(&x, &y, &mut want).tune(TunePolicy::Off).run().unwrap();
    let tolerance = 1e-12 * want.value().abs().max(1.0);
    assert!(
        (s.value() - want.value()).abs() < tolerance,
        "{} vs {}",
        s.value(),
        want.value()
    );
}
