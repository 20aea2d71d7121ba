//! The stopping rule's decision between rounds (`--precision`, `--budget`, a suite's
//! `[run.adaptive]`): given each headline row's values so far, stop (precise, decided, at the
//! cap or the budget) or run one more round. The data and its precision check are
//! [`super::verdict`]; the runner (fsbench-run's `adaptive`) builds the rows from the store.
//!
//! Invariant: pure; the same rows, repeats and times give the same decision.

use crate::metric::Direction;
use crate::stats::best;
use crate::stats::two_sample::{Sample, Verdict};
use crate::stats::verdict::{look_answers, pair_verdict, StoppingRule};
use std::time::Duration;

/// Most measured repeats per case the rule runs (the first reason to stop without a budget).
pub const MAX_REPEATS: u32 = 30;

/// Why the rule stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Every headline CI is within the precision target.
    Precise,
    /// Every headline comparison is decided.
    Decided,
    /// One more round would end after the budget.
    Budget,
    /// [`MAX_REPEATS`] reached.
    Cap,
}

impl Stop {
    /// What the run prints when it stops.
    pub fn describe(self) -> &'static str {
        match self {
            Stop::Precise => "every headline interval reached the precision target",
            Stop::Decided => "every headline comparison is decided (better, worse or the same)",
            Stop::Budget => "one more round would overrun the budget",
            Stop::Cap => "its last planned look (at most 30 measured repeats; with a budget, the last round it holds)",
        }
    }
}

/// The rule's answer between rounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run one more round.
    Continue,
    /// Stop, for this reason.
    Stop(Stop),
}

/// One headline row: a (workload, phase, metric) with each variant's measured values.
#[derive(Clone, Debug, PartialEq)]
pub struct HeadlineRow {
    /// `workload / phase / metric`.
    pub name: String,
    /// Which way is better.
    pub direction: Direction,
    /// Per variant (column order), its values in run order.
    pub cells: Vec<(String, Vec<f64>)>,
}

/// The decision between rounds.
impl StoppingRule {
    /// Whether every pair of variants of `row` is decided at the rule's margin (a row of one
    /// variant is).
    pub fn decided(&self, row: &HeadlineRow) -> bool {
        let samples: Vec<Option<Sample>> = row.cells.iter().map(|(_, v)| Sample::of(v)).collect();
        for i in 0..samples.len() {
            for j in i + 1..samples.len() {
                let (Some(a), Some(b)) = (samples[i], samples[j]) else {
                    return false;
                };
                if pair_verdict(a, b, row.direction, self.margin_pct) == Verdict::Inconclusive {
                    return false;
                }
            }
        }
        true
    }

    /// Whether every row of `compared` is decided: with a plan, by [`look_answers`] at the
    /// row's own look ([`crate::stats::sequential::Plan::row_look`]: the last planned look its
    /// cells' values reached, as the report shows it), so answers change only when a look is
    /// reached and a failed repeat (no value) never advances one; without a plan by
    /// [`Self::decided`].
    fn all_decided(&self, compared: &[&HeadlineRow]) -> bool {
        if compared.is_empty() || self.pending {
            return false;
        }
        let Some(plan) = &self.plan else {
            return compared.iter().all(|r| self.decided(r));
        };
        compared.iter().all(|r| {
            let cells: Vec<&[f64]> = r.cells.iter().map(|(_, v)| v.as_slice()).collect();
            plan.row_look(&cells)
                .is_some_and(|look| best::decided(&look_answers(&cells, r.direction, plan, look, self.margin_pct)))
        })
    }

    /// The most measured repeats the rule runs: its plan's last look, else [`MAX_REPEATS`].
    pub fn cap(&self) -> u32 {
        let planned = self.plan.as_ref().and_then(|p| p.repeats_at(p.looks() - 1));
        planned.map_or(MAX_REPEATS, |n| n as u32).max(self.min_repeats)
    }

    /// Whether to run another round, given the headline rows so far (the values of the
    /// successful measured repeats: they set each row's look), the measured repeats per case
    /// run so far, failed ones included (they count toward the cap only, so a case that always
    /// fails cannot keep the run going), the session's elapsed time and the estimate of one
    /// more round.
    pub fn decide(&self, rows: &[HeadlineRow], repeats_done: u32, elapsed: Duration, next_round: Duration) -> Decision {
        if self.precision_pct.is_some() && rows.iter().all(|r| r.cells.iter().all(|(_, v)| self.precise(v))) {
            return Decision::Stop(Stop::Precise);
        }
        let compared: Vec<&HeadlineRow> = rows.iter().filter(|r| r.cells.len() >= 2).collect();
        if self.all_decided(&compared) {
            return Decision::Stop(Stop::Decided);
        }
        if repeats_done >= self.cap() {
            return Decision::Stop(Stop::Cap);
        }
        if let Some(b) = self.budget {
            if elapsed + next_round > b {
                return Decision::Stop(Stop::Budget);
            }
        }
        Decision::Continue
    }
}
