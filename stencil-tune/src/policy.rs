//! How hard to tune: `off | quick | thorough | exhaustive`, from `STENCIL_TUNE` or the API.
//!
//! What each policy does on a first call is the [tuning engine](crate::engine)'s: its time
//! budget ([`budget_seconds`](crate::engine::budget_seconds)), its search and the paired
//! rule every policy's final choice passes ([`PAIRED_RULE`](crate::engine::PAIRED_RULE)):
//!
//! | policy       | search                                                    | budget |
//! |--------------|-----------------------------------------------------------|--------|
//! | `off`        | none: the model's choice, nothing measured                | -      |
//! | `quick`      | screen the dimensions that matter most, then descend      | 1 s per sweep, 2 s per time loop |
//! | `thorough`   | exhaustive if <= 200 points, else genetic algorithm; median of 3 samples per point | 10 s |
//! | `exhaustive` | every point, median of 5 samples                          | none   |
//!
//! [`TunePolicy::plan`] is the plan of the lower-level search API ([`tune`](crate::tune):
//! a strategy, trial and time limits, pruning and the harness of [`harness`](crate::harness)),
//! for callers that drive a [`Search`](crate::Search) themselves:
//!
//! | policy       | strategy                                   | trials | time  | bound stop | harness |
//! |--------------|--------------------------------------------|--------|-------|------------|---------|
//! | `off`        | none: the model's choice, no trial         | 0      | -     | -          | -       |
//! | `quick`      | exhaustive if the space has <= 24 points, else neighbourhood search | 24 | 0.7 s, at least 4 trials | within 5% | 1 warm-up, 3 repeats of >= 5 ms |
//! | `thorough`   | exhaustive if <= 200 points, else genetic algorithm | 200 | 20 s | within 2% | 1 warm-up, 5 repeats of >= 20 ms |
//! | `exhaustive` | every point                                | all    | -     | -          | 2 warm-ups, 5 repeats of >= 50 ms |
//!
//! There, after the strategy, the fastest points are measured once more and ranked by the
//! mean of their two times (`quick`: 3 points, `thorough` and `exhaustive`: 5).
//!
//! `quick` is the default. `STENCIL_TUNE` accepts, ASCII case and surrounding blanks ignored:
//!
//! | value | policy |
//! |-------|--------|
//! | unset, empty or blank | `quick` (the default) |
//! | `off`, `0`, `false`, `no` | `off` |
//! | `on`, `1`, `true`, `yes`, `quick` | `quick` |
//! | `thorough` | `thorough` |
//! | `exhaustive` | `exhaustive` |
//!
//! Any other value is not an error: [`policy`] warns once per value (a `tracing` warning and
//! one line on standard error) and uses the default, so a typo in a job script never stops a
//! run. [`policy_from`] and `str::parse` still report it as a [`PolicyError`] for callers
//! that want to reject it. [`set_policy`] overrides the variable for the whole process.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::Duration;

use crate::harness::HarnessConfig;
use crate::search::Budget;
use crate::strategy::{GeneticConfig, NeighbourhoodConfig, Strategy};

/// Trials `quick` makes even when they outlast its 0.7 s: when a sweep takes a few hundred
/// milliseconds, the time limit would otherwise stop the search after the default point
/// (measured first), and a default several times slower than the best would stand (seen:
/// 290 ms default against 65 ms best, one trial). Four trials of such a sweep cost a few
/// seconds, small beside the many sweeps a run of that size does.
pub const QUICK_MIN_TRIALS: usize = 4;

/// The environment variable read by [`policy`].
pub const ENV_VAR: &str = "STENCIL_TUNE";

/// How hard to tune (see the module documentation).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum TunePolicy {
    /// No trials: use the model's choice.
    Off,
    /// A short model-ordered search (the default).
    #[default]
    Quick,
    /// A longer global search.
    Thorough,
    /// Every point of the space.
    Exhaustive,
}

/// An unknown policy name.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PolicyError {
    value: String,
}

impl PolicyError {
    /// The rejected text.
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown tuning policy `{}` ({ENV_VAR}): expected {SPELLINGS}",
            self.value
        )
    }
}

impl std::error::Error for PolicyError {}

/// Every accepted spelling, as error and warning messages list them.
const SPELLINGS: &str =
    "off (or 0, false, no), quick (or on, 1, true, yes), thorough or exhaustive";

impl FromStr for TunePolicy {
    type Err = PolicyError;

    /// Parses a policy name as the module documentation lists them (`off`, `0`, `false`,
    /// `no`; `quick`, `on`, `1`, `true`, `yes`; `thorough`; `exhaustive`), ASCII case and
    /// surrounding blanks ignored.
    fn from_str(s: &str) -> Result<TunePolicy, PolicyError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "off" | "0" | "false" | "no" => Ok(TunePolicy::Off),
            "quick" | "on" | "1" | "true" | "yes" => Ok(TunePolicy::Quick),
            "thorough" => Ok(TunePolicy::Thorough),
            "exhaustive" => Ok(TunePolicy::Exhaustive),
            _ => Err(PolicyError {
                value: s.to_string(),
            }),
        }
    }
}

impl fmt::Display for TunePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TunePolicy::Off => "off",
            TunePolicy::Quick => "quick",
            TunePolicy::Thorough => "thorough",
            TunePolicy::Exhaustive => "exhaustive",
        })
    }
}

/// What a policy does for one space.
#[derive(Clone, PartialEq, Debug)]
pub struct Plan {
    /// The strategy; `None` under [`TunePolicy::Off`].
    pub strategy: Option<Strategy>,
    /// Trial, time and bound limits.
    pub budget: Budget,
    /// Points predicted slower than this factor times the best measured time are skipped
    /// (infinite: never).
    pub prune_factor: f64,
    /// How each candidate is timed.
    pub harness: HarnessConfig,
    /// After the strategy, the fastest this many points are measured once more and ranked by
    /// the mean of their two times ([`Search::confirm`](crate::Search::confirm)).
    pub confirm: usize,
}

impl TunePolicy {
    /// The plan for a space of `n_points` points; `bound_seconds` (the roofline bound of the
    /// kernel on this machine) enables the bound stop of `quick` and `thorough`.
    pub fn plan(self, n_points: u64, bound_seconds: Option<f64>) -> Plan {
        let harness = |warmup_runs, repeats, ms| HarnessConfig {
            warmup_runs,
            min_repeat: Duration::from_millis(ms),
            repeats,
            abandon_ratio: 0.8,
        };
        let with_bound = |budget: Budget, tolerance| match bound_seconds {
            Some(seconds) => budget.with_bound(seconds, tolerance),
            None => budget,
        };
        match self {
            TunePolicy::Off => Plan {
                strategy: None,
                budget: Budget::trials(0),
                prune_factor: f64::INFINITY,
                harness: harness(0, 1, 0),
                confirm: 0,
            },
            TunePolicy::Quick => Plan {
                strategy: Some(if n_points <= 24 {
                    Strategy::Exhaustive
                } else {
                    Strategy::Neighbourhood(NeighbourhoodConfig {
                        restarts: 4,
                        ..NeighbourhoodConfig::default()
                    })
                }),
                budget: with_bound(
                    Budget::trials(24)
                        .with_time(Duration::from_millis(700))
                        .with_min_trials(QUICK_MIN_TRIALS),
                    0.05,
                ),
                prune_factor: 1.5,
                harness: harness(1, 3, 5),
                confirm: 3,
            },
            TunePolicy::Thorough => Plan {
                strategy: Some(if n_points <= 200 {
                    Strategy::Exhaustive
                } else {
                    Strategy::Genetic(GeneticConfig {
                        island_size: 10,
                        generations: 25,
                        ..GeneticConfig::default()
                    })
                }),
                budget: with_bound(Budget::trials(200).with_time(Duration::from_secs(20)), 0.02),
                prune_factor: 2.0,
                harness: harness(1, 5, 20),
                confirm: 5,
            },
            TunePolicy::Exhaustive => Plan {
                strategy: Some(Strategy::Exhaustive),
                budget: Budget::unlimited(),
                prune_factor: f64::INFINITY,
                harness: harness(2, 5, 50),
                confirm: 5,
            },
        }
    }
}

/// The process-wide override set by [`set_policy`].
static OVERRIDE: Mutex<Option<TunePolicy>> = Mutex::new(None);

/// Sets the policy for the whole process (`None` returns to `STENCIL_TUNE`).
pub fn set_policy(policy: Option<TunePolicy>) {
    *OVERRIDE.lock().unwrap_or_else(|e| e.into_inner()) = policy;
}

/// The `STENCIL_TUNE` values already warned about, so each is reported once per process.
static WARNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// The policy in force: the [`set_policy`] override, else `STENCIL_TUNE`, else the default.
///
/// A `STENCIL_TUNE` value that names no policy gives the default; the first time the process
/// meets that value it emits a `tracing` warning (target `stencil::tuning`) and writes one
/// line to standard error, so the typo is seen whether or not the application installed a
/// subscriber.
pub fn policy() -> TunePolicy {
    if let Some(p) = *OVERRIDE.lock().unwrap_or_else(|e| e.into_inner()) {
        return p;
    }
    let value = std::env::var(ENV_VAR).ok();
    match policy_from(value.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            let first = WARNED
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert_with(HashSet::new)
                .insert(e.value().to_string());
            if first {
                let fallback = TunePolicy::default();
                tracing::warn!(
                    target: "stencil::tuning",
                    value = e.value(),
                    fallback = %fallback,
                    "unknown {ENV_VAR} value: using the default policy"
                );
                eprintln!("warning: {e}; using the default policy `{fallback}`");
            }
            TunePolicy::default()
        }
    }
}

/// The policy named by a value of `STENCIL_TUNE` (`None` or blank: the default), strictly:
/// for callers that want to reject a typo ([`policy`] warns and uses the default instead).
///
/// # Errors
/// [`PolicyError`] when the value is none of the spellings in the module documentation.
pub fn policy_from(value: Option<&str>) -> Result<TunePolicy, PolicyError> {
    match value {
        None => Ok(TunePolicy::default()),
        Some(v) if v.trim().is_empty() => Ok(TunePolicy::default()),
        Some(v) => v.parse(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_name_and_rejects_others_with_an_error() {
        assert_eq!("off".parse(), Ok(TunePolicy::Off));
        for off in ["0", "false", "FALSE", "OFF", " Off ", "no"] {
            assert_eq!(off.parse(), Ok(TunePolicy::Off), "{off:?}");
        }
        for on in ["1", "true", "True", "ON", "yes"] {
            assert_eq!(on.parse(), Ok(TunePolicy::Quick), "{on:?}");
        }
        assert_eq!(" Quick ".parse(), Ok(TunePolicy::Quick));
        assert_eq!("THOROUGH".parse(), Ok(TunePolicy::Thorough));
        assert_eq!("exhaustive".parse(), Ok(TunePolicy::Exhaustive));
        let err = "fast".parse::<TunePolicy>().unwrap_err();
        assert_eq!(err.value(), "fast");
        assert!(err.to_string().contains(SPELLINGS), "{err}");
        for p in [
            TunePolicy::Off,
            TunePolicy::Quick,
            TunePolicy::Thorough,
            TunePolicy::Exhaustive,
        ] {
            assert_eq!(p.to_string().parse(), Ok(p));
        }
    }

    #[test]
    fn unset_or_blank_means_quick() {
        assert_eq!(policy_from(None), Ok(TunePolicy::Quick));
        assert_eq!(policy_from(Some("  ")), Ok(TunePolicy::Quick));
        assert!(policy_from(Some("x")).is_err());
    }

    #[test]
    fn override_wins_and_can_be_cleared() {
        set_policy(Some(TunePolicy::Thorough));
        assert_eq!(policy(), TunePolicy::Thorough);
        set_policy(None);
        // Back to the environment: whatever the test runner has, some policy (an unknown
        // value falls back to the default; the facade's tests check that in a child process).
        let _ = policy();
    }

    #[test]
    fn plans_follow_the_table() {
        let off = TunePolicy::Off.plan(1000, Some(1.0));
        assert_eq!(off.strategy, None);
        assert_eq!(off.budget.max_trials, Some(0));
        let quick_small = TunePolicy::Quick.plan(20, None);
        assert_eq!(quick_small.strategy, Some(Strategy::Exhaustive));
        assert_eq!(quick_small.budget.bound, None);
        let quick = TunePolicy::Quick.plan(1000, Some(2.0));
        assert!(matches!(quick.strategy, Some(Strategy::Neighbourhood(_))));
        assert_eq!(quick.budget.max_trials, Some(24));
        assert_eq!(quick.budget.min_trials, QUICK_MIN_TRIALS);
        assert_eq!(quick.confirm, 3);
        assert_eq!(off.confirm, 0);
        assert_eq!(
            quick.budget.bound.map(|b| (b.seconds, b.tolerance)),
            Some((2.0, 0.05))
        );
        let thorough = TunePolicy::Thorough.plan(1000, None);
        assert!(matches!(thorough.strategy, Some(Strategy::Genetic(_))));
        let all = TunePolicy::Exhaustive.plan(1 << 30, Some(1.0));
        assert_eq!(all.strategy, Some(Strategy::Exhaustive));
        assert_eq!(all.budget, Budget::unlimited());
    }
}
