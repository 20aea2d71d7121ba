//! Sizes set by time (issue 41, item 3): after the warm-ups, a workload with a phase under the
//! minimum time fsbench warns about is given more work for its measured repeats
//! ([`crate::engine::Workload::resized`]), the same for every variant.
//!
//! Invariants:
//! - A workload is resized at most once per session, between its warm-ups and its first
//!   measured repeat, and only from warm-ups this process ran: every available case of the
//!   workload must have completed all its warm-ups here (a resumed session runs the sizes it
//!   stored, or the suite's when it stored none). The walls given are each phase's shortest
//!   over all those warm-ups, so the fastest variant decides.
//! - Sizing is off with `--fixed-sizes`, without warm-ups, in `sequential` order (a variant's
//!   measured repeats would run before another's warm-up) and with many ranks (the followers
//!   run the plan as planned).
//! - What is decided is stored before the first measured repeat runs: the resized specs in the
//!   session's run options ([`RunOptions::resized`]) and in its case records (same case ids).
//!
//! References: bonnie++ prints `+++++` for a test under 0.5 s and asks for a bigger `-s`/`-n`;
//! fio and sysbench size by time (`runtime`, `--time`); this does the raising for the user.

use super::RunOptions;
use crate::config::{Order, Suite};
use crate::engine::WorkloadKind;
use crate::plan::{Case, Plan};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::time::Duration;

/// One workload the runner gave more work after the warm-ups.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResizedWorkload {
    /// The workload's name in the suite.
    pub workload: String,
    /// The spec its measured repeats ran.
    pub kind: WorkloadKind,
    /// What changed and why, one line each (`"files 40960 → 102400 (seq_create took …)"`).
    pub changes: Vec<String>,
}

impl ResizedWorkload {
    /// `"bonnie: files 40960 → 102400 (…); seeks …"`.
    pub fn line(&self) -> String {
        format!("{}: {}", self.workload, self.changes.join("; "))
    }
}

/// The warm-ups seen so far, and whether sizing is still to be decided.
pub(super) struct Sizing {
    /// Still to decide (false once decided, or when sizing is off).
    pending: bool,
    /// Per workload: each phase's shortest warm-up wall so far, in phase order.
    walls: HashMap<String, Vec<(String, Duration)>>,
    /// Per workload: warm-ups completed here.
    warmed: HashMap<String, u32>,
    /// Warm-ups per case.
    warmups: u32,
}

impl Sizing {
    /// Pending unless sizing is off for this run (see the module's invariants) or the session
    /// already has its sizes.
    pub fn new(suite: &Suite, options: &RunOptions, ranks: usize) -> Sizing {
        let p = &suite.policy;
        Sizing {
            pending: !options.fixed_sizes
                && options.resized.is_empty()
                && p.warmup > 0
                && p.order != Order::Sequential
                && ranks == 1,
            walls: HashMap::new(),
            warmed: HashMap::new(),
            warmups: p.warmup,
        }
    }

    /// Whether the sizes are still to be decided.
    pub fn pending(&self) -> bool {
        self.pending
    }

    /// A warm-up of `case` completed with these phase walls (a failed one counts nothing).
    pub fn warmed(&mut self, case: &Case, walls: &[(String, Duration)]) {
        if !self.pending || walls.is_empty() {
            return;
        }
        *self.warmed.entry(case.workload.name.clone()).or_default() += 1;
        let seen = self.walls.entry(case.workload.name.clone()).or_default();
        for (phase, wall) in walls {
            match seen.iter_mut().find(|(p, _)| p == phase) {
                Some((_, w)) => *w = (*w).min(*wall),
                None => seen.push((phase.clone(), *wall)),
            }
        }
    }

    /// Decides once: every workload whose available cases all completed their warm-ups here
    /// and whose spec has a short phase to raise, with its new spec. Sizing is then done.
    pub fn decide(&mut self, plan: &Plan) -> Vec<ResizedWorkload> {
        if !std::mem::take(&mut self.pending) {
            return Vec::new();
        }
        let mut out: Vec<ResizedWorkload> = Vec::new();
        for case in plan.cases.iter().filter(|c| c.unavailable.is_none()) {
            let name = &case.workload.name;
            if out.iter().any(|r| &r.workload == name) {
                continue;
            }
            let cases = plan
                .cases
                .iter()
                .filter(|c| c.unavailable.is_none() && &c.workload.name == name)
                .count() as u32;
            if self.warmed.get(name).copied().unwrap_or(0) < cases * self.warmups {
                continue;
            }
            let Some(walls) = self.walls.get(name) else {
                continue;
            };
            if let Some(r) = case.workload.kind.workload().resized(walls) {
                out.push(ResizedWorkload {
                    workload: name.clone(),
                    kind: r.kind,
                    changes: r.changes,
                });
            }
        }
        out
    }
}
