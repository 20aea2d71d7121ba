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
//! field 9 is the filesystem type, 11 the super options). A fact that cannot be read is `None`,
//! never a guess.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// The I/O path of one mounted filesystem, as the kernel reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathFacts {
    /// A loop device's direct-I/O state (`/sys/block/loopN/loop/dio`): `false` means the backing
    /// file's page cache on the host buffers its I/O and can serve its reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_dio: Option<bool>,
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
    /// each (empty when nothing does): a loop device in buffered mode.
    pub fn mismatches(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.loop_dio == Some(false) {
            out.push(
                "loop device in buffered mode (dio 0, direct I/O was asked for): the host's page cache of its backing file serves and buffers its I/O"
                    .to_string(),
            );
        }
        out
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

/// `(type, super options)` of the topmost mount at `mountpoint`, from /proc/self/mountinfo.
fn mountinfo_entry(mountpoint: &Path) -> Option<(String, String)> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    text.lines().rev().find_map(|l| {
        let (head, tail) = l.split_once(" - ")?;
        let point = head.split(' ').nth(4)?;
        if Path::new(&super::unescape_mount_field(point)) != mountpoint {
            return None;
        }
        let mut t = tail.split(' ');
        let fs = t.next()?.to_string();
        let _source = t.next()?;
        Some((fs, t.next()?.to_string()))
    })
}

/// `(type, super options)` of the mount that holds `path` (the longest mountpoint prefix).
fn mount_of(path: &Path) -> Option<(String, String)> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut best: Option<(usize, String, String)> = None;
    for l in text.lines() {
        let Some((head, tail)) = l.split_once(" - ") else {
            continue;
        };
        let Some(point) = head.split(' ').nth(4) else { continue };
        let point = super::unescape_mount_field(point);
        if !path.starts_with(&point) {
            continue;
        }
        let mut t = tail.split(' ');
        let (Some(fs), Some(_), Some(opts)) = (t.next(), t.next(), t.next()) else {
            continue;
        };
        if best.as_ref().is_none_or(|(len, _, _)| point.len() >= *len) {
            best = Some((point.len(), fs.to_string(), opts.to_string()));
        }
    }
    best.map(|(_, fs, opts)| (fs, opts))
}

#[cfg(test)]
mod tests {
    use super::*;

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
            ..buffered
        };
        assert!(direct.mismatches().is_empty());
        // A file's mount: the longest prefix.
        assert!(mount_of(Path::new("/proc/self/mountinfo")).is_some_and(|(fs, _)| fs == "proc"));
    }
}
