//! Real block devices: the checks that stand between a typo and a wiped disk.
//!
//! fsbench writes to a device only when all of these hold (each refusal says what it found):
//! - the user named it twice: `--device X --wipe X` with the same text, so a device is never
//!   chosen by a default, a glob or a stale shell variable;
//! - it is a block device, and neither it nor any of its partitions is mounted
//!   (/proc/self/mountinfo, compared by device number, so `/dev/disk/by-id/...` aliases count);
//! - it is not swap (/proc/swaps) and does not hold the root filesystem or its partitions;
//! - nothing stacks on it (`/sys/block/NAME/holders` is empty: no LVM, dm or md member);
//! - `blkid -p` finds no filesystem, RAID/LVM signature or partition table on it: a disk with
//!   data must be cleared by its owner (`wipefs -a`) before fsbench will format it. The one
//!   filesystem accepted is the one fsbench itself made there last ([`super::made`]: same
//!   device, size, type and UUID), so the same confirmation works for the next run.
//!
//! The checks only read; [`inspect`] never opens the device for writing.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// What fsbench knows about a device the user named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The path as the user gave it.
    pub path: PathBuf,
    /// The kernel name (`sdb`, `loop7`, `nvme0n1`).
    pub name: String,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Vendor model, or for a loop device its backing file.
    pub model: String,
    /// `/dev/disk/by-id/*` names pointing at it.
    pub by_id: Vec<String>,
    /// Every reason not to touch it; empty when it is safe to format.
    pub refusals: Vec<String>,
    /// The filesystem on it, when fsbench made it (and nothing else is on it).
    pub made_by_fsbench: Option<super::made::MadeFs>,
}

fn major_minor(rdev: u64) -> (u64, u64) {
    (libc::major(rdev) as u64, libc::minor(rdev) as u64)
}

fn read_trim(p: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

/// Device numbers (`maj:min`) of a whole device and its partitions, from sysfs.
fn device_numbers(name: &str) -> Vec<String> {
    let mut out: Vec<String> = read_trim(format!("/sys/class/block/{name}/dev")).into_iter().collect();
    if let Ok(rd) = std::fs::read_dir(format!("/sys/class/block/{name}")) {
        for e in rd.flatten() {
            if e.path().join("partition").exists() {
                out.extend(read_trim(e.path().join("dev")));
            }
        }
    }
    out
}

/// Inspects `path` without writing to it.
pub fn inspect(path: &Path) -> Result<DeviceInfo, InspectError> {
    let md = std::fs::metadata(path).map_err(|source| InspectError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    if !md.file_type().is_block_device() {
        return Err(InspectError::NotBlock(path.to_path_buf()));
    }
    let canonical = std::fs::canonicalize(path).unwrap_or(path.to_path_buf());
    let name = canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let size_bytes = read_trim(format!("/sys/class/block/{name}/size"))
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(0)
        * 512;
    let model = read_trim(format!("/sys/class/block/{name}/device/model"))
        .or_else(|| {
            read_trim(format!("/sys/class/block/{name}/loop/backing_file"))
                .map(|b| format!("loop device backed by {b}"))
        })
        .unwrap_or_else(|| "unknown model".into());
    let by_id = std::fs::read_dir("/dev/disk/by-id")
        .map(|rd| {
            rd.flatten()
                .filter(|e| std::fs::canonicalize(e.path()).ok().as_deref() == Some(canonical.as_path()))
                .map(|e| e.path().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();

    let mut refusals = Vec::new();
    let mut made_by_fsbench = None;
    let numbers = device_numbers(&name);
    let (maj, min) = major_minor(md.rdev());
    let own = format!("{maj}:{min}");
    let numbers = if numbers.is_empty() { vec![own.clone()] } else { numbers };

    in_use_refusals(&name, &numbers, &own, &mut refusals);
    match std::process::Command::new(crate::host::find_tool("blkid").unwrap_or_else(|| "blkid".into()))
        .args(["-p", "-o", "export"])
        .arg(&canonical)
        .output()
    {
        Ok(out) if out.status.code() == Some(0) => {
            let text = String::from_utf8_lossy(&out.stdout);
            let get = |k: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(&format!("{k}=")).map(str::to_string))
            };
            if let Some(pt) = get("PTTYPE") {
                refusals.push(format!("it holds a partition table ({pt})"));
            }
            let ours = match (get("PTTYPE"), get("TYPE"), get("UUID")) {
                (None, Some(t), Some(uuid)) => super::made::made_by_fsbench(&name, size_bytes, &t, &uuid),
                _ => None,
            };
            if let Some(m) = ours {
                made_by_fsbench = Some(m);
            } else if let Some(t) = get("TYPE") {
                let kind = match t.as_str() {
                    "LVM2_member" => "an LVM physical volume".to_string(),
                    "linux_raid_member" => "a RAID member".to_string(),
                    "swap" => "a swap signature".to_string(),
                    other => format!(
                        "a filesystem ({other}{})",
                        get("LABEL").map(|l| format!(", label {l}")).unwrap_or_default()
                    ),
                };
                refusals.push(format!("it holds {kind}"));
            }
        }
        Ok(out) if out.status.code() == Some(2) => {} // nothing found
        Ok(out) => refusals.push(format!(
            "`blkid -p` could not read it ({}): fsbench will not format what it cannot inspect",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => refusals.push(format!(
            "`blkid` could not run ({e}): install util-linux so fsbench can check the device"
        )),
    }
    Ok(DeviceInfo {
        path: path.to_path_buf(),
        name,
        size_bytes,
        model,
        by_id,
        refusals,
        made_by_fsbench,
    })
}

/// Adds to `refusals` every way the device (`numbers`: its own `major:minor`, `own`, and its
/// partitions') is in use: mounted, the root filesystem, swap, or under stacked devices.
fn in_use_refusals(name: &str, numbers: &[String], own: &str, refusals: &mut Vec<String>) {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for line in mountinfo.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if f.len() > 4 && numbers.iter().any(|n| n == f[2]) {
            let what = if f[2] == own {
                "it is mounted"
            } else {
                "a partition of it is mounted"
            };
            refusals.push(format!("{what} on {}", f[4]));
        }
    }
    let root_dev = std::fs::metadata("/").map(|m| m.dev()).unwrap_or(0);
    let (rmaj, rmin) = major_minor(root_dev);
    if numbers.iter().any(|n| *n == format!("{rmaj}:{rmin}")) {
        refusals.push("it holds the root filesystem /".into());
    }
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    for line in swaps.lines().skip(1) {
        let Some(dev) = line.split_whitespace().next() else {
            continue;
        };
        if let Ok(m) = std::fs::metadata(dev) {
            if m.file_type().is_block_device() {
                let (a, b) = major_minor(m.rdev());
                if numbers.iter().any(|n| *n == format!("{a}:{b}")) {
                    refusals.push(format!("it is in use as swap ({dev})"));
                }
            }
        }
    }
    let holders: Vec<String> = std::fs::read_dir(format!("/sys/class/block/{name}/holders"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if !holders.is_empty() {
        refusals.push(format!(
            "other devices are stacked on it ({}): an LVM, device-mapper or RAID member",
            holders.join(", ")
        ));
    }
}

/// Checks the confirmation and the device; `Ok` only when it is safe to format.
pub fn confirm(device: &Path, wipe: Option<&Path>) -> Result<DeviceInfo, ConfirmError> {
    match wipe {
        Some(w) if w.as_os_str() == device.as_os_str() => {}
        Some(w) => {
            return Err(ConfirmError::WipeMismatch {
                wipe: w.to_path_buf(),
                device: device.to_path_buf(),
            })
        }
        None => return Err(ConfirmError::NotConfirmed(device.to_path_buf())),
    }
    let info = inspect(device)?;
    if !info.refusals.is_empty() {
        return Err(ConfirmError::Refused {
            device: device.to_path_buf(),
            model: info.model,
            size_bytes: info.size_bytes,
            refusals: info.refusals,
        });
    }
    Ok(info)
}

/// Why [`inspect`] cannot look at a path.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// It cannot be stat'ed.
    #[error("{}: {source}", path.display())]
    Unreadable {
        /// The path.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// It is not a block device.
    #[error("{} is not a block device", .0.display())]
    NotBlock(PathBuf),
}

/// Why [`confirm`] refuses to let fsbench format a device.
#[derive(Debug, thiserror::Error)]
pub enum ConfirmError {
    /// `--wipe` names another path than `--device`.
    #[error(
        "--wipe {} does not repeat --device {} exactly: write the same path twice to confirm that everything on it will be destroyed",
        wipe.display(),
        device.display()
    )]
    WipeMismatch {
        /// The `--wipe` path.
        wipe: PathBuf,
        /// The `--device` path.
        device: PathBuf,
    },
    /// No `--wipe` at all.
    #[error(
        "--device {d} destroys everything on {d}: confirm with --wipe {d} (the same path, repeated exactly)",
        d = .0.display()
    )]
    NotConfirmed(PathBuf),
    /// The device cannot be inspected.
    #[error(transparent)]
    Inspect(#[from] InspectError),
    /// It is in use or not blank ([`DeviceInfo::refusals`]).
    #[error(
        "refusing to format {} ({model}, {size_bytes} bytes): {}. fsbench only formats a device that is unused and blank (clear it yourself with `wipefs -a` if you are sure)",
        device.display(),
        refusals.join("; ")
    )]
    Refused {
        /// The device.
        device: PathBuf,
        /// Its model (or what backs a loop device).
        model: String,
        /// Its size.
        size_bytes: u64,
        /// Every reason it is refused.
        refusals: Vec<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_device_is_refused_for_every_reason_that_applies() {
        // Read-only: inspect() never opens the device for writing.
        let root_dev = std::fs::metadata("/").unwrap().dev();
        let (maj, min) = major_minor(root_dev);
        let Some(name) = std::fs::read_link(format!("/sys/dev/block/{maj}:{min}"))
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        else {
            skip_or_fail!("/ is not on a block device (container overlay?): no root device to refuse")
        };
        let dev = PathBuf::from(format!("/dev/{name}"));
        if !dev.exists() {
            skip_or_fail!("{} has no node in /dev", dev.display())
        }
        let info = inspect(&dev).unwrap();
        let all = info.refusals.join("; ");
        assert!(all.contains("root filesystem"), "{all}");
        assert!(all.contains("mounted"), "{all}");
        assert!(confirm(&dev, Some(&dev)).is_err());
    }

    #[test]
    fn confirmation_must_repeat_the_path_exactly() {
        let e = confirm(Path::new("/dev/nonexistent"), None).unwrap_err().to_string();
        assert!(e.contains("--wipe /dev/nonexistent"), "{e}");
        let e = confirm(Path::new("/dev/nonexistent"), Some(Path::new("/dev/nonexistent2")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("exactly"), "{e}");
        let e = confirm(Path::new("/etc/passwd"), Some(Path::new("/etc/passwd")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a block device"), "{e}");
    }
}
