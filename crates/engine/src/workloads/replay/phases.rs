//! The phases of a replay (`phases = "none" | "process" | "marks"`, doc/replay.md): each call
//! of the trace gets a phase name, and the compiled order ([`super::plan`]) is cut into
//! pieces, maximal runs of consecutive calls with one name. The replay runs the pieces one
//! after the other, each its own timed region ([`crate::phase::Phases::piece`]); a phase's
//! rows are the sum of its pieces.
//!
//! Names: `none`, every call `replay` (one piece, today's rows); `process`, the program the
//! call's process ran ([`crate::trace::Call::program`]: `make`, `cc1`, `as`, `sqlite3`; the
//! traced command's program for a process that never exec'd under the tracer); `marks`, the
//! last time mark ([`crate::trace::Mark`]) at or before the call's place in the order, and
//! `start` before the first.
//!
//! Invariants: a call's place in the order is its order key (completion time, adjusted by
//! what overlapping lookups found), which never decreases along one thread, and every
//! cross-thread dependency points to an earlier place; so one thread's ops in a piece are one
//! contiguous range, and no op waits for an op of a later piece: running the pieces in order
//! cannot deadlock. Cutting the order at a piece's end waits for every thread's calls before
//! it, which the recording did not (two processes of different programs running at once are
//! serialised at each change of name); the notes say how many pieces a replay was cut into.

use super::plan::{self, Plan};
use crate::trace::Trace;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// How a replay's rows are split into phases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseBy {
    /// One phase, `replay`.
    #[default]
    None,
    /// One phase per program run ([`crate::trace::Call::program`]).
    Process,
    /// One phase per time mark the program made (`fsbench record --mark-on DIR`).
    Marks,
}

/// The phase before the first time mark.
pub const START: &str = "start";

/// A run of consecutive calls of the order with one phase name.
#[derive(Clone, Debug, PartialEq)]
pub struct Piece {
    /// Index into [`Split::names`].
    pub phase: usize,
    /// Per replay thread, the ops of [`Plan::threads`] in this piece (empty for most).
    pub ranges: Vec<std::ops::Range<usize>>,
    /// The recorded time from the piece's first call's start to its last call's end, s.
    pub recorded_s: f64,
}

/// The phases of a plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Split {
    /// Phase names, in order of first appearance.
    pub names: Vec<String>,
    /// The pieces, in replay order.
    pub pieces: Vec<Piece>,
}

/// Each call's phase name under `by`; `order` is the calls' order key.
fn names(trace: &Trace, key: &[f64], by: PhaseBy) -> Vec<String> {
    let command = trace
        .header
        .command
        .first()
        .and_then(|c| std::path::Path::new(c).file_name())
        .map_or_else(|| "unknown".to_string(), |n| n.to_string_lossy().into_owned());
    trace
        .calls
        .iter()
        .enumerate()
        .map(|(i, c)| match by {
            PhaseBy::None => super::REPLAY.to_string(),
            PhaseBy::Process => c.program.clone().unwrap_or_else(|| command.clone()),
            PhaseBy::Marks => trace
                .header
                .marks
                .iter()
                .rev()
                .find(|m| m.at_s <= key[i])
                .map_or(START.to_string(), |m| m.name.clone()),
        })
        .collect()
}

/// Cuts `plan` (compiled from `trace`) into the pieces of `by`.
pub fn split(trace: &Trace, plan: &Plan, by: PhaseBy) -> Split {
    let key = plan::linearize(&trace.calls);
    let label = names(trace, &key, by);
    // Where each call went: (thread, op index).
    let mut at = vec![(0usize, 0usize); trace.calls.len()];
    for (t, ops) in plan.threads.iter().enumerate() {
        for (i, op) in ops.iter().enumerate() {
            at[op.call as usize] = (t, i);
        }
    }
    let mut order: Vec<usize> = (0..trace.calls.len()).collect();
    order.sort_by(|&a, &b| key[a].total_cmp(&key[b]).then(a.cmp(&b)));
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut out = Split {
        names: Vec::new(),
        pieces: Vec::new(),
    };
    let mut span = (f64::INFINITY, f64::NEG_INFINITY);
    for ci in order {
        let name = label[ci].as_str();
        let phase = *index.entry(name).or_insert_with(|| {
            out.names.push(name.to_string());
            out.names.len() - 1
        });
        if out.pieces.last().is_none_or(|p| p.phase != phase) {
            if let Some(p) = out.pieces.last_mut() {
                p.recorded_s = (span.1 - span.0).max(0.0);
            }
            span = (f64::INFINITY, f64::NEG_INFINITY);
            out.pieces.push(Piece {
                phase,
                ranges: plan.threads.iter().map(|_| 0..0).collect(),
                recorded_s: 0.0,
            });
        }
        let c = &trace.calls[ci];
        span = (span.0.min(c.start_s), span.1.max(c.start_s + c.dur_s));
        let (t, i) = at[ci];
        let r = &mut out.pieces.last_mut().expect("pushed above").ranges[t];
        if r.start == r.end {
            *r = i..i + 1;
        } else {
            debug_assert_eq!(r.end, i, "a thread's ops in a piece are contiguous");
            r.end = i + 1;
        }
    }
    if let Some(p) = out.pieces.last_mut() {
        p.recorded_s = (span.1 - span.0).max(0.0);
    }
    if out.pieces.is_empty() {
        // No calls: one empty piece, so the phase is still timed and recorded.
        out.names.push(super::REPLAY.to_string());
        out.pieces.push(Piece {
            phase: 0,
            ranges: plan.threads.iter().map(|_| 0..0).collect(),
            recorded_s: 0.0,
        });
    }
    out
}
