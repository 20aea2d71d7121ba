//! A rank's fingerprint, stored with a many-rank session ([`crate::store::RankHost`], table
//! `rank_hosts`): its host (name, kernel, CPU model, CPUs, memory) and the filesystem holding
//! the directory the ranks use as this rank sees it — mount point, source, type, per-mount and
//! superblock options from /proc/self/mountinfo — so a session on a shared mount says which
//! export, protocol version and options every client had.
//!
//! Invariants: read-only (proc files and `uname`); never fails (an unreadable mountinfo or a
//! path on no mount gives empty fields). The filesystem holding a path is the mount whose mount
//! point is the longest prefix of its canonical form (the nearest existing ancestor: rank 0 may
//! not have made the scratch folder yet), the last such mount when several stack there.
//!
//! Reference: proc(5), /proc/pid/mountinfo (fields 5, 6, 9, 10, 11; octal escapes `\040`).

use crate::store::RankHost;
use std::path::{Path, PathBuf};

/// One line of /proc/self/mountinfo, the fields a fingerprint keeps.
#[derive(Debug, Default, PartialEq)]
struct Mount {
    point: String,
    opts: String,
    fs_type: String,
    source: String,
    super_opts: String,
}

/// `\040`-style octal escapes of mountinfo decoded.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_line(line: &str) -> Option<Mount> {
    let (left, right) = line.split_once(" - ")?;
    let l: Vec<&str> = left.split(' ').collect();
    let r: Vec<&str> = right.split(' ').collect();
    Some(Mount {
        point: unescape(l.get(4)?),
        opts: l.get(5)?.to_string(),
        fs_type: r.first()?.to_string(),
        source: unescape(r.get(1)?),
        super_opts: r.get(2).unwrap_or(&"").to_string(),
    })
}

/// The mount holding `path` (already canonical) among `mountinfo`'s lines.
fn mount_of(path: &Path, mountinfo: &str) -> Option<Mount> {
    let mut best: Option<Mount> = None;
    for m in mountinfo.lines().filter_map(parse_line) {
        if path.starts_with(&m.point) && best.as_ref().is_none_or(|b| m.point.len() >= b.point.len()) {
            best = Some(m);
        }
    }
    best
}

/// `dir`, or its nearest existing ancestor, canonicalised.
fn existing(dir: &Path) -> PathBuf {
    let mut p = dir.to_path_buf();
    loop {
        if let Ok(c) = p.canonicalize() {
            return c;
        }
        if !p.pop() {
            return PathBuf::from("/");
        }
    }
}

/// This rank's fingerprint for the ranks' directory `dir` (clock fields are filled by rank 0).
pub fn of_this_rank(rank: usize, dir: &Path) -> RankHost {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let m = mount_of(&existing(dir), &mountinfo).unwrap_or_default();
    RankHost {
        rank: rank as u32,
        host: crate::sysinfo::host_info(),
        dir: dir.display().to_string(),
        mount_point: m.point,
        mount_source: m.source,
        fs_type: m.fs_type,
        mount_opts: m.opts,
        super_opts: m.super_opts,
        clock_offset_ns: 0,
        clock_rtt_ns: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines of this machine's /proc/self/mountinfo (the NFS line from a Debian 12 client).
    const MOUNTINFO: &str = "\
22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,errors=remount-ro
27 22 0:24 / /var/tmp rw,nosuid,nodev shared:7 - tmpfs tmpfs rw,size=1048576k
31 22 0:40 / /mnt/shared\\040data rw,relatime shared:9 - nfs4 srv:/export rw,vers=4.2,rsize=1048576,wsize=1048576,hard,proto=tcp
";

    #[test]
    fn the_longest_mount_point_holding_the_path_wins_with_its_options() {
        let m = mount_of(Path::new("/var/tmp/fsbench/run-1"), MOUNTINFO).unwrap();
        assert_eq!(m.point, "/var/tmp");
        assert_eq!(m.fs_type, "tmpfs");
        assert_eq!(m.opts, "rw,nosuid,nodev");
        assert_eq!(m.super_opts, "rw,size=1048576k");
        let m = mount_of(Path::new("/mnt/shared data/x"), MOUNTINFO).unwrap();
        assert_eq!(m.point, "/mnt/shared data");
        assert_eq!(m.source, "srv:/export");
        assert!(m.super_opts.contains("vers=4.2"));
        // A sibling whose name only starts like the mount point is not on it.
        let m = mount_of(Path::new("/var/tmpx"), MOUNTINFO).unwrap();
        assert_eq!((m.point.as_str(), m.fs_type.as_str()), ("/", "ext4"));
    }

    #[test]
    fn this_ranks_fingerprint_names_the_real_mount_of_a_missing_folder() {
        let f = of_this_rank(3, Path::new("/proc/self/no/such/folder"));
        assert_eq!(f.rank, 3);
        assert_eq!((f.mount_point.as_str(), f.fs_type.as_str()), ("/proc", "proc"));
        assert!(!f.host.kernel.is_empty());
    }
}
