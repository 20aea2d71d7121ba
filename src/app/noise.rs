//! `fsbench noise` at the edge: the options checked, the expected cost printed, the A/A
//! sessions run through [`crate::run::aa`] with the terminal observer, then the between-session
//! sd of every headline row as stored with the last complete session (the report's
//! [`crate::report::noise::NoiseSection`]) and what the sessions cost; and the exit code.

use super::{build_model, AppError};
use crate::cli::NoiseArgs;
use crate::report::noise::{duration_text, NoiseSection};
use crate::report::Section;
use crate::run::aa::{AaRun, AaSession, Cost};
use crate::run::TerminalObserver;
use anyhow::Result;
use std::io::Write;
use std::path::Path;

/// The expected cost of `n` sessions, one line.
fn cost_line(n: u32, c: &Cost) -> String {
    let size = format!("{} repeat(s) of {} case(s) per session", c.repeats, c.cases);
    match c.per_session_s {
        Some(s) => format!(
            "expected cost: {n} sessions × {}{} = {}{} ({}; {size})",
            if c.at_most { "at most " } else { "about " },
            duration_text(s),
            if c.at_most { "at most " } else { "about " },
            duration_text(s * f64::from(n)),
            c.basis
        ),
        None => format!(
            "expected cost: {} ({n} sessions, {size}); after each session the rest is estimated from those so far",
            c.basis
        ),
    }
}

/// The line after session `s`, with the time the rest should take from the sessions so far.
fn session_line(s: &AaSession, so_far: &[f64]) -> String {
    let state = if s.interrupted {
        "interrupted after"
    } else {
        "complete in"
    };
    let left = s.of - s.index;
    let rest = if left > 0 && !s.interrupted {
        let mean = so_far.iter().sum::<f64>() / so_far.len().max(1) as f64;
        format!("; about {} left", duration_text(mean * f64::from(left)))
    } else {
        String::new()
    };
    format!(
        "A/A session {} of {}: session {} ({}) {state} {}{rest}",
        s.index,
        s.of,
        s.session,
        s.label,
        duration_text(s.wall_s)
    )
}

/// `fsbench noise`: 0 when every session completed, 130 when interrupted, 1 when a session's
/// repeats failed as `run` counts them (its strictness included); usage errors exit 2.
pub(super) fn cmd_noise(db: &Path, a: &NoiseArgs, verbosity: i8) -> Result<i32> {
    let refuse = |what: &str| -> Result<i32> {
        Err(AppError::Usage(format!("{what}: not with `fsbench noise`, which runs one process and prints its own lines; use `fsbench run` for that")).into())
    };
    if a.run.ranks.is_some() || crate::comm::launched_by_mpirun() {
        return refuse("--ranks");
    }
    if a.run.events.is_some() {
        return refuse("--events");
    }
    let cluster = crate::comm::cluster::init().map_err(|e| AppError::Usage(e.to_string()))?;
    let aa = AaRun::new(
        db,
        &a.run.options(),
        a.sessions,
        std::env::args().collect(),
        crate::cli::legacy_run_options,
        cluster,
    )?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "fsbench noise: {} A/A sessions of suite {}, one after another\n{}",
        aa.sessions(),
        aa.suite_name(),
        cost_line(aa.sessions(), aa.cost())
    )?;
    out.flush()?;
    let terminal = TerminalObserver::with_verbosity(verbosity);
    let mut walls = Vec::new();
    let summary = aa.run(&terminal, &mut |s| {
        walls.push(s.wall_s);
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", session_line(s, &walls));
        let _ = out.flush();
    })?;
    let strict = a.run.strict;
    if let (Some(store), Some(last)) = (&summary.store, summary.last_complete()) {
        let model = build_model(store.as_ref(), last.session)?;
        let ours: Vec<i64> = summary
            .sessions
            .iter()
            .filter(|s| !s.interrupted)
            .map(|s| s.session)
            .collect();
        let used = model.session_noise.iter().map(|e| e.sessions.len()).max().unwrap_or(0);
        let earlier = model
            .session_noise
            .iter()
            .flat_map(|e| &e.sessions)
            .filter(|id| !ours.contains(id))
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        write!(out, "{}", NoiseSection.text(&model))?;
        let ids: Vec<String> = ours.iter().map(i64::to_string).collect();
        writeln!(
            out,
            "\nFrom up to {used} sessions of this configuration: the {} complete one(s) just run ({}) and {earlier} earlier; stored with session {} (`fsbench report {}`, `fsbench history`).",
            ours.len(),
            ids.join(", "),
            last.session,
            last.label
        )?;
    } else {
        writeln!(out, "\nNo session completed: nothing estimated.")?;
    }
    if !walls.is_empty() {
        let total: f64 = walls.iter().sum();
        let (lo, hi) = walls
            .iter()
            .fold((f64::INFINITY, 0.0_f64), |(l, h), &w| (l.min(w), h.max(w)));
        writeln!(
            out,
            "Cost: {} session(s), {} each on average ({} to {}), {} in all.",
            walls.len(),
            duration_text(total / walls.len() as f64),
            duration_text(lo),
            duration_text(hi),
            duration_text(total)
        )?;
    }
    if summary.interrupted {
        let kept = summary.sessions.iter().filter(|s| !s.interrupted).count();
        eprintln!("fsbench: interrupted; the {kept} session(s) that completed are stored with their estimates, nothing is left mounted");
        return Ok(130);
    }
    let code = summary
        .sessions
        .iter()
        .map(|s| s.failures.exit_code(strict))
        .max()
        .unwrap_or(0);
    for s in summary.sessions.iter().filter(|s| s.failures.exit_code(strict) != 0) {
        if let Some(m) = s.failures.message(strict) {
            eprintln!("session {} ({}): {m}", s.session, s.label);
        }
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_lines_say_the_basis_and_the_total() {
        let c = Cost {
            per_session_s: Some(40.0),
            basis: "session 12, the newest …".into(),
            at_most: false,
            repeats: 6,
            cases: 2,
        };
        assert_eq!(
            cost_line(5, &c),
            "expected cost: 5 sessions × about 40 s = about 3 min 20 s (session 12, the newest …; 6 repeat(s) of 2 case(s) per session)"
        );
        let unknown = Cost {
            per_session_s: None,
            basis: "not known before the first session".into(),
            ..c
        };
        assert!(cost_line(5, &unknown)
            .starts_with("expected cost: not known before the first session (5 sessions, 6 repeat(s)"));
    }
}
