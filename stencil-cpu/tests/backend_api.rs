//! The `Backend` trait surface of the CPU backend: its self-description, its schedules, and
//! the errors `run` returns instead of writing.

mod common;

use std::collections::BTreeSet;
use std::sync::Mutex;

use common::TestGrid;
use stencil_core::row::RowArgs;
use stencil_core::{
    Backend, CpuSchedule, ElemType, ErrorKind, FieldViewMut, Job, Kernel, KernelBuilder, Schedule,
    Stencil,
};
use stencil_cpu::CpuBackend;

/// `out = 2 u[i-1, j]`.
fn shift_kernel() -> Kernel {
    let mut b = KernelBuilder::new("shift", 2, ElemType::F64);
    let u = b.input("u");
    let out = b.output("out");
    let left = b.read(u, &[-1, 0]);
    let two = b.constant(2.0);
    let value = b.mul(two, left);
    b.store(out, value);
    b.finish().unwrap()
}

#[test]
fn schedules_come_through_the_trait() {
    let backend = CpuBackend::new(2).unwrap();
    let kernel = shift_kernel();
    assert_eq!(Backend::<f64>::name(&backend), "cpu");
    let Schedule::Cpu(default) = Backend::<f64>::default_schedule(&backend, &kernel, &[40, 9])
    else {
        panic!("the CPU backend proposes CPU schedules")
    };
    assert_eq!(default, backend.default_cpu_schedule(&[40, 9]));
    // Two threads, four tiles each: 40 rows cut in tiles of 5.
    assert_eq!(default.tile, [5, 0, 0, 0]);
    let sample = Backend::<f32>::sample_schedules(&backend, &kernel, &[40, 9]);
    assert_eq!(sample.len(), backend.sample_cpu_schedules(&[40, 9]).len());
    assert!(sample.contains(&Schedule::Cpu(default)));
}

#[test]
fn an_output_layout_not_from_geometry_new_is_refused_and_left_alone() {
    let backend = CpuBackend::global();
    let stencil = Stencil::new(shift_kernel()).unwrap();
    let mut rng = common::Rng::new(7);
    let input = TestGrid::<f64>::random(&[6, 5], 1, &mut rng, (0.0, 1.0), None);
    let mut output = TestGrid::<f64>::poisoned(&[6, 5], 1);
    let mut geom = output.geom;
    // Rows of this layout overlap (consecutive rows start one element apart).
    geom.strides[0] = 1;
    let view = FieldViewMut {
        geom,
        data: &mut output.data,
    };
    let mut job = Job::new(&stencil, vec![input.view()], vec![view], vec![]).unwrap();
    let err = backend
        .run(&mut job, &Schedule::Cpu(CpuSchedule::default()))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgument);
    assert!(err.message().contains("`out`"), "{}", err.message());
    drop(job);
    assert!(output.data.iter().all(|v| v.is_nan()));
}

/// Pool threads that ran rows of [`recording_rows`].
static WORKERS: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());

/// A point loop for `shift_kernel` that also records which pool thread runs it.
fn recording_rows(args: &RowArgs<'_, f64>, outs: &mut [&mut [f64]]) {
    let index = rayon::current_thread_index().expect("rows run on the backend's pool");
    WORKERS.lock().unwrap().insert(index);
    let left = args.input(0, [-1, 0, 0, 0]);
    for (out, &value) in outs[0].iter_mut().zip(left) {
        *out = 2.0 * value;
    }
}

#[test]
fn a_thread_limit_below_the_pool_size_is_respected() {
    let backend = CpuBackend::new(3).unwrap();
    let stencil = Stencil::with_cpu_rows(shift_kernel(), recording_rows).unwrap();
    let mut rng = common::Rng::new(11);
    let shape = [64, 8];
    let input = TestGrid::<f64>::random(&shape, 1, &mut rng, (0.0, 1.0), None);
    for threads in [1, 2] {
        WORKERS.lock().unwrap().clear();
        let mut output = TestGrid::<f64>::poisoned(&shape, 0);
        let mut job = Job::new(
            &stencil,
            vec![input.view()],
            vec![output.view_mut()],
            vec![],
        )
        .unwrap();
        let schedule = CpuSchedule {
            tile: [1, 0, 0, 0],
            threads,
            ..CpuSchedule::default()
        };
        backend.run(&mut job, &Schedule::Cpu(schedule)).unwrap();
        drop(job);
        let used = WORKERS.lock().unwrap().len();
        assert!(
            (1..=threads).contains(&used),
            "{used} workers for {threads}"
        );
        common::check_grid(
            &output,
            |p| 2.0 * input.view().get(&[p[0] - 1, p[1]]),
            "recording rows",
        );
    }
}

/// Row counts [`block_rows`] was called with.
static BLOCKS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// A point loop for `shift_kernel` that takes register blocks of rows, computing them one by
/// one through `nth_row`, and records each call's row count.
fn block_rows(args: &RowArgs<'_, f64>, outs: &mut [&mut [f64]]) {
    BLOCKS.lock().unwrap().push(args.rows());
    for (r, out) in outs.iter_mut().enumerate() {
        let left = args.nth_row(r).input(0, [-1, 0, 0, 0]);
        for (o, &value) in out.iter_mut().zip(left) {
            *o = 2.0 * value;
        }
    }
}

#[test]
fn register_blocks_reach_only_point_loops_that_take_them() {
    let backend = CpuBackend::new(1).unwrap();
    let mut rng = common::Rng::new(5);
    let shape = [7, 9];
    let input = TestGrid::<f64>::random(&shape, 1, &mut rng, (0.0, 1.0), None);
    let blocked = Stencil::with_cpu_row_blocks(shift_kernel(), block_rows).unwrap();
    let single = Stencil::with_cpu_rows(shift_kernel(), block_rows).unwrap();
    assert!(blocked.cpu_row_blocks() && !single.cpu_row_blocks());
    // One tile of 7 rows: blocks of 4, then the largest jammed counts that fit.
    for (stencil, register_rows, expected) in [
        (&blocked, 4, vec![4, 2, 1]),
        (&blocked, 2, vec![2, 2, 2, 1]),
        (&blocked, 3, vec![3, 3, 1]),
        (&blocked, 1, vec![1; 7]),
        // More than a run has: the whole run at once (and no overflow sizing the scratch).
        (&blocked, usize::MAX, vec![7]),
        (&single, 4, vec![1; 7]),
    ] {
        BLOCKS.lock().unwrap().clear();
        let mut output = TestGrid::<f64>::poisoned(&shape, 1);
        let mut job =
            Job::new(stencil, vec![input.view()], vec![output.view_mut()], vec![]).unwrap();
        let schedule = CpuSchedule {
            tile: [7, 0, 0, 0],
            register_rows,
            ..CpuSchedule::default()
        };
        backend.run(&mut job, &Schedule::Cpu(schedule)).unwrap();
        drop(job);
        assert_eq!(*BLOCKS.lock().unwrap(), expected, "{register_rows} rows");
        common::check_grid(
            &output,
            |p| 2.0 * input.view().get(&[p[0] - 1, p[1]]),
            "register blocks",
        );
    }
}
