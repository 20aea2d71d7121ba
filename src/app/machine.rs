//! `fsbench doctor` and `fsbench cleanup`: this machine's readiness (each problem with its fix)
//! and the undoing of what a killed run left in the scratch folder.

use crate::cli::ScratchArgs;
use crate::provision;
use crate::sysinfo;
use crate::units::Bytes;
use anyhow::Result;
use std::path::Path;

pub(super) fn cmd_doctor(a: &ScratchArgs) -> Result<i32> {
    let mut problems = 0;
    let mut check = |ok: bool, what: &str, fix: &str| {
        if ok {
            println!("ok    {what}");
        } else {
            problems += 1;
            println!("FIX   {what}: {fix}");
        }
    };
    let root = crate::host::is_root();
    check(root, "running as root", "loop devices, mkfs and mount need root; run with sudo, or use `fsbench run --dir PATH` on an existing directory");
    check(
        Path::new("/dev/loop-control").exists(),
        "loop devices (/dev/loop-control)",
        "the kernel needs CONFIG_BLK_DEV_LOOP; on a module kernel run `modprobe loop`",
    );
    check(
        crate::host::find_tool("losetup").is_some(),
        "losetup",
        &crate::host::install_hint("losetup"),
    );
    check(
        crate::host::find_tool("mount").is_some(),
        "mount",
        &crate::host::install_hint("mount"),
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
    for t in crate::fstype::candidate_types() {
        match super::list::fs_route(&t) {
            (true, how) => println!("ok    filesystem {t}: {how}"),
            (false, why) => println!("--    filesystem {t}: {why}"),
        }
    }
    println!();
    for tool in ["fio", "bonnie++", "sysbench", "dbench", "postmark"] {
        match sysinfo::tool_version(tool) {
            Some(v) => println!("ok    optional {tool}: {v}"),
            None => println!(
                "--    optional {tool}: not installed ({})",
                crate::host::install_hint(tool)
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

/// Every kind of undo step a state file may hold: the generic ones and each module's own, so
/// `fsbench cleanup` reads them without provision importing those modules.
pub fn undo_kinds() -> crate::undo::Kinds {
    crate::undo::Kinds::generic()
        .with::<provision::zfs::DestroyPool>()
        .with::<provision::zfs::StopDaemon>()
        .with::<crate::cgroup::RemoveCgroup>()
        .with::<crate::balloon::RestoreReporting>()
        .with::<crate::engine::workloads::oltp::pgshm::RemovePgShm>()
}

pub(super) fn cmd_cleanup(a: &ScratchArgs) -> Result<i32> {
    let r = provision::cleanup_leftovers(&a.scratch, &undo_kinds())?;
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
