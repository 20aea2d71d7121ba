//! The I/O a block device received: its counters in `/sys/class/block/<dev>/stat`
//! (Documentation/ABI/testing/sysfs-block, Documentation/admin-guide/iostats.rst), read before
//! and after a phase so the phase's sample says how many reads, writes and cache flushes
//! reached the device under the filesystem — the requests the filesystem really issued
//! (journal commits, CoW rewrites, barriers), not what the workload asked for (issue 27).
//!
//! Invariants:
//! - Counters are per device, not machine-wide: another process's I/O counts only when it goes
//!   to the same device (a filesystem fsbench made is used by fsbench alone).
//! - The device of a path is the source of the mount that holds it when that source is a block
//!   device with a `stat` file; anything else (tmpfs, a FUSE or ZFS dataset, NFS) has none, and
//!   nothing is counted.
//! - A sector in these files is 512 bytes whatever the device's block size.

use std::path::Path;

/// Bytes of a sector in the block layer's counters.
pub const SECTOR_BYTES: u64 = 512;

/// The counters of one device at one moment (all since the device appeared).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskStat {
    /// Read requests completed.
    pub reads: u64,
    /// Sectors read (512 bytes each).
    pub read_sectors: u64,
    /// Write requests completed.
    pub writes: u64,
    /// Sectors written (512 bytes each).
    pub write_sectors: u64,
    /// Cache-flush requests completed (field 16, kernels since 5.5; 0 before).
    pub flushes: u64,
}

impl DiskStat {
    /// Parses the whitespace-separated fields of a `stat` file; `None` with fewer than 11.
    pub fn parse(text: &str) -> Option<DiskStat> {
        let f: Vec<u64> = text.split_whitespace().map(|x| x.parse().ok()).collect::<Option<_>>()?;
        if f.len() < 11 {
            return None;
        }
        Some(DiskStat {
            reads: f[0],
            read_sectors: f[2],
            writes: f[4],
            write_sectors: f[6],
            flushes: f.get(15).copied().unwrap_or(0),
        })
    }

    /// The counters of device `name` (`loop3`, `sda1`) now; `None` when it has no stat file.
    pub fn read(name: &str) -> Option<DiskStat> {
        let text = std::fs::read_to_string(format!("/sys/class/block/{name}/stat")).ok()?;
        DiskStat::parse(&text)
    }

    /// What happened between `earlier` and `self` (counters that went backwards give 0).
    pub fn since(&self, earlier: &DiskStat) -> DiskStat {
        DiskStat {
            reads: self.reads.saturating_sub(earlier.reads),
            read_sectors: self.read_sectors.saturating_sub(earlier.read_sectors),
            writes: self.writes.saturating_sub(earlier.writes),
            write_sectors: self.write_sectors.saturating_sub(earlier.write_sectors),
            flushes: self.flushes.saturating_sub(earlier.flushes),
        }
    }

    /// Mebibytes read.
    pub fn read_mib(&self) -> f64 {
        (self.read_sectors * SECTOR_BYTES) as f64 / f64::from(1u32 << 20)
    }

    /// Mebibytes written.
    pub fn write_mib(&self) -> f64 {
        (self.write_sectors * SECTOR_BYTES) as f64 / f64::from(1u32 << 20)
    }
}

/// The block device (its name under /sys/class/block) of the mount that holds `path`: the
/// longest mount point of /proc/mounts that `path` starts with, the later of equals (the one on
/// top), when its source is `/dev/<name>` with a stat file.
pub fn device_of(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string("/proc/mounts").ok()?;
    let (source, _) = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            let (source, point) = (f.next()?, super::unescape_mount_field(f.next()?));
            path.starts_with(&point).then(|| (source.to_string(), point.len()))
        })
        .fold(None, |best: Option<(String, usize)>, (s, n)| match best {
            Some((_, m)) if m > n => best,
            _ => Some((s, n)),
        })?;
    let name = Path::new(source.strip_prefix("/dev/")?)
        .file_name()?
        .to_str()?
        .to_string();
    Path::new(&format!("/sys/class/block/{name}/stat"))
        .exists()
        .then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_parses_with_and_without_the_flush_fields() {
        // /sys/block/loop2/stat on this machine (kernel 6.18: 17 fields).
        let now = "  488882    58213 363016453  2438996   526544   929198 122201716  2395960        0  1055248  4936694    13204        0 204280180    16611    86162    85126";
        let s = DiskStat::parse(now).expect("parses");
        assert_eq!(
            s,
            DiskStat {
                reads: 488882,
                read_sectors: 363016453,
                writes: 526544,
                write_sectors: 122201716,
                flushes: 86162
            }
        );
        // Kernels before 4.18 print 11 fields: no discard or flush counters.
        let old = DiskStat::parse("1 0 8 0 2 0 16 0 0 0 0").expect("parses");
        assert_eq!((old.reads, old.writes, old.write_sectors, old.flushes), (1, 2, 16, 0));
        assert!(DiskStat::parse("1 2 3").is_none());
        assert!(DiskStat::parse("1 2 x 4 5 6 7 8 9 10 11").is_none());
        let d = s.since(&old);
        assert_eq!((d.reads, d.writes, d.flushes), (488881, 526542, 86162));
        assert_eq!(old.since(&s), DiskStat::default(), "counters never go negative");
        assert!(
            (DiskStat {
                write_sectors: 2048,
                ..DiskStat::default()
            }
            .write_mib()
                - 1.0)
                .abs()
                < 1e-12
        );
    }

    #[test]
    fn the_device_of_a_path_is_its_mounts_block_device_or_none() {
        // /proc is not on a block device.
        assert_eq!(device_of(Path::new("/proc/self")), None);
        // The root filesystem: whatever it is here, a found name has a stat file.
        if let Some(name) = device_of(Path::new("/")) {
            assert!(DiskStat::read(&name).is_some(), "{name}");
        }
    }
}
