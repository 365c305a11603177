//! Golden PTX: the generated text of a few kernels and variants, checked in under
//! `tests/golden/`, so any change to the generator shows up as a reviewable diff.
//!
//! Regenerate after an intended change with
//! `STENCIL_BLESS=1 cargo test -p stencil-cuda --test suite -- golden::`.

use crate::common;

use std::path::PathBuf;

use stencil_core::analysis::radius;
use stencil_core::schedule::{GpuSchedule, GpuVariant, MergeKind};
use stencil_core::{ElemType, Geometry, Kernel};
use stencil_cuda::codegen::halo::generate_gather;
use stencil_cuda::{CodegenOptions, generate};

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn check(name: &str, text: &str) {
    let path = golden_dir().join(format!("{name}.ptx"));
    if std::env::var_os("STENCIL_BLESS").is_some() {
        std::fs::create_dir_all(golden_dir()).expect("golden dir");
        std::fs::write(&path, text).expect("write golden file");
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing {}: run `STENCIL_BLESS=1 cargo test -p stencil-cuda --test suite -- golden::`",
            path.display()
        )
    });
    if want != text {
        let line = want
            .lines()
            .zip(text.lines())
            .position(|(a, b)| a != b)
            .map_or(want.lines().count().min(text.lines().count()), |l| l);
        panic!(
            "{} differs from the generator's output at line {} (bless with STENCIL_BLESS=1 if intended)\nwant: {:?}\ngot:  {:?}",
            path.display(),
            line + 1,
            want.lines().nth(line),
            text.lines().nth(line)
        );
    }
}

fn ptx(kernel: &Kernel, shape: &[usize], schedule: GpuSchedule) -> String {
    let halo = radius(kernel).max() as usize;
    let geoms: Vec<Geometry> = (0..kernel.fields.len())
        .map(|_| Geometry::new(shape, halo, kernel.elem().size_bytes()).expect("geometry"))
        .collect();
    generate(kernel, &schedule, &geoms, 80, CodegenOptions::default())
        .expect("generate")
        .ptx()
}

#[test]
fn laplacian_streaming() {
    let k = common::laplacian::stencil().kernel().clone();
    let s = GpuSchedule {
        variant: GpuVariant::Streaming,
        block: [32, 8, 1],
        ..GpuSchedule::default()
    };
    check("laplacian_streaming", &ptx(&k, &[64, 64, 64], s));
}

#[test]
fn jacobi7_f32_thread_per_point_cyclic() {
    let k = common::jacobi7_f32::stencil().kernel().clone();
    let s = GpuSchedule {
        block: [32, 4, 2],
        merge: 2,
        merge_kind: MergeKind::Cyclic,
        ..GpuSchedule::default()
    };
    check("jacobi7_f32_point_cyclic", &ptx(&k, &[40, 30, 70], s));
}

#[test]
fn five_point_shared_tile_unrolled() {
    let k = common::five_point::stencil().kernel().clone();
    let s = GpuSchedule {
        variant: GpuVariant::SharedTile,
        block: [64, 1, 1],
        unroll: 2,
        stream_chunk: 16,
        ..GpuSchedule::default()
    };
    check("five_point_tile_unrolled", &ptx(&k, &[100, 200], s));
}

#[test]
fn halo_gather_f64() {
    check(
        "halo_gather_f64",
        &generate_gather(ElemType::F64, 80).to_string(),
    );
}

#[test]
fn transcendental_f32_thread_per_point() {
    let k = common::transcendental_f32::stencil().kernel().clone();
    check(
        "transcendental_f32_point",
        &ptx(&k, &[1000], GpuSchedule::default()),
    );
}
