//! Facts about this machine and the few system calls on it that every layer needs: whether we
//! are root, where a tool lives and how to install it, what the kernel can mount, the mount
//! table, loop devices' backing files, the start time of a process, and the facts of a mounted
//! filesystem's I/O path ([`path::PathFacts`]).
//!
//! Invariants: nothing here changes the machine except [`unmount`] and, in [`process`], the
//! signals sent to a process proven to be the one recorded (pid, start time and identity).
//! Readers of /proc and /sys answer "nothing" (`None`, `false`, empty) when the file cannot be
//! read, and never fail.

use std::path::{Path, PathBuf};

pub mod diskstat;
pub mod path;
pub mod process;

/// A system call on the machine failed.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// A file or system call failed.
    #[error("{what}: {source}")]
    Io {
        /// Operation and path.
        what: String,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
    /// A tool ran and failed; `stderr` is its last lines.
    #[error("`{command}` failed ({status}): {stderr}")]
    Tool {
        /// The command line.
        command: String,
        /// Exit status description.
        status: String,
        /// What it printed on stderr (trimmed).
        stderr: String,
    },
}

/// `true` when the effective user id is 0.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The Debian package that provides a tool, as an install hint (mkfs programs from the
/// [`crate::fstype`] table).
pub fn install_hint(tool: &str) -> String {
    let pkg = match (crate::fstype::mkfs_package(tool), tool) {
        (Some(p), _) => p,
        (None, "mke2fs") => "e2fsprogs",
        (None, "xfs_info") => "xfsprogs",
        (None, "btrfs") => "btrfs-progs",
        (None, "losetup" | "mount" | "umount" | "blkid") => "util-linux (and mount)",
        (None, "mkfs.fat") => "dosfstools",
        (None, "mkfs.bcachefs") => {
            return "bcachefs-tools is not packaged for Debian 12: build it from its source and put mkfs.bcachefs in PATH".into()
        }
        (None, "fio") => "fio",
        (None, "bonnie++") => "bonnie++",
        (None, "sysbench") => "sysbench",
        (None, "dbench") => "dbench",
        (None, "postmark") => "postmark",
        _ => return format!("install the package that provides {tool}"),
    };
    format!("run `apt-get install {pkg}` (or `scripts/install.sh`)")
}

/// Finds an executable in PATH plus /sbin and /usr/sbin (root's tools may be outside PATH).
pub fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin"].iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            p.metadata()
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

/// Filesystem types the running kernel can mount now (/proc/filesystems).
pub fn kernel_filesystems() -> Vec<String> {
    std::fs::read_to_string("/proc/filesystems")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().last().map(str::to_string))
        .collect()
}

/// Start time of a process in clock ticks since boot (field 22 of /proc/PID/stat).
pub fn process_start_time(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces; fields after the last ')' are fixed.
    let rest = &s[s.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The backing file of a loop device, from sysfs (`None` if not attached).
pub fn loop_backing_file(device: &str) -> Option<PathBuf> {
    let name = Path::new(device).file_name()?.to_str()?;
    let s = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).ok()?;
    Some(PathBuf::from(s.trim_end_matches('\n').trim_end_matches(" (deleted)")))
}

/// Decodes the octal escapes /proc/mounts uses for spaces and tabs in paths (byte-wise: a
/// name's UTF-8 stays whole).
pub fn unescape_mount_field(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() {
            if let Some(v) = s.get(i + 1..i + 4).and_then(|o| u8::from_str_radix(o, 8).ok()) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The start of the name of every ZFS pool fsbench creates (`fsbench-RUN-TAG`): a pool
/// without it is never touched (`provision::zfs`, and the workloads that scrub or remount one).
pub const ZFS_POOL_PREFIX: &str = "fsbench-";

/// The /proc/mounts entry for `mountpoint`: `(source, fstype, options)` of the topmost mount.
pub fn mount_entry(mountpoint: &Path) -> Option<(String, String, String)> {
    let text = std::fs::read_to_string("/proc/mounts").ok()?;
    text.lines().rev().find_map(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        (f.len() >= 4 && Path::new(&unescape_mount_field(f[1])) == mountpoint)
            .then(|| (unescape_mount_field(f[0]), f[2].to_string(), f[3].to_string()))
    })
}

/// Whether `mountpoint` is mounted (from `source`, when given).
pub fn is_mounted(mountpoint: &Path, source: Option<&str>) -> bool {
    match mount_entry(mountpoint) {
        Some((src, _, _)) => source.is_none_or(|s| s == src),
        None => false,
    }
}

/// Unmounts, retrying briefly on EBUSY (a process may still be closing files), then detaching
/// lazily as a last resort so the run never leaves a mount behind.
pub fn unmount(mountpoint: &Path) -> Result<(), HostError> {
    use rustix::mount::{unmount as sys_unmount, UnmountFlags};
    let mut last = None;
    for attempt in 0..20 {
        match sys_unmount(mountpoint, UnmountFlags::empty()) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::INVAL) | Err(rustix::io::Errno::NOENT) => return Ok(()),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(50 * (attempt + 1)));
    }
    if sys_unmount(mountpoint, UnmountFlags::DETACH).is_ok() {
        return Ok(());
    }
    Err(HostError::Io {
        what: format!("umount {}", mountpoint.display()),
        source: std::io::Error::from_raw_os_error(last.map(|e| e.raw_os_error()).unwrap_or(libc::EBUSY)),
    })
}

/// Runs a tool (found by [`find_tool`]) to its end, stdin closed: its stdout, or a
/// [`HostError::Tool`] with the last lines of its stderr (`losetup -d`, `mount`).
pub fn run_tool<S: AsRef<str>>(program: &str, args: &[S]) -> Result<String, HostError> {
    let argv: Vec<&str> = args.iter().map(|a| a.as_ref()).collect();
    let command = std::iter::once(program)
        .chain(argv.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    let prog = find_tool(program).unwrap_or_else(|| program.into());
    let out = std::process::Command::new(prog)
        .args(&argv)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|source| HostError::Io {
            what: format!("run {command}"),
            source,
        })?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    Err(HostError::Tool {
        command,
        status: out.status.to_string(),
        stderr: tail[tail.len().saturating_sub(3)..].join(" / "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_fields_unescape_spaces() {
        assert_eq!(unescape_mount_field("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape_mount_field("/mnt/é\\040ü"), "/mnt/é ü");
        assert_eq!(unescape_mount_field("/plain"), "/plain");
        assert_eq!(unescape_mount_field("x\\"), "x\\");
    }

    #[test]
    fn this_process_has_a_start_time() {
        assert!(process_start_time(std::process::id()).is_some_and(|t| t > 0));
        assert_eq!(process_start_time(u32::MAX), None);
    }
}
