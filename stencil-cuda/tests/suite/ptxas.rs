//! Every variant of the seeds' kernels and of random stencils assembles with NVIDIA's `ptxas`
//! for sm_70, sm_80 and sm_90, and the default schedules spill no registers. The quick run
//! assembles each schedule for one of the three architectures, rotating ([`crate::rotated`]);
//! `STENCIL_FULL_TESTS=1` for all three.
//!
//! `ptxas` is found through `STENCIL_PTXAS`, then `PATH` (pip package
//! nvidia-cuda-nvcc-cu12; `.ci/run` installs it). Without it every test prints
//! `SKIP: ptxas not found` (to standard error, which `cargo test` shows only for failures or
//! with `--nocapture`) and passes, unless `STENCIL_REQUIRE_PTXAS` is set (as `.ci/run` sets
//! it), when a missing `ptxas` fails the test: CI never passes by skipping.

use crate::common;
use crate::{ARCHS, quick_or_full, rotated};

use std::path::PathBuf;

use common::ptxas::{assemble, ptxas};

use stencil_core::analysis::radius;
use stencil_core::schedule::GpuSchedule;
use stencil_core::{Geometry, Kernel};
use stencil_cuda::caps::{default_schedule, sample_schedules};
use stencil_cuda::{CodegenOptions, generate};

fn geometries(kernel: &Kernel, shape: &[usize]) -> Vec<Geometry> {
    let halo = radius(kernel).max() as usize;
    let esz = kernel.elem().size_bytes();
    (0..kernel.fields.len())
        .map(|_| Geometry::new(shape, halo, esz).expect("geometry"))
        .collect()
}

fn shape_for(kernel: &Kernel) -> Vec<usize> {
    match kernel.n_dims {
        1 => vec![1000],
        2 => vec![200, 300],
        _ => vec![64, 48, 80],
    }
}

fn check_all(kernels: &[Kernel], label: &str) {
    let Some(ptxas) = ptxas() else {
        return;
    };
    let full = quick_or_full(
        false,
        true,
        "each schedule assembled for one of sm_70/80/90 (rotating), not all three",
    );
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(8);
    let assembled: usize = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let ptxas = &ptxas;
                scope.spawn(move || {
                    kernels
                        .iter()
                        .enumerate()
                        .skip(w)
                        .step_by(workers)
                        .map(|(i, k)| check_kernel(ptxas, i, k, label, full))
                        .sum::<usize>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("worker")).sum()
    });
    println!("{label}: {assembled} modules assembled");
}

/// Assembles every sample schedule and the default of one kernel for every architecture (on
/// a quick run, for one architecture each, rotating); returns the number of modules assembled.
fn check_kernel(ptxas: &PathBuf, i: usize, kernel: &Kernel, label: &str, full: bool) -> usize {
    let mut assembled = 0;
    {
        let shape = shape_for(kernel);
        let geoms = geometries(kernel, &shape);
        let mut schedules: Vec<GpuSchedule> = sample_schedules(kernel);
        let default = default_schedule(kernel, &shape);
        schedules.push(default);
        for (s_idx, schedule) in schedules.iter().enumerate() {
            for arch in rotated(&ARCHS, i + s_idx, full) {
                let g = generate(kernel, schedule, &geoms, arch, CodegenOptions::default())
                    .unwrap_or_else(|e| panic!("{} {schedule:?}: {e}", kernel.name));
                let tag = format!("{label}_{i}_{s_idx}_{arch}");
                let (stores, loads) = assemble(ptxas, &g.ptx(), arch, &tag);
                if *schedule == default {
                    assert_eq!(
                        (stores, loads),
                        (0, 0),
                        "default schedule of `{}` spills on sm_{arch}",
                        kernel.name
                    );
                }
                assembled += 1;
            }
        }
        // The fused-steps kernel of a ping-pong pair (the one output and the first input),
        // for a 3-D, a 2-D and a 1-D block; the first spills nothing.
        let output = (0..kernel.fields.len())
            .filter(|&f| kernel.fields[f].role == stencil_core::Role::Output)
            .collect::<Vec<_>>();
        let input =
            (0..kernel.fields.len()).find(|&f| kernel.fields[f].role == stencil_core::Role::Input);
        if let ([output], Some(input)) = (output.as_slice(), input) {
            let pair = stencil_cuda::FusedPair {
                output: *output,
                input,
            };
            for (b_idx, block) in [[32, 4, 2], [64, 2, 1], [128, 1, 1]]
                .into_iter()
                .enumerate()
            {
                let schedule = GpuSchedule {
                    block,
                    time_steps: 2,
                    ..GpuSchedule::default()
                };
                for arch in rotated(&ARCHS, i + b_idx, full) {
                    let g =
                        match stencil_cuda::generate_fused(kernel, &schedule, &geoms, arch, pair) {
                            Ok(g) => g,
                            // A wide kernel's grown tile may not fit a wide block's shared memory;
                            // time loops then run plain launches.
                            Err(e) if b_idx > 0 && e.message().contains("shared memory") => {
                                continue;
                            }
                            Err(e) => panic!("{} fused {block:?}: {e}", kernel.name),
                        };
                    let tag = format!("{label}_{i}_fused{b_idx}_{arch}");
                    let spills = assemble(ptxas, &g.ptx(), arch, &tag);
                    if b_idx == 0 {
                        assert_eq!(
                            spills,
                            (0, 0),
                            "fused `{}` spills on sm_{arch}",
                            kernel.name
                        );
                    }
                    assembled += 1;
                }
            }
        }
    }
    assembled
}

#[test]
fn halo_gather_kernels_assemble() {
    let Some(ptxas) = ptxas() else {
        return;
    };
    for elem in [stencil_core::ElemType::F32, stencil_core::ElemType::F64] {
        for arch in [70, 80, 90] {
            let m = stencil_cuda::codegen::halo::generate_gather(elem, arch);
            let spills = assemble(&ptxas, &m.to_string(), arch, &format!("halo_{elem}_{arch}"));
            assert_eq!(spills, (0, 0));
        }
    }
}

#[test]
fn seed_kernels_assemble_for_every_variant_and_arch() {
    let (f64s, f32s) = common::seed_kernels();
    check_all(&f64s, "seed64");
    check_all(&f32s, "seed32");
}

#[test]
fn random_stencils_assemble_for_every_variant_and_arch() {
    check_all(&common::random_kernels(12), "random");
}

/// Kernels with fused multiply-add (`#[fma]`, core's contraction): each fused node is one
/// `fma.rn` (more of them than the unfused kernel's PTX holds), and every variant assembles.
#[test]
fn fused_multiply_add_kernels_assemble() {
    let (f64s, f32s) = common::seed_kernels();
    let plain: Vec<Kernel> = f64s
        .iter()
        .take(6)
        .chain(f32s.iter().take(2))
        .cloned()
        .chain(common::random_kernels(4))
        .collect();
    let fused: Vec<Kernel> = plain.iter().map(stencil_core::passes::contract).collect();
    let mut fused_kernels = 0;
    for (p, f) in plain.iter().zip(&fused) {
        let n_fused = f
            .exprs
            .iter()
            .filter(|e| matches!(e, stencil_core::Expr::Fma { .. }))
            .count();
        let shape = shape_for(f);
        let count = |k: &Kernel| {
            let g = generate(
                k,
                &default_schedule(k, &shape),
                &geometries(k, &shape),
                80,
                CodegenOptions::default(),
            )
            .unwrap_or_else(|e| panic!("{}: {e}", k.name));
            g.ptx().matches("fma.rn.").count()
        };
        if n_fused > 0 {
            assert!(count(f) >= count(p) + n_fused, "`{}`", f.name);
            fused_kernels += 1;
        }
    }
    assert!(
        fused_kernels >= 8,
        "only {fused_kernels} kernels with fused nodes"
    );
    check_all(&fused, "fma");
}
