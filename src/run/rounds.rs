//! [`RoundQueue`]: the slots a run still has to do, in order, and the adaptive rounds
//! (issue 18) it adds when they are done and the stopping rule says go on.
//!
//! Invariants:
//! - The queue is the one place slots are created after the plan (each new round: one
//!   measured slot per available case, numbered on from the plan's slots) and the one place the
//!   next round's repeat number is derived (one past the highest stored repeat).
//! - A round is added only when every slot planned so far is done, and only with a stopping
//!   rule ([`crate::stats::verdict::StoppingRule`]); without one the queue ends with the plan.

use super::{adaptive, Observer, RunError};
use crate::config::Suite;
use crate::plan::{Plan, Slot};
use crate::store::ResultStore;
use std::collections::VecDeque;
use std::time::Instant;

/// The slots left to run, and the rounds added so far.
pub(super) struct RoundQueue {
    todo: VecDeque<(usize, Slot)>,
    /// Index the next created slot gets (after the plan's).
    next_index: usize,
    /// How many slots this run announces in all (grows with each round).
    pub of: usize,
    /// ` (round N, S of B s budget)` for the repeats of an added round; empty before.
    pub round_note: String,
    rule: Option<crate::stats::verdict::StoppingRule>,
    started: Instant,
    /// Warm-up and measured repeats per case as planned.
    pub per_case: u32,
    warmup: u32,
}

impl RoundQueue {
    /// The plan's slots that `skip` does not rule out (a resumed session's stored repeats).
    pub fn new(plan: &Plan, suite: &Suite, skip: &dyn Fn(&Slot) -> bool) -> RoundQueue {
        let todo: VecDeque<(usize, Slot)> = plan
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| !skip(s))
            .map(|(i, s)| (i, *s))
            .collect();
        let policy = &suite.policy;
        RoundQueue {
            of: todo.len(),
            todo,
            next_index: plan.slots.len(),
            round_note: String::new(),
            rule: crate::stats::verdict::StoppingRule::of(policy),
            started: Instant::now(),
            per_case: policy.warmup + policy.repeats,
            warmup: policy.warmup,
        }
    }

    /// Slots left before any round is added.
    pub fn len(&self) -> usize {
        self.todo.len()
    }

    /// The next slot to run: the next queued one, or, when all are done, the first of a new
    /// round if the stopping rule says go on (its reason to stop is told to `obs`). `None`:
    /// the session is done.
    pub fn next(
        &mut self,
        plan: &Plan,
        store: &dyn ResultStore,
        session: i64,
        obs: &dyn Observer,
    ) -> Result<Option<(usize, Slot)>, RunError> {
        if self.todo.is_empty() && !self.add_round(plan, store, session, obs)? {
            return Ok(None);
        }
        Ok(self.todo.pop_front())
    }

    /// Consults the stopping rule on what is stored; adds one measured slot per available case
    /// when it says continue. `false` when no round is added.
    fn add_round(
        &mut self,
        plan: &Plan,
        store: &dyn ResultStore,
        session: i64,
        obs: &dyn Observer,
    ) -> Result<bool, RunError> {
        let Some(rule) = &self.rule else { return Ok(false) };
        let data = store.load_session(session)?;
        let done = adaptive::repeats_done(&data);
        let estimate = adaptive::round_estimate(&data);
        match rule.decide(&adaptive::headline_rows(&data), done, self.started.elapsed(), estimate) {
            adaptive::Decision::Continue => {}
            adaptive::Decision::Stop(why) => {
                obs.warning(&format!(
                    "stopping rule: stopped after {done} measured repeats per case: {}",
                    why.describe()
                ));
                return Ok(false);
            }
        }
        let repeat = data
            .samples
            .iter()
            .map(|s| s.sample.repeat + 1)
            .max()
            .unwrap_or(self.per_case);
        for case in (0..plan.cases.len()).filter(|&c| plan.cases[c].unavailable.is_none()) {
            let slot = Slot {
                case,
                repeat,
                warmup: false,
            };
            self.todo.push_back((self.next_index, slot));
            self.next_index += 1;
        }
        self.of += self.todo.len();
        let budget = rule.budget.map(|b| {
            format!(
                ", {:.0} of {:.0} s budget",
                self.started.elapsed().as_secs_f64(),
                b.as_secs_f64()
            )
        });
        self.round_note = format!(" (round {}{})", repeat + 1 - self.warmup, budget.unwrap_or_default());
        Ok(!self.todo.is_empty())
    }
}
