//! The `krylov` section: the vector kernels of `stencil::krylov` (dot, norm2 squared, waxpy)
//! on vectors of 2^25 `f64` and one conjugate-gradient iteration at 256^3, against the machine
//! measured in the same rounds.
//!
//! Vector rows, for 1 and 2 threads: the library (`.on(&backend).run()`, tuned as a user gets
//! it: the first, warm-up call tunes or finds its schedule in the default tuning cache), the
//! plain loop a user would write (`x.iter().zip(y).map(|(a, b)| a * b).sum()` on the calling
//! thread for 1 thread, the same over rayon's `par_iter` in a pool of 2 for 2 threads), and
//! two bounds: the read bandwidth (an in-process sum of an array of 4x the last-level cache,
//! at least 256 MiB and at most 2 GiB, with 16 accumulators per thread so the adds never
//! limit it, the array split into one contiguous share per thread) and the bench's
//! non-temporal STREAM copy (16 bytes per element: read + write). All are timed interleaved
//! (a new pseudo-random order each round, each timed run right after an untimed run of the
//! same implementation, two warm-up rounds), medians of `--repeats`. Compulsory bytes: dot 16
//! per point (two reads), norm2 8 (one read), axpy 24 (two reads, one write); dot and norm2
//! are compared with the read bandwidth, axpy with the copy bandwidth.
//!
//! The CG row, with 2 threads: one iteration of unpreconditioned CG on the 7-point Poisson
//! operator at 256^3 (Dirichlet-0 halos) from the library's fused and in-place kernels
//! (`poisson_apply_dot`, `axpy_3d` for x, `update_residual` with its norm, `aypx_3d` for p), per
//! iteration (median of `--repeats` after two warm-up iterations, the first of which tunes
//! each kernel), with the copy timed after each iteration; its compulsory traffic is 11 grid
//! passes (read p, write q | read p and x, write x | read q and r, write r | read r and p,
//! write p).

use std::fmt::Write as _;
use std::time::Instant;

use rayon::prelude::*;
use stencil::krylov::{
    axpy_3d, aypx_3d, dot, norm2_squared, poisson_apply_dot, update_residual, waxpy,
};
use stencil::prelude::*;
use stencil::{CpuBackend, TuneReport};

use crate::report::Stats;

/// Points of the vectors.
const N: usize = 1 << 25;
/// Interior extent of the CG grids.
const N3: usize = 256;
/// The waxpy coefficient.
const A: f64 = 0.75;

/// Everything the section needs from the bench.
pub(crate) struct Section<'a> {
    pub(crate) backends: &'a [CpuBackend],
    /// Rayon pools with the backends' thread counts (the plain loops' parallel form).
    pub(crate) pools: &'a [rayon::ThreadPool],
    pub(crate) repeats: usize,
    /// The effective last-level cache in bytes (`Machine::llc`: measured where the tuning
    /// measured it; sizes the read-bandwidth array).
    pub(crate) llc_bytes: usize,
    /// One non-temporal copy on a backend (the bench's STREAM copy).
    pub(crate) copy: &'a mut dyn FnMut(&CpuBackend),
    /// Bytes one copy moves (read + write).
    pub(crate) copy_bytes: usize,
    /// No progress lines on standard error.
    pub(crate) quiet: bool,
}

/// One measured row of the section.
pub(crate) struct KrylovRow {
    /// `dot`, `norm2`, `axpy`, `read`, `copy-nt` or `cg iteration`.
    pub(crate) kernel: &'static str,
    /// `stencil`, `plain serial`, `plain rayon` or `baseline`.
    pub(crate) imp: &'static str,
    /// Threads.
    pub(crate) threads: usize,
    /// Times in ms.
    pub(crate) stats: Stats,
    /// Compulsory bytes of one run.
    pub(crate) bytes: usize,
    /// Which bandwidth bounds the row: `read` or `copy` (`-` for the bounds themselves).
    pub(crate) bound: &'static str,
    /// That bandwidth with the same threads, GB/s, measured in the same rounds (NaN: none).
    pub(crate) bound_gbs: f64,
    /// Median ms of the plain loop with the same threads (NaN: none).
    pub(crate) plain_ms: f64,
    /// What the library's first call did (library rows).
    pub(crate) tuning: Option<String>,
}

impl KrylovRow {
    /// GB/s at compulsory bytes, at the median.
    pub(crate) fn gbs(&self) -> f64 {
        self.bytes as f64 / (self.stats.median * 1e-3) / 1e9
    }

    /// The row as one JSON object (NaN figures as `null`).
    pub(crate) fn json(&self) -> String {
        let number = |v: f64, digits: usize| {
            if v.is_finite() {
                format!("{v:.digits$}")
            } else {
                "null".to_string()
            }
        };
        let mut s = format!(
            "{{\"krylov\":\"{}\",\"impl\":\"{}\",\"threads\":{},\"ms_median\":{:.4},\
             \"ms_min\":{:.4},\"ms_max\":{:.4},\"bytes\":{},\"gbs\":{:.3},\"bound\":\"{}\",\
             \"bound_gbs\":{},\"bound_fraction\":{},\"speedup_vs_plain\":{}",
            self.kernel,
            self.imp,
            self.threads,
            self.stats.median,
            self.stats.min,
            self.stats.max,
            self.bytes,
            self.gbs(),
            self.bound,
            number(self.bound_gbs, 3),
            number(self.gbs() / self.bound_gbs, 4),
            number(self.plain_ms / self.stats.median, 3),
        );
        if let Some(t) = &self.tuning {
            let _ = write!(s, ",\"tuning\":\"{}\"", t.replace('"', "'"));
        }
        s.push('}');
        s
    }
}

/// The section's table.
pub(crate) fn table(rows: &[KrylovRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<13} {:<13} {:>3} {:>9} {:>17} {:>7} {:>5} {:>8} {:>7} {:>8}",
        "kernel",
        "impl",
        "thr",
        "median ms",
        "min-max ms",
        "GB/s",
        "bound",
        "bnd GB/s",
        "%bound",
        "x plain"
    );
    let mut last = "";
    for r in rows {
        if r.kernel != last && !last.is_empty() {
            out.push('\n');
        }
        last = r.kernel;
        let or_dash = |v: f64, text: String| if v.is_finite() { text } else { "-".into() };
        let fraction = r.gbs() / r.bound_gbs;
        let speedup = r.plain_ms / r.stats.median;
        let _ = writeln!(
            out,
            "{:<13} {:<13} {:>3} {:>9.2} {:>8.2}-{:<8.2} {:>7.2} {:>5} {:>8} {:>7} {:>8}",
            r.kernel,
            r.imp,
            r.threads,
            r.stats.median,
            r.stats.min,
            r.stats.max,
            r.gbs(),
            r.bound,
            or_dash(r.bound_gbs, format!("{:.1}", r.bound_gbs)),
            or_dash(fraction, format!("{:.1}%", 100.0 * fraction)),
            or_dash(speedup, format!("{speedup:.2}x")),
        );
    }
    out
}

/// Sum of `x` with 16 independent accumulators (vectorised; never bound by the adds' latency).
fn sum_fast(x: &[f64]) -> f64 {
    let mut acc = [0.0f64; 16];
    let chunks = x.chunks_exact(16);
    let rest: f64 = chunks.remainder().iter().sum();
    for c in chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += v;
        }
    }
    acc.iter().sum::<f64>() + rest
}

/// Sum of `x` over `threads` threads, one contiguous share each (the caller takes the first).
fn read_sum(x: &[f64], threads: usize) -> f64 {
    if threads <= 1 {
        return sum_fast(x);
    }
    let share = x.len().div_ceil(threads);
    let mut parts = x.chunks(share);
    let first = parts.next().expect("a share");
    std::thread::scope(|scope| {
        let others: Vec<_> = parts.map(|p| scope.spawn(|| sum_fast(p))).collect();
        let mut total = sum_fast(first);
        for o in others {
            total += o.join().expect("read thread");
        }
        total
    })
}

/// Times each of `imps` `repeats` times, interleaved (see the module documentation): per
/// implementation, in ms.
fn interleaved(repeats: usize, imps: &mut [&mut dyn FnMut()]) -> Vec<Stats> {
    let n = imps.len();
    let mut times = vec![Vec::with_capacity(repeats); n];
    let mut order: Vec<usize> = (0..n).collect();
    // Seeded: the same orders in every run of the bench.
    let mut rng = stencil_core::rng::Rng::new(0x6A09_E667_F3BC_C909);
    for round in 0..repeats + 2 {
        rng.shuffle(&mut order);
        for &k in &order {
            imps[k](); // untimed: the cache state this implementation leaves itself
            let start = Instant::now();
            imps[k]();
            if round >= 2 {
                times[k].push(start.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    times.into_iter().map(Stats::of).collect()
}

/// The first line of a tuning report, for the table's stderr notes and the JSON.
fn tuning_note(report: &TuneReport) -> String {
    report.to_string()
}

/// Relative difference of two values.
fn relative(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(f64::MIN_POSITIVE)
}

/// The section's rows (see the module documentation).
pub(crate) fn rows(section: &mut Section<'_>) -> Vec<KrylovRow> {
    let mut rows = vectors(section);
    rows.push(cg(section));
    rows
}

/// The vector rows, for every backend.
fn vectors(section: &mut Section<'_>) -> Vec<KrylovRow> {
    let start = Instant::now();
    let grid = |f: fn(usize) -> f64| {
        let mut g = Grid1::<f64>::new([N]).expect("bench: a vector");
        g.fill_with(|[i]| f(i));
        g
    };
    let x = grid(|i| 1.0 + (i % 1000) as f64 * 1e-3);
    let y = grid(|i| 0.5 - (i % 777) as f64 * 1e-4);
    let mut w = grid(|_| 0.0);
    let mut w_plain = grid(|_| 0.0);
    let read_len = (4 * section.llc_bytes).clamp(256 << 20, 2 << 30) / 8;
    let read: Vec<f64> = (0..read_len).map(|i| (i % 1000) as f64 * 0.25).collect();
    let read_expected = sum_fast(&read);
    let xs = x.rows().next().expect("one row");
    let ys = y.rows().next().expect("one row");
    let mut rows = Vec::new();
    let mut dots = Vec::new();
    for (backend, pool) in section.backends.iter().zip(section.pools) {
        let threads = backend.threads();
        let serial = threads == 1;
        // The plain loops: what a user writes, serial or over rayon.
        let plain_dot = || -> f64 {
            if serial {
                xs.iter().zip(ys).map(|(a, b)| a * b).sum()
            } else {
                pool.install(|| xs.par_iter().zip(ys).map(|(a, b)| a * b).sum())
            }
        };
        let plain_norm2 = || -> f64 {
            if serial {
                xs.iter().map(|a| a * a).sum()
            } else {
                pool.install(|| xs.par_iter().map(|a| a * a).sum())
            }
        };
        let plain_axpy = |out: &mut Grid1<f64>| {
            let ws = out.rows_mut().next().expect("one row");
            if serial {
                for (w, (a, b)) in ws.iter_mut().zip(xs.iter().zip(ys)) {
                    *w = A * a + b;
                }
            } else {
                pool.install(|| {
                    ws.par_iter_mut()
                        .zip(xs.par_iter().zip(ys))
                        .for_each(|(w, (a, b))| *w = A * a + b);
                });
            }
        };
        // The library, as a user calls it.
        let lib_dot = || -> stencil::Result<(f64, TuneReport)> {
            let mut s = Sum::new();
            let report = dot(&x, &y, &mut s).on(backend).run_with_report()?;
            Ok((s.value(), report))
        };
        let lib_norm2 = || -> stencil::Result<(f64, TuneReport)> {
            let mut s = Sum::new();
            let report = norm2_squared(&x, &mut s).on(backend).run_with_report()?;
            Ok((s.value(), report))
        };
        // Warm-up calls (the first tunes), checked against the plain loops.
        let (d, dot_tuning) = lib_dot().expect("bench: dot");
        let (nn, norm2_tuning) = lib_norm2().expect("bench: norm2");
        w.fill(f64::NAN);
        let axpy_tuning = waxpy(&x, &y, &mut w, A)
            .on(backend)
            .run_with_report()
            .expect("bench: waxpy");
        plain_axpy(&mut w_plain);
        let (pd, pn) = (plain_dot(), plain_norm2());
        assert!(
            relative(d, pd) < 1e-9 && relative(nn, pn) < 1e-9,
            "bench: krylov {threads} thr: dot {d} / {pd}, norm2 {nn} / {pn} (library / plain)"
        );
        let bad = w
            .rows()
            .flatten()
            .zip(w_plain.rows().flatten())
            .filter(|(a, b)| relative(**a, **b) > 1e-15 || a.is_nan())
            .count();
        assert!(
            bad == 0,
            "bench: krylov waxpy {threads} thr: {bad} values differ"
        );
        assert!(
            relative(read_sum(&read, threads), read_expected) < 1e-12,
            "bench: krylov read sum {threads} thr"
        );
        dots.push(d);
        if !section.quiet {
            eprintln!("krylov dot {threads} thr: {dot_tuning}");
            eprintln!("krylov norm2 {threads} thr: {norm2_tuning}");
            eprintln!("krylov axpy {threads} thr: {axpy_tuning}");
        }
        let copy = &mut *section.copy;
        let names: [(&'static str, &'static str); 8] = [
            ("dot", "stencil"),
            ("dot", "plain"),
            ("norm2", "stencil"),
            ("norm2", "plain"),
            ("axpy", "stencil"),
            ("axpy", "plain"),
            ("read", "baseline"),
            ("copy-nt", "baseline"),
        ];
        let stats = interleaved(
            section.repeats,
            &mut [
                &mut || {
                    std::hint::black_box(lib_dot().expect("bench: dot"));
                },
                &mut || {
                    std::hint::black_box(plain_dot());
                },
                &mut || {
                    std::hint::black_box(lib_norm2().expect("bench: norm2"));
                },
                &mut || {
                    std::hint::black_box(plain_norm2());
                },
                &mut || {
                    waxpy(&x, &y, &mut w, A)
                        .on(backend)
                        .run()
                        .expect("bench: waxpy");
                },
                &mut || plain_axpy(&mut w_plain),
                &mut || {
                    std::hint::black_box(read_sum(&read, threads));
                },
                &mut || copy(backend),
            ],
        );
        let median = |kernel: &str, imp: &str| {
            names
                .iter()
                .zip(&stats)
                .find(|((k, i), _)| *k == kernel && *i == imp)
                .map_or(f64::NAN, |(_, s)| s.median)
        };
        let read_gbs = (8 * read_len) as f64 / (median("read", "baseline") * 1e-3) / 1e9;
        let copy_gbs = section.copy_bytes as f64 / (median("copy-nt", "baseline") * 1e-3) / 1e9;
        let plain_name = if serial {
            "plain serial"
        } else {
            "plain rayon"
        };
        for (&(kernel, imp), stats) in names.iter().zip(&stats) {
            let (bytes, bound, bound_gbs) = match kernel {
                "dot" => (16 * N, "read", read_gbs),
                "norm2" => (8 * N, "read", read_gbs),
                "axpy" => (24 * N, "copy", copy_gbs),
                "read" => (8 * read_len, "-", f64::NAN),
                _ => (section.copy_bytes, "-", f64::NAN),
            };
            let tuning = match (kernel, imp) {
                ("dot", "stencil") => Some(tuning_note(&dot_tuning)),
                ("norm2", "stencil") => Some(tuning_note(&norm2_tuning)),
                ("axpy", "stencil") => Some(tuning_note(&axpy_tuning)),
                _ => None,
            };
            rows.push(KrylovRow {
                kernel,
                imp: if imp == "plain" { plain_name } else { imp },
                threads,
                stats: *stats,
                bytes,
                bound,
                bound_gbs,
                plain_ms: median(kernel, "plain"),
                tuning,
            });
        }
    }
    // Reductions are the same bits whatever the thread count.
    assert!(
        dots.windows(2).all(|d| d[0].to_bits() == d[1].to_bits()),
        "bench: krylov dot differs between thread counts: {dots:?}"
    );
    // Library rows first within a kernel, then the plain loop, then the bounds.
    rows.sort_by_key(|r| {
        let kernel = ["dot", "norm2", "axpy", "read", "copy-nt"]
            .iter()
            .position(|k| *k == r.kernel);
        (kernel, r.threads, r.imp != "stencil")
    });
    if !section.quiet {
        eprintln!("krylov vectors took {:.1} s", start.elapsed().as_secs_f64());
    }
    rows
}

/// A 256^3 grid with a halo of 1 and Dirichlet-0 faces.
fn grid3() -> Grid3<f64> {
    let mut g = Grid3::<f64>::with_halo([N3; 3], 1).expect("bench: a CG grid");
    g.set_boundary(Boundary::Dirichlet(0.0));
    g
}

/// The CG row, on the backend with the most threads.
fn cg(section: &mut Section<'_>) -> KrylovRow {
    let start = Instant::now();
    let backend = section.backends.last().expect("a backend");
    let mut x = grid3();
    let mut r = grid3();
    // A smooth right-hand side plus a little of every frequency, so CG has work to do.
    r.fill_with(|[i, j, k]| {
        let s = |t: usize| (std::f64::consts::PI * (t + 1) as f64 / (N3 + 1) as f64).sin();
        s(i) * s(j) * s(k) + 1e-3 * ((i * 7 + j * 13 + k * 31) % 17) as f64
    });
    let b = r.clone();
    let mut p = r.clone();
    let mut q = grid3();
    let mut rr = {
        let mut s = Sum::new();
        stencil::krylov::dot_3d(&r, &r, &mut s)
            .on(backend)
            .run()
            .expect("bench: dot_3d");
        s.value()
    };
    let rr0 = rr;
    let mut reports: Vec<TuneReport> = Vec::new();
    let mut iteration = |reports: &mut Vec<TuneReport>| -> stencil::Result<()> {
        let mut pq = Sum::new();
        let mut rr_next = Sum::new();
        let a = poisson_apply_dot(&p, &mut q, &mut pq)
            .on(backend)
            .run_with_report()?;
        let alpha = rr / pq.value();
        let b = axpy_3d(&p, &mut x, alpha).on(backend).run_with_report()?;
        let c = update_residual(&q, &mut r, &mut rr_next, alpha)
            .on(backend)
            .run_with_report()?;
        let beta = rr_next.value() / rr;
        rr = rr_next.value();
        let d = aypx_3d(&r, &mut p, beta).on(backend).run_with_report()?;
        if reports.is_empty() {
            reports.extend([a, b, c, d]);
        }
        Ok(())
    };
    // Warm-up: the first iteration tunes each kernel, the second runs as every later one.
    for _ in 0..2 {
        iteration(&mut reports).expect("bench: CG iteration");
    }
    if !section.quiet {
        for (name, report) in ["apply+dot", "x update", "residual+norm", "p update"]
            .iter()
            .zip(&reports)
        {
            eprintln!("krylov cg {name} {} thr: {report}", backend.threads());
        }
    }
    let mut times = Vec::new();
    let mut copies = Vec::new();
    for _ in 0..section.repeats {
        let t = Instant::now();
        iteration(&mut Vec::new()).expect("bench: CG iteration");
        times.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        (section.copy)(backend);
        copies.push(t.elapsed().as_secs_f64() * 1e3);
    }
    // The recurred residual must be the true one, b - A x (a check of every kernel above).
    let at = |g: &Grid3<f64>, p: [isize; 3]| g.get(p).expect("bench: a point or its halo");
    let (mut drift, mut bb) = (0.0, 0.0);
    for ([i, j, k], bv) in b.interior_iter() {
        let [i, j, k] = [i, j, k].map(|v| v as isize);
        let ax = 6.0 * at(&x, [i, j, k])
            - at(&x, [i - 1, j, k])
            - at(&x, [i + 1, j, k])
            - at(&x, [i, j - 1, k])
            - at(&x, [i, j + 1, k])
            - at(&x, [i, j, k - 1])
            - at(&x, [i, j, k + 1]);
        let d = bv - ax - at(&r, [i, j, k]);
        drift += d * d;
        bb += bv * bv;
    }
    let drift = (drift / bb).sqrt();
    let relative_residual = (rr / rr0).sqrt();
    assert!(
        relative_residual.is_finite() && drift < 1e-10,
        "bench: CG: relative residual {relative_residual}, |r - (b - A x)| / |b| = {drift:e}"
    );
    let copy = Stats::of(copies);
    if !section.quiet {
        eprintln!(
            "krylov cg: relative residual {relative_residual:.3e} after {} iterations, recurred \
             against true residual {drift:.1e}; took {:.1} s",
            section.repeats + 2,
            start.elapsed().as_secs_f64()
        );
    }
    let tuning: Vec<String> = reports.iter().map(tuning_note).collect();
    KrylovRow {
        kernel: "cg iteration",
        imp: "stencil",
        threads: backend.threads(),
        stats: Stats::of(times),
        bytes: 11 * N3 * N3 * N3 * 8,
        bound: "copy",
        bound_gbs: section.copy_bytes as f64 / (copy.median * 1e-3) / 1e9,
        plain_ms: f64::NAN,
        tuning: Some(tuning.join(" | ")),
    }
}
