//! Benchmark: the CPU backend against a hand-written rows + rayon loop, 7-point 3-D f64
//! stencil on 256^3 (halo 1). Prints a table of median and best times over 7 repeats.
//!
//! The hand-written loop is what a careful user writes without the library: rayon over the
//! outer index `i`, then `j`, then an exact-length-slice loop over `k`. The backend's
//! specialised path runs the same point loop through the `RowFn` contract (as `stencil!`
//! generates it); the generic path evaluates the IR row by row. The hand-written loop is
//! also run through the same `RowFn`, one call per row: the difference between the two
//! hand-written rows is the cost of the row contract, the rest is the executor's.
//!
//! Run with `cargo run --release -p stencil-cpu --example rows_vs_backend [-- N]`.

#![allow(clippy::needless_range_loop)] // The point loop indexes like generated code does.

use std::time::Instant;

use rayon::prelude::*;
use stencil_core::row::{RowArgs, RowFn, RowInput};
use stencil_core::{
    Backend, CpuSchedule, ElemType, FieldView, FieldViewMut, Geometry, Job, Kernel, KernelBuilder,
    Schedule, Stencil,
};
use stencil_cpu::CpuBackend;

const REPEATS: usize = 7;
const C0: f64 = 0.4;
const C1: f64 = 0.1;

/// `out = c0 * u + c1 * (u[i-1] + u[i+1] + u[j-1] + u[j+1] + u[k-1] + u[k+1])`.
fn heat_kernel() -> Kernel {
    let mut b = KernelBuilder::new("heat", 3, ElemType::F64);
    let u = b.input("u");
    let out = b.output("out");
    let c0 = b.param("c0");
    let c1 = b.param("c1");
    let center = b.read(u, &[0, 0, 0]);
    let mut sum = b.read(u, &[-1, 0, 0]);
    for offset in [[1, 0, 0], [0, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0, 1]] {
        let r = b.read(u, &offset);
        sum = b.add(sum, r);
    }
    let c0 = b.param_ref(c0);
    let c1 = b.param_ref(c1);
    let a = b.mul(c0, center);
    let s = b.mul(c1, sum);
    let value = b.add(a, s);
    b.store(out, value);
    b.finish().expect("the heat kernel is valid")
}

/// The row function, shaped as `stencil!` generates it.
fn rows(args: &RowArgs<'_, f64>, outs: &mut [&mut [f64]]) {
    let n = args.len();
    let c = args.input(0, [0, 0, 0, 0]);
    let xm = args.input(0, [-1, 0, 0, 0]);
    let xp = args.input(0, [1, 0, 0, 0]);
    let ym = args.input(0, [0, -1, 0, 0]);
    let yp = args.input(0, [0, 1, 0, 0]);
    let zm = args.input(0, [0, 0, -1, 0]);
    let zp = args.input(0, [0, 0, 1, 0]);
    point_loop(
        &mut outs[0][..n],
        c,
        xm,
        xp,
        ym,
        yp,
        zm,
        zp,
        args.param(0),
        args.param(1),
    );
}

#[inline(always)]
#[allow(clippy::too_many_arguments)] // One slice per read, as generated code has.
fn point_loop(
    out: &mut [f64],
    c: &[f64],
    xm: &[f64],
    xp: &[f64],
    ym: &[f64],
    yp: &[f64],
    zm: &[f64],
    zp: &[f64],
    c0: f64,
    c1: f64,
) {
    let n = out.len();
    let (c, xm, xp, ym, yp, zm, zp) = (
        &c[..n],
        &xm[..n],
        &xp[..n],
        &ym[..n],
        &yp[..n],
        &zm[..n],
        &zp[..n],
    );
    for x in 0..n {
        out[x] = c0 * c[x] + c1 * (xm[x] + xp[x] + ym[x] + yp[x] + zm[x] + zp[x]);
    }
}

/// The hand-written sweep: rayon over `i` (or a plain loop), then `j`, then one row over `k`,
/// either inlined or through the `RowFn` (one call per row, as the backend makes).
fn hand_written(geom: &Geometry, u: &[f64], out: &mut [f64], how: Hand) {
    let plane = geom.strides[0];
    let row = geom.strides[1];
    let [ni, nj, nk] = [geom.shape[0], geom.shape[1], geom.shape[2]];
    let params = [C0, C1];
    // Opaque to the optimiser, as the backend's call through `Stencil::cpu_rows` is.
    let row_fn: RowFn<f64> = std::hint::black_box(rows);
    let sweep_plane = |(p, out_plane): (usize, &mut [f64])| {
        let i = (p - geom.halo) as isize;
        let mut input = [RowInput::new(u, 0, geom.strides)];
        for j in 0..nj as isize {
            let base = geom.index(&[i, j, 0]);
            let at = base - p * plane;
            let out_row = &mut out_plane[at..at + nk];
            if how.through_row_fn {
                input[0].start = base;
                row_fn(&RowArgs::new(nk, &input, &params), &mut [out_row]);
            } else {
                point_loop(
                    out_row,
                    &u[base..],
                    &u[base - plane..],
                    &u[base + plane..],
                    &u[base - row..],
                    &u[base + row..],
                    &u[base - 1..],
                    &u[base + 1..],
                    C0,
                    C1,
                );
            }
        }
    };
    if how.parallel {
        out.par_chunks_mut(plane)
            .enumerate()
            .skip(geom.halo)
            .take(ni)
            .for_each(sweep_plane);
    } else {
        out.chunks_mut(plane)
            .enumerate()
            .skip(geom.halo)
            .take(ni)
            .for_each(sweep_plane);
    }
}

/// How the hand-written sweep runs.
#[derive(Clone, Copy)]
struct Hand {
    parallel: bool,
    through_row_fn: bool,
}

/// The 64-byte aligned run of `len` elements inside `storage` (which has 8 to spare).
fn aligned(storage: &mut [f64], len: usize) -> &mut [f64] {
    let offset = storage.as_ptr().align_offset(64);
    &mut storage[offset..offset + len]
}

/// One way of running the sweep.
enum Variant<'s> {
    Hand(Hand),
    Backend(&'s Stencil<f64>, CpuSchedule),
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(256, |a| a.parse().expect("usage: rows_vs_backend [N]"));
    let geom = Geometry::new(&[n, n, n], 1, 8).expect("grid fits in memory");
    // 64-byte aligned storage, as the library's grids have (interior rows are then whole
    // cache lines).
    let mut u_storage = vec![0.0; geom.len + 8];
    let mut reference_storage = vec![0.0; geom.len + 8];
    let mut out_storage = vec![0.0; geom.len + 8];
    let u = aligned(&mut u_storage, geom.len);
    let reference = aligned(&mut reference_storage, geom.len);
    let out = aligned(&mut out_storage, geom.len);
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    for value in u.iter_mut() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        *value = (seed >> 11) as f64 / (1u64 << 53) as f64;
    }
    let u = &*u;
    let backend = CpuBackend::global();
    let specialised = Stencil::with_cpu_rows(heat_kernel(), rows).expect("valid kernel");
    let generic = specialised.without_cpu_rows();
    let default = backend.default_cpu_schedule(&[n, n, n]);
    let one_thread = CpuSchedule {
        threads: 1,
        ..default
    };
    let variants = [
        (
            format!(
                "hand-written rows + rayon ({} threads)",
                rayon::current_num_threads()
            ),
            Variant::Hand(Hand {
                parallel: true,
                through_row_fn: false,
            }),
        ),
        (
            "hand-written rows + rayon, through the RowFn".to_string(),
            Variant::Hand(Hand {
                parallel: true,
                through_row_fn: true,
            }),
        ),
        (
            "backend, specialised, default schedule".to_string(),
            Variant::Backend(&specialised, default),
        ),
        (
            "backend, specialised, tiles of one plane".to_string(),
            Variant::Backend(
                &specialised,
                CpuSchedule {
                    tile: [1, 0, 0, 0],
                    ..default
                },
            ),
        ),
        (
            "backend, generic (IR evaluator), default".to_string(),
            Variant::Backend(&generic, default),
        ),
        (
            "hand-written rows, 1 thread".to_string(),
            Variant::Hand(Hand {
                parallel: false,
                through_row_fn: false,
            }),
        ),
        (
            "hand-written rows through the RowFn, 1 thread".to_string(),
            Variant::Hand(Hand {
                parallel: false,
                through_row_fn: true,
            }),
        ),
        (
            "backend, specialised, 1 thread".to_string(),
            Variant::Backend(&specialised, one_thread),
        ),
    ];

    let inlined = Hand {
        parallel: true,
        through_row_fn: false,
    };
    hand_written(&geom, u, reference, inlined);
    let mut identical = true;
    let run = |variant: &Variant<'_>, out: &mut [f64]| match *variant {
        Variant::Hand(how) => hand_written(&geom, u, out, how),
        Variant::Backend(stencil, schedule) => {
            let input = FieldView { geom, data: u };
            let output = FieldViewMut { geom, data: out };
            let mut job =
                Job::new(stencil, vec![input], vec![output], vec![C0, C1]).expect("valid call");
            backend
                .run(&mut job, &Schedule::Cpu(schedule))
                .expect("the CPU backend runs CPU schedules");
        }
    };
    // One untimed call each (page faults, pool start-up), checking the result.
    for (_, variant) in &variants {
        out.fill(0.0);
        run(variant, out);
        identical &= out == reference;
    }
    // Repeats interleave the variants, so that a busy machine slows them all alike.
    let mut times = vec![Vec::new(); variants.len()];
    for _ in 0..REPEATS {
        for ((_, variant), ms) in variants.iter().zip(&mut times) {
            let start = Instant::now();
            run(variant, out);
            ms.push(start.elapsed().as_secs_f64() * 1e3);
        }
    }

    let points = (n * n * n) as f64;
    println!(
        "7-point 3-D f64 stencil, {n}^3, halo 1, backend threads {}, {REPEATS} interleaved repeats",
        backend.threads()
    );
    println!(
        "{:<46} {:>10} {:>10} {:>14} {:>9}",
        "variant", "median ms", "best ms", "GB/s (16 B/pt)", "vs hand"
    );
    let median = |ms: &mut Vec<f64>| {
        ms.sort_by(f64::total_cmp);
        ms[ms.len() / 2]
    };
    let hand = median(&mut times[0].clone());
    for ((name, _), ms) in variants.iter().zip(&mut times) {
        let m = median(ms);
        println!(
            "{name:<46} {m:>10.2} {:>10.2} {:>14.1} {:>9.2}",
            ms[0],
            16.0 * points / (m * 1e-3) / 1e9,
            m / hand
        );
    }
    println!("default schedule: {default:?}");
    println!(
        "all outputs identical to the hand-written sweep: {}",
        if identical { "yes" } else { "NO" }
    );
}
