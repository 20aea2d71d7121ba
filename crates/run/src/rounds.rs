//! [`RoundQueue`]: the slots a run still has to do, in order, and the adaptive rounds
//! (issue 18) it adds when they are done and the stopping rule says go on.
//!
//! Invariants:
//! - The queue is the one place slots are created after the plan (each new round: one
//!   measured slot per available case, numbered on from the plan's slots) and the one place the
//!   next round's repeat number is derived (one past the highest stored repeat).
//! - A round is added only when every slot planned so far is done, and only with a stopping
//!   rule ([`crate::stats::verdict::StoppingRule`]); without one the queue ends with the plan. The rule
//!   decides by the session's stored sequential design when it has one (run options
//!   `sequential`), so runner and report rebuild the same plan.
//! - Every round of an `interleaved` session with a seed runs its cases in
//!   [`crate::plan::round_order`]`(seed, repeat)`: the plan's rounds by
//!   [`crate::plan::run_order`], the added ones here. Slots keep their indices (other ranks
//!   look slots up by index); only the order they are queued in changes.
//! - A caller's own rule ([`MoreRounds`], `fsbench verify`'s "more pairs where a paired
//!   interval is undecided") adds rounds of some cases only, after the plan and only when the
//!   suite has no stopping rule; an `alternating` session runs such a round's cases in plan
//!   order in even repeats and reversed in odd ones, as the plan does.

use super::{adaptive, Observer, RunError, RunOptions};
use crate::config::{Order, Suite};
use crate::plan::{Plan, Slot};
use crate::store::ResultStore;
use crate::store::SessionData;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A caller's rule for rounds of some cases after the plan (the suite's stopping rule adds
/// rounds of every case; this one chooses).
pub trait MoreRounds: Send + Sync {
    /// Given what is stored and the time since the run began: the plan's case indices to run
    /// once more, in plan order, and a line saying why (told to the observer as the round
    /// begins); `None` or no cases: the session is done, with the line saying why when there
    /// is one.
    fn next_round(&self, plan: &Plan, data: &SessionData, elapsed: Duration) -> (Vec<usize>, Option<String>);
}

/// The slots left to run, and the rounds added so far.
pub(super) struct RoundQueue {
    /// The slots still to run, with their plan indices, in running order.
    pub(super) todo: VecDeque<(usize, Slot)>,
    /// Index the next created slot gets (after the plan's).
    next_index: usize,
    /// How many slots this run announces in all (grows with each round).
    pub of: usize,
    /// ` (round N, S of B s budget)` for the repeats of an added round; empty before.
    pub round_note: String,
    /// The suite's stopping rule, with the session's design and equivalence margin.
    pub(super) rule: Option<crate::stats::verdict::StoppingRule>,
    started: Instant,
    /// Warm-up and measured repeats per case as planned.
    pub per_case: u32,
    warmup: u32,
    /// Seed of the added rounds' order (`interleaved` sessions with a seed only).
    seed: Option<u64>,
    /// The session's run options, stored again when a pending design is fixed.
    options: RunOptions,
    /// The last planned look once a budget fixed it: `of` and `per_case` already count its
    /// rounds (the progress shows rounds against the budget, not a total that grows).
    last_look: Option<u32>,
    /// The caller's rule for more rounds of some cases, when the suite has no stopping rule.
    more: Option<Arc<dyn MoreRounds>>,
    /// The suite's order (an added round of some cases keeps `alternating`'s turns).
    order: Order,
}

impl RoundQueue {
    /// The plan's slots that `skip` does not rule out (a resumed session's stored repeats);
    /// the stopping rule of `suite`'s policy with the design and seed of `options`.
    pub fn new(plan: &Plan, suite: &Suite, options: &RunOptions, skip: &dyn Fn(&Slot) -> bool) -> RoundQueue {
        let policy = &suite.policy;
        // The seeded order of every round, then what a resumed session still has to run (so a
        // resumed round keeps its order).
        let todo: VecDeque<(usize, Slot)> = crate::plan::run_order(plan, policy.order, options.seed)
            .into_iter()
            .map(|i| (i, plan.slots[i]))
            .filter(|(_, s)| !skip(s))
            .collect();
        RoundQueue {
            of: todo.len(),
            todo,
            next_index: plan.slots.len(),
            round_note: String::new(),
            rule: crate::stats::verdict::StoppingRule::of(policy).map(|r| {
                let r = r.with_margin(options.margin_pct(suite));
                match options.sequential {
                    Some(design) => r.with_design(design),
                    None => r,
                }
            }),
            started: Instant::now(),
            per_case: policy.warmup + policy.repeats,
            warmup: policy.warmup,
            seed: options.seed.filter(|_| policy.order == Order::Interleaved),
            options: options.clone(),
            last_look: None,
            more: None,
            order: policy.order,
        }
    }

    /// Adds the caller's rule for rounds of some cases after the plan (used only when the suite
    /// has no stopping rule).
    pub fn with_more(mut self, more: Option<Arc<dyn MoreRounds>>) -> RoundQueue {
        self.more = more;
        self
    }

    /// Keeps the sizes the warm-ups set in the options this queue stores again when it fixes a
    /// pending design (so that store does not drop them).
    pub fn set_resized(&mut self, resized: &[crate::sizing::ResizedWorkload]) {
        self.options.resized = resized.to_vec();
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
        if self.rule.is_none() {
            return self.add_chosen_round(plan, store, session, obs);
        }
        let data = store.load_session(session)?;
        let done = adaptive::repeats_done(&data);
        let estimate = adaptive::round_estimate(&data);
        self.fix_design(plan, done, estimate, store, session)?;
        let Some(rule) = &self.rule else { return Ok(false) };
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
        let repeat = self.next_repeat(&data);
        let mut cases: Vec<usize> = (0..plan.cases.len())
            .filter(|&c| plan.cases[c].unavailable.is_none())
            .collect();
        if let Some(seed) = self.seed {
            let order = crate::plan::round_order(seed, repeat, cases.len());
            cases = order.into_iter().map(|i| cases[i]).collect();
        }
        for case in cases {
            let slot = Slot {
                case,
                repeat,
                warmup: false,
            };
            self.todo.push_back((self.next_index, slot));
            self.next_index += 1;
        }
        if self.last_look.is_none() {
            self.of += self.todo.len();
        }
        let budget = rule.budget.map(|b| {
            format!(
                ", {:.0} of {:.0} s budget",
                self.started.elapsed().as_secs_f64(),
                b.as_secs_f64()
            )
        });
        let of = self.last_look.map(|n| format!(" of at most {n}")).unwrap_or_default();
        self.round_note = format!(
            " (round {}{of}{})",
            repeat + 1 - self.warmup,
            budget.unwrap_or_default()
        );
        Ok(!self.todo.is_empty())
    }

    /// The repeat number of a new round: one past the highest stored (the plan's count when
    /// none is stored).
    fn next_repeat(&self, data: &SessionData) -> u32 {
        data.samples
            .iter()
            .map(|s| s.sample.repeat + 1)
            .max()
            .unwrap_or(self.per_case)
    }

    /// A round of the cases the caller's [`MoreRounds`] chooses; `false` when it chooses none
    /// (or there is no such rule).
    fn add_chosen_round(
        &mut self,
        plan: &Plan,
        store: &dyn ResultStore,
        session: i64,
        obs: &dyn Observer,
    ) -> Result<bool, RunError> {
        let Some(more) = self.more.clone() else {
            return Ok(false);
        };
        let data = store.load_session(session)?;
        let (mut cases, why) = more.next_round(plan, &data, self.started.elapsed());
        if let Some(why) = why {
            obs.warning(&why);
        }
        let repeat = self.next_repeat(&data);
        if self.order == Order::Alternating && repeat % 2 == 1 {
            cases.reverse();
        }
        for case in cases {
            self.todo.push_back((
                self.next_index,
                Slot {
                    case,
                    repeat,
                    warmup: false,
                },
            ));
            self.next_index += 1;
        }
        self.of += self.todo.len();
        self.round_note = format!(" (extra round {})", repeat + 1 - self.warmup);
        Ok(!self.todo.is_empty())
    }

    /// Before the first look of a budgeted session: fixes its pending design's last look from
    /// the rounds timed so far ([`crate::stats::verdict::Design::fixed_by_budget`]) and stores it with the session's
    /// run options, so the report rebuilds the plan the rule decides by.
    fn fix_design(
        &mut self,
        plan: &Plan,
        done: u32,
        round: std::time::Duration,
        store: &dyn ResultStore,
        session: i64,
    ) -> Result<(), RunError> {
        let (Some(rule), Some(design)) = (&mut self.rule, &mut self.options.sequential) else {
            return Ok(());
        };
        if !design.pending {
            return Ok(());
        }
        let left = rule.budget.unwrap_or_default().saturating_sub(self.started.elapsed());
        *design = design.fixed_by_budget(done, left, round);
        *rule = rule.clone().with_design(*design);
        let last = design.last_n;
        store.update_run_options(session, &self.options.to_json())?;
        // Announce the planned rounds: the progress counts to the last look.
        let cases = plan.cases.iter().filter(|c| c.unavailable.is_none()).count();
        self.of += last.saturating_sub(done) as usize * cases;
        self.per_case = self.warmup + last;
        self.last_look = Some(last);
        Ok(())
    }
}
