//! Lists the tuning cache: every tuned schedule with its measured time, achieved bandwidth and
//! fraction of the roofline bound, the machines' measured bandwidths, and this machine's cache
//! capacities as the system reports them and as a working-set sweep measured them.
//!
//! ```text
//! cargo run --release --example tune_report -- [--cache PATH] [--export PATH] [--import PATH] [--probe]
//! ```
//!
//! The cache is `--cache PATH`, else `STENCIL_TUNE_CACHE`, else the user's cache directory.
//! `--import PATH` merges a shipped cache file into it first; `--export PATH` writes it to a
//! file an application can ship. Kernels are named by their structural hash (the cache keeps
//! no names: two kernels that differ only in names share their tuning).
//!
//! The measured caches come from the cache file's entry for this machine when it holds a
//! fresh one; otherwise the probe runs now (and the report says so; it stores nothing).
//! `--probe` runs the probe now in any case and prints its curve: read throughput per
//! working-set size, a plateau per cache level.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use stencil::{Backend, CpuBackend, TuningCache};
use stencil_core::CacheSizes;
use stencil_tune::probe::{CacheProbe, measure_caches};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut cache_path: Option<PathBuf> = None;
    let mut export: Option<PathBuf> = None;
    let mut import: Option<PathBuf> = None;
    let mut probe_now = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .map(PathBuf::from)
                .ok_or_else(|| format!("{arg} needs a path"))
        };
        match arg.as_str() {
            "--cache" => cache_path = Some(value()?),
            "--export" => export = Some(value()?),
            "--import" => import = Some(value()?),
            "--probe" => probe_now = true,
            "-h" | "--help" => {
                println!(
                    "usage: tune_report [--cache PATH] [--export PATH] [--import PATH] [--probe]"
                );
                return Ok(());
            }
            other => return Err(format!("unknown argument `{other}` (try --help)").into()),
        }
    }
    let cache = match cache_path {
        Some(p) => TuningCache::at(p),
        None => TuningCache::open_default()?,
    };
    if let Some(path) = &import {
        let n = cache.import_from(path)?;
        println!("imported {n} entries from {}", path.display());
    }
    let entries = cache.entries();
    println!(
        "tuning cache {} ({} entries)",
        cache.path().display(),
        entries.len()
    );
    if !entries.is_empty() {
        println!(
            "{:<10} {:<16} {:<4} {:<26} {:>3} {:>9} {:>7} {:>6} {:>6} {:>8}  schedule",
            "kernel",
            "shape",
            "elem",
            "backend / device",
            "thr",
            "ms/sweep",
            "GB/s",
            "bound",
            "trials",
            "tuning s"
        );
    }
    for (key, entry) in &entries {
        let shape = key
            .shape
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join("x");
        let device = format!("{} / {}", key.backend, key.device);
        println!(
            "{:<10} {:<16} {:<4} {:<26} {:>3} {:>9.3} {:>7.2} {:>5.0}% {:>6} {:>8.2}  {}",
            &key.kernel_hash[..key.kernel_hash.len().min(8)],
            shape,
            key.elem,
            truncate(&device, 26),
            key.threads,
            entry.seconds * 1e3,
            entry.bytes_per_second / 1e9,
            entry.roofline_fraction * 100.0,
            entry.trials,
            entry.tuning_seconds,
            entry.schedule
        );
    }
    for (device, threads, bandwidth) in cache.bandwidths() {
        println!(
            "bandwidth: {device}, {threads} threads: {:.1} GB/s",
            bandwidth / 1e9
        );
    }
    report_caches(&cache, probe_now);
    if let Some(path) = &export {
        let n = cache.export_to(path)?;
        println!("exported {n} entries to {}", path.display());
    }
    Ok(())
}

/// Prints this machine's caches, reported and measured (see the module documentation).
fn report_caches(cache: &TuningCache, probe_now: bool) {
    let cpu = CpuBackend::global();
    let (Some(reported), Some((device, _))) = (
        Backend::<f64>::reported_caches(cpu),
        Backend::<f64>::tuning_device(cpu),
    ) else {
        return;
    };
    let cached = cache.caches(&device);
    let run_probe = || {
        let probe = measure_caches(reported);
        println!(
            "cache probe: {:.0} ms, {} working sets",
            probe.seconds * 1e3,
            probe.curve.len()
        );
        probe
    };
    let (measured, source) = match (&cached, probe_now) {
        (Some(entry), false) => {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let hours = now.saturating_sub(entry.measured_unix) as f64 / 3600.0;
            if entry.reported != reported {
                println!(
                    "note: the system reported other sizes when the caches were measured: {}",
                    sizes_in_words(entry.reported)
                );
            }
            (
                entry.effective,
                format!("from the tuning cache, measured {hours:.1} h ago"),
            )
        }
        (None, false) => {
            let probe = run_probe();
            (
                probe.effective,
                "no measurement in the tuning cache: probed now, not stored".to_string(),
            )
        }
        (_, true) => {
            let probe = run_probe();
            print_curve(&probe);
            if let Some(entry) = &cached {
                println!("tuning cache holds: {}", sizes_in_words(entry.effective));
            }
            (probe.effective, "probed now".to_string())
        }
    };
    println!("caches of {device} ({source}):");
    for (level, reported, measured) in [
        ("L1d", reported.l1_bytes, measured.l1_bytes),
        ("L2", reported.l2_bytes, measured.l2_bytes),
        ("L3", reported.llc_bytes, measured.llc_bytes),
    ] {
        println!(
            "  {level}: reported {}, measured {}",
            bytes(reported),
            bytes(measured)
        );
    }
}

/// A probe's curve, one working set a line.
fn print_curve(probe: &CacheProbe) {
    println!("{:>10} {:>8}", "set", "GB/s");
    for &(size, rate) in &probe.curve {
        println!("{:>10} {:>8.1}", bytes(size), rate / 1e9);
    }
}

/// `L1d 32.0 KiB, L2 1.0 MiB, L3 32.0 MiB`.
fn sizes_in_words(caches: CacheSizes) -> String {
    format!(
        "L1d {}, L2 {}, L3 {}",
        bytes(caches.l1_bytes),
        bytes(caches.l2_bytes),
        bytes(caches.llc_bytes)
    )
}

/// A size in KiB below 1 MiB, else in MiB, one decimal.
fn bytes(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / (1 << 20) as f64)
    } else {
        format!("{:.1} KiB", n as f64 / 1024.0)
    }
}

/// `text` cut to `width` characters, marking the cut.
fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_string()
    } else {
        let mut t: String = text.chars().take(width.saturating_sub(1)).collect();
        t.push('~');
        t
    }
}
