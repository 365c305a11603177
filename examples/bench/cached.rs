//! The cache-resident rows: W1 at 64^3 and W3 at 1024^2 (grids the last-level cache holds),
//! where the loop itself, not memory, sets the speed: the hand-written rows loops next to the
//! library's default and tuned schedules, in points per second; and the fixed cost of one
//! `run()` (the 7-point stencil on an 8^3 grid, which computes in well under a microsecond).

use std::time::{Duration, Instant};

use stencil::prelude::*;
use stencil::{CpuBackend, CpuSchedule, Schedule, TuningCache, analysis, kernels};

use crate::report::{Row, Stats};
use crate::workloads::{Imp, Workload};

/// Each timed run repeats the sweep for at least this long.
const RUN: Duration = Duration::from_millis(30);

/// The rows of W1 at `n3`^3 and W3 at `n2`^2 (see the module documentation).
pub(crate) fn rows(
    backends: &[CpuBackend],
    pools: &[rayon::ThreadPool],
    caches: &[TuningCache],
    (n3, n2): (usize, usize),
    repeats: usize,
) -> Vec<Row> {
    let mut workloads = Workload::all(&backends[backends.len() - 1], n3, n2);
    let mut rows = Vec::new();
    for w in workloads.iter_mut().filter(|w| w.steps_too()) {
        if w.name.as_bytes()[1] == b'2' {
            continue;
        }
        let name = match w.name.as_bytes()[1] {
            b'1' => "W1 in cache (64^3)",
            _ => "W3 in cache (1024^2)",
        };
        let bytes_per_point = analysis::bytes_per_point(w.stencil.kernel());
        for ((backend, pool), cache) in backends.iter().zip(pools).zip(caches) {
            // The first call tunes (or hits the cache).
            let tuned = w.run(Imp::Tuned(backend, cache)).expect("a report");
            let default = Schedule::Cpu(CpuSchedule::default());
            let mut imps: Vec<(&str, Imp<'_>)> = Vec::new();
            if backend.threads() == 1 {
                imps.push(("naive rows serial", Imp::NaiveSerial));
            }
            imps.push(("naive rows+rayon", Imp::NaiveRayon(pool)));
            imps.push(("library default", Imp::Library(backend, default)));
            imps.push(("stencil-tuned", Imp::Tuned(backend, cache)));
            let stats = interleaved(w, &imps, repeats);
            let naive = stats[imps.len() - 3].median;
            for ((imp, _), stats) in imps.iter().zip(stats) {
                rows.push(Row {
                    workload: name,
                    imp: imp.to_string(),
                    threads: backend.threads(),
                    stats,
                    points: w.points(),
                    bytes_per_point,
                    nt_gbs: f64::NAN,
                    naive_rayon_ms: naive,
                    schedule: (*imp == "stencil-tuned").then(|| tuned.description.clone()),
                });
            }
        }
    }
    rows
}

/// Per-sweep times in ms of each implementation: each timed run repeats the sweep for at
/// least [`RUN`], the implementations interleaved over `repeats` rounds after one untimed.
fn interleaved(w: &mut Workload, imps: &[(&str, Imp<'_>)], repeats: usize) -> Vec<Stats> {
    let mut times = vec![Vec::new(); imps.len()];
    for round in 0..=repeats {
        for (k, (_, imp)) in imps.iter().enumerate() {
            let start = Instant::now();
            let mut sweeps = 0;
            while sweeps < 3 || start.elapsed() < RUN {
                w.run(*imp);
                sweeps += 1;
            }
            if round > 0 {
                times[k].push(start.elapsed().as_secs_f64() * 1e3 / sweeps as f64);
            }
        }
    }
    times.into_iter().map(Stats::of).collect()
}

/// The median time of one `run()` of the 7-point stencil on an 8^3 grid on `backend`, in
/// microseconds (default schedule: a grid this small is never tuned).
pub(crate) fn run_cost(backend: &CpuBackend) -> f64 {
    let mut u = Grid3::<f64>::new([8, 8, 8]).expect("grid");
    u.fill_with(|[i, j, k]| (i + 2 * j + 3 * k) as f64);
    let mut v = u.like();
    let mut samples = Vec::new();
    for _ in 0..15 {
        let start = Instant::now();
        for _ in 0..1000 {
            kernels::jacobi7(&u, &mut v, 0.4, 0.1)
                .on(backend)
                .run()
                .expect("run");
            std::mem::swap(&mut u, &mut v);
        }
        samples.push(start.elapsed().as_secs_f64() * 1e6 / 1000.0);
    }
    Stats::of(samples).median
}
