//! The runner of `fsbench run`: resume, session start, the raw-device baseline step, the slot
//! loop, and the commit of each repeat, announced to an [`Observer`] (doc/architecture.md, the pipeline).
//!
//! [`Runner::new`] decides what to run (the suite, or the stored session's own suite and options
//! when resuming; the [`Target`]; the plan) and prints nothing. [`Runner::run`] checks space and
//! the device, opens or reopens the session, measures the baseline once, runs every slot not yet
//! stored, and returns a [`RunSummary`]; the caller (`app`) prints the report and decides the
//! exit code.
//!
//! Invariants:
//! - A repeat is committed to the store (one transaction) before any observer hears of it.
//! - Nothing is left mounted or attached when `run` returns, interrupted or not: each slot's
//!   guard is dropped inside the loop, and the run folder's state is finished at the end.
//! - A resumed session runs exactly the suite text and [`RunOptions`] it was started with, and
//!   only the `(case, repeat)` pairs not stored with status ok.
//! - Everything that depends on the kind of target goes through [`Target`].
//! - A session that completes gets its between-session noise estimate stored with it
//!   (`report::noise::record`) before `run` returns.

// The lower crates' modules this crate uses, by their names in the layer map
// (doc/architecture.md), so a path reads `crate::units::Bytes` in every crate.
use fsbench_comm as comm;
use fsbench_content::parsers;
use fsbench_core::host;
use fsbench_core::metric;
use fsbench_core::policy;
use fsbench_core::progress;
use fsbench_core::signal;
use fsbench_core::stats;
use fsbench_core::sysinfo;
use fsbench_core::units;
use fsbench_engine as engine;
use fsbench_report as report;
use fsbench_store as store;
use fsbench_suites::config;
use fsbench_suites::plan;
use fsbench_targets::balloon;
use fsbench_targets::baseline;
use fsbench_targets::cgroup;
use fsbench_targets::guest;
use fsbench_targets::provision;

pub mod events;

pub mod aa;
pub mod adaptive;
pub mod aged;
mod baseline_step;
pub mod failures;
mod lock;
pub mod observer;
pub mod options;
pub mod plan_view;
pub mod quiesce;
mod resume;
mod rounds;
pub mod sizing;
mod slot;
pub mod steps;
pub mod target;
mod terminal;

pub use failures::Failures;
pub use observer::{
    Event, Fanout, Observer, Recorder, RepeatEnd, RepeatOutcome, RepeatStart, SessionEnd, SessionStart, StepStart,
};
pub use options::RunOptions;
pub use resume::{load_suite, BadLegacyArgs, LegacyArgs};
pub use rounds::MoreRounds;
pub use sizing::ResizedWorkload;
pub use target::Target;
pub use terminal::TerminalObserver;

use crate::comm::cluster::Cluster;
use crate::config::{ConfigError, Suite};
use crate::plan::Plan;
use crate::provision::{ProvisionError, Provisioner, RunState};
use crate::stats::verdict::Design;
use crate::store::{NewSample, NewSession, ResultStore, SampleStatus, SessionStatus, Store, StoreError};
use resume::Resume;
use rounds::RoundQueue;
use slot::SlotOutcome;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Why a run could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The user asked for something impossible (exit code 2).
    #[error("{0}")]
    Usage(String),
    /// The suite or its overrides are invalid (exit code 2).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The results database failed.
    #[error(transparent)]
    Store(Box<StoreError>),
    /// The results database could not be opened.
    #[error("opening results database {path}")]
    OpenStore {
        /// The database.
        path: String,
        /// Why.
        #[source]
        source: Box<StoreError>,
    },
    /// The run folder or the target could not be set up.
    #[error(transparent)]
    Provision(#[from] ProvisionError),
    /// Writing the output failed.
    #[error(transparent)]
    Output(std::io::Error),
    /// The ranks of a many-process run disagree or one of them is gone (src/comm).
    #[error(transparent)]
    Ranks(#[from] crate::comm::CommError),
    /// The memory cgroup of `--memory` could not be made.
    #[error(transparent)]
    Cgroup(#[from] crate::cgroup::CgroupError),
}

impl From<StoreError> for RunError {
    fn from(e: StoreError) -> RunError {
        RunError::Store(Box::new(e))
    }
}

impl RunError {
    /// Whether the error is the user's to fix (exit code 2).
    pub fn is_usage(&self) -> bool {
        matches!(self, RunError::Usage(_) | RunError::Config(_))
    }
}

/// What a finished (or interrupted) run leaves for the caller.
pub struct RunSummary {
    /// The store the session is in (SQLite or PostgreSQL).
    pub store: Box<dyn ResultStore>,
    /// Session id.
    pub session: i64,
    /// SIGINT or SIGTERM stopped it; every completed repeat is stored.
    pub interrupted: bool,
    /// Repeats of the whole stored session (not only this run) that failed; 0 when interrupted.
    pub failed: usize,
    /// The same by case, and how many cases produced results: what decides the exit code
    /// ([`Failures::exit_code`]); empty when interrupted.
    pub failures: Failures,
}

/// What a caller does to a successful repeat's sample before the runner stores it
/// ([`Runner::with_sample_hook`]). Only `fsbench verify`'s test-only `--bias-native` uses it:
/// the change must say itself in the sample's notes.
pub trait SampleHook: Send + Sync {
    /// Changes the sample of a repeat of `case` (status ok) before it is stored.
    fn before_store(&self, case: &plan::Case, sample: &mut crate::store::NewSample);
}

/// One `fsbench run`, decided and ready to start.
pub struct Runner {
    db: PathBuf,
    options: RunOptions,
    command_line: Vec<String>,
    suite: Suite,
    target: Target,
    plan: Plan,
    resume: Option<Resume>,
    store: Option<Store>,
    interrupt: Arc<AtomicBool>,
    /// The caller's rule for rounds of some cases after the plan (`fsbench verify`).
    more: Option<Arc<dyn MoreRounds>>,
    /// What the caller does to each successful repeat's sample before it is stored.
    hook: Option<Arc<dyn SampleHook>>,
    /// The ranks this run is given, chosen by the caller.
    cluster: Arc<dyn Cluster>,
}

impl Runner {
    /// Decides what `given` runs into `db`: loads the suite (for `--resume`, the stored
    /// session's suite and options, and which repeats are already stored) and expands the
    /// plan for the target. `command_line` is stored with a new session for the record (the
    /// options are what `--resume` runs); `legacy` reads the command line of a session stored
    /// before its options were. `cluster` is the ranks the run is given
    /// ([`crate::comm::cluster::Solo`] for one process): the runner asks it, never the process's
    /// globals. Prints nothing.
    pub fn new(
        db: &Path,
        given: &RunOptions,
        command_line: Vec<String>,
        legacy: LegacyArgs,
        cluster: Arc<dyn Cluster>,
    ) -> Result<Runner, RunError> {
        if given.resume.is_some() && crate::store::is_postgres(db) {
            return Err(RunError::Usage(
                "--resume works with a SQLite --db only: run into a local database and `fsbench push` it".into(),
            ));
        }
        let (mut options, suite, resume, store) = resume::resolve(db, given, legacy)?;
        if resume.is_none() {
            // Stored with the new session: its order's seed, its equivalence margin and its
            // stopping rule's plan.
            options.seed.get_or_insert_with(rand::random);
            options.equivalence = Some(options.margin_pct(&suite));
            if suite.policy.is_adaptive() {
                // A budget's last look is fixed from the timed rounds before the first look.
                let design = match suite.policy.budget_s {
                    Some(_) => Design::pending(suite.policy.repeats, adaptive::MAX_REPEATS),
                    None => Design::new(suite.policy.repeats, adaptive::MAX_REPEATS),
                };
                options.sequential.get_or_insert(design);
            }
        }
        let target = Target::for_suite(&options, &suite)?;
        let mut plan = plan::expand(&suite, &|v| target.availability(v));
        // A resumed session runs the sizes its warm-ups set (stored in its options).
        for r in &options.resized {
            plan.resize(&r.workload, &r.kind);
        }
        // Many ranks share each filesystem: room for every rank's copy.
        crate::comm::ranks::scale_plan(&mut plan, cluster.size());
        Ok(Runner {
            db: db.to_path_buf(),
            options,
            command_line,
            suite,
            target,
            plan,
            resume,
            store,
            interrupt: crate::signal::interrupt_flag().clone(),
            more: None,
            hook: None,
            cluster,
        })
    }

    /// Adds rounds of the cases `more` chooses once the plan is done (only for a suite without
    /// a stopping rule): `fsbench verify`'s more pairs where a paired interval is undecided.
    pub fn with_more_rounds(mut self, more: Arc<dyn MoreRounds>) -> Runner {
        self.more = Some(more);
        self
    }

    /// Passes each successful repeat's sample through `hook` before it is stored (`fsbench
    /// verify`'s test-only bias of a native metric, so the stored session, its report and the
    /// verify table all carry what the check was shown).
    pub fn with_sample_hook(mut self, hook: Arc<dyn SampleHook>) -> Runner {
        self.hook = Some(hook);
        self
    }

    /// Uses `flag` instead of the process's SIGINT/SIGTERM flag (tests).
    pub fn with_interrupt(mut self, flag: Arc<AtomicBool>) -> Runner {
        self.interrupt = flag;
        self
    }

    /// `--strict` or `[run] strict = true`: any failed repeat makes the run exit 1.
    pub fn strict(&self) -> bool {
        self.options.strict || self.suite.strict
    }

    /// The plan this runner executes (every case, available or not, and every slot).
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The suite this runner runs (with the command line's overrides applied).
    pub fn suite(&self) -> &Suite {
        &self.suite
    }

    fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed)
    }

    /// The session record of a new session, with the options `--resume` runs again.
    fn new_session(&self, provisioner: &dyn Provisioner, ranks: &RankFacts) -> NewSession {
        let suite = &self.suite;
        NewSession {
            label: self.options.label.clone(),
            suite_name: suite.name.clone(),
            suite_text: suite.source_text.clone(),
            args: self.command_line.clone(),
            run_options: Some(self.options.to_json()),
            fsbench_version: env!("CARGO_PKG_VERSION").to_string(),
            host: sysinfo::host_info(),
            tool_versions: {
                let mut tools = sysinfo::tool_versions(suite.variants.iter().map(|v| v.fs_type.as_str()));
                // Guest variants: the guest kernel release(s) and QEMU's version (the accelerator
                // is decided at the first boot and stored in each sample's guest note).
                tools.extend(crate::guest::tool_versions(&suite.variants));
                for w in &suite.workloads {
                    for t in w.kind.workload().tool_versions() {
                        if !tools.contains(&t) {
                            tools.push(t);
                        }
                    }
                }
                tools
            },
            target: provisioner.describe(),
            // Many ranks: every rank's host, mount and clock offset (table rank_hosts).
            ranks: ranks.hosts.clone(),
            policy: suite.policy.clone(),
        }
    }

    /// Runs every slot not yet stored, announcing each step to `obs`. With many ranks this is
    /// rank 0's part ([`Runner::follow`] is the others'): the ranks first agree on version and
    /// suite and measure their clock offsets, and are told to stop at the end.
    pub fn run(self, obs: &dyn Observer) -> Result<RunSummary, RunError> {
        let interrupt = self.interrupt.clone();
        let cluster = self.cluster.clone();
        let ranks = self.start_ranks()?;
        // The long untimed steps (mkfs, data sets, baseline, loads) reach `obs` too; each
        // step's ETA without a total is its last duration on this machine.
        let cache = steps::durations_file();
        let known = steps::load_durations(cache.as_deref());
        let (result, durations) = steps::relayed(obs, known.clone(), || self.run_lead(obs, &ranks));
        // Only an ETA: a cache that cannot be written costs nothing but that.
        if let Some(f) = cache.filter(|_| durations != known) {
            let _ = steps::save_durations(&f, &durations);
        }
        cluster.stop_followers(&interrupt);
        result
    }

    /// Every rank, before the first phase: refuses a resume with many ranks, then
    /// the cluster's [`Cluster::start_session`].
    fn start_ranks(&self) -> Result<RankFacts, RunError> {
        if self.cluster.size() > 1 && self.resume.is_some() {
            return Err(RunError::Usage(
                "--resume runs on one rank only: resume the session without mpirun".into(),
            ));
        }
        // The directory the ranks use: `--dir`, else the scratch folder the filesystems are made in.
        let dir = match &self.target {
            Target::Dir { dir, .. } => dir.as_path(),
            t => t.scratch(),
        };
        let (offsets, hosts) = self
            .cluster
            .start_session(&self.suite.source_text, dir, &self.interrupt)?;
        Ok(RankFacts { offsets, hosts })
    }

    /// A rank other than 0: runs the repeats rank 0 announces, in its own subdirectory of rank
    /// 0's filesystem, until rank 0 says stop. Writes no database and no report.
    /// `Ok(true)` when it was interrupted.
    pub fn follow(self) -> Result<bool, RunError> {
        self.start_ranks()?;
        let plan = &self.plan;
        Ok(self
            .cluster
            .follow(&self.interrupt, self.suite.policy.drop_caches, &|slot| {
                plan.slots.get(slot).map(|s| {
                    let case = &plan.cases[s.case];
                    (case.workload.kind.clone(), case.variant.fs())
                })
            })?)
    }

    /// Rank 0's run: opens the session, runs the round queue's slots until it is done or
    /// interrupted, and closes the session.
    fn run_lead(mut self, obs: &dyn Observer, ranks: &RankFacts) -> Result<RunSummary, RunError> {
        let open = self.open_session(obs, ranks)?;
        let plan = &self.plan;
        let resume = self.resume.as_ref();
        let mut queue = RoundQueue::new(plan, &self.suite, &self.options, &|s| {
            resume.is_some_and(|r| r.is_done(&plan.cases[s.case], s.repeat))
        })
        .with_more(self.more.clone());
        obs.session_started(&SessionStart {
            session: open.session,
            resumed: self.resume.is_some(),
            repeats_left: queue.len(),
            repeats_total: plan.slots.len(),
            db: &self.db,
        });
        // The raw device's own speed, once per session, before the first case (a resumed session
        // keeps the baseline it has). Interrupted, nothing is stored and the loop below stops.
        if open.store.load_baseline(open.session)?.is_none() {
            if let Some(b) = baseline_step::measure_baseline(open.provisioner.as_ref(), plan, &self.interrupt, obs) {
                open.store.record_baseline(open.session, &b)?;
                obs.baseline_finished(&b);
            }
        }
        let mut sizing = sizing::Sizing::new(&self.suite, &self.options, self.cluster.size());
        let mut interrupted = false;
        let mut i = 0;
        loop {
            if self.interrupted() {
                interrupted = true;
                break;
            }
            let Some((slot_index, slot)) = queue.next(&self.plan, open.store.as_ref(), open.session, obs)? else {
                break;
            };
            if !slot.warmup && sizing.pending() {
                self.set_sizes(&open, &mut sizing, &mut queue, obs)?;
            }
            let Some(walls) = self.run_repeat(&open, &queue, i, slot_index, &slot, ranks, obs)? else {
                interrupted = true;
                break;
            };
            if slot.warmup {
                sizing.warmed(&self.plan.cases[slot.case], &walls);
            }
            i += 1;
        }
        self.close_session(open, interrupted, obs)
    }

    /// Sizes set by time, once, before the first measured repeat ([`sizing`]): the workloads
    /// whose warm-ups left a phase short get their new spec in the plan, the session's stored
    /// options and case records, and `obs` is told. When the larger sizes do not fit the target,
    /// the plan keeps the suite's sizes and `obs` is warned why.
    fn set_sizes(
        &mut self,
        open: &OpenSession,
        sizing: &mut sizing::Sizing,
        queue: &mut RoundQueue,
        obs: &dyn Observer,
    ) -> Result<(), RunError> {
        let decided = sizing.decide(&self.plan);
        if decided.is_empty() {
            return Ok(());
        }
        let before = self.plan.clone();
        for r in &decided {
            self.plan.resize(&r.workload, &r.kind);
        }
        if let Err(e) = self.target.check_space(&self.plan) {
            self.plan = before;
            obs.warning(&format!(
                "sizes not raised after the warm-ups ({}): {e}",
                decided.iter().map(|r| r.line()).collect::<Vec<_>>().join("; ")
            ));
            return Ok(());
        }
        self.options.resized.extend(decided.iter().cloned());
        queue.set_resized(&self.options.resized);
        open.store.update_run_options(open.session, &self.options.to_json())?;
        for c in self
            .plan
            .cases
            .iter()
            .filter(|c| decided.iter().any(|r| r.workload == c.workload.name))
        {
            open.store.record_case(open.session, &slot::case_record(c))?;
        }
        obs.sizes_set(&decided);
        Ok(())
    }

    /// Checks the target, opens the store, the run folder and the memory cgroup, and begins (or
    /// reopens) the session with its cases recorded.
    fn open_session(&mut self, obs: &dyn Observer, ranks: &RankFacts) -> Result<OpenSession, RunError> {
        let plan = &self.plan;
        for c in plan.cases.iter().filter(|c| c.unavailable.is_some()) {
            obs.case_unavailable(c);
        }
        if plan.slots.is_empty() {
            return Err(RunError::Usage(
                "nothing to run: every case is unavailable here (see above); `fsbench doctor` says what to install"
                    .into(),
            ));
        }
        // What a device holds (a mount, a signature, swap) matters before whether it is big
        // enough: the safety refusal says what was found, as `plan` does.
        self.target.confirm()?;
        self.target.check_space(plan)?;
        aged::AgedImages::of(&self.options).check(&self.target, plan, self.resume.is_some(), self.cluster.size())?;
        if let Some(offer) = self.target.cleanup_offer() {
            obs.warning(&offer);
        }
        let store: Box<dyn ResultStore> = match self.store.take() {
            Some(s) => Box::new(s),
            None => crate::store::open(&self.db, crate::config::stored_suite_policy).map_err(|source| {
                RunError::OpenStore {
                    path: self.db.display().to_string(),
                    source: Box::new(source),
                }
            })?,
        };
        // A resumed session is refused before anything is made if a live process runs it.
        let resumed_lock = self
            .resume
            .as_ref()
            .map(|r| lock::session(&self.db, r.session))
            .transpose()?;
        let state = RunState::create(self.target.scratch())?;
        // The small machine's memory: one cgroup for the run, entered for each workload, and one
        // per distinct limit that workloads ask for themselves.
        let memory = Memory::create(&self.suite, &state, obs)?;
        let reporting = self.hold_page_reporting(&state, obs)?;
        let provisioner = self.target.provisioner(state.clone(), self.suite.loop_io)?;
        let session = match &self.resume {
            Some(r) => {
                store.finish_session(r.session, SessionStatus::Running)?;
                r.session
            }
            None => store.begin_session(&self.new_session(provisioner.as_ref(), ranks))?,
        };
        // Held until the session is closed: the session is this process's while it runs. (A
        // PostgreSQL session cannot be resumed, so it needs no lock file.)
        let lock = match resumed_lock {
            Some(l) => Some(l),
            None if crate::store::is_postgres(&self.db) => None,
            None => Some(lock::session(&self.db, session)?),
        };
        for c in &self.plan.cases {
            store.record_case(session, &slot::case_record(c))?;
        }
        Ok(OpenSession {
            store,
            session,
            state,
            memory,
            provisioner,
            _reporting: reporting,
            _lock: lock,
        })
    }

    /// `--hold-page-reporting`: holds the hypervisor's free page reporting for the session
    /// (recorded in the run's state file; given back when the session closes). Without the
    /// option, or where there is nothing to hold, it says so and holds nothing.
    fn hold_page_reporting(
        &self,
        state: &RunState,
        obs: &dyn Observer,
    ) -> Result<Option<crate::balloon::Hold>, RunError> {
        if !self.options.hold_page_reporting {
            return Ok(None);
        }
        let Some(reporting) = crate::balloon::Reporting::read() else {
            obs.warning(
                "--hold-page-reporting: this machine has no balloon device that reports free pages; nothing to hold",
            );
            return Ok(None);
        };
        match crate::balloon::Hold::start(state, reporting) {
            Ok(Some(hold)) => {
                obs.warning(&hold.said);
                Ok(Some(hold))
            }
            Ok(None) => {
                obs.warning(&format!(
                    "--hold-page-reporting: free page reporting is held already (page_reporting_order {}): left as it is",
                    reporting.order
                ));
                Ok(None)
            }
            Err(e) => Err(RunError::Usage(format!(
                "--hold-page-reporting: {e} (needs root); run without it, or as root"
            ))),
        }
    }

    /// Runs repeat `i` (slot `slot_index` of the run) and commits it: stored before it is
    /// announced. `None` when it was interrupted (nothing stored), else the wall time of each
    /// phase (none when it failed).
    #[allow(clippy::too_many_arguments)]
    fn run_repeat(
        &self,
        open: &OpenSession,
        queue: &RoundQueue,
        i: usize,
        slot_index: usize,
        slot: &plan::Slot,
        ranks: &RankFacts,
        obs: &dyn Observer,
    ) -> Result<Option<Vec<(String, std::time::Duration)>>, RunError> {
        let case = &self.plan.cases[slot.case];
        let per_case = queue.per_case;
        let what = format!(
            "{} × {} repeat {}/{}{}{}",
            case.variant.name,
            case.workload.name,
            slot.repeat + 1,
            per_case.max(slot.repeat + 1),
            if slot.warmup { " (warm-up)" } else { "" },
            queue.round_note
        );
        obs.repeat_started(&RepeatStart {
            index: i,
            of: queue.of,
            case,
            repeat: slot.repeat,
            repeats_per_case: per_case,
            warmup: slot.warmup,
            what: &what,
        });
        let t0 = Instant::now();
        let mut sample = NewSample {
            started_at: crate::store::now_rfc3339(),
            ..NewSample::new(case.id.0.clone(), slot.repeat, slot.warmup)
        };
        let outcome = slot::run_slot(
            self.cluster.as_ref(),
            open.provisioner.as_ref(),
            &open.state,
            case,
            &self.suite,
            &slot::SlotAt {
                tag: slot::tag_for(slot_index, &case.variant.name),
                index: slot_index,
                offsets: &ranks.offsets,
                images: aged::AgedImages::of(&self.options).for_repeat(case, slot.warmup),
            },
            &self.interrupt,
            open.memory.of(&case.workload),
            &|p| obs.phase_started(&what, p),
            &mut sample,
        );
        sample.wall_s = t0.elapsed().as_secs_f64();
        let (outcome, walls) = match outcome {
            SlotOutcome::Interrupted => return Ok(None),
            SlotOutcome::Failed(e) => {
                sample.status = SampleStatus::Failed(e.clone());
                (RepeatOutcome::Failed(e), Vec::new())
            }
            SlotOutcome::Done(walls) => (RepeatOutcome::Done { wall_s: sample.wall_s }, walls),
        };
        if let (Some(hook), SampleStatus::Ok) = (&self.hook, &sample.status) {
            hook.before_store(case, &mut sample);
        }
        // Committed before it is announced: a line on screen means the repeat is stored.
        open.store.record_sample(open.session, &sample)?;
        obs.repeat_result(&what, &sample);
        obs.repeat_finished(&RepeatEnd {
            index: i,
            what: &what,
            outcome: &outcome,
        });
        Ok(Some(walls))
    }

    /// Ends the session (complete or interrupted), removes the cgroup and the run folder's
    /// state, and reads the failures of the stored session.
    fn close_session(&self, open: OpenSession, interrupted: bool, obs: &dyn Observer) -> Result<RunSummary, RunError> {
        obs.session_finished(if interrupted {
            SessionEnd::Interrupted
        } else {
            SessionEnd::Complete
        });
        let status = if interrupted {
            SessionStatus::Interrupted
        } else {
            SessionStatus::Complete
        };
        let OpenSession {
            store,
            session,
            state,
            memory,
            provisioner: _provisioner,
            _reporting: reporting,
            _lock,
        } = open;
        store.finish_session(session, status)?;
        drop(memory);
        // Given back before the state file goes: its record is popped first.
        drop(reporting);
        state.finish();
        // A complete session's between-session noise, from it and the earlier complete sessions
        // of its configuration (report::noise), stored with it. Its repeats are stored already:
        // a failure here costs the estimate, not the session.
        if !interrupted {
            if let Err(e) = crate::report::noise::record(store.as_ref(), session) {
                obs.warning(&format!(
                    "the session-to-session noise of session {session} was not stored: {e}; its report shows none"
                ));
            }
        }
        // The stored session is the truth: a resumed run replaced the repeats it ran again.
        let failures = if interrupted {
            Failures::default()
        } else {
            let data = store.load_session(session)?;
            Failures::of(&data.cases, &data.samples)
        };
        Ok(RunSummary {
            store,
            session,
            interrupted,
            failed: failures.repeats,
            failures,
        })
    }
}

/// What an open session holds while its repeats run.
struct OpenSession {
    store: Box<dyn ResultStore>,
    session: i64,
    state: RunState,
    memory: Memory,
    provisioner: Box<dyn Provisioner>,
    /// `--hold-page-reporting`'s hold, given back when the session closes.
    _reporting: Option<crate::balloon::Hold>,
    /// The session's lock file, held until the session is closed.
    _lock: Option<std::fs::File>,
}

/// The memory cgroups of a session: the run's (`[run] memory` / `--memory`) and one per distinct
/// limit the workloads ask for (`memory` in a `[[workload]]`). Dropped when the session closes.
struct Memory {
    run: Option<crate::cgroup::MemoryCgroup>,
    /// `(limit asked, cgroup)`, one per distinct limit.
    own: Vec<(u64, crate::cgroup::MemoryCgroup)>,
}

impl Memory {
    fn create(suite: &crate::config::Suite, state: &RunState, obs: &dyn Observer) -> Result<Memory, RunError> {
        let limit = |requested: u64| {
            let (limit, warning) = crate::cgroup::effective_limit(requested);
            if let Some(w) = warning {
                obs.warning(&w);
            }
            limit
        };
        let run = match suite.policy.memory {
            Some(requested) => Some(crate::cgroup::MemoryCgroup::create(state, limit(requested))?),
            None => None,
        };
        let mut own: Vec<(u64, crate::cgroup::MemoryCgroup)> = Vec::new();
        for w in &suite.workloads {
            let Some(asked) = w.memory.map(|b| b.get()) else {
                continue;
            };
            if !own.iter().any(|(a, _)| *a == asked) {
                let cg = crate::cgroup::MemoryCgroup::create_tagged(state, limit(asked), &format!("w{}", own.len()))?;
                own.push((asked, cg));
            }
        }
        Ok(Memory { run, own })
    }

    /// The cgroup `workload` runs in: its own limit's, else the run's, else none.
    fn of(&self, workload: &crate::config::WorkloadSpec) -> Option<&crate::cgroup::MemoryCgroup> {
        match workload.memory {
            Some(asked) => self.own.iter().find(|(a, _)| *a == asked.get()).map(|(_, c)| c),
            None => self.run.as_ref(),
        }
    }
}

/// What the ranks of a session told rank 0 before the first phase.
struct RankFacts {
    /// Every rank's clock against rank 0's.
    offsets: Vec<crate::comm::ClockOffset>,
    /// Every rank's fingerprint (empty alone).
    hosts: Vec<crate::store::RankHost>,
}

#[cfg(test)]
mod tests;
