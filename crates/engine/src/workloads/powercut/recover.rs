//! Cutting the power with `FS_IOC_SHUTDOWN`, and checking a filesystem after a cut.
//!
//! The shutdown ioctl with `FS_GOING_FLAGS_NOLOGFLUSH` stops the filesystem at once without
//! writing its log: what survives is what was on disk, as after a power cut with a disk that
//! honours flushes. ext4 (which also serves ext2/ext3 here) and XFS implement it; btrfs only
//! with `CONFIG_BTRFS_EXPERIMENTAL`. [`shutdown_supported`] probes without shutting anything
//! down: it passes an invalid flag, which a filesystem implementing the ioctl refuses with
//! EINVAL before acting, while one without it answers ENOTTY.
//!
//! [`Fsck`] is the one table of read-only checkers (`e2fsck -fn`, `xfs_repair -n`,
//! `btrfs check --readonly`), how their exit codes map to a [`FsckVerdict`], and how to repair
//! so that the next cut starts from a sound filesystem. References: e2fsck(8) exit codes,
//! xfs_repair(8) ("-n … exit status 1 if corruption detected"), btrfs-check(8).

use crate::child::{self, Sink, Watch};
use crate::Unavailable;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Longest a check or repair may run before it is killed.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(600);

/// What one run of a checker gave.
struct Ran {
    code: i32,
    tail: String,
    cpu: Duration,
    max_rss_kib: u64,
}

/// `FS_IOC_SHUTDOWN`, `_IOR('X', 125, __u32)` (linux/fs.h).
const FS_IOC_SHUTDOWN: libc::c_ulong = 0x8004_587D;
/// `FS_SHUTDOWN_FLAGS_NOLOGFLUSH`: do not flush the log (the power is gone).
const NOLOGFLUSH: u32 = 2;
/// A flag value no filesystem accepts, for the probe.
const PROBE_FLAGS: u32 = 0xFF;

fn shutdown_ioctl(dir: &Path, flags: u32) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(dir)?;
    // SAFETY: FS_IOC_SHUTDOWN reads one u32 through the pointer, which outlives the call.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_SHUTDOWN, &flags as *const u32) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Whether the filesystem holding `dir` implements `FS_IOC_SHUTDOWN` (nothing is shut down);
/// `Err` says why it cannot be used.
pub fn shutdown_supported(dir: &Path) -> Result<(), NoShutdown> {
    match shutdown_ioctl(dir, PROBE_FLAGS) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
        Ok(()) => Err(NoShutdown::Untrusted),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTTY | libc::EOPNOTSUPP)) => Err(NoShutdown::NotImplemented),
        Err(e) => Err(NoShutdown::Probe(e)),
    }
}

/// Why `FS_IOC_SHUTDOWN` cannot cut the power here ([`shutdown_supported`]).
#[derive(Debug, thiserror::Error)]
pub enum NoShutdown {
    /// The probe's invalid flag was accepted: the ioctl does not check what it is told.
    #[error("FS_IOC_SHUTDOWN accepted an invalid flag: not trusted")]
    Untrusted,
    /// The filesystem has no such ioctl (ENOTTY, EOPNOTSUPP).
    #[error("the filesystem does not implement FS_IOC_SHUTDOWN on this kernel")]
    NotImplemented,
    /// The probe failed otherwise (the folder cannot be opened, EPERM, …).
    #[error("FS_IOC_SHUTDOWN probe: {0}")]
    Probe(#[source] std::io::Error),
}

/// Cuts the power of the filesystem holding `dir`: `FS_IOC_SHUTDOWN` with NOLOGFLUSH.
pub fn shutdown_now(dir: &Path) -> std::io::Result<()> {
    shutdown_ioctl(dir, NOLOGFLUSH)
}

/// What the read-only check said after a cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsckVerdict {
    /// No problem found.
    Clean,
    /// Problems found that a repair would fix.
    RepairNeeded,
    /// The checker could not check (unreadable superblock, operational error).
    Failed,
}

impl FsckVerdict {
    /// The verdict as the report states it.
    pub fn as_str(self) -> &'static str {
        match self {
            FsckVerdict::Clean => "clean",
            FsckVerdict::RepairNeeded => "repair-needed",
            FsckVerdict::Failed => "failed",
        }
    }
}

/// What one read-only check found.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The verdict.
    pub verdict: FsckVerdict,
    /// Wall time of the checker, from spawn to exit.
    pub wall: Duration,
    /// The checker's CPU (user + system).
    pub cpu: Duration,
    /// The checker's peak resident set, KiB (`ru_maxrss` of its own `wait4` usage).
    pub max_rss_kib: u64,
    /// Its last lines of output.
    pub tail: String,
}

/// One row of the checker table.
#[derive(Clone, Copy, Debug)]
pub struct Fsck {
    /// Program.
    pub program: &'static str,
    /// Arguments of the read-only check, before the device.
    pub check: &'static [&'static str],
    /// Arguments of the repair, before the device.
    pub repair: &'static [&'static str],
    /// Debian package.
    pub package: &'static str,
    /// Whether the filesystem has a journal (without one, fsck is required after a cut).
    pub journal: bool,
}

/// The checker of `fs_type`, if fsbench knows one.
pub fn fsck_for(fs_type: &str) -> Option<Fsck> {
    let e2 = |journal| Fsck {
        program: "e2fsck",
        check: &["-f", "-n"],
        repair: &["-f", "-y"],
        package: "e2fsprogs",
        journal,
    };
    Some(match fs_type {
        "ext2" => e2(false),
        "ext3" | "ext4" => e2(true),
        "xfs" => Fsck {
            program: "xfs_repair",
            check: &["-n"],
            repair: &["-L"],
            package: "xfsprogs",
            journal: true,
        },
        "btrfs" => Fsck {
            program: "btrfs",
            check: &["check", "--readonly"],
            repair: &["check", "--repair", "--force"],
            package: "btrfs-progs",
            journal: true,
        },
        _ => return None,
    })
}

impl Fsck {
    /// What to install when the program is not installed.
    pub fn available(&self) -> Result<(), Unavailable> {
        match crate::host::find_tool(self.program) {
            Some(_) => Ok(()),
            None => Err(Unavailable(format!(
                "`{}` is not installed: apt-get install {}",
                self.program, self.package
            ))),
        }
    }

    /// The program's version line (`e2fsck 1.47.0 (5-Feb-2023)`, `xfs_repair version 6.1.0`,
    /// `btrfs-progs v6.2`), if it is installed and says.
    pub fn version(&self) -> Option<String> {
        let flag = if self.program == "btrfs" { "--version" } else { "-V" };
        let prog = crate::host::find_tool(self.program)?;
        let out = Command::new(prog).arg(flag).output().ok()?;
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        text.lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_string)
    }

    /// The read-only check as a command line: `e2fsck -f -n DEVICE`.
    pub fn check_command(&self, device: &str) -> String {
        let mut parts = vec![self.program];
        parts.extend(self.check);
        parts.push(device);
        parts.join(" ")
    }

    fn run(&self, args: &[&str], device: &str, interrupt: Option<&AtomicBool>) -> std::io::Result<Ran> {
        let prog = crate::host::find_tool(self.program).unwrap_or_else(|| self.program.into());
        let mut cmd = Command::new(prog);
        cmd.args(args).arg(device);
        let out = child::run(
            &mut cmd,
            Sink::Capture,
            Sink::Capture,
            Watch {
                interrupt,
                timeout: Some(CHECK_TIMEOUT),
                kill_group: true,
            },
        )
        .map_err(|e| match e {
            child::ChildError::Interrupted => std::io::Error::from(std::io::ErrorKind::Interrupted),
            e => std::io::Error::other(e.to_string()),
        })?;
        let tail: Vec<&str> = out
            .stdout
            .lines()
            .chain(out.stderr.lines())
            .filter(|l| !l.trim().is_empty())
            .collect();
        let tail = tail[tail.len().saturating_sub(4)..].join(" / ");
        Ok(Ran {
            code: out.status.code().unwrap_or(-1),
            tail,
            cpu: out.children_cpu,
            max_rss_kib: out.max_rss_kib,
        })
    }

    /// Runs the read-only check of the unmounted `device`; with `interrupt`, the checker is
    /// killed when it is set (an `Interrupted` error).
    pub fn check(&self, device: &str, interrupt: Option<&AtomicBool>) -> std::io::Result<Checked> {
        let t0 = Instant::now();
        let ran = self.run(self.check, device, interrupt)?;
        let wall = t0.elapsed();
        Ok(Checked {
            verdict: self.verdict(ran.code, &ran.tail),
            wall,
            cpu: ran.cpu,
            max_rss_kib: ran.max_rss_kib,
            tail: ran.tail,
        })
    }

    /// The verdict of an exit code (and output, for btrfs, whose exit code is 1 for both).
    pub fn verdict(&self, code: i32, output: &str) -> FsckVerdict {
        match (self.program, code) {
            (_, 0) => FsckVerdict::Clean,
            // e2fsck: 4 = errors left uncorrected; 1/2 cannot happen with -n; 8+ operational.
            ("e2fsck", 1..=7) => FsckVerdict::RepairNeeded,
            // xfs_repair -n: 1 = corruption found; 2 = a dirty log (not replayed).
            ("xfs_repair", 1 | 2) => FsckVerdict::RepairNeeded,
            ("btrfs", 1)
                if !output.contains("cannot open")
                    && !output.contains("no valid Btrfs found")
                    && !output.contains("superblock") =>
            {
                FsckVerdict::RepairNeeded
            }
            _ => FsckVerdict::Failed,
        }
    }

    /// Repairs the unmounted `device`; `Err` carries the checker's last lines.
    pub fn repair(&self, device: &str) -> Result<(), RepairError> {
        let Ran { code, tail, .. } = self.run(self.repair, device, None).map_err(RepairError::Run)?;
        let ok = match self.program {
            "e2fsck" => code < 4,
            _ => code == 0,
        };
        if ok {
            Ok(())
        } else {
            Err(RepairError::Failed {
                program: self.program,
                code,
                tail,
            })
        }
    }
}

/// Why [`Fsck::repair`] did not repair the device.
#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    /// The checker did not run (or was killed).
    #[error("{0}")]
    Run(#[source] std::io::Error),
    /// It ran and said the device is not repaired.
    #[error("{program} exited {code}: {tail}")]
    Failed {
        /// The checker (`e2fsck`, `xfs_repair`, `btrfs`).
        program: &'static str,
        /// Its exit code.
        code: i32,
        /// Its last lines.
        tail: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_follow_each_checkers_exit_codes() {
        let e = fsck_for("ext4").unwrap();
        assert_eq!(e.verdict(0, ""), FsckVerdict::Clean);
        assert_eq!(e.verdict(4, ""), FsckVerdict::RepairNeeded);
        assert_eq!(e.verdict(8, ""), FsckVerdict::Failed);
        let x = fsck_for("xfs").unwrap();
        assert_eq!(x.verdict(1, ""), FsckVerdict::RepairNeeded);
        assert_eq!(x.verdict(137, ""), FsckVerdict::Failed);
        let b = fsck_for("btrfs").unwrap();
        assert_eq!(b.verdict(1, "found 3 errors"), FsckVerdict::RepairNeeded);
        assert_eq!(b.verdict(1, "ERROR: cannot open file system"), FsckVerdict::Failed);
        assert!(!fsck_for("ext2").unwrap().journal && fsck_for("ext3").unwrap().journal);
        assert!(fsck_for("tmpfs").is_none());
    }

    #[test]
    fn a_missing_checker_says_what_to_install() {
        let f = Fsck {
            program: "fsbench-no-such-fsck",
            package: "nosuchpkg",
            ..fsck_for("ext4").unwrap()
        };
        let e = f.available().unwrap_err().to_string();
        assert!(e.contains("apt-get install nosuchpkg"), "{e}");
    }
}
