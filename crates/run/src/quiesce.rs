//! The quiesce gate: after mkfs and mount, before the first timed phase, wait until the block
//! device under the filesystem is idle, so that work the filesystem does on its own after mount
//! (ext4's journal and lazy-init threads — lazy init is off in fsbench's mkfs arguments —,
//! btrfs async discard and transaction commits, xfs log work) is not charged to the first phase.
//!
//! Idle means: over [`SETTLE_SAMPLES`] consecutive intervals of [`SAMPLE_INTERVAL`] each, the
//! device's `/sys/class/block/NAME/stat` shows no request in flight (field 9) and no read, write
//! or discard completed (fields 1, 5 and 12). The wait gives up after [`TIMEOUT`] and says so;
//! the run goes on (a busy device is a finding to report, not a reason to lose the repeat).
//! Kent Overstreet's fs-benchmarks sleeps 30 s blindly instead; this measures.
//!
//! Invariants: [`settled`] is a pure function of the samples; the wait happens outside every
//! timed phase and outside the CPU meters (they start inside the workload); a filesystem with
//! no block device (tmpfs, an existing directory) is not waited for and gets no `quiesce` row.
//!
//! Reference: Documentation/block/stat.rst in the Linux sources for the field layout.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Time between two samples of the device's stat file.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(100);
/// Quiet intervals in a row that make the device idle: 3 × 100 ms = 300 ms of no I/O.
pub const SETTLE_SAMPLES: usize = 3;
/// Longest wait before the gate gives up and the repeat runs anyway, with a warning.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// Phase name of the stored wait (a [`crate::metric::Role::Detail`] row).
pub const PHASE: &str = "quiesce";
/// Metric name of the stored wait, in seconds.
pub const METRIC: &str = "wait";

/// The counters of one read of a block device's stat file that tell whether it is busy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DevStat {
    /// Reads completed (field 1).
    pub reads: u64,
    /// Sectors read (field 3).
    pub sectors_read: u64,
    /// Writes completed (field 5).
    pub writes: u64,
    /// Sectors written (field 7).
    pub sectors_written: u64,
    /// Requests in flight now (field 9).
    pub in_flight: u64,
    /// Discards completed (field 12; 0 on kernels before 4.18).
    pub discards: u64,
}

impl DevStat {
    /// Parses the text of `/sys/block/NAME/stat`; `None` when it has fewer than 11 fields or a
    /// field is not a number.
    pub fn parse(text: &str) -> Option<DevStat> {
        let f: Vec<u64> = text
            .split_whitespace()
            .map(|w| w.parse().ok())
            .collect::<Option<Vec<u64>>>()?;
        if f.len() < 11 {
            return None;
        }
        Some(DevStat {
            reads: f[0],
            sectors_read: f[2],
            writes: f[4],
            sectors_written: f[6],
            in_flight: f[8],
            discards: f.get(11).copied().unwrap_or(0),
        })
    }

    /// Same I/O counters (everything but `in_flight`).
    fn same_io(&self, other: &DevStat) -> bool {
        (
            self.reads,
            self.sectors_read,
            self.writes,
            self.sectors_written,
            self.discards,
        ) == (
            other.reads,
            other.sectors_read,
            other.writes,
            other.sectors_written,
            other.discards,
        )
    }
}

/// `true` when the last `settle + 1` samples (taken one interval apart) show `settle` quiet
/// intervals in a row: nothing in flight in any of them and no I/O completed between them.
pub fn settled(samples: &[DevStat], settle: usize) -> bool {
    if samples.len() < settle + 1 {
        return false;
    }
    let tail = &samples[samples.len() - settle - 1..];
    tail.iter().all(|s| s.in_flight == 0) && tail.windows(2).all(|w| w[0].same_io(&w[1]))
}

/// How long to sample and how long to wait at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gate {
    /// Time between samples.
    pub interval: Duration,
    /// Quiet intervals in a row needed.
    pub settle: usize,
    /// Longest wait.
    pub timeout: Duration,
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            interval: SAMPLE_INTERVAL,
            settle: SETTLE_SAMPLES,
            timeout: TIMEOUT,
        }
    }
}

/// What the gate saw.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The device went idle after this wait.
    Idle(Duration),
    /// Still busy when the timeout passed: the wait and the last sample.
    TimedOut(Duration, DevStat),
    /// SIGINT or SIGTERM arrived during the wait.
    Interrupted,
}

impl Outcome {
    /// The wait, if the gate ran to an answer.
    pub fn waited(&self) -> Option<Duration> {
        match self {
            Outcome::Idle(d) | Outcome::TimedOut(d, _) => Some(*d),
            Outcome::Interrupted => None,
        }
    }

    /// The sample note (and so the report warning) for a timed-out wait, naming the device.
    pub fn note(&self, device: &str) -> Option<String> {
        match self {
            Outcome::TimedOut(d, s) => Some(format!(
                "quiesce: device {device} still busy after {:.1} s (in flight {}, {} sectors written and {} read so far); the first phase may include the filesystem's own background work",
                d.as_secs_f64(),
                s.in_flight,
                s.sectors_written,
                s.sectors_read
            )),
            _ => None,
        }
    }
}

/// Why the gate could not watch the device.
#[derive(Debug, thiserror::Error)]
pub enum QuiesceError {
    /// The stat file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The stat file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The stat file did not have the expected layout.
    #[error("{path}: unexpected contents {text:?}")]
    Parse {
        /// The stat file.
        path: PathBuf,
        /// What it held.
        text: String,
    },
}

/// The stat file of a device node: `/dev/loop7` → `/sys/class/block/loop7/stat` (whole disks
/// and partitions alike).
pub fn stat_path(device: &str) -> PathBuf {
    let name = Path::new(device)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| device.to_string());
    Path::new("/sys/class/block").join(name).join("stat")
}

/// Reads and parses one stat file.
pub fn read_stat(path: &Path) -> Result<DevStat, QuiesceError> {
    let text = std::fs::read_to_string(path).map_err(|source| QuiesceError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    DevStat::parse(&text).ok_or_else(|| QuiesceError::Parse {
        path: path.to_path_buf(),
        text,
    })
}

/// Waits until `device` is idle per `gate`, or the timeout passes, or `interrupt` is set.
pub fn wait_idle(device: &str, gate: &Gate, interrupt: &AtomicBool) -> Result<Outcome, QuiesceError> {
    let path = stat_path(device);
    let start = Instant::now();
    let mut samples = vec![read_stat(&path)?];
    loop {
        if settled(&samples, gate.settle) {
            return Ok(Outcome::Idle(start.elapsed()));
        }
        if interrupt.load(Ordering::Relaxed) {
            return Ok(Outcome::Interrupted);
        }
        if start.elapsed() >= gate.timeout {
            let last = samples[samples.len() - 1];
            return Ok(Outcome::TimedOut(start.elapsed(), last));
        }
        std::thread::sleep(gate.interval);
        samples.push(read_stat(&path)?);
        if samples.len() > gate.settle + 1 {
            samples.remove(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(writes: u64, in_flight: u64) -> DevStat {
        DevStat {
            writes,
            sectors_written: writes * 8,
            in_flight,
            ..DevStat::default()
        }
    }

    #[test]
    fn parses_the_kernel_layout_with_and_without_discard_fields() {
        let new = "     120        3     5000       40      900       10    72000      800        2      500      900        7        0       64        1";
        let d = DevStat::parse(new).unwrap();
        assert_eq!(
            d,
            DevStat {
                reads: 120,
                sectors_read: 5000,
                writes: 900,
                sectors_written: 72000,
                in_flight: 2,
                discards: 7
            }
        );
        let old = "1 0 8 0 2 0 16 0 0 0 0";
        assert_eq!(DevStat::parse(old).unwrap().discards, 0);
        assert_eq!(DevStat::parse("1 2 3"), None);
        assert_eq!(DevStat::parse("1 0 8 0 2 0 x 0 0 0 0"), None);
    }

    #[test]
    fn an_idle_device_settles_after_exactly_the_settle_window() {
        let idle = vec![s(10, 0); 4];
        assert!(!settled(&idle[..3], 3), "two quiet intervals are not enough");
        assert!(settled(&idle, 3));
    }

    #[test]
    fn a_busy_then_idle_device_settles_only_after_the_last_write() {
        let seq = [s(1, 0), s(5, 1), s(9, 0), s(9, 0), s(9, 0), s(9, 0)];
        let first = (1..=seq.len()).find(|&n| settled(&seq[..n], 3));
        assert_eq!(
            first,
            Some(6),
            "settles three quiet intervals after the write at sample 3"
        );
        // Nothing completed, but a request stays in flight: not idle.
        let stuck = [s(9, 1); 5];
        assert!(!settled(&stuck, 3));
        // A discard alone also counts as activity.
        let mut d = [s(9, 0); 4];
        d[2].discards = 1;
        assert!(!settled(&d, 3));
    }

    #[test]
    fn a_device_that_never_settles_times_out_with_a_note() {
        let seq: Vec<DevStat> = (0..200).map(|i| s(i, 0)).collect();
        assert!((1..=seq.len()).all(|n| !settled(&seq[..n], 3)));
        let o = Outcome::TimedOut(Duration::from_secs(10), s(7, 1));
        let note = o.note("/dev/loop7").unwrap();
        assert!(note.contains("/dev/loop7 still busy after 10.0 s"), "{note}");
        assert_eq!(Outcome::Idle(Duration::ZERO).note("/dev/loop7"), None);
    }

    #[test]
    fn stat_paths_use_the_class_folder_for_disks_and_partitions() {
        assert_eq!(stat_path("/dev/loop7"), Path::new("/sys/class/block/loop7/stat"));
        assert_eq!(stat_path("/dev/sdb1"), Path::new("/sys/class/block/sdb1/stat"));
    }

    /// How the report shows the gate's outcome (moved from the report, which sits below the
    /// runner and cannot name it).
    #[test]
    fn a_timed_out_quiesce_gate_is_a_warning_and_its_wait_a_detail_row() {
        use crate::metric::{Measurement, MetricId, Role, Unit};
        use crate::quiesce::{self, DevStat, Outcome};
        use fsbench_report::fixture::session_data;
        use fsbench_report::{build, render, Format};
        use std::time::Duration;
        let mut data = session_data();
        let note = Outcome::TimedOut(Duration::from_secs(10), DevStat::default())
            .note("/dev/loop7")
            .unwrap();
        for s in data.samples.iter_mut() {
            s.sample.measurements.push(Measurement {
                phase: quiesce::PHASE.into(),
                rank: None,
                metric: MetricId::lower(quiesce::METRIC, Unit::Seconds).with_role(Role::Detail),
                value: 0.3,
            });
        }
        data.samples[0].sample.notes.push(note.clone());
        let model = build(&data, 1, 0.95);
        assert!(model.warnings.iter().any(|w| w.contains(&note)), "{:?}", model.warnings);
        let table = render(&model, Format::Table, &[]);
        assert!(table.contains("still busy after 10.0 s"), "{table}");
        // The wait is context, never a ranked or summarised row: not in the terminal table.
        assert!(!table.contains("quiesce "), "{table}");
        let md = render(&model, Format::Md, &[]);
        assert!(md.contains("| quiesce | wait"), "{md}");
    }
}
