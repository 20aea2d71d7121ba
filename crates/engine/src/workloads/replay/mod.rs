//! The `replay` workload: a program's recorded file-system calls (`fsbench record`,
//! [`crate::trace`]) replayed on the filesystem under test (issue 44; doc/replay.md).
//!
//! Untimed: the trace is read and checked, compiled ([`plan`]: paths to `CString`s, flags and
//! expected outcomes decoded, cross-thread dependencies found), and the tree the program found
//! is rebuilt in `replay/` in the run directory (directories with their modes, files filled to
//! their sizes with seeded random bytes, the symbolic links that stay under the root), then
//! `syncfs`. Timed, one phase `replay` (or, with `phases`, one per program or time mark, run
//! in pieces: [`phases`]): every recorded thread is a replay thread (a recorded
//! process is a thread too: processes share nothing in the replay but the handles the trace
//! gives them, which is all their calls use), each issuing its calls in program order with the
//! cross-thread ordering of [`plan`] ([`exec`]). `mode = "closed"` (default) issues each call as
//! soon as its dependencies allow; `mode = "timed"` also sleeps the recorded gap between a
//! thread's calls (the think time): the untraced run's where the recording made one
//! (`--untraced-run`, `crate::trace::untraced`), else the traced run's less the tracer's time in
//! that gap, measured per call where the recording had perf ([`plan::measured_gap`],
//! `crate::trace::timing`), else estimated from
//! the calibration, the thread's own calls' and that of the other threads it may have waited
//! for ([`plan::think_gap`]). Handles the program left open are closed after the last call, inside
//! the timed region. Everything is removed afterwards (untimed), also on error or interrupt.
//!
//! What a replayed call is: the same system call on the same relative path or handle with the
//! recorded flags, mode, offset and length; data written is random (contents are never
//! recorded); readv/writev become one read/write of the total length, access/faccessat
//! `faccessat`, truncate an open + ftruncate; a symbolic link whose target would leave the
//! root gets a dangling relative target instead ([`plan::OUTSIDE`]), so no replayed call can
//! reach outside the replay's directory (lookups through it then diverge). mmap and msync are counted, not replayed; a close
//! of a descriptor that was not its handle's last (the other copies fork or dup made) is
//! counted in the trace but issues nothing.
//!
//! | metric | unit | role |
//! |---|---|---|
//! | `time` | s, lower is better | headline |
//! | `calls_per_s` | ops/s, higher is better | headline |
//! | `divergent` | count, lower is better | outcome: calls whose result differed from the recording (error against success, another errno, another byte count or position), plus calls not issued because their handle's open failed |
//! | `calls_KIND` | count | detail, per kind replayed |
//! | `read_mib`, `write_mib` | MiB | detail |
//! | `syncs`, `dir_ops` | count | detail: fsync + fdatasync + sync_file_range; mkdir + rmdir + rename + unlink + symlink + link + creating opens |
//! | `recorded_time` | s | detail: the traced run's wall time |
//! | `count_gap_pct` | % | detail: the largest gap, over kinds, between calls issued and calls the trace asks for |
//!
//! With `phases = "process"` or `"marks"` every phase has these rows (its own calls, time and
//! divergent calls; `recorded_time` is the recorded span of its pieces).
//!
//! Fidelity: a note per repeat compares the calls issued per kind with the trace's (the check
//! fails beyond 1 % on any kind, or with any divergent call) and the replay's time with the
//! recorded run's, and names the kinds that diverged.

pub mod exec;
pub mod phases;
pub mod plan;

use crate::datasets::content::Content;
use crate::metric::{MetricId, RawSample, Role, Unit};
use crate::phase::{Caches, Phases, Policy, Timed};
use crate::trace::{EntryKind, Kind, Trace};
use crate::{EngineError, ErrHint, Invalid, RunContext, Workload, WorkloadKind};
use exec::{kind_index, Shared, Tally, KINDS};
pub use phases::PhaseBy;
use serde::{Deserialize, Serialize};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicU64};

/// The phase.
pub const REPLAY: &str = "replay";
/// The directory the tree is rebuilt in, in the run directory.
const TOP: &str = "replay";
/// Largest count gap, percent, the fidelity check accepts.
pub const COUNT_TOLERANCE_PCT: f64 = 1.0;
const ERR: ErrHint = ErrHint("the trace's tree and writes need a larger target");
/// One phase: no latency set (calls of every kind), no short-phase note (the trace is what it
/// is).
const POLICY: Policy = Policy::new();

/// How the calls are paced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayMode {
    /// As fast as the dependencies allow.
    #[default]
    Closed,
    /// With the recorded gaps between a thread's calls.
    Timed,
}

/// Parameters of the replay workload.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaySpec {
    /// The trace file `fsbench record -o` wrote (a relative path is relative to where fsbench
    /// runs). Required.
    #[serde(default)]
    pub trace: PathBuf,
    /// `closed` (default) or `timed`.
    #[serde(default)]
    pub mode: ReplayMode,
    /// Seed of the data written. Default 0.
    #[serde(default)]
    pub seed: u64,
    /// How the rows are split into phases: `none` (default, one phase `replay`), `process`
    /// (one per program the trace's processes ran), `marks` (one per time mark, `fsbench
    /// record --mark-on`); see [`phases`].
    #[serde(default)]
    pub phases: PhaseBy,
}

impl ReplaySpec {
    fn load(&self) -> Result<Trace, Invalid> {
        if self.trace.as_os_str().is_empty() {
            return Err("replay needs `trace = \"FILE\"`, a trace `fsbench record -o FILE -- CMD` wrote".into());
        }
        Trace::read(&self.trace).map_err(|e| Invalid(format!("replay trace: {e}")))
    }

    /// Whether the trace file is missing (not yet recorded: unavailable, not invalid).
    fn missing(&self) -> bool {
        !self.trace.as_os_str().is_empty() && std::fs::symlink_metadata(&self.trace).is_err()
    }
}

impl Workload for ReplaySpec {
    /// `replay`, or with `phases` the trace's phase names in order of first appearance (`replay`
    /// while the trace cannot be read).
    fn phases(&self) -> Vec<String> {
        match self.load() {
            Ok(t) if self.phases != PhaseBy::None => phases::split(&t, &plan::compile(&t), self.phases).names,
            _ => vec![REPLAY.to_string()],
        }
    }

    fn scaled(&self, _factor: f64) -> WorkloadKind {
        // A trace is replayed as recorded: there is nothing to scale.
        WorkloadKind::Replay(self.clone())
    }

    /// A trace that exists must be a whole, readable trace of this format; one that does not
    /// exist yet makes the case unavailable ([`Workload::availability`]), as a missing tool
    /// does.
    fn validate(&self) -> Result<(), Invalid> {
        if self.missing() {
            return Ok(());
        }
        let t = self.load()?;
        if self.phases == PhaseBy::Marks && t.header.marks.is_empty() {
            return Err(Invalid(format!(
                "replay trace {}: phases = \"marks\" but the trace has no time marks; record it with `fsbench record --mark-on DIR` and have the program touch DIR/NAME where phase NAME starts",
                self.trace.display()
            )));
        }
        Ok(())
    }

    fn availability(&self) -> Result<(), crate::Unavailable> {
        if self.missing() {
            return Err(crate::Unavailable(format!(
                "trace {} does not exist: record it with `fsbench record -o {} -- CMD` (the replay preset's traces: scripts/record-traces.sh)",
                self.trace.display(),
                self.trace.display()
            )));
        }
        Ok(())
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        let Ok(t) = self.load() else {
            return crate::fstype::Footprint::default();
        };
        let dirs = t.tree.iter().filter(|e| e.kind == EntryKind::Dir).count() as u64;
        let files = t.tree.iter().filter(|e| e.kind != EntryKind::Dir).count() as u64;
        let creates = t
            .calls
            .iter()
            .filter(|c| c.kind == Kind::Open && c.flags.contains("O_CREAT"))
            .count() as u64;
        let mkdirs = t.calls.iter().filter(|c| c.kind == Kind::Mkdir).count() as u64;
        let written = written(&t);
        let size = (t.tree_bytes() + written) / (files + creates).max(1);
        crate::fstype::Footprint::default()
            .dirs(dirs + mkdirs + 1, 16)
            .files(files + creates, size, 16)
    }

    /// The tree's files and bytes and the bytes the trace writes: a trace is replayed as
    /// recorded, `--scale` cannot shrink it.
    fn fixed_size(&self) -> Option<String> {
        let t = self.load().ok()?;
        let files = t.tree.iter().filter(|e| e.kind == EntryKind::File).count();
        Some(format!(
            "trace {}: a tree of {files} file(s), {}, plus {} written",
            self.trace.display(),
            crate::units::Bytes(t.tree_bytes()).human(),
            crate::units::Bytes(written(&t)).human()
        ))
    }

    fn describe(&self) -> String {
        let by = match self.phases {
            PhaseBy::None => String::new(),
            p => format!(" phases={p:?}"),
        };
        format!("replay {} mode={:?}{by}", self.trace.display(), self.mode).to_lowercase()
    }

    fn run(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        let trace = self.load()?;
        let top = ctx.dir.join(TOP);
        let result = run_phase(self, &trace, ctx, &top);
        let removed = std::fs::remove_dir_all(&top);
        match (result, removed) {
            (Ok(_), Err(e)) if top.exists() => Err(EngineError::io(format!("remove {}", top.display()), e)),
            (result, _) => result,
        }
    }
}

/// Bytes the trace's writes wrote (their recorded results).
fn written(t: &Trace) -> u64 {
    t.calls
        .iter()
        .filter(|c| matches!(c.kind, Kind::Write | Kind::Pwrite | Kind::CopyFileRange))
        .map(|c| c.result.max(0) as u64)
        .sum()
}

/// Untimed: the tree of `trace` under `top`, then syncfs.
fn rebuild(trace: &Trace, top: &Path, seed: u64, interrupt: &std::sync::atomic::AtomicBool) -> Result<(), EngineError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir(top).map_err(|e| ERR.io("mkdir", top, e))?;
    let mut data = vec![0u8; 1 << 20];
    Content::Random.fill(&mut data, seed ^ 0x7265_706c);
    let mut step = crate::progress::step(
        format!("replay tree ({} entries)", trace.tree.len()),
        Some(trace.tree.len() as u64),
        "entries",
    );
    for (i, e) in trace.tree.iter().enumerate() {
        if interrupt.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(EngineError::Interrupted);
        }
        let p = top.join(&e.path);
        match e.kind {
            EntryKind::Dir => std::fs::create_dir(&p).map_err(|x| ERR.io("mkdir", &p, x))?,
            EntryKind::Symlink => {
                if let Some(t) = &e.target {
                    std::os::unix::fs::symlink(t, &p).map_err(|x| ERR.io("symlink", &p, x))?;
                }
            }
            EntryKind::File => {
                use std::io::Write;
                let mut f = std::fs::File::create(&p).map_err(|x| ERR.io("create", &p, x))?;
                let mut left = e.size;
                while left > 0 {
                    let n = left.min(data.len() as u64) as usize;
                    f.write_all(&data[..n]).map_err(|x| ERR.io("write", &p, x))?;
                    left -= n as u64;
                }
            }
        }
        step.set(i as u64 + 1);
    }
    // Modes last, so a read-only directory is filled first.
    for e in trace.tree.iter().rev().filter(|e| e.kind != EntryKind::Symlink) {
        let p = top.join(&e.path);
        let mode = if e.kind == EntryKind::Dir {
            e.mode | 0o700
        } else {
            e.mode
        };
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).map_err(|x| ERR.io("chmod", &p, x))?;
    }
    let d = std::fs::File::open(top).map_err(|e| ERR.io("open", top, e))?;
    rustix::fs::syncfs(&d).map_err(|e| ERR.io("syncfs", top, e.into()))?;
    step.finish();
    Ok(())
}

fn run_phase(spec: &ReplaySpec, trace: &Trace, ctx: &RunContext, top: &Path) -> Result<RawSample, EngineError> {
    let plan = plan::compile(trace);
    let split = phases::split(trace, &plan, spec.phases);
    rebuild(trace, top, spec.seed, ctx.interrupt)?;
    let root = std::fs::File::open(top).map_err(|e| ERR.io("open", top, e))?;
    let mut data = vec![0u8; plan.buffer];
    Content::Random.fill(&mut data, spec.seed);
    let shared = Shared {
        plan: &plan,
        root: root.as_raw_fd(),
        fds: (0..plan.handles).map(|_| AtomicI32::new(-1)).collect(),
        done: plan.threads.iter().map(|_| AtomicU64::new(0)).collect(),
        timed: spec.mode == ReplayMode::Timed,
        interrupt: ctx.interrupt,
        data: &data,
    };
    let mut bufs: Vec<Vec<u8>> = plan.threads.iter().map(|_| vec![0u8; plan.buffer]).collect();
    let mut phases = Phases::new(ctx);
    let mut timed: Vec<Option<Timed<Tally>>> = split.names.iter().map(|_| None).collect();
    let last = split.pieces.len().saturating_sub(1);
    for (n, piece) in split.pieces.iter().enumerate() {
        // The program ran its phases with warm caches: only the first is dropped (if asked).
        let caches = if n == 0 { Caches::DropIfAsked } else { Caches::Keep };
        let t = phases.piece(&split.names[piece.phase], caches, || {
            run_piece(&shared, piece, &mut bufs, n == last)
        })?;
        let slot = &mut timed[piece.phase];
        *slot = Some(match slot.take() {
            None => t,
            Some(a) => a.then(t, |mut x, y| {
                x.add(&y);
                x
            }),
        });
    }
    let (mut total, mut wall) = (Tally::default(), 0.0);
    for (p, name) in split.names.iter().enumerate() {
        let Some(t) = &timed[p] else { continue };
        let ops = || {
            split
                .pieces
                .iter()
                .filter(move |pc| pc.phase == p)
                .flat_map(|pc| pc.ranges.iter().enumerate())
                .flat_map(|(th, r)| plan.threads[th][r.clone()].iter())
        };
        let expected = expected_of(ops());
        let creates = ops()
            .filter(|o| o.kind == Kind::Open && o.flags & libc::O_CREAT != 0)
            .count() as f64;
        let recorded = match spec.phases {
            PhaseBy::None => trace.header.wall_s,
            _ => split
                .pieces
                .iter()
                .filter(|pc| pc.phase == p)
                .map(|pc| pc.recorded_s)
                .sum(),
        };
        let metrics = rows(&t.value, &expected, t.wall.as_secs_f64(), creates, recorded);
        phases.record(name, t, metrics, &POLICY);
        total.add(&t.value);
        wall += t.wall.as_secs_f64();
    }
    let expected = expected_counts(&plan);
    let gap = count_gap_pct(&total.issued, &expected);
    for n in fidelity_notes(trace, &total, &expected, wall, gap) {
        phases.note(n);
    }
    if spec.phases != PhaseBy::None {
        phases.note(format!(
            "{REPLAY}: {} phases by {}, replayed in {} pieces one after the other (each waits for every call before it; fidelity above is the whole trace's)",
            split.names.len(),
            if spec.phases == PhaseBy::Process { "program" } else { "time mark" },
            split.pieces.len()
        ));
    }
    Ok(phases.finish())
}

/// One piece: a thread per recorded thread with ops in it, each running its range (a piece of
/// one thread runs on the calling thread); with
/// `close_all` (the last piece) or when interrupted, the handles still open are closed, inside
/// the timed region.
fn run_piece(
    shared: &Shared,
    piece: &phases::Piece,
    bufs: &mut [Vec<u8>],
    close_all: bool,
) -> Result<Tally, EngineError> {
    let busy: Vec<usize> = (0..piece.ranges.len())
        .filter(|&t| piece.ranges[t].start < piece.ranges[t].end)
        .collect();
    let tallies: Vec<Option<Tally>> = if let [t] = busy[..] {
        // One thread in the piece (one process's program): run it here, no thread to start.
        vec![shared.thread(t, piece.ranges[t].clone(), &mut bufs[t])]
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = bufs
                .iter_mut()
                .zip(&piece.ranges)
                .enumerate()
                .filter(|(_, (_, r))| r.start < r.end)
                .map(|(i, (b, r))| {
                    let r = r.clone();
                    s.spawn(move || shared.thread(i, r, b))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or(None)).collect()
        })
    };
    if close_all || tallies.iter().any(Option::is_none) {
        for fd in &shared.fds {
            let fd = fd.swap(-1, std::sync::atomic::Ordering::AcqRel);
            if fd >= 0 {
                // SAFETY: a descriptor the replay opened and no thread uses any more.
                unsafe { libc::close(fd) };
            }
        }
    }
    let mut total = Tally::default();
    for t in tallies {
        total.add(&t.ok_or(EngineError::Interrupted)?);
    }
    Ok(total)
}

/// Calls per kind the replay issues for the trace (every call but mmap, msync and the closes
/// of a handle's non-last descriptors).
pub fn expected_counts(plan: &plan::Plan) -> [u64; KINDS] {
    expected_of(plan.threads.iter().flatten())
}

/// [`expected_counts`] of some ops.
fn expected_of<'a>(ops: impl Iterator<Item = &'a plan::Op>) -> [u64; KINDS] {
    let mut n = [0u64; KINDS];
    for op in ops.filter(|o| o.issues()) {
        n[kind_index(op.kind)] += 1;
    }
    n
}

/// The largest gap, percent, between `issued` and `expected` over the kinds.
pub fn count_gap_pct(issued: &[u64; KINDS], expected: &[u64; KINDS]) -> f64 {
    (0..KINDS)
        .map(|i| {
            let (a, b) = (issued[i] as f64, expected[i] as f64);
            if b == 0.0 {
                if a == 0.0 {
                    0.0
                } else {
                    100.0
                }
            } else {
                (a - b).abs() / b * 100.0
            }
        })
        .fold(0.0, f64::max)
}

/// A phase's metrics: `creates` opens with O_CREAT among its calls, `recorded` its recorded
/// time (s).
fn rows(t: &Tally, expected: &[u64; KINDS], wall: f64, creates: f64, recorded: f64) -> Vec<(MetricId, f64)> {
    let issued: u64 = t.issued.iter().sum();
    let divergent: u64 = t.divergent.iter().sum();
    let d = |m: MetricId| m.with_role(Role::Detail);
    let n = |k: Kind| t.issued[kind_index(k)] as f64;
    let mut m = vec![
        (MetricId::lower("time", Unit::Seconds), wall),
        (
            MetricId::higher("calls_per_s", Unit::OpsPerSec),
            issued as f64 / wall.max(1e-9),
        ),
        (
            MetricId::lower("divergent", Unit::Count).with_role(Role::Outcome),
            divergent as f64,
        ),
    ];
    for (i, k) in Kind::ALL.iter().enumerate() {
        if expected[i] > 0 || t.issued[i] > 0 {
            m.push((
                d(MetricId::higher(&format!("calls_{}", k.name()), Unit::Count)),
                t.issued[i] as f64,
            ));
        }
    }
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    m.push((d(MetricId::higher("read_mib", Unit::Mib)), mib(t.read)));
    m.push((d(MetricId::higher("write_mib", Unit::Mib)), mib(t.written)));
    m.push((
        d(MetricId::higher("syncs", Unit::Count)),
        n(Kind::Fsync) + n(Kind::Fdatasync) + n(Kind::SyncFileRange),
    ));
    m.push((
        d(MetricId::higher("dir_ops", Unit::Count)),
        n(Kind::Mkdir)
            + n(Kind::Rmdir)
            + n(Kind::Rename)
            + n(Kind::Unlink)
            + n(Kind::Symlink)
            + n(Kind::Link)
            + creates,
    ));
    m.push((d(MetricId::lower("recorded_time", Unit::Seconds)), recorded));
    let gap = count_gap_pct(&t.issued, expected);
    m.push((d(MetricId::lower("count_gap_pct", Unit::Percent)), gap));
    m
}

/// The fidelity notes: the check's verdict with the kinds that missed it, and the times.
fn fidelity_notes(trace: &Trace, t: &Tally, expected: &[u64; KINDS], wall: f64, gap: f64) -> Vec<String> {
    let issued: u64 = t.issued.iter().sum();
    let want: u64 = expected.iter().sum();
    let divergent: u64 = t.divergent.iter().sum();
    let mut notes = Vec::new();
    let ok = gap <= COUNT_TOLERANCE_PCT && divergent == 0;
    if ok {
        notes.push(format!(
            "{REPLAY}: fidelity check passed: {issued} calls issued of the trace's {want} (every kind within {COUNT_TOLERANCE_PCT} %), none divergent"
        ));
    } else {
        let kinds: Vec<String> = Kind::ALL
            .iter()
            .enumerate()
            .filter(|(i, _)| t.divergent[*i] > 0 || t.issued[*i] != expected[*i])
            .map(|(i, k)| {
                format!(
                    "{} {} of {} issued, {} divergent",
                    k.name(),
                    t.issued[i],
                    expected[i],
                    t.divergent[i]
                )
            })
            .collect();
        let first = t
            .first
            .and_then(|(i, got)| Some((trace.calls.get(i as usize)?, got)))
            .map(|(c, got)| {
                let recorded = match &c.errno {
                    Some(e) => e.clone(),
                    None => c.result.to_string(),
                };
                let got = match got {
                    Ok(v) => v.to_string(),
                    Err(0) => "not issued".into(),
                    Err(e) => std::io::Error::from_raw_os_error(e).to_string(),
                };
                format!(
                    "; first: {} {} of thread {} at {:.6} s, recorded {recorded}, replayed {got}",
                    c.syscall,
                    c.path.as_deref().unwrap_or("(handle)"),
                    c.tid,
                    c.start_s
                )
            });
        notes.push(format!(
            "{REPLAY}: fidelity check FAILED: {divergent} divergent calls ({} not issued: their handle did not open), calls issued {issued} of {want} (largest gap {gap:.1} %, tolerance {COUNT_TOLERANCE_PCT} %): {}{}",
            t.skipped,
            kinds.join("; "),
            first.unwrap_or_default()
        ));
    }
    notes.push(format!(
        "{REPLAY}: {wall:.3} s against the recorded run's {:.3} s under {} (ratio {:.2}; the recorded time includes the tracer's cost)",
        trace.header.wall_s,
        trace.header.tool,
        wall / trace.header.wall_s.max(1e-9)
    ));
    notes
}

#[cfg(test)]
mod tests;
