//! The CPU benchmark: the library against the machine's bandwidth and hand-written baselines.
//!
//! ```text
//! cargo run --release --example bench -- [--json] [--repeats N] [--n3 N] [--n2 N] [--svg PATH]
//! ```
//!
//! For W1 (7-point 3-D, 256^3), W2 (27-point 3-D, 256^3), W3 (5-point 2-D, 8192^2), and Kamil's
//! Divergence and Gradient (256^3), all f64, with 1 and 2 threads, it measures: an in-process
//! STREAM copy with plain and with non-temporal stores; a hand-written rows loop, serial and
//! over rayon; the library at its default schedule; and the library at the best schedule of an
//! exhaustive sweep of its schedule space (`ScheduleSpace`, derived from the machine). Each
//! figure is the median of `--repeats` runs (default 7) after two warm-up runs, with min-max.
//! Bandwidth is counted at the kernel's compulsory bytes per point (every input read once,
//! every output written once) and compared with the non-temporal copy with the same threads.
//! Prints a table (or with `--json` one JSON object per line), writes an SVG bar chart and
//! prints its path. Before timing, every implementation's output (over NaN-poisoned outputs) is
//! checked against the serial baseline's.

mod report;
mod workloads;

use std::path::PathBuf;
use std::time::Instant;

use stencil::{CpuBackend, CpuSchedule, Schedule, analysis};
use stencil_cpu::{Machine, ScheduleSpace};

use report::{Row, Stats, StreamRow};
use workloads::{Imp, Workload, default_schedule};

struct Options {
    json: bool,
    repeats: usize,
    n3: usize,
    n2: usize,
    svg: PathBuf,
}

fn options() -> Options {
    let mut o = Options {
        json: false,
        repeats: 7,
        n3: 256,
        n2: 8192,
        svg: std::env::temp_dir().join("stencil-bench.svg"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut number = |what: &str| -> usize {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("bench: {what} needs a positive integer"))
        };
        match a.as_str() {
            "--json" => o.json = true,
            "--repeats" => o.repeats = number("--repeats").max(5),
            "--n3" => o.n3 = number("--n3"),
            "--n2" => o.n2 = number("--n2"),
            "--svg" => o.svg = PathBuf::from(args.next().expect("bench: --svg needs a path")),
            other => panic!("bench: unknown argument {other}"),
        }
    }
    o
}

/// Times `f` `repeats` times after two warm-up runs, in milliseconds.
fn time(repeats: usize, mut f: impl FnMut()) -> Stats {
    f();
    f();
    let times = (0..repeats)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    Stats::of(times)
}

/// Fastest of two runs after one warm-up, in milliseconds (for the sweep).
fn quick_time(mut f: impl FnMut()) -> f64 {
    f();
    (0..2)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::INFINITY, f64::min)
}

fn stream(backends: &[CpuBackend], repeats: usize) -> Vec<StreamRow> {
    let n = 1usize << 24;
    let src: Vec<f64> = (0..n).map(|i| (i % 1000) as f64 * 0.25).collect();
    let mut dst = vec![0.0f64; n];
    let mut rows = Vec::new();
    for backend in backends {
        for (name, streaming) in [("copy-plain", false), ("copy-nt", true)] {
            let stats = time(repeats, || backend.stream_copy(&mut dst, &src, streaming));
            assert!(dst == src, "bench: STREAM copy is wrong");
            rows.push(StreamRow {
                stream: name,
                threads: backend.threads(),
                stats,
                gbs: (16 * n) as f64 / (stats.median * 1e-3) / 1e9,
            });
        }
    }
    rows
}

/// Runs `imp` once on poisoned outputs and checks them against `expected` (to 1e-12 relative:
/// the baselines sum in their own order).
fn check(w: &mut Workload, imp: Imp<'_>, expected: &[Vec<f64>], what: &str) {
    w.poison_outputs();
    w.run(imp);
    let found = w.outputs();
    for (e, f) in expected.iter().zip(&found) {
        let bad = e
            .iter()
            .zip(f)
            .filter(|(a, b)| {
                // NaN (an unwritten point) is never close.
                let close = (*a - *b).abs() <= 1e-12 * a.abs().max(1.0);
                !close
            })
            .count();
        assert!(
            bad == 0,
            "bench: {} {what}: {bad} values differ from the baseline",
            w.name
        );
    }
}

fn main() {
    let o = options();
    let machine = Machine::detect();
    let backends = [
        CpuBackend::new(1).expect("pool"),
        CpuBackend::new(2).expect("pool"),
    ];
    let pools: Vec<rayon::ThreadPool> = backends
        .iter()
        .map(|b| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(b.threads())
                .build()
                .expect("pool")
        })
        .collect();
    if !o.json {
        println!(
            "machine: {} cores, L1 {} KiB, L2 {} KiB, LLC {} MiB, {} NUMA node(s), vector {:?}",
            machine.cores,
            machine.l1_bytes >> 10,
            machine.l2_bytes >> 10,
            machine.llc_bytes >> 20,
            machine.topology.n_nodes(),
            machine.vector
        );
    }
    let streams = stream(&backends, o.repeats);
    let nt = |threads: usize| {
        streams
            .iter()
            .find(|s| s.stream == "copy-nt" && s.threads == threads)
            .map_or(f64::NAN, |s| s.gbs)
    };
    let mut rows = Vec::new();
    let mut workloads = Workload::all(&backends[1], o.n3, o.n2);
    let sweep_start = Instant::now();
    for w in &mut workloads {
        let bytes_per_point = analysis::bytes_per_point(w.stencil.kernel());
        w.poison_outputs();
        w.run(Imp::NaiveSerial);
        let expected = w.outputs();
        for (backend, pool) in backends.iter().zip(&pools) {
            let threads = backend.threads();
            check(w, Imp::NaiveRayon(pool), &expected, "naive rows+rayon");
            check(
                w,
                Imp::Library(backend, default_schedule()),
                &expected,
                "library default",
            );
            // Exhaustive sweep of the schedule space.
            let space = ScheduleSpace::new(machine, w.stencil.kernel(), &w.shape, threads);
            let mut best = (f64::INFINITY, CpuSchedule::default());
            for s in std::iter::once(CpuSchedule::default()).chain(space.iter()) {
                let t = quick_time(|| w.run(Imp::Library(backend, Schedule::Cpu(s))));
                if t < best.0 {
                    best = (t, s);
                }
            }
            let best_schedule = Schedule::Cpu(best.1);
            check(
                w,
                Imp::Library(backend, best_schedule),
                &expected,
                "library best",
            );
            if !o.json {
                eprintln!(
                    "{} {} thr: swept {} schedules, best {:?}",
                    w.name,
                    threads,
                    space.len() + 1,
                    best.1
                );
            }
            let mut measured: Vec<(String, Stats, Option<String>)> = Vec::new();
            if threads == 1 {
                measured.push((
                    "naive rows serial".into(),
                    time(o.repeats, || w.run(Imp::NaiveSerial)),
                    None,
                ));
            }
            measured.push((
                "naive rows+rayon".into(),
                time(o.repeats, || w.run(Imp::NaiveRayon(pool))),
                None,
            ));
            measured.push((
                "library default".into(),
                time(o.repeats, || {
                    w.run(Imp::Library(backend, default_schedule()))
                }),
                Some(format!("{:?}", CpuSchedule::default())),
            ));
            measured.push((
                "library best".into(),
                time(o.repeats, || w.run(Imp::Library(backend, best_schedule))),
                Some(format!("{:?}", best.1)),
            ));
            let naive_rayon_ms = measured
                .iter()
                .find(|m| m.0 == "naive rows+rayon")
                .map_or(f64::NAN, |m| m.1.median);
            for (imp, stats, schedule) in measured {
                rows.push(Row {
                    workload: w.name,
                    imp,
                    threads,
                    stats,
                    points: w.points(),
                    bytes_per_point,
                    nt_gbs: nt(threads),
                    naive_rayon_ms,
                    schedule,
                });
            }
        }
    }
    let svg = report::svg(&streams, &rows);
    std::fs::write(&o.svg, svg).unwrap_or_else(|e| panic!("bench: cannot write {:?}: {e}", o.svg));
    if o.json {
        for s in &streams {
            println!("{}", s.json());
        }
        for r in &rows {
            println!("{}", r.json());
        }
    } else {
        print!("{}", report::table(&streams, &rows));
        println!(
            "\n(sweeps and checks took {:.0} s; best schedules are printed on stderr)",
            sweep_start.elapsed().as_secs_f64()
        );
    }
    eprintln!("bar chart written to {}", o.svg.display());
}
