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
//!
//! doc/verify.md explains every pair and every row outside tolerance.

/// One compared metric: `native` (phase, metric) against `referee` (phase, metric).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MetricPair {
    /// Phase and metric of the native workload.
    pub native: (&'static str, &'static str),
    /// Phase and metric of the referee.
    pub referee: (&'static str, &'static str),
    /// Largest accepted |ratio − 1|, in percent (15, or 10 for copies).
    pub tolerance_pct: f64,
    /// Why the two cannot agree by design (shown, never counted as a failure); `None` when they
    /// should.
    pub by_design: Option<&'static str>,
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
}

/// Tolerance of every pair but copies, percent.
pub const TOLERANCE_PCT: f64 = 15.0;
/// Tolerance of copies (treecopy ↔ cp, rm), percent.
pub const COPY_TOLERANCE_PCT: f64 = 10.0;

const fn m(native: (&'static str, &'static str), referee: (&'static str, &'static str)) -> MetricPair {
    MetricPair {
        native,
        referee,
        tolerance_pct: TOLERANCE_PCT,
        by_design: None,
    }
}

const fn copy(native: (&'static str, &'static str), referee: (&'static str, &'static str)) -> MetricPair {
    MetricPair {
        native,
        referee,
        tolerance_pct: COPY_TOLERANCE_PCT,
        by_design: None,
    }
}

/// bonnie phases whose rate both print; bonnie++ prints `+++++` instead when a phase takes
/// under 0.5 s (detected per row in [`super::ratios`]).
const BONNIE_METRICS: &[MetricPair] = &[
    m(("seq_write_char", "throughput"), ("seq_write_char", "throughput")),
    m(("seq_write_block", "throughput"), ("seq_write_block", "throughput")),
    m(("rewrite", "throughput"), ("rewrite", "throughput")),
    m(("seq_read_char", "throughput"), ("seq_read_char", "throughput")),
    m(("seq_read_block", "throughput"), ("seq_read_block", "throughput")),
    m(("random_seeks", "rate"), ("random_seeks", "rate")),
    m(("seq_create", "rate"), ("seq_create", "rate")),
    m(("seq_stat", "rate"), ("seq_stat", "rate")),
    m(("seq_delete", "rate"), ("seq_delete", "rate")),
    m(("rand_create", "rate"), ("rand_create", "rate")),
    m(("rand_stat", "rate"), ("rand_stat", "rate")),
    m(("rand_delete", "rate"), ("rand_delete", "rate")),
];

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
total_size = "256MiB"
block_size = "4KiB"
time = "4s"
fadvise = "random""#,
        referee: r#"kind = "fio"
rw = "randread"
bs = "4KiB"
size = "256MiB"
runtime = "4s"
ioengine = "psync"
prepare = true
options = ["--nrfiles=8", "--file_service_type=random", "--norandommap=1", "--io_size=1099511627776"]"#,
        metrics: &[
            m(("rndrd", "reads_per_s"), ("randread_read", "iops")),
            m(("rndrd", "read_mib_s"), ("randread_read", "bw")),
        ],
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
    },
    Pair {
        id: "bonnie",
        tool: "bonnie++",
        // bonnie++ 2.00a: one syscall per byte for 3 MiB in the per-char phases, caches as the
        // earlier phases left them (dropped once, before the run). 32 Ki files (`-n 32`): at
        // 40–70 k creates/s here fewer make bonnie++ print +++++ for every small-file phase.
        native: r#"kind = "bonnie"
file_size = "512MiB"
chunk_size = "8KiB"
char_mode = "syscall"
char_size = "3MiB"
files = 32768
caches = "once""#,
        referee: r#"kind = "bonnie_pp"
size = "512MiB"
files = 32768
char_size = "3MiB""#,
        metrics: BONNIE_METRICS,
    },
    Pair {
        id: "treecopy",
        tool: "cp",
        native: r#"kind = "treecopy"
dataset = "kernel"
dataset_scale = 0.05"#,
        referee: r#"kind = "treecopy"
dataset = "kernel"
dataset_scale = 0.05
method = "cp""#,
        metrics: &[
            copy(("copy", "time"), ("copy", "time")),
            copy(("delete", "time"), ("delete", "time")),
        ],
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
    },
];

/// The referee of the `bigfile` pair fed a mismatched setting (`dd oflag=direct bs=4k`): the
/// hidden `--mismatch` of `fsbench verify`, which shows that the check can fail.
pub const MISMATCHED_DD: &str = r#"kind = "dd"
size = "512MiB"
block = "4KiB"
flag = "direct""#;

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
}
