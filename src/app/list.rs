//! `fsbench list` and `fsbench dataset`: what fsbench offers (presets, workloads, filesystem
//! types and whether this machine can make them, stored sessions) and the datasets it generates.
//! Prints to standard output; exit code 0 unless something fails.

use super::AppError;
use crate::cli::{DatasetCommand, ListWhat};
use crate::config::{self, Overrides};
use crate::engine::WorkloadKind;
use crate::provision;
use crate::run::{self, TerminalObserver};
use crate::signal;
use anyhow::Result;
use std::io::Write;
use std::path::Path;

pub(super) fn cmd_list(db: &Path, what: ListWhat) -> Result<i32> {
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
            for t in crate::fstype::candidate_types() {
                writeln!(out, "{t:10} {}", fs_route(&t).1)?;
            }
        }
        ListWhat::Sessions => {
            if !crate::store::is_postgres(db) && !db.exists() {
                writeln!(out, "no results database at {} yet", db.display())?;
                return Ok(0);
            }
            let store = crate::store::open(db, config::stored_suite_policy)?;
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

pub(super) fn cmd_dataset(what: DatasetCommand) -> Result<i32> {
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

/// Whether type `t` can run here and how, for `list filesystems` and `doctor`: `available`
/// (the running kernel), `in a QEMU guest kernel (Linux R, module M loaded in the guest): --fs
/// T@guest; not on the running kernel: WHY`, or `unavailable: WHY` with the guest's reason too.
pub(super) fn fs_route(t: &str) -> (bool, String) {
    match provision::availability(t) {
        Ok(()) => {
            let fuse = match crate::fstype::FsType::of(t).backing {
                crate::fstype::Backing::Fuse { helper } => {
                    format!(" through FUSE ({helper} in userspace, on the running kernel)")
                }
                _ => String::new(),
            };
            (true, format!("available{fuse}{}", provision::zfs::listing_suffix(t)))
        }
        // A type the running kernel lacks may still run under a guest kernel.
        Err(r) => match crate::config::parse_fs_list(&format!("{t}@guest"))
            .ok()
            .and_then(|v| v.into_iter().next())
            .map(|v| crate::guest::route(&v))
        {
            Some(Ok(how)) => (
                true,
                format!("in a QEMU guest kernel ({how}): --fs {t}@guest; not on the running kernel: {r}"),
            ),
            Some(Err(g)) if g != r => (false, format!("unavailable: {r}; in a guest: {g}")),
            _ => (false, format!("unavailable: {r}")),
        },
    }
}
