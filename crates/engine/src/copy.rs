//! The copy code shared by the treecopy and filecopy workloads: which copier runs
//! ([`Method`]), whether data may be shared ([`Reflink`]), the file-data copy loop
//! ([`copy_data`]), the `cp`/`rm` phase ([`timed_command`]), and the errors of a full
//! filesystem ([`COPY_ERR`]).
//!
//! Invariants: [`copy_data`] allocates nothing (the caller's buffer is reused) and polls the
//! interrupt flag per buffer; a `cp`/`rm` child is killed and reaped on interrupt, and its CPU
//! is counted in the phase's process CPU.
//!
//! References: ioctl_ficlone(2), copy_file_range(2), syncfs(2); coreutils cp(1) `--reflink`.

use crate::child::{self, ChildError, Sink, Watch};
use crate::phase::{Phases, Timed};
use crate::sysio;
use crate::{EngineError, ErrHint};
use rustix::fs::{Mode, OFlags};
use serde::{Deserialize, Serialize};
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

/// Errors of the copy workloads; ENOSPC says what to change.
pub(crate) const COPY_ERR: ErrHint = ErrHint("use a smaller --scale, dataset_scale or size, or a larger image");

/// Which copier does the work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// fsbench's own copier and remover (see the module documentation).
    #[default]
    Native,
    /// coreutils `cp -a` and `rm -rf`.
    Cp,
}

/// Whether file data may be shared (reflinked) instead of copied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reflink {
    /// Always copy the bytes (as in the studies): read/write only; `cp --reflink=never`.
    #[default]
    Never,
    /// Clone where the filesystem can: FICLONE, then copy_file_range; `cp --reflink=auto`.
    Auto,
}

impl Method {
    /// The name as written in suite files and `cp --reflink=`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Native => "native",
            Method::Cp => "cp",
        }
    }
}

impl Reflink {
    /// The name as written in suite files and `cp --reflink=`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reflink::Never => "never",
            Reflink::Auto => "auto",
        }
    }
}

/// A failed step of a walker, before the path is attached.
pub(crate) enum Fail {
    /// The operation and its error.
    Io(&'static str, io::Error),
    /// The interrupt flag was set.
    Interrupted,
}

impl From<(&'static str, rustix::io::Errno)> for Fail {
    fn from((op, e): (&'static str, rustix::io::Errno)) -> Self {
        Fail::Io(op, e.into())
    }
}

/// `Result` of a walker step; `ctx(op)` names the operation on error.
pub(crate) trait Ctx<T> {
    fn ctx(self, op: &'static str) -> Result<T, Fail>;
}

impl<T> Ctx<T> for rustix::io::Result<T> {
    fn ctx(self, op: &'static str) -> Result<T, Fail> {
        self.map_err(|e| Fail::Io(op, e.into()))
    }
}

/// Opens a directory read-only (for `*at` calls, syncfs, futimens).
pub(crate) fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

pub(crate) fn syncfs_path(dir: &Path) -> Result<(), EngineError> {
    let fd = open_dir(dir).map_err(|e| COPY_ERR.io("open directory", dir, e))?;
    rustix::fs::syncfs(&fd).map_err(|e| COPY_ERR.io("syncfs", dir, e.into()))
}

/// Attaches `path` to a failed step.
pub(crate) fn fail(f: Fail, path: &Path) -> EngineError {
    match f {
        Fail::Io(op, e) => COPY_ERR.io(op, path, e),
        Fail::Interrupted => EngineError::Interrupted,
    }
}

/// Copies `size` bytes from `src` to `dst` (both at offset 0); see [`Reflink`]. Polls
/// `interrupt` per buffer.
pub(crate) fn copy_data(
    src: &OwnedFd,
    dst: &OwnedFd,
    size: u64,
    reflink: Reflink,
    buf: &mut [u8],
    interrupt: &AtomicBool,
) -> Result<(), Fail> {
    if size == 0 {
        return Ok(());
    }
    let mut left = size;
    if reflink == Reflink::Auto {
        if rustix::fs::ioctl_ficlone(dst, src).is_ok() {
            return Ok(());
        }
        while left > 0 {
            if interrupt.load(Ordering::Relaxed) {
                return Err(Fail::Interrupted);
            }
            match rustix::fs::copy_file_range(src, None, dst, None, left.min(1 << 30) as usize) {
                Ok(0) => return Ok(()),
                Ok(n) => left -= n as u64,
                Err(e)
                    if left == size
                        && [
                            rustix::io::Errno::XDEV,
                            rustix::io::Errno::OPNOTSUPP,
                            rustix::io::Errno::NOSYS,
                            rustix::io::Errno::INVAL,
                        ]
                        .contains(&e) =>
                {
                    break
                }
                Err(e) => return Err(Fail::Io("copy_file_range", e.into())),
            }
        }
        if left == 0 {
            return Ok(());
        }
    }
    if size > buf.len() as u64 {
        let _ = rustix::fs::fadvise(src, 0, 0, rustix::fs::Advice::Sequential);
    }
    while left > 0 {
        if interrupt.load(Ordering::Relaxed) {
            return Err(Fail::Interrupted);
        }
        let want = left.min(buf.len() as u64) as usize;
        let n = sysio::read_some(src, &mut buf[..want]).ctx("read")?;
        if n == 0 {
            break; // the file shrank since it was stat'ed
        }
        sysio::write_all(dst, &buf[..n]).map_err(|e| Fail::Io("write", e))?;
        left -= n as u64;
    }
    Ok(())
}

/// Runs `cmd` (`cp`, `rm`) as the timed region of a phase, then `syncfs` of `sync_dir` (timed):
/// the interrupt flag is polled and the command killed when it is set; its exit is seen at
/// once through a pidfd, so the poll interval does not add to the time; its CPU is added to
/// the process CPU ([`Phases::with_children`]). A failing command is an error with its stderr.
pub(crate) fn timed_command(
    phases: &Phases,
    mut cmd: Command,
    sync_dir: Option<&Path>,
) -> Result<Timed<()>, EngineError> {
    let shown = format!("{cmd:?}").replace('"', "");
    let sync_fd = match sync_dir {
        Some(d) => Some(open_dir(d).map_err(|e| COPY_ERR.io("open directory", d, e))?),
        None => None,
    };
    let watch = Watch {
        interrupt: Some(phases.interrupt()),
        timeout: None,
        kill_group: false,
    };
    let t = phases.with_children(None, || {
        let done = child::run(&mut cmd, Sink::Null, Sink::Capture, watch).map_err(|e| match e {
            ChildError::Interrupted => EngineError::Interrupted,
            ChildError::Spawn(e) => EngineError::io(format!("run {shown}"), e),
            ChildError::Io(e) => EngineError::io(format!("wait for {shown}"), e),
            ChildError::TimedOut(_) => EngineError::Invalid(format!("{shown}: {e}")),
        })?;
        if let (Some(fd), Some(d)) = (&sync_fd, sync_dir) {
            rustix::fs::syncfs(fd).map_err(|e| COPY_ERR.io("syncfs", d, e.into()))?;
        }
        Ok(done)
    })?;
    let done = &t.value;
    if !done.status.success() {
        let err = &done.stderr;
        // `cp`/`rm` report ENOSPC in words; name its cause on the filesystem like every
        // other ENOSPC (full, or out of inodes).
        let full = match (err.contains("No space left on device"), sync_dir) {
            (true, Some(d)) => format!(" ({}: {})", crate::fstype::enospc_cause(d), COPY_ERR.0),
            (true, None) => format!(" (no space left: {})", COPY_ERR.0),
            (false, _) => String::new(),
        };
        return Err(EngineError::Invalid(format!(
            "{shown} failed ({}){full}: {}",
            done.status,
            err.trim()
        )));
    }
    Ok(t.map(drop))
}
