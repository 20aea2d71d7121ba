//! The command line (clap derive). Parsing only: `app` gives the commands their meaning.
//!
//! Exit codes (documented in `--help`): 0 success, 1 runtime failure (a case failed, or
//! `compare` found a regression), 2 usage or configuration error, 130 interrupted.

use crate::choice::Choice;
use crate::history::HistoryFormat;
use crate::report::compare::{CompareFormat, Gate, DEFAULT_EQUIVALENCE_PCT, DEFAULT_THRESHOLD_PCT};
use crate::report::Format;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Default results database.
pub const DEFAULT_DB: &str = "fsbench-results/fsbench.db";
/// Default scratch folder for images and mountpoints (the runner's own default).
pub const DEFAULT_SCRATCH: &str = crate::run::options::DEFAULT_SCRATCH;

/// Compare Linux filesystems honestly: fsbench formats and mounts each filesystem on a loop
/// image, runs native workloads on a fresh filesystem for every repeat, stores every sample in
/// SQLite and reports means with 95 % confidence intervals and CPU use.
#[derive(Debug, Parser)]
#[command(
    name = "fsbench",
    version,
    after_help = "Start with `fsbench run` (the quick preset on ext4, xfs and btrfs), then \
`fsbench report latest`.\n\nExit codes: 0 ok, 1 runtime failure, 2 usage or configuration error, 130 interrupted."
)]
pub struct Cli {
    /// Results database, shared by every subcommand: a SQLite file, or a PostgreSQL URL
    /// (`postgres://user@host/dbname`; a unix socket: `postgresql:///dbname?host=/run/postgresql`).
    #[arg(long, global = true, value_name = "PATH|URL", env = "FSBENCH_DB", default_value = DEFAULT_DB)]
    pub db: PathBuf,
    /// Less output: no progress lines, only warnings, failures and the report.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// More output: `-v` shows every phase of every repeat as it starts.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a suite or preset: provision, run every workload on every filesystem, repeat, store,
    /// and print the comparison table.
    #[command(
        after_help = "Exit codes: 0 every repeat succeeded, or some failed but other cases produced results (a warning names each failed case; unavailable cases are reported, not errors); 1 no case produced results, or any repeat failed with --strict / `[run] strict = true`; 2 usage error or nothing runnable; 130 interrupted."
    )]
    Run(RunArgs),
    /// Print the cases, repeats, order, sizes and disk space a run would use, and stop.
    Plan(RunArgs),
    /// Print the report of a stored session.
    Report(ReportArgs),
    /// Compare two sessions metric by metric: ratio of means with its 95 % CI and a verdict
    /// (better / worse / same within 3 % / inconclusive, Holm-adjusted); exit code 1 when a
    /// headline metric (`--gate all`: any non-CPU metric) is significantly worse by more than
    /// the threshold.
    Compare(CompareArgs),
    /// List presets, workloads, filesystems or stored sessions.
    List {
        /// What to list.
        #[arg(value_enum)]
        what: ListWhat,
    },
    /// Check this machine: root, loop devices, drop_caches, mkfs tools, kernel filesystems,
    /// optional tools; each problem with its fix.
    Doctor(ScratchArgs),
    /// Undo what a killed run left behind (mounts, loop devices, images) from its state file;
    /// touches nothing else.
    Cleanup(ScratchArgs),
    /// Inside a QEMU guest only (crates/targets/src/guest/agent.rs): run one job and answer on a serial port.
    #[command(hide = true)]
    GuestAgent {
        /// The job file the host wrote.
        #[arg(long)]
        job: PathBuf,
        /// Where the framed reply goes (the guest's second serial port).
        #[arg(long)]
        out: PathBuf,
    },
    /// Run every native workload and the real tool it reproduces (fio, sysbench fileio,
    /// bonnie++, cp/rm, dd) alternately on fresh filesystems; print native/referee per metric
    /// with its 95 % CI; exit 1 if any is outside its tolerance (±15 %; ±10 % for copies, ±20 % /
    /// ±35 % for open-loop p50 / p99 latency).
    Verify(VerifyArgs),
    /// Deterministic datasets (the trees the treecopy workload copies).
    Dataset {
        /// What to do with datasets.
        #[command(subcommand)]
        what: DatasetCommand,
    },
    /// Serve the power-cut disk (started by the powercut workload; bench/powerdisk_cost.sh).
    #[command(hide = true)]
    Powerdisk(PowerdiskArgs),
    /// A metric across stored sessions, with change points (size and CI each); exit code 1
    /// when the newest session starts a significant regression beyond --threshold.
    History(HistoryArgs),
    /// Measure the session-to-session noise on purpose: run the same suite (`run`'s options)
    /// as N separate A/A sessions labelled aa-1 … aa-N, then print each headline row's
    /// between-session sd and what the sessions cost.
    #[command(
        after_help = "Cost: N sessions of the suite, one after another; before the first, the expected cost is printed from the newest complete session of the same suite and options on this host (or the suite's --budget), and after each the rest from the sessions so far. Each completed session stores its estimate, from it and the earlier complete sessions of its configuration (same host, kernel, suite, variants and sizes), which `report`, `history` and `compare` then use; --label X labels the sessions X-1 … X-N. Sessions run back to back see the short-term session effect: nights apart may show more.

Exit codes: 0 every session completed; 1 a session's repeats failed as `run` counts them; 2 usage error (--sessions outside 2–20, --resume, --ranks, --events); 130 interrupted (every session completed before is stored, with its estimate)."
    )]
    Noise(NoiseArgs),
    /// Copy stored sessions (default: every finished one) from the local SQLite --db into a
    /// shared PostgreSQL store; a session already there is not copied again.
    Push {
        /// Sessions: ids, labels, or `latest`.
        #[arg(value_name = "SESSION")]
        sessions: Vec<String>,
        /// The PostgreSQL store: `postgres://user@host/dbname`.
        #[arg(long, value_name = "URL")]
        to: String,
    },
    /// Run a program under strace and write a portable trace of its file-system calls under
    /// --root (paths, sizes, offsets, results and times; never file contents), to replay with a
    /// `kind = "replay"` workload on any filesystem (doc/replay.md).
    #[command(
        after_help = "Exit codes: 0 traced and written; 1 the program failed (the trace is written anyway) or the trace could not be written; 2 usage error: the command or strace not found, --root not a directory."
    )]
    Record(RecordArgs),
    /// Inside `fsbench record --untraced-run`'s private namespaces only (src/app/untraced_run.rs):
    /// mount the copy of the root, make every other mount read-only, run the program under perf.
    #[command(hide = true)]
    UntracedRun(UntracedRunArgs),
    /// Print a shell completion script: `fsbench completions bash > /etc/bash_completion.d/fsbench`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or with --dir write fsbench.1 and one page per subcommand.
    Man {
        /// Write the pages into this folder instead (e.g. /usr/local/share/man/man1).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// Arguments of the hidden `powerdisk` command: serve `base` as `MOUNT/image` until unmounted.
#[derive(Debug, Clone, Args)]
pub struct PowerdiskArgs {
    /// The image file (or block device) to serve.
    #[arg(long, value_name = "PATH")]
    pub base: PathBuf,
    /// An empty folder to mount the FUSE filesystem on.
    #[arg(long, value_name = "DIR")]
    pub mount: PathBuf,
    /// What the disk keeps across a cut.
    #[arg(long, value_parser = choice::<crate::engine::workloads::powercut::disk::Model>(), default_value = "volatile")]
    pub model: crate::engine::workloads::powercut::disk::Model,
    /// Seed of the seeded models' cuts (`reorder`, `torn-sectors`).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// Subcommands of `dataset`.
#[derive(Debug, Subcommand)]
pub enum DatasetCommand {
    /// Generate a dataset into a new or empty directory and print its measured profile (files,
    /// directories, symlinks, depth, size quantiles) and manifest hash.
    #[command(after_help = crate::datasets::profiles_help())]
    Gen(DatasetGenArgs),
}

/// Arguments of `dataset gen`.
#[derive(Debug, Args)]
pub struct DatasetGenArgs {
    /// Which dataset.
    #[arg(value_parser = choice::<crate::datasets::DatasetKind>(), value_name = "KIND")]
    pub kind: crate::datasets::DatasetKind,
    /// Where to generate it (created if missing; must be empty).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Multiply files, directories, symlinks and bytes, e.g. 0.05 for a small tree.
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub scale: f64,
    /// Seed: the same kind, scale, seed and content always give the same tree.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// File contents.
    #[arg(long, value_parser = choice::<crate::datasets::Content>(), default_value = crate::datasets::Content::Random.as_str())]
    pub content: crate::datasets::Content,
}

/// Things `list` can show.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ListWhat {
    /// Built-in presets.
    Presets,
    /// Workload kinds and their phases.
    Workloads,
    /// Filesystem types and whether this machine can make and mount them.
    Filesystems,
    /// Sessions in the results database.
    Sessions,
}

/// The scratch folder option.
#[derive(Debug, Clone, Args)]
pub struct ScratchArgs {
    /// Folder for loop images and mountpoints (each run uses a private subfolder).
    #[arg(long, value_name = "DIR", default_value = DEFAULT_SCRATCH, value_parser = absolute_dir)]
    pub scratch: PathBuf,
}

/// The scratch folder made absolute: /proc/mounts names mount points by absolute path, so the
/// undo steps of a run in a relative `--scratch` would not find their own mounts.
fn absolute_dir(s: &str) -> Result<PathBuf, String> {
    std::path::absolute(s).map_err(|e| format!("{s}: {e}"))
}

/// Arguments of `run` and `plan`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Suite file (TOML). Without it, the preset given by --preset (default `quick`) runs.
    #[arg(value_name = "SUITE.toml")]
    pub suite: Option<PathBuf>,
    /// Built-in preset to run (`fsbench list presets`).
    #[arg(long, value_name = "NAME", conflicts_with = "suite")]
    pub preset: Option<String>,
    /// Filesystem variants replacing the suite's, comma-separated: a type, optionally followed
    /// by `:` and mount options, e.g. `ext4,xfs,btrfs:compress=lzo,ext4:noatime,discard`.
    #[arg(long, value_name = "LIST")]
    pub fs: Option<String>,
    /// Run only these workloads (names or kinds, comma-separated).
    #[arg(long, value_name = "WORKLOADS", value_delimiter = ',')]
    pub only: Option<Vec<String>>,
    /// Measured repeats per case (each on a freshly made filesystem).
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,
    /// Warm-up repeats per case, run first and excluded from statistics.
    #[arg(long, value_name = "N")]
    pub warmup: Option<u32>,
    /// Multiply every size (and duration) of every workload, e.g. 0.1 for a smaller study.
    #[arg(long, value_name = "F")]
    pub scale: Option<f64>,
    /// `real`: run the external tools the suite names in `[[real_workload]]` tables (bonnie++,
    /// sysbench fileio, …) in place of fsbench's native workloads (suite key `[run] tools`).
    #[arg(long, value_parser = choice::<crate::config::Tools>(), value_name = "native|real")]
    pub tools: Option<crate::config::Tools>,
    /// Run every repeat's workload (and the servers it starts) in a memory cgroup with this
    /// limit, e.g. `786MiB`: the page cache of a machine with that much memory.
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<crate::units::Bytes>,
    /// How the loop devices under the filesystems do I/O on their images: `direct` (the
    /// default: `losetup --direct-io=on`, the host's page cache out of the way) or `buffered`
    /// (on purpose: the host's page cache serves and buffers the images; suite key `[run]
    /// loop_io`). Loop images only; the raw-device baseline stays direct.
    #[arg(long, value_parser = choice::<crate::policy::LoopIo>(), value_name = "direct|buffered")]
    pub loop_io: Option<crate::policy::LoopIo>,
    /// On a virtual machine whose balloon reports free memory to the hypervisor (which then
    /// faults it back in when reused, a cost that lands on whichever phase reuses it), hold the
    /// reporting for the run: `page_reporting_order` is raised above the largest block and
    /// put back at the end (also by `fsbench cleanup` after a kill). A machine-wide setting,
    /// so only on request; every repeat records whether reporting was on.
    #[arg(long)]
    pub hold_page_reporting: bool,
    /// After the minimum repeats, run more rounds until every headline metric's confidence
    /// interval is within PCT % of its mean (or every comparison is decided, or --budget is spent).
    #[arg(long, value_name = "PCT")]
    pub precision: Option<f64>,
    /// Most wall time the session may take with extra rounds (e.g. `10m`); never exceeded by
    /// more than one round.
    #[arg(long, value_name = "DURATION")]
    pub budget: Option<crate::units::Dur>,
    /// Equivalence margin, in percent: a filesystem is "the same as the best" when both
    /// one-sided tests put their ratio within ±PCT % (default 3; suite key `[run] equivalence`).
    /// Stored with the session; the stopping rule and the report use it.
    #[arg(long, value_name = "PCT")]
    pub equivalence: Option<f64>,
    #[command(flatten)]
    pub scratch: ScratchArgs,
    /// Benchmark this existing directory instead (no mkfs, no mount; works without root).
    #[arg(long, value_name = "PATH", conflicts_with = "fs")]
    pub dir: Option<PathBuf>,
    /// Format this real block device for every repeat instead of loop images (refused if it is
    /// mounted, holds data or a partition table, is swap, backs / or is an LVM/RAID member).
    #[arg(long, value_name = "DEV", conflicts_with = "dir")]
    pub device: Option<PathBuf>,
    /// Confirms --device: the same path, repeated exactly. Everything on it is destroyed.
    #[arg(long, value_name = "DEV")]
    pub wipe: Option<PathBuf>,
    /// Label stored with the session (for `report` and `compare`).
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Continue an interrupted session (id, label or `latest`): runs only the repeats not yet
    /// stored, with the session's own suite and options.
    #[arg(long, value_name = "SESSION")]
    pub resume: Option<String>,
    /// Write one JSON object per line for each session, case, phase and repeat (start, end,
    /// results) to FILE as the run goes; `-` writes them to standard output instead of the
    /// report table.
    #[arg(long, value_name = "FILE|-")]
    pub events: Option<PathBuf>,
    /// Run N processes on this host through Open MPI's `mpirun` (needs a binary built with
    /// `--features mpi`): rank 0 makes the filesystems, every rank runs each workload in its own
    /// subdirectory, the report shows cluster totals and every rank.
    #[arg(long, value_name = "N")]
    pub ranks: Option<u32>,
    /// Exit 1 when any repeat failed (suite key `[run] strict = true`). Without it a run exits
    /// 0 when some case produced results, warning which cases failed, and 1 only when none did.
    #[arg(long)]
    pub strict: bool,
    /// Seed of the order of the rounds: with `order = "interleaved"` (the default) every round
    /// runs its cases in a fresh random permutation drawn from it. Without it a seed is drawn;
    /// either way it is stored with the session, and the same N reproduces the order.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Latency target, e.g. `p99=5ms`: every workload that can run open loop (fileio, oltp on
    /// SQLite) also finds the highest rate at which that percentile of its response time stays
    /// under the limit (phase `PHASE:capacity`, metric `capacity_p99`).
    #[arg(long, value_name = "pQ=DURATION", value_parser = parse_target)]
    pub target: Option<crate::engine::openloop::LatencyTarget>,
    /// Save the aged filesystem of each `aging` workload with mode = "aged" (its first measured
    /// repeat) as DIR/VARIANT.img, a cleanly unmounted loop image, for later runs' --aged-from.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["aged_from", "dir", "device"])]
    pub keep_aged: Option<PathBuf>,
    /// Run the suite's sizes as written: no raising of a workload whose warm-up left a phase
    /// under the minimum time (by default its files, bytes, passes or seeks grow so that the
    /// fastest variant's phase takes about twice that time; the sizes chosen are printed and
    /// stored with the session).
    #[arg(long)]
    pub fixed_sizes: bool,
    /// Start every repeat of each aged `aging` workload from a copy of DIR/VARIANT.img (saved
    /// by --keep-aged; the image itself is never written) instead of ageing a fresh filesystem.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["dir", "device"])]
    pub aged_from: Option<PathBuf>,
}

/// Arguments of `noise`: how many A/A sessions, and `run`'s options for each.
#[derive(Debug, Clone, Args)]
pub struct NoiseArgs {
    /// A/A sessions to run, 2–20: 5 (the default) estimate the noise by themselves; fewer add
    /// to the earlier complete sessions of the same configuration.
    #[arg(long, value_name = "N", default_value_t = crate::run::aa::DEFAULT_AA_SESSIONS)]
    pub sessions: u32,
    #[command(flatten)]
    pub run: RunArgs,
}

/// Reads the stored command line of a session stored before its options were (schema 8 and
/// older) into the runner's options: [`crate::run::LegacyArgs`] for `--resume`.
pub fn legacy_run_options(args: &[String]) -> Result<crate::run::RunOptions, crate::run::BadLegacyArgs> {
    let cli = Cli::try_parse_from(args).map_err(|e| format!("stored command line does not parse: {e}"))?;
    match cli.command {
        Command::Run(a) => Ok(a.options()),
        _ => Err("the stored command line is not a `run`".into()),
    }
}

impl RunArgs {
    /// The runner's options of this command line (`--events` and `--ranks` are the edge's).
    pub fn options(&self) -> crate::run::RunOptions {
        crate::run::RunOptions {
            suite: self.suite.clone(),
            preset: self.preset.clone(),
            fs: self.fs.clone(),
            only: self.only.clone(),
            repeat: self.repeat,
            warmup: self.warmup,
            scale: self.scale,
            tools: self.tools,
            memory: self.memory,
            loop_io: self.loop_io,
            hold_page_reporting: self.hold_page_reporting,
            precision: self.precision,
            budget: self.budget,
            equivalence: self.equivalence,
            scratch: self.scratch.scratch.clone(),
            dir: self.dir.clone(),
            device: self.device.clone(),
            wipe: self.wipe.clone(),
            label: self.label.clone(),
            resume: self.resume.clone(),
            strict: self.strict,
            seed: self.seed,
            target: self.target,
            sequential: None,
            keep_aged: self.keep_aged.clone(),
            aged_from: self.aged_from.clone(),
            fixed_sizes: self.fixed_sizes,
            resized: Vec::new(),
        }
    }
}

/// Arguments of `verify`.
#[derive(Debug, Clone, Args)]
pub struct VerifyArgs {
    /// Filesystem variants, as `run --fs`.
    #[arg(long, value_name = "LIST", default_value = "ext4,xfs,btrfs")]
    pub fs: String,
    /// Runs of each native workload and of its referee (at least 2).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub pairs: u32,
    /// Multiply every size and duration, e.g. 0.25 for a quicker check.
    #[arg(long, value_name = "S")]
    pub scale: Option<f64>,
    /// After --pairs, more pairs of a filesystem's pair while one of its paired intervals
    /// straddles the tolerance edge, up to this many (= --pairs: none added).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub max_pairs: u32,
    /// No pairs are added once the next would end the run after this much time (e.g. 25m).
    /// The default leaves `--pairs 3` on ext4, xfs and btrfs (35 min on a quiet 2-core VM, the
    /// half-million small files of bonnie-files 10 of them) time for about two more rounds
    /// where intervals are undecided (doc/verify.md).
    #[arg(long, value_name = "DURATION", default_value = "60m")]
    pub budget: crate::units::Dur,
    /// Run only these pairs (comma-separated): fileio-rndrd, fileio-openloop, fileio-rndrw,
    /// bonnie-io, bonnie-files, treecopy, bigfile. Without --scale, the bonnie pairs are sized
    /// by a calibration run of their natives first (doc/verify.md).
    #[arg(long, value_name = "PAIRS", value_delimiter = ',')]
    pub only: Option<Vec<String>>,
    #[command(flatten)]
    pub scratch: ScratchArgs,
    /// Label stored with the session.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Test of the check itself: feed the bigfile pair's referee a mismatched setting.
    #[arg(long, hide = true)]
    pub mismatch: bool,
    /// TEST ONLY, of the check itself: the bonnie-io native reports twice the seeks it does
    /// (a native 2× too fast on random_seeks), which verify must flag.
    #[arg(long, hide = true)]
    pub fast_seeks: bool,
    /// Test of the check itself (test-only, doc/verify.md): multiply a compared native metric
    /// by FACTOR before it is stored, e.g. treecopy/copy/device_read_mib=1.5; repeatable.
    #[arg(long, hide = true, value_name = "PAIR/PHASE/METRIC=FACTOR")]
    pub bias_native: Vec<crate::verify::bias::Bias>,
}

/// Arguments of `report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Session id, label, or `latest`.
    #[arg(value_name = "SESSION", default_value = "latest")]
    pub session: String,
    /// Output format.
    #[arg(long, value_parser = choice::<Format>(), default_value = "table")]
    pub format: Format,
    /// Write to this file instead of standard output.
    #[arg(short = 'o', long, value_name = "PATH")]
    pub output: Option<PathBuf>,
}

/// Arguments of `compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Base session: id, label, or `latest`.
    #[arg(value_name = "BASE")]
    pub base: String,
    /// Candidate session: id, label, or `latest`.
    #[arg(value_name = "CAND")]
    pub cand: String,
    /// Smallest change, in percent, that counts as better or worse (when significant).
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_THRESHOLD_PCT)]
    pub threshold: f64,
    /// Equivalence margin, in percent: "same within PCT %" when both one-sided tests pass.
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_EQUIVALENCE_PCT)]
    pub equivalence: f64,
    /// Which rows decide the exit code: `headline` metrics only (default) or `all` non-CPU
    /// rows, tail latencies such as lat_max included.
    #[arg(long, value_parser = choice::<Gate>(), default_value = "headline")]
    pub gate: Gate,
    /// Output format.
    #[arg(long, value_parser = choice::<CompareFormat>(), default_value = "table")]
    pub format: CompareFormat,
    /// Write to this file instead of standard output.
    #[arg(short = 'o', long, value_name = "PATH")]
    pub output: Option<PathBuf>,
}

/// Arguments of `history`.
#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    /// Only sessions run on this hostname (default: the newest session's host fingerprint).
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// Only sessions of this suite (default: the newest session's suite).
    #[arg(long, value_name = "NAME")]
    pub suite: Option<String>,
    /// Only this filesystem variant (a report column, e.g. `ext4` or `ext4:sync`).
    #[arg(long, value_name = "VARIANT")]
    pub fs: Option<String>,
    /// Only this workload (its name in the suite).
    #[arg(long, value_name = "NAME")]
    pub workload: Option<String>,
    /// Only this phase.
    #[arg(long, value_name = "PHASE")]
    pub phase: Option<String>,
    /// Only this metric (default: every headline metric).
    #[arg(long, value_name = "NAME")]
    pub metric: Option<String>,
    /// The newest N sessions (the window change points are searched in).
    #[arg(long, value_name = "N", default_value_t = crate::history::DEFAULT_LAST)]
    pub last: usize,
    /// Smallest regression, in percent, that fails the exit code (when significant).
    #[arg(long, value_name = "PCT", default_value_t = crate::history::DEFAULT_THRESHOLD_PCT)]
    pub threshold: f64,
    /// Output format.
    #[arg(long, value_parser = choice::<HistoryFormat>(), default_value = "md")]
    pub format: HistoryFormat,
    /// Write to this file instead of standard output.
    #[arg(short = 'o', long, value_name = "PATH")]
    pub output: Option<PathBuf>,
}

impl HistoryArgs {
    /// History's options of this command line.
    pub fn options(&self) -> crate::history::HistoryOptions {
        crate::history::HistoryOptions {
            host: self.host.clone(),
            suite: self.suite.clone(),
            fs: self.fs.clone(),
            workload: self.workload.clone(),
            phase: self.phase.clone(),
            metric: self.metric.clone(),
            last: self.last,
            threshold: self.threshold,
            format: self.format,
            output: self.output.clone(),
        }
    }
}

/// The parser of a library's [`Choice`] (the library crates know no clap): its names are the
/// possible values, each with its description, as `#[derive(ValueEnum)]` would list them.
fn choice<T: Choice + Send + Sync>() -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(
        T::CHOICES
            .iter()
            .map(|&(_, name, help)| PossibleValue::new(name).help(help)),
    )
    .map(|name| T::from_name(&name).expect("clap accepts only the names"))
}

/// `--target`'s parser: `p99=5ms`.
fn parse_target(s: &str) -> Result<crate::engine::openloop::LatencyTarget, crate::engine::openloop::BadTarget> {
    crate::engine::openloop::LatencyTarget::parse(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    /// The reader of command lines stored before options were (schema 8, what the runner calls
    /// for such a session on `--resume`): a run line becomes the options `RunArgs::options`
    /// gives, defaults included; any other line is refused with why.
    #[test]
    fn stored_command_lines_read_back_as_run_options() {
        let o = legacy_run_options(&line(&[
            "fsbench",
            "--db",
            "r.db",
            "run",
            "suite.toml",
            "--dir",
            "/tmp",
            "--seed",
            "7",
            "--budget",
            "1h",
        ]))
        .unwrap();
        assert_eq!(o.suite.as_deref(), Some(std::path::Path::new("suite.toml")));
        assert_eq!(o.dir.as_deref(), Some(std::path::Path::new("/tmp")));
        assert_eq!(o.seed, Some(7));
        assert_eq!(o.budget, Some("1h".parse().unwrap()));
        assert_eq!(o.scratch, std::path::Path::new(DEFAULT_SCRATCH));
        let resume = legacy_run_options(&line(&["fsbench", "run", "--resume", "latest"])).unwrap();
        assert_eq!(resume.resume.as_deref(), Some("latest"));
        let e = legacy_run_options(&line(&["fsbench", "report", "latest"]))
            .unwrap_err()
            .0;
        assert!(e.contains("not a `run`"), "{e}");
        let e = legacy_run_options(&line(&["fsbench", "run", "--no-such-option"]))
            .unwrap_err()
            .0;
        assert!(e.contains("does not parse"), "{e}");
    }

    /// A library's `Choice` through clap: every name gives its value, and only the names are
    /// accepted (exactly, as `#[derive(ValueEnum)]` did).
    #[test]
    fn a_library_choice_parses_every_name_and_nothing_else() {
        let cmd = clap::Command::new("t").arg(clap::Arg::new("f").long("format").value_parser(choice::<Format>()));
        for &(value, name, _) in Format::CHOICES {
            let m = cmd.clone().try_get_matches_from(["t", "--format", name]).unwrap();
            assert_eq!(m.get_one::<Format>("f"), Some(&value));
        }
        assert!(cmd.try_get_matches_from(["t", "--format", "Table"]).is_err());
    }
}

/// `fsbench record`'s options.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The directory whose calls are recorded, and whose tree is captured before the program
    /// runs (default: the working directory). Calls outside it are counted, not recorded.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Where the trace is written.
    #[arg(short = 'o', long = "output", value_name = "TRACE", default_value = "fsbench.trace")]
    pub output: PathBuf,
    /// Replace every path component by a hash (the tree's shape and the name equalities are
    /// kept; the names, and their lengths, are not), and the command's arguments too (its
    /// program's name is kept).
    #[arg(long)]
    pub hash_names: bool,
    /// A directory outside the root whose paths the program touches to mark time: any call
    /// on `DIR/NAME` (an open, a stat, `test -e`, found or not) starts the phase NAME, which
    /// the replay reports as its own rows with `phases = "marks"` (doc/replay.md).
    #[arg(long, value_name = "DIR")]
    pub mark_on: Option<PathBuf>,
    /// Run the program a second time first, without strace: under `perf record` of its system
    /// calls alone, on a private in-memory copy of --root mounted over it, in a private mount and
    /// network namespace where every other mount is read-only; a timed replay takes its think
    /// times from that run (doc/replay.md, *An untraced run*). Only for programs whose effects
    /// are the files under --root: the program runs twice (a server it talks to over a socket
    /// would see it twice). Needs root, perf, and memory for the copy.
    #[arg(long)]
    pub untraced_run: bool,
    /// The program and its arguments, after `--`.
    #[arg(required = true, last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `fsbench untraced-run`'s options (hidden: started by `fsbench record --untraced-run` inside
/// `unshare --mount --net`).
#[derive(Debug, Args)]
pub struct UntracedRunArgs {
    /// The root whose copy the program sees.
    #[arg(long)]
    pub root: PathBuf,
    /// An empty directory to mount the copy's tmpfs on.
    #[arg(long)]
    pub copy: PathBuf,
    /// The directory perf writes its record into (left writable).
    #[arg(long)]
    pub out: PathBuf,
    /// The working directory the program starts in.
    #[arg(long)]
    pub cwd: PathBuf,
    /// perf.
    #[arg(long)]
    pub perf: PathBuf,
    /// The mount namespace of `fsbench record` (`readlink /proc/self/ns/mnt`): this one must
    /// differ.
    #[arg(long)]
    pub parent_ns: PathBuf,
    /// The program and its arguments.
    #[arg(required = true, last = true)]
    pub command: Vec<String>,
}
