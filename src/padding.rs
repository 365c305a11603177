//! The layout search: which unit-stride padding runs a call fastest
//! ([`Launch::search_padding`](crate::Launch::search_padding)).
//!
//! Padding (Datta et al.'s array padding, 002_..., section 4) moves each row of a grid by whole
//! cache lines against the rows before it, and so changes which cache sets the rows of a
//! stencil's window share. It is a property of a grid's layout, fixed when the grid is
//! allocated ([`Grid::with_padding`]), while the tuner chooses among schedules of grids that
//! already exist. So padding is searched apart: for every padding the backend's space offers
//! ([`Backend::row_paddings`]), the call's inputs are copied into that layout, its outputs
//! allocated in it, the schedule chosen as for any call on such grids (tuned, cached and
//! remembered per padding), and that schedule compared with the first padding's as the tuner
//! compares schedules: interleaved rounds on the same data, under the tuner's paired rule
//! ([`PAIRED_RULE`]). A padding is fastest only when it beats the first one under that rule;
//! when none does, the first one stands ("no padding helps").

use std::fmt;
use std::time::Duration;

use stencil_core::grid::Grid;
use stencil_core::{Backend, Element, Error, ErrorKind, Job, Result, Schedule, Stencil};
use stencil_tune::engine::paired::compare;
use stencil_tune::engine::{Comparison, PAIRED_RULE, Sampler, TimedRuns};
use stencil_tune::harness::median;
use stencil_tune::{HarnessConfig, time_runs};

use crate::tuning::{self, TuneReport, TuneSettings};

/// Timing of the first padding alone (when the backend offers no other): a warm-up run,
/// then the median of 5 repeats of at least 20 ms.
const TIMING: HarnessConfig = HarnessConfig {
    warmup_runs: 1,
    min_repeat: Duration::from_millis(20),
    repeats: 5,
    abandon_ratio: 0.0,
};

/// What [`Launch::search_padding`](crate::Launch::search_padding) measured; its `Display` is a
/// one-line summary such as `row padding: 1 line fastest (0: 3.842 ms, 1: 3.710 ms x0.966, ...)`.
#[derive(Clone, PartialEq, Debug)]
pub struct PaddingReport {
    /// The fastest row padding, in cache lines: of the paddings whose comparison with the
    /// first one replaced it under the tuner's paired rule, the one of the lowest
    /// [`relative`](PaddingTrial::relative) time; the first when none did (no padding
    /// helps). Allocate the call's grids with [`Grid::with_padding`] or move them with
    /// [`Grid::repadded`].
    pub best: usize,
    /// Every padding timed, in the order timed (the backend's order, 0 first).
    pub candidates: Vec<PaddingTrial>,
}

/// One padding of a [`PaddingReport`].
#[derive(Clone, PartialEq, Debug)]
pub struct PaddingTrial {
    /// Row padding of every grid of the call, in cache lines.
    pub pad_lines: usize,
    /// How the schedule was chosen for grids of this padding, and the schedule.
    pub tuning: TuneReport,
    /// Median seconds per sweep under that schedule.
    pub seconds_per_sweep: f64,
    /// Its time over the first padding's, both timed in the same alternating rounds: the
    /// median over the rounds of the two times' ratio (1 for the first padding). What the
    /// search ranks by, since it does not drift with the machine's speed.
    pub relative: f64,
    /// The comparison with the first padding (`None` for the first): every round's times
    /// and whether this padding replaced the first under the tuner's rule.
    pub evidence: Option<Comparison>,
}

impl PaddingReport {
    /// The trial of the fastest padding.
    pub fn best_trial(&self) -> &PaddingTrial {
        self.candidates
            .iter()
            .find(|t| t.pad_lines == self.best)
            .expect("the best padding is one of the candidates")
    }
}

impl fmt::Display for PaddingReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = if self.best == 1 { "line" } else { "lines" };
        let first = self.candidates.first().map_or(0, |t| t.pad_lines);
        if self.best == first && self.candidates.len() > 1 {
            write!(f, "row padding: no padding helps, {} {unit} (", self.best)?;
        } else {
            write!(f, "row padding: {} {unit} fastest (", self.best)?;
        }
        for (i, t) in self.candidates.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{}: {:.3} ms", t.pad_lines, t.seconds_per_sweep * 1e3)?;
            if i > 0 {
                write!(f, " x{:.3}", t.relative)?;
            }
        }
        write!(f, " per sweep)")
    }
}

/// A bound call, as the search sees it.
pub(crate) struct Call<'a, 'g, T: Element, const D: usize> {
    pub(crate) stencil: &'g Stencil<T>,
    pub(crate) inputs: &'a [&'g Grid<T, D>],
    pub(crate) outputs: &'a [&'g Grid<T, D>],
    pub(crate) params: &'a [T],
    pub(crate) backend: &'g dyn Backend<T>,
    pub(crate) schedule: Option<Schedule>,
    pub(crate) tune: &'a TuneSettings,
}

/// The call's grids copied into one padding.
struct Copies<T: Element, const D: usize> {
    inputs: Vec<Grid<T, D>>,
    outputs: Vec<Grid<T, D>>,
}

impl<T: Element, const D: usize> Copies<T, D> {
    fn new(call: &Call<'_, '_, T, D>, pad: usize) -> Result<Self> {
        Ok(Copies {
            inputs: call
                .inputs
                .iter()
                .map(|g| g.repadded(pad))
                .collect::<Result<_>>()?,
            outputs: call
                .outputs
                .iter()
                .map(|g| Grid::with_padding(g.shape(), g.halo(), pad))
                .collect::<Result<_>>()?,
        })
    }

    /// The call on these copies, its schedule chosen (and run once, checked).
    fn job<'a>(&'a mut self, call: &Call<'_, 'a, T, D>) -> Result<(Job<'a, T>, TuneReport)> {
        let input_views = self.inputs.iter().map(|g| g.view()).collect();
        let output_views = self
            .outputs
            .iter_mut()
            .map(|g| g.kernel_output_view())
            .collect();
        let mut job = Job::new(
            call.stencil,
            input_views,
            output_views,
            call.params.to_vec(),
        )?;
        let tuning = tuning::schedule_for(call.backend, &mut job, call.schedule, call.tune)?;
        // One checked run: a failure is the backend's error, not a lost candidate.
        call.backend.run(&mut job, &tuning.schedule)?;
        Ok((job, tuning))
    }
}

/// Runs the search described in the module documentation.
///
/// The machine's speed drifts (on a shared machine by tens of percent within seconds), so
/// candidates are not timed one after another: each padding is timed against the first
/// (unpadded) one in the same rounds, the two alternating, and the paddings are ranked by
/// that ratio. Two copies of the call's grids are alive at a time.
pub(crate) fn search<T: Element, const D: usize>(
    call: &Call<'_, '_, T, D>,
) -> Result<PaddingReport> {
    let kernel = call.stencil.kernel();
    let shape = match call.outputs.first() {
        Some(g) => g.shape(),
        None => {
            return Err(Error::new(
                ErrorKind::BadArgument,
                format!("kernel `{}` has no output", kernel.name),
            ));
        }
    };
    let mut paddings = call.backend.row_paddings(kernel, &shape);
    if paddings.is_empty() {
        paddings.push(0);
    }
    let failed = |pad: usize| {
        Error::new(
            ErrorKind::Backend,
            format!(
                "kernel `{}` failed while timing row padding {pad}",
                kernel.name
            ),
        )
    };
    let first = paddings[0];
    let mut base = Copies::new(call, first)?;
    let (mut base_job, base_tuning) = base.job(call)?;
    let mut candidates = Vec::with_capacity(paddings.len());
    let mut base_medians = Vec::new();
    for &pad in &paddings[1..] {
        let mut copies = Copies::new(call, pad)?;
        let (mut job, tuning) = copies.job(call)?;
        // Point [0]: the first padding; [1]: this one.
        let mut runs = TimedRuns::new(std::time::Instant::now(), |p: &[usize]| match p[0] {
            0 => call
                .backend
                .run(&mut base_job, &base_tuning.schedule)
                .is_ok(),
            _ => call.backend.run(&mut job, &tuning.schedule).is_ok(),
        });
        let mut sampler = Sampler::new(&mut runs, false);
        let estimate = sampler.warm_up(&[0]).ok_or_else(|| failed(first))?;
        sampler.warm_up(&[1]).ok_or_else(|| failed(pad))?;
        sampler.calibrate(estimate);
        let describe = |p: &[usize]| format!("row padding {}", [first, pad][p[0]]);
        let c = compare(&mut sampler, &PAIRED_RULE, &[0], &[1], None, &describe)
            .ok_or_else(|| failed(pad))?;
        let relative = c.median_ratio();
        let pad_s = median(&c.challenger_seconds);
        tracing::info!(
            target: "stencil::padding",
            kernel = %kernel.name,
            pad,
            ms = pad_s * 1e3,
            relative,
            replaced = c.replaced,
            "{tuning}"
        );
        base_medians.push(median(&c.incumbent_seconds));
        candidates.push(PaddingTrial {
            pad_lines: pad,
            tuning,
            seconds_per_sweep: pad_s,
            relative,
            evidence: Some(c),
        });
    }
    let mut run_base = || {
        call.backend
            .run(&mut base_job, &base_tuning.schedule)
            .is_ok()
    };
    let base_seconds = if base_medians.is_empty() {
        time_runs(&TIMING, None, &mut run_base)
            .ok_or_else(|| failed(first))?
            .seconds
    } else {
        median(&base_medians)
    };
    candidates.insert(
        0,
        PaddingTrial {
            pad_lines: first,
            tuning: base_tuning,
            seconds_per_sweep: base_seconds,
            relative: 1.0,
            evidence: None,
        },
    );
    let best = candidates
        .iter()
        .filter(|t| t.evidence.as_ref().is_some_and(|c| c.replaced))
        .min_by(|a, b| a.relative.total_cmp(&b.relative))
        .map_or(first, |t| t.pad_lines);
    Ok(PaddingReport { best, candidates })
}
