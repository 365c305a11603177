//! What this suite's tests share beyond `stencil_test_support`: values drawn in levels, and a
//! checker that runs a stencil under many schedules through the CPU backend and compares with
//! independent expectations.
//!
//! Grids are plain `Vec<T>` storage laid out by `stencil_core::Geometry` (no `Grid` type,
//! `stencil_test_support::storage::TestGrid`). Every input element, halo and padding included,
//! is random; every output element starts as NaN, so a point the backend forgets stays NaN and
//! a point it writes outside the interior stops being NaN.

#![allow(dead_code)] // Each test binary uses a different part of this module.

use stencil_core::{Backend, CpuSchedule, Element, FieldView, Job, MAX_DIMS, Schedule, Stencil};
use stencil_cpu::CpuBackend;
pub(crate) use stencil_test_support::Rng;
pub(crate) use stencil_test_support::interp::same;
pub(crate) use stencil_test_support::storage::{TestGrid, for_each_point};

/// A value of `range`: uniform, or, with `Some(d)`, a random multiple of `1 / d` (so that
/// comparisons with constants such as 0.3 or 0 hit equality now and then).
pub(crate) fn value<T: Element>(rng: &mut Rng, (low, high): (f64, f64), levels: Option<u32>) -> T {
    match levels {
        None => T::from_f64(rng.uniform(low, high)),
        Some(d) => {
            let d = f64::from(d);
            let k = rng.uniform(low * d, high * d).floor();
            T::from_f64(k / d)
        }
    }
}

/// A grid of `shape` with `halo` whose every element (halo and padding included) is a random
/// [`value`].
pub(crate) fn random_grid<T: Element>(
    shape: &[usize],
    halo: usize,
    rng: &mut Rng,
    range: (f64, f64),
    levels: Option<u32>,
) -> TestGrid<T> {
    TestGrid::from_rng(shape, halo, rng, |rng| value(rng, range, levels))
}

/// Asserts that `grid`'s interior holds `expected(point)` exactly and everything else is NaN.
pub(crate) fn check_grid<T: Element>(
    grid: &TestGrid<T>,
    expected: impl Fn(&[isize]) -> T,
    what: &str,
) {
    let shape = grid.geom.interior().to_vec();
    let mut interior = vec![false; grid.geom.len];
    for_each_point(&shape, |p| {
        let i = grid.geom.index(p);
        interior[i] = true;
        let (got, want) = (grid.data[i], expected(p));
        assert!(
            !got.is_nan() || want.is_nan(),
            "{what}: interior point {p:?} not written"
        );
        assert!(
            same(got, want),
            "{what}: at {p:?} got {got:?}, expected {want:?}"
        );
    });
    for (i, (&inside, &v)) in interior.iter().zip(&grid.data).enumerate() {
        assert!(
            inside || v.is_nan(),
            "{what}: storage element {i} outside the interior was written ({v:?})"
        );
    }
}

/// A hand-written computation of every output at `point` from the input views and the
/// parameters.
pub(crate) type Expected<'e, T> = &'e dyn Fn(&[FieldView<'_, T>], &[T], &[isize]) -> Vec<T>;

/// One test kernel: a stencil and a hand-written computation of its outputs at a point.
pub(crate) struct Case<'e, T: Element> {
    pub(crate) stencil: Stencil<T>,
    /// Halo of each input grid (each at least the kernel's radius; they may differ).
    pub(crate) input_halos: Vec<usize>,
    /// Halo of each output grid (anything, 0 included).
    pub(crate) output_halos: Vec<usize>,
    /// Range of the random input values.
    pub(crate) input_range: (f64, f64),
    /// `Some(d)`: inputs are multiples of `1 / d` (see [`value`]); `None`: uniform.
    pub(crate) input_levels: Option<u32>,
    pub(crate) params: Vec<T>,
    /// Expected value of every output at `point`, from the input views (independent of the
    /// backend and of the interpreter).
    pub(crate) expected: Expected<'e, T>,
}

/// Schedules to try on `shape`: the backend's sample plus extra corner cases (tiles of one
/// point, more threads than the pool, two threads with outer tiles of 2).
pub(crate) fn schedules_for(backend: &CpuBackend, shape: &[usize]) -> Vec<CpuSchedule> {
    let mut all = backend.sample_cpu_schedules(shape);
    let mut ones = [0; MAX_DIMS];
    ones[..shape.len()].fill(1);
    let mut twos = [0; MAX_DIMS];
    twos[0] = 2;
    for (tile, threads, force_generic) in [
        (ones, 0, false),
        (ones, 0, true),
        (twos, 2, false),
        (twos, backend.threads() + 5, true),
    ] {
        all.push(CpuSchedule {
            tile,
            threads,
            force_generic,
            ..CpuSchedule::default()
        });
    }
    all
}

/// Runs `case` on `shape` under every schedule of [`schedules_for`], with and without the
/// stencil's generated point loop, and checks every output against the hand-written
/// expectation and against the reference interpreter. Returns the number of runs checked.
pub(crate) fn check_case<T: Element>(
    backend: &CpuBackend,
    case: &Case<'_, T>,
    shape: &[usize],
) -> usize {
    let mut rng = Rng::new(0x5EED ^ shape.iter().product::<usize>() as u64);
    let inputs: Vec<TestGrid<T>> = case
        .input_halos
        .iter()
        .map(|&h| random_grid(shape, h, &mut rng, case.input_range, case.input_levels))
        .collect();
    let input_views: Vec<FieldView<'_, T>> = inputs.iter().map(TestGrid::view).collect();

    // The reference interpreter's answer, checked against the hand-written one first.
    let mut reference: Vec<TestGrid<T>> = case
        .output_halos
        .iter()
        .map(|&h| TestGrid::poisoned(shape, h))
        .collect();
    {
        let mut views: Vec<_> = reference.iter_mut().map(TestGrid::view_mut).collect();
        stencil_core::interp::run(
            case.stencil.kernel(),
            &input_views,
            &mut views,
            &case.params,
        );
    }
    let views = &input_views;
    let expected_at = |o: usize| move |p: &[isize]| (case.expected)(views, &case.params, p)[o];
    for (o, grid) in reference.iter().enumerate() {
        check_grid(grid, expected_at(o), &format!("interpreter, output {o}"));
    }

    let generic = case.stencil.without_cpu_rows();
    let mut runs = 0;
    for stencil in [&case.stencil, &generic] {
        for schedule in schedules_for(backend, shape) {
            let mut outputs: Vec<TestGrid<T>> = case
                .output_halos
                .iter()
                .map(|&h| TestGrid::poisoned(shape, h))
                .collect();
            {
                let views = outputs.iter_mut().map(TestGrid::view_mut).collect();
                let mut job =
                    Job::new(stencil, input_views.clone(), views, case.params.clone()).unwrap();
                backend.run(&mut job, &Schedule::Cpu(schedule)).unwrap();
            }
            let what = format!(
                "kernel `{}`, shape {shape:?}, specialised {}, {schedule:?}",
                stencil.kernel().name,
                stencil.cpu_loop().is_some()
            );
            for (o, grid) in outputs.iter().enumerate() {
                check_grid(grid, expected_at(o), &format!("{what}, output {o}"));
            }
            runs += 1;
        }
    }
    runs
}
