//! `fsbench record`: runs a program under strace and writes its trace (issue 44; doc/replay.md).
//!
//! Why strace and not `perf trace`: strace's `-y` prints the path of every descriptor argument
//! and result, so each read, write or fsync is tied to its file without following every
//! descriptor-table change by hand, and its `-f` follows threads, forks and vforks from the
//! first call; it runs unprivileged and needs no kernel tracepoints, and `perf trace` (which
//! needs root or a lowered `perf_event_paranoid`, and prints pathnames only for the calls that
//! take one) loses events under load where strace cannot: ptrace stops the tracee until each
//! call is written. The price is strace's overhead on every system call, which slows the
//! traced run (measured in doc/replay.md); the trace's times are those of the traced run.
//!
//! **Timing** (where perf may trace: root, or a lowered `perf_event_paranoid` with tracefs
//! mounted): strace runs under `perf record` of every system call's entry and exit, every
//! context switch and every waking ([`perf`]), and `crate::trace::timing` aligns the kernel's record with
//! strace's lines (`-n` prints each call's number): each call gets the kernel's start and
//! duration, and the time strace held its thread stopped before it is measured, not estimated
//! ([`crate::trace::Call::tracer_s`], the header's `timing`), so a timed replay takes out
//! exactly that. perf runs only if it recorded `true` first with the same events (the program
//! does not run twice for it); when tracefs is not mounted, perf runs in a private mount namespace that
//! mounts it (`unshare --mount`: nothing is left mounted, whatever ends the run; the program
//! sees the same mounts). Without perf, or when its record misses a call or lost events, the
//! trace keeps strace's times and the calibration's estimate, and `fsbench record` says why.
//!
//! **`--untraced-run`** (root, perf): before the traced run the program runs once more without
//! strace, under perf's two system-call tracepoints alone, on a tmpfs copy of the root in private
//! namespaces where nothing else is writable ([`super::untraced_run`]); `crate::trace::untraced`
//! lines its calls up with strace's, and a timed replay takes its think times from it (a
//! ptrace tracer slows the program's own code between calls in a way no event of the traced
//! run separates: doc/replay.md, *An untraced run*).
//!
//! Order: the command is found and --root checked first (exit 2 otherwise, nothing run); the
//! tree under the root is captured (metadata only); the program runs under
//! `strace --seccomp-bpf -f -n -ttt -T -y -qq -s 0 -e trace=%file,%desc,%process,msync -o RAW` in
//! the working directory, its standard streams inherited (`-s 0`: no data is printed, so the raw output
//! holds no file contents); the raw output, in a temporary directory, is parsed
//! ([`crate::parsers::strace`]), resolved ([`crate::trace::resolve`]) and removed; the trace is
//! written. Nothing under the root is touched by fsbench itself, except the trace file when
//! `-o` names a path there (it is left out of the tree). Last, when perf's record could not time
//! the run, the tracer's cost per system call is measured ([`tracer_overhead`]) and stored in
//! the header, so a timed replay can take it out of the recorded gaps.
//!
//! `--seccomp-bpf`: without it ptrace stops the program at the entry and exit of every system
//! call, also those the filter does not print (futex, munmap, clock_nanosleep, brk), whose
//! cost then lands, uncounted, in the recorded gaps; with it only the filtered calls stop
//! (strace 5.3 and later; it needs `-f`). The calibration runs under the very same flags
//! ([`STRACE_FLAGS`]): `-y` (a readlink per descriptor), `-ttt` and `-T` roughly double what a
//! call costs under strace here (dd: 34 µs per call with `-f -qq -e …` alone, 75 µs with all
//! of them).

use super::AppError;
use crate::cli::RecordArgs;
use crate::trace::{self, resolve::Resolver, Header, Trace};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The system call classes strace traces: every call on a path or a descriptor, the process
/// calls (clone, fork, exec, exit: descriptor tables), and msync.
pub const STRACE_FILTER: &str = "trace=%file,%desc,%process,msync";

/// strace's flags for a recording and for its calibration, before `-o FILE -- COMMAND`.
pub const STRACE_FLAGS: [&str; 11] = [
    "--seccomp-bpf",
    "-f",
    "-n",
    "-ttt",
    "-T",
    "-y",
    "-qq",
    "-s",
    "0",
    "-e",
    STRACE_FILTER,
];

/// Where `program` is: a path with a `/` as given, else the first executable on `PATH`.
fn find_program(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return runnable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| runnable(p))
}

/// `strace -V`'s version, e.g. `6.1`.
fn strace_version(strace: &Path) -> String {
    Command::new(strace)
        .arg("-V")
        .output()
        .ok()
        .and_then(|o| crate::parsers::strace::version(String::from_utf8_lossy(&o.stdout).lines().next()?))
        .unwrap_or_else(|| "unknown".into())
}

/// `fsbench record`; see the module documentation.
pub fn cmd_record(a: &RecordArgs) -> Result<i32> {
    let cwd = std::env::current_dir().context("reading the working directory")?;
    let root = a.root.clone().unwrap_or_else(|| cwd.clone());
    let root = root
        .canonicalize()
        .ok()
        .filter(|r| r.is_dir())
        .ok_or_else(|| AppError::Usage(format!("--root {}: not a directory", root.display())))?;
    let program = &a.command[0];
    if find_program(program).is_none() {
        return Err(AppError::Usage(format!("{program}: command not found (nothing was recorded)")).into());
    }
    let strace = crate::host::find_tool("strace")
        .ok_or_else(|| AppError::Usage("strace is not installed: run `apt-get install strace`".into()))?;
    let output = std::path::absolute(&a.output).context("the trace path")?;
    let marks = mark_dir(a.mark_on.as_deref(), &root)?;
    let tree = trace::tree::capture(&root, &[output.as_path()], a.hash_names)?;
    // SIGINT or SIGTERM: the program gets it too (its process group); the trace of what it did
    // until then is written, the temporary folder removed, and the exit code is 130.
    crate::signal::interrupt_flag();
    let tmp = tempfile_dir()?;
    let raw = tmp.join("strace.out");
    let perf = perf::Perf::ready(&tmp);
    let untraced = a.untraced_run.then(|| {
        let bytes = tree
            .iter()
            .filter(|e| e.kind == trace::EntryKind::File)
            .map(|e| e.size)
            .sum();
        let perf = perf.as_ref().map_err(Clone::clone)?;
        super::untraced_run::run(perf.path(), &root, &cwd, &tmp, &a.command, bytes)
    });
    if crate::signal::interrupted() {
        return Err(AppError::Interrupted.into());
    }
    let offset = crate::trace::timing::realtime_minus_monotonic();
    let t0 = Instant::now();
    let mut cmd = match &perf {
        Ok(p) => p.wrap(&strace),
        Err(_) => Command::new(&strace),
    };
    let status = cmd
        .args(STRACE_FLAGS)
        .arg("-o")
        .arg(&raw)
        .arg("--")
        .args(&a.command)
        .status()
        .with_context(|| format!("starting {}", strace.display()))?;
    let wall = t0.elapsed().as_secs_f64();
    let text = std::fs::read_to_string(&raw).with_context(|| format!("reading {}", raw.display()));
    let kernel = perf.as_ref().map_err(Clone::clone).and_then(|p| p.script());
    let interrupted = crate::signal::interrupted();
    let mut syscalls = crate::parsers::strace::parse(&text?).context("reading strace's output")?;
    let timing = kernel.and_then(|(version, text)| {
        let numbers = syscalls.iter().filter_map(|c| c.nr).collect();
        let timeline = crate::trace::timing::Timeline::parse(&text, &numbers).map_err(|e| e.to_string())?;
        let aligned = crate::trace::timing::align(&mut syscalls, &timeline, offset).map_err(|e| e.to_string())?;
        Ok((version, aligned))
    });
    // The calibration is the fallback's: with perf's record every call's tracer time is measured.
    let overhead = (!interrupted && timing.is_err())
        .then(|| tracer_overhead(&strace, &tmp))
        .flatten();
    drop(tmp);
    let numbers = syscalls.iter().filter_map(|c| c.nr).collect();
    let untraced = untraced.map(|u| {
        let u = u?;
        trace::untraced::retime(&mut syscalls, &u.text, &numbers, u.per_call_s)
            .map(|r| (r, u.per_call_s))
            .map_err(|e| e.to_string())
    });
    print_timing(&timing, &untraced, wall);
    let mut r = Resolver::new(&root, &cwd, a.hash_names);
    if let Some(m) = &marks {
        r = r.mark_on(m);
    }
    let r = r.run(&syscalls);
    let shown_root = if a.hash_names {
        trace::resolve::hash_name(&root.to_string_lossy())
    } else {
        root.display().to_string()
    };
    let t = Trace {
        header: Header {
            version: trace::VERSION,
            tool: format!("strace {}", strace_version(&strace)),
            command: shown_command(a),
            root: shown_root,
            wall_s: wall,
            overhead_s: overhead.map(|o| o.per_call_s),
            overhead_in_call_s: overhead.map(|o| o.in_call_s),
            timing: timing_note(timing.ok().map(|(version, _)| version), &untraced),
            hashed_names: a.hash_names,
            dropped: r.dropped,
            marks: r.marks,
        },
        tree,
        calls: r.calls,
    };
    t.write(&output)?;
    print_summary(&t, &output);
    if interrupted {
        eprintln!("interrupted: the trace of what {program} did until then is written");
        return Err(AppError::Interrupted.into());
    }
    match status.code() {
        Some(0) => Ok(0),
        code => {
            eprintln!(
                "warning: {program} exited with {} (the trace of what it did is written)",
                code.map_or("a signal".to_string(), |c| format!("status {c}"))
            );
            Ok(1)
        }
    }
}

/// What the trace header's `command` shows: with `--hash-names` the program's name and its
/// arguments hashed (they name files).
fn shown_command(a: &RecordArgs) -> Vec<String> {
    if !a.hash_names {
        return a.command.clone();
    }
    let (program, args) = a.command.split_at(1);
    program
        .iter()
        .cloned()
        .chain(args.iter().map(|x| trace::resolve::hash_name(x)))
        .collect()
}

/// Says how the trace is timed: perf's record of the traced run (`timing`, from a `wall`-second
/// run) and the untraced run when asked for.
fn print_timing(
    timing: &Result<(String, trace::timing::Aligned), String>,
    untraced: &Option<Result<(trace::untraced::Retimed, f64), String>>,
    wall: f64,
) {
    match &timing {
        Ok((version, a)) => println!(
            "timing: perf {version} saw every one of the {} calls strace printed; the tracer held the program for {:.3} s of the {wall:.3} s run (its stops, and its paths between calls at {:.1} µs or more each), taken out of the trace's gaps",
            a.calls,
            a.tracer_s,
            a.floor_s * 1e6
        ),
        Err(why) => println!(
            "timing: strace's clock, the tracer's cost per call estimated by a calibration (perf's record not used: {why})"
        ),
    }
    match &untraced {
        Some(Ok((r, per))) => println!(
            "untraced run: its calls lined up with the traced run's ({} of {} where the runs differ{}, keeping the traced run's think time; threads and processes matched: {}); it spanned {:.3} s, perf's cost ({:.2} µs a system call, {:.3} s in all) taken out; a timed replay takes its think times from it",
            r.estimated,
            r.calls,
            r.first_estimated
                .as_ref()
                .map(|(tid, i, name)| format!(", the first call {i} ({name}) of thread {tid}"))
                .unwrap_or_default(),
            r.threads,
            r.span_s,
            per * 1e6,
            r.cost_s
        ),
        Some(Err(why)) => println!("untraced run: not used ({why}); the think times are the traced run's"),
        None => {}
    }
}

/// [`Header::timing`]: `perf VERSION` when perf timed the traced run, and the untraced run's
/// note when its times are in the trace.
fn timing_note(
    perf: Option<String>,
    untraced: &Option<Result<(trace::untraced::Retimed, f64), String>>,
) -> Option<String> {
    let perf = perf.map(|v| format!("perf {v}"));
    match untraced {
        Some(Ok((_, per))) => Some(
            perf.into_iter()
                .chain([format!(
                    "untraced run, perf's cost {:.2} µs a call taken out",
                    per * 1e6
                )])
                .collect::<Vec<_>>()
                .join("; "),
        ),
        _ => perf,
    }
}

/// What strace costs per system call it stops, seconds ([`tracer_overhead`]).
#[derive(Clone, Copy, Debug)]
struct Overhead {
    /// Everything the tracer adds per call: (traced − untraced wall time) / calls printed.
    per_call_s: f64,
    /// The part of it inside the call's recorded duration (`-T`): the mean recorded duration
    /// less the mean untraced time per call, at least 0, at most `per_call_s`.
    in_call_s: f64,
}

/// The tracer's cost per system call here: `dd` copying 10 000 bytes one at a time (20 000
/// reads and writes, nothing between them) without strace and under [`STRACE_FLAGS`], three
/// times each, alternated; the median of each. The traced runs' output (in `tmp`) is parsed
/// to count the calls printed and sum their recorded durations. `None` when dd cannot run or
/// the difference is not positive.
fn tracer_overhead(strace: &Path, tmp: &Path) -> Option<Overhead> {
    const BYTES: u32 = 10_000;
    let dd = ["if=/dev/zero", "of=/dev/null", "bs=1", "status=none"];
    let count = format!("count={BYTES}");
    let raw = tmp.join("calibration.out");
    // Wall time, and for a traced run the calls printed and their summed durations.
    let time = |traced: bool| -> Option<(f64, usize, f64)> {
        let mut cmd = if traced {
            let mut c = Command::new(strace);
            c.args(STRACE_FLAGS).arg("-o").arg(&raw).args(["--", "dd"]);
            c
        } else {
            Command::new("dd")
        };
        let t0 = Instant::now();
        let ok = cmd.args(dd).arg(&count).status().ok()?.success();
        let wall = t0.elapsed().as_secs_f64();
        if !ok {
            return None;
        }
        if !traced {
            return Some((wall, 0, 0.0));
        }
        let calls = crate::parsers::strace::parse(&std::fs::read_to_string(&raw).ok()?).ok()?;
        Some((wall, calls.len(), calls.iter().map(|c| c.duration).sum()))
    };
    let (mut plain, mut traced) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        plain.extend(time(false));
        traced.extend(time(true));
    }
    let _ = std::fs::remove_file(&raw);
    plain.sort_by(|a, b| a.0.total_cmp(&b.0));
    traced.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (plain, (wall, calls, durations)) = (plain.get(plain.len() / 2)?.0, *traced.get(traced.len() / 2)?);
    overhead_of(plain, wall, calls, durations)
}

/// [`Overhead`] from a calibration: the untraced and traced wall times (s), the calls the
/// traced run printed and the sum of their recorded durations (s).
fn overhead_of(plain_s: f64, traced_s: f64, calls: usize, durations_s: f64) -> Option<Overhead> {
    let n = calls.max(1) as f64;
    let per_call_s = (traced_s - plain_s) / n;
    let in_call_s = ((durations_s - plain_s) / n).clamp(0.0, per_call_s.max(0.0));
    (calls > 0 && per_call_s.is_finite() && per_call_s > 0.0).then_some(Overhead { per_call_s, in_call_s })
}

/// The kernel's record of the traced run: `perf record` of its system calls and context
/// switches around strace (`crate::trace::timing`), where perf is installed and may trace.
pub(super) mod perf {
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};

    /// perf's events: every system call's entry and exit, every context switch with the
    /// state the thread left in (`t`: stopped by the tracer), and every waking (who woke whom:
    /// a thread's notification of the tracer at an entry stop, a join).
    const EVENTS: [&str; 8] = [
        "-e",
        "raw_syscalls:sys_enter",
        "-e",
        "raw_syscalls:sys_exit",
        "-e",
        "sched:sched_switch",
        "-e",
        "sched:sched_waking",
    ];
    /// Where perf looks for the tracepoints' ids.
    pub const TRACEFS: &str = "/sys/kernel/tracing";

    /// `perf` to run with the caller's arguments; with `mount`, in a private mount namespace
    /// that mounts tracefs first (gone with the namespace, whatever ends the run).
    pub fn perf_command(perf: &Path, mount: bool) -> Command {
        if !mount {
            return Command::new(perf);
        }
        let mut c = Command::new("unshare");
        c.args(["--mount", "--propagation", "private", "--", "sh", "-c"])
            .arg(format!("mount -t tracefs nodev {TRACEFS} && exec \"$@\""))
            .arg("fsbench-record")
            .arg(perf);
        c
    }

    /// `perf script --ns --show-lost-events [EXTRA…] -F FIELDS -i DATA`'s text (a lost event
    /// shows, so a reader can refuse the record).
    pub fn script_text(perf: &Path, data: &Path, extra: &[&str], fields: &str) -> Result<String, String> {
        let out = Command::new(perf)
            .args(["script", "--ns", "--show-lost-events"])
            .args(extra)
            .args(["-F", fields, "-i"])
            .arg(data)
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("perf script: {e}"))?;
        if !out.status.success() {
            return Err(format!("perf script failed ({})", out.status));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Whether tracefs is mounted where perf looks for the tracepoints' ids.
    pub fn tracefs_mounted() -> bool {
        Path::new(TRACEFS).join("events/raw_syscalls").is_dir()
    }

    /// A perf that can record the run into `data`.
    pub struct Perf {
        perf: PathBuf,
        data: PathBuf,
        /// tracefs is not mounted: perf runs in a private mount namespace that mounts it (gone
        /// with the namespace when the run ends, whatever ends it).
        mount: bool,
    }

    impl Perf {
        /// A perf that recorded `true` just now with the events and options of the run (so the
        /// program does not run twice for it); why not otherwise.
        pub fn ready(tmp: &Path) -> Result<Perf, String> {
            let perf = crate::host::find_tool("perf").ok_or("perf is not installed (apt-get install linux-perf)")?;
            let mounted = tracefs_mounted();
            if !mounted && !crate::host::is_root() {
                return Err(format!("{TRACEFS} is not mounted and only root may mount it"));
            }
            let p = Perf {
                perf,
                data: tmp.join("perf.data"),
                mount: !mounted,
            };
            let out = p
                .wrap(Path::new("true"))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .output()
                .map_err(|e| format!("perf does not start: {e}"))?;
            let _ = std::fs::remove_file(&p.data);
            if !out.status.success() {
                let why = String::from_utf8_lossy(&out.stderr);
                return Err(format!(
                    "perf cannot record system calls here ({}): run as root or lower kernel.perf_event_paranoid",
                    why.lines()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("no message")
                        .trim()
                ));
            }
            Ok(p)
        }

        /// The perf program.
        pub fn path(&self) -> &Path {
            &self.perf
        }

        /// `program` run under `perf record` (the caller adds its arguments).
        pub fn wrap(&self, program: &Path) -> Command {
            let mut c = perf_command(&self.perf, self.mount);
            c.args(["record", "-q", "-k", "monotonic", "-m", "4096", "--switch-events"])
                .args(EVENTS)
                .arg("-o")
                .arg(&self.data)
                .arg("--")
                .arg(program);
            c
        }

        /// perf's version and `perf script`'s text of the record (after the run).
        pub fn script(&self) -> Result<(String, String), String> {
            let text = script_text(
                &self.perf,
                &self.data,
                &["--show-switch-events"],
                "tid,time,event,trace",
            )?;
            let version = Command::new(&self.perf)
                .arg("--version")
                .output()
                .ok()
                .and_then(|o| {
                    String::from_utf8_lossy(&o.stdout)
                        .split_whitespace()
                        .nth(2)
                        .map(str::to_string)
                })
                .unwrap_or_else(|| "unknown".into());
            Ok((version, text))
        }
    }
}

/// `--mark-on DIR` as an absolute path outside `root` (exit 2 under it: the marks are not the
/// program's files, and the tree would hold them); it need not exist.
fn mark_dir(dir: Option<&Path>, root: &Path) -> Result<Option<PathBuf>> {
    let Some(dir) = dir else { return Ok(None) };
    let abs = crate::trace::resolve::normalise(&std::path::absolute(dir).context("the --mark-on path")?);
    if abs.canonicalize().unwrap_or_else(|_| abs.clone()).starts_with(root) {
        return Err(AppError::Usage(format!(
            "--mark-on {}: the mark directory is under --root {}; choose one outside it (e.g. /tmp/fsbench-marks)",
            dir.display(),
            root.display()
        ))
        .into());
    }
    Ok(Some(abs))
}

/// The recording's temporary folder (strace's and perf's output, the untraced run's folders),
/// removed with everything in it when dropped: at the end, on an error or an interrupt.
struct TmpDir(PathBuf);

impl std::ops::Deref for TmpDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh private directory under the system's temporary directory.
fn tempfile_dir() -> Result<TmpDir> {
    let base = std::env::temp_dir();
    for i in 0..100u32 {
        let p = base.join(format!("fsbench-record-{}-{i}", std::process::id()));
        if std::fs::create_dir(&p).is_ok() {
            return Ok(TmpDir(p));
        }
    }
    anyhow::bail!("cannot make a temporary directory under {}", base.display())
}

fn print_summary(t: &Trace, output: &Path) {
    let counts = t.counts();
    let per_kind: Vec<String> = counts.iter().map(|(k, n)| format!("{} {n}", k.name())).collect();
    let dropped: u64 = t.header.dropped.values().sum();
    println!(
        "{}: {} calls in {:.3} s ({}), tree of {} entries ({} bytes); {dropped} calls outside the trace ({})",
        output.display(),
        t.calls.len(),
        t.header.wall_s,
        per_kind.join(", "),
        t.tree.len(),
        t.tree_bytes(),
        t.header
            .dropped
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}
