//! Every generated kernel, compiled through `stencil!`, is verified on every backend against
//! the reference interpreter, and its macro-lowered IR computes what the generator's IR
//! computes (so printing and re-parsing lost nothing).

use stencil::{
    Backend, CpuSchedule, Element, Job, Kernel, Schedule, VerifyConfig, interp, verify_with,
};
use stencil_core::random::random_stencil;
use stencil_generated_tests::{Generated, generated_f32, generated_f64};

/// A backend that ignores the job's kernel and interprets another IR: comparing it with the
/// interpreter on the job's own kernel shows the two IRs compute the same function.
struct OtherIr(Kernel);

impl<T: Element> Backend<T> for OtherIr {
    fn name(&self) -> String {
        "generator IR (interpreted)".into()
    }
    fn default_schedule(&self, _: &Kernel, _: &[usize]) -> Schedule {
        Schedule::Cpu(CpuSchedule::default())
    }
    fn sample_schedules(&self, _: &Kernel, _: &[usize]) -> Vec<Schedule> {
        vec![Schedule::Cpu(CpuSchedule::default())]
    }
    fn run(&self, job: &mut Job<'_, T>, _: &Schedule) -> stencil::Result<()> {
        let (inputs, outputs, params) = job.parts_mut();
        interp::run(&self.0, inputs, outputs, params);
        Ok(())
    }
}

fn check<T: Element>(kernels: Vec<Generated<T>>) -> usize {
    let config = VerifyConfig::default();
    let cpu: &dyn Backend<T> = stencil::CpuBackend::global();
    for Generated {
        stencil,
        config: generator,
        ..
    } in &kernels
    {
        let name = &stencil.kernel().name;
        let report =
            verify_with(stencil, &[cpu], &config).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            report.cases > 0 && report.points > 0,
            "{name}: nothing compared"
        );
        let generator_ir = random_stencil(generator);
        let other = OtherIr(generator_ir);
        verify_with(stencil, &[&other], &config)
            .unwrap_or_else(|e| panic!("{name}: macro IR and generator IR differ: {e}"));
    }
    kernels.len()
}

#[test]
fn generated_kernels_match_the_interpreter_and_the_generator() {
    let n = check(generated_f64()) + check(generated_f32());
    // Guard: the build step must have produced the kernels (at least 50).
    assert!(n >= 50, "only {n} generated kernels");
}
