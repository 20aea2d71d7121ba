//! [`PathFacts`]: what the kernel says about the I/O path of a filesystem under test, read back
//! after it is mounted — not copied from what fsbench asked for.
//!
//! Storage people lose days to results that measured another path than the one asked for: a
//! loop device whose direct I/O was refused serves reads from the host's page cache of its
//! backing file; a mount option the kernel did not apply. Every sample stores these facts
//! (`samples.path_facts_json`, schema 11) and the report flags a mismatch.
//!
//! Sources: `/sys/block/<dev>/loop/{dio,backing_file}`, `/sys/block/<dev>/queue/{scheduler,
//! read_ahead_kb}` (Documentation/ABI/stable/sysfs-block), `/proc/self/mountinfo` (proc(5):
//! field 9 is the filesystem type, 11 the super options), the `FS_IOC_GETFLAGS` ioctl
//! (ioctl_iflags(2): `FS_NOCOW_FL`, which `lsattr` shows as `C`), mincore(2) for how much of
//! a file the page cache holds ([`resident_bytes`], what `fincore` prints), statx(2)'s atomic
//! write unit range ([`atomic_write_units`]). A fact that cannot be read is
//! `None`, never a guess. The facts read by tools or other layers (the mkfs parameters, the
//! memory cgroup's limit, the zfs compression ratio) are filled in by `run::slot`; this module
//! only holds them and says which differ from what was asked ([`PathFacts::mismatches`]).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The I/O path of one mounted filesystem, as the kernel reports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PathFacts {
    /// A loop device's direct-I/O state (`/sys/block/loopN/loop/dio`): `false` means the backing
    /// file's page cache on the host buffers its I/O and can serve its reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_dio: Option<bool>,
    /// Whether fsbench asked the loop device for direct I/O (`[run] loop_io`, `--loop-io`):
    /// `false` when buffered was asked on purpose, so a buffered loop is no mismatch; `None`
    /// when not recorded (sessions before it, which always asked for direct I/O).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_dio_asked: Option<bool>,
    /// A loop device's backing file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing_file: Option<String>,
    /// Type of the filesystem that holds the backing file (`ext4`, `tmpfs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing_fs: Option<String>,
    /// The device's I/O scheduler (the one in brackets: `none`, `mq-deadline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    /// The device's readahead, KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_ahead_kb: Option<u64>,
    /// The mounted filesystem's type, from mountinfo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs_type: Option<String>,
    /// The superblock options from mountinfo (`rw,seclabel,compress=zstd:3,…`): what the
    /// filesystem applies, as opposed to the per-mount options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub super_options: Option<String>,
    /// On a compressing mount: the on-disk ratio of a probe of the workload's kind of data
    /// (logical bytes over the blocks they took, [`on_disk_ratio`]); 1.0 means nothing shrank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_disk_ratio: Option<f64>,
    /// What the probe wrote (`random`, `text`, `zeros`: the workload's `content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_content: Option<String>,
    /// The filesystem's creation parameters read back from its superblock after mounting
    /// (`dumpe2fs -h`, `xfs_info`, `btrfs inspect-internal dump-super`, or the dataset's
    /// `zfs get`; the keys of the `parsers::mkfs_params` parsers: `block_size`, `inode_size`,
    /// `sector_size`, `node_size` in bytes, the rest in the tool's words). Empty when not read.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mkfs_params: BTreeMap<String, String>,
    /// What the variant's mkfs options asked for, in the same keys and units as
    /// [`PathFacts::mkfs_params`] (ext* `-b`/`-I`, xfs `-b size=`/`-i size=`/`-s size=`, btrfs
    /// `-n`/`-s`); a key whose read-back value differs is a mismatch.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mkfs_asked: BTreeMap<String, String>,
    /// The memory limit in force for the workload's cgroup, bytes, read back from the cgroup
    /// files (v1: the lower of `memory.limit_in_bytes` and `memory.stat`'s
    /// `hierarchical_memory_limit`; v2: `memory.max`). `None` without `--memory`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<u64>,
    /// The memory limit fsbench asked the cgroup for, bytes (the run's `memory`, raised to
    /// fsbench's minimum with a warning and rounded down to whole 4 KiB pages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_asked: Option<u64>,
    /// Whether the workload's directory has `FS_NOCOW_FL` (`chattr +C`), read back with
    /// `FS_IOC_GETFLAGS`; `None` when it was not asked for or could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nocow: Option<bool>,
    /// Whether the variant asked for NoCOW (`nocow = true`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nocow_asked: bool,
    /// The hypervisor's free page reporting during the repeat (`balloon::Reporting::fact`):
    /// `on (blocks of 2.0 MiB and larger)`, `held (order 11)`; `None` on a machine without it
    /// (or a session before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_reporting: Option<String>,
    /// The atomic write units the filesystem offers a new regular file in it (statx
    /// `STATX_WRITE_ATOMIC` on a probe file, [`atomic_write_fact`]): `4 KiB – 1 MiB`, `none`
    /// when it answers with no unit; `None` when it does not answer (btrfs here, kernels before
    /// 6.11) or a session before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atomic_write: Option<String>,
}

/// How far the memory limit in force may lie from the one asked before it is a mismatch,
/// bytes: one 4 KiB page, the kernel's rounding.
pub const MEMORY_SLACK: u64 = 4096;

/// Sets `FS_NOCOW_FL` on the directory `dir` (what `chattr +C` does): files created in it
/// afterwards are NoCOW on btrfs (no copy-on-write, no data checksums, no compression). Files
/// already in it keep their flags.
pub fn set_nocow(dir: &Path) -> std::io::Result<()> {
    use rustix::fs::{ioctl_getflags, ioctl_setflags, IFlags};
    let f = std::fs::File::open(dir)?;
    let flags = ioctl_getflags(&f)?;
    ioctl_setflags(&f, flags | IFlags::NOCOW)?;
    Ok(())
}

/// Whether `path` has `FS_NOCOW_FL` (`FS_IOC_GETFLAGS`; `lsattr` shows it as `C`).
pub fn nocow(path: &Path) -> std::io::Result<bool> {
    let f = std::fs::File::open(path)?;
    Ok(rustix::fs::ioctl_getflags(&f)?.contains(rustix::fs::IFlags::NOCOW))
}

/// Bytes of the file at `path` that the page cache holds now (what `fincore` prints), and the
/// file's size: the file is mapped without access (`PROT_NONE`, so no page is faulted in) and
/// mincore(2) reports each page's residency. Linux answers for pages not mapped by the caller
/// only to a process that may write the file (or owns it, or is privileged); otherwise the
/// count undercounts. An empty file holds none.
pub fn resident_bytes(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    if len == 0 {
        return Ok((0, 0));
    }
    // SAFETY: sysconf(3) has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .unwrap_or(4096)
        .max(1);
    let pages = len.div_ceil(page as u64) as usize;
    let mut vec = vec![0u8; pages];
    let size = usize::try_from(len).map_err(|_| std::io::Error::other("file larger than the address space"))?;
    // SAFETY: a fresh shared mapping of our own open file, never dereferenced (PROT_NONE),
    // unmapped below; `vec` has one byte per page of the mapping, as mincore(2) writes.
    unsafe {
        let addr = libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_NONE,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        if addr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let r = libc::mincore(addr, size, vec.as_mut_ptr());
        let err = std::io::Error::last_os_error();
        libc::munmap(addr, size);
        if r != 0 {
            return Err(err);
        }
    }
    let resident = vec.iter().filter(|&&b| b & 1 == 1).count() as u64;
    Ok(((resident * page as u64).min(len), len))
}

/// The atomic write unit range the kernel reports for the open file `f` (statx(2) with
/// `STATX_WRITE_ATOMIC`, Linux 6.11+): `(unit_min, unit_max, segments_max)` in bytes, bytes and
/// vectors; `None` when the kernel or filesystem does not answer for it (the mask lacks the
/// bit), `Some` with a maximum of 0 when it answers "none here".
pub fn atomic_write_units(f: &std::fs::File) -> std::io::Result<Option<(u32, u32, u32)>> {
    use std::os::fd::AsRawFd;
    // SAFETY: statx is plain old data that the call fills; an empty path with AT_EMPTY_PATH
    // names the open descriptor itself.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    let rc = unsafe {
        libc::statx(
            f.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_WRITE_ATOMIC,
            &mut st,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((st.stx_mask & libc::STATX_WRITE_ATOMIC != 0).then_some((
        st.stx_atomic_write_unit_min,
        st.stx_atomic_write_unit_max,
        st.stx_atomic_write_segments_max,
    )))
}

/// [`PathFacts::atomic_write`] of the filesystem holding `dir`: an empty probe file is created
/// there (`O_EXCL`, named after this process and the time, so ranks sharing the directory do not
/// collide), asked with [`atomic_write_units`] and removed. `Ok(None)` when the kernel does not
/// answer for it.
pub fn atomic_write_fact(dir: &Path) -> std::io::Result<Option<String>> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    atomic_write_probe(&dir.join(format!(".fsbench-atomic-probe.{}.{nanos}", std::process::id())))
}

/// [`atomic_write_fact`] with the probe file `probe`, which must not exist.
fn atomic_write_probe(probe: &Path) -> std::io::Result<Option<String>> {
    let f = std::fs::OpenOptions::new().write(true).create_new(true).open(probe)?;
    let units = atomic_write_units(&f);
    drop(f);
    std::fs::remove_file(probe)?;
    Ok(units?.map(|(min, max, _)| match max {
        0 => "none".to_string(),
        _ => format!(
            "{} – {}",
            crate::units::Bytes(u64::from(min)).human(),
            crate::units::Bytes(u64::from(max)).human()
        ),
    }))
}

/// Bytes the compression probe writes (64 MiB: many extents of every compressor's unit).
pub const PROBE_BYTES: usize = 64 << 20;

/// The on-disk ratio of `data` written to a file under `dir`: the filesystem's used blocks
/// (statfs) are read after a `syncfs`, the file is written, fsynced and the filesystem synced,
/// and the ratio is `data.len()` over the growth of the used blocks (at least one block); the
/// file is removed and the filesystem synced again. Untimed; run before the workload.
pub fn on_disk_ratio(dir: &Path, data: &[u8]) -> std::io::Result<f64> {
    use std::io::Write;
    let used = || -> std::io::Result<(u64, u64)> {
        let st = rustix::fs::statvfs(dir)?;
        Ok(((st.f_blocks - st.f_bfree) * st.f_frsize, st.f_frsize.max(1)))
    };
    let sync = |f: &std::fs::File| rustix::fs::syncfs(f).map_err(std::io::Error::from);
    let dirf = std::fs::File::open(dir)?;
    sync(&dirf)?;
    let (before, block) = used()?;
    let path = dir.join("fsbench-compress-probe");
    let result = (|| -> std::io::Result<f64> {
        let mut f = std::fs::File::create(&path)?;
        f.write_all(data)?;
        f.sync_all()?;
        sync(&dirf)?;
        let (after, _) = used()?;
        Ok(data.len() as f64 / after.saturating_sub(before).max(block) as f64)
    })();
    let removed = std::fs::remove_file(&path);
    sync(&dirf)?;
    let ratio = result?;
    removed?;
    Ok(ratio)
}

/// Whether mount options (`rw,compress=zstd:3`) ask for or show compression.
pub fn compresses(options: &str) -> bool {
    options
        .split(',')
        .any(|o| o.starts_with("compress") && !o.starts_with("compress=no") && o != "nocompress")
}

impl PathFacts {
    /// The facts of the filesystem mounted at `mountpoint` on `device` (a block device such as
    /// `/dev/loop3`; `None` for a directory target, which has mount facts only).
    pub fn read(device: Option<&str>, mountpoint: &Path) -> PathFacts {
        let mut f = PathFacts::default();
        if let Some(name) = device.and_then(|d| Path::new(d).file_name()).and_then(|n| n.to_str()) {
            let sys = |rel: &str| std::fs::read_to_string(format!("/sys/block/{name}/{rel}")).ok();
            f.loop_dio = sys("loop/dio").and_then(|s| match s.trim() {
                "1" => Some(true),
                "0" => Some(false),
                _ => None,
            });
            if let Some(file) = device.and_then(super::loop_backing_file) {
                f.backing_fs = mount_of(&file).map(|(fs, _)| fs);
                f.backing_file = Some(file.display().to_string());
            }
            f.scheduler = sys("queue/scheduler").and_then(|s| selected(&s));
            f.read_ahead_kb = sys("queue/read_ahead_kb").and_then(|s| s.trim().parse().ok());
        }
        if let Some((fs, opts)) = mountinfo_entry(mountpoint) {
            f.fs_type = Some(fs);
            f.super_options = Some(opts);
        }
        f
    }

    /// What a reader must know where the path differs from the one fsbench asks for, one line
    /// each (empty when nothing does): compression that did not shrink compressible data, a
    /// loop device in another mode than asked (buffered unasked is a mismatch, buffered by
    /// request is not), an mkfs parameter read back other than asked, a memory limit in force
    /// more than [`MEMORY_SLACK`] from the one asked, NoCOW asked for and not set. Each line is
    /// the same for the same finding, so the report groups them by kind.
    pub fn mismatches(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let (Some(r), Some(content)) = (self.on_disk_ratio, self.probe_content.as_deref()) {
            if r < 1.1 && content != "random" {
                out.push(format!(
                    "compression on but the data did not shrink: on-disk ratio {r:.2} on {content} content"
                ));
            }
        }
        match (self.loop_dio, self.loop_dio_asked) {
            (Some(false), Some(false)) | (Some(true), Some(true) | None) | (None, _) => {}
            (Some(false), _) => out.push(
                "loop device in buffered mode (dio 0, direct I/O was asked for): the host's page cache of its backing file serves and buffers its I/O"
                    .to_string(),
            ),
            (Some(true), Some(false)) => out.push(
                "loop device in direct-I/O mode (dio 1, buffered I/O was asked for): the host's page cache is not in its path"
                    .to_string(),
            ),
        }
        self.asked_mismatches(&mut out);
        out
    }

    /// The mkfs parameters read back as one line, `key=value` in key order (`None` when none
    /// were read).
    pub fn mkfs_text(&self) -> Option<String> {
        (!self.mkfs_params.is_empty()).then(|| {
            self.mkfs_params
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
    }

    /// The mismatches between what the variant and the run asked for and what was read back:
    /// mkfs parameters, the memory limit, NoCOW.
    fn asked_mismatches(&self, out: &mut Vec<String>) {
        for (key, asked) in &self.mkfs_asked {
            if let Some(got) = self.mkfs_params.get(key).filter(|got| *got != asked) {
                out.push(format!(
                    "mkfs parameter {key} read back as {got}, {asked} was asked for"
                ));
            }
        }
        if let (Some(limit), Some(asked)) = (self.memory_limit, self.memory_asked) {
            if limit.abs_diff(asked) > MEMORY_SLACK {
                out.push(format!(
                    "memory limit in force is {limit} bytes ({:.1} MiB), {asked} bytes ({:.1} MiB) was asked for",
                    limit as f64 / (1u64 << 20) as f64,
                    asked as f64 / (1u64 << 20) as f64
                ));
            }
        }
        if self.nocow_asked {
            match self.nocow {
                Some(true) => {}
                Some(false) => out.push(
                    "NoCOW asked for but the workload's directory does not have FS_NOCOW_FL: its files are copy-on-write"
                        .to_string(),
                ),
                None => out.push(
                    "NoCOW asked for but FS_NOCOW_FL could not be read back from the workload's directory".to_string(),
                ),
            }
        }
    }
}

/// The scheduler in brackets of a sysfs `scheduler` line (`none [mq-deadline] kyber`), or the
/// only one listed.
fn selected(line: &str) -> Option<String> {
    let line = line.trim();
    match (line.find('['), line.find(']')) {
        (Some(a), Some(b)) if a < b => Some(line[a + 1..b].to_string()),
        _ if !line.is_empty() && !line.contains(' ') => Some(line.to_string()),
        _ => None,
    }
}

/// Every mount of /proc/self/mountinfo, in its order: `(mount point, type, super options)`.
fn mountinfo() -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let (head, tail) = l.split_once(" - ")?;
            let point = super::unescape_mount_field(head.split(' ').nth(4)?);
            let mut t = tail.split(' ');
            let (fs, _source, opts) = (t.next()?, t.next()?, t.next()?);
            Some((point, fs.to_string(), opts.to_string()))
        })
        .collect()
}

/// `(type, super options)` of the topmost mount at `mountpoint`.
fn mountinfo_entry(mountpoint: &Path) -> Option<(String, String)> {
    mountinfo()
        .into_iter()
        .rev()
        .find(|(point, _, _)| Path::new(point) == mountpoint)
        .map(|(_, fs, opts)| (fs, opts))
}

/// `(type, super options)` of the mount that holds `path` (the longest mountpoint prefix; of
/// equals, the later mount, which is on top).
fn mount_of(path: &Path) -> Option<(String, String)> {
    mountinfo()
        .into_iter()
        .filter(|(point, _, _)| path.starts_with(point))
        .max_by_key(|(point, _, _)| point.len())
        .map(|(_, fs, opts)| (fs, opts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compression_options_are_recognised_and_an_unshrunk_compressible_probe_is_a_mismatch() {
        assert!(compresses("rw,relatime,compress=zstd:3,space_cache=v2"));
        assert!(compresses("rw,compress-force=lzo"));
        assert!(!compresses("rw,relatime,space_cache=v2"));
        assert!(!compresses("rw,compress=no"));
        let text = PathFacts {
            on_disk_ratio: Some(1.0),
            probe_content: Some("text".into()),
            ..PathFacts::default()
        };
        assert_eq!(text.mismatches().len(), 1, "{:?}", text.mismatches());
        let random = PathFacts {
            probe_content: Some("random".into()),
            ..text.clone()
        };
        assert!(
            random.mismatches().is_empty(),
            "random data does not shrink: no mismatch"
        );
        let shrunk = PathFacts {
            on_disk_ratio: Some(3.2),
            ..text
        };
        assert!(shrunk.mismatches().is_empty());
    }

    #[test]
    fn the_on_disk_ratio_of_a_probe_on_a_plain_filesystem_is_about_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data: Vec<u8> = (0..4u32 << 20)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let r = on_disk_ratio(dir.path(), &data).expect("probe");
        // No compression here: the file took at least its size (metadata may add a little;
        // other writers on a shared /tmp may move the count, hence the wide band).
        assert!(r > 0.5 && r <= 1.2, "{r}");
        assert!(
            std::fs::read_dir(dir.path()).unwrap().next().is_none(),
            "probe left behind"
        );
    }

    #[test]
    fn asked_and_read_back_facts_that_differ_are_mismatches() {
        let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let same = PathFacts {
            mkfs_params: map(&[
                ("block_size", "1024"),
                ("inode_size", "512"),
                ("features", "has_journal"),
            ]),
            mkfs_asked: map(&[("block_size", "1024"), ("inode_size", "512")]),
            memory_limit: Some(64 << 20),
            memory_asked: Some(64 << 20),
            nocow: Some(true),
            nocow_asked: true,
            ..PathFacts::default()
        };
        assert!(same.mismatches().is_empty(), "{:?}", same.mismatches());
        let block = PathFacts {
            mkfs_params: map(&[("block_size", "4096"), ("inode_size", "512")]),
            ..same.clone()
        };
        assert_eq!(
            block.mismatches(),
            ["mkfs parameter block_size read back as 4096, 1024 was asked for"]
        );
        // Nothing read back (the tool failed: a note) is no finding about the parameters.
        let unread = PathFacts {
            mkfs_params: BTreeMap::new(),
            ..same.clone()
        };
        assert!(unread.mismatches().is_empty());
        // The kernel's page rounding is not a mismatch; more is.
        let rounded = PathFacts {
            memory_limit: Some((64 << 20) - MEMORY_SLACK),
            ..same.clone()
        };
        assert!(rounded.mismatches().is_empty());
        let lower = PathFacts {
            memory_limit: Some(48 << 20),
            ..same.clone()
        };
        assert_eq!(lower.mismatches().len(), 1);
        assert!(
            lower.mismatches()[0].starts_with("memory limit in force is 50331648 bytes (48.0 MiB), 67108864 bytes"),
            "{:?}",
            lower.mismatches()
        );
        let cow = PathFacts {
            nocow: Some(false),
            ..same.clone()
        };
        assert!(
            cow.mismatches()[0].contains("does not have FS_NOCOW_FL"),
            "{:?}",
            cow.mismatches()
        );
        let unknown = PathFacts {
            nocow: None,
            ..same.clone()
        };
        assert!(unknown.mismatches()[0].contains("could not be read back"));
        let not_asked = PathFacts {
            nocow: Some(false),
            nocow_asked: false,
            ..same.clone()
        };
        assert!(not_asked.mismatches().is_empty());
        // A sample stored before these facts existed reads back with none of them.
        let old: PathFacts = serde_json::from_str(r#"{"loop_dio":true,"fs_type":"ext4"}"#).unwrap();
        assert!(old.mkfs_params.is_empty() && old.memory_limit.is_none() && !old.nocow_asked);
        let json = serde_json::to_string(&same).unwrap();
        assert_eq!(serde_json::from_str::<PathFacts>(&json).unwrap(), same);
        assert_eq!(
            same.mkfs_text().as_deref(),
            Some("block_size=1024 features=has_journal inode_size=512")
        );
    }

    #[test]
    fn nocow_reads_back_as_not_set_on_a_fresh_directory() {
        // tmpfs and ext4 have no FS_NOCOW_FL: unset, or the ioctl is refused (then setting it
        // is refused too); either way never reported as set.
        let dir = tempfile::tempdir().expect("tempdir");
        match nocow(dir.path()) {
            Ok(set) => assert!(!set),
            Err(e) => assert!(set_nocow(dir.path()).is_err(), "read refused ({e}) but set accepted"),
        }
    }

    #[test]
    fn the_selected_scheduler_is_the_one_in_brackets() {
        assert_eq!(selected("none [mq-deadline] kyber\n").as_deref(), Some("mq-deadline"));
        assert_eq!(selected("none\n").as_deref(), Some("none"));
        assert_eq!(selected(""), None);
    }

    #[test]
    fn the_root_mount_is_read_back_and_a_buffered_loop_is_a_mismatch() {
        let root = PathFacts::read(None, Path::new("/"));
        assert!(root.fs_type.is_some() && root.super_options.is_some(), "{root:?}");
        assert_eq!(root.loop_dio, None);
        assert!(root.mismatches().is_empty());
        let buffered = PathFacts {
            loop_dio: Some(false),
            backing_file: Some("/var/tmp/x.img".into()),
            ..PathFacts::default()
        };
        assert_eq!(buffered.mismatches().len(), 1);
        assert!(
            buffered.mismatches()[0].contains("buffered mode"),
            "{:?}",
            buffered.mismatches()
        );
        let direct = PathFacts {
            loop_dio: Some(true),
            ..buffered.clone()
        };
        assert!(direct.mismatches().is_empty());
        // Buffered on purpose is no mismatch; direct when buffered was asked is one.
        let asked = PathFacts {
            loop_dio_asked: Some(false),
            ..buffered.clone()
        };
        assert!(asked.mismatches().is_empty(), "{:?}", asked.mismatches());
        let asked_direct = PathFacts {
            loop_dio_asked: Some(true),
            ..buffered
        };
        assert_eq!(asked_direct.mismatches().len(), 1);
        let unexpected = PathFacts {
            loop_dio: Some(true),
            ..asked
        };
        assert!(
            unexpected.mismatches()[0].contains("buffered I/O was asked for"),
            "{:?}",
            unexpected.mismatches()
        );
        // A file's mount: the longest prefix.
        assert!(mount_of(Path::new("/proc/self/mountinfo")).is_some_and(|(fs, _)| fs == "proc"));
    }

    /// The atomic-write fact of a real filesystem (/var/tmp, ext4 on this VM's disk, which has
    /// no atomic write units: `none`) leaves no probe behind, and never takes over a file of
    /// that name that is already there.
    #[test]
    fn the_atomic_write_fact_probes_and_leaves_nothing() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let fact = atomic_write_fact(dir.path()).unwrap();
        assert!(fact.is_some(), "ext4 on 6.11+ answers STATX_WRITE_ATOMIC");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let theirs = dir.path().join(".fsbench-atomic-probe.1");
        std::fs::write(&theirs, b"not ours").unwrap();
        assert!(atomic_write_probe(&theirs).is_err());
        assert_eq!(std::fs::read(&theirs).unwrap(), b"not ours");
    }
}
