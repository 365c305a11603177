//! `verify` can fail: wrong implementations planted behind the backend interface are reported
//! (a wrong value, an unwritten point, a write outside the interior, a modified input).

use stencil::prelude::*;
use stencil::{
    Backend, CpuBackend, ErrorKind, FieldViewMut, Job, Kernel, Schedule, VerifyConfig, verify_with,
};

stencil! {
    fn laplacian(u: &Grid3<f64>, out: &mut Grid3<f64>, a: f64, b: f64) {
        out[i, j, k] = a * u[i, j, k]
            + b * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k]
                 + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1]);
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
    fn run(&self, job: &mut Job<'_, f64>, schedule: &Schedule) -> stencil::Result<()> {
        match self.0 {
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
    verify_with(laplacian::stencil(), &[&backend], &VerifyConfig::default()).unwrap_err()
}

#[test]
fn the_honest_backend_passes() {
    let cpu: &dyn Backend<f64> = CpuBackend::global();
    verify_with(laplacian::stencil(), &[cpu], &VerifyConfig::default()).unwrap();
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
