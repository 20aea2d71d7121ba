//! `fsbench plan`: what a run would do, printed before anything is made: the cases, their
//! phases and image sizes, the run order, the baseline, and what the target needs.
//!
//! Invariant: the plan of a command line is the plan `run` executes (same suite loading, same
//! availability, same target), and printing it writes nothing but the text.

use super::{load_suite, RunError, RunOptions, Target};
use crate::config::{self, Suite};
use crate::plan::{self, Plan};
use std::io::Write;

/// Prints the plan of `a` to `out`, then refuses (as `run` would) an unconfirmed device or a
/// plan the target cannot hold.
pub fn show_plan(a: &RunOptions, out: &mut dyn Write) -> Result<(), RunError> {
    let suite = load_suite(a, None)?;
    let mut target = Target::for_suite(a, &suite)?;
    let plan = plan::expand(&suite, &|v| target.availability(v));
    print_plan(&suite, &plan, &target, out).map_err(RunError::Output)?;
    target.confirm()?;
    target.check_space(&plan)?;
    Ok(())
}

/// The text of a plan.
pub fn print_plan(suite: &Suite, plan: &Plan, target: &Target, out: &mut dyn Write) -> std::io::Result<()> {
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
            config::Order::Alternating => "alternating",
        },
        p.trim,
        p.confidence * 100.0
    )?;
    writeln!(
        out,
        "Fresh filesystem before every repeat; caches dropped before every phase: {}",
        p.drop_caches
    )?;
    if suite.loop_io == crate::policy::LoopIo::Buffered {
        writeln!(
            out,
            "Loop devices buffered by request (loop_io = \"buffered\"): the host's page cache serves and buffers every image's I/O"
        )?;
    }
    let w = plan
        .cases
        .iter()
        .map(|c| c.variant.name.len())
        .max()
        .unwrap_or(4)
        .max(7);
    writeln!(out, "\n  {:w$}  {:12}  {:>10}  what", "variant", "workload", "image")?;
    for c in &plan.cases {
        let image = target.image_label(c);
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
            let mut line = format!("  {:w$}  {:12}  {:>10}  phases: {}", "", "", "", phases_on(c));
            if !c.variant.mount_opts.is_empty() || !c.variant.mkfs_args.is_empty() {
                line.push_str(&format!(
                    "; mkfs {:?} mount {:?}",
                    c.variant.mkfs_args,
                    c.variant.mount_opts.join(",")
                ));
            }
            writeln!(out, "{line}")?;
            // How the image was sized (an existing directory makes none).
            if !matches!(target, Target::Dir { .. }) {
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
    target.write_plan_lines(plan, out)
}

/// A case's phases, each the filesystem cannot run marked: `symlink (unsupported on exfat: no
/// symbolic links)`.
fn phases_on(c: &crate::plan::Case) -> String {
    let w = c.workload.kind.workload();
    let t = c.variant.fs();
    w.phases()
        .iter()
        .map(|p| match t.lacking(w.needs(p)) {
            Some(f) => format!("{p} (unsupported on {}: no {})", t.name, f.describe()),
            None => p.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}
