//! [`RunOptions`]: what one `fsbench run` (or `plan`) is asked to do, as plain data. The edge
//! (`cli`) builds it from the command line; `verify` builds it for its own session; the runner
//! and `plan` read nothing else, so `run` never depends on the command-line parser.
//!
//! Invariants:
//! - It is stored with a new session (serde JSON, column `sessions.run_options_json`), and
//!   `--resume` runs the stored options, never re-parsing a command line.
//! - A field that is `None` takes the suite's value (or the built-in default); the checks of
//!   values (`--scale`, `--repeat`) are made where the options become suite overrides
//!   (`resume::overrides`), so stored and given options are checked alike.

use crate::config::Tools;
use crate::policy::LoopIo;
use crate::units::{Bytes, Dur};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Default scratch folder for images and mountpoints (`--scratch`).
pub const DEFAULT_SCRATCH: &str = "/var/tmp/fsbench";

/// The options of one run or plan.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunOptions {
    /// Suite file (TOML); without it, `preset` (default `quick`).
    pub suite: Option<PathBuf>,
    /// Built-in preset.
    pub preset: Option<String>,
    /// Filesystem variants replacing the suite's (the `--fs` list as typed).
    pub fs: Option<String>,
    /// Only these workloads (names or kinds).
    pub only: Option<Vec<String>>,
    /// Measured repeats per case.
    pub repeat: Option<u32>,
    /// Warm-up repeats per case.
    pub warmup: Option<u32>,
    /// Size (and duration) multiplier.
    pub scale: Option<f64>,
    /// Native workloads or the suite's real tools.
    pub tools: Option<Tools>,
    /// Memory cgroup limit of every repeat.
    pub memory: Option<Bytes>,
    /// How the loop devices under the filesystems do I/O on their images (`--loop-io`); `None`
    /// keeps the suite's `[run] loop_io` (default direct).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loop_io: Option<LoopIo>,
    /// `--hold-page-reporting`: hold the hypervisor's free page reporting for the run
    /// ([`crate::balloon::Hold`]), put back at its end.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hold_page_reporting: bool,
    /// Adaptive rounds until every headline CI is within this many percent.
    pub precision: Option<f64>,
    /// Most wall time with adaptive rounds.
    pub budget: Option<Dur>,
    /// Equivalence margin of "the same", percent (`--equivalence`, `[run] equivalence`): what
    /// the stopping rule and the report call the same as the best. A new session stores the
    /// margin it ran with (the suite's, else [`crate::stats::verdict::DECIDED_MARGIN_PCT`]);
    /// `None` in sessions before it (read as the default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub equivalence: Option<f64>,
    /// Folder for loop images and mountpoints.
    pub scratch: PathBuf,
    /// Benchmark this existing directory instead.
    pub dir: Option<PathBuf>,
    /// Format this block device for every repeat.
    pub device: Option<PathBuf>,
    /// The confirmation of `device` (the same path).
    pub wipe: Option<PathBuf>,
    /// Label stored with the session.
    pub label: Option<String>,
    /// Continue this stored session (id, label or `latest`).
    pub resume: Option<String>,
    /// Any failed repeat makes the run exit 1.
    pub strict: bool,
    /// `--fixed-sizes`: run the suite's sizes as they are, even where a warm-up leaves a phase
    /// under the minimum time (sizes set by time, [`crate::sizing`], are off).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fixed_sizes: bool,
    /// The workloads the runner gave more work after the warm-ups (sizes set by time), with
    /// what changed: stored with the session, so `--resume` runs the same sizes and the report,
    /// `compare` and `history` say them. Empty: the suite's sizes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resized: Vec<crate::sizing::ResizedWorkload>,
    /// Seed of the order of every round (`--seed`; `interleaved` order runs each round's cases
    /// in a fresh permutation drawn from it). A new session without one draws it, and the
    /// options stored with the session carry it, so the order is recorded and `--resume` or
    /// `--seed N` reproduces it. `None` in sessions before issue 26 (the fixed order).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The sequential design of the stopping rule (set by the runner for a new adaptive
    /// session, stored with it; the report rebuilds the plan from it). `None`: no stopping
    /// rule, or a session before issue 26 (the unadjusted rule).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequential: Option<crate::stats::verdict::Design>,
    /// `--target p99=5ms`: the capacity search at this latency target for every workload that
    /// can run open loop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<crate::engine::openloop::LatencyTarget>,
    /// `--keep-aged DIR`: the first measured repeat of each aged `aging` case saves its
    /// filesystem image as `DIR/VARIANT.img` (with `DIR/VARIANT.json`, how it was aged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_aged: Option<PathBuf>,
    /// `--aged-from DIR`: every repeat of each aged `aging` case starts from a copy of
    /// `DIR/VARIANT.img` (saved by `--keep-aged`) instead of ageing a fresh filesystem.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aged_from: Option<PathBuf>,
}

impl RunOptions {
    /// Whether any option that decides the suite or its order is given (refused with
    /// `--resume`, which runs the stored session's own, its seed included).
    pub fn names_suite(&self) -> bool {
        self.suite.is_some()
            || self.preset.is_some()
            || self.fs.is_some()
            || self.only.is_some()
            || self.repeat.is_some()
            || self.warmup.is_some()
            || self.scale.is_some()
            || self.memory.is_some()
            || self.loop_io.is_some()
            || self.precision.is_some()
            || self.budget.is_some()
            || self.equivalence.is_some()
            || self.seed.is_some()
            || self.target.is_some()
            || self.keep_aged.is_some()
            || self.aged_from.is_some()
            || self.fixed_sizes
    }

    /// The session's equivalence margin, percent: the stored or given `--equivalence`, else
    /// `suite`'s `[run] equivalence`, else [`crate::stats::verdict::DECIDED_MARGIN_PCT`].
    pub fn margin_pct(&self, suite: &crate::config::Suite) -> f64 {
        self.equivalence
            .or(suite.equivalence)
            .unwrap_or(crate::stats::verdict::DECIDED_MARGIN_PCT)
    }

    /// The JSON stored with a session.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("run options serialize")
    }

    /// Reads the JSON stored with a session.
    pub fn from_json(text: &str) -> Result<RunOptions, serde_json::Error> {
        serde_json::from_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_round_trip_through_json() {
        let o = RunOptions {
            suite: Some("s.toml".into()),
            fs: Some("ext4,btrfs:compress=lzo".into()),
            only: Some(vec!["bonnie".into()]),
            repeat: Some(3),
            scale: Some(0.1),
            tools: Some(Tools::Real),
            memory: Some(Bytes(786 * Bytes::MIB)),
            loop_io: Some(LoopIo::Buffered),
            budget: Some(Dur(std::time::Duration::from_millis(1500))),
            scratch: "/var/tmp/fsbench".into(),
            label: Some("a b".into()),
            strict: true,
            ..Default::default()
        };
        assert_eq!(RunOptions::from_json(&o.to_json()).unwrap(), o);
        assert!(o.names_suite());
        assert!(!RunOptions::default().names_suite());
        // `--loop-io` decides how every repeat runs: refused with `--resume`, like the suite.
        let loop_only = RunOptions {
            loop_io: Some(LoopIo::Buffered),
            ..Default::default()
        };
        assert!(loop_only.names_suite());
        assert!(loop_only.to_json().contains(r#""loop_io":"buffered""#));
        // Options stored before `loop_io` existed read back without it (the suite's, direct).
        assert_eq!(RunOptions::from_json(r#"{"strict":false}"#).unwrap().loop_io, None);
        // The margin: stored when set, absent (and read back absent) otherwise, refused with
        // `--resume` like every option that decides the run.
        let margin = RunOptions {
            equivalence: Some(5.0),
            ..Default::default()
        };
        assert!(margin.names_suite() && margin.to_json().contains(r#""equivalence":5.0"#));
        assert_eq!(RunOptions::from_json(&margin.to_json()).unwrap(), margin);
        assert!(!RunOptions::default().to_json().contains("equivalence"));
        assert_eq!(RunOptions::from_json(r#"{"strict":false}"#).unwrap().equivalence, None);
    }
}
