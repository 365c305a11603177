//! Unit tests of the generator's checks and bookkeeping (the generated code itself is checked
//! by the ptxas, emulator and golden tests under `tests/`).

use stencil_core::ir::{KernelBuilder, UnaryOp};
use stencil_core::random::{RandomStencilConfig, random_stencil};
use stencil_core::schedule::{GpuSchedule, GpuVariant, MergeKind};
use stencil_core::{ElemType, ErrorKind, Geometry, Kernel};

use super::*;

/// `out[i, j] = u[i-1, j] + u[i, j+2]`, then `f(out)` when `op` is given.
fn kernel_2d(op: Option<UnaryOp>) -> Kernel {
    let mut b = KernelBuilder::new("k2", 2, ElemType::F64);
    let u = b.input("u");
    let out = b.output("out");
    let a = b.read(u, &[-1, 0]);
    let c = b.read(u, &[0, 2]);
    let mut s = b.add(a, c);
    if let Some(op) = op {
        s = b.unary(op, s);
    }
    b.store(out, s);
    b.finish().expect("valid kernel")
}

fn geoms(k: &Kernel, shape: &[usize], halo: usize) -> Vec<Geometry> {
    (0..k.fields.len())
        .map(|_| Geometry::new(shape, halo, k.elem().size_bytes()).unwrap())
        .collect()
}

#[test]
fn malformed_schedules_are_rejected() {
    let ok = GpuSchedule::default();
    assert!(check_schedule(&ok).is_ok());
    for bad in [
        GpuSchedule {
            block: [0, 1, 1],
            ..ok
        },
        GpuSchedule {
            block: [64, 32, 1],
            ..ok
        },
        GpuSchedule { merge: 0, ..ok },
        GpuSchedule { unroll: 0, ..ok },
        GpuSchedule {
            variant: GpuVariant::Streaming,
            block: [32, 2, 2],
            ..ok
        },
    ] {
        let e = check_schedule(&bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidSchedule, "{bad:?}");
    }
}

#[test]
fn four_dimensional_kernels_are_unavailable_and_every_function_is_generated() {
    let k4 = random_stencil(&RandomStencilConfig::new(4, 1, ElemType::F32, 1));
    assert_eq!(
        check_kernel(&k4).unwrap_err().kind(),
        ErrorKind::BackendUnavailable
    );
    assert!(check_kernel(&kernel_2d(Some(UnaryOp::Sqrt))).is_ok());
    for op in [
        UnaryOp::Exp,
        UnaryOp::Ln,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tan,
        UnaryOp::Tanh,
    ] {
        let k = kernel_2d(Some(op));
        assert!(check_kernel(&k).is_ok(), "{op:?}");
        let g = generate(
            &k,
            &GpuSchedule::default(),
            &geoms(&k, &[8, 8], 2),
            80,
            CodegenOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{op:?}: {e}"));
        // Inline routines: fused multiply-adds, no approximate instructions.
        assert!(g.ptx().contains("fma.rn.f64"), "{op:?}");
        assert!(!g.ptx().contains(".approx"), "{op:?}");
    }
}

#[test]
fn shared_ring_size_follows_the_reads() {
    // Streaming axes of a 2-D kernel: z = dim 0 (offsets -1..0: 2 planes), x = dim 1
    // (offsets 0..2: halo 2); y unmapped (height = block y).
    let k = kernel_2d(None);
    let s = GpuSchedule {
        variant: GpuVariant::SharedTile,
        block: [32, 1, 1],
        merge: 2,
        merge_kind: MergeKind::Cyclic,
        ..GpuSchedule::default()
    };
    assert_eq!(shared_bytes(&k, &s), 2 * (32 * 2 + 2) * 8);
    let g = generate(
        &k,
        &s,
        &geoms(&k, &[10, 100], 2),
        90,
        CodegenOptions::default(),
    )
    .unwrap();
    assert_eq!(g.shared_bytes, shared_bytes(&k, &s));
    assert_eq!(
        shared_bytes(
            &k,
            &GpuSchedule {
                variant: GpuVariant::Streaming,
                ..s
            }
        ),
        0
    );
}

#[test]
fn launch_dimensions_cover_the_interior() {
    let k = kernel_2d(None);
    let shape = [10, 100];
    let point = GpuSchedule {
        block: [32, 4, 1],
        merge: 2,
        ..GpuSchedule::default()
    };
    let g = generate(
        &k,
        &point,
        &geoms(&k, &shape, 2),
        80,
        CodegenOptions::default(),
    )
    .unwrap();
    // x: 100 points / (32 threads * 2) = 2 blocks; y = dim 0: 10 / 4 = 3 blocks.
    assert_eq!(g.launch.grid, [2, 3, 1]);
    let stream = GpuSchedule {
        variant: GpuVariant::Streaming,
        block: [32, 1, 1],
        stream_chunk: 3,
        ..GpuSchedule::default()
    };
    let g = generate(
        &k,
        &stream,
        &geoms(&k, &shape, 2),
        80,
        CodegenOptions::default(),
    )
    .unwrap();
    // Streamed dim 0 of 10 planes in chunks of 3: 4 blocks along z.
    assert_eq!(g.launch.grid, [4, 1, 4]);
    assert_eq!(g.module.target, 80);
    assert!(g.ptx().contains(".target sm_80"));
}

#[test]
fn geometry_count_must_match_the_fields() {
    let k = kernel_2d(None);
    let e = generate(
        &k,
        &GpuSchedule::default(),
        &geoms(&k, &[4, 4], 2)[..1],
        80,
        CodegenOptions::default(),
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadArgument);
}

#[test]
fn field_reach_is_per_field_and_per_dimension() {
    let k = kernel_2d(None);
    // u: 1 along dimension 0, 2 along dimension 1; out is never read.
    assert_eq!(field_reach(&k), vec![[1, 2, 0], [0, 0, 0]]);
    let shape = [10, 20];
    let h1 = Geometry::new(&shape, 1, 8).unwrap();
    let h2 = Geometry::new(&shape, 2, 8).unwrap();
    assert!(check_halos(&k, &[h2, h1]).is_ok());
    let err = check_halos(&k, &[h1, h2]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::HaloTooNarrow);
    assert!(err.message().contains("`u`"), "{err}");
}

#[test]
fn the_reduction_entry_has_two_barriers_and_a_partials_parameter_per_reduction() {
    let mut b = KernelBuilder::new("dot", 2, ElemType::F32);
    let x = b.input("x");
    let y = b.input("y");
    let s = b.reduction("s", stencil_core::ir::ReduceOp::Sum);
    let m = b.reduction("m", stencil_core::ir::ReduceOp::Min);
    let a = b.read(x, &[0, 0]);
    let c = b.read(y, &[0, 0]);
    let p = b.mul(a, c);
    b.reduce(s, p);
    b.reduce(m, a);
    let k = b.finish().expect("valid kernel");
    let schedule = GpuSchedule {
        block: [256, 1, 1],
        ..GpuSchedule::default()
    };
    let g = generate(
        &k,
        &schedule,
        &geoms(&k, &[3, 600], 0),
        80,
        Default::default(),
    )
    .expect("generate");
    let entry = &g.module.entries[0];
    assert_eq!(entry.params.len(), 4, "two fields, two partials buffers");
    let barriers = entry
        .body
        .iter()
        .filter(|s| {
            matches!(
                s,
                crate::ptx::Statement::Inst(None, crate::ptx::Inst::BarSync)
            )
        })
        .count();
    assert_eq!(barriers, 2);
    assert_eq!(g.launch.grid, [3, 3, 1]);
    assert_eq!(g.partials, 9);
    let (block, lanes) = (stencil_core::reduce::BLOCK, stencil_core::reduce::LANES);
    assert_eq!(g.shared_bytes, (2 * (block + lanes) * 4) as u64);
    // Schedules other than the reduction variant's are refused.
    for bad in [
        GpuSchedule::default(),
        GpuSchedule {
            block: [256, 1, 1],
            merge: 2,
            ..GpuSchedule::default()
        },
    ] {
        let err = generate(&k, &bad, &geoms(&k, &[3, 600], 0), 80, Default::default()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidSchedule, "{bad:?}");
    }
}
