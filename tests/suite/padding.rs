//! The layout search (`Launch::search_padding`) and padded grids through `Launch::run`: every
//! padding the CPU space offers is timed on copies, the call's own grids are left as they were,
//! grids moved to the padding found compute what unpadded ones do, schedules tuned for padded
//! grids are cached apart from unpadded ones, and misuse is an error.

use std::path::PathBuf;

use stencil::prelude::*;
use stencil::{Backend, CpuBackend, TunePolicy, TuningCache, interp};

use crate::common;
use common::{N, random_grid};
use stencil::kernels::jacobi7;

stencil! {
    fn smooth(u: &Grid1<f32>, out: &mut Grid1<f32>) {
        out[i] = 0.5 * u[i] + 0.25 * (u[i-1] + u[i+1]);
    }
}

fn temp_cache(name: &str) -> PathBuf {
    common::temp_cache("padding", name)
}

fn bits(g: &Grid3<f64>) -> Vec<u64> {
    g.as_slice().iter().map(|v| v.to_bits()).collect()
}

#[test]
fn every_offered_padding_is_timed_on_copies_and_the_fastest_is_reported() {
    let backend = CpuBackend::new(2).expect("backend");
    let u = random_grid(1);
    let mut out = u.like();
    out.fill(f64::NAN);
    let (u_before, out_before) = (bits(&u), bits(&out));
    let report = jacobi7(&u, &mut out, 0.4, 0.1)
        .on(&backend)
        .tune(TunePolicy::Quick)
        .without_tuning_cache()
        .search_padding()
        .expect("search");

    let offered =
        <CpuBackend as Backend<f64>>::row_paddings(&backend, jacobi7::stencil().kernel(), &[N; 3]);
    assert!(
        offered.len() > 1,
        "a 3-D kernel has a padding axis: {offered:?}"
    );
    let timed: Vec<usize> = report.candidates.iter().map(|t| t.pad_lines).collect();
    assert_eq!(timed, offered, "{report}");
    // Ranked by time over the unpadded layout's, timed in the same rounds.
    assert_eq!(report.candidates[0].relative, 1.0, "{report}");
    for t in &report.candidates {
        assert!(
            t.seconds_per_sweep > 0.0 && t.seconds_per_sweep.is_finite(),
            "{report}"
        );
        assert!(t.relative > 0.0 && t.relative.is_finite(), "{report}");
    }
    // The fastest is the first padding unless another replaced it under the tuner's paired
    // rule, and then the lowest ratio among those that did.
    let winners: Vec<&stencil::padding::PaddingTrial> = report
        .candidates
        .iter()
        .filter(|t| t.evidence.as_ref().is_some_and(|c| c.replaced))
        .collect();
    for t in &report.candidates[1..] {
        let c = t.evidence.as_ref().expect("every other padding compared");
        assert_eq!(
            c.replaced,
            stencil::tuning::PAIRED_RULE.replaces(&c.incumbent_seconds, &c.challenger_seconds),
            "{report}"
        );
    }
    let expected = winners
        .iter()
        .map(|t| t.relative)
        .fold(f64::INFINITY, f64::min);
    if winners.is_empty() {
        assert_eq!(report.best, report.candidates[0].pad_lines, "{report}");
        assert!(report.to_string().contains("no padding helps"), "{report}");
    } else {
        assert_eq!(report.best_trial().relative, expected, "{report}");
    }
    assert!(report.to_string().starts_with("row padding: "), "{report}");
    // Every padding got its own tuned schedule, not the default.
    for t in &report.candidates {
        assert_ne!(t.tuning.source, stencil::TuningSource::Default, "{report}");
    }
    assert_eq!(bits(&u), u_before, "the call's input was written");
    assert_eq!(bits(&out), out_before, "the call's output was written");
}

#[test]
fn grids_moved_to_a_padding_compute_what_unpadded_grids_compute() {
    let u = random_grid(2);
    let mut want = u.like();
    {
        let mut outs = [want.view_mut()];
        interp::run(
            jacobi7::stencil().kernel(),
            &[u.view()],
            &mut outs,
            &[0.4, 0.1],
        );
    }
    for pad in [1, 2, 3] {
        let padded = u.repadded(pad).expect("repadded");
        let mut out = Grid3::<f64>::with_padding([N; 3], u.halo(), pad).expect("grid");
        out.fill(f64::NAN);
        jacobi7(&padded, &mut out, 0.4, 0.1)
            .without_tuning_cache()
            .run()
            .expect("run");
        assert_eq!(out.padding(), pad);
        for (p, w) in want.interior_iter() {
            let g = out[p];
            assert!(
                (g - w).abs() <= 1e-12 * w.abs().max(1.0),
                "pad {pad} at {p:?}: {g} vs {w}"
            );
        }
    }
}

#[test]
fn schedules_tuned_for_padded_grids_are_cached_apart() {
    let path = temp_cache("apart");
    let cache = TuningCache::at(&path);
    let u = random_grid(3);
    let mut out = u.like();
    jacobi7(&u, &mut out, 0.4, 0.1)
        .tuning_cache(cache.clone())
        .tune(TunePolicy::Quick)
        .run()
        .expect("unpadded");
    let padded = u.repadded(2).expect("repadded");
    let mut padded_out = Grid3::<f64>::with_padding([N; 3], u.halo(), 2).expect("grid");
    let report = jacobi7(&padded, &mut padded_out, 0.4, 0.1)
        .tuning_cache(cache.clone())
        .tune(TunePolicy::Quick)
        .run_with_report()
        .expect("padded");
    assert_eq!(
        report.source,
        stencil::TuningSource::Tuned,
        "padded grids must not reuse the unpadded grids' schedule: {report}"
    );
    let backends: Vec<String> = cache
        .entries()
        .into_iter()
        .map(|(k, _)| k.backend)
        .collect();
    assert_eq!(backends.len(), 2, "{backends:?}");
    assert!(
        backends.iter().any(|b| b.contains("row padding [2, 2]")),
        "{backends:?}"
    );
    let _ = std::fs::remove_dir_all(path.parent().expect("dir"));
}

#[test]
fn one_dimensional_grids_have_one_padding_and_misuse_is_an_error() {
    let u = Grid1::<f32>::from_fn([4096], 1, |[i]| i as f32).expect("grid");
    let mut out = u.like();
    let report = smooth(&u, &mut out)
        .without_tuning_cache()
        .search_padding()
        .expect("search");
    assert_eq!(report.best, 0);
    assert_eq!(report.candidates.len(), 1, "{report}");

    // An unbound argument is reported before anything is timed.
    let u3 = random_grid(4);
    let err = Launch::new(jacobi7::stencil())
        .input("u", &u3)
        .param("c0", 0.4)
        .param("c1", 0.1)
        .search_padding()
        .unwrap_err();
    assert_eq!(err.kind(), stencil::ErrorKind::BadArgument, "{err}");
    // So is a grid of another shape.
    let mut small = Grid3::<f64>::new([N, N, N - 1]).expect("grid");
    let err = jacobi7(&u3, &mut small, 0.4, 0.1)
        .search_padding()
        .unwrap_err();
    assert_eq!(err.kind(), stencil::ErrorKind::ShapeMismatch, "{err}");
}
