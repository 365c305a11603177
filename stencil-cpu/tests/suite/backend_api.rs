//! The `Backend` trait surface of the CPU backend: its self-description, its schedules, and
//! the errors `run` returns instead of writing.

use crate::common;

use std::collections::BTreeSet;
use std::sync::Mutex;

use common::TestGrid;
use stencil_core::row::{OutputRun, RowArgs};
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
    let input = TestGrid::<f64>::random(&[6, 5], 1, &mut rng, (0.0, 1.0));
    let mut output = TestGrid::<f64>::poisoned(&[6, 5], 1);
    let mut geom = output.geom;
    // Rows of this layout overlap (consecutive rows start one element apart).
    geom.strides[0] = 1;
    let view = FieldViewMut {
        geom,
        data: &mut output.data,
    };
    // Job::new refuses it (views have public fields, so the check is the job's); a backend
    // given such a view anyway refuses it too (`OutputRows::new`, unit-tested in the crate).
    let err = Job::new(&stencil, vec![input.view()], vec![view], vec![])
        .and_then(|mut job| backend.run(&mut job, &Schedule::Cpu(CpuSchedule::default())))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgument);
    assert!(err.message().contains("`out`"), "{}", err.message());
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
    // Above `INLINE_POINTS`, so the job runs on the pool.
    let shape = [64, stencil_cpu::INLINE_POINTS / 32];
    let input = TestGrid::<f64>::random(&shape, 1, &mut rng, (0.0, 1.0));
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

/// (rows, register rows) of each call of [`run_rows`].
static RUNS: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

/// A run loop for `shift_kernel`: computes a run's rows one by one and records each call's
/// row count and register block.
fn run_rows(args: &RowArgs<'_, f64>, outs: &mut [OutputRun<'_, f64>]) {
    RUNS.lock()
        .unwrap()
        .push((args.rows(), args.register_rows()));
    for r in 0..args.rows() {
        let left = args.nth_row(r).input(0, [-1, 0, 0, 0]);
        for (o, &value) in outs[0].row(r).iter_mut().zip(left) {
            *o = 2.0 * value;
        }
    }
}

#[test]
fn run_loops_get_whole_runs_and_their_register_block_while_row_loops_get_rows() {
    let backend = CpuBackend::new(1).unwrap();
    let mut rng = common::Rng::new(5);
    let shape = [7, 9];
    let input = TestGrid::<f64>::random(&shape, 1, &mut rng, (0.0, 1.0));
    let runs = Stencil::with_cpu_runs(shift_kernel(), run_rows).unwrap();
    // Tiles of 3 rows over 7: runs of 3, 3 and 1 rows; a row block of 4 points cuts each
    // run into column blocks of 4, 4 and 1 points.
    for (register_rows, row_block, expected) in [
        (4, 0, vec![(3, 4), (3, 4), (1, 4)]),
        (1, 0, vec![(3, 1), (3, 1), (1, 1)]),
        (
            2,
            4,
            vec![
                (3, 2),
                (3, 2),
                (3, 2),
                (3, 2),
                (3, 2),
                (3, 2),
                (1, 2),
                (1, 2),
                (1, 2),
            ],
        ),
    ] {
        RUNS.lock().unwrap().clear();
        let mut output = TestGrid::<f64>::poisoned(&shape, 1);
        let mut job = Job::new(&runs, vec![input.view()], vec![output.view_mut()], vec![]).unwrap();
        let schedule = CpuSchedule {
            tile: [3, 0, 0, 0],
            register_rows,
            row_block,
            ..CpuSchedule::default()
        };
        backend.run(&mut job, &Schedule::Cpu(schedule)).unwrap();
        drop(job);
        assert_eq!(*RUNS.lock().unwrap(), expected, "{register_rows} rows");
        common::check_grid(
            &output,
            |p| 2.0 * input.view().get(&[p[0] - 1, p[1]]),
            "runs",
        );
    }
}
