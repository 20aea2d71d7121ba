//! The one way fsbench runs an external program and waits for it: spawn, watch the interrupt
//! flag and an optional time limit, kill on Ctrl-C or timeout, collect the output, and measure
//! the children's CPU. Used by provisioning's tools (`provision::run_tool`), the `cp`/`rm`
//! phases of treecopy and filecopy (`engine::copy::timed_command`) and the database servers'
//! tools and clients (`workloads::oltp::server`).
//!
//! Invariants:
//! - the child is always reaped before [`run`] returns, also when it is killed;
//! - captured output goes to an anonymous in-memory file (`memfd_create(2)`), read back after
//!   the exit, so a chatty child can never block on a full pipe and no reader thread is needed;
//! - the exit is seen at once through a pidfd (`pidfd_open(2)`, Linux ≥ 5.3; polled every
//!   [`POLL`] otherwise), so a timed child's wall time does not include a polling interval;
//! - with `kill_group`, the whole process group led by the child is killed (the caller made
//!   the child a group leader with `process_group(0)`), so its own children die with it;
//! - the program's peak resident set ([`Finished::max_rss_kib`]) is its own: the child is
//!   reaped with `wait4(2)`, whose `ru_maxrss` is this child's (and its reaped descendants'),
//!   never another child's as `RUSAGE_CHILDREN`'s maximum would be. But `execve` folds the
//!   high-water mark of the memory it replaces into `ru_maxrss`, and a spawned child runs on
//!   fsbench's own memory until its exec (vfork), so `ru_maxrss` is at least fsbench's own
//!   peak (`VmHWM`). Above that it is the program's; at or below it, the answer is the
//!   program's `VmHWM` read from `/proc/PID/status` at every poll while it ran (every
//!   millisecond over its first 10 ms, up to every [`POLL`] from 100 ms on; a peak reached in
//!   its last poll interval is missed).
//!
//! References: pidfd_open(2), poll(2), memfd_create(2), getrusage(2) (`RUSAGE_CHILDREN`,
//! `ru_maxrss` in KiB), wait4(2).

use crate::cpu::children_cpu_time;
use std::fs::File;
use std::io::{self, Read, Seek};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Longest wait between two looks at the interrupt flag and the time limit.
pub const POLL: Duration = Duration::from_millis(10);

/// Where one output stream of the child goes.
#[derive(Debug)]
pub enum Sink {
    /// Discarded (`/dev/null`).
    Null,
    /// Collected and returned in [`Finished`].
    Capture,
    /// Written to this file (a log); the caller reads it.
    File(File),
}

/// When to stop waiting.
#[derive(Clone, Copy, Debug, Default)]
pub struct Watch<'a> {
    /// Kill the child when this flag is set (SIGINT/SIGTERM); `None`: never.
    pub interrupt: Option<&'a AtomicBool>,
    /// Kill the child when it runs longer than this; `None`: no limit.
    pub timeout: Option<Duration>,
    /// Kill the child's whole process group rather than the child alone.
    pub kill_group: bool,
}

/// A child that ran to its exit.
#[derive(Debug)]
pub struct Finished {
    /// How it exited.
    pub status: ExitStatus,
    /// Its standard output when captured ([`Sink::Capture`]), lossily decoded; else empty.
    pub stdout: String,
    /// Its standard error when captured, lossily decoded; else empty.
    pub stderr: String,
    /// From just before the spawn to the moment its exit was seen.
    pub wall: Duration,
    /// User + system CPU of reaped children over the same span (`RUSAGE_CHILDREN`: this child
    /// and any other child reaped meanwhile).
    pub children_cpu: Duration,
    /// Peak resident set size of the program the child ran, KiB (see the module documentation:
    /// `ru_maxrss` of its `wait4(2)` usage, or its `VmHWM` seen while it ran).
    pub max_rss_kib: u64,
}

/// Why a child did not run to its exit.
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    /// It could not be started (`NotFound`: no such program).
    #[error("cannot start: {0}")]
    Spawn(#[source] io::Error),
    /// Waiting for it, or setting up its output, failed.
    #[error("{0}")]
    Io(#[source] io::Error),
    /// The interrupt flag was set; the child was killed and reaped.
    #[error("interrupted")]
    Interrupted,
    /// It ran longer than [`Watch::timeout`]; it was killed and reaped.
    #[error("killed after {} s", .0.as_secs())]
    TimedOut(Duration),
}

/// The program and its arguments, space-separated, for messages.
pub fn describe(cmd: &Command) -> String {
    std::iter::once(cmd.get_program().to_string_lossy().into_owned())
        .chain(cmd.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// An anonymous in-memory file for captured output.
fn memfd(name: &str) -> io::Result<File> {
    let fd = rustix::fs::memfd_create(name, rustix::fs::MemfdFlags::CLOEXEC)?;
    Ok(File::from(fd))
}

/// Turns a sink into the child's side of the stream, keeping our handle of captured output.
fn stdio(sink: Sink, name: &str) -> io::Result<(Stdio, Option<File>)> {
    Ok(match sink {
        Sink::Null => (Stdio::null(), None),
        Sink::File(f) => (Stdio::from(f), None),
        Sink::Capture => {
            let f = memfd(name)?;
            (Stdio::from(f.try_clone()?), Some(f))
        }
    })
}

fn read_back(f: Option<File>) -> String {
    let Some(mut f) = f else {
        return String::new();
    };
    let mut bytes = Vec::new();
    if f.rewind().is_ok() {
        let _ = f.read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Runs `cmd` with its standard input from `/dev/null` and its outputs to `stdout`/`stderr`,
/// and waits for its exit under `watch`; see the module documentation.
pub fn run(cmd: &mut Command, stdout: Sink, stderr: Sink, watch: Watch) -> Result<Finished, ChildError> {
    let (out, out_file) = stdio(stdout, "stdout").map_err(ChildError::Io)?;
    let (err, err_file) = stdio(stderr, "stderr").map_err(ChildError::Io)?;
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    let cpu0 = children_cpu_time();
    let t0 = Instant::now();
    let mut child = cmd.spawn().map_err(ChildError::Spawn)?;
    // `cmd` still owns the child's ends of the streams: release them now, not when the
    // caller drops `cmd`.
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let pidfd = rustix::process::pidfd_open(
        rustix::process::Pid::from_child(&child),
        rustix::process::PidfdFlags::empty(),
    )
    .ok();
    let mut hwm_kib = 0;
    let (status, usage) = loop {
        // The program's high-water mark so far (gone once it exits).
        hwm_kib = hwm_kib.max(vm_hwm_kib(&format!("/proc/{}/status", child.id())).unwrap_or(0));
        match reap(&child) {
            Ok(Some(done)) => break done,
            Ok(None) => {}
            Err(e) => {
                kill(&mut child, watch.kill_group);
                return Err(ChildError::Io(e));
            }
        }
        let why = if watch.interrupt.is_some_and(|f| f.load(Ordering::Relaxed)) {
            Some(ChildError::Interrupted)
        } else {
            watch.timeout.filter(|&t| t0.elapsed() > t).map(ChildError::TimedOut)
        };
        if let Some(why) = why {
            kill(&mut child, watch.kill_group);
            return Err(why);
        }
        match &pidfd {
            Some(fd) => {
                let mut p = libc::pollfd {
                    fd: std::os::fd::AsRawFd::as_raw_fd(fd),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // Every ms at first, so the peak of a short program is seen; then every POLL.
                let ms = (t0.elapsed().as_millis() / 10).clamp(1, POLL.as_millis()) as libc::c_int;
                // SAFETY: one valid pollfd, a bounded timeout.
                unsafe { libc::poll(&mut p, 1, ms) };
            }
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    };
    let wall = t0.elapsed();
    let children_cpu = children_cpu_time().saturating_sub(cpu0);
    Ok(Finished {
        status,
        stdout: read_back(out_file),
        stderr: read_back(err_file),
        wall,
        children_cpu,
        max_rss_kib: peak_rss_kib(&usage, hwm_kib),
    })
}

/// `VmHWM` of a `/proc/PID/status` file, KiB (`None`: gone, or a zombie without memory).
fn vm_hwm_kib(status_path: &str) -> Option<u64> {
    let text = std::fs::read_to_string(status_path).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The child program's peak resident set, KiB, from its `wait4` usage and the `VmHWM` seen
/// while it ran (see the module documentation): `ru_maxrss` when it is above this process's
/// own high-water mark (then it can only be the program's), else the polled `VmHWM`.
fn peak_rss_kib(usage: &libc::rusage, polled_kib: u64) -> u64 {
    // ru_maxrss is in KiB on Linux (getrusage(2)).
    let maxrss = u64::try_from(usage.ru_maxrss).unwrap_or(0);
    let own = vm_hwm_kib("/proc/self/status").unwrap_or(u64::MAX);
    if maxrss > own {
        maxrss
    } else {
        polled_kib
    }
}

/// Reaps `child` with `wait4(2)` if it has exited: its exit status and its own resource usage;
/// `None` while it runs. EINTR counts as "still running".
fn reap(child: &std::process::Child) -> io::Result<Option<(ExitStatus, libc::rusage)>> {
    use std::os::unix::process::ExitStatusExt;
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain old data; wait4 only writes into it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers to a c_int and a rusage that outlive the call; the pid is our
    // child's, not yet reaped (only this function reaps it).
    let r = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, libc::WNOHANG, &mut usage) };
    match r {
        0 => Ok(None),
        r if r > 0 => Ok(Some((ExitStatus::from_raw(status), usage))),
        _ => {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                Ok(None)
            } else {
                Err(e)
            }
        }
    }
}

/// SIGKILLs the child (or its process group) and reaps it.
fn kill(child: &mut std::process::Child, group: bool) {
    if group {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory involved.
        unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    } else {
        let _ = child.kill();
    }
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn captures_both_streams_and_the_status() {
        let mut c = Command::new("/bin/sh");
        c.args(["-c", "echo out; echo err >&2; exit 3"]);
        let f = run(&mut c, Sink::Capture, Sink::Capture, Watch::default()).expect("sh runs");
        assert_eq!(f.status.code(), Some(3));
        assert_eq!((f.stdout.as_str(), f.stderr.as_str()), ("out\n", "err\n"));
    }

    #[test]
    fn large_output_does_not_block() {
        // 1 MiB on stdout: more than a pipe buffer holds.
        let mut c = Command::new("/bin/sh");
        c.args(["-c", "head -c 1048576 /dev/zero | tr '\\0' x"]);
        let flag = AtomicBool::new(false);
        let watch = Watch {
            interrupt: Some(&flag),
            timeout: Some(Duration::from_secs(60)),
            kill_group: false,
        };
        let f = run(&mut c, Sink::Capture, Sink::Null, watch).expect("runs");
        assert!(f.status.success());
        assert_eq!(f.stdout.len(), 1 << 20);
    }

    #[test]
    fn missing_program_is_a_spawn_error() {
        let mut c = Command::new("/nonexistent/fsbench-no-such-tool");
        match run(&mut c, Sink::Null, Sink::Null, Watch::default()) {
            Err(ChildError::Spawn(e)) => assert_eq!(e.kind(), io::ErrorKind::NotFound),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn interrupt_and_timeout_kill_the_group() {
        let flag = AtomicBool::new(true);
        let mut c = Command::new("/bin/sleep");
        c.arg("60").process_group(0);
        let t0 = Instant::now();
        let watch = Watch {
            interrupt: Some(&flag),
            timeout: None,
            kill_group: true,
        };
        assert!(matches!(
            run(&mut c, Sink::Null, Sink::Null, watch),
            Err(ChildError::Interrupted)
        ));
        let mut c = Command::new("/bin/sh");
        // The shell's own child must die with it: the group is killed.
        c.args(["-c", "sleep 60 & wait"]).process_group(0);
        let watch = Watch {
            interrupt: None,
            timeout: Some(Duration::from_millis(100)),
            kill_group: true,
        };
        assert!(matches!(
            run(&mut c, Sink::Null, Sink::Null, watch),
            Err(ChildError::TimedOut(_))
        ));
        assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    }

    #[test]
    fn peak_memory_is_the_programs_own() {
        // dd fills its one 64 MiB buffer twenty times: its peak resident set is at least that,
        // and it holds it long enough (about 0.2 s) for the poll of its own peak to see it when
        // this test process's high-water mark is above dd's (other tests in this binary hold
        // hundreds of MiB; then ru_maxrss, which exec folds ours into, cannot tell).
        let mut big = Command::new("dd");
        big.args(["if=/dev/zero", "of=/dev/null", "bs=64M", "count=20"]);
        let f = run(&mut big, Sink::Null, Sink::Null, Watch::default()).expect("dd runs");
        assert!(f.status.success());
        assert!(f.max_rss_kib >= 64 * 1024, "{} KiB", f.max_rss_kib);
        // A small program spawned while this process holds 256 MiB: its ru_maxrss says at
        // least 256 MiB (exec folds the spawner's peak in), its own peak is a few MiB; and it
        // is not the largest child's so far either (as RUSAGE_CHILDREN's would be).
        let held = vec![1u8; 256 << 20];
        let mut small = Command::new("/bin/sleep");
        small.arg("0.1");
        let f = run(&mut small, Sink::Null, Sink::Null, Watch::default()).expect("sleep runs");
        assert!(held.iter().step_by(4096).all(|&b| b == 1));
        assert!(f.max_rss_kib > 0 && f.max_rss_kib < 16 * 1024, "{} KiB", f.max_rss_kib);
    }

    #[test]
    fn children_cpu_is_counted() {
        // RUSAGE_CHILDREN is the process's: a child another test thread reaps during the span
        // adds its CPU too (CI: 633 ms of a 453 ms run). So the upper bound must hold in one
        // of three runs; counting fsbench's own CPU would break it in all three.
        let mut runs = Vec::new();
        for _ in 0..3 {
            let mut c = Command::new("/bin/sh");
            c.args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"]);
            let f = run(&mut c, Sink::Null, Sink::Null, Watch::default()).expect("runs");
            assert!(f.status.success());
            assert!(f.children_cpu > Duration::from_millis(10), "{:?}", f.children_cpu);
            if f.children_cpu <= f.wall + Duration::from_millis(20) {
                return;
            }
            runs.push(f);
        }
        panic!("children's CPU above the wall time in every run: {runs:?}");
    }
}
