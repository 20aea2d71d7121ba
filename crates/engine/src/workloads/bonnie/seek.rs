//! How `random_seeks` hands its seeks to the seekers ([`SeekDispatch`]), and the pipe that
//! reproduces bonnie++ 2.00a's dispatch.
//!
//! bonnie++ 2.00a (`CFileOp::seek_test`, `CFileOp::action` in `bon_io.cpp`, read to match
//! semantics; no code taken): the parent draws `Seeks` (8192) tickets, an `int` each (the
//! chunk number; negative = this seek rewrites its chunk, when the drawn number is a multiple
//! of `UpdateSeek` = 10), adds one end ticket per seeker, and writes them all with one
//! write(2) into a pipe shared by its `SeekProcCount` (5) seeker threads. Each seeker reads one
//! ticket per seek with read(2) (4 bytes), so the seeks go to whichever seeker is free; its
//! clock starts after its first ticket and stops after its fsync and close; the phase's time is
//! from the first start to the last stop.
//!
//! [`SeekDispatch::Split`] (the default) splits the tickets evenly up front instead: no pipe,
//! one system call fewer per seek, and a seeker that is slowed down keeps its share.
//! [`SeekDispatch::Pipe`] does what bonnie++ does: every ticket through one pipe, one read(2)
//! per seek (8-byte tickets instead of 4: the same calls). doc/verify.md has the measurement.
//!
//! Invariants: the pipe is filled before the timed region starts (its capacity is raised to
//! hold every ticket, else the run is refused before anything is timed); every seeker stops at
//! its end ticket, so a pipe never blocks a seeker once filled.

use crate::EngineError;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::Arc;

/// How the tickets of `random_seeks` reach the seekers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeekDispatch {
    /// Split evenly between the seekers before the start (no system call per ticket).
    #[default]
    Split,
    /// One read(2) of a ticket per seek from one pipe all seekers share, as bonnie++ 2.00a.
    Pipe,
}

/// Whether `d` is the default (left out of the stored spec, so case ids stay as they were).
pub fn is_split(d: &SeekDispatch) -> bool {
    *d == SeekDispatch::Split
}

/// The end ticket: a seeker that reads it stops.
const END: u64 = u64::MAX;

/// One seeker's source of tickets (`chunk << 1 | update`).
pub enum Tickets {
    /// Its own share, drawn before the start; the index of the next.
    Own(Vec<u64>, usize),
    /// The read end of the pipe every seeker shares.
    Pipe(Arc<File>),
}

impl Tickets {
    /// The next ticket, or `None` at the end.
    #[inline]
    pub fn next(&mut self) -> std::io::Result<Option<u64>> {
        match self {
            Tickets::Own(v, i) => {
                let t = v.get(*i).copied();
                *i += 1;
                Ok(t)
            }
            Tickets::Pipe(f) => {
                let mut b = [0u8; 8];
                (&**f).read_exact(&mut b)?;
                let t = u64::from_ne_bytes(b);
                Ok((t != END).then_some(t))
            }
        }
    }
}

/// One [`Tickets`] per seeker: `all` dealt out evenly in order (`Split`), or written with the
/// `seekers` end tickets into one pipe (`Pipe`).
pub fn deal(all: Vec<u64>, seekers: usize, d: SeekDispatch) -> Result<Vec<Tickets>, EngineError> {
    match d {
        SeekDispatch::Split => {
            let mut out = Vec::with_capacity(seekers);
            let mut it = all.into_iter();
            let n = it.len();
            for k in 0..seekers {
                let share = n / seekers + usize::from(k < n % seekers);
                out.push(Tickets::Own(it.by_ref().take(share).collect(), 0));
            }
            Ok(out)
        }
        SeekDispatch::Pipe => {
            let (read, mut write) = pipe(all.len() + seekers)?;
            let mut bytes = Vec::with_capacity((all.len() + seekers) * 8);
            for t in all.into_iter().chain(std::iter::repeat_n(END, seekers)) {
                bytes.extend_from_slice(&t.to_ne_bytes());
            }
            write
                .write_all(&bytes)
                .map_err(|e| io_err("write tickets to the seek pipe", e))?;
            drop(write);
            let read = Arc::new(read);
            Ok((0..seekers).map(|_| Tickets::Pipe(Arc::clone(&read))).collect())
        }
    }
}

fn io_err(what: &str, e: std::io::Error) -> EngineError {
    EngineError::Invalid(format!("random_seeks: {what}: {e}"))
}

/// A pipe (read end, write end) that holds `tickets` 8-byte tickets without blocking.
fn pipe(tickets: usize) -> Result<(File, File), EngineError> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io_err("pipe", std::io::Error::last_os_error()));
    }
    // SAFETY: pipe2 succeeded, so both are open descriptors owned by nothing else.
    let (r, w) = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
    let need = tickets * 8;
    // SAFETY: F_GETPIPE_SZ / F_SETPIPE_SZ on a pipe descriptor we own.
    let have = unsafe { libc::fcntl(w.as_raw_fd(), libc::F_GETPIPE_SZ) };
    if usize::try_from(have).unwrap_or(0) < need {
        let want = libc::c_int::try_from(need).unwrap_or(libc::c_int::MAX);
        // SAFETY: as above.
        let got = unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, want) };
        if got < 0 || usize::try_from(got).unwrap_or(0) < need {
            return Err(EngineError::Invalid(format!(
                "seek_dispatch = \"pipe\": {tickets} tickets need a {need}-byte pipe, which this system refuses \
                 (/proc/sys/fs/pipe-max-size); lower seeks or use seek_dispatch = \"split\""
            )));
        }
    }
    Ok((r, w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(mut t: Tickets) -> Vec<u64> {
        let mut v = Vec::new();
        while let Some(x) = t.next().unwrap() {
            v.push(x);
        }
        v
    }

    #[test]
    fn both_dispatches_hand_out_every_ticket_once() {
        let all: Vec<u64> = (0..103).collect();
        let split = deal(all.clone(), 5, SeekDispatch::Split).unwrap();
        let shares: Vec<Vec<u64>> = split.into_iter().map(drain).collect();
        assert_eq!(shares.iter().map(Vec::len).collect::<Vec<_>>(), [21, 21, 21, 20, 20]);
        assert_eq!(shares.concat(), all);
        // Through the pipe, in order, whoever reads; each seeker stops at an end ticket.
        let mut pipe = deal(all.clone(), 3, SeekDispatch::Pipe).unwrap();
        let first = pipe.remove(0);
        let got = drain(first);
        assert_eq!(got, all, "one reader gets every ticket, then its end ticket");
        for t in pipe {
            assert!(drain(t).is_empty(), "the others find their end tickets");
        }
        // More tickets than a default 64 KiB pipe holds.
        let big = deal((0..20_000).collect(), 2, SeekDispatch::Pipe).unwrap();
        assert_eq!(big.into_iter().map(drain).map(|v| v.len()).sum::<usize>(), 20_000);
    }
}
