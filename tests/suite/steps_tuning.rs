//! First-call tuning of time loops: the first call of a time loop on a shape tunes on copies
//! of its grids (the simulation's own grids end exactly as the hand-written loop leaves them),
//! later calls of the process remember the choice, another process finds it in the cache and
//! measures nothing, calls of another step-count class are tuned apart, and short loops are
//! not tuned under `quick`.

use std::path::{Path, PathBuf};

use stencil::prelude::*;
use stencil::{CpuSchedule, LoopReport, Schedule, TunePolicy, TuningCache, TuningSource};

use crate::common;
use stencil::kernels::jacobi7;

const ROLE_VAR: &str = "STENCIL_STEPS_TUNING_TEST_ROLE";
const CACHE_VAR: &str = "STENCIL_STEPS_TUNING_TEST_CACHE";

/// `steps` steps of the time loop on `u` (and `out`), tuned with the cache at `path`.
fn time_loop(u: &mut Grid3<f64>, out: &mut Grid3<f64>, steps: usize, path: &Path) -> LoopReport {
    Steps::new(jacobi7::stencil())
        .rotate(&["out", "u"])
        .grid("u", u)
        .grid("out", out)
        .param("c0", 0.4)
        .param("c1", 0.1)
        .tune(TunePolicy::Quick)
        .tuning_cache(TuningCache::at(path))
        .run(steps)
        .expect("time loop")
}

/// The hand-written loop's `u` after `steps` steps.
fn by_hand(u: &Grid3<f64>, steps: usize) -> Vec<f64> {
    let mut u = u.repadded(u.padding()).unwrap();
    let mut out = u.like();
    for _ in 0..steps {
        jacobi7(&u, &mut out, 0.4, 0.1)
            .schedule(Schedule::Cpu(CpuSchedule::default()))
            .run()
            .unwrap();
        std::mem::swap(&mut u, &mut out);
    }
    u.as_slice().to_vec()
}

fn run_child(test: &str, role: &str, cache: &Path) -> String {
    let cache = cache.to_str().expect("a UTF-8 cache path");
    crate::run_child(module_path!(), test, [(ROLE_VAR, role), (CACHE_VAR, cache)])
}

#[test]
fn a_time_loop_tunes_on_copies_then_remembers_and_another_process_hits_the_cache() {
    let child = std::env::var(ROLE_VAR).ok();
    let path = match std::env::var(CACHE_VAR) {
        Ok(p) if child.is_some() => PathBuf::from(p),
        _ => common::temp_cache("steps-tuning", "first-call"),
    };
    let mut u = common::random_grid(21);
    let mut out = u.like();
    let want = by_hand(&u, 16);
    let report = time_loop(&mut u, &mut out, 16, &path);
    assert_eq!(
        u.as_slice(),
        &want[..],
        "after the first call ({})",
        report.tuning
    );
    assert_eq!(report.steps, 16);
    if child.as_deref() == Some("second-process") {
        assert_eq!(
            report.tuning.source,
            TuningSource::CacheHit,
            "{}",
            report.tuning
        );
        assert_eq!(report.tuning.trials, 0);
        println!("CHILD-SAW: {}", report.tuning);
        return;
    }
    assert_eq!(
        report.tuning.source,
        TuningSource::Tuned,
        "{}",
        report.tuning
    );
    assert!(report.tuning.trials >= 2, "{}", report.tuning);
    assert!(
        report.tuning.description.contains("time_depth="),
        "{}",
        report.tuning
    );
    // A second call of the same class is remembered: no trial.
    let want = by_hand(&u, 20);
    let again = time_loop(&mut u, &mut out, 20, &path);
    assert_eq!(again.tuning.source, TuningSource::Remembered);
    assert_eq!(again.tuning.schedule, report.tuning.schedule);
    assert_eq!(u.as_slice(), &want[..], "after the remembered call");
    // Another class of step counts is tuned apart.
    let other = time_loop(&mut u, &mut out, 100, &path);
    assert_eq!(other.tuning.source, TuningSource::Tuned, "{}", other.tuning);
    // The cache holds the loop's single sweep (tuned once, on the first call's first step)
    // and the two classes' loops.
    assert_eq!(TuningCache::at(&path).entries().len(), 3);
    assert!(
        other
            .tuning
            .evidence
            .iter()
            .any(|c| c.challenger.contains("sweep=tuned")),
        "the loop of plain steps under the tuned sweep is always compared: {}",
        other.tuning
    );
    // Another process finds the first class's schedule in the cache.
    let stdout = run_child(
        "a_time_loop_tunes_on_copies_then_remembers_and_another_process_hits_the_cache",
        "second-process",
        &path,
    );
    assert!(
        stdout.contains("CHILD-SAW: tuning: cache hit: ")
            && stdout.contains(&report.tuning.description),
        "{stdout}"
    );
}

#[test]
fn short_loops_run_the_default_under_quick() {
    let path = common::temp_cache("steps-tuning", "short");
    let mut u = common::random_grid(22);
    let mut out = u.like();
    let want = by_hand(&u, 5);
    let report = time_loop(&mut u, &mut out, 5, &path);
    assert_eq!(report.tuning.source, TuningSource::Default);
    assert_eq!(report.tuning.trials, 0);
    assert_eq!(u.as_slice(), &want[..]);
    assert!(TuningCache::at(&path).entries().is_empty());
}
