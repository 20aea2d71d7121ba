//! Maps the subcommands of [`crate::cli`] to the code that does them: `run` to the
//! [`crate::run::Runner`] (with the terminal observer) followed by the same report code
//! `fsbench report` uses, reading back what was just stored; `plan` to [`crate::run::plan_view`];
//! `report` and `compare` to the report code; `verify` ([`verify`]), `list` and `dataset`
//! ([`list`]), `doctor` and `cleanup` ([`machine`]), `record` ([`record`]), `noise` ([`noise`]: A/A sessions through
//! [`crate::run::aa`]) to their handlers in this folder; `history`,
//! `push`, completions and man pages to their modules.
//!
//! Errors are `anyhow` here (the edge); [`exit_code`] maps them: configuration and usage errors
//! to 2, interruption to 130, everything else to 1.

mod list;
mod machine;
mod noise;
mod push;
mod record;
pub mod shell;
mod untraced_run;
mod verify;

use crate::cli::{Cli, Command, CompareArgs, ReportArgs, RunArgs};
use crate::config::{self, ConfigError};
use crate::history::HistoryError;
use crate::report::{self, Format};
use crate::run::{self, RunError, RunSummary, Runner, TerminalObserver};
use crate::signal;
use crate::store::{ResultStore, StoreError};
use anyhow::{Context, Result};
use push::PushError;
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
            || matches!(
                cause.downcast_ref::<HistoryError>(),
                Some(HistoryError::Usage(_) | HistoryError::Store(StoreError::Missing { .. }))
            )
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
    // A run takes SIGINT/SIGTERM as a request to stop cleanly from its first moment: before
    // the handlers exist the default action kills it, which the Runner's setup (suite, plan,
    // tool probes) could take long enough on a loaded machine to be hit by (exit 143, not 130).
    if matches!(cli.command, Command::Run(_) | Command::Verify(_) | Command::Noise(_)) {
        signal::interrupt_flag();
    }
    let verbosity = if cli.quiet {
        -1
    } else {
        cli.verbose.min(i8::MAX as u8) as i8
    };
    match cli.command {
        Command::Run(a) => cmd_run(&cli.db, &a, verbosity),
        Command::Noise(a) => noise::cmd_noise(&cli.db, &a, verbosity),
        Command::Plan(a) => cmd_plan(&a),
        Command::Report(a) => cmd_report(&cli.db, &a),
        Command::Compare(a) => cmd_compare(&cli.db, &a),
        Command::List { what } => list::cmd_list(&cli.db, what),
        Command::Doctor(a) => machine::cmd_doctor(&a),
        Command::Cleanup(a) => machine::cmd_cleanup(&a),
        Command::GuestAgent { job, out } => Ok(crate::guest::agent::main(&job, &out)),
        Command::Dataset { what } => list::cmd_dataset(what),
        Command::Powerdisk(a) => {
            crate::engine::workloads::powercut::disk::serve(&a.base, &a.mount, a.model, a.seed)
                .map_err(|e| anyhow::anyhow!("powerdisk {}: {e}", a.mount.display()))?;
            Ok(0)
        }
        Command::History(a) => Ok(crate::history::cmd_history(
            &cli.db,
            &a.options(),
            config::stored_suite_policy,
        )?),
        Command::Push { sessions, to } => push::cmd_push(&cli.db, &sessions, &to),
        Command::Completions { shell } => {
            shell::completions(shell, &mut std::io::stdout().lock());
            Ok(0)
        }
        Command::Man { dir: None } => {
            shell::man_page(&mut std::io::stdout().lock())?;
            Ok(0)
        }
        Command::Man { dir: Some(dir) } => {
            for p in shell::man_pages_to(&dir).with_context(|| format!("writing man pages into {}", dir.display()))? {
                println!("{}", p.display());
            }
            Ok(0)
        }
        Command::Verify(a) => verify::cmd_verify(&cli.db, &a),
        Command::Record(a) => record::cmd_record(&a),
        Command::UntracedRun(a) => untraced_run::cmd_untraced_run(&a),
    }
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
    // The ranks this run is given: one process, or MPI's under mpirun.
    let cluster = crate::comm::cluster::init().map_err(|e| AppError::Usage(e.to_string()))?;
    let runner = Runner::new(
        db,
        &a.options(),
        std::env::args().collect(),
        crate::cli::legacy_run_options,
        cluster.clone(),
    )?;
    let strict = a.strict || runner.strict();
    if cluster.rank() != 0 {
        if runner.follow()? {
            return Ok(130);
        }
        cluster.finish();
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
    if let Some(e) = cluster.failure() {
        eprintln!("fsbench: error: the ranks stopped: {e}; every completed repeat is stored (session {session}), nothing is left mounted");
        return Ok(1);
    }
    cluster.finish();
    if interrupted {
        eprintln!("fsbench: interrupted; every completed repeat is stored (session {session}), nothing is left mounted; `fsbench run --resume {session}` continues it");
        return Ok(130);
    }
    if let Some(m) = failures.message(strict) {
        eprintln!("{m}");
    }
    Ok(failures.exit_code(strict))
}

/// The features' sections of the report, in the order it shows them (each "" for a session it
/// did not touch).
fn sections() -> Vec<&'static dyn report::Section> {
    let [powercut, durability, crashprops, repair, aging] = crate::sections::all();
    vec![
        &report::capacity::CapacitySection,
        powercut,
        durability,
        crashprops,
        repair,
        aging,
        &report::calibration::CalibrationSection,
        &report::noise::NoiseSection,
        &crate::comm::section::RanksSection,
        &crate::verify::html::ForestSection,
    ]
}

/// The report model of a stored session, with the trim and confidence of its stored policy and
/// the features' [`sections`].
fn build_model(store: &dyn ResultStore, session: i64) -> Result<report::ReportModel> {
    let data = store.load_session(session)?;
    let policy = &data.session.info.policy;
    Ok(report::build_with(
        &data,
        policy.trim as usize,
        policy.confidence,
        &sections(),
    ))
}

pub(super) fn print_report(store: &dyn ResultStore, session: i64, format: Format, out: &mut dyn Write) -> Result<()> {
    let model = build_model(store, session)?;
    out.write_all(report::render(&model, format, &sections()).as_bytes())?;
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
    let store = crate::store::open_existing(db, config::stored_suite_policy)?;
    let resolve = |r: &str| store.resolve(r).map_err(|e| AppError::Usage(e.to_string()));
    let (base, cand) = (
        build_model(store.as_ref(), resolve(&a.base)?)?,
        build_model(store.as_ref(), resolve(&a.cand)?)?,
    );
    let references = report::noise::references(store.as_ref(), &base, cand.session.id)?;
    let references: Vec<&report::ReportModel> = references.iter().collect();
    let cmp = report::compare::compare(&base, &cand, &references, a.threshold, a.equivalence, a.gate);
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
    let store = crate::store::open_existing(db, config::stored_suite_policy)?;
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
