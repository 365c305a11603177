//! `Job::set_region` on the CPU backend: only the box's points are written, each with the
//! value a whole sweep gives it, under every sampled schedule, for a generated loop and the
//! generic path; a backend that does not run regions refuses one. (The distributed time loop
//! sweeps a rank's inner box while its halo is in flight, then the shell: `stencil::mpi`.)

use stencil::kernels::jacobi7;
use stencil::prelude::*;
use stencil::{Backend, CpuBackend, EmulatedGpu, ErrorKind, Job, Schedule, Stencil};

fn sweep(
    stencil: &Stencil<f64>,
    backend: &CpuBackend,
    schedule: &Schedule,
    u: &Grid3<f64>,
    out: &mut Grid3<f64>,
    region: Option<([usize; 3], [usize; 3])>,
) {
    let mut job = Job::new(
        stencil,
        vec![u.view()],
        vec![out.kernel_output_view()],
        vec![0.4, 0.1],
    )
    .unwrap();
    if let Some((lo, hi)) = region {
        job.set_region(backend, &lo, &hi).unwrap();
    }
    backend.run(&mut job, schedule).unwrap();
}

#[test]
fn regions_write_their_points_only_and_the_whole_sweeps_values() {
    let shape = [9, 13, 37];
    let mut u = Grid3::<f64>::with_halo(shape, 1).unwrap();
    u.fill_with(|[i, j, k]| ((i * 131 + j * 37 + k * 7) % 101) as f64 / 7.0 - 3.0);
    let backend = CpuBackend::new(2).unwrap();
    let generated = jacobi7::stencil();
    let generic: Stencil<f64> = Stencil::new(generated.kernel().clone()).unwrap();
    assert!(generated.cpu_loop().is_some() && generic.cpu_loop().is_none());
    // Boxes that cut rows at unaligned points and partition the interior.
    let cuts = [
        ([0, 0, 0], [9, 13, 5]),
        ([0, 0, 5], [3, 13, 37]),
        ([3, 0, 5], [9, 1, 37]),
        ([3, 1, 5], [9, 13, 37]),
    ];
    for stencil in [generated, &generic] {
        for schedule in
            <CpuBackend as Backend<f64>>::sample_schedules(&backend, stencil.kernel(), &shape)
        {
            let mut whole = u.like();
            sweep(stencil, &backend, &schedule, &u, &mut whole, None);
            let mut parts = u.like();
            parts.fill_with(|_| f64::NAN);
            for (n, &(lo, hi)) in cuts.iter().enumerate() {
                sweep(stencil, &backend, &schedule, &u, &mut parts, Some((lo, hi)));
                for (p, v) in parts.interior_iter() {
                    let done = cuts[..=n]
                        .iter()
                        .any(|(l, h)| (0..3).all(|d| (l[d]..h[d]).contains(&p[d])));
                    if done {
                        assert_eq!(v.to_bits(), whole[p].to_bits(), "{p:?} under {schedule:?}");
                    } else {
                        assert!(
                            v.is_nan(),
                            "{p:?} outside the regions so far was written under {schedule:?}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn bad_regions_are_errors() {
    let u = Grid3::<f64>::with_halo([4, 4, 4], 1).unwrap();
    let mut out = u.like();
    let mut job = Job::new(
        jacobi7::stencil(),
        vec![u.view()],
        vec![out.kernel_output_view()],
        vec![0.4, 0.1],
    )
    .unwrap();
    let cpu = CpuBackend::global();
    assert!(job.set_region(cpu, &[0, 0, 0], &[4, 4, 5]).is_err());
    assert!(job.set_region(cpu, &[2, 0, 0], &[1, 4, 4]).is_err());
    assert!(job.set_region(cpu, &[0, 0], &[4, 4]).is_err());
    assert!(job.set_region(cpu, &[1, 1, 1], &[3, 3, 3]).is_ok());
}

#[test]
fn a_backend_that_does_not_run_regions_refuses_one_instead_of_ignoring_it() {
    // The PTX emulator computes the whole interior: given a region, it would write points
    // outside it.
    let emulated = EmulatedGpu::new();
    assert!(!<EmulatedGpu as Backend<f64>>::capabilities(&emulated).regions);
    let u = Grid3::<f64>::with_halo([4, 4, 4], 1).unwrap();
    let mut out = u.like();
    let mut job = Job::new(
        jacobi7::stencil(),
        vec![u.view()],
        vec![out.kernel_output_view()],
        vec![0.4, 0.1],
    )
    .unwrap();
    let err = job
        .set_region(&emulated, &[1, 1, 1], &[3, 3, 3])
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BackendUnavailable);
    assert!(err.message().contains("does not run regions"), "{err}");
    assert_eq!(job.region(), None);
    // The backend that runs it takes the same region.
    job.set_region(CpuBackend::global(), &[1, 1, 1], &[3, 3, 3])
        .unwrap();
    assert!(job.region().is_some());
}
