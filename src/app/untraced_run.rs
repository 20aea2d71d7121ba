//! `fsbench record --untraced-run`: the program's second run, without strace, whose system
//! calls `crate::trace::untraced` lines up with the traced run's (issue 44; doc/replay.md, *An
//! untraced run*).
//!
//! [`run`] starts `unshare --mount --net --propagation private -- fsbench untraced-run …` (a
//! hidden subcommand, [`cmd_untraced_run`]), which inside those namespaces:
//! 1. mounts a tmpfs on an empty directory of the recording's temporary folder and copies the
//!    root into it (`cp -a`), then bind-mounts the copy over the root;
//! 2. bind-mounts perf's output folder over itself, and gives `/tmp` and `/dev/shm` an empty
//!    private tmpfs each (unless the root or the working directory is under one; perf's folder,
//!    under `/tmp`, is bound at its place in the new one), so temporary files work as they did;
//! 3. makes every other mount read-only (a bind remount keeping its nosuid, nodev, noexec and
//!    atime flags; mounts under the root are hidden by the copy), then reads the mount table
//!    again and refuses to go on if one is still writable;
//! 4. runs the program in the recording's working directory under `perf record -k monotonic -e
//!    raw_syscalls:sys_enter -e raw_syscalls:sys_exit`, its standard streams on /dev/null.
//!
//! Invariants (safety): the program's second run can write nothing but the copy and the private
//! temporary folders (gone with the namespace, whatever ends the run: nothing to clean up
//! after a SIGKILL) and perf's folder
//! (fsbench's own, removed by the recording); it has no network but a loopback that is down.
//! What it can still reach: a server over a UNIX socket on a read-only mount, signals, System
//! V IPC — hence the option, never the default. A write the first run could not make fails
//! with EROFS, so the runs differ and `crate::trace::untraced` refuses the times.
//!
//! perf's own cost per system call ([`syscall_cost`]) is measured by the recording too: `dd`
//! copying 20 000 and 40 000 bytes one at a time (two calls a byte), three times each, with and
//! without perf's two tracepoints; the difference of the differences per call.

use crate::cli::UntracedRunArgs;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// perf's events for the untraced run and the cost measurement: every system call's entry and
/// exit, nothing else.
const EVENTS: [&str; 4] = ["-e", "raw_syscalls:sys_enter", "-e", "raw_syscalls:sys_exit"];

/// `perf record`'s options before the events: the monotonic clock (as the traced run), a large
/// buffer.
const RECORD: [&str; 6] = ["record", "-q", "-k", "monotonic", "-m", "4096"];

/// The untraced run's record: `perf script`'s text and perf's cost per system call, seconds.
pub struct Untraced {
    /// `perf script --ns -F tid,time,event,trace` of the run.
    pub text: String,
    /// perf's cost per system call ([`syscall_cost`]), seconds.
    pub per_call_s: f64,
}

/// Runs `command` a second time (see the module documentation) with `tmp` as the recording's
/// temporary folder; `tree_bytes` is the root's size (its copy must fit in half the memory
/// available). Why not, when it cannot.
pub fn run(
    perf: &Path,
    root: &Path,
    cwd: &Path,
    tmp: &Path,
    command: &[String],
    tree_bytes: u64,
) -> Result<Untraced, String> {
    if !crate::host::is_root() {
        return Err("it needs root (private mounts)".into());
    }
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024);
    if tree_bytes > available / 2 {
        return Err(format!(
            "the copy of the root ({} MiB) would not fit in half the memory available ({} MiB)",
            tree_bytes >> 20,
            available >> 20
        ));
    }
    if tmp.starts_with(root) {
        return Err(format!(
            "the recording's temporary folder {} is under the root",
            tmp.display()
        ));
    }
    let per_call_s = syscall_cost(perf, tmp)?;
    let (copy, out) = (tmp.join("untraced-root"), tmp.join("untraced-out"));
    for d in [&copy, &out, &tmp.join("untraced-tmp")] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let exe = std::env::current_exe().map_err(|e| format!("finding fsbench: {e}"))?;
    let ns = std::fs::read_link("/proc/self/ns/mnt").map_err(|e| format!("reading the mount namespace: {e}"))?;
    let done = Command::new("unshare")
        .args(["--mount", "--net", "--propagation", "private", "--"])
        .arg(exe)
        .arg("untraced-run")
        .args(
            [
                ("--root", root),
                ("--copy", &copy),
                ("--out", &out),
                ("--cwd", cwd),
                ("--perf", perf),
                ("--parent-ns", &ns),
            ]
            .iter()
            .flat_map(|(k, v)| [k.as_ref(), v.as_os_str()]),
        )
        .arg("--")
        .args(command)
        .stdin(same_input())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("unshare: {e}"))?;
    let data = out.join("untraced.data");
    if !data.is_file() {
        let why = String::from_utf8_lossy(&done.stderr);
        return Err(format!(
            "it did not run ({}): {}",
            done.status,
            why.lines()
                .rfind(|l| l.contains("untraced-run:"))
                .unwrap_or("no message")
        ));
    }
    let text = super::record::perf::script_text(perf, &data, &[], "tid,time,event,trace")?;
    Ok(Untraced { text, per_call_s })
}

/// The untraced run's standard input: when fsbench's is a regular file (`prog < input`), the
/// same file opened afresh at the same offset (the traced run reads it after); else /dev/null.
fn same_input() -> Stdio {
    use std::io::{Seek, SeekFrom};
    use std::os::fd::AsFd;
    let stdin = std::io::stdin();
    let Ok(offset) = rustix::fs::seek(stdin.as_fd(), rustix::fs::SeekFrom::Current(0)) else {
        return Stdio::null();
    };
    let regular = rustix::fs::fstat(stdin.as_fd())
        .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile);
    match std::fs::File::open("/proc/self/fd/0") {
        Ok(f) if regular && (&f).seek(SeekFrom::Start(offset)).is_ok() => f.into(),
        _ => Stdio::null(),
    }
}

/// `perf record` with [`EVENTS`] into `data` of `program` (the caller adds its arguments); in a
/// private mount namespace that mounts tracefs when it is not mounted.
fn perf_record(perf: &Path, data: &Path, program: &str) -> Command {
    let mut c = super::record::perf::perf_command(perf, !super::record::perf::tracefs_mounted());
    c.args(RECORD).args(EVENTS).arg("-o").arg(data).arg("--").arg(program);
    c
}

/// perf's cost per system call under [`EVENTS`], seconds (see the module documentation).
pub fn syscall_cost(perf: &Path, tmp: &Path) -> Result<f64, String> {
    const SIZES: [u32; 2] = [20_000, 40_000];
    let dd = |n: u32| {
        let mut c = Command::new("dd");
        c.args(["if=/dev/zero", "of=/dev/null", "bs=1", "status=none"])
            .arg(format!("count={n}"));
        c
    };
    let mut bare: [Vec<f64>; 2] = Default::default();
    for _ in 0..3 {
        for (i, &n) in SIZES.iter().enumerate() {
            let t0 = Instant::now();
            let ok = dd(n).status().is_ok_and(|s| s.success());
            if !ok {
                return Err("dd does not run".into());
            }
            bare[i].push(t0.elapsed().as_secs_f64());
        }
    }
    let data = tmp.join("cost.data");
    let runs: Vec<String> = (0..3)
        .flat_map(|_| {
            SIZES
                .iter()
                .map(|n| format!("dd if=/dev/zero of=/dev/null bs=1 count={n} status=none"))
        })
        .collect();
    let ok = perf_record(perf, &data, "sh")
        .arg("-c")
        .arg(runs.join("; "))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let text = super::record::perf::script_text(perf, &data, &[], "tid,time");
    let _ = std::fs::remove_file(&data);
    if !ok {
        return Err("perf cannot record dd's system calls".into());
    }
    // Each process's span, first event to last, in the order they started; the first is sh.
    let mut spans: Vec<(u32, f64, f64)> = Vec::new();
    for l in text?.lines() {
        let mut w = l.split_whitespace();
        let (Some(tid), Some(t)) = (w.next().and_then(|t| t.parse::<u32>().ok()), w.next()) else {
            continue;
        };
        let Ok(t) = t.trim_end_matches(':').parse::<f64>() else {
            continue;
        };
        match spans.iter_mut().find(|s| s.0 == tid) {
            Some(s) => s.2 = t,
            None => spans.push((tid, t, t)),
        }
    }
    if spans.len() != 1 + 3 * SIZES.len() {
        return Err(format!(
            "perf recorded {} processes of the cost measurement, not 7",
            spans.len()
        ));
    }
    let mut traced: [Vec<f64>; 2] = Default::default();
    for (k, s) in spans[1..].iter().enumerate() {
        traced[k % 2].push(s.2 - s.1);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let calls = 2.0 * f64::from(SIZES[1] - SIZES[0]);
    let per =
        ((median(&mut traced[1]) - median(&mut traced[0])) - (median(&mut bare[1]) - median(&mut bare[0]))) / calls;
    if !(per.is_finite() && per > 0.0) {
        return Err(format!("perf's cost per call measured {:.2} µs", per * 1e6));
    }
    Ok(per)
}

/// One mount of `/proc/self/mountinfo`: where, whether read-only, and its flags to keep.
struct Mount {
    target: PathBuf,
    read_only: bool,
    keep: rustix::mount::MountFlags,
}

/// `/proc/self/mountinfo`'s mounts that a path reaches: of several on one mount point the last
/// (the others are under it, hidden); octal escapes in the mount point undone.
fn mounts() -> Result<Vec<Mount>> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").context("reading /proc/self/mountinfo")?;
    Ok(reachable(mount_table(&text)?))
}

/// Of several mounts on one mount point, the last of `table` (the others are under it).
fn reachable(mut table: Vec<Mount>) -> Vec<Mount> {
    let mut seen = std::collections::HashSet::new();
    table.reverse();
    table.retain(|m| seen.insert(m.target.clone()));
    table
}

/// The first of `mounts` the program could still write through: writable, and neither one of
/// `keep` (the copy on the root, perf's folder, the private temporary folders) nor under one
/// (hidden by it, or perf's folder in a private one).
fn writable<'a>(mounts: &'a [Mount], keep: &[&Path]) -> Option<&'a Mount> {
    mounts
        .iter()
        .find(|m| !m.read_only && !keep.iter().any(|k| m.target.starts_with(k)))
}

/// The folders programs keep temporary files in that get a private empty tmpfs for the run (so
/// a compiler's temporary files do not fail on a read-only mount): `/tmp` and `/dev/shm`, each
/// when it is a directory that holds neither the root nor the working directory.
fn private_tmps(root: &Path, cwd: &Path) -> Vec<&'static Path> {
    [Path::new("/tmp"), Path::new("/dev/shm")]
        .into_iter()
        .filter(|p| p.symlink_metadata().is_ok_and(|m| m.is_dir()))
        .filter(|p| !root.starts_with(p) && !cwd.starts_with(p))
        .collect()
}

/// Every line of a `/proc/self/mountinfo` text, in its order.
fn mount_table(text: &str) -> Result<Vec<Mount>> {
    use rustix::mount::MountFlags as F;
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let (Some(target), Some(opts)) = (f.get(4), f.get(5)) else {
                bail!("unreadable line of /proc/self/mountinfo: {l}")
            };
            let opts: Vec<&str> = opts.split(',').collect();
            let keep = [
                ("nosuid", F::NOSUID),
                ("nodev", F::NODEV),
                ("noexec", F::NOEXEC),
                ("noatime", F::NOATIME),
                ("nodiratime", F::NODIRATIME),
                ("relatime", F::RELATIME),
            ]
            .iter()
            .filter(|(o, _)| opts.contains(o))
            .fold(F::empty(), |a, (_, f)| a | *f);
            Ok(Mount {
                target: PathBuf::from(crate::host::unescape_mount_field(target)),
                read_only: opts.contains(&"ro"),
                keep,
            })
        })
        .collect()
}

/// The hidden `fsbench untraced-run`; see the module documentation. Runs only in a private
/// mount namespace (it checks), never returns on success (perf replaces it).
pub fn cmd_untraced_run(a: &UntracedRunArgs) -> Result<i32> {
    use rustix::mount::{mount, mount_bind, mount_remount, MountFlags};
    use std::os::unix::process::CommandExt;
    let own = std::fs::read_link("/proc/self/ns/mnt").context("reading the mount namespace")?;
    if own == a.parent_ns {
        bail!("untraced-run: not in a private mount namespace (it is started by `fsbench record --untraced-run`)");
    }
    let fail = |what: &str, e: &dyn std::fmt::Display| anyhow::anyhow!("untraced-run: {what}: {e}");
    mount("fsbench-untraced", &a.copy, "tmpfs", MountFlags::empty(), "mode=0755")
        .map_err(|e| fail("mounting the copy's tmpfs", &e))?;
    let cp = Command::new("cp").arg("-a").arg(a.root.join(".")).arg(&a.copy).status();
    if !cp.as_ref().is_ok_and(|s| s.success()) {
        bail!("untraced-run: copying the root with cp -a failed ({cp:?})");
    }
    mount_bind(&a.copy, &a.root).map_err(|e| fail("mounting the copy over the root", &e))?;
    mount_bind(&a.out, &a.out).map_err(|e| fail("mounting perf's folder", &e))?;
    let tmps = private_tmps(&a.root, &a.cwd);
    for &t in &tmps {
        match a.out.strip_prefix(t) {
            // perf's folder is under it: a tmpfs beside, perf's folder bound at the same place
            // in it, then moved over the folder.
            Ok(rel) => {
                let fresh = a.copy.with_file_name("untraced-tmp");
                mount("fsbench-untraced", &fresh, "tmpfs", MountFlags::empty(), "mode=1777")
                    .map_err(|e| fail("mounting a private tmpfs", &e))?;
                let at = fresh.join(rel);
                std::fs::create_dir_all(&at).map_err(|e| fail("making perf's folder in the private tmpfs", &e))?;
                mount_bind(&a.out, &at).map_err(|e| fail("mounting perf's folder in the private tmpfs", &e))?;
                rustix::mount::mount_move(&fresh, t)
                    .map_err(|e| fail(&format!("moving the private tmpfs over {}", t.display()), &e))?;
            }
            Err(_) => mount("fsbench-untraced", t, "tmpfs", MountFlags::empty(), "mode=1777")
                .map_err(|e| fail(&format!("mounting a private tmpfs on {}", t.display()), &e))?,
        }
    }
    let keep: Vec<&Path> = tmps
        .iter()
        .copied()
        .chain([a.out.as_path(), a.root.as_path()])
        .collect();
    if !super::record::perf::tracefs_mounted() {
        mount(
            "nodev",
            super::record::perf::TRACEFS,
            "tracefs",
            MountFlags::empty(),
            "",
        )
        .map_err(|e| fail("mounting tracefs", &e))?;
    }
    let mut table = mounts()?;
    while let Some((target, flags)) = writable(&table, &keep).map(|m| (m.target.clone(), m.keep)) {
        mount_remount(&target, MountFlags::BIND | MountFlags::RDONLY | flags, "")
            .map_err(|e| fail(&format!("making {} read-only", target.display()), &e))?;
        table.retain(|x| x.target != target);
    }
    if let Some(m) = writable(&mounts()?, &keep) {
        bail!("untraced-run: {} is still writable", m.target.display());
    }
    let e = Command::new(&a.perf)
        .args(RECORD)
        .args(EVENTS)
        .arg("-o")
        .arg(a.out.join("untraced.data"))
        .arg("--")
        .args(&a.command)
        .current_dir(&a.cwd)
        .exec();
    Err(fail("starting perf", &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of this machine's `/proc/self/mountinfo` (two mounts on /dev/shm, the lower one
    /// hidden), a loop filesystem whose mount point has a space, and a mount under the root.
    const TABLE: &str = "\
24 30 0:22 / /dev/shm rw,nosuid,nodev - tmpfs shm rw
30 1 254:0 / / rw,relatime - ext4 /dev/vda rw
45 24 0:40 / /dev/shm ro,nosuid,nodev - tmpfs shm rw
51 30 7:0 / /var/tmp/a\\040b rw,noexec,relatime - ext4 /dev/loop0 rw
52 51 7:1 / /var/tmp/a\\040b/root/sub rw,relatime - ext4 /dev/loop1 rw
53 30 0:50 / /tmp/out rw,relatime - ext4 /dev/vda rw
";

    #[test]
    fn the_mount_table_is_read_with_its_flags_and_the_hidden_mounts_left_out() {
        let all = mount_table(TABLE).unwrap();
        assert_eq!(all.len(), 6);
        assert_eq!(all[3].target, Path::new("/var/tmp/a b"));
        use rustix::mount::MountFlags as F;
        assert_eq!(all[3].keep, F::NOEXEC | F::RELATIME);
        assert_eq!(all[0].keep, F::NOSUID | F::NODEV);
        let shown = reachable(all);
        let shm: Vec<&Mount> = shown.iter().filter(|m| m.target == Path::new("/dev/shm")).collect();
        assert_eq!(shm.len(), 1);
        assert!(shm[0].read_only, "the upper /dev/shm is the one a path reaches");
        assert!(mount_table("24 30 0:22 /").is_err());
    }

    #[test]
    fn a_mount_left_writable_is_found_and_none_once_all_are_read_only() {
        let root = Path::new("/var/tmp/a b/root");
        let out = Path::new("/tmp/out");
        let mut shown = reachable(mount_table(TABLE).unwrap());
        // `/` and the loop filesystem are writable; the mount under the root and perf's folder
        // are not the program's to write through.
        let first = writable(&shown, &[root, out]).map(|m| m.target.clone());
        assert_eq!(first.as_deref(), Some(Path::new("/var/tmp/a b")));
        for m in &mut shown {
            if m.target == Path::new("/var/tmp/a b") || m.target == Path::new("/") {
                m.read_only = true;
            }
        }
        assert!(writable(&shown, &[root, out]).is_none());
    }
}
