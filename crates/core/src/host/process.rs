//! Stopping a process fsbench started: the zfs-fuse daemon ([`crate::provision::zfs::StopDaemon`]) and a
//! QEMU guest or the power-cut disk's server ([`crate::undo::Kill`]) both go through [`stop`].
//!
//! Invariants: a process is signalled only while `/proc/PID/stat` shows it alive (not a zombie)
//! with the recorded start time (field 22, clock ticks since boot, so a recycled pid is never
//! signalled) and the [`Identity`] the record names. Between signals the identity is checked
//! again, so a process that exits and whose pid is reused meanwhile is left alone.

use std::path::Path;
use std::time::{Duration, Instant};

/// What, besides pid and start time, shows that a process is the one fsbench started.
#[derive(Clone, Copy, Debug)]
pub enum Identity<'a> {
    /// Its command name (field 2 of `/proc/PID/stat`), e.g. `zfs-fuse`.
    Comm(&'a str),
    /// A path its command line names (the run folder).
    Arg(&'a Path),
}

/// How to stop it.
#[derive(Clone, Copy, Debug)]
pub struct Stop {
    /// The first signal (`SIGTERM` to let a daemon shut down, or `SIGKILL`).
    pub first: i32,
    /// After this long, `SIGKILL` (again at every poll).
    pub kill_after: Duration,
    /// After this long, give up.
    pub give_up_after: Duration,
    /// Reap the exit status (waitpid, non-blocking) while waiting: for a process no `Child`
    /// handle of ours will wait for.
    pub reap: bool,
}

/// `(command name, start time)` of `pid` if it is alive (not a zombie), from `/proc/PID/stat`.
fn alive_stat(pid: u32) -> Option<(String, Option<u64>)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (open, close) = (stat.find('(')?, stat.rfind(')')?);
    let mut rest = stat[close + 1..].split_whitespace();
    let state = rest.next().unwrap_or("");
    // Field 3 is the state; the start time is field 22, the 19th after it.
    let started = rest.nth(18).and_then(|s| s.parse::<u64>().ok());
    (state != "Z" && state != "X").then(|| (stat[open + 1..close].to_string(), started))
}

/// The command name of `pid` if it is alive (not a zombie).
pub fn alive_comm(pid: u32) -> Option<String> {
    alive_stat(pid).map(|(comm, _)| comm)
}

/// Whether `pid` is alive with `start_time` and `identity`.
pub fn is_ours(pid: u32, start_time: u64, identity: Identity) -> bool {
    let Some((comm, started)) = alive_stat(pid) else {
        return false;
    };
    if started != Some(start_time) {
        return false;
    }
    match identity {
        Identity::Comm(name) => comm == name,
        Identity::Arg(path) => std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
            let needle = path.as_os_str().as_encoded_bytes();
            !needle.is_empty() && c.windows(needle.len()).any(|w| w == needle)
        }),
    }
}

/// Stops `pid` if [`is_ours`]: sends `how.first`, then polls every 20 ms until it is no longer
/// ours (exited, or a zombie), escalating to `SIGKILL` after `how.kill_after`. Returns `false`
/// if it is still ours after `how.give_up_after`; a process that is not ours is left alone and
/// counts as stopped.
pub fn stop(pid: u32, start_time: u64, identity: Identity, how: Stop) -> bool {
    let reap = || {
        if how.reap {
            if let Some(p) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::waitpid(Some(p), rustix::process::WaitOptions::NOHANG);
            }
        }
    };
    let signal = |sig: i32| {
        // SAFETY: kill(2) on a pid just checked to be the process fsbench started.
        unsafe { libc::kill(pid as i32, sig) };
    };
    let t0 = Instant::now();
    let mut sig = how.first;
    while is_ours(pid, start_time, identity) {
        if t0.elapsed() > how.give_up_after {
            return false;
        }
        if t0.elapsed() > how.kill_after {
            sig = libc::SIGKILL;
        }
        if sig != 0 {
            signal(sig);
        }
        // A daemon gets one SIGTERM; SIGKILL is repeated until it is gone.
        if sig != libc::SIGKILL {
            sig = 0;
        }
        reap();
        std::thread::sleep(Duration::from_millis(20));
    }
    reap();
    true
}

/// Helpers for the tests of this crate and the crates above (feature `test-support`).
#[cfg(any(test, feature = "test-support"))]
pub mod testing {
    use super::*;

    /// `path sleep 30` for a just-written copy of sleep: another test thread's fork may briefly
    /// hold the copy open for writing (ETXTBSY), so that is retried.
    pub fn spawn_fresh_copy(path: &Path) -> std::process::Child {
        for _ in 0..100 {
            match std::process::Command::new(path).arg("30").spawn() {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => std::thread::sleep(Duration::from_millis(20)),
                r => {
                    let child = r.unwrap();
                    // Until the child has exec'd, its command line is the test binary's: wait
                    // for the copy's path in it (on a busy machine that takes milliseconds).
                    let t0 = Instant::now();
                    while !is_ours(
                        child.id(),
                        crate::host::process_start_time(child.id()).unwrap(),
                        Identity::Arg(path),
                    ) {
                        assert!(
                            t0.elapsed() < Duration::from_secs(10),
                            "{} never started",
                            path.display()
                        );
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    return child;
                }
            }
        }
        panic!("{} stayed busy", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    fn start_of(pid: u32) -> u64 {
        crate::host::process_start_time(pid).unwrap()
    }

    use super::testing::spawn_fresh_copy;

    #[test]
    fn identity_needs_start_time_and_name_or_argument() {
        let me = std::process::id();
        let start = start_of(me);
        let comm = std::fs::read_to_string("/proc/self/comm").unwrap();
        assert!(is_ours(me, start, Identity::Comm(comm.trim())));
        assert!(
            !is_ours(me, start + 1, Identity::Comm(comm.trim())),
            "another start time"
        );
        assert!(!is_ours(me, start, Identity::Comm("zfs-fuse")), "another name");
        let exe = std::env::current_exe().unwrap();
        let arg0 = std::env::args().next().unwrap();
        assert!(is_ours(me, start, Identity::Arg(Path::new(&arg0))), "{}", exe.display());
        assert!(!is_ours(me, start, Identity::Arg(Path::new("/no/such/run-folder"))));
        assert!(
            !is_ours(me, start, Identity::Arg(Path::new(""))),
            "an empty marker names nothing"
        );
    }

    #[test]
    fn a_term_first_stop_ends_a_process_that_ignores_sigterm_with_sigkill() {
        // `trap '' TERM` makes the shell ignore SIGTERM: only the escalation stops it.
        let dir = tempfile::tempdir().unwrap();
        let ready = dir.path().join("trap-set");
        let script = format!(
            "trap '' TERM; touch '{}'; while :; do sleep 0.05; done",
            ready.display()
        );
        let mut child = std::process::Command::new("sh").args(["-c", &script]).spawn().unwrap();
        let pid = child.id();
        while !ready.exists() {
            std::thread::sleep(Duration::from_millis(10));
        }
        let how = Stop {
            first: libc::SIGTERM,
            kill_after: Duration::from_millis(300),
            give_up_after: Duration::from_secs(5),
            reap: false,
        };
        let t0 = Instant::now();
        assert!(stop(pid, start_of(pid), Identity::Comm("sh"), how));
        assert!(t0.elapsed() >= Duration::from_millis(300), "SIGTERM alone stopped it");
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
    }

    /// The undo records of processes as runs before this module wrote them (the JSON of
    /// the `kill` records in a run's state file; `stop_daemon`'s test is zfs's) still read and
    /// undo: a recorded QEMU-style process is killed, one whose identity does not match is left
    /// alone.
    #[test]
    fn stop_daemon_and_kill_records_of_older_runs_still_read_and_undo() {
        use crate::undo::{Kill, Kinds, Record, Step};
        let kinds = Kinds::generic();
        let read = |text: &str| kinds.read(&serde_json::from_str::<Record>(text).unwrap()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("fsbench-run-1234");
        // Started from inside the run folder, so its command line names it (as QEMU's does).
        std::fs::create_dir(&marker).unwrap();
        std::fs::copy("/bin/sleep", marker.join("sleep")).unwrap();
        let mut guest = spawn_fresh_copy(&marker.join("sleep"));
        let pid = guest.id();
        let start = start_of(pid);
        let old_kill = format!(
            r#"{{"undo":"kill","pid":{pid},"start_time":{start},"marker":"{}"}}"#,
            marker.display()
        );
        let kill = read(&old_kill);
        let expected = Kill {
            pid,
            start_time: start,
            marker: marker.clone(),
        };
        assert_eq!(kill.record(), expected.record());
        // The same record with another start time (a recycled pid) is left alone.
        let recycled = read(&old_kill.replace(
            &format!("\"start_time\":{start}"),
            &format!("\"start_time\":{}", start + 1),
        ));
        recycled.apply().unwrap();
        assert!(
            guest.try_wait().unwrap().is_none(),
            "a process that is not ours was killed"
        );
        kill.apply().unwrap();
        assert_eq!(guest.wait().unwrap().signal(), Some(libc::SIGKILL));
    }
}
