//! Decisions that noise cannot flip: a challenger replaces the incumbent schedule only when
//! interleaved, paired samples on the same data show it faster beyond their spread.
//!
//! **The rule** ([`PAIRED_RULE`]): rounds of one sample of each schedule, the order swapped
//! every round (incumbent first in even rounds). A round is *disturbed* when its ratio (the
//! challenger's time over the incumbent's) is more than [`PairedRule::disturbed`] (1.25)
//! times off the ratio of the two sides' fastest samples (noise only slows a run: the
//! fastest sample is a side's quiet speed; its samples before the comparison count too),
//! either way: a neighbour's burst slowed one of
//! its samples (a burst over both samples leaves the ratio, and the round counts). Rounds are run until [`PairedRule::rounds`] (5) undisturbed ones, or
//! [`PairedRule::max_rounds`] (10) in all. Over the undisturbed rounds, the challenger wins a
//! round when its sample is shorter than the incumbent's. It replaces the incumbent when all
//! of these hold:
//! - there are at least 5 undisturbed rounds, and it lost at most
//!   [`PairedRule::max_losses`] (1) of them;
//! - the median over them of its time over the incumbent's is at most `1 - margin`
//!   ([`PairedRule::margin`], 2%);
//! - its fastest sample over the incumbent's fastest is at most `1 - margin`.
//!
//! The comparison stops early, and the incumbent stays, once the challenger has lost more
//! undisturbed rounds than the rule allows; it also stops early, and the challenger wins,
//! when [`DECISIVE_ROUNDS`] (3) undisturbed rounds each show it more than [`DECISIVE_GAIN`]
//! (20%) faster: a gain that large is beyond any noise a round can hide. The same holds when
//! at least 3 rounds do not flatter the challenger (none is disturbed by a burst on the
//! incumbent's side) and every one of them shows the gain, since a burst on the challenger's
//! side only makes it look slower.

use super::runs::Sampler;

/// The decision rule of a paired comparison (see the module documentation).
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct PairedRule {
    /// Undisturbed rounds the verdict needs.
    pub rounds: usize,
    /// Most rounds run in all.
    pub max_rounds: usize,
    /// Undisturbed rounds the challenger may lose.
    pub max_losses: usize,
    /// Least relative gain of the median ratio and of the best-sample ratio.
    pub margin: f64,
    /// A round whose ratio is more than this times off the quiet ratio is disturbed.
    pub disturbed: f64,
}

/// Undisturbed rounds that settle a large gain early.
pub const DECISIVE_ROUNDS: usize = 3;

/// A gain every one of [`DECISIVE_ROUNDS`] undisturbed rounds shows settles the comparison
/// early (20%: far beyond any noise that leaves a round undisturbed).
pub const DECISIVE_GAIN: f64 = 0.20;

/// The rule every tuning decision uses.
pub const PAIRED_RULE: PairedRule = PairedRule {
    rounds: 5,
    max_rounds: 10,
    max_losses: 1,
    margin: 0.02,
    disturbed: 1.25,
};

impl PairedRule {
    /// The indices of the undisturbed rounds of `incumbent` and `challenger` (per-round
    /// samples of each side): those whose ratio (challenger over incumbent) is within
    /// [`disturbed`](Self::disturbed) of the ratio of the two sides' fastest samples, either
    /// way. Noise only slows a run, so each side's fastest sample is its quiet speed; a burst
    /// that slows one side's sample moves its round's ratio away from the quiet ratio, one
    /// that slows both samples of a round leaves it, and that round counts.
    pub fn undisturbed(&self, incumbent: &[f64], challenger: &[f64]) -> Vec<usize> {
        self.undisturbed_given(incumbent, challenger, None)
    }

    /// [`undisturbed`](Self::undisturbed), the sides' fastest samples taken over `prior`
    /// samples too (each side's fastest earlier sample, when known).
    fn undisturbed_given(
        &self,
        incumbent: &[f64],
        challenger: &[f64],
        prior: Option<(f64, f64)>,
    ) -> Vec<usize> {
        rounds_where(incumbent, challenger, prior, |r, quiet| {
            r <= self.disturbed * quiet && r * self.disturbed >= quiet
        })
    }

    /// The rounds that do not flatter the challenger: all but those whose ratio is more than
    /// [`disturbed`](Self::disturbed) below the quiet ratio (a burst slowed the incumbent's
    /// sample). A burst on the challenger's side only makes it look slower.
    fn not_flattering(
        &self,
        incumbent: &[f64],
        challenger: &[f64],
        prior: Option<(f64, f64)>,
    ) -> Vec<usize> {
        rounds_where(incumbent, challenger, prior, |r, quiet| {
            r * self.disturbed >= quiet
        })
    }

    /// Whether the undisturbed rounds lost so far already decide against the challenger
    /// (never before [`DECISIVE_ROUNDS`] rounds: two rounds of one side's burst look alike).
    fn lost(&self, incumbent: &[f64], challenger: &[f64], prior: Option<(f64, f64)>) -> bool {
        let clean = self.undisturbed_given(incumbent, challenger, prior);
        let losses = clean
            .iter()
            .filter(|&&i| challenger[i] >= incumbent[i])
            .count();
        incumbent.len().min(challenger.len()) >= DECISIVE_ROUNDS && losses > self.max_losses
    }

    /// Whether more rounds are needed for a verdict.
    fn wants_more(&self, incumbent: &[f64], challenger: &[f64], prior: Option<(f64, f64)>) -> bool {
        let n = incumbent.len().min(challenger.len());
        n < self.max_rounds
            && self.undisturbed_given(incumbent, challenger, prior).len() < self.rounds
            && !self.decisive_given(incumbent, challenger, prior)
    }

    /// Whether the evidence already shows a large gain beyond doubt: at least
    /// [`DECISIVE_ROUNDS`] undisturbed rounds, every one won by more than
    /// [`DECISIVE_GAIN`].
    pub fn decisive(&self, incumbent: &[f64], challenger: &[f64]) -> bool {
        self.decisive_given(incumbent, challenger, None)
    }

    fn decisive_given(
        &self,
        incumbent: &[f64],
        challenger: &[f64],
        prior: Option<(f64, f64)>,
    ) -> bool {
        let all_large = |rounds: Vec<usize>| {
            rounds.len() >= DECISIVE_ROUNDS
                && rounds
                    .iter()
                    .all(|&i| challenger[i] <= (1.0 - DECISIVE_GAIN) * incumbent[i])
        };
        // The undisturbed rounds, or every round that does not flatter the challenger: a
        // large gain that shows even where bursts slowed the challenger's samples is real
        // (a fast schedule's short runs jitter most on a loaded machine).
        all_large(self.undisturbed_given(incumbent, challenger, prior))
            || all_large(self.not_flattering(incumbent, challenger, prior))
    }

    /// The verdict on complete evidence: whether the challenger replaces the incumbent.
    pub fn replaces(&self, incumbent: &[f64], challenger: &[f64]) -> bool {
        self.replaces_given(incumbent, challenger, None)
    }

    /// [`replaces`](Self::replaces), the disturbed rounds told apart with the sides'
    /// fastest `prior` samples too.
    pub fn replaces_given(
        &self,
        incumbent: &[f64],
        challenger: &[f64],
        prior: Option<(f64, f64)>,
    ) -> bool {
        if self.decisive_given(incumbent, challenger, prior) {
            return true;
        }
        let clean = self.undisturbed_given(incumbent, challenger, prior);
        if clean.len() < self.rounds {
            return false;
        }
        let a: Vec<f64> = clean.iter().map(|&i| incumbent[i]).collect();
        let b: Vec<f64> = clean.iter().map(|&i| challenger[i]).collect();
        let gain = 1.0 - self.margin;
        a.len() - wins(&a, &b) <= self.max_losses
            && median_ratio(&a, &b) <= gain
            && min_ratio(&a, &b) <= gain
    }
}

/// One paired comparison and its verdict: the evidence a tuning decision rests on.
#[derive(Clone, PartialEq, Debug)]
pub struct Comparison {
    /// The incumbent schedule in words.
    pub incumbent: String,
    /// The challenger in words.
    pub challenger: String,
    /// The incumbent's seconds per run, one per round.
    pub incumbent_seconds: Vec<f64>,
    /// The challenger's seconds per run, one per round (fewer when it stopped early).
    pub challenger_seconds: Vec<f64>,
    /// Whether the challenger replaced the incumbent.
    pub replaced: bool,
}

impl Comparison {
    /// Rounds the challenger was faster in (disturbed rounds included).
    pub fn wins(&self) -> usize {
        wins(&self.incumbent_seconds, &self.challenger_seconds)
    }

    /// Median over the rounds of the challenger's time over the incumbent's (below 1: the
    /// challenger is faster).
    pub fn median_ratio(&self) -> f64 {
        median_ratio(&self.incumbent_seconds, &self.challenger_seconds)
    }

    /// The challenger's fastest sample over the incumbent's fastest.
    pub fn min_ratio(&self) -> f64 {
        min_ratio(&self.incumbent_seconds, &self.challenger_seconds)
    }

    /// Rounds run.
    pub fn rounds(&self) -> usize {
        self.incumbent_seconds
            .len()
            .min(self.challenger_seconds.len())
    }
}

impl std::fmt::Display for Comparison {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {}: faster in {} of {} paired rounds, median ratio {:.3}, best-sample ratio {:.3}",
            self.challenger,
            if self.replaced { "replaced" } else { "kept" },
            self.incumbent,
            self.wins(),
            self.rounds(),
            self.median_ratio(),
            self.min_ratio()
        )
    }
}

fn wins(incumbent: &[f64], challenger: &[f64]) -> usize {
    incumbent
        .iter()
        .zip(challenger)
        .filter(|(a, b)| b < a)
        .count()
}

fn median_ratio(incumbent: &[f64], challenger: &[f64]) -> f64 {
    let ratios: Vec<f64> = incumbent
        .iter()
        .zip(challenger)
        .map(|(a, b)| b / a)
        .collect();
    crate::harness::median(&ratios)
}

/// The rounds whose ratio (challenger over incumbent) `keep` accepts, given the quiet ratio.
fn rounds_where(
    incumbent: &[f64],
    challenger: &[f64],
    prior: Option<(f64, f64)>,
    keep: impl Fn(f64, f64) -> bool,
) -> Vec<usize> {
    let n = incumbent.len().min(challenger.len());
    if n == 0 {
        return Vec::new();
    }
    let quiet = quiet_ratio(incumbent, challenger, prior);
    (0..n)
        .filter(|&i| keep(challenger[i] / incumbent[i], quiet))
        .collect()
}

/// The ratio of the two sides' fastest samples (each side's quiet speed), `prior` samples
/// included when known.
fn quiet_ratio(incumbent: &[f64], challenger: &[f64], prior: Option<(f64, f64)>) -> f64 {
    let n = incumbent.len().min(challenger.len());
    let min = |v: &[f64]| v[..n].iter().copied().fold(f64::INFINITY, f64::min);
    match prior {
        Some((a, b)) => min(challenger).min(b) / min(incumbent).min(a),
        None => min_ratio(incumbent, challenger),
    }
}

fn min_ratio(incumbent: &[f64], challenger: &[f64]) -> f64 {
    let n = incumbent.len().min(challenger.len());
    let min = |v: &[f64]| v[..n].iter().copied().fold(f64::INFINITY, f64::min);
    min(challenger) / min(incumbent)
}

/// Compares `challenger` with `incumbent` under `rule`, sampling through `sampler`; `None`
/// when a run failed. `prior` holds each side's fastest earlier sample (incumbent,
/// challenger), which tells disturbed rounds apart when a long burst covers all of one
/// side's samples; `describe` names points for the evidence.
pub fn compare(
    sampler: &mut Sampler<'_>,
    rule: &PairedRule,
    incumbent: &[usize],
    challenger: &[usize],
    prior: Option<(f64, f64)>,
    describe: &dyn Fn(&[usize]) -> String,
) -> Option<Comparison> {
    let mut a = Vec::with_capacity(rule.max_rounds);
    let mut b = Vec::with_capacity(rule.max_rounds);
    let mut round = 0;
    while a.is_empty() || rule.wants_more(&a, &b, prior) {
        if round % 2 == 0 {
            a.push(sampler.sample(incumbent)?);
            b.push(sampler.sample(challenger)?);
        } else {
            b.push(sampler.sample(challenger)?);
            a.push(sampler.sample(incumbent)?);
        }
        round += 1;
        if rule.lost(&a, &b, prior) {
            break;
        }
    }
    let replaced = rule.replaces_given(&a, &b, prior);
    Some(Comparison {
        incumbent: describe(incumbent),
        challenger: describe(challenger),
        incumbent_seconds: a,
        challenger_seconds: b,
        replaced,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_challenger_needs_wins_a_median_gain_and_a_best_sample_gain() {
        let rule = PAIRED_RULE;
        let inc = [1.0, 1.0, 1.0, 1.0, 1.0];
        // 5% faster in every round.
        assert!(rule.replaces(&inc, &[0.95; 5]));
        // 1% faster in every round: within the margin.
        assert!(!rule.replaces(&inc, &[0.99; 5]));
        // Faster in 3 rounds only, by a lot.
        assert!(!rule.replaces(&inc, &[0.9, 0.9, 0.9, 1.1, 1.1]));
        // Four wins of 5% and one burst on the challenger's side: the burst's round is
        // disturbed, and four undisturbed rounds are too few.
        assert!(!rule.replaces(&inc, &[0.95, 0.95, 2.8, 0.95, 0.95]));
        assert!(rule.replaces(&[1.0; 6], &[0.95, 0.95, 2.8, 0.95, 0.95, 0.95]));
        // One loss of five is allowed.
        assert!(rule.replaces(&inc, &[0.95, 0.95, 1.01, 0.95, 0.95]));
        // A burst on the incumbent's side flatters the challenger in one round only, and its
        // best sample shows no gain.
        let burst = [1.0, 3.0, 1.0, 1.0, 1.0];
        assert!(!rule.replaces(&burst, &[1.0, 1.0, 0.995, 1.0, 0.999]));
        // Too few rounds is no win, unless three of them show a gain beyond 20%.
        assert!(!rule.replaces(&inc[..4], &[0.9; 4]));
        assert!(rule.replaces(&inc[..3], &[0.7; 3]));
        assert!(!rule.replaces(&inc[..3], &[0.7, 0.7, 0.85]));
    }

    #[test]
    fn a_large_gain_stands_when_only_the_challengers_samples_jitter() {
        let rule = PAIRED_RULE;
        // A schedule 30 times faster whose short runs a loaded machine slows by up to 3x:
        // most rounds are off the quiet ratio, but each shows the gain.
        let inc = [30.0, 30.5, 30.2, 30.1, 30.3];
        let fast = [1.0, 2.9, 1.6, 3.0, 2.2];
        assert!(rule.undisturbed(&inc, &fast).len() < DECISIVE_ROUNDS);
        assert!(rule.decisive(&inc, &fast));
        assert!(rule.replaces(&inc, &fast));
        // Bursts that slow the incumbent flatter the challenger: those rounds never count,
        // so an equal challenger does not win by them.
        let slowed = [1.0, 1.6, 1.7, 1.0, 1.8];
        let equal = [1.0, 1.0, 1.0, 1.0, 1.0];
        assert!(!rule.decisive(&slowed, &equal));
        assert!(!rule.replaces(&slowed, &equal));
    }

    #[test]
    fn the_evidence_reads_back() {
        let c = Comparison {
            incumbent: "a=0".into(),
            challenger: "a=1".into(),
            incumbent_seconds: vec![1.0, 1.0, 1.2, 1.0, 1.0],
            challenger_seconds: vec![0.9, 0.9, 0.9, 0.95, 1.1],
            replaced: true,
        };
        assert_eq!(c.wins(), 4);
        assert!((c.median_ratio() - 0.9).abs() < 1e-12);
        assert!((c.min_ratio() - 0.9).abs() < 1e-12);
        assert_eq!(
            c.to_string(),
            "a=1 replaced a=0: faster in 4 of 5 paired rounds, median ratio 0.900, best-sample ratio 0.900"
        );
    }
}
