//! The table of primitives: each a small, named syscall sequence with the durability promise it
//! is documented to make, how its files are prepared before the cut (untimed, made durable by
//! `syncfs`), the sequence itself, and what the check after the cut expects of every stamped
//! unit ([`FileCheck`]). One row per primitive in [`TABLE`]; the rows are run in table order,
//! one after the other, and the power is cut right after the last (the negative control).
//!
//! Two rows are controls ([`Control`]), run last in every cut, after every sequence that sends a
//! flush: the negative control `nosync-control` (written, never synced nor written back: only the
//! page cache holds it at the cut) and the flush control `noflush-control` (written back to the
//! disk with `sync_file_range`, never flushed). A cut whose negative control lost nothing showed
//! no loss at all, so its other zeros prove nothing; the flush control tells a cut that drops
//! the disk's unflushed writes from one that keeps what reached the disk (the shutdown ioctl),
//! which cannot expose a missing flush.
//!
//! Generations: a prepared file holds generation 1; the primitive writes generation 2 (a created
//! file is generation 1: it has no older version). A unit that reads back as generation 1 where
//! 2 was acknowledged is *reverted*.

use super::stamp::{self, BlockState};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

/// What a primitive promises after its sequence returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Promise {
    /// Every acknowledged unit survives a power cut (lost, reverted and torn are violations).
    Durable,
    /// The file is the old or the new version, whole (a "neither" is a violation).
    Atomic,
    /// Nothing is promised by POSIX: measured, never a violation.
    Nothing,
    /// A control ([`Control`]): acknowledged without the sync the promises need, to show what
    /// the cut can see; never a violation.
    Control,
}

/// What a control row shows of a cut (both rows have [`Promise::Control`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Written with no sync and never written back: at the cut only the page cache holds it.
    /// A cut that drops nothing of it showed no loss at all: the cut's cells are unverified.
    PageCache,
    /// Written back to the disk (`sync_file_range`, no flush of its cache) and never flushed:
    /// lost by a cut that drops the disk's unflushed writes, kept by one that keeps what reached
    /// the disk. Where it is kept the cut cannot expose a missing flush (a durable primitive's
    /// zero there shows the data was written, not that it was flushed); it invalidates nothing.
    Flush,
}

impl Control {
    /// What the control must do, as the results state it.
    pub fn as_str(self) -> &'static str {
        match self {
            Control::PageCache => "negative control (must lose)",
            Control::Flush => "flush control (lost where the cut drops unflushed writes)",
        }
    }
}

impl Promise {
    /// The promise as the results state it.
    pub fn as_str(self) -> &'static str {
        match self {
            Promise::Durable => "durable",
            Promise::Atomic => "atomic (old or new)",
            Promise::Nothing => "none (POSIX)",
            Promise::Control => "control (shows what the cut can see)",
        }
    }
}

/// How an overwrite is made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sync {
    /// `write` then `fsync`.
    Fsync,
    /// `write` then `fdatasync`.
    Fdatasync,
    /// `write` to a file opened `O_SYNC`.
    OSync,
    /// `write` to a file opened `O_DSYNC`.
    ODsync,
    /// Stores into a shared `mmap` of the file, then `msync(MS_SYNC)`.
    Msync,
    /// `write` then `sync_file_range(WAIT_BEFORE | WRITE | WAIT_AFTER)`: the data is written
    /// back, with no metadata and no flush of the disk's cache.
    SyncFileRange,
    /// `write` and nothing else (the negative control).
    NoSync,
}

/// The sequence of a primitive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Overwrite the prepared file's units in place (generation 2).
    Overwrite(Sync),
    /// Append as many units again to the prepared file, `fsync`.
    AppendFsync,
    /// Truncate the prepared file (twice `units` long) to `units`, `fsync`.
    TruncateFsync,
    /// Create a new file, write, `fsync` it, and `fsync` its directory if `dir_fsync`.
    Create {
        /// Also fsync the directory.
        dir_fsync: bool,
    },
    /// `link` the prepared file to a second name, `fsync` the directory.
    HardLink,
    /// Write the new version to `NAME.tmp`, `fsync` it if `file_fsync`, rename it over the
    /// prepared file, `fsync` the directory if `dir_fsync`.
    Replace {
        /// fsync of the new file before the rename.
        file_fsync: bool,
        /// fsync of the directory after the rename.
        dir_fsync: bool,
    },
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct Primitive {
    /// Name (the report's phase).
    pub name: &'static str,
    /// The sequence, as a line of the results.
    pub sequence: &'static str,
    /// What it promises.
    pub promise: Promise,
    /// The operation.
    pub op: Op,
    /// Bytes of one stamped unit.
    pub unit: usize,
    /// Units per file.
    pub units: usize,
    /// Bytes per `write` call (a multiple of `unit`).
    pub write: usize,
}

const K4: usize = 4096;

const fn row(name: &'static str, sequence: &'static str, promise: Promise, op: Op) -> Primitive {
    Primitive {
        name,
        sequence,
        promise,
        op,
        unit: K4,
        units: 4,
        write: K4,
    }
}

/// The negative control's name ([`Control::PageCache`]).
pub const CONTROL: &str = "nosync-control";

/// The flush control's name ([`Control::Flush`]).
pub const FLUSH_CONTROL: &str = "noflush-control";

/// Every primitive, in run order; the controls are last (after every sequence that sends a
/// flush, which would make the flush control durable), the negative control right before the
/// cut.
pub const TABLE: &[Primitive] = &[
    row(
        "write-fsync",
        "pwrite 4 KiB x4; fsync",
        Promise::Durable,
        Op::Overwrite(Sync::Fsync),
    ),
    row(
        "write-fdatasync",
        "pwrite 4 KiB x4; fdatasync",
        Promise::Durable,
        Op::Overwrite(Sync::Fdatasync),
    ),
    row(
        "osync-write",
        "open O_SYNC; pwrite 4 KiB x4",
        Promise::Durable,
        Op::Overwrite(Sync::OSync),
    ),
    row(
        "odsync-write",
        "open O_DSYNC; pwrite 4 KiB x4",
        Promise::Durable,
        Op::Overwrite(Sync::ODsync),
    ),
    Primitive {
        unit: 1024,
        ..row(
            "write-fsync-1k",
            "pwrite 1 KiB x4 (inside one 4 KiB block); fsync",
            Promise::Durable,
            Op::Overwrite(Sync::Fsync),
        )
    },
    Primitive {
        units: 16,
        write: 64 * 1024,
        ..row(
            "write-fsync-64k",
            "one pwrite of 64 KiB; fsync",
            Promise::Durable,
            Op::Overwrite(Sync::Fsync),
        )
    },
    row(
        "mmap-msync",
        "mmap MAP_SHARED; store 4 KiB x4; msync MS_SYNC",
        Promise::Durable,
        Op::Overwrite(Sync::Msync),
    ),
    row(
        "append-fsync",
        "open O_APPEND; write 4 KiB x4; fsync",
        Promise::Durable,
        Op::AppendFsync,
    ),
    row(
        "truncate-fsync",
        "ftruncate to half; fsync",
        Promise::Durable,
        Op::TruncateFsync,
    ),
    row(
        "create-fsync-file-dir",
        "creat; write 4 KiB x4; fsync; fsync dir",
        Promise::Durable,
        Op::Create { dir_fsync: true },
    ),
    row(
        "create-fsync-file",
        "creat; write 4 KiB x4; fsync (no fsync of the dir)",
        Promise::Nothing,
        Op::Create { dir_fsync: false },
    ),
    row("hardlink-fsync-dir", "link; fsync dir", Promise::Durable, Op::HardLink),
    row(
        "rename-fsync-file-dir",
        "write tmp; fsync tmp; rename over; fsync dir",
        Promise::Durable,
        Op::Replace {
            file_fsync: true,
            dir_fsync: true,
        },
    ),
    row(
        "rename-fsync-file",
        "write tmp; fsync tmp; rename over (no fsync of the dir)",
        Promise::Atomic,
        Op::Replace {
            file_fsync: true,
            dir_fsync: false,
        },
    ),
    row(
        "rename-fsync-dir",
        "write tmp; rename over; fsync dir (no fsync of the file)",
        Promise::Nothing,
        Op::Replace {
            file_fsync: false,
            dir_fsync: true,
        },
    ),
    row(
        "rename-no-fsync",
        "write tmp; rename over (no fsync)",
        Promise::Nothing,
        Op::Replace {
            file_fsync: false,
            dir_fsync: false,
        },
    ),
    row(
        "sync-file-range",
        "pwrite 4 KiB x4; sync_file_range WAIT_BEFORE|WRITE|WAIT_AFTER",
        Promise::Nothing,
        Op::Overwrite(Sync::SyncFileRange),
    ),
    row(
        FLUSH_CONTROL,
        "pwrite 4 KiB x4; sync_file_range WAIT_BEFORE|WRITE|WAIT_AFTER (written back, never flushed)",
        Promise::Control,
        Op::Overwrite(Sync::SyncFileRange),
    ),
    row(
        CONTROL,
        "pwrite 4 KiB x4, acknowledged with no sync",
        Promise::Control,
        Op::Overwrite(Sync::NoSync),
    ),
];

/// The row named `name`.
pub fn by_name(name: &str) -> Option<&'static Primitive> {
    TABLE.iter().find(|p| p.name == name)
}

impl Primitive {
    /// Which control the row is, `None` for a primitive under test.
    pub fn control(&self) -> Option<Control> {
        match (self.promise, self.op) {
            (Promise::Control, Op::Overwrite(Sync::SyncFileRange)) => Some(Control::Flush),
            (Promise::Control, _) => Some(Control::PageCache),
            _ => None,
        }
    }

    /// What it promises, as the results state it (a control's own words).
    pub fn promise_str(&self) -> &'static str {
        self.control().map_or(self.promise.as_str(), Control::as_str)
    }
}

/// What the check expects of one file after the cut.
#[derive(Clone, Debug)]
pub struct FileCheck {
    /// Path relative to the cut's folder.
    pub rel: String,
    /// The stamp's file id.
    pub id: u32,
    /// Bytes per unit.
    pub unit: usize,
    /// The acknowledged generation of unit `i` (at byte `i * unit`).
    pub gens: Vec<u32>,
    /// For a truncation: the acknowledged length and the length before it, in bytes.
    pub truncated: Option<(u64, u64)>,
    /// Judged old (generation 1, whole) or new (all of `gens`) or neither.
    pub atomic: bool,
}

/// What the check found over the files of one primitive (summed over cuts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Acknowledged units (plus one per acknowledged truncation length).
    pub acked: u64,
    /// Intact.
    pub intact: u64,
    /// Lost.
    pub lost: u64,
    /// Reverted to an older generation.
    pub reverted: u64,
    /// Torn.
    pub torn: u64,
    /// Replaced files found whole in their old version.
    pub old: u64,
    /// Replaced files found whole in their new version.
    pub new: u64,
    /// Replaced files found in neither.
    pub neither: u64,
}

impl Counts {
    /// Adds `o`.
    pub fn add(&mut self, o: &Counts) {
        self.acked += o.acked;
        self.intact += o.intact;
        self.lost += o.lost;
        self.reverted += o.reverted;
        self.torn += o.torn;
        self.old += o.old;
        self.new += o.new;
        self.neither += o.neither;
    }

    /// Lost, reverted or torn units.
    pub fn damaged(&self) -> u64 {
        self.lost + self.reverted + self.torn
    }

    /// What breaks `promise`: damaged units of a durable primitive, files in neither version
    /// of an atomic one; 0 for the others.
    pub fn violations(&self, promise: Promise) -> u64 {
        match promise {
            Promise::Durable => self.damaged(),
            Promise::Atomic => self.neither,
            Promise::Nothing | Promise::Control => 0,
        }
    }

    fn count(&mut self, s: BlockState) {
        self.acked += 1;
        match s {
            BlockState::Intact => self.intact += 1,
            BlockState::Lost => self.lost += 1,
            BlockState::Reverted => self.reverted += 1,
            BlockState::Torn => self.torn += 1,
        }
    }
}

/// The stamped contents of `units` units of `unit` bytes from unit `first`, generation `g`.
pub(crate) fn stamped(id: u32, unit: usize, first: usize, units: usize, g: u32) -> Vec<u8> {
    let mut b = vec![0u8; unit * units];
    for (i, u) in b.chunks_mut(unit).enumerate() {
        stamp::fill(u, id, ((first + i) * unit) as u64, g);
    }
    b
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> std::io::Error {
    move |e| std::io::Error::new(e.kind(), format!("{what}: {e}"))
}

fn fsync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Writes the dirty pages of `f` back and waits for them, with no flush of the disk's cache
/// (`sync_file_range(WAIT_BEFORE | WRITE | WAIT_AFTER)` over the whole file).
pub fn write_back(f: &File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    // SAFETY: a plain system call on an open descriptor.
    if unsafe { libc::sync_file_range(f.as_raw_fd(), 0, 0, flags) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Writes `data` at `at` in calls of `write` bytes.
fn write_in(f: &File, data: &[u8], at: u64, write: usize) -> std::io::Result<()> {
    for (i, c) in data.chunks(write).enumerate() {
        f.write_all_at(c, at + (i * write) as u64)?;
    }
    Ok(())
}

/// Stores `data` into a shared mapping of `path` (at least `data.len()` long) and `msync`s it.
fn mmap_msync(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let f = OpenOptions::new().read(true).write(true).open(path)?;
    // SAFETY: a fresh shared mapping of `data.len()` bytes of a file at least that long; the
    // slice over it lives only until the munmap below, and nothing else maps the file.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            data.len(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        std::slice::from_raw_parts_mut(p as *mut u8, data.len()).copy_from_slice(data);
        let r = libc::msync(p, data.len(), libc::MS_SYNC);
        let e = std::io::Error::last_os_error();
        libc::munmap(p, data.len());
        if r != 0 {
            return Err(e);
        }
    }
    Ok(())
}

impl Primitive {
    fn file(&self, dir: &Path, i: usize) -> std::path::PathBuf {
        dir.join(format!("f{i}"))
    }

    /// Units the prepared file holds.
    fn prepared_units(&self) -> usize {
        match self.op {
            Op::TruncateFsync => 2 * self.units,
            _ => self.units,
        }
    }

    /// Prepares file `i` (stamp id `id`) in `dir` at generation 1, where the sequence needs one.
    pub fn prepare(&self, dir: &Path, i: usize, id: u32) -> std::io::Result<()> {
        if matches!(self.op, Op::Create { .. }) {
            return Ok(());
        }
        let path = self.file(dir, i);
        let data = stamped(id, self.unit, 0, self.prepared_units(), 1);
        std::fs::write(&path, data).map_err(io(format!("prepare {}", path.display())))
    }

    /// Runs the sequence on file `i` (stamp id `id`) in `dir`; what the check must find.
    pub fn act(&self, dir: &Path, i: usize, id: u32) -> std::io::Result<FileCheck> {
        let path = self.file(dir, i);
        let name = format!("{}/f{i}", self.name);
        let new = stamped(id, self.unit, 0, self.units, 2);
        let mut check = FileCheck {
            rel: name.clone(),
            id,
            unit: self.unit,
            gens: vec![2; self.units],
            truncated: None,
            atomic: false,
        };
        let e = |what: &str| io(format!("{what} {name}"));
        match self.op {
            Op::Overwrite(sync) => {
                let flags = match sync {
                    Sync::OSync => libc::O_SYNC,
                    Sync::ODsync => libc::O_DSYNC,
                    _ => 0,
                };
                if sync == Sync::Msync {
                    mmap_msync(&path, &new).map_err(e("mmap+msync"))?;
                    return Ok(check);
                }
                let f = OpenOptions::new()
                    .write(true)
                    .custom_flags(flags)
                    .open(&path)
                    .map_err(e("open"))?;
                write_in(&f, &new, 0, self.write).map_err(e("write"))?;
                match sync {
                    Sync::Fsync => f.sync_all().map_err(e("fsync"))?,
                    Sync::Fdatasync => f.sync_data().map_err(e("fdatasync"))?,
                    Sync::SyncFileRange => write_back(&f).map_err(e("sync_file_range"))?,
                    _ => {}
                }
            }
            Op::AppendFsync => {
                let more = stamped(id, self.unit, self.units, self.units, 2);
                let mut f = OpenOptions::new().append(true).open(&path).map_err(e("open"))?;
                f.write_all(&more).map_err(e("append"))?;
                f.sync_all().map_err(e("fsync"))?;
                check.gens = [vec![1; self.units], vec![2; self.units]].concat();
            }
            Op::TruncateFsync => {
                let f = OpenOptions::new().write(true).open(&path).map_err(e("open"))?;
                let (to, from) = ((self.units * self.unit) as u64, (2 * self.units * self.unit) as u64);
                f.set_len(to).map_err(e("truncate"))?;
                f.sync_all().map_err(e("fsync"))?;
                check.gens = vec![1; self.units];
                check.truncated = Some((to, from));
            }
            Op::Create { dir_fsync } => {
                let data = stamped(id, self.unit, 0, self.units, 1);
                let f = File::create_new(&path).map_err(e("create"))?;
                write_in(&f, &data, 0, self.write).map_err(e("write"))?;
                f.sync_all().map_err(e("fsync"))?;
                if dir_fsync {
                    fsync_dir(dir).map_err(e("fsync the directory of"))?;
                }
                check.gens = vec![1; self.units];
            }
            Op::HardLink => {
                let link = dir.join(format!("f{i}.link"));
                std::fs::hard_link(&path, &link).map_err(e("link"))?;
                fsync_dir(dir).map_err(e("fsync the directory of"))?;
                check.rel = format!("{name}.link");
                check.gens = vec![1; self.units];
            }
            Op::Replace { file_fsync, dir_fsync } => {
                let tmp = dir.join(format!("f{i}.tmp"));
                let f = File::create_new(&tmp).map_err(e("create the new version of"))?;
                write_in(&f, &new, 0, self.write).map_err(e("write"))?;
                if file_fsync {
                    f.sync_all().map_err(e("fsync the new version of"))?;
                }
                drop(f);
                std::fs::rename(&tmp, &path).map_err(e("rename over"))?;
                if dir_fsync {
                    fsync_dir(dir).map_err(e("fsync the directory of"))?;
                }
                check.atomic = true;
            }
        }
        Ok(check)
    }
}

/// The counts of a file none of whose acknowledged units could be read back (unreadable, or
/// on a filesystem that did not mount after the cut): every unit lost (a truncation's length
/// too), a replace in neither version.
pub fn all_lost(c: &FileCheck) -> Counts {
    let mut n = Counts::default();
    for _ in c.gens.iter().chain(c.truncated.iter().map(|_| &0)) {
        n.count(BlockState::Lost);
    }
    if c.atomic {
        n.neither += 1;
    }
    n
}

/// Checks one file under the recovered cut folder `dir`; its counts and, when something is
/// wrong, one line saying what.
pub fn verify(dir: &Path, c: &FileCheck) -> (Counts, Option<String>) {
    let mut n = Counts::default();
    let data = match std::fs::read(dir.join(&c.rel)) {
        Ok(d) => Some(d),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        // Unreadable: every unit counts as lost, and the line says why.
        Err(e) => return (all_lost(c), Some(format!("{}: unreadable: {e}", c.rel))),
    };
    let bytes = data.as_deref().unwrap_or_default();
    let mut states = Vec::with_capacity(c.gens.len());
    for (i, g) in c.gens.iter().enumerate() {
        let (a, b) = ((i * c.unit).min(bytes.len()), ((i + 1) * c.unit).min(bytes.len()));
        let s = stamp::classify(&bytes[a..b], c.unit, c.id, (i * c.unit) as u64, *g);
        n.count(s);
        states.push(s);
    }
    if let Some((to, from)) = c.truncated {
        n.count(match data.as_ref().map(|d| d.len() as u64) {
            None => BlockState::Lost,
            Some(l) if l == to => BlockState::Intact,
            Some(l) if l == from => BlockState::Reverted,
            Some(_) => BlockState::Torn,
        });
    }
    if c.atomic {
        let whole_len = bytes.len() == c.gens.len() * c.unit;
        let old = whole_len
            && bytes
                .chunks(c.unit)
                .enumerate()
                .all(|(i, u)| stamp::classify(u, c.unit, c.id, (i * c.unit) as u64, 1) == BlockState::Intact);
        if states.iter().all(|s| *s == BlockState::Intact) && whole_len {
            n.new += 1;
        } else if old {
            n.old += 1;
        } else {
            n.neither += 1;
        }
    }
    let what = if data.is_none() {
        Some(format!("{}: missing", c.rel))
    } else if n.damaged() > 0 {
        let mut parts = Vec::new();
        for s in [BlockState::Lost, BlockState::Reverted, BlockState::Torn] {
            let k = states.iter().filter(|x| **x == s).count();
            if k > 0 {
                parts.push(format!("{k} {}", s.as_str()));
            }
        }
        if let Some((to, _)) = c.truncated {
            if bytes.len() as u64 != to {
                parts.push(format!("length {} where {to} was acknowledged", bytes.len()));
            }
        }
        Some(format!(
            "{}: {} of {} units {}",
            c.rel,
            parts.join(", "),
            c.gens.len(),
            "damaged"
        ))
    } else {
        None
    };
    (n, what)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Prepares and runs `p` on one file in a temporary folder; the folder and the check.
    fn acted(p: &Primitive) -> (tempfile::TempDir, FileCheck) {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join(p.name);
        std::fs::create_dir(&dir).unwrap();
        p.prepare(&dir, 0, 9).unwrap();
        let c = p.act(&dir, 0, 9).unwrap();
        (t, c)
    }

    #[test]
    fn every_primitive_verifies_intact_right_after_it_ran() {
        for p in TABLE {
            let (t, c) = acted(p);
            let (n, what) = verify(t.path(), &c);
            assert_eq!(what, None, "{}", p.name);
            assert_eq!((n.intact, n.damaged()), (n.acked, 0), "{}: {n:?}", p.name);
            assert!(n.acked >= 4, "{}", p.name);
            if c.atomic {
                assert_eq!((n.new, n.old, n.neither), (1, 0, 0), "{}", p.name);
            }
            assert!(p.write % p.unit == 0 && p.unit >= stamp::MIN_UNIT, "{}", p.name);
        }
        let names: std::collections::BTreeSet<_> = TABLE.iter().map(|p| p.name).collect();
        assert_eq!(names.len(), TABLE.len(), "names are unique");
        assert_eq!(TABLE.last().map(|p| p.name), Some(CONTROL), "the control runs last");
        let controls: Vec<(&str, Option<Control>)> = TABLE
            .iter()
            .filter(|p| p.promise == Promise::Control)
            .map(|p| (p.name, p.control()))
            .collect();
        assert_eq!(
            controls,
            [
                (FLUSH_CONTROL, Some(Control::Flush)),
                (CONTROL, Some(Control::PageCache))
            ],
            "the two controls, last: no flush after the flush control"
        );
        assert!(TABLE[..TABLE.len() - 2].iter().all(|p| p.control().is_none()));
        assert_eq!(by_name("sync-file-range").and_then(|p| p.control()), None);
        assert_eq!(by_name(FLUSH_CONTROL).unwrap().promise_str(), Control::Flush.as_str());
    }

    #[test]
    fn a_file_never_read_back_counts_every_unit_lost() {
        let tr = by_name("truncate-fsync").unwrap();
        let (_t, c) = acted(tr);
        let n = all_lost(&c);
        assert_eq!(
            (n.acked, n.lost, n.intact, n.neither),
            (5, 5, 0, 0),
            "4 units and the length"
        );
        let r = by_name("rename-fsync-file").unwrap();
        let (_t, c) = acted(r);
        let n = all_lost(&c);
        assert_eq!((n.acked, n.lost, n.neither), (4, 4, 1));
        assert_eq!(n.violations(Promise::Durable), 4);
    }

    #[test]
    fn an_undone_overwrite_is_reverted_a_missing_file_lost_and_a_half_replace_neither() {
        let p = by_name("write-fsync").unwrap();
        let (t, c) = acted(p);
        // Undo the second unit: generation 1 back in place.
        let f = OpenOptions::new().write(true).open(t.path().join(&c.rel)).unwrap();
        f.write_all_at(&stamped(9, K4, 1, 1, 1), K4 as u64).unwrap();
        let (n, what) = verify(t.path(), &c);
        assert_eq!((n.reverted, n.intact), (1, 3), "{what:?}");
        std::fs::remove_file(t.path().join(&c.rel)).unwrap();
        assert_eq!(verify(t.path(), &c).0.lost, 4);

        let r = by_name("rename-fsync-file").unwrap();
        let (t, c) = acted(r);
        let path = t.path().join(&c.rel);
        std::fs::write(&path, stamped(9, K4, 0, 4, 1)).unwrap();
        let (n, _) = verify(t.path(), &c);
        assert_eq!((n.old, n.neither, n.reverted), (1, 0, 4), "the old version, whole");
        assert_eq!(n.violations(Promise::Atomic), 0);
        assert_eq!(n.violations(Promise::Durable), 4);
        std::fs::write(&path, b"").unwrap();
        let (n, what) = verify(t.path(), &c);
        assert_eq!((n.neither, n.lost), (1, 4), "zero-length: neither");
        assert!(what.unwrap().contains("4 lost"));

        let tr = by_name("truncate-fsync").unwrap();
        let (t, c) = acted(tr);
        std::fs::write(t.path().join(&c.rel), stamped(9, K4, 0, 8, 1)).unwrap();
        let (n, what) = verify(t.path(), &c);
        assert_eq!((n.reverted, n.intact), (1, 4), "the truncation undone: {what:?}");
    }
}
