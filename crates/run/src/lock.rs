//! Which live process runs a session: an exclusive open-file-description lock (`F_OFD_SETLK`)
//! on byte `id` of `<db>.sessions.lock`, held while a run works on session `id`.
//!
//! The kernel drops the lock when the process ends, even by SIGKILL, so a killed session can be
//! resumed at once; a second process that tries to take up a session a live one is running
//! (`--resume` of it) is refused with a usage error instead of running the same repeats twice.
//! Byte-range locks let one lock file serve every session of a database.

use super::RunError;
use std::os::fd::AsRawFd;
use std::path::Path;

/// Holds the lock on session `id` of database `db` for as long as the returned file is open.
pub fn session(db: &Path, id: i64) -> Result<std::fs::File, RunError> {
    let path = format!("{}.sessions.lock", db.display());
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| RunError::Usage(format!("cannot open the session lock {path}: {e}")))?;
    // SAFETY: an all-zero flock is a valid value; the fields that matter are set below.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = id as libc::off_t;
    lock.l_len = 1;
    // SAFETY: F_OFD_SETLK only reads the flock it is given; the descriptor is open.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &lock) } != 0 {
        return Err(RunError::Usage(format!(
            "session {id} is being run by another live fsbench process: let it finish, or stop it first"
        )));
    }
    Ok(file)
}
