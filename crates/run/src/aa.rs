//! `fsbench noise`: the session-to-session noise measured on purpose. The same suite with the
//! same options runs N times as separate sessions (A/A: nothing changes between them), labelled
//! `aa-1` … `aa-N` (`--label X`: `X-1` …), each one [`Runner`] session like `fsbench run`'s:
//! this module only repeats sessions, it has no loop of repeats of its own. Each session that
//! completes stores its between-session estimate (`report::noise::record`, from it and the
//! earlier complete sessions of its configuration), so after the last one the estimate per row
//! is stored with it and `report`, `history` and `compare` use it.
//!
//! **One configuration.** The sessions after the first run the sizes the first one's warm-ups
//! set (sizes set by time, [`crate::sizing`]), or the suite's when it set none
//! (`--fixed-sizes`): every session of the measurement is of one configuration, whatever a
//! later warm-up would have chosen.
//!
//! **Cost.** N times one session of the suite. Before the first, [`AaRun::cost`] says what it
//! expects: the wall time of the newest complete session on this host of the same suite (name
//! and text) with the same options but for the label and order seed, times N; else the suite's
//! `--budget` per session as an upper bound; else that it is not known before the first session
//! (with the repeats per session). Each [`AaSession`] carries its own measured wall time, from
//! which the caller tells the rest.
//!
//! **Back to back.** A/A sessions run one after another see the machine's short-term session
//! effect (where images and threads land, the hypervisor's state of the hour); nights apart may
//! add more (a kernel's page cache state, other tenants). The estimate from them is a lower
//! bound of what sessions days apart show, and it is stored as any other session's is.
//!
//! **Interruption.** SIGINT/SIGTERM during a session ends that session as `fsbench run`'s
//! (interrupted, no estimate stored for it); between sessions, no new one starts. Every session
//! that completed before is stored with its estimate, usable as is.
//!
//! Usage errors ([`check`]): fewer than [`MIN_AA_SESSIONS`] or more than [`MAX_AA_SESSIONS`]
//! sessions, or `--resume`.

use crate::comm::cluster::Cluster;
use crate::store::{ResultStore, SessionStatus};
use crate::{Failures, LegacyArgs, Observer, RunError, RunOptions, Runner};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Fewest sessions of one `fsbench noise`: 2, an A/A pair (5 make an estimate by themselves).
pub const MIN_AA_SESSIONS: u32 = 2;
/// Most sessions of one `fsbench noise`: 20, the most an estimate reads
/// (`report::noise::MAX_SESSIONS`).
pub const MAX_AA_SESSIONS: u32 = crate::report::noise::MAX_SESSIONS as u32;
/// The default number of sessions: [`crate::stats::sessions::MIN_SESSIONS`], enough for an
/// estimate without earlier sessions.
pub const DEFAULT_AA_SESSIONS: u32 = crate::stats::sessions::MIN_SESSIONS as u32;
/// The label of the sessions without `--label`: `aa-1`, `aa-2`, …
pub const DEFAULT_LABEL: &str = "aa";

/// Refuses what an A/A measurement cannot be: `sessions` outside
/// [`MIN_AA_SESSIONS`]..=[`MAX_AA_SESSIONS`], or `--resume` (one session, not new ones).
pub fn check(sessions: u32, options: &RunOptions) -> Result<(), RunError> {
    if !(MIN_AA_SESSIONS..=MAX_AA_SESSIONS).contains(&sessions) {
        return Err(RunError::Usage(format!(
            "--sessions {sessions}: an A/A measurement needs at least {MIN_AA_SESSIONS} sessions, and an estimate {} sessions of one configuration (the default, {DEFAULT_AA_SESSIONS}); at most {MAX_AA_SESSIONS}, the sessions an estimate reads",
            crate::stats::sessions::MIN_SESSIONS
        )));
    }
    if options.resume.is_some() {
        return Err(RunError::Usage(
            "--resume continues one stored session: use `fsbench run --resume SESSION`; `fsbench noise` starts new ones".into(),
        ));
    }
    Ok(())
}

/// What the measurement is expected to cost, said before the first session.
#[derive(Clone, Debug, PartialEq)]
pub struct Cost {
    /// Expected wall time of one session, seconds; `None` when not known.
    pub per_session_s: Option<f64>,
    /// Where that comes from (`session 12, the newest …`, `the suite's budget`), or why it is
    /// not known.
    pub basis: String,
    /// Whether `per_session_s` is an upper bound (a budget) rather than a measurement.
    pub at_most: bool,
    /// Repeats one session runs (warm-ups included) and its cases, from the plan.
    pub repeats: usize,
    /// Cases of one session (available ones).
    pub cases: usize,
}

/// One A/A session that ran.
#[derive(Clone, Debug)]
pub struct AaSession {
    /// 1-based number among this measurement's sessions.
    pub index: u32,
    /// Sessions asked for.
    pub of: u32,
    /// Its id in the store.
    pub session: i64,
    /// Its label (`aa-3`).
    pub label: String,
    /// Its wall time, seconds (setup, baseline, repeats and the estimate).
    pub wall_s: f64,
    /// SIGINT/SIGTERM stopped it.
    pub interrupted: bool,
    /// Its failed repeats and cases, for the exit code.
    pub failures: Failures,
}

/// What an A/A measurement did.
pub struct AaSummary {
    /// The store the sessions are in (`None` when no session started).
    pub store: Option<Box<dyn ResultStore>>,
    /// The sessions that ran, in order.
    pub sessions: Vec<AaSession>,
    /// It stopped early on SIGINT/SIGTERM (during a session or between two).
    pub interrupted: bool,
}

impl AaSummary {
    /// The newest session that completed: the one whose stored estimate counts them all.
    pub fn last_complete(&self) -> Option<&AaSession> {
        self.sessions.iter().rev().find(|s| !s.interrupted)
    }
}

/// An A/A measurement decided and ready to start.
pub struct AaRun {
    db: PathBuf,
    options: RunOptions,
    sessions: u32,
    label: String,
    command_line: Vec<String>,
    legacy: LegacyArgs,
    cluster: Arc<dyn Cluster>,
    /// The first session's runner, made to read the suite and plan.
    first: Option<Runner>,
    cost: Cost,
}

/// The options a session of this measurement stores, except what tells the sessions apart.
fn comparable(o: &RunOptions) -> RunOptions {
    RunOptions {
        label: None,
        seed: None,
        sequential: None,
        resume: None,
        strict: false,
        // Set by the runner or by the measurement itself (its later sessions run the first
        // one's sizes): not what the user asked for.
        resized: Vec::new(),
        fixed_sizes: false,
        // Sessions before `--equivalence` was stored ran the default margin.
        equivalence: Some(o.equivalence.unwrap_or(crate::stats::verdict::DECIDED_MARGIN_PCT)),
        ..o.clone()
    }
}

/// The label of session `i` of a measurement labelled `label`.
fn label_of(label: &str, i: u32) -> String {
    format!("{label}-{i}")
}

impl AaRun {
    /// Decides `sessions` A/A sessions of `options` into `db` ([`check`]s them first), with
    /// what they are expected to cost. `command_line`, `legacy` and `cluster` are
    /// [`Runner::new`]'s. Prints nothing.
    pub fn new(
        db: &Path,
        options: &RunOptions,
        sessions: u32,
        command_line: Vec<String>,
        legacy: LegacyArgs,
        cluster: Arc<dyn Cluster>,
    ) -> Result<AaRun, RunError> {
        check(sessions, options)?;
        let label = options.label.clone().unwrap_or_else(|| DEFAULT_LABEL.to_string());
        let first_options = RunOptions {
            label: Some(label_of(&label, 1)),
            ..options.clone()
        };
        let first = Runner::new(db, &first_options, command_line.clone(), legacy, cluster.clone())?;
        let cost = Self::expected_cost(db, options, &first)?;
        Ok(AaRun {
            db: db.to_path_buf(),
            options: options.clone(),
            sessions,
            label,
            command_line,
            legacy,
            cluster,
            first: Some(first),
            cost,
        })
    }

    /// What one session is expected to cost (see the module docs).
    fn expected_cost(db: &Path, options: &RunOptions, runner: &Runner) -> Result<Cost, RunError> {
        let plan = runner.plan();
        let suite = runner.suite();
        let mut cost = Cost {
            per_session_s: None,
            basis: String::new(),
            at_most: false,
            repeats: plan.slots.len(),
            cases: plan.cases.iter().filter(|c| c.unavailable.is_none()).count(),
        };
        let host = crate::sysinfo::host_info().hostname;
        // As a session stores its options: with the margin it runs (given, the suite's or
        // the default).
        let want = comparable(&RunOptions {
            equivalence: Some(options.margin_pct(suite)),
            ..options.clone()
        });
        let earlier = if crate::store::is_postgres(db) || db.exists() {
            let store =
                crate::store::open(db, crate::config::stored_suite_policy).map_err(|source| RunError::OpenStore {
                    path: db.display().to_string(),
                    source: Box::new(source),
                })?;
            store.list_sessions()?.into_iter().find(|s| {
                s.status == SessionStatus::Complete
                    && s.info.host.hostname == host
                    && s.info.suite_name == suite.name
                    && s.info.suite_text == suite.source_text
                    && s.info
                        .run_options
                        .as_deref()
                        .and_then(|j| RunOptions::from_json(j).ok())
                        .is_some_and(|o| comparable(&o) == want)
            })
        } else {
            None
        };
        if let Some((s, wall)) = earlier.and_then(|s| crate::report::noise::wall_s(&s).map(|w| (s, w))) {
            cost.per_session_s = Some(wall as f64);
            cost.basis = format!(
                "session {}, the newest complete one of this suite with these options on this host",
                s.id
            );
        } else if let Some(budget) = suite.policy.budget_s {
            cost.per_session_s = Some(budget);
            cost.at_most = true;
            cost.basis = "the suite's budget per session; the repeats before the first look may add to it".into();
        } else {
            cost.basis = "not known before the first session: no complete session of this suite with these options on this host yet".into();
        }
        Ok(cost)
    }

    /// What the measurement is expected to cost (see the module docs).
    pub fn cost(&self) -> &Cost {
        &self.cost
    }

    /// Sessions asked for.
    pub fn sessions(&self) -> u32 {
        self.sessions
    }

    /// The suite's name.
    pub fn suite_name(&self) -> &str {
        self.first.as_ref().map_or("", |r| r.suite().name.as_str())
    }

    /// Runs the sessions one after another, each through [`Runner::run`] with `obs`, telling
    /// `done` of each as it ends; stops after an interrupted session, or before the next one
    /// when SIGINT/SIGTERM came between two.
    pub fn run(mut self, obs: &dyn Observer, done: &mut dyn FnMut(&AaSession)) -> Result<AaSummary, RunError> {
        let mut out = AaSummary {
            store: None,
            sessions: Vec::new(),
            interrupted: false,
        };
        for i in 1..=self.sessions {
            let t0 = Instant::now();
            let runner = match self.first.take() {
                Some(r) => r,
                None => {
                    if crate::signal::interrupted() {
                        out.interrupted = true;
                        break;
                    }
                    let options = RunOptions {
                        label: Some(label_of(&self.label, i)),
                        ..self.options.clone()
                    };
                    Runner::new(
                        &self.db,
                        &options,
                        self.command_line.clone(),
                        self.legacy,
                        self.cluster.clone(),
                    )?
                }
            };
            let summary = runner.run(obs)?;
            if i == 1 {
                // One configuration: the later sessions run the sizes the first one's warm-ups
                // set (sizes set by time), or its suite's when it set none.
                let data = summary.store.load_session(summary.session)?;
                let first = data.session.info.run_options.as_deref().map(RunOptions::from_json);
                self.options.resized = first.and_then(Result::ok).map(|o| o.resized).unwrap_or_default();
                self.options.fixed_sizes |= self.options.resized.is_empty();
            }
            let session = AaSession {
                index: i,
                of: self.sessions,
                session: summary.session,
                label: label_of(&self.label, i),
                wall_s: t0.elapsed().as_secs_f64(),
                interrupted: summary.interrupted,
                failures: summary.failures,
            };
            done(&session);
            out.store = Some(summary.store);
            out.sessions.push(session);
            if summary.interrupted {
                out.interrupted = true;
                break;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_outside_2_to_20_and_resume_are_refused_with_why() {
        let o = RunOptions::default();
        for n in [0, 1, 21, 100] {
            let e = check(n, &o).unwrap_err();
            assert!(e.is_usage(), "{n}");
            let m = e.to_string();
            assert!(
                m.contains(&format!("--sessions {n}")) && m.contains("at least 2") && m.contains("5 sessions"),
                "{m}"
            );
        }
        for n in [2, 5, 20] {
            check(n, &o).unwrap();
        }
        let resume = RunOptions {
            resume: Some("latest".into()),
            ..RunOptions::default()
        };
        let e = check(5, &resume).unwrap_err();
        assert!(e.is_usage() && e.to_string().contains("fsbench run --resume"), "{e}");
    }

    #[test]
    fn sessions_differ_only_by_label_and_seed_and_are_labelled_in_order() {
        let a = RunOptions {
            scale: Some(0.1),
            label: Some("aa-1".into()),
            seed: Some(1),
            ..RunOptions::default()
        };
        let b = RunOptions {
            label: Some("aa-2".into()),
            seed: Some(2),
            strict: true,
            ..a.clone()
        };
        assert_eq!(comparable(&a), comparable(&b));
        let scaled = RunOptions {
            scale: Some(0.2),
            ..a.clone()
        };
        assert_ne!(comparable(&a), comparable(&scaled));
        assert_eq!(label_of(DEFAULT_LABEL, 3), "aa-3");
    }
}
