//! A simulator of adaptive sessions, to measure what a stopping rule does to the answers: the
//! rate of false "behind"/"best" verdicts, the power to find a real difference, and the
//! coverage of the intervals printed after the stop. The tests below are the proof the design
//! of [`super::sequential`] and [`super::best`] rests on; doc/statistics.md quotes their
//! figures (seed, number of sessions).
//!
//! One simulated session is one headline row: `k` variants with true means `means` and a
//! common coefficient of variation, values drawn lognormal (positive, right-skewed, like
//! throughputs and times; the parameters keep the true mean and CoV exact). The session starts
//! with `first_n` repeats per variant and adds one per variant per round; the corrected rule
//! looks at its [`Plan`]'s looks, the naive one after every round; a session stops at the
//! first look where the row is decided, or after the last round. Three rules
//! ([`Rule`]): the corrected one fsbench runs, the same with every look at α = 0.05 (the
//! group-sequential correction removed, Holm kept), and the naive rule before issue 26. The
//! tests hold the corrected rule to 5 % false "behind"/"best" in scenarios where the other
//! two exceed it (two equal variants, two equal and one far behind, the default run's looks
//! at 3 and 5 repeats), so they fail if the correction is removed. [`run`] counts the outcomes
//! of many sessions in a [`Tally`]. A later check of `fsbench compare` on two adaptive
//! sessions can build on [`Scenario`], [`Rule`] and the session loop here.
//!
//! Invariants: deterministic for a seed (rand's `SmallRng`); per session it allocates only the
//! few small vectors of the row's tests (running sums, no stored values). Higher is better.

use super::best::{self, Answer, Levels};
use super::sequential::Plan;
use super::t_quantile;
use super::two_sample::{self, Sample, ALPHA};
use crate::metric::Direction;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// What is simulated: the true means (higher is better), their CoV and the looks.
#[derive(Clone, Copy, Debug)]
pub struct Scenario<'a> {
    /// True mean of each variant (positive).
    pub means: &'a [f64],
    /// Coefficient of variation of every variant's values (a fraction: 0.05 is 5 %).
    pub cov: f64,
    /// Repeats per variant at the first look.
    pub first_n: usize,
    /// Most rounds (the last at `first_n + rounds − 1` repeats per variant). The naive rule
    /// looks after every round, a corrected one at its plan's looks.
    pub rounds: usize,
    /// Equivalence margin, percent.
    pub margin_pct: f64,
}

/// The rule under test.
#[derive(Clone, Copy, Debug)]
pub enum Rule<'a> {
    /// [`best::compare_with_best`] at the levels of a sequential [`Plan`]; intervals at
    /// [`Plan::interval_confidence`].
    Corrected(&'a Plan),
    /// The corrected rule with the group-sequential correction removed: the same looks (the
    /// plan's) and the same procedure (all pairs, Holm within the row), but every look tests
    /// at the plan's whole α ([`Plan::alpha`], 0.05) instead of its spent increment;
    /// intervals at `1 − α`. What a change that dropped the spending would leave; the tests
    /// show it breaks the 5 % where the corrected rule keeps it.
    EveryLookAtAlpha(&'a Plan),
    /// The rule before issue 26: every look at α = 0.05; each variant against the sample-best,
    /// unadjusted (the same by TOST, else behind when the log-ratio test rejects); stop when
    /// every pair is decided, unadjusted. Intervals at 95 %.
    Naive,
}

/// Counts over the simulated sessions.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tally {
    /// Sessions simulated.
    pub sessions: usize,
    /// Sessions with a false "behind" or "best": a variant called behind that no variant is
    /// truly better than, or called best while another is truly better by more than the margin.
    pub false_order: usize,
    /// Sessions with a false "same": a variant called the same (or best) while the true best is
    /// better by the margin or more.
    pub false_same: usize,
    /// Sessions whose every answer is decided and true.
    pub correct: usize,
    /// Sessions whose row was decided when they stopped.
    pub decided: usize,
    /// Sum over sessions of the repeats per variant at the stop.
    pub repeats: usize,
    /// Sessions whose printed interval of variant 0's mean holds its true mean.
    pub mean_covered: usize,
    /// Sessions whose printed ratio interval of variant 0 over variant 1 holds the true ratio.
    pub ratio_covered: usize,
    /// Sessions whose plain 95 % interval of variant 0's mean holds its true mean.
    pub mean_covered_95: usize,
    /// Sessions (corrected rule) that end with a "within ±X %" bound
    /// ([`best::within_bounds`]) on some inconclusive variant against the sample-best.
    pub bounded: usize,
    /// Sessions with a false bound: some variant's true ratio to the sample-best's true mean
    /// outside the ±X % stated of it.
    pub false_bound: usize,
    /// Sessions whose bounds would be false if read off the plain 90 % interval (each pair's
    /// TOST at 0.05, no adjustment for the looks or the pairs): what the adjustment buys.
    pub false_bound_plain: usize,
}

impl Rule<'_> {
    /// The look (0-based) the rule makes at `n` repeats per variant, `None` between its looks.
    /// The naive rule looks after every round; its looks are all numbered 0.
    fn look_of(self, n: usize) -> Option<usize> {
        match self {
            Rule::Corrected(plan) | Rule::EveryLookAtAlpha(plan) => plan.look_of(n),
            Rule::Naive => Some(0),
        }
    }

    /// The levels of look `look`: the plan's increments (corrected) or α at every look.
    fn levels(self, look: usize) -> Levels {
        match self {
            Rule::Corrected(plan) => plan.levels(look),
            Rule::EveryLookAtAlpha(plan) => Levels::both(plan.alpha()),
            Rule::Naive => Levels::both(ALPHA),
        }
    }
}

impl Tally {
    /// `count / sessions`.
    pub fn rate(&self, count: usize) -> f64 {
        count as f64 / self.sessions.max(1) as f64
    }

    /// Mean repeats per variant at the stop.
    pub fn mean_repeats(&self) -> f64 {
        self.rate(self.repeats)
    }
}

impl std::fmt::Display for Tally {
    /// Every rate on one line, as the tests print them for doc/statistics.md.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "false behind/best {:.4}, false same {:.4}, correct {:.4}, decided {:.4}, repeats {:.2}, \
             printed interval covers the mean {:.4} and the ratio {:.4}, plain 95 % the mean {:.4}, \
             bounded {:.4}, false bound {:.4} (from the plain 90 % interval {:.4})",
            self.rate(self.false_order),
            self.rate(self.false_same),
            self.rate(self.correct),
            self.rate(self.decided),
            self.mean_repeats(),
            self.rate(self.mean_covered),
            self.rate(self.ratio_covered),
            self.rate(self.mean_covered_95),
            self.rate(self.bounded),
            self.rate(self.false_bound),
            self.rate(self.false_bound_plain)
        )
    }
}

/// Running sums of one variant's values.
#[derive(Clone, Copy, Default)]
struct Acc {
    n: usize,
    sum: f64,
    sum_sq: f64,
}

impl Acc {
    fn push(&mut self, x: f64) {
        self.n += 1;
        self.sum += x;
        self.sum_sq += x * x;
    }

    fn sample(&self) -> Option<Sample> {
        if self.n < 2 {
            return None;
        }
        let n = self.n as f64;
        let mean = self.sum / n;
        let var = ((self.sum_sq - n * mean * mean) / (n - 1.0)).max(0.0);
        Some(Sample {
            mean,
            sd: var.sqrt(),
            n: self.n,
        })
    }
}

/// A lognormal deviate with mean `mean` and coefficient of variation `cov` (Box–Muller).
fn lognormal(rng: &mut SmallRng, mean: f64, cov: f64) -> f64 {
    let s2 = (1.0 + cov * cov).ln();
    let u: f64 = rng.gen::<f64>().max(1e-300);
    let v: f64 = rng.gen();
    let z = (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
    mean * (z * s2.sqrt() - s2 / 2.0).exp()
}

/// Simulates `sessions` sessions of `scenario` under `rule` from `seed`.
pub fn run(seed: u64, sessions: usize, scenario: &Scenario, rule: Rule) -> Tally {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut tally = Tally {
        sessions,
        ..Tally::default()
    };
    let k = scenario.means.len();
    let mut acc = vec![Acc::default(); k];
    let mut samples: Vec<Option<Sample>> = vec![None; k];
    for _ in 0..sessions {
        acc.iter_mut().for_each(|a| *a = Acc::default());
        let mut draw = |i: usize, _: usize| lognormal(&mut rng, scenario.means[i], scenario.cov);
        let (answers, look) = session(&mut draw, scenario, rule, &mut acc, &mut samples);
        judge(&mut tally, scenario, &answers);
        tally.decided += usize::from(best::decided(&answers));
        tally.repeats += acc[0].n;
        cover(&mut tally, scenario, rule, &samples, look);
        bound(&mut tally, scenario, rule, &samples, &answers, look);
    }
    tally
}

/// One session of `scenario` under `rule` on given values (`values[i]`: variant i's values in
/// run order, at least `first_n + rounds − 1` of them): the answers at the stop and the repeats
/// per variant by then. The session loop of [`run`] on fixed data, so the runner's rule can be
/// checked against the simulated one.
pub fn session_on(values: &[Vec<f64>], scenario: &Scenario, rule: Rule) -> (Vec<Answer>, usize) {
    let k = scenario.means.len();
    let mut acc = vec![Acc::default(); k];
    let mut samples: Vec<Option<Sample>> = vec![None; k];
    let mut draw = |i: usize, n: usize| values[i][n];
    let (answers, _) = session(&mut draw, scenario, rule, &mut acc, &mut samples);
    (answers, acc[0].n)
}

/// One session: `draw(i, n)` is variant i's value number n (0-based). Returns the answers at
/// the stop and the plan's look it stopped at (0 for the naive rule); `samples` holds the final
/// samples. Rounds between the plan's looks only add repeats; after the last round the answers
/// of the last look stand.
fn session(
    draw: &mut dyn FnMut(usize, usize) -> f64,
    scenario: &Scenario,
    rule: Rule,
    acc: &mut [Acc],
    samples: &mut [Option<Sample>],
) -> (Vec<Answer>, usize) {
    let k = scenario.means.len();
    let mut last = (vec![Answer::Inconclusive; k], 0);
    for round in 0..scenario.rounds {
        let n = scenario.first_n + round;
        for (i, a) in acc.iter_mut().enumerate() {
            while a.n < n {
                a.push(draw(i, a.n));
            }
        }
        for (s, a) in samples.iter_mut().zip(acc.iter()) {
            *s = a.sample();
        }
        let Some(look) = rule.look_of(n) else {
            continue;
        };
        let (answers, done) = match rule {
            Rule::Corrected(_) | Rule::EveryLookAtAlpha(_) => {
                let levels = rule.levels(look);
                let answers = best::compare_with_best(samples, Direction::HigherIsBetter, scenario.margin_pct, levels);
                let done = best::decided(&answers);
                (answers, done)
            }
            Rule::Naive => naive(samples, scenario.margin_pct),
        };
        if done {
            return (answers, look);
        }
        last = (answers, look);
    }
    last
}

/// The rule before issue 26 (see [`Rule::Naive`]): answers against the sample-best and whether
/// every pair is decided, all unadjusted at α = 0.05.
fn naive(samples: &[Option<Sample>], margin_pct: f64) -> (Vec<Answer>, bool) {
    let testable = |a: Sample, b: Sample| -> (bool, bool) {
        let differ = two_sample::log_ratio_p(a, b).is_some_and(|p| p < ALPHA);
        let same = two_sample::tost_ratio(a, b, margin_pct).is_some_and(|t| t.p < ALPHA);
        (differ, same)
    };
    let all: Option<Vec<Sample>> = samples.iter().copied().collect();
    let Some(all) = all else {
        return (vec![Answer::Inconclusive; samples.len()], false);
    };
    let top = (0..all.len()).fold(0, |b, i| if all[i].mean > all[b].mean { i } else { b });
    let answers = (0..all.len())
        .map(|i| match testable(all[i], all[top]) {
            _ if i == top => Answer::Best,
            (_, true) => Answer::Same,
            (true, false) => Answer::Behind,
            _ => Answer::Inconclusive,
        })
        .collect();
    let done = (0..all.len()).all(|i| {
        (i + 1..all.len()).all(|j| {
            let (differ, same) = testable(all[i], all[j]);
            differ || same
        })
    });
    (answers, done)
}

/// Counts the session's false and correct answers against the true means.
fn judge(tally: &mut Tally, scenario: &Scenario, answers: &[Answer]) {
    let top = scenario.means.iter().copied().fold(f64::MIN, f64::max);
    let within = |mu: f64| mu / top > 1.0 - scenario.margin_pct / 100.0;
    let mut false_order = false;
    let mut false_same = false;
    let mut correct = true;
    for (&a, &mu) in answers.iter().zip(scenario.means) {
        let truly_best = mu >= top;
        false_order |= (a == Answer::Behind && truly_best) || (a == Answer::Best && !within(mu));
        false_same |= a == Answer::Same && !within(mu);
        correct &= match a {
            Answer::Best => within(mu),
            Answer::Same => within(mu),
            Answer::Behind => !truly_best,
            Answer::Inconclusive => false,
        };
    }
    tally.false_order += usize::from(false_order);
    tally.false_same += usize::from(false_same);
    tally.correct += usize::from(correct);
}

/// Counts the "within ±X %" bounds the report would state at the stop (the corrected rule only,
/// at the look the answers come from, against the sample-best) and whether they hold.
fn bound(
    tally: &mut Tally,
    scenario: &Scenario,
    rule: Rule,
    samples: &[Option<Sample>],
    answers: &[Answer],
    look: usize,
) {
    let Rule::Corrected(plan) = rule else { return };
    // The final samples are the look's only when the session ended at a look.
    if samples.first().copied().flatten().map(|s| s.n) != plan.repeats_at(look) {
        return;
    }
    let mean = |i: usize| samples[i].map_or(f64::MIN, |s| s.mean);
    let top = (0..samples.len()).fold(0, |b, i| if mean(i) > mean(b) { i } else { b });
    let false_at = |alpha: f64| {
        let bounds = best::within_bounds(samples, answers, top, alpha);
        let false_bound = bounds.iter().enumerate().any(|(i, x)| {
            x.is_some_and(|x| {
                let truth = scenario.means[i] / scenario.means[top];
                truth <= 1.0 - x / 100.0 || truth >= 1.0 + x / 100.0
            })
        });
        (bounds.iter().any(Option::is_some), false_bound)
    };
    let (bounded, false_bound) = false_at(best::bound_level(plan.equivalence_level(look), samples.len()));
    tally.bounded += usize::from(bounded);
    tally.false_bound += usize::from(false_bound);
    tally.false_bound_plain += usize::from(false_at(ALPHA).1);
}

/// Counts whether the intervals printed at the stop hold the true values.
fn cover(tally: &mut Tally, scenario: &Scenario, rule: Rule, samples: &[Option<Sample>], look: usize) {
    let level = match rule {
        Rule::Corrected(plan) => plan.interval_confidence(look),
        Rule::EveryLookAtAlpha(_) | Rule::Naive => 1.0 - rule.levels(look).difference,
    };
    let Some(a) = samples[0] else { return };
    let mu = scenario.means[0];
    let holds = |confidence: f64| {
        t_quantile(0.5 + confidence / 2.0, (a.n - 1) as f64)
            .is_some_and(|t| (a.mean - mu).abs() <= t * a.sd / (a.n as f64).sqrt())
    };
    tally.mean_covered += usize::from(holds(level));
    tally.mean_covered_95 += usize::from(holds(1.0 - ALPHA));
    if let (Some(b), Some(&mu_b)) = (samples.get(1).copied().flatten(), scenario.means.get(1)) {
        let truth = mu / mu_b;
        if let Some(ci) = two_sample::ratio_ci(a, b, level) {
            tally.ratio_covered += usize::from(ci.low <= truth && truth <= ci.high);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::verdict::Design;

    /// The seed every figure in doc/statistics.md comes from.
    const SEED: u64 = 26;
    /// Sessions per setting.
    const SESSIONS: usize = 2000;
    /// CoVs of the issue: 2, 5, 10 and 20 %.
    const COVS: [f64; 4] = [0.02, 0.05, 0.10, 0.20];
    /// Looks: n = 3, 4, …, 12.
    const LOOKS: usize = 10;

    fn scenario(means: &[f64], cov: f64) -> Scenario<'_> {
        Scenario {
            means,
            cov,
            first_n: 3,
            rounds: LOOKS,
            margin_pct: 3.0,
        }
    }

    fn plan() -> Plan {
        Plan::standard(3, 3 + LOOKS - 1).unwrap()
    }

    #[test]
    fn three_equal_variants_rarely_get_a_false_behind_with_the_correction() {
        let plan = plan();
        for (i, cov) in COVS.into_iter().enumerate() {
            let t = run(
                SEED + i as u64,
                SESSIONS,
                &scenario(&[1.0; 3], cov),
                Rule::Corrected(&plan),
            );
            eprintln!("corrected, 3 equal, CoV {cov}: {t}");
            assert!(t.rate(t.false_order) <= 0.05, "CoV {cov}: {t:?}");
            assert_eq!(t.false_same, 0, "equal variants are all within the margin");
            // Repeated confidence intervals: at least 1 − α however the stop was chosen (the
            // Monte Carlo error of 2000 sessions is about ±0.5 points).
            assert!(
                t.rate(t.mean_covered) >= 0.95 && t.rate(t.ratio_covered) >= 0.95,
                "{t:?}"
            );
        }
    }

    #[test]
    fn without_the_correction_equal_variants_get_too_many_false_behinds() {
        let plan = plan();
        let mut worst: f64 = 0.0;
        for (i, cov) in COVS.into_iter().enumerate() {
            let t = run(SEED + i as u64, SESSIONS, &scenario(&[1.0; 3], cov), Rule::Naive);
            eprintln!("naive, 3 equal, CoV {cov}: {t}");
            worst = worst.max(t.rate(t.false_order));
            // Not asserted: with three equal variants Holm's step-down over three pairs keeps
            // even every look at 0.05 near 5 %, so this scenario cannot tell the sequential
            // correction's removal (the two-variant scenarios below can). Printed for
            // doc/statistics.md.
            let every = run(
                SEED + i as u64,
                SESSIONS,
                &scenario(&[1.0; 3], cov),
                Rule::EveryLookAtAlpha(&plan),
            );
            eprintln!("every look at 0.05, 3 equal, CoV {cov}: {every}");
        }
        // The check can fail: the rule issue 26 replaced (each variant against the sample-best,
        // unadjusted) breaks the 5 % by a margin far above the Monte Carlo error (±0.5 points).
        assert!(worst > 0.07, "the uncorrected rule stays at {worst}");
    }

    /// Sessions per CoV and rule in the scenarios that guard the correction. The binomial
    /// standard error of a rate p is √(p(1 − p) / 4000): 0.32 points at 4.3 %, 0.34 at 5 %, 0.44
    /// at 8.5 %. The corrected rates (3.2–4.3 %) sit 2.2 or more standard errors under the 5 %
    /// they are held to (the union bound holds their true rates to 5 % at most); the rates
    /// every look at 0.05 must exceed 7 % with two equal variants at looks 3, 5, 8, 12
    /// (observed 8.5–12.5 %: 3.4 or more standard errors over).
    const GUARD_SESSIONS: usize = 4000;

    /// Sessions of `means` at the looks of `plan` (from `first_n` to `last_n` repeats per
    /// variant, one more per round), [`GUARD_SESSIONS`] per CoV with seed `seed + i` for CoV
    /// number i, under the three rules: corrected, every look at α, naive (the same data for
    /// each). Asserts the corrected rule's false "behind"/"best" rate is at most 5 % at every
    /// CoV; returns the false rates per CoV as [corrected, every look at α, naive].
    fn guard(label: &str, means: &[f64], plan: &Plan, seed: u64) -> Vec<[f64; 3]> {
        let first_n = plan.repeats_at(0).unwrap();
        let last_n = plan.repeats_at(plan.looks() - 1).unwrap();
        let mut rates = Vec::new();
        for (i, cov) in COVS.into_iter().enumerate() {
            let s = Scenario {
                first_n,
                rounds: last_n - first_n + 1,
                ..scenario(means, cov)
            };
            let run = |rule| run(seed + i as u64, GUARD_SESSIONS, &s, rule);
            let t = [
                run(Rule::Corrected(plan)),
                run(Rule::EveryLookAtAlpha(plan)),
                run(Rule::Naive),
            ];
            for (name, t) in ["corrected", "every look at 0.05", "naive"].iter().zip(&t) {
                eprintln!("{label}, CoV {cov}, {name}: {t}");
            }
            let corrected = &t[0];
            assert!(
                corrected.rate(corrected.false_order) <= 0.05,
                "{label}, CoV {cov}: the corrected rule's false behind/best rate is over 5 %: {corrected}"
            );
            rates.push(t.map(|t| t.rate(t.false_order)));
        }
        rates
    }

    #[test]
    fn two_equal_variants_break_the_five_percent_without_the_correction() {
        // One pair: Holm is no adjustment, and every look at 0.05 is four chances at a false
        // "behind" (the blind spot of three equal variants, where Holm's step-down over three
        // pairs keeps the uncorrected rule near 5 % by itself).
        let rates = guard("2 equal, looks 3, 5, 8, 12", &[1.0; 2], &plan(), SEED + 700);
        assert!(rates.iter().all(|r| r[1] > 0.07), "every look at 0.05: {rates:?}");
    }

    #[test]
    fn two_equal_and_one_far_behind_break_the_five_percent_without_the_correction() {
        // The far one (30 % behind) is beaten at once, so Holm spends the whole look's level on
        // the one pair left, that of the two equal variants: as with two variants.
        let means = [1.0, 1.0, 0.7];
        let rates = guard(
            "2 equal + 1 30 % behind, looks 3, 5, 8, 12",
            &means,
            &plan(),
            SEED + 800,
        );
        assert!(rates.iter().all(|r| r[1] > 0.07), "every look at 0.05: {rates:?}");
    }

    #[test]
    fn the_default_runs_looks_keep_the_five_percent_only_with_the_correction() {
        // A default run (the quick preset: 3 repeats, a 5-minute budget) fixes its last look at
        // 5 repeats from its timed rounds (doc/statistics.md, "The default run, ten times"):
        // looks at 3 and 5. Two looks inflate less than four: two equal variants get 5.5–7.2 %
        // without the correction (fewer at CoV 2 %, where "the same" often stops the session
        // first), so their mean over the CoVs (16 000 sessions, standard error 0.2 points) must
        // exceed 6 %. Two equal and one far behind, like the default run's three filesystems,
        // are held to 5 % corrected; every look at 0.05 gives them 3.8–7.1 % (at CoV 20 % five
        // repeats do not always show the far one beaten, and Holm then divides the level), too
        // close to 5 % to assert.
        let plan = Design::new(3, 5).plan().unwrap();
        assert_eq!(
            (plan.looks(), plan.repeats_at(0), plan.repeats_at(1)),
            (2, Some(3), Some(5))
        );
        let two = guard("2 equal, looks 3, 5", &[1.0; 2], &plan, SEED + 900);
        let mean = two.iter().map(|r| r[1]).sum::<f64>() / two.len() as f64;
        assert!(mean > 0.06, "every look at 0.05: {two:?}");
        guard(
            "2 equal + 1 30 % behind, looks 3, 5",
            &[1.0, 1.0, 0.7],
            &plan,
            SEED + 1000,
        );
    }

    #[test]
    fn at_a_fixed_n_all_pairs_with_holm_removes_the_selection_effect() {
        // One look at 12 repeats, α = 0.05: no sequential effect, only the choice of the best by
        // its sample mean. Against the sample-best unadjusted, about 11 % of rows of three equal
        // variants get a false "behind" (issue 26); all pairs with Holm keep it at 5 %.
        let plan = Plan::standard(12, 12).unwrap();
        let mut naive_worst: f64 = 0.0;
        for (i, cov) in COVS.into_iter().enumerate() {
            let s = Scenario {
                first_n: 12,
                rounds: 1,
                ..scenario(&[1.0; 3], cov)
            };
            let t = run(SEED + 600 + i as u64, SESSIONS, &s, Rule::Corrected(&plan));
            let naive = run(SEED + 600 + i as u64, SESSIONS, &s, Rule::Naive);
            eprintln!("fixed n = 12, 3 equal, CoV {cov}: Holm: {t}; against the sample-best: {naive}");
            // Holm's bound is α when each pair's test has its level; the log-ratio test on
            // skewed lognormal values at n = 12 may be a little liberal, so allow the Monte Carlo
            // error (2 standard errors: 1 point) above 5 %.
            assert!(t.rate(t.false_order) <= 0.06, "{t:?}");
            naive_worst = naive_worst.max(naive.rate(naive.false_order));
        }
        assert!(naive_worst > 0.1, "{naive_worst}");
    }

    #[test]
    fn a_true_ten_percent_difference_is_found_and_never_reversed() {
        let plan = plan();
        let mut power = Vec::new();
        for (i, cov) in COVS.into_iter().enumerate() {
            let s = scenario(&[1.0, 1.1], cov);
            let t = run(SEED + 100 + i as u64, SESSIONS, &s, Rule::Corrected(&plan));
            let naive = run(SEED + 100 + i as u64, SESSIONS, &s, Rule::Naive);
            eprintln!("corrected, 10 % apart, CoV {cov}: {t}");
            eprintln!("naive, 10 % apart, CoV {cov}: {naive}");
            assert!(t.rate(t.false_order) <= 0.05 && t.rate(t.false_same) <= 0.05, "{t:?}");
            assert!(
                t.rate(t.mean_covered) >= 0.95 && t.rate(t.ratio_covered) >= 0.95,
                "{t:?}"
            );
            power.push(t.rate(t.correct));
        }
        // At CoV 2 % and 5 % a 10 % gap is (nearly) always found within 12 repeats; power falls
        // with noise.
        assert!(power[0] > 0.99 && power[1] > 0.9, "{power:?}");
        assert!(power.windows(2).all(|w| w[0] >= w[1]), "{power:?}");
    }

    #[test]
    fn at_the_edge_of_the_margin_same_is_rarely_claimed() {
        // A 3.5 % gap, just outside the 3 % margin: the worst case for a false "the same".
        let plan = plan();
        for (i, cov) in COVS.into_iter().enumerate() {
            let t = run(
                SEED + 400 + i as u64,
                SESSIONS,
                &scenario(&[1.0, 1.035], cov),
                Rule::Corrected(&plan),
            );
            eprintln!("corrected, 3.5 % apart, CoV {cov}: {t}");
            assert!(t.rate(t.false_same) <= 0.05 && t.rate(t.false_order) <= 0.05, "{t:?}");
        }
    }

    #[test]
    fn a_within_bound_read_off_the_data_keeps_the_equivalence_error_rate() {
        // Rows the rule leaves inconclusive: gaps near and beyond the margin at CoV 5–20 %. The
        // bound stated of each inconclusive variant is false (its true ratio to the sample-best
        // outside ±X %) at most as often as a false "the same": 5 % per row, over all looks
        // (doc/statistics.md). Read off the plain 90 % interval instead (each pair's TOST at
        // 0.05, as if the look and the other pairs cost nothing) the bounds are false more often
        // than 5 % in some of these rows, so the check can fail. Printed for doc/statistics.md
        // with the share of rows bounded.
        let plan = plan();
        let mut plain_worst: f64 = 0.0;
        for (j, means) in [&[1.0, 1.04][..], &[1.0, 1.0, 1.06], &[1.0, 1.03, 1.1]]
            .into_iter()
            .enumerate()
        {
            for (i, cov) in COVS.into_iter().enumerate().skip(1) {
                let t = run(
                    SEED + 1100 + 10 * j as u64 + i as u64,
                    SESSIONS,
                    &scenario(means, cov),
                    Rule::Corrected(&plan),
                );
                eprintln!("corrected, means {means:?}, CoV {cov}: {t}");
                assert!(t.bounded > 0, "{t}");
                assert!(t.rate(t.false_bound) <= 0.05, "{means:?}, CoV {cov}: {t}");
                plain_worst = plain_worst.max(t.rate(t.false_bound_plain));
            }
        }
        assert!(plain_worst > 0.06, "the plain interval's bounds: {plain_worst}");
    }

    #[test]
    fn plain_95_percent_intervals_after_the_stop_cover_as_at_a_fixed_n() {
        // The printed 95 % interval of a cell after the adaptive stop, against the same interval
        // at a fixed 12 repeats (lognormal values under-cover a little at any fixed n): the rule
        // stops on differences between variants, not on one cell's spread, so it costs the
        // plain interval at most a point and a half (Monte Carlo error ±0.7 points on a difference).
        let plan = plan();
        for (i, cov) in COVS.into_iter().enumerate() {
            for means in [&[1.0; 3][..], &[1.0, 1.1][..]] {
                let seed = SEED + 500 + i as u64;
                let adaptive = run(seed, SESSIONS, &scenario(means, cov), Rule::Corrected(&plan));
                let fixed = Scenario {
                    first_n: 12,
                    rounds: 1,
                    ..scenario(means, cov)
                };
                let fixed = run(seed, SESSIONS, &fixed, Rule::Naive);
                let (a, f) = (
                    adaptive.rate(adaptive.mean_covered_95),
                    fixed.rate(fixed.mean_covered_95),
                );
                eprintln!(
                    "plain 95 % interval, {} variants, CoV {cov}: after the stop {a:.4}, fixed n = 12 {f:.4}",
                    means.len()
                );
                assert!(
                    a >= f - 0.015,
                    "CoV {cov}, {means:?}: {a} after the stop, {f} at fixed n"
                );
            }
        }
    }

    #[test]
    fn the_standard_design_has_the_most_power_of_six() {
        use super::super::sequential::{schedule, Spending};
        // Looks after every round or at the standard schedule (3, 5, 8, 12), each with the three
        // spending shapes; 1000 sessions per cell, the same seeds for every design (common random
        // numbers, so the differences are measured more precisely than each rate). The comparison
        // behind Plan::standard's choice, quoted in doc/statistics.md.
        let every: Vec<usize> = (3..3 + LOOKS).collect();
        let sparse = schedule(3, 3 + LOOKS - 1);
        let ten_apart = |i: usize, plan: &Plan| {
            run(
                SEED + 200 + i as u64,
                1000,
                &scenario(&[1.0, 1.1], COVS[i]),
                Rule::Corrected(plan),
            )
        };
        let mut designs = Vec::new();
        for ns in [&sparse, &every] {
            for shape in [Spending::OBrienFleming, Spending::Pocock, Spending::Equal] {
                let plan = Plan::at(ns, 0.05, shape, shape).unwrap();
                let mut power = Vec::new();
                for (i, cov) in COVS.into_iter().enumerate() {
                    let two = ten_apart(i, &plan);
                    let three = run(
                        SEED + 300 + i as u64,
                        1000,
                        &scenario(&[1.0; 3], cov),
                        Rule::Corrected(&plan),
                    );
                    eprintln!("looks {ns:?}, {shape:?}, CoV {cov}: 10 % apart: {two}; 3 equal: {three}");
                    assert!(three.rate(three.false_order) <= 0.05 && two.rate(two.false_order) <= 0.05);
                    power.push(two.rate(two.correct));
                }
                designs.push(power);
            }
        }
        // CoV 2 %: every design finds the gap; from 5 % on the standard one finds it most often.
        let standard = &designs[0];
        for other in &designs[1..] {
            let more = standard[1..].iter().zip(&other[1..]).all(|(s, o)| s > o);
            assert!(more, "{standard:?} vs {other:?}");
        }
        // The reference that cannot stop early: one look at 12 repeats, at α = 0.05. The
        // standard design gives up less than 10 points of power for its early stops.
        let single = Plan::at(&[3 + LOOKS - 1], 0.05, Spending::Equal, Spending::Equal).unwrap();
        for (i, cov) in COVS.into_iter().enumerate() {
            let two = ten_apart(i, &single);
            eprintln!("one look at 12, CoV {cov}: 10 % apart: {two}");
            assert!(standard[i] > two.rate(two.correct) - 0.1, "{standard:?} vs {two}");
        }
    }

    #[test]
    fn the_simulator_is_deterministic_and_counts_a_fixed_n_session_right() {
        let plan = plan();
        let s = scenario(&[1.0, 1.0, 1.0], 0.05);
        assert_eq!(
            run(1, 50, &s, Rule::Corrected(&plan)),
            run(1, 50, &s, Rule::Corrected(&plan))
        );
        // One look at n = 3 with no noise to speak of: all the same, decided, 3 repeats.
        let one = Scenario {
            rounds: 1,
            cov: 1e-6,
            ..s
        };
        let t = run(2, 20, &one, Rule::Corrected(&plan));
        assert_eq!((t.decided, t.correct, t.repeats, t.false_order), (20, 20, 60, 0));
    }
}
