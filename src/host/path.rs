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
    /// each (empty when nothing does): a loop device in another mode than asked (buffered
    /// unasked is a mismatch, buffered by request is not).
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
}
