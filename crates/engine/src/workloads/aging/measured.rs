//! The measured workloads of `aging` besides the cold read (issue 30, item 2): what an aged
//! tree costs the ways programs use it. Each runs on the kept tree after the cold read, each
//! after its own drop of the caches (when the run asks for it), and each changes nothing.
//!
//! | phase | like | what is timed | metrics |
//! |---|---|---|---|
//! | `grep` | `grep -r` | the tree walked in the order the filesystem lists it (`readdir`), every file read whole in 128 KiB reads and every byte examined (newlines counted) | `throughput` (MiB/s), `time` (s, detail) |
//! | `seqread` | fileio's sequential read | the largest file of the tree read from start to end in 1 MiB buffered reads (readahead on), in passes until 0.5 s of reading (2 to 16 passes), each pass after `POSIX_FADV_DONTNEED` of the file (untimed) so each reaches the device | `throughput` (MiB/s), `file_mib` (detail), `passes` (detail) |
//! | `statread` | mongo's stat/read | every file in a seeded random order: `stat`, `open`, one read of its first 4 KiB, `close` | `rate` (files/s), `time` (s, detail) |
//!
//! The walk of `grep` is not the cold read's sorted path order, and its requests are smaller;
//! `seqread` sees one large file's layout through readahead; `statread` is dominated by inode
//! and first-block lookups scattered over the device. These are fsbench's own loops in the
//! manner of those tools, not the tools themselves.

use super::{LiveFile, Rng, CHUNK, ERR};
use crate::EngineError;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Phase: the grep-like scan of the tree.
pub const GREP: &str = "grep";
/// Phase: the sequential read of the largest file.
pub const SEQREAD: &str = "seqread";
/// Phase: stat and first-block read of every file.
pub const STATREAD: &str = "statread";
/// Metric of `statread`: files per second.
pub const RATE: &str = "rate";
/// Detail metric of `seqread`: the file's size, MiB.
pub const FILE_MIB: &str = "file_mib";
/// Detail metric of `seqread`: passes over the file.
pub const PASSES: &str = "passes";

/// `grep`'s read size, bytes (GNU grep reads in buffers of this order).
const GREP_BUF: usize = 128 << 10;
/// `statread`'s read of each file's start, bytes.
const HEAD: usize = 4096;
/// `seqread` reads for at least this long...
const SEQ_MIN_TIME: Duration = Duration::from_millis(500);
/// ...in at least this many passes...
const SEQ_MIN_PASSES: u32 = 2;
/// ...and at most this many.
const SEQ_MAX_PASSES: u32 = 16;

/// What the grep-like scan read: bytes and newlines.
pub struct Scanned {
    /// Bytes read.
    pub bytes: u64,
    /// Newline bytes met (the "matches"; the result is never used but cannot be skipped).
    pub newlines: u64,
}

/// The grep-like scan of `top`: directories and files in `readdir` order, every file read whole
/// in [`GREP_BUF`] reads, every byte examined.
pub fn grep(top: &Path, interrupt: &AtomicBool) -> Result<Scanned, EngineError> {
    let mut buf = vec![0u8; GREP_BUF];
    let mut out = Scanned { bytes: 0, newlines: 0 };
    let mut dirs = vec![top.to_path_buf()];
    while let Some(d) = dirs.pop() {
        if interrupt.load(Ordering::Relaxed) {
            return Err(EngineError::Interrupted);
        }
        for e in std::fs::read_dir(&d).map_err(|e| ERR.io("readdir", &d, e))? {
            let e = e.map_err(|e| ERR.io("readdir", &d, e))?;
            let p = e.path();
            let t = e.file_type().map_err(|err| ERR.io("stat", &p, err))?;
            if t.is_dir() {
                dirs.push(p);
                continue;
            }
            let mut f = std::fs::File::open(&p).map_err(|e| ERR.io("open", &p, e))?;
            loop {
                let n = f.read(&mut buf).map_err(|e| ERR.io("read", &p, e))?;
                if n == 0 {
                    break;
                }
                out.bytes += n as u64;
                out.newlines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
            }
        }
    }
    Ok(out)
}

/// The largest file of `tree` (the first of equal ones), if the tree has a file.
pub fn largest(tree: &[LiveFile]) -> Option<LiveFile> {
    tree.iter().copied().reduce(|a, b| if b.size > a.size { b } else { a })
}

/// What the sequential read measured.
pub struct SeqRead {
    /// Bytes read over all passes.
    pub bytes: u64,
    /// Time spent reading (the untimed `DONTNEED` between passes left out).
    pub reading: Duration,
    /// Passes over the file.
    pub passes: u32,
}

/// Reads `path` from start to end in 1 MiB buffered reads, in passes until
/// [`SEQ_MIN_TIME`] of reading ([`SEQ_MIN_PASSES`]..=[`SEQ_MAX_PASSES`]), each pass after
/// `POSIX_FADV_DONTNEED` of the whole file so that it reaches the device.
pub fn seqread(path: &Path, interrupt: &AtomicBool) -> Result<SeqRead, EngineError> {
    let mut f = std::fs::File::open(path).map_err(|e| ERR.io("open", path, e))?;
    let mut buf = vec![0u8; CHUNK];
    let mut out = SeqRead {
        bytes: 0,
        reading: Duration::ZERO,
        passes: 0,
    };
    while out.passes < SEQ_MIN_PASSES || (out.reading < SEQ_MIN_TIME && out.passes < SEQ_MAX_PASSES) {
        if interrupt.load(Ordering::Relaxed) {
            return Err(EngineError::Interrupted);
        }
        rustix::fs::fadvise(&f, 0, 0, rustix::fs::Advice::DontNeed)
            .map_err(|e| ERR.io("posix_fadvise", path, e.into()))?;
        use std::io::Seek;
        f.rewind().map_err(|e| ERR.io("seek", path, e))?;
        let t0 = Instant::now();
        loop {
            let n = f.read(&mut buf).map_err(|e| ERR.io("read", path, e))?;
            if n == 0 {
                break;
            }
            out.bytes += n as u64;
        }
        out.reading += t0.elapsed();
        out.passes += 1;
    }
    Ok(out)
}

/// Every file of `paths` read whole, in order, in [`CHUNK`] reads with one reused buffer (the
/// cold read of `aging`, and `image`'s reads of a mounted image); the bytes read. Polls
/// `interrupt` per file.
pub fn read_all(paths: &[PathBuf], interrupt: &AtomicBool) -> Result<u64, EngineError> {
    let mut buf = vec![0u8; CHUNK];
    let mut total = 0u64;
    for p in paths {
        if interrupt.load(Ordering::Relaxed) {
            return Err(EngineError::Interrupted);
        }
        let mut f = std::fs::File::open(p).map_err(|e| ERR.io("open", p, e))?;
        loop {
            let n = f.read(&mut buf).map_err(|e| ERR.io("read", p, e))?;
            if n == 0 {
                break;
            }
            total += n as u64;
        }
    }
    Ok(total)
}

/// `paths` in a random order fixed by `seed` (Fisher–Yates over SplitMix64).
pub fn shuffled(mut paths: Vec<PathBuf>, seed: u64) -> Vec<PathBuf> {
    let mut rng = Rng(seed ^ 0x57A7_2EAD);
    for i in (1..paths.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        paths.swap(i, j);
    }
    paths
}

/// `stat`, `open`, one read of at most [`HEAD`] bytes and `close` of every path, in order;
/// the number of files.
pub fn statread(paths: &[PathBuf], interrupt: &AtomicBool) -> Result<u64, EngineError> {
    let mut buf = [0u8; HEAD];
    for (i, p) in paths.iter().enumerate() {
        if i % 64 == 0 && interrupt.load(Ordering::Relaxed) {
            return Err(EngineError::Interrupted);
        }
        let md = std::fs::symlink_metadata(p).map_err(|e| ERR.io("stat", p, e))?;
        if md.len() > 0 {
            let mut f = std::fs::File::open(p).map_err(|e| ERR.io("open", p, e))?;
            f.read(&mut buf).map_err(|e| ERR.io("read", p, e))?;
        }
    }
    Ok(paths.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_measured_loops_read_what_the_tree_holds() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let top = tmp.path();
        std::fs::create_dir(top.join("d0")).expect("dir");
        std::fs::write(top.join("d0/a"), b"one\ntwo\n").expect("a");
        std::fs::write(top.join("b"), vec![7u8; 3 << 20]).expect("b");
        let flag = AtomicBool::new(false);
        let g = grep(top, &flag).expect("grep");
        assert_eq!((g.bytes, g.newlines), (8 + (3 << 20), 2));
        let s = seqread(&top.join("b"), &flag).expect("seqread");
        assert!(s.passes >= SEQ_MIN_PASSES && s.passes <= SEQ_MAX_PASSES);
        assert_eq!(s.bytes, u64::from(s.passes) * (3 << 20));
        let paths: Vec<PathBuf> = (0..50).map(|i| top.join(format!("p{i}"))).collect();
        let order = shuffled(paths.clone(), 30);
        assert_eq!(order, shuffled(paths.clone(), 30), "same seed, same order");
        assert_ne!(order, paths, "shuffled");
        let mut sorted = order.clone();
        sorted.sort();
        let mut want = paths.clone();
        want.sort();
        assert_eq!(sorted, want, "a permutation");
        let two = vec![top.join("d0/a"), top.join("b")];
        assert_eq!(statread(&two, &flag).expect("statread"), 2);
        assert!(statread(&[top.join("missing")], &flag).is_err());
        let tree = [
            LiveFile { id: 0, dir: 0, size: 5 },
            LiveFile { id: 1, dir: 0, size: 9 },
            LiveFile { id: 2, dir: 1, size: 9 },
        ];
        assert_eq!(largest(&tree).map(|f| f.id), Some(1));
        assert!(largest(&[]).is_none());
    }
}
