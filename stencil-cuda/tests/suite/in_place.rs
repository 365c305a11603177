//! Outputs read in place (`y = a * x + y`) on the GPU backend. Every legal schedule of several
//! in-place kernels (1-D, 2-D and 3-D; f32 and f64; one reading only its output, one with two
//! outputs, inputs read at neighbour offsets, a reduction) runs in the emulator against the
//! reference interpreter with the outputs pre-filled with random values (interior and halo),
//! bit for bit, in ascending, descending and shuffled thread and block orders; the outputs'
//! halos and paddings differ from the inputs', so a read from the wrong buffer or geometry
//! shows. Every such module is assembled by `ptxas` for sm_70, sm_80 and sm_90. Also: an
//! in-place output gets no shared tile, both GPU backends say they run such kernels, and the
//! fused-steps kernel refuses them. The quick run takes each schedule in one order and
//! assembles it for one architecture, rotating ([`crate::rotated`]); `STENCIL_FULL_TESTS=1`
//! in all of them.

use crate::common;
use crate::{ARCHS, quick_or_full, rotated};

use common::ptxas::{assemble, assemble_batched, ptxas};
use stencil::{VerifyConfig, verify_with};
use stencil_core::ir::{Kernel, ReduceOp};
use stencil_core::schedule::{GpuSchedule, GpuVariant, Schedule};
use stencil_core::{Backend, Job, check_support};
use stencil_core::{
    ElemType, Element, ErrorKind, FieldView, FieldViewMut, Geometry, KernelBuilder, Role, Stencil,
    interp,
};
use stencil_cuda::caps::{DeviceCaps, default_schedule, sample_schedules, schedule_space};
use stencil_cuda::codegen::{FusedPair, generate_fused, shared_bytes};
use stencil_cuda::emulator::Order;
use stencil_cuda::{CodegenOptions, CudaBackend, EmulatedGpu, generate};
use stencil_test_support::Rng;

/// `y = a * x + y` (vecAXPY), 1-D.
fn axpy(elem: ElemType) -> Kernel {
    let mut b = KernelBuilder::new("axpy", 1, elem);
    let x = b.input("x");
    let y = b.output("y");
    let a = b.param("a");
    let ar = b.param_ref(a);
    let xv = b.read(x, &[0]);
    let yv = b.read(y, &[0]);
    let ax = b.mul(ar, xv);
    let v = b.add(ax, yv);
    b.store(y, v);
    b.finish().expect("axpy")
}

/// `y = c * y - 1`: no input at all, only the output read in place (2-D).
fn scale_only(elem: ElemType) -> Kernel {
    let mut b = KernelBuilder::new("scale_only", 2, elem);
    let y = b.output("y");
    let c = b.param("c");
    let cr = b.param_ref(c);
    let yv = b.read(y, &[0, 0]);
    let one = b.constant(1.0);
    let s = b.mul(cr, yv);
    let v = b.sub(s, one);
    b.store(y, v);
    b.finish().expect("scale_only")
}

/// Two outputs updated in place from a five-point neighbourhood of `x` (2-D): `p = p + a *
/// (x[i-1, j] + x[i+1, j] + x[i, j-1] + x[i, j+1] - 4 x)`, `q = x - b * q`.
fn neighbours_2d(elem: ElemType) -> Kernel {
    let mut b = KernelBuilder::new("neighbours_2d", 2, elem);
    let x = b.input("x");
    let p = b.output("p");
    let q = b.output("q");
    let a = b.param("a");
    let beta = b.param("b");
    let mut sum = b.read(x, &[-1, 0]);
    for off in [[1, 0], [0, -1], [0, 1]] {
        let r = b.read(x, &off);
        sum = b.add(sum, r);
    }
    let four = b.constant(4.0);
    let xc = b.read(x, &[0, 0]);
    let fx = b.mul(four, xc);
    let lap = b.sub(sum, fx);
    let ar = b.param_ref(a);
    let step = b.mul(ar, lap);
    let pv = b.read(p, &[0, 0]);
    let np = b.add(pv, step);
    b.store(p, np);
    let br = b.param_ref(beta);
    let qv = b.read(q, &[0, 0]);
    let bq = b.mul(br, qv);
    let nq = b.sub(xc, bq);
    b.store(q, nq);
    b.finish().expect("neighbours_2d")
}

/// An explicit diffusion step accumulated in place (3-D): `u = u + dt * kappa * lap(v)`, with
/// `kappa` read at its point and `v` at the six neighbours.
fn accumulate_3d(elem: ElemType) -> Kernel {
    let mut b = KernelBuilder::new("accumulate_3d", 3, elem);
    let v = b.input("v");
    let kappa = b.input("kappa");
    let u = b.output("u");
    let dt = b.param("dt");
    let mut sum = b.read(v, &[-1, 0, 0]);
    for off in [[1, 0, 0], [0, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0, 1]] {
        let r = b.read(v, &off);
        sum = b.add(sum, r);
    }
    let six = b.constant(6.0);
    let vc = b.read(v, &[0, 0, 0]);
    let sv = b.mul(six, vc);
    let lap = b.sub(sum, sv);
    let dtr = b.param_ref(dt);
    let kv = b.read(kappa, &[0, 0, 0]);
    let dk = b.mul(dtr, kv);
    let inc = b.mul(dk, lap);
    let uv = b.read(u, &[0, 0, 0]);
    let nu = b.add(uv, inc);
    b.store(u, nu);
    b.finish().expect("accumulate_3d")
}

/// CG's residual update in place with its squared norm: `v = r - alpha * q; r = v; rr += v v`.
fn update_residual(n_dims: usize, elem: ElemType) -> Kernel {
    let mut b = KernelBuilder::new(&format!("update_residual_{n_dims}d"), n_dims, elem);
    let q = b.input("q");
    let r = b.output("r");
    let rr = b.reduction("rr", ReduceOp::Sum);
    let alpha = b.param("alpha");
    let zero = vec![0; n_dims];
    let rv = b.read(r, &zero);
    let qv = b.read(q, &zero);
    let ar = b.param_ref(alpha);
    let aq = b.mul(ar, qv);
    let v = b.sub(rv, aq);
    let l = b.let_("v", v);
    let vr = b.let_ref(l);
    b.store(r, vr);
    let sq = b.mul(vr, vr);
    b.reduce(rr, sq);
    b.finish().expect("update_residual")
}

/// An in-place kernel and the shape it runs on.
struct Case {
    kernel: Kernel,
    shape: Vec<usize>,
}

/// The kernels in both element types (the 3-D diffusion step in f64 only), on shapes that
/// blocks do not divide (outer extents of 2-D and 3-D kernels over 16 admit concurrent
/// streaming in chunks of 16).
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for elem in [ElemType::F64, ElemType::F32] {
        out.push(Case {
            kernel: axpy(elem),
            shape: vec![300],
        });
        out.push(Case {
            kernel: scale_only(elem),
            shape: vec![5, 70],
        });
        out.push(Case {
            kernel: neighbours_2d(elem),
            shape: vec![19, 45],
        });
        if elem == ElemType::F64 {
            // 3-D f32 is `update_residual`'s below: this kernel's space holds over a thousand
            // schedules per element type.
            out.push(Case {
                kernel: accumulate_3d(elem),
                shape: vec![18, 3, 35],
            });
        }
        out.push(Case {
            kernel: update_residual(1, elem),
            shape: vec![600],
        });
        out.push(Case {
            kernel: update_residual(2, elem),
            shape: vec![3, 300],
        });
        out.push(Case {
            kernel: update_residual(3, elem),
            shape: vec![2, 3, 259],
        });
    }
    out
}

/// One geometry per field of `kernel` (declaration order): inputs with a halo of 2, outputs
/// with halos 0, 3, ... and one padded line per row, so outputs and inputs never share a
/// layout.
fn geometries(kernel: &Kernel, shape: &[usize]) -> Vec<Geometry> {
    let esz = kernel.elem().size_bytes();
    let mut n_out = 0;
    kernel
        .fields
        .iter()
        .map(|f| match f.role {
            Role::Input => Geometry::new(shape, 2, esz).expect("geometry"),
            Role::Output => {
                n_out += 1;
                Geometry::padded(shape, 3 * (n_out - 1), esz, 1).expect("geometry")
            }
        })
        .collect()
}

/// Random values (interior and halo) for every field of `kernel`, drawn from `seed`.
fn random_fields<T: Element>(geoms: &[Geometry], seed: u64) -> Vec<Vec<T>> {
    let mut rng = Rng::new(seed);
    geoms
        .iter()
        .map(|g| {
            (0..g.len)
                .map(|_| T::from_f64(rng.uniform(-1.0, 1.0)))
                .collect()
        })
        .collect()
}

fn bits<T: Element>(v: T) -> u64 {
    v.to_f64().to_bits()
}

/// The outputs (whole storage) and reductions of `kernel` on random fields: from the
/// interpreter, with every output pre-filled with random values, and from `backend` under
/// `schedule` on the same values; `Err` describes the first difference.
fn check<T: Element>(
    kernel: &Kernel,
    shape: &[usize],
    seed: u64,
    backend: &dyn Backend<T>,
    schedule: &GpuSchedule,
) -> Result<(), String> {
    let geoms = geometries(kernel, shape);
    let fields = random_fields::<T>(&geoms, seed);
    let params: Vec<T> = (0..kernel.params.len())
        .map(|p| T::from_f64(0.75 - 0.375 * p as f64))
        .collect();
    let split = |fields: &[Vec<T>]| {
        let mut ins = Vec::new();
        let mut outs = Vec::new();
        for ((f, data), geom) in kernel.fields.iter().zip(fields).zip(&geoms) {
            match f.role {
                Role::Input => ins.push((data.clone(), *geom)),
                Role::Output => outs.push((data.clone(), *geom)),
            }
        }
        (ins, outs)
    };
    let (ins, outs0) = split(&fields);
    let in_views = || {
        ins.iter()
            .map(|(data, geom)| FieldView { geom: *geom, data })
            .collect::<Vec<_>>()
    };
    let mut want = outs0.clone();
    let want_red = {
        let mut views: Vec<FieldViewMut<'_, T>> = want
            .iter_mut()
            .map(|(data, geom)| FieldViewMut { geom: *geom, data })
            .collect();
        interp::run_reducing(kernel, &in_views(), &mut views, &params)
    };
    let stencil = Stencil::<T>::new(kernel.clone()).map_err(|e| e.to_string())?;
    let mut got = outs0.clone();
    let got_red = {
        let views: Vec<FieldViewMut<'_, T>> = got
            .iter_mut()
            .map(|(data, geom)| FieldViewMut { geom: *geom, data })
            .collect();
        let mut job =
            Job::new(&stencil, in_views(), views, params.clone()).map_err(|e| e.to_string())?;
        backend
            .run(&mut job, &Schedule::Gpu(*schedule))
            .map_err(|e| format!("{} {schedule:?}: {e}", kernel.name))?;
        job.reductions()
            .iter()
            .map(|r| r.expect("every reduction set"))
            .collect::<Vec<T>>()
    };
    for (o, ((w, _), (g, geom))) in want.iter().zip(&got).enumerate() {
        if let Some(i) = (0..w.len()).find(|&i| bits(w[i]) != bits(g[i])) {
            return Err(format!(
                "{} {shape:?} {schedule:?}: output {o} differs at storage index {i} \
                 (interior origin {}): expected {:e}, found {:e}",
                kernel.name,
                geom.origin,
                w[i].to_f64(),
                g[i].to_f64()
            ));
        }
    }
    for (r, (w, g)) in want_red.iter().zip(&got_red).enumerate() {
        if bits(*w) != bits(*g) {
            return Err(format!(
                "{} {shape:?} {schedule:?}: reduction {r} expected {:e}, found {:e}",
                kernel.name,
                w.to_f64(),
                g.to_f64()
            ));
        }
    }
    Ok(())
}

fn check_any(
    case: &Case,
    seed: u64,
    backend: &EmulatedGpu,
    schedule: &GpuSchedule,
) -> Result<(), String> {
    match case.kernel.elem() {
        ElemType::F64 => check::<f64>(&case.kernel, &case.shape, seed, backend, schedule),
        ElemType::F32 => check::<f32>(&case.kernel, &case.shape, seed, backend, schedule),
    }
}

const ORDERS: [(Order, Order); 3] = [
    (Order::Ascending, Order::Ascending),
    (Order::Descending, Order::Descending),
    (Order::Shuffled(7), Order::Shuffled(11)),
];

#[test]
fn every_legal_schedule_matches_the_interpreter_bit_for_bit_in_every_order() {
    let full = quick_or_full(
        false,
        true,
        "each schedule in one of the three thread and block orders (rotating), not all three",
    );
    let mut runs = 0;
    for (c, case) in cases().iter().enumerate() {
        let space = schedule_space(&case.kernel, &case.shape, &DeviceCaps::sm_90());
        assert!(!space.is_empty(), "{}", case.kernel.name);
        if case.kernel.n_dims >= 2 && !case.kernel.has_reductions() {
            for v in [GpuVariant::Streaming, GpuVariant::SharedTile] {
                assert!(
                    space.iter().any(|s| s.variant == v),
                    "{}: no {v:?}",
                    case.kernel.name
                );
            }
        }
        for (s, schedule) in space.iter().enumerate() {
            for (threads, blocks) in rotated(&ORDERS, c + s, full) {
                let o = ORDERS
                    .iter()
                    .position(|x| *x == (threads, blocks))
                    .expect("order");
                let gpu = EmulatedGpu::new().with_order(threads, blocks);
                let seed = (c * 1000 + s) as u64 * 3 + o as u64;
                check_any(case, seed, &gpu, schedule)
                    .unwrap_or_else(|e| panic!("{threads:?} {blocks:?}: {e}"));
                runs += 1;
            }
        }
    }
    println!("{runs} runs bit for bit");
}

#[test]
fn every_legal_in_place_module_assembles_with_ptxas() {
    let Some(ptxas) = ptxas() else {
        return;
    };
    let full = quick_or_full(
        false,
        true,
        "each schedule assembled for one of sm_70/80/90 (rotating), not all three",
    );
    let mut assembled = 0;
    for arch in ARCHS {
        let mut modules = Vec::new();
        for (c, case) in cases().iter().enumerate() {
            let geoms = geometries(&case.kernel, &case.shape);
            let space = schedule_space(&case.kernel, &case.shape, &DeviceCaps::sm_90());
            for (s, schedule) in space.iter().enumerate() {
                if !rotated(&ARCHS, c + s, full).contains(&arch) {
                    continue;
                }
                let g = generate(
                    &case.kernel,
                    schedule,
                    &geoms,
                    arch,
                    CodegenOptions::default(),
                )
                .unwrap_or_else(|e| panic!("{} {schedule:?}: {e}", case.kernel.name));
                modules.push((format!("in_place_{c}_{s}_{arch}"), g.ptx()));
            }
        }
        assembled += assemble_batched(&ptxas, &modules, arch);
    }
    println!("{assembled} in-place modules assembled");
    // The optimised code of the default and sampled schedules does not spill.
    let mut checked = 0;
    for (c, case) in cases().iter().enumerate() {
        let geoms = geometries(&case.kernel, &case.shape);
        let mut schedules = sample_schedules(&case.kernel);
        schedules.push(default_schedule(&case.kernel, &case.shape));
        for (s, schedule) in schedules.iter().enumerate() {
            let g = generate(
                &case.kernel,
                schedule,
                &geoms,
                80,
                CodegenOptions::default(),
            )
            .unwrap_or_else(|e| panic!("{} {schedule:?}: {e}", case.kernel.name));
            let tag = format!("in_place_sample_{c}_{s}");
            assert_eq!(assemble(&ptxas, &g.ptx(), 80, &tag), (0, 0), "{tag} spills");
            checked += 1;
        }
    }
    println!("{checked} sampled modules assembled at -O3 without spills");
}

#[test]
fn defaults_and_samples_are_legal_and_agree_with_the_interpreter() {
    let gpu = EmulatedGpu::new();
    for (c, case) in cases().iter().enumerate() {
        let space = schedule_space(&case.kernel, &case.shape, &DeviceCaps::sm_80());
        let default = default_schedule(&case.kernel, &case.shape);
        assert!(space.contains(&default), "{}", case.kernel.name);
        for (s, schedule) in sample_schedules(&case.kernel).iter().enumerate() {
            check_any(case, 77 + (c * 100 + s) as u64, &gpu, schedule)
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn an_output_read_in_place_has_no_shared_tile() {
    // `neighbours_2d`: fields x, p, q; only `x` gets a ring.
    let kernel = neighbours_2d(ElemType::F64);
    let shape = [19, 45];
    let geoms = geometries(&kernel, &shape);
    let schedule = GpuSchedule {
        variant: GpuVariant::SharedTile,
        block: [32, 1, 1],
        ..GpuSchedule::default()
    };
    let g = generate(&kernel, &schedule, &geoms, 80, CodegenOptions::default()).expect("tile");
    let ptx = g.ptx();
    assert!(ptx.contains("tile_0"), "{ptx}");
    assert!(!ptx.contains("tile_1") && !ptx.contains("tile_2"), "{ptx}");
    // 2-D streaming walks dimension 0: x's ring holds 3 planes (rows) of 32 + 2 cells.
    assert_eq!(shared_bytes(&kernel, &schedule), 3 * 34 * 8);
    assert_eq!(g.shared_bytes, shared_bytes(&kernel, &schedule));
}

#[test]
fn the_gpu_backends_run_in_place_kernels_and_fused_steps_refuse_them() {
    let kernel = axpy(ElemType::F64);
    let gpu = EmulatedGpu::new();
    assert!(<EmulatedGpu as Backend<f64>>::capabilities(&gpu).in_place);
    assert!(<CudaBackend as Backend<f64>>::capabilities(&CudaBackend::new()).in_place);
    check_support::<f64>(&gpu, &kernel).expect("the emulator runs in-place kernels");
    // Through `verify`, every sampled schedule against the interpreter.
    let stencil = Stencil::<f64>::new(kernel.clone()).expect("stencil");
    let b: &dyn Backend<f64> = &gpu;
    let report = verify_with(&stencil, &[b], &VerifyConfig::default()).expect("verify");
    assert!(report.cases > 0, "{report}");
    let stencil = Stencil::<f32>::new(update_residual(3, ElemType::F32)).expect("stencil");
    let b: &dyn Backend<f32> = &gpu;
    let report = verify_with(&stencil, &[b], &VerifyConfig::default()).expect("verify");
    assert!(report.cases > 0, "{report}");
    // The fused-steps kernel does not take them (time loops refuse them in core).
    let geoms = vec![Geometry::new(&[64], 1, 8).expect("geometry"); 2];
    let err = generate_fused(
        &kernel,
        &GpuSchedule {
            block: [32, 1, 1],
            time_steps: 2,
            ..GpuSchedule::default()
        },
        &geoms,
        80,
        FusedPair {
            output: 1,
            input: 0,
        },
    )
    .expect_err("fused steps of an in-place kernel");
    assert_eq!(err.kind(), ErrorKind::InvalidSchedule, "{err}");
    assert!(err.message().contains("in place"), "{err}");
}
