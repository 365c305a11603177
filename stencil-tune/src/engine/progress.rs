//! A one-line progress display on standard error while a tuning lasts, shown only on a
//! terminal and only once the tuning has lasted [`PROGRESS_AFTER`].

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Tuning that lasts longer than this shows a progress line on a terminal's standard error.
pub const PROGRESS_AFTER: Duration = Duration::from_millis(500);

/// The least interval between two redraws of the progress line.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// Whether the progress line should be drawn now: tuning has lasted at least
/// [`PROGRESS_AFTER`], standard error is a terminal, and the line was last drawn at least
/// [`PROGRESS_EVERY`] ago (`since_drawn`; `None`: never drawn).
pub(crate) fn progress_due(
    elapsed: Duration,
    terminal: bool,
    since_drawn: Option<Duration>,
) -> bool {
    terminal && elapsed >= PROGRESS_AFTER && since_drawn.is_none_or(|d| d >= PROGRESS_EVERY)
}

/// The progress line of one tuning: redrawn after runs, drawn a last time when the tuning
/// ends, so a tuning that passes the threshold during its last run still shows one.
pub(crate) struct ProgressLine {
    kernel: String,
    started: Instant,
    terminal: bool,
    drawn: Option<Instant>,
    runs: usize,
}

impl ProgressLine {
    pub(crate) fn new(kernel: String, started: Instant) -> ProgressLine {
        ProgressLine {
            kernel,
            started,
            terminal: std::io::stderr().is_terminal(),
            drawn: None,
            runs: 0,
        }
    }

    /// One run done.
    pub(crate) fn tick(&mut self) {
        self.runs += 1;
        let since_drawn = self.drawn.map(|t| t.elapsed());
        if progress_due(self.started.elapsed(), self.terminal, since_drawn) {
            self.draw();
        }
    }

    fn draw(&mut self) {
        self.drawn = Some(Instant::now());
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\rtuning `{}`: {} runs ({:.1} s)   ",
            self.kernel,
            self.runs,
            self.started.elapsed().as_secs_f64()
        );
        let _ = err.flush();
    }

    /// Draws the final state (when the tuning lasted long enough) and ends the line.
    pub(crate) fn finish(&mut self) {
        if progress_due(self.started.elapsed(), self.terminal, None) {
            self.draw();
        }
        if self.drawn.is_some() {
            let _ = writeln!(std::io::stderr());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_line_shows_from_half_a_second_on_a_terminal_only() {
        let ms = Duration::from_millis;
        assert!(!progress_due(ms(499), true, None));
        assert!(progress_due(ms(500), true, None));
        assert!(progress_due(ms(700), true, None));
        assert!(!progress_due(ms(5000), false, None), "never off a terminal");
        // Redrawn at most every 250 ms.
        assert!(!progress_due(ms(900), true, Some(ms(100))));
        assert!(progress_due(ms(900), true, Some(ms(250))));
    }
}
