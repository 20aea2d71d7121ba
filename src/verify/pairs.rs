//! The pairs `fsbench verify` runs: each native workload with the real tool it reproduces (its
//! referee), the settings that make them do the same work, and which metric of one is compared
//! with which metric of the other, with the tolerance and, where the two can never agree, why.
//!
//! Invariants:
//! - A pair's two workloads are named `<id>:native` and `<id>:<tool>` in the generated suite;
//!   [`super::ratios`] finds them by these names in a stored session, so a stored verify
//!   session keeps its pairing (and is rendered with the metric map of the fsbench reading it).
//! - Sizes are those of `--scale 1`; `--scale` multiplies them through the workloads' own
//!   `scaled` (never below what a workload needs).
//! - Nothing here imports `config`: the report uses this table too.
//! - Both sides of a pair do the same work at every accepted `--scale` ([`same_work`]); a
//!   scale at which they would not is refused before anything runs.
//!
//! doc/verify.md explains every pair and every row outside tolerance.

use crate::engine::WorkloadKind;
use crate::units::Bytes;

/// One compared metric: `native` (phase, metric) against `referee` (phase, metric).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MetricPair {
    /// Phase and metric of the native workload.
    pub native: (&'static str, &'static str),
    /// Phase and metric of the referee.
    pub referee: (&'static str, &'static str),
    /// Largest accepted |ratio − 1|, in percent (15, 10 for copies, 20 and 35 for open-loop
    /// latency percentiles).
    pub tolerance_pct: f64,
    /// A one-sided row: the native quantity can only be at least the referee's (why, e.g. a
    /// response time against a service time), so it is checked as a lower bound (the referee's
    /// mean less the tolerance) instead of a ratio; `None` for a two-sided ratio.
    pub at_least: Option<&'static str>,
    /// The (phase, metric) of the pair's second referee ([`Pair::second`]) this native metric
    /// is also compared with, as a ratio with its interval, where the first referee cannot
    /// time the phase (bonnie++'s fixed 8192 seeks); `None` for most rows.
    pub second: Option<(&'static str, &'static str)>,
    /// A throughput in MiB/s that the raw device bounds: when the row is a bound (bonnie++
    /// printed `+++++`), a native mean above the session's raw-device ceiling
    /// ([`crate::store::RawBaseline::ceiling_mib_s`] plus the cache-bound tolerance) fails as
    /// `FAR ABOVE`, since a bound alone passes a native that is too fast. `false` for most rows.
    pub device_ceiling: bool,
}

/// A native workload and its referee.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pair {
    /// Short id (`fileio-rndrd`), also the prefix of both workload names.
    pub id: &'static str,
    /// The referee's name (`fio`), the suffix of its workload name.
    pub tool: &'static str,
    /// The native workload's TOML body (without `name`).
    pub native: &'static str,
    /// The referee's TOML body (without `name`).
    pub referee: &'static str,
    /// The compared metrics.
    pub metrics: &'static [MetricPair],
    /// A second referee of the same access pattern for the rows with [`MetricPair::second`]:
    /// its tool name (the suffix of its workload name, `<id>:<tool>`) and TOML body.
    pub second: Option<(&'static str, &'static str)>,
}

/// The detail row of the MiB a phase read from the filesystem's block device
/// ([`crate::engine::phase`]'s device counters): a row of it has no value on a filesystem
/// without one (tmpfs, a ZFS pool), on either side ([`super::ratios`] says so, not a failure).
pub const DEVICE_READ_MIB: &str = "device_read_mib";

/// Tolerance of every pair but copies, percent.
pub const TOLERANCE_PCT: f64 = 15.0;
/// Tolerance of copies (treecopy ↔ cp, rm), percent.
pub const COPY_TOLERANCE_PCT: f64 = 10.0;
/// Tolerance of an open-loop median latency (fileio `svc_p50` ↔ fio clat p50), percent; and
/// [`P99_TOLERANCE_PCT`] of the 99th percentile. fio's histogram bins put its percentiles
/// within 1/128 (0.8 %) of the value, fsbench's within 0.1 %: under 1 % together. The rest is
/// the spread of one tool's percentile between two identical runs, measured on this machine
/// (doc/verify.md, "fileio-openloop"): the 95 % range of a ratio of 3-run means.
pub const P50_TOLERANCE_PCT: f64 = 20.0;
/// Tolerance of an open-loop 99th-percentile latency, percent; see [`P50_TOLERANCE_PCT`].
pub const P99_TOLERANCE_PCT: f64 = 35.0;

const fn m(native: (&'static str, &'static str), referee: (&'static str, &'static str)) -> MetricPair {
    MetricPair {
        native,
        referee,
        tolerance_pct: TOLERANCE_PCT,
        at_least: None,
        second: None,
        device_ceiling: false,
    }
}

/// A bonnie throughput row (MiB/s, the same phase and metric on both sides) held below the raw
/// device's ceiling when it is a bound ([`MetricPair::device_ceiling`]).
const fn dev(phase_metric: (&'static str, &'static str)) -> MetricPair {
    MetricPair {
        device_ceiling: true,
        ..m(phase_metric, phase_metric)
    }
}

const fn copy(native: (&'static str, &'static str), referee: (&'static str, &'static str)) -> MetricPair {
    MetricPair {
        native,
        referee,
        tolerance_pct: COPY_TOLERANCE_PCT,
        at_least: None,
        second: None,
        device_ceiling: false,
    }
}

/// A latency percentile compared with `tolerance_pct` ([`P50_TOLERANCE_PCT`] or
/// [`P99_TOLERANCE_PCT`]).
const fn lat(
    native: (&'static str, &'static str),
    referee: (&'static str, &'static str),
    tolerance_pct: f64,
) -> MetricPair {
    MetricPair {
        native,
        referee,
        tolerance_pct,
        at_least: None,
        second: None,
        device_ceiling: false,
    }
}

/// Why fileio's open-loop response time is checked as a bound: a job of fio that is behind its
/// schedule submits at once and times the read from that late submission, so the wait behind
/// schedule is never counted (coordinated omission) and fio has no response time; fileio's
/// `lat_*` counts it from the intended start. A response time is a service time plus a wait,
/// every read's at least its own service time, so each percentile of the response times is at
/// least the same percentile of the service times, which fio's clat measures (`svc_*` is
/// compared with it two-sided). The equality holds only while no read waits.
const RESPONSE_VS_CLAT: &str = "a response time is at least the service time fio's clat measures";

/// A native bound row whose native mean is more than this many times its second referee's
/// (bonnie++'s `+++++` bound of `random_seeks` beside fio) fails: the bound cannot catch a
/// native that is too fast, the second referee can.
pub const FAR_ABOVE_SECOND: f64 = 2.0;

/// The I/O phases of bonnie (`bonnie-io`); bonnie++ prints `+++++` instead of a rate when a
/// phase takes under 0.5 s (detected per row in [`super::ratios`]). `random_seeks` is also
/// compared with fio doing bonnie++'s seeks ([`BONNIE_SEEKS_FIO`]): bonnie++ always does 8192,
/// which a fast disk serves in under 0.5 s.
const BONNIE_IO_METRICS: &[MetricPair] = &[
    dev(("seq_write_char", "throughput")),
    dev(("seq_write_block", "throughput")),
    dev(("rewrite", "throughput")),
    dev(("seq_read_char", "throughput")),
    dev(("seq_read_block", "throughput")),
    MetricPair {
        second: Some(("randrw_read", "iops")),
        ..m(("random_seeks", "rate"), ("random_seeks", "rate"))
    },
];

/// The small-file phases of bonnie (`bonnie-files`).
const BONNIE_FILE_METRICS: &[MetricPair] = &[
    m(("seq_create", "rate"), ("seq_create", "rate")),
    m(("seq_stat", "rate"), ("seq_stat", "rate")),
    m(("seq_delete", "rate"), ("seq_delete", "rate")),
    m(("rand_create", "rate"), ("rand_create", "rate")),
    m(("rand_stat", "rate"), ("rand_stat", "rate")),
    m(("rand_delete", "rate"), ("rand_delete", "rate")),
];

/// The second referee of `random_seeks`: fio doing what bonnie++'s seekers do on a file of the
/// same size (the sizes are set with the pair's, [`sized_body`]): 5 jobs (`numjobs`, bonnie++'s
/// 5 seekers) on one shared file (`shared`: each job its own descriptor), 8 KiB requests
/// (`bs` = the chunk) at uniformly random chunk-aligned offsets drawn with replacement
/// (`randrw`, `norandommap`), one read in ten replaced by a write of a chunk (`rwmixread=90`:
/// bonnie++ reads every chunk and rewrites one in ten), psync, no readahead hint
/// (`fadvise_hint=0`: bonnie++ gives none) and the file's cache left as laying it out left it
/// (`invalidate=0`: bonnie++'s seeks run over what its block read left), an fsync at the end
/// (`end_fsync`: each seeker fsyncs before its close), and 1803 I/Os per job: 5 × 1803 = 9015
/// ≈ 8192 reads + 819 rewrites. Counted not timed (`time_based=0`; the runtime only caps
/// it). Its read rate (`randrw_read iops`: reads over the job's time, writes included) is
/// compared with the native's seeks per second (one read each).
const BONNIE_SEEKS_FIO: &str = r#"kind = "fio"
rw = "randrw"
bs = "8KiB"
size = "512MiB"
numjobs = 5
shared = true
runtime = "300s"
ioengine = "psync"
options = ["--time_based=0", "--number_ios=1803", "--rwmixread=90", "--norandommap=1", "--fadvise_hint=0", "--invalidate=0", "--end_fsync=1"]"#;

/// Every pair, in the order they run within a repeat.
pub const PAIRS: &[Pair] = &[
    Pair {
        id: "fileio-rndrd",
        tool: "fio",
        // fio's random jobs advise POSIX_FADV_RANDOM (fadvise_hint=1) and invalidate the file's
        // cache before the job (invalidate=1); the native run drops caches and advises the same.
        // fileio (as sysbench) draws offsets with replacement and never invalidates during the
        // run, so pages read once are hits later: fio gets `norandommap` (with replacement) and
        // an io_size no pass reaches in the runtime (a new pass would invalidate again). fio
        // lays its files out before the caches are dropped (`prepare`), as fileio does, so no
        // layer (the filesystem's pages, a loop device's backing file) starts warm.
        native: r#"kind = "fileio"
mode = "rndrd"
files = 8
total_size = "512MiB"
block_size = "4KiB"
time = "4s"
fadvise = "random""#,
        referee: r#"kind = "fio"
rw = "randread"
bs = "4KiB"
size = "512MiB"
runtime = "4s"
ioengine = "psync"
prepare = true
options = ["--nrfiles=8", "--file_service_type=random", "--norandommap=1", "--io_size=1099511627776"]"#,
        metrics: &[
            m(("rndrd", "reads_per_s"), ("randread_read", "iops")),
            m(("rndrd", "read_mib_s"), ("randread_read", "bw")),
        ],
        second: None,
    },
    Pair {
        id: "fileio-openloop",
        tool: "fio",
        // Issue 29: latency at a fixed offered load. 4 KiB random reads with O_DIRECT (the page
        // cache does not decide) at 1,000/s in all, Poisson arrivals, split over two workers
        // that are each their own queue: fileio's open loop gives each worker 500/s, fio's
        // `rate_iops` is per job (500 × numjobs 2). The same file layout on both sides: 16 files
        // of 32 MiB (fileio: one set of 16 that both workers read; fio: 8 per job, its files
        // are per job). fio times a read from its submission (clat; with psync the submission
        // is the pread itself) and never from its intended time: that is fileio's service time
        // (`svc_*`, from the actual start), compared with the tolerances above. fileio's
        // response time (`lat_*`: from the wake-up when the worker was idle, from the intended
        // start when it was behind) equals it only while no read waits for an earlier one and is
        // never below it, so its rows are checked as bounds (at least fio's clat less the
        // tolerance), with their ratios shown. fio's `json+` percentiles are its
        // histogram bins' centres (`lat_p50` = clat 50th).
        native: r#"kind = "fileio"
mode = "rndrd"
files = 16
total_size = "512MiB"
block_size = "4KiB"
io = "direct"
threads = 2
time = "8s"
fadvise = "random"
open_loop = { rate = 1000, arrival = "poisson" }"#,
        referee: r#"kind = "fio"
rw = "randread"
bs = "4KiB"
size = "256MiB"
numjobs = 2
direct = true
runtime = "8s"
ioengine = "psync"
prepare = true
options = ["--nrfiles=8", "--file_service_type=random", "--norandommap=1", "--io_size=1099511627776", "--rate_iops=500", "--rate_process=poisson"]"#,
        metrics: &[
            m(("rndrd", "reads_per_s"), ("randread_read", "iops")),
            lat(("rndrd", "svc_p50"), ("randread_read", "lat_p50"), P50_TOLERANCE_PCT),
            lat(("rndrd", "svc_p99"), ("randread_read", "lat_p99"), P99_TOLERANCE_PCT),
            MetricPair {
                at_least: Some(RESPONSE_VS_CLAT),
                ..lat(("rndrd", "lat_p50"), ("randread_read", "lat_p50"), P50_TOLERANCE_PCT)
            },
            MetricPair {
                at_least: Some(RESPONSE_VS_CLAT),
                ..lat(("rndrd", "lat_p99"), ("randread_read", "lat_p99"), P99_TOLERANCE_PCT)
            },
        ],
        second: None,
    },
    Pair {
        id: "fileio-rndrw",
        tool: "sysbench",
        native: r#"kind = "fileio"
mode = "rndrw"
files = 8
total_size = "256MiB"
block_size = "16KiB"
time = "4s""#,
        referee: r#"kind = "sysbench_fileio"
mode = "rndrw"
files = 8
total_size = "256MiB"
block_size = "16KiB"
time = "4s""#,
        metrics: &[
            m(("rndrw", "reads_per_s"), ("rndrw", "reads_per_s")),
            m(("rndrw", "writes_per_s"), ("rndrw", "writes_per_s")),
            m(("rndrw", "fsyncs_per_s"), ("rndrw", "fsyncs_per_s")),
        ],
        second: None,
    },
    Pair {
        id: "bonnie-io",
        tool: "bonnie++",
        // bonnie++ 2.00a's I/O phases alone (`-n 0`): one syscall per byte for 3 MiB in the
        // per-char phases, caches as the earlier phases left them (dropped once, before the
        // run), its seeks handed out through one pipe and never scaled (8192). The file is
        // sized by the calibration before the run ([`super::calibrate`]: each block phase about
        // 2 s at the speed measured there), at least the 512 MiB here; the run's memory cgroup
        // ([`MEMORY_MIB`]) keeps most of it out of the page cache on both sides.
        // `random_seeks` is compared with fio doing the same seeks too (`second`).
        native: r#"kind = "bonnie"
file_size = "512MiB"
chunk_size = "8KiB"
char_mode = "syscall"
char_size = "3MiB"
files = 0
caches = "once"
seek_dispatch = "pipe"
fixed_seeks = true"#,
        referee: r#"kind = "bonnie_pp"
size = "512MiB"
files = 0
char_size = "3MiB""#,
        metrics: BONNIE_IO_METRICS,
        second: Some(("fio", BONNIE_SEEKS_FIO)),
    },
    Pair {
        id: "bonnie-files",
        tool: "bonnie++",
        // bonnie++ 2.00a's small-file phases alone (`-s 0`), empty files in one directory,
        // each create and delete phase ending with a sync. The number of files is set by the
        // calibration ([`super::calibrate`]: the fastest phase, a stat, about 0.75 s at the
        // speed measured there), at most what the memory cgroup holds (128 Ki files under
        // 256 MiB ran without an OOM kill on ext4; 128 Ki under 128 MiB were OOM-killed, ext4's
        // inodes and dentries being charged to it), at least 16 Ki.
        native: r#"kind = "bonnie"
file_size = "0"
chunk_size = "8KiB"
files = 65536
caches = "once""#,
        referee: r#"kind = "bonnie_pp"
size = "0"
files = 65536"#,
        metrics: BONNIE_FILE_METRICS,
        second: None,
    },
    Pair {
        id: "treecopy",
        tool: "cp",
        // `cp -dR --preserve=ownership,timestamps,links`: what the native copier does. `cp -a`
        // adds a flistxattr per file (two, coreutils 9.1) and ACL calls through
        // --preserve=mode: 25 % more system calls on a 5,329-entry tree (doc/verify.md).
        native: r#"kind = "treecopy"
dataset = "kernel"
dataset_scale = 0.15"#,
        referee: r#"kind = "treecopy"
dataset = "kernel"
dataset_scale = 0.15
method = "cp"
cp_preserve = "ownership,timestamps,links"
cp_reuse_buffer = true"#,
        metrics: &[
            copy(("copy", "time"), ("copy", "time")),
            copy(("delete", "time"), ("delete", "time")),
            // What the copy read from the device (caches dropped before it): the same tree,
            // every file read once — a counted row that agrees as exactly as the device counts
            // (19.59–19.72 MiB natively against 19.73–19.74 for cp, 4 pairs at --scale 0.1 on
            // ext4), where the times carry the machine's noise. The MiB written are not
            // compared: a copy that outlasts ext4's 5 s journal commit journals its metadata
            // twice (cp wrote 9 % more in one repeat of a loaded run, 21.37 MiB in all others).
            copy(("copy", DEVICE_READ_MIB), ("copy", DEVICE_READ_MIB)),
        ],
        second: None,
    },
    Pair {
        id: "bigfile",
        tool: "dd",
        // Only write + fsync is compared; btrfs gives the space of an unlinked file back at its
        // next transaction commit (up to 30 s), so `space_freed` is left out after 1 s (a note)
        // rather than spend a minute and a half of the run waiting for it.
        native: r#"kind = "bigfile"
size = "512MiB"
block = "1MiB"
content = "zeros"
space_timeout = "1s""#,
        referee: r#"kind = "dd"
size = "512MiB"
block = "1MiB"
flag = "fsync""#,
        metrics: &[m(("fsync", "durable_throughput"), ("write", "throughput"))],
        second: None,
    },
];

/// The referee of the `bigfile` pair fed a mismatched setting (`dd oflag=direct bs=4k`): the
/// hidden `--mismatch` of `fsbench verify`, which shows that the check can fail.
pub const MISMATCHED_DD: &str = r#"kind = "dd"
size = "512MiB"
block = "4KiB"
flag = "direct""#;

/// The memory cgroup limit of a verify run at `--scale 1` (the suite's `[run] memory`): both
/// sides of every pair run under it, so the bonnie pair's 512 MiB file and `fileio-rndrd`'s
/// 512 MiB (twice the limit, bonnie++'s own rule for its file) are read mostly from the disk
/// rather than the page cache. Scaled with the sizes, never under
/// [`crate::cgroup::MIN_LIMIT`].
pub const MEMORY_MIB: u64 = 256;

/// The memory cgroup of the `bonnie-files` pair's sides for `files` small files, MiB: enough
/// for them at [`super::calibrate::FILES_PER_MIB`] (the kernel charges their inodes and dentries
/// to it), never under the run's `run_mib`. The stats are timed only with enough files (about
/// 512 Ki at 680 k stats/s on a quiet machine here), more than the run's 256 MiB holds.
pub fn files_memory_mib(files: u32, run_mib: u64) -> u64 {
    u64::from(files).div_ceil(super::calibrate::FILES_PER_MIB).max(run_mib)
}

/// The memory limit of a verify run at `scale`, MiB.
pub fn memory_mib(scale: f64) -> u64 {
    let min = crate::cgroup::MIN_LIMIT >> 20;
    let v = (MEMORY_MIB as f64 * scale).floor();
    if v.is_finite() && v >= min as f64 {
        (v as u64).min(u64::from(u32::MAX))
    } else {
        min
    }
}

/// The workload of a pair body (its TOML, `kind` included) scaled by `scale`.
fn scaled_kind(body: &str, scale: f64) -> Result<WorkloadKind, String> {
    let kind: WorkloadKind = toml::from_str(body).map_err(|e| format!("pair body does not load: {e}"))?;
    Ok(kind.workload().scaled(scale))
}

/// Whether both sides of `p` do the same work at `--scale scale`: `Err` says what differs
/// (then `fsbench verify` refuses the scale, exit 2). Only the bonnie pairs can differ:
/// bonnie++ counts in whole MiB and in thousands of files, and always does 8192 seeks; their
/// second referee (fio's seeks) must use a file of the native's size, in its chunks, with as
/// many jobs as seekers.
pub fn same_work(p: &Pair, scale: f64) -> Result<(), String> {
    let (WorkloadKind::Bonnie(n), WorkloadKind::BonniePp(r)) =
        (scaled_kind(p.native, scale)?, scaled_kind(p.referee, scale)?)
    else {
        return Ok(());
    };
    let mib = |b: u64| b as f64 / Bytes::MIB as f64;
    let native_file = n.file_size.get() / n.chunk_size.get().max(1) * n.chunk_size.get();
    let mut checks = vec![
        (
            "file MiB",
            mib(native_file),
            r.work("seq_write_block") / Bytes::MIB as f64,
            p.tool,
        ),
        (
            "per-char MiB",
            mib(n.effective_char_size()),
            r.work("seq_write_char") / Bytes::MIB as f64,
            p.tool,
        ),
        ("seeks", f64::from(n.seeks), r.work("random_seeks"), p.tool),
        ("files", f64::from(n.files), r.work("seq_create"), p.tool),
        ("directories", f64::from(n.dirs), f64::from(r.dirs), p.tool),
    ];
    if n.file_size.get() == 0 {
        // `-s 0`: no I/O phase on either side, whatever bonnie++'s per-char default.
        checks.retain(|c| c.0 != "per-char MiB" && c.0 != "seeks");
    }
    if n.files == 0 {
        checks.retain(|c| c.0 != "directories");
    }
    if let Some((tool, body)) = p.second {
        if let WorkloadKind::Fio(f) = scaled_kind(body, scale)? {
            checks.push(("file MiB", mib(native_file), mib(f.size.map_or(0, Bytes::get)), tool));
            checks.push((
                "request bytes",
                n.chunk_size.get() as f64,
                f.bs.map_or(0.0, |b| b.get() as f64),
                tool,
            ));
            checks.push(("seekers", f64::from(n.seekers), f64::from(f.numjobs.unwrap_or(1)), tool));
        }
    }
    let differ: Vec<String> = checks
        .iter()
        .filter(|(_, a, b, _)| a != b)
        .map(|(what, a, b, tool)| format!("{what} {a} native against {b} {tool}"))
        .collect();
    if differ.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "--scale {scale}: the {} pair would do different work on its two sides ({}): {} takes whole MiB and \
             thousands of files; use a scale at which both agree (1, or 1/16 = 0.0625), or leave the pair out with --only",
            p.id,
            differ.join(", "),
            p.tool
        ))
    }
}

/// The sizes of the bonnie pairs' work: the file of `bonnie-io` (and of its fio seeks) and the
/// number of small files of `bonnie-files`, at `--scale 1`, as [`super::calibrate`] sets them.
#[derive(Clone, Debug, PartialEq)]
pub struct BonnieSizes {
    /// The I/O file, bytes (a whole number of MiB).
    pub file: Bytes,
    /// The small files (a multiple of 1024).
    pub files: u32,
}

impl BonnieSizes {
    /// The sizes written in [`PAIRS`]: 512 MiB, 64 Ki files.
    pub const DEFAULT: BonnieSizes = BonnieSizes {
        file: Bytes(512 * Bytes::MIB),
        files: 65536,
    };
}

/// A pair body with the bonnie sizes of `s` (a `bonnie`, `bonnie_pp` or shared-file `fio`
/// body; any other body unchanged), as TOML. A side that skips a group (file size 0, no
/// files) keeps skipping it.
pub fn sized_body(body: &str, s: &BonnieSizes) -> Result<String, String> {
    let mut kind: WorkloadKind = toml::from_str(body).map_err(|e| format!("pair body does not load: {e}"))?;
    match &mut kind {
        WorkloadKind::Bonnie(b) => {
            if b.file_size.get() > 0 {
                b.file_size = s.file;
            }
            if b.files > 0 {
                b.files = s.files;
            }
        }
        WorkloadKind::BonniePp(b) => {
            if b.size.get() > 0 {
                b.size = s.file;
            }
            if b.files > 0 {
                b.files = s.files;
            }
        }
        WorkloadKind::Fio(f) if f.shared => f.size = Some(s.file),
        _ => return Ok(body.to_string()),
    }
    toml::to_string(&kind).map_err(|e| format!("pair body does not serialize: {e}"))
}

/// The workload name of a pair's second referee (`bonnie-io:fio`), if it has one.
pub fn second_name(p: &Pair) -> Option<String> {
    p.second.map(|(tool, _)| format!("{}:{tool}", p.id))
}

/// The pair named `id`.
pub fn pair(id: &str) -> Option<&'static Pair> {
    PAIRS.iter().find(|p| p.id == id)
}

/// The workload name of a pair's native side.
pub fn native_name(p: &Pair) -> String {
    format!("{}:native", p.id)
}

/// The workload name of a pair's referee.
pub fn referee_name(p: &Pair) -> String {
    format!("{}:{}", p.id, p.tool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_names_are_valid_workload_names() {
        for (i, p) in PAIRS.iter().enumerate() {
            assert!(PAIRS[..i].iter().all(|q| q.id != p.id), "{} twice", p.id);
            for n in [native_name(p), referee_name(p)] {
                assert!(
                    n.chars().all(|c| c.is_ascii_alphanumeric() || "._:,=+-".contains(c)),
                    "{n}"
                );
            }
            assert!(!p.metrics.is_empty());
        }
        assert_eq!(pair("bigfile").map(|p| p.tool), Some("dd"));
        assert!(pair("nope").is_none());
    }

    #[test]
    fn the_open_loop_pair_asks_fio_for_the_same_rate_arrivals_files_and_reads() {
        use crate::engine::openloop::Arrival;
        use crate::engine::workloads::fileio::IoMode;
        let p = pair("fileio-openloop").expect("the open-loop pair");
        let (Ok(WorkloadKind::Fileio(n)), Ok(WorkloadKind::Fio(f))) =
            (toml::from_str(p.native), toml::from_str::<WorkloadKind>(p.referee))
        else {
            panic!("native fileio and referee fio expected:\n{}\n{}", p.native, p.referee)
        };
        let open = n.open_loop.clone().expect("the native side runs open-loop");
        let opt = |key: &str| -> Option<String> {
            let prefix = format!("--{key}=");
            f.options.iter().find_map(|o| o.strip_prefix(&prefix).map(String::from))
        };
        let jobs = f.numjobs.expect("numjobs set");
        // fio's rate_iops is per job: numjobs × rate_iops is the native total rate, and each
        // fio job, like each fileio worker, is its own queue of rate / workers.
        let per_job: f64 = opt("rate_iops").expect("rate_iops").parse().expect("a number");
        assert_eq!((n.threads, open.rate), (jobs, per_job * f64::from(jobs)));
        // fio's Poisson gaps are (10^6 / iops) µs, integer-divided, times −ln U: a per-job rate
        // dividing 10^6 leaves the mean gap exact.
        assert_eq!(1e6 % per_job, 0.0, "{per_job}");
        assert_eq!(open.arrival, Arrival::Poisson);
        assert_eq!(opt("rate_process").as_deref(), Some("poisson"));
        assert!(open.sweep.is_empty() && open.target.is_none(), "one rate, one phase");
        // O_DIRECT 4 KiB random reads with psync, one at a time per worker, for the same time.
        assert_eq!((n.io, f.direct), (IoMode::Direct, Some(true)));
        assert_eq!(
            (f.rw.as_deref(), f.ioengine.as_deref()),
            (Some("randread"), Some("psync"))
        );
        assert_eq!(f.iodepth.unwrap_or(1), 1);
        assert_eq!(Some(n.block_size), f.bs);
        assert_eq!(Some(n.time), f.runtime);
        // The same file layout: as many files of the same size (fio's are per job).
        let nrfiles: u32 = opt("nrfiles").expect("nrfiles").parse().expect("a number");
        assert_eq!(n.files, nrfiles * jobs);
        let fio_size = f.size.expect("size").get();
        assert_eq!(n.file_size(), fio_size / u64::from(nrfiles));
        assert_eq!(n.total_size.get(), fio_size * u64::from(jobs));
        assert!(
            f.prepare,
            "fio lays its files out before the caches are dropped, as fileio"
        );
        // The compared metrics are those the two workloads record: fileio's open-loop phase
        // (its headline, latency set and detail rows) and fio's `<rw>_read` phase.
        use crate::engine::Workload;
        assert_eq!(n.phases(), ["rndrd"]);
        assert_eq!(f.phases(), ["randread_read"]);
        for mp in p.metrics {
            assert_eq!((mp.native.0, mp.referee.0), ("rndrd", "randread_read"));
            assert!(["reads_per_s", "lat_p50", "lat_p99", "svc_p50", "svc_p99"].contains(&mp.native.1));
            assert!(["iops", "lat_p50", "lat_p99"].contains(&mp.referee.1));
        }
        // Service time is fio's clat and is compared two-sided; the response time is at least it.
        let two_sided: Vec<&str> = p
            .metrics
            .iter()
            .filter(|m| m.at_least.is_none())
            .map(|m| m.native.1)
            .collect();
        assert_eq!(two_sided, ["reads_per_s", "svc_p50", "svc_p99"]);
        let bounds: Vec<&str> = p
            .metrics
            .iter()
            .filter(|m| m.at_least.is_some())
            .map(|m| m.native.1)
            .collect();
        assert_eq!(bounds, ["lat_p50", "lat_p99"]);
    }

    #[test]
    fn the_bonnie_pairs_do_the_same_work_or_the_scale_is_refused() {
        let io = pair("bonnie-io").unwrap();
        let files = pair("bonnie-files").unwrap();
        for ok in [1.0, 0.0625, 2.0] {
            assert_eq!(same_work(io, ok), Ok(()), "--scale {ok}");
            assert_eq!(same_work(files, ok), Ok(()), "--scale {ok}");
        }
        // 3 MiB × 0.5 = 1.5 MiB of per-char bytes natively, 1 MiB for bonnie++.
        let half = same_work(io, 0.5).unwrap_err();
        assert!(half.contains("per-char MiB 1.5 native against 1 bonnie++"), "{half}");
        // 64 Ki files × 0.3: 19660 natively, 19 × 1024 for bonnie++.
        let odd = same_work(files, 0.3).unwrap_err();
        assert!(odd.contains("files 19660 native against 19456"), "{odd}");
        for p in PAIRS.iter().filter(|p| !p.id.starts_with("bonnie")) {
            assert_eq!(same_work(p, 0.3), Ok(()), "{}", p.id);
        }
        // fio's seeks on another file size, or with another request size, is refused too.
        let other = Pair {
            second: Some((
                "fio",
                "kind = \"fio\"\nrw = \"randrw\"\nbs = \"4KiB\"\nsize = \"256MiB\"\nnumjobs = 5\nshared = true",
            )),
            ..*io
        };
        let e = same_work(&other, 1.0).unwrap_err();
        assert!(
            e.contains("file MiB 512 native against 256 fio")
                && e.contains("request bytes 8192 native against 4096 fio"),
            "{e}"
        );
        assert_eq!(memory_mib(1.0), 256);
        assert_eq!(memory_mib(0.0625), crate::cgroup::MIN_LIMIT >> 20);
    }

    #[test]
    fn the_seeks_of_fio_are_bonnie_plus_pluses() {
        let io = pair("bonnie-io").unwrap();
        let (Ok(WorkloadKind::Bonnie(n)), Some(("fio", body))) = (toml::from_str(io.native), io.second) else {
            panic!("bonnie native and a fio second referee expected")
        };
        let Ok(WorkloadKind::Fio(f)) = toml::from_str::<WorkloadKind>(body) else {
            panic!("fio: {body}")
        };
        let opt = |key: &str| -> Option<String> {
            let prefix = format!("--{key}=");
            f.options.iter().find_map(|o| o.strip_prefix(&prefix).map(String::from))
        };
        // 5 seekers on one file, each with its own descriptor; chunk-sized random requests
        // drawn with replacement; one in ten a write; an fsync at the end; counted, not timed.
        assert!(f.shared);
        assert_eq!(f.numjobs, Some(n.seekers));
        assert_eq!(f.bs, Some(n.chunk_size));
        assert_eq!(
            (f.rw.as_deref(), f.ioengine.as_deref()),
            (Some("randrw"), Some("psync"))
        );
        assert_eq!(opt("rwmixread").as_deref(), Some("90"));
        assert_eq!(100 / (100 - 90_u64), crate::engine::workloads::bonnie::UPDATE_SEEK);
        assert_eq!(opt("norandommap").as_deref(), Some("1"));
        assert_eq!(opt("time_based").as_deref(), Some("0"));
        assert_eq!(opt("end_fsync").as_deref(), Some("1"));
        assert_eq!(opt("fadvise_hint").as_deref(), Some("0"));
        assert_eq!(opt("invalidate").as_deref(), Some("0"));
        // As many reads as bonnie++'s seeks, plus the rewrites: 9015 I/Os of which 90 % reads.
        let per_job: u32 = opt("number_ios").expect("number_ios").parse().expect("a number");
        let ios = per_job * n.seekers;
        let reads = f64::from(ios) * 0.9;
        assert!(
            (reads - f64::from(n.seeks)).abs() / f64::from(n.seeks) < 0.01,
            "{reads}"
        );
        // The compared metric is fio's read rate, the row of random_seeks.
        let mp = io.metrics.iter().find(|m| m.second.is_some()).expect("a second row");
        assert_eq!(
            (mp.native, mp.second),
            (("random_seeks", "rate"), Some(("randrw_read", "iops")))
        );
        use crate::engine::Workload;
        assert!(f.phases().contains(&"randrw_read".to_string()));
        assert_eq!(second_name(io).as_deref(), Some("bonnie-io:fio"));
    }
}
