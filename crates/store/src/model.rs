//! Records as they are stored and read back: the input of reports and exports.
//!
//! These are plain serde structs; the JSON export embeds them unchanged, so renaming a field
//! is a schema change (bump `report::SCHEMA_VERSION`).

use crate::metric::{Measurement, Unit};
use crate::policy::Policy;
use serde::{Deserialize, Serialize};

/// The serde form of [`NewSession::run_options`]: the stored JSON text as the JSON value it
/// holds (a text that does not parse, which fsbench never writes, as a string), read back as
/// its text.
mod options_json {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(text: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
        let value = text.as_deref().map(|t| {
            serde_json::from_str::<serde_json::Value>(t).unwrap_or_else(|_| serde_json::Value::String(t.to_string()))
        });
        value.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        Ok(Option::<serde_json::Value>::deserialize(d)?.map(|v| match v {
            serde_json::Value::String(t) => t,
            other => other.to_string(),
        }))
    }
}

/// The machine a session ran on (defined with the code that reads it, [`crate::sysinfo`]).
pub use crate::sysinfo::HostInfo;

/// Lifecycle of a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// Started, not finished (or the process died: see `fsbench cleanup`).
    Running,
    /// Every slot ran (some cases may have failed; see their samples).
    Complete,
    /// Stopped by SIGINT/SIGTERM.
    Interrupted,
    /// Stopped by an error that was not confined to one case.
    Failed,
}

impl SessionStatus {
    /// Stable text form.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Running => "running",
            SessionStatus::Complete => "complete",
            SessionStatus::Interrupted => "interrupted",
            SessionStatus::Failed => "failed",
        }
    }
    /// Inverse of [`SessionStatus::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        [
            SessionStatus::Running,
            SessionStatus::Complete,
            SessionStatus::Interrupted,
            SessionStatus::Failed,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }
}

/// One rank of a many-rank session (src/comm): its host and the filesystem holding the
/// directory the ranks use, as that rank saw them, and its clock against rank 0's. Stored in
/// `rank_hosts` (schema 8); a session of one rank has none.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RankHost {
    /// The rank, 0-based.
    pub rank: u32,
    /// The rank's machine (`uname -n`, `uname -r`, CPU model, online CPUs, MemTotal bytes).
    pub host: HostInfo,
    /// The directory the ranks use (`--dir`, else the scratch folder the filesystems are made
    /// in), as this rank named it.
    pub dir: String,
    /// Mount point of the filesystem holding `dir` (/proc/self/mountinfo field 5).
    pub mount_point: String,
    /// Its mount source (an NFS export, a device, `tmpfs`).
    pub mount_source: String,
    /// Its filesystem type (`nfs4`, `ext4`, `fuse.cephfs`, …).
    pub fs_type: String,
    /// Its per-mount options (`rw,relatime`).
    pub mount_opts: String,
    /// Its superblock options (`rw,vers=4.2,rsize=1048576,…` for NFS).
    pub super_opts: String,
    /// The rank's CLOCK_MONOTONIC minus rank 0's, in nanoseconds.
    pub clock_offset_ns: i64,
    /// The smallest ping-pong round trip that offset came from, in nanoseconds.
    pub clock_rtt_ns: i64,
}

/// What is known about a session before it runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NewSession {
    /// Free-form label (`--label`), used by `compare` and `report`.
    pub label: Option<String>,
    /// Suite name.
    pub suite_name: String,
    /// The suite's TOML text, after CLI overrides are noted in `args`.
    pub suite_text: String,
    /// The command line that started the session.
    pub args: Vec<String>,
    /// The runner's options of the session as JSON (schema 10; what `--resume` runs with, the
    /// order's `seed` among them); the store keeps the text and never reads it. `None` for
    /// sessions stored before. The JSON export carries it as an object ([`options_json`]).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "options_json")]
    pub run_options: Option<String>,
    /// fsbench version.
    pub fsbench_version: String,
    /// Machine description.
    pub host: HostInfo,
    /// Versions of external tools (`mkfs.ext4`, `mkfs.xfs`, …), as `(tool, version)`.
    pub tool_versions: Vec<(String, String)>,
    /// Target description (`loop images in /var/tmp/fsbench`, `directory /mnt/x`).
    pub target: String,
    /// Every rank of a many-rank session (schema 8), in rank order; empty (and absent from the
    /// JSON export) for one rank.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<RankHost>,
    /// How the repeats run and are summarised (trim, confidence, …), with the CLI's overrides
    /// applied; stored typed (schema 4). Not part of the JSON export (schema 1 has no such
    /// field): a model read back from JSON gets [`Policy::default`].
    #[serde(skip)]
    pub policy: Policy,
}

/// A stored session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// Row id.
    pub id: i64,
    /// RFC 3339 UTC start time.
    pub started_at: String,
    /// RFC 3339 UTC end time, if it ended.
    pub finished_at: Option<String>,
    /// Lifecycle state.
    pub status: SessionStatus,
    /// What was known at the start.
    #[serde(flatten)]
    pub info: NewSession,
}

/// Whether a case could run on this machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "reason")]
pub enum CaseAvailability {
    /// It can run.
    Available,
    /// It cannot run here, and why (`zfs: no mkfs.zfs and no zfs in /proc/filesystems`).
    Unavailable(String),
}

/// One (filesystem variant × workload) combination of a session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseRecord {
    /// Stable id: a hash of the normalised variant and workload (see `plan::CaseId`).
    pub case_id: String,
    /// Variant display name (report column).
    pub variant: String,
    /// Filesystem type.
    pub fs_type: String,
    /// Requested mkfs arguments (fsbench's own defaults included).
    pub mkfs_args: Vec<String>,
    /// Requested mount options.
    pub mount_opts: Vec<String>,
    /// Workload name.
    pub workload: String,
    /// Workload kind (`bonnie`).
    pub workload_kind: String,
    /// The workload's parameters as JSON (after scaling).
    pub workload_json: String,
    /// Whether it could run.
    pub availability: CaseAvailability,
}

/// Outcome of one repeat.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "error")]
pub enum SampleStatus {
    /// Produced measurements.
    Ok,
    /// Failed with this error; no measurements.
    Failed(String),
}

/// One repeat of one case, ready to store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NewSample {
    /// Which case.
    pub case_id: String,
    /// 0-based repeat index counting warm-ups first (warm-ups are 0..warmup).
    pub repeat: u32,
    /// Excluded from statistics.
    pub is_warmup: bool,
    /// RFC 3339 UTC start time.
    pub started_at: String,
    /// Wall time of the whole repeat including provisioning, in seconds.
    pub wall_s: f64,
    /// Outcome.
    pub status: SampleStatus,
    /// Device the filesystem was on (`/dev/loop7`), if any.
    pub device: Option<String>,
    /// Mount options as the kernel reports them in /proc/mounts.
    pub effective_mount_opts: Option<String>,
    /// Notes from the workload ("drop_caches skipped: not root").
    pub notes: Vec<String>,
    /// Every measurement of every phase.
    pub measurements: Vec<Measurement>,
    /// Latency histograms some tools report (fio); absent from exports when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histograms: Vec<crate::metric::LatencyHistogram>,
    /// Per-second operation counts of time-based phases (schema 7); absent from exports when
    /// there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<crate::metric::ThroughputSeries>,
    /// One latency histogram per window (1 s by default) of time-based phases (schema 12), a
    /// many-rank session's per rank and merged; absent from exports when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<crate::metric::LatencyWindows>,
    /// The I/O path the repeat really took, read back from the kernel after mounting (schema
    /// 11: loop direct I/O, scheduler, readahead, super options); `None` for samples stored
    /// before, guest and failed-before-mount repeats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<crate::host::path::PathFacts>,
}

impl NewSample {
    /// A repeat of `case_id` that has not run yet: status Ok, no start time, wall time or
    /// device, nothing measured.
    pub fn new(case_id: String, repeat: u32, is_warmup: bool) -> NewSample {
        NewSample {
            case_id,
            repeat,
            is_warmup,
            started_at: String::new(),
            wall_s: 0.0,
            status: SampleStatus::Ok,
            device: None,
            effective_mount_opts: None,
            notes: vec![],
            measurements: vec![],
            histograms: vec![],
            series: vec![],
            windows: vec![],
            path: None,
        }
    }

    /// Takes what the repeat measured: `raw`'s measurements (replacing any), its notes (after
    /// those already here), histograms, series and windows.
    pub fn absorb(&mut self, raw: crate::metric::RawSample) {
        self.measurements = raw.measurements();
        self.notes.extend(raw.notes);
        self.histograms = raw.histograms;
        self.series = raw.series;
        self.windows = raw.windows;
    }

    /// Runs `check` on `wall_s` and on every measured value, each with a closure that names it
    /// (`wall_s`, `PHASE/METRIC`), up to the first error: the values a store requires finite.
    pub(crate) fn check_values<E>(
        &self,
        mut check: impl FnMut(f64, &dyn Fn() -> String) -> Result<(), E>,
    ) -> Result<(), E> {
        check(self.wall_s, &|| "wall_s".to_string())?;
        for m in &self.measurements {
            check(m.value, &|| format!("{}/{}", m.row(), m.metric.name))?;
        }
        Ok(())
    }
}

/// A stored repeat.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampleRecord {
    /// Row id.
    pub id: i64,
    /// What was stored.
    #[serde(flatten)]
    pub sample: NewSample,
}

/// Everything stored about one session: the input of `report::build`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionData {
    /// The session.
    pub session: SessionRecord,
    /// Its cases in plan order (column order = first appearance of each variant).
    pub cases: Vec<CaseRecord>,
    /// Its samples in the order they ran.
    pub samples: Vec<SampleRecord>,
    /// Its raw-device baseline; `None` for sessions stored before fsbench measured one (schema
    /// version 1) or stopped before it was measured.
    #[serde(default)]
    pub baseline: Option<RawBaseline>,
    /// The session-to-session noise of each report row as computed when the session completed
    /// (schema 13, [`NoiseEstimate`]); empty for sessions stored before, sessions that did not
    /// complete, and pushed ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub noise: Vec<NoiseEstimate>,
}

/// The between-session noise of one report row (workload, phase, metric, variant) for the
/// configuration of the session it is stored with (schema 13): the random-effects estimate of
/// the sd of a session's mean from session to session, from that session and the earlier
/// complete sessions of its configuration (`report::noise` decides which and computes it;
/// `stats::sessions::estimate`). The store keeps it as computed and never recomputes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoiseEstimate {
    /// Workload name.
    pub workload: String,
    /// Phase.
    pub phase: String,
    /// Metric name.
    pub metric: String,
    /// The metric's unit.
    pub unit: Unit,
    /// Variant (report column).
    pub variant: String,
    /// τ, the between-session sd of the ln of a session mean × 100: about the session-to-session
    /// relative sd, in percent. `None`: fewer than 5 usable sessions, no estimate.
    pub between_sd_pct: Option<f64>,
    /// The sessions it came from (the usable ones of this row: at least two measured repeats
    /// and a positive mean), the session it is stored with first, then newest first.
    pub sessions: Vec<i64>,
    /// The repeats' own spread over those sessions, percent of the mean (RMS of their CoVs),
    /// for context; `None` without a usable session.
    pub within_sd_pct: Option<f64>,
}

/// How a session's raw-device baseline ended (see [`RawBaseline`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "error")]
pub enum BaselineStatus {
    /// Both passes were measured; `values` holds them.
    Measured,
    /// The measurement failed with this error; `values` holds whatever was measured before.
    Failed(String),
    /// The target has no block device fsbench may overwrite (an existing directory, or only
    /// tmpfs variants); `method` says which.
    NoDevice,
}

/// One rate of a raw-device baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaselineValue {
    /// [`RawBaseline::SEQ_WRITE`], [`RawBaseline::SEQ_READ`], one pass method's rate
    /// (`raw_seq_read_buffered`) or [`RawBaseline::RAND_READ`].
    pub name: String,
    /// The rate, in `unit`.
    pub value: f64,
    /// Unit of `value` (MiB/s; ops/s for [`RawBaseline::RAND_READ`]).
    pub unit: Unit,
    /// Bytes transferred in the timed region.
    pub bytes: u64,
    /// Length of the timed region in seconds (for the write, fdatasync included).
    pub seconds: f64,
}

/// A session's raw-device baseline: what the block device under the filesystems delivers by
/// itself (sequential write and read, each the fastest of its passes, and in baselines measured
/// since issue 27 the random 4 KiB read rate; measured once before the first case, see
/// `crate::baseline`). The report flags throughputs and random-read rates above it as
/// cache-bound.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RawBaseline {
    /// How it ended.
    pub status: BaselineStatus,
    /// The device measured (`/dev/loop3`, `/dev/sdb`); `None` when there was none.
    pub device: Option<String>,
    /// How it was measured, or (for [`BaselineStatus::NoDevice`]) why there is no raw device.
    pub method: String,
    /// Something a reader should know about the measurement (a smaller size than planned
    /// because the scratch folder was short of space, buffered backing I/O).
    pub note: Option<String>,
    /// The measured rates, in the order measured.
    pub values: Vec<BaselineValue>,
}

impl RawBaseline {
    /// Name of the sequential write rate (fdatasync included), MiB/s.
    pub const SEQ_WRITE: &'static str = "raw_seq_write";
    /// Name of the sequential read rate, MiB/s.
    pub const SEQ_READ: &'static str = "raw_seq_read";
    /// Name of the random-read rate: O_DIRECT 4 KiB reads at random offsets, 16 in flight,
    /// ops/s (`crate::baseline::RANDOM_BLOCK`).
    pub const RAND_READ: &'static str = "raw_rand_read_4k";

    /// A baseline that could not be measured because the target has no raw device (`why`).
    pub fn no_device(why: impl Into<String>) -> RawBaseline {
        RawBaseline {
            status: BaselineStatus::NoDevice,
            device: None,
            method: why.into(),
            note: None,
            values: Vec::new(),
        }
    }

    /// The value named `name`, if it was measured.
    pub fn value(&self, name: &str) -> Option<&BaselineValue> {
        self.values.iter().find(|v| v.name == name)
    }

    /// The faster of the sequential write and read rates in MiB/s: what the device can deliver
    /// at best. `None` unless the baseline was measured and both rates are finite and positive.
    pub fn ceiling_mib_s(&self) -> Option<f64> {
        if self.status != BaselineStatus::Measured {
            return None;
        }
        let rate = |name| {
            self.value(name)
                .filter(|v| v.unit == Unit::MibPerSec && v.value.is_finite() && v.value > 0.0)
                .map(|v| v.value)
        };
        Some(rate(Self::SEQ_WRITE)?.max(rate(Self::SEQ_READ)?))
    }

    /// The random-read rate in 4 KiB reads per second: the most random reads the device serves
    /// without a cache in front of it. `None` unless the baseline was measured and has a finite,
    /// positive [`RawBaseline::RAND_READ`] in ops/s (baselines of an fsbench before it have none).
    pub fn random_read_ops_s(&self) -> Option<f64> {
        if self.status != BaselineStatus::Measured {
            return None;
        }
        self.value(Self::RAND_READ)
            .filter(|v| v.unit == Unit::OpsPerSec && v.value.is_finite() && v.value > 0.0)
            .map(|v| v.value)
    }
}
