//! `fsbench verify` at the edge: the verify session through the runner with the terminal
//! observer, its ratio table, the HTML report, and the exit code.

use super::print_report;
use crate::report::Format;
use crate::run::{RunSummary, TerminalObserver};
use anyhow::{Context, Result};
use std::path::Path;

/// `fsbench verify`: the verify session through the runner, its ratio table, the HTML report;
/// 1 when a row is outside tolerance (or a repeat failed), 130 when interrupted.
pub(super) fn cmd_verify(db: &Path, a: &crate::cli::VerifyArgs) -> Result<i32> {
    let o = crate::verify::VerifyOptions {
        fs: a.fs.clone(),
        pairs: a.pairs,
        max_pairs: a.max_pairs,
        budget: a.budget.0,
        scale: a.scale,
        only: a.only.clone().unwrap_or_default(),
        scratch: a.scratch.scratch.clone(),
        label: a.label.clone(),
        mismatch: a.mismatch,
        fast_seeks: a.fast_seeks,
        bias: a.bias_native.clone(),
    };
    let RunSummary {
        store,
        session,
        interrupted,
        failed,
        ..
    } = crate::verify::run(db, &o, &TerminalObserver::new())?;
    let data = store.load_session(session)?;
    let table = crate::verify::ratios::table(
        &data.session.info.suite_name,
        &data.cases,
        &data.samples,
        data.baseline.as_ref(),
    )
    .unwrap_or_default();
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
            "fsbench verify: {} metric(s) outside tolerance, below a bound, stalled or without data",
            table.failures()
        );
        return Ok(1);
    }
    Ok(0)
}
