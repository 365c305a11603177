//! `verify` can fail: wrong implementations planted behind the backend interface are reported
//! (a wrong value, one unit in the last place where the backend promises the interpreter's
//! bits, a small term dropped where it does not, an unwritten point, a write outside the
//! interior, a modified input, a fault that shows only when work runs on several workers).

use stencil::kernels::jacobi7;
use stencil::prelude::*;
use stencil::{
    Backend, CpuBackend, Element, ErrorKind, FieldViewMut, Job, Kernel, Schedule, TimeLoop,
    VerifyConfig, verify_steps_with, verify_with,
};

stencil! {
    /// NaN wherever `u` is negative (the random inputs are, half the time).
    fn logarithm(u: &Grid1<f32>, l: &mut Grid1<f32>) {
        l[i] = ln(u[i]);
    }

    fn logarithm64(u: &Grid1<f64>, l: &mut Grid1<f64>) {
        l[i] = ln(u[i]);
    }

    /// Values near 10 and a small term: the whole-output tolerance (4096 f32 epsilons of 10,
    /// about 4.9e-3) would not notice the term (at most 2e-3) missing.
    fn small_term(u: &Grid2<f32>, v: &Grid2<f32>, out: &mut Grid2<f32>) {
        out[i, j] = 10.0 * u[i, j] + 2.0e-3 * v[i, j];
    }

    fn without_small_term(u: &Grid2<f32>, v: &Grid2<f32>, out: &mut Grid2<f32>) {
        out[i, j] = 10.0 * u[i, j] + 0.0 * v[i, j];
    }

    fn off_by_one(u: &Grid3<f64>, out: &mut Grid3<f64>, a: f64, b: f64) {
        out[i, j, k] = a * u[i, j, k]
            + b * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k]
                 + u[i, j+1, k] + u[i, j, k-1] + u[i, j+1, k+1]);
    }
}

#[derive(Clone, Copy)]
enum Defect {
    /// Runs a kernel that reads one point too far.
    OffByOne,
    /// Leaves the last interior point of the output unwritten.
    SkipsAPoint,
    /// Writes into the output's halo.
    WritesTheHalo,
    /// Moves one interior value of the output by one unit in the last place (far inside the
    /// tolerance), while saying, as the CPU backend does, that it computes the interpreter's
    /// bits.
    OneUlpOff,
    /// The same, without saying so.
    OneUlpOffUnclaimed,
}

/// The real CPU backend with one defect planted.
struct Planted(Defect);

fn last_interior(out: &FieldViewMut<'_, f64>) -> usize {
    let n = out.geom.interior();
    out.geom
        .index(&n.iter().map(|&x| x as isize - 1).collect::<Vec<_>>())
}

impl Backend<f64> for Planted {
    fn name(&self) -> String {
        "planted".into()
    }
    fn default_schedule(&self, kernel: &Kernel, shape: &[usize]) -> Schedule {
        Backend::<f64>::default_schedule(CpuBackend::global(), kernel, shape)
    }
    fn sample_schedules(&self, kernel: &Kernel, shape: &[usize]) -> Vec<Schedule> {
        Backend::<f64>::sample_schedules(CpuBackend::global(), kernel, shape)
    }
    fn matches_interpreter_bits(&self, kernel: &Kernel, schedule: &Schedule) -> bool {
        match self.0 {
            Defect::OneUlpOffUnclaimed => false,
            _ => Backend::<f64>::matches_interpreter_bits(CpuBackend::global(), kernel, schedule),
        }
    }
    fn run(&self, job: &mut Job<'_, f64>, schedule: &Schedule) -> stencil::Result<()> {
        match self.0 {
            Defect::OneUlpOff | Defect::OneUlpOffUnclaimed => {
                CpuBackend::global().run(job, schedule)?;
                let last = last_interior(&job.outputs()[0]);
                let v = &mut job.outputs_mut()[0].data[last];
                *v = f64::from_bits(v.to_bits() ^ 1);
                Ok(())
            }
            Defect::OffByOne => {
                let (inputs, outputs, params) = job.parts_mut();
                let wrong = off_by_one::stencil();
                let mut inner = Job::new(
                    wrong,
                    inputs.to_vec(),
                    outputs
                        .iter_mut()
                        .map(|o| FieldViewMut {
                            geom: o.geom,
                            data: &mut *o.data,
                        })
                        .collect(),
                    params.to_vec(),
                )?;
                CpuBackend::global().run(&mut inner, schedule)
            }
            Defect::SkipsAPoint => {
                let last = last_interior(&job.outputs()[0]);
                let before = job.outputs()[0].data[last];
                CpuBackend::global().run(job, schedule)?;
                job.outputs_mut()[0].data[last] = before;
                Ok(())
            }
            Defect::WritesTheHalo => {
                CpuBackend::global().run(job, schedule)?;
                let out = &mut job.outputs_mut()[0];
                let geom = out.geom;
                let corner = geom.index(&[-1, -1, -1]);
                out.data[corner] = 0.0;
                Ok(())
            }
        }
    }
}

fn planted_failure(defect: Defect) -> stencil::Error {
    let backend = Planted(defect);
    verify_with(jacobi7::stencil(), &[&backend], &VerifyConfig::default()).unwrap_err()
}

#[test]
fn the_honest_backend_passes() {
    let cpu: &dyn Backend<f64> = CpuBackend::global();
    verify_with(jacobi7::stencil(), &[cpu], &VerifyConfig::default()).unwrap();
}

#[test]
fn a_wrong_offset_is_reported() {
    let e = planted_failure(Defect::OffByOne);
    assert_eq!(e.kind(), ErrorKind::VerificationFailed, "{e}");
    assert!(e.to_string().contains("expected"), "{e}");
}

#[test]
fn an_unwritten_point_is_reported() {
    let e = planted_failure(Defect::SkipsAPoint);
    assert_eq!(e.kind(), ErrorKind::VerificationFailed, "{e}");
    assert!(e.to_string().contains("not written"), "{e}");
}

#[test]
fn a_write_outside_the_interior_is_reported() {
    let e = planted_failure(Defect::WritesTheHalo);
    assert_eq!(e.kind(), ErrorKind::VerificationFailed, "{e}");
    assert!(e.to_string().contains("outside the interior"), "{e}");
}

#[test]
fn one_unit_in_the_last_place_is_reported_where_the_backend_promises_the_interpreters_bits() {
    let e = planted_failure(Defect::OneUlpOff);
    assert_eq!(e.kind(), ErrorKind::VerificationFailed, "{e}");
    assert!(e.to_string().contains("exactly"), "{e}");
    // Within the tolerance, which is all a backend that reassociates is held to.
    let backend = Planted(Defect::OneUlpOffUnclaimed);
    verify_with(jacobi7::stencil(), &[&backend], &VerifyConfig::default()).unwrap();
}

/// The CPU backend in f32, running a kernel without the small term of `small_term`, and (as a
/// backend that reassociates would) not promising the interpreter's bits.
struct DropsASmallTerm;

impl Backend<f32> for DropsASmallTerm {
    fn name(&self) -> String {
        "drops-a-small-term".into()
    }
    fn default_schedule(&self, k: &Kernel, s: &[usize]) -> Schedule {
        Backend::<f32>::default_schedule(CpuBackend::global(), k, s)
    }
    fn sample_schedules(&self, k: &Kernel, s: &[usize]) -> Vec<Schedule> {
        vec![Backend::<f32>::default_schedule(self, k, s)]
    }
    fn run(&self, job: &mut Job<'_, f32>, schedule: &Schedule) -> stencil::Result<()> {
        let (inputs, outputs, params) = job.parts_mut();
        let outputs = outputs
            .iter_mut()
            .map(|o| FieldViewMut {
                geom: o.geom,
                data: &mut *o.data,
            })
            .collect();
        let mut inner = Job::new(
            without_small_term::stencil(),
            inputs.to_vec(),
            outputs,
            params.to_vec(),
        )?;
        CpuBackend::global().run(&mut inner, schedule)
    }
}

#[test]
fn a_dropped_small_term_is_reported_by_the_per_point_bound() {
    let e = verify_with(
        small_term::stencil(),
        &[&DropsASmallTerm],
        &VerifyConfig::default(),
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::VerificationFailed, "{e}");
    assert!(e.to_string().contains("per-point bound"), "{e}");
}

#[test]
fn a_kernel_that_computes_nan_on_purpose_passes_on_every_backend() {
    // The emulator writes the canonical NaN for `ln` of a negative input; it must not be
    // mistaken for the poison that marks unwritten points. (With NaN poisons built by casts,
    // an optimised build folded both poisons into that NaN: "output `l` at [0] was not
    // written" on the emulator, shape [1].)
    let report = stencil::verify(logarithm::stencil()).unwrap();
    assert_eq!(report.backends.len(), 2, "{report}");
    stencil::verify(logarithm64::stencil()).unwrap();
}

#[test]
fn a_time_loop_that_computes_nan_on_purpose_passes_on_every_backend() {
    let report = stencil::verify_steps(logarithm::stencil(), &[&["l", "u"]]).unwrap();
    assert_eq!(report.backends.len(), 2, "{report}");
}

/// The CPU backend leaving the last interior point of the first output as it found it.
struct SkipsTheLastPoint;

impl<T: Element> Backend<T> for SkipsTheLastPoint {
    fn name(&self) -> String {
        "skips-the-last-point".into()
    }
    fn default_schedule(&self, k: &Kernel, s: &[usize]) -> Schedule {
        Backend::<T>::default_schedule(CpuBackend::global(), k, s)
    }
    fn sample_schedules(&self, k: &Kernel, s: &[usize]) -> Vec<Schedule> {
        Backend::<T>::sample_schedules(CpuBackend::global(), k, s)
    }
    fn run(&self, job: &mut Job<'_, T>, s: &Schedule) -> stencil::Result<()> {
        let geom = job.outputs()[0].geom;
        let last: Vec<isize> = geom.interior().iter().map(|&n| n as isize - 1).collect();
        let last = geom.index(&last);
        let before = job.outputs()[0].data[last];
        CpuBackend::global().run(job, s)?;
        job.outputs_mut()[0].data[last] = before;
        Ok(())
    }
}

#[test]
fn an_unwritten_point_is_reported_where_the_kernel_computes_nan_in_f32_and_f64() {
    // The first case is shape [1], whose one input value is negative half the time: the
    // point left unwritten is one whose right value may be NaN.
    let errors = [
        verify_with(
            logarithm::stencil(),
            &[&SkipsTheLastPoint],
            &VerifyConfig::default(),
        )
        .unwrap_err(),
        verify_with(
            logarithm64::stencil(),
            &[&SkipsTheLastPoint],
            &VerifyConfig::default(),
        )
        .unwrap_err(),
    ];
    for e in errors {
        assert_eq!(e.kind(), ErrorKind::VerificationFailed, "{e}");
        assert!(e.to_string().contains("was not written"), "{e}");
    }
}

/// The CPU backend, writing every NaN it computes with the bits `verify` poisons outputs with
/// (NaN payloads are unspecified: a backend may).
struct PoisonousNans;

impl Backend<f64> for PoisonousNans {
    fn name(&self) -> String {
        "poisonous-nans".into()
    }
    fn default_schedule(&self, k: &Kernel, s: &[usize]) -> Schedule {
        Backend::<f64>::default_schedule(CpuBackend::global(), k, s)
    }
    fn sample_schedules(&self, k: &Kernel, s: &[usize]) -> Vec<Schedule> {
        vec![Backend::<f64>::default_schedule(self, k, s)]
    }
    fn run(&self, job: &mut Job<'_, f64>, s: &Schedule) -> stencil::Result<()> {
        CpuBackend::global().run(job, s)?;
        for out in job.outputs_mut() {
            let interior: Vec<usize> = (0..out.geom.interior()[0])
                .map(|i| out.geom.index(&[i as isize]))
                .collect();
            for i in interior {
                if out.data[i].is_nan() {
                    out.data[i] = f64::from_bits(0x7ffc_dead_beef_0bad);
                }
            }
        }
        Ok(())
    }
}

#[test]
fn a_computed_nan_with_the_poisons_bits_is_not_taken_for_an_unwritten_point() {
    verify_with(
        logarithm64::stencil(),
        &[&PoisonousNans],
        &VerifyConfig::default(),
    )
    .unwrap();
}

#[test]
fn the_default_cases_run_on_several_workers_and_in_skewed_tiles() {
    // A pool of two threads (the cases do not depend on the machine's core count): jobs
    // under `INLINE_POINTS` points run on the calling thread, so only a large enough shape
    // reaches the partitions, the barriers and the tiles.
    let cpu = CpuBackend::new(2).unwrap();
    verify_with(jacobi7::stencil(), &[&cpu], &VerifyConfig::default()).unwrap();
    let sweeps = cpu.activity();
    assert!(sweeps.parallel_runs > 0, "{sweeps:?}");
    verify_steps_with(
        jacobi7::stencil(),
        &[&["out", "u"]],
        &[&cpu],
        &VerifyConfig::default(),
    )
    .unwrap();
    let loops = cpu.activity();
    assert!(loops.parallel_runs > sweeps.parallel_runs, "{loops:?}");
    assert!(loops.tiled_time_loops > 0, "{loops:?}");
}

/// A CPU backend of two threads with a fault that shows only where work ran on several
/// workers at once (as a race, a wrong partition or a missing barrier would): after a sweep
/// that reached the pool, or a time loop that ran in skewed tiles on it, one interior value
/// of the output moves by one unit in the last place.
struct OnSeveralWorkers(CpuBackend);

/// Moves the value at storage index `at` of `data` by one unit in the last place.
fn one_ulp_off(data: &mut [f64], at: usize) {
    data[at] = f64::from_bits(data[at].to_bits() ^ 1);
}

impl Backend<f64> for OnSeveralWorkers {
    fn name(&self) -> String {
        "faulty-on-several-workers".into()
    }
    fn default_schedule(&self, k: &Kernel, s: &[usize]) -> Schedule {
        Backend::<f64>::default_schedule(&self.0, k, s)
    }
    fn sample_schedules(&self, k: &Kernel, s: &[usize]) -> Vec<Schedule> {
        Backend::<f64>::sample_schedules(&self.0, k, s)
    }
    fn sample_steps_schedules(&self, k: &Kernel, s: &[usize]) -> Vec<Schedule> {
        Backend::<f64>::sample_steps_schedules(&self.0, k, s)
    }
    fn matches_interpreter_bits(&self, k: &Kernel, s: &Schedule) -> bool {
        Backend::<f64>::matches_interpreter_bits(&self.0, k, s)
    }
    fn tuning_device(&self) -> Option<(String, usize)> {
        Backend::<f64>::tuning_device(&self.0)
    }
    fn run(&self, job: &mut Job<'_, f64>, s: &Schedule) -> stencil::Result<()> {
        let before = self.0.activity().parallel_runs;
        self.0.run(job, s)?;
        if self.0.activity().parallel_runs > before {
            let at = last_interior(&job.outputs()[0]);
            one_ulp_off(job.outputs_mut()[0].data, at);
        }
        Ok(())
    }
    fn run_steps(
        &self,
        job: &mut TimeLoop<'_, f64>,
        s: &Schedule,
        steps: usize,
    ) -> stencil::Result<()> {
        let before = self.0.activity().tiled_time_loops;
        self.0.run_steps(job, s, steps)?;
        if self.0.activity().tiled_time_loops > before {
            // The grid the last step wrote.
            let index = job.grid_index(0, 0, job.done() - 1);
            let grid = &mut job.grids_mut().0[0][index];
            let at = last_interior(&grid.view);
            one_ulp_off(grid.view.data, at);
        }
        Ok(())
    }
}

#[test]
fn a_fault_that_shows_only_on_several_workers_is_reported() {
    let faulty = OnSeveralWorkers(CpuBackend::new(2).unwrap());
    let e = verify_with(jacobi7::stencil(), &[&faulty], &VerifyConfig::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::VerificationFailed, "{e}");
    assert!(e.to_string().contains("exactly"), "{e}");
    let e = verify_steps_with(
        jacobi7::stencil(),
        &[&["out", "u"]],
        &[&faulty],
        &VerifyConfig::default(),
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::VerificationFailed, "{e}");
    assert!(e.to_string().contains("exactly"), "{e}");
}
