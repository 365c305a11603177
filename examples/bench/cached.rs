//! The cache-resident rows: W1 at 64^3 and W3 at 1024^2 (grids the last-level cache holds),
//! where the loop itself, not memory, sets the speed: the hand-written rows loops next to the
//! library's default and tuned schedules, in points per second; and the fixed cost of one
//! `run()` (the 7-point stencil on an 8^3 grid, which computes in well under a microsecond).
//! Then the loops in cache on one thread ([`loop_rows`]): W1, W2, W3 and the radius-4 star,
//! each in f64 and f32, the library's default and tuned schedules beside the naive C loop compiled
//! in the same run (module `c_loop`), timed in the same rounds, and each kernel's `#[fma]`
//! variant under the default schedule ("library, fma": one rounding per `a * b + c`, as gcc
//! contracts by default; fast only where the build targets an FMA instruction). Each kernel
//! ends with the C loop copying its input to its output in the same rounds ("C copy
//! (bound)"): every row's "of bound" is that copy's median over the row's, the fraction of
//! the speed the grids' cache level allows a one-input sweep on this machine.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use stencil::prelude::*;
use stencil::{
    CpuBackend, CpuSchedule, Element, Launch, Schedule, TunePolicy, TuningCache, analysis, kernels,
};

use crate::c_loop::{CLoops, Sweep};
use crate::report::{Row, Stats};
use crate::workloads::{Imp, Workload};

stencil! {
    /// The 2-D 5-point Laplacian in f32.
    fn five_point_f32(u: &Grid2<f32>, out: &mut Grid2<f32>, c0: f32, c1: f32) {
        out[i, j] = c0 * u[i, j] + c1 * (u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1]);
    }

    /// The same with fused multiply-add.
    #[fma]
    fn five_point_f32_fma(u: &Grid2<f32>, out: &mut Grid2<f32>, c0: f32, c1: f32) {
        out[i, j] = c0 * u[i, j] + c1 * (u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1]);
    }

    /// The radius-4 3-D star (`kernels::star4`) in f32.
    fn star4_f32(u: &Grid3<f32>, out: &mut Grid3<f32>, c0: f32, c1: f32, c2: f32, c3: f32, c4: f32) {
        out[i, j, k] = c0 * u[i, j, k]
            + c1 * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k] + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1])
            + c2 * (u[i-2, j, k] + u[i+2, j, k] + u[i, j-2, k] + u[i, j+2, k] + u[i, j, k-2] + u[i, j, k+2])
            + c3 * (u[i-3, j, k] + u[i+3, j, k] + u[i, j-3, k] + u[i, j+3, k] + u[i, j, k-3] + u[i, j, k+3])
            + c4 * (u[i-4, j, k] + u[i+4, j, k] + u[i, j-4, k] + u[i, j+4, k] + u[i, j, k-4] + u[i, j, k+4]);
    }

    /// The same with fused multiply-add.
    #[fma]
    fn star4_f32_fma(u: &Grid3<f32>, out: &mut Grid3<f32>, c0: f32, c1: f32, c2: f32, c3: f32, c4: f32) {
        out[i, j, k] = c0 * u[i, j, k]
            + c1 * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k] + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1])
            + c2 * (u[i-2, j, k] + u[i+2, j, k] + u[i, j-2, k] + u[i, j+2, k] + u[i, j, k-2] + u[i, j, k+2])
            + c3 * (u[i-3, j, k] + u[i+3, j, k] + u[i, j-3, k] + u[i, j+3, k] + u[i, j, k-3] + u[i, j, k+3])
            + c4 * (u[i-4, j, k] + u[i+4, j, k] + u[i, j-4, k] + u[i, j+4, k] + u[i, j, k-4] + u[i, j, k+4]);
    }
}

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

/// Per-sweep times in ms of each implementation (see [`rounds`]).
fn interleaved(w: &mut Workload, imps: &[(&str, Imp<'_>)], repeats: usize) -> Vec<Stats> {
    rounds(imps.len(), repeats, |k| {
        w.run(imps[k].1);
    })
}

/// Per-sweep times in ms of `n` implementations, `sweep(k)` running implementation `k` once:
/// each timed run repeats the sweep for at least [`RUN`], the implementations interleaved
/// over `repeats` rounds after one untimed.
fn rounds(n: usize, repeats: usize, mut sweep: impl FnMut(usize)) -> Vec<Stats> {
    let mut times = vec![Vec::new(); n];
    for round in 0..=repeats {
        for (k, times) in times.iter_mut().enumerate() {
            let start = Instant::now();
            let mut sweeps = 0;
            while sweeps < 3 || start.elapsed() < RUN {
                sweep(k);
                sweeps += 1;
            }
            if round > 0 {
                times.push(start.elapsed().as_secs_f64() * 1e3 / sweeps as f64);
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

/// One row of the loops in cache: an implementation of one kernel on one thread.
pub(crate) struct LoopRow {
    /// Kernel, element type and grid.
    pub(crate) kernel: &'static str,
    /// Implementation name.
    pub(crate) imp: String,
    /// Times per sweep, ms.
    pub(crate) stats: Stats,
    /// Interior points.
    pub(crate) points: usize,
    /// Median of the C loop (contracting, then `-ffp-contract=off`) in the same rounds; NaN
    /// without `cc`.
    pub(crate) c_ms: [f64; 2],
    /// Median of the C copy loop on the same grids in the same rounds (the bound); NaN
    /// without `cc`.
    pub(crate) copy_ms: f64,
    /// The schedule the tuner chose, for the tuned row.
    pub(crate) schedule: Option<String>,
}

impl LoopRow {
    /// Billions of points per second at the median.
    fn gpts(&self) -> f64 {
        self.points as f64 / (self.stats.median * 1e-3) / 1e9
    }

    /// The row as one JSON object (`over_c`: the C loop's median over the row's; `of_bound`:
    /// the copy loop's median over the row's; null without `cc`).
    pub(crate) fn json(&self) -> String {
        let over = |c: f64| {
            if c.is_finite() {
                format!("{:.3}", c / self.stats.median)
            } else {
                "null".to_string()
            }
        };
        format!(
            "{{\"in_cache\":\"{}\",\"impl\":\"{}\",\"threads\":1,\"ms_median\":{:.4},\
             \"ms_min\":{:.4},\"ms_max\":{:.4},\"gpts\":{:.4},\"over_c\":{},\
             \"over_c_nofma\":{},\"of_bound\":{},\"schedule\":{}}}",
            self.kernel,
            self.imp,
            self.stats.median,
            self.stats.min,
            self.stats.max,
            self.gpts(),
            over(self.c_ms[0]),
            over(self.c_ms[1]),
            over(self.copy_ms),
            self.schedule
                .as_ref()
                .map_or("null".to_string(), |s| format!("{s:?}")),
        )
    }
}

/// The table of [`LoopRow`]s.
pub(crate) fn loop_table(rows: &[LoopRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<22} {:<28} {:>9} {:>17} {:>7} {:>7} {:>9} {:>8}",
        "kernel", "impl", "median ms", "min-max ms", "GPt/s", "x C", "x C nofma", "of bound"
    );
    let mut last = "";
    for r in rows {
        if r.kernel != last && !last.is_empty() {
            out.push('\n');
        }
        last = r.kernel;
        let over = |c: f64| {
            if c.is_finite() {
                format!("{:.2}x", c / r.stats.median)
            } else {
                "-".to_string()
            }
        };
        let bound = if r.copy_ms.is_finite() {
            format!("{:.0}%", 100.0 * r.copy_ms / r.stats.median)
        } else {
            "-".to_string()
        };
        let _ = writeln!(
            out,
            "{:<22} {:<28} {:>9.4} {:>8.4}-{:<8.4} {:>7.3} {:>7} {:>9} {:>8}",
            r.kernel,
            r.imp,
            r.stats.median,
            r.stats.min,
            r.stats.max,
            r.gpts(),
            over(r.c_ms[0]),
            over(r.c_ms[1]),
            bound,
        );
    }
    out.push('\n');
    for r in rows {
        if let Some(schedule) = &r.schedule {
            let _ = writeln!(out, "{:<22} tuned: {schedule}", r.kernel);
        }
    }
    out
}

/// The loops in cache on `backend` (one thread): per kernel, the C loop of each build (when
/// `cc` built them), the library's default schedule and its tuned one (`cache`), timed in
/// the same rounds, each checked first against the library's default. The C loops are
/// `Err(why)` when they could not be built.
pub(crate) fn loop_rows(
    backend: &CpuBackend,
    cache: &TuningCache,
    loops: &Result<CLoops, String>,
    repeats: usize,
) -> Vec<LoopRow> {
    cases()
        .into_iter()
        .flat_map(|mut case| case.measure(backend, cache, loops, repeats))
        .collect()
}

/// `sweeps` sweeps of the loop in cache whose C symbol is `symbol` (`w1_f64`, ...): `way`
/// `c` (the contracting C build), `c-nofma` (`-ffp-contract=off`) or `library` (the default
/// schedule on `backend`), for counting instructions (`bench/instructions.sh` runs two counts
/// of sweeps under callgrind and divides the difference by the points). Why not, when the
/// symbol or the way is unknown or the C loops could not be built.
pub(crate) fn sweeps_of(
    backend: &CpuBackend,
    loops: &Result<CLoops, String>,
    symbol: &str,
    way: &str,
    sweeps: usize,
) -> Result<usize, String> {
    let mut case = cases()
        .into_iter()
        .find(|case| case.symbol() == symbol)
        .ok_or_else(|| format!("no loop in cache named {symbol}"))?;
    case.sweeps(backend, loops, way, sweeps)?;
    Ok(case.points())
}

/// The kernels of [`loop_rows`], in its order.
fn cases() -> Vec<Box<dyn Measured>> {
    let c = [0.4, 0.1, 0.05, 0.025, 0.0125];
    let steady = [0.4, 0.05, 0.02, 0.0075, 0.0];
    let star = [0.4, 0.05, 0.03, 0.015, 0.005];
    vec![
        Box::new(Case::<f64, 3>::new(
            "W1 7-pt f64 64^3",
            "w1_f64",
            [64; 3],
            1,
            c,
            |u, o, c| kernels::jacobi7(u, o, c[0], c[1]),
        )),
        Box::new(Case::<f32, 3>::new(
            "W1 7-pt f32 64^3",
            "w1_f32",
            [64; 3],
            1,
            c,
            |u, o, c| kernels::jacobi7_f32(u, o, c[0], c[1]),
        )),
        Box::new(Case::<f64, 3>::new(
            "W2 27-pt f64 64^3",
            "w2_f64",
            [64; 3],
            1,
            steady,
            |u, o, c| kernels::jacobi27(u, o, c[0], c[1], c[2], c[3]),
        )),
        Box::new(Case::<f32, 3>::new(
            "W2 27-pt f32 64^3",
            "w2_f32",
            [64; 3],
            1,
            steady,
            |u, o, c| kernels::jacobi27_f32(u, o, c[0], c[1], c[2], c[3]),
        )),
        Box::new(Case::<f64, 2>::new(
            "W3 5-pt f64 1024^2",
            "w3_f64",
            [1024; 2],
            1,
            c,
            |u, o, c| kernels::five_point(u, o, c[0], c[1]),
        )),
        Box::new(Case::<f32, 2>::new(
            "W3 5-pt f32 1024^2",
            "w3_f32",
            [1024; 2],
            1,
            c,
            |u, o, c| five_point_f32(u, o, c[0], c[1]),
        )),
        Box::new(Case::<f64, 3>::new(
            "star r4 25-pt f64 64^3",
            "star4_f64",
            [64; 3],
            4,
            star,
            |u, o, c| kernels::star4(u, o, c[0], c[1], c[2], c[3], c[4]),
        )),
        Box::new(Case::<f32, 3>::new(
            "star r4 25-pt f32 64^3",
            "star4_f32",
            [64; 3],
            4,
            star,
            |u, o, c| star4_f32(u, o, c[0], c[1], c[2], c[3], c[4]),
        )),
    ]
}

/// The `#[fma]` variant of the kernel of C symbol `symbol`, if it has one.
fn fma_variant<T: Element, const D: usize>(symbol: &str) -> Option<Bind<T, D>> {
    let w1: Bind<f64, 3> = |u, o, c| kernels::jacobi7_fma(u, o, c[0], c[1]);
    let w1_f32: Bind<f32, 3> = |u, o, c| kernels::jacobi7_f32_fma(u, o, c[0], c[1]);
    let w2: Bind<f64, 3> = |u, o, c| kernels::jacobi27_fma(u, o, c[0], c[1], c[2], c[3]);
    let w2_f32: Bind<f32, 3> = |u, o, c| kernels::jacobi27_f32_fma(u, o, c[0], c[1], c[2], c[3]);
    let w3: Bind<f64, 2> = |u, o, c| kernels::five_point_fma(u, o, c[0], c[1]);
    let w3_f32: Bind<f32, 2> = |u, o, c| five_point_f32_fma(u, o, c[0], c[1]);
    let star: Bind<f64, 3> = |u, o, c| kernels::star4_fma(u, o, c[0], c[1], c[2], c[3], c[4]);
    let star_f32: Bind<f32, 3> = |u, o, c| star4_f32_fma(u, o, c[0], c[1], c[2], c[3], c[4]);
    let variant: Box<dyn std::any::Any> = match symbol {
        "w1_f64" => Box::new(w1),
        "w1_f32" => Box::new(w1_f32),
        "w2_f64" => Box::new(w2),
        "w2_f32" => Box::new(w2_f32),
        "w3_f64" => Box::new(w3),
        "w3_f32" => Box::new(w3_f32),
        "star4_f64" => Box::new(star),
        "star4_f32" => Box::new(star_f32),
        _ => return None,
    };
    variant.downcast::<Bind<T, D>>().ok().map(|b| *b)
}

/// A kernel's call on its grids and coefficients.
type Bind<T, const D: usize> =
    for<'a> fn(&'a Grid<T, D>, &'a mut Grid<T, D>, &[T; 5]) -> Launch<'a, T, D>;

/// One kernel of [`loop_rows`]: its grids, coefficients, C loop and call.
struct Case<T: Element, const D: usize> {
    name: &'static str,
    symbol: &'static str,
    u: Grid<T, D>,
    out: Grid<T, D>,
    coefficients: [T; 5],
    bind: Bind<T, D>,
    /// The same kernel with fused multiply-add (`#[fma]`), for the "library, fma" row.
    fused: Option<Bind<T, D>>,
}

/// How a [`Case`] sweeps once.
enum Way<'a, T> {
    C(Sweep<T>),
    Library(&'a CpuBackend, Schedule),
    /// The `#[fma]` variant under a schedule.
    Fused(&'a CpuBackend, Schedule),
    Tuned(&'a CpuBackend, &'a TuningCache),
}

/// A [`Case`] of any element type and dimension.
trait Measured {
    /// The C loop's symbol (`w1_f64`, ...).
    fn symbol(&self) -> &'static str;
    /// The interior's points.
    fn points(&self) -> usize;
    /// `n` sweeps of the way named `way` (see [`sweeps_of`]).
    fn sweeps(
        &mut self,
        backend: &CpuBackend,
        loops: &Result<CLoops, String>,
        way: &str,
        n: usize,
    ) -> Result<(), String>;
    fn measure(
        &mut self,
        backend: &CpuBackend,
        cache: &TuningCache,
        loops: &Result<CLoops, String>,
        repeats: usize,
    ) -> Vec<LoopRow>;
}

impl<T: Element, const D: usize> Case<T, D> {
    fn new(
        name: &'static str,
        symbol: &'static str,
        shape: [usize; D],
        halo: usize,
        coefficients: [f64; 5],
        bind: Bind<T, D>,
    ) -> Self {
        let mut u = Grid::<T, D>::with_halo(shape, halo).expect("grid");
        // Values in [0.5, 1.5), halo included, so a sweep reads no zeros.
        for (n, v) in u.as_mut_slice().iter_mut().enumerate() {
            *v = T::from_f64(0.5 + ((n * 7919) % 1000) as f64 / 1000.0);
        }
        let out = u.like();
        Case {
            name,
            symbol,
            u,
            out,
            coefficients: coefficients.map(T::from_f64),
            bind,
            fused: fma_variant::<T, D>(symbol),
        }
    }

    /// One sweep; for [`Way::Tuned`], the description of the schedule it ran.
    fn sweep(&mut self, way: &Way<'_, T>) -> Option<String> {
        match *way {
            Way::C(sweep) => {
                let g = *self.u.geometry();
                assert!(
                    g == *self.out.geometry(),
                    "bench: one layout for both grids"
                );
                let d: [i64; 5] = if D == 3 {
                    [
                        g.shape[0],
                        g.shape[1],
                        g.shape[2],
                        g.strides[0],
                        g.strides[1],
                    ]
                } else {
                    [1, g.shape[0], g.shape[1], 0, g.strides[0]]
                }
                .map(|x| x as i64);
                let u = self.u.as_slice()[g.origin..].as_ptr();
                let out = self.out.as_mut_slice()[g.origin..].as_mut_ptr();
                // SAFETY: both grids have layout `g`, whose halo covers the kernel's reach,
                // so the loop reads only `u`'s storage and writes only `out`'s interior; the
                // two are distinct allocations (`restrict`), `d` and the coefficients live
                // through the call.
                unsafe { sweep(u, out, d.as_ptr(), self.coefficients.as_ptr()) };
                None
            }
            Way::Library(backend, schedule) => {
                (self.bind)(&self.u, &mut self.out, &self.coefficients)
                    .on(backend)
                    .schedule(schedule)
                    .run()
                    .expect("bench: run");
                None
            }
            Way::Fused(backend, schedule) => {
                let fused = self
                    .fused
                    .expect("bench: a Fused way needs the fma variant");
                fused(&self.u, &mut self.out, &self.coefficients)
                    .on(backend)
                    .schedule(schedule)
                    .run()
                    .expect("bench: run");
                None
            }
            Way::Tuned(backend, cache) => (self.bind)(&self.u, &mut self.out, &self.coefficients)
                .on(backend)
                .tune(TunePolicy::Quick)
                .tuning_cache(cache.clone())
                .run_with_report()
                .map(|report| Some(report.description))
                .expect("bench: run"),
        }
    }

    /// The output interior after sweeping `way` over a NaN-poisoned output.
    fn output(&mut self, way: &Way<'_, T>) -> Vec<f64> {
        self.out.as_mut_slice().fill(T::from_f64(f64::NAN));
        self.sweep(way);
        self.out.to_vec().into_iter().map(T::to_f64).collect()
    }
}

impl<T: Element, const D: usize> Measured for Case<T, D> {
    fn symbol(&self) -> &'static str {
        self.symbol
    }

    fn points(&self) -> usize {
        self.u.geometry().shape[..D].iter().product()
    }

    fn sweeps(
        &mut self,
        backend: &CpuBackend,
        loops: &Result<CLoops, String>,
        way: &str,
        n: usize,
    ) -> Result<(), String> {
        let way = match way {
            "c" | "c-nofma" => Way::C(loops.as_ref()?.sweep(self.symbol, way == "c")),
            "library" => Way::Library(backend, Schedule::Cpu(CpuSchedule::default())),
            other => return Err(format!("no way {other}: c, c-nofma or library")),
        };
        for _ in 0..n {
            self.sweep(&way);
        }
        Ok(())
    }

    fn measure(
        &mut self,
        backend: &CpuBackend,
        cache: &TuningCache,
        loops: &Result<CLoops, String>,
        repeats: usize,
    ) -> Vec<LoopRow> {
        let mut ways: Vec<(String, Way<'_, T>)> = Vec::new();
        if let Ok(loops) = loops {
            for (contract, name) in [
                (true, "C -O3 -march=native"),
                (false, "C -ffp-contract=off"),
            ] {
                ways.push((name.to_string(), Way::C(loops.sweep(self.symbol, contract))));
            }
        }
        let n_c = ways.len();
        ways.push((
            "library default".to_string(),
            Way::Library(backend, Schedule::Cpu(CpuSchedule::default())),
        ));
        // The default without software prefetching: what the prefetches cost in cache.
        let no_prefetch = CpuSchedule {
            prefetch: 0,
            ..CpuSchedule::default()
        };
        ways.push((
            "library default, prefetch 0".to_string(),
            Way::Library(backend, Schedule::Cpu(no_prefetch)),
        ));
        ways.push(("stencil-tuned".to_string(), Way::Tuned(backend, cache)));
        if self.fused.is_some() {
            // Fused multiply-add (one rounding per `a * b + c`), as gcc contracts by default.
            ways.push((
                "library, fma".to_string(),
                Way::Fused(backend, Schedule::Cpu(CpuSchedule::default())),
            ));
        }
        // The first tuned call tunes; then every way against the library's default.
        let tuned = self.sweep(&Way::Tuned(backend, cache));
        let expected = self.output(&ways[n_c].1);
        let tolerance = if size_of::<T>() == 4 { 1e-5 } else { 1e-12 };
        for (name, way) in &ways {
            let found = self.output(way);
            let bad = expected
                .iter()
                .zip(&found)
                .filter(|(a, b)| {
                    // NaN (an unwritten point) is never close.
                    let close = (*a - *b).abs() <= tolerance * a.abs().max(1.0);
                    !close
                })
                .count();
            assert!(bad == 0, "bench: {} {name}: {bad} values differ", self.name);
        }
        // The bound, last and unchecked (it computes a copy): the C loop moving the same
        // bytes with no arithmetic, timed in the same rounds.
        if let Ok(loops) = loops {
            let copy = if size_of::<T>() == 4 {
                "copy_f32"
            } else {
                "copy_f64"
            };
            ways.push((
                "C copy (bound)".to_string(),
                Way::C(loops.sweep(copy, true)),
            ));
        }
        let stats = rounds(ways.len(), repeats, |k| {
            self.sweep(&ways[k].1);
        });
        let (c_ms, copy_ms) = if n_c == 2 {
            let copy = stats[ways.len() - 1].median;
            ([stats[0].median, stats[1].median], copy)
        } else {
            ([f64::NAN; 2], f64::NAN)
        };
        let points = self.points();
        ways.into_iter()
            .zip(stats)
            .map(|((imp, way), stats)| LoopRow {
                kernel: self.name,
                imp,
                stats,
                points,
                c_ms,
                copy_ms,
                schedule: matches!(way, Way::Tuned(..))
                    .then(|| tuned.clone())
                    .flatten(),
            })
            .collect()
    }
}
