//! `crashprops`: which persistence properties (Pillai et al., OSDI '14) hold across a crash on
//! the filesystem and mode under test, from systematic crash states (issue 43, first slice).
//!
//! One repeat moves the runner's filesystem onto the power-cut disk ([`disk`], recording, with
//! no cut), then per probe of [`probes::TABLE`] (or the chosen ones): makes the probe's folder
//! and setup, `syncfs` and an fsync of the block device (a flush), `mark` (the disk copies the
//! image and starts its write log), the operations under test with no fsync between them, then
//! `syncfs` and a flush again so every write they cause is in the log, the unmount (which
//! checkpoints a journal: its in-place writes and the journal's new tail are in the log too),
//! `dump`, and the mount again for the next probe. After the
//! last probe the disk is taken down; then per probe the crash states of its log
//! ([`states::enumerate`]: every subset of a small flush epoch, every prefix and seeded samples
//! of a large one, capped at `max_states`) are each written to a scratch image (the mark's copy
//! with the state's writes applied), attached to a loop device, mounted read-only (which
//! replays the journal or log: ext3/ext4's jbd2, xfs's log and btrfs's log tree are replayed on
//! a read-only mount of a writable device, so the state is seen as an application would after
//! reboot), checked by the probe's checker, unmounted and detached. Every piece (snapshot, log,
//! scratch image, loop device, mountpoint, mount) is an undo step recorded the moment it may
//! exist, so `fsbench cleanup` takes it back after a SIGKILL; all live in the run folder under
//! `mnt-` names, which cleanup's sweep covers too.
//!
//! A state that does not mount is counted as violating every property (the application cannot
//! read its files) and as `unmountable`. With `barriers = "ignored"` (broken on purpose: the
//! disk acknowledges flushes without honouring them, [`states::Barriers::Ignored`]) the states
//! cross the flushes; the tests use it to show that a property that holds turns to "fails".
//!
//! **Applications** ([`apps::TABLE`], `apps = [...]`): the same recording and states for a real
//! application's update protocol (SQLite, git). While it runs, the workload appends a note to
//! the disk's log at each acknowledgement the application reports (`note N` on the disk's
//! control file); per state the application's folder is copied from the read-only mount to a
//! scratch folder (the application recovers on open, which needs writing) and judged by its own
//! check plus the acknowledgements the state must honour ([`states::Log::acknowledged`]): a
//! vulnerable state is `corrupt` (the check fails, or the state does not mount) or `lost` (an
//! acknowledged update is missing). With `apps` named and `probes` empty, no probe runs.
//!
//! **Guest kernels** (`f2fs@guest`, `TYPE@guest:6.12`): the whole workload runs inside the
//! guest, through the guest's agent: the agent puts the filesystem on a loop image in a staging
//! filesystem on the guest's disk ([`crate::Workload::needs_loop_image`]), and the power-cut
//! disk (a FUSE server, the same binary), its loop device, the write log, the crash states and
//! their read-only mounts are all the guest kernel's. So a guest's disk is recorded and cut by
//! the same disk models as the host's, and each state is recovered by the kernel under test.
//! An emulated guest explores a state about ten times slower: `guest_max_states` caps the
//! states per probe there instead of `max_states` ([`crate::Workload::in_guest`]); the cap
//! is in the workload's parameters and each cell says how many states it explored.
//!
//! Rows: one phase per probe with `violating_states`, `states` (explored), `enumerated` (before
//! the cap), `unmountable`, `log_writes`, `log_flushes`; the phase's time is the exploration's.
//! Applications add `lost_states` (of the violating ones) and `acks` (acknowledgements logged).
//! A note per failing probe or application gives the smallest violating state (epoch, kept writes, how it was
//! picked, the seed) and what was recovered.

use crate::metric::{CpuUsage, MetricId, RawSample};
use crate::phase::{Caches, Phases, Policy};
use crate::undo::{Detach, RemoveDir, RemoveFile, Stack, Unmount};
use crate::workloads::powercut::disk::{self, Model};
use crate::workloads::powercut::{eio, sync_fs, timed, DiskStack, Fs};
use crate::{EngineError, Invalid, RunContext, Unavailable, Workload, WorkloadKind};
use serde::{Deserialize, Serialize};
use states::{Barriers, Budget, CrashState, Log};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub mod apps;
pub mod probes;
pub mod states;

/// Parameters of the `crashprops` workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashPropsSpec {
    /// Probes to run, by name (empty: all of [`probes::TABLE`], unless `apps` are named).
    #[serde(default)]
    pub probes: Vec<String>,
    /// Applications to run, by name ([`apps::TABLE`]; empty: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub apps: Vec<String>,
    /// An epoch with at most this many subsets is enumerated exhaustively. Default 64.
    #[serde(default = "default_exhaustive")]
    pub exhaustive: usize,
    /// Seeded random subsets per larger epoch, besides its prefixes. Default 16.
    #[serde(default = "default_samples")]
    pub samples: usize,
    /// At most this many states per probe (prefixes first). Default 48.
    #[serde(default = "default_max_states")]
    pub max_states: usize,
    /// In a guest kernel (`TYPE@guest`), at most this many states per probe instead of
    /// `max_states` (an emulated guest explores a state about ten times slower). Default: none,
    /// `max_states` everywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_max_states: Option<usize>,
    /// Seed of every draw. Default 1.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// `honoured` (default) or, broken on purpose, `ignored` (module doc).
    #[serde(default = "default_barriers")]
    pub barriers: Barriers,
    /// Also the states with one write torn in half at a sector boundary
    /// ([`states::Budget::torn`]). Default false.
    #[serde(default)]
    pub torn: bool,
}

fn default_exhaustive() -> usize {
    64
}
fn default_samples() -> usize {
    16
}
fn default_max_states() -> usize {
    48
}
fn default_seed() -> u64 {
    1
}
fn default_barriers() -> Barriers {
    Barriers::Honoured
}

impl Default for CrashPropsSpec {
    fn default() -> Self {
        CrashPropsSpec {
            probes: Vec::new(),
            apps: Vec::new(),
            exhaustive: default_exhaustive(),
            samples: default_samples(),
            max_states: default_max_states(),
            guest_max_states: None,
            seed: default_seed(),
            barriers: default_barriers(),
            torn: false,
        }
    }
}

/// The metric table of this workload.
pub mod metrics {
    use crate::metric::{MetricId, Role, Unit};

    /// Crash states explored in which the property is violated (or that did not mount).
    pub fn violating_states() -> MetricId {
        MetricId::lower("violating_states", Unit::Count).with_role(Role::Outcome)
    }
    /// Crash states explored (mounted and checked, or failed to mount).
    pub fn states() -> MetricId {
        MetricId::higher("states", Unit::Count).with_role(Role::Detail)
    }
    /// Crash states enumerated before the `max_states` cap.
    pub fn enumerated() -> MetricId {
        MetricId::higher("enumerated", Unit::Count).with_role(Role::Detail)
    }
    /// Explored states after which the filesystem did not mount (counted as violating).
    pub fn unmountable() -> MetricId {
        MetricId::lower("unmountable", Unit::Count).with_role(Role::Detail)
    }
    /// Writes the disk logged between the mark and the end of the probe.
    pub fn log_writes() -> MetricId {
        MetricId::higher("log_writes", Unit::Count).with_role(Role::Detail)
    }
    /// Flushes the disk logged between the mark and the end of the probe.
    pub fn log_flushes() -> MetricId {
        MetricId::higher("log_flushes", Unit::Count).with_role(Role::Detail)
    }
    /// Of the violating states of an application, those whose check passed but where an
    /// acknowledged update is missing (the rest are corrupt or unmountable).
    pub fn lost_states() -> MetricId {
        MetricId::lower("lost_states", Unit::Count).with_role(Role::Detail)
    }
    /// Acknowledgements an application reported while the disk recorded.
    pub fn acks() -> MetricId {
        MetricId::higher("acks", Unit::Count).with_role(Role::Detail)
    }
}

/// The prefix of the note that gives a failing probe's smallest violating state.
pub const EXAMPLE_NOTE: &str = "crash state: ";

/// What is recorded and checked: a property's probe or an application.
#[derive(Clone, Copy)]
enum Subject {
    Probe(&'static probes::Probe),
    App(&'static apps::App),
}

impl Subject {
    fn name(self) -> &'static str {
        match self {
            Subject::Probe(p) => p.name,
            Subject::App(a) => a.name,
        }
    }
    fn ops(self) -> &'static str {
        match self {
            Subject::Probe(p) => p.ops,
            Subject::App(a) => a.ops,
        }
    }
}

/// What one subject's recording left: its folder (relative to the filesystem's root) and the
/// snapshot and log files in the run folder.
struct Recorded {
    probe: Subject,
    rel: PathBuf,
    snapshot: PathBuf,
    log: PathBuf,
}

/// What exploring one probe's states found.
#[derive(Default)]
struct Found {
    states: usize,
    enumerated: usize,
    violating: usize,
    unmountable: usize,
    /// Violating states of an application with an acknowledged update missing.
    lost: usize,
    writes: usize,
    flushes: usize,
    /// The smallest violating state (of an application: corrupt or unmountable), what it
    /// showed and the byte offset in the image of its torn write, if it has one.
    example: Option<(CrashState, String, Option<u64>)>,
    /// An application's smallest state with an acknowledged update lost, likewise.
    lost_example: Option<(CrashState, String, Option<u64>)>,
    wall: Duration,
}

impl CrashPropsSpec {
    fn selected(&self) -> Vec<&'static probes::Probe> {
        let all = self.probes.is_empty() && self.apps.is_empty();
        probes::TABLE
            .iter()
            .filter(|p| all || self.probes.iter().any(|n| n == p.name))
            .collect()
    }

    fn selected_apps(&self) -> Vec<&'static apps::App> {
        apps::TABLE
            .iter()
            .filter(|a| self.apps.iter().any(|n| n == a.name))
            .collect()
    }

    /// The probes, then the applications.
    fn subjects(&self) -> Vec<Subject> {
        let p = self.selected().into_iter().map(Subject::Probe);
        p.chain(self.selected_apps().into_iter().map(Subject::App)).collect()
    }

    fn budget(&self) -> Budget {
        Budget {
            exhaustive: self.exhaustive,
            samples: self.samples,
            max_states: self.max_states,
            seed: self.seed,
            torn: self.torn,
        }
    }

    /// Records every selected probe on the power-cut disk; the disk is down afterwards.
    fn record_all(&self, ctx: &RunContext, undo: &mut Stack) -> Result<(Fs, Vec<Recorded>), EngineError> {
        let runner_fs = Fs::of_run(ctx, "crashprops")?;
        image_of(&runner_fs.device)?;
        let mut stack = DiskStack::new(ctx);
        let fs = stack.mount(ctx, runner_fs, (Model::Passthrough, self.seed))?;
        let run_dir = fs.mountpoint.parent().map(Path::to_path_buf).unwrap_or_default();
        let tag = fs
            .mountpoint
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let work = fs.mountpoint.join(ctx.dir.file_name().unwrap_or_default());
        let server = stack
            .server
            .as_ref()
            .ok_or_else(|| eio("crashprops", "no power-cut disk"))?;
        let mut out = Vec::new();
        let env = apps::AppEnv {
            scratch: &run_dir,
            interrupt: ctx.interrupt,
            undo: ctx.state,
        };
        for (k, p) in self.subjects().into_iter().enumerate() {
            (ctx.on_phase)(&format!("record {}", p.name()));
            let dir = work.join(p.name());
            let e = |what: &str| {
                let what = format!("{what} {}", dir.display());
                move |e| EngineError::io(what, e)
            };
            std::fs::create_dir_all(&dir).map_err(e("create"))?;
            match p {
                Subject::Probe(p) => (p.setup)(&dir),
                Subject::App(a) => (a.setup)(&dir, &env),
            }
            .map_err(e("set up"))?;
            flush(&fs)?;
            let (snap, log) = (format!("mnt-{tag}-cp{k}.snap"), format!("mnt-{tag}-cp{k}.wlog"));
            undo.push(RemoveFile {
                path: run_dir.join(&snap),
            });
            server.mark(&snap).map_err(|e| eio("mark the power-cut disk", e))?;
            match p {
                Subject::Probe(p) => (p.act)(&dir),
                Subject::App(a) => (a.act)(&dir, &env, &mut |n| {
                    server.note(n).map_err(|e| std::io::Error::other(e.to_string()))
                }),
            }
            .map_err(e("act in"))?;
            flush(&fs)?;
            // The unmount checkpoints the journal (in-place writes, the journal's tail moved):
            // a crash may come then too.
            fs.unmount()?;
            undo.push(RemoveFile {
                path: run_dir.join(&log),
            });
            server.dump(&log).map_err(|e| eio("dump the power-cut disk's log", e))?;
            fs.mount().map_err(|e| eio("mount over the power-cut disk again", e))?;
            out.push(Recorded {
                probe: p,
                rel: dir.strip_prefix(&fs.mountpoint).unwrap_or(&dir).to_path_buf(),
                snapshot: run_dir.join(snap),
                log: run_dir.join(log),
            });
        }
        stack.teardown().map_err(|e| eio("power-cut disk teardown", e))?;
        Ok((fs, out))
    }

    /// Explores the crash states of one recorded probe.
    fn explore(&self, ctx: &RunContext, fs: &Fs, r: &Recorded) -> Result<Found, EngineError> {
        let t0 = Instant::now();
        let bytes = std::fs::read(&r.log).map_err(|e| EngineError::io(format!("read {}", r.log.display()), e))?;
        let entries = disk::decode_log(&bytes)
            .ok_or_else(|| eio("crashprops", format!("{} is not a write log", r.log.display())))?;
        let log = Log::new(&entries, self.barriers);
        let (list, enumerated) = match r.probe {
            Subject::App(apps::App {
                max_states: Some(cap), ..
            }) => apps::sample(&log, &self.budget(), *cap),
            _ => states::enumerate(&log, &self.budget()),
        };
        let mut f = Found {
            enumerated,
            writes: log.writes.len(),
            flushes: log.flushes,
            ..Found::default()
        };
        for (i, s) in list.iter().enumerate() {
            if ctx.interrupt.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(EngineError::Interrupted);
            }
            (ctx.on_phase)(&format!("{} state {}/{}", r.probe.name(), i + 1, list.len()));
            let seen = check_state(ctx, fs, r, &log, s)?;
            f.states += 1;
            let bad = match seen {
                StateSeen::Checked(probes::Verdict::Holds) => None,
                StateSeen::Checked(probes::Verdict::Violated(what)) => Some(what),
                StateSeen::App(apps::AppVerdict::Holds) => None,
                StateSeen::App(apps::AppVerdict::Corrupt(what)) => Some(format!("corrupt: {what}")),
                StateSeen::App(apps::AppVerdict::Lost(what)) => {
                    f.lost += 1;
                    Some(format!("lost: {what}"))
                }
                StateSeen::Unmountable(why) => {
                    f.unmountable += 1;
                    Some(format!("did not mount: {why}"))
                }
            };
            if let Some(what) = bad {
                f.violating += 1;
                let torn_at = s.torn.map(|(w, _)| log.writes[w].0);
                let slot = if what.starts_with("lost: ") {
                    &mut f.lost_example
                } else {
                    &mut f.example
                };
                if slot.as_ref().is_none_or(|(e, _, _)| size(s) < size(e)) {
                    *slot = Some((s.clone(), what, torn_at));
                }
            }
        }
        f.wall = t0.elapsed();
        Ok(f)
    }

    fn run_probes(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        let mut phases = Phases::new(ctx);
        let mut undo = Stack::new(ctx.state.map(|s| s.share()));
        let (fs, recorded) = self.record_all(ctx, &mut undo)?;
        phases.note(format!(
            "crash states: per flush epoch every subset when at most {} (exhaustive), else every prefix and {} seeded subsets{}; at most {} per probe; seed {}; barriers {}; mounted read-only (journal/log replayed)",
            self.exhaustive,
            self.samples,
            if self.torn {
                ", and each write of 2+ sectors torn in half after the epoch's writes before it"
            } else {
                ""
            },
            self.max_states,
            self.seed,
            match self.barriers {
                Barriers::Honoured => "honoured",
                Barriers::Ignored => "IGNORED (broken on purpose)",
            }
        ));
        for r in &recorded {
            let f = self.explore(ctx, &fs, r)?;
            let acks = std::fs::read(&r.log)
                .ok()
                .and_then(|b| disk::decode_log(&b))
                .map_or(0, |l| l.iter().filter(|e| matches!(e, disk::LogEntry::Note(_))).count());
            record_probe(&mut phases, r.probe, &f, self.seed, acks);
        }
        undo.undo().map_err(|e| eio("crashprops cleanup", e))?;
        Ok(phases.finish())
    }
}

/// Largest image the workload copies per probe and per crash state, in bytes.
pub const MAX_IMAGE: u64 = 2 << 30;

/// The loop image under `device`, which the workload copies per probe and per state: a loop
/// image of at most [`MAX_IMAGE`] bytes, not a real device (`--device`), which it would copy
/// whole every time.
fn image_of(device: &str) -> Result<PathBuf, EngineError> {
    let refuse = |why: String| {
        EngineError::Unavailable(format!(
            "crashprops copies the filesystem's image per probe and per crash state: {why}"
        ))
    };
    let image = crate::host::loop_backing_file(device).ok_or_else(|| {
        refuse(format!(
            "{device} is not a loop device over an image (a --device target is refused)"
        ))
    })?;
    let len = std::fs::metadata(&image).map(|m| m.len()).unwrap_or(u64::MAX);
    if len > MAX_IMAGE {
        return Err(refuse(format!(
            "{} is {len} bytes, more than {MAX_IMAGE}; set a smaller image_size",
            image.display()
        )));
    }
    Ok(image)
}

/// `n` states multiplied by `factor` (`--scale`), at least one.
fn scale_count(n: usize, factor: f64) -> usize {
    ((n as f64 * factor).round() as usize).max(1)
}

/// The order of "smaller" among violating states: fewer writes applied first.
fn size(s: &CrashState) -> (usize, usize) {
    (s.epoch, s.kept.len())
}

/// `syncfs`, then an fsync of the block device (which the loop device turns into a flush of
/// the power-cut disk's image).
fn flush(fs: &Fs) -> Result<(), EngineError> {
    sync_fs(&fs.mountpoint)?;
    std::fs::File::open(&fs.device)
        .and_then(|f| f.sync_all())
        .map_err(|e| EngineError::io(format!("fsync {}", fs.device), e))
}

/// What one state showed.
enum StateSeen {
    Checked(probes::Verdict),
    App(apps::AppVerdict),
    Unmountable(String),
}

/// Writes state `s` to a scratch image, mounts it read-only, checks the probe's folder and
/// takes everything down again (each piece an undo step while it exists).
fn check_state(ctx: &RunContext, fs: &Fs, r: &Recorded, log: &Log, s: &CrashState) -> Result<StateSeen, EngineError> {
    let run_dir = r.snapshot.parent().unwrap_or(Path::new("/"));
    let image = run_dir.join("mnt-crashprops-state.img");
    let mnt = run_dir.join("mnt-crashprops-state");
    let mut undo = Stack::new(ctx.state.map(|s| s.share()));
    let io = |what: String| move |e| EngineError::io(what, e);
    undo.push(RemoveFile { path: image.clone() });
    let src = std::fs::File::open(&r.snapshot).map_err(io(format!("open {}", r.snapshot.display())))?;
    disk::copy_sparse(&src, &image).map_err(io(format!("copy to {}", image.display())))?;
    let out = std::fs::OpenOptions::new()
        .write(true)
        .open(&image)
        .map_err(io(format!("open {}", image.display())))?;
    for (offset, data) in log.applied(s) {
        out.write_all_at(data, offset)
            .map_err(io(format!("write {}", image.display())))?;
    }
    drop(out);
    let dev = crate::host::run_tool("losetup", &["--find", "--show", &image.to_string_lossy()])
        .map_err(|e| eio("attach a loop device to a crash state", e))?
        .trim()
        .to_string();
    undo.push(Detach {
        device: dev.clone(),
        image: image.clone(),
    });
    std::fs::create_dir_all(&mnt).map_err(io(format!("create {}", mnt.display())))?;
    undo.push(RemoveDir {
        path: mnt.clone(),
        recursive: false,
    });
    undo.push(Unmount {
        mountpoint: mnt.clone(),
        source: dev.clone(),
    });
    let opts = state_mount_opts(&fs.fs_type, &fs.opts);
    let mnt_s = mnt.to_string_lossy().into_owned();
    let mounted = crate::host::run_tool("mount", &["-t", &fs.fs_type, "-o", &opts, &dev, &mnt_s]);
    let seen = match (mounted, r.probe) {
        (Ok(_), Subject::Probe(p)) => StateSeen::Checked((p.check)(&mnt.join(&r.rel))),
        (Ok(_), Subject::App(a)) => {
            let acked = if a.durable { log.acknowledged(s) } else { Vec::new() };
            let env = apps::AppEnv {
                scratch: run_dir,
                interrupt: ctx.interrupt,
                undo: ctx.state,
            };
            StateSeen::App(check_app(&mut undo, a, &mnt.join(&r.rel), &env, &acked)?)
        }
        (Err(e), _) => StateSeen::Unmountable(mount_failure(&e.to_string(), &mnt_s)),
    };
    undo.undo().map_err(|e| eio("take a crash state down", e))?;
    Ok(seen)
}

/// Copies an application's folder from the mounted state to a scratch folder (an undo step)
/// and runs its check there with the acknowledgements `acked` (module doc).
fn check_app(
    undo: &mut Stack,
    a: &apps::App,
    src: &Path,
    env: &apps::AppEnv,
    acked: &[u32],
) -> Result<apps::AppVerdict, EngineError> {
    let copy = env.scratch.join("mnt-crashprops-app");
    undo.push(RemoveDir {
        path: copy.clone(),
        recursive: true,
    });
    if !src.is_dir() {
        return Ok(apps::AppVerdict::Corrupt(format!(
            "the application's folder is gone (it was durable before the mark): {}",
            src.display()
        )));
    }
    let (s, c) = (src.to_string_lossy().into_owned(), copy.to_string_lossy().into_owned());
    // A file the recovered filesystem cannot read (EUCLEAN, EIO) is a file the application
    // cannot open: a corrupt state, not a failure of the workload.
    if let Err(e) = crate::host::run_tool("cp", &["-a", s.as_str(), c.as_str()]) {
        let e = e.to_string();
        let why = e.rsplit("cp: ").next().unwrap_or(&e).to_string();
        return Ok(apps::AppVerdict::Corrupt(format!("cannot read the folder: {why}")));
    }
    Ok((a.check)(&copy, env, acked))
}

/// What mount(8) said about `mountpoint` in its failure `text` (the words after the
/// mountpoint, to the first full stop), or the text's first line.
fn mount_failure(text: &str, mountpoint: &str) -> String {
    let key = format!("{mountpoint}: ");
    match text.rfind(&key) {
        Some(i) => {
            let rest = &text[i + key.len()..];
            rest.split(". ")
                .next()
                .unwrap_or(rest)
                .trim_end_matches('.')
                .trim()
                .to_string()
        }
        None => text.lines().next().unwrap_or_default().to_string(),
    }
}

/// The mount options of a crash state: the filesystem's own, read-only; xfs also `nouuid` (the
/// state is a copy of a filesystem whose UUID the kernel may still know); f2fs without
/// `flush_merge`, which its /proc/mounts shows by default and a read-only mount refuses
/// ("F2FS-fs: FLUSH_MERGE not compatible with readonly mode", Linux 6.1 fs/f2fs/super.c).
fn state_mount_opts(fs_type: &str, opts: &str) -> String {
    let refused = |o: &str| fs_type == "f2fs" && o == "flush_merge";
    let mut v: Vec<&str> = opts
        .split(',')
        .filter(|o| !o.is_empty() && *o != "rw" && !refused(o))
        .collect();
    v.push("ro");
    if fs_type == "xfs" {
        v.push("nouuid");
    }
    v.join(",")
}

fn record_probe(phases: &mut Phases, p: Subject, f: &Found, seed: u64, acks: usize) {
    phases.begin(p.name(), Caches::Keep);
    let mut rows: Vec<(MetricId, f64)> = vec![
        (metrics::violating_states(), f.violating as f64),
        (metrics::states(), f.states as f64),
        (metrics::enumerated(), f.enumerated as f64),
        (metrics::unmountable(), f.unmountable as f64),
        (metrics::log_writes(), f.writes as f64),
        (metrics::log_flushes(), f.flushes as f64),
    ];
    if let Subject::App(_) = p {
        rows.push((metrics::lost_states(), f.lost as f64));
        rows.push((metrics::acks(), acks as f64));
    }
    phases.record(p.name(), &timed(f.wall, CpuUsage::default()), rows, &Policy::new());
    let (label, count) = match p {
        Subject::Probe(_) => (p.name().to_string(), format!("FAILS in {}", f.violating)),
        Subject::App(_) => (p.name().to_string(), format!("corrupt in {}", f.violating - f.lost)),
    };
    if let Some(e) = &f.example {
        phases.note(example_note(&label, &count, f.states, e, seed, p.ops()));
    }
    if let Some(e) = &f.lost_example {
        let (label, count) = (format!("{} lost", p.name()), format!("lost in {}", f.lost));
        phases.note(example_note(&label, &count, f.states, e, seed, p.ops()));
    }
}

/// The note of a smallest violating state: `crash state: LABEL: COUNT of N states; ...`.
fn example_note(
    label: &str,
    count: &str,
    states: usize,
    e: &(CrashState, String, Option<u64>),
    seed: u64,
    ops: &str,
) -> String {
    let (s, what, torn_at) = e;
    format!(
        "{EXAMPLE_NOTE}{label}: {count} of {states} states; smallest: epoch {} with writes {:?} of its {} kept{} ({:?}, seed {seed}); ops: {ops}; recovered: {what}",
        s.epoch,
        s.kept,
        s.epoch_writes,
        match (s.torn, torn_at) {
            (Some((w, n)), Some(at)) => format!(" and write {w} (at byte {at} of the image) torn after {n} bytes"),
            _ => String::new(),
        },
        s.pick,
    )
}

impl Workload for CrashPropsSpec {
    fn phases(&self) -> Vec<String> {
        self.subjects().iter().map(|p| p.name().to_string()).collect()
    }

    fn scaled(&self, factor: f64) -> WorkloadKind {
        let mut s = self.clone();
        s.max_states = scale_count(self.max_states, factor);
        s.guest_max_states = self.guest_max_states.map(|n| scale_count(n, factor));
        WorkloadKind::Crashprops(s)
    }

    fn validate(&self) -> Result<(), Invalid> {
        if self.max_states == 0 || self.guest_max_states == Some(0) {
            return Err("max_states and guest_max_states must be at least 1".into());
        }
        if self.exhaustive == 0 {
            return Err("exhaustive must be at least 1 (an epoch's empty subset)".into());
        }
        if let Some(bad) = self.probes.iter().find(|n| probes::by_name(n).is_none()) {
            let names: Vec<&str> = probes::TABLE.iter().map(|p| p.name).collect();
            return Err(Invalid(format!("unknown probe `{bad}`; known: {}", names.join(", "))));
        }
        if let Some(bad) = self.apps.iter().find(|n| apps::by_name(n).is_none()) {
            let names: Vec<&str> = apps::TABLE.iter().map(|a| a.name).collect();
            return Err(Invalid(format!(
                "unknown application `{bad}`; known: {}",
                names.join(", ")
            )));
        }
        Ok(())
    }

    fn needs_block_device(&self) -> bool {
        true
    }

    fn availability_on(&self, fs: &crate::fstype::FsType) -> Result<(), Unavailable> {
        match fs.name {
            "zfs" => Err("crashprops cannot record a ZFS pool: zfs-fuse's pool is not a filesystem on one loop device that a read-only mount of a copy recovers".into()),
            _ => {
                for a in self.selected_apps() {
                    (a.available)().map_err(|why| format!("{}: {why}", a.name))?;
                }
                Ok(())
            }
        }
    }

    fn needs_loop_image(&self) -> bool {
        true
    }

    fn in_guest(&self) -> Option<WorkloadKind> {
        let n = self.guest_max_states?;
        Some(WorkloadKind::Crashprops(CrashPropsSpec {
            max_states: n,
            guest_max_states: None,
            ..self.clone()
        }))
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        // An application's folder is about a dozen files (git) in a few dirs, under 256 KiB; a
        // server's data directory about a thousand files (apps::App::bytes).
        let n = self.selected().len() as u64 + 4 * self.selected_apps().len() as u64;
        let servers = self.selected_apps().iter().filter(|a| a.max_states.is_some()).count() as u64;
        let app_bytes: u64 = self.selected_apps().iter().map(|a| a.bytes).sum();
        crate::fstype::Footprint {
            files: 3 * n + 1500 * servers,
            dirs: 2 * n + 1 + 20 * servers,
            block_bytes: self.selected().len() as u64 * 160 * 1024 + app_bytes,
            entry_bytes: n * 96,
            ..Default::default()
        }
    }

    fn describe(&self) -> String {
        format!(
            "crashprops: {}, up to {} crash states each{} (exhaustive up to {} per epoch, else prefixes and {} samples, seed {}{}), flushes {}",
            match (self.selected().len(), self.apps.is_empty()) {
                (n, true) => format!("{n} persistence-property probes"),
                (0, false) => format!("applications {}", self.apps.join(", ")),
                (n, false) => format!("{n} persistence-property probes and applications {}", self.apps.join(", ")),
            },
            self.max_states,
            match self.guest_max_states {
                Some(n) => format!(", {n} in a guest kernel"),
                None => String::new(),
            },
            self.exhaustive,
            self.samples,
            self.seed,
            if self.torn { "; torn writes" } else { "" },
            match self.barriers {
                Barriers::Honoured => "honoured",
                Barriers::Ignored => "IGNORED (broken on purpose)",
            }
        )
    }

    fn run(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        self.run_probes(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_mount_is_told_by_mounts_own_words() {
        let text = "`mount -t xfs -o ro /dev/loop1 /r/mnt-x` failed (exit status: 32): mount: /r/mnt-x: cannot mount; probably corrupted filesystem on /dev/loop1. /   dmesg(1) may have more information.";
        assert_eq!(
            mount_failure(text, "/r/mnt-x"),
            "cannot mount; probably corrupted filesystem on /dev/loop1"
        );
        assert_eq!(mount_failure("no such thing\nsecond", "/r/mnt-x"), "no such thing");
    }

    #[test]
    fn state_mounts_are_read_only_and_xfs_ignores_the_uuid() {
        assert_eq!(
            state_mount_opts("ext4", "rw,relatime,data=journal"),
            "relatime,data=journal,ro"
        );
        assert_eq!(state_mount_opts("xfs", "rw"), "ro,nouuid");
        assert_eq!(
            state_mount_opts("f2fs", "rw,lazytime,flush_merge,extent_cache"),
            "lazytime,extent_cache,ro"
        );
    }

    #[test]
    fn a_device_that_is_not_a_loop_image_is_refused_with_the_reason() {
        let e = image_of("/dev/fsbench-no-such-device").unwrap_err().to_string();
        assert!(e.contains("not a loop device over an image"), "{e}");
    }

    #[test]
    fn bad_parameters_say_what_to_change() {
        let bad = CrashPropsSpec {
            probes: vec!["nope".into()],
            ..Default::default()
        };
        assert!(bad.validate().unwrap_err().0.contains("atomic-rename"));
        let zero = CrashPropsSpec {
            max_states: 0,
            ..Default::default()
        };
        assert!(zero.validate().is_err());
        let zero_in_guest = CrashPropsSpec {
            guest_max_states: Some(0),
            ..Default::default()
        };
        assert!(zero_in_guest.validate().unwrap_err().0.contains("guest_max_states"));
        let capped = CrashPropsSpec {
            guest_max_states: Some(6),
            ..Default::default()
        };
        assert!(capped
            .describe()
            .contains("up to 48 crash states each, 6 in a guest kernel"));
        match capped.scaled(0.5) {
            WorkloadKind::Crashprops(s) => assert_eq!((s.max_states, s.guest_max_states), (24, Some(3))),
            other => panic!("{other:?}"),
        }
        assert!(CrashPropsSpec::default().validate().is_ok());
        assert_eq!(CrashPropsSpec::default().phases().len(), probes::TABLE.len());
        let bad_app = CrashPropsSpec {
            apps: vec!["leveldb".into()],
            ..Default::default()
        };
        assert!(bad_app.validate().unwrap_err().0.contains("sqlite-wal"));
        let apps_only = CrashPropsSpec {
            apps: vec!["git".into(), "sqlite-wal".into()],
            ..Default::default()
        };
        assert_eq!(
            apps_only.phases(),
            vec!["sqlite-wal", "git"],
            "no probe, the table's order"
        );
        assert!(apps_only
            .describe()
            .starts_with("crashprops: applications git, sqlite-wal,"));
        let both = CrashPropsSpec {
            probes: vec!["atomic-rename".into()],
            ..apps_only
        };
        assert_eq!(both.phases(), vec!["atomic-rename", "sqlite-wal", "git"]);
    }
}
