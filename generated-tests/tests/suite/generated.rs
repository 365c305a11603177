//! Every generated kernel, compiled through `stencil!`, is verified on every backend against
//! the reference interpreter, and its macro-lowered IR computes what the generator's IR
//! computes (so printing and re-parsing lost nothing). A quick run checks every fourth kernel
//! (`sampled`), `STENCIL_FULL_TESTS=1` every one.

use stencil::{
    Backend, CpuSchedule, Element, Job, Kernel, Schedule, VerifyConfig, interp, verify_with,
};
use stencil_core::random::random_stencil;
use stencil_generated_tests::{Generated, generated_f32, generated_f64};

use crate::sampled;

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
    // Guard: the build step must have produced the kernels (at least 50).
    let all = generated_f64().len() + generated_f32().len();
    assert!(all >= 50, "only {all} generated kernels");
    let n = check(sampled(generated_f64())) + check(sampled(generated_f32()));
    assert!(n >= all / 4, "only {n} of {all} generated kernels checked");
}
