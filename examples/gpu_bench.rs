//! GPU benchmark: throughput of the generated PTX on the CUDA device, in GPts/s and as a
//! fraction of the measured device-to-device copy bandwidth (the bound of a memory-bound
//! stencil at its compulsory bytes per point), for W1 (7-point, 256^3), W2 (27-point, 256^3)
//! and Kamil's Divergence, in f64 and f32: the default schedule, the schedule the tuner picks
//! on the first call (`stencil::tuning::tune_on_device`, `quick`, a fresh cache: its trials and
//! tuning time are printed), and the best of a sweep over the device's schedule space.
//!
//! `cargo run --release --example gpu_bench [-- --size N --max-schedules M]`.
//! With no GPU (no driver, no device) it says so and exits 0.

use std::sync::Arc;
use std::time::Instant;

use stencil::kernels::{
    divergence as div_f64, divergence_f32 as div_f32, jacobi7 as w1_f64, jacobi7_f32 as w1_f32,
    jacobi27 as w2_f64, jacobi27_f32 as w2_f32,
};
use stencil::prelude::*;
use stencil::{CudaBackend, CudaDevice, DeviceGrid, GpuSchedule, Stencil};
use stencil_cuda::GpuElement;
use stencil_cuda::caps::{default_schedule, schedule_space};

struct Options {
    size: usize,
    max_schedules: usize,
    sweeps: usize,
}

fn options() -> Options {
    let mut o = Options {
        size: 256,
        max_schedules: usize::MAX,
        sweeps: 10,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = it.next().and_then(|v| v.parse().ok());
        match (a.as_str(), value) {
            ("--size", Some(v)) => o.size = v,
            ("--max-schedules", Some(v)) => o.max_schedules = v,
            ("--sweeps", Some(v)) => o.sweeps = v,
            _ => {
                eprintln!("usage: gpu_bench [--size N] [--max-schedules M] [--sweeps S]");
                std::process::exit(2);
            }
        }
    }
    o
}

/// Seconds per sweep of `schedule` (best of three timings of `sweeps` sweeps), or `None` when
/// the schedule does not run on this device (too many registers, ...).
fn time_schedule<T: GpuElement>(
    device: &CudaDevice,
    stencil: &Stencil<T>,
    inputs: &[DeviceGrid<T, 3>],
    out: &mut DeviceGrid<T, 3>,
    params: &[T],
    schedule: &GpuSchedule,
    sweeps: usize,
) -> Option<f64> {
    let ins: Vec<&DeviceGrid<T, 3>> = inputs.iter().collect();
    let mut run = |n: usize| -> stencil::Result<f64> {
        device.synchronize()?;
        let t = Instant::now();
        for _ in 0..n {
            device.run(stencil, &ins, &mut [&mut *out], params, schedule)?;
        }
        device.synchronize()?;
        Ok(t.elapsed().as_secs_f64() / n as f64)
    };
    run(1).ok()?;
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        best = best.min(run(sweeps).ok()?);
    }
    Some(best)
}

#[allow(clippy::too_many_arguments)]
fn bench<T: GpuElement>(
    device: &Arc<CudaDevice>,
    name: &str,
    stencil: &Stencil<T>,
    n_inputs: usize,
    params: &[T],
    bytes_per_point: f64,
    bandwidth: f64,
    o: &Options,
) -> stencil::Result<()> {
    let shape = [o.size; 3];
    let mut inputs = Vec::new();
    for s in 0..n_inputs {
        let g = Grid3::<T>::from_fn(shape, 1, |[i, j, k]| {
            T::from_f64(((i * 7 + j * 13 + k * 29 + s) % 101) as f64 / 101.0)
        })?;
        inputs.push(device.upload(&g)?);
    }
    let mut out = device.upload(&Grid3::<T>::with_halo(shape, 1)?)?;
    let kernel = stencil.kernel();
    let points = (o.size * o.size * o.size) as f64;
    let report = |label: &str, schedule: &GpuSchedule, secs: f64| {
        let gpts = points / secs / 1e9;
        let fraction = points * bytes_per_point / secs / bandwidth;
        println!(
            "{name:<10} {label:<8} {gpts:>8.2} GPts/s {:>6.1}% of copy bw   {schedule:?}",
            100.0 * fraction
        );
    };
    let default = default_schedule(kernel, &shape);
    match time_schedule(
        device, stencil, &inputs, &mut out, params, &default, o.sweeps,
    ) {
        Some(secs) => report("default", &default, secs),
        None => println!("{name:<10} default  failed to run: {default:?}"),
    }
    let cache = stencil::TuningCache::at(std::env::temp_dir().join(format!(
        "stencil-gpu-bench-{}-{name}.json",
        std::process::id()
    )));
    {
        let ins: Vec<&DeviceGrid<T, 3>> = inputs.iter().collect();
        let tuned = stencil::tuning::tune_on_device(
            device,
            stencil,
            &ins,
            &mut [&mut out],
            params,
            Some(stencil::TunePolicy::Quick),
            Some(cache.clone()),
        )?;
        let _ = std::fs::remove_file(cache.path());
        println!("{name:<10} {tuned}");
        if let stencil::Schedule::Gpu(schedule) = tuned.schedule {
            match time_schedule(
                device, stencil, &inputs, &mut out, params, &schedule, o.sweeps,
            ) {
                Some(secs) => report("tuned", &schedule, secs),
                None => println!("{name:<10} tuned    failed to run: {schedule:?}"),
            }
        }
    }
    let space = schedule_space(kernel, &shape, device.caps());
    let step = space.len().div_ceil(o.max_schedules.max(1)).max(1);
    let mut best: Option<(f64, GpuSchedule)> = None;
    let mut failed = 0;
    let mut tried = 0;
    for schedule in space.iter().step_by(step) {
        tried += 1;
        match time_schedule(
            device, stencil, &inputs, &mut out, params, schedule, o.sweeps,
        ) {
            Some(secs) if best.is_none_or(|(b, _)| secs < b) => best = Some((secs, *schedule)),
            Some(_) => {}
            None => failed += 1,
        }
    }
    if let Some((secs, schedule)) = best {
        report("best", &schedule, secs);
    }
    println!(
        "{name:<10} swept {tried} of {} schedules ({failed} did not run)",
        space.len()
    );
    Ok(())
}

fn main() -> stencil::Result<()> {
    let o = options();
    let device = match CudaDevice::global() {
        Ok(d) => d,
        Err(e) => {
            println!("gpu_bench: no CUDA GPU found ({e}); nothing to measure.");
            return Ok(());
        }
    };
    let caps = device.caps().clone();
    println!(
        "device: {} (sm_{}, {} SMs)",
        caps.name,
        caps.arch(),
        caps.sm_count
    );
    // Correctness first: the default and sample schedules against the interpreter.
    let backend = CudaBackend::new();
    let b64: &dyn stencil::Backend<f64> = &backend;
    let b32: &dyn stencil::Backend<f32> = &backend;
    let config = stencil::VerifyConfig::default();
    for s in [w1_f64::stencil(), w2_f64::stencil(), div_f64::stencil()] {
        println!("{}", stencil::verify_with(s, &[b64], &config)?);
    }
    for s in [w1_f32::stencil(), w2_f32::stencil(), div_f32::stencil()] {
        println!("{}", stencil::verify_with(s, &[b32], &config)?);
    }
    let bw = device.copy_bandwidth(1 << 30, 5)?;
    println!(
        "measured device copy bandwidth: {:.0} GB/s (read + write)",
        bw / 1e9
    );
    bench(
        &device,
        "W1 f64",
        w1_f64::stencil(),
        1,
        &[0.4, 0.1],
        16.0,
        bw,
        &o,
    )?;
    bench(
        &device,
        "W1 f32",
        w1_f32::stencil(),
        1,
        &[0.4, 0.1],
        8.0,
        bw,
        &o,
    )?;
    bench(
        &device,
        "W2 f64",
        w2_f64::stencil(),
        1,
        &[0.5, 0.1, 0.05, 0.01],
        16.0,
        bw,
        &o,
    )?;
    bench(
        &device,
        "W2 f32",
        w2_f32::stencil(),
        1,
        &[0.5, 0.1, 0.05, 0.01],
        8.0,
        bw,
        &o,
    )?;
    bench(
        &device,
        "Div f64",
        div_f64::stencil(),
        3,
        &[0.5, 0.25, 0.125],
        32.0,
        bw,
        &o,
    )?;
    bench(
        &device,
        "Div f32",
        div_f32::stencil(),
        3,
        &[0.5, 0.25, 0.125],
        16.0,
        bw,
        &o,
    )?;
    Ok(())
}
