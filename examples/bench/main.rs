//! The CPU benchmark: the library against the machine's bandwidth and hand-written baselines.
//!
//! ```text
//! cargo run --release --example bench -- [--json] [--repeats N] [--n3 N] [--n2 N] [--svg PATH]
//!                                        [--only sweeps,cache,steps,acoustic,krylov,noise]
//!                                        [--steps-repeats N]
//!                                        [--noise-comparisons N]
//! cargo run --release --example bench -- --sweeps-of SYMBOL:WAY:N
//! ```
//!
//! Five sections (all unless `--only` names some): `sweeps`, described below; `cache`,
//! cache-resident sweeps (W1 at 64^3, W3 at 1024^2) against the hand-written loops, the
//! fixed cost of one `run()`, and the loops in cache on one thread (W1, W2, W3 and the
//! radius-4 star, f64 and f32) beside a naive C loop that the system's `cc` compiles in the
//! run, with and without `-ffp-contract=off` ("C loop: cc not found" without one; modules
//! `cached`, `c_loop`); `steps`, time loops (W1 and W3 for 100 steps,
//! W2 for 20) per step for the hand-written swap loop, `run()` then swap, and `Steps` default
//! and tuned, with the first call's tuning (module `timeloop`); `acoustic`, a whole simulation
//! step of a staggered 3-D acoustic solver (two kernels, a source, 256 receivers) by hand, as
//! `run()` per kernel and through `Stages` (module `acoustic`); `krylov`, the vector kernels of
//! `stencil::krylov` (dot, norm2, axpy on 2^25 `f64`) against plain loops and the read and copy
//! bandwidths, and one conjugate-gradient iteration at 256^3 (module `krylov`). A sixth,
//! `noise`, runs only when `--only` names it: the tuner's paired rule comparing a schedule
//! with itself on this machine (module `noise`). `--sweeps-of` runs nothing else but `N` sweeps
//! of one loop in cache (`SYMBOL` the C loop's name, `w1_f64` ...; `WAY` `c`, `c-nofma` or
//! `library`), for `bench/instructions.sh` to count under callgrind.
//!
//! For W1 (7-point 3-D, 256^3), W2 (27-point 3-D, 256^3), W3 (5-point 2-D, 8192^2), and Kamil's
//! Divergence and Gradient (256^3), all f64, with 1 and 2 threads, it measures: an in-process
//! STREAM copy with plain and with non-temporal stores; a hand-written rows loop, serial and
//! over rayon; the library at its default schedule; the library at the best schedule of an
//! exhaustive sweep of its schedule space (`ScheduleSpace`, derived from the machine: every
//! schedule timed quickly, the five fastest timed again and the best median kept); and the
//! library tuned by its first call on a fresh tuning cache (`stencil-tuned`: the steady-state
//! time, then a second table with that call's trials and tuning time and the tuned time over
//! the sweep's best and over the default, all measured in this run); and the library's layout
//! search (`Launch::search_padding`: the tuned schedule of each row padding timed on padded
//! copies, a third table), with the tuned call on grids in the padding it found
//! (`stencil-tuned padded`). Each figure is the median
//! of `--repeats` runs (default 7) after two warm-up runs, with min-max; the implementations
//! of a workload are timed interleaved (one run of each per round, in a new random order
//! each round, each timed run right after an untimed run of the same implementation), so a
//! slow spell of this shared machine hits them alike and no run inherits another's cache
//! state.
//! Bandwidth is counted at the kernel's compulsory bytes per point (every input read once,
//! every output written once) and compared with the non-temporal copy with the same threads,
//! timed in the same interleaved rounds as the workload (the STREAM table at the top is the
//! machine at the start of the run).
//! Prints a table (or with `--json` one JSON object per line), writes an SVG bar chart and
//! prints its path. Before timing, every implementation's output (over NaN-poisoned outputs) is
//! checked against the serial baseline's.

/// The command line, as `--help` prints it.
const USAGE: &str = "usage: bench [--json] [--repeats N] [--n3 N] [--n2 N] [--svg PATH]
             [--only sweeps,cache,steps,acoustic,krylov,noise]
             [--steps-repeats N] [--noise-comparisons N]
       bench --sweeps-of SYMBOL:WAY:N   (N sweeps of one loop in cache: SYMBOL w1_f64, w1_f32,
             w2_f64, w2_f32, w3_f64, w3_f32, star4_f64 or star4_f32; WAY c, c-nofma or library)
(cargo run --release --example bench -- ...; the sections and figures are described in
examples/bench/main.rs)";

mod acoustic;
mod c_loop;
mod cached;
mod krylov;
mod noise;
mod report;
mod timeloop;
mod workloads;

use std::path::PathBuf;
use std::time::Instant;

use stencil::{CpuBackend, CpuSchedule, Schedule, TuningCache, analysis};
use stencil_core::rng::Rng;
use stencil_cpu::{Machine, ScheduleSpace};

use report::{PaddingRow, Row, Stats, StreamRow, TunerRow};
use workloads::{Imp, Workload, default_schedule};

struct Options {
    json: bool,
    repeats: usize,
    n3: usize,
    n2: usize,
    svg: PathBuf,
    /// Sections to run: `sweeps`, `cache`, `steps`, `krylov`.
    only: Vec<String>,
    /// Rounds of the time-loop rows.
    steps_repeats: usize,
    /// Comparisons per pair of the noise section.
    noise_comparisons: usize,
    /// `--sweeps-of SYMBOL:WAY:N`: only that many sweeps of one loop in cache (for counting
    /// instructions, `bench/instructions.sh`).
    sweeps_of: Option<(String, String, usize)>,
}

impl Options {
    fn runs(&self, section: &str) -> bool {
        // The noise section runs only when asked for.
        (self.only.is_empty() && section != "noise") || self.only.iter().any(|s| s == section)
    }
}

fn options() -> Options {
    let mut o = Options {
        json: false,
        repeats: 7,
        n3: 256,
        n2: 8192,
        svg: std::env::temp_dir().join("stencil-bench.svg"),
        only: Vec::new(),
        steps_repeats: 3,
        noise_comparisons: 40,
        sweeps_of: None,
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
            "--steps-repeats" => o.steps_repeats = number("--steps-repeats").max(1),
            "--noise-comparisons" => {
                o.noise_comparisons = number("--noise-comparisons").max(1);
            }
            "--only" => {
                o.only = args
                    .next()
                    .expect(
                        "bench: --only needs sweeps, cache, steps, acoustic, krylov and/or noise",
                    )
                    .split(',')
                    .map(str::to_string)
                    .collect();
                for s in &o.only {
                    assert!(
                        ["sweeps", "cache", "steps", "acoustic", "krylov", "noise"]
                            .contains(&s.as_str()),
                        "bench: unknown section {s}"
                    );
                }
            }
            "--sweeps-of" => {
                let spec = args.next().unwrap_or_default();
                let parts: Vec<&str> = spec.split(':').collect();
                match parts[..] {
                    [symbol, way, n] if n.parse::<usize>().is_ok() => {
                        o.sweeps_of =
                            Some((symbol.to_string(), way.to_string(), n.parse().unwrap_or(0)));
                    }
                    _ => {
                        eprintln!(
                            "bench: --sweeps-of needs SYMBOL:WAY:N (w1_f64:library:10)\n{USAGE}"
                        );
                        std::process::exit(2);
                    }
                }
            }
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => {
                eprintln!("bench: unknown argument {other}\n{USAGE}");
                std::process::exit(2);
            }
        }
    }
    o
}

/// Times `f` `repeats` times after two warm-up runs, in milliseconds.
fn time<R>(repeats: usize, mut f: impl FnMut() -> R) -> Stats {
    f();
    f();
    let times = (0..repeats)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(f());
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    Stats::of(times)
}

/// Times each of `imps` on `w` `repeats` times, interleaved (one run of each per round), after
/// two warm-up rounds; per implementation, in milliseconds. `copy`, when given, is timed in the
/// same rounds and its statistics come last.
///
/// A run pays for what the run before it left in the caches: a plain-store baseline leaves
/// the last-level cache full of dirty output lines, whose write-back (and, for streaming
/// stores, eviction) the next run pays. In a fixed order Gradient's default schedule, always
/// after the baseline, measured 32 ms against 24 ms for the same schedule after a streaming
/// one; in a shuffled order of 7 rounds the same schedule still measured 21.2 ms in one row
/// and 28.3 ms in another. So each timed run follows an untimed run of the same
/// implementation, as a sweep does in a time loop (the steady state the table reports),
/// and each round runs the implementations in a new pseudo-random order.
fn time_interleaved(
    repeats: usize,
    w: &mut Workload,
    imps: &[Imp<'_>],
    mut copy: Option<&mut dyn FnMut()>,
) -> Vec<Stats> {
    let n = imps.len() + usize::from(copy.is_some());
    let mut times = vec![Vec::with_capacity(repeats); n];
    let mut order: Vec<usize> = (0..n).collect();
    // Seeded: the same orders in every run of the bench.
    let mut rng = Rng::new(0x2545_F491_4F6C_DD1D);
    for round in 0..repeats + 2 {
        rng.shuffle(&mut order);
        for &k in &order {
            let mut run = || match imps.get(k) {
                Some(imp) => {
                    std::hint::black_box(w.run(*imp));
                }
                None => {
                    if let Some(c) = copy.as_mut() {
                        c();
                    }
                }
            };
            run(); // untimed: the cache state this implementation leaves itself
            let start = Instant::now();
            run();
            if round >= 2 {
                times[k].push(start.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    times.into_iter().map(Stats::of).collect()
}

/// Fastest of two runs after one warm-up, in milliseconds (for the sweep).
fn quick_time<R>(mut f: impl FnMut() -> R) -> f64 {
    f();
    (0..2)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(f());
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
    check_outputs(w, expected, what);
}

/// Checks the outputs as they are against `expected` (see [`check`]).
fn check_outputs(w: &Workload, expected: &[Vec<f64>], what: &str) {
    check_values(w.name, expected, &w.outputs(), what);
}

/// Checks output interiors `found` against `expected` (see [`check`]).
fn check_values(name: &str, expected: &[Vec<f64>], found: &[Vec<f64>], what: &str) {
    assert_eq!(expected.len(), found.len(), "bench: {name} {what}: outputs");
    for (e, f) in expected.iter().zip(found) {
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
            "bench: {name} {what}: {bad} values differ from the baseline"
        );
    }
}

fn main() {
    let o = options();
    if let Some((symbol, way, n)) = &o.sweeps_of {
        let backend = CpuBackend::new(1).expect("pool");
        match cached::sweeps_of(&backend, &c_loop::CLoops::build(), symbol, way, *n) {
            Ok(points) => println!("{n} sweeps of {symbol} ({points} points), {way}"),
            Err(why) => {
                eprintln!("bench: --sweeps-of {symbol}:{way}:{n}: {why}");
                std::process::exit(2);
            }
        }
        return;
    }
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
            "machine: {} cores, L1 {} KiB, L2 {} KiB, LLC {} MiB (as reported), {} NUMA node(s), vector {:?}",
            machine.cores,
            machine.l1_bytes >> 10,
            machine.l2_bytes >> 10,
            machine.llc_bytes >> 20,
            machine.topology.n_nodes(),
            machine.vector
        );
    }
    let streams = stream(&backends, o.repeats);
    let copy_src: Vec<f64> = (0..1usize << 24)
        .map(|i| (i % 1000) as f64 * 0.25)
        .collect();
    let mut copy_dst = vec![0.0f64; copy_src.len()];
    // The machine's cache capacities, measured now (what the library measures on its first
    // tuning and keeps for a week) and stored in the fresh caches, so the tuning times below
    // are the decisions' own.
    let tuned_sections = ["sweeps", "cache", "steps"].iter().any(|s| o.runs(s));
    let probe =
        tuned_sections.then(|| stencil_tune::probe::measure_caches(machine.reported_caches()));
    if let Some(probe) = &probe {
        stencil_cpu::set_measured_caches(probe.effective);
        if !o.json {
            eprintln!(
                "caches measured in {:.2} s: L1 {} KiB, L2 {} KiB, LLC {:.1} MiB (reported {:.1} MiB)",
                probe.seconds,
                probe.effective.l1_bytes >> 10,
                probe.effective.l2_bytes >> 10,
                probe.effective.llc_bytes as f64 / (1 << 20) as f64,
                probe.reported.llc_bytes as f64 / (1 << 20) as f64
            );
        } else {
            println!(
                "{{\"caches\":\"measured\",\"l1_bytes\":{},\"l2_bytes\":{},\"llc_bytes\":{},\
                 \"reported_l1_bytes\":{},\"reported_l2_bytes\":{},\"reported_llc_bytes\":{},\
                 \"seconds\":{:.3}}}",
                probe.effective.l1_bytes,
                probe.effective.l2_bytes,
                probe.effective.llc_bytes,
                probe.reported.l1_bytes,
                probe.reported.l2_bytes,
                probe.reported.llc_bytes,
                probe.seconds
            );
        }
    }
    // The tuner's caches, one per thread count, fresh for this run, holding the bandwidth
    // measured now (the library measures it once per machine), so the tuning times below are
    // the searches' own.
    let tune_dir = std::env::temp_dir().join(format!("stencil-bench-tune-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tune_dir);
    // (The `krylov` section tunes as a user's call does, in the default cache: it needs none.)
    let caches: Vec<TuningCache> = backends
        .iter()
        .map(|b| {
            let cache = TuningCache::at(tune_dir.join(format!("cpu-{}.json", b.threads())));
            if !tuned_sections {
                return cache;
            }
            if let Some(probe) = &probe {
                cache
                    .store_caches(b.fingerprint(), probe)
                    .expect("bench: cannot write the tuning cache");
            }
            let start = Instant::now();
            let bandwidth = b.copy_bandwidth();
            if !o.json {
                eprintln!(
                    "tuner bandwidth, {} thr: {:.1} GB/s (measured in {:.2} s)",
                    b.threads(),
                    bandwidth / 1e9,
                    start.elapsed().as_secs_f64()
                );
            }
            cache
                .store_bandwidth(b.fingerprint(), b.threads(), bandwidth)
                .expect("bench: cannot write the tuning cache");
            cache
        })
        .collect();
    let mut rows = Vec::new();
    let mut tuner_rows = Vec::new();
    let mut padding_rows = Vec::new();
    // Only the sweeps and the time loops use these grids.
    let mut workloads = if o.runs("sweeps") || o.runs("steps") || o.runs("noise") {
        Workload::all(&backends[1], o.n3, o.n2)
    } else {
        Vec::new()
    };
    let sweep_start = Instant::now();
    for w in workloads.iter_mut().filter(|_| o.runs("sweeps")) {
        let bytes_per_point = analysis::bytes_per_point(w.stencil.kernel());
        w.poison_outputs();
        w.run(Imp::NaiveSerial);
        let expected = w.outputs();
        for ((backend, pool), cache) in backends.iter().zip(&pools).zip(&caches) {
            let threads = backend.threads();
            // First call with a fresh cache: tunes, and its own output must be right.
            w.poison_outputs();
            let tuned = w
                .run(Imp::Tuned(backend, cache))
                .expect("library runs report");
            check_outputs(w, &expected, "stencil-tuned (first call)");
            // Interiors below the threshold run the default under `quick` (`--n3`, `--n2`).
            let tunes = w.points() >= stencil::tuning::MIN_TUNED_POINTS;
            assert!(
                !tunes || tuned.source == stencil::TuningSource::Tuned,
                "bench: the first call did not tune: {tuned}"
            );
            // The layout search: the tuned schedule of every row padding on padded copies,
            // then the workload's padded copies in the fastest one (each padding's schedule
            // is in the cache now, so the padded run below is a cache hit).
            let search_start = Instant::now();
            let padding = w.search_padding(backend, cache);
            let search_seconds = search_start.elapsed().as_secs_f64();
            w.pad(backend, padding.best);
            w.poison_padded_outputs();
            let padded = w
                .run(Imp::TunedPadded(backend, cache))
                .expect("library runs report");
            let found = w.padded_outputs();
            check_values(w.name, &expected, &found, "stencil-tuned padded");
            padding_rows.push(PaddingRow {
                workload: w.name,
                threads,
                seconds: search_seconds,
                report: padding.clone(),
            });
            check(w, Imp::NaiveRayon(pool), &expected, "naive rows+rayon");
            check(
                w,
                Imp::Library(backend, default_schedule()),
                &expected,
                "library default",
            );
            // Exhaustive sweep of the schedule space.
            let space = ScheduleSpace::new(machine, w.stencil.kernel(), &w.shape, threads);
            // Exhaustive sweep: every schedule timed quickly (fastest of two runs), then the
            // five fastest timed again, interleaved, and the best median kept, so noise in
            // the quick pass does not pick the winner.
            let mut swept: Vec<(f64, CpuSchedule)> = std::iter::once(CpuSchedule::default())
                .chain(space.iter())
                .map(|s| {
                    let t = quick_time(|| w.run(Imp::Library(backend, Schedule::Cpu(s))));
                    (t, s)
                })
                .collect();
            swept.sort_by(|a, b| a.0.total_cmp(&b.0));
            swept.truncate(5);
            let finalists: Vec<Imp<'_>> = swept
                .iter()
                .map(|(_, s)| Imp::Library(backend, Schedule::Cpu(*s)))
                .collect();
            let finals = time_interleaved(o.repeats, w, &finalists, None);
            let winner = (0..finals.len())
                .min_by(|&a, &b| finals[a].median.total_cmp(&finals[b].median))
                .expect("five finalists");
            let best = swept[winner].1;
            let best_schedule = Schedule::Cpu(best);
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
                    best
                );
            }
            // The implementations, timed interleaved (one run of each per round), so a slow
            // spell of this shared machine hits all of them alike.
            let mut imps: Vec<(&str, Imp<'_>, Option<String>)> = Vec::new();
            if threads == 1 {
                imps.push(("naive rows serial", Imp::NaiveSerial, None));
            }
            imps.push(("naive rows+rayon", Imp::NaiveRayon(pool), None));
            imps.push((
                "library default",
                Imp::Library(backend, default_schedule()),
                Some(format!("{:?}", CpuSchedule::default())),
            ));
            imps.push((
                "library best",
                Imp::Library(backend, best_schedule),
                Some(format!("{best:?}")),
            ));
            imps.push((
                "stencil-tuned",
                Imp::Tuned(backend, cache),
                Some(tuned.description.clone()),
            ));
            imps.push((
                "stencil-tuned padded",
                Imp::TunedPadded(backend, cache),
                Some(format!(
                    "row padding {}: {}",
                    padding.best, padded.description
                )),
            ));
            let runs: Vec<Imp<'_>> = imps.iter().map(|(_, imp, _)| *imp).collect();
            // The non-temporal copy in the same rounds: the bound each row is compared with
            // is measured under the same conditions as the row (this machine's bandwidth
            // moves by tens of percent over a run).
            let mut copy = || backend.stream_copy(&mut copy_dst, &copy_src, true);
            let mut stats = time_interleaved(o.repeats, w, &runs, Some(&mut copy));
            let copy_stats = stats.pop().expect("copy timed");
            let nt_gbs = (16 * copy_src.len()) as f64 / (copy_stats.median * 1e-3) / 1e9;
            let measured: Vec<(String, Stats, Option<String>)> = imps
                .into_iter()
                .zip(stats)
                .map(|((name, _, schedule), stats)| (name.to_string(), stats, schedule))
                .collect();
            let tuned_stats = measured
                .iter()
                .find(|m| m.0 == "stencil-tuned")
                .map(|m| m.1)
                .expect("tuned row");
            let median_of = |name: &str| {
                measured
                    .iter()
                    .find(|m| m.0 == name)
                    .map_or(f64::NAN, |m| m.1.median)
            };
            tuner_rows.push(TunerRow {
                workload: w.name,
                threads,
                trials: tuned.trials,
                space: space.len(),
                tuning_seconds: tuned.tuning_seconds,
                tuned_ms: tuned_stats.median,
                best_ms: median_of("library best"),
                default_ms: median_of("library default"),
                cut_short: tuned.cut_short,
                evidence: tuned.evidence_summary(),
                schedule: tuned.description.clone(),
            });
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
                    nt_gbs,
                    naive_rayon_ms,
                    schedule,
                });
            }
        }
    }
    let sweeps_seconds = sweep_start.elapsed().as_secs_f64();
    // Cache-resident sweeps and the fixed cost of a call.
    let mut cache_rows = Vec::new();
    let mut run_costs = Vec::new();
    let mut loop_rows = Vec::new();
    let mut c_loops = Err(String::new());
    if o.runs("cache") {
        cache_rows = cached::rows(&backends, &pools, &caches, (64, 1024), o.repeats);
        c_loops = c_loop::CLoops::build();
        loop_rows = cached::loop_rows(&backends[0], &caches[0], &c_loops, o.repeats);
        run_costs = backends
            .iter()
            .map(|b| (b.threads(), cached::run_cost(b)))
            .collect();
    }
    // Time loops.
    let mut steps_rows = Vec::new();
    let mut steps_tuner = Vec::new();
    if o.runs("steps") {
        let mut copy = |backend: &CpuBackend| {
            let start = Instant::now();
            backend.stream_copy(&mut copy_dst, &copy_src, true);
            (16 * copy_src.len()) as f64 / start.elapsed().as_secs_f64() / 1e9
        };
        let mut section = timeloop::Section {
            backends: &backends,
            pools: &pools,
            caches: &caches,
            repeats: o.steps_repeats,
            copy: &mut copy,
        };
        (steps_rows, steps_tuner) = timeloop::rows(&mut section, &mut workloads, o.json);
    }
    // A whole simulation step: the staggered acoustic solver's two stages with a source and
    // receivers.
    let mut acoustic_rows = Vec::new();
    if o.runs("acoustic") {
        let mut copy = |backend: &CpuBackend| {
            let start = Instant::now();
            backend.stream_copy(&mut copy_dst, &copy_src, true);
            (16 * copy_src.len()) as f64 / start.elapsed().as_secs_f64() / 1e9
        };
        acoustic_rows = acoustic::rows(
            &backends,
            &pools,
            &caches,
            &mut copy,
            (o.n3, 100, o.steps_repeats),
            o.json,
        );
    }
    // The paired rule against noise.
    let mut noise_rows = Vec::new();
    if o.runs("noise") {
        let w1 = workloads
            .iter_mut()
            .find(|w| w.name.starts_with("W1"))
            .expect("W1");
        noise_rows = noise::rows(&backends, w1, o.noise_comparisons);
    }
    // Krylov vector kernels and a CG iteration.
    let mut krylov_rows = Vec::new();
    if o.runs("krylov") {
        // The sweeps' grids are not needed any more: free them for the section's vectors.
        drop(workloads);
        let krylov_start = Instant::now();
        let mut copy = |backend: &CpuBackend| backend.stream_copy(&mut copy_dst, &copy_src, true);
        let mut section = krylov::Section {
            backends: &backends,
            pools: &pools,
            repeats: o.repeats,
            llc_bytes: machine.llc(),
            copy: &mut copy,
            copy_bytes: 16 * copy_src.len(),
            quiet: o.json,
        };
        krylov_rows = krylov::rows(&mut section);
        if !o.json {
            eprintln!(
                "krylov section took {:.1} s",
                krylov_start.elapsed().as_secs_f64()
            );
        }
    }
    let svg = report::svg(&streams, &rows);
    std::fs::write(&o.svg, svg).unwrap_or_else(|e| panic!("bench: cannot write {:?}: {e}", o.svg));
    let _ = std::fs::remove_dir_all(&tune_dir);
    if o.json {
        for s in &streams {
            println!("{}", s.json());
        }
        for r in &rows {
            println!("{}", r.json());
        }
        for t in &tuner_rows {
            println!("{}", t.json());
        }
        for p in &padding_rows {
            println!("{}", p.json());
        }
        for r in cache_rows.iter().chain(&steps_rows) {
            println!("{}", r.json());
        }
        for (threads, us) in &run_costs {
            println!("{{\"run_cost_8cubed_us\":{us:.3},\"threads\":{threads}}}");
        }
        if o.runs("cache") {
            match &c_loops {
                Ok(loops) => println!(
                    "{{\"c_loop\":\"{}\",\"flags\":[\"{}\",\"{}\"]}}",
                    loops.compiler.replace('"', "'"),
                    loops.flags[0],
                    loops.flags[1]
                ),
                Err(why) => println!("{{\"c_loop\":null,\"why\":\"{}\"}}", why.replace('"', "'")),
            }
        }
        for r in &loop_rows {
            println!("{}", r.json());
        }
        for t in &steps_tuner {
            println!("{}", t.json());
        }
        for r in &acoustic_rows {
            println!("{}", r.json());
        }
        for r in &krylov_rows {
            println!("{}", r.json());
        }
        for r in &noise_rows {
            println!("{}", r.json());
        }
    } else {
        if o.runs("sweeps") {
            print!("{}", report::table(&streams, &rows));
            print!("{}", report::tuner_table(&tuner_rows));
            print!("{}", report::padding_table(&padding_rows));
            println!(
                "\n(sweeps and checks took {sweeps_seconds:.0} s; best schedules are printed on \
                 stderr)"
            );
        }
        if o.runs("cache") {
            println!("\ncache-resident sweeps (ms per sweep; x naive: over the rayon rows loop):");
            print!("{}", report::rows_table(&cache_rows));
            for (threads, us) in &run_costs {
                println!("run() of the 7-point stencil on 8^3, {threads} thr: {us:.2} us");
            }
            println!(
                "\nloops in cache, 1 thread (x C: the C loop's median over the row's, timed in \
                 the same rounds; of bound: the C copy loop's median over the row's; C loop: \
                 {}):",
                match &c_loops {
                    Ok(loops) => format!(
                        "{}, {} and {}",
                        loops.compiler, loops.flags[0], loops.flags[1]
                    ),
                    Err(why) => why.clone(),
                }
            );
            print!("{}", cached::loop_table(&loop_rows));
        }
        if o.runs("steps") {
            println!(
                "\ntime loops (ms per step; %NTcopy above 100%: faster than the single-sweep \
                 bound):"
            );
            print!("{}", report::rows_table(&steps_rows));
            print!("{}", timeloop::tuner_table(&steps_tuner));
        }
        if o.runs("acoustic") {
            println!(
                "\nacoustic 3-D, {n}^3, 100 steps, 1 source, 256 receivers (ms per step; x run(): \
                 over `run()` per kernel; bound: the single-sweep bound's time over the row's):",
                n = o.n3
            );
            print!("{}", acoustic::table(&acoustic_rows));
        }
        if o.runs("krylov") {
            println!(
                "\nkrylov (vectors of 2^25 f64, CG at 256^3; GB/s at compulsory bytes; bound: \
                 read = in-process sum, copy = NT copy (16 B per element), both timed in the \
                 same rounds; x plain: the plain loop's time over the row's):"
            );
            print!("{}", krylov::table(&krylov_rows));
        }
        if o.runs("noise") {
            print!("{}", noise::table(&noise_rows));
        }
    }
    eprintln!("bar chart written to {}", o.svg.display());
}
