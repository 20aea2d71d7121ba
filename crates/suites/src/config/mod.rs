//! Suite configuration: what to compare (filesystem variants), with what (workloads), and how
//! (repeats, warm-up, order, trimming).
//!
//! The pipeline is `text ─raw (serde, deny_unknown_fields)─▶ validate ─▶ Suite`. Raw structs
//! keep the user's spelling and positions so errors can say `file:line:col` and suggest the
//! nearest valid key; [`Suite`] is what the rest of fsbench consumes and is always valid:
//! at least one variant and one workload, unique names that are safe as file names, repeats ≥ 1,
//! sizes already multiplied by `--scale`.
//!
//! Presets are TOML files under `presets/` embedded with `include_str!`: they go through exactly
//! the same loader as a user's file, so a user can copy one and edit it.

use crate::engine::WorkloadKind;
use crate::units::Bytes;
use serde::{Deserialize, Serialize};

mod diag;
mod load;
mod presets;
mod raw;
mod real;
mod variant;

pub use load::{
    load_file, load_preset, load_str, preset_names, preset_text, ConfigError, MAX_NAME_LEN, MAX_REPEATS, MAX_SCALE,
    MAX_WARMUP,
};
pub use real::Tools;

pub use variant::{guest_variant_name, parse_fs_list, strip_guest_suffix, DEBIAN_KERNEL};

pub use crate::policy::{Order, Policy};

/// The run policy of a stored suite text, for the store's sessions from before schema 4: the
/// store's `SuitePolicyReader`, which whoever opens a store passes it (the store never reads
/// suites). The error is a [`ConfigError`].
pub fn stored_suite_policy(text: &str, name: &str) -> Result<Policy, Box<dyn std::error::Error + Send + Sync>> {
    Ok(load_str(text, name, &Overrides::default())?.policy)
}

/// One filesystem configuration to compare: a type plus mkfs arguments and mount options.
///
/// Serialized as before (the type by name only); deserializing resolves the name again
/// ([`StoredVariant`]), since a stored or sent variant was checked when it was first read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "StoredVariant")]
pub struct FsVariant {
    /// Unique display name, safe as a file-name component (`[A-Za-z0-9._:,=+-]`, no `/`, not
    /// `.` or `..`). Defaults to `type[:opts]`, e.g. `btrfs:compress=lzo`.
    pub name: String,
    /// Filesystem type as given to `mkfs.TYPE` and `mount -t` (`ext4`, `xfs`, `btrfs`, `tmpfs`).
    pub fs_type: String,
    /// Extra arguments for `mkfs.TYPE`, after fsbench's own (`-F`/`-f`, ext4 lazy init off).
    pub mkfs_args: Vec<String>,
    /// Mount options (`noatime`, `compress=lzo`, …), joined with commas for mount(2).
    pub mount_opts: Vec<String>,
    /// Loop image size; when absent it is computed from the workloads.
    pub image_size: Option<Bytes>,
    /// The kernel the variant runs under in a QEMU guest ([`crate::guest`]): `guest` for
    /// Debian's linux-image-amd64, or a path to a bzImage; `None` for the host's own kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// NoCOW (`nocow = true`, btrfs only): the workload's directory gets `FS_NOCOW_FL`
    /// (`chattr +C`) after mounting and before the workload, so the files it creates are
    /// written in place, without data checksums or compression; read back into the sample's
    /// path facts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nocow: bool,
    /// `fs_type`'s row of the filesystem type table, resolved once when the variant is made
    /// (the suite, `--fs`, or [`FsVariant::with_type`]); not serialized.
    #[serde(skip_serializing)]
    pub entry: crate::fstype::FsTypeId,
}

/// The serialized form of [`FsVariant`]: its fields without the resolved table row.
#[derive(Deserialize)]
struct StoredVariant {
    name: String,
    fs_type: String,
    mkfs_args: Vec<String>,
    mount_opts: Vec<String>,
    image_size: Option<Bytes>,
    #[serde(default)]
    kernel: Option<String>,
    #[serde(default)]
    nocow: bool,
}

impl From<StoredVariant> for FsVariant {
    fn from(v: StoredVariant) -> Self {
        FsVariant {
            entry: crate::fstype::FsTypeId::of(&v.fs_type),
            name: v.name,
            fs_type: v.fs_type,
            mkfs_args: v.mkfs_args,
            mount_opts: v.mount_opts,
            image_size: v.image_size,
            kernel: v.kernel,
            nocow: v.nocow,
        }
    }
}

impl FsVariant {
    /// A variant of type `fs_type` named `name`, no mkfs arguments or mount options, sized from
    /// the workloads, on the host's kernel; its table row resolved here.
    pub fn with_type(name: impl Into<String>, fs_type: impl Into<String>) -> Self {
        let fs_type = fs_type.into();
        FsVariant {
            entry: crate::fstype::FsTypeId::of(&fs_type),
            name: name.into(),
            fs_type,
            mkfs_args: Vec::new(),
            mount_opts: Vec::new(),
            image_size: None,
            kernel: None,
            nocow: false,
        }
    }

    /// The variant's row of the filesystem type table: resolved when the suite or `--fs` was
    /// read (an unknown type is refused there), so this is a lookup, never a guess.
    pub fn fs(&self) -> &'static crate::fstype::FsType {
        self.entry.get()
    }
}

/// A named workload with its parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSpec {
    /// Unique name within the suite (defaults to the kind).
    pub name: String,
    /// What it does and its parameters.
    pub kind: WorkloadKind,
    /// The `[[fs]]` columns (by name) it runs on (`fs = [...]` in the `[[workload]]`); empty:
    /// every column. On any other column its case is unavailable, with the list as the reason
    /// (reported, never silently left out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fs: Vec<String>,
    /// `memory = "…"` in the `[[workload]]`: the memory cgroup limit of this workload's
    /// repeats, bytes, in place of the run's (`[run] memory` / `--memory`); `None`: the run's.
    /// The runner makes one cgroup per distinct limit (`run::Runner`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<crate::units::Bytes>,
}

/// A validated suite: everything a run needs to know.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Suite {
    /// Suite name (the preset's name for presets).
    pub name: String,
    /// One-paragraph description.
    pub description: String,
    /// Repeats and statistics.
    pub policy: Policy,
    /// Filesystem variants, in column order.
    pub variants: Vec<FsVariant>,
    /// Workloads, in run order.
    pub workloads: Vec<WorkloadSpec>,
    /// The scale factor already applied to every size and duration.
    pub scale: f64,
    /// `[target] device`, confirmed by an identical `wipe` in the file: the real device to
    /// format, as `--device X --wipe X` names it on the command line.
    pub device: Option<std::path::PathBuf>,
    /// `[run] strict = true`: `fsbench run` exits 1 when any repeat failed (as `--strict`), not
    /// only when no case produced results.
    #[serde(default)]
    pub strict: bool,
    /// `[run] equivalence` (or `--equivalence`): the equivalence margin of "the same", percent,
    /// inside (0, 100); `None`: the default, 3 % (`stats::verdict::DECIDED_MARGIN_PCT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalence: Option<f64>,
    /// `[run] loop_io` (or `--loop-io`): direct I/O on the loop devices' images (the default)
    /// or the host's page cache on purpose ([`crate::policy::LoopIo`]).
    #[serde(default)]
    pub loop_io: crate::policy::LoopIo,
    /// The exact TOML text the suite came from (stored with the session).
    pub source_text: String,
}

/// Command-line settings that override a suite file or preset. `None` keeps the file's value.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// `--fs`: replaces the suite's variants.
    pub variants: Option<Vec<FsVariant>>,
    /// `--only`: keeps only these workloads (by name or kind).
    pub only: Option<Vec<String>>,
    /// `--repeat`.
    pub repeats: Option<u32>,
    /// `--warmup`.
    pub warmup: Option<u32>,
    /// `--scale`: multiplies every size (and duration) of every workload.
    pub scale: Option<f64>,
    /// `--memory`: the memory cgroup limit of every repeat's workload.
    pub memory: Option<crate::units::Bytes>,
    /// `--precision`: target CI half-width of headline metrics, percent of the mean.
    pub precision: Option<f64>,
    /// `--budget`: the session's wall-time budget.
    pub budget: Option<crate::units::Dur>,
    /// `--equivalence`: the equivalence margin of "the same", percent.
    pub equivalence: Option<f64>,
    /// `--dir`: the target is an existing directory, so no filesystem is made and the suite
    /// needs no `[[fs]]` table (the directory's own filesystem is the one variant).
    pub dir_target: bool,
    /// `--tools`: native workloads or the suite's `[[real_workload]]` tools; `None` keeps the
    /// suite's `[run] tools` (default native).
    pub tools: Option<Tools>,
    /// `--loop-io`: how the loop devices do I/O; `None` keeps the suite's `[run] loop_io`
    /// (default direct).
    pub loop_io: Option<crate::policy::LoopIo>,
    /// `--target p99=5ms`: every workload that can run open loop (fileio, oltp on SQLite) also
    /// searches its capacity at this latency target.
    pub target: Option<crate::engine::openloop::LatencyTarget>,
}
