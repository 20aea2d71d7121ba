//! The runner on real runs: `--dir` on a private temporary directory (no mkfs, no mount, no
//! root), a tiny bonnie suite, events checked in order, commits checked from a second database
//! connection at the moment each repeat is announced, and an interrupt followed by `--resume`.

use super::*;
use std::sync::Mutex;

/// The runner's seam for the command lines of sessions stored before their options were: here
/// [`parse`] (the edge's reader, `cli::legacy_run_options`, is tested in `cli`).
const LEGACY: LegacyArgs = |line| Ok(parse(line));

const SUITE: &str = r#"
[suite]
name = "runner-test"

[run]
repeats = 2
warmup = 1
drop_caches = false

[[fs]]
type = "ext4"

[[workload]]
kind = "bonnie"
file_size = "4MiB"
char_size = "256KiB"
files = 64
seeks = 50
"#;

const BONNIE_PHASES: [&str; 12] = [
    "seq_write_char",
    "seq_write_block",
    "rewrite",
    "seq_read_char",
    "seq_read_block",
    "random_seeks",
    "seq_create",
    "seq_stat",
    "seq_delete",
    "rand_create",
    "rand_stat",
    "rand_delete",
];

/// A temporary folder with the suite, the database, a scratch folder and the benchmarked
/// directory, and the command line of `fsbench run` on it.
struct Fixture {
    _tmp: tempfile::TempDir,
    db: PathBuf,
    command_line: Vec<String>,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::Builder::new().prefix("fsbench-runner-").tempdir().unwrap();
        let p = |n: &str| tmp.path().join(n);
        std::fs::write(p("suite.toml"), SUITE).unwrap();
        std::fs::create_dir(p("bench")).unwrap();
        let s = |n: &str| p(n).to_string_lossy().into_owned();
        let command_line = vec![
            "fsbench".into(),
            "--db".into(),
            s("r.db"),
            "run".into(),
            s("suite.toml"),
            "--dir".into(),
            s("bench"),
            "--scratch".into(),
            s("scratch"),
        ];
        Fixture {
            db: p("r.db"),
            _tmp: tmp,
            command_line,
        }
    }

    /// The fixture's own command line with `extra` options appended.
    fn args_plus(&self, extra: &[&str]) -> RunOptions {
        let mut line = self.command_line.clone();
        line.extend(extra.iter().map(|s| s.to_string()));
        parse(&line)
    }

    fn args(&self, extra: &[&str]) -> RunOptions {
        let mut line = self.command_line.clone();
        if !extra.is_empty() {
            // `--resume` takes the place of the suite options.
            line.truncate(4);
            line.extend(extra.iter().map(|s| s.to_string()));
        }
        parse(&line)
    }
}

/// The options of a `fsbench [--db DB] run [SUITE] [OPTION VALUE]…` command line, for the few
/// options these tests use, as the edge reads them (the runner never depends on the
/// command-line parser: the layers keep `run` below `cli`).
fn parse(line: &[String]) -> RunOptions {
    let mut o = RunOptions {
        scratch: options::DEFAULT_SCRATCH.into(),
        ..RunOptions::default()
    };
    let mut args = line.iter().skip_while(|a| *a != "run").skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} without a value")).clone();
        match a.as_str() {
            "--dir" => o.dir = Some(value().into()),
            "--scratch" => o.scratch = value().into(),
            "--seed" => o.seed = Some(value().parse().unwrap()),
            "--budget" => o.budget = Some(value().parse().unwrap()),
            "--precision" => o.precision = Some(value().parse().unwrap()),
            "--equivalence" => o.equivalence = Some(value().parse().unwrap()),
            "--resume" => o.resume = Some(value()),
            "--fixed-sizes" => o.fixed_sizes = true,
            suite if !suite.starts_with('-') && o.suite.is_none() => o.suite = Some(suite.into()),
            other => panic!("an option these tests do not use: {other}"),
        }
    }
    o
}

/// The cluster of a one-process run, which every test here is.
fn solo() -> Arc<dyn Cluster> {
    Arc::new(crate::comm::cluster::Solo)
}

/// A cluster of `size` ranks that records what the runner asks it (all but its size) and
/// otherwise is [`crate::comm::cluster::Solo`]: rank 0, every repeat run by the engine here.
struct Recording {
    size: usize,
    calls: Mutex<Vec<&'static str>>,
}

impl Recording {
    fn new(size: usize) -> Arc<Recording> {
        Arc::new(Recording {
            size,
            calls: Mutex::new(Vec::new()),
        })
    }

    fn call(&self, name: &'static str) -> crate::comm::cluster::Solo {
        self.calls.lock().unwrap().push(name);
        crate::comm::cluster::Solo
    }

    fn calls(&self) -> Vec<&'static str> {
        self.calls.lock().unwrap().clone()
    }
}

impl Cluster for Recording {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        self.size
    }
    fn start_session(
        &self,
        suite_text: &str,
        dir: &Path,
        interrupt: &AtomicBool,
    ) -> Result<(Vec<crate::comm::ClockOffset>, Vec<crate::store::RankHost>), crate::comm::CommError> {
        self.call("start_session").start_session(suite_text, dir, interrupt)
    }
    fn phase_sync(&self) -> &dyn crate::engine::sync::PhaseSync {
        self.calls.lock().unwrap().push("phase_sync");
        &crate::engine::sync::Solo
    }
    fn run(
        &self,
        kind: &crate::engine::WorkloadKind,
        slot: usize,
        ctx: &crate::engine::RunContext,
        offsets: &[crate::comm::ClockOffset],
    ) -> Result<crate::metric::RawSample, crate::engine::EngineError> {
        self.call("run").run(kind, slot, ctx, offsets)
    }
    fn stop_followers(&self, interrupt: &AtomicBool) {
        self.call("stop_followers").stop_followers(interrupt)
    }
    fn follow(
        &self,
        interrupt: &AtomicBool,
        drop_caches: bool,
        workload_of: crate::comm::cluster::WorkloadOf,
    ) -> Result<bool, crate::comm::CommError> {
        self.call("follow").follow(interrupt, drop_caches, workload_of)
    }
    fn failure(&self) -> Option<crate::comm::CommError> {
        self.call("failure").failure()
    }
    fn finish(&self) {
        self.call("finish").finish()
    }
}

/// When a repeat is announced, counts the samples a second connection to the database already
/// sees; optionally raises the interrupt flag at the first phase. Runs beside a [`Recorder`]
/// through a [`Fanout`].
struct CommitCheck {
    db: PathBuf,
    session: Mutex<Option<i64>>,
    stored_at_announce: Mutex<Vec<usize>>,
    interrupt_at_first_phase: Option<Arc<AtomicBool>>,
}

impl CommitCheck {
    fn new(db: &Path, interrupt_at_first_phase: Option<Arc<AtomicBool>>) -> CommitCheck {
        CommitCheck {
            db: db.to_path_buf(),
            session: Mutex::new(None),
            stored_at_announce: Mutex::new(Vec::new()),
            interrupt_at_first_phase,
        }
    }

    fn stored_at_announce(&self) -> Vec<usize> {
        self.stored_at_announce.lock().unwrap().clone()
    }
}

impl Observer for CommitCheck {
    fn session_started(&self, s: &SessionStart) {
        *self.session.lock().unwrap() = Some(s.session);
    }
    fn phase_started(&self, _what: &str, _phase: &str) {
        if let Some(flag) = &self.interrupt_at_first_phase {
            flag.store(true, Ordering::Relaxed);
        }
    }
    fn repeat_finished(&self, _e: &RepeatEnd) {
        let session = self.session.lock().unwrap().expect("session_started came first");
        let stored = Store::open(&self.db)
            .unwrap()
            .load_session(session)
            .unwrap()
            .samples
            .len();
        self.stored_at_announce.lock().unwrap().push(stored);
    }
}

/// The events of one repeat of the tiny bonnie case that ran to the end.
fn repeat_events(variant: &str, what: &str) -> Vec<Event> {
    let line = format!("{variant} × bonnie repeat {what}");
    let mut v = vec![Event::RepeatStarted(line.clone())];
    v.extend(BONNIE_PHASES.iter().map(|p| Event::PhaseStarted(p.to_string())));
    v.push(Event::RepeatFinished {
        what: line,
        failed: false,
    });
    v
}

#[test]
fn a_real_run_announces_its_events_in_order_each_repeat_after_its_commit() {
    let f = Fixture::new();
    let runner = Runner::new(&f.db, &f.args(&[]), f.command_line.clone(), LEGACY, solo())
        .unwrap()
        .with_interrupt(Arc::new(AtomicBool::new(false)));
    let variant = runner.plan().cases[0].variant.name.clone();
    let (recorder, check) = (Recorder::default(), CommitCheck::new(&f.db, None));
    let summary = runner.run(&Fanout(vec![&recorder, &check])).unwrap();
    assert!(!summary.interrupted);
    assert_eq!(summary.failed, 0);

    let mut want = vec![
        Event::SessionStarted {
            session: summary.session,
            resumed: false,
            repeats_left: 3,
            repeats_total: 3,
        },
        Event::BaselineFinished(crate::store::BaselineStatus::NoDevice),
    ];
    want.extend(repeat_events(&variant, "1/3 (warm-up)"));
    // Every phase of the warm-up took milliseconds: the sizes are set by time before the
    // first measured repeat (what they are depends on the machine's speed).
    let mut events = recorder.events();
    let sizes = events.iter().position(|e| matches!(e, Event::SizesSet(_)));
    assert_eq!(sizes, Some(want.len()), "{events:#?}");
    let Event::SizesSet(lines) = events.remove(want.len()) else {
        unreachable!()
    };
    assert!(lines.len() == 1 && lines[0].starts_with("bonnie: "), "{lines:?}");
    want.extend(repeat_events(&variant, "2/3"));
    want.extend(repeat_events(&variant, "3/3"));
    want.push(Event::SessionFinished(SessionEnd::Complete));
    // A pass of a raised stat or block-read phase begins as a phase does: one phase each.
    events.dedup();
    assert_eq!(events, want);
    assert_eq!(check.stored_at_announce(), [1, 2, 3]);

    let data = summary.store.load_session(summary.session).unwrap();
    assert_eq!(data.session.status, SessionStatus::Complete);
    assert_eq!(data.session.info.args, f.command_line);
    assert!(
        data.session.info.target.starts_with("directory "),
        "{}",
        data.session.info.target
    );
    // Nothing of the run is left in the benchmarked directory.
    let bench = f.db.with_file_name("bench");
    assert_eq!(std::fs::read_dir(bench).unwrap().count(), 0);
}

/// The runner asks the cluster it is given about the ranks, never the process's globals: the
/// session's start, each repeat's synchroniser and workload, the end; its size scales the plan
/// and refuses a resume with many ranks.
#[test]
fn the_runner_asks_the_cluster_it_is_given() {
    let f = Fixture::new();
    let one = Recording::new(1);
    let runner = Runner::new(&f.db, &f.args(&[]), f.command_line.clone(), LEGACY, one.clone())
        .unwrap()
        .with_interrupt(Arc::new(AtomicBool::new(false)));
    let files = runner.plan().cases[0].footprint.files;
    let summary = runner.run(&Recorder::default()).unwrap();
    assert_eq!((summary.interrupted, summary.failed), (false, 0));
    let repeat = ["phase_sync", "run"];
    let mut want = vec!["start_session"];
    want.extend(repeat.iter().chain(&repeat).chain(&repeat));
    want.push("stop_followers");
    assert_eq!(one.calls(), want);

    // Two ranks: every case holds a copy per rank.
    let two = Runner::new(&f.db, &f.args(&[]), vec![], LEGACY, Recording::new(2)).unwrap();
    assert_eq!(two.plan().cases[0].footprint.files, 2 * files);

    // A session interrupted at its first phase is resumed on one rank only, refused before the
    // ranks start.
    let flag = Arc::new(AtomicBool::new(false));
    let runner = Runner::new(&f.db, &f.args(&[]), f.command_line.clone(), LEGACY, solo())
        .unwrap()
        .with_interrupt(flag.clone());
    assert!(runner.run(&CommitCheck::new(&f.db, Some(flag))).unwrap().interrupted);
    let two = Recording::new(2);
    let resumed = Runner::new(&f.db, &f.args(&["--resume", "latest"]), vec![], LEGACY, two.clone()).unwrap();
    match resumed.run(&Recorder::default()) {
        Err(RunError::Usage(m)) => assert!(m.contains("one rank only"), "{m}"),
        other => panic!("resumed with two ranks: {:?}", other.map(|s| s.session)),
    }
    assert_eq!(two.calls(), Vec::<&str>::new());
}

#[test]
fn an_interrupted_run_stores_no_partial_repeat_and_resume_runs_the_rest() {
    interrupt_then_resume(&Fixture::new(), |_| {});
}

/// A session stored the old way (schema 8: its command line, no options) resumes: its
/// command line is read once by the edge's parser.
#[test]
fn a_session_stored_with_only_its_command_line_resumes() {
    interrupt_then_resume(&Fixture::new(), |db| {
        let conn = rusqlite::Connection::open(db).unwrap();
        let old = conn.execute("UPDATE sessions SET run_options_json = NULL", []).unwrap();
        assert_eq!(old, 1);
    });
}

/// Runs the fixture's suite, interrupted at its first phase, calls `before_resume` with the
/// database, then resumes it to the end.
fn interrupt_then_resume(f: &Fixture, before_resume: impl Fn(&Path)) {
    let flag = Arc::new(AtomicBool::new(false));
    let runner = Runner::new(&f.db, &f.args(&[]), f.command_line.clone(), LEGACY, solo())
        .unwrap()
        .with_interrupt(flag.clone());
    let (recorder, check) = (Recorder::default(), CommitCheck::new(&f.db, Some(flag)));
    let summary = runner.run(&Fanout(vec![&recorder, &check])).unwrap();
    assert!(summary.interrupted);
    let events = recorder.events();
    assert!(
        !events.iter().any(|e| matches!(e, Event::RepeatFinished { .. })),
        "{events:?}"
    );
    assert_eq!(events.last(), Some(&Event::SessionFinished(SessionEnd::Interrupted)));
    let data = summary.store.load_session(summary.session).unwrap();
    assert_eq!(data.session.status, SessionStatus::Interrupted);
    assert!(data.samples.is_empty());
    let stored = data.session.info.run_options.as_deref().expect("options stored");
    // The given options, with the seed of the order the runner drew and the margin it used (no
    // stopping rule: no sequential design).
    let stored = RunOptions::from_json(stored).unwrap();
    assert!(stored.seed.is_some() && stored.sequential.is_none(), "{stored:?}");
    assert_eq!(stored.equivalence, Some(crate::stats::verdict::DECIDED_MARGIN_PCT));
    assert_eq!(
        RunOptions {
            seed: None,
            equivalence: None,
            ..stored
        },
        f.args(&[])
    );
    drop(summary);
    before_resume(&f.db);

    let runner = Runner::new(&f.db, &f.args(&["--resume", "latest"]), vec![], LEGACY, solo())
        .unwrap()
        .with_interrupt(Arc::new(AtomicBool::new(false)));
    let (recorder, check) = (Recorder::default(), CommitCheck::new(&f.db, None));
    let summary = runner.run(&Fanout(vec![&recorder, &check])).unwrap();
    assert!(!summary.interrupted);
    let events = recorder.events();
    assert_eq!(
        events.first(),
        Some(&Event::SessionStarted {
            session: summary.session,
            resumed: true,
            repeats_left: 3,
            repeats_total: 3,
        })
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::RepeatFinished { .. }))
            .count(),
        3
    );
    assert_eq!(check.stored_at_announce(), [1, 2, 3]);
    let data = summary.store.load_session(summary.session).unwrap();
    assert_eq!(data.session.status, SessionStatus::Complete);
}

#[test]
fn resume_refuses_suite_options_and_a_missing_database() {
    let f = Fixture::new();
    let a = f.args(&["--resume", "latest", "--dir", "/tmp"]);
    let e = Runner::new(&f.db, &a, vec![], LEGACY, solo()).err().expect("refused");
    assert!(
        e.is_usage() && e.to_string().contains("drop the other suite options"),
        "{e}"
    );
    let e = Runner::new(&f.db, &f.args(&["--resume", "latest"]), vec![], LEGACY, solo())
        .err()
        .expect("refused");
    assert!(e.is_usage() && e.to_string().contains("nothing to resume"), "{e}");
}

/// `--seed N` is the seed of the order, kept in the options stored with the session; without
/// it one is drawn; an adaptive session stores its sequential design too; `--resume` runs the
/// stored seed, so the resumed plan's order is the first run's.
#[test]
fn the_order_seed_and_the_sequential_design_are_stored_with_a_new_session() {
    let f = Fixture::new();
    let seeded = Runner::new(&f.db, &f.args_plus(&["--seed", "7"]), vec![], LEGACY, solo()).unwrap();
    assert_eq!(seeded.options.seed, Some(7));
    let queue = RoundQueue::new(&seeded.plan, &seeded.suite, &seeded.options, &|_| false);
    let queued: Vec<usize> = queue.todo.iter().map(|(i, _)| *i).collect();
    assert_eq!(
        queued,
        crate::plan::run_order(&seeded.plan, seeded.suite.policy.order, Some(7))
    );
    let drawn = Runner::new(&f.db, &f.args(&[]), vec![], LEGACY, solo()).unwrap();
    assert!(drawn.options.seed.is_some());
    let adaptive = Runner::new(&f.db, &f.args_plus(&["--budget", "1h"]), vec![], LEGACY, solo()).unwrap();
    assert_eq!(
        adaptive.options.sequential,
        Some(crate::stats::verdict::Design::pending(2, adaptive::MAX_REPEATS)),
        "a budget's last look is fixed once its rounds are timed"
    );
    let stored = RunOptions::from_json(&adaptive.options.to_json()).unwrap();
    assert_eq!(stored.sequential, adaptive.options.sequential);
    let precise = Runner::new(&f.db, &f.args_plus(&["--precision", "5"]), vec![], LEGACY, solo()).unwrap();
    assert_eq!(
        precise.options.sequential,
        Some(crate::stats::verdict::Design::new(2, adaptive::MAX_REPEATS)),
        "without a budget the cap is the last look"
    );
}

/// The equivalence margin: the given `--equivalence` is stored with a new session and is the
/// stopping rule's; without it the default is stored; a margin out of range is a usage error.
#[test]
fn the_equivalence_margin_is_stored_and_decides_the_rule() {
    let f = Fixture::new();
    let wide = Runner::new(
        &f.db,
        &f.args_plus(&["--budget", "1h", "--equivalence", "5"]),
        vec![],
        LEGACY,
        solo(),
    )
    .unwrap();
    assert_eq!(wide.options.equivalence, Some(5.0));
    assert!(wide.options.to_json().contains(r#""equivalence":5.0"#));
    let queue = RoundQueue::new(&wide.plan, &wide.suite, &wide.options, &|_| false);
    assert_eq!(queue.rule.as_ref().map(|r| r.margin_pct), Some(5.0));
    let default = Runner::new(&f.db, &f.args_plus(&["--budget", "1h"]), vec![], LEGACY, solo()).unwrap();
    assert_eq!(
        default.options.equivalence,
        Some(crate::stats::verdict::DECIDED_MARGIN_PCT)
    );
    for bad in ["0", "100", "-2"] {
        let e = Runner::new(&f.db, &f.args_plus(&["--equivalence", bad]), vec![], LEGACY, solo())
            .err()
            .expect("refused");
        assert!(e.is_usage() && e.to_string().contains("--equivalence"), "{e}");
    }
}

/// Interrupts the run when the sizes are set (before the first measured repeat).
struct StopAtSizes(Arc<AtomicBool>);

impl Observer for StopAtSizes {
    fn sizes_set(&self, _resized: &[crate::sizing::ResizedWorkload]) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Sizes set by time are stored before the first measured repeat: a session interrupted
/// right after resumes with them (its plan runs the stored spec, nothing is decided again),
/// and `--fixed-sizes` never sets them.
#[test]
fn the_sizes_the_warm_ups_set_are_stored_and_a_resumed_session_runs_them() {
    let f = Fixture::new();
    let flag = Arc::new(AtomicBool::new(false));
    let runner = Runner::new(&f.db, &f.args(&[]), f.command_line.clone(), LEGACY, solo())
        .unwrap()
        .with_interrupt(flag.clone());
    let planned = runner.plan().cases[0].clone();
    let summary = runner.run(&StopAtSizes(flag)).unwrap();
    assert!(summary.interrupted);
    let data = summary.store.load_session(summary.session).unwrap();
    let stored = RunOptions::from_json(data.session.info.run_options.as_deref().unwrap()).unwrap();
    let [resized] = stored.resized.as_slice() else {
        panic!("{stored:?}")
    };
    assert_ne!(resized.kind, planned.workload.kind, "{resized:?}");
    // The case record holds the spec the measured repeats run, under the planned id.
    let case = &data.cases[0];
    assert_eq!(case.case_id, planned.id.0);
    assert_eq!(case.workload_json, serde_json::to_string(&resized.kind).unwrap());
    drop(summary);

    let runner = Runner::new(&f.db, &f.args(&["--resume", "latest"]), vec![], LEGACY, solo())
        .unwrap()
        .with_interrupt(Arc::new(AtomicBool::new(false)));
    assert_eq!(runner.plan().cases[0].workload.kind, resized.kind);
    assert_eq!(runner.plan().cases[0].id, planned.id);
    let recorder = Recorder::default();
    let summary = runner.run(&recorder).unwrap();
    assert!(!summary.interrupted);
    let events = recorder.events();
    assert!(!events.iter().any(|e| matches!(e, Event::SizesSet(_))), "{events:?}");
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::RepeatFinished { failed: false, .. }))
            .count(),
        2
    );
    drop(summary);

    let runner = Runner::new(&f.db, &f.args_plus(&["--fixed-sizes"]), vec![], LEGACY, solo())
        .unwrap()
        .with_interrupt(Arc::new(AtomicBool::new(false)));
    let recorder = Recorder::default();
    let summary = runner.run(&recorder).unwrap();
    assert!(!recorder.events().iter().any(|e| matches!(e, Event::SizesSet(_))));
    let data = summary.store.load_session(summary.session).unwrap();
    assert!(data
        .session
        .info
        .run_options
        .as_deref()
        .is_some_and(|o| !o.contains("resized")));
}
