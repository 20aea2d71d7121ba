//! The `dd` workload: coreutils `dd` writing one file of zeros, the referee of `bigfile` in
//! `fsbench verify` (issue 13, item 3), and the way people check a disk's write rate by hand.
//!
//! | phase | what is timed | metrics |
//! |---|---|---|
//! | `write` | `dd if=/dev/zero of=FILE bs=BLOCK count=N` with `conv=fsync` (`flag = "fsync"`, the default: dd fsyncs before it exits) or `oflag=direct` (`flag = "direct"`: O_DIRECT, no page cache), the whole child from fork to exit | `time` (s, lower is better), `throughput` = size / time (MiB/s) |
//!
//! Caches are synced and dropped before the phase when the run asks for it. The file is removed
//! afterwards (untimed), also after a failure. fsbench times the child itself ([`crate::child`]
//! through `engine::copy::timed_command`), so the rate includes dd's start (about a millisecond),
//! not dd's own summary line; the CPU is dd's (`RUSAGE_CHILDREN`).
//!
//! References: dd(1) (coreutils 9.1).

use crate::copy::timed_command;
use crate::metric::{MetricId, RawSample, Unit};
use crate::phase::{Caches, Phases, Policy};
use crate::units::Bytes;
use crate::{EngineError, RunContext, Workload, WorkloadKind};
use crate::{Invalid, Unavailable};
use serde::{Deserialize, Serialize};
use std::process::Command;

/// Phase: dd writes the file.
pub const WRITE: &str = "write";
/// The file dd writes, in the run directory.
const FILE: &str = "dd.out";
/// Smallest size a scaled workload keeps.
const MIN_SCALED: u64 = 16 * Bytes::MIB;
/// The phase: caches dropped if asked, no latency set (one child).
const POLICY: Policy = Policy::new();

/// How dd makes its writes durable or uncached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DdFlag {
    /// `conv=fsync`: buffered writes, one fsync(2) before dd exits (the default).
    #[default]
    Fsync,
    /// `oflag=direct`: O_DIRECT writes, nothing in the page cache.
    Direct,
}

impl DdFlag {
    /// The dd operand.
    pub fn operand(self) -> &'static str {
        match self {
            DdFlag::Fsync => "conv=fsync",
            DdFlag::Direct => "oflag=direct",
        }
    }
}

/// Parameters of the dd workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DdSpec {
    /// Bytes to write, a whole number of blocks. Default 1 GiB.
    #[serde(default = "default_size")]
    pub size: Bytes,
    /// Bytes per write (`bs=`). Default 1 MiB.
    #[serde(default = "default_block")]
    pub block: Bytes,
    /// `fsync` (`conv=fsync`, default) or `direct` (`oflag=direct`).
    #[serde(default)]
    pub flag: DdFlag,
}

fn default_size() -> Bytes {
    Bytes(Bytes::GIB)
}
fn default_block() -> Bytes {
    Bytes(Bytes::MIB)
}

impl Default for DdSpec {
    fn default() -> Self {
        DdSpec {
            size: default_size(),
            block: default_block(),
            flag: DdFlag::default(),
        }
    }
}

impl DdSpec {
    fn count(&self) -> u64 {
        self.size.get().checked_div(self.block.get()).unwrap_or(0)
    }
}

impl Workload for DdSpec {
    fn phases(&self) -> Vec<String> {
        vec![WRITE.to_string()]
    }

    fn scaled(&self, factor: f64) -> WorkloadKind {
        let block = self.block.get().max(1);
        let size = ((self.size.get() as f64 * factor) as u64).max(MIN_SCALED) / block * block;
        WorkloadKind::Dd(DdSpec {
            size: Bytes(size.max(block)),
            ..self.clone()
        })
    }

    fn validate(&self) -> Result<(), Invalid> {
        let block = self.block.get();
        if block == 0 || block > 256 * Bytes::MIB {
            return Err(Invalid(format!(
                "block must be between 1 byte and 256 MiB (is {})",
                self.block
            )));
        }
        if self.flag == DdFlag::Direct && block % 4096 != 0 {
            return Err(Invalid(format!(
                "block must be a multiple of 4 KiB with flag = \"direct\" (is {})",
                self.block
            )));
        }
        if self.size.get() == 0 || self.size.get() % block != 0 {
            return Err(Invalid(format!(
                "size must be a positive multiple of block (size {}, block {})",
                self.size, self.block
            )));
        }
        Ok(())
    }

    fn availability(&self) -> Result<(), Unavailable> {
        which("dd")
            .map(|_| ())
            .ok_or_else(|| "dd not found: apt-get install coreutils".into())
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        super::bigfile::one_file_footprint(FILE, self.size.get())
    }

    fn describe(&self) -> String {
        format!(
            "dd if=/dev/zero bs={} count={} {} ({})",
            self.block.get(),
            self.count(),
            self.flag.operand(),
            self.size
        )
    }

    fn run(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        self.validate()?;
        let path = ctx.dir.join(FILE);
        let result = self.run_in(ctx, &path);
        let removed = match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(EngineError::io(format!("unlink {}", path.display()), e))
            }
            _ => Ok(()),
        };
        let sample = result?;
        removed.map(|()| sample)
    }
}

impl DdSpec {
    fn run_in(&self, ctx: &RunContext, path: &std::path::Path) -> Result<RawSample, EngineError> {
        let mut phases = Phases::new(ctx);
        phases.begin(WRITE, Caches::DropIfAsked);
        let mut cmd = Command::new("dd");
        cmd.arg("if=/dev/zero")
            .arg(format!("of={}", path.display()))
            .arg(format!("bs={}", self.block.get()))
            .arg(format!("count={}", self.count()))
            .arg(self.flag.operand())
            .arg("status=none");
        let t = timed_command(&phases, cmd, None)?;
        let secs = t.wall.as_secs_f64().max(1e-9);
        let mib = self.size.get() as f64 / Bytes::MIB as f64;
        phases.record(
            WRITE,
            &t,
            vec![
                (MetricId::lower("time", Unit::Seconds), secs),
                (MetricId::higher("throughput", Unit::MibPerSec), mib / secs),
            ],
            &POLICY,
        );
        Ok(phases.finish())
    }
}

/// The first `name` on `PATH`.
fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| std::path::Path::new(d).join(name))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dd_writes_the_file_and_times_it() {
        let dir = tempfile::tempdir().unwrap();
        let spec = DdSpec {
            size: Bytes(4 * Bytes::MIB),
            block: Bytes(Bytes::MIB),
            flag: DdFlag::Fsync,
        };
        let stop = std::sync::atomic::AtomicBool::new(false);
        let s = crate::run_quiet(&spec, dir.path(), &stop).unwrap();
        let p = &s.phases[0];
        assert_eq!(p.phase, WRITE);
        let tp = p.metrics.iter().find(|(m, _)| m.name == "throughput").unwrap().1;
        assert!(tp > 0.0 && tp.is_finite());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the file is removed");
    }

    #[test]
    fn size_must_be_whole_blocks() {
        let spec = DdSpec {
            size: Bytes(Bytes::MIB + 1),
            ..DdSpec::default()
        };
        assert!(spec.validate().unwrap_err().0.contains("multiple of block"));
    }
}
