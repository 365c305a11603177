//! Lists the tuning cache: every tuned schedule with its measured time, achieved bandwidth and
//! fraction of the roofline bound, and the machines' measured bandwidths.
//!
//! ```text
//! cargo run --release --example tune_report -- [--cache PATH] [--export PATH] [--import PATH]
//! ```
//!
//! The cache is `--cache PATH`, else `STENCIL_TUNE_CACHE`, else the user's cache directory.
//! `--import PATH` merges a shipped cache file into it first; `--export PATH` writes it to a
//! file an application can ship. Kernels are named by their structural hash (the cache keeps
//! no names: two kernels that differ only in names share their tuning).

use std::path::PathBuf;

use stencil::TuningCache;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut cache_path: Option<PathBuf> = None;
    let mut export: Option<PathBuf> = None;
    let mut import: Option<PathBuf> = None;
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
            "-h" | "--help" => {
                println!("usage: tune_report [--cache PATH] [--export PATH] [--import PATH]");
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
    if let Some(path) = &export {
        let n = cache.export_to(path)?;
        println!("exported {n} entries to {}", path.display());
    }
    Ok(())
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
