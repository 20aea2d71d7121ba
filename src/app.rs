//! Maps the subcommands of [`crate::cli`] to the code that does them: `run` to the
//! [`crate::run::Runner`] (with the terminal observer) followed by the same report code
//! `fsbench report` uses, reading back what was just stored; `plan` to [`crate::run::plan_view`];
//! `report`, `compare`, `list`, `doctor`, `cleanup` and `dataset` to their modules.
//!
//! Errors are `anyhow` here (the edge); [`exit_code`] maps them: configuration and usage errors
//! to 2, interruption to 130, everything else to 1.

use crate::cli::{Cli, Command, CompareArgs, DatasetCommand, ListWhat, ReportArgs, RunArgs, ScratchArgs};
use crate::cli_extra::PushError;
use crate::config::{self, ConfigError, Overrides};
use crate::engine::WorkloadKind;
use crate::history::HistoryError;
use crate::provision;
use crate::report::{self, Format};
use crate::run::{self, RunError, RunSummary, Runner, TerminalObserver};
use crate::store::{ResultStore, StoreError};
use crate::units::Bytes;
use crate::{signal, sysinfo};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;

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
        if cause.downcast_ref::<RunError>().is_some_and(RunError::is_usage)
            || matches!(cause.downcast_ref::<StoreError>(), Some(StoreError::Missing { .. }))
            || matches!(cause.downcast_ref::<HistoryError>(), Some(HistoryError::Usage(_)))
            || matches!(cause.downcast_ref::<PushError>(), Some(PushError::Usage(_)))
        {
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
    // Sessions stored before schema 4 get their policy from their suite text, which config reads.
    crate::store::set_suite_policy_reader(config::stored_suite_policy);
    // A run takes SIGINT/SIGTERM as a request to stop cleanly from its first moment: before
    // the handlers exist the default action kills it, which the Runner's setup (suite, plan,
    // tool probes) could take long enough on a loaded machine to be hit by (exit 143, not 130).
    if matches!(cli.command, Command::Run(_) | Command::Verify(_)) {
        signal::interrupt_flag();
    }
    let verbosity = if cli.quiet {
        -1
    } else {
        cli.verbose.min(i8::MAX as u8) as i8
    };
    match cli.command {
        Command::Run(a) => cmd_run(&cli.db, &a, verbosity),
        Command::Plan(a) => cmd_plan(&a),
        Command::Report(a) => cmd_report(&cli.db, &a),
        Command::Compare(a) => cmd_compare(&cli.db, &a),
        Command::List { what } => cmd_list(&cli.db, what),
        Command::Doctor(a) => cmd_doctor(&a),
        Command::Cleanup(a) => cmd_cleanup(&a),
        Command::GuestAgent { job, out } => Ok(crate::guest::agent::main(&job, &out)),
        Command::Dataset { what } => cmd_dataset(what),
        Command::Powerdisk(a) => {
            crate::powercut::disk::serve(&a.base, &a.mount, a.model)
                .map_err(|e| anyhow::anyhow!("powerdisk {}: {e}", a.mount.display()))?;
            Ok(0)
        }
        Command::History(a) => crate::history::cmd_history(&cli.db, &a),
        Command::Push { sessions, to } => crate::cli_extra::cmd_push(&cli.db, &sessions, &to),
        Command::Completions { shell } => {
            crate::cli_extra::completions(shell, &mut std::io::stdout().lock());
            Ok(0)
        }
        Command::Man { dir: None } => {
            crate::cli_extra::man_page(&mut std::io::stdout().lock())?;
            Ok(0)
        }
        Command::Man { dir: Some(dir) } => {
            for p in crate::cli_extra::man_pages_to(&dir)
                .with_context(|| format!("writing man pages into {}", dir.display()))?
            {
                println!("{}", p.display());
            }
            Ok(0)
        }
        Command::Verify(a) => cmd_verify(&cli.db, &a),
    }
}

/// `fsbench verify`: the verify session through the runner, its ratio table, the HTML report;
/// 1 when a row is outside tolerance (or a repeat failed), 130 when interrupted.
fn cmd_verify(db: &Path, a: &crate::cli::VerifyArgs) -> Result<i32> {
    let o = crate::verify::VerifyOptions {
        fs: a.fs.clone(),
        pairs: a.pairs,
        scale: a.scale,
        only: a.only.clone().unwrap_or_default(),
        scratch: a.scratch.scratch.clone(),
        label: a.label.clone(),
        mismatch: a.mismatch,
    };
    let RunSummary {
        store,
        session,
        interrupted,
        failed,
        ..
    } = crate::verify::run(db, &o, &TerminalObserver::new())?;
    let data = store.load_session(session)?;
    let table =
        crate::verify::ratios::table(&data.session.info.suite_name, &data.cases, &data.samples).unwrap_or_default();
    let html = db.with_file_name("verify.html");
    let mut file = std::fs::File::create(&html).with_context(|| format!("writing {}", html.display()))?;
    print_report(store.as_ref(), session, Format::Html, &mut file)?;
    println!(
        "\nfsbench verify: session {session}, native / referee per metric (mean of each side, 95 % log-ratio CI)\n"
    );
    print!("{}", crate::verify::ratios::render_text(&table));
    println!(
        "\nResults: session {session} in {}; HTML report with the forest plot: {}",
        db.display(),
        html.display()
    );
    if interrupted {
        eprintln!("fsbench: interrupted; every completed repeat is stored (session {session}); `fsbench run --resume {session}` continues it");
        return Ok(130);
    }
    if failed > 0 {
        eprintln!("fsbench: {failed} repeat(s) failed; `fsbench report {session}` says which and why");
    }
    if table.failures() > 0 || failed > 0 {
        eprintln!(
            "fsbench verify: {} metric(s) outside tolerance or without data",
            table.failures()
        );
        return Ok(1);
    }
    Ok(0)
}

fn cmd_plan(a: &RunArgs) -> Result<i32> {
    run::plan_view::show_plan(&a.options(), &mut std::io::stdout().lock())?;
    Ok(0)
}

/// `fsbench run`: the runner with the terminal observer, then the report of what is stored;
/// 130 when interrupted; when a repeat failed, 1 if no case produced results or the run is
/// strict, else 0 with a warning naming the failed cases ([`run::Failures`]).
fn cmd_run(db: &Path, a: &RunArgs, verbosity: i8) -> Result<i32> {
    // Many ranks (src/comm): `--ranks N` starts mpirun with this command line; under mpirun,
    // ranks other than 0 only run workloads, and rank 0 does what follows.
    let launched = crate::comm::launched_by_mpirun();
    if let (Some(n), false) = (a.ranks, launched) {
        return crate::comm::launch::run_under_mpirun(n).map_err(|e| AppError::Usage(e.to_string()).into());
    }
    let comm = crate::comm::init().map_err(|e| AppError::Usage(e.to_string()))?;
    let runner = Runner::new(
        db,
        &a.options(),
        std::env::args().collect(),
        crate::cli::legacy_run_options,
    )?;
    let strict = a.strict || runner.strict();
    if comm.rank() != 0 {
        if runner.follow()? {
            return Ok(130);
        }
        comm.finish();
        return Ok(0);
    }
    let events = match &a.events {
        Some(p) => Some(
            crate::events::EventStream::open(p)
                .map_err(|e| AppError::Usage(format!("--events {}: {e}", p.display())))?,
        ),
        None => None,
    };
    let events_on_stdout = a.events.as_deref() == Some(Path::new("-"));
    let terminal = TerminalObserver::with_verbosity(verbosity);
    let mut observers: Vec<&dyn run::Observer> = vec![&terminal];
    if let Some(e) = &events {
        observers.push(e);
    }
    let RunSummary {
        store,
        session,
        interrupted,
        failures,
        ..
    } = runner.run(&run::Fanout(observers))?;
    // With `--events -` standard output carries the events only: the report goes to the HTML
    // file and `fsbench report` as always.
    let mut stdout = std::io::stdout().lock();
    let mut sink = std::io::sink();
    let out: &mut dyn Write = if events_on_stdout { &mut sink } else { &mut stdout };
    print_report(store.as_ref(), session, Format::Table, out)?;
    // Next to a SQLite database; for PostgreSQL in the default results folder.
    let html = if crate::store::is_postgres(db) {
        let p = Path::new(crate::cli::DEFAULT_DB).with_file_name("report.html");
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        p
    } else {
        db.with_file_name("report.html")
    };
    let mut file = std::fs::File::create(&html).with_context(|| format!("writing {}", html.display()))?;
    print_report(store.as_ref(), session, Format::Html, &mut file)?;
    if verbosity >= 0 {
        writeln!(
            out,
            "\nResults: session {session} in {}; HTML report: {}",
            db.display(),
            html.display()
        )?;
        writeln!(
            out,
            "More: fsbench --db {} report {session} --format json|csv|md|html",
            db.display()
        )?;
    }
    if let Some(e) = crate::comm::failure() {
        eprintln!("fsbench: error: the ranks stopped: {e}; every completed repeat is stored (session {session}), nothing is left mounted");
        return Ok(1);
    }
    comm.finish();
    if interrupted {
        eprintln!("fsbench: interrupted; every completed repeat is stored (session {session}), nothing is left mounted; `fsbench run --resume {session}` continues it");
        return Ok(130);
    }
    if let Some(m) = failures.message(strict) {
        eprintln!("{m}");
    }
    Ok(failures.exit_code(strict))
}

/// The report model of a stored session, with the trim and confidence of its stored policy.
fn build_model(store: &dyn ResultStore, session: i64) -> Result<report::ReportModel> {
    let data = store.load_session(session)?;
    let policy = &data.session.info.policy;
    Ok(report::build(&data, policy.trim as usize, policy.confidence))
}

fn print_report(store: &dyn ResultStore, session: i64, format: Format, out: &mut dyn Write) -> Result<()> {
    out.write_all(report::render(&build_model(store, session)?, format).as_bytes())?;
    Ok(())
}

/// `fsbench compare`: usage errors (no database, unknown session, bad threshold, nothing in
/// common) exit 2; otherwise the comparison's exit code, 1 when a metric regressed.
fn cmd_compare(db: &Path, a: &CompareArgs) -> Result<i32> {
    if !(a.threshold.is_finite() && a.threshold >= 0.0) {
        return Err(AppError::Usage(format!("--threshold {}: use a percentage such as 5", a.threshold)).into());
    }
    if !(a.equivalence > 0.0 && a.equivalence < 100.0) {
        return Err(AppError::Usage(format!("--equivalence {}: use a percentage such as 3", a.equivalence)).into());
    }
    let store = crate::store::open_existing(db)?;
    let resolve = |r: &str| store.resolve(r).map_err(|e| AppError::Usage(e.to_string()));
    let (base, cand) = (
        build_model(store.as_ref(), resolve(&a.base)?)?,
        build_model(store.as_ref(), resolve(&a.cand)?)?,
    );
    let cmp = report::compare::compare(&base, &cand, a.threshold, a.equivalence, a.gate);
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
    let store = crate::store::open_existing(db)?;
    let id = store.resolve(&a.session).map_err(|e| AppError::Usage(e.to_string()))?;
    match &a.output {
        Some(path) => {
            let mut buf = Vec::new();
            print_report(store.as_ref(), id, a.format, &mut buf)?;
            std::fs::write(path, buf).with_context(|| format!("writing {}", path.display()))?;
            eprintln!("fsbench: wrote {}", path.display());
        }
        None => print_report(store.as_ref(), id, a.format, &mut std::io::stdout().lock())?,
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
            for k in WorkloadKind::defaults() {
                writeln!(
                    out,
                    "{:12} {}\n{:12} phases: {}",
                    k.name(),
                    k.workload().describe(),
                    "",
                    k.workload().phases().join(", ")
                )?;
            }
        }
        ListWhat::Filesystems => {
            for t in candidate_fs_types() {
                match provision::availability(&t) {
                    Ok(()) => writeln!(out, "{t:10} available{}", provision::zfs::listing_suffix(&t))?,
                    // A type the running kernel lacks may still run under a guest kernel.
                    Err(r) => match crate::config::parse_fs_list(&format!("{t}@guest"))
                        .ok()
                        .and_then(|v| v.into_iter().next())
                        .map(|v| crate::guest::availability(&v))
                    {
                        Some(Ok(())) => writeln!(
                            out,
                            "{t:10} unavailable here: {r}; runs under a QEMU guest kernel: --fs {t}@guest"
                        )?,
                        _ => writeln!(out, "{t:10} unavailable: {r}")?,
                    },
                }
            }
        }
        ListWhat::Sessions => {
            if !crate::store::is_postgres(db) && !db.exists() {
                writeln!(out, "no results database at {} yet", db.display())?;
                return Ok(0);
            }
            let store = crate::store::open(db)?;
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
    let root = crate::engine::host::is_root();
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
            Ok(()) => println!("ok    filesystem {t}{}", provision::zfs::listing_suffix(&t)),
            Err(r) => println!("--    filesystem {t}: {r}"),
        }
    }
    println!();
    for tool in ["fio", "bonnie++", "sysbench", "dbench", "postmark"] {
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
    if crate::comm::HAS_MPI {
        println!("info  MPI: built in (mpirun -np N fsbench run …, or fsbench run --ranks N)");
    } else {
        println!("info  MPI: not built in ({})", crate::comm::NO_MPI);
    }
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
        DatasetCommand::Gen(g) => {
            let flag = signal::interrupt_flag().clone();
            let mut out = std::io::stdout().lock();
            // Laying out a large tree is a long step: its bar (and ETA) on a terminal.
            let terminal = TerminalObserver::new();
            let (generated, _) = run::steps::relayed(&terminal, Default::default(), || {
                crate::datasets::generate_into(g.kind, &g.dir, g.scale, g.seed, g.content, &flag, &mut out)
            });
            match generated {
                Ok(_) => Ok(0),
                Err(crate::datasets::DatasetError::Interrupted) => Err(AppError::Interrupted.into()),
                Err(crate::datasets::DatasetError::Invalid(m)) => Err(AppError::Usage(m).into()),
                Err(e) => {
                    Err(anyhow::Error::from(e).context(format!("generating {} into {}", g.kind, g.dir.display())))
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
}
