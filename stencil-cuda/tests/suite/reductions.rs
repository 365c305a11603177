//! Reductions on the GPU backend: the reduction variant (one thread block per reduction block,
//! lanes folded in shared memory, the blocks' values combined on the host) gives exactly the
//! bits of the reference interpreter for plain reads (no arithmetic the generator could order
//! differently), on odd shapes in 1-D, 2-D and 3-D, f32 and f64, `Sum`, `Min` and `Max` (NaN
//! inputs included); in every thread and block order of the emulator; through
//! `stencil::verify_with`; assembled by `ptxas` for sm_70, sm_80 and sm_90 in every legal
//! schedule (on the quick run each schedule for one of them, rotating). Planted bugs (a missing `bar.sync`, points dealt to the wrong lanes) are caught.
//! Also: inputs whose halo is narrower than their reads reach are refused with
//! `HaloTooNarrow`, and each input needs only the halo of its own reads.

use crate::common;
use crate::{ARCHS, quick_or_full, rotated};

use common::ptxas::{assemble, ptxas};
use stencil::{VerifyConfig, verify_with};
use stencil_core::ir::{Kernel, ReduceOp};
use stencil_core::schedule::{GpuSchedule, GpuVariant, MergeKind, Schedule};
use stencil_core::{Backend, Job};
use stencil_core::{
    ElemType, Element, ErrorKind, FieldView, FieldViewMut, Geometry, KernelBuilder,
};
use stencil_core::{Stencil, interp};
use stencil_cuda::caps::{DeviceCaps, default_schedule, sample_schedules, schedule_space};
use stencil_cuda::codegen::{PlantedReductionBug, check_halos};
use stencil_cuda::emulator::Order;
use stencil_cuda::{CodegenOptions, EmulatedGpu, generate, is_reduction_schedule};
use stencil_test_support::Rng;

/// `s = op(s, x[0, .., 0])` over one input, no output.
fn plain_read(n_dims: usize, elem: ElemType, op: ReduceOp) -> Kernel {
    let mut b = KernelBuilder::new(&format!("read_{op:?}_{n_dims}d"), n_dims, elem);
    let x = b.input("x");
    let r = b.reduction("s", op);
    let v = b.read(x, &vec![0; n_dims]);
    b.reduce(r, v);
    b.finish().expect("kernel")
}

/// An output and three reductions of plain reads of two inputs, one of them read one point
/// away along the last dimension.
fn mixed(n_dims: usize, elem: ElemType) -> Kernel {
    let mut b = KernelBuilder::new(&format!("mixed_{n_dims}d"), n_dims, elem);
    let x = b.input("x");
    let y = b.input("y");
    let out = b.output("out");
    let sum = b.reduction("sum", ReduceOp::Sum);
    let lo = b.reduction("lo", ReduceOp::Min);
    let hi = b.reduction("hi", ReduceOp::Max);
    let zero = vec![0; n_dims];
    let mut left = zero.clone();
    left[n_dims - 1] = -1;
    let xv = b.read(x, &zero);
    let yl = b.read(y, &left);
    let yv = b.read(y, &zero);
    let two = b.constant(2.0);
    let twice = b.mul(two, xv);
    let o = b.add(twice, yl);
    b.store(out, o);
    b.reduce(sum, xv);
    b.reduce(lo, yv);
    b.reduce(hi, xv);
    b.finish().expect("kernel")
}

fn shapes(n_dims: usize) -> Vec<Vec<usize>> {
    match n_dims {
        1 => vec![vec![1], vec![255], vec![257], vec![1000]],
        2 => vec![vec![3, 300], vec![5, 7], vec![2, 513]],
        _ => vec![vec![2, 3, 259], vec![3, 2, 17]],
    }
}

/// Random values over many magnitudes (so the order of a sum shows in its bits), with NaNs
/// when `nans`.
fn random_data<T: Element>(n: usize, rng: &mut Rng, nans: bool) -> Vec<T> {
    (0..n)
        .map(|_| {
            if nans && rng.chance(0.05) {
                T::from_f64(f64::NAN)
            } else {
                let scale = 10f64.powi(rng.range(-8, 8) as i32);
                T::from_f64(rng.uniform(-1.0, 1.0) * scale)
            }
        })
        .collect()
}

fn bits<T: Element>(v: T) -> u64 {
    v.to_f64().to_bits()
}

/// The outputs and reductions of `kernel` on random grids (halo `halo`, every input drawn from
/// `seed`): from the interpreter, and from `backend` under `schedule` (or its error).
#[allow(clippy::type_complexity)]
fn run_both<T: Element>(
    kernel: &Kernel,
    shape: &[usize],
    halo: usize,
    seed: u64,
    backend: &dyn Backend<T>,
    schedule: &GpuSchedule,
) -> stencil::Result<((Vec<Vec<T>>, Vec<T>), (Vec<Vec<T>>, Vec<T>))> {
    let stencil = Stencil::<T>::new(kernel.clone())?;
    let geom = Geometry::new(shape, halo, T::ELEM.size_bytes())?;
    let mut rng = Rng::new(seed);
    let nans = kernel.reductions.iter().all(|r| r.op != ReduceOp::Sum);
    let inputs: Vec<Vec<T>> = kernel
        .inputs()
        .map(|_| random_data(geom.len, &mut rng, nans))
        .collect();
    let poison = vec![T::from_f64(-7.25); geom.len];
    let n_out = kernel.outputs().count();
    let views = || {
        inputs
            .iter()
            .map(|d| FieldView { geom, data: d })
            .collect::<Vec<_>>()
    };
    let mut expected_out = vec![poison.clone(); n_out];
    let expected_red = {
        let mut outs: Vec<FieldViewMut<'_, T>> = expected_out
            .iter_mut()
            .map(|d| FieldViewMut { geom, data: d })
            .collect();
        interp::run_reducing(kernel, &views(), &mut outs, &[])
    };
    let mut got_out = vec![poison.clone(); n_out];
    let got_red = {
        let outs: Vec<FieldViewMut<'_, T>> = got_out
            .iter_mut()
            .map(|d| FieldViewMut { geom, data: d })
            .collect();
        let mut job = Job::new(&stencil, views(), outs, vec![])?;
        backend.run(&mut job, &Schedule::Gpu(*schedule))?;
        job.reductions()
            .iter()
            .map(|r| r.expect("every reduction set"))
            .collect::<Vec<T>>()
    };
    Ok(((expected_out, expected_red), (got_out, got_red)))
}

/// Checks `backend` against the interpreter bit for bit; `Err` describes the first difference.
fn check_exact<T: Element>(
    kernel: &Kernel,
    shape: &[usize],
    halo: usize,
    seed: u64,
    backend: &dyn Backend<T>,
    schedule: &GpuSchedule,
) -> Result<(), String> {
    let ((want_out, want_red), (got_out, got_red)) =
        run_both(kernel, shape, halo, seed, backend, schedule).map_err(|e| e.to_string())?;
    for ((r, want), got) in kernel.reductions.iter().zip(&want_red).zip(&got_red) {
        let same = bits(*want) == bits(*got) || (want.is_nan() && got.is_nan());
        if !same {
            return Err(format!(
                "{} {shape:?} {schedule:?}: reduction `{}` expected {:e}, found {:e}",
                kernel.name,
                r.name,
                want.to_f64(),
                got.to_f64()
            ));
        }
    }
    for (o, (want, got)) in want_out.iter().zip(&got_out).enumerate() {
        if want
            .iter()
            .map(|v| bits(*v))
            .ne(got.iter().map(|v| bits(*v)))
        {
            return Err(format!(
                "{} {shape:?} {schedule:?}: output {o} differs",
                kernel.name
            ));
        }
    }
    Ok(())
}

fn for_each_case(mut f: impl FnMut(&Kernel, &[usize], u64)) {
    let mut seed = 1;
    for n_dims in 1..=3 {
        for elem in [ElemType::F64, ElemType::F32] {
            let mut kernels: Vec<Kernel> = ReduceOp::ALL
                .into_iter()
                .map(|op| plain_read(n_dims, elem, op))
                .collect();
            kernels.push(mixed(n_dims, elem));
            for kernel in &kernels {
                for shape in shapes(n_dims) {
                    seed += 1;
                    f(kernel, &shape, seed);
                }
            }
        }
    }
}

fn check_exact_any(
    kernel: &Kernel,
    shape: &[usize],
    seed: u64,
    backend: &EmulatedGpu,
    schedule: &GpuSchedule,
) -> Result<(), String> {
    match kernel.elem() {
        ElemType::F64 => check_exact::<f64>(kernel, shape, 1, seed, backend, schedule),
        ElemType::F32 => check_exact::<f32>(kernel, shape, 1, seed, backend, schedule),
    }
}

#[test]
fn the_emulator_matches_the_interpreter_bit_for_bit_in_every_sample_schedule() {
    let gpu = EmulatedGpu::new();
    let mut cases = 0;
    for_each_case(|kernel, shape, seed| {
        for schedule in sample_schedules(kernel) {
            check_exact_any(kernel, shape, seed, &gpu, &schedule).unwrap_or_else(|e| panic!("{e}"));
            cases += 1;
        }
    });
    println!("{cases} cases bit for bit");
}

#[test]
fn thread_and_block_orders_give_the_same_bits() {
    let orders = [
        (Order::Descending, Order::Descending),
        (Order::Shuffled(7), Order::Shuffled(11)),
        (Order::Shuffled(99), Order::Ascending),
    ];
    for_each_case(|kernel, shape, seed| {
        if shape.iter().product::<usize>() < 256 {
            return;
        }
        for (threads, blocks) in orders {
            let gpu = EmulatedGpu::new().with_order(threads, blocks);
            let schedule = default_schedule(kernel, shape);
            check_exact_any(kernel, shape, seed, &gpu, &schedule)
                .unwrap_or_else(|e| panic!("{threads:?} {blocks:?}: {e}"));
        }
    });
}

#[test]
fn verify_accepts_the_emulated_reductions() {
    let gpu = EmulatedGpu::new();
    for n_dims in 1..=3 {
        for elem in [ElemType::F64, ElemType::F32] {
            let kernel = mixed(n_dims, elem);
            let report = match elem {
                ElemType::F64 => {
                    let s = Stencil::<f64>::new(kernel.clone()).expect("stencil");
                    let b: &dyn Backend<f64> = &gpu;
                    verify_with(&s, &[b], &VerifyConfig::default())
                }
                ElemType::F32 => {
                    let s = Stencil::<f32>::new(kernel.clone()).expect("stencil");
                    let b: &dyn Backend<f32> = &gpu;
                    verify_with(&s, &[b], &VerifyConfig::default())
                }
            }
            .unwrap_or_else(|e| panic!("{}: {e}", kernel.name));
            assert!(report.cases > 0, "{report}");
        }
    }
}

/// `op` over an interior of `shape` whose values are `value(point index)`, on the emulator
/// under every sample schedule: the results (all the same bits, checked here).
fn reduce_on_gpu<T: Element>(op: ReduceOp, shape: &[usize], value: impl Fn(usize) -> T) -> T {
    let kernel = plain_read(shape.len(), T::ELEM, op);
    let stencil = Stencil::<T>::new(kernel.clone()).expect("stencil");
    let geom = Geometry::new(shape, 0, T::ELEM.size_bytes()).expect("geometry");
    let mut data = vec![T::from_f64(0.5); geom.len];
    let mut point = vec![0isize; shape.len()];
    for p in 0..geom.n_points() {
        let mut rest = p;
        for d in (0..shape.len()).rev() {
            point[d] = (rest % shape[d]) as isize;
            rest /= shape[d];
        }
        data[geom.index(&point)] = value(p);
    }
    let mut results = Vec::new();
    for schedule in sample_schedules(&kernel) {
        let inputs = vec![FieldView { geom, data: &data }];
        let mut job = Job::new(&stencil, inputs, vec![], vec![]).expect("job");
        Backend::<T>::run(&EmulatedGpu::new(), &mut job, &Schedule::Gpu(schedule)).expect("run");
        results.push(job.reductions()[0].expect("the reduction is set"));
    }
    assert!(!results.is_empty(), "no sample schedule");
    let first = results[0];
    assert!(
        results.iter().all(|&r| bits(r) == bits(first)),
        "{op:?} {shape:?}: schedules disagree: {results:?}"
    );
    first
}

#[test]
fn min_and_max_of_nans_only_are_nan_and_of_a_mix_the_extreme_number() {
    for op in [ReduceOp::Min, ReduceOp::Max] {
        for shape in [&[2, 3][..], &[257], &[2, 2, 300]] {
            let all_nan = reduce_on_gpu::<f32>(op, shape, |_| f32::NAN);
            assert!(all_nan.is_nan(), "{op:?} f32 {shape:?}: {all_nan}");
            let all_nan = reduce_on_gpu::<f64>(op, shape, |_| f64::NAN);
            assert!(all_nan.is_nan(), "{op:?} f64 {shape:?}: {all_nan}");
            // Numbers at two points (one past the first block where the rows are long),
            // NaN elsewhere.
            let n: usize = shape.iter().product();
            let mixed = reduce_on_gpu::<f64>(op, shape, |p| match p {
                1 => -2.5,
                _ if p == n - 1 => 3.0,
                _ => f64::NAN,
            });
            let want = if op == ReduceOp::Min { -2.5 } else { 3.0 };
            assert_eq!(mixed, want, "{op:?} {shape:?}");
        }
    }
}

#[test]
fn a_missing_barrier_is_caught_by_some_thread_order() {
    let kernel = plain_read(1, ElemType::F64, ReduceOp::Sum);
    let schedule = default_schedule(&kernel, &[1000]);
    let orders = [
        (Order::Ascending, Order::Ascending),
        (Order::Descending, Order::Ascending),
        (Order::Shuffled(3), Order::Ascending),
    ];
    let caught = orders
        .iter()
        .filter(|&&(threads, blocks)| {
            let planted = EmulatedGpu::new()
                .with_order(threads, blocks)
                .with_planted_reduction_bug(PlantedReductionBug::MissingBarrier);
            check_exact::<f64>(&kernel, &[1000], 0, 5, &planted, &schedule).is_err()
        })
        .count();
    assert!(caught > 0, "no thread order exposed the missing bar.sync");
    // The clean generator passes in every one of these orders.
    for (threads, blocks) in orders {
        let gpu = EmulatedGpu::new().with_order(threads, blocks);
        check_exact::<f64>(&kernel, &[1000], 0, 5, &gpu, &schedule).expect("clean generator");
    }
}

#[test]
fn a_wrong_lane_order_is_caught() {
    let planted = EmulatedGpu::new().with_planted_reduction_bug(PlantedReductionBug::LaneOrder);
    let kernel = plain_read(2, ElemType::F64, ReduceOp::Sum);
    let schedule = default_schedule(&kernel, &[3, 700]);
    let err = check_exact::<f64>(&kernel, &[3, 700], 0, 9, &planted, &schedule)
        .expect_err("the planted lane order must be caught");
    assert!(err.contains("reduction `s`"), "{err}");
    check_exact::<f64>(&kernel, &[3, 700], 0, 9, &EmulatedGpu::new(), &schedule)
        .expect("clean generator");
}

#[test]
fn the_schedule_space_of_a_reduction_kernel_is_the_reduction_variant() {
    let kernel = mixed(3, ElemType::F64);
    let shape = [4, 5, 600];
    for caps in [DeviceCaps::sm_80(), DeviceCaps::sm_90()] {
        let space = schedule_space(&kernel, &shape, &caps);
        assert!(!space.is_empty());
        assert!(space.iter().all(is_reduction_schedule), "{space:?}");
        assert!(space.contains(&default_schedule(&kernel, &shape)));
        for s in sample_schedules(&kernel) {
            assert!(space.contains(&s), "{s:?}");
        }
        // 256 x 1, 128 x 2 (block, cyclic), 64 x 4 (block, cyclic).
        assert_eq!(space.len(), 5, "{space:?}");
    }
    // Other schedules are refused, with InvalidSchedule.
    let geoms = vec![Geometry::new(&shape, 1, 8).expect("geometry"); 3];
    for bad in [
        GpuSchedule {
            block: [32, 4, 1],
            ..GpuSchedule::default()
        },
        GpuSchedule {
            variant: GpuVariant::Streaming,
            block: [256, 1, 1],
            ..GpuSchedule::default()
        },
        GpuSchedule {
            block: [128, 1, 1],
            merge: 1,
            merge_kind: MergeKind::Block,
            ..GpuSchedule::default()
        },
    ] {
        let err = generate(&kernel, &bad, &geoms, 80, CodegenOptions::default())
            .expect_err("not a reduction schedule");
        assert_eq!(err.kind(), ErrorKind::InvalidSchedule, "{err}");
    }
}

#[test]
fn many_rows_of_a_2d_kernel_fold_into_grid_z() {
    let kernel = plain_read(2, ElemType::F32, ReduceOp::Max);
    let shape = [70_000, 300];
    let geoms = vec![Geometry::new(&shape, 0, 4).expect("geometry")];
    let g = generate(
        &kernel,
        &default_schedule(&kernel, &shape),
        &geoms,
        80,
        CodegenOptions::default(),
    )
    .expect("generate");
    assert_eq!(g.launch.grid, [2, 65535, 2]);
    assert_eq!(g.launch.block, [256, 1, 1]);
    assert_eq!(g.partials, 140_000);
}

#[test]
fn every_legal_reduction_schedule_assembles_with_ptxas() {
    let Some(ptxas) = ptxas() else {
        return;
    };
    let full = quick_or_full(
        false,
        true,
        "each reduction schedule assembled for one of sm_70/80/90 (rotating), not all three",
    );
    let mut assembled = 0;
    for n_dims in 1..=3 {
        for elem in [ElemType::F64, ElemType::F32] {
            let mut kernels: Vec<Kernel> = ReduceOp::ALL
                .into_iter()
                .map(|op| plain_read(n_dims, elem, op))
                .collect();
            kernels.push(mixed(n_dims, elem));
            let mut shapes = shapes(n_dims);
            if n_dims == 2 {
                shapes.push(vec![70_000, 300]);
            }
            for (k_idx, kernel) in kernels.iter().enumerate() {
                for (s_idx, shape) in shapes.iter().enumerate() {
                    let geoms = vec![
                        Geometry::new(shape, 1, elem.size_bytes()).expect("geometry");
                        kernel.fields.len()
                    ];
                    let space = schedule_space(kernel, shape, &DeviceCaps::sm_90());
                    assert_eq!(space.len(), 5);
                    for (p_idx, schedule) in space.iter().enumerate() {
                        for arch in rotated(&ARCHS, k_idx + s_idx + p_idx, full) {
                            let g =
                                generate(kernel, schedule, &geoms, arch, CodegenOptions::default())
                                    .unwrap_or_else(|e| {
                                        panic!("{} {schedule:?}: {e}", kernel.name)
                                    });
                            let tag =
                                format!("reduce_{n_dims}_{elem}_{k_idx}_{s_idx}_{p_idx}_{arch}");
                            let spills = assemble(&ptxas, &g.ptx(), arch, &tag);
                            assert_eq!(spills, (0, 0), "{tag} spills");
                            assembled += 1;
                        }
                    }
                }
            }
        }
    }
    println!("{assembled} reduction modules assembled");
}

#[test]
fn each_input_needs_only_the_halo_its_own_reads_reach() {
    // `x` is read at offset 0 only, `y` one point away: a halo of 0 on `x` suffices.
    let kernel = mixed(2, ElemType::F64);
    let shape = [4, 300];
    let narrow = Geometry::new(&shape, 0, 8).expect("geometry");
    let wide = Geometry::new(&shape, 1, 8).expect("geometry");
    let schedule = default_schedule(&kernel, &shape);
    // Fields in declaration order: x, y, out.
    check_halos(&kernel, &[narrow, wide, narrow]).expect("x needs no halo");
    generate(
        &kernel,
        &schedule,
        &[narrow, wide, narrow],
        80,
        CodegenOptions::default(),
    )
    .expect("generate with per-input halos");
    for geoms in [[narrow, narrow, narrow], [wide, narrow, wide]] {
        let err = generate(&kernel, &schedule, &geoms, 80, CodegenOptions::default())
            .expect_err("y's halo is too narrow");
        assert_eq!(err.kind(), ErrorKind::HaloTooNarrow, "{err}");
        assert!(err.message().contains("`y`"), "{err}");
    }
    // The same holds for the other variants of a kernel without reductions.
    let mut b = KernelBuilder::new("shift", 3, ElemType::F32);
    let a = b.input("a");
    let c = b.input("c");
    let out = b.output("out");
    let ra = b.read(a, &[0, 0, 2]);
    let rc = b.read(c, &[0, 0, 0]);
    let sum = b.add(ra, rc);
    b.store(out, sum);
    let shift = b.finish().expect("kernel");
    let shape = [5, 6, 40];
    let h2 = Geometry::new(&shape, 2, 4).expect("geometry");
    let h1 = Geometry::new(&shape, 1, 4).expect("geometry");
    let h0 = Geometry::new(&shape, 0, 4).expect("geometry");
    for schedule in sample_schedules(&shift) {
        generate(
            &shift,
            &schedule,
            &[h2, h0, h0],
            80,
            CodegenOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{schedule:?}: {e}"));
        let err = generate(
            &shift,
            &schedule,
            &[h1, h2, h2],
            80,
            CodegenOptions::default(),
        )
        .expect_err("a's halo is too narrow");
        assert_eq!(err.kind(), ErrorKind::HaloTooNarrow, "{err}");
    }
}

#[test]
fn folded_rows_match_the_interpreter() {
    // 65,600 rows of 3 points: rows past 65,535 run in blockIdx.z = 1 (a sum, which every
    // block's value changes).
    let kernel = plain_read(2, ElemType::F32, ReduceOp::Sum);
    let shape = [65_600, 3];
    let schedule = default_schedule(&kernel, &shape);
    check_exact::<f32>(&kernel, &shape, 0, 21, &EmulatedGpu::new(), &schedule)
        .unwrap_or_else(|e| panic!("{e}"));
}
