//! The shared memory a PostgreSQL server fsbench started leaves behind when it is SIGKILLed,
//! and its removal.
//!
//! A postmaster makes two kinds of shared memory that outlive its processes when they die
//! without a shutdown (fsbench's power cut, `ServerProcess::kill`, the SIGKILL after a stop
//! timed out, or `PR_SET_PDEATHSIG` when fsbench itself is SIGKILLed):
//!
//! - **dynamic shared memory**: with `dynamic_shared_memory_type = posix` (Linux's default,
//!   which fsbench also passes explicitly) each segment is a file `/dev/shm/PostgreSQL.<handle>`.
//!   The postmaster makes the *control segment* at startup and keeps it mapped; every child
//!   inherits the mapping. It lists every segment the server made (PostgreSQL 15's
//!   `dsm_control_header` and `dsm_control_item` in `src/backend/storage/ipc/dsm.c`: magic
//!   `0x9a503d32`, `nitems`, `maxitems`, then 40-byte items `handle, refcnt, first_page,
//!   npages, impl_private_pm_handle, pinned`). A server that is shut down removes them all; one
//!   that is killed leaves the control segment and every pinned segment (its children detach
//!   the others as they exit). PostgreSQL itself removes them only when a server is started
//!   again on the same data directory while the SysV segment below still names them
//!   (`dsm_cleanup_using_control_segment`), which fsbench never relies on: its data
//!   directories live on filesystems that are thrown away.
//! - **the SysV header segment** (56 bytes, `PGShmemHeader`, key derived from the data
//!   directory's inode): removed by a shutdown, left by a kill (`ipcs -m`).
//!
//! [`RemovePgShm::find`] reads `/proc/<postmaster>/maps` while the postmaster runs: the one
//! mapped `/dev/shm/PostgreSQL.<digits>` file that parses as a control segment, and the
//! `/SYSV<key> (deleted)` mapping, whose inode column is the segment's shmid. That is the
//! server's, not a guess: no other server's segment is mapped by our postmaster. The step is
//! recorded in the run's undo log the moment it is found, so `fsbench cleanup` undoes it after
//! fsbench was SIGKILLed.
//!
//! [`RemovePgShm::remove`] (the step's `apply`), in order:
//! 1. refuses while the recorded postmaster (pid, start time, data directory in its command
//!    line) is alive, and waits (10 s at most) until no process maps the control segment (the
//!    killed postmaster's children exit on their own when they notice its death; they are in
//!    sessions of their own, so a kill of the postmaster's process group does not reach them);
//! 2. reads the control segment if it is still the recorded file (same path and inode): a
//!    missing or replaced file means the server removed its segments itself (a polite stop);
//! 3. removes each segment the control segment lists with a non-zero reference count and an
//!    even handle (odd handles live in the main shared memory, as in PostgreSQL's own cleanup)
//!    whose file is a regular file of the control segment's owner, then the control segment;
//! 4. removes the SysV segment only if its shmid still has the recorded key and was created by
//!    the recorded postmaster (`shm_cpid`), once nothing is attached: a child that detached
//!    from the dynamic shared memory early may still be exiting with it attached, so it waits
//!    (10 s at most) and then marks it anyway (`IPC_RMID`: the kernel destroys it at the last
//!    detach). Without that wait a killed server's header was left in about one unit-test run
//!    of five under load.
//!
//! Invariants: only files named `PostgreSQL.<digits>` directly in `/dev/shm` are ever removed,
//! and only those the recorded control segment (checked by inode) names; a record whose path
//! is anything else removes nothing. Applying the step twice, or after a polite stop, does
//! nothing. A segment made by a child between its `shm_open` and its entry in the control
//! segment, at the very moment of the kill, is not found (PostgreSQL's own cleanup has the same
//! gap).

use crate::host::process::{is_ours, Identity};
use crate::undo::{as_kind, kind_basics, Kind, Step, UndoError};
use serde::{Deserialize, Serialize};

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where POSIX shared memory lives (`shm_open(3)`).
pub const SHM_DIR: &str = "/dev/shm";
/// The name prefix of PostgreSQL's segment files (`PostgreSQL.%u` in `dsm_impl.c`).
pub const SEGMENT_PREFIX: &str = "PostgreSQL.";
/// `PG_DYNSHMEM_CONTROL_MAGIC`.
const CONTROL_MAGIC: u32 = 0x9a50_3d32;
/// `offsetof(dsm_control_header, item)` on a 64-bit build.
const HEADER_BYTES: usize = 16;
/// `sizeof(dsm_control_item)` on a 64-bit build.
const ITEM_BYTES: usize = 40;
/// How long the killed server's children may take to exit.
const CHILDREN_EXIT: Duration = Duration::from_secs(10);

/// Why the server's shared memory could not be found or removed.
#[derive(Debug, thiserror::Error)]
pub enum ShmError {
    /// The recorded postmaster still runs: its segments are in use.
    #[error("PostgreSQL server {0} is still running")]
    ServerAlive(u32),
    /// A process still maps the control segment after the wait.
    #[error("{path} is still mapped by process {pid} after {} s", CHILDREN_EXIT.as_secs())]
    InUse {
        /// The control segment.
        path: PathBuf,
        /// A process mapping it.
        pid: u32,
    },
    /// The control segment is not what PostgreSQL 15 writes (another layout or a damaged file).
    #[error("{path} is not a PostgreSQL control segment: {why}")]
    Control {
        /// The file.
        path: PathBuf,
        /// What does not fit.
        why: String,
    },
    /// Reading or removing a file, or a SysV call, failed.
    #[error("{what}: {source}")]
    Io {
        /// What was done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

/// The SysV header segment of a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SysvSegment {
    /// Its key (`/SYSV<key in hex>` in the maps).
    pub key: i32,
    /// Its id (the inode column of the maps line).
    pub shmid: i32,
}

/// Remove the shared memory a killed PostgreSQL server left (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemovePgShm {
    /// The postmaster's pid.
    pub postmaster: u32,
    /// Its start time (field 22 of /proc/PID/stat).
    pub start_time: u64,
    /// Its data directory, named in its command line.
    pub data_dir: PathBuf,
    /// The control segment, `/dev/shm/PostgreSQL.<handle>`.
    pub control: PathBuf,
    /// The control segment's inode.
    pub inode: u64,
    /// The SysV header segment, when the postmaster maps one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sysv: Option<SysvSegment>,
}

/// Whether `path` is `/dev/shm/PostgreSQL.<digits>` (a 32-bit handle), nothing else.
pub fn is_segment_path(path: &Path) -> bool {
    path.parent() == Some(Path::new(SHM_DIR))
        && path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix(SEGMENT_PREFIX))
            .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_digit()) && h.parse::<u32>().is_ok())
}

/// The path of the segment with `handle`.
pub fn segment_path(handle: u32) -> PathBuf {
    Path::new(SHM_DIR).join(format!("{SEGMENT_PREFIX}{handle}"))
}

/// The handles of the segments a control segment's bytes list as made and not yet destroyed
/// (reference count above zero, even handle), or why the bytes are no control segment.
pub fn parse_control(bytes: &[u8]) -> Result<Vec<u32>, NotControl> {
    let word = |at: usize| -> Option<u32> { Some(u32::from_ne_bytes(bytes.get(at..at + 4)?.try_into().ok()?)) };
    let (Some(magic), Some(nitems), Some(maxitems)) = (word(0), word(4), word(8)) else {
        return Err(NotControl::Short { len: bytes.len() });
    };
    if magic != CONTROL_MAGIC {
        return Err(NotControl::Magic { magic });
    }
    let want = HEADER_BYTES + ITEM_BYTES * maxitems as usize;
    if bytes.len() != want || nitems > maxitems {
        return Err(NotControl::Layout {
            len: bytes.len(),
            nitems,
            maxitems,
            want,
        });
    }
    Ok((0..nitems as usize)
        .filter_map(|i| {
            let at = HEADER_BYTES + ITEM_BYTES * i;
            let (handle, refcnt) = (word(at)?, word(at + 4)?);
            (refcnt > 0 && handle % 2 == 0).then_some(handle)
        })
        .collect())
}

/// Why bytes are not a PostgreSQL 15 control segment ([`parse_control`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotControl {
    /// Too short for the header.
    #[error("{len} bytes, shorter than its header")]
    Short {
        /// The length read.
        len: usize,
    },
    /// Another magic number.
    #[error("magic {magic:#x}, not {CONTROL_MAGIC:#x}")]
    Magic {
        /// The magic number read.
        magic: u32,
    },
    /// A length that does not fit the item counts.
    #[error("{len} bytes with {nitems} of {maxitems} items (PostgreSQL 15 writes {want})")]
    Layout {
        /// The length read.
        len: usize,
        /// The items in use, from the header.
        nitems: u32,
        /// The item slots, from the header.
        maxitems: u32,
        /// The length those slots take.
        want: usize,
    },
}

/// One line of /proc/PID/maps: its inode column and path (with a ` (deleted)` suffix kept).
fn maps_entries(pid: u32) -> Vec<(u64, String)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            // address perms offset dev inode path
            let mut f = l.splitn(6, ' ');
            let inode = f.nth(4)?.parse().ok()?;
            let path = f.next()?.trim_start();
            (!path.is_empty()).then(|| (inode, path.to_string()))
        })
        .collect()
}

/// A live process (not `me`) that maps the file `path` with inode `inode`, if any. Processes
/// whose maps cannot be read (another user's, without root) are not seen.
fn mapped_by(path: &Path, inode: u64) -> Option<u32> {
    let want = path.to_str()?;
    let me = std::process::id();
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .find(|&pid| maps_entries(pid).iter().any(|(i, p)| *i == inode && p == want))
}

/// The PostgreSQL segment files in /dev/shm now, for the unit tests' before/after comparisons
/// (the integration tests keep their own listing, `tests/integration/util.rs` `ShmListing`).
#[cfg(any(test, feature = "test-support"))]
pub fn segment_files() -> std::collections::BTreeSet<PathBuf> {
    std::fs::read_dir(SHM_DIR)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| is_segment_path(p))
        .collect()
}

/// The segment files that are in /dev/shm now but not in `before` and that no live process
/// maps: what a server that ran meanwhile left (another server running meanwhile keeps its
/// segments mapped). For the unit tests' before/after checks.
#[cfg(any(test, feature = "test-support"))]
pub fn left_since(before: &std::collections::BTreeSet<PathBuf>) -> Vec<PathBuf> {
    let mapped: std::collections::BTreeSet<String> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .flat_map(maps_entries)
        .map(|(_, p)| p)
        .collect();
    segment_files()
        .into_iter()
        .filter(|p| !before.contains(p) && !p.to_str().is_some_and(|s| mapped.contains(s)))
        .collect()
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> ShmError {
    move |source| ShmError::Io { what, source }
}

impl RemovePgShm {
    /// The step for the running postmaster `pid` started on `data_dir`, from its maps: `None`
    /// while it maps no control segment yet (still starting, or not `posix` dynamic shared
    /// memory) or is gone.
    pub fn find(pid: u32, data_dir: &Path) -> Option<RemovePgShm> {
        let start_time = crate::host::process_start_time(pid)?;
        let maps = maps_entries(pid);
        let (control, inode) = maps.iter().find_map(|(inode, p)| {
            let path = PathBuf::from(p);
            if !is_segment_path(&path) {
                return None;
            }
            let bytes = std::fs::read(&path).ok()?;
            parse_control(&bytes).ok().map(|_| (path, *inode))
        })?;
        let sysv = maps.iter().find_map(|(inode, p)| {
            let hex = p.strip_prefix("/SYSV")?.strip_suffix(" (deleted)")?;
            Some(SysvSegment {
                key: u32::from_str_radix(hex, 16).ok()? as i32,
                shmid: i32::try_from(*inode).ok()?,
            })
        });
        Some(RemovePgShm {
            postmaster: pid,
            start_time,
            data_dir: data_dir.to_path_buf(),
            control,
            inode,
            sysv,
        })
    }

    /// Removes what the server left (the module documentation says what and when) and returns
    /// the files removed; nothing when the server removed them itself.
    pub fn remove(&self) -> Result<Vec<PathBuf>, ShmError> {
        if !is_segment_path(&self.control) {
            return Err(ShmError::Control {
                path: self.control.clone(),
                why: format!("not a {SHM_DIR}/{SEGMENT_PREFIX}<digits> file: left alone"),
            });
        }
        if is_ours(self.postmaster, self.start_time, Identity::Arg(&self.data_dir)) {
            return Err(ShmError::ServerAlive(self.postmaster));
        }
        // After a shutdown the control segment is gone: no process to wait for.
        let present = std::fs::symlink_metadata(&self.control).is_ok_and(|m| m.ino() == self.inode);
        let t0 = Instant::now();
        while let Some(pid) = present.then(|| mapped_by(&self.control, self.inode)).flatten() {
            if t0.elapsed() > CHILDREN_EXIT {
                return Err(ShmError::InUse {
                    path: self.control.clone(),
                    pid,
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut removed = self.remove_dsm()?;
        if let Some(seg) = self.sysv {
            if remove_sysv(seg, self.postmaster)? {
                removed.push(PathBuf::from(format!("SysV shared memory {:#010x}", seg.key)));
            }
        }
        Ok(removed)
    }

    /// Steps 2 and 3 of the module documentation.
    fn remove_dsm(&self) -> Result<Vec<PathBuf>, ShmError> {
        let md = match std::fs::symlink_metadata(&self.control) {
            Ok(md) if md.is_file() && md.ino() == self.inode => md,
            Ok(_) => return Ok(Vec::new()), // another file now: never ours to touch
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(format!("stat {}", self.control.display()))(e)),
        };
        let bytes = std::fs::read(&self.control).map_err(io(format!("read {}", self.control.display())))?;
        let listed = parse_control(&bytes);
        let mut removed = Vec::new();
        for handle in listed.as_deref().unwrap_or_default() {
            let p = segment_path(*handle);
            let ours = std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file() && m.uid() == md.uid());
            if ours && p != self.control && remove_file(&p)? {
                removed.push(p);
            }
        }
        // The control segment is ours (recorded path and inode) even when its items cannot be
        // read: it goes, and the error says what may be left.
        if remove_file(&self.control)? {
            removed.push(self.control.clone());
        }
        listed.map_err(|why| ShmError::Control {
            path: self.control.clone(),
            why: format!("{why}; the segments it lists may be left in {SHM_DIR}"),
        })?;
        Ok(removed)
    }
}

/// `remove_file`, `false` when it was already gone.
fn remove_file(p: &Path) -> Result<bool, ShmError> {
    match std::fs::remove_file(p) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io(format!("remove {}", p.display()))(e)),
    }
}

/// Removes the SysV segment `seg` if it still has its key and was created by `creator`, once
/// nothing is attached ([`CHILDREN_EXIT`] at most; then it is marked for removal at its last
/// detach); `false` when it is gone or no longer that segment.
fn remove_sysv(seg: SysvSegment, creator: u32) -> Result<bool, ShmError> {
    // A killed server's child that had detached from the dynamic shared memory (the control
    // segment's wait is over) may still be exiting with the header attached: wait for it as for
    // the others. Should one still be attached after that, IPC_RMID marks the segment, which
    // the kernel destroys at its last detach (shmctl(2)); the key and creator are ours.
    let t0 = Instant::now();
    loop {
        // SAFETY: shmid_ds is plain old data that IPC_STAT fills.
        let mut ds: libc::shmid_ds = unsafe { std::mem::zeroed() };
        // SAFETY: `ds` is a valid shmid_ds for the call to fill.
        if unsafe { libc::shmctl(seg.shmid, libc::IPC_STAT, &mut ds) } != 0 {
            return Ok(false); // EINVAL/EIDRM: gone
        }
        if ds.shm_perm.__key != seg.key || ds.shm_cpid as u32 != creator {
            return Ok(false);
        }
        if ds.shm_nattch == 0 || t0.elapsed() >= CHILDREN_EXIT {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: IPC_RMID takes no buffer.
    if unsafe { libc::shmctl(seg.shmid, libc::IPC_RMID, std::ptr::null_mut()) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(io(format!("remove SysV shared memory {}", seg.shmid))(e));
    }
    Ok(true)
}

impl Kind for RemovePgShm {
    const TAG: &'static str = "remove_pg_shm";
}

impl Step for RemovePgShm {
    kind_basics!();
    fn apply(&self) -> Result<(), UndoError> {
        self.remove().map(drop).map_err(|e| UndoError::Failed(e.to_string()))
    }
    fn same_resource(&self, other: &dyn Step) -> bool {
        as_kind::<Self>(other).is_some_and(|o| o.control == self.control)
    }
    fn describe(&self) -> String {
        format!(
            "removed the shared memory of PostgreSQL server {} ({}, data directory {})",
            self.postmaster,
            self.control.display(),
            self.data_dir.display()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real control segment left in /dev/shm by a PostgreSQL 15.18 server SIGKILLed during
    /// a CI run on this machine (`max_connections = 20`: 274 items), which listed one pinned
    /// segment.
    const REAL: &[u8] = include_bytes!("../../../../../tests/fixtures/postgresql-15-dsm-control.bin");

    #[test]
    fn a_real_control_segment_lists_its_segments() {
        assert_eq!(REAL.len(), HEADER_BYTES + ITEM_BYTES * 274);
        assert_eq!(parse_control(REAL), Ok(vec![3_005_282_522]));
    }

    #[test]
    fn anything_else_is_not_a_control_segment() {
        assert!(parse_control(&[]).unwrap_err().to_string().contains("shorter"));
        assert!(parse_control(&REAL[..REAL.len() - 8])
            .unwrap_err()
            .to_string()
            .contains("274 items"));
        let mut other = REAL.to_vec();
        other[0] ^= 1;
        assert!(parse_control(&other).unwrap_err().to_string().contains("magic"));
        // A released slot (reference count 0) and a main-region handle (odd) are no files.
        let mut released = REAL.to_vec();
        released[HEADER_BYTES + 4..HEADER_BYTES + 8].copy_from_slice(&0u32.to_ne_bytes());
        assert_eq!(parse_control(&released), Ok(vec![]));
        let mut odd = REAL.to_vec();
        odd[HEADER_BYTES..HEADER_BYTES + 4].copy_from_slice(&7u32.to_ne_bytes());
        assert_eq!(parse_control(&odd), Ok(vec![]));
    }

    #[test]
    fn only_postgresql_segment_names_directly_in_dev_shm_qualify() {
        assert!(is_segment_path(Path::new("/dev/shm/PostgreSQL.3005282522")));
        assert!(is_segment_path(&segment_path(0)));
        for p in [
            "/dev/shm/PostgreSQL.",
            "/dev/shm/PostgreSQL.12x",
            "/dev/shm/PostgreSQL.99999999999",
            "/dev/shm/sub/PostgreSQL.1",
            "/tmp/PostgreSQL.1",
            "/dev/shm/g.dat",
            "/dev/shm/PostgreSQL.1/../g.dat",
        ] {
            assert!(!is_segment_path(Path::new(p)), "{p}");
        }
    }

    /// A record naming anything but a segment file removes nothing, whatever its other fields.
    #[test]
    fn a_record_of_another_path_removes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("PostgreSQL.1");
        std::fs::write(&victim, REAL).unwrap();
        let step = RemovePgShm {
            postmaster: u32::MAX,
            start_time: 0,
            data_dir: dir.path().into(),
            control: victim.clone(),
            inode: std::fs::metadata(&victim).unwrap().ino(),
            sysv: None,
        };
        assert!(matches!(step.remove(), Err(ShmError::Control { .. })));
        assert!(victim.exists());
    }

    #[test]
    fn records_read_back_as_the_same_step() {
        let step = RemovePgShm {
            postmaster: 12,
            start_time: 34,
            data_dir: "/x/db-data".into(),
            control: "/dev/shm/PostgreSQL.2".into(),
            inode: 56,
            sysv: Some(SysvSegment { key: 15, shmid: 78 }),
        };
        let kinds = crate::undo::Kinds::generic().with::<RemovePgShm>();
        let back = kinds.read(&step.record()).unwrap();
        assert_eq!(back.record(), step.record());
        assert!(back.same_resource(&step));
        assert_eq!(step.record()["undo"], "remove_pg_shm");
    }
}
