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
//! remembered per padding), and that schedule timed with the tuning harness.

use std::fmt;
use std::time::Duration;

use stencil_core::grid::Grid;
use stencil_core::{Backend, Element, Error, ErrorKind, Job, Result, Schedule, Stencil};
use stencil_tune::{HarnessConfig, time_runs};

use crate::tuning::{self, TuneReport, TuneSettings, TuningSource};

/// Timing of each padding: a warm-up run, then the median of 5 repeats of at least 20 ms.
const TIMING: HarnessConfig = HarnessConfig {
    warmup_runs: 1,
    min_repeat: Duration::from_millis(20),
    repeats: 5,
    abandon_ratio: 0.0,
};

/// What [`Launch::search_padding`](crate::Launch::search_padding) measured; its `Display` is a
/// one-line summary such as `row padding: 1 line fastest (0: 3.842 ms, 1: 3.710 ms, ...)`.
#[derive(Clone, PartialEq, Debug)]
pub struct PaddingReport {
    /// The fastest row padding, in cache lines: allocate the call's grids with
    /// [`Grid::with_padding`] or move them with [`Grid::repadded`].
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
    /// Relative spread of the timed repeats, `(max - min) / median`.
    pub spread: f64,
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
        write!(f, "row padding: {} {unit} fastest (", self.best)?;
        for (i, t) in self.candidates.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{}: {:.3} ms", t.pad_lines, t.seconds_per_sweep * 1e3)?;
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

/// Runs the search described in the module documentation.
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
    let mut candidates = Vec::with_capacity(paddings.len());
    for pad in paddings {
        let inputs: Vec<Grid<T, D>> = call
            .inputs
            .iter()
            .map(|g| g.repadded(pad))
            .collect::<Result<_>>()?;
        let mut outputs: Vec<Grid<T, D>> = call
            .outputs
            .iter()
            .map(|g| Grid::with_padding(g.shape(), g.halo(), pad))
            .collect::<Result<_>>()?;
        let input_views = inputs.iter().map(|g| g.view()).collect();
        let output_views = outputs.iter_mut().map(|g| g.kernel_output_view()).collect();
        let mut job = Job::new(
            call.stencil,
            input_views,
            output_views,
            call.params.to_vec(),
        )?;
        let tuning = match call.schedule {
            Some(s) => TuneReport::plain(TuningSource::Given, s, String::new()),
            None => tuning::choose(call.backend, &mut job, call.tune)?,
        };
        // One checked run: a failure is the backend's error, not a lost candidate.
        call.backend.run(&mut job, &tuning.schedule)?;
        let mut run = || call.backend.run(&mut job, &tuning.schedule).is_ok();
        let trial = time_runs(&TIMING, None, &mut run).ok_or_else(|| {
            Error::new(
                ErrorKind::Backend,
                format!(
                    "kernel `{}` failed while timing row padding {pad}",
                    kernel.name
                ),
            )
        })?;
        tracing::info!(
            target: "stencil::padding",
            kernel = %kernel.name,
            pad,
            ms = trial.seconds * 1e3,
            "{tuning}"
        );
        candidates.push(PaddingTrial {
            pad_lines: pad,
            tuning,
            seconds_per_sweep: trial.seconds,
            spread: trial.spread,
        });
    }
    let best = candidates
        .iter()
        .min_by(|a, b| a.seconds_per_sweep.total_cmp(&b.seconds_per_sweep))
        .map(|t| t.pad_lines)
        .unwrap_or(0);
    Ok(PaddingReport { best, candidates })
}
