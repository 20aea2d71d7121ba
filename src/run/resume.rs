//! What a run executes: the suite and options of the command line, or, for `--resume`, the
//! stored session's own suite text and command line and the repeats it already has.
//!
//! Invariant: a resumed session never mixes suites: `--resume` refuses every other suite option,
//! and the suite comes from the text stored with the session even if the file changed since.

use super::{RunError, Target};
use crate::cli::{Cli, Command, RunArgs};
use crate::config::{self, Overrides, Suite};
use crate::plan::Case;
use crate::store::{SessionStatus, Store};
use clap::Parser;
use std::collections::HashSet;
use std::path::Path;

/// What `--resume` brings from the stored session.
pub(super) struct Resume {
    /// Session id.
    pub session: i64,
    /// `(case id, repeat)` pairs already stored with status ok: they are not run again.
    done: HashSet<(String, u32)>,
}

impl Resume {
    /// Whether repeat `repeat` of `case` is already stored with status ok.
    pub fn is_done(&self, case: &Case, repeat: u32) -> bool {
        self.done.contains(&(case.id.0.clone(), repeat))
    }
}

fn overrides(a: &RunArgs) -> Result<Overrides, RunError> {
    if let Some(s) = a.scale {
        if !(s.is_finite() && s > 0.0) {
            return Err(RunError::Usage(format!(
                "--scale {s}: use a positive number such as 0.1 or 2"
            )));
        }
    }
    if a.repeat == Some(0) {
        return Err(RunError::Usage(
            "--repeat 0: at least one measured repeat is needed".into(),
        ));
    }
    let variants = a.fs.as_deref().map(config::parse_fs_list).transpose()?;
    Ok(Overrides {
        variants,
        only: a.only.clone(),
        repeats: a.repeat,
        warmup: a.warmup,
        scale: a.scale,
        memory: a.memory,
        precision: a.precision,
        budget: a.budget,
        dir_target: Target::from_args(a).replaces_variants(),
        tools: a.tools,
    })
}

/// Loads the suite a run (or `plan`) asks for, fitted to its target. `stored_text` replaces the
/// file or preset when resuming, so a resumed session runs exactly the suite it started with.
pub fn load_suite(a: &RunArgs, stored_text: Option<&str>) -> Result<Suite, RunError> {
    let o = overrides(a)?;
    let mut suite = match (stored_text, &a.suite, &a.preset) {
        (Some(text), _, _) => config::load_str(text, "stored suite", &o)?,
        (None, Some(path), _) => config::load_file(path, &o)?,
        (None, None, p) => config::load_preset(p.as_deref().unwrap_or("quick"), &o)?,
    };
    Target::from_args(a).fit_suite(&mut suite)?;
    Ok(suite)
}

/// Parses the command line a stored session was started with, to resume it the same way.
fn stored_run_args(args: &[String]) -> Result<RunArgs, RunError> {
    let cli = Cli::try_parse_from(args)
        .map_err(|e| RunError::Usage(format!("cannot resume: stored command line does not parse: {e}")))?;
    match cli.command {
        Command::Run(a) => Ok(a),
        _ => Err(RunError::Usage(
            "cannot resume: the stored command line is not a `run`".into(),
        )),
    }
}

/// The effective options, suite, resume state and (when resuming) the open store of a run.
pub(super) fn resolve(db: &Path, given: &RunArgs) -> Result<(RunArgs, Suite, Option<Resume>, Option<Store>), RunError> {
    let Some(reference) = &given.resume else {
        return Ok((given.clone(), load_suite(given, None)?, None, None));
    };
    if given.suite.is_some()
        || given.preset.is_some()
        || given.fs.is_some()
        || given.only.is_some()
        || given.repeat.is_some()
        || given.warmup.is_some()
        || given.scale.is_some()
        || given.memory.is_some()
        || given.precision.is_some()
        || given.budget.is_some()
        || Target::from_args(given).replaces_variants()
    {
        return Err(RunError::Usage(
            "--resume runs the stored session's own suite and options: drop the other suite options".into(),
        ));
    }
    if !db.exists() {
        return Err(RunError::Usage(format!(
            "no results database at {}: nothing to resume",
            db.display()
        )));
    }
    let store = Store::open(db)?;
    let id = store.resolve(reference).map_err(|e| RunError::Usage(e.to_string()))?;
    let data = store.load_session(id)?;
    if data.session.status == SessionStatus::Complete {
        return Err(RunError::Usage(format!("session {id} is complete: nothing to resume")));
    }
    let a = stored_run_args(&data.session.info.args)?;
    let suite = load_suite(&a, Some(&data.session.info.suite_text))?;
    let mut done = HashSet::new();
    for c in &data.cases {
        for r in store.completed_repeats(id, &c.case_id)? {
            done.insert((c.case_id.clone(), r));
        }
    }
    Ok((a, suite, Some(Resume { session: id, done }), Some(store)))
}
