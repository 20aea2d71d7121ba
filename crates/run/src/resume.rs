//! What a run executes: the suite and options given, or, for `--resume`, the stored session's
//! own suite text and [`RunOptions`] and the repeats it already has. A session stored before
//! the options were (schema 8 and older) has only its command line: the edge's
//! [`LegacyArgs`] reads it into options, once, when it is resumed.
//!
//! Invariant: a resumed session never mixes suites: `--resume` refuses every other suite option,
//! and the suite comes from the text stored with the session even if the file changed since.

use super::{RunError, RunOptions, Target};
use crate::config::{self, Overrides, Suite};
use crate::plan::Case;
use crate::store::{SessionStatus, Store};
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

fn overrides(a: &RunOptions) -> Result<Overrides, RunError> {
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
        equivalence: a.equivalence,
        dir_target: Target::from_args(a).replaces_variants(),
        tools: a.tools,
        loop_io: a.loop_io,
        target: a.target,
    })
}

/// Loads the suite a run (or `plan`) asks for, fitted to its target. `stored_text` replaces the
/// file or preset when resuming, so a resumed session runs exactly the suite it started with.
pub fn load_suite(a: &RunOptions, stored_text: Option<&str>) -> Result<Suite, RunError> {
    let o = overrides(a)?;
    let mut suite = match (stored_text, &a.suite, &a.preset) {
        (Some(text), _, _) => config::load_str(text, "stored suite", &o)?,
        (None, Some(path), _) => config::load_file(path, &o)?,
        (None, None, p) => config::load_preset(p.as_deref().unwrap_or("quick"), &o)?,
    };
    Target::from_args(a).fit_suite(&mut suite)?;
    Ok(suite)
}

/// Reads the command line of a session stored before its options were (the old way: the
/// argv of `fsbench run`) into options; the edge owns the parser. The error says why.
pub type LegacyArgs = fn(&[String]) -> Result<RunOptions, BadLegacyArgs>;

/// Why a stored command line does not read as a run's options ([`LegacyArgs`]): the edge's
/// parser's message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadLegacyArgs(pub String);

impl From<String> for BadLegacyArgs {
    fn from(s: String) -> Self {
        BadLegacyArgs(s)
    }
}

impl From<&str> for BadLegacyArgs {
    fn from(s: &str) -> Self {
        BadLegacyArgs(s.to_string())
    }
}

/// The options a stored session runs with: its stored options, else its command line read by
/// `legacy`.
fn stored_options(id: i64, options: Option<&str>, args: &[String], legacy: LegacyArgs) -> Result<RunOptions, RunError> {
    match options {
        Some(json) => RunOptions::from_json(json).map_err(|e| {
            RunError::Usage(format!(
                "cannot resume session {id}: its stored options do not read: {e}"
            ))
        }),
        None => legacy(args).map_err(|e| RunError::Usage(format!("cannot resume: {e}"))),
    }
}

/// The effective options, suite, resume state and (when resuming) the open store of a run.
pub(super) fn resolve(
    db: &Path,
    given: &RunOptions,
    legacy: LegacyArgs,
) -> Result<(RunOptions, Suite, Option<Resume>, Option<Store>), RunError> {
    let Some(reference) = &given.resume else {
        return Ok((given.clone(), load_suite(given, None)?, None, None));
    };
    if given.names_suite() || Target::from_args(given).replaces_variants() {
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
    let store = Store::open(db)?.with_suite_reader(crate::config::stored_suite_policy);
    let id = store.resolve(reference).map_err(|e| RunError::Usage(e.to_string()))?;
    let data = store.load_session(id)?;
    if data.session.status == SessionStatus::Complete {
        return Err(RunError::Usage(format!("session {id} is complete: nothing to resume")));
    }
    let info = &data.session.info;
    let a = stored_options(id, info.run_options.as_deref(), &info.args, legacy)?;
    let suite = load_suite(&a, Some(&data.session.info.suite_text))?;
    let mut done = HashSet::new();
    for c in &data.cases {
        for r in store.completed_repeats(id, &c.case_id)? {
            done.insert((c.case_id.clone(), r));
        }
    }
    Ok((a, suite, Some(Resume { session: id, done }), Some(store)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::LoopIo;

    const TEXT: &str = "[suite]\nname = \"r\"\n\n[[fs]]\ntype = \"ext4\"\n\n[[workload]]\nkind = \"bonnie\"\n";

    /// `--resume` runs the loop mode the session was started with: from its stored options
    /// (`--loop-io`) or from its stored suite text (`[run] loop_io`); naming it again is refused.
    #[test]
    fn a_resumed_session_keeps_its_loop_io_and_refuses_a_new_one() {
        let stored = RunOptions::from_json(r#"{"loop_io":"buffered","scratch":"/var/tmp/fsbench"}"#).unwrap();
        assert_eq!(load_suite(&stored, Some(TEXT)).unwrap().loop_io, LoopIo::Buffered);
        let plain = RunOptions::from_json(r#"{"scratch":"/var/tmp/fsbench"}"#).unwrap();
        assert_eq!(load_suite(&plain, Some(TEXT)).unwrap().loop_io, LoopIo::Direct);
        let in_text = TEXT.replace("[[fs]]", "[run]\nloop_io = \"buffered\"\n\n[[fs]]");
        assert_eq!(load_suite(&plain, Some(&in_text)).unwrap().loop_io, LoopIo::Buffered);
        let again = RunOptions {
            resume: Some("latest".into()),
            loop_io: Some(LoopIo::Direct),
            ..Default::default()
        };
        let e = resolve(Path::new("/nonexistent/r.db"), &again, |_| unreachable!())
            .err()
            .unwrap();
        assert!(e.to_string().contains("drop the other suite options"), "{e}");
    }
}
