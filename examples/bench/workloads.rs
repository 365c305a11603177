//! The benchmark's workloads: the kernels (the seeds' kernels of `stencil::kernels`), their
//! grids, and the hand-written baselines (a plain rows loop, serial or over rayon's planes).
//!
//! Every grid has a halo of 1 (what the kernels need) and the same shape within a workload,
//! so all grids share one layout and a row starts at the same storage index in all of them.
//! Inputs are first-touched by the library's backend under its default schedule. A workload
//! can also hold copies of its grids in another row padding (`Launch::search_padding`'s
//! choice), which only the library's `TunedPadded` runs use.

#![allow(clippy::needless_range_loop)] // The baselines index like plain user code does.

use rayon::prelude::*;
use stencil::prelude::*;
use stencil::{
    CpuBackend, CpuSchedule, Element, Geometry, Launch, LoopReport, PaddingReport, Schedule,
    Stencil, Steps, TunePolicy, TuneReport, TuningCache,
};

// The seeds' kernels, from the library: W1 is the 7-point Jacobi, W2 the 27-point one.
use stencil::kernels::{divergence, five_point, gradient, jacobi7 as heat7, jacobi27};

const C: [f64; 4] = [0.4, 0.1, 0.05, 0.025];

/// Coefficients for time loops, per workload (W1, W2, W3): each stencil's weights add up to
/// 1, so values neither grow nor decay to subnormals over thousands of steps.
const STEADY: [[f64; 4]; 3] = [
    [0.4, 0.1, 0.0, 0.0],
    [0.4, 0.05, 0.02, 0.0075],
    [0.6, 0.1, 0.0, 0.0],
];

/// How a time loop of a workload (W1, W2 or W3: each step's output becomes its input) runs.
#[derive(Clone, Copy)]
pub(crate) enum StepsImp<'a> {
    /// The hand-written rows loop over this rayon pool, then `std::mem::swap`, every step.
    NaiveRayon(&'a rayon::ThreadPool),
    /// `run()` (tuned, this cache), then `std::mem::swap`, every step.
    Launches(&'a CpuBackend, &'a TuningCache),
    /// `Steps` on this backend: under this schedule, or tuned with this cache.
    Steps(&'a CpuBackend, Option<Schedule>, &'a TuningCache),
}
/// Which implementation a run uses.
#[derive(Clone, Copy)]
pub(crate) enum Imp<'a> {
    /// The hand-written rows loop on the calling thread.
    NaiveSerial,
    /// The hand-written rows loop, planes spread over this rayon pool.
    NaiveRayon(&'a rayon::ThreadPool),
    /// The library on this backend with this schedule.
    Library(&'a CpuBackend, Schedule),
    /// The library on this backend, schedule tuned on the first call (`quick`) and kept in
    /// this cache.
    Tuned(&'a CpuBackend, &'a TuningCache),
    /// As `Tuned`, on the workload's padded copies (see [`Workload::pad`]).
    TunedPadded(&'a CpuBackend, &'a TuningCache),
}

/// What the library does with a bound call.
enum Finish<'a> {
    /// Runs it under this schedule, or tuned (`quick`) with this cache.
    Run(Option<Schedule>, Option<&'a TuningCache>),
    /// Searches its row padding, tuning (`quick`) with this cache.
    SearchPadding(&'a TuningCache),
}

/// What [`Finish`] gave.
enum Outcome {
    Ran(TuneReport),
    Padding(PaddingReport),
}

/// One workload: its grids and how to run it every way.
pub(crate) struct Workload {
    /// Short name (`W1`, ...).
    pub(crate) name: &'static str,
    /// The kernel.
    pub(crate) stencil: &'static Stencil<f64>,
    /// Interior shape.
    pub(crate) shape: Vec<usize>,
    inputs: Vec<Grid3OrGrid2>,
    outputs: Vec<Grid3OrGrid2>,
    /// Copies of the inputs and outputs in another row padding, once [`Workload::pad`] made
    /// them.
    padded: Option<(Vec<Grid3OrGrid2>, Vec<Grid3OrGrid2>)>,
    /// The kernel's coefficients (the sweeps' unless [`Workload::steady`] set the time
    /// loops').
    coefficients: [f64; 4],
}

/// The grids of 3-D or 2-D workloads.
pub(crate) enum Grid3OrGrid2 {
    /// 3-D.
    Three(Grid3<f64>),
    /// 2-D.
    Two(Grid2<f64>),
}

impl Grid3OrGrid2 {
    fn storage(&self) -> &[f64] {
        match self {
            Grid3OrGrid2::Three(g) => g.as_slice(),
            Grid3OrGrid2::Two(g) => g.as_slice(),
        }
    }
    fn storage_mut(&mut self) -> &mut [f64] {
        match self {
            Grid3OrGrid2::Three(g) => g.as_mut_slice(),
            Grid3OrGrid2::Two(g) => g.as_mut_slice(),
        }
    }
    fn geometry(&self) -> Geometry {
        match self {
            Grid3OrGrid2::Three(g) => *g.geometry(),
            Grid3OrGrid2::Two(g) => *g.geometry(),
        }
    }
    fn three(&self) -> &Grid3<f64> {
        match self {
            Grid3OrGrid2::Three(g) => g,
            Grid3OrGrid2::Two(_) => unreachable!("bench: a 2-D grid where a 3-D one is needed"),
        }
    }
    fn three_mut(&mut self) -> &mut Grid3<f64> {
        match self {
            Grid3OrGrid2::Three(g) => g,
            Grid3OrGrid2::Two(_) => unreachable!("bench: a 2-D grid where a 3-D one is needed"),
        }
    }
    /// A copy in row padding `pad` (an input's values, an output's zeros), placed by first
    /// touch under the backend's default schedule like the original; the halo is what the
    /// default boundaries give, as in the original.
    fn repadded(&self, backend: &CpuBackend, pad: usize, input: bool) -> Grid3OrGrid2 {
        match self {
            Grid3OrGrid2::Three(g) => {
                let mut p = Grid3::with_padding(g.shape(), g.halo(), pad).expect("grid");
                let s = backend.default_cpu_schedule(&g.shape());
                backend.first_touch(&mut p, &s, |q| if input { g[q] } else { 0.0 });
                Grid3OrGrid2::Three(p)
            }
            Grid3OrGrid2::Two(g) => {
                let mut p = Grid2::with_padding(g.shape(), g.halo(), pad).expect("grid");
                let s = backend.default_cpu_schedule(&g.shape());
                backend.first_touch(&mut p, &s, |q| if input { g[q] } else { 0.0 });
                Grid3OrGrid2::Two(p)
            }
        }
    }
}

/// A deterministic pseudo-random value for point `p` of input `k` (in [0.5, 1.5)).
fn value(k: usize, p: &[usize]) -> f64 {
    let mut h = 0x9E37_79B9_7F4A_7C15u64 ^ (k as u64);
    for &x in p {
        h = (h ^ x as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        h ^= h >> 31;
    }
    0.5 + (h >> 11) as f64 / (1u64 << 53) as f64
}

impl Workload {
    /// The five workloads at full size: n = 256 for 3-D, 8192 for 2-D. Inputs are written by
    /// `backend`'s threads (first touch under its default schedule).
    pub(crate) fn all(backend: &CpuBackend, n3: usize, n2: usize) -> Vec<Workload> {
        let grid3 = |k: usize| {
            let mut g = Grid3::with_halo([n3; 3], 1).expect("grid");
            let s = backend.default_cpu_schedule(&[n3; 3]);
            backend.first_touch(&mut g, &s, |p| value(k, &p));
            Grid3OrGrid2::Three(g)
        };
        let out3 = || {
            let mut g = Grid3::with_halo([n3; 3], 1).expect("grid");
            backend.first_touch(&mut g, &backend.default_cpu_schedule(&[n3; 3]), |_| 0.0);
            Grid3OrGrid2::Three(g)
        };
        let mut u2 = Grid2::with_halo([n2; 2], 1).expect("grid");
        backend.first_touch(&mut u2, &backend.default_cpu_schedule(&[n2; 2]), |p| {
            value(9, &p)
        });
        let mut o2 = Grid2::with_halo([n2; 2], 1).expect("grid");
        backend.first_touch(&mut o2, &backend.default_cpu_schedule(&[n2; 2]), |_| 0.0);
        vec![
            Workload {
                name: "W1 7-pt 3-D",
                stencil: heat7::stencil(),
                shape: vec![n3; 3],
                inputs: vec![grid3(0)],
                outputs: vec![out3()],
                padded: None,
                coefficients: C,
            },
            Workload {
                name: "W2 27-pt 3-D",
                stencil: jacobi27::stencil(),
                shape: vec![n3; 3],
                inputs: vec![grid3(1)],
                outputs: vec![out3()],
                padded: None,
                coefficients: C,
            },
            Workload {
                name: "W3 5-pt 2-D",
                stencil: five_point::stencil(),
                shape: vec![n2; 2],
                inputs: vec![Grid3OrGrid2::Two(u2)],
                outputs: vec![Grid3OrGrid2::Two(o2)],
                padded: None,
                coefficients: C,
            },
            Workload {
                name: "Divergence",
                stencil: divergence::stencil(),
                shape: vec![n3; 3],
                inputs: vec![grid3(2), grid3(3), grid3(4)],
                outputs: vec![out3()],
                padded: None,
                coefficients: C,
            },
            Workload {
                name: "Gradient",
                stencil: gradient::stencil(),
                shape: vec![n3; 3],
                inputs: vec![grid3(5)],
                outputs: vec![out3(), out3(), out3()],
                padded: None,
                coefficients: C,
            },
        ]
    }

    /// Interior points.
    pub(crate) fn points(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the workload has a time loop here (one input, one output: W1, W2, W3).
    pub(crate) fn steps_too(&self) -> bool {
        matches!(self.name.as_bytes()[1], b'1' | b'2' | b'3')
    }

    /// Switches to coefficients that keep values steady over many steps (for time loops).
    pub(crate) fn steady(&mut self) {
        self.coefficients = STEADY[usize::from(self.name.as_bytes()[1] - b'1')];
    }

    /// The input's storage (the time loop's state).
    pub(crate) fn state(&self) -> Vec<f64> {
        self.inputs[0].storage().to_vec()
    }

    /// Sets the input's storage (the time loop's state) to `values`.
    pub(crate) fn set_state(&mut self, values: &[f64]) {
        self.inputs[0].storage_mut().copy_from_slice(values);
    }

    /// Runs `steps` steps of the time loop with `imp`; for `Steps`, what it reported.
    pub(crate) fn steps(&mut self, imp: StepsImp<'_>, steps: usize) -> Option<LoopReport> {
        let swap = |w: &mut Workload| std::mem::swap(&mut w.inputs[0], &mut w.outputs[0]);
        match imp {
            StepsImp::NaiveRayon(pool) => {
                for _ in 0..steps {
                    self.run(Imp::NaiveRayon(pool));
                    swap(self);
                }
                None
            }
            StepsImp::Launches(backend, cache) => {
                for _ in 0..steps {
                    self.run(Imp::Tuned(backend, cache));
                    swap(self);
                }
                None
            }
            StepsImp::Steps(backend, schedule, cache) => {
                let n_params = self.stencil.kernel().params.len();
                let params = &self.coefficients[..n_params];
                let report = match (&mut self.inputs[0], &mut self.outputs[0]) {
                    (Grid3OrGrid2::Three(u), Grid3OrGrid2::Three(out)) => time_loop(
                        self.stencil,
                        backend,
                        (u, out),
                        params,
                        (schedule, cache),
                        steps,
                    ),
                    (Grid3OrGrid2::Two(u), Grid3OrGrid2::Two(out)) => time_loop(
                        self.stencil,
                        backend,
                        (u, out),
                        params,
                        (schedule, cache),
                        steps,
                    ),
                    _ => unreachable!("bench: a time loop's grids share their dimension"),
                };
                Some(report.unwrap_or_else(|e| panic!("bench: {} steps failed: {e}", self.name)))
            }
        }
    }

    /// Runs the workload once with `imp`; for the library, what tuning did.
    pub(crate) fn run(&mut self, imp: Imp<'_>) -> Option<TuneReport> {
        match imp {
            Imp::NaiveSerial => self.naive(None),
            Imp::NaiveRayon(pool) => pool.install(|| self.naive(Some(pool))),
            Imp::Library(backend, schedule) => {
                return Some(self.library(backend, Some(schedule), None, false));
            }
            Imp::Tuned(backend, cache) => {
                return Some(self.library(backend, None, Some(cache), false));
            }
            Imp::TunedPadded(backend, cache) => {
                return Some(self.library(backend, None, Some(cache), true));
            }
        }
        None
    }

    /// The row padding `Launch::search_padding` finds fastest for this workload on `backend`
    /// (tuning each padding with `cache`).
    pub(crate) fn search_padding(
        &mut self,
        backend: &CpuBackend,
        cache: &TuningCache,
    ) -> PaddingReport {
        match self.call(backend, Finish::SearchPadding(cache), false) {
            Outcome::Padding(report) => report,
            Outcome::Ran(_) => unreachable!("bench: a search runs nothing"),
        }
    }

    /// Makes the padded copies `TunedPadded` runs use: every grid in row padding `pad`.
    pub(crate) fn pad(&mut self, backend: &CpuBackend, pad: usize) {
        let copies = |grids: &[Grid3OrGrid2], input: bool| -> Vec<Grid3OrGrid2> {
            grids
                .iter()
                .map(|g| g.repadded(backend, pad, input))
                .collect()
        };
        self.padded = Some((copies(&self.inputs, true), copies(&self.outputs, false)));
    }

    /// The padded copies' output interiors (as [`outputs`](Self::outputs)).
    pub(crate) fn padded_outputs(&self) -> Vec<Vec<f64>> {
        let (_, outputs) = self.padded.as_ref().expect("bench: pad() first");
        interiors(outputs)
    }

    /// Sets every value of the padded copies' outputs to NaN.
    pub(crate) fn poison_padded_outputs(&mut self) {
        let (_, outputs) = self.padded.as_mut().expect("bench: pad() first");
        for g in outputs {
            g.storage_mut().fill(f64::NAN);
        }
    }

    /// The outputs' interior values, for comparing implementations (the library also fills
    /// the outputs' halos from their boundary conditions, the baselines do not).
    pub(crate) fn outputs(&self) -> Vec<Vec<f64>> {
        interiors(&self.outputs)
    }

    /// Sets every output value to NaN (so a run that skips a point shows).
    pub(crate) fn poison_outputs(&mut self) {
        for g in &mut self.outputs {
            g.storage_mut().fill(f64::NAN);
        }
    }

    fn library(
        &mut self,
        backend: &CpuBackend,
        schedule: Option<Schedule>,
        cache: Option<&TuningCache>,
        padded: bool,
    ) -> TuneReport {
        match self.call(backend, Finish::Run(schedule, cache), padded) {
            Outcome::Ran(report) => report,
            Outcome::Padding(_) => unreachable!("bench: a run searches nothing"),
        }
    }

    /// Binds the workload's call (on its padded copies when `padded`) and finishes it.
    fn call(&mut self, backend: &CpuBackend, how: Finish<'_>, padded: bool) -> Outcome {
        let [c0, c1, c2, c3] = self.coefficients;
        let (ins, outs) = if padded {
            let (i, o) = self.padded.as_mut().expect("bench: pad() first");
            (&*i, o)
        } else {
            (&self.inputs, &mut self.outputs)
        };
        let result = match (self.name.as_bytes()[1], &mut outs[..]) {
            (b'1', [o]) => finish(
                heat7(ins[0].three(), o.three_mut(), c0, c1).on(backend),
                &how,
            ),
            (b'2', [o]) => finish(
                jacobi27(ins[0].three(), o.three_mut(), c0, c1, c2, c3).on(backend),
                &how,
            ),
            (b'3', [Grid3OrGrid2::Two(o)]) => match &ins[0] {
                Grid3OrGrid2::Two(u) => finish(five_point(u, o, c0, c1).on(backend), &how),
                Grid3OrGrid2::Three(_) => unreachable!("bench: W3 is 2-D"),
            },
            (b'i', [o]) => finish(
                divergence(
                    ins[0].three(),
                    ins[1].three(),
                    ins[2].three(),
                    o.three_mut(),
                    c1,
                    c2,
                    c3,
                )
                .on(backend),
                &how,
            ),
            (b'r', [x, y, z]) => finish(
                gradient(
                    ins[0].three(),
                    x.three_mut(),
                    y.three_mut(),
                    z.three_mut(),
                    c1,
                    c2,
                    c3,
                )
                .on(backend),
                &how,
            ),
            _ => unreachable!("bench: unknown workload {}", self.name),
        };
        result.unwrap_or_else(|e| panic!("bench: {} failed: {e}", self.name))
    }

    /// The hand-written rows loop: for every interior row, one exact-length slice per
    /// neighbour row, then a plain indexed loop over the row.
    fn naive(&mut self, pool: Option<&rayon::ThreadPool>) {
        let geom = self.outputs[0].geometry();
        let ins: Vec<&[f64]> = self.inputs.iter().map(Grid3OrGrid2::storage).collect();
        let (s0, s1) = if geom.n_dims == 3 {
            (geom.strides[0], geom.strides[1])
        } else {
            (geom.strides[0], 0)
        };
        let [c0, c1, c2, c3] = self.coefficients;
        let key = self.name.as_bytes()[1];
        let row = |at: usize, outs: &mut [&mut [f64]]| {
            let n = outs[0].len();
            // The `n` values of input `f` displaced by (di, dj, dk) from the row.
            let r = |f: usize, di: isize, dj: isize, dk: isize| -> &[f64] {
                let start = at as isize + di * s0 as isize + dj * s1 as isize + dk;
                &ins[f][start as usize..start as usize + n]
            };
            match (key, outs) {
                (b'1', [o]) => {
                    let (c, xm, xp) = (r(0, 0, 0, 0), r(0, -1, 0, 0), r(0, 1, 0, 0));
                    let (ym, yp, zm, zp) =
                        (r(0, 0, -1, 0), r(0, 0, 1, 0), r(0, 0, 0, -1), r(0, 0, 0, 1));
                    for k in 0..n {
                        o[k] = c0 * c[k] + c1 * (xm[k] + xp[k] + ym[k] + yp[k] + zm[k] + zp[k]);
                    }
                }
                (b'2', [o]) => {
                    let mut rows = [[[&[][..]; 3]; 3]; 3];
                    for (a, plane) in rows.iter_mut().enumerate() {
                        for (b, line) in plane.iter_mut().enumerate() {
                            for (c, slot) in line.iter_mut().enumerate() {
                                *slot = r(0, a as isize - 1, b as isize - 1, c as isize - 1);
                            }
                        }
                    }
                    for k in 0..n {
                        let mut sums = [0.0; 4];
                        for a in 0..3 {
                            for b in 0..3 {
                                for c in 0..3 {
                                    let class = usize::from(a != 1)
                                        + usize::from(b != 1)
                                        + usize::from(c != 1);
                                    sums[class] += rows[a][b][c][k];
                                }
                            }
                        }
                        o[k] = c0 * sums[0] + c1 * sums[1] + c2 * sums[2] + c3 * sums[3];
                    }
                }
                (b'3', [o]) => {
                    let (c, xm, xp, ym, yp) = (
                        r(0, 0, 0, 0),
                        r(0, -1, 0, 0),
                        r(0, 1, 0, 0),
                        r(0, 0, 0, -1),
                        r(0, 0, 0, 1),
                    );
                    for k in 0..n {
                        o[k] = c0 * c[k] + c1 * (xm[k] + xp[k] + ym[k] + yp[k]);
                    }
                }
                (b'i', [o]) => {
                    let (xm, xp) = (r(0, -1, 0, 0), r(0, 1, 0, 0));
                    let (ym, yp) = (r(1, 0, -1, 0), r(1, 0, 1, 0));
                    let (zm, zp) = (r(2, 0, 0, -1), r(2, 0, 0, 1));
                    for k in 0..n {
                        o[k] = c1 * (xp[k] - xm[k]) + c2 * (yp[k] - ym[k]) + c3 * (zp[k] - zm[k]);
                    }
                }
                (b'r', [x, y, z]) => {
                    let (xm, xp) = (r(0, -1, 0, 0), r(0, 1, 0, 0));
                    let (ym, yp) = (r(0, 0, -1, 0), r(0, 0, 1, 0));
                    let (zm, zp) = (r(0, 0, 0, -1), r(0, 0, 0, 1));
                    for k in 0..n {
                        x[k] = c1 * (xp[k] - xm[k]);
                        y[k] = c2 * (yp[k] - ym[k]);
                        z[k] = c3 * (zp[k] - zm[k]);
                    }
                }
                _ => unreachable!("bench: unknown workload"),
            }
        };
        for_rows(&geom, &mut self.outputs, pool.is_some(), row);
    }
}

/// Calls `row(at, outs)` for every interior row: `at` is the row's first storage index (the
/// same in every grid of the workload), `outs` one slice of the row per output. With
/// `parallel`, the outer index's planes go to rayon's current pool.
fn for_rows(
    geom: &Geometry,
    outputs: &mut [Grid3OrGrid2],
    parallel: bool,
    row: impl Fn(usize, &mut [&mut [f64]]) + Sync,
) {
    let shape = geom.interior();
    let (n0, rows_per_plane, nx) = if geom.n_dims == 3 {
        (shape[0], shape[1], shape[2])
    } else {
        (shape[0], 1, shape[1])
    };
    let s0 = geom.strides[0];
    let s1 = if geom.n_dims == 3 { geom.strides[1] } else { 0 };
    let origin = geom.origin;
    // Per outer index, one chunk of every output's storage starting at that plane's origin.
    let mut planes: Vec<Vec<&mut [f64]>> = (0..n0).map(|_| Vec::new()).collect();
    for out in outputs.iter_mut() {
        for (plane, chunk) in planes
            .iter_mut()
            .zip(out.storage_mut()[origin..].chunks_mut(s0))
        {
            plane.push(chunk);
        }
    }
    let plane = |(i, mut chunks): (usize, Vec<&mut [f64]>)| {
        let n_out = chunks.len();
        for j in 0..rows_per_plane {
            let mut rows: [&mut [f64]; 3] = Default::default();
            for (slot, c) in rows.iter_mut().zip(chunks.iter_mut()) {
                *slot = &mut c[j * s1..j * s1 + nx];
            }
            row(origin + i * s0 + j * s1, &mut rows[..n_out]);
        }
    };
    if parallel {
        planes.into_par_iter().enumerate().for_each(plane);
    } else {
        planes.into_iter().enumerate().for_each(plane);
    }
}

/// Runs `launch` under a schedule, or tuned (`quick`) with a cache when there is none; or
/// searches its row padding.
fn finish<T: Element, const D: usize>(
    launch: Launch<'_, T, D>,
    how: &Finish<'_>,
) -> stencil::Result<Outcome> {
    match *how {
        Finish::Run(Some(s), _) => launch.schedule(s).run_with_report().map(Outcome::Ran),
        Finish::Run(None, Some(c)) => launch
            .tune(TunePolicy::Quick)
            .tuning_cache(c.clone())
            .run_with_report()
            .map(Outcome::Ran),
        Finish::Run(None, None) => launch.run_with_report().map(Outcome::Ran),
        Finish::SearchPadding(c) => launch
            .tune(TunePolicy::Quick)
            .tuning_cache(c.clone())
            .search_padding()
            .map(Outcome::Padding),
    }
}

/// `steps` steps of `stencil` (`out -> u`) with parameters `c0, c1, ..` = `params`, under
/// `schedule` or tuned with `cache`.
fn time_loop<const D: usize>(
    stencil: &Stencil<f64>,
    backend: &CpuBackend,
    (u, out): (&mut Grid<f64, D>, &mut Grid<f64, D>),
    params: &[f64],
    (schedule, cache): (Option<Schedule>, &TuningCache),
    steps: usize,
) -> stencil::Result<LoopReport> {
    let mut s = Steps::new(stencil)
        .rotate(&["out", "u"])
        .on(backend)
        .grid("u", u)
        .grid("out", out);
    for (name, &value) in ["c0", "c1", "c2", "c3"].iter().zip(params) {
        s = s.param(name, value);
    }
    match schedule {
        Some(schedule) => s.schedule(schedule),
        None => s.tune(TunePolicy::Quick).tuning_cache(cache.clone()),
    }
    .run(steps)
}

/// The interiors of `grids`, in C order.
fn interiors(grids: &[Grid3OrGrid2]) -> Vec<Vec<f64>> {
    grids
        .iter()
        .map(|g| match g {
            Grid3OrGrid2::Three(g) => g.to_vec(),
            Grid3OrGrid2::Two(g) => g.to_vec(),
        })
        .collect()
}

/// The default CPU schedule as a `Schedule`.
pub(crate) fn default_schedule() -> Schedule {
    Schedule::Cpu(CpuSchedule::default())
}
