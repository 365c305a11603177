//! What first-call tuning did for one call: [`TuneReport`] and where its schedule came from,
//! [`TuningSource`].

use std::fmt;

use stencil_core::Schedule;

use super::paired::Comparison;

/// Where a call's schedule came from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TuningSource {
    /// The call named its schedule.
    Given,
    /// The backend is not tuned, or the call is too small to tune under the policy: its
    /// default.
    Default,
    /// Chosen by an earlier call of this process.
    Remembered,
    /// Read from the tuning cache.
    CacheHit,
    /// The `off` policy: the model's choice, nothing measured.
    Model,
    /// Tuned by this call.
    Tuned,
    /// On grids distributed over MPI ranks: chosen by another rank with the same local
    /// shape (tuned there, or found in its cache) and received from it.
    Shared,
}

/// What first-call tuning did for one call; its `Display` is the one-line summary
/// applications print, such as `tuning: 24 trials in 0.81 s: ...`.
#[derive(Clone, PartialEq, Debug)]
pub struct TuneReport {
    /// Where the schedule came from.
    pub source: TuningSource,
    /// The schedule the call ran under.
    pub schedule: Schedule,
    /// The schedule in words (the tuning space's dimension names and values).
    pub description: String,
    /// Samples this call measured (0 unless [`TuningSource::Tuned`]).
    pub trials: usize,
    /// Seconds this call spent tuning, bandwidth measurement included.
    pub tuning_seconds: f64,
    /// Measured seconds per sweep of the schedule, when known (tuned now or cached).
    pub seconds_per_sweep: Option<f64>,
    /// Measured fraction of the roofline bound, when known: the single sweep's bound time
    /// over the measured time (for a time loop, per step: above 1 is faster than any single
    /// sweep can be).
    pub roofline_fraction: Option<f64>,
    /// Whether this is a time loop's report: its times are per step, estimated from trials
    /// on part of the grids.
    pub time_loop: bool,
    /// The paired comparisons the decision rests on, in order (empty unless tuned now):
    /// each challenger against the incumbent of its time, with every round's times and the
    /// verdict under [`PAIRED_RULE`](super::PAIRED_RULE). The schedule is the default's
    /// unless a comparison replaced it.
    pub evidence: Vec<Comparison>,
    /// Whether the time budget ([`budget_seconds`](super::budget_seconds)) ended the search
    /// or the comparisons before their end: the schedule is then the best confirmed when
    /// time ran out.
    pub cut_short: bool,
    /// A winner this call tuned and then did not use: on a backend other than the reference
    /// (the CPU), a newly tuned single-sweep winner runs once more on the call's own data and
    /// must agree with the CPU backend's result: for kernels of `+`, `-`, `*`, negation and
    /// `abs`, each point within `stencil::verify`'s per-point bound, `(4 + 2 n)` epsilons of
    /// the point's magnitude; for other kernels (and points near overflow) within
    /// `stencil::tuning::WINNER_TOLERANCE_EPS` epsilons of the larger of 1 and the output's
    /// largest finite magnitude, and each reduction within as many of the larger of 1 and its
    /// value. One that does not is reported here (the schedule in words and the first
    /// disagreement), never cached, and the call runs the backend's default schedule instead
    /// (which must agree in turn, or the call fails with `VerificationFailed`). `None`
    /// otherwise.
    pub rejected: Option<String>,
}

impl TuneReport {
    /// A report of `source` with nothing measured.
    pub fn plain(source: TuningSource, schedule: Schedule, description: String) -> TuneReport {
        TuneReport {
            source,
            schedule,
            description,
            trials: 0,
            tuning_seconds: 0.0,
            seconds_per_sweep: None,
            roofline_fraction: None,
            time_loop: false,
            evidence: Vec::new(),
            cut_short: false,
            rejected: None,
        }
    }

    /// The evidence in one phrase: the comparison that chose the schedule, or why the
    /// default stayed (`"default kept: 2 challengers no faster"`); empty without evidence.
    pub fn evidence_summary(&self) -> String {
        let replaced: Vec<&Comparison> = self.evidence.iter().filter(|c| c.replaced).collect();
        match (replaced.last(), self.evidence.len()) {
            (_, 0) => String::new(),
            (Some(c), _) => format!(
                "{:.2}x faster than {} in {} of {} paired rounds",
                1.0 / c.median_ratio(),
                c.incumbent,
                c.wins(),
                c.rounds()
            ),
            (None, n) => format!(
                "default kept: {n} challenger{} no faster in paired rounds",
                if n == 1 { "" } else { "s" }
            ),
        }
    }
}

impl fmt::Display for TuneReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.source {
            TuningSource::Given => write!(f, "tuning: none, schedule given")?,
            TuningSource::Default => write!(f, "tuning: none, default schedule")?,
            TuningSource::Remembered => write!(f, "tuning: remembered")?,
            TuningSource::CacheHit => write!(f, "tuning: cache hit")?,
            TuningSource::Shared => write!(f, "tuning: shared by another rank")?,
            TuningSource::Model => write!(f, "tuning: off, the model's choice")?,
            TuningSource::Tuned => write!(
                f,
                "tuning: {} trials in {:.2} s",
                self.trials, self.tuning_seconds
            )?,
        }
        if self.cut_short {
            write!(f, " (cut short by its time budget)")?;
        }
        if !self.description.is_empty() {
            write!(f, ": {}", self.description)?;
        }
        if let Some(s) = self.seconds_per_sweep {
            let per = if self.time_loop { "step" } else { "sweep" };
            write!(f, " ({:.3} ms per {per}", s * 1e3)?;
            if let Some(fr) = self.roofline_fraction.filter(|fr| *fr > 0.0) {
                write!(f, ", {:.0}% of the roofline bound", 100.0 * fr)?;
            }
            write!(f, ")")?;
        }
        let evidence = self.evidence_summary();
        if !evidence.is_empty() {
            write!(f, "; {evidence}")?;
        }
        if let Some(r) = &self.rejected {
            write!(f, "; rejected the tuned winner {r}")?;
        }
        Ok(())
    }
}
