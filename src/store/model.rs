//! Records as they are stored and read back: the input of reports and exports.
//!
//! These are plain serde structs; the JSON export embeds them unchanged, so renaming a field
//! is a schema change (bump `report::SCHEMA_VERSION`).

use crate::metric::Measurement;
use serde::{Deserialize, Serialize};

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

/// The machine a session ran on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    /// `uname -n`.
    pub hostname: String,
    /// `uname -r`.
    pub kernel: String,
    /// /proc/cpuinfo model name.
    pub cpu_model: String,
    /// Online CPUs.
    pub ncpu: u32,
    /// MemTotal in bytes.
    pub mem_bytes: u64,
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
    /// fsbench version.
    pub fsbench_version: String,
    /// Machine description.
    pub host: HostInfo,
    /// Versions of external tools (`mkfs.ext4`, `mkfs.xfs`, …), as `(tool, version)`.
    pub tool_versions: Vec<(String, String)>,
    /// Target description (`loop images in /var/tmp/fsbench`, `directory /mnt/x`).
    pub target: String,
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
}
