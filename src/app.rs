//! Wires the subcommands of [`crate::cli`] to the pipeline (DESIGN.md): load the suite, expand
//! the plan, provision each slot behind a guard, run the workload, store the repeat, and end
//! with the same report code `fsbench report` uses, reading back what was just stored.
//!
//! Errors are `anyhow` here (the edge); [`exit_code`] maps them: configuration and usage errors
//! to 2, interruption to 130, everything else to 1.

use crate::baseline::{self, BaselineError};
use crate::cli::{Cli, Command, CompareArgs, DatasetCommand, ListWhat, ReportArgs, RunArgs, ScratchArgs};
use crate::config::{self, ConfigError, FsVariant, Overrides, Suite};
use crate::engine::{RunContext, WorkloadKind};
use crate::fstype::FsType;
use crate::metric::Unit;
use crate::plan::{self, Plan};
use crate::provision::{self, DirProvisioner, ImageProvisioner, Provisioner, RunState};
use crate::report::{self, Format};
use crate::store::{
    BaselineStatus, BaselineValue, CaseAvailability, CaseRecord, NewSample, NewSession, RawBaseline, SampleStatus,
    SessionStatus, Store,
};
use crate::units::Bytes;
use crate::{signal, sysinfo};
use anyhow::{Context, Result};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// Errors that decide the exit code.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The user asked for something impossible; exit code 2.
    #[error("{0}")]
    Usage(String),
    /// SIGINT or SIGTERM; exit code 130.
    #[error("interrupted")]
    Interrupted,
}

/// Exit code for an error: 2 for usage/configuration, 130 for interruption, else 1.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    for cause in err.chain() {
        if cause.downcast_ref::<ConfigError>().is_some() {
            return 2;
        }
        match cause.downcast_ref::<AppError>() {
            Some(AppError::Usage(_)) => return 2,
            Some(AppError::Interrupted) => return 130,
            None => {}
        }
    }
    1
}

/// Runs a parsed command line; `Ok` carries the exit code.
pub fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Run(a) => cmd_run(&cli.db, &a),
        Command::Plan(a) => cmd_plan(&a),
        Command::Report(a) => cmd_report(&cli.db, &a),
        Command::Compare(a) => cmd_compare(&cli.db, &a),
        Command::List { what } => cmd_list(&cli.db, what),
        Command::Doctor(a) => cmd_doctor(&a),
        Command::Cleanup(a) => cmd_cleanup(&a),
        Command::Dataset { what } => cmd_dataset(what),
    }
}

fn overrides(a: &RunArgs) -> Result<Overrides> {
    if let Some(s) = a.scale {
        if !(s.is_finite() && s > 0.0) {
            return Err(AppError::Usage(format!("--scale {s}: use a positive number such as 0.1 or 2")).into());
        }
    }
    if a.repeat == Some(0) {
        return Err(AppError::Usage("--repeat 0: at least one measured repeat is needed".into()).into());
    }
    let variants = a.fs.as_deref().map(config::parse_fs_list).transpose()?;
    Ok(Overrides {
        variants,
        only: a.only.clone(),
        repeats: a.repeat,
        warmup: a.warmup,
        scale: a.scale,
    })
}

/// Loads the suite a run asks for. `stored_text` replaces the file or preset when resuming, so a
/// resumed session runs exactly the suite it started with even if the file changed since.
fn load_suite(a: &RunArgs, stored_text: Option<&str>) -> Result<Suite> {
    let o = overrides(a)?;
    let mut suite = match (stored_text, &a.suite, &a.preset) {
        (Some(text), _, _) => config::load_str(text, "stored suite", &o)?,
        (None, Some(path), _) => config::load_file(path, &o)?,
        (None, None, p) => config::load_preset(p.as_deref().unwrap_or("quick"), &o)?,
    };
    if let Some(dir) = &a.dir {
        if !dir.is_dir() {
            return Err(AppError::Usage(format!("--dir {}: not an existing directory", dir.display())).into());
        }
        let fs_type = provision::dir_fs_type(dir);
        suite.variants = vec![FsVariant {
            name: fs_type.clone(),
            fs_type,
            mkfs_args: vec![],
            mount_opts: vec![],
            image_size: None,
        }];
    }
    Ok(suite)
}

/// The confirmed device of `--device`, or `None` for loop images / `--dir`. Every check runs
/// before anything is written.
fn device_target(a: &RunArgs) -> Result<Option<provision::safety::DeviceInfo>> {
    match (&a.device, &a.wipe) {
        (None, None) => Ok(None),
        (None, Some(w)) => Err(AppError::Usage(format!(
            "--wipe {} confirms a --device; give --device {} too",
            w.display(),
            w.display()
        ))
        .into()),
        (Some(d), w) => provision::safety::confirm(d, w.as_deref())
            .map(Some)
            .map_err(|e| AppError::Usage(e).into()),
    }
}

fn availability_for(a: &RunArgs) -> impl Fn(&FsVariant) -> Result<(), String> + '_ {
    move |v: &FsVariant| {
        if a.dir.is_some() {
            Ok(())
        } else {
            provision::availability(&v.fs_type)
        }
    }
}

fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Refuses a plan the scratch folder (or RAM, for tmpfs) cannot hold.
fn check_space(plan: &Plan, a: &RunArgs) -> Result<()> {
    if let Some(dev) = &a.device {
        let need = plan
            .cases
            .iter()
            .filter(|c| c.unavailable.is_none())
            .map(|c| c.estimate.image_bytes)
            .max()
            .unwrap_or(0);
        let size = provision::safety::inspect(dev).map(|i| i.size_bytes).unwrap_or(0);
        if need > size {
            return Err(AppError::Usage(format!(
                "{} holds {} but the workloads need {}: use a larger device or --scale",
                dev.display(),
                Bytes(size).human(),
                Bytes(need).human()
            ))
            .into());
        }
        return Ok(());
    }
    let where_ = a.dir.as_deref().unwrap_or(&a.scratch.scratch);
    let need = if let Some(d) = &a.dir {
        plan::need_in_dir(plan, &provision::dir_fs_type(d))
    } else {
        plan.peak_scratch_bytes
    };
    if let Some(free) = provision::free_bytes(where_) {
        if need > free {
            return Err(AppError::Usage(format!(
                "{} has {} free but the plan needs {} at once: free some space, choose another folder with --scratch, or shrink the run with --scale",
                where_.display(),
                Bytes(free).human(),
                Bytes(need).human()
            ))
            .into());
        }
    }
    let tmpfs_need = plan
        .cases
        .iter()
        .filter(|c| c.unavailable.is_none() && FsType::of(&c.variant.fs_type).in_memory() && a.dir.is_none())
        .map(|c| c.image_bytes)
        .max()
        .unwrap_or(0);
    if let Some(avail) = mem_available() {
        if tmpfs_need > avail {
            return Err(AppError::Usage(format!(
                "tmpfs needs {} of RAM but only {} is available: use --scale to shrink the run",
                Bytes(tmpfs_need).human(),
                Bytes(avail).human()
            ))
            .into());
        }
    }
    Ok(())
}

fn print_plan(suite: &Suite, plan: &Plan, a: &RunArgs, out: &mut dyn Write) -> std::io::Result<()> {
    let p = &suite.policy;
    let runnable = plan.cases.iter().filter(|c| c.unavailable.is_none()).count();
    writeln!(
        out,
        "Plan: suite `{}` (scale {}): {} case(s) × ({} warm-up + {} measured) = {} repeats, order {}, trim {} per end, {:.0} % CI",
        suite.name,
        suite.scale,
        runnable,
        p.warmup,
        p.repeats,
        plan.slots.len(),
        match p.order {
            config::Order::Interleaved => "interleaved",
            config::Order::Sequential => "sequential",
        },
        p.trim,
        p.confidence * 100.0
    )?;
    writeln!(
        out,
        "Fresh filesystem before every repeat; caches dropped before every phase: {}",
        p.drop_caches
    )?;
    let w = plan
        .cases
        .iter()
        .map(|c| c.variant.name.len())
        .max()
        .unwrap_or(4)
        .max(7);
    writeln!(out, "\n  {:w$}  {:12}  {:>10}  what", "variant", "workload", "image")?;
    for c in &plan.cases {
        let image = if a.dir.is_some() {
            "-".to_string()
        } else if a.device.is_some() {
            "device".to_string()
        } else if FsType::of(&c.variant.fs_type).in_memory() {
            format!("{} RAM", Bytes(c.image_bytes).human())
        } else {
            Bytes(c.image_bytes).human()
        };
        let what = match &c.unavailable {
            Some(r) => format!("UNAVAILABLE: {r}"),
            None => c.workload.kind.workload().describe(),
        };
        writeln!(
            out,
            "  {:w$}  {:12}  {:>10}  {}",
            c.variant.name, c.workload.name, image, what
        )?;
        if c.unavailable.is_none() {
            let mut line = format!(
                "  {:w$}  {:12}  {:>10}  phases: {}",
                "",
                "",
                "",
                c.workload.kind.workload().phases().join(", ")
            );
            if !c.variant.mount_opts.is_empty() || !c.variant.mkfs_args.is_empty() {
                line.push_str(&format!(
                    "; mkfs {:?} mount {:?}",
                    c.variant.mkfs_args,
                    c.variant.mount_opts.join(",")
                ));
            }
            writeln!(out, "{line}")?;
            if a.dir.is_none() {
                writeln!(out, "  {:w$}  {:12}  {:>10}  space: {}", "", "", "", c.estimate.basis)?;
            }
        }
    }
    let order: Vec<String> = plan
        .slots
        .iter()
        .map(|s| {
            format!(
                "{}#{}{}",
                plan.cases[s.case].variant.name,
                s.repeat + 1,
                if s.warmup { "w" } else { "" }
            )
        })
        .collect();
    writeln!(out, "\nRun order: {}", order.join(" "))?;
    if a.dir.is_none() && needs_block_device(plan) {
        writeln!(
            out,
            "Before the first case: raw-device baseline, a sequential O_DIRECT write and read of {} of {}",
            Bytes(baseline::DEFAULT_BYTES).human(),
            if a.device.is_some() {
                "the device"
            } else {
                "a loop image (less if scratch space is short)"
            }
        )?;
    }
    match &a.dir {
        Some(d) => writeln!(out, "Target: existing directory {} (no mkfs, no mount)", d.display())?,
        None if a.device.is_some() => {}
        None => writeln!(
            out,
            "Scratch: {} needs {} at once (one image at a time); {} free",
            a.scratch.scratch.display(),
            Bytes(plan.peak_scratch_bytes).human(),
            provision::free_bytes(&a.scratch.scratch)
                .map(|b| Bytes(b).human())
                .unwrap_or_else(|| "unknown".into())
        )?,
    }
    Ok(())
}

fn cmd_plan(a: &RunArgs) -> Result<i32> {
    let suite = load_suite(a, None)?;
    let plan = plan::expand(&suite, &availability_for(a));
    print_plan(&suite, &plan, a, &mut std::io::stdout().lock())?;
    if let Some(dev) = &a.device {
        // Show what would be destroyed before saying whether it may be.
        match provision::safety::inspect(dev) {
            Ok(i) => println!(
                "Device: {} = /dev/{} ({}, {}); by-id: {}; EVERYTHING ON IT WILL BE DESTROYED",
                dev.display(),
                i.name,
                i.model,
                Bytes(i.size_bytes).human(),
                if i.by_id.is_empty() {
                    "none".to_string()
                } else {
                    i.by_id.join(", ")
                }
            ),
            Err(e) => println!("Device: {e}"),
        }
    }
    device_target(a)?;
    check_space(&plan, a)?;
    Ok(0)
}

/// Safe path component for a slot: letters, digits and `-` only.
fn tag_for(slot_index: usize, variant: &str) -> String {
    let clean: String = variant
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("s{slot_index:03}-{clean}")
}

struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    fn new(total: usize) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::new(total as u64);
        bar.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} ETA {eta} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        Progress { bar: Some(bar) }
    }

    fn slot_started(&self, i: usize, total: usize, what: &str) {
        match &self.bar {
            Some(b) => b.set_message(what.to_string()),
            None => eprintln!("[{}/{}] {what}", i + 1, total),
        }
    }

    fn phase(&self, what: &str, phase: &str) {
        if let Some(b) = &self.bar {
            b.set_message(format!("{what}: {phase}"));
        }
    }

    fn slot_done(&self, line: &str) {
        match &self.bar {
            Some(b) => {
                b.println(line);
                b.inc(1);
            }
            None => eprintln!("      {line}"),
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

fn case_record(c: &plan::Case) -> CaseRecord {
    let mut mkfs_args = provision::default_mkfs_args(&c.variant.fs_type);
    mkfs_args.extend(c.variant.mkfs_args.iter().cloned());
    CaseRecord {
        case_id: c.id.0.clone(),
        variant: c.variant.name.clone(),
        fs_type: c.variant.fs_type.clone(),
        mkfs_args,
        mount_opts: c.variant.mount_opts.clone(),
        workload: c.workload.name.clone(),
        workload_kind: c.workload.kind.workload().kind().to_string(),
        workload_json: serde_json::to_string(&c.workload.kind).unwrap_or_default(),
        availability: match &c.unavailable {
            None => CaseAvailability::Available,
            Some(r) => CaseAvailability::Unavailable(r.clone()),
        },
    }
}

/// What `--resume` brings from the stored session.
struct Resume {
    session: i64,
    /// `(case id, repeat)` pairs already stored with status ok: they are not run again.
    done: std::collections::HashSet<(String, u32)>,
}

/// Parses the command line a stored session was started with, to resume it the same way.
fn stored_run_args(args: &[String]) -> Result<RunArgs> {
    let cli = Cli::try_parse_from(args)
        .map_err(|e| AppError::Usage(format!("cannot resume: stored command line does not parse: {e}")))?;
    match cli.command {
        Command::Run(a) => Ok(a),
        _ => Err(AppError::Usage("cannot resume: the stored command line is not a `run`".into()).into()),
    }
}

fn cmd_run(db: &Path, given: &RunArgs) -> Result<i32> {
    let interrupt = signal::interrupt_flag().clone();
    let (a, suite, resume, store) = match &given.resume {
        None => (given.clone(), load_suite(given, None)?, None, None),
        Some(reference) => {
            if given.suite.is_some()
                || given.preset.is_some()
                || given.fs.is_some()
                || given.only.is_some()
                || given.repeat.is_some()
                || given.warmup.is_some()
                || given.scale.is_some()
                || given.dir.is_some()
            {
                return Err(AppError::Usage(
                    "--resume runs the stored session's own suite and options: drop the other suite options".into(),
                )
                .into());
            }
            if !db.exists() {
                return Err(
                    AppError::Usage(format!("no results database at {}: nothing to resume", db.display())).into(),
                );
            }
            let store = Store::open(db)?;
            let id = store.resolve(reference).map_err(|e| AppError::Usage(e.to_string()))?;
            let data = store.load_session(id)?;
            if data.session.status == SessionStatus::Complete {
                return Err(AppError::Usage(format!("session {id} is complete: nothing to resume")).into());
            }
            let a = stored_run_args(&data.session.info.args)?;
            let suite = load_suite(&a, Some(&data.session.info.suite_text))?;
            let mut done = std::collections::HashSet::new();
            for c in &data.cases {
                for r in store.completed_repeats(id, &c.case_id)? {
                    done.insert((c.case_id.clone(), r));
                }
            }
            (a, suite, Some(Resume { session: id, done }), Some(store))
        }
    };
    let plan = plan::expand(&suite, &availability_for(&a));
    check_space(&plan, &a)?;
    for c in plan.cases.iter().filter(|c| c.unavailable.is_some()) {
        eprintln!(
            "fsbench: {} × {}: unavailable: {}",
            c.variant.name,
            c.workload.name,
            c.unavailable.as_deref().unwrap_or("")
        );
    }
    if plan.slots.is_empty() {
        return Err(AppError::Usage("nothing to run: every filesystem variant is unavailable here (see above); `fsbench doctor` says what to install".into()).into());
    }
    let device = device_target(&a)?;
    offer_cleanup(&a.scratch.scratch);

    let store = match store {
        Some(s) => s,
        None => Store::open(db).with_context(|| format!("opening results database {}", db.display()))?,
    };
    let state = RunState::create(&a.scratch.scratch)?;
    let provisioner: Box<dyn Provisioner> = match (&a.dir, device) {
        (Some(d), _) => Box::new(DirProvisioner::new(d.clone(), state.clone())?),
        (None, Some(dev)) => Box::new(provision::DeviceProvisioner::new(dev, state.clone())),
        (None, None) => Box::new(ImageProvisioner::new(state.clone())),
    };
    let session = match &resume {
        Some(r) => {
            store.finish_session(r.session, SessionStatus::Running)?;
            r.session
        }
        None => store.begin_session(&NewSession {
            label: a.label.clone(),
            suite_name: suite.name.clone(),
            suite_text: suite.source_text.clone(),
            args: std::env::args().collect(),
            fsbench_version: env!("CARGO_PKG_VERSION").to_string(),
            host: sysinfo::host_info(),
            tool_versions: {
                let mut tools = sysinfo::tool_versions(suite.variants.iter().map(|v| v.fs_type.as_str()));
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
        })?,
    };
    for c in &plan.cases {
        store.record_case(session, &case_record(c))?;
    }
    let todo: Vec<&plan::Slot> = plan
        .slots
        .iter()
        .filter(|s| {
            resume
                .as_ref()
                .is_none_or(|r| !r.done.contains(&(plan.cases[s.case].id.0.clone(), s.repeat)))
        })
        .collect();
    match &resume {
        Some(_) => eprintln!(
            "fsbench: resuming session {session}: {} of {} repeats left; results in {}",
            todo.len(),
            plan.slots.len(),
            db.display()
        ),
        None => eprintln!(
            "fsbench: session {session}: {} repeats; results in {}",
            todo.len(),
            db.display()
        ),
    }

    // The raw device's own speed, once per session, before the first case (a resumed session
    // keeps the baseline it has). Interrupted, nothing is stored and the loop below stops.
    if store.load_baseline(session)?.is_none() {
        if let Some(b) = measure_baseline(provisioner.as_ref(), &plan, &interrupt) {
            store.record_baseline(session, &b)?;
        }
    }

    let progress = Progress::new(todo.len());
    let mut interrupted = false;
    for (i, slot) in todo.iter().enumerate() {
        if signal::interrupted() {
            interrupted = true;
            break;
        }
        let case = &plan.cases[slot.case];
        let what = format!(
            "{} × {} repeat {}/{}{}",
            case.variant.name,
            case.workload.name,
            slot.repeat + 1,
            suite.policy.warmup + suite.policy.repeats,
            if slot.warmup { " (warm-up)" } else { "" }
        );
        progress.slot_started(i, todo.len(), &what);
        let started_at = crate::store::now_rfc3339();
        let t0 = Instant::now();
        let mut sample = NewSample {
            case_id: case.id.0.clone(),
            repeat: slot.repeat,
            is_warmup: slot.warmup,
            started_at,
            wall_s: 0.0,
            status: SampleStatus::Ok,
            device: None,
            effective_mount_opts: None,
            notes: vec![],
            measurements: vec![],
        };
        let tag = tag_for(
            plan.slots.iter().position(|s| s == *slot).unwrap_or(i),
            &case.variant.name,
        );
        let outcome = run_slot(
            provisioner.as_ref(),
            case,
            &suite,
            &tag,
            &interrupt,
            &|p| progress.phase(&what, p),
            &mut sample,
        );
        sample.wall_s = t0.elapsed().as_secs_f64();
        let line = match outcome {
            SlotOutcome::Interrupted => {
                interrupted = true;
                break;
            }
            SlotOutcome::Failed(e) => {
                let line = format!("{what}: FAILED: {e}");
                sample.status = SampleStatus::Failed(e);
                line
            }
            SlotOutcome::Done => format!("{what}: done in {:.1} s", sample.wall_s),
        };
        // Committed before it is announced: a line on screen means the repeat is stored.
        store.record_sample(session, &sample)?;
        progress.slot_done(&line);
    }
    progress.finish();
    let status = if interrupted {
        SessionStatus::Interrupted
    } else {
        SessionStatus::Complete
    };
    store.finish_session(session, status)?;
    state.finish();

    print_report(&store, session, Format::Table, &mut std::io::stdout().lock())?;
    let html = db.with_file_name("report.html");
    let mut file = std::fs::File::create(&html).with_context(|| format!("writing {}", html.display()))?;
    print_report(&store, session, Format::Html, &mut file)?;
    println!(
        "\nResults: session {session} in {}; HTML report: {}",
        db.display(),
        html.display()
    );
    println!(
        "More: fsbench --db {} report {session} --format json|csv|md|html",
        db.display()
    );
    if interrupted {
        eprintln!("fsbench: interrupted; every completed repeat is stored (session {session}), nothing is left mounted; `fsbench run --resume {session}` continues it");
        return Ok(130);
    }
    // The stored session is the truth: a resumed run replaced the repeats it ran again.
    let failed = store
        .load_session(session)?
        .samples
        .iter()
        .filter(|s| matches!(s.sample.status, SampleStatus::Failed(_)))
        .count();
    if failed > 0 {
        eprintln!("fsbench: {failed} repeat(s) failed; the report above says which and why");
        return Ok(1);
    }
    Ok(0)
}

/// Whether any case that will run puts a filesystem on a block device (anything but tmpfs):
/// only then is there a raw device to measure.
fn needs_block_device(plan: &Plan) -> bool {
    plan.cases
        .iter()
        .any(|c| c.unavailable.is_none() && !FsType::of(&c.variant.fs_type).in_memory())
}

/// How the baseline is measured, for the report; `what` is the device (`a 512 MiB sparse image …`).
fn baseline_method(what: &str) -> String {
    format!(
        "sequential O_DIRECT in 1 MiB requests, write (fdatasync included) then read, of {what}, before the \
         first case"
    )
}

/// Measures the raw device under the target once, before the first case ([`crate::baseline`]),
/// for the report's cache-bound flag. Never fails the run: a failure comes back as a failed
/// baseline, which the report turns into a warning. `None` when interrupted: nothing is stored,
/// so a resumed session measures again.
fn measure_baseline(provisioner: &dyn Provisioner, plan: &Plan, interrupt: &AtomicBool) -> Option<RawBaseline> {
    let failed = |device: Option<String>, method: String, error: String| RawBaseline {
        status: BaselineStatus::Failed(error),
        device,
        method,
        note: None,
        values: Vec::new(),
    };
    if !needs_block_device(plan) {
        return Some(RawBaseline::no_device(
            "every filesystem of this run is tmpfs, which lives in memory",
        ));
    }
    let raw = match provisioner.raw_device(baseline::DEFAULT_BYTES) {
        Ok(Some(raw)) => raw,
        Ok(None) => {
            return Some(RawBaseline::no_device(format!(
                "{}: fsbench owns no block device there",
                provisioner.describe()
            )))
        }
        Err(_) if signal::interrupted() => return None,
        Err(e) => {
            eprintln!("fsbench: raw-device baseline not measured: {e}; the run goes on without it");
            return Some(failed(None, baseline_method("the target's device"), e.to_string()));
        }
    };
    eprintln!(
        "fsbench: raw-device baseline: sequential O_DIRECT write and read of {} of {}",
        Bytes(raw.bytes).human(),
        raw.path.display()
    );
    let result = baseline::measure(&raw.path, raw.bytes, interrupt);
    let mut b = RawBaseline {
        status: BaselineStatus::Measured,
        device: Some(raw.path.display().to_string()),
        method: baseline_method(&raw.what),
        note: raw.note.clone(),
        values: Vec::new(),
    };
    if let Err(e) = raw.release() {
        eprintln!("fsbench: cleanup after the raw-device baseline incomplete: {e}; run `fsbench cleanup`");
    }
    match result {
        Err(BaselineError::Interrupted) => None,
        Err(_) if signal::interrupted() => None,
        Err(e) => {
            eprintln!("fsbench: raw-device baseline failed: {e}; the run goes on without it");
            b.status = BaselineStatus::Failed(e.to_string());
            Some(b)
        }
        Ok(rates) => {
            let value = |name: &str, p: baseline::Pass| BaselineValue {
                name: name.to_string(),
                value: p.mib_per_sec(),
                unit: Unit::MibPerSec,
                bytes: p.bytes,
                seconds: p.seconds,
            };
            b.values = vec![
                value(RawBaseline::SEQ_WRITE, rates.write),
                value(RawBaseline::SEQ_READ, rates.read),
            ];
            eprintln!(
                "fsbench: raw device: write {:.0} MiB/s, read {:.0} MiB/s",
                rates.write.mib_per_sec(),
                rates.read.mib_per_sec()
            );
            Some(b)
        }
    }
}

/// Tells the user when a killed run left mounts, loop devices or images in the scratch folder.
fn offer_cleanup(scratch: &Path) {
    let dead = provision::dead_runs(scratch);
    if !dead.is_empty() {
        eprintln!(
            "fsbench: {} killed run(s) left resources in {} (mounts, loop devices or images): `fsbench cleanup --scratch {}` undoes exactly those",
            dead.len(),
            scratch.display(),
            scratch.display()
        );
    }
}

enum SlotOutcome {
    Done,
    Failed(String),
    Interrupted,
}

/// Provisions, runs and tears down one repeat, filling `sample`. The guard is dropped (undoing
/// the mount, loop device and image) before this returns, whatever happened.
fn run_slot(
    provisioner: &dyn Provisioner,
    case: &plan::Case,
    suite: &Suite,
    tag: &str,
    interrupt: &std::sync::atomic::AtomicBool,
    on_phase: &(dyn Fn(&str) + Sync),
    sample: &mut NewSample,
) -> SlotOutcome {
    let mounted = match provisioner.provision(&case.variant, case.image_bytes, tag) {
        Ok(m) => m,
        Err(_) if signal::interrupted() => return SlotOutcome::Interrupted,
        Err(e) => return SlotOutcome::Failed(format!("provisioning {}: {e}", case.variant.name)),
    };
    sample.device = mounted.device.clone();
    sample.effective_mount_opts = mounted.effective_opts.clone();
    let ctx = RunContext {
        dir: &mounted.workdir,
        drop_caches: suite.policy.drop_caches,
        interrupt,
        on_phase,
    };
    let result = crate::engine::run(case.workload.kind.workload(), &ctx);
    let teardown = mounted.teardown();
    match result {
        Err(crate::engine::EngineError::Interrupted) => SlotOutcome::Interrupted,
        Err(_) if signal::interrupted() => SlotOutcome::Interrupted,
        Err(e) => SlotOutcome::Failed(e.to_string()),
        Ok(raw) => {
            sample.measurements = raw.measurements();
            sample.notes = raw.notes;
            match teardown {
                Ok(()) => SlotOutcome::Done,
                Err(e) => SlotOutcome::Failed(format!("teardown: {e}")),
            }
        }
    }
}

/// Trim and confidence of a stored session, from its suite text (defaults if unreadable).
fn session_policy(suite_text: &str) -> config::Policy {
    config::load_str(suite_text, "stored suite", &Overrides::default())
        .map(|s| s.policy)
        .unwrap_or_default()
}

/// The report model of a stored session, with the trim and confidence of its own suite.
fn build_model(store: &Store, session: i64) -> Result<report::ReportModel> {
    let data = store.load_session(session)?;
    let policy = session_policy(&data.session.info.suite_text);
    Ok(report::build(&data, policy.trim as usize, policy.confidence))
}

fn print_report(store: &Store, session: i64, format: Format, out: &mut dyn Write) -> Result<()> {
    out.write_all(report::render(&build_model(store, session)?, format).as_bytes())?;
    Ok(())
}

/// `fsbench compare`: usage errors (no database, unknown session, bad threshold, nothing in
/// common) exit 2; otherwise the comparison's exit code, 1 when a metric regressed.
fn cmd_compare(db: &Path, a: &CompareArgs) -> Result<i32> {
    if !(a.threshold.is_finite() && a.threshold >= 0.0) {
        return Err(AppError::Usage(format!("--threshold {}: use a percentage such as 5", a.threshold)).into());
    }
    if !db.exists() {
        return Err(AppError::Usage(format!(
            "no results database at {}: run `fsbench run` first, or pass --db",
            db.display()
        ))
        .into());
    }
    let store = Store::open(db)?;
    let resolve = |r: &str| store.resolve(r).map_err(|e| AppError::Usage(e.to_string()));
    let (base, cand) = (
        build_model(&store, resolve(&a.base)?)?,
        build_model(&store, resolve(&a.cand)?)?,
    );
    let cmp = report::compare::compare(&base, &cand, a.threshold);
    if cmp.changes.is_empty() {
        let msg = format!(
            "sessions {} and {} have no metric in common",
            base.session.id, cand.session.id
        );
        return Err(AppError::Usage(msg).into());
    }
    let text = report::compare::render(&cmp, a.format);
    match &a.output {
        Some(path) => std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?,
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(cmp.exit_code())
}

fn cmd_report(db: &Path, a: &ReportArgs) -> Result<i32> {
    if !db.exists() {
        return Err(AppError::Usage(format!(
            "no results database at {}: run `fsbench run` first, or pass --db",
            db.display()
        ))
        .into());
    }
    let store = Store::open(db)?;
    let id = store.resolve(&a.session).map_err(|e| AppError::Usage(e.to_string()))?;
    match &a.output {
        Some(path) => {
            let mut buf = Vec::new();
            print_report(&store, id, a.format, &mut buf)?;
            std::fs::write(path, buf).with_context(|| format!("writing {}", path.display()))?;
            eprintln!("fsbench: wrote {}", path.display());
        }
        None => print_report(&store, id, a.format, &mut std::io::stdout().lock())?,
    }
    Ok(0)
}

/// Filesystem types worth listing: common ones, what the kernel has, and every mkfs.* found.
fn candidate_fs_types() -> Vec<String> {
    crate::fstype::candidate_types()
}

fn cmd_list(db: &Path, what: ListWhat) -> Result<i32> {
    let mut out = std::io::stdout().lock();
    match what {
        ListWhat::Presets => {
            for name in config::preset_names() {
                let desc = config::load_preset(name, &Overrides::default())
                    .map(|s| s.description)
                    .unwrap_or_default();
                writeln!(out, "{name:20} {desc}")?;
            }
        }
        ListWhat::Workloads => {
            for kind in WorkloadKind::KINDS {
                let text = format!("kind = \"{kind}\"");
                match toml::from_str::<WorkloadKind>(&text) {
                    Ok(k) => writeln!(
                        out,
                        "{kind:12} {}\n{:12} phases: {}",
                        k.workload().describe(),
                        "",
                        k.workload().phases().join(", ")
                    )?,
                    Err(_) => writeln!(out, "{kind}")?,
                }
            }
        }
        ListWhat::Filesystems => {
            for t in candidate_fs_types() {
                match provision::availability(&t) {
                    Ok(()) => writeln!(out, "{t:10} available")?,
                    Err(r) => writeln!(out, "{t:10} unavailable: {r}")?,
                }
            }
        }
        ListWhat::Sessions => {
            if !db.exists() {
                writeln!(out, "no results database at {} yet", db.display())?;
                return Ok(0);
            }
            let store = Store::open(db)?;
            for s in store.list_sessions()? {
                writeln!(
                    out,
                    "{:>5}  {}  {:11}  {:16} {}",
                    s.id,
                    s.started_at,
                    s.status.as_str(),
                    s.info.suite_name,
                    s.info.label.as_deref().unwrap_or("")
                )?;
            }
        }
    }
    Ok(0)
}

fn cmd_doctor(a: &ScratchArgs) -> Result<i32> {
    let mut problems = 0;
    let mut check = |ok: bool, what: &str, fix: &str| {
        if ok {
            println!("ok    {what}");
        } else {
            problems += 1;
            println!("FIX   {what}: {fix}");
        }
    };
    let root = provision::is_root();
    check(root, "running as root", "loop devices, mkfs and mount need root; run with sudo, or use `fsbench run --dir PATH` on an existing directory");
    check(
        Path::new("/dev/loop-control").exists(),
        "loop devices (/dev/loop-control)",
        "the kernel needs CONFIG_BLK_DEV_LOOP; on a module kernel run `modprobe loop`",
    );
    check(
        provision::find_tool("losetup").is_some(),
        "losetup",
        &provision::install_hint("losetup"),
    );
    check(
        provision::find_tool("mount").is_some(),
        "mount",
        &provision::install_hint("mount"),
    );
    let dc = std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/sys/vm/drop_caches")
        .is_ok();
    check(dc, "drop_caches writable", "needs root and a writable /proc/sys (not in an unprivileged container); without it results may come from the page cache");
    let free = provision::free_bytes(&a.scratch).unwrap_or(0);
    check(
        free >= Bytes::GIB,
        &format!("scratch {} ({} free)", a.scratch.display(), Bytes(free).human()),
        "needs at least 1 GiB free for the quick preset; use --scratch DIR",
    );
    println!();
    for t in candidate_fs_types() {
        match provision::availability(&t) {
            Ok(()) => println!("ok    filesystem {t}"),
            Err(r) => println!("--    filesystem {t}: {r}"),
        }
    }
    println!();
    for tool in ["fio", "bonnie++", "sysbench"] {
        match sysinfo::tool_version(tool) {
            Some(v) => println!("ok    optional {tool}: {v}"),
            None => println!(
                "--    optional {tool}: not installed ({})",
                provision::install_hint(tool)
            ),
        }
    }
    println!();
    println!("info  per-operation clock: {}", crate::engine::clock::best().describe());
    println!();
    if problems == 0 {
        println!("Ready: `fsbench run` compares ext4, xfs and btrfs with the quick preset.");
        Ok(0)
    } else {
        println!("{problems} problem(s) above; each line says how to fix it.");
        Ok(1)
    }
}

fn cmd_cleanup(a: &ScratchArgs) -> Result<i32> {
    let r = provision::cleanup_leftovers(&a.scratch)?;
    for l in &r.undone {
        println!("{l}");
    }
    for l in &r.live_runs {
        println!("left alone (run still alive): {}", l.display());
    }
    for l in &r.failed {
        eprintln!("failed: {l}");
    }
    if r.undone.is_empty() && r.failed.is_empty() {
        println!("nothing to clean up in {}", a.scratch.display());
    }
    Ok(if r.failed.is_empty() { 0 } else { 1 })
}

fn cmd_dataset(what: DatasetCommand) -> Result<i32> {
    match what {
        DatasetCommand::Gen(a) => {
            let flag = signal::interrupt_flag().clone();
            let mut out = std::io::stdout().lock();
            match crate::datasets::generate_into(a.kind, &a.dir, a.scale, a.seed, a.content, &flag, &mut out) {
                Ok(_) => Ok(0),
                Err(crate::datasets::DatasetError::Interrupted) => Err(AppError::Interrupted.into()),
                Err(crate::datasets::DatasetError::Invalid(m)) => Err(AppError::Usage(m).into()),
                Err(e) => {
                    Err(anyhow::Error::from(e).context(format!("generating {} into {}", a.kind, a.dir.display())))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_and_config_errors_exit_2_interrupts_130() {
        let e: anyhow::Error = AppError::Usage("x".into()).into();
        assert_eq!(exit_code(&e), 2);
        let e: anyhow::Error = anyhow::Error::from(AppError::Interrupted).context("while running");
        assert_eq!(exit_code(&e), 130);
        let e = anyhow::anyhow!("disk on fire");
        assert_eq!(exit_code(&e), 1);
    }

    #[test]
    fn slot_tags_are_safe_path_components() {
        assert_eq!(tag_for(7, "btrfs:compress=lzo"), "s007-btrfs-compress-lzo");
        assert_eq!(tag_for(0, "../x"), "s000----x");
    }
}
