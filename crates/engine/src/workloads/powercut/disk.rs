//! The power-cut disk: a small FUSE server that serves one image file (`image`) whose loop
//! device backs the filesystem under test, and a control file (`ctl`).
//!
//! The loop driver turns every REQ_PREFLUSH/FUA of the filesystem into an fsync of its backing
//! file, so the server sees every write and every flush. With [`Model::Volatile`] it models a
//! disk with a volatile write cache: writes reach the base image at once, but before the first
//! overwrite of a 4 KiB block since the last completed flush the block's old contents are kept
//! in an undo map. A completed flush empties the map; writing `cut` to `ctl` writes every kept
//! block back (discarding every write since the last flush, exactly what such a disk loses) and
//! fails all further I/O with EIO until `reset` (sent after the filesystem is unmounted).
//! [`Model::BrokenFlush`] is the deliberately broken disk of the tests: after `arm` it
//! acknowledges flushes but keeps their writes in the undo map, so a cut drops writes the
//! filesystem was told are durable; [`Model::BrokenSuperblock`] is the other one: a cut also
//! zeroes the image's first MiB, so the filesystem cannot mount. [`Model::Tear`] is the volatile
//! cache whose cut also tears the last unflushed write (its first half, in whole sectors,
//! reaches the image). [`Model::Reorder`] keeps a seeded random subset of the writes since the
//! last flush (each whole write kept or dropped, applied in their order: what a disk that
//! reorders its cache and loses power part-way leaves); [`Model::TornSectors`] keeps a seeded
//! random subset of the 512-byte sectors of every write since the last flush (a disk whose
//! atomic unit is the sector, not the filesystem block). Both log every write's data since the
//! last flush; the cut restores the flushed contents, then applies the chosen writes or sectors
//! in order. The generator of cut `c` is seeded from the disk's `--seed` and `c`, so the same
//! seed replays the same choices. Any model can also fail with EIO every write that carries a
//! stamped unit of one file and generation (`eio-stamped FILE GENERATION` on `ctl`, `eio-off` to
//! end it; [`crate::workloads::durability::stamp::carries`]): a medium error at the writeback of
//! that data wherever the filesystem places it, in place or copy-on-write, for the fsync error
//! probe. [`Model::Passthrough`] keeps nothing (the instrument's own
//! cost, `bench/powerdisk_cost.sh`).
//!
//! Any model can also **record** (`crashprops`, [`crate::workloads::crashprops`]): `mark NAME`
//! on `ctl` copies the image as it is at that instant, under the lock that orders every write,
//! to the run-folder file NAME (holes kept: [`copy_sparse`]) and starts a write log in memory;
//! every write after it (offset and data) and every completed flush is appended, in the order
//! the server answered them; `dump NAME` writes the log to NAME ([`encode_log`], read back with
//! [`decode_log`]) and stops recording. `note N` (a number) appends a marker to the log between
//! the writes it was answered between: the position at which an application reported an
//! acknowledgement (a committed transaction, a returned `git commit`). The caller records both files as undo steps before it
//! sends the command.
//!
//! The server runs as its own process (`fsbench powerdisk`, started by [`DiskServer::start`]) so
//! that a SIGKILLed fsbench, whose threads may be blocked on I/O that the server must answer,
//! can still exit; it ends when its FUSE mount is unmounted. Its arguments are relative to the
//! run folder (its working directory) so `fsbench cleanup` never waits for it as for an
//! orphaned `losetup`. Given the run's undo log ([`UndoLog`]), the server
//! records itself the moment it is spawned, before its mount exists: a [`Kill`] (pid,
//! start time, its mount folder's name as the marker) and then an [`Unmount`] of its FUSE
//! mount, so cleanup (which undoes in reverse) unmounts the FUSE mount first, which ends the
//! server, and kills it only if it is still there; each record is removed only once its step
//! succeeded. Everything also lives in the run folder (`mnt-*` names), which cleanup's sweep
//! covers as a second line of defence.
//!
//! Reference: the kernel's drivers/block/loop.c (`lo_req_flush` → `vfs_fsync`), fs/fuse
//! (`FOPEN_DIRECT_IO` keeps the kernel from caching the image's pages, so a read after a cut
//! sees what the disk kept).

use crate::choice::Choice;
use crate::undo::{Kill, UndoLog, Unmount};
use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner, MountOption,
    OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request,
    WriteFlags,
};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant, UNIX_EPOCH};

/// The source name of the FUSE mount in /proc/mounts.
pub const FS_NAME: &str = "fsbench-powerdisk";
/// The served image's name inside the FUSE mount.
pub const IMAGE: &str = "image";
/// The control file's name inside the FUSE mount.
pub const CTL: &str = "ctl";
/// Granularity of the undo map, in bytes.
const BLOCK: u64 = 4096;

/// What the disk keeps across a cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Model {
    /// Keeps nothing: every write goes straight to the image; no cut.
    Passthrough,
    /// A volatile write cache: a cut discards every write since the last completed flush.
    Volatile,
    /// Broken on purpose: after `arm`, flushes are acknowledged but their writes are still
    /// discarded by a cut (the test that proves `acked_lost` can be non-zero).
    BrokenFlush,
    /// Broken on purpose: a cut also zeroes the first [`WIPE`] bytes of the image (where every
    /// supported filesystem keeps its primary superblock), so the filesystem cannot mount after
    /// it (the test that proves `recovery_failed` is a stored result).
    BrokenSuperblock,
    /// [`Model::Volatile`], and the last write since the last completed flush is torn: the cut
    /// keeps the first half of it (whole 512-byte sectors), what a disk losing power in the
    /// middle of a write leaves.
    Tear,
    /// A reordering cache: a cut keeps a seeded random subset (each with probability 1/2) of
    /// the whole writes since the last completed flush and discards the rest.
    Reorder,
    /// A cut keeps a seeded random subset (each with probability 1/2) of the 512-byte sectors
    /// of every write since the last completed flush: torn sectors.
    TornSectors,
}

/// Bytes of the sector a [`Model::TornSectors`] cut keeps or drops as a whole.
pub const SECTOR: usize = 512;

/// Bytes a cut of [`Model::BrokenSuperblock`] zeroes at the start of the image: 1 MiB, which
/// holds the primary superblock of ext2/3/4 (1 KiB), xfs (0) and btrfs (64 KiB).
pub const WIPE: u64 = 1 << 20;

impl Choice for Model {
    const CHOICES: &'static [(Self, &'static str, &'static str)] = &[
        (
            Model::Passthrough,
            "passthrough",
            "Keeps nothing: every write goes straight to the image; no cut",
        ),
        (
            Model::Volatile,
            "volatile",
            "A volatile write cache: a cut discards every write since the last completed flush",
        ),
        (
            Model::BrokenFlush,
            "broken-flush",
            "Broken on purpose: after `arm`, flushes are acknowledged but their writes are still discarded by a \
             cut (the test that proves `acked_lost` can be non-zero)",
        ),
        (
            Model::BrokenSuperblock,
            "broken-superblock",
            "Broken on purpose: a cut also zeroes the first [`WIPE`] bytes of the image (where every supported \
             filesystem keeps its primary superblock), so the filesystem cannot mount after it (the test that \
             proves `recovery_failed` is a stored result)",
        ),
        (
            Model::Tear,
            "tear",
            "[`Model::Volatile`], and the last write since the last completed flush is torn: the cut keeps the \
             first half of it (whole 512-byte sectors), what a disk losing power in the middle of a write leaves",
        ),
        (
            Model::Reorder,
            "reorder",
            "A reordering cache: a cut keeps a seeded random subset (each with probability 1/2) of the whole \
             writes since the last completed flush and discards the rest",
        ),
        (
            Model::TornSectors,
            "torn-sectors",
            "A cut keeps a seeded random subset (each with probability 1/2) of the 512-byte sectors of every \
             write since the last completed flush: torn sectors",
        ),
    ];
}

impl Model {
    /// The model's name as the results state it.
    pub fn describe(self) -> &'static str {
        match self {
            Model::Passthrough => "pass-through (no cache modelled)",
            Model::Volatile => "volatile write cache, discard since last flush",
            Model::BrokenFlush => "BROKEN: flushes acknowledged but discarded by the cut",
            Model::BrokenSuperblock => "BROKEN: the cut also zeroes the first MiB (superblock)",
            Model::Tear => {
                "volatile write cache, discard since last flush, the last unflushed write torn (first half kept)"
            }
            Model::Reorder => {
                "reordering write cache: a seeded random subset of the writes since the last flush persists"
            }
            Model::TornSectors => {
                "torn sectors: a seeded random subset of the 512-byte sectors written since the last flush persists"
            }
        }
    }

    /// The command-line value.
    pub fn as_arg(self) -> &'static str {
        self.name()
    }

    /// Whether a cut keeps a seeded subset of the writes since the last flush (the disk logs
    /// their data).
    pub fn is_seeded(self) -> bool {
        matches!(self, Model::Reorder | Model::TornSectors)
    }
}

/// The generator of cut number `cut` (0-based) of a disk started with `seed`.
pub fn cut_rng(seed: u64, cut: u64) -> rand::rngs::SmallRng {
    use rand::SeedableRng;
    rand::rngs::SmallRng::seed_from_u64(seed ^ cut.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Counters of the disk since it started, as `ctl` reports them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Write requests.
    pub writes: u64,
    /// Flushes (fsync of the image).
    pub flushes: u64,
    /// 4 KiB blocks written back to their flushed contents by cuts.
    pub discarded_blocks: u64,
    /// Cuts.
    pub cuts: u64,
    /// Writes (or, for [`Model::TornSectors`], sectors) since the last flush that the cuts kept.
    pub kept_units: u64,
    /// Writes (or sectors) since the last flush that the cuts dropped.
    pub dropped_units: u64,
    /// Writes refused with EIO because they carried the failing units (`eio-stamped`).
    pub eio_writes: u64,
}

/// The state the FUSE handlers share.
struct State {
    undo: HashMap<u64, Vec<u8>>,
    /// Offset and length of the last write since the last completed flush (what [`Model::Tear`]
    /// tears).
    last_write: Option<(u64, usize)>,
    /// Every write since the last completed flush, with its data (seeded models only).
    log: Vec<(u64, Vec<u8>)>,
    /// The file and generation whose stamped units no write may carry (`eio-stamped`).
    eio: Option<(u32, u32)>,
    /// The write log since `mark`, while recording (module doc).
    rec: Option<Vec<LogEntry>>,
    failed: bool,
    armed: bool,
    stats: Stats,
}

/// The FUSE filesystem: a root directory with `image` and `ctl`.
struct PowerDisk {
    base: File,
    size: u64,
    model: Model,
    /// Seed of the cuts' choices (seeded models).
    seed: u64,
    st: Mutex<State>,
}

const ROOT: u64 = 1;
const INO_IMAGE: u64 = 2;
const INO_CTL: u64 = 3;
const TTL: Duration = Duration::from_secs(3600);

impl PowerDisk {
    /// A disk over `base` of `size` bytes, disarmed, with nothing written yet.
    fn new(base: File, size: u64, model: Model, seed: u64) -> PowerDisk {
        PowerDisk {
            base,
            size,
            model,
            seed,
            st: Mutex::new(State {
                undo: HashMap::new(),
                last_write: None,
                log: Vec::new(),
                eio: None,
                rec: None,
                failed: false,
                armed: false,
                stats: Stats::default(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn attr(&self, ino: u64) -> Option<FileAttr> {
        let (kind, size, perm, nlink) = match ino {
            ROOT => (FileType::Directory, 0, 0o700, 2),
            INO_IMAGE => (FileType::RegularFile, self.size, 0o600, 1),
            INO_CTL => (FileType::RegularFile, BLOCK, 0o600, 1),
            _ => return None,
        };
        Some(FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind,
            perm,
            nlink,
            uid: rustix::process::getuid().as_raw(),
            gid: rustix::process::getgid().as_raw(),
            rdev: 0,
            flags: 0,
            blksize: BLOCK as u32,
        })
    }

    /// Whether writes since the last flush are kept for a cut to discard.
    fn keeps_undo(&self) -> bool {
        self.model != Model::Passthrough
    }

    fn write_image(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        let mut st = self.lock();
        if st.failed {
            return Err(std::io::Error::from_raw_os_error(libc::EIO));
        }
        if let Some((file, generation)) = st.eio {
            if crate::workloads::durability::stamp::carries(data, offset, file, generation) {
                st.stats.eio_writes += 1;
                return Err(std::io::Error::from_raw_os_error(libc::EIO));
            }
        }
        st.stats.writes += 1;
        if let Some(rec) = st.rec.as_mut() {
            rec.push(LogEntry::Write {
                offset,
                data: data.to_vec(),
            });
        }
        if self.keeps_undo() && !data.is_empty() {
            let first = offset / BLOCK;
            let last = (offset + data.len() as u64 - 1) / BLOCK;
            for b in first..=last {
                if let std::collections::hash_map::Entry::Vacant(e) = st.undo.entry(b) {
                    let mut old = vec![0u8; BLOCK as usize];
                    let n = read_at_most(&self.base, &mut old, b * BLOCK)?;
                    old.truncate(n);
                    e.insert(old);
                }
            }
            st.last_write = Some((offset, data.len()));
            if self.model.is_seeded() {
                st.log.push((offset, data.to_vec()));
            }
        }
        self.base.write_all_at(data, offset)
    }

    fn flush_image(&self) -> std::io::Result<()> {
        let mut st = self.lock();
        if st.failed {
            return Err(std::io::Error::from_raw_os_error(libc::EIO));
        }
        self.base.sync_data()?;
        st.stats.flushes += 1;
        if let Some(rec) = st.rec.as_mut() {
            rec.push(LogEntry::Flush);
        }
        if !(self.model == Model::BrokenFlush && st.armed) {
            st.undo.clear();
            st.last_write = None;
            st.log.clear();
        }
        Ok(())
    }

    fn control(&self, text: &str) -> std::io::Result<()> {
        let mut st = self.lock();
        match text.trim() {
            "cut" if self.model == Model::Passthrough => Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
            "cut" => {
                // The torn half of the last unflushed write, read before the discard below.
                let mut torn = None;
                if let (Model::Tear, Some((offset, len))) = (self.model, st.last_write.take()) {
                    let mut half = vec![0u8; len / 2 / 512 * 512];
                    let n = read_at_most(&self.base, &mut half, offset)?;
                    half.truncate(n);
                    torn = Some((offset, half));
                }
                for (b, old) in st.undo.drain().collect::<Vec<_>>() {
                    self.base.write_all_at(&old, b * BLOCK)?;
                    st.stats.discarded_blocks += 1;
                }
                if let Some((offset, half)) = torn {
                    self.base.write_all_at(&half, offset)?;
                }
                let log = std::mem::take(&mut st.log);
                if self.model.is_seeded() {
                    let (kept, dropped) = self.replay_subset(&log, st.stats.cuts)?;
                    st.stats.kept_units += kept;
                    st.stats.dropped_units += dropped;
                }
                if self.model == Model::BrokenSuperblock {
                    self.base.write_all_at(&vec![0u8; WIPE.min(self.size) as usize], 0)?;
                }
                self.base.sync_data()?;
                st.failed = true;
                st.armed = false;
                st.stats.cuts += 1;
                Ok(())
            }
            "reset" => {
                st.failed = false;
                Ok(())
            }
            "arm" => {
                st.armed = true;
                Ok(())
            }
            "eio-off" => {
                st.eio = None;
                Ok(())
            }
            cmd if cmd.starts_with("mark ") => {
                copy_sparse(&self.base, Path::new(cmd["mark ".len()..].trim()))?;
                st.rec = Some(Vec::new());
                Ok(())
            }
            cmd if cmd.starts_with("note ") => {
                let id = cmd["note ".len()..]
                    .trim()
                    .parse::<u32>()
                    .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
                let rec = st
                    .rec
                    .as_mut()
                    .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL))?;
                rec.push(LogEntry::Note(id));
                Ok(())
            }
            cmd if cmd.starts_with("dump ") => {
                let log = st
                    .rec
                    .take()
                    .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL))?;
                std::fs::write(cmd["dump ".len()..].trim(), encode_log(&log))
            }
            cmd if cmd.starts_with("eio-stamped ") => {
                let mut f = cmd["eio-stamped ".len()..].split_whitespace().map(str::parse::<u32>);
                match (f.next(), f.next(), f.next()) {
                    (Some(Ok(file)), Some(Ok(generation)), None) => {
                        st.eio = Some((file, generation));
                        Ok(())
                    }
                    _ => Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
                }
            }
            _ => Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
        }
    }

    /// Applies, in order, the seeded subset of `log` (the writes since the last flush, whose
    /// blocks were just restored) that cut number `cut` keeps; (kept, dropped) writes or sectors.
    fn replay_subset(&self, log: &[(u64, Vec<u8>)], cut: u64) -> std::io::Result<(u64, u64)> {
        use rand::Rng;
        let mut rng = cut_rng(self.seed, cut);
        let (mut kept, mut dropped) = (0, 0);
        for (offset, data) in log {
            match self.model {
                Model::Reorder => {
                    if rng.gen_bool(0.5) {
                        self.base.write_all_at(data, *offset)?;
                        kept += 1;
                    } else {
                        dropped += 1;
                    }
                }
                _ => {
                    for (i, sector) in data.chunks(SECTOR).enumerate() {
                        if rng.gen_bool(0.5) {
                            self.base.write_all_at(sector, offset + (i * SECTOR) as u64)?;
                            kept += 1;
                        } else {
                            dropped += 1;
                        }
                    }
                }
            }
        }
        Ok((kept, dropped))
    }

    fn stats_text(&self) -> String {
        let st = self.lock();
        format!(
            "writes {}\nflushes {}\ndiscarded_blocks {}\ncuts {}\nkept_units {}\ndropped_units {}\neio_writes {}\nseed {}\nfailed {}\n",
            st.stats.writes,
            st.stats.flushes,
            st.stats.discarded_blocks,
            st.stats.cuts,
            st.stats.kept_units,
            st.stats.dropped_units,
            st.stats.eio_writes,
            self.seed,
            st.failed as u8
        )
    }
}

/// One entry of the write log of a recording disk (module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogEntry {
    /// A write of `data` at byte `offset` of the image.
    Write {
        /// Byte offset in the image.
        offset: u64,
        /// The bytes written.
        data: Vec<u8>,
    },
    /// A completed flush (an fsync of the image: the loop device's PREFLUSH or FUA).
    Flush,
    /// A marker sent on `ctl` (`note N`): an application's acknowledgement number `N`.
    Note(u32),
}

/// The log as bytes: per entry a tag byte (`W` or `F`), and for a write its offset (u64) and
/// length (u32), little-endian, then the data; for a note (`N`) its number (u32).
pub fn encode_log(log: &[LogEntry]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in log {
        match e {
            LogEntry::Write { offset, data } => {
                out.push(b'W');
                out.extend_from_slice(&offset.to_le_bytes());
                out.extend_from_slice(&(data.len() as u32).to_le_bytes());
                out.extend_from_slice(data);
            }
            LogEntry::Flush => out.push(b'F'),
            LogEntry::Note(id) => {
                out.push(b'N');
                out.extend_from_slice(&id.to_le_bytes());
            }
        }
    }
    out
}

/// Reads back what [`encode_log`] wrote; `None` when the bytes are not such a log (cut short or
/// an unknown tag).
pub fn decode_log(mut b: &[u8]) -> Option<Vec<LogEntry>> {
    let mut log = Vec::new();
    while let Some((&tag, rest)) = b.split_first() {
        b = rest;
        match tag {
            b'F' => log.push(LogEntry::Flush),
            b'N' if b.len() >= 4 => {
                log.push(LogEntry::Note(u32::from_le_bytes(b[..4].try_into().ok()?)));
                b = &b[4..];
            }
            b'W' if b.len() >= 12 => {
                let offset = u64::from_le_bytes(b[..8].try_into().ok()?);
                let len = u32::from_le_bytes(b[8..12].try_into().ok()?) as usize;
                let data = b.get(12..12 + len)?.to_vec();
                b = &b[12 + len..];
                log.push(LogEntry::Write { offset, data });
            }
            _ => return None,
        }
    }
    Some(log)
}

/// Copies `src` to a new file `dst` of the same length, leaving holes where `src` has holes or
/// whole 64 KiB chunks of zeros (a fresh filesystem's image is mostly holes, so a copy is fast
/// and small).
pub fn copy_sparse(src: &File, dst: &Path) -> std::io::Result<()> {
    use rustix::fs::SeekFrom;
    const CHUNK: usize = 64 << 10;
    let len = src.metadata()?.len();
    let out = File::create(dst)?;
    out.set_len(len)?;
    let mut buf = vec![0u8; CHUNK];
    let mut pos = 0u64;
    while pos < len {
        let data = match rustix::fs::seek(src, SeekFrom::Data(pos as i64)) {
            Ok(d) => d,
            Err(rustix::io::Errno::NXIO) => break,
            Err(e) => return Err(e.into()),
        };
        let hole = rustix::fs::seek(src, SeekFrom::Hole(data as i64)).map_err(std::io::Error::from)?;
        let mut at = data;
        while at < hole {
            let n = ((hole - at) as usize).min(CHUNK);
            let got = read_at_most(src, &mut buf[..n], at)?;
            if got == 0 {
                break;
            }
            if buf[..got].iter().any(|b| *b != 0) {
                out.write_all_at(&buf[..got], at)?;
            }
            at += got as u64;
        }
        pos = hole;
    }
    Ok(())
}

/// Reads up to `buf.len()` bytes at `offset`, fewer only at the end of the file.
pub(crate) fn read_at_most(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match f.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

fn errno(e: &std::io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

impl Filesystem for PowerDisk {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let ino = match (u64::from(parent), name.to_str()) {
            (ROOT, Some(IMAGE)) => INO_IMAGE,
            (ROOT, Some(CTL)) => INO_CTL,
            _ => return reply.error(Errno::ENOENT),
        };
        match self.attr(ino) {
            Some(a) => reply.entry(&TTL, &a, Generation(0)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(u64::from(ino)) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    /// Size and mode changes are ignored (the image has the size of its base; `ctl` is a
    /// channel): answering with the attributes lets `open(O_TRUNC)` of `ctl` succeed.
    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        _size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<std::time::SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<std::time::SystemTime>,
        _chgtime: Option<std::time::SystemTime>,
        _bkuptime: Option<std::time::SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        match self.attr(u64::from(ino)) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match u64::from(ino) {
            // No page cache for either file: after a cut, reads must see what the disk kept.
            INO_IMAGE | INO_CTL => reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO),
            _ => reply.error(Errno::EISDIR),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match u64::from(ino) {
            INO_IMAGE => {
                if self.lock().failed {
                    return reply.error(Errno::EIO);
                }
                let len = (size as u64).min(self.size.saturating_sub(offset)) as usize;
                let mut buf = vec![0u8; len];
                match read_at_most(&self.base, &mut buf, offset) {
                    Ok(n) => reply.data(&buf[..n]),
                    Err(e) => reply.error(errno(&e)),
                }
            }
            INO_CTL => {
                let text = self.stats_text();
                let b = text.as_bytes();
                let start = (offset as usize).min(b.len());
                let end = (start + size as usize).min(b.len());
                reply.data(&b[start..end]);
            }
            _ => reply.error(Errno::EISDIR),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _wf: WriteFlags,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let r = match u64::from(ino) {
            INO_IMAGE if offset + data.len() as u64 > self.size => Err(std::io::Error::from_raw_os_error(libc::ENOSPC)),
            INO_IMAGE => self.write_image(offset, data),
            INO_CTL => self.control(&String::from_utf8_lossy(data)),
            _ => Err(std::io::Error::from_raw_os_error(libc::EISDIR)),
        };
        match r {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock: LockOwner, reply: ReplyEmpty) {
        reply.ok();
    }

    fn fsync(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        if u64::from(ino) != INO_IMAGE {
            return reply.ok();
        }
        match self.flush_image() {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        if u64::from(ino) != ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = [
            (ROOT, FileType::Directory, "."),
            (ROOT, FileType::Directory, ".."),
            (INO_IMAGE, FileType::RegularFile, IMAGE),
            (INO_CTL, FileType::RegularFile, CTL),
        ];
        for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(ino), (i + 1) as u64, kind, name) {
                break;
            }
        }
        reply.ok();
    }
}

/// Serves `base` (an image file or block device, opened read-write) as `MOUNTPOINT/image` until
/// the mount is unmounted: the body of `fsbench powerdisk`.
/// `seed` seeds the choices of the seeded models' cuts ([`cut_rng`]).
pub fn serve(base: &Path, mountpoint: &Path, model: Model, seed: u64) -> std::io::Result<()> {
    let file = std::fs::OpenOptions::new().read(true).write(true).open(base)?;
    let size = {
        use std::io::Seek;
        (&file).seek(std::io::SeekFrom::End(0))?
    };
    let fs = PowerDisk::new(file, size, model, seed);
    let mut cfg = Config::default();
    cfg.mount_options = vec![
        MountOption::FSName(FS_NAME.into()),
        MountOption::Subtype("powerdisk".into()),
    ];
    cfg.n_threads = Some(1);
    fuser::mount(fs, mountpoint, &cfg)
}

/// Why the power-cut disk could not be used.
#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    /// Starting, talking to or stopping the server failed.
    #[error("power-cut disk: {what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The server did not come up.
    #[error("power-cut disk: the server did not mount {mountpoint}: {why}")]
    Start {
        /// Where it should have mounted.
        mountpoint: PathBuf,
        /// Its stderr or the timeout.
        why: String,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> DiskError {
    let what = what.into();
    move |source| DiskError::Io { what, source }
}

/// A running power-cut disk server: its process and FUSE mount. [`DiskServer::stop`] (or drop)
/// unmounts the FUSE mount and waits for the process; the loop device over `image` must be
/// detached first.
pub struct DiskServer {
    child: Option<Child>,
    mountpoint: PathBuf,
    model: Model,
    /// The run's state and the two records of this server (kill, FUSE unmount), when recorded.
    records: Option<(Arc<dyn UndoLog>, Kill, Unmount)>,
}

impl DiskServer {
    /// Starts `fsbench powerdisk` serving `run_dir/base_name` on a new folder
    /// `run_dir/mount_name`, and waits (up to 10 s) until the mount is there; `seed` seeds the
    /// seeded models' cuts. With `state`, the process and its mount are recorded as undo steps
    /// as soon as it is spawned (module doc).
    pub fn start(
        run_dir: &Path,
        base_name: &str,
        mount_name: &str,
        model: Model,
        seed: u64,
        state: Option<&dyn UndoLog>,
    ) -> Result<Self, DiskError> {
        let mountpoint = run_dir.join(mount_name);
        std::fs::create_dir(&mountpoint).map_err(io(format!("create {}", mountpoint.display())))?;
        // The running binary itself, even if its file was replaced since it started (a rebuild).
        let child = Command::new("/proc/self/exe")
            .args([
                "powerdisk",
                "--base",
                base_name,
                "--mount",
                mount_name,
                "--model",
                model.as_arg(),
                "--seed",
                &seed.to_string(),
            ])
            .current_dir(run_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let child = match child {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_dir(&mountpoint);
                return Err(io("start fsbench powerdisk")(e));
            }
        };
        let records = state.map(|st| {
            let pid = child.id();
            let kill = Kill {
                pid,
                start_time: crate::host::process_start_time(pid).unwrap_or(0),
                marker: PathBuf::from(mount_name),
            };
            let unmount = Unmount {
                mountpoint: mountpoint.clone(),
                source: FS_NAME.into(),
            };
            st.push(&kill);
            st.push(&unmount);
            (st.share(), kill, unmount)
        });
        let mut s = DiskServer {
            child: Some(child),
            mountpoint,
            model,
            records,
        };
        let t0 = Instant::now();
        loop {
            if crate::host::mount_entry(&s.mountpoint).is_some_and(|(src, _, _)| src == FS_NAME) {
                return Ok(s);
            }
            let exited = s.child.as_mut().and_then(|c| c.try_wait().ok().flatten());
            if exited.is_some() || t0.elapsed() > Duration::from_secs(10) {
                let mut why = String::new();
                if let Some(mut c) = s.child.take() {
                    let _ = c.kill();
                    let _ = c.wait();
                    if let Some(mut e) = c.stderr.take() {
                        use std::io::Read;
                        let _ = e.read_to_string(&mut why);
                    }
                }
                let _ = std::fs::remove_dir(&s.mountpoint);
                if let Some((st, kill, unmount)) = s.records.take() {
                    if !crate::host::is_mounted(&s.mountpoint, Some(FS_NAME)) {
                        st.pop(&unmount);
                        st.pop(&kill);
                    }
                }
                return Err(DiskError::Start {
                    mountpoint: s.mountpoint.clone(),
                    why: if why.trim().is_empty() {
                        "no mount after 10 s".into()
                    } else {
                        why.trim().to_string()
                    },
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The served image, for `losetup`.
    pub fn image(&self) -> PathBuf {
        self.mountpoint.join(IMAGE)
    }

    /// The FUSE mountpoint.
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// The disk's model.
    pub fn model(&self) -> Model {
        self.model
    }

    fn send(&self, cmd: &str) -> Result<(), DiskError> {
        std::fs::write(self.mountpoint.join(CTL), cmd).map_err(io(format!("send `{cmd}`")))
    }

    /// Cuts the power: discards every write since the last completed flush and fails all I/O.
    pub fn cut(&self) -> Result<(), DiskError> {
        self.send("cut")
    }

    /// Powers the disk back on after a cut (I/O works again).
    pub fn reset(&self) -> Result<(), DiskError> {
        self.send("reset")
    }

    /// Copies the image as it is now to `run_dir/name` and starts the write log (module doc);
    /// the caller records the file as an undo step first.
    pub fn mark(&self, name: &str) -> Result<(), DiskError> {
        self.send(&format!("mark {name}"))
    }

    /// Writes the log since [`DiskServer::mark`] to `run_dir/name` and stops recording.
    pub fn dump(&self, name: &str) -> Result<(), DiskError> {
        self.send(&format!("dump {name}"))
    }

    /// Appends acknowledgement `id` to the write log (module doc; only while recording).
    pub fn note(&self, id: u32) -> Result<(), DiskError> {
        self.send(&format!("note {id}"))
    }

    /// From now on the broken model acknowledges flushes without keeping their writes.
    pub fn arm(&self) -> Result<(), DiskError> {
        self.send("arm")
    }

    /// From now on every write that carries a stamped unit of `file` at `generation` fails with
    /// EIO, wherever on the image it goes (reads and other writes go on; module doc).
    pub fn fail_stamped(&self, file: u32, generation: u32) -> Result<(), DiskError> {
        self.send(&format!("eio-stamped {file} {generation}"))
    }

    /// Ends [`DiskServer::fail_stamped`].
    pub fn heal(&self) -> Result<(), DiskError> {
        self.send("eio-off")
    }

    /// The disk's counters.
    pub fn stats(&self) -> Result<Stats, DiskError> {
        let text = std::fs::read_to_string(self.mountpoint.join(CTL)).map_err(io("read ctl"))?;
        let mut s = Stats::default();
        for l in text.lines() {
            let mut f = l.split_whitespace();
            let (Some(k), Some(v)) = (f.next(), f.next().and_then(|v| v.parse().ok())) else {
                continue;
            };
            match k {
                "writes" => s.writes = v,
                "flushes" => s.flushes = v,
                "discarded_blocks" => s.discarded_blocks = v,
                "cuts" => s.cuts = v,
                "kept_units" => s.kept_units = v,
                "dropped_units" => s.dropped_units = v,
                "eio_writes" => s.eio_writes = v,
                _ => {}
            }
        }
        Ok(s)
    }

    /// Unmounts the FUSE mount (the loop device over it must be detached already), waits for the
    /// server to end and removes the mountpoint folder.
    pub fn stop(mut self) -> Result<(), DiskError> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Result<(), DiskError> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let r = crate::host::unmount(&self.mountpoint)
            .map_err(|e| io(format!("unmount {}", self.mountpoint.display()))(std::io::Error::other(e.to_string())));
        let t0 = Instant::now();
        let mut ended = true;
        while child.try_wait().ok().flatten().is_none() {
            if t0.elapsed() > Duration::from_secs(5) {
                let _ = child.kill();
                ended = child.wait().is_ok();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // A record goes only once its step is done: a failure leaves it for `fsbench cleanup`
        // (and keeps the runner from removing the state file).
        if let Some((st, kill, unmount)) = &self.records {
            if r.is_ok() {
                st.pop(unmount);
            }
            if ended {
                st.pop(kill);
            }
        }
        let _ = std::fs::remove_dir(&self.mountpoint);
        r
    }
}

impl Drop for DiskServer {
    fn drop(&mut self) {
        if let Err(e) = self.stop_inner() {
            eprintln!("fsbench: {e}; run `fsbench cleanup`");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(model: Model, bytes: usize) -> (tempfile::NamedTempFile, PowerDisk) {
        let f = tempfile::NamedTempFile::new().unwrap();
        f.as_file().write_all_at(&vec![0xAAu8; bytes], 0).unwrap();
        let base = File::options().read(true).write(true).open(f.path()).unwrap();
        let d = PowerDisk::new(base, bytes as u64, model, 42);
        (f, d)
    }

    fn content(d: &PowerDisk) -> Vec<u8> {
        let mut b = vec![0u8; d.size as usize];
        read_at_most(&d.base, &mut b, 0).unwrap();
        b
    }

    #[test]
    fn a_cut_discards_exactly_the_writes_since_the_last_flush_and_fails_io_until_reset() {
        let (_f, d) = disk(Model::Volatile, 4 * BLOCK as usize);
        d.write_image(100, &[1u8; 10]).unwrap();
        d.flush_image().unwrap();
        // Unaligned, spanning two blocks, and one block written twice.
        d.write_image(BLOCK - 5, &[2u8; 10]).unwrap();
        d.write_image(3 * BLOCK, &[3u8; 4]).unwrap();
        d.write_image(3 * BLOCK + 1, &[4u8; 4]).unwrap();
        d.control("cut").unwrap();
        let c = content(&d);
        let mut want = vec![0xAAu8; 4 * BLOCK as usize];
        want[100..110].fill(1);
        assert_eq!(c, want, "only the flushed write survives");
        assert!(d.write_image(0, &[9]).is_err() && d.flush_image().is_err());
        d.control("reset").unwrap();
        d.write_image(0, &[9]).unwrap();
        assert_eq!(d.lock().stats.discarded_blocks, 3);
    }

    #[test]
    fn the_broken_model_drops_acknowledged_flushes_after_arm_and_passthrough_refuses_a_cut() {
        let (_f, d) = disk(Model::BrokenFlush, 2 * BLOCK as usize);
        d.write_image(0, &[1u8; 8]).unwrap();
        d.flush_image().unwrap();
        d.control("arm").unwrap();
        d.write_image(BLOCK, &[2u8; 8]).unwrap();
        d.flush_image().unwrap(); // acknowledged, yet not kept
        d.control("cut").unwrap();
        let c = content(&d);
        assert_eq!(&c[..8], &[1u8; 8]);
        assert_eq!(&c[BLOCK as usize..BLOCK as usize + 8], &[0xAAu8; 8]);
        let (_g, p) = disk(Model::Passthrough, BLOCK as usize);
        p.write_image(0, &[5u8; 4]).unwrap();
        assert!(p.control("cut").is_err());
        assert!(p.lock().undo.is_empty(), "pass-through keeps nothing");
    }

    #[test]
    fn the_broken_superblock_model_zeroes_the_first_mib_on_a_cut_only() {
        let size = (WIPE + 2 * BLOCK) as usize;
        let (_f, d) = disk(Model::BrokenSuperblock, size);
        d.write_image(0, &[3u8; 8]).unwrap();
        d.flush_image().unwrap();
        assert_eq!(&content(&d)[..8], &[3u8; 8], "no wipe before the cut");
        d.control("cut").unwrap();
        let c = content(&d);
        assert!(c[..WIPE as usize].iter().all(|b| *b == 0), "the first MiB is zeroed");
        assert!(c[WIPE as usize..].iter().all(|b| *b == 0xAA), "nothing past it");
    }

    #[test]
    fn the_tear_model_keeps_the_first_half_of_the_last_unflushed_write_only() {
        let (_f, d) = disk(Model::Tear, 4 * BLOCK as usize);
        d.write_image(0, &[1u8; 4096]).unwrap();
        d.flush_image().unwrap();
        d.write_image(BLOCK, &[2u8; 4096]).unwrap(); // unflushed: discarded
        d.write_image(2 * BLOCK, &[3u8; 4096]).unwrap(); // the last one: torn
        d.control("cut").unwrap();
        let c = content(&d);
        let b = BLOCK as usize;
        assert!(c[..b].iter().all(|x| *x == 1), "flushed data kept");
        assert!(c[b..2 * b].iter().all(|x| *x == 0xAA), "unflushed write discarded");
        assert!(
            c[2 * b..2 * b + b / 2].iter().all(|x| *x == 3),
            "first half of the torn write"
        );
        assert!(c[2 * b + b / 2..].iter().all(|x| *x == 0xAA), "its second half lost");
        // After a flush there is nothing to tear.
        let (_g, e) = disk(Model::Tear, BLOCK as usize);
        e.write_image(0, &[4u8; 4096]).unwrap();
        e.flush_image().unwrap();
        e.control("cut").unwrap();
        assert!(content(&e).iter().all(|x| *x == 4));
    }

    /// Cuts a fresh `model` disk (seed 42) of 8 blocks of 0xAA after one flushed write and
    /// eight unflushed 4 KiB writes of 1..=8; its contents and counters.
    fn cut_after_eight(model: Model) -> (Vec<u8>, Stats) {
        let (_f, d) = disk(model, 8 * BLOCK as usize);
        d.write_image(0, &[9u8; 4096]).unwrap();
        d.flush_image().unwrap();
        for i in 0..8u64 {
            d.write_image(i * BLOCK, &[i as u8 + 1; 4096]).unwrap();
        }
        d.control("cut").unwrap();
        let st = d.lock().stats;
        (content(&d), st)
    }

    #[test]
    fn the_reorder_model_keeps_a_seeded_subset_of_whole_writes_and_replays_it() {
        let (c, st) = cut_after_eight(Model::Reorder);
        let b = BLOCK as usize;
        let mut kept = 0;
        for i in 0..8 {
            let blk = &c[i * b..(i + 1) * b];
            let old = if i == 0 { 9u8 } else { 0xAA };
            let new = i as u8 + 1;
            assert!(
                blk.iter().all(|x| *x == new) || blk.iter().all(|x| *x == old),
                "block {i} is whole: old or new"
            );
            if blk.iter().all(|x| *x == new) {
                kept += 1;
            }
        }
        assert!(kept > 0 && kept < 8, "a strict subset kept: {kept}");
        assert_eq!((st.kept_units, st.dropped_units), (kept as u64, 8 - kept as u64));
        assert_eq!(
            cut_after_eight(Model::Reorder).0,
            c,
            "the same seed replays the same cut"
        );
    }

    #[test]
    fn the_torn_sectors_model_keeps_a_seeded_subset_of_sectors() {
        let (c, st) = cut_after_eight(Model::TornSectors);
        assert_eq!(st.kept_units + st.dropped_units, 8 * 8, "eight sectors per 4 KiB write");
        assert!(st.kept_units > 0 && st.dropped_units > 0, "{st:?}");
        let torn = c
            .chunks(BLOCK as usize)
            .filter(|blk| blk.chunks(SECTOR).any(|s| s[0] != blk[0]))
            .count();
        assert!(torn > 0, "some 4 KiB block mixes old and new sectors");
        for s in c.chunks(SECTOR) {
            assert!(s.iter().all(|x| *x == s[0]), "each sector whole");
        }
        assert_eq!(cut_after_eight(Model::TornSectors).0, c, "replayed");
    }

    #[test]
    fn a_recording_disk_snapshots_at_the_mark_and_logs_every_later_write_and_flush_in_order() {
        let (_f, d) = disk(Model::Passthrough, 4 * BLOCK as usize);
        d.write_image(0, &[1u8; 8]).unwrap(); // before the mark: in the snapshot, not the log
        let dir = tempfile::tempdir().unwrap();
        let (snap, log) = (dir.path().join("snap"), dir.path().join("log"));
        d.control(&format!("mark {}", snap.display())).unwrap();
        d.write_image(BLOCK, &[2u8; 16]).unwrap();
        d.flush_image().unwrap();
        d.control("note 9").unwrap();
        d.write_image(5, &[3u8; 3]).unwrap();
        d.control(&format!("dump {}", log.display())).unwrap();
        d.write_image(0, &[4u8; 1]).unwrap(); // after the dump: not logged
        let s = std::fs::read(&snap).unwrap();
        assert_eq!(s.len(), 4 * BLOCK as usize);
        assert_eq!(&s[..9], &[1, 1, 1, 1, 1, 1, 1, 1, 0xAA]);
        assert!(
            s[BLOCK as usize..].iter().all(|x| *x == 0xAA),
            "the later write is not in it"
        );
        let got = decode_log(&std::fs::read(&log).unwrap()).unwrap();
        let want = vec![
            LogEntry::Write {
                offset: BLOCK,
                data: vec![2u8; 16],
            },
            LogEntry::Flush,
            LogEntry::Note(9),
            LogEntry::Write {
                offset: 5,
                data: vec![3u8; 3],
            },
        ];
        assert_eq!(got, want);
        assert!(d.control(&format!("dump {}", log.display())).is_err(), "not recording");
        assert!(d.control("note 1").is_err(), "a note needs a recording");
        assert_eq!(decode_log(&encode_log(&want)[..20]), None, "a log cut short is refused");
    }

    #[test]
    fn a_sparse_copy_keeps_the_bytes_and_leaves_zeros_as_holes() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        let f = File::create(&src).unwrap();
        f.set_len(8 << 20).unwrap();
        f.write_all_at(&[7u8; 100], 3 << 20).unwrap();
        let dst = dir.path().join("dst");
        copy_sparse(&File::open(&src).unwrap(), &dst).unwrap();
        assert_eq!(std::fs::read(&dst).unwrap(), std::fs::read(&src).unwrap());
        use std::os::unix::fs::MetadataExt;
        assert!(std::fs::metadata(&dst).unwrap().blocks() * 512 < 1 << 20, "holes kept");
    }

    #[test]
    fn writes_carrying_the_failing_units_get_eio_wherever_they_go_and_change_nothing() {
        use crate::workloads::durability::stamp::fill;
        let (_f, d) = disk(Model::Volatile, 8 * BLOCK as usize);
        let unit = |file, generation| {
            let mut u = vec![0u8; BLOCK as usize];
            fill(&mut u, file, 0, generation);
            u
        };
        d.control("eio-stamped 7 2").unwrap();
        // The new generation fails at its old place and at a new one (copy-on-write), alone or
        // inside a larger write.
        for (at, data) in [(BLOCK, unit(7, 2)), (5 * BLOCK, [unit(9, 1), unit(7, 2)].concat())] {
            assert_eq!(d.write_image(at, &data).unwrap_err().raw_os_error(), Some(libc::EIO));
        }
        assert!(content(&d).iter().all(|x| *x == 0xAA), "nothing written");
        // The old generation, another file's units and other data go on.
        d.write_image(BLOCK, &unit(7, 1)).unwrap();
        d.write_image(2 * BLOCK, &unit(8, 2)).unwrap();
        d.write_image(0, &[3u8; 100]).unwrap();
        d.control("eio-off").unwrap();
        d.write_image(3 * BLOCK, &unit(7, 2)).unwrap();
        assert_eq!(content(&d)[3 * BLOCK as usize..4 * BLOCK as usize], unit(7, 2)[..]);
        assert_eq!(d.lock().stats.eio_writes, 2);
        assert!(d.control("eio-stamped 1").is_err() && d.control("eio-stamped 1 x").is_err());
    }
}
